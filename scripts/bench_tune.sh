#!/usr/bin/env bash
# Search benchmark: tunes each workload of the tuning acceptance list with `tessera tune`
# (evolutionary search + XGBoost cost model, real measurements), tunes sgemm once more with a
# random model at equal trials (the random-search baseline), plots the best-so-far curves, then
# times every tuned record against OpenBLAS and oneDNN in one run (tessera_bench_ops --db).
#
# Usage: scripts/bench_tune.sh [--trials N] [--time-budget SECONDS] [--threads T] [--out DIR]
#                              [--only NAME] [--seed S]
#   --trials N          trials per workload (default 1000)
#   --time-budget S     wall-clock limit per workload in seconds (default 900)
#   --threads T         threads of the measured kernels and of the peers (default 2)
#   --out DIR           databases, curves and plots (default tune_logs/bench)
#   --only NAME         tune only the workload whose name is NAME (sgemm, conv56, conv28,
#                       conv14, conv7, dwconv112, random); the comparison still runs
#   --seed S            search seed (default 1)
# Tuning resumes from the databases in --out (a second run adds trials; delete them to start
# over). Environment: TESSERA_BUILD_DIR (default build/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
trials=1000 budget=900 threads=2 out="$root/tune_logs/bench" only="" seed=1
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --time-budget) budget=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done

"$root/scripts/setup.sh" >&2
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
cmake --build "$build" -j "$(nproc)" --target tessera tessera_bench_ops >&2
mkdir -p "$out"

# name spec
workloads=(
  "sgemm matmul:m=1024,n=1024,k=1024"
  "conv56 conv2d:c=64,h=56,w=56,k=64,r=3,pad=1"
  "conv28 conv2d:c=128,h=28,w=28,k=128,r=3,pad=1"
  "conv14 conv2d:c=256,h=14,w=14,k=256,r=3,pad=1"
  "conv7 conv2d:c=512,h=7,w=7,k=512,r=3,pad=1"
  "dwconv112 depthwise_conv2d:c=32,h=112,w=112,r=3,pad=1"
)
export OMP_WAIT_POLICY=passive
tune() { # name spec db model
  echo "== tuning $1 ($2), model $4, up to $trials trials or $budget s" >&2
  "$build/tessera" tune --op "$2" --trials "$trials" --time-budget "$budget" --db "$3" \
    --seed "$seed" --threads "$threads" --model "$4" --curve "$out/$1.csv" >&2
}
for w in "${workloads[@]}"; do
  read -r name spec <<<"$w"
  if [ -z "$only" ] || [ "$only" = "$name" ]; then tune "$name" "$spec" "$out/tuned.db" xgboost; fi
done
# The random-search baseline: the same workload, trials and measurement, a random model.
if [ -z "$only" ] || [ "$only" = "random" ]; then
  tune sgemm_random "matmul:m=1024,n=1024,k=1024" "$out/random.db" random
fi

if command -v gnuplot >/dev/null; then
  "$root/scripts/plot_curve.sh" "$out/sgemm.csv" "$out/sgemm_random.csv" -o "$out/sgemm_search_vs_random.png" >&2 || true
  for w in "${workloads[@]}"; do
    read -r name _ <<<"$w"
    [ -f "$out/$name.csv" ] && "$root/scripts/plot_curve.sh" "$out/$name.csv" -o "$out/$name.png" >&2 || true
  done
fi

exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
  OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" \
  "$build/tessera_bench_ops" --threads "$threads" --tuned-only --db "$out/tuned.db"
