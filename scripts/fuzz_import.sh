#!/usr/bin/env bash
# Fuzzes the ONNX importer for a while (default 600 s): ./scripts/fuzz_import.sh [SECONDS] [SEED]
#
# With Clang available (clang++-14 or clang++), builds fuzz_onnx_import with libFuzzer and
# AddressSanitizer in build-fuzz/ (all of tessera_graph and its layers instrumented) and runs it
# on a corpus seeded from the small shared models; new corpus entries stay in
# build-fuzz/fuzz_corpus and crash inputs land in build-fuzz/. Without Clang, builds the
# standalone mutation driver in the regular build folder (TESSERA_BUILD_DIR or build/) and runs
# that instead. Reproduce a crash with: build-fuzz/fuzz_onnx_import CRASH_FILE
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
seed=${2:-1}
jobs=${TESSERA_JOBS:-2}

clangxx=""
for c in clang++-14 clang++; do
  if command -v "$c" >/dev/null 2>&1; then clangxx=$c; break; fi
done

if [[ -n "$clangxx" ]]; then
  clangc=${clangxx/clang++/clang}
  build=$root/build-fuzz
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_C_COMPILER="$clangc" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" -DTESSERA_LIBFUZZER=ON >/dev/null
  cmake --build "$build" -j "$jobs" --target fuzz_onnx_import
  cd "$build"
  exec ./fuzz_onnx_import -max_total_time="$seconds" -seed="$seed" -rss_limit_mb=4096 \
    -timeout=20 fuzz_corpus
else
  echo "fuzz_import: no clang found; using the standalone mutation driver" >&2
  build=${TESSERA_BUILD_DIR:-$root/build}
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$jobs" --target fuzz_onnx_import
  cd "$build"
  exec ./fuzz_onnx_import -max_total_time="$seconds" -seed="$seed" fuzz_corpus
fi
