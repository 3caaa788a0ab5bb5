#!/usr/bin/env bash
# Configures (once) and builds tessera incrementally into build/ (or $TESSERA_BUILD_DIR), with
# extra CMake arguments from TESSERA_CMAKE_ARGS (e.g. "-DTESSERA_SANITIZE=ON") at configuration.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086 # TESSERA_CMAKE_ARGS is a list of arguments
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TESSERA_CMAKE_ARGS:-}
fi
cmake --build "$build" -j "$(nproc)"
