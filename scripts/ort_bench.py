#!/usr/bin/env python3
"""Times one ONNX model with ONNX Runtime (CPU, graph optimization level all), the peer of the
model benchmarks. Prints one JSON object: median, p10, p90 (ms), runs, threads, and memory in MiB
(peak RSS of this process, and that peak minus the RSS before the session was created:
what the model itself costs, comparable to `tessera bench`'s).

Usage: ort_bench.py MODEL.onnx [--threads N] [--warmup N] [--min-secs S] [--min-runs N]
Inputs: test_data_set_0/input_<i>.npy beside the model when present, else seeded random data.
"""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import onnxruntime as ort


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_session(model, threads):
    """An ONNX Runtime CPU session as the model benchmarks time it: graph optimization level
    all, `threads` intra-op threads, sequential execution."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def model_feeds(sess, model):
    """The inputs of the model benchmarks: test_data_set_0/input_<i>.npy beside the model when
    present, else seeded random data of the declared shape (symbolic dimensions as 1)."""
    data_dir = os.path.join(os.path.dirname(model), "test_data_set_0")
    rng = np.random.default_rng(1)
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        path = os.path.join(data_dir, f"input_{i}.npy")
        if os.path.exists(path):
            feeds[inp.name] = np.load(path)
        else:
            shape = [d if isinstance(d, int) else 1 for d in inp.shape]
            feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--min-secs", type=float, default=2.0)
    ap.add_argument("--min-runs", type=int, default=20)
    a = ap.parse_args()
    before = rss_mib()
    sess = make_session(a.model, a.threads)
    feeds = model_feeds(sess, a.model)
    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    start = time.perf_counter()
    while len(times) < a.min_runs or time.perf_counter() - start < a.min_secs:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    pct = lambda p: times[min(len(times) - 1, int(p * (len(times) - 1) + 0.5))]
    print(json.dumps({"peer": "onnxruntime " + ort.__version__, "threads": a.threads, "runs": len(times),
                      "median_ms": pct(0.5), "p10_ms": pct(0.1), "p90_ms": pct(0.9),
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "model_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before}))


if __name__ == "__main__":
    sys.exit(main())
