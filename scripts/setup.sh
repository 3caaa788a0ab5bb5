#!/usr/bin/env bash
# Installs, from Debian's packages, what tessera's build, tests and benchmarks need.
# Idempotent: when every package is present it installs nothing and takes well under a second.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  llvm-19-dev lld-19 libzstd-dev          # LLVM backend: JIT, object emission, shared-library link
  libxgboost-dev                          # cost model
  libsqlite3-dev                          # tuning database
  libpq-dev postgresql                    # shared server tuning database, and its tests
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev               # tests
  libprotobuf-dev protobuf-compiler       # ONNX import
  libopenblas-dev libdnnl-dev             # peers in the benchmarks
  gnuplot-nox                             # scripts/plot_curve.sh (tuning curves)
  python3-venv python3-dev                # the Python package (scripts/setup_python.sh)
  # Arm: the aarch64 runtime archive and links (clang, cross libc and libstdc++), and the
  # tests that run aarch64 libraries under qemu.
  clang-19 libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross qemu-user
)
# scripts/test.sh --sanitize builds with clang and its sanitizer runtimes.
if [ -n "${TESSERA_SETUP_SANITIZER:-}" ]; then packages+=(clang-19 libclang-rt-19-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: setup needs root to install packages (run as root or with sudo)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -d /usr/local/cuda ]; then
  echo "setup: CUDA toolkit at /usr/local/cuda"
else
  echo "setup: no CUDA toolkit at /usr/local/cuda: the CUDA backend will be off"
fi
