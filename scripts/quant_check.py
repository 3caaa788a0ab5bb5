#!/usr/bin/env python3
"""Accuracy (and optionally latency) of int8 QDQ models, as made by scripts/quantize_models.py,
in three runtimes: ONNX Runtime (CPU, graph optimization level all, which fuses each
DequantizeLinear -> op -> QuantizeLinear group into an int8 kernel), OpenVINO (CPU, latency hint,
the plugin's default precision) and tessera (`tessera build`, then `tessera run`). Every runtime
runs the QDQ model on the folder's input_<k>.npy with one thread (the results do not depend on
the thread count, and the machine may be shared).

Per model and runtime: the largest and the mean absolute difference of the output against the
fp32 model's (ref_<k>.npy) and against ONNX Runtime's int8 output, both also in output
quantization steps, and, where the output is logits ([N, classes]), how many inputs keep the
fp32 model's top-1 class. The step is the scale of the QuantizeLinear whose DequantizeLinear is
nearest the graph output (walking back from it): a difference of 1 step is one rounding of the
quantized output. A runtime that fails (tessera may not support every operator) is reported with
the first line of its error, and the check goes on.

With --time: latency with 1 and 2 threads (--threads), each runtime in its own process
(scripts/ort_bench.py, scripts/ov_bench.py --precision default, `tessera bench --json`), in
rotating order over --rounds rounds (round r starts with runtime r mod k of k), the median of
the per-round medians, and tessera's ratio to each peer. The peers time seeded random inputs of
the declared shapes, tessera its own seeded random inputs.

Usage: <peers' python> scripts/quant_check.py [--models "NAME ..."] [--dir DIR] [--json FILE]
           [--out DIR] [--db PATH | --no-db] [--jobs N]
           [--time] [--threads "1 2"] [--rounds N] [--min-secs S]
  --models LIST   folders under --dir, or folders holding model.onnx, input_<k>.npy and
                  ref_<k>.npy (default: every model under --dir)
  --dir DIR       the quantized models (default <repo>/models/quantized)
  --json FILE     also write the numbers as one JSON object
  --out DIR       tessera's libraries and outputs (default <repo>/tune_logs/quant_check)
  --db PATH       tuning database of tessera's builds (default tune_logs/tessera.db when it
                  exists); --no-db: default schedules only
  --jobs N        tessera build's code generation threads (default 0: one per hardware thread)
  --time          also time the runtimes
  --threads LIST  thread counts of --time (default "1 2")
  --rounds N      rounds of --time per model and thread count (default 3)
  --min-secs S    timing per measurement (one runtime, one round; default 2)
Environment: TESSERA_BUILD_DIR (default <repo>/build): where the tessera binary is. The peers'
python is the last line of scripts/setup_peers.sh's output. Exit 0 when the report was made
(a report, not a test), 1 on bad input.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import peer_common
import spell_guard
from spell_guard import GuardError, SpellGuard

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")
BUILD_TIMEOUT_S = 900
RUN_TIMEOUT_S = 300
RUNTIMES = ("onnxruntime", "openvino", "tessera")
SHORT = {"onnxruntime": "ORT", "openvino": "OpenVINO", "tessera": "tessera"}


def first_line(text):
    lines = [l.strip() for l in str(text).splitlines() if l.strip()]
    return lines[0] if lines else ""


def process_error(proc):
    """The first line of a failed process's error output (without its own `error: `), or how it
    ended."""
    line = first_line(proc.stderr) or first_line(proc.stdout)
    line = line[len("error: "):] if line.startswith("error: ") else line
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}" + (f": {line}" if line else "")
    return line or f"exit {proc.returncode}"


class Failed(Exception):
    """A runtime could not build or run a model: the message is its error's first line."""


def resolve(words, qdir):
    """[(name, folder, model, input name, output name, test cases)] of the --models words, every
    model and its files checked before anything runs."""
    if not words:
        words = sorted(d for d in os.listdir(qdir) if os.path.isfile(os.path.join(qdir, d, "model.onnx"))) \
            if os.path.isdir(qdir) else []
        if not words:
            sys.exit(f"error: no quantized models under {qdir} (make them with scripts/quantize_models.py)")
    out = []
    for w in words:
        folder = w if os.path.isfile(os.path.join(w, "model.onnx")) else os.path.join(qdir, w)
        if not os.path.isfile(os.path.join(folder, "model.onnx")):
            sys.exit(f"error: no model '{w}' (neither a folder with model.onnx nor a model under {qdir}; "
                     "make it with scripts/quantize_models.py)")
        if not glob.glob(os.path.join(folder, "input_*.npy")):
            sys.exit(f"error: {folder} has no input_<k>.npy (made by scripts/quantize_models.py)")
        name = os.path.basename(os.path.normpath(w))
        model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
        out.append((name, folder, model) + graph_io(name, model) + (test_cases(folder),))
    return out


def test_cases(folder):
    """[(input array, fp32 reference)] for k = 0, 1, ... while input_<k>.npy exists."""
    cases, k = [], 0
    while os.path.isfile(os.path.join(folder, f"input_{k}.npy")):
        ref = os.path.join(folder, f"ref_{k}.npy")
        if not os.path.isfile(ref):
            sys.exit(f"error: {folder} has input_{k}.npy but no ref_{k}.npy")
        cases.append((np.load(os.path.join(folder, f"input_{k}.npy")), np.load(ref)))
        k += 1
    return cases


def graph_io(name, model):
    """(input name, output name) of a model with one of each."""
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    outputs = [o.name for o in model.graph.output]
    if len(inputs) != 1 or len(outputs) != 1:
        sys.exit(f"error: {name}: {len(inputs)} inputs and {len(outputs)} outputs; only models with one of each "
                 "are checked (as scripts/quantize_models.py makes them)")
    return inputs[0], outputs[0]


def output_quantization(model):
    """The output's quantization step: the QuantizeLinear feeding the DequantizeLinear nearest the
    graph output, found breadth-first walking back from it through every non-constant input
    (DequantizeLinears of initializers, the weights', are passed over). Returns a dict with the
    scale, zero point, the QuantizeLinear's name and the ops between its DequantizeLinear and the
    output, or None when there is none or its scale is not an initializer."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    frontier, seen, depth = [g.output[0].name], set(), 0
    while frontier:
        nxt = []
        for t in frontier:
            node = producer.get(t)
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type == "DequantizeLinear":
                q = producer.get(node.input[0])
                if q is not None and q.op_type == "QuantizeLinear":
                    if q.input[1] not in inits:
                        return None
                    scale = numpy_helper.to_array(inits[q.input[1]])
                    zp = numpy_helper.to_array(inits[q.input[2]]) if len(q.input) > 2 and q.input[2] in inits else None
                    return {"scale": float(scale) if scale.size == 1 else scale.astype(np.float64).tolist(),
                            "zero_point": None if zp is None else (int(zp) if zp.size == 1 else zp.tolist()),
                            "quantize_linear": q.name, "ops_after": depth}
            nxt += [i for i in node.input if i and i not in inits]
        frontier, depth = nxt, depth + 1
    return None


def run_onnxruntime(path, input_name, cases):
    import ort_bench  # the session the model tables time: graph optimization level all
    sess = ort_bench.make_session(path, 1)
    return [sess.run(None, {input_name: x})[0] for x, _ in cases]


def run_openvino(path, input_name, cases):
    import openvino as ov
    import ov_bench
    compiled = ov_bench.compile_model(ov.Core(), path, 1, "default")
    request = compiled.create_infer_request()
    outs = []
    for x, _ in cases:
        request.infer({input_name: x})
        outs.append(np.array(request.get_output_tensor(0).data))
    # What the plugin chose for the operators left in float: bf16 on CPUs with AVX512-BF16 or AMX.
    return outs, compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()


def tessera_build(tessera, path, lib, build_args):
    os.makedirs(os.path.dirname(lib), exist_ok=True)
    try:
        proc = subprocess.run([tessera, "build", path, "-o", lib] + build_args, capture_output=True,
                              text=True, timeout=BUILD_TIMEOUT_S, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise Failed(f"build: no result after {BUILD_TIMEOUT_S} s")
    if proc.returncode != 0 or not os.path.isfile(lib):
        raise Failed("build: " + process_error(proc))


def run_tessera(tessera, lib, input_name, cases, work):
    os.makedirs(work, exist_ok=True)
    outs = []
    for k, (x, _) in enumerate(cases):
        inp = os.path.join(work, f"input_{k}.npy")
        np.save(inp, x)  # the folder's file may be elsewhere; a copy beside the outputs is plain to rerun
        out_dir = os.path.join(work, f"out_{k}")
        for old in glob.glob(os.path.join(out_dir, "*.npy")):
            os.remove(old)
        try:
            proc = subprocess.run([tessera, "run", lib, "--input", f"{input_name}={inp}", "--output", out_dir,
                                   "--threads", "1"], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failed(f"run: no result after {RUN_TIMEOUT_S} s")
        if proc.returncode != 0:
            raise Failed("run: " + process_error(proc))
        files = glob.glob(os.path.join(out_dir, "*.npy"))
        if len(files) != 1:
            raise Failed(f"run: {len(files)} output files in {out_dir}, expected 1")
        outs.append(np.load(files[0]))
    return outs


def differences(outs, wants, step):
    """Largest and mean |out - want| over all cases, and both in quantization steps."""
    for o, w in zip(outs, wants):
        if o.shape != w.shape:
            raise Failed(f"output shape {list(o.shape)}, expected {list(w.shape)}")
    d = np.concatenate([np.abs(o.astype(np.float64) - w.astype(np.float64)).ravel() for o, w in zip(outs, wants)])
    r = {"max_abs": float(d.max()), "mean_abs": float(d.mean())}
    if isinstance(step, float) and step > 0:
        r.update(max_steps=r["max_abs"] / step, mean_steps=r["mean_abs"] / step)
    return r


def top1(outs, refs):
    """(inputs whose top-1 class matches the reference's, inputs) for logits outputs [N, C]."""
    rows = [(np.argmax(o, axis=-1), np.argmax(r, axis=-1)) for o, r in zip(outs, refs)]
    return sum(int(np.all(a == b)) for a, b in rows), len(rows)


def check_model(name, folder, model, input_name, output_name, cases, a, tessera, build_args):
    path = os.path.join(folder, "model.onnx")
    refs = [r for _, r in cases]
    q = output_quantization(model)
    step = q["scale"] if q else None
    logits = refs[0].ndim == 2 and refs[0].shape[-1] > 1
    res = {"model": path, "output": output_name, "output_shape": list(refs[0].shape),
           "output_quantization": q, "inputs": len(cases), "runtimes": {}}

    outs = {}
    work = os.path.join(a.out, name)
    lib = os.path.join(a.out, f"{name}.so")
    for rt in RUNTIMES:
        try:
            if rt == "onnxruntime":
                outs[rt] = run_onnxruntime(path, input_name, cases)
            elif rt == "openvino":
                outs[rt], res["openvino_precision"] = run_openvino(path, input_name, cases)
            else:
                if not os.access(tessera, os.X_OK):
                    raise Failed(f"no tessera at {tessera} (scripts/build.sh, or set TESSERA_BUILD_DIR)")
                tessera_build(tessera, path, lib, build_args)
                outs[rt] = run_tessera(tessera, lib, input_name, cases, work)
            r = {"fp32": differences(outs[rt], refs, step)}
            if rt != "onnxruntime" and "onnxruntime" in outs:
                r["ort_int8"] = differences(outs[rt], outs["onnxruntime"], step)
            if logits:
                r["top1_agree"], r["top1_of"] = top1(outs[rt], refs)
        except Failed as e:
            outs.pop(rt, None)
            r = {"error": str(e)}
        except Exception as e:  # a peer that cannot load or run the model: reported like tessera's
            outs.pop(rt, None)
            r = {"error": first_line(e) or type(e).__name__}
        res["runtimes"][rt] = r
    res["tessera_lib"] = lib if "tessera" in outs else None
    return res


def print_report(name, res):
    q = res["output_quantization"]
    if q is None:
        where = "no QuantizeLinear -> DequantizeLinear before the output: differences in steps left out"
    else:
        scale = f"{q['scale']:.4g}" if isinstance(q["scale"], float) else "per channel"
        after = f", {q['ops_after']} op level(s) before the output" if q["ops_after"] else ""
        where = f"step {scale} (zero point {q['zero_point']}, {q['quantize_linear']}{after})"
    shape = "x".join(map(str, res["output_shape"]))
    print(f"{name}: output {res['output']} [{shape}], {where}; {res['inputs']} inputs")
    for rt in RUNTIMES:
        r = res["runtimes"][rt]
        if "error" in r:
            print(f"  {SHORT[rt]:<9} error: {r['error']}")
            continue
        cols = []
        for ref in ("fp32", "ort_int8"):
            d = r.get(ref)
            if d is None:
                cols.append(f"{'-':>9} {'-':>9} {'-':>7} {'-':>7}")
            else:
                st = lambda k: f"{d[k]:7.3g}" if k in d else f"{'-':>7}"
                cols.append(f"{d['max_abs']:9.3g} {d['mean_abs']:9.3g} {st('max_steps')} {st('mean_steps')}")
        t1 = f"{r['top1_agree']}/{r['top1_of']}" if "top1_agree" in r else "-"
        print(f"  {SHORT[rt]:<9} {cols[0]}   {cols[1]}   {t1:>5}")


def measure(rt, path, lib, tessera, threads, min_secs):
    """One timed process: its median in ms, or raises Failed."""
    env = dict(os.environ)
    if rt == "onnxruntime":
        cmd = [sys.executable, os.path.join(SCRIPTS, "ort_bench.py"), path]
        env["OMP_NUM_THREADS"] = str(threads)
    elif rt == "openvino":
        cmd = [sys.executable, os.path.join(SCRIPTS, "ov_bench.py"), path, "--precision", "default"]
    else:
        cmd = [tessera, "bench", lib, "--json"]
    cmd += ["--threads", str(threads), "--min-secs", str(min_secs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise Failed(process_error(proc))
    for line in reversed(proc.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)["median_ms"]
    raise Failed("no JSON line in the output")


def guarded_measure(guard, rt, path, lib, tessera, threads, min_secs):
    """measure() under the spell guard: (its median in ms, in a spell or None, its largest round
    trip or None). Raises Failed."""
    try:
        ms, seen = guard.timed(lambda: measure(rt, path, lib, tessera, threads, min_secs), threads)
    except GuardError as e:
        raise Failed(str(e))
    known = [ns for ns in seen.get("round_trip_ns", []) if ns is not None]
    return ms, seen.get("in_spell"), max(known) if known else None


def time_model(name, res, a, tessera):
    runtimes = [rt for rt in RUNTIMES if "error" not in res["runtimes"][rt]]
    timing = {}
    guard = SpellGuard(tessera)
    for t in a.threads:
        per_round = {rt: [] for rt in runtimes}
        errors = {}
        for r in range(a.rounds):
            for j in range(len(runtimes)):
                rt = runtimes[(r + j) % len(runtimes)]  # rotating order: machine drifts reach all alike
                if rt in errors:
                    continue
                try:
                    per_round[rt].append(guarded_measure(guard, rt, res["model"], res["tessera_lib"],
                                                         tessera, t, a.min_secs))
                except Failed as e:
                    errors[rt] = str(e)
        ms, column = spell_guard.compare_in_one_placement({rt: v for rt, v in per_round.items() if v})
        timing[str(t)] = {"median_ms": ms, "errors": errors, "round_trip": column}
        f = lambda v, p=3: f"{v:9.{p}g}" if v is not None else f"{'-':>9}"
        ratio = lambda peer: (ms.get("tessera") / ms[peer]
                              if ms.get("tessera") is not None and ms.get(peer) else None)
        print(f"{name:<16} {t:>3} {f(ms.get('onnxruntime'))} {f(ms.get('openvino'))} {f(ms.get('tessera'))}"
              f" {f(ratio('onnxruntime'), 2)} {f(ratio('openvino'), 2)} {column:>7}",
              flush=True)
        for rt, e in errors.items():
            print(f"  {SHORT[rt]} timing failed: {e}")
    return timing


def int_list(text, what):
    try:
        vals = [int(v) for v in text.split()]
    except ValueError:
        vals = []
    if not vals or any(v < 1 for v in vals):
        sys.exit(f"error: {what} wants positive integers, not '{text}'")
    return vals


def main():
    ap = peer_common.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="", metavar="LIST")
    ap.add_argument("--dir", default=os.path.join(ROOT, "models", "quantized"), metavar="DIR")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--out", default=os.path.join(ROOT, "tune_logs", "quant_check"), metavar="DIR")
    db = ap.add_mutually_exclusive_group()
    db.add_argument("--db", metavar="PATH")
    db.add_argument("--no-db", action="store_true")
    ap.add_argument("--jobs", type=int, default=0, metavar="N")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--threads", default="1 2", metavar="LIST")
    ap.add_argument("--rounds", type=int, default=3, metavar="N")
    ap.add_argument("--min-secs", type=float, default=2.0, metavar="S")
    a = ap.parse_args()
    a.threads = int_list(a.threads, "--threads")
    if a.rounds < 1:
        sys.exit(f"error: --rounds wants a positive integer, not {a.rounds}")
    if not a.min_secs > 0:
        sys.exit(f"error: --min-secs wants a positive number of seconds, not {a.min_secs}")
    if a.jobs < 0:
        sys.exit(f"error: --jobs wants 0 or more, not {a.jobs}")
    if a.db and not os.path.isfile(a.db):
        sys.exit(f"error: no tuning database at {a.db}")
    models = resolve(a.models.split(), a.dir)

    tessera = os.path.join(os.environ.get("TESSERA_BUILD_DIR") or os.path.join(ROOT, "build"), "tessera")
    default_db = os.path.join(ROOT, "tune_logs", "tessera.db")
    if a.db:
        build_args = ["--db", os.path.abspath(a.db)]
    elif not a.no_db and os.path.isfile(default_db):
        build_args = ["--db", default_db]
    else:
        build_args = ["--no-db"]  # explicit: tessera would look for a database relative to its folder
    build_args += ["-j", str(a.jobs)]
    a.out = os.path.abspath(a.out)

    report = {"tessera": tessera, "build_args": build_args, "models": {}}
    print(f"{'':<11} {'vs fp32 reference':^35}   {'vs ONNX Runtime int8':^35}")
    print(f"  {'runtime':<9} {'max|d|':>9} {'mean|d|':>9} {'max st':>7} {'mean st':>7}   "
          f"{'max|d|':>9} {'mean|d|':>9} {'max st':>7} {'mean st':>7}   {'top-1':>5}")
    for name, *rest in models:
        res = check_model(name, *rest, a, tessera, build_args)
        report["models"][name] = res
        print_report(name, res)
        sys.stdout.flush()
    precisions = sorted({r["openvino_precision"] for r in report["models"].values() if "openvino_precision" in r})
    print("\nst: output quantization steps (the difference / the output QuantizeLinear's scale); top-1: "
          "inputs whose\nlargest logit is the fp32 model's. ONNX Runtime: graph optimization level all "
          "(int8 kernels);\nOpenVINO: CPU, default precision (int8 where quantized, "
          f"{' / '.join(precisions) or '?'} elsewhere); every runtime with one thread.")

    if a.time:
        print(f"\n{'model':<16} {'thr':>3} {'ORT ms':>9} {'OV ms':>9} {'tessera':>9} {'t/ORT':>9} {'t/OV':>9}"
              f" {'rt ns':>7}")
        for name, *_ in models:
            report["models"][name]["timing"] = time_model(name, report["models"][name], a, tessera)
        print(f"\nms: median over {a.rounds} round(s) of each runtime's median, every runtime in its own "
              "process, in\nrotating order. t/ORT, t/OV: tessera's latency / the peer's (below 1: "
              "tessera is faster).\n" + spell_guard.NOTE)

    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
