// The inline f32 approximations of exp, tanh and erf against libm over their whole range, in
// scalar and vector code, with special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/jit_harness.h"
#include "tessera/ir/op.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

/// O[i] = fn(A[i]) for every input, as scalar code and as vector code of `lanes`.
struct Runs {
    std::vector<std::vector<float>> outputs; // scalar, vector
    std::string assembly;
};

Runs run_both(Expr (*fn)(Expr), const std::vector<float>& in, int lanes = 8,
              backend::CompileOptions opts = {}) {
    const int64_t n = static_cast<int64_t>(in.size());
    EXPECT_EQ(n % lanes, 0);
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n),
           V = buf("V", DataType::f32(), n);
    Stmt scalar = loop("i", n, ForKind::Serial,
                       [&](Var i) { return Store::make(O, fn(Load::make(A, i)), i); });
    Stmt vector = loop("i", n / lanes, ForKind::Serial, [&](Var i) {
        Expr idx = Ramp::make(i * lanes, Expr(1), lanes);
        return Store::make(V, fn(Load::make(A, idx)), idx);
    });
    opts.keep_assembly = true;
    JitKernel k = jit_compile({A, O, V}, Seq::make({scalar, vector}), opts);
    std::vector<float> a = in, o(n), v(n);
    k(a, o, v);
    return {{o, v}, k.module->assembly()};
}

std::vector<float> sweep(float lo, float hi, int count) {
    std::vector<float> v;
    for (int i = 0; i < count; ++i)
        v.push_back(lo + (hi - lo) * i / (count - 1));
    const float inf = std::numeric_limits<float>::infinity();
    for (float s : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, inf, -inf,
                    std::numeric_limits<float>::quiet_NaN(), 1e30f, -1e30f})
        v.push_back(s);
    while (v.size() % 16)
        v.push_back(0.5f);
    return v;
}

/// |got - want| <= abs_tol + rel_tol * |want|, with NaN and infinities matched exactly.
void expect_close(const std::vector<float>& got, const std::vector<float>& in,
                  double (*ref)(double), double abs_tol, double rel_tol, const char* what) {
    int bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        double want = static_cast<float>(ref(in[i]));
        double g = got[i];
        bool ok;
        if (std::isnan(want))
            ok = std::isnan(g);
        else if (std::isinf(want))
            ok = g == want;
        else
            ok = std::fabs(g - want) <= abs_tol + rel_tol * std::fabs(want);
        if (!ok && ++bad <= 5)
            ADD_FAILURE() << what << "(" << in[i] << ") = " << g << ", libm says " << want;
    }
    EXPECT_EQ(bad, 0) << what;
}

double ref_exp(double x) { return std::exp(x); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_erf(double x) { return std::erf(x); }

} // namespace

// With AVX-512F, 8- and 16-lane vectors scale by 2^n with vscalefps; without it (and in
// scalar code) by two exponent-field factors. Both stay within 2 ulp over the whole range,
// denormal results, overflow to infinity and NaN included.
TEST(CodegenMath, ExpWithinTwoUlp) {
    const auto in = sweep(-110.0f, 90.0f, 40001);
    const bool avx512 = backend::host_info().has_feature("avx512f");
    for (int lanes : {8, 16}) {
        for (bool off : {false, true}) {
            SCOPED_TRACE(std::to_string(lanes) + " lanes" + (off ? ", AVX-512 off" : ""));
            const Runs r =
                run_both(&ir::exp, in, lanes,
                         off ? host_options_with("-avx512f") : backend::CompileOptions{});
            // 2 ulp relative; below the normal range the absolute error of a denormal is tiny.
            for (const auto& out : r.outputs)
                expect_close(out, in, &ref_exp, 1e-37, 2.5e-7, "exp");
            EXPECT_EQ(r.assembly.find("vscalefps") != std::string::npos, avx512 && !off);
        }
    }
}

TEST(CodegenMath, TanhWithinThreeTenMillionths) {
    auto in = sweep(-12.0f, 12.0f, 24001);
    for (const auto& out : run_both(&ir::tanh, in).outputs)
        expect_close(out, in, &ref_tanh, 3e-7, 3e-7, "tanh");
}

TEST(CodegenMath, ErfWithinOneTenMillionth) {
    auto in = sweep(-6.0f, 6.0f, 24001);
    for (const auto& out : run_both(&ir::erf, in).outputs)
        expect_close(out, in, &ref_erf, 1.5e-7, 2.5e-7, "erf");
}

TEST(CodegenMath, HalfPrecisionGoesThroughF32) {
    const int64_t n = 7;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
    DataType h = DataType::f16();
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        return Store::make(O, cast(DataType::f32(), exp(cast(h, Load::make(A, i)))), i);
    });
    JitKernel k = jit_compile({A, O}, body);
    std::vector<float> a = {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f, 5.0f}, o(n);
    k(a, o);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(o[i], std::exp(a[i]), 2e-3 * std::exp(a[i]));
}
