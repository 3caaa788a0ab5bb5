#!/usr/bin/env bash
# Configures (once) and builds tessera incrementally into build/ (or $TESSERA_BUILD_DIR), with
# extra CMake arguments from TESSERA_CMAKE_ARGS (e.g. "-DTESSERA_SANITIZE=ON") at configuration.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_BUILD_DIR:-$root/build}
# With the Python environment of scripts/setup_python.sh (and not instrumented), the build makes
# the Python package's module too (TESSERA_PYTHON), for that environment's python.
venv_py=${TESSERA_PYTHON_VENV:-$root/.venv-py}/bin/python
python_args=()
if [ -x "$venv_py" ] && [[ "${TESSERA_CMAKE_ARGS:-}" != *TESSERA_SANITIZE=ON* ]]; then
  python_args=(-DTESSERA_PYTHON=ON "-DPython_EXECUTABLE=$venv_py")
fi
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086 # TESSERA_CMAKE_ARGS is a list of arguments
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TESSERA_CMAKE_ARGS:-} \
    "${python_args[@]}"
elif [ ${#python_args[@]} -gt 0 ] &&
     ! grep -q '^TESSERA_PYTHON:BOOL=ON' "$build/CMakeCache.txt"; then
  cmake "$build" "${python_args[@]}"   # a build folder configured before the environment was
fi
cmake --build "$build" -j "$(nproc)"
