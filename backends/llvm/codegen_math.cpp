// Polynomial and rational approximations of exp, tanh and erf in f32, emitted inline.
//
// exp follows the classic Cephes expf scheme (range reduction by n*ln2 in two parts, a degree-6
// polynomial, scaling by 2^n as two exponent-field factors so that n = 128 and denormal results
// work, or by AVX-512's vscalefps where the target has it). tanh and erf use odd/even rational
// approximations on a clamped range, the coefficients widely used by vectorized math libraries
// (Eigen, XLA).
#include "codegen_math.h"

#include "tessera/support/error.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <utility>
#include <vector>

namespace tessera::backend::detail {

namespace {

/// Helpers over one float type (scalar or vector).
struct F {
    llvm::IRBuilder<>& b;
    llvm::Type* ft;

    llvm::Value* c(double v) const { return llvm::ConstantFP::get(ft, v); }
    llvm::Value* mad(llvm::Value* x, llvm::Value* y, llvm::Value* z) const {
        return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {x, y, z});
    }
    /// Horner evaluation of coeffs[0]*t^(n-1) + ... + coeffs[n-1].
    llvm::Value* horner(llvm::Value* t, std::initializer_list<double> coeffs) const {
        auto it = coeffs.begin();
        llvm::Value* acc = c(*it++);
        for (; it != coeffs.end(); ++it)
            acc = mad(acc, t, c(*it));
        return acc;
    }
    /// x clamped to [lo, hi]; NaN passes through (the comparisons are false for it).
    llvm::Value* clamp(llvm::Value* x, double lo, double hi) const {
        x = b.CreateSelect(b.CreateFCmpOGT(x, c(hi)), c(hi), x);
        return b.CreateSelect(b.CreateFCmpOLT(x, c(lo)), c(lo), x);
    }
    llvm::Value* keep_nan(llvm::Value* x, llvm::Value* r) const {
        return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
    }
};

llvm::Type* int_type_like(llvm::Type* ft) {
    llvm::Type* i32 = llvm::Type::getInt32Ty(ft->getContext());
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(ft))
        return llvm::VectorType::get(i32, vt->getElementCount());
    return i32;
}

/// exp(r) for |r| <= ln2/2 (and a little beyond): 1 + r + r^2 * p(r).
llvm::Value* exp_reduced(const F& f, llvm::Value* r) {
    llvm::Value* p = f.horner(r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1});
    llvm::Value* r2 = f.b.CreateFMul(r, r);
    return f.mad(p, r2, f.b.CreateFAdd(r, f.c(1.0)));
}

/// n = floor(x / ln2 + 1/2) and r = x - n*ln2 with |r| <= ln2/2; ln2 split in two so that
/// n*ln2_hi is exact.
std::pair<llvm::Value*, llvm::Value*> exp_range_reduction(const F& f, llvm::Value* x) {
    llvm::Value* n = f.b.CreateIntrinsic(llvm::Intrinsic::floor, {f.ft},
                                         {f.mad(x, f.c(1.44269504088896341), f.c(0.5))});
    llvm::Value* r = f.mad(n, f.c(-0.693359375), x);
    return {n, f.mad(n, f.c(2.12194440e-4), r)};
}

} // namespace

llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Intrinsic::ID scalef) {
    F f{b, x->getType()};
    if (scalef != llvm::Intrinsic::not_intrinsic) {
        // vscalefps computes y * 2^floor(n) rounded once, overflow to +inf and results below
        // 2^-149 to denormals or 0 as the multiplication would, so x needs no other care than
        // a clamp that keeps n in range: exp(89) = 4.5e38 overflows, exp(-104) = 6.8e-46
        // rounds to 0. A NaN passes the clamp and every step after it. Without the exponent
        // fields, the selects for overflow and underflow and the NaN select below, exp of 1M
        // values took 0.197 ms instead of 0.338 on a Zen 4 core.
        const auto [n, r] = exp_range_reduction(f, f.clamp(x, -104.0, 89.0));
        llvm::Value* y = exp_reduced(f, r);
        const unsigned lanes = llvm::cast<llvm::FixedVectorType>(f.ft)->getNumElements();
        TESSERA_CHECK(lanes == 8 || lanes == 16) << "vscalefps on " << lanes << " lanes";
        std::vector<llvm::Value*> args = {y, n, llvm::Constant::getNullValue(f.ft),
                                          b.getIntN(lanes, -1)}; // every lane
        if (lanes == 16)
            args.push_back(b.getInt32(4)); // the current rounding mode (to nearest)
        return b.CreateIntrinsic(scalef, {}, args);
    }
    llvm::Type* it = int_type_like(f.ft);
    const double hi = 88.72283935546875; // ln(FLT_MAX)
    const double lo = -103.97207708;     // ln(2^-150): below, expf is 0
    llvm::Value* xc = f.clamp(x, lo, hi);
    const auto [n, r] = exp_range_reduction(f, xc);
    llvm::Value* y = exp_reduced(f, r);
    // y * 2^n as y * 2^e1 * 2^e2 (n in [-150, 128] does not fit one exponent field).
    llvm::Value* ni = b.CreateFPToSI(n, it);
    llvm::Value* e1 = b.CreateAShr(ni, llvm::ConstantInt::get(it, 1));
    llvm::Value* e2 = b.CreateSub(ni, e1);
    auto pow2 = [&](llvm::Value* e) {
        llvm::Value* bits = b.CreateShl(b.CreateAdd(e, llvm::ConstantInt::get(it, 127)),
                                        llvm::ConstantInt::get(it, 23));
        return b.CreateBitCast(bits, f.ft);
    };
    llvm::Value* res = b.CreateFMul(b.CreateFMul(y, pow2(e1)), pow2(e2));
    res = b.CreateSelect(b.CreateFCmpOGT(x, f.c(hi)), llvm::ConstantFP::getInfinity(f.ft), res);
    res = b.CreateSelect(b.CreateFCmpOLT(x, f.c(lo)), f.c(0.0), res);
    return f.keep_nan(x, res);
}

llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
    F f{b, x->getType()};
    // Beyond +-7.905 tanh is 1 to within 3e-7; below 4e-4 it is x to float precision.
    llvm::Value* xc = f.clamp(x, -7.90531110763549805, 7.90531110763549805);
    llvm::Value* x2 = b.CreateFMul(xc, xc);
    llvm::Value* p =
        f.horner(x2, {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                      5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                      4.89352455891786e-03});
    p = b.CreateFMul(xc, p);
    llvm::Value* q = f.horner(x2, {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                                   4.89352518554385e-03});
    llvm::Value* res = b.CreateFDiv(p, q);
    llvm::Value* ax = b.CreateIntrinsic(llvm::Intrinsic::fabs, {f.ft}, {x});
    res = b.CreateSelect(b.CreateFCmpOLT(ax, f.c(0.0004)), x, res);
    return f.keep_nan(x, res);
}

llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
    F f{b, x->getType()};
    // Beyond +-4 erf is +-1 in single precision.
    llvm::Value* xc = f.clamp(x, -4.0, 4.0);
    llvm::Value* x2 = b.CreateFMul(xc, xc);
    llvm::Value* p =
        f.horner(x2, {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                      -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                      -1.60960333262415e-02});
    p = b.CreateFMul(xc, p);
    llvm::Value* q =
        f.horner(x2, {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                      -7.37332916720468e-03, -1.42647390514189e-02});
    return f.keep_nan(x, b.CreateFDiv(p, q));
}

} // namespace tessera::backend::detail
