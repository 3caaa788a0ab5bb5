"""What the peer benchmarks of the model tables (ort_bench.py, ov_bench.py) share: the command
line, the model's inputs, the timing loop and the JSON line; quantize_models.py and
quant_check.py share its command-line error reporting. It imports neither runtime, so that each
peer's process loads only its own."""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class ArgumentParser(argparse.ArgumentParser):
    """argparse with bad input reported as the other checks report it: one `error:` line on
    stderr and exit 1 (argparse's own prints the usage too and exits 2)."""

    def error(self, message):
        sys.exit(f"error: {message} (see --help)")


def parse_args(doc, add_options=None):
    """The benchmarks' command line; `add_options(parser)` adds a peer's own options."""
    ap = ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    if add_options:
        add_options(ap)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--min-secs", type=float, default=2.0)
    ap.add_argument("--min-runs", type=int, default=20)
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        sys.exit(f"error: no such file: {a.model}")
    if a.threads < 1 or a.min_runs < 1 or a.warmup < 0:
        sys.exit("error: --threads and --min-runs must be at least 1, --warmup at least 0")
    return a


def model_feeds(inputs, model):
    """The inputs of the model benchmarks, for `inputs` = [(name, shape), ...] in the model's
    input order: test_data_set_0/input_<i>.npy beside the model when present, else seeded random
    data of the declared shape (dimensions that are not ints, symbolic or dynamic, as 1)."""
    data_dir = os.path.join(os.path.dirname(model), "test_data_set_0")
    rng = np.random.default_rng(1)
    feeds = {}
    for i, (name, shape) in enumerate(inputs):
        path = os.path.join(data_dir, f"input_{i}.npy")
        if os.path.exists(path):
            feeds[name] = np.load(path)
        else:
            shape = [d if isinstance(d, int) else 1 for d in shape]
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def time_and_report(peer, run, a, rss_before):
    """Runs `run` a.warmup times untimed, then at least a.min_runs times and a.min_secs seconds,
    and prints the JSON line of the model tables (memory: peak RSS, and that peak minus
    `rss_before`, the RSS before the runtime loaded the model)."""
    for _ in range(a.warmup):
        run()
    times = []
    start = time.perf_counter()
    while len(times) < a.min_runs or time.perf_counter() - start < a.min_secs:
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    pct = lambda p: times[min(len(times) - 1, int(p * (len(times) - 1) + 0.5))]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peer": peer, "threads": a.threads, "runs": len(times),
                      "median_ms": pct(0.5), "p10_ms": pct(0.1), "p90_ms": pct(0.9),
                      "peak_rss_mib": peak, "model_rss_mib": peak - rss_before}))
