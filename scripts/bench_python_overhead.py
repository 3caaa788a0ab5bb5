#!/usr/bin/env python3
"""Per-call overhead of tessera.Model.run over the model library's C API.

Builds a small model (default: the shared mlp) untuned, then alternates rounds of
`tessera bench LIB --repeat N --json` (the C API called from C++, each run timed alone) and N
timed calls of tessera.load(LIB).run(feeds) in this process (each timed alone as well), both on
one thread, and prints the median per-call time of each and their difference in microseconds.
The lowest median of the rounds is kept for each, so that other work on the machine counts
less.

Usage (from the repository root, with the module built: scripts/build.sh):
    PYTHONPATH=build/python .venv-py/bin/python scripts/bench_python_overhead.py \
        [--model ../shared/models/mlp/model.onnx] [--repeat 20000] [--rounds 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tessera

ROOT = Path(__file__).resolve().parent.parent


def python_median_us(model: tessera.Model, feeds, repeat: int, warmup: int) -> float:
    """Median of `repeat` calls of model.run(feeds), each timed alone, in microseconds."""
    run = model.run
    clock = time.perf_counter_ns
    for _ in range(warmup):
        run(feeds)
    times = [0] * repeat
    for i in range(repeat):
        t0 = clock()
        run(feeds)
        times[i] = clock() - t0
    return statistics.median(times) / 1e3


def c_api_median_us(tessera_bin: str, lib: str, repeat: int, warmup: int) -> float:
    """`tessera bench`'s median run time, in microseconds."""
    out = subprocess.run(
        [tessera_bin, "bench", lib, "--threads", "1", "--warmup", str(warmup),
         "--repeat", str(repeat), "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"] * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(ROOT.parent / "shared/models/mlp/model.onnx"))
    ap.add_argument("--tessera", default=str(ROOT / "build/tessera"),
                    help="the tessera command (default: build/tessera)")
    ap.add_argument("--repeat", type=int, default=20000, help="timed calls per round")
    ap.add_argument("--warmup", type=int, default=1000, help="untimed calls per round")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="tessera_overhead_") as tmp:
        lib = tessera.build(args.model, os.path.join(tmp, "model.so"))
        model = tessera.load(lib)
        model.set_num_threads(1)
        data = Path(args.model).parent / "test_data_set_0"
        feeds = {}
        for i, t in enumerate(model.inputs):
            f = data / f"input_{i}.npy"
            feeds[t.name] = np.load(f) if f.exists() else np.zeros(t.shape, t.dtype)
        py_us, c_us = [], []
        for _ in range(args.rounds):
            c_us.append(c_api_median_us(args.tessera, lib, args.repeat, args.warmup))
            py_us.append(python_median_us(model, feeds, args.repeat, args.warmup))
    py, c = min(py_us), min(c_us)
    print(f"model {model.name}: {len(model.inputs)} inputs, {len(model.outputs)} outputs, "
          f"1 thread, {args.rounds} rounds of {args.repeat} calls (lowest median kept)")
    print(f"C API (tessera bench)   {c:8.2f} us per call   rounds: "
          + ", ".join(f"{v:.2f}" for v in c_us))
    print(f"Python (Model.run)      {py:8.2f} us per call   rounds: "
          + ", ".join(f"{v:.2f}" for v in py_us))
    print(f"overhead                {py - c:8.2f} us per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
