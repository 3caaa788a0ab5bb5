#!/usr/bin/env bash
# Makes the virtual environment the Python package is built and tested with: numpy, pytest,
# nanobind and scikit-build-core from PyPI, on Debian's python3 (python3-venv and python3-dev
# come from scripts/setup.sh). Idempotent: a complete environment is reused at the cost of one
# import check (well under a second).
#
# Usage: scripts/setup_python.sh     prints the environment's python path on its last line
# Environment: TESSERA_PYTHON_VENV (default <repo>/.venv-py)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${TESSERA_PYTHON_VENV:-$root/.venv-py}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)

if [ ! -x "$venv/bin/python" ] ||
   ! "$venv/bin/python" -c "import numpy, pytest, nanobind, scikit_build_core" 2>/dev/null; then
  if ! "$py" -c "import venv, ensurepip" 2>/dev/null; then
    echo "error: python3-venv is missing (scripts/setup.sh installs it)" >&2
    exit 1
  fi
  echo "setup_python: filling $venv (numpy, pytest, nanobind, scikit-build-core from PyPI)" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    numpy pytest nanobind scikit-build-core >&2
fi
echo "$venv/bin/python"
