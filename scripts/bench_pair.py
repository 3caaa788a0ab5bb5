#!/usr/bin/env python3
"""tessera and ONNX Runtime head to head in one process: model libraries built by `tessera
build` and the ONNX model in ONNX Runtime (CPU, graph optimization level all) run in
alternating blocks on the same inputs and threads, so that a change in the machine's load
(another tenant of the host, a frequency change) reaches both sides of each comparison alike.
Prints each side's median over all timed runs and, per tessera library, the ratio of its block
median to ONNX Runtime's in the same round (median and quartiles over the rounds).

Usage: bench_pair.py MODEL.onnx LIB.so [LIB.so ...] [--threads N] [--rounds R] [--runs K]
                     [--block-secs S]
Session and inputs as scripts/ort_bench.py (test_data_set_0/input_<i>.npy beside the model
when present, else seeded random data). Each block starts after a short pause with untimed
runs (at least 3 and 0.2 s), then times at least K runs and S seconds.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

from ort_bench import make_session, model_feeds  # the same session and inputs as the tables

# Pause before each block: the previous side's idle threads stop spinning (ONNX Runtime's spin
# for a while after each run) and leave both cores to the next side.
SETTLE_SECS = 0.05
# Untimed runs at the start of each block, at least 3 and this long: on a virtual machine the
# first runs after a pause can take tens of times longer (here: 30-50 ms for a 0.8 ms model at
# 1 thread), and a short model needs many runs before it runs at its steady speed again.
WARMUP_SECS = 0.2

# TesseraDType (include/tessera/runtime/tessera_model.h) to numpy.
DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.int64, 5: np.bool_, 6: np.float16,
          7: np.int8, 8: np.uint8}


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


class TesseraModel:
    """One instance of a model library, through its C API."""

    def __init__(self, path, threads, feeds):
        try:
            self.lib = ctypes.CDLL(os.path.abspath(path), mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            sys.exit(f"error: {path} does not load as a model library: {e}")
        self.lib.tessera_model_last_error.restype = ctypes.c_char_p
        self.handle = ctypes.c_void_p()
        if self.lib.tessera_model_create(ctypes.byref(self.handle)) != 0:
            sys.exit(f"error: {path}: {self.lib.tessera_model_last_error().decode()}")
        self.lib.tessera_model_set_num_threads(self.handle, threads)
        self.inputs = [self._tensor(self.lib.tessera_model_input_info, i, feeds)
                       for i in range(self.lib.tessera_model_num_inputs(self.handle))]
        self.outputs = [self._tensor(self.lib.tessera_model_output_info, i, None)
                        for i in range(self.lib.tessera_model_num_outputs(self.handle))]
        self.in_ptrs = (ctypes.c_void_p * len(self.inputs))(*[a.ctypes.data for a in self.inputs])
        self.out_ptrs = (ctypes.c_void_p * len(self.outputs))(*[a.ctypes.data for a in self.outputs])

    def _tensor(self, info_fn, index, feeds):
        info = TensorInfo()
        if info_fn(self.handle, index, ctypes.byref(info)) != 0:
            sys.exit(f"error: {self.lib.tessera_model_last_error().decode()}")
        name = info.name.decode()
        shape = [info.shape[d] for d in range(info.rank)]
        dtype = DTYPES[info.dtype]
        if feeds is None:
            return np.zeros(shape, dtype)
        if name not in feeds:
            sys.exit(f"error: the library's input '{name}' is not an input of the ONNX model")
        value = np.ascontiguousarray(feeds[name], dtype=dtype)
        if list(value.shape) != shape:
            sys.exit(f"error: input '{name}': the library wants shape {shape}, the data has "
                     f"{list(value.shape)}")
        return value

    def run(self):
        if self.lib.tessera_model_run(self.handle, self.in_ptrs, self.out_ptrs) != 0:
            sys.exit(f"error: {self.lib.tessera_model_last_error().decode()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="the ONNX model")
    ap.add_argument("libs", nargs="+", help="model libraries built from it by `tessera build`")
    ap.add_argument("--threads", type=int, default=1, help="threads of every side (default 1)")
    ap.add_argument("--rounds", type=int, default=20, help="rounds of blocks (default 20)")
    ap.add_argument("--runs", type=int, default=10,
                    help="timed runs per block, at least (default 10)")
    ap.add_argument("--block-secs", type=float, default=0.3,
                    help="timed seconds per block, at least (default 0.3)")
    a = ap.parse_args()
    if a.threads < 1 or a.rounds < 1 or a.runs < 1:
        sys.exit("error: --threads, --rounds and --runs must be at least 1")
    for path in [a.model] + a.libs:
        if not os.path.isfile(path):
            sys.exit(f"error: no such file: {path}")

    sess = make_session(a.model, a.threads)
    feeds = model_feeds(sess, a.model)
    sides = [(os.path.basename(p), TesseraModel(p, a.threads, feeds).run) for p in a.libs]
    sides.append(("onnxruntime " + ort.__version__, lambda: sess.run(None, feeds)))

    every = {name: [] for name, _ in sides}
    block = {name: [] for name, _ in sides}
    for r in range(a.rounds):
        for name, run in sides:
            time.sleep(SETTLE_SECS)
            start = time.perf_counter()
            warm = 0
            while warm < 3 or time.perf_counter() - start < WARMUP_SECS:
                run()
                warm += 1
            times = []
            start = time.perf_counter()
            while len(times) < a.runs or time.perf_counter() - start < a.block_secs:
                t0 = time.perf_counter()
                run()
                times.append((time.perf_counter() - t0) * 1e3)
            every[name] += times
            block[name].append(statistics.median(times))
        print(f"\rround {r + 1}/{a.rounds}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    peer = sides[-1][0]
    print(f"{a.threads} thread(s), {a.rounds} rounds; per side and round at least {a.runs} timed "
          f"runs and {a.block_secs} s")
    print(f"{'side':<40} {'median_ms':>10} {'ratio_median':>13} {'ratio_p25':>10} {'ratio_p75':>10}")
    for name, _ in sides:
        ratios = sorted(x / y for x, y in zip(block[name], block[peer]))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print(f"{name:<40} {statistics.median(every[name]):>10.3f} {statistics.median(ratios):>13.3f}"
              f" {q[0]:>10.3f} {q[2]:>10.3f}")
    print(f"(ratio: the block median over {peer}'s in the same round; below 1 is faster)")


if __name__ == "__main__":
    sys.exit(main())
