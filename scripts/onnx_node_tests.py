#!/usr/bin/env python3
"""ONNX's backend node tests through `tessera build` and `tessera run`.

The onnx package (PyPI) carries the generator of the node tests, not their data:
onnx.backend.test.case.node.collect_testcases() yields every case with its model and its input
and output data sets. For each case of the selected ops this script writes the model, builds
it (binding the inputs a build reports as needed at compile time with --bind, as shape inputs
must be), runs the library on each data set and compares with the expected outputs at the
case's tolerances (integers and bools exactly). Each case ends as one of:

  pass     built, ran, every output matches
  refused  the build (or the run) stopped with one clean `error:` line (exit 1)
  wrong    ran but an output differs, or has the wrong shape or dtype
  crash    anything else: an internal error (exit 2), a signal, a hang, an unclean message

Usage:
  scripts/onnx_node_tests.sh [--ops Resize,Clip,...] [--all] [--jobs N] [--json FILE]
                             [--keep DIR] [--tessera PATH] [--verbose]
Without --ops: the ops of tessera's operator table (include/tessera/graph/ops.def) and the
quantized ops the importer expands (src/graph/import_onnx_expand.cpp); --all: every case. Exit status 1 when any case is wrong or crashed.
"""
from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict

import numpy as np
import onnx
import onnx.numpy_helper
from onnx.backend.test.case.node import collect_testcases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A build names an input it needs at compile time in one of these messages.
NEEDS_CONSTANT = [
    re.compile(r"'([^']+)' must be a compile-time constant"),
    re.compile(r"\('([^']+)'\) must be a compile-time constant"),
    re.compile(r"operand \d+ \('([^']+)'\) is not a compile-time"),
    re.compile(r"'([^']+)' is not a compile-time"),
]
# ... or the graph inputs the needed value is computed from.
COMPUTED_FROM = re.compile(r"computed from graph inputs? ((?:'[^']+'(?:, )?)+)")
TIMEOUT_S = 300


def table_ops() -> set[str]:
    """The op names of ops.def (the internal ones never occur in node tests) and of the
    importer's expansion table."""
    text = open(os.path.join(ROOT, "include/tessera/graph/ops.def")).read()
    ops = set(re.findall(r"^TESSERA_GRAPH_OP\((\w+)\)", text, re.M))
    text = open(os.path.join(ROOT, "src/graph/import_onnx_expand.cpp")).read()
    return ops | set(re.findall(r'^    \{"(\w+)", \d+, \d+, \d+, expand_\w+\},', text, re.M))


def run(cmd: list[str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)


def clean_error(proc: subprocess.CompletedProcess) -> bool:
    """Exit 1 with one line starting `error:` on stderr."""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    return proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("error:")


def as_array(v) -> np.ndarray:
    """A data set value as numpy (some cases hold TensorProtos, for dtypes numpy lacks)."""
    if isinstance(v, onnx.TensorProto):
        return onnx.numpy_helper.to_array(v)
    return np.asarray(v)


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """Empty when equal within tolerance, else what differs."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype.kind == "V" and got.dtype.itemsize == want.dtype.itemsize:
        # numpy has no bfloat16 or narrow types: tessera writes them as void ('<V2', '|V1'),
        # the bytes ml_dtypes' arrays hold; the expected value's dtype names them.
        got = got.view(want.dtype)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        if not np.array_equal(got, want):
            return f"{int(np.sum(got != want))} of {want.size} elements differ"
        return ""
    if want.dtype.kind == "V":  # bfloat16 and the narrow types: compare as f32
        got, want = got.astype(np.float32), want.astype(np.float32)
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        return f"max abs error {np.nanmax(err):.3g} (rtol {rtol}, atol {atol})"
    return ""


def run_case(case, tessera: str, keep: str | None) -> dict:
    work = tempfile.mkdtemp(prefix="node_" + case.name + "_")
    result = {"name": case.name, "op": case.op_type if hasattr(case, "op_type") else ""}
    try:
        model_path = os.path.join(work, "model.onnx")
        onnx.save(case.model, model_path)
        graph_inputs = [i.name for i in case.model.graph.input]
        inits = {i.name for i in case.model.graph.initializer}
        graph_inputs = [n for n in graph_inputs if n not in inits]
        data_sets = case.data_sets
        if not data_sets:
            result.update(status="refused", detail="the case has no data set")
            return result
        first_inputs = data_sets[0][0]
        # Inputs a build asks for at compile time are bound to the first data set's values;
        # later data sets with other values for them are skipped.
        bound: list[str] = []
        lib = os.path.join(work, "model.so")
        for _ in range(len(graph_inputs) + 1):
            cmd = [tessera, "build", model_path, "-o", lib, "--no-db", "-j", "1"]
            for name in bound:
                cmd += ["--bind", f"{name}={os.path.join(work, 'bind_' + str(graph_inputs.index(name)) + '.npy')}"]
            proc = run(cmd, work)
            if proc.returncode == 0:
                break
            candidates = []
            for pat in NEEDS_CONSTANT:
                m = pat.search(proc.stderr)
                if m:
                    candidates.append(m.group(1))
            m = COMPUTED_FROM.search(proc.stderr)
            if m:
                candidates += re.findall(r"'([^']+)'", m.group(1))
            wanted = next((c for c in candidates if c in graph_inputs and c not in bound), None)
            if wanted is None:
                status = "refused" if clean_error(proc) else "crash"
                result.update(status=status, detail=proc.stderr.strip()[-400:], stage="build")
                return result
            i = graph_inputs.index(wanted)
            np.save(os.path.join(work, f"bind_{i}.npy"), as_array(first_inputs[i]))
            bound.append(wanted)
        else:
            result.update(status="refused", detail="inputs kept asking to be bound")
            return result
        result["bound"] = bound
        outputs = [o.name for o in case.model.graph.output]
        checked = 0
        for ds, (inputs, expected) in enumerate(data_sets):
            if any(not np.array_equal(as_array(inputs[graph_inputs.index(b)]),
                                      as_array(first_inputs[graph_inputs.index(b)]))
                   for b in bound):
                continue
            cmd = [tessera, "run", lib, "--output", os.path.join(work, f"out{ds}"), "--threads", "1"]
            for name, value in zip(graph_inputs, inputs):
                if name in bound:
                    continue
                path = os.path.join(work, f"in{ds}_{graph_inputs.index(name)}.npy")
                np.save(path, as_array(value))
                cmd += ["--input", f"{name}={path}"]
            proc = run(cmd, work)
            if proc.returncode != 0:
                status = "refused" if clean_error(proc) else "crash"
                result.update(status=status, detail=proc.stderr.strip()[-400:], stage="run")
                return result
            for name, want in zip(outputs, expected):
                got = np.load(os.path.join(work, f"out{ds}", name + ".npy"))
                diff = compare(got, as_array(want), case.rtol, case.atol)
                if diff:
                    result.update(status="wrong", detail=f"output '{name}': {diff}")
                    return result
            checked += 1
        result.update(status="pass", data_sets=checked)
        return result
    except subprocess.TimeoutExpired:
        result.update(status="crash", detail=f"timed out after {TIMEOUT_S} s")
        return result
    finally:
        if keep and result.get("status") in ("wrong", "crash"):
            shutil.copytree(work, os.path.join(keep, case.name), dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated op types (default: tessera's table)")
    ap.add_argument("--all", action="store_true", help="every node test case")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", help="write every case's result to this file")
    ap.add_argument("--keep", help="copy the folders of wrong and crashed cases here")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--verbose", action="store_true", help="print every case")
    args = ap.parse_args()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generator's own numpy overflow warnings
        cases = collect_testcases()
    ops = None if args.all else (set(args.ops.split(",")) if args.ops else table_ops())
    selected = []
    for c in cases:
        # A case is selected when every op of its model is; it counts under its op, or under
        # "(expanded)" when a function op is written out in several nodes.
        kinds = {n.op_type for n in c.model.graph.node}
        c.op_type = c.model.graph.node[0].op_type if len(c.model.graph.node) == 1 else "(expanded)"
        if ops is None or (kinds and kinds <= ops):
            selected.append(c)
    print(f"onnx {onnx.__version__}: {len(cases)} node test cases, {len(selected)} selected "
          f"({'all' if ops is None else len(ops)} op types)", flush=True)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    t0 = time.time()
    results = []
    with futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        todo = {pool.submit(run_case, c, args.tessera, args.keep): c for c in selected}
        for n, f in enumerate(futures.as_completed(todo), 1):
            r = f.result()
            r["op"] = todo[f].op_type
            results.append(r)
            if args.verbose or r["status"] in ("wrong", "crash"):
                print(f"{r['status']:8s} {r['name']}: {r.get('detail', '')}", flush=True)
            if n % 50 == 0:
                print(f"... {n}/{len(selected)} cases, {time.time() - t0:.0f} s", flush=True)
    results.sort(key=lambda r: r["name"])
    per_op = defaultdict(Counter)
    for r in results:
        per_op[r["op"]][r["status"]] += 1
    total = Counter(r["status"] for r in results)
    print("\nop                        pass refused  wrong  crash")
    for op in sorted(per_op):
        c = per_op[op]
        print(f"{op:24s} {c['pass']:5d} {c['refused']:7d} {c['wrong']:6d} {c['crash']:6d}")
    n = len(results)
    print(f"\n{n} cases: {total['pass']} pass ({100.0 * total['pass'] / max(n, 1):.1f}%), "
          f"{total['refused']} refused, {total['wrong']} wrong, {total['crash']} crash "
          f"in {time.time() - t0:.0f} s")
    reasons = Counter(re.sub(r"'[^']*'", "'...'", r.get("detail", ""))[:110]
                      for r in results if r["status"] == "refused")
    if reasons:
        print("\nrefusals by message:")
        for msg, k in reasons.most_common(25):
            print(f"{k:5d}  {msg}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if total["wrong"] or total["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
