#!/usr/bin/env bash
# Sharded tuning end to end (docs/CLUSTER.md), on one machine standing in for a cluster:
#   1. two `tessera tune models/mobilenet_tiny/model.onnx --shard I/2` processes (I = 0, 1) run at
#      once with the local runner into one PostgreSQL database (a throwaway local server from
#      scripts/with_postgres.sh, unless TESSERA_TEST_POSTGRES_URL already names one); with
#      --slurm they are the two tasks of a Slurm array job (`sbatch --array=0-1`, each a `srun`
#      step with one CPU) on a throwaway one-node cluster (scripts/with_slurm.sh), as
#      docs/CLUSTER.md describes;
#   2. checks that the shards tuned disjoint task sets covering the model, every task with an
#      ok record (the first round of a task measures its default schedule);
#   3. `tessera db export` pulls the server's records down to JSONL, `tessera db import` loads them
#      into a fresh SQLite file;
#   4. `tessera build --strict` from that file (fails if any task lacks a record);
#   5. `tessera run` on the reference input, compared with the reference output.
# Exits non-zero on any failure, naming the step.
#
# Usage: scripts/shard_tune_e2e.sh [--trials N] [--threads N] [--slurm]
#   --trials   candidates measured per shard (default 32)
#   --threads  threads of each shard's measured kernels (default 1: two shards share the cores)
#   --slurm    tune through a real Slurm array job (needs root; installs slurm-wlm and munge)
# Environment: TESSERA_BUILD_DIR (default build/; build the `tessera` target first),
#              TESSERA_E2E_DIR (keep the work files there instead of a removed temporary folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trials=32 threads=1 slurm=0
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --slurm) slurm=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done

# The shared database: start a throwaway server and rerun this script under it.
again=("$0" --trials "$trials" --threads "$threads")
[ "$slurm" -eq 1 ] && again+=(--slurm)
if [ -z "${TESSERA_TEST_POSTGRES_URL:-}" ]; then
  exec "$root/scripts/with_postgres.sh" "${again[@]}"
fi
# The cluster: start a throwaway Slurm and rerun this script under it.
if [ "$slurm" -eq 1 ] && [ -z "${SLURM_CONF:-}" ]; then
  exec "$root/scripts/with_slurm.sh" "${again[@]}"
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
tune_args=(--db "$url" --trials "$trials" --threads "$threads" --measure-per-round 8
           --population 256 --seed 1 --json)
if [ "$slurm" -eq 1 ]; then
  step "1. a Slurm array job of two shards tuning into $shown ($trials trials each)"
  cat >"$work/tune.sh" <<JOB
#!/bin/bash
#SBATCH --job-name=tessera-tune
#SBATCH --array=0-1
#SBATCH --cpus-per-task=1
#SBATCH --output=$work/slurm-%a.log
set -euo pipefail
export OMP_WAIT_POLICY=passive
srun "$tessera" tune "$model" --shard "\$SLURM_ARRAY_TASK_ID/2" ${tune_args[*]} \\
  >"$work/shard\$SLURM_ARRAY_TASK_ID.json" 2>"$work/shard\$SLURM_ARRAY_TASK_ID.log"
JOB
  if ! sbatch --wait "$work/tune.sh"; then
    for i in 0 1; do tail -5 "$work/slurm-$i.log" "$work/shard$i.log" >&2 || true; done
    fail "the Slurm array job"
  fi
  [ "$(squeue -h | wc -l)" -eq 0 ] || fail "jobs left in the Slurm queue"
  for i in 0 1; do tail -1 "$work/shard$i.log"; done
else
  step "1. two shards tuning at once into $shown ($trials trials each)"
  pids=()
  for i in 0 1; do
    "$tessera" tune "$model" --shard "$i/2" "${tune_args[@]}" \
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
fi

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
