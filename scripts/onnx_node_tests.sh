#!/usr/bin/env bash
# Runs ONNX's backend node tests through `tessera build` and `tessera run`
# (scripts/onnx_node_tests.py; its --help lists the options). Installs what it needs: the
# Python environment of scripts/setup_peers.sh (onnx, numpy) and tessera itself (build.sh).
#
# Usage: scripts/onnx_node_tests.sh [--ops Resize,Clip] [--all] [--jobs N] [--json FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/scripts/setup_peers.sh" | tail -n 1)
[ "${TESSERA_NO_BUILD:-0}" = 1 ] || "$root/scripts/build.sh" >&2
exec "$py" "$root/scripts/onnx_node_tests.py" "$@"
