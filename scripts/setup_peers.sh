#!/usr/bin/env bash
# Installs the Python peers the model benchmarks and the demo compare against (ONNX Runtime and
# OpenVINO, and the onnx + numpy packages the bundled-model generator uses) into a virtual
# environment, so the system Python stays untouched. Idempotent: a complete environment is reused
# at the cost of importing its packages (about a second); one that lacks a package (an older one,
# without OpenVINO) gets the missing ones.
#
# Usage: scripts/setup_peers.sh        prints the environment's python path on its last line
# Environment: TESSERA_PEERS_VENV (default <repo>/.venv-peers)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${TESSERA_PEERS_VENV:-$root/.venv-peers}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import onnxruntime, openvino, onnx, numpy" 2>/dev/null; then
  if ! "$py" -c "import venv, ensurepip" 2>/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "error: python3-venv is missing and installing it needs root" >&2
      exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
  echo "setup_peers: filling $venv (onnxruntime, openvino, onnx, numpy from PyPI)" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check onnxruntime openvino onnx numpy >&2
fi
echo "$venv/bin/python"
