#!/usr/bin/env python3
"""Times one ONNX model with OpenVINO (CPU plugin, f32 inference precision, latency hint, one
stream), the second peer of the model benchmarks. Prints one JSON object as ort_bench.py does:
median, p10, p90 (ms), runs, threads, and memory in MiB (peak RSS of this process, and that peak
minus the RSS before the model was read, with the CPU plugin already loaded: what the model
itself costs, comparable to `tessera bench`'s).

Usage: ov_bench.py MODEL.onnx [--threads N] [--warmup N] [--min-secs S] [--min-runs N]
                   [--precision f32|default]
Inputs: test_data_set_0/input_<i>.npy beside the model when present, else seeded random data
(the same as ort_bench.py's). The precision is pinned to f32 by default: OpenVINO would otherwise
run bf16 on CPUs with AVX512-BF16 or AMX, and the tables compare fp32 inference. --precision
default leaves it to the plugin, as scripts/quant_check.py times quantized models: OpenVINO as
it runs them out of the box.
"""
import sys

import numpy as np
import openvino as ov

import peer_common


def compile_model(core, model, threads, precision="f32"):
    """An OpenVINO CPU model as the model benchmarks time it: f32 (or the plugin's default
    precision for precision="default"), latency hint, one stream, `threads` inference threads."""
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1}
    if precision != "default":
        config["INFERENCE_PRECISION_HINT"] = precision
    return core.compile_model(core.read_model(model), "CPU", config)


def main():
    a = peer_common.parse_args(__doc__, lambda ap: ap.add_argument(
        "--precision", choices=["f32", "default"], default="f32"))
    core = ov.Core()
    core.get_property("CPU", "FULL_DEVICE_NAME")  # loads the CPU plugin (ONNX Runtime's loads on import)
    before = peer_common.rss_mib()
    compiled = compile_model(core, a.model, a.threads, a.precision)
    inputs = [(p.get_any_name(), [d.get_length() if d.is_static else None for d in p.get_partial_shape()])
              for p in compiled.inputs]
    feeds = peer_common.model_feeds(inputs, a.model)
    request = compiled.create_infer_request()
    for name, value in feeds.items():  # bound once; each timed run is one inference
        request.set_tensor(name, ov.Tensor(np.ascontiguousarray(value)))
    peer = "openvino " + ov.__version__.split("-")[0]
    peer_common.time_and_report(peer, request.infer, a, before)


if __name__ == "__main__":
    sys.exit(main())
