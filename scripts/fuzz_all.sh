#!/usr/bin/env bash
# Fuzzes every fuzz target (fuzz/*_fuzzer.cpp) in turn for a while:
#   ./scripts/fuzz_all.sh [SECONDS_EACH] [SEED] [TARGET...]
# defaults: 300 s each, seed 1, all of onnx_import plan_loader npy_reader jsonl_import
# schedule_json. Prints one line per target (inputs run, seconds) and a total; exits 1 at the
# first failing input (written as crash-* in the build folder; reproduce it with
# BUILD/fuzz_<target> CRASH_FILE).
#
# With Clang, builds the targets with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# in build-fuzz/ (every tessera layer instrumented); new corpus entries stay in
# build-fuzz/fuzz_corpus/<target>/. Without Clang, uses the standalone mutation driver of the
# regular build folder (TESSERA_BUILD_DIR or build/). Seeds come from fuzz_seeds either way.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
seed=${2:-1}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(onnx_import plan_loader npy_reader jsonl_import schedule_json)
jobs=${TESSERA_JOBS:-2}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "error: SECONDS_EACH must be a positive integer, got '$seconds'" >&2
  exit 1
fi
for t in "${targets[@]}"; do
  if [ ! -f "$root/fuzz/${t}_fuzzer.cpp" ]; then
    echo "error: no fuzz target '$t' (fuzz/${t}_fuzzer.cpp)" >&2
    exit 1
  fi
done

clangxx=""
for c in clang++-19 clang++-14 clang++; do
  if command -v "$c" >/dev/null 2>&1; then clangxx=$c; break; fi
done
if [[ -n "$clangxx" ]]; then
  build=$root/build-fuzz
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_C_COMPILER="${clangxx/clang++/clang}" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DTESSERA_LIBFUZZER=ON >/dev/null
  flags=(-rss_limit_mb=4096 -timeout=20 -print_final_stats=1)
else
  echo "fuzz_all: no clang found; using the standalone mutation driver" >&2
  build=${TESSERA_BUILD_DIR:-$root/build}
  [ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  flags=()
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]/#/fuzz_}"
# The seeds come from real builds, which need no instrumentation: the regular build makes them.
regular=${TESSERA_BUILD_DIR:-$root/build}
[ -f "$regular/build.ninja" ] || cmake -S "$root" -B "$regular" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$regular" -j "$jobs" --target fuzz_seeds
"$regular/fuzz_seeds" "$build/fuzz_corpus" "$root/../shared/models" >/dev/null
cd "$build"
total=0
for t in "${targets[@]}"; do
  log=$(mktemp)
  if ! ./"fuzz_$t" -max_total_time="$seconds" -seed="$seed" "${flags[@]}" "fuzz_corpus/$t" \
      >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "error: fuzz_$t failed (see the input written above, in $build)" >&2
    rm -f "$log"
    exit 1
  fi
  # libFuzzer: "stat::number_of_executed_units: N"; the standalone driver: "fuzz: N inputs".
  runs=$(sed -n -e 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' \
    -e 's/^fuzz: \([0-9]*\) inputs.*/\1/p' "$log" | tail -1)
  rm -f "$log"
  echo "fuzz_$t: ${runs:-?} inputs in $seconds s, no failure"
  total=$(( total + ${runs:-0} ))
done
echo "fuzz_all: $total inputs over ${#targets[@]} targets, no failure (seed $seed)"
