#!/usr/bin/env python3
"""tessera's bf16 precision against fp32: accuracy and (optionally) latency.

For each model folder (model.onnx, test_data_set_<k>/input_0.npy and output_0.npy, as in
../shared/models): `tessera build --no-db` at fp32 and with `--precision bf16`, both run on every
test input (`tessera run`, one thread); the bf16 outputs are checked against the fp32 reference
(within rtol 2e-2 and atol 2e-2, and, where the output is logits [N, classes], the same top-1
class for every input).

With --time: latency with 1 and 2 threads (--threads) of ONNX Runtime (fp32; it has no bf16 on
CPUs), OpenVINO at its default precision (bf16 on CPUs with AVX512-BF16 or AMX), tessera fp32
and tessera bf16, each in its own process (scripts/ort_bench.py, scripts/ov_bench.py
--precision default, `tessera bench --json`) in rotating order over --rounds rounds, the median
of the per-round medians; then bf16's speedup over fp32 and its ratio to OpenVINO.

Usage: <peers' python> scripts/bf16_check.py [--models "NAME ..."] [--out DIR] [--time]
           [--threads "1 2"] [--rounds N] [--min-secs S]
  --models LIST   folders under ../shared/models, or folders holding model.onnx and
                  test_data_set_<k> (default "bert_emb_op13 resnet18")
  --out DIR       tessera's libraries and outputs (default <repo>/tune_logs/bf16_check)
  --time          also time the runtimes
  --threads LIST  thread counts of --time (default "1 2")
  --rounds N      rounds of --time per model and thread count (default 3)
  --min-secs S    timing per measurement (one runtime, one round; default 2)
Environment: TESSERA_BUILD_DIR (default <repo>/build): where the tessera binary is. The peers'
python is the last line of scripts/setup_peers.sh's output. Exit 0 when every bf16 output is
within the tolerance, 2 when one is not, 1 on bad input.
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx

import quant_check
import spell_guard
from quant_check import Failed

ROOT = quant_check.ROOT
MODELS = os.path.join(os.path.dirname(ROOT), "shared", "models")
RTOL = ATOL = 2e-2
# (label, quant_check.measure runtime, tessera library key or None)
RUNTIMES = (("ORT fp32", "onnxruntime", None), ("OpenVINO default", "openvino", None),
            ("tessera fp32", "tessera", "fp32"), ("tessera bf16", "tessera", "bf16"))


def resolve(words):
    """[(name, folder, input name, [(input, reference)])] of the --models words."""
    out = []
    for w in words:
        folder = w if os.path.isfile(os.path.join(w, "model.onnx")) else os.path.join(MODELS, w)
        if not os.path.isfile(os.path.join(folder, "model.onnx")):
            sys.exit(f"error: no model '{w}' (neither a folder with model.onnx nor one under {MODELS})")
        cases = []
        for d in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
            x, ref = os.path.join(d, "input_0.npy"), os.path.join(d, "output_0.npy")
            if os.path.isfile(x) and os.path.isfile(ref):
                cases.append((np.load(x), np.load(ref)))
        if not cases:
            sys.exit(f"error: {folder} has no test_data_set_<k>/input_0.npy and output_0.npy")
        model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
        input_name, _ = quant_check.graph_io(w, model)
        out.append((os.path.basename(os.path.normpath(w)), folder, input_name, cases))
    return out


def check(name, folder, input_name, cases, a, tessera):
    """Builds both precisions, runs them, prints the bf16 errors; the libraries and whether the
    bf16 outputs are within the tolerance."""
    libs, outs = {}, {}
    path = os.path.join(folder, "model.onnx")
    for p in ("fp32", "bf16"):
        libs[p] = os.path.join(a.out, name, f"{p}.so")
        quant_check.tessera_build(tessera, path, libs[p], ["--no-db", "--precision", p])
        outs[p] = quant_check.run_tessera(tessera, libs[p], input_name, cases,
                                          os.path.join(a.out, name, p))
    ok = True
    for k, ((_, ref), o32, o16) in enumerate(zip(cases, outs["fp32"], outs["bf16"])):
        close = bool(np.allclose(o16, ref, rtol=RTOL, atol=ATOL))
        logits = ref.ndim == 2
        same_top1 = not logits or bool(np.array_equal(np.argmax(o16, -1), np.argmax(ref, -1)))
        ok = ok and close and same_top1
        print(f"{name:<16} case {k}: bf16 max |diff| {np.max(np.abs(o16 - ref)):.4g} (fp32 "
              f"{np.max(np.abs(o32 - ref)):.3g}), within rtol/atol {RTOL}: {close}"
              + (f", same top-1: {same_top1}" if logits else ""), flush=True)
    return libs, ok


def time_model(name, path, libs, a, tessera):
    print(f"{'model':<16} {'thr':>3} " + " ".join(f"{label:>16}" for label, _, _ in RUNTIMES) +
          f" {'bf16/fp32':>9} {'bf16/OV':>8} {'rt ns':>7}")
    guard = spell_guard.SpellGuard(tessera)
    for t in a.threads:
        per_round = {label: [] for label, _, _ in RUNTIMES}
        for r in range(a.rounds):
            for j in range(len(RUNTIMES)):
                label, rt, lib = RUNTIMES[(r + j) % len(RUNTIMES)]  # rotating order
                try:
                    per_round[label].append(quant_check.guarded_measure(
                        guard, rt, path, libs.get(lib), tessera, t, a.min_secs))
                except Failed as e:
                    print(f"  {label} timing failed: {e}")
        timed, column = spell_guard.compare_in_one_placement(
            {k: v for k, v in per_round.items() if v})
        ms = {k: timed.get(k) for k in per_round}
        f = lambda v, p=3: f"{v:16.{p}g}" if v is not None else f"{'-':>16}"
        ratio = lambda x, y: f"{ms[x] / ms[y]:.2f}" if ms[x] and ms[y] else "-"
        print(f"{name:<16} {t:>3} " + " ".join(f(ms[label]) for label, _, _ in RUNTIMES) +
              f" {ratio('tessera fp32', 'tessera bf16'):>9}"
              f" {ratio('tessera bf16', 'OpenVINO default'):>8}"
              f" {column:>7}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="bert_emb_op13 resnet18")
    p.add_argument("--out", default=os.path.join(ROOT, "tune_logs", "bf16_check"))
    p.add_argument("--time", action="store_true")
    p.add_argument("--threads", default="1 2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-secs", type=float, default=2.0)
    a = p.parse_args()
    a.threads = quant_check.int_list(a.threads, "--threads")
    if a.rounds < 1:
        sys.exit("error: --rounds must be at least 1")
    tessera = os.path.join(os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build")), "tessera")
    if not os.access(tessera, os.X_OK):
        sys.exit(f"error: no tessera binary at {tessera} (build it, or set TESSERA_BUILD_DIR)")
    all_ok = True
    for name, folder, input_name, cases in resolve(a.models.split()):
        try:
            libs, ok = check(name, folder, input_name, cases, a, tessera)
        except Failed as e:
            print(f"{name}: {e}")
            all_ok = False
            continue
        all_ok = all_ok and ok
        if a.time:
            time_model(name, os.path.join(folder, "model.onnx"), libs, a, tessera)
    if a.time:
        print("\n" + spell_guard.NOTE)
    sys.exit(0 if all_ok else 2)


if __name__ == "__main__":
    main()
