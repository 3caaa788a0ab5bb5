#!/usr/bin/env bash
# The model zoo end to end: makes the Python environment (scripts/setup_zoo.sh), builds tessera
# (its CLI target only; TESSERA_NO_BUILD=1 skips it), exports the models not exported yet
# (scripts/export_zoo.py: models/zoo_small, models/zoo) and checks each against its ONNX Runtime
# outputs (scripts/zoo_check.py, whose options pass through). The table also goes to
# tune_logs/zoo/zoo_check.txt (and every model's result to tune_logs/zoo/zoo_check.json).
#
# Usage: scripts/zoo_check.sh [NAME ...] [--keep DIR] [--jobs N]
# Environment: TESSERA_BUILD_DIR (default <repo>/build), TESSERA_ZOO_VENV (scripts/setup_zoo.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/scripts/setup_zoo.sh" | tail -n 1)
build=${TESSERA_BUILD_DIR:-$root/build}
if [ "${TESSERA_NO_BUILD:-0}" != 1 ]; then
  [ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$build" --target tessera -j "$(nproc)" >&2
fi
names=()
for arg in "$@"; do
  case $arg in -*) break ;; *) names+=("$arg") ;; esac
done
"$py" "$root/scripts/export_zoo.py" --keep-going "${names[@]}" || true
mkdir -p "$root/tune_logs/zoo"
set +e
"$py" "$root/scripts/zoo_check.py" --tessera "$build/tessera" --json "$root/tune_logs/zoo/zoo_check.json" "$@" \
  | tee "$root/tune_logs/zoo/zoo_check.txt"
exit "${PIPESTATUS[0]}"
