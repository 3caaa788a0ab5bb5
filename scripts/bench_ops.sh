#!/usr/bin/env bash
# Single-operator benchmark: tessera against OpenBLAS, oneDNN and this machine's peak FMA rate,
# measured side by side in one run (default 2 threads). Prints one table; exits non-zero when a
# result does not match its peer.
#
# The hand-written schedules of schedules/ run as extra rows ("schedule" in the code column).
#
# Usage: scripts/bench_ops.sh [--threads N] [--quick] [--json]
# Environment: TESSERA_BUILD_DIR (default build/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}

# Setup and build talk on stderr, so stdout holds only the benchmark's table (or JSON).
"$root/scripts/setup.sh" >&2
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
fi
# Only the benchmark (and the libraries it links), not every test program.
cmake --build "$build" -j "$(nproc)" --target tessera_bench_ops >&2

# The thread count: --threads N if given, else 2; the peers' pools get the same.
threads=2
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = "--threads" ] && [ $((i + 1)) -lt ${#args[@]} ]; then
    threads=${args[$((i + 1))]}
  fi
done

# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when the environment sets them, force a slower kernel
# or blocking than OpenBLAS picks for this CPU: drop them for the benchmark only.
# OMP_WAIT_POLICY=passive: oneDNN's OpenMP workers sleep instead of spinning between calls, so
# they do not steal the cores from the next library being timed.
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
  OMP_NUM_THREADS="$threads" OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS="$threads" \
  "$build/tessera_bench_ops" --threads "$threads" --schedules "$root/schedules" "$@"
