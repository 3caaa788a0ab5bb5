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
# The shared-database tests need a PostgreSQL server: a throwaway one runs beside ctest when the
# server binaries are installed (setup.sh installs them); without them those tests skip.
with_postgres=()
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  with_postgres=("$root/scripts/with_postgres.sh")
fi
"${with_postgres[@]}" ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
