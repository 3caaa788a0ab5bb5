// The GPU peers of scripts/gpu_check.sh: cuBLAS sgemm 4096^3 and cuDNN's 3x3 conv2d (pad 1) on
// resnet18's shapes (1x64x56x56 to 1x512x7x7, stride 1 and 2), both fp32 with TF32 off (the
// precision tessera computes in),
// and cuBLAS's tensor-core gemm 4096^3 with f16 operands summed in f32 (cublasGemmEx); with the
// argument `tf32`, cuBLAS sgemm 4096^3 on TF32 tensor cores instead (run without
// NVIDIA_TF32_OVERRIDE=0, which would turn TF32 off). Random inputs, timed with CUDA events
// (median of 20 after 3 warm-up runs).
// Compiled by the script with nvcc, not by CMake (bench/ proper is for CPU peers):
//   nvcc -O2 -std=c++17 -arch=sm_90 vendor_peers.cu -lcublas -lcudnn            (both)
//   nvcc -O2 -std=c++17 -arch=sm_90 -DTESSERA_NO_CUDNN vendor_peers.cu -lcublas (cuBLAS only)
// Output: one line per peer, "<name> ms=<median> gflops=<rate>", for the script to parse.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifndef TESSERA_NO_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#define CHECK(x)                                                                               \
    do {                                                                                       \
        const long long r_ = static_cast<long long>(x);                                        \
        if (r_ != 0) {                                                                         \
            std::fprintf(stderr, "vendor_peers: %s failed with %lld\n", #x, r_);               \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

namespace {

/// Median milliseconds of `reps` event-timed calls of f, after 3 untimed ones.
float median_ms(const std::function<void()>& f, int reps) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 3; ++i)
        f();
    cudaDeviceSynchronize();
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
        cudaEventRecord(a);
        f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/// A device array of n floats uniform in [-1, 1) from a fixed-seed generator.
float* random_device_floats(size_t n, uint64_t seed) {
    std::vector<float> h(n);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (float& v : h) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<float>((s >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
    }
    float* d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess)
        return nullptr;
    cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    return d;
}

/// The same values as random_device_floats(n, seed), rounded to f16.
__half* random_device_halves(size_t n, uint64_t seed) {
    float* f = random_device_floats(n, seed);
    if (!f)
        return nullptr;
    std::vector<float> h(n);
    cudaMemcpy(h.data(), f, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(f);
    std::vector<__half> x(n);
    for (size_t i = 0; i < n; ++i)
        x[i] = __float2half_rn(h[i]);
    __half* d = nullptr;
    if (cudaMalloc(&d, n * sizeof(__half)) != cudaSuccess)
        return nullptr;
    cudaMemcpy(d, x.data(), n * sizeof(__half), cudaMemcpyHostToDevice);
    return d;
}

/// Times `gemm(h, A, B, C)` for n x n operands A and B (freed here) into a new f32 C on a new
/// cuBLAS handle set to `math`, and prints "<name> ms=... gflops=...".
template <typename T>
int time_gemm(const char* name, int n, cublasMath_t math, T* A, T* B,
              const std::function<void(cublasHandle_t, const T*, const T*, float*)>& gemm) {
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    CHECK(cublasSetMathMode(h, math));
    float* C = nullptr;
    CHECK(!A || !B);
    CHECK(cudaMalloc(&C, sizeof(float) * n * n));
    const float ms = median_ms([&] { gemm(h, A, B, C); }, 20);
    CHECK(cudaGetLastError());
    std::printf("%s ms=%.4f gflops=%.1f\n", name, ms, 2.0 * n * n * n / (ms * 1e6));
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    cublasDestroy(h);
    return 0;
}

constexpr int kGemmN = 4096;

/// f16 A and B, f32 C and sums, cuBLAS's choice of tensor-core kernel.
int hgemm() {
    const int n = kGemmN;
    const float one = 1, zero = 0;
    return time_gemm<__half>(
        "cublas_hgemm_f32acc_4096", n, CUBLAS_DEFAULT_MATH,
        random_device_halves(size_t(n) * n, 1), random_device_halves(size_t(n) * n, 2),
        [&](cublasHandle_t h, const __half* A, const __half* B, float* C) {
            // Row-major C = A B is column-major C^T = B^T A^T.
            cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, CUDA_R_16F, n, A,
                         CUDA_R_16F, n, &zero, C, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
        });
}

/// sgemm 4096^3: fp32 FMA only (PEDANTIC: no TF32 tensor cores), or on TF32 tensor cores.
int sgemm(bool tf32) {
    const int n = kGemmN;
    const float one = 1, zero = 0;
    return time_gemm<float>(
        tf32 ? "cublas_sgemm_tf32_4096" : "cublas_sgemm_4096", n,
        tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH,
        random_device_floats(size_t(n) * n, 1), random_device_floats(size_t(n) * n, 2),
        [&](cublasHandle_t h, const float* A, const float* B, float* C) {
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
        });
}

#ifndef TESSERA_NO_CUDNN
/// cuDNN's fastest fp32 algorithm for a 3x3 convolution with pad 1 of a 1 x Cin x H x H input
/// into K channels at `stride`.
int conv2d(int Cin, int H, int K, int stride) {
    const int N = 1, W = H, R = 3, S = 3;
    const int OH = (H + 2 - R) / stride + 1, OW = OH;
    cudnnHandle_t h;
    CHECK(cudnnCreate(&h));
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    CHECK(cudnnCreateTensorDescriptor(&x));
    CHECK(cudnnCreateTensorDescriptor(&y));
    CHECK(cudnnCreateFilterDescriptor(&w));
    CHECK(cudnnCreateConvolutionDescriptor(&conv));
    CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, Cin, H, W));
    CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, Cin, R, S));
    CHECK(cudnnSetConvolution2dDescriptor(conv, 1, 1, stride, stride, 1, 1,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CHECK(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH)); // no TF32
    CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, OH, OW));
    float* X = random_device_floats(size_t(N) * Cin * H * W, 3);
    float* Wt = random_device_floats(size_t(K) * Cin * R * S, 4);
    float* Y = nullptr;
    CHECK(!X || !Wt);
    CHECK(cudaMalloc(&Y, sizeof(float) * N * K * OH * OW));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int found = 0;
    CHECK(cudnnFindConvolutionForwardAlgorithm(h, x, w, conv, y, 8, &found, perf));
    int pick = -1; // the fastest algorithm that ran and kept fp32 math
    for (int i = 0; i < found && pick < 0; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH)
            pick = i;
    CHECK(pick < 0);
    void* ws = nullptr;
    CHECK(cudaMalloc(&ws, perf[pick].memory + 1));
    const float one = 1, zero = 0;
    const float ms = median_ms(
        [&] {
            cudnnConvolutionForward(h, &one, x, X, w, Wt, conv, perf[pick].algo, ws,
                                    perf[pick].memory, &zero, y, Y);
        },
        20);
    CHECK(cudaGetLastError());
    std::printf("cudnn_conv2d_1x%dx%dx%d_k%d_3x3%s ms=%.4f gflops=%.1f\n", Cin, H, W, K,
                stride == 1 ? "" : "_s2", ms, 2.0 * N * K * OH * OW * Cin * R * S / (ms * 1e6));
    cudaFree(X);
    cudaFree(Wt);
    cudaFree(Y);
    cudaFree(ws);
    cudnnDestroy(h);
    return 0;
}
#endif

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "tf32") == 0)
        return sgemm(true);
    int rc = sgemm(false);
    rc |= hgemm();
#ifndef TESSERA_NO_CUDNN
    // The 3x3 convolutions of resnet18 (batch 1): per stage one at stride 1 and the stride-2
    // one that enters it.
    const int shapes[][4] = {{64, 56, 64, 1},   {64, 56, 128, 2}, {128, 28, 128, 1},
                             {128, 28, 256, 2}, {256, 14, 256, 1}, {256, 14, 512, 2},
                             {512, 7, 512, 1}};
    for (const auto& c : shapes)
        rc |= conv2d(c[0], c[1], c[2], c[3]);
#endif
    return rc;
}
