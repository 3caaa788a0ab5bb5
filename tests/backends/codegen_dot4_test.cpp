// dot4_u8s8 through the LLVM JIT: acc + dot4_u8s8(a, b) (and the call alone) in loops
// vectorized by 32, 16, 8 and 4 lanes and in scalar loops, against a bytewise reference on
// random words; with the host's features (vpdpbusd where it has VNNI) and with VNNI turned off
// by the feature string (the exact generic lowering). bytes_as_word, which packs the words, of
// u8 and bf16 elements at dense, unaligned and strided addresses through the JIT and the
// interpreter.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "backends/jit_harness.h"
#include "common/reference_ops.h"
#include "common/test_util.h"
#include "tessera/backends/host.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

/// An odd count: every vector width leaves a scalar tail.
constexpr int64_t kCount = 203;

/// What the kernel computes at each element.
enum class Form {
    AccPlusDot, ///< out = acc + dot4_u8s8(a, b)
    DotPlusAcc, ///< out = dot4_u8s8(a, b) + acc (the call on the left)
    DotAlone,   ///< out = dot4_u8s8(a, b)
};

/// out[i] = form(acc[i], a[i], b[i]) for i < kCount: full blocks of `lanes` elements in a
/// Vectorized inner loop (lanes 1: no vector loop), then the tail as a scalar loop.
LoweredFunc dot4_kernel(int lanes, Form form) {
    const DataType i32 = DataType::i32();
    Buffer acc = buf("acc", i32, kCount), a = buf("a", i32, kCount), b = buf("b", i32, kCount),
           out = buf("out", i32, kCount);
    auto element = [&](Expr i) {
        Expr dot = dot4_u8s8(Load::make(a, i), Load::make(b, i));
        Expr value = form == Form::AccPlusDot   ? Load::make(acc, i) + dot
                     : form == Form::DotPlusAcc ? dot + Load::make(acc, i)
                                                : dot;
        return Store::make(out, value, i);
    };
    return lower::prepare_for_codegen(
        LoweredFunc{"dot4", {acc, a, b, out}, vector_loop_with_tail(kCount, lanes, element)});
}

/// VNNI off on whatever CPU this is: the generic lowering.
backend::CompileOptions vnni_off() { return host_options_with("-avx512vnni,-avxvnni"); }

/// Compiles dot4_kernel(lanes, form) with opts (keeping the assembly), runs it on random data
/// and expects every element to equal the reference. Returns the assembly.
std::string expect_matches_reference(int lanes, Form form, backend::CompileOptions opts,
                                     const std::string& what) {
    opts.keep_assembly = true;
    const LoweredFunc f = dot4_kernel(lanes, form);
    auto module = backend::JitModule::compile({f}, opts);
    std::vector<int32_t> acc = random_words(kCount, 11 + lanes),
                         a = random_words(kCount, 23 + lanes), b = random_words(kCount, 37 + lanes);
    // Accumulators of either sign and large, so that a wrong sign or lane shows.
    for (auto& x : acc)
        x /= 4;
    std::vector<int32_t> out(kCount, 0x5a5a5a5a);
    void* args[] = {acc.data(), a.data(), b.data(), out.data()};
    module->get("dot4")(args);
    int wrong = 0;
    for (int64_t i = 0; i < kCount; ++i) {
        const int32_t dot = ref::dot4_u8s8(a[i], b[i]);
        const int32_t want = form == Form::DotAlone ? dot : acc[i] + dot;
        if (out[i] != want && ++wrong <= 5)
            ADD_FAILURE() << what << ", " << lanes << " lanes, form " << int(form) << ": out[" << i
                          << "] = " << out[i] << ", want " << want << " (a " << a[i] << ", b "
                          << b[i] << ", acc " << acc[i] << ")";
    }
    return module->assembly();
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

const int kLanes[] = {32, 16, 8, 4, 1};
const Form kForms[] = {Form::AccPlusDot, Form::DotPlusAcc, Form::DotAlone};

} // namespace

TEST(CodegenDot4, MatchesReferenceWithHostFeatures) {
    for (int lanes : kLanes)
        for (Form form : kForms)
            expect_matches_reference(lanes, form, {}, "host features");
}

TEST(CodegenDot4, MatchesReferenceWithVnniOff) {
    for (int lanes : kLanes)
        for (Form form : kForms)
            expect_matches_reference(lanes, form, vnni_off(), "VNNI off");
}

TEST(CodegenDot4, HostVnniAccumulatesWithVpdpbusd) {
    if (!backend::host_info().has_feature("avx512vnni"))
        GTEST_SKIP() << "this host has no avx512vnni";
    for (int lanes : {32, 16, 8, 4}) {
        for (Form form : kForms) {
            const std::string s = expect_matches_reference(lanes, form, {}, "host features");
            const auto dp = lines_with(s, "vpdpbusd");
            EXPECT_FALSE(dp.empty()) << lanes << " lanes, form " << int(form) << "\n" << s;
            // 16 and 32 lanes use the 512-bit form.
            if (lanes >= 16 && !dp.empty()) {
                EXPECT_NE(dp[0].find("zmm"), std::string::npos) << dp[0];
            }
        }
    }
}

TEST(CodegenDot4, VnniTurnedOffByTheFeatureStringUsesTheGenericLowering) {
    for (int lanes : kLanes) {
        for (Form form : kForms) {
            const std::string s = expect_matches_reference(lanes, form, vnni_off(), "VNNI off");
            EXPECT_TRUE(lines_with(s, "vpdpbusd").empty()) << lanes << " lanes\n" << s;
            // Decent generic code: x86 multiplies and adds the 16-bit byte pairs in one
            // instruction instead of widening every byte to 32 bits.
            // Each word's byte pairs are widened inside its own lane, so no shuffle crosses
            // lanes (two cross-lane permutes per 8 words halved int8 convs on a Zen 3).
            if (lanes >= 8 && backend::host_info().has_feature("avx2")) {
                EXPECT_FALSE(lines_with(s, "vpmaddwd").empty()) << lanes << " lanes\n" << s;
                for (const char* cross : {"vperm", "vshufps", "vextracti128", "vinserti128"})
                    EXPECT_TRUE(lines_with(s, cross).empty())
                        << lanes << " lanes, form " << int(form) << ": " << cross << "\n"
                        << s;
            }
        }
    }
}

TEST(CodegenDot4, AvxVnniAloneServes256And128BitVectors) {
    if (!backend::host_info().has_feature("avxvnni"))
        GTEST_SKIP() << "this host has no avxvnni";
    // Without AVX-512 VNNI there is no 512-bit form: 32 and 16 lanes go as 256-bit pieces.
    const backend::CompileOptions opts = host_options_with("-avx512vnni");
    for (int lanes : {32, 16, 8, 4}) {
        const std::string s = expect_matches_reference(lanes, Form::AccPlusDot, opts, "AVX-VNNI");
        const auto dp = lines_with(s, "vpdpbusd");
        ASSERT_FALSE(dp.empty()) << lanes << " lanes\n" << s;
        for (const std::string& line : dp)
            EXPECT_EQ(line.find("zmm"), std::string::npos) << line;
    }
}

TEST(CodegenBytesAsWord, FourBytesReinterpretedAtAnyAddressInEveryLoopForm) {
    // out[i] = the 4 bytes from element `stride * i + offset` on, little-endian: 4 u8 or 2 bf16
    // elements.
    const std::vector<int32_t> words = random_words(kCount * 2 + 2, 91);
    std::vector<uint8_t> bytes(words.size() * 4);
    std::memcpy(bytes.data(), words.data(), bytes.size());
    for (const DataType elem : {DataType::u8(), DataType::bf16()}) {
        const int64_t per_word = 4 / elem.bytes();
        for (const auto& stride_offset :
             {std::pair<int64_t, int64_t>{per_word, 0}, {per_word, 3}, {2 * per_word, 1}}) {
            // Plain variables: C++17 lambdas cannot capture structured bindings.
            const int64_t stride = stride_offset.first, offset = stride_offset.second;
            for (int lanes : kLanes) {
                Buffer in = buf("in", elem, int64_t(bytes.size()) / elem.bytes());
                Buffer out = buf("out", DataType::i32(), kCount);
                auto element = [&](Expr i) {
                    return Store::make(out, bytes_as_word(Load::make(in, i * stride + offset)), i);
                };
                const LoweredFunc f = lower::prepare_for_codegen(LoweredFunc{
                    "words", {in, out}, vector_loop_with_tail(kCount, lanes, element)});
                std::vector<int32_t> want(kCount);
                for (int64_t i = 0; i < kCount; ++i)
                    std::memcpy(&want[i], bytes.data() + (stride * i + offset) * elem.bytes(), 4);
                std::vector<uint8_t> b = bytes;
                std::vector<int32_t> jit(kCount, 0), interpreted(kCount, 0);
                auto module = backend::JitModule::compile({f}, {});
                void* args[] = {b.data(), jit.data()};
                module->get("words")(args);
                interpret(f, {b.data(), interpreted.data()});
                EXPECT_EQ(jit, want) << "JIT, " << elem << ", stride " << stride << ", offset "
                                     << offset << ", " << lanes << " lanes";
                EXPECT_EQ(interpreted, want)
                    << "interpreter, " << elem << ", stride " << stride << ", " << lanes;
            }
        }
    }
}
