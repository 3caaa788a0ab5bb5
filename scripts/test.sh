#!/usr/bin/env bash
# Installs what is missing, builds incrementally, and runs every test through ctest.
# Extra arguments go to ctest (e.g. ./scripts/test.sh -R Simplify -V).
#   ./scripts/test.sh --sanitize [CTEST ARGS]   the same with AddressSanitizer and UBSan: every
#       target instrumented (TESSERA_SANITIZE) in build-sanitize/; the first report fails its test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--sanitize" ]; then
  shift
  export TESSERA_BUILD_DIR=${TESSERA_BUILD_DIR:-$root/build-sanitize}
  # Clang 19: its sanitizer runtime locks its allocator and stack depot around fork(); GCC 12's
  # does not, and the compile processes the tuner forks from its build threads deadlock there.
  export TESSERA_SETUP_SANITIZER=1 CC=${CC:-clang-19} CXX=${CXX:-clang++-19}
  # The benchmark programs are not tests: not built there.
  export TESSERA_CMAKE_ARGS="-DTESSERA_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTESSERA_BUILD_BENCH=OFF"
  # allocator_may_return_null: a request too large for memory returns null, as malloc does,
  # and reaches the code's own out-of-memory errors instead of ending in a report.
  asan=detect_leaks=1:abort_on_error=1:strict_string_checks=1:allocator_may_return_null=1
  export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
"$root/scripts/setup.sh"
# The Python package's environment (its tests run as ctest label `python`); not instrumented.
if [ -z "${TESSERA_SETUP_SANITIZER:-}" ]; then "$root/scripts/setup_python.sh" >/dev/null; fi
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
