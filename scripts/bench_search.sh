#!/usr/bin/env bash
# Search against TVM MetaSchedule at equal trial budgets: for every kernel and budget, tunes the
# kernel from scratch with `tessera tune --op` (a fresh database) and with MetaSchedule's
# tune_tir (a fresh work directory; scripts/metaschedule_tune.py), measures each tuner's wall
# time, then re-times both best schedules in --rounds rounds, each side in its own process for
# at least --min-secs of single calls, in rotating order (a slow phase of a shared host reaches
# every side alike), and prints one table per budget: GFLOP/s of both (the same FLOP count; the
# median of the rounds' medians), both tuning times and tessera's speed over MetaSchedule's
# (their ratio in each round, median over the rounds). Both
# results are checked: tessera's by `tessera op run` against its double-precision reference,
# MetaSchedule's against numpy (float64) on random inputs.
# The kernels of --model-forms get a second tessera row, "KERNEL/model": the operator as
# `tessera build` compiles it inside a model, tuned as a model from scratch with the same trial
# budget (`tessera tune MODEL --trials N`, all its tasks together): a one-node ONNX model with
# the weights as constants (scripts/op_model.py), so that the build packs them once and its
# graph passes apply (blocked layouts in and out of the call, and for 3x3 stride-1 convs with
# enough channels the Winograd rewrite: F(4x4, 3x3) on 64 channels, 2.25x fewer multiplies in
# its batched product, the weights transformed at build time, the result within 1e-3 of the
# float64 reference). Its GFLOP/s count the direct operator's FLOPs, as the other rows do.
#
# Usage: scripts/bench_search.sh [--budgets "64 256 1000"] [--kernels "sgemm conv2d depthwise"]
#                                [--threads T] [--out DIR] [--seed S] [--min-secs S] [--rounds R]
#                                [--model-forms LIST] [--metaschedule-from DIR] [--setup-only]
#   --budgets LIST   trial budgets, each run from scratch on both sides (default "64 256 1000")
#   --kernels LIST   any of sgemm (matmul 1024^3), conv2d (1x64x56x56, 64 filters 3x3, pad 1,
#                    stride 1), depthwise (1x32x112x112 3x3, pad 1, stride 1); default all three
#   --threads T      threads of the measured kernels on both sides, and the cores both searches
#                    assume (tessera --threads, MetaSchedule's num-cores and TVM_NUM_THREADS);
#                    default 2
#   --out DIR        databases, MetaSchedule work directories, logs, results.jsonl and the
#                    tables (summary.txt); default tune_logs/bench_search. Every run starts
#                    from scratch: the kernel's old database and work directory are deleted
#   --seed S         seed of both searches and of the inputs (default 1)
#   --min-secs S     re-timing of each best schedule: single calls for at least S seconds and at
#                    least 10 calls per round, median of each round (default 1)
#   --rounds R       re-timing rounds, each side once per round in rotating order; the table
#                    gives the median of the rounds' medians (default 3)
#   --model-forms L  kernels also tuned in their model form (see above), a subset of --kernels
#                    (default: conv2d when it is among them; "" for none)
#   --metaschedule-from DIR
#                    do not tune with MetaSchedule: take its work directories and tuning
#                    reports from DIR, the --out of an earlier run of this script on this
#                    machine with the same kernels, budgets, threads and seed (to try a change of
#                    tessera's side against the same MetaSchedule bests); its bests are still
#                    re-timed in this run's rounds, and the notes say where they came from
#   --setup-only     install TVM into .venv-tvm (if missing) and stop
# Smoke tests only: --shape NAME=SPEC (repeatable) replaces the tessera op spec of kernel NAME on
#   both sides, e.g. --shape sgemm=matmul:m=256,n=256,k=256; the tables then say "SHAPE
#   OVERRIDE" and the numbers are not the benchmark's.
# Needs build/tessera (scripts/build.sh; TESSERA_BUILD_DIR overrides build/). MetaSchedule:
# apache-tvm 0.27.0.post1 with apache-tvm-ffi 0.1.14.post1 (newer ffi versions segfault on
# database writes), xgboost-cpu for its cost model, onnx for the model forms, installed from
# PyPI into .venv-tvm
# (TESSERA_TVM_VENV overrides) on the first run. MetaSchedule runs with its defaults (tune_tir:
# evolutionary search, XGBoost cost model, gradient task scheduler, local builder and runner,
# num_trials_per_iter = min(64, budget)) except one: its builder skips importing the tensor
# intrinsics in every fresh build worker (scripts/metaschedule_tune.py, fast_build), which on a
# 2-core machine takes longer than the builder's 30 s timeout and fails every candidate.
# Wall times: tessera = the whole `tessera tune` process (a model form: the tune and its build);
# MetaSchedule = the tune_tir call (its one-time import of the tensor intrinsics before it is in
# the logs and results.jsonl).
# Exit codes: 0 ok, 1 bad input (one `error:` line), 2 a tuner or a run failed (its row says
# which; the other rows still run), 3 a result disagreed with its reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
venv=${TESSERA_TVM_VENV:-$root/.venv-tvm}
budgets="64 256 1000" kernels="sgemm conv2d depthwise" threads=2 out="$root/tune_logs/bench_search"
seed=1 min_secs=1 rounds=3 model_forms=default setup_only=0 ms_from=""
declare -A spec=(
  [sgemm]="matmul:m=1024,n=1024,k=1024"
  [conv2d]="conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1"
  [depthwise]="depthwise_conv2d:n=1,c=32,h=112,w=112,r=3,s=3,stride=1,pad=1"
)
override=""

die() { echo "error: $*" >&2; exit 1; }
need_arg() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --budgets) need_arg "$@"; budgets=$2; shift 2 ;;
    --kernels) need_arg "$@"; kernels=$2; shift 2 ;;
    --threads) need_arg "$@"; threads=$2; shift 2 ;;
    --out) need_arg "$@"; out=$2; shift 2 ;;
    --seed) need_arg "$@"; seed=$2; shift 2 ;;
    --min-secs) need_arg "$@"; min_secs=$2; shift 2 ;;
    --rounds) need_arg "$@"; rounds=$2; shift 2 ;;
    --model-forms) need_arg "$@"; model_forms=$2; shift 2 ;;
    --metaschedule-from) need_arg "$@"; ms_from=$2; shift 2 ;;
    --shape)
      need_arg "$@"
      name=${2%%=*} value=${2#*=}
      [ "$name" != "$2" ] && [ -n "$value" ] || die "--shape takes NAME=SPEC, got '$2'"
      case "$name" in sgemm|conv2d|depthwise) ;; *) die "--shape: unknown kernel '$name' (sgemm, conv2d, depthwise)" ;; esac
      spec[$name]=$value
      override="$override $name"
      shift 2 ;;
    --setup-only) setup_only=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

read -r -a budget_list <<<"$budgets"
read -r -a kernel_list <<<"$kernels"
[ ${#budget_list[@]} -gt 0 ] || die "--budgets is empty"
[ ${#kernel_list[@]} -gt 0 ] || die "--kernels is empty"
for b in "${budget_list[@]}"; do
  [[ "$b" =~ ^[0-9]+$ ]] && [ "$b" -ge 1 ] || die "--budgets: '$b' is not a positive integer"
done
declare -A seen=()
for k in "${kernel_list[@]}"; do
  case "$k" in sgemm|conv2d|depthwise) ;; *) die "--kernels: unknown kernel '$k' (sgemm, conv2d, depthwise)" ;; esac
  [ -z "${seen[$k]+x}" ] || die "--kernels: '$k' given twice"
  seen[$k]=1
done
[[ "$threads" =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ] || die "--threads must be a positive integer, got '$threads'"
[[ "$seed" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer, got '$seed'"
[[ "$rounds" =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] || die "--rounds must be a positive integer, got '$rounds'"
declare -A model_form=()
[ "$model_forms" != default ] || model_forms=$([ -z "${seen[conv2d]+x}" ] || echo conv2d)
read -r -a model_form_list <<<"$model_forms"
for k in "${model_form_list[@]}"; do
  [ -n "${seen[$k]+x}" ] || die "--model-forms: '$k' is not among --kernels ($kernels)"
  model_form[$k]=1
done
if [ -n "$ms_from" ]; then
  [ -f "$ms_from/results.jsonl" ] || die "--metaschedule-from: '$ms_from' holds no results.jsonl of a run of this script"
  for b in "${budget_list[@]}"; do
    for k in "${kernel_list[@]}"; do
      [ -d "$ms_from/ms_${k}_$b" ] && [ -f "$ms_from/logs/ms_${k}_$b.json" ] ||
        die "--metaschedule-from: '$ms_from' has no MetaSchedule run of $k at $b trials"
    done
  done
  ms_from=$(cd "$ms_from" && pwd)
  [ "$ms_from" != "$(mkdir -p "$out" && cd "$out" && pwd)" ] || die "--metaschedule-from must not be --out"
fi
[[ "$min_secs" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] && awk "BEGIN{exit !($min_secs > 0)}" ||
  die "--min-secs must be a positive number, got '$min_secs'"

# --- MetaSchedule's environment (idempotent: a complete one is reused in a few seconds).
setup_tvm() {
  local py=/usr/bin/python3
  [ -x "$py" ] || py=$(command -v python3) || die "python3 is missing"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" "$root/scripts/metaschedule_tune.py" --check >/dev/null 2>&1 &&
     "$venv/bin/python" -c "import onnx" 2>/dev/null; then
    return 0
  fi
  if ! "$py" -c "import venv, ensurepip" 2>/dev/null; then
    [ "$(id -u)" -eq 0 ] || die "python3-venv is missing and installing it needs root"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
  echo "bench_search: installing TVM 0.27.0.post1 (MetaSchedule) into $venv" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 xgboost-cpu==3.2.0 psutil cloudpickle numpy \
    onnx >&2
  "$venv/bin/python" "$root/scripts/metaschedule_tune.py" --check >&2 ||
    { echo "error: TVM in $venv does not import (see above)" >&2; exit 2; }
}
setup_tvm
[ "$setup_only" = 1 ] && { echo "bench_search: $("$venv/bin/python" "$root/scripts/metaschedule_tune.py" --check)" >&2; exit 0; }
py="$venv/bin/python"

tessera="$build/tessera"
[ -x "$tessera" ] || die "$tessera not found: build it first (scripts/build.sh)"
# Validates the specs (an --shape override above all) before anything long runs.
for k in "${kernel_list[@]}"; do
  msg=$("$tessera" op default "${spec[$k]}" 2>&1 >/dev/null) ||
    die "kernel $k: spec '${spec[$k]}': $(sed -n 's/^error: //p' <<<"$msg" | head -n1)"
done
mkdir -p "$out/logs"

jget() { # FILE KEY...: the keys of the last line of FILE (a JSON object), \x1f-separated
  "$py" -c '
import json, sys
try:
    j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except Exception:
    j = {}
print("\x1f".join("" if j.get(k) is None else str(j.get(k)) for k in sys.argv[2:]))' "$@"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b - a}'; }

hwj="$out/logs/hw.json"
"$tessera" hw --json >"$hwj"
IFS=$'\x1f' read -r mcpu model cores vbits < <(jget "$hwj" cpu model_name cores vector_bits)
machine="machine: $model (LLVM cpu $mcpu), $cores cores, $vbits-bit vectors; threads used: $threads; load average before: $(cut -d' ' -f1 /proc/loadavg)"
echo "bench_search: $machine" >&2
tvm_version=$("$py" "$root/scripts/metaschedule_tune.py" --check 2>/dev/null | awk '{print $2}' | tr -d ,)

results="$out/results.jsonl"
: >"$results"
status=0
export OMP_WAIT_POLICY=passive # XGBoost (both cost models) uses OpenMP: no spinning between rounds
# The median of the numbers given (milliseconds of the rounds); empty when none.
median_of() { [ $# -eq 0 ] || printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
gflops_of() { [ -z "$2" ] || awk -v f="$1" -v ms="$2" 'BEGIN{printf "%.6g", f / ms / 1e6}'; }
worst() { status=$((status > $1 ? status : $1)); }

for b in "${budget_list[@]}"; do
  for k in "${kernel_list[@]}"; do
    s=${spec[$k]} tag="${k}_$b" t_note="" t_tier="" m_note="" f_note=""
    # --- tessera: a fresh database, the whole tune process timed, then its best checked once.
    db="$out/tessera_$tag.db"
    rm -f "$db" "$db-wal" "$db-shm"
    echo "== $k $s, $b trials: tessera tune" >&2
    t0=$(now)
    t_rc=0 t_ok=0 repeat=10
    "$tessera" tune --op "$s" --trials "$b" --db "$db" --threads "$threads" --seed "$seed" --json \
      >"$out/logs/tessera_tune_$tag.json" 2>"$out/logs/tessera_tune_$tag.log" || t_rc=$?
    t_wall=$(elapsed "$t0" "$(now)")
    IFS=$'\x1f' read -r t_trials t_errors < <(jget "$out/logs/tessera_tune_$tag.json" trials errors)
    t_ms="" t_flops="" t_err="" t_check=""
    if [ "$t_rc" = 0 ]; then
      run_json="$out/logs/tessera_run_$tag.json"
      r_rc=0
      "$tessera" op run "$s" --db "$db" --threads "$threads" --seed "$seed" --json >"$run_json" 2>&1 || r_rc=$?
      IFS=$'\x1f' read -r t_ms t_flops t_err t_check t_tier < <(jget "$run_json" median_ms flops max_rel_err passed tier)
      if [ "$r_rc" = 3 ]; then worst 3; t_note="check FAILED"
      elif [ "$r_rc" != 0 ] || [ -z "$t_ms" ]; then worst 2; t_note="op run failed (rc $r_rc)"
      else
        t_ok=1 # single calls for --min-secs in each re-timing round
        repeat=$(awk -v ms="$t_ms" -v s="$min_secs" 'BEGIN{r = int(s * 1000 / ms) + 1; if (r < 10) r = 10; if (r > 100000) r = 100000; print r}')
        [ "$t_tier" = exact ] || t_note="op run served by tier '$t_tier', not the tuned record"
      fi
    else
      worst 2; t_note="tune failed (rc $t_rc, $out/logs/tessera_tune_$tag.log)"
    fi

    # --- tessera, model form: the one-node model tuned from scratch, built from its records.
    f_ok=0 f_wall="" f_trials="" f_errors="" f_err="" f_winograd=""
    lib="$out/tessera_model_$tag.so"
    if [ -n "${model_form[$k]+x}" ]; then
      mdl="$out/model_$tag.onnx" mdb="$out/tessera_model_$tag.db" flog="$out/logs/tessera_model_$tag.log"
      rm -f "$mdb" "$mdb-wal" "$mdb-shm" "$lib"
      echo "== $k $s, $b trials: tessera tune, model form" >&2
      f_rc=0
      "$py" "$root/scripts/op_model.py" "$s" --write "$mdl" --seed "$seed" 2>"$flog" || f_rc=$?
      t0=$(now)
      [ "$f_rc" != 0 ] || "$tessera" tune "$mdl" --trials "$b" --db "$mdb" --threads "$threads" --seed "$seed" \
        --json >"$out/logs/tessera_model_tune_$tag.json" 2>>"$flog" || f_rc=$?
      [ "$f_rc" != 0 ] || "$tessera" build "$mdl" --db "$mdb" -o "$lib" >>"$flog" 2>&1 || f_rc=$?
      f_wall=$(elapsed "$t0" "$(now)")
      # What the winograd pass made of it ("1 convs to F(4x4, 3x3)", "no conv to Winograd").
      [ "$f_rc" != 0 ] || f_winograd=$("$tessera" inspect "$mdl" 2>/dev/null |
        sed -n 's/^ *winograd: [0-9]* changes, [^:]*: //p' | head -n1)
      IFS=$'\x1f' read -r f_trials f_errors < <(jget "$out/logs/tessera_model_tune_$tag.json" trials errors)
      if [ "$f_rc" = 0 ]; then
        "$py" "$root/scripts/op_model.py" "$s" --check "$lib" --tessera "$tessera" --seed "$seed" \
          --threads "$threads" --json >"$out/logs/tessera_model_check_$tag.json" 2>>"$flog" || f_rc=$?
        IFS=$'\x1f' read -r f_err < <(jget "$out/logs/tessera_model_check_$tag.json" max_rel_err)
        if [ "$f_rc" = 3 ]; then worst 3; f_note="check FAILED"
        elif [ "$f_rc" != 0 ]; then worst 2; f_note="check run failed (rc $f_rc, $flog)"
        else f_ok=1; fi
      else
        worst 2; f_note="model form failed (rc $f_rc, $flog)"
      fi
    fi

    # --- MetaSchedule: a fresh work directory; tune_tir timed inside the helper (or an earlier
    # run's, --metaschedule-from).
    wd="$out/ms_$tag"
    rm -rf "$wd"
    t0=$(now)
    m_rc=0 m_ok=0
    if [ -n "$ms_from" ]; then
      echo "== $k $s, $b trials: MetaSchedule's tune from $ms_from" >&2
      cp -r "$ms_from/ms_$tag" "$wd"
      cp "$ms_from/logs/ms_$tag.json" "$out/logs/ms_$tag.json"
      m_note="tuned in an earlier run ($ms_from), re-timed here"
    else
      echo "== $k $s, $b trials: MetaSchedule" >&2
      "$py" "$root/scripts/metaschedule_tune.py" "$s" --trials "$b" --threads "$threads" --mcpu "$mcpu" \
        --work-dir "$wd" --seed "$seed" --min-secs "$min_secs" --json \
        >"$out/logs/ms_$tag.json" 2>"$out/logs/ms_$tag.log" || m_rc=$?
    fi
    m_proc=$(elapsed "$t0" "$(now)")
    IFS=$'\x1f' read -r m_first m_wall m_setup m_records m_valid m_flops m_err m_check < <(
      jget "$out/logs/ms_$tag.json" median_ms tune_secs setup_secs records valid_records flops max_rel_err passed)
    if [ "$m_rc" = 3 ]; then worst 3; m_note="check FAILED"
    elif [ "$m_rc" != 0 ] || [ -z "$m_first" ]; then
      worst 2
      m_note="failed (rc $m_rc): $(grep -m1 '^error:' "$out/logs/ms_$tag.log" || tail -n1 "$out/logs/ms_$tag.log")"
    else m_ok=1; fi
    if [ -n "$t_flops" ] && [ -n "$m_flops" ] &&
       ! awk -v a="$t_flops" -v b="$m_flops" 'BEGIN{d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * a)}'; then
      echo "error: FLOP counts differ for $k: tessera $t_flops, MetaSchedule $m_flops" >&2; worst 2
    fi
    flops=${t_flops:-$m_flops}

    # --- Re-timing: every side once per round, each in its own process, in rotating order.
    sides=()
    [ "$t_ok" = 1 ] && sides+=(op)
    [ "$f_ok" = 1 ] && sides+=(model)
    [ "$m_ok" = 1 ] && sides+=(ms)
    declare -A round_ms=([op]="" [model]="" [ms]="")
    for ((r = 0; r < rounds; r++)); do
      for ((i = 0; i < ${#sides[@]}; i++)); do
        side=${sides[$(((r + i) % ${#sides[@]}))]}
        rj="$out/logs/retime_${side}_${tag}_$r.json"
        x_rc=0
        case "$side" in
          op) "$tessera" op run "$s" --db "$db" --threads "$threads" --seed "$seed" --repeat "$repeat" \
                --json >"$rj" 2>&1 || x_rc=$? ;;
          model) "$tessera" bench "$lib" --threads "$threads" --min-secs "$min_secs" --json >"$rj" 2>&1 || x_rc=$? ;;
          ms) "$py" "$root/scripts/metaschedule_tune.py" "$s" --retime --work-dir "$wd" --threads "$threads" \
                --mcpu "$mcpu" --seed "$seed" --min-secs "$min_secs" --json >"$rj" 2>&1 || x_rc=$? ;;
        esac
        IFS=$'\x1f' read -r x_ms < <(jget "$rj" median_ms)
        if [ "$x_rc" != 0 ] || [ -z "$x_ms" ]; then
          worst 2; echo "   re-timing $side, round $((r + 1)) failed (rc $x_rc, $rj)" >&2
        else
          round_ms[$side]="${round_ms[$side]} $x_ms"
        fi
      done
    done
    # shellcheck disable=SC2086 # the lists split on purpose
    t_ms=$(median_of ${round_ms[op]}) f_ms=$(median_of ${round_ms[model]}) m_ms=$(median_of ${round_ms[ms]})
    t_gflops=$(gflops_of "$flops" "$t_ms") f_gflops=$(gflops_of "$flops" "$f_ms") m_gflops=$(gflops_of "$flops" "$m_ms")
    echo "   tessera: $([ -n "$t_gflops" ] && printf '%.1f GFLOP/s' "$t_gflops" || echo failed), $t_trials trials in $t_wall s ${t_note}" >&2
    [ -z "${model_form[$k]+x}" ] ||
      echo "   tessera, model form: $([ -n "$f_gflops" ] && printf '%.1f GFLOP/s' "$f_gflops" || echo failed), $f_trials trials in $f_wall s ${f_note}" >&2
    echo "   MetaSchedule: $([ -n "$m_gflops" ] && printf '%.1f GFLOP/s' "$m_gflops" || echo failed), $m_records records ($m_valid valid), tune_tir $(printf %.1f "${m_wall:-0}") s (+ $(printf %.1f "${m_setup:-0}") s importing tensor intrinsics) ${m_note}" >&2

    "$py" -c 'import json, sys; k = sys.argv[1::2]; v = sys.argv[2::2]; print(json.dumps(dict(zip(k, v))))' \
      kernel "$k" spec "$s" budget "$b" threads "$threads" rounds "$rounds" \
      tessera_gflops "$t_gflops" tessera_median_ms "$t_ms" tessera_round_ms "${round_ms[op]# }" \
      tessera_tune_secs "$t_wall" tessera_trials "$t_trials" tessera_errors "$t_errors" \
      tessera_max_rel_err "$t_err" tessera_note "${t_note:-}" \
      model_form "$([ -n "${model_form[$k]+x}" ] && echo 1)" model_gflops "$f_gflops" model_median_ms "$f_ms" \
      model_round_ms "${round_ms[model]# }" model_tune_secs "$f_wall" model_trials "$f_trials" \
      model_errors "$f_errors" model_max_rel_err "$f_err" model_note "${f_note:-}" \
      model_winograd "$f_winograd" \
      ms_gflops "$m_gflops" ms_median_ms "$m_ms" ms_round_ms "${round_ms[ms]# }" ms_tune_secs "$m_wall" \
      ms_setup_secs "$m_setup" ms_process_secs "$m_proc" \
      ms_records "$m_records" ms_valid_records "$m_valid" ms_max_rel_err "$m_err" ms_note "$m_note" \
      flops "$flops" >>"$results"
  done
done

# --- The tables.
"$py" - "$results" "$machine" "$tvm_version" "$override" <<'EOF' | tee "$out/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
machine, tvm_version, override = sys.argv[2], sys.argv[3], sys.argv[4].split()
def num(x, fmt):
    try: return fmt.format(float(x))
    except (TypeError, ValueError): return "-"
def speed_ratio(r, side):
    """MetaSchedule's time over this side's, per round (both ran minutes apart at most), median
    over the rounds; the ratio of the medians when a round lacks one of them."""
    a, b = r[side + "_round_ms"].split(), r["ms_round_ms"].split()
    try:
        if a and len(a) == len(b):
            q = sorted(float(y) / float(x) for x, y in zip(a, b))
            return f"{(q[(len(q) - 1) // 2] + q[len(q) // 2]) / 2:.2f}"
        return f"{float(r[side + '_gflops']) / float(r['ms_gflops']):.2f}"
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"
print(machine)
print(f"tessera `tune --op` (and `tune MODEL` for the model forms) vs TVM {tvm_version} "
      "MetaSchedule (tune_tir), equal trial budgets, GFLOP/s of the best schedule re-timed "
      f"(median of {rows[0]['rounds'] if rows else '?'} rounds' medians of single calls, "
      "the sides in rotating order)")
if override:
    print(f"SHAPE OVERRIDE (smoke test, not the benchmark's shapes): {', '.join(override)}")
notes = []
for b in dict.fromkeys(r["budget"] for r in rows):
    print(f"\nbudget {b} trials")
    print(f"{'kernel':<16} {'spec':<62} {'trials t/MS':>11} {'tessera GF/s':>12} {'tessera s':>9} "
          f"{'MS GF/s':>8} {'MS s':>7} {'t/MS':>5}")
    for r in (r for r in rows if r["budget"] == b):
        forms = [("", "tessera")] + ([("/model", "model")] if r["model_form"] else [])
        for suffix, side in forms:
            ratio = speed_ratio(r, side)
            trials = f"{r[side + '_trials'] or '-'}/{r['ms_records'] or '-'}"
            print(f"{r['kernel'] + suffix:<16} {r['spec']:<62} {trials:>11} "
                  f"{num(r[side + '_gflops'], '{:.1f}'):>12} {num(r[side + '_tune_secs'], '{:.1f}'):>9} "
                  f"{num(r['ms_gflops'], '{:.1f}'):>8} {num(r['ms_tune_secs'], '{:.1f}'):>7} {ratio:>5}")
        for side, key in (("tessera", "tessera_note"), ("tessera, model form", "model_note"),
                          ("MetaSchedule", "ms_note")):
            if r[key]: notes.append(f"{r['kernel']} at {b}: {side}: {r[key]}")
        rounds = "; ".join(f"{name} {r[key]}" for name, key in
                           (("tessera", "tessera_round_ms"), ("model", "model_round_ms"),
                            ("MS", "ms_round_ms")) if r[key])
        if r["model_winograd"]:
            notes.append(f"{r['kernel']} at {b}: model form: {r['model_winograd']}, max rel error "
                         f"{num(r['model_max_rel_err'], '{:.2g}')} against float64")
        if rounds: notes.append(f"{r['kernel']} at {b}: ms per round: {rounds}")
setup = [float(r["ms_setup_secs"]) for r in rows if r["ms_setup_secs"]]
print("\ntrials t/MS: candidates measured by tessera / records in MetaSchedule's database. "
      "tessera s: the whole `tessera tune` process (a model form: with its build); MS s: the "
      "tune_tir call, without the one-time import of TVM's tensor intrinsics before it"
      + (f" ({min(setup):.0f}-{max(setup):.0f} s per run here)." if setup else ".")
      + " t/MS: MetaSchedule's time over tessera's in each round, the median over the rounds "
      "(above 1: tessera faster)."
      + " KERNEL/model: the operator as a one-node model with constant weights, tuned and built "
      "as a model (its graph passes apply; the notes say whether a conv became Winograd); the "
      "same FLOP count.")
for n in notes: print("note:", n)
EOF
exit "$status"
