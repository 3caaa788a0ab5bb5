#!/usr/bin/env python3
"""An operator spec as a one-node ONNX model, for scripts/bench_search.sh's "model" rows: the
operator as `tessera build` compiles it inside a model (its weights constants of the model, so
the build packs them once and its graph passes apply: blocked layouts, Winograd for 3x3 convs),
where `tessera tune --op` tunes the registry operator alone (every input an argument).

Usage: python3 scripts/op_model.py SPEC --write MODEL.onnx [--seed S]
       python3 scripts/op_model.py SPEC --check LIB.so --tessera BIN [--seed S] [--threads T]
                                   [--tolerance E] [--json]

  SPEC          a tessera op spec as scripts/metaschedule_tune.py takes it (matmul, conv2d,
                depthwise_conv2d; the same defaults and limits)
  --write PATH  writes the model: input x (matmul: a), the weights (matmul: b) an initializer,
                output y, ONNX opset 13
  --check LIB   runs LIB (built from that model) with `BIN run` on the seed's input and compares
                its output with a float64 numpy evaluation: error |got-want| / max(1, |want|)
                over every element, at most --tolerance (default 1e-3, as MetaSchedule's check)
  --seed S      the random inputs and weights, uniform in [-1, 1), drawn in the order
                metaschedule_tune.py draws them, so that both tuners see the same numbers
                (default 1)
  --threads T   threads of the checked run (default 2)
  --json        --check: one JSON object as the last stdout line (max_rel_err, passed)

Needs numpy and onnx (bench_search.sh installs both into .venv-tvm). Exit codes: 0 ok, 1 bad
input (one `error:` line), 2 the run failed, 3 the output disagreed with numpy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metaschedule_tune import (fail, parse_args, parse_spec, random_inputs,  # noqa: E402
                               reference, shapes)


def inputs(name, p, seed):
    """The op's input and weight, the numbers metaschedule_tune.py checks MetaSchedule on."""
    return random_inputs(shapes(name, p)[0], seed)


def write_model(name, p, seed, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x, w = inputs(name, p, seed)
    y_shape = shapes(name, p)[1]
    in_name = "a" if name == "matmul" else "x"
    w_name = "b" if name == "matmul" else "w"
    if name == "matmul":
        node = helper.make_node("MatMul", [in_name, w_name], ["y"])
    else:
        node = helper.make_node(
            "Conv", [in_name, w_name], ["y"], kernel_shape=[p["r"], p["s"]],
            strides=[p["stride"]] * 2, pads=[p["pad"]] * 4, dilations=[p["dilation"]] * 2,
            group=1 if name == "conv2d" else p["c"])
    graph = helper.make_graph(
        [node], name.replace("_", ""),
        [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))],
        [numpy_helper.from_array(w, w_name)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="tessera scripts/op_model.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def check_library(name, p, seed, lib, tessera, threads, tolerance):
    import numpy as np

    x, w = inputs(name, p, seed)
    with tempfile.TemporaryDirectory(prefix="op_model_") as tmp:
        x_path = os.path.join(tmp, "x.npy")
        np.save(x_path, x)
        in_name = "a" if name == "matmul" else "x"
        run = subprocess.run([tessera, "run", lib, "--input", f"{in_name}={x_path}", "--output",
                              os.path.join(tmp, "out"), "--threads", str(threads)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            msg = (run.stderr.strip() or run.stdout.strip()).splitlines()
            fail(f"{tessera} run {lib} failed (rc {run.returncode}): {msg[-1] if msg else ''}", 2)
        got = np.load(os.path.join(tmp, "out", "y.npy")).astype(np.float64)
    want = reference(name, p, [x, w])
    if got.shape != want.shape:
        fail(f"{lib}: output shape {got.shape}, expected {want.shape}", 3)
    err = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
    return err, err <= tolerance, got.size


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("spec", nargs="?")
    ap.add_argument("--write")
    ap.add_argument("--check")
    ap.add_argument("--tessera")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--json", action="store_true")
    args = parse_args(ap, __doc__)
    if not args.spec:
        fail("missing SPEC (see --help)")
    if bool(args.write) == bool(args.check):
        fail("give exactly one of --write MODEL.onnx and --check LIB.so (see --help)")
    if args.check and not args.tessera:
        fail("--check needs --tessera BIN (the tessera executable)")
    if args.threads < 1:
        fail(f"--threads must be >= 1, got {args.threads}")
    name, p = parse_spec(args.spec)
    if args.write:
        write_model(name, p, args.seed, args.write)
        return 0
    if not os.path.isfile(args.check):
        fail(f"--check: no library at {args.check}")
    err, passed, size = check_library(name, p, args.seed, args.check, args.tessera, args.threads,
                                      args.tolerance)
    print(f"check     {'ok' if passed else 'FAILED'}: max rel error {err:.3g} against numpy "
          f"(float64) over {size} elements", file=sys.stderr)
    if args.json:
        print(json.dumps({"spec": args.spec, "library": args.check, "max_rel_err": err,
                          "passed": passed}))
    return 0 if passed else 3


if __name__ == "__main__":
    sys.exit(main())
