#!/usr/bin/env python3
"""Times one ONNX model with ONNX Runtime (CPU, graph optimization level all), the peer of the
model benchmarks. Prints one JSON object: median, p10, p90 (ms), runs, threads, and memory in MiB
(peak RSS of this process, and that peak minus the RSS before the session was created:
what the model itself costs, comparable to `tessera bench`'s).

Usage: ort_bench.py MODEL.onnx [--threads N] [--warmup N] [--min-secs S] [--min-runs N]
Inputs: test_data_set_0/input_<i>.npy beside the model when present, else seeded random data.
"""
import sys

import onnxruntime as ort

import peer_common


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
    """The inputs of the model benchmarks (peer_common.model_feeds) for a session's inputs."""
    return peer_common.model_feeds([(i.name, i.shape) for i in sess.get_inputs()], model)


def main():
    a = peer_common.parse_args(__doc__)
    before = peer_common.rss_mib()
    sess = make_session(a.model, a.threads)
    feeds = model_feeds(sess, a.model)
    peer_common.time_and_report("onnxruntime " + ort.__version__, lambda: sess.run(None, feeds), a, before)


if __name__ == "__main__":
    sys.exit(main())
