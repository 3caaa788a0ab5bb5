#!/usr/bin/env bash
# GPU check for the CUDA backend (issue 7): builds test_cuda, test_compile and tessera, runs
# every CUDA test (device tests included; test_compile's CUDA model builds compare each built
# model's outputs with its ONNX reference on the device), times the bundled model built with
# `tessera build --target cuda`, then, in one run on the same GPU:
#   - runs sgemm 4096^3 fp32 and conv2d 1x64x56x56 (64 filters 3x3, pad 1) with their GPU
#     default schedules, tunes each briefly with
#     `tessera tune --op ... --target cuda`, and runs each best record with
#     `tessera op run --target cuda --db` (checked against the reference, timed with events);
#   - runs the default schedules of resnet18's other 3x3 convolutions (stride 1 and 2);
#   - times cuBLAS sgemm and cuDNN's conv2d on the same shapes, TF32 off (bench/cuda/
#     vendor_peers.cu, compiled here with the toolkit's nvcc; cuBLAS alone when cuDNN is absent);
#   - runs the tensor-core default schedules (gemm 4096^3 with f16 operands summed in f32, and
#     fp32 with --tf32) next to cuBLAS's tensor-core gemm of the same precision;
#   - prints tessera's time next to the peer's and the ratio.
# TUNE_SECS=0 skips the tuning (default schedules only).
# Without a driver or a GPU it still builds and runs the codegen/NVRTC tests, prints [SKIP] with
# the reason and exits 0. Target: under 8 minutes on a 16-core machine with an H100/H200 (the
# tuning budget shrinks to fit what the build and tests left; TUNE_SECS caps it per operator).
#
# usage: scripts/gpu_check.sh [build-dir]     (default: build-gpu)
#        TESSERA_PREBUILT=1 scripts/gpu_check.sh build-dir   (programs unpacked from gpu_pack.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
JOBS=${JOBS:-$(nproc)}
TUNE_SECS=${TUNE_SECS:-90}
DEADLINE_SECS=${DEADLINE_SECS:-450} # leave the last half minute for the final runs
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }

if [ "${TESSERA_PREBUILT:-0}" = 1 ]; then
    # Programs packed elsewhere by scripts/gpu_pack.sh (a GPU machine without LLVM and the rest).
    for p in tessera test_cuda test_compile; do
        [ -x "$BUILD/$p" ] || { echo "error: TESSERA_PREBUILT=1 but $BUILD/$p is missing"; exit 1; }
    done
    echo "== prebuilt programs in $BUILD"
else
    echo "== configure + build test_cuda and tessera ($BUILD, -j$JOBS)"
    mkdir -p "$BUILD"
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_BENCH=OFF \
        > "$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
    cmake --build "$BUILD" -j"$JOBS" --target test_cuda test_compile tessera
    echo "   built in $(elapsed) s"
fi

echo "== CUDA tests"
rc=0
"$BUILD/test_cuda" --gtest_color=no --gtest_filter='-CudaDevice.TiledMatmul4096Throughput' \
    > "$BUILD/test_cuda.log" 2>&1 || rc=$?
RESULT_LINES='^\[ *(OK|FAILED) |^\[  (PASSED|SKIPPED) +\] [0-9]|device:|cuda tune|tensor-core'
grep -E "$RESULT_LINES" "$BUILD/test_cuda.log" || true
grep -m1 '\[SKIP\]' "$BUILD/test_cuda.log" || true
if [ "$rc" -ne 0 ]; then
    echo "test_cuda FAILED (log: $BUILD/test_cuda.log)"; grep -B5 -A20 'Failure' "$BUILD/test_cuda.log" | head -80
    exit 1
fi
rc=0
"$BUILD/test_compile" --gtest_color=no --gtest_filter='Cuda*:*/CudaModelBuild.*' > "$BUILD/test_compile_cuda.log" 2>&1 || rc=$?
grep -E '^\[ *(OK|FAILED) |^\[  (PASSED|SKIPPED) +\] [0-9]' "$BUILD/test_compile_cuda.log" || true
if [ "$rc" -ne 0 ]; then
    echo "test_compile (CUDA models) FAILED (log: $BUILD/test_compile_cuda.log)"
    grep -B5 -A20 'Failure' "$BUILD/test_compile_cuda.log" | head -80
    exit 1
fi
echo "   tests done at $(elapsed) s"

# Is there a device? tessera itself says why not, in one line.
if ! probe=$("$BUILD/tessera" op run relu:m=7,n=13 --target cuda --naive --repeat 1 2>&1); then
    if grep -q -e '--target cuda: ' <<< "$probe"; then
        echo "[SKIP] GPU comparison: ${probe#error: }"
        exit 0
    fi
    echo "tessera op run --target cuda FAILED:"; echo "$probe"; exit 1
fi
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

echo "== the bundled model on the GPU (tessera build --target cuda, default schedules)"
"$BUILD/tessera" build models/mobilenet_tiny/model.onnx --target cuda --no-db \
    -o "$BUILD/mobilenet_tiny.cuda.so" | tail -2
"$BUILD/tessera" bench "$BUILD/mobilenet_tiny.cuda.so" --min-secs 2 | head -5
# Per-kernel device times (Nsight Compute, clocks left alone), where ncu is installed.
if command -v ncu > /dev/null; then
    timeout 90 ncu --clock-control none --print-units base --metrics gpu__time_duration.sum \
        --csv "$BUILD/tessera" bench "$BUILD/mobilenet_tiny.cuda.so" --warmup 1 --repeat 1 \
        > "$BUILD/ncu.csv" 2>&1 || echo "(ncu failed or timed out: $BUILD/ncu.csv)"
    # Columns: ID, PID, process, host, kernel, context, stream, block, grid, ..., metric value.
    grep gpu__time_duration "$BUILD/ncu.csv" | tr -d ',' | tr -s '"' ' ' |
        awk '{print $NF, $0}' | sort -n -r | head -20 | cut -c1-200 || true
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export NVIDIA_TF32_OVERRIDE=0 # no library may switch fp32 math to TF32 behind our back

echo "== vendor peers, same GPU (cuBLAS sgemm 4096^3, cuDNN resnet18's 3x3 conv2d, pad 1; TF32 off)"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
ARCH=$("$BUILD/tessera" hw 2>/dev/null | grep -o 'sm_[0-9]*' | head -1 || true)
ARCH=${ARCH:-sm_90}
NVCC=("$CUDA_HOME/bin/nvcc" -O2 -std=c++17 -arch="$ARCH" bench/cuda/vendor_peers.cu -o "$TMP/peers")
if "${NVCC[@]}" -lcublas -lcudnn > "$TMP/nvcc.log" 2>&1 ||
   "${NVCC[@]}" -DTESSERA_NO_CUDNN -lcublas >> "$TMP/nvcc.log" 2>&1; then
    "$TMP/peers" | tee "$TMP/peers.txt" || echo "[SKIP] a vendor peer failed (see above)"
    # TF32 tensor cores on purpose: without the override that turns them off.
    env -u NVIDIA_TF32_OVERRIDE "$TMP/peers" tf32 | tee -a "$TMP/peers.txt" ||
        echo "[SKIP] the TF32 peer failed (see above)"
else
    echo "[SKIP] vendor peers did not build:"; tail -5 "$TMP/nvcc.log"
fi
touch "$TMP/peers.txt"

# field NAME JSON -> the number after "NAME": in a one-line JSON object.
field() { grep -o "\"$1\":[-0-9.eE+]*" <<< "$2" | head -1 | cut -d: -f2 || true; }

echo "== tessera, same GPU: tune --target cuda, then op run of the best record"
SPECS=("matmul:m=4096,n=4096,k=4096" "conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1")
PEERS=("cublas_sgemm_4096" "cudnn_conv2d_1x64x56x56_k64_3x3" "cublas_hgemm_f32acc_4096"
       "cublas_sgemm_tf32_4096")
# resnet18's other 3x3 convolutions (pad 1): C H K stride, the peer's name from them.
RESNET_CONVS=("64 56 128 2" "128 28 128 1" "128 28 256 2" "256 14 256 1" "256 14 512 2"
              "512 7 512 1")
declare -a ROWS
# row LABEL PEER-INDEX OP-RUN-ARGS...: one op run (fp32 sums of 576 to 4096 products in another
# order: the tuner's tolerance, TOL=1e-3 unless set), its time next to the peer's.
row() {
    local label=$1 i=$2 run ms gf passed peer_ms ratio="-"
    shift 2
    run=$(timeout 60 "$BUILD/tessera" op run "$@" --target cuda --repeat 20 \
        --tolerance "${TOL:-1e-3}" --json 2>&1 | tail -1) || true
    ms=$(field median_ms "$run"); gf=$(field gflops "$run")
    passed=$(grep -o '"passed":[a-z]*' <<< "$run" | cut -d: -f2 || true)
    peer_ms=$(grep "^${PEERS[$i]} " "$TMP/peers.txt" | grep -o 'ms=[0-9.]*' | cut -d= -f2 || true)
    if [ -n "$ms" ] && [ -n "$peer_ms" ]; then
        ratio=$(awk -v a="$ms" -v b="$peer_ms" 'BEGIN { printf "%.3f", b / a }')
    fi
    ROWS+=("$(printf '%-66s %10s %9s %7s %10s %8s' "$label" "${ms:--}" "${gf:--}" "${passed:--}" "${peer_ms:--}" "$ratio")")
}
# Tensor cores: the default schedules of an f16 gemm (f32 sums) and of an fp32 one in TF32.
row "matmul_f16:m=4096,n=4096,k=4096 (default, tensor cores)" 2 "matmul_f16:m=4096,n=4096,k=4096"
TOL=3e-2 row "matmul:m=4096,n=4096,k=4096 --tf32 (default, tensor cores)" 3 \
    "matmul:m=4096,n=4096,k=4096" --tf32
# The default schedules of resnet18's other 3x3 convolutions next to cuDNN's.
for shape in "${RESNET_CONVS[@]}"; do
    read -r c h k st <<< "$shape"
    PEERS+=("cudnn_conv2d_1x${c}x${h}x${h}_k${k}_3x3$([ "$st" = 1 ] || echo _s2)")
    spec="conv2d:n=1,c=$c,h=$h,w=$h,k=$k,r=3,s=3,stride=$st,pad=1"
    row "$spec (default)" $((${#PEERS[@]} - 1)) "$spec"
done
for i in 0 1; do
    spec=${SPECS[$i]}
    row "$spec (default)" "$i" "$spec" # the GPU default schedule: what an untuned build runs
    [ "$TUNE_SECS" -gt 0 ] || continue
    left=$(( (DEADLINE_SECS - $(elapsed)) / (2 - i) - 30 ))
    budget=$(( left < TUNE_SECS ? left : TUNE_SECS ))
    budget=$(( budget < 20 ? 20 : budget ))
    echo "-- $spec: tuning for ${budget} s"
    timeout $((budget + 60)) "$BUILD/tessera" tune --op "$spec" --target cuda --trials 512 \
        --time-budget "$budget" --measure-per-round 16 --population 256 --generations 1 \
        --db "$TMP/gpu.db" --json > "$TMP/tune_$i.json" 2> "$TMP/tune_$i.err" ||
        { echo "tune FAILED or timed out:"; tail -5 "$TMP/tune_$i.err"; }
    tail -1 "$TMP/tune_$i.json" 2>/dev/null | cut -c1-400 || true
    row "$spec (tuned ${budget} s)" "$i" "$spec" --db "$TMP/gpu.db"
done

echo
printf '%-66s %10s %9s %7s %10s %8s\n' "operator" "tessera_ms" "GFLOP/s" "check" "peer_ms" "peer/us"
for r in "${ROWS[@]}"; do echo "$r"; done
echo "(peer/us > 1: tessera is faster; same precision on both sides: fp32 rows with TF32 off,"
echo " tensor-core rows f16 x f16 -> f32 and TF32; total $(elapsed) s)"
