#!/usr/bin/env bash
# Sharded tuning end to end (docs/CLUSTER.md), on one machine standing in for a cluster:
#   1. two `tessera tune models/mobilenet_tiny/model.onnx --shard I/2` processes (I = 0, 1) run at
#      once with the local runner into one PostgreSQL database (a throwaway local server from
#      scripts/with_postgres.sh, unless TESSERA_TEST_POSTGRES_URL already names one);
#   2. checks that the shards tuned disjoint task sets covering the model, every task with an
#      ok record (the first round of a task measures its default schedule);
#   3. `tessera db export` pulls the server's records down to JSONL, `tessera db import` loads them
#      into a fresh SQLite file;
#   4. `tessera build --strict` from that file (fails if any task lacks a record);
#   5. `tessera run` on the reference input, compared with the reference output.
# Exits non-zero on any failure, naming the step.
#
# Usage: scripts/shard_tune_e2e.sh [--trials N] [--threads N]
#   --trials   candidates measured per shard (default 32)
#   --threads  threads of each shard's measured kernels (default 1: two shards share the cores)
# Environment: TESSERA_BUILD_DIR (default build/; build the `tessera` target first),
#              TESSERA_E2E_DIR (keep the work files there instead of a removed temporary folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trials=32 threads=1
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done

# The shared database: start a throwaway server and rerun this script under it.
if [ -z "${TESSERA_TEST_POSTGRES_URL:-}" ]; then
  exec "$root/scripts/with_postgres.sh" "$0" --trials "$trials" --threads "$threads"
fi
url=$TESSERA_TEST_POSTGRES_URL

tessera=${TESSERA_BUILD_DIR:-$root/build}/tessera
if [ ! -x "$tessera" ]; then
  echo "error: no tessera executable at $tessera (build the 'tessera' target, or set TESSERA_BUILD_DIR)" >&2
  exit 1
fi
py=$("$root/scripts/setup_peers.sh" | tail -1)
model="$root/models/mobilenet_tiny/model.onnx"
data="$root/models/mobilenet_tiny/test_data_set_0"
if [ -n "${TESSERA_E2E_DIR:-}" ]; then
  work=$TESSERA_E2E_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/tessera_shard_e2e.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
export OMP_WAIT_POLICY=passive
start=$SECONDS
step() { echo; echo "== $1 ($((SECONDS - start)) s)"; }
fail() { echo "FAILED: $1" >&2; exit 1; }

shown=$url # without user and password
[[ $url == *@* ]] && shown="${url%%://*}://${url##*@}"
step "1. two shards tuning at once into $shown ($trials trials each)"
pids=()
for i in 0 1; do
  "$tessera" tune "$model" --shard "$i/2" --db "$url" --trials "$trials" --threads "$threads" \
    --measure-per-round 8 --population 256 --seed 1 --json \
    >"$work/shard$i.json" 2>"$work/shard$i.log" &
  pids+=($!)
done
for i in 0 1; do
  if ! wait "${pids[$i]}"; then
    tail -5 "$work/shard$i.log" >&2
    fail "shard $i/2 tuning"
  fi
  tail -1 "$work/shard$i.log"
done

step "2. the shards cover the model, every task with an ok record"
"$py" - "$work/shard0.json" "$work/shard1.json" <<'PY' || fail "shard coverage"
import json, sys
shards = [json.load(open(p)) for p in sys.argv[1:]]
n = shards[0]["model_tasks"]
seen = []
ok = True
for s in shards:
    print(f"shard {s['shard']}: {len(s['tasks'])} of {n} tasks, {s['trials']} trials, "
          f"{s['errors']} errors, estimate {s['estimated_ms_after']} ms")
    for t in s["tasks"]:
        seen.append(t["index"])
        if t["best_ms"] is None:
            print(f"  task {t['index']} {t['pattern']}: no ok record")
            ok = False
if sorted(seen) != list(range(n)):
    print(f"tasks tuned {sorted(seen)}, expected each of 0..{n - 1} once")
    ok = False
sys.exit(0 if ok else 1)
PY

step "3. export from PostgreSQL, import into an offline SQLite file"
"$tessera" db export --db "$url" -o "$work/records.jsonl" || fail "db export"
"$tessera" db import "$work/records.jsonl" --db "$work/offline.db" || fail "db import"
"$tessera" db stats --db "$work/offline.db" | head -3

step "4. build --strict from the offline database"
"$tessera" build "$model" --db "$work/offline.db" --strict -o "$work/mobilenet_tiny.so" \
  || fail "build --strict"

step "5. run on the reference input"
"$tessera" run "$work/mobilenet_tiny.so" --input "input=$data/input_0.npy" --output "$work/out" \
  >/dev/null || fail "run"
"$py" - "$work/out/probs.npy" "$data/output_0.npy" <<'PY' || fail "output differs from the reference"
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
err = np.abs(a - b).max()
ok = a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5)
print(f"max |tessera - reference| = {err:.3g} ({'ok' if ok else 'MISMATCH'}, rtol 1e-4 atol 1e-5)")
sys.exit(0 if ok else 1)
PY

echo
echo "PASSED in $((SECONDS - start)) s"
