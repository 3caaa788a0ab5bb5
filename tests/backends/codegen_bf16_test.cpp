// bf16 through the LLVM JIT and the interpreter: f32 <-> bf16 casts (round to nearest even, NaN,
// overflow and subnormals; vcvtneps2bf16 where the host has AVX512-BF16, integers without) in
// vector and scalar loops; acc + dot2_bf16(a, b) (and the call alone) against
// the support reference, with the host's features (vdpbf16ps where it has AVX512-BF16) and
// with AVX512-BF16 turned off by the feature string (the exact generic lowering).
// (bytes_as_word of bf16 elements: codegen_dot4_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/backends/host.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/support/bfloat16.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

/// An odd count: every vector width leaves a scalar tail.
constexpr int64_t kCount = 203;
const int kLanes[] = {32, 16, 8, 4, 1};

float from_bits(uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/// Random floats with ties, near-ties, NaN, infinities, overflow and subnormals among them.
std::vector<float> cast_inputs() {
    std::vector<float> v = random_floats(kCount, 5, -300.0f, 300.0f);
    const uint32_t special[] = {0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0x3fffc000,
                                0x00018000, 0x7f800001, 0x7fc00000, 0x7f800000, 0xff800000,
                                0x7f7fffff, 0x80000000, 0x807fffff};
    for (size_t i = 0; i < std::size(special); ++i)
        v[i * 7] = from_bits(special[i]);
    return v;
}

/// AVX512-BF16 off on whatever CPU this is: the generic lowering.
backend::CompileOptions bf16_off() { return host_options_with("-avx512bf16"); }

/// Words of two bf16 values each, from random floats in [-2, 2).
std::vector<int32_t> bf16_words(uint64_t seed) {
    const std::vector<float> f = random_floats(2 * kCount, seed, -2.0f, 2.0f);
    std::vector<int32_t> w(kCount);
    for (int64_t i = 0; i < kCount; ++i)
        w[i] = static_cast<int32_t>(uint32_t(f32_to_bf16_bits(f[2 * i])) |
                                    uint32_t(f32_to_bf16_bits(f[2 * i + 1])) << 16);
    return w;
}

/// The assembly lines that mention `what`.
std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find(what) != std::string::npos)
            out.push_back(line);
    return out;
}

/// What the dot kernel computes at each element.
enum class Form { AccPlusDot, DotPlusAcc, DotAlone };

/// out[i] = form(acc[i], a[i], b[i]) with dot2_bf16, compiled with opts (keeping the assembly)
/// and run on random words; every element is expected to match the reference (exactly when
/// `exact`, else within the rounding of adding the two products one at a time). Returns the
/// assembly.
std::string expect_dot2_matches(int lanes, Form form, backend::CompileOptions opts, bool exact,
                                const std::string& what) {
    const DataType f32 = DataType::f32(), i32 = DataType::i32();
    Buffer acc = buf("acc", f32, kCount), a = buf("a", i32, kCount), b = buf("b", i32, kCount),
           out = buf("out", f32, kCount);
    auto element = [&](Expr i) {
        Expr dot = dot2_bf16(Load::make(a, i), Load::make(b, i));
        Expr value = form == Form::AccPlusDot   ? Load::make(acc, i) + dot
                     : form == Form::DotPlusAcc ? dot + Load::make(acc, i)
                                                : dot;
        return Store::make(out, value, i);
    };
    const LoweredFunc f = lower::prepare_for_codegen(
        LoweredFunc{"dot2", {acc, a, b, out}, vector_loop_with_tail(kCount, lanes, element)});
    opts.keep_assembly = true;
    auto module = backend::JitModule::compile({f}, opts);
    std::vector<float> accs = random_floats(kCount, 3 + lanes, -4.0f, 4.0f);
    std::vector<int32_t> wa = bf16_words(17 + lanes), wb = bf16_words(29 + lanes);
    std::vector<float> got(kCount, -1.0f);
    void* args[] = {accs.data(), wa.data(), wb.data(), got.data()};
    module->get("dot2")(args);
    int wrong = 0;
    for (int64_t i = 0; i < kCount; ++i) {
        const float dot = dot2_bf16(static_cast<uint32_t>(wa[i]), static_cast<uint32_t>(wb[i]));
        const float want = form == Form::DotAlone ? dot : accs[i] + dot;
        // |acc| + |products| <= 4 + 8: a few f32 roundings of that size.
        const float tol = exact ? 0.0f : 4 * 12.0f * std::numeric_limits<float>::epsilon();
        if (!(std::fabs(got[i] - want) <= tol) && ++wrong <= 5)
            ADD_FAILURE() << what << ", " << lanes << " lanes, form " << int(form) << ": out[" << i
                          << "] = " << got[i] << ", want " << want;
    }
    return module->assembly();
}

/// mid[i] = bf16(in[i]); out[i] = f32(mid[i]) in `lanes`-wide loops, compiled with opts, each
/// element expected to equal the reference and the interpreter bit for bit. Returns the
/// assembly.
std::string expect_casts_match(int lanes, backend::CompileOptions opts, const std::string& what) {
    const std::vector<float> in = cast_inputs();
    Buffer x = buf("x", DataType::f32(), kCount), mid = buf("mid", DataType::bf16(), kCount),
           y = buf("y", DataType::f32(), kCount);
    auto narrow = [&](Expr i) {
        return Store::make(mid, cast(DataType::bf16(), Load::make(x, i)), i);
    };
    auto widen = [&](Expr i) {
        return Store::make(y, cast(DataType::f32(), Load::make(mid, i)), i);
    };
    const LoweredFunc f = lower::prepare_for_codegen(
        LoweredFunc{"casts",
                    {x, mid, y},
                    Seq::make({vector_loop_with_tail(kCount, lanes, narrow),
                               vector_loop_with_tail(kCount, lanes, widen)})});
    std::vector<float> xs = in, jit_y(kCount), int_y(kCount);
    std::vector<uint16_t> jit_mid(kCount), int_mid(kCount);
    opts.keep_assembly = true;
    auto module = backend::JitModule::compile({f}, opts);
    void* args[] = {xs.data(), jit_mid.data(), jit_y.data()};
    module->get("casts")(args);
    interpret(f, {xs.data(), int_mid.data(), int_y.data()});
    for (int64_t i = 0; i < kCount; ++i) {
        const uint16_t want = f32_to_bf16_bits(in[i]);
        EXPECT_EQ(jit_mid[i], want)
            << what << ", " << lanes << " lanes, element " << i << " (" << in[i] << ")";
        EXPECT_EQ(int_mid[i], want) << "interpreter, element " << i;
        const float back = bf16_bits_to_f32(want);
        if (std::isnan(back)) {
            EXPECT_TRUE(std::isnan(jit_y[i]) && std::isnan(int_y[i])) << i;
        } else {
            EXPECT_EQ(jit_y[i], back) << what << ", " << lanes << " lanes, element " << i;
            EXPECT_EQ(int_y[i], back) << "interpreter, element " << i;
        }
    }
    return module->assembly();
}

} // namespace

// The inputs put subnormals in some vectors and not in others: with AVX512-BF16 the former
// take the integer rounding behind the branch, the latter vcvtneps2bf16 (which would flush
// them).
TEST(CodegenBF16, CastsRoundToNearestEvenAsTheInterpreterAndTheReference) {
    const bool instruction = backend::host_info().has_feature("avx512bf16");
    for (int lanes : kLanes) {
        const std::string s = expect_casts_match(lanes, {}, "host features");
        if (instruction && lanes >= 8) {
            EXPECT_FALSE(lines_with(s, "vcvtneps2bf16").empty()) << lanes << " lanes\n" << s;
        }
    }
}

TEST(CodegenBF16, CastsWithoutAvx512Bf16RoundByIntegers) {
    for (int lanes : kLanes) {
        const std::string s = expect_casts_match(lanes, bf16_off(), "bf16 off");
        EXPECT_TRUE(lines_with(s, "vcvtneps2bf16").empty()) << lanes << " lanes\n" << s;
    }
}

TEST(CodegenBF16, Dot2MatchesReferenceWithHostFeatures) {
    const bool instruction = backend::host_info().has_feature("avx512bf16");
    for (int lanes : kLanes)
        for (Form form : {Form::AccPlusDot, Form::DotPlusAcc, Form::DotAlone})
            expect_dot2_matches(lanes, form, {}, !instruction || lanes == 1, "host features");
}

TEST(CodegenBF16, Dot2WithoutAvx512Bf16IsExact) {
    for (int lanes : kLanes) {
        for (Form form : {Form::AccPlusDot, Form::DotPlusAcc, Form::DotAlone}) {
            const std::string s = expect_dot2_matches(lanes, form, bf16_off(), true, "bf16 off");
            EXPECT_TRUE(lines_with(s, "vdpbf16ps").empty()) << lanes << " lanes\n" << s;
        }
    }
}

TEST(CodegenBF16, HostAvx512Bf16AccumulatesWithVdpbf16ps) {
    if (!backend::host_info().has_feature("avx512bf16"))
        GTEST_SKIP() << "this host has no avx512bf16";
    for (int lanes : {32, 16, 8, 4}) {
        const std::string s =
            expect_dot2_matches(lanes, Form::AccPlusDot, {}, false, "host features");
        const auto dp = lines_with(s, "vdpbf16ps");
        ASSERT_FALSE(dp.empty()) << lanes << " lanes\n" << s;
        if (lanes >= 16) {
            EXPECT_NE(dp[0].find("zmm"), std::string::npos) << dp[0];
        }
    }
}
