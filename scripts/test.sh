#!/usr/bin/env bash
# Installs what is missing, builds incrementally, and runs every test through ctest.
# Extra arguments go to ctest (e.g. ./scripts/test.sh -R Simplify -V).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${TESSERA_BUILD_DIR:-$root/build}
export OMP_WAIT_POLICY=passive   # libgomp spin-waiting starves a loaded 2-core machine
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
