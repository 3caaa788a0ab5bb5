#!/usr/bin/env bash
# Whole-model benchmark: for each model, tessera untuned (default schedules) and tuned (records of
# the tuning database) against ONNX Runtime (graph optimization level all), with 1 and 2 threads,
# in the same run on the same machine. Prints latency (median of repeats), the ratio to ONNX
# Runtime, the model's memory (peak RSS minus RSS before loading, for both) and tessera's build time.
#
# Usage: scripts/bench_models.sh [--db PATH] [--models "NAME ..."] [--threads "1 2"]
#                                [--min-secs S] [--out DIR] [--realtime]
#   --db PATH        tuning database of the tuned builds (default tune_logs/tessera.db; the tuned
#                    column is left out when it does not exist)
#   --models LIST    model folders under ../shared/models, or paths of .onnx files
#                    (default: every shared model, then the bundled models/mobilenet_tiny)
#   --threads LIST   thread counts (default "1 2")
#   --min-secs S     timing per measurement (default 3)
#   --out DIR        built libraries and the raw JSON lines (default tune_logs/bench_models)
#   --realtime       time both runtimes under SCHED_FIFO (chrt -f 50; root or CAP_SYS_NICE), so
#                    that other work on a shared machine cannot preempt the timed runs
# Environment: TESSERA_BUILD_DIR (default build/). ONNX Runtime comes from scripts/setup_peers.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
db="$root/tune_logs/tessera.db" models="" threads="1 2" min_secs=3 out="$root/tune_logs/bench_models"
rt=()
while [ $# -gt 0 ]; do
  case "$1" in
    --db) db=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --min-secs) min_secs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --realtime) rt=(chrt -f 50); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done

"$root/scripts/setup.sh" >&2
py=$("$root/scripts/setup_peers.sh" | tail -1)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
cmake --build "$build" -j "$(nproc)" --target tessera >&2
tessera="$build/tessera"
mkdir -p "$out"
shared="$root/../shared/models"
if [ -z "$models" ]; then
  models=""
  for d in "$shared"/*/; do [ -f "$d/model.onnx" ] && models+=" $(basename "$d")"; done
  models+=" $root/models/mobilenet_tiny/model.onnx"
fi
tuned=1
[ -f "$db" ] || { echo "note: no database at $db: the tuned column is left out" >&2; tuned=0; }

json() { "$py" -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
calc() { "$py" -c "print($1)"; }
now() { date +%s.%N; }
ms() { printf "%.3f" "$1"; }
raw="$out/results.jsonl"
: >"$raw"
printf "%-14s %3s  %10s  %10s %6s  %10s %6s  %9s %9s  %8s %8s\n" model thr "ORT ms" "untuned" "x ORT" \
  "tuned" "x ORT" "ORT MiB" "t MiB" "build s" "tuned s"
for m in $models; do
  if [ -f "$m" ]; then onnx=$m; name=$(basename "$(dirname "$m")"); else onnx="$shared/$m/model.onnx"; name=$m; fi
  [ -f "$onnx" ] || { echo "error: no model at $onnx" >&2; exit 1; }
  t0=$(now)
  "$tessera" build "$onnx" --no-db -o "$out/$name.untuned.so" >/dev/null
  build_untuned=$(calc "$(now) - $t0")
  build_tuned="-"
  if [ $tuned = 1 ]; then
    t0=$(now)
    "$tessera" build "$onnx" --db "$db" -o "$out/$name.tuned.so" >"$out/$name.coverage.txt"
    build_tuned=$(printf "%.1f" "$(calc "$(now) - $t0")")
  fi
  for t in $threads; do
    # Interleaved: the peer, then tessera untuned, then tuned, so drifts hit all alike.
    ort=$(OMP_NUM_THREADS=$t "${rt[@]}" "$py" "$root/scripts/ort_bench.py" "$onnx" --threads "$t" --min-secs "$min_secs")
    unt=$("${rt[@]}" "$tessera" bench "$out/$name.untuned.so" --threads "$t" --min-secs "$min_secs" --json)
    echo "{\"model\":\"$name\",\"threads\":$t,\"ort\":$ort,\"untuned\":$unt}" >>"$raw"
    ort_ms=$(echo "$ort" | json '["median_ms"]')
    unt_ms=$(echo "$unt" | json '["median_ms"]')
    ort_mib=$(echo "$ort" | json '["model_rss_mib"]')
    t_mib=$(echo "$unt" | json '["model_rss_bytes"]/2**20')
    tun_ms="-" tun_ratio="-"
    if [ $tuned = 1 ]; then
      tun=$("${rt[@]}" "$tessera" bench "$out/$name.tuned.so" --threads "$t" --min-secs "$min_secs" --json)
      echo "{\"model\":\"$name\",\"threads\":$t,\"tuned\":$tun}" >>"$raw"
      tun_ms=$(ms "$(echo "$tun" | json '["median_ms"]')")
      tun_ratio=$(printf "%.2f" "$(calc "$tun_ms / $ort_ms")")
      t_mib=$(echo "$tun" | json '["model_rss_bytes"]/2**20')
    fi
    printf "%-14s %3s  %10s  %10s %6.2f  %10s %6s  %9.1f %9.1f  %8.1f %8s\n" "$name" "$t" "$(ms "$ort_ms")" \
      "$(ms "$unt_ms")" "$(calc "$unt_ms / $ort_ms")" "$tun_ms" "$tun_ratio" "$ort_mib" "$t_mib" \
      "$build_untuned" "$build_tuned"
  done
done
echo
echo "x ORT: tessera latency / ONNX Runtime latency (below 1: tessera is faster). MiB: peak RSS minus"
echo "RSS before loading the model (ONNX Runtime: before creating its session). Raw: $raw"
