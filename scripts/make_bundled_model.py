#!/usr/bin/env python3
"""Generates the bundled demo model, models/mobilenet_tiny/: a small MobileNet-style image
classifier (stride-2 stem, depthwise-separable blocks with BatchNormalization and ReLU6, one
residual block, global average pool, a dense classifier and Softmax), random weights from a fixed
seed, batch 1, input 1x3x128x128. It exercises what deployed CNNs need: BN folding, Clip fusion,
depthwise and pointwise convolutions, the NCHWc layout, a residual Add and the classifier head.

Writes model.onnx, test_data_set_0/input_0.npy and output_0.npy (ONNX Runtime with all graph
optimizations off, the reference) and meta.json. Run with the peers' environment:
    $(scripts/setup_peers.sh) scripts/make_bundled_model.py
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20261129
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "mobilenet_tiny")


def build(rng):
    nodes, inits = [], []
    counter = [0]

    def name(prefix):
        counter[0] += 1
        return f"{prefix}_{counter[0]}"

    def weight(shape, scale):
        n = name("w")
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), n))
        return n

    def conv_bn_relu6(x, cin, cout, k, stride, group, relu=True):
        w = weight([cout, cin // group, k, k], (2.0 / (cin // group * k * k)) ** 0.5)
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, w], [y], kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4, group=group))
        scale = numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), name("bn_scale"))
        bias = numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), name("bn_bias"))
        mean = numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), name("bn_mean"))
        var = numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), name("bn_var"))
        inits.extend([scale, bias, mean, var])
        z = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y, scale.name, bias.name, mean.name, var.name], [z],
                                      epsilon=1e-5))
        if not relu:
            return z
        lo = numpy_helper.from_array(np.array(0.0, np.float32), name("lo"))
        hi = numpy_helper.from_array(np.array(6.0, np.float32), name("hi"))
        inits.extend([lo, hi])
        r = name("relu6")
        nodes.append(helper.make_node("Clip", [z, lo.name, hi.name], [r]))
        return r

    def separable(x, cin, cout, stride):
        d = conv_bn_relu6(x, cin, cin, 3, stride, cin)
        return conv_bn_relu6(d, cin, cout, 1, 1, 1)

    x = conv_bn_relu6("input", 3, 32, 3, 2, 1)      # 64x64
    x = separable(x, 32, 64, 1)                       # 64x64
    x = separable(x, 64, 128, 2)                      # 32x32
    d = conv_bn_relu6(x, 128, 128, 3, 1, 128)         # residual block
    p = conv_bn_relu6(d, 128, 128, 1, 1, 1, relu=False)
    s = name("add")
    nodes.append(helper.make_node("Add", [x, p], [s]))
    x = separable(s, 128, 256, 2)                     # 16x16
    x = separable(x, 256, 256, 1)
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = name("flat")
    nodes.append(helper.make_node("Flatten", [g], [f], axis=1))
    w = weight([100, 256], (1.0 / 256) ** 0.5)
    b = numpy_helper.from_array((rng.standard_normal(100) * 0.1).astype(np.float32), name("fc_bias"))
    inits.append(b)
    logits = name("logits")
    nodes.append(helper.make_node("Gemm", [f, w, b.name], [logits], transB=1))
    nodes.append(helper.make_node("Softmax", [logits], ["probs"], axis=1))
    graph = helper.make_graph(nodes, "mobilenet_tiny",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 128, 128])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 100])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tessera")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    import onnxruntime as ort
    rng = np.random.default_rng(SEED)
    model = build(rng)
    os.makedirs(os.path.join(OUT, "test_data_set_0"), exist_ok=True)
    path = os.path.join(OUT, "model.onnx")
    onnx.save(model, path)
    x = rng.standard_normal([1, 3, 128, 128]).astype(np.float32)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    y = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    np.save(os.path.join(OUT, "test_data_set_0", "input_0.npy"), x)
    np.save(os.path.join(OUT, "test_data_set_0", "output_0.npy"), y)
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    meta = {"description": "MobileNet-style classifier, random weights (seed %d), for the demo" % SEED,
            "generator": "scripts/make_bundled_model.py", "opset": 13,
            "inputs": {"input": [1, 3, 128, 128]}, "outputs": {"probs": [1, 100]},
            "reference": "ONNX Runtime %s, graph optimizations off" % ort.__version__, "ops": ops}
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes), {len(model.graph.node)} nodes", file=sys.stderr)


if __name__ == "__main__":
    main()
