#!/usr/bin/env bash
# Search against TVM MetaSchedule at equal trial budgets: for every kernel and budget, tunes the
# kernel from scratch with `tessera tune --op` (a fresh database) and with MetaSchedule's
# tune_tir (a fresh work directory; scripts/metaschedule_tune.py), measures each tuner's wall
# time, then re-times both best schedules one call at a time for at least --min-secs (median)
# and prints one table per budget: GFLOP/s of both (the same FLOP count), both tuning times and
# the ratio tessera / MetaSchedule. Both results are checked: tessera's by `tessera op run`
# against its double-precision reference, MetaSchedule's against numpy (float64) on random inputs.
#
# Usage: scripts/bench_search.sh [--budgets "64 256 1000"] [--kernels "sgemm conv2d depthwise"]
#                                [--threads T] [--out DIR] [--seed S] [--min-secs S] [--setup-only]
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
#                    least 10 calls, median reported (default 1)
#   --setup-only     install TVM into .venv-tvm (if missing) and stop
# Smoke tests only: --shape NAME=SPEC (repeatable) replaces the tessera op spec of kernel NAME on
#   both sides, e.g. --shape sgemm=matmul:m=256,n=256,k=256; the tables then say "SHAPE
#   OVERRIDE" and the numbers are not the benchmark's.
# Needs build/tessera (scripts/build.sh; TESSERA_BUILD_DIR overrides build/). MetaSchedule:
# apache-tvm 0.27.0.post1 with apache-tvm-ffi 0.1.14.post1 (newer ffi versions segfault on
# database writes), xgboost-cpu for its cost model, installed from PyPI into .venv-tvm
# (TESSERA_TVM_VENV overrides) on the first run. MetaSchedule runs with its defaults (tune_tir:
# evolutionary search, XGBoost cost model, gradient task scheduler, local builder and runner,
# num_trials_per_iter = min(64, budget)) except one: its builder skips importing the tensor
# intrinsics in every fresh build worker (scripts/metaschedule_tune.py, fast_build), which on a
# 2-core machine takes longer than the builder's 30 s timeout and fails every candidate.
# Wall times: tessera = the whole `tessera tune` process; MetaSchedule = the tune_tir call (its
# one-time import of the tensor intrinsics before it is in the logs and results.jsonl).
# Exit codes: 0 ok, 1 bad input (one `error:` line), 2 a tuner or a run failed (its row says
# which; the other rows still run), 3 a result disagreed with its reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
venv=${TESSERA_TVM_VENV:-$root/.venv-tvm}
budgets="64 256 1000" kernels="sgemm conv2d depthwise" threads=2 out="$root/tune_logs/bench_search"
seed=1 min_secs=1 setup_only=0
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
[[ "$min_secs" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] && awk "BEGIN{exit !($min_secs > 0)}" ||
  die "--min-secs must be a positive number, got '$min_secs'"

# --- MetaSchedule's environment (idempotent: a complete one is reused in a few seconds).
setup_tvm() {
  local py=/usr/bin/python3
  [ -x "$py" ] || py=$(command -v python3) || die "python3 is missing"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" "$root/scripts/metaschedule_tune.py" --check >/dev/null 2>&1; then
    return 0
  fi
  if ! "$py" -c "import venv, ensurepip" 2>/dev/null; then
    [ "$(id -u)" -eq 0 ] || die "python3-venv is missing and installing it needs root"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
  echo "bench_search: installing TVM 0.27.0.post1 (MetaSchedule) into $venv" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 xgboost-cpu==3.2.0 psutil cloudpickle numpy >&2
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
for b in "${budget_list[@]}"; do
  for k in "${kernel_list[@]}"; do
    s=${spec[$k]} tag="${k}_$b" t_note="" t_tier="" m_note=""
    # --- tessera: a fresh database, the whole tune process timed, then its best re-timed.
    db="$out/tessera_$tag.db"
    rm -f "$db" "$db-wal" "$db-shm"
    echo "== $k $s, $b trials: tessera tune" >&2
    t0=$(now)
    t_rc=0
    "$tessera" tune --op "$s" --trials "$b" --db "$db" --threads "$threads" --seed "$seed" --json \
      >"$out/logs/tessera_tune_$tag.json" 2>"$out/logs/tessera_tune_$tag.log" || t_rc=$?
    t_wall=$(elapsed "$t0" "$(now)")
    IFS=$'\x1f' read -r t_trials t_errors < <(jget "$out/logs/tessera_tune_$tag.json" trials errors)
    t_gflops="" t_ms="" t_flops="" t_err="" t_check=""
    if [ "$t_rc" = 0 ]; then
      run_json="$out/logs/tessera_run_$tag.json"
      r_rc=0
      "$tessera" op run "$s" --db "$db" --threads "$threads" --seed "$seed" --json >"$run_json" 2>&1 || r_rc=$?
      IFS=$'\x1f' read -r t_ms < <(jget "$run_json" median_ms)
      if [ "$r_rc" = 0 ] && [ -n "$t_ms" ]; then # again with enough calls for --min-secs
        repeat=$(awk -v ms="$t_ms" -v s="$min_secs" 'BEGIN{r = int(s * 1000 / ms) + 1; if (r < 10) r = 10; if (r > 100000) r = 100000; print r}')
        "$tessera" op run "$s" --db "$db" --threads "$threads" --seed "$seed" --repeat "$repeat" --json >"$run_json" 2>&1 || r_rc=$?
      fi
      IFS=$'\x1f' read -r t_ms t_gflops t_flops t_err t_check t_tier < <(jget "$run_json" median_ms gflops flops max_rel_err passed tier)
      if [ "$r_rc" = 3 ]; then status=3; t_gflops="" t_note="check FAILED"
      elif [ "$r_rc" != 0 ] || [ -z "$t_gflops" ]; then status=$((status > 2 ? status : 2)); t_gflops="" t_note="op run failed (rc $r_rc)"
      elif [ "$t_tier" != exact ]; then t_note="op run served by tier '$t_tier', not the tuned record"; fi
    else
      status=$((status > 2 ? status : 2)); t_note="tune failed (rc $t_rc, $out/logs/tessera_tune_$tag.log)"
    fi
    echo "   tessera: $([ -n "$t_gflops" ] && printf '%.1f GFLOP/s' "$t_gflops" || echo failed), $t_trials trials in $t_wall s ${t_note}" >&2

    # --- MetaSchedule: a fresh work directory; tune_tir timed inside the helper.
    wd="$out/ms_$tag"
    rm -rf "$wd"
    echo "== $k $s, $b trials: MetaSchedule" >&2
    t0=$(now)
    m_rc=0
    "$py" "$root/scripts/metaschedule_tune.py" "$s" --trials "$b" --threads "$threads" --mcpu "$mcpu" \
      --work-dir "$wd" --seed "$seed" --min-secs "$min_secs" --json \
      >"$out/logs/ms_$tag.json" 2>"$out/logs/ms_$tag.log" || m_rc=$?
    m_proc=$(elapsed "$t0" "$(now)")
    IFS=$'\x1f' read -r m_gflops m_wall m_setup m_records m_valid m_flops m_err m_check < <(
      jget "$out/logs/ms_$tag.json" gflops tune_secs setup_secs records valid_records flops max_rel_err passed)
    if [ "$m_rc" = 3 ]; then status=3; m_note="check FAILED"; m_gflops=""
    elif [ "$m_rc" != 0 ] || [ -z "$m_gflops" ]; then
      status=$((status > 2 ? status : 2)); m_gflops=""
      m_note="failed (rc $m_rc): $(grep -m1 '^error:' "$out/logs/ms_$tag.log" || tail -n1 "$out/logs/ms_$tag.log")"
    fi
    if [ -n "$t_flops" ] && [ -n "$m_flops" ] &&
       ! awk -v a="$t_flops" -v b="$m_flops" 'BEGIN{d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * a)}'; then
      echo "error: FLOP counts differ for $k: tessera $t_flops, MetaSchedule $m_flops" >&2; status=2
    fi
    echo "   MetaSchedule: $([ -n "$m_gflops" ] && printf '%.1f GFLOP/s' "$m_gflops" || echo failed), $m_records records ($m_valid valid), tune_tir $(printf %.1f "${m_wall:-0}") s (+ $(printf %.1f "${m_setup:-0}") s importing tensor intrinsics) ${m_note}" >&2

    "$py" -c 'import json, sys; k = sys.argv[1::2]; v = sys.argv[2::2]; print(json.dumps(dict(zip(k, v))))' \
      kernel "$k" spec "$s" budget "$b" threads "$threads" \
      tessera_gflops "$t_gflops" tessera_median_ms "$t_ms" tessera_tune_secs "$t_wall" \
      tessera_trials "$t_trials" tessera_errors "$t_errors" tessera_max_rel_err "$t_err" tessera_note "${t_note:-}" \
      ms_gflops "$m_gflops" ms_tune_secs "$m_wall" ms_setup_secs "$m_setup" ms_process_secs "$m_proc" \
      ms_records "$m_records" ms_valid_records "$m_valid" ms_max_rel_err "$m_err" ms_note "$m_note" \
      flops "${t_flops:-$m_flops}" >>"$results"
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
print(machine)
print(f"tessera `tune --op` vs TVM {tvm_version} MetaSchedule (tune_tir), equal trial budgets, "
      "GFLOP/s of the best schedule re-timed (median of single calls)")
if override:
    print(f"SHAPE OVERRIDE (smoke test, not the benchmark's shapes): {', '.join(override)}")
notes = []
for b in dict.fromkeys(r["budget"] for r in rows):
    print(f"\nbudget {b} trials")
    print(f"{'kernel':<10} {'spec':<62} {'trials t/MS':>11} {'tessera GF/s':>12} {'tessera s':>9} "
          f"{'MS GF/s':>8} {'MS s':>7} {'t/MS':>5}")
    for r in (r for r in rows if r["budget"] == b):
        try: ratio = f"{float(r['tessera_gflops']) / float(r['ms_gflops']):.2f}"
        except (TypeError, ValueError, ZeroDivisionError): ratio = "-"
        trials = f"{r['tessera_trials'] or '-'}/{r['ms_records'] or '-'}"
        print(f"{r['kernel']:<10} {r['spec']:<62} {trials:>11} {num(r['tessera_gflops'], '{:.1f}'):>12} "
              f"{num(r['tessera_tune_secs'], '{:.1f}'):>9} {num(r['ms_gflops'], '{:.1f}'):>8} "
              f"{num(r['ms_tune_secs'], '{:.1f}'):>7} {ratio:>5}")
        for side, key in (("tessera", "tessera_note"), ("MetaSchedule", "ms_note")):
            if r[key]: notes.append(f"{r['kernel']} at {b}: {side}: {r[key]}")
setup = [float(r["ms_setup_secs"]) for r in rows if r["ms_setup_secs"]]
print("\ntrials t/MS: candidates measured by tessera / records in MetaSchedule's database. "
      "tessera s: the whole `tessera tune` process; MS s: the tune_tir call, without the "
      "one-time import of TVM's tensor intrinsics before it"
      + (f" ({min(setup):.0f}-{max(setup):.0f} s per run here)." if setup else "."))
for n in notes: print("note:", n)
EOF
exit "$status"
