#!/usr/bin/env bash
# The main job on the bundled default model (models/mobilenet_tiny, a MobileNet-style classifier):
# installs what is missing, builds tessera incrementally, then
#   1. builds the model untuned (rule-based default schedules) and checks it against the reference,
#   2. tunes it for a short budget into a demo database (every measurement kept; rerunning resumes),
#   3. builds it again from that database (the coverage table says which task got which schedule),
#   4. runs it on the reference input and compares with the reference output,
#   5. prints its latency against the untuned build and ONNX Runtime, measured in this run.
#
# Usage: scripts/demo.sh [--time-budget SECONDS] [--threads N]   (defaults: 180 s, 2 threads)
# Environment: TESSERA_BUILD_DIR (default build/), TESSERA_DEMO_DIR (default tune_logs/demo).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=180 threads=2
while [ $# -gt 0 ]; do
  case "$1" in
    --time-budget) budget=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
py=$("$root/scripts/setup_peers.sh" | tail -1)
build=${TESSERA_BUILD_DIR:-$root/build}
tessera="$build/tessera"
demo=${TESSERA_DEMO_DIR:-$root/tune_logs/demo}
model="$root/models/mobilenet_tiny/model.onnx"
data="$root/models/mobilenet_tiny/test_data_set_0"
mkdir -p "$demo"
export OMP_WAIT_POLICY=passive

compare() { # output.npy
  "$py" - "$1" "$data/output_0.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
err = np.abs(a - b).max()
ok = np.allclose(a, b, rtol=1e-4, atol=1e-5)
print(f"max |tessera - reference| = {err:.3g} ({'ok' if ok else 'MISMATCH'}, rtol 1e-4 atol 1e-5)")
sys.exit(0 if ok else 3)
PY
}
median() { "$py" -c "import json,sys; print('%.3f' % json.load(sys.stdin)['median_ms'])"; }

echo "== this machine"
"$tessera" hw | head -4

echo
echo "== 1. untuned build (default schedules)"
"$tessera" build "$model" --no-db -o "$demo/mobilenet_tiny.untuned.so" | tail -3
"$tessera" run "$demo/mobilenet_tiny.untuned.so" --input "input=$data/input_0.npy" --output "$demo/untuned_out" >/dev/null
compare "$demo/untuned_out/probs.npy"

echo
echo "== 2. tuning for ${budget}s into $demo/tessera.db (Ctrl-C stops cleanly, a rerun resumes)"
# The shipped records of the development machine first (idempotent; another kind of machine
# keeps them as foreign records and tunes its own).
"$tessera" db import "$root/tune_logs/mobilenet_tiny.jsonl" --db "$demo/tessera.db"
"$tessera" tune "$model" --time-budget "$budget" --db "$demo/tessera.db" --threads "$threads" \
  --measure-per-round 16 --population 512 | tail -8

echo
echo "== 3. tuned build"
"$tessera" build "$model" --db "$demo/tessera.db" -o "$demo/mobilenet_tiny.so"

echo
echo "== 4. run on the reference input"
"$tessera" run "$demo/mobilenet_tiny.so" --input "input=$data/input_0.npy" --output "$demo/out" --threads "$threads"
compare "$demo/out/probs.npy"

echo
echo "== 5. latency, $threads threads, same run (median)"
ort=$("$py" "$root/scripts/ort_bench.py" "$model" --threads "$threads" --min-secs 2 | median)
unt=$("$tessera" bench "$demo/mobilenet_tiny.untuned.so" --threads "$threads" --min-secs 2 --json | median)
tun=$("$tessera" bench "$demo/mobilenet_tiny.so" --threads "$threads" --min-secs 2 --json | median)
printf "%-26s %9s ms\n" "ONNX Runtime" "$ort" "tessera untuned" "$unt" "tessera tuned" "$tun"
"$py" -c "print('tuned / ONNX Runtime = %.2f, tuned / untuned = %.2f' % ($tun / $ort, $tun / $unt))"
