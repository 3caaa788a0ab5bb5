// Float-to-integer casts through the LLVM JIT: truncation toward zero that saturates at 32 bits
// (NaN gives 0) and then wraps to a narrower type, as the interpreter defines them, in loops
// vectorized by 16 and 8 lanes and in scalar loops, on the values where a conversion can go
// wrong (NaN, infinities, the ends of the i32 range, halves, negative fractions); and the
// 16-lane loop converts with a vector instruction (not lane by lane).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/jit_harness.h"
#include "tessera/backends/host.h"
#include "tessera/ir/op.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

std::vector<float> tricky_values() {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> v = {std::nanf(""),  inf,     -inf,    2147483648.0f, 2147483520.0f,
                            -2147483648.0f, -3e9f,   1e10f,   300.7f,        -0.9f,
                            255.5f,         -128.6f, 127.99f, -129.0f,       65535.9f,
                            -32769.5f,      0.0f,    -0.0f,   1.5f,          -2.5f};
    for (int i = 0; v.size() < 37; ++i) // an odd count: every vector width leaves a tail
        v.push_back(std::ldexp(static_cast<float>(i % 7) - 3.3f, i % 29));
    return v;
}

// The interpreter's definition: saturate at 32 bits, NaN 0, then wrap to `bits`.
int64_t want(float x, int bits, bool is_signed) {
    int64_t s = std::isnan(x)         ? 0
                : x >= 2147483648.0f  ? INT32_MAX
                : x <= -2147483648.0f ? INT32_MIN
                                      : static_cast<int64_t>(std::trunc(x));
    const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    uint64_t u = static_cast<uint64_t>(s) & mask;
    if (is_signed && bits < 64 && (u >> (bits - 1)))
        return static_cast<int64_t>(u) - (int64_t(1) << bits);
    return static_cast<int64_t>(u);
}

template <typename T> void check(DataType to, int lanes) {
    const std::vector<float> in = tricky_values();
    const int64_t n = static_cast<int64_t>(in.size());
    Buffer src = buf("x", DataType::f32(), n), dst = buf("y", to, n);
    auto element = [&](Expr i) { return Store::make(dst, cast(to, Load::make(src, i)), i); };
    backend::CompileOptions opts;
    opts.keep_assembly = true;
    JitKernel k = jit_compile({src, dst}, vector_loop_with_tail(n, lanes, element), opts, true);
    std::vector<T> out(in.size(), T(0x5a));
    void* args[] = {const_cast<float*>(in.data()), out.data()};
    k.fn(args);
    for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(static_cast<int64_t>(out[i]), want(in[i], to.bits, to.is_int()))
            << to_string(to) << ", " << lanes << " lanes, x = " << in[i];
    }
    if (lanes == 16 && backend::host_info().has_feature("avx512f")) {
        EXPECT_NE(k.module->assembly().find("vcvttps2dq"), std::string::npos)
            << "no vector conversion in the 16-lane loop of " << to_string(to);
    }
}

} // namespace

TEST(CodegenFloatToInt, SaturatesAtThirtyTwoBitsThenWraps) {
    for (int lanes : {16, 8, 1}) {
        check<uint8_t>(DataType::u8(), lanes);
        check<int8_t>(DataType(DataType::Code::Int, 8), lanes);
        check<int16_t>(DataType(DataType::Code::Int, 16), lanes);
        check<int32_t>(DataType::i32(), lanes);
    }
}

// i32(round_even(x)) of an x clamped by constants (a requantizing epilogue's tail) converts in
// the default rounding mode, halves to even, with one instruction on x86 and no rounding
// instruction before it; NaN has become the lower bound (the clamp's maxnum).
TEST(CodegenFloatToInt, RoundingAClampedValueIsOneConversion) {
    const std::vector<float> in = tricky_values();
    const int64_t n = static_cast<int64_t>(in.size());
    const float lo = -130.0f, hi = 300.0f;
    for (int lanes : {16, 8, 1}) {
        Buffer src = buf("x", DataType::f32(), n), dst = buf("y", DataType::i32(), n);
        auto element = [&](Expr i) {
            const DataType f = DataType::f32();
            Expr c = min(max(Load::make(src, i), make_const(f, lo)), make_const(f, hi));
            return Store::make(dst, cast(DataType::i32(), round_even(c)), i);
        };
        backend::CompileOptions opts;
        opts.keep_assembly = true;
        JitKernel k = jit_compile({src, dst}, vector_loop_with_tail(n, lanes, element), opts, true);
        std::vector<int32_t> out(in.size(), 0x5a);
        void* args[] = {const_cast<float*>(in.data()), out.data()};
        k.fn(args);
        for (int64_t i = 0; i < n; ++i) {
            const float c = std::isnan(in[i]) ? lo : std::fmin(std::fmax(in[i], lo), hi);
            EXPECT_EQ(out[i], static_cast<int32_t>(std::nearbyint(c)))
                << lanes << " lanes, x = " << in[i];
        }
        if (lanes == 16 && backend::host_info().has_feature("avx512f")) {
            const std::string& s = k.module->assembly();
            EXPECT_NE(s.find("vcvtps2dq"), std::string::npos) << s;
            EXPECT_EQ(s.find("vrndscaleps"), std::string::npos) << s;
        }
    }
}
