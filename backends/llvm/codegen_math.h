// Private to the LLVM backend: inline polynomial forms of float math functions, so that they
// vectorize (a libm call is one scalar call per lane) and need nothing from the process.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

namespace tessera::backend::detail {

/// exp(x) for f32 x (scalar or vector): within 2 ulp of expf; overflow gives +inf, underflow 0,
/// NaN stays NaN. `scalef`: the x86 intrinsic that scales x's vector type by powers of two
/// (llvm.x86.avx512.mask.scalef.ps.512 or .256), or not_intrinsic where the target has none
/// for it; with it, the result is scaled in one instruction.
llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x,
                          llvm::Intrinsic::ID scalef = llvm::Intrinsic::not_intrinsic);

/// tanh(x) for f32 x: a rational approximation within 3e-7 of tanhf (absolute); NaN stays NaN.
llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x);

/// erf(x) for f32 x: a rational approximation within 1e-7 of erff (absolute); NaN stays NaN.
llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x);

} // namespace tessera::backend::detail
