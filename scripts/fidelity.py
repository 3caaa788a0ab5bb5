#!/usr/bin/env python3
"""Measurement fidelity of a tuned model: for every task served by a tuning record, the time the
record carries (what the search optimized) against the time the task's kernel takes inside the
built model (`tessera bench --profile`: each call timed in sequence, as the model runs it, and
hot, repeated at once). A search that optimizes what the build runs shows ratios near 1.

Usage: fidelity.py MODEL.onnx --db DB [--threads N] [--runs N] [--tolerance 0.05]
                   [--tessera build/tessera] [--out DIR] [--json]
Prints one row per tuned task (record ms, in-model ms, in-model / record, hot ms) and how many
tasks lie within the tolerance. Exit 0 always when everything ran (a report, not a test);
1 on bad input, 2 when a tessera command failed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"error: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-500:]}", file=sys.stderr)
        sys.exit(2)
    return p.stdout


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    print("error: no JSON line in tessera's output", file=sys.stderr)
    sys.exit(2)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--db", required=True)
    ap.add_argument("--threads", type=int, default=0,
                    help="threads of the model run (0: all cores); use the threads the records were "
                         "measured with (tune's --threads, all cores by default): a record timed on "
                         "2 threads says nothing of its kernel's time on 1")
    ap.add_argument("--runs", type=int, default=50, help="profiled runs (medians over them)")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--tessera", default=os.path.join(os.environ.get("TESSERA_BUILD_DIR", os.path.join(root, "build")), "tessera"))
    ap.add_argument("--out", default="", help="folder for the built library (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args()
    for path, what in ((a.model, "model"), (a.db, "database"), (a.tessera, "tessera executable")):
        if not os.path.exists(path):
            print(f"error: no {what} at {path}", file=sys.stderr)
            sys.exit(1)
    if a.runs < 1 or a.threads < 0 or not a.tolerance > 0:
        print("error: --runs must be >= 1, --threads >= 0 and --tolerance > 0", file=sys.stderr)
        sys.exit(1)

    out = a.out or tempfile.mkdtemp(prefix="tessera_fidelity_")
    os.makedirs(out, exist_ok=True)
    lib = os.path.join(out, "model.so")
    build = last_json(run([a.tessera, "build", a.model, "--db", a.db, "-o", lib, "--json"]))
    bench_cmd = [a.tessera, "bench", lib, "--profile", "--json", "--repeat", str(a.runs)]
    if a.threads:
        bench_cmd += ["--threads", str(a.threads)]
    bench = last_json(run(bench_cmd))

    per_kernel, hot_per_kernel = {}, {}
    for c in bench["calls"]:
        per_kernel.setdefault(c["kernel"], []).append(c["ms"])
        hot_per_kernel.setdefault(c["kernel"], []).append(c["hot_ms"])
    rows = []
    for t in build["tasks"]:
        if t["source"] == "default":
            continue
        kernel = f"tessera_kernel_{t['task']}"
        if kernel not in per_kernel:
            continue
        model_ms = statistics.mean(per_kernel[kernel])
        hot_ms = statistics.mean(hot_per_kernel[kernel])
        record_ms = t["tuned_secs"] * 1e3
        rows.append({"task": t["task"], "pattern": t["pattern"], "source": t["source"],
                     "calls": len(per_kernel[kernel]), "record_ms": record_ms, "model_ms": model_ms,
                     "hot_ms": hot_ms, "ratio": model_ms / record_ms if record_ms > 0 else float("inf")})
    within = sum(1 for r in rows if abs(r["ratio"] - 1) <= a.tolerance)
    total_record = sum(r["record_ms"] * r["calls"] for r in rows)
    total_model = sum(r["model_ms"] * r["calls"] for r in rows)
    summary = {"model": build["model"], "threads": bench.get("threads"), "tasks": len(rows),
               "within_tolerance": within, "tolerance": a.tolerance,
               "record_ms_sum": total_record, "model_ms_sum": total_model,
               "model_median_ms": bench["median_ms"], "rows": rows}
    if a.json:
        print(json.dumps(summary))
        return
    print(f"model {build['model']}: {len(rows)} tuned tasks, threads {bench.get('threads')}, "
          f"{a.runs} profiled runs")
    print(f"{'task':>4}  {'pattern':<40} {'calls':>5} {'record ms':>10} {'in-model ms':>12} {'model/rec':>9} {'hot ms':>9}")
    for r in rows:
        flag = "" if abs(r["ratio"] - 1) <= a.tolerance else "  *"
        print(f"{r['task']:>4}  {r['pattern'][:40]:<40} {r['calls']:>5} {r['record_ms']:>10.4f} "
              f"{r['model_ms']:>12.4f} {r['ratio']:>9.3f} {r['hot_ms']:>9.4f}{flag}")
    print(f"sum (x calls): record {total_record:.3f} ms, in model {total_model:.3f} ms "
          f"({total_model / total_record if total_record else float('nan'):.3f}); model run median "
          f"{bench['median_ms']:.3f} ms")
    print(f"within {a.tolerance:.0%}: {within} of {len(rows)} tasks ('*': outside)")


if __name__ == "__main__":
    main()
