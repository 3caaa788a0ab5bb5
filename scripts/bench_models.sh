#!/usr/bin/env bash
# Whole-model benchmark: for each model, tessera untuned (default schedules) and tuned (records of
# the tuning database) against two peers, ONNX Runtime (graph optimization level all) and OpenVINO
# (CPU, f32 precision, latency hint, one stream), with 1 and 2 threads, in the same run on the same
# machine. Each runtime is timed in its own process, in rotating order over several rounds (round
# r starts with runtime r mod k, of k runtimes), so that drifts of the machine reach all alike;
# each runtime's latency is the median of its per-round medians. Prints the latencies, tessera's
# ratio to the better (faster) peer, the model's memory (peak RSS minus RSS before loading, median
# over the rounds), the cache-line round trip between the two CPUs around the multi-thread runs
# (the largest: a spell in which the host put the CPUs on different dies shows there) and
# tessera's build time. Multi-thread runs are guarded against such spells (scripts/spell_guard.py:
# a run waits for a spell to end, one that met a spell is run again, and each row compares the
# runs made in one placement), so that the runtimes compared ran in the same CPU placement.
#
# Usage: scripts/bench_models.sh [--db PATH] [--models "NAME ..."] [--threads "1 2"]
#                                [--min-secs S] [--rounds N] [--out DIR] [--realtime]
#                                [--no-spell-guard] [--busy-cpu N]
#   --db PATH        tuning database of the tuned builds (default tune_logs/tessera.db; the tuned
#                    column is left out when it does not exist)
#   --models LIST    model folders under ../shared/models, exported torchvision models
#                    (mobilenet_v2, squeezenet1_1 or models/exported/NAME: exported first when
#                    missing), folders holding a model.onnx, or paths of .onnx files (default:
#                    every shared model, the bundled models/mobilenet_tiny, then the two exported
#                    torchvision models, exported first when torch is installable)
#   --threads LIST   thread counts (default "1 2")
#   --min-secs S     timing per measurement (one runtime, one round; default 3)
#   --rounds N       rounds per model and thread count (default 3)
#   --out DIR        built libraries and the raw JSON lines (default tune_logs/bench_models)
#   --realtime       time every runtime under SCHED_FIFO (chrt -f 50; root or CAP_SYS_NICE), so
#                    that other work on a shared machine cannot preempt the timed runs
#   --no-spell-guard neither wait for a spell to end nor repeat a run that met one (the round
#                    trips are still recorded around each, and rows still compare one placement)
#   --busy-cpu N     keep CPU N busy with a spinning process for the whole run: a neighbour that
#                    slows whichever thread of a runtime shares its CPU, as other tenants of a
#                    shared machine do (implies --no-spell-guard: the neighbour slows the round
#                    trips too)
# Environment: TESSERA_BUILD_DIR (default build/); TESSERA_NO_BUILD=1 uses the tessera found there
# as it is, without running cmake. ONNX Runtime and OpenVINO come from scripts/setup_peers.sh, the
# exported models from scripts/export_torchvision.py (Debian's python3-torch and -torchvision).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
db="$root/tune_logs/tessera.db" models="" threads="1 2" min_secs=3 rounds=3
out="$root/tune_logs/bench_models"
rt=() guard=1 busy_cpu=""
exported_names=(mobilenet_v2 squeezenet1_1)
exported="$root/models/exported"
need() { [ "$2" -ge 2 ] || { echo "error: $1 needs a value (see --help)" >&2; exit 1; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --db) need "$1" $#; db=$2; shift 2 ;;
    --models) need "$1" $#; models=$2; shift 2 ;;
    --threads) need "$1" $#; threads=$2; shift 2 ;;
    --min-secs) need "$1" $#; min_secs=$2; shift 2 ;;
    --rounds) need "$1" $#; rounds=$2; shift 2 ;;
    --out) need "$1" $#; out=$2; shift 2 ;;
    --realtime) rt=(chrt -f 50); shift ;;
    --no-spell-guard) guard=0; shift ;;
    --busy-cpu) need "$1" $#; busy_cpu=$2; guard=0; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo pipefail$/{/^#/p}' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "error: --rounds wants a positive integer, not '$rounds'" >&2; exit 1; }
[[ $min_secs =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] ||
  { echo "error: --min-secs wants a number of seconds, not '$min_secs'" >&2; exit 1; }
[ -n "${threads// /}" ] || { echo "error: --threads wants at least one thread count" >&2; exit 1; }
for t in $threads; do
  [[ $t =~ ^[1-9][0-9]*$ ]] || { echo "error: --threads wants positive integers, not '$t'" >&2; exit 1; }
done
if [ -n "$busy_cpu" ]; then
  [[ $busy_cpu =~ ^[0-9]+$ ]] && [ "$busy_cpu" -lt "$(nproc)" ] ||
    { echo "error: --busy-cpu wants a CPU number below $(nproc), not '$busy_cpu'" >&2; exit 1; }
fi

# Exports the named torchvision models that are missing (installing torch when root).
export_models() { /usr/bin/python3 "$root/scripts/export_torchvision.py" --out "$exported" "$@" >&2; }

# The model list as "NAME=PATH.onnx" words, every path checked before anything is timed.
shared="$root/../shared/models"
resolved=()
if [ -z "$models" ]; then
  for d in "$shared"/*/; do [ -f "$d/model.onnx" ] && resolved+=("$(basename "$d")=${d%/}/model.onnx"); done
  resolved+=("mobilenet_tiny=$root/models/mobilenet_tiny/model.onnx")
  missing=()
  for n in "${exported_names[@]}"; do [ -f "$exported/$n/model.onnx" ] || missing+=("$n"); done
  if [ ${#missing[@]} -gt 0 ] && ! export_models "${missing[@]}"; then
    echo "note: exporting ${missing[*]} failed: left out of the table" >&2
  fi
  for n in "${exported_names[@]}"; do
    [ -f "$exported/$n/model.onnx" ] && resolved+=("$n=$exported/$n/model.onnx")
  done
else
  for m in $models; do
    n=$(basename "${m%/}")
    if [ -f "$m" ]; then resolved+=("$(basename "$(dirname "$m")")=$m")
    elif [ -f "$m/model.onnx" ]; then resolved+=("$n=$m/model.onnx")
    elif [ -f "$shared/$m/model.onnx" ]; then resolved+=("$m=$shared/$m/model.onnx")
    elif [[ " ${exported_names[*]} " == *" $n "* && ( $m == "$n" || $m == */exported/"$n" ) ]]; then
      [ -f "$exported/$n/model.onnx" ] || export_models "$n" ||
        { echo "error: exporting $n failed (see above)" >&2; exit 1; }
      resolved+=("$n=$exported/$n/model.onnx")
    else echo "error: no model at $m (neither a file, a folder with model.onnx, nor a model of $shared)" >&2; exit 1
    fi
  done
fi

"$root/scripts/setup.sh" >&2
py=$("$root/scripts/setup_peers.sh" | tail -1)
if [ -n "$busy_cpu" ]; then
  taskset -c "$busy_cpu" sh -c 'while :; do :; done' &
  busy_pid=$!
  trap 'kill "$busy_pid" 2>/dev/null || true' EXIT
  trap 'exit 130' INT TERM # through the EXIT trap: the neighbour never outlives the run
  echo "note: CPU $busy_cpu is kept busy by process $busy_pid for the whole run" >&2
fi
if [ "${TESSERA_NO_BUILD:-0}" != 1 ]; then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  fi
  cmake --build "$build" -j "$(nproc)" --target tessera >&2
fi
tessera="$build/tessera"
[ -x "$tessera" ] || { echo "error: no tessera at $tessera" >&2; exit 1; }
mkdir -p "$out"
tuned=1
[ -f "$db" ] || { echo "note: no database at $db: the tuned column is left out" >&2; tuned=0; }

calc() { "$py" -c "print($1)"; }
now() { date +%s.%N; }
# One timed process of runtime $1 for model $2 (name) and thread count $3: its JSON line. With
# 2+ threads, the round trips before and after it are added, and a run in a spell is repeated.
measure() {
  local cmd
  case "$1" in
    ort) cmd=(env "OMP_NUM_THREADS=$3" "${rt[@]}" "$py" "$root/scripts/ort_bench.py" "$onnx" --threads "$3" --min-secs "$min_secs") ;;
    ov) cmd=("${rt[@]}" "$py" "$root/scripts/ov_bench.py" "$onnx" --threads "$3" --min-secs "$min_secs") ;;
    untuned|tuned) cmd=("${rt[@]}" "$tessera" bench "$out/$2.$1.so" --threads "$3" --min-secs "$min_secs" --json) ;;
  esac
  if [ "$3" -ge 2 ] && [ "$lowest" != null ]; then
    local retries=3 wait=20
    [ $guard = 1 ] || retries=0 wait=0
    "$py" "$root/scripts/spell_guard.py" --tessera "$tessera" --threads "$3" \
      --state "$out/spell_guard.json" --retries $retries --max-wait $wait -- "${cmd[@]}"
  else
    "${cmd[@]}"
  fi
}
# The table's numbers from the raw lines of one model and thread count on stdin: the median over
# the rounds of each runtime's median (ms) and model memory (MiB), "-" where a runtime is absent.
summary='
import json, statistics, sys
sys.path.insert(0, sys.argv[1])
from spell_guard import compare_in_one_placement
runs = {}
for line in sys.stdin:
    d = json.loads(line)
    k = next(k for k in ("ort", "ov", "untuned", "tuned") if k in d)
    runs.setdefault(k, []).append(d[k])
# Latencies compared in one CPU placement, and the rt ns column of the runs compared.
largest = lambda r: max([t for t in r.get("round_trip_ns", []) if t is not None], default=None)
timed, trips = compare_in_one_placement(
    {k: [(r["median_ms"], r.get("in_spell"), largest(r)) for r in rs] for k, rs in runs.items()})
ms = {k: timed.get(k) for k in ("ort", "ov", "untuned", "tuned")}
med = lambda k, f: statistics.median(f(r) for r in runs[k]) if k in runs else None
mib = {k: med(k, lambda r: r["model_rss_mib"]) for k in ("ort", "ov")}
mib["t"] = med("tuned" if "tuned" in runs else "untuned", lambda r: r["model_rss_bytes"] / 2**20)
peer = min([ms[k] for k in ("ort", "ov") if ms[k] is not None], default=None)
f = lambda v, p: "-" if v is None else f"{v:.{p}f}"
ratio = lambda k: "-" if ms[k] is None or peer is None else f(ms[k] / peer, 2)
print(f(ms["ort"], 3), f(ms["ov"], 3), f(ms["untuned"], 3), ratio("untuned"),
      f(ms["tuned"], 3), ratio("tuned"),
      f(mib["ort"], 1), f(mib["ov"], 1), f(mib["t"], 1), trips)
'
raw="$out/results.jsonl"
: >"$raw"
# The lowest cache-line round trip between two CPUs, the spell guard's yardstick ("null": one CPU).
lowest=null
for t in $threads; do
  if [ "$t" -ge 2 ]; then
    lowest=$("$py" "$root/scripts/spell_guard.py" --tessera "$tessera" --state "$out/spell_guard.json" --baseline)
    break
  fi
done
row="%-14s %3s  %9s %9s  %9s %6s  %9s %6s  %8s %8s %7s  %6s  %7s %7s\n"
# shellcheck disable=SC2059  # one format for the header and the rows
printf "$row" model thr "ORT ms" "OV ms" untuned "x peer" tuned "x peer" "ORT MiB" "OV MiB" "t MiB" \
  "rt ns" "build s" "tuned s"
for entry in "${resolved[@]}"; do
  name=${entry%%=*} onnx=${entry#*=}
  t0=$(now)
  "$tessera" build "$onnx" --no-db -o "$out/$name.untuned.so" >/dev/null
  build_untuned=$(printf "%.1f" "$(calc "$(now) - $t0")")
  build_tuned="-"
  runtimes=(ort ov untuned)
  if [ $tuned = 1 ]; then
    t0=$(now)
    "$tessera" build "$onnx" --db "$db" -o "$out/$name.tuned.so" >"$out/$name.coverage.txt"
    build_tuned=$(printf "%.1f" "$(calc "$(now) - $t0")")
    runtimes+=(tuned)
  fi
  k=${#runtimes[@]}
  # A peer that cannot run the model (an op its importer refuses) is left out of its row with a
  # note; the other runtimes go on.
  declare -A refused=()
  for t in $threads; do
    lines=""
    for ((r = 0; r < rounds; r++)); do
      for ((j = 0; j < k; j++)); do
        rtm=${runtimes[(r + j) % k]}
        [ -z "${refused[$rtm]:-}" ] || continue
        if [ "$rtm" = ort ] || [ "$rtm" = ov ]; then
          if ! res=$(measure "$rtm" "$name" "$t" 2>"$out/$name.$rtm.err"); then
            refused[$rtm]=1
            echo "note: $([ "$rtm" = ort ] && echo "ONNX Runtime" || echo OpenVINO) cannot run" \
              "$name: $(grep -v '^\s*$' "$out/$name.$rtm.err" | tail -1) (all: $out/$name.$rtm.err)" >&2
            continue
          fi
        else
          res=$(measure "$rtm" "$name" "$t")
        fi
        line="{\"model\":\"$name\",\"threads\":$t,\"round\":$r,\"$rtm\":$res}"
        echo "$line" >>"$raw"
        lines+="$line"$'\n'
      done
    done
    cols=$(printf "%s" "$lines" | "$py" -c "$summary" "$root/scripts")
    # shellcheck disable=SC2059,SC2086  # the summary's words are the row's columns
    printf "$row" "$name" "$t" $cols "$build_untuned" "$build_tuned"
  done
done
echo
echo "ms: median over $rounds round(s) of each runtime's median, every runtime in its own process,"
echo "in rotating order. x peer: tessera latency / the better peer's (the lower of ONNX Runtime and"
echo "OpenVINO; below 1: tessera is faster). MiB: peak RSS minus RSS before loading the model (ONNX"
echo "Runtime: before creating its session; OpenVINO: before reading it, plugin loaded). Raw: $raw"
"$py" -c "import sys; sys.path.insert(0, sys.argv[1]); import spell_guard; print(spell_guard.NOTE)" \
  "$root/scripts"
echo "Lowest round trip seen: $lowest ns."
