// Loop IR to LLVM IR.
//
// Each LoweredFunc `f` becomes two functions: the exported `void f(ptr args)`, which loads the
// parameter pointers, and an internal `f.body(ptr noalias p0, ...)` holding the code, so that
// LLVM knows parameters never overlap. A parallel loop is outlined the same way: the runtime
// calls `f.parN(begin, end, ctx)`, which unpacks the captured values from ctx and calls
// `f.parN.body(begin, end, min, <noalias buffers>, <scalars>)`.
//
// Speed matters more than anywhere else here: float a*b+c becomes llvm.fmuladd (and every float
// operation allows contraction), stack buffers are allocas in the entry block so SROA keeps
// register tiles in vector registers, dense vector accesses are plain vector loads and stores,
// a vector load whose lanes are a scalar base plus constant offsets in a few windows (a blocked
// channel shuffle's two half vectors) is one dense load per window and shuffles instead of a
// gather (vector_index.h), and integer floor division by a power of two is a shift. acc +
// dot4_u8s8(a, b) on i32 vectors is vpdpbusd (AVX-512 VNNI or AVX-VNNI) where the target has it.
#include "codegen_llvm.h"
#include "codegen_math.h"
#include "vector_index.h"

#include <cctype>
#include <cstdlib>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MathExtras.h>
#include <llvm/TargetParser/Triple.h>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/tile_matmul.h"
#include "tessera/support/error.h"
#include "tessera/support/bfloat16.h"

namespace tessera::backend::detail {

using namespace ir;

namespace {

/// Stack buffers larger than this go to the heap instead (thread stacks are a few MiB).
constexpr int64_t kMaxStackBytes = 256 * 1024;

/// Variables and buffers a statement uses but does not define, in first-use order.
struct FreeVars : IRVisitor {
    using IRVisitor::visit;
    std::vector<const Variable*> vars;
    std::vector<Buffer> buffers;
    std::unordered_set<const Variable*> bound, seen_vars;
    std::unordered_set<const BufferNode*> allocated, seen_buffers;

    void use_buffer(const Buffer& b) {
        if (allocated.count(b.get()) || !seen_buffers.insert(b.get()).second)
            return;
        buffers.push_back(b);
    }
    void visit(const Variable* op) override {
        if (bound.count(op) || !seen_vars.insert(op).second)
            return;
        vars.push_back(op);
    }
    void visit(const Let* op) override {
        visit(op->value);
        bound.insert(op->var.get());
        visit(op->body);
    }
    void visit(const LetStmt* op) override {
        visit(op->value);
        bound.insert(op->var.get());
        visit(op->body);
    }
    void visit(const For* op) override {
        visit(op->min);
        visit(op->extent);
        bound.insert(op->loop_var.get());
        visit(op->body);
    }
    void visit(const Allocate* op) override {
        allocated.insert(op->buffer.get());
        visit(op->body);
    }
    void visit(const Load* op) override {
        use_buffer(op->buffer);
        visit(op->index);
    }
    void visit(const Store* op) override {
        use_buffer(op->buffer);
        visit(op->value);
        visit(op->index);
    }
};

class CodeGen {
  public:
    CodeGen(llvm::LLVMContext& ctx, llvm::Module& m, const TargetSpec& spec,
            const CompileOptions& opts)
        : ctx_(ctx), mod_(m), b_(ctx), spec_(spec) {
        llvm::FastMathFlags fmf;
        if (opts.fast_math) {
            fmf.setAllowReassoc();
            fmf.setAllowReciprocal();
            fmf.setApproxFunc();
            fmf.setNoSignedZeros();
        }
        fmf.setAllowContract();
        b_.setFastMathFlags(fmf);
        // The resolved subtarget, not the CPU name: a feature string may turn VNNI off on a CPU
        // that has it (and the host's string lists what a virtual machine hides).
        const bool vnni512 = target_has_features(spec, "+avx512vnni");
        vpdpbusd_512_ = vnni512 && target_has_features(spec, "+evex512");
        vpdpbusd_256_ = (vnni512 && target_has_features(spec, "+avx512vl")) ||
                        target_has_features(spec, "+avxvnni");
        amx_int8_ =
            target_has_features(spec, "+amx-int8") && target_has_features(spec, "+amx-tile");
        amx_bf16_ =
            target_has_features(spec, "+amx-bf16") && target_has_features(spec, "+amx-tile");
        const bool bf16 = target_has_features(spec, "+avx512bf16");
        vdpbf16ps_512_ = bf16 && target_has_features(spec, "+evex512");
        vdpbf16ps_256_ = bf16 && target_has_features(spec, "+avx512vl");
        x86_ = llvm::Triple(spec.triple).isX86();
        const bool avx512f = x86_ && target_has_features(spec, "+avx512f");
        scalef_512_ = avx512f && target_has_features(spec, "+evex512");
        scalef_256_ = avx512f && target_has_features(spec, "+avx512vl");
        pmaddwd_512_ =
            x86_ && target_has_features(spec, "+avx512bw") && target_has_features(spec, "+evex512");
        pmaddwd_256_ = x86_ && target_has_features(spec, "+avx2");
        pmaddwd_128_ = x86_ && target_has_features(spec, "+sse2");
    }

    void add_function(const LoweredFunc& f);

  private:
    // ---- types and helpers ----------------------------------------------------------------
    llvm::Type* scalar_type(DataType t) {
        if (t.is_bfloat()) // a storage type: its bits, converted by cast_value only
            return llvm::Type::getInt16Ty(ctx_);
        if (t.is_float()) {
            switch (t.bits) {
            case 16:
                return llvm::Type::getHalfTy(ctx_);
            case 32:
                return llvm::Type::getFloatTy(ctx_);
            case 64:
                return llvm::Type::getDoubleTy(ctx_);
            }
            TESSERA_UNREACHABLE() << "float type of " << int(t.bits) << " bits";
        }
        return llvm::Type::getIntNTy(ctx_, t.bits);
    }
    llvm::Type* llvm_type(DataType t) {
        llvm::Type* s = scalar_type(t);
        return t.lanes > 1 ? llvm::FixedVectorType::get(s, t.lanes) : s;
    }
    /// In-memory element type: booleans are bytes.
    llvm::Type* memory_type(DataType t) {
        return t.is_bool() ? llvm::Type::getInt8Ty(ctx_) : scalar_type(t);
    }
    llvm::Type* i64() { return b_.getInt64Ty(); }
    llvm::Type* ptr() { return b_.getPtrTy(); }

    llvm::Function* new_function(const std::string& name, llvm::FunctionType* ty, bool exported);
    llvm::Value* alloca_in_entry(llvm::Type* ty, llvm::Value* count, uint64_t align);

    llvm::Value* splat(int lanes, llvm::Value* v) {
        return lanes > 1 ? b_.CreateVectorSplat(lanes, v) : v;
    }
    llvm::Value* splat_i32(int lanes, uint32_t c) { return splat(lanes, b_.getInt32(c)); }
    llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Type*> tys,
                           std::vector<llvm::Value*> args) {
        return b_.CreateIntrinsic(id, tys, args);
    }
    /// Calls a scalar libm function lane by lane (f16 goes through f32).
    llvm::Value* libm_call(const char* f32_name, const char* f64_name, llvm::Value* v, DataType t);

    // ---- expressions and statements ----------------------------------------------------------
    llvm::Value* codegen(const Expr& e);
    void codegen(const Stmt& s);
#define TESSERA_EXPR_NODE(X) llvm::Value* visit(const X* op);
#define TESSERA_STMT_NODE(X) void visit(const X* op);
#include "tessera/ir/ir_nodes.def"

    llvm::Value* cast_value(llvm::Value* v, DataType from, DataType to);
    /// cast_value where from or to is bf16: through f32, rounding to nearest even (a quiet NaN
    /// stays NaN, subnormals kept), as the interpreter rounds (support/bfloat16.h).
    llvm::Value* cast_bf16(llvm::Value* v, DataType from, DataType to);
    /// The bf16 bits (i16 lanes) of f32 values f by integer arithmetic: exact on every input.
    llvm::Value* bf16_bits_by_integers(llvm::Value* f, int lanes);
    /// The same bits by AVX512-BF16's vcvtneps2bf16, 16 or 8 lanes an instruction, where the
    /// target has it and lanes is a multiple of one; null otherwise. The instruction rounds as
    /// the integers do but flushes subnormal inputs to zero, so a vector holding one takes
    /// bf16_bits_by_integers behind a branch (never taken on a model's activations: ReLU's
    /// zeros are not subnormal).
    llvm::Value* bf16_bits_by_instruction(llvm::Value* f, int lanes);
    /// fptosi.sat of f32 (scalar or vector) to i32 as clamps and selects.
    llvm::Value* saturating_f32_to_i32(llvm::Value* v);
    llvm::Value* floor_div_mod(const Expr& a, const Expr& b, bool is_mod);
    llvm::Value* min_max(llvm::Value* a, llvm::Value* b, DataType t, bool is_max);
    llvm::Value* reduce_step(ReduceOp op, llvm::Value* a, llvm::Value* b, DataType t);
    llvm::Value* compare(const Expr& a, const Expr& b, llvm::CmpInst::Predicate fp,
                         llvm::CmpInst::Predicate sp, llvm::CmpInst::Predicate up);
    llvm::Value* fused_multiply_add(const Expr& mul_side, const Expr& other, bool negate_other,
                                    bool negate_product);
    /// The widest dot-product instruction for `dot` (vpdpbusd for Dot4U8S8, vdpbf16ps for
    /// Dot2BF16: 16, 8 or 4 lanes) that divides `lanes`; 0 when none does or the target has none.
    int dot_instruction_width(CallOp dot, int lanes) const;
    /// acc + dot(a, b) on <lanes x i32> words as that instruction, `width` lanes at a time.
    llvm::Value* dot_instruction(CallOp dot, llvm::Value* acc, llvm::Value* a, llvm::Value* b,
                                 int lanes, int width);
    /// Lanes [first, first + count) of vector v (v itself when that is all of it): a piece of
    /// a wider vector for an instruction on one register; the shuffle only names registers.
    llvm::Value* lanes_from(llvm::Value* v, int first, int count) {
        if (llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements() ==
            static_cast<unsigned>(count))
            return v;
        std::vector<int> mask;
        for (int k = 0; k < count; ++k)
            mask.push_back(first + k);
        return b_.CreateShuffleVector(v, mask);
    }
    /// The widest x86 vpmaddwd (16 lanes with AVX-512BW, 8 with AVX2, 4 with SSE2) that
    /// divides `lanes`; 0 on other targets or when none does.
    int pmaddwd_width(int lanes) const {
        return lanes % 16 == 0 && pmaddwd_512_  ? 16
               : lanes % 8 == 0 && pmaddwd_256_ ? 8
               : lanes % 4 == 0 && pmaddwd_128_ ? 4
                                                : 0;
    }
    /// dot4_u8s8(a, b) on i32 or <lanes x i32> without VNNI, exactly.
    llvm::Value* dot4_generic(llvm::Value* a, llvm::Value* b, int lanes);
    /// dot2_bf16(a, b) on i32 or <lanes x i32> without AVX512-BF16: the halves as f32, exactly
    /// as the interpreter computes it.
    llvm::Value* dot2_generic(llvm::Value* a, llvm::Value* b, int lanes);
    /// The code of `op` when it is acc + (a dot-product call that has an instruction at its
    /// lanes), either side; nullptr otherwise.
    llvm::Value* accumulated_dot(const Add* op);
    llvm::Value* buffer_ptr(const Buffer& b);
    llvm::Value* element_ptr(const Buffer& b, llvm::Value* index);
    /// The lane addresses of a vector access of buf at a non-dense, non-uniform index.
    llvm::Value* vector_ptrs(const Buffer& buf, const Expr& index, int lanes);
    llvm::Value* load(const Buffer& buf, const Expr& index, int lanes);
    /// buf[index] as a few dense loads and shuffles when index is a scalar base plus constant
    /// lane offsets in at most max(2, lanes / 4) windows of `lanes` elements (a channel
    /// shuffle's lanes from two half vectors); nullptr otherwise (a gather then).
    llvm::Value* load_windows(const Buffer& buf, const Expr& index, int lanes);
    void store(const Buffer& buf, llvm::Value* value, const Expr& index, int lanes);
    void parallel_for(const For* op);
    /// CallOp::BytesAsWord of `bytes` (a u8 or bf16 Load): unaligned i32 loads, one vector
    /// load of 4 x lanes bytes when the lanes' words lie side by side.
    llvm::Value* bytes_as_word(const Load* bytes, int lanes);
    /// A TileMatmul as AMX tile instructions (its loops without AMX).
    void tile_matmul(const TileMatmul& t);
    void serial_for(const Var& loop_var, llvm::Value* begin, llvm::Value* end, const Stmt& body,
                    llvm::Value* offset);
    void bind(const Variable* v, llvm::Value* value) { vars_[v] = value; }

    llvm::LLVMContext& ctx_;
    llvm::Module& mod_;
    llvm::IRBuilder<> b_;
    TargetSpec spec_;
    /// Whether the target has vpdpbusd on 512-bit, and on 256- and 128-bit, vectors.
    bool vpdpbusd_512_ = false, vpdpbusd_256_ = false;
    bool x86_ = false; // an x86 triple: vector lrint becomes one instruction
    bool pmaddwd_512_ = false, pmaddwd_256_ = false, pmaddwd_128_ = false; // dot4_generic
    // vscalefps on zmm / ymm vectors of f32 (AVX-512F; the ymm form needs AVX-512VL).
    bool scalef_512_ = false, scalef_256_ = false;
    bool vdpbf16ps_512_ = false, vdpbf16ps_256_ = false;
    /// Whether the target has AMX tiles with tdpbusd.
    bool amx_int8_ = false, amx_bf16_ = false;
    /// Whether the target runs a tile_matmul call of op on tiles (else its loops).
    bool has_tiles_for(CallOp op) const {
        return op == CallOp::TileMatmulBF16 ? amx_bf16_ : op == CallOp::TileMatmulU8S8 && amx_int8_;
    }

    // State of the function being generated (saved and restored around outlined bodies).
    std::string func_name_;
    llvm::Function* fn_ = nullptr;
    std::unordered_map<const Variable*, llvm::Value*> vars_;
    std::unordered_map<const BufferNode*, llvm::Value*> buffers_;
    int parallel_count_ = 0;
    /// Buffers from Allocate (64-byte aligned), in any function of the module.
    std::unordered_set<const BufferNode*> allocated_;
};

// ---------------------------------------------------------------------------------------------
// Functions.

llvm::Function* CodeGen::new_function(const std::string& name, llvm::FunctionType* ty,
                                      bool exported) {
    auto linkage = exported ? llvm::Function::ExternalLinkage : llvm::Function::InternalLinkage;
    llvm::Function* f = llvm::Function::Create(ty, linkage, name, mod_);
    f->addFnAttr("target-cpu", spec_.cpu);
    if (!spec_.features.empty())
        f->addFnAttr("target-features", spec_.features);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("no-trapping-math", "true");
    f->addFnAttr("frame-pointer", "none");
    return f;
}

llvm::Value* CodeGen::alloca_in_entry(llvm::Type* ty, llvm::Value* count, uint64_t align) {
    llvm::BasicBlock& entry = fn_->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    llvm::AllocaInst* a = eb.CreateAlloca(ty, count);
    a->setAlignment(llvm::Align(align));
    return a;
}

void CodeGen::add_function(const LoweredFunc& f) {
    TESSERA_CHECK(f.body.defined()) << "function " << f.name << " without a body";
    func_name_ = f.name;
    parallel_count_ = 0;

    // The internal body: one noalias pointer per parameter.
    std::vector<llvm::Type*> param_types(f.params.size(), ptr());
    auto* body_ty = llvm::FunctionType::get(b_.getVoidTy(), param_types, false);
    llvm::Function* body = new_function(f.name + ".body", body_ty, false);
    for (size_t i = 0; i < f.params.size(); ++i) {
        const Buffer& p = f.params[i];
        body->addParamAttr(i, llvm::Attribute::NoAlias);
        int64_t bytes = p->num_elements() * p.dtype().bytes();
        body->addParamAttr(i, llvm::Attribute::getWithDereferenceableBytes(ctx_, bytes));
        body->getArg(i)->setName(p.name());
    }

    // The exported entry: void name(ptr args).
    auto* entry_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr()}, false);
    llvm::Function* entry = new_function(f.name, entry_ty, true);
    entry->getArg(0)->setName("args");
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> call_args;
    for (size_t i = 0; i < f.params.size(); ++i) {
        llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr(), entry->getArg(0), i);
        call_args.push_back(b_.CreateLoad(ptr(), slot, f.params[i].name()));
    }
    if ((contains_call(f.body, CallOp::TileMatmulU8S8) && has_tiles_for(CallOp::TileMatmulU8S8)) ||
        (contains_call(f.body, CallOp::TileMatmulBF16) && has_tiles_for(CallOp::TileMatmulBF16)))
        b_.CreateCall(mod_.getOrInsertFunction("tessera_enable_cpu_tiles", b_.getVoidTy()));
    b_.CreateCall(body, call_args);
    b_.CreateRetVoid();

    fn_ = body;
    vars_.clear();
    buffers_.clear();
    for (size_t i = 0; i < f.params.size(); ++i) {
        TESSERA_CHECK(!buffers_.count(f.params[i].get()))
            << "function " << f.name << " lists buffer " << f.params[i].name() << " twice";
        buffers_[f.params[i].get()] = body->getArg(i);
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
    codegen(f.body);
    b_.CreateRetVoid();
}

// ---------------------------------------------------------------------------------------------
// Expressions.

llvm::Value* CodeGen::codegen(const Expr& e) {
    TESSERA_CHECK(e.defined()) << "undefined expression in " << func_name_;
    switch (e.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                       \
    case IRNodeType::X:                                                                            \
        return visit(static_cast<const X*>(e.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "statement in expression position";
}

llvm::Value* CodeGen::visit(const IntImm* op) {
    return llvm::ConstantInt::get(llvm_type(op->type), static_cast<uint64_t>(op->value),
                                  op->type.is_int());
}

llvm::Value* CodeGen::visit(const FloatImm* op) {
    if (op->type.is_bfloat())
        return llvm::ConstantInt::get(llvm_type(op->type),
                                      f32_to_bf16_bits(static_cast<float>(op->value)));
    return llvm::ConstantFP::get(llvm_type(op->type), op->value);
}

llvm::Value* CodeGen::visit(const Variable* op) {
    auto it = vars_.find(op);
    TESSERA_CHECK(it != vars_.end()) << "free variable " << op->name << " in " << func_name_;
    return it->second;
}

// LLVM 19 scalarizes a vector llvm.fptosi.sat on x86 (a compare and branch per lane: a
// QuantizeLinear over 200K values took 0.9 ms on one core), and its loop vectorizer does the
// same to a scalar one. The same conversion stays vectors as a clamp into the range where
// fptosi is defined, then the two kinds of lanes it cannot give: x >= 2^31 saturates to
// INT32_MAX and NaN gives 0.
llvm::Value* CodeGen::saturating_f32_to_i32(llvm::Value* v) {
    llvm::Type* fty = v->getType();
    llvm::Type* ity = b_.getInt32Ty();
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(fty))
        ity = llvm::VectorType::get(ity, vt->getElementCount());
    auto f = [&](double x) { return llvm::ConstantFP::get(fty, x); };
    // 2147483520 is the largest f32 below 2^31.
    llvm::Value* in_range = intrinsic(
        llvm::Intrinsic::maxnum, {fty},
        {intrinsic(llvm::Intrinsic::minnum, {fty}, {v, f(2147483520.0)}), f(-2147483648.0)});
    llvm::Value* r = b_.CreateFPToSI(in_range, ity);
    r = b_.CreateSelect(b_.CreateFCmpOGE(v, f(2147483648.0)),
                        llvm::ConstantInt::get(ity, INT32_MAX), r);
    return b_.CreateSelect(b_.CreateFCmpUNO(v, v), llvm::Constant::getNullValue(ity), r);
}

llvm::Value* CodeGen::cast_value(llvm::Value* v, DataType from, DataType to) {
    if (from == to)
        return v;
    if (from.is_bfloat() || to.is_bfloat())
        return cast_bf16(v, from, to);
    llvm::Type* ty = llvm_type(to);
    if (from.is_float() && to.is_float())
        return to.bits > from.bits ? b_.CreateFPExt(v, ty) : b_.CreateFPTrunc(v, ty);
    if (to.is_float())
        return from.is_int() ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
    if (to.is_bool()) {
        if (from.is_float())
            return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
        return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_float()) {
        // Truncation toward zero that saturates (NaN gives 0) like the interpreter, without
        // LLVM's poison on out-of-range values. Narrow targets saturate at 32 bits, which keeps
        // vector conversions vectorized; wider ones at 64.
        DataType wide = to.bits <= 16 ? DataType::i32(to.lanes) : DataType::i64(to.lanes);
        if (to.bits == 32 && to.is_int())
            wide = to;
        llvm::Type* wty = llvm_type(wide);
        if (from.bits == 32 && wide.bits == 32)
            return b_.CreateTrunc(saturating_f32_to_i32(v), ty);
        bool unsigned64 = to.is_uint() && to.bits == 64;
        llvm::Value* r =
            intrinsic(unsigned64 ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat,
                      {wty, v->getType()}, {v});
        return b_.CreateTrunc(r, ty);
    }
    // Integer to integer: extend by the source's signedness, or truncate.
    if (to.bits > from.bits)
        return from.is_int() ? b_.CreateSExt(v, ty) : b_.CreateZExt(v, ty);
    if (to.bits < from.bits)
        return b_.CreateTrunc(v, ty);
    return v; // same width, signedness changes only
}

llvm::Value* CodeGen::cast_bf16(llvm::Value* v, DataType from, DataType to) {
    const int lanes = to.lanes;
    if (from.is_bfloat()) { // exact: the bits are the top half of the f32
        llvm::Value* wide = b_.CreateShl(b_.CreateZExt(v, llvm_type(DataType::i32(lanes))), 16);
        return cast_value(b_.CreateBitCast(wide, llvm_type(DataType::f32(lanes))),
                          DataType::f32(lanes), to);
    }
    llvm::Value* f = cast_value(v, from, DataType::f32(lanes));
    llvm::Value* bits = bf16_bits_by_instruction(f, lanes);
    return bits ? bits : bf16_bits_by_integers(f, lanes);
}

llvm::Value* CodeGen::bf16_bits_by_integers(llvm::Value* f, int lanes) {
    llvm::Value* x = b_.CreateBitCast(f, llvm_type(DataType::i32(lanes)));
    llvm::Value* hi = b_.CreateLShr(x, 16);
    // x + 0x7fff + (the kept part's lowest bit): ties go to even, carries step the exponent.
    llvm::Value* rounded =
        b_.CreateLShr(b_.CreateAdd(x, b_.CreateAdd(splat_i32(lanes, 0x7fff),
                                                   b_.CreateAnd(hi, splat_i32(lanes, 1)))),
                      16);
    llvm::Value* nan = b_.CreateFCmpUNO(f, f);
    llvm::Value* bits = b_.CreateSelect(nan, b_.CreateOr(hi, splat_i32(lanes, 0x40)), rounded);
    return b_.CreateTrunc(bits, llvm_type(DataType::bf16(lanes)));
}

llvm::Value* CodeGen::bf16_bits_by_instruction(llvm::Value* f, int lanes) {
    const int width = vdpbf16ps_512_ && lanes % 16 == 0  ? 16
                      : vdpbf16ps_256_ && lanes % 8 == 0 ? 8
                                                         : 0;
    if (width == 0)
        return nullptr;
    llvm::Function* convert = llvm::Intrinsic::getDeclaration(
        &mod_, width == 16 ? llvm::Intrinsic::x86_avx512bf16_cvtneps2bf16_512
                           : llvm::Intrinsic::x86_avx512bf16_cvtneps2bf16_256);
    std::vector<llvm::Value*> pieces;
    for (int at = 0; at < lanes; at += width) {
        llvm::Value* piece = f;
        if (width != lanes) {
            std::vector<int> mask(width);
            std::iota(mask.begin(), mask.end(), at);
            piece = b_.CreateShuffleVector(f, mask);
        }
        // LLVM types the result as bfloat lanes; bf16 values are i16 bits here.
        pieces.push_back(
            b_.CreateBitCast(b_.CreateCall(convert, {piece}), llvm_type(DataType::bf16(width))));
    }
    llvm::Value* hw = llvm::concatenateVectors(b_, pieces);
    // Subnormal and not zero: 1 <= (x << 1) - 1 < 0x00fffffe (the sign shifted out; a zero
    // wraps to 0xffffffff, a normal exponent gives at least 0x00ffffff).
    llvm::Value* x = b_.CreateBitCast(f, llvm_type(DataType::i32(lanes)));
    llvm::Value* subnormal = b_.CreateICmpULT(b_.CreateSub(b_.CreateShl(x, 1), splat_i32(lanes, 1)),
                                              splat_i32(lanes, 0x00fffffe));
    llvm::BasicBlock* fast = b_.GetInsertBlock();
    auto* exact = llvm::BasicBlock::Create(ctx_, "bf16.subnormal", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "bf16.rounded", fn_);
    b_.CreateCondBr(b_.CreateOrReduce(subnormal), exact, done,
                    llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(exact);
    llvm::Value* by_integers = bf16_bits_by_integers(f, lanes);
    llvm::BasicBlock* exact_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* bits = b_.CreatePHI(hw->getType(), 2, "bf16.bits");
    bits->addIncoming(hw, fast);
    bits->addIncoming(by_integers, exact_end);
    return bits;
}

namespace {

// Whether e is min(max(x, lo), hi) or max(min(x, hi), lo) with constant bounds inside
// [-2^31, 2^31): its value is then never NaN and converts to i32 without saturating.
bool clamped_into_i32(const Expr& e) {
    const Expr *inner = nullptr, *outer_bound = nullptr;
    bool outer_is_min = false;
    if (const auto* m = e.as<Min>()) {
        inner = &m->a, outer_bound = &m->b, outer_is_min = true;
    } else if (const auto* m = e.as<Max>()) {
        inner = &m->a, outer_bound = &m->b;
    } else {
        return false;
    }
    const Expr* inner_bound = nullptr;
    if (const auto* m = inner->as<Max>(); outer_is_min && m)
        inner_bound = &m->b;
    else if (const auto* m = inner->as<Min>(); !outer_is_min && m)
        inner_bound = &m->b;
    if (!inner_bound)
        return false;
    const double* a = as_const_float(*outer_bound);
    const double* b = as_const_float(*inner_bound);
    auto inside = [](double v) { return v >= -2147483648.0 && v <= 2147483520.0; };
    return a && b && inside(*a) && inside(*b);
}

} // namespace

llvm::Value* CodeGen::visit(const Cast* op) {
    // i32(round_even(x)) of an x clamped into the i32 range (a requantizing epilogue's tail)
    // as one conversion in the default rounding mode, halves to even: x86's cvtps2dq instead
    // of a rounding, a truncating conversion and the saturating clamps. LLVM lowers vector
    // lrint that way on x86 only; other targets keep the general path.
    const auto* round = op->value.as<Call>();
    if (round && round->op == CallOp::RoundEven && op->type.is_int() && op->type.bits == 32 &&
        round->args[0].type().is_float() && round->args[0].type().bits == 32 && x86_ &&
        clamped_into_i32(round->args[0])) {
        llvm::Value* x = codegen(round->args[0]);
        return intrinsic(llvm::Intrinsic::lrint, {llvm_type(op->type), x->getType()}, {x});
    }
    return cast_value(codegen(op->value), op->value.type(), op->type);
}

/// a*b (+ or -) c as llvm.fmuladd, which becomes one FMA instruction.
llvm::Value* CodeGen::fused_multiply_add(const Expr& mul_side, const Expr& other, bool negate_other,
                                         bool negate_product) {
    const Mul* m = mul_side.as<Mul>();
    llvm::Value* a = codegen(m->a);
    llvm::Value* b = codegen(m->b);
    llvm::Value* c = codegen(other);
    if (negate_product)
        a = b_.CreateFNeg(a);
    if (negate_other)
        c = b_.CreateFNeg(c);
    return intrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
}

int CodeGen::dot_instruction_width(CallOp dot, int lanes) const {
    const bool bf16 = dot == CallOp::Dot2BF16;
    const bool w512 = bf16 ? vdpbf16ps_512_ : vpdpbusd_512_;
    const bool w256 = bf16 ? vdpbf16ps_256_ : vpdpbusd_256_;
    if (lanes % 16 == 0 && w512)
        return 16;
    if (lanes % 8 == 0 && w256)
        return 8;
    if (lanes % 4 == 0 && w256)
        return 4;
    return 0;
}

llvm::Value* CodeGen::dot_instruction(CallOp dot, llvm::Value* acc, llvm::Value* a,
                                      llvm::Value* b, int lanes, int width) {
    using I = llvm::Intrinsic::ID;
    const bool bf16 = dot == CallOp::Dot2BF16;
    const I id = width == 16 ? (bf16 ? I(llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512)
                                     : I(llvm::Intrinsic::x86_avx512_vpdpbusd_512))
                 : width == 8 ? (bf16 ? I(llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256)
                                      : I(llvm::Intrinsic::x86_avx512_vpdpbusd_256))
                              : (bf16 ? I(llvm::Intrinsic::x86_avx512bf16_dpbf16ps_128)
                                      : I(llvm::Intrinsic::x86_avx512_vpdpbusd_128));
    // Wider vectors (a 32-lane loop is two registers of 16) go piece by piece; the shuffles
    // only name registers.
    std::vector<llvm::Value*> parts;
    for (int base = 0; base < lanes; base += width) {
        auto piece = [&](llvm::Value* v) { return lanes_from(v, base, width); };
        // vpdpbusd's second operand supplies the unsigned bytes, its third the signed ones;
        // vdpbf16ps reads each word as two bfloat lanes.
        auto operand = [&](llvm::Value* v) {
            v = piece(v);
            return bf16 ? b_.CreateBitCast(v, llvm::FixedVectorType::get(b_.getBFloatTy(),
                                                                         2 * width))
                        : v;
        };
        parts.push_back(intrinsic(id, {}, {piece(acc), operand(a), operand(b)}));
    }
    return parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b_, parts);
}

llvm::Value* CodeGen::dot4_generic(llvm::Value* a, llvm::Value* b, int lanes) {
    // Bytes 0-1 and bytes 2-3 of each word, widened to two 16-bit halves inside the word's
    // own 32 bits (a zero-, b sign-extended: b's byte into the high half, shifted back), so
    // that each pair's multiply-add lands in its word's lane: x86 selects vpshufb, vpsraw and
    // vpmaddwd, and no shuffle crosses lanes. Widening every byte to 32 bits and summing the
    // four by even-plus-odd rounds instead cost two cross-lane permutes per 8 words (int8
    // resnet18's convs ran at 23 G multiply-adds/s on a Zen 3 core).
    auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * lanes);
    auto* halves = llvm::FixedVectorType::get(b_.getInt16Ty(), 2 * lanes);
    auto* wide = llvm::FixedVectorType::get(b_.getInt32Ty(), 2 * lanes);
    llvm::Value* zero = llvm::Constant::getNullValue(bytes);
    auto pair = [&](llvm::Value* word, int first, bool sign) {
        std::vector<int> mask;
        for (int w = 0; w < lanes; ++w)
            for (int k = first; k < first + 2; ++k) {
                const int byte = 4 * w + k, none = 4 * lanes; // an element of `zero`
                mask.push_back(sign ? none : byte);
                mask.push_back(sign ? byte : none);
            }
        llvm::Value* h = b_.CreateBitCast(
            b_.CreateShuffleVector(b_.CreateBitCast(word, bytes), zero, mask), halves);
        return sign ? b_.CreateAShr(h, 8) : h;
    };
    // Sums of the two products of each word's pair: (x0 y0 + x1 y1) in the word's lane. x86
    // by its instruction, a register at a time (LLVM does not find it in the generic form of
    // this one).
    const int width = pmaddwd_width(lanes);
    auto multiply_add_pairs = [&](llvm::Value* x, llvm::Value* y) {
        if (width > 0) {
            const llvm::Intrinsic::ID id = width == 16  ? llvm::Intrinsic::x86_avx512_pmaddw_d_512
                                           : width == 8 ? llvm::Intrinsic::x86_avx2_pmadd_wd
                                                        : llvm::Intrinsic::x86_sse2_pmadd_wd;
            std::vector<llvm::Value*> parts;
            for (int base = 0; base < lanes; base += width) {
                // Two 16-bit halves per word.
                parts.push_back(intrinsic(
                    id, {},
                    {lanes_from(x, 2 * base, 2 * width), lanes_from(y, 2 * base, 2 * width)}));
            }
            return parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b_, parts);
        }
        llvm::Value* p = b_.CreateMul(b_.CreateSExt(x, wide), b_.CreateSExt(y, wide));
        std::vector<int> even, odd;
        for (int k = 0; k < lanes; ++k) {
            even.push_back(2 * k);
            odd.push_back(2 * k + 1);
        }
        return b_.CreateAdd(b_.CreateShuffleVector(p, even), b_.CreateShuffleVector(p, odd));
    };
    llvm::Value* sum = b_.CreateAdd(multiply_add_pairs(pair(a, 0, false), pair(b, 0, true)),
                                    multiply_add_pairs(pair(a, 2, false), pair(b, 2, true)));
    return a->getType()->isVectorTy() ? sum : b_.CreateExtractElement(sum, uint64_t(0));
}

llvm::Value* CodeGen::dot2_generic(llvm::Value* a, llvm::Value* b, int lanes) {
    llvm::Type* words = llvm_type(DataType::i32(lanes));
    llvm::Type* floats = llvm_type(DataType::f32(lanes));
    auto lo = [&](llvm::Value* w) { return b_.CreateBitCast(b_.CreateShl(w, 16), floats); };
    auto hi = [&](llvm::Value* w) {
        return b_.CreateBitCast(b_.CreateAnd(w, llvm::ConstantInt::get(words, 0xffff0000u)),
                                floats);
    };
    // Both products are exact, so one fused multiply-add rounds the sum once, as the
    // interpreter does.
    return intrinsic(llvm::Intrinsic::fma, {floats},
                     {hi(a), hi(b), b_.CreateFMul(lo(a), lo(b))});
}

llvm::Value* CodeGen::accumulated_dot(const Add* op) {
    for (const auto& [dot_side, acc] : {std::pair(op->a, op->b), std::pair(op->b, op->a)}) {
        const Call* dot = dot_side.as<Call>();
        if (!dot || (dot->op != CallOp::Dot4U8S8 && dot->op != CallOp::Dot2BF16))
            continue;
        if (const int width = dot_instruction_width(dot->op, op->type.lanes))
            return dot_instruction(dot->op, codegen(acc), codegen(dot->args[0]),
                                   codegen(dot->args[1]), op->type.lanes, width);
    }
    return nullptr;
}

llvm::Value* CodeGen::visit(const Add* op) {
    // acc + dot(x, y), either side: the accumulator is the instruction's first operand.
    if (llvm::Value* v = accumulated_dot(op))
        return v;
    if (op->type.is_float()) {
        if (op->a.as<Mul>())
            return fused_multiply_add(op->a, op->b, false, false);
        if (op->b.as<Mul>())
            return fused_multiply_add(op->b, op->a, false, false);
        return b_.CreateFAdd(codegen(op->a), codegen(op->b));
    }
    llvm::Value* a = codegen(op->a);
    llvm::Value* b = codegen(op->b);
    // Index arithmetic (i64) is assumed not to overflow, which lets LLVM reason about
    // addresses; narrower integers wrap as the IR says.
    return b_.CreateAdd(a, b, "", false, op->type.is_int() && op->type.bits == 64);
}

llvm::Value* CodeGen::visit(const Sub* op) {
    if (op->type.is_float()) {
        if (op->a.as<Mul>())
            return fused_multiply_add(op->a, op->b, true, false);
        if (op->b.as<Mul>())
            return fused_multiply_add(op->b, op->a, false, true);
        return b_.CreateFSub(codegen(op->a), codegen(op->b));
    }
    llvm::Value* a = codegen(op->a);
    llvm::Value* b = codegen(op->b);
    return b_.CreateSub(a, b, "", false, op->type.is_int() && op->type.bits == 64);
}

llvm::Value* CodeGen::visit(const Mul* op) {
    llvm::Value* a = codegen(op->a);
    llvm::Value* b = codegen(op->b);
    if (op->type.is_float())
        return b_.CreateFMul(a, b);
    return b_.CreateMul(a, b, "", false, op->type.is_int() && op->type.bits == 64);
}

llvm::Value* CodeGen::floor_div_mod(const Expr& ea, const Expr& eb, bool is_mod) {
    DataType t = ea.type();
    llvm::Value* a = codegen(ea);
    llvm::Value* b = codegen(eb);
    llvm::Type* ty = a->getType();
    if (t.is_float()) {
        llvm::Value* q = b_.CreateFDiv(a, b);
        if (!is_mod)
            return q;
        // a - b * floor(a / b), as the interpreter defines it.
        llvm::Value* fl = intrinsic(llvm::Intrinsic::floor, {ty}, {q});
        return b_.CreateFSub(a, b_.CreateFMul(b, fl));
    }
    if (t.is_uint() || t.is_bool())
        return is_mod ? b_.CreateURem(a, b) : b_.CreateUDiv(a, b);

    const int64_t* c = as_const_int(eb);
    llvm::Value* sign_shift = llvm::ConstantInt::get(ty, t.bits - 1);
    if (c && *c > 0) {
        if (llvm::isPowerOf2_64(static_cast<uint64_t>(*c))) {
            // Arithmetic shift and mask are exactly floor division and floor modulo.
            if (is_mod)
                return b_.CreateAnd(a, llvm::ConstantInt::get(ty, *c - 1));
            return b_.CreateAShr(a, llvm::ConstantInt::get(ty, llvm::Log2_64(*c)));
        }
        // Positive divisor: truncating results are off by one exactly when the remainder is
        // negative, and (r >> (bits-1)) is -1 then and 0 otherwise.
        llvm::Value* r = b_.CreateSRem(a, b);
        llvm::Value* neg = b_.CreateAShr(r, sign_shift);
        if (is_mod)
            return b_.CreateAdd(r, b_.CreateAnd(neg, b));
        return b_.CreateAdd(b_.CreateSDiv(a, b), neg);
    }
    // General divisor: adjust when the remainder is non-zero and its sign differs from b's.
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* zero = llvm::Constant::getNullValue(ty);
    llvm::Value* adjust =
        b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (is_mod)
        return b_.CreateAdd(r, b_.CreateSelect(adjust, b, zero));
    return b_.CreateSub(b_.CreateSDiv(a, b), b_.CreateZExt(adjust, ty));
}

llvm::Value* CodeGen::visit(const Div* op) { return floor_div_mod(op->a, op->b, false); }
llvm::Value* CodeGen::visit(const Mod* op) { return floor_div_mod(op->a, op->b, true); }

llvm::Value* CodeGen::min_max(llvm::Value* a, llvm::Value* b, DataType t, bool is_max) {
    llvm::Intrinsic::ID id;
    if (t.is_float())
        id = is_max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
    else if (t.is_int())
        id = is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin;
    else
        id = is_max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin;
    return intrinsic(id, {a->getType()}, {a, b});
}

llvm::Value* CodeGen::visit(const Min* op) {
    return min_max(codegen(op->a), codegen(op->b), op->type, false);
}
llvm::Value* CodeGen::visit(const Max* op) {
    return min_max(codegen(op->a), codegen(op->b), op->type, true);
}

llvm::Value* CodeGen::compare(const Expr& ea, const Expr& eb, llvm::CmpInst::Predicate fp,
                              llvm::CmpInst::Predicate sp, llvm::CmpInst::Predicate up) {
    DataType t = ea.type();
    llvm::Value* a = codegen(ea);
    llvm::Value* b = codegen(eb);
    if (t.is_float())
        return b_.CreateFCmp(fp, a, b);
    return b_.CreateICmp(t.is_int() ? sp : up, a, b);
}

// Float comparisons are ordered except !=, which is true for NaN as in C.
using P = llvm::CmpInst::Predicate;
llvm::Value* CodeGen::visit(const EQ* op) {
    return compare(op->a, op->b, P::FCMP_OEQ, P::ICMP_EQ, P::ICMP_EQ);
}
llvm::Value* CodeGen::visit(const NE* op) {
    return compare(op->a, op->b, P::FCMP_UNE, P::ICMP_NE, P::ICMP_NE);
}
llvm::Value* CodeGen::visit(const LT* op) {
    return compare(op->a, op->b, P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT);
}
llvm::Value* CodeGen::visit(const LE* op) {
    return compare(op->a, op->b, P::FCMP_OLE, P::ICMP_SLE, P::ICMP_ULE);
}
llvm::Value* CodeGen::visit(const GT* op) {
    return compare(op->a, op->b, P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT);
}
llvm::Value* CodeGen::visit(const GE* op) {
    return compare(op->a, op->b, P::FCMP_OGE, P::ICMP_SGE, P::ICMP_UGE);
}

llvm::Value* CodeGen::visit(const And* op) { return b_.CreateAnd(codegen(op->a), codegen(op->b)); }
llvm::Value* CodeGen::visit(const Or* op) { return b_.CreateOr(codegen(op->a), codegen(op->b)); }
llvm::Value* CodeGen::visit(const Not* op) { return b_.CreateNot(codegen(op->a)); }

llvm::Value* CodeGen::visit(const Select* op) {
    llvm::Value* c = codegen(op->condition);
    llvm::Value* t = codegen(op->true_value);
    llvm::Value* f = codegen(op->false_value);
    return b_.CreateSelect(c, t, f);
}

// ---- memory ---------------------------------------------------------------------------------

llvm::Value* CodeGen::buffer_ptr(const Buffer& b) {
    auto it = buffers_.find(b.get());
    TESSERA_CHECK(it != buffers_.end())
        << "buffer " << b.name() << " is neither a parameter nor allocated in " << func_name_;
    return it->second;
}

llvm::Value* CodeGen::element_ptr(const Buffer& b, llvm::Value* index) {
    return b_.CreateInBoundsGEP(memory_type(b.dtype()), buffer_ptr(b), index);
}

llvm::Value* CodeGen::vector_ptrs(const Buffer& buf, const Expr& index, int lanes) {
    llvm::Type* mt = memory_type(buf.dtype());
    const auto [base, stride] = strided_base(index);
    if (!base.defined())
        return b_.CreateInBoundsGEP(mt, buffer_ptr(buf), codegen(index));
    // A scalar base pointer plus constant 32-bit lane offsets: the form x86 gathers and
    // scatters take directly (16 lanes per instruction, no 64-bit address vectors to build).
    std::vector<llvm::Constant*> offsets;
    for (int i = 0; i < lanes; ++i)
        offsets.push_back(llvm::ConstantInt::get(b_.getInt32Ty(), stride * i));
    return b_.CreateInBoundsGEP(mt, element_ptr(buf, codegen(base)),
                                llvm::ConstantVector::get(offsets));
}

llvm::Value* CodeGen::load(const Buffer& buf, const Expr& index, int lanes) {
    DataType et = buf.dtype();
    llvm::Type* mt = memory_type(et);
    llvm::Align align(et.bytes());
    llvm::Value* v;
    if (lanes == 1) {
        v = b_.CreateAlignedLoad(mt, element_ptr(buf, codegen(index)), align);
    } else if (Expr base = dense_base(index); base.defined()) {
        auto* vt = llvm::FixedVectorType::get(mt, lanes);
        v = b_.CreateAlignedLoad(vt, element_ptr(buf, codegen(base)), align);
    } else if (Expr u = uniform_index(index); u.defined()) {
        v = splat(lanes, b_.CreateAlignedLoad(mt, element_ptr(buf, codegen(u)), align));
    } else if (llvm::Value* w = load_windows(buf, index, lanes)) {
        v = w;
    } else {
        auto* vt = llvm::FixedVectorType::get(mt, lanes);
        v = b_.CreateMaskedGather(vt, vector_ptrs(buf, index, lanes), align);
    }
    if (et.is_bool())
        v = b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    return v;
}

llvm::Value* CodeGen::load_windows(const Buffer& buf, const Expr& index, int lanes) {
    const std::optional<LaneOffsets> lo = lane_offsets(index);
    if (!lo)
        return nullptr;
    const std::optional<LoadWindows> w = backend::load_windows(lo->offsets, lanes);
    if (!w)
        return nullptr;
    const std::vector<int64_t>& off = lo->offsets;
    const std::vector<int64_t>& first = w->first;
    const std::vector<int64_t>& last = w->last;
    const std::vector<int>& window = w->window;
    llvm::Type* mt = memory_type(buf.dtype());
    const llvm::Align align(buf.dtype().bytes());
    const DataType it = index.type().element_of();
    llvm::Value* acc = nullptr;
    for (size_t k = 0; k < first.size(); ++k) {
        const int width = static_cast<int>(last[k] - first[k] + 1);
        Expr at = make_const(it, first[k]);
        if (lo->base.defined())
            at = Add::make(lo->base, at);
        llvm::Value* ptr = element_ptr(buf, codegen(at));
        llvm::Value* part =
            width == 1 ? splat(lanes, b_.CreateAlignedLoad(mt, ptr, align))
                       : b_.CreateAlignedLoad(llvm::FixedVectorType::get(mt, width), ptr, align);
        if (width > 1 && width != lanes) { // widened to `lanes`, the rest undefined
            std::vector<int> widen(static_cast<size_t>(lanes), -1);
            for (int i = 0; i < width; ++i)
                widen[static_cast<size_t>(i)] = i;
            part = b_.CreateShuffleVector(part, widen);
        }
        // Lanes of earlier windows from acc, this window's from part, later ones undefined.
        std::vector<int> mask(static_cast<size_t>(lanes), -1);
        for (int lane = 0; lane < lanes; ++lane) {
            const size_t l = static_cast<size_t>(lane);
            const int pos = width == 1 ? 0 : static_cast<int>(off[l] - first[k]);
            if (window[l] == static_cast<int>(k))
                mask[l] = acc ? lanes + pos : pos;
            else if (window[l] < static_cast<int>(k))
                mask[l] = lane;
        }
        acc = acc ? b_.CreateShuffleVector(acc, part, mask) : b_.CreateShuffleVector(part, mask);
    }
    return acc;
}

void CodeGen::store(const Buffer& buf, llvm::Value* value, const Expr& index, int lanes) {
    DataType et = buf.dtype();
    llvm::Type* mt = memory_type(et);
    llvm::Align align(et.bytes());
    if (et.is_bool())
        value = b_.CreateZExt(value, lanes > 1 ? llvm::FixedVectorType::get(mt, lanes) : mt);
    if (lanes == 1) {
        b_.CreateAlignedStore(value, element_ptr(buf, codegen(index)), align);
    } else if (Expr base = dense_base(index); base.defined()) {
        b_.CreateAlignedStore(value, element_ptr(buf, codegen(base)), align);
    } else {
        // Lanes are written in order, so the last of duplicate indices wins.
        b_.CreateMaskedScatter(value, vector_ptrs(buf, index, lanes), align);
    }
}

llvm::Value* CodeGen::visit(const Load* op) { return load(op->buffer, op->index, op->type.lanes); }

llvm::Value* CodeGen::visit(const Ramp* op) {
    llvm::Value* base = splat(op->lanes, codegen(op->base));
    llvm::Value* stride = splat(op->lanes, codegen(op->stride));
    DataType t = op->base.type();
    std::vector<llvm::Constant*> steps;
    for (int i = 0; i < op->lanes; ++i) {
        steps.push_back(t.is_float() ? llvm::ConstantFP::get(scalar_type(t), i)
                                     : llvm::ConstantInt::get(scalar_type(t), i));
    }
    llvm::Value* iota = llvm::ConstantVector::get(steps);
    if (t.is_float())
        return b_.CreateFAdd(base, b_.CreateFMul(stride, iota));
    bool nsw = t.is_int() && t.bits == 64;
    return b_.CreateAdd(base, b_.CreateMul(stride, iota, "", false, nsw), "", false, nsw);
}

llvm::Value* CodeGen::visit(const Broadcast* op) { return splat(op->lanes, codegen(op->value)); }

llvm::Value* CodeGen::reduce_step(ReduceOp op, llvm::Value* a, llvm::Value* b, DataType t) {
    switch (op) {
    case ReduceOp::Sum:
        return t.is_float() ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    case ReduceOp::Max:
        return min_max(a, b, t, true);
    case ReduceOp::Min:
        return min_max(a, b, t, false);
    }
    TESSERA_UNREACHABLE();
}

llvm::Value* CodeGen::visit(const VectorReduce* op) {
    // Lane j of the result combines input lanes [j*g, (j+1)*g). A tree of shuffles halves g
    // while it is even; an odd group is folded lane by lane.
    llvm::Value* v = codegen(op->value);
    const int out = op->lanes;
    int g = op->value.type().lanes / out;
    DataType et = op->type.element_of();
    auto pick = [&](int group, int offset, int count) {
        // Lanes j*group + offset + k for j < out, k < count, in that order.
        std::vector<int> mask;
        for (int j = 0; j < out; ++j)
            for (int k = 0; k < count; ++k)
                mask.push_back(j * group + offset + k);
        if (mask.size() == 1)
            return b_.CreateExtractElement(v, uint64_t(mask[0]));
        return b_.CreateShuffleVector(v, mask);
    };
    while (g > 1 && g % 2 == 0) {
        llvm::Value* lo = pick(g, 0, g / 2);
        llvm::Value* hi = pick(g, g / 2, g / 2);
        v = reduce_step(op->op, lo, hi, et);
        g /= 2;
    }
    if (g > 1) {
        llvm::Value* acc = pick(g, 0, 1);
        for (int k = 1; k < g; ++k)
            acc = reduce_step(op->op, acc, pick(g, k, 1), et);
        v = acc;
    }
    return v;
}

// ---- calls and bindings ---------------------------------------------------------------------

llvm::Value* CodeGen::libm_call(const char* f32_name, const char* f64_name, llvm::Value* v,
                                DataType t) {
    bool dbl = t.bits == 64;
    llvm::Type* ct = dbl ? b_.getDoubleTy() : b_.getFloatTy();
    llvm::FunctionCallee fn = mod_.getOrInsertFunction(dbl ? f64_name : f32_name, ct, ct);
    if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
        f->setDoesNotThrow();
        f->setDoesNotAccessMemory();
    }
    auto one = [&](llvm::Value* x) {
        if (t.bits == 16)
            x = b_.CreateFPExt(x, ct);
        llvm::Value* r = b_.CreateCall(fn, {x});
        return t.bits == 16 ? b_.CreateFPTrunc(r, scalar_type(t)) : r;
    };
    if (t.lanes == 1)
        return one(v);
    llvm::Value* r = llvm::PoisonValue::get(llvm_type(t));
    for (int i = 0; i < t.lanes; ++i)
        r = b_.CreateInsertElement(r, one(b_.CreateExtractElement(v, uint64_t(i))), uint64_t(i));
    return r;
}

llvm::Value* CodeGen::visit(const Call* op) {
    DataType t = op->type;
    if (op->op == CallOp::Prefetch) {
        // Never loads: the address may lie past the end of the buffer.
        const Load* l = op->args[0].as<Load>();
        Expr index = l->index;
        if (index.type().is_vector()) {
            Expr base = dense_base(index);
            if (!base.defined())
                base = uniform_index(index);
            if (!base.defined())
                return llvm::ConstantInt::get(b_.getInt32Ty(), 0);
            index = base;
        }
        llvm::Value* addr =
            b_.CreateGEP(memory_type(l->buffer.dtype()), buffer_ptr(l->buffer), codegen(index));
        intrinsic(llvm::Intrinsic::prefetch, {ptr()},
                  {addr, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
        return llvm::ConstantInt::get(b_.getInt32Ty(), 0);
    }
    if (op->op == CallOp::BytesAsWord)
        return bytes_as_word(op->args[0].as<Load>(), t.lanes);
    llvm::Value* x = codegen(op->args[0]);
    llvm::Type* ty = x->getType();
    if (t.is_float() && t.bits <= 32 &&
        (op->op == CallOp::Exp || op->op == CallOp::Tanh || op->op == CallOp::Erf)) {
        // Inline approximations in f32: they vectorize, where libm calls go lane by lane.
        llvm::Value* xf = t.bits == 32 ? x : b_.CreateFPExt(x, llvm_type(DataType::f32(t.lanes)));
        llvm::Intrinsic::ID scalef = llvm::Intrinsic::not_intrinsic;
        if (t.lanes == 16 && scalef_512_)
            scalef = llvm::Intrinsic::x86_avx512_mask_scalef_ps_512;
        else if (t.lanes == 8 && scalef_256_)
            scalef = llvm::Intrinsic::x86_avx512_mask_scalef_ps_256;
        llvm::Value* r = op->op == CallOp::Exp    ? emit_exp_f32(b_, xf, scalef)
                         : op->op == CallOp::Tanh ? emit_tanh_f32(b_, xf)
                                                  : emit_erf_f32(b_, xf);
        return t.bits == 32 ? r : b_.CreateFPTrunc(r, ty);
    }
    switch (op->op) {
    case CallOp::Exp:
        return intrinsic(llvm::Intrinsic::exp, {ty}, {x});
    case CallOp::Log:
        return intrinsic(llvm::Intrinsic::log, {ty}, {x});
    case CallOp::Sqrt:
        return intrinsic(llvm::Intrinsic::sqrt, {ty}, {x});
    case CallOp::Floor:
        return intrinsic(llvm::Intrinsic::floor, {ty}, {x});
    case CallOp::RoundEven:
        return intrinsic(llvm::Intrinsic::roundeven, {ty}, {x});
    case CallOp::Ceil:
        return intrinsic(llvm::Intrinsic::ceil, {ty}, {x});
    case CallOp::Pow:
        return intrinsic(llvm::Intrinsic::pow, {ty}, {x, codegen(op->args[1])});
    case CallOp::Ldexp: {
        llvm::Value* k = codegen(op->args[1]);
        return intrinsic(llvm::Intrinsic::ldexp, {ty, k->getType()}, {x, k});
    }
    case CallOp::Tanh:
        return libm_call("tanhf", "tanh", x, t);
    case CallOp::Erf:
        return libm_call("erff", "erf", x, t);
    case CallOp::Abs:
        if (t.is_float())
            return intrinsic(llvm::Intrinsic::fabs, {ty}, {x});
        if (t.is_int())
            return intrinsic(llvm::Intrinsic::abs, {ty}, {x, b_.getFalse()});
        return x; // unsigned and bool values are their own absolute value
    case CallOp::Dot4U8S8:
    case CallOp::Dot2BF16:
        // Without an add around it, the instruction still does it in one from zero.
        if (const int width = dot_instruction_width(op->op, t.lanes))
            return dot_instruction(op->op, llvm::Constant::getNullValue(llvm_type(t)), x,
                                   codegen(op->args[1]), t.lanes, width);
        return op->op == CallOp::Dot4U8S8 ? dot4_generic(x, codegen(op->args[1]), t.lanes)
                                          : dot2_generic(x, codegen(op->args[1]), t.lanes);
    case CallOp::Prefetch:
    case CallOp::TileMatmulU8S8: // a statement (visit(Evaluate))
    case CallOp::TileMatmulBF16:
    case CallOp::BytesAsWord:    // bytes_as_word()
    case CallOp::GpuBlockSum: // GPU lowering only
    case CallOp::GpuBlockMax:
    case CallOp::GpuBlockMin:
    case CallOp::WarpMma:
        break;
    }
    TESSERA_UNREACHABLE() << "call " << to_string(op->op);
}

llvm::Value* CodeGen::bytes_as_word(const Load* bytes, int lanes) {
    TESSERA_CHECK(bytes) << "bytes_as_word of a non-Load in " << func_name_;
    llvm::Value* base = buffer_ptr(bytes->buffer);
    llvm::Type* elem = memory_type(bytes->type.element_of()); // u8 or bf16 (i16)
    const int per_word = 4 / bytes->type.bytes();
    auto word_at = [&](llvm::Value* index, llvm::Type* ty) {
        return b_.CreateAlignedLoad(ty, b_.CreateGEP(elem, base, index), llvm::Align(1));
    };
    if (lanes == 1)
        return word_at(codegen(bytes->index), b_.getInt32Ty());
    const Ramp* ramp = bytes->index.as<Ramp>();
    if (ramp && is_const_int(ramp->stride, per_word)) {
        auto* ty = llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * lanes);
        return b_.CreateBitCast(word_at(codegen(ramp->base), ty),
                                llvm::FixedVectorType::get(b_.getInt32Ty(), lanes));
    }
    llvm::Value* index = codegen(bytes->index);
    llvm::Value* r = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getInt32Ty(), lanes));
    for (int k = 0; k < lanes; ++k)
        r = b_.CreateInsertElement(
            r, word_at(b_.CreateExtractElement(index, uint64_t(k)), b_.getInt32Ty()), uint64_t(k));
    return r;
}

llvm::Value* CodeGen::visit(const Let* op) {
    llvm::Value* v = codegen(op->value);
    auto saved = vars_.find(op->var.get());
    llvm::Value* old = saved == vars_.end() ? nullptr : saved->second;
    bind(op->var.get(), v);
    llvm::Value* r = codegen(op->body);
    if (old)
        bind(op->var.get(), old);
    else
        vars_.erase(op->var.get());
    return r;
}

llvm::Value* CodeGen::visit(const TensorRead* op) {
    TESSERA_UNREACHABLE() << "tensor read of " << op->tensor.name() << " left in " << func_name_;
}

llvm::Value* CodeGen::visit(const Reduce*) {
    TESSERA_UNREACHABLE() << "reduction left in " << func_name_;
}

// ---------------------------------------------------------------------------------------------
// Statements.

void CodeGen::codegen(const Stmt& s) {
    TESSERA_CHECK(s.defined()) << "undefined statement in " << func_name_;
    switch (s.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                       \
    case IRNodeType::X:                                                                            \
        return visit(static_cast<const X*>(s.get()));
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "expression in statement position";
}

void CodeGen::visit(const LetStmt* op) {
    llvm::Value* v = codegen(op->value);
    auto saved = vars_.find(op->var.get());
    llvm::Value* old = saved == vars_.end() ? nullptr : saved->second;
    bind(op->var.get(), v);
    codegen(op->body);
    if (old)
        bind(op->var.get(), old);
    else
        vars_.erase(op->var.get());
}

void CodeGen::serial_for(const Var& loop_var, llvm::Value* begin, llvm::Value* end,
                         const Stmt& body, llvm::Value* offset) {
    // Rotated form: guard, then a do-while whose latch tests the next index. loop_var is
    // offset + index (offset null: the index itself).
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, loop_var.name() + ".loop", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, loop_var.name() + ".exit", fn_);
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), loop, exit);
    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(i64(), 2, loop_var.name());
    i->addIncoming(begin, pre);
    llvm::Value* value = offset ? b_.CreateAdd(offset, i, "", false, true) : i;
    auto saved = vars_.find(loop_var.get());
    llvm::Value* old = saved == vars_.end() ? nullptr : saved->second;
    bind(loop_var.get(), value);
    codegen(body);
    if (old)
        bind(loop_var.get(), old);
    else
        vars_.erase(loop_var.get());
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", false, true);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, end), loop, exit);
    b_.SetInsertPoint(exit);
}

void CodeGen::visit(const For* op) {
    TESSERA_CHECK(!is_gpu_kind(op->kind))
        << "GPU loop " << to_string(op->kind) << " over " << op->loop_var.name()
        << " reached the CPU backend in " << func_name_;
    TESSERA_CHECK(op->kind == ForKind::Serial || op->kind == ForKind::Parallel)
        << to_string(op->kind) << " loop over " << op->loop_var.name() << " in " << func_name_
        << " reached code generation (run prepare_for_codegen first)";
    if (op->kind == ForKind::Parallel)
        return parallel_for(op);
    llvm::Value* min = codegen(op->min);
    llvm::Value* extent = codegen(op->extent);
    serial_for(op->loop_var, min, b_.CreateAdd(min, extent, "", false, true), op->body, nullptr);
}

void CodeGen::parallel_for(const For* op) {
    // What the body needs from here, in a fixed order: min, buffers, then scalars.
    FreeVars fv;
    fv.bound.insert(op->loop_var.get());
    fv.visit(op->body);
    llvm::Value* min = codegen(op->min);
    llvm::Value* extent = codegen(op->extent);
    std::vector<llvm::Value*> captured{min};
    std::vector<llvm::Type*> captured_types{i64()};
    for (const Buffer& b : fv.buffers) {
        captured.push_back(buffer_ptr(b));
        captured_types.push_back(ptr());
    }
    for (const Variable* v : fv.vars) {
        auto it = vars_.find(v);
        TESSERA_CHECK(it != vars_.end()) << "free variable " << v->name << " in " << func_name_;
        captured.push_back(it->second);
        captured_types.push_back(it->second->getType());
    }
    auto* ctx_ty = llvm::StructType::get(ctx_, captured_types);

    // The outlined body: (begin, end, min, buffers..., scalars...), buffers noalias.
    const std::string name = func_name_ + ".par" + std::to_string(parallel_count_++);
    std::vector<llvm::Type*> body_params{i64(), i64()};
    body_params.insert(body_params.end(), captured_types.begin(), captured_types.end());
    llvm::Function* body_fn = new_function(
        name + ".body", llvm::FunctionType::get(b_.getVoidTy(), body_params, false), false);
    for (size_t i = 0; i < fv.buffers.size(); ++i) {
        const Buffer& b = fv.buffers[i];
        unsigned arg = static_cast<unsigned>(3 + i);
        body_fn->addParamAttr(arg, llvm::Attribute::NoAlias);
        body_fn->addParamAttr(arg, llvm::Attribute::getWithDereferenceableBytes(
                                       ctx_, b->num_elements() * b.dtype().bytes()));
        if (allocated_.count(b.get()))
            body_fn->addParamAttr(arg, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    }

    // The chunk the runtime calls: unpacks ctx and calls the body.
    auto* chunk_ty = llvm::FunctionType::get(b_.getVoidTy(), {i64(), i64(), ptr()}, false);
    llvm::Function* chunk_fn = new_function(name, chunk_ty, false);
    {
        llvm::IRBuilder<>::InsertPointGuard guard(b_);
        b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", chunk_fn));
        std::vector<llvm::Value*> args{chunk_fn->getArg(0), chunk_fn->getArg(1)};
        for (size_t i = 0; i < captured.size(); ++i) {
            llvm::Value* slot = b_.CreateStructGEP(ctx_ty, chunk_fn->getArg(2), i);
            args.push_back(b_.CreateLoad(captured_types[i], slot));
        }
        b_.CreateCall(body_fn, args);
        b_.CreateRetVoid();
    }

    // Generate the body with a fresh function state, then restore ours.
    {
        llvm::IRBuilder<>::InsertPointGuard guard(b_);
        llvm::Function* saved_fn = fn_;
        auto saved_vars = std::move(vars_);
        auto saved_buffers = std::move(buffers_);
        vars_.clear();
        buffers_.clear();
        fn_ = body_fn;
        b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body_fn));
        size_t arg = 3;
        for (const Buffer& b : fv.buffers)
            buffers_[b.get()] = body_fn->getArg(arg++);
        for (const Variable* v : fv.vars)
            bind(v, body_fn->getArg(arg++));
        serial_for(op->loop_var, body_fn->getArg(0), body_fn->getArg(1), op->body,
                   body_fn->getArg(2));
        b_.CreateRetVoid();
        fn_ = saved_fn;
        vars_ = std::move(saved_vars);
        buffers_ = std::move(saved_buffers);
    }

    // Here: pack ctx and launch.
    llvm::Value* ctx = alloca_in_entry(ctx_ty, nullptr, 8);
    for (size_t i = 0; i < captured.size(); ++i)
        b_.CreateStore(captured[i], b_.CreateStructGEP(ctx_ty, ctx, i));
    llvm::FunctionCallee launch =
        mod_.getOrInsertFunction("tessera_parallel_for", b_.getInt32Ty(), i64(), ptr(), ptr());
    b_.CreateCall(launch, {extent, chunk_fn, ctx});
}

void CodeGen::visit(const Store* op) {
    store(op->buffer, codegen(op->value), op->index, op->value.type().lanes);
}

void CodeGen::visit(const Allocate* op) {
    const Buffer& buf = op->buffer;
    TESSERA_CHECK(!buffers_.count(buf.get()))
        << "buffer " << buf.name() << " allocated twice in " << func_name_;
    llvm::Type* mt = memory_type(buf.dtype());
    int64_t n = buf->num_elements();
    int64_t bytes = n * buf.dtype().bytes();
    TESSERA_CHECK(op->scope != MemoryScope::Shared && op->scope != MemoryScope::Local)
        << "GPU " << to_string(op->scope) << " buffer " << buf.name()
        << " reached the CPU backend in " << func_name_;
    bool heap = op->scope == MemoryScope::Heap || bytes > kMaxStackBytes;
    llvm::Value* p = nullptr;
    llvm::FunctionCallee free_fn;
    if (!heap) {
        p = alloca_in_entry(llvm::ArrayType::get(mt, n), nullptr, 64);
    } else {
        llvm::FunctionCallee alloc_fn = mod_.getOrInsertFunction("tessera_alloc", ptr(), i64());
        if (auto* f = llvm::dyn_cast<llvm::Function>(alloc_fn.getCallee())) {
            f->addRetAttr(llvm::Attribute::NoAlias);
            f->addRetAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
            f->setDoesNotThrow();
        }
        free_fn = mod_.getOrInsertFunction("tessera_free", b_.getVoidTy(), ptr());
        p = b_.CreateCall(alloc_fn, {b_.getInt64(bytes)}, buf.name());
    }
    buffers_[buf.get()] = p;
    allocated_.insert(buf.get());
    codegen(op->body);
    buffers_.erase(buf.get());
    if (heap)
        b_.CreateCall(free_fn, {p});
}

void CodeGen::visit(const IfThenElse* op) {
    llvm::Value* c = codegen(op->condition);
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
    auto* done_bb = llvm::BasicBlock::Create(ctx_, "endif", fn_);
    auto* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn_) : done_bb;
    b_.CreateCondBr(c, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    codegen(op->then_case);
    b_.CreateBr(done_bb);
    if (op->else_case.defined()) {
        b_.SetInsertPoint(else_bb);
        codegen(op->else_case);
        b_.CreateBr(done_bb);
    }
    b_.SetInsertPoint(done_bb);
}

void CodeGen::visit(const Seq* op) {
    for (const Stmt& s : op->stmts)
        codegen(s);
}

void CodeGen::visit(const Evaluate* op) {
    const Call* call = op->value.as<Call>();
    if (call && is_tile_matmul(call->op))
        return tile_matmul(TileMatmul::from_call(*call));
    codegen(op->value);
}

void CodeGen::tile_matmul(const TileMatmul& t) {
    const bool bf16 = t.product == CallOp::Dot2BF16;
    if (!has_tiles_for(bf16 ? CallOp::TileMatmulBF16 : CallOp::TileMatmulU8S8))
        return codegen(t.expand());
    auto i16 = [&](int64_t v) { return b_.getInt16(static_cast<uint16_t>(v)); };
    // The address of element `offset` (an i64 value) past the first one of a Load operand.
    auto address = [&](const Expr& operand, llvm::Value* offset) {
        const Load* l = operand.as<Load>();
        llvm::Value* index = b_.CreateAdd(codegen(l->index), offset, "", false, true);
        return b_.CreateGEP(memory_type(l->buffer.dtype()), buffer_ptr(l->buffer), index);
    };
    // Rows of `words` words, `ld` elements of `operand` (i32 words or, A only, bytes) apart.
    auto load_tile = [&](int64_t rows, int64_t words, llvm::Value* p, int64_t ld,
                         const Expr& operand) {
        const int64_t bytes = operand.as<Load>()->buffer.dtype().bytes();
        return intrinsic(llvm::Intrinsic::x86_tileloadd64_internal, {},
                         {i16(rows), i16(4 * words), p, b_.getInt64(bytes * ld)});
    };
    const size_t n_acc = static_cast<size_t>(t.m_tiles * t.n_tiles);
    auto c_offset = [&](int64_t mt, int64_t nt) {
        return b_.getInt64(mt * t.c_m_tile + nt * t.c_n_tile);
    };
    std::vector<llvm::Value*> acc;
    for (int64_t mt = 0; mt < t.m_tiles; ++mt)
        for (int64_t nt = 0; nt < t.n_tiles; ++nt)
            acc.push_back(load_tile(t.m, t.n, address(t.c, c_offset(mt, nt)), t.ldc, t.c));

    // One loop over all reduce steps (its index split into the loops' indices): the
    // accumulators stay in tile registers, carried by phis.
    int64_t steps = 1;
    for (const auto& l : t.loops)
        steps *= l.extent;
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, "tile.loop", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "tile.exit", fn_);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* step = b_.CreatePHI(i64(), 2, "tile.step");
    step->addIncoming(b_.getInt64(0), pre);
    std::vector<llvm::PHINode*> phis;
    for (size_t i = 0; i < n_acc; ++i) {
        phis.push_back(b_.CreatePHI(acc[i]->getType(), 2));
        phis.back()->addIncoming(acc[i], pre);
    }
    llvm::Value* a_off = b_.getInt64(0);
    llvm::Value* b_off = b_.getInt64(0);
    llvm::Value* rest = step;
    for (size_t l = t.loops.size(); l-- > 0;) {
        llvm::Value* ext = b_.getInt64(t.loops[l].extent);
        llvm::Value* r = b_.CreateURem(rest, ext);
        rest = b_.CreateUDiv(rest, ext);
        a_off = b_.CreateAdd(a_off, b_.CreateMul(r, b_.getInt64(t.loops[l].a_stride)));
        b_off = b_.CreateAdd(b_off, b_.CreateMul(r, b_.getInt64(t.loops[l].b_stride)));
    }
    std::vector<llvm::Value*> a_tiles, b_tiles;
    for (int64_t mt = 0; mt < t.m_tiles; ++mt)
        a_tiles.push_back(load_tile(
            t.m, t.k, address(t.a, b_.CreateAdd(a_off, b_.getInt64(mt * t.a_m_tile))), t.lda,
            t.a));
    for (int64_t nt = 0; nt < t.n_tiles; ++nt)
        b_tiles.push_back(load_tile(
            t.k, t.n, address(t.b, b_.CreateAdd(b_off, b_.getInt64(nt * t.b_n_tile))), t.ldb,
            t.b));
    std::vector<llvm::Value*> next_acc;
    for (int64_t mt = 0; mt < t.m_tiles; ++mt)
        for (int64_t nt = 0; nt < t.n_tiles; ++nt)
            next_acc.push_back(
                intrinsic(bf16 ? llvm::Intrinsic::x86_tdpbf16ps_internal
                               : llvm::Intrinsic::x86_tdpbusd_internal,
                          {},
                          {i16(t.m), i16(4 * t.n), i16(4 * t.k), phis[mt * t.n_tiles + nt],
                           a_tiles[mt], b_tiles[nt]}));
    llvm::Value* next = b_.CreateAdd(step, b_.getInt64(1), "", true, true);
    step->addIncoming(next, b_.GetInsertBlock());
    for (size_t i = 0; i < n_acc; ++i)
        phis[i]->addIncoming(next_acc[i], b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(steps)), loop, exit);
    b_.SetInsertPoint(exit);
    for (int64_t mt = 0; mt < t.m_tiles; ++mt)
        for (int64_t nt = 0; nt < t.n_tiles; ++nt)
            intrinsic(llvm::Intrinsic::x86_tilestored64_internal, {},
                      {i16(t.m), i16(4 * t.n), address(t.c, c_offset(mt, nt)),
                       b_.getInt64(4 * t.ldc), next_acc[mt * t.n_tiles + nt]});
}

} // namespace

std::unique_ptr<llvm::Module> codegen_llvm(const std::vector<LoweredFunc>& funcs,
                                           llvm::LLVMContext& ctx, const TargetSpec& spec,
                                           const CompileOptions& opts) {
    auto m = std::make_unique<llvm::Module>("tessera", ctx);
    CodeGen cg(ctx, *m, spec, opts);
    for (const LoweredFunc& f : funcs)
        cg.add_function(f);
    return m;
}

void check_function_names(const std::vector<LoweredFunc>& funcs) {
    std::unordered_set<std::string> seen;
    for (const LoweredFunc& f : funcs) {
        TESSERA_CHECK(!f.name.empty()) << "function without a name";
        for (char c : f.name)
            TESSERA_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '_')
                << "function name '" << f.name << "' is not a C identifier";
        TESSERA_CHECK(!std::isdigit(static_cast<unsigned char>(f.name[0])))
            << "function name '" << f.name << "' starts with a digit";
        TESSERA_CHECK(seen.insert(f.name).second) << "two functions named '" << f.name << "'";
        // Generated code calls these; a kernel of the same name would capture the calls.
        static const char* const kReserved[] = {"tessera_parallel_for",
                                                "tessera_alloc",
                                                "tessera_free",
                                                "tessera_enable_cpu_tiles",
                                                "exp",
                                                "expf",
                                                "log",
                                                "logf",
                                                "pow",
                                                "powf",
                                                "sqrt",
                                                "sqrtf",
                                                "tanh",
                                                "tanhf",
                                                "erf",
                                                "erff",
                                                "floor",
                                                "floorf",
                                                "ceil",
                                                "ceilf",
                                                "roundeven",
                                                "roundevenf",
                                                "fabs",
                                                "fabsf",
                                                "memcpy",
                                                "memset"};
        for (const char* r : kReserved)
            TESSERA_CHECK(f.name != r) << "function name '" << f.name << "' is reserved";
    }
}

} // namespace tessera::backend::detail
