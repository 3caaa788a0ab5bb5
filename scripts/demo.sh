#!/usr/bin/env bash
# The main job on a bundled default: installs what is missing, builds incrementally, then shows
# the machine and compiles, checks and times bundled operators.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${TESSERA_BUILD_DIR:-$root/build}
tessera="$build/tessera"

echo
echo "== this machine"
"$tessera" hw

echo
echo "== matmul 512x512x512, default loop nest, checked against the tensor-expression reference"
"$tessera" op run matmul:m=512,n=512,k=512 --threads 2 --repeat 5

echo
echo "== conv2d 1x64x56x56, 64 filters 3x3 pad 1"
"$tessera" op run conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1 --threads 2 --repeat 5

echo
echo "== matmul 1024x1024x1024 with the hand-written schedule schedules/matmul_1024.json"
"$tessera" op run matmul:m=1024,n=1024,k=1024 --schedule "$root/schedules/matmul_1024.json" --threads 2 --repeat 10

echo
echo "== conv2d 1x64x56x56 with the hand-written schedule (weights packed once, ahead of time)"
"$tessera" op run conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1 \
  --schedule "$root/schedules/conv2d_1x64x56x56_k64_3x3.json" --threads 2 --repeat 10

echo
echo "== softmax 256x1000"
"$tessera" op run softmax:m=256,n=1000 --threads 2 --repeat 5

if [ -x "$build/tessera_bench_ops" ]; then
  echo
  echo "== hand-built loop IR sgemm against OpenBLAS and oneDNN (same run, 2 threads)"
  (unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; OMP_NUM_THREADS=2 "$build/tessera_bench_ops" --threads 2 --quick)
fi
