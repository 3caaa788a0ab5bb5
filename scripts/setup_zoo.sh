#!/usr/bin/env bash
# Makes the Python environment of the model zoo (scripts/export_zoo.py, scripts/zoo_check.py): a
# virtual environment that sees the system packages (Debian's python3-torch 1.13 and
# python3-torchvision 0.14, installed with apt-get when missing) and holds transformers 4.36 (the
# last line that runs on torch 1.13), onnx, onnxruntime and numpy < 2 (torch 1.13 is built
# against numpy 1) from PyPI. Idempotent: a complete environment is reused at the cost of
# importing its packages.
#
# Usage: scripts/setup_zoo.sh        prints the environment's python path on its last line
# Environment: TESSERA_ZOO_VENV (default <repo>/.venv-zoo)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${TESSERA_ZOO_VENV:-$root/.venv-zoo}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
check="import torch, torchvision, transformers, onnx, onnxruntime, numpy"

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "$check" 2>/dev/null; then
  if ! "$py" -c "import torch, torchvision, venv, ensurepip" 2>/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "error: python3-torch, python3-torchvision or python3-venv is missing and installing them needs root" >&2
      exit 1
    fi
    echo "setup_zoo: installing python3-torch, python3-torchvision, python3-venv" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3-torch python3-torchvision python3-venv >/dev/null
  fi
  echo "setup_zoo: filling $venv (transformers 4.36, onnx, onnxruntime from PyPI)" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "transformers==4.36.2" "numpy<2" onnx onnxruntime >&2
  "$venv/bin/python" -c "$check"
fi
echo "$venv/bin/python"
