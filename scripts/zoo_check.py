#!/usr/bin/env python3
"""Builds every model of the zoo (scripts/export_zoo.py) with `tessera build` (untuned: --no-db,
-O3) and runs it with `tessera run` on its test data, comparing with the stored ONNX Runtime
outputs at the model's tolerance (meta.json: rtol 1e-4, atol 1e-5 unless ONNX Runtime and torch
already differ by more). Each model ends as one of:

  pass     built, ran, every output matches
  refused  the build (or the run) stopped with one clean `error:` line (exit 1)
  wrong    ran but an output differs, or has the wrong shape or dtype
  crash    anything else: an internal error (exit 2), a signal, a timeout, an unclean message

Prints a table (model, ONNX nodes, build seconds, the largest reference output magnitude, the
largest absolute error, the atol used, status) and a summary; exit 1 when
any model is wrong or crashed.

Usage: python scripts/zoo_check.py [NAME ...] [--zoo DIR ...] [--tessera PATH] [--json FILE]
                                    [--keep DIR] [--jobs N] [-O N] [--no-winograd]
Without NAME: every model under models/zoo_small and models/zoo.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 900


def clean_error(proc):
    """Exit 1 with one line starting `error:` on stderr."""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    return proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("error:")


def compare(got, want, rtol, atol):
    """(message or "", max abs error)."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}", float("nan")
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}", float("nan")
    if want.dtype.kind in "biu":
        bad = int(np.sum(got != want))
        return (f"{bad} of {want.size} elements differ" if bad else ""), float(bad)
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    worst = float(np.nanmax(err)) if err.size else 0.0
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        return (f"max abs error {worst:.3g}, {int(bad.sum())} of {want.size} elements beyond "
                f"rtol {rtol:g} atol {atol:g}"), worst
    return "", worst


def check(model_dir, tessera, jobs, keep, build_args):
    name = os.path.basename(model_dir.rstrip("/"))
    meta = json.load(open(os.path.join(model_dir, "meta.json")))
    r = {"name": name, "nodes": meta.get("nodes"), "build_s": None, "max_abs": None, "max_ref": None,
         "rtol": meta.get("rtol", 1e-4), "atol": meta.get("atol", 1e-5)}
    work = tempfile.mkdtemp(prefix=f"zoo_{name}_")
    try:
        lib = os.path.join(work, name + ".so")
        t0 = time.time()
        proc = subprocess.run([tessera, "build", os.path.join(model_dir, "model.onnx"), "-o", lib,
                               "--no-db", "-j", str(jobs)] + build_args, capture_output=True, text=True,
                              timeout=TIMEOUT_S, cwd=work)
        r["build_s"] = time.time() - t0
        if proc.returncode != 0:
            r.update(status="refused" if clean_error(proc) else "crash", stage="build",
                     detail=proc.stderr.strip()[-600:])
            return r
        data = os.path.join(model_dir, "test_data_set_0")
        cmd = [tessera, "run", lib, "--output", os.path.join(work, "out"), "--threads", str(jobs)]
        for i, n in enumerate(meta["inputs"]):
            cmd += ["--input", f"{n}={os.path.join(data, f'input_{i}.npy')}"]
        t0 = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=work)
        r["run_s"] = time.time() - t0
        if proc.returncode != 0:
            r.update(status="refused" if clean_error(proc) else "crash", stage="run",
                     detail=proc.stderr.strip()[-600:])
            return r
        worst, biggest, problems = 0.0, 0.0, []
        for i, n in enumerate(meta["outputs"]):
            got = np.load(os.path.join(work, "out", n + ".npy"))
            want = np.load(os.path.join(data, f"output_{i}.npy"))
            if want.size and want.dtype.kind == "f":
                biggest = max(biggest, float(np.nanmax(np.abs(want))))
            msg, err = compare(got, want, r["rtol"], r["atol"])
            worst = max(worst, err) if err == err else worst
            if msg:
                problems.append(f"output '{n}': {msg}")
        r["max_abs"] = worst
        r["max_ref"] = biggest
        r.update(status="wrong" if problems else "pass", detail="; ".join(problems))
        return r
    except subprocess.TimeoutExpired:
        r.update(status="crash", detail=f"timed out after {TIMEOUT_S} s")
        return r
    finally:
        if keep and r.get("status") in ("wrong", "crash"):
            shutil.copytree(work, os.path.join(keep, name), dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME")
    ap.add_argument("--zoo", action="append",
                    help="a folder of exported models (repeatable; default models/zoo_small and models/zoo)")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--jobs", type=int, default=1, help="threads of each build and run (default 1)")
    ap.add_argument("-O", "--opt-level", type=int, help="tessera build's -O (default: its own, 3)")
    ap.add_argument("--no-winograd", action="store_true", help="pass --no-winograd to tessera build")
    ap.add_argument("--json", help="write every model's result to this file")
    ap.add_argument("--keep", help="copy the work folders of wrong and crashed models here")
    a = ap.parse_args()
    zoos = [os.path.abspath(z) for z in a.zoo] if a.zoo else [
        os.path.join(ROOT, "models", "zoo_small"), os.path.join(ROOT, "models", "zoo")]
    dirs = {}
    for z in zoos:
        if os.path.isdir(z):
            for n in sorted(os.listdir(z)):
                if os.path.isfile(os.path.join(z, n, "meta.json")):
                    dirs.setdefault(n, os.path.join(z, n))
    for n in a.names:
        if n not in dirs:
            sys.exit(f"error: no exported model '{n}' under {', '.join(zoos)}")
    names = a.names or list(dirs)
    if not names:
        sys.exit(f"error: no exported model under {', '.join(zoos)} (run scripts/export_zoo.py)")
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)

    print(f"{'model':30s} {'nodes':>5s} {'build s':>7s} {'max |ref|':>9s} {'max abs err':>11s} {'atol':>5s}  status",
          flush=True)
    build_args = (["-O", str(a.opt_level)] if a.opt_level is not None else []) + \
        (["--no-winograd"] if a.no_winograd else [])
    results = []
    t0 = time.time()
    for n in names:
        r = check(dirs[n], a.tessera, a.jobs, a.keep, build_args)
        results.append(r)
        err = "-" if r["max_abs"] is None else f"{r['max_abs']:.2e}"
        ref = "-" if r["max_ref"] is None else f"{r['max_ref']:.3g}"
        secs = "-" if r["build_s"] is None else f"{r['build_s']:.1f}"
        print(f"{n:30s} {r['nodes'] or 0:5d} {secs:>7s} {ref:>9s} {err:>11s} {r['atol']:5.0e}  {r['status']}",
              flush=True)
    counts = {s: sum(r["status"] == s for r in results) for s in ("pass", "refused", "wrong", "crash")}
    print(f"\n{len(results)} models: {counts['pass']} pass, {counts['refused']} refused, "
          f"{counts['wrong']} wrong, {counts['crash']} crash in {time.time() - t0:.0f} s")
    for r in results:
        if r["status"] != "pass":
            print(f"\n{r['name']} ({r['status']}{', ' + r['stage'] if 'stage' in r else ''}):\n  "
                  + r.get("detail", "").replace("\n", "\n  "))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if counts["wrong"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
