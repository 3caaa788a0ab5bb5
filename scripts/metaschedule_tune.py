#!/usr/bin/env python3
"""TVM MetaSchedule side of scripts/bench_search.sh: tunes one tessera operator spec with
MetaSchedule at a given trial budget, then times the best schedule it found.

Usage: .venv-tvm/bin/python scripts/metaschedule_tune.py SPEC --trials N --work-dir DIR
           [--threads T] [--mcpu CPU] [--min-secs S] [--seed S] [--json]
       .venv-tvm/bin/python scripts/metaschedule_tune.py SPEC --retime --work-dir DIR
           [--threads T] [--mcpu CPU] [--min-secs S] [--seed S] [--json]
       .venv-tvm/bin/python scripts/metaschedule_tune.py --check    (imports only)

  SPEC          a tessera op spec (`tessera op list`), one of
                  matmul:m=..,n=..,k=..                        a[m,k] x b[k,n] -> [m,n]
                  conv2d:n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..,dilation=..
                                                              x[n,c,h,w] * w[k,c,r,s] -> NCHW
                  depthwise_conv2d:n=..,c=..,h=..,w=..,r=..,s=..,stride=..,pad=..,dilation=..,
                                   multiplier=..              x[n,c,h,w] * w[c*mult,1,r,s]
                with tessera's defaults for keys left out (n=1, r=3, s=r, stride=1, pad=0,
                dilation=1, multiplier=1); float32, the same layouts as tessera's operators.
                groups, bias and relu are not supported.
  --trials N    max_trials_global of tune_tir (num_trials_per_iter = min(64, N))
  --retime      no tuning: check and time the best schedule of the database an earlier run
                left in --work-dir (bench_search.sh re-times both tuners' bests in alternation)
  --work-dir D  MetaSchedule's work directory (logs and JSON database); reused as is, so give
                a fresh one per run
  --threads T   TVM runtime threads (TVM_NUM_THREADS) and the target's num-cores (default 2)
  --mcpu CPU    LLVM cpu name of the target (default: LLVM's host cpu); bench_search.sh passes
                the one `tessera hw --json` reports
  --min-secs S  the best schedule is re-timed one call at a time (one warm-up call first) for at
                least S seconds and at least 10 calls; the median is reported (default 1)
  --seed S      tuning seed and input seed (default 1)
  --json        print one JSON object as the last stdout line

FLOPs are counted as tessera counts them: 2*M*N*K for matmul, 2*N*K*(C/groups)*R*S*OH*OW for the
convolutions. The result is checked once against a float64 numpy evaluation on the same random
inputs (every output element; error |got-want| / max(1, |want|), as `tessera op run` does).
Exit codes: 0 ok, 1 bad input (one `error:` line), 2 tuning found no valid schedule or failed,
3 the tuned kernel disagreed with numpy.
"""
import argparse
import json
import math
import os
import sys
import time


def fail(msg, code=1):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args(ap, doc):
    """ap's arguments, with -h/--help printing `doc` (and exiting 0) and an unknown argument
    one `error:` line (exit 1), as the scripts here answer."""
    ap.add_argument("-h", "--help", action="store_true")
    args, unknown = ap.parse_known_args()
    if args.help:
        print(doc.strip())
        sys.exit(0)
    if unknown:
        fail(f"unknown argument '{unknown[0]}' (see --help)")
    return args


# ------------------------------------------------------------------------------------------
# Specs, as tessera parses them (src/te/op_registry.cpp).

KEYS = {
    "matmul": {"m": None, "n": None, "k": None},
    "conv2d": {"n": 1, "c": None, "h": None, "w": None, "k": None, "r": 3, "s": "r",
               "stride": 1, "pad": 0, "dilation": 1, "groups": 1, "bias": 0, "relu": 0},
    "depthwise_conv2d": {"n": 1, "c": None, "h": None, "w": None, "r": 3, "s": "r",
                         "stride": 1, "pad": 0, "dilation": 1, "multiplier": 1, "bias": 0,
                         "relu": 0},
}


def parse_spec(text):
    name, _, rest = text.partition(":")
    if name not in KEYS:
        fail(f"unsupported op '{name}' in spec '{text}' (supported: {', '.join(KEYS)})")
    given = {}
    for item in rest.split(",") if rest else []:
        key, eq, value = item.partition("=")
        if not eq or not value:
            fail(f"malformed op spec '{text}': expected key=value, got '{item}'")
        if key not in KEYS[name]:
            fail(f"op {name} has no key '{key}' (keys: {', '.join(KEYS[name])})")
        if key in given:
            fail(f"malformed op spec '{text}': duplicate key '{key}'")
        try:
            given[key] = int(value)
        except ValueError:
            fail(f"malformed op spec '{text}': value '{value}' of '{key}' is not an integer")
    p = {}
    for key, default in KEYS[name].items():
        if key in given:
            p[key] = given[key]
        elif default is None:
            fail(f"op spec '{text}' needs '{key}'")
        elif isinstance(default, str):
            p[key] = p[default]
        else:
            p[key] = default
    for key, v in p.items():
        low = 0 if key in ("pad", "bias", "relu") else 1
        if v < low:
            fail(f"'{key}' of spec '{text}' must be >= {low}, got {v}")
    if p.get("groups", 1) != 1 or p.get("bias") or p.get("relu"):
        fail(f"spec '{text}': groups, bias and relu are not supported here")
    return name, p


def conv_out(size, kernel, stride, pad, dilation):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


# ------------------------------------------------------------------------------------------
# Tensor expressions (tvm.te) and numpy references.

def shapes(name, p):
    """([input shape, weight shape], output shape) of the op; fails on an empty output."""
    if name == "matmul":
        return [(p["m"], p["k"]), (p["k"], p["n"])], (p["m"], p["n"])
    oh = conv_out(p["h"], p["r"], p["stride"], p["pad"], p["dilation"])
    ow = conv_out(p["w"], p["s"], p["stride"], p["pad"], p["dilation"])
    if oh < 1 or ow < 1:
        fail(f"the output of {name} {p} would be empty")
    x = (p["n"], p["c"], p["h"], p["w"])
    if name == "conv2d":
        return [x, (p["k"], p["c"], p["r"], p["s"])], (p["n"], p["k"], oh, ow)
    k = p["c"] * p["multiplier"]
    return [x, (k, 1, p["r"], p["s"])], (p["n"], k, oh, ow)


def random_inputs(in_shapes, seed):
    """The inputs both tuners' results are checked on: uniform in [-1, 1), float32, drawn in
    order from one generator seeded with `seed`."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=s).astype(np.float32) for s in in_shapes]


def build_te(name, p):
    """Returns (prim_func, input shapes, output shape, flops)."""
    from tvm import te, tirx

    f32 = "float32"
    if name == "matmul":
        m, n, k = p["m"], p["n"], p["k"]
        a = te.placeholder((m, k), f32, name="a")
        b = te.placeholder((k, n), f32, name="b")
        rk = te.reduce_axis((0, k), name="rk")
        c = te.compute((m, n), lambda i, j: te.sum(a[i, rk] * b[rk, j], axis=rk), name="c")
        return (te.create_prim_func([a, b, c]),) + shapes(name, p) + (2.0 * m * n * k,)

    n, ch, h, w, r, s = p["n"], p["c"], p["h"], p["w"], p["r"], p["s"]
    st, pad, dil = p["stride"], p["pad"], p["dilation"]
    in_shapes, out_shape = shapes(name, p)
    oh, ow = out_shape[2:]
    x = te.placeholder((n, ch, h, w), f32, name="x")
    hp, wp = h + 2 * pad, w + 2 * pad
    xp = te.compute(
        (n, ch, hp, wp),
        lambda b, c, i, j: tirx.if_then_else(
            tirx.all(i >= pad, i < h + pad, j >= pad, j < w + pad),
            x[b, c, i - pad, j - pad], tirx.const(0.0, f32)),
        name="x_pad")
    rr = te.reduce_axis((0, r), name="rr")
    rs = te.reduce_axis((0, s), name="rs")
    if name == "conv2d":
        k = p["k"]
        wt = te.placeholder((k, ch, r, s), f32, name="w")
        rc = te.reduce_axis((0, ch), name="rc")
        y = te.compute(
            (n, k, oh, ow),
            lambda b, o, i, j: te.sum(
                xp[b, rc, i * st + rr * dil, j * st + rs * dil] * wt[o, rc, rr, rs],
                axis=[rc, rr, rs]),
            name="y")
        flops = 2.0 * n * k * ch * r * s * oh * ow
        return te.create_prim_func([x, wt, y]), in_shapes, out_shape, flops
    mult = p["multiplier"]
    k = ch * mult
    wt = te.placeholder((k, 1, r, s), f32, name="w")
    y = te.compute(
        (n, k, oh, ow),
        lambda b, o, i, j: te.sum(
            xp[b, o // mult, i * st + rr * dil, j * st + rs * dil] * wt[o, 0, rr, rs],
            axis=[rr, rs]),
        name="y")
    flops = 2.0 * n * k * r * s * oh * ow
    return te.create_prim_func([x, wt, y]), in_shapes, out_shape, flops


def reference(name, p, inputs):
    import numpy as np

    if name == "matmul":
        a, b = (t.astype(np.float64) for t in inputs)
        return a @ b
    x, wt = (t.astype(np.float64) for t in inputs)
    st, pad, dil, r, s = p["stride"], p["pad"], p["dilation"], p["r"], p["s"]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c = x.shape[:2]
    oh = conv_out(p["h"], r, st, pad, dil)
    ow = conv_out(p["w"], s, st, pad, dil)
    # cols[n, c, r, s, oh, ow]: the input element each filter tap meets.
    cols = np.empty((n, c, r, s, oh, ow))
    for i in range(r):
        for j in range(s):
            cols[:, :, i, j] = xp[:, :, i * dil: i * dil + st * (oh - 1) + 1: st,
                                  j * dil: j * dil + st * (ow - 1) + 1: st]
    if name == "conv2d":
        return np.einsum("ncrsyx,kcrs->nkyx", cols, wt, optimize=True)
    mult = p["multiplier"]
    cols = np.repeat(cols, mult, axis=1)  # output channel o reads input channel o // mult
    return np.einsum("nkrsyx,krs->nkyx", cols, wt[:, 0], optimize=True)


# ------------------------------------------------------------------------------------------

def fast_build(mod, target, _params):
    """MetaSchedule's default_build without its `import tvm.s_tir.tensor_intrin`.

    LocalBuilder starts fresh worker processes for every batch of candidates, and that import
    (it parses the TVMScript of every tensor intrinsic of every target) takes 25-50 s of CPU on
    this kind of machine, more than the builder's 30 s timeout: with the default build function
    every candidate of a batch fails with "LocalBuilder: Timeout". float32 kernels on an llvm
    target use no tensor intrinsic, so the build is the same without it.
    """
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("spec", nargs="?")
    ap.add_argument("--trials", type=int)
    ap.add_argument("--work-dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mcpu", default="")
    ap.add_argument("--min-secs", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--retime", action="store_true")
    args = parse_args(ap, __doc__)
    if args.threads < 1:
        fail(f"--threads must be >= 1, got {args.threads}")
    # The runtime's thread pool reads this once, at its first parallel launch; MetaSchedule's
    # runner processes inherit it.
    os.environ["TVM_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import tvm
    from tvm.s_tir import meta_schedule as ms

    if args.check:
        import xgboost  # noqa: F401  (MetaSchedule's "xgb" cost model)
        print(f"tvm {tvm.__version__}, meta_schedule ok")
        return 0
    if not args.spec:
        fail("missing SPEC (see --help)")
    if args.retime and args.trials is not None:
        fail("--retime and --trials exclude each other (--retime times a finished tune)")
    if not args.retime and (args.trials is None or args.trials < 1):
        fail("--trials N (N >= 1) is required")
    if not args.work_dir:
        fail("--work-dir DIR is required")
    if args.retime and not os.path.isfile(os.path.join(args.work_dir, "database_tuning_record.json")):
        fail(f"--retime: {args.work_dir} holds no MetaSchedule database (database_tuning_record.json)")
    if not args.min_secs > 0:
        fail(f"--min-secs must be > 0, got {args.min_secs}")

    name, p = parse_spec(args.spec)
    func, in_shapes, out_shape, flops = build_te(name, p)
    mod = tvm.IRModule({"main": func})
    mcpu = args.mcpu or tvm.target.codegen.llvm_get_system_cpu()
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": args.threads})
    if args.retime:
        database = ms.database.JSONDatabase(work_dir=args.work_dir, allow_missing=False)
        return time_best(args, name, p, mod, target, database, in_shapes, out_shape, flops)
    os.makedirs(args.work_dir, exist_ok=True)

    # The search imports the tensor intrinsics once (tune_context.py); done before the clock
    # starts, as its own line in the report.
    t0 = time.perf_counter()
    import tvm.s_tir.tensor_intrin  # noqa: F401
    setup_secs = time.perf_counter() - t0
    builder = ms.builder.LocalBuilder(f_build=fast_build)

    per_iter = min(64, args.trials)
    print(f"metaschedule: tuning {args.spec} for {args.trials} trials ({per_iter} per iteration), "
          f"target {target}, work dir {args.work_dir}", file=sys.stderr)
    t0 = time.perf_counter()
    try:
        database = ms.tune_tir(mod, target, args.work_dir, max_trials_global=args.trials,
                               num_trials_per_iter=per_iter, seed=args.seed, builder=builder,
                               num_tuning_cores=args.threads)
    except Exception as e:  # noqa: BLE001
        fail(f"MetaSchedule tuning failed: {type(e).__name__}: {str(e).strip().splitlines()[-1]}", 2)
    tune_secs = time.perf_counter() - t0
    return time_best(args, name, p, mod, target, database, in_shapes, out_shape, flops,
                     tune_secs=tune_secs, setup_secs=setup_secs)


def time_best(args, name, p, mod, target, database, in_shapes, out_shape, flops,
              tune_secs=None, setup_secs=None):
    """Compiles the database's best schedule, checks it against numpy and times it; prints the
    report (and the JSON line). tune_secs None: a --retime run, no tuning reported."""
    import numpy as np
    import tvm
    from tvm.s_tir import meta_schedule as ms

    records = database.get_all_tuning_records()
    valid = [r for r in records if r.run_secs and all(float(getattr(t, "value", t)) < 1e9 for t in r.run_secs)]
    best_tuned = min((sum(float(getattr(t, "value", t)) for t in r.run_secs) / len(r.run_secs) for r in valid),
                     default=None)

    sch = ms.tir_integration.compile_tir(database, mod, target)
    if sch is None:
        fail(f"MetaSchedule found no valid schedule in {len(records)} trials", 2)
    lib = tvm.compile(sch.mod, target=target).jit()  # an Executable; .jit(): the runtime Module

    dev = tvm.cpu(0)
    host_in = random_inputs(in_shapes, args.seed)
    dev_in = [tvm.runtime.tensor(t, dev) for t in host_in]
    dev_out = tvm.runtime.tensor(np.zeros(out_shape, dtype=np.float32), dev)
    lib["main"](*dev_in, dev_out)  # the warm-up call, also the checked one
    got = dev_out.numpy().astype(np.float64)
    want = reference(name, p, host_in)
    max_rel_err = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
    tolerance = 1e-3

    # One call at a time, for at least --min-secs and 10 calls; median of the calls.
    # (time_evaluator makes one untimed call before its timed ones.)
    runs = []
    while len(runs) < 10 or sum(runs) < args.min_secs:
        est = max(1e-7, float(np.median(runs))) if runs else None
        need = 10 if est is None else max(10 - len(runs), math.ceil((args.min_secs - sum(runs)) / est))
        timer = lib.time_evaluator("main", dev, number=1, repeat=min(max(need, 1), 100000))
        runs += [float(t) for t in timer(*dev_in, dev_out).results]
    repeat = len(runs)
    median = float(np.median(runs))
    p10, p90 = np.percentile(runs, [10, 90])
    gflops = flops / median / 1e9

    print(f"op        {args.spec} (MetaSchedule, tvm {tvm.__version__})", file=sys.stderr)
    if tune_secs is not None:
        print(f"tuning    {len(records)} records ({len(valid)} valid) in {tune_secs:.1f} s (+ "
              f"{setup_secs:.1f} s importing tvm.s_tir.tensor_intrin before it)"
              + (f", best measured while tuning {best_tuned * 1e3:.4f} ms" if best_tuned else ""),
              file=sys.stderr)
    else:
        print(f"retimed   the best of {len(records)} records ({len(valid)} valid) in {args.work_dir}",
              file=sys.stderr)
    print(f"check     {'ok' if max_rel_err <= tolerance else 'FAILED'}: max rel error "
          f"{max_rel_err:.3g} against numpy (float64) over {got.size} elements", file=sys.stderr)
    print(f"time      median {median * 1e3:.4f} ms, min {min(runs) * 1e3:.4f}, max "
          f"{max(runs) * 1e3:.4f}, p10-p90 spread {(p90 - p10) / median * 100:.1f}% over "
          f"{repeat} runs", file=sys.stderr)
    print(f"speed     {gflops:.2f} GFLOP/s", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "spec": args.spec, "tvm": tvm.__version__, "target": str(target),
            "threads": args.threads, "trials": args.trials, "retime": args.retime,
            "records": len(records),
            "valid_records": len(valid), "tune_secs": tune_secs, "setup_secs": setup_secs,
            "best_tuned_ms": best_tuned * 1e3 if best_tuned else None,
            "flops": flops, "median_ms": median * 1e3, "min_ms": min(runs) * 1e3,
            "max_ms": max(runs) * 1e3, "runs": repeat, "gflops": gflops,
            "max_rel_err": max_rel_err, "passed": max_rel_err <= tolerance}))
    return 0 if max_rel_err <= tolerance else 3


if __name__ == "__main__":
    sys.exit(main())
