// Loop IR to CUDA C: one kernel per top-level statement, launch dimensions from the bound
// loops, barriers around cooperative fetches into shared memory (contract: backends/cuda.h).
#include "tessera/backends/cuda.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/warp_mma.h"
#include "tessera/lower/pipeline_fetches.h"
#include "tessera/lower/warp_mma.h"
#include "tessera/support/error.h"

namespace tessera::backend::cuda {
namespace {

using namespace ir;

/// Helpers every translation unit starts with: floor division and modulo (the IR's integer
/// semantics, C++ truncates), min/max for every type, and f16 through cuda_fp16.h.
const char* kPrelude = R"(#include <cuda_fp16.h>
template <typename T> __device__ __forceinline__ T tessera_floordiv(T a, T b) {
    T q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T tessera_floormod(T a, T b) {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ float tessera_floormod(float a, float b) { return a - b * floorf(a / b); }
__device__ __forceinline__ double tessera_floormod(double a, double b) { return a - b * floor(a / b); }
template <typename T> __device__ __forceinline__ T tessera_min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T tessera_max(T a, T b) { return a < b ? b : a; }
// N elements of T loaded or stored as one access (N * sizeof(T) of 8 or 16 bytes: four or eight
// f16 lanes, which have no CUDA vector type).
template <typename T, int N> struct __align__(sizeof(T) * N) tessera_vector { T lane[N]; };
)";

/// Added to the prelude when a kernel calls CallOp::Dot4U8S8. PTX's dp4a takes the signedness
/// of each operand (CUDA's __dp4a only same-signed pairs); the loop is the same sum for
/// architectures before sm_61 and for the CPU emulation of the tests.
const char* kDot4Prelude = R"(__device__ __forceinline__ int tessera_dot4_u8s8(int a, int b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 610
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(0));
    return d;
#else
    int d = 0;
    for (int j = 0; j < 32; j += 8)
        d += (int)(((unsigned)a >> j) & 0xffu) * (int)(signed char)(((unsigned)b >> j) & 0xffu);
    return d;
#endif
}
)";

/// Added to the prelude when a kernel has a WarpMma: one tensor-core product per call on the
/// 32-bit registers mma.sync takes (f16 operands two per register, the first in the low half:
/// one 32-bit load where the pair is adjacent in memory, else tessera_pack_half2; f32 operands
/// rounded to TF32 by cvt.rna). Device code only: the tests' CPU emulation
/// defines the same functions from the PTX ISA's fragment layouts. mma.sync of these shapes
/// needs sm_80 or newer.
const char* kWarpMmaPrelude = R"(#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ < 800
#error "warp_mma (mma.sync m16n8k16 / m16n8k8) needs sm_80 or newer"
#endif
__device__ __forceinline__ unsigned tessera_pack_half2(__half lo, __half hi) {
    return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);
}
__device__ __forceinline__ void tessera_mma_f16(float& d0, float& d1, float& d2, float& d3,
    unsigned a01, unsigned a23, unsigned a45, unsigned a67, unsigned b01, unsigned b23) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a01), "r"(a23), "r"(a45), "r"(a67), "r"(b01), "r"(b23));
}
__device__ __forceinline__ unsigned tessera_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ void tessera_mma_tf32(float& d0, float& d1, float& d2, float& d3,
    float a0, float a1, float a2, float a3, float b0, float b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(tessera_tf32(a0)), "r"(tessera_tf32(a1)), "r"(tessera_tf32(a2)),
          "r"(tessera_tf32(a3)), "r"(tessera_tf32(b0)), "r"(tessera_tf32(b1)));
}
#endif
)";

/// Added to the prelude when a kernel reduces across threads (CallOp::GpuBlockSum/Max/Min).
const char* kBlockReducePrelude = R"(struct tessera_sum_op { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct tessera_max_op { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; } };
struct tessera_min_op { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; } };
// Combines v over lanes [0, valid) of the calling warp into lane 0; lanes [0, active) call it.
template <typename T, typename Op>
__device__ __forceinline__ T tessera_warp_reduce(T v, Op op, unsigned active, unsigned valid) {
    const unsigned mask = active >= 32 ? 0xffffffffu : ((1u << active) - 1u);
    const unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned off = 16; off > 0; off /= 2) {
        const T other = __shfl_down_sync(mask, v, off);
        if (lane + off < valid) v = op(v, other);
    }
    return v;
}
// Combines v over the block's `threads` threads (threadIdx.x; blockDim.y = blockDim.z = 1):
// shuffles within each warp, the warps' values through shared memory, then shuffles in warp 0.
// Every thread of the block calls it and gets the result.
template <typename T, typename Op>
__device__ __forceinline__ T tessera_block_reduce(T v, Op op, unsigned threads) {
    __shared__ T warp_vals[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned warps = (threads + 31) / 32;
    const unsigned in_warp = threads - warp * 32 < 32 ? threads - warp * 32 : 32;
    v = tessera_warp_reduce(v, op, in_warp, in_warp);
    __syncthreads(); // an earlier reduction's readers of warp_vals are done
    if (lane == 0) warp_vals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = warp_vals[lane < warps ? lane : 0];
        w = tessera_warp_reduce(w, op, in_warp, warps);
        if (lane == 0) warp_vals[0] = w;
    }
    __syncthreads();
    return warp_vals[0];
}
)";

std::string scalar_type(DataType t) {
    TESSERA_CHECK(t.is_scalar()) << "vector type " << t << " reached the CUDA backend";
    if (t.is_bool())
        return "bool";
    switch (t.code) {
    case DataType::Code::Float:
        if (t.bits == 16)
            return "__half";
        if (t.bits == 32)
            return "float";
        if (t.bits == 64)
            return "double";
        break;
    case DataType::Code::BFloat:
        throw UserError() << "bf16 values are not supported by the CUDA backend";
    case DataType::Code::Int:
        if (t.bits == 8)
            return "signed char";
        if (t.bits == 16)
            return "short";
        if (t.bits == 32)
            return "int";
        if (t.bits == 64)
            return "long long";
        break;
    case DataType::Code::UInt:
        if (t.bits == 8)
            return "unsigned char";
        if (t.bits == 16)
            return "unsigned short";
        if (t.bits == 32)
            return "unsigned int";
        if (t.bits == 64)
            return "unsigned long long";
        break;
    }
    TESSERA_UNREACHABLE() << "type " << t << " has no CUDA equivalent";
}

/// Index into LaunchDims of a bound kind: 0..2 blocks x..z, 3..5 threads x..z; -1 otherwise.
int bound_axis(ForKind k) {
    switch (k) {
    case ForKind::GpuBlockX: return 0;
    case ForKind::GpuBlockY: return 1;
    case ForKind::GpuBlockZ: return 2;
    case ForKind::GpuThreadX: return 3;
    case ForKind::GpuThreadY: return 4;
    case ForKind::GpuThreadZ: return 5;
    case ForKind::Serial:
    case ForKind::Parallel:
    case ForKind::Vectorized:
    case ForKind::Unrolled:
    case ForKind::TileMatmul:
    case ForKind::WarpMma: // lowered before the kernels are written
    case ForKind::Pipelined:
    case ForKind::GpuVThread: return -1;
    }
    return -1;
}

const char* hardware_index(int axis) {
    static const char* names[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                  "threadIdx.x", "threadIdx.y", "threadIdx.z"};
    return names[axis];
}

[[noreturn]] void schedule_error(const std::string& msg) { throw ScheduleError(msg); }

// ---- vector accesses ------------------------------------------------------------------------

/// The CUDA vector type of `lanes` elements of t that one access may load or store: float2,
/// float4, __half2, or tessera_vector<__half, 4 or 8> (8 and 16 bytes); "" when there is none.
std::string vector_type(DataType t, int64_t lanes) {
    if (t == DataType::f32() && (lanes == 2 || lanes == 4))
        return lanes == 2 ? "float2" : "float4";
    if (t == DataType::f16() && lanes == 2)
        return "__half2";
    if (t == DataType::f16() && (lanes == 4 || lanes == 8))
        return "tessera_vector<__half, " + std::to_string(lanes) + ">";
    return "";
}

/// Lane `lane` of the vector variable `name` of vector_type(t, lanes).
std::string vector_lane(const std::string& name, DataType t, int64_t lanes, int lane) {
    if (vector_type(t, lanes).rfind("tessera_vector", 0) == 0)
        return name + ".lane[" + std::to_string(lane) + "]";
    return name + "." + "xyzw"[lane];
}

/// Whether e is provably a multiple of w: a sum, difference or min/max of such terms, or a
/// product with one such factor, down to constants that w divides.
bool multiple_of(const Expr& e, int64_t w) {
    if (const auto* i = e.as<IntImm>())
        return i->value % w == 0;
    if (const auto* a = e.as<Add>())
        return multiple_of(a->a, w) && multiple_of(a->b, w);
    if (const auto* a = e.as<Sub>())
        return multiple_of(a->a, w) && multiple_of(a->b, w);
    if (const auto* a = e.as<Mul>())
        return multiple_of(a->a, w) || multiple_of(a->b, w);
    if (const auto* a = e.as<Min>())
        return multiple_of(a->a, w) && multiple_of(a->b, w);
    if (const auto* a = e.as<Max>())
        return multiple_of(a->a, w) && multiple_of(a->b, w);
    if (const auto* a = e.as<Mod>()) // x - c * floor(x / c)
        return multiple_of(a->a, w) && multiple_of(a->b, w);
    return false;
}

/// An index as a function of a vector loop's variable v in [0, lanes): base + stride * v, with
/// base independent of v; undefined base when the analysis cannot tell.
struct LaneForm {
    Expr base;
    int64_t stride = 0;
};

bool uses_var(const Expr& e, const Var& v);

/// The lane form of e. Floor division and modulo by a constant c keep it when the dividend is
/// a multiple of `lanes` plus v and `lanes` divides c: the lanes then never cross a multiple of
/// c (the fused-loop indices of a split that is a multiple of the vector width); a dividend
/// the lanes share gives a quotient and remainder they share (stride 0).
LaneForm lane_form(const Expr& e, const Var& v, int64_t lanes) {
    if (!uses_var(e, v))
        return {e, 0};
    if (e.as<Variable>() == v.get())
        return {make_zero(e.type()), 1};
    auto both = [&](const Expr& a, const Expr& b, bool add) -> LaneForm {
        const LaneForm x = lane_form(a, v, lanes), y = lane_form(b, v, lanes);
        if (!x.base.defined() || !y.base.defined())
            return {};
        return add ? LaneForm{x.base + y.base, x.stride + y.stride}
                   : LaneForm{x.base - y.base, x.stride - y.stride};
    };
    if (const auto* op = e.as<Add>())
        return both(op->a, op->b, true);
    if (const auto* op = e.as<Sub>())
        return both(op->a, op->b, false);
    if (const auto* op = e.as<Mul>()) {
        const auto* ca = op->a.as<IntImm>();
        const auto* cb = op->b.as<IntImm>();
        if (!ca && !cb)
            return {};
        const LaneForm x = lane_form(ca ? op->b : op->a, v, lanes);
        const int64_t c = ca ? ca->value : cb->value;
        if (!x.base.defined())
            return {};
        return {x.base * make_const(e.type(), c), x.stride * c};
    }
    const bool div = e.as<Div>() != nullptr, mod = e.as<Mod>() != nullptr;
    if (div || mod) {
        const Expr& a = div ? e.as<Div>()->a : e.as<Mod>()->a;
        const auto* c = (div ? e.as<Div>()->b : e.as<Mod>()->b).as<IntImm>();
        if (!c || c->value <= 0 || c->value % lanes != 0 || !e.type().is_int())
            return {};
        const LaneForm x = lane_form(a, v, lanes);
        const Expr cst = make_const(e.type(), c->value);
        if (x.base.defined() && x.stride == 0) // the same dividend in every lane
            return div ? LaneForm{Div::make(x.base, cst), 0} : LaneForm{Mod::make(x.base, cst), 0};
        if (!x.base.defined() || x.stride != 1 || !multiple_of(x.base, lanes))
            return {};
        return div ? LaneForm{Div::make(x.base, cst), 0} : LaneForm{Mod::make(x.base, cst), 1};
    }
    return {};
}

/// The base of an access `index` of a vectorized loop over v in [0, lanes): index(v = 0) when
/// index is base + v there and base is a multiple of lanes (so the lanes are one aligned
/// vector, given buffers aligned to 16 bytes); undefined otherwise.
Expr aligned_vector_base(const Expr& index, const Var& v, int64_t lanes) {
    const LaneForm f = lane_form(index, v, lanes);
    if (!f.base.defined() || f.stride != 1 || !multiple_of(f.base, lanes))
        return Expr();
    return simplify(f.base);
}

/// Whether e uses variable v.
bool uses_var(const Expr& e, const Var& v) {
    struct Finder : IRVisitor {
        const Variable* v;
        bool found = false;
        using IRVisitor::visit;
        void visit(const Variable* op) override { found = found || op == v; }
    } f;
    f.v = v.get();
    f.visit(e);
    return f.found;
}

/// The Loads of e, outer first.
std::vector<const Load*> loads_of(const Expr& e) {
    struct Finder : IRVisitor {
        std::vector<const Load*> out;
        using IRVisitor::visit;
        void visit(const Load* op) override {
            out.push_back(op);
            IRVisitor::visit(op);
        }
    } f;
    f.visit(e);
    return f.out;
}

/// The Shared buffers a statement stores to and loads from.
struct SharedAccess {
    std::unordered_set<const BufferNode*> writes, reads;
};
SharedAccess shared_access(const Stmt& s, const std::unordered_set<const BufferNode*>& shared) {
    struct Finder : IRVisitor {
        const std::unordered_set<const BufferNode*>& shared;
        SharedAccess acc;
        explicit Finder(const std::unordered_set<const BufferNode*>& sh) : shared(sh) {}
        using IRVisitor::visit;
        void visit(const Store* op) override {
            if (shared.count(op->buffer.get()))
                acc.writes.insert(op->buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Load* op) override {
            if (shared.count(op->buffer.get()))
                acc.reads.insert(op->buffer.get());
            IRVisitor::visit(op);
        }
    } f(shared);
    f.visit(s);
    return f.acc;
}

/// Launch dimensions and placement checks of one kernel's statement.
class KernelAnalysis : public IRVisitor {
  public:
    LaunchDims dims;
    int64_t shared_bytes = 0, local_bytes = 0;
    std::unordered_set<const BufferNode*> shared, private_bufs;
    using IRVisitor::visit;

    void visit(const For* op) override {
        const int axis = bound_axis(op->kind);
        if (axis < 0) {
            ++serial_depth_;
            IRVisitor::visit(op);
            --serial_depth_;
            return;
        }
        const auto* ext = op->extent.as<IntImm>();
        if (!ext)
            schedule_error("loop '" + op->loop_var.name() + "' bound to " +
                           to_string(op->kind) + " has a non-constant extent");
        if (axis < 3 && (serial_depth_ > 0 || thread_depth_ > 0))
            schedule_error("loop '" + op->loop_var.name() + "' bound to " +
                           to_string(op->kind) + " inside a serial or thread-bound loop");
        int64_t& d = axis < 3 ? dims.grid[axis] : dims.block[axis - 3];
        d = std::max(d, ext->value);
        int& depth = axis < 3 ? block_depth_ : thread_depth_;
        ++depth;
        IRVisitor::visit(op);
        --depth;
    }
    void visit(const Allocate* op) override {
        const int64_t bytes = op->buffer->num_elements() * op->buffer.dtype().bytes();
        switch (op->scope) {
        case MemoryScope::Shared:
            shared.insert(op->buffer.get());
            shared_bytes += bytes;
            break;
        case MemoryScope::Local:
        case MemoryScope::Stack:
            private_bufs.insert(op->buffer.get());
            local_bytes += bytes;
            break;
        case MemoryScope::Heap:
            schedule_error("heap buffer '" + op->buffer.name() + "' inside a kernel");
        }
        IRVisitor::visit(op);
    }
    void visit(const Call* op) override {
        // tessera_block_reduce's warp_vals: 32 values per instantiation.
        if (is_gpu_block_reduce(op->op) && reduce_types_.insert(op->type.bits).second)
            shared_bytes += 32 * op->type.bytes();
        IRVisitor::visit(op);
    }
    void visit(const Store* op) override {
        // Code outside the bound loops runs once per block or per thread: a store there to
        // memory others see would be repeated by all of them (wrong for accumulations).
        const bool private_buf = private_bufs.count(op->buffer.get()) > 0;
        const bool shared_buf = shared.count(op->buffer.get()) > 0;
        if (!private_buf && thread_depth_ == 0)
            unguarded_thread_store_ = op->buffer.name();
        if (!private_buf && !shared_buf && block_depth_ == 0)
            unguarded_block_store_ = op->buffer.name();
        IRVisitor::visit(op);
    }

    /// Throws when stores outside the bound loops would be repeated by several blocks/threads.
    void check_repeated_stores() const {
        if (dims.threads_per_block() > 1 && !unguarded_thread_store_.empty())
            schedule_error("store to '" + unguarded_thread_store_ +
                           "' outside the thread-bound loops of a multi-thread kernel");
        if (dims.blocks() > 1 && !unguarded_block_store_.empty())
            schedule_error("store to '" + unguarded_block_store_ +
                           "' outside the block-bound loops of a multi-block kernel");
    }

  private:
    int serial_depth_ = 0, block_depth_ = 0, thread_depth_ = 0;
    std::unordered_set<int> reduce_types_;
    std::string unguarded_thread_store_, unguarded_block_store_;
};

/// Writes CUDA C for one function.
class CudaWriter {
  public:
    /// index32: emit the IR's i64 (indices, loop variables) as 32-bit int, which the GPU
    /// computes natively (64-bit integer math is emulated); only when every value fits.
    CudaWriter(std::ostringstream& os, bool index32) : os_(os), index32_(index32) {}

    std::string name_of(const void* key, const std::string& hint) {
        auto it = names_.find(key);
        if (it != names_.end())
            return it->second;
        std::string base;
        for (char c : hint)
            base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
        // A prefixed base when the hint itself is reserved (a keyword, or the prelude's
        // tessera_ prefix, which no suffix can make free).
        if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || reserved(base))
            base = "v_" + base;
        std::string name = base;
        for (int k = 1; used_.count(name) || reserved(name); ++k)
            name = base + "_" + std::to_string(k);
        used_.insert(name);
        return names_[key] = name;
    }
    std::string name_of(const Buffer& b) { return name_of(b.get(), b.name()); }
    std::string name_of(const Var& v) { return name_of(v.get(), v.name()); }

    void write_kernel(const Stmt& body, const KernelInfo& k, const KernelAnalysis& a,
                      const std::vector<Buffer>& args,
                      const std::unordered_set<const BufferNode*>& stored) {
        dims_ = k.dims;
        shared_ = a.shared;
        os_ << "extern \"C\" __global__ void __launch_bounds__(" << k.dims.threads_per_block()
            << ") " << k.name << "(";
        for (size_t i = 0; i < args.size(); ++i) {
            const bool read_only = !stored.count(args[i].get());
            os_ << (i ? ", " : "") << (read_only ? "const " : "")
                << scalar_type(args[i].dtype()) << "* __restrict__ " << name_of(args[i]);
        }
        os_ << ") {\n";
        indent_ = 1;
        stmt(body);
        os_ << "}\n\n";
    }

  private:
    /// The C type of a scalar value (not of buffer elements, whose layout is fixed).
    std::string ty(DataType t) const {
        return index32_ && t == DataType::i64() ? "int" : scalar_type(t);
    }
    const char* index_type() const { return index32_ ? "int" : "long long"; }

    static bool reserved(const std::string& n) {
        static const std::unordered_set<std::string> words = {
            "int",       "float",    "double",    "char",      "short",      "long",
            "unsigned",  "signed",   "bool",      "void",      "if",         "else",
            "for",       "while",    "do",        "return",    "const",      "auto",
            "break",     "continue", "switch",    "case",      "default",    "new",
            "delete",    "this",     "class",     "struct",    "union",      "enum",
            "template",  "typename", "namespace", "using",     "static",     "extern",
            "inline",    "volatile", "register",  "sizeof",    "true",       "false",
            "threadIdx", "blockIdx", "blockDim",  "gridDim",   "warpSize",   "half",
            "min",       "max",      "exp",       "log",       "sqrt",       "floor",
            "ceil",      "pow",      "abs",       "tanh",      "erf",        "main",
            "rint",      "rintf",
            "operator",  "private",  "public",    "protected", "friend",     "virtual",
            "asm",       "goto",     "typedef",   "mutable",   "explicit",   "export"};
        return words.count(n) > 0 || n.rfind("tessera_", 0) == 0 || n.rfind("__", 0) == 0;
    }

    void line_start() {
        for (int i = 0; i < indent_; ++i)
            os_ << "    ";
    }

    // ---- expressions ------------------------------------------------------------------------
    std::string expr(const Expr& e) {
        TESSERA_CHECK(e.type().is_scalar())
            << "vector expression of type " << e.type()
            << " reached the CUDA backend (do not vectorize for it)";
        switch (e.node_type()) {
        case IRNodeType::IntImm: return int_imm(e.as<IntImm>());
        case IRNodeType::FloatImm: return float_imm(e.as<FloatImm>());
        case IRNodeType::Variable:
            if (e.as<Variable>() == lane_var_)
                return std::to_string(lane_); // a lane of a vector access loop
            return name_of(Var(e.as<Variable>()));
        case IRNodeType::Cast: return cast(e.type(), e.as<Cast>()->value);
        case IRNodeType::Add: return binary(e.as<Add>(), "+");
        case IRNodeType::Sub: return binary(e.as<Sub>(), "-");
        case IRNodeType::Mul: return binary(e.as<Mul>(), "*");
        case IRNodeType::Div: {
            const auto* op = e.as<Div>();
            if (e.type().is_int())
                return call2("tessera_floordiv", op->a, op->b);
            return binary(op, "/");
        }
        case IRNodeType::Mod: {
            const auto* op = e.as<Mod>();
            if (e.type().is_float() && e.type().bits == 16)
                return "__float2half_rn(tessera_floormod(__half2float(" + expr(op->a) +
                       "), __half2float(" + expr(op->b) + ")))";
            if (e.type().is_int() || e.type().is_float())
                return call2("tessera_floormod", op->a, op->b);
            return binary(op, "%");
        }
        case IRNodeType::Min: return call2("tessera_min", e.as<Min>()->a, e.as<Min>()->b);
        case IRNodeType::Max: return call2("tessera_max", e.as<Max>()->a, e.as<Max>()->b);
        case IRNodeType::EQ: return binary(e.as<EQ>(), "==");
        case IRNodeType::NE: return binary(e.as<NE>(), "!=");
        case IRNodeType::LT: return binary(e.as<LT>(), "<");
        case IRNodeType::LE: return binary(e.as<LE>(), "<=");
        case IRNodeType::GT: return binary(e.as<GT>(), ">");
        case IRNodeType::GE: return binary(e.as<GE>(), ">=");
        case IRNodeType::And: return binary(e.as<And>(), "&&");
        case IRNodeType::Or: return binary(e.as<Or>(), "||");
        case IRNodeType::Not: return "(!" + expr(e.as<Not>()->a) + ")";
        case IRNodeType::Select: {
            const auto* op = e.as<Select>();
            return "(" + expr(op->condition) + " ? " + expr(op->true_value) + " : " +
                   expr(op->false_value) + ")";
        }
        case IRNodeType::Load: {
            const auto* op = e.as<Load>();
            auto vec = vector_loads_.find(op);
            if (vec != vector_loads_.end())
                return vector_lane(vec->second, op->buffer.dtype(), vector_lanes_, lane_);
            return name_of(op->buffer) + "[" + expr(op->index) + "]";
        }
        case IRNodeType::Call: return call(e.as<Call>());
        case IRNodeType::Let: {
            // A device lambda keeps the binding an expression.
            const auto* op = e.as<Let>();
            return "([&]() { const " + ty(op->var.type()) + " " + name_of(op->var) +
                   " = " + expr(op->value) + "; return " + expr(op->body) + "; }())";
        }
        case IRNodeType::Ramp:
        case IRNodeType::Broadcast:
        case IRNodeType::VectorReduce:
        case IRNodeType::TensorRead:
        case IRNodeType::Reduce:
        case IRNodeType::LetStmt:
        case IRNodeType::For:
        case IRNodeType::Store:
        case IRNodeType::Allocate:
        case IRNodeType::IfThenElse:
        case IRNodeType::Seq:
        case IRNodeType::Evaluate: break;
        }
        TESSERA_UNREACHABLE() << node_type_name(e.node_type())
                              << " expression reached the CUDA backend";
    }

    std::string int_imm(const IntImm* op) const {
        const DataType t = op->type;
        if (t.is_bool())
            return op->value ? "true" : "false";
        if (t == DataType::i64() && index32_)
            return std::to_string(op->value); // fits: checked by fits_in_index32
        if (t == DataType::i64()) {
            if (op->value == INT64_MIN)
                return "(-9223372036854775807LL - 1)";
            return std::to_string(op->value) + "LL";
        }
        if (t == DataType::i32())
            return op->value == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(op->value);
        return "((" + scalar_type(t) + ")" + std::to_string(op->value) + "LL)";
    }

    static std::string float_imm(const FloatImm* op) {
        const DataType t = op->type;
        const double v = op->value;
        std::string text;
        if (std::isnan(v)) {
            text = "__int_as_float(0x7fc00000)";
        } else if (std::isinf(v)) {
            text = v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
        } else {
            char buf[64];
            std::snprintf(buf, sizeof buf, t.bits == 64 ? "%.17g" : "%.9g", v);
            text = buf;
            if (text.find_first_of(".e") == std::string::npos)
                text += ".0";
            if (t.bits != 64)
                text += "f";
        }
        if (t.bits == 16)
            return "__float2half_rn(" + text + ")";
        if (t.bits == 64 && (std::isnan(v) || std::isinf(v)))
            return "((double)" + text + ")";
        return text;
    }

    std::string cast(DataType to, const Expr& value) {
        const DataType from = value.type();
        const std::string x = expr(value);
        if (from == to)
            return x;
        const bool from_half = from.is_float() && from.bits == 16;
        const bool to_half = to.is_float() && to.bits == 16;
        if (to_half)
            return "__float2half_rn((float)(" + x + "))";
        if (from_half)
            return to.is_bool() ? "(__half2float(" + x + ") != 0.0f)"
                                : "((" + ty(to) + ")__half2float(" + x + "))";
        if (to.is_bool())
            return "(" + x + " != 0)";
        return "((" + ty(to) + ")(" + x + "))";
    }

    template <typename T> std::string binary(const T* op, const char* sym) {
        return "(" + expr(op->a) + " " + sym + " " + expr(op->b) + ")";
    }
    std::string call2(const char* fn, const Expr& a, const Expr& b) {
        return std::string(fn) + "(" + expr(a) + ", " + expr(b) + ")";
    }

    std::string call(const Call* op) {
        const DataType t = op->type;
        if (op->op == CallOp::Prefetch)
            return "0"; // a hint for CPUs; GPUs hide latency with threads
        if (is_gpu_block_reduce(op->op))
            return block_reduce(op);
        TESSERA_CHECK(!is_tile_matmul(op->op))
            << to_string(op->op) << " (CPU matrix tiles) reached the CUDA backend";
        if (op->op == CallOp::BytesAsWord) { // the bytes one by one: no alignment assumed
            const Load* l = op->args[0].as<Load>();
            TESSERA_CHECK(l) << "bytes_as_word of a non-Load";
            const std::string p = "(&" + name_of(l->buffer) + "[" + expr(l->index) + "])";
            std::string w;
            for (int j = 0; j < 4; ++j)
                w += std::string(j ? " | " : "") + "((unsigned)" + p + "[" + std::to_string(j) +
                     "] << " + std::to_string(8 * j) + ")";
            return "((int)(" + w + "))";
        }
        if (op->op == CallOp::Abs && !t.is_float()) {
            const std::string x = expr(op->args[0]);
            return t.is_int() ? "(" + x + " < 0 ? -" + x + " : " + x + ")" : x;
        }
        const bool f64 = t.bits == 64, f16 = t.bits == 16;
        auto arg = [&](size_t i) {
            const std::string x = expr(op->args[i]);
            return f16 ? "__half2float(" + x + ")" : x;
        };
        auto fn = [&](const char* name32, const char* name64) {
            return std::string(f64 ? name64 : name32);
        };
        std::string r;
        switch (op->op) {
        case CallOp::Exp: r = fn("expf", "exp") + "(" + arg(0) + ")"; break;
        case CallOp::Log: r = fn("logf", "log") + "(" + arg(0) + ")"; break;
        case CallOp::Sqrt: r = fn("sqrtf", "sqrt") + "(" + arg(0) + ")"; break;
        case CallOp::Tanh: r = fn("tanhf", "tanh") + "(" + arg(0) + ")"; break;
        case CallOp::Erf: r = fn("erff", "erf") + "(" + arg(0) + ")"; break;
        case CallOp::Abs: r = fn("fabsf", "fabs") + "(" + arg(0) + ")"; break;
        case CallOp::Floor: r = fn("floorf", "floor") + "(" + arg(0) + ")"; break;
        case CallOp::RoundEven: r = fn("rintf", "rint") + "(" + arg(0) + ")"; break;
        case CallOp::Ceil: r = fn("ceilf", "ceil") + "(" + arg(0) + ")"; break;
        case CallOp::Pow: r = fn("powf", "pow") + "(" + arg(0) + ", " + arg(1) + ")"; break;
        case CallOp::Ldexp:
            r = fn("ldexpf", "ldexp") + "(" + arg(0) + ", " + expr(op->args[1]) + ")";
            break;
        case CallOp::Dot4U8S8: r = call2("tessera_dot4_u8s8", op->args[0], op->args[1]); break;
        case CallOp::Dot2BF16:
            throw UserError() << "dot2_bf16 (bf16 words) is not supported by the CUDA backend";
        case CallOp::Prefetch:
        case CallOp::TileMatmulU8S8:
        case CallOp::TileMatmulBF16:
        case CallOp::BytesAsWord:
        case CallOp::GpuBlockSum:
        case CallOp::GpuBlockMax:
        case CallOp::GpuBlockMin:
        case CallOp::WarpMma: break; // a statement (warp_mma())
        }
        return f16 ? "__float2half_rn(" + r + ")" : r;
    }

    /// A cross-thread reduction: the prelude's tessera_block_reduce over the block's threads,
    /// which every thread must reach (barriers inside).
    std::string block_reduce(const Call* op) {
        if (thread_depth_ == 0 || divergent_ > 0)
            schedule_error(std::string(to_string(op->op)) +
                           (thread_depth_ == 0 ? " outside the thread-bound loops"
                                               : " inside a branch that threads may take "
                                                 "differently"));
        if (dims_.block[1] != 1 || dims_.block[2] != 1)
            schedule_error(std::string(to_string(op->op)) +
                           " in a block with threadIdx.y or threadIdx.z");
        const char* combiner = op->op == CallOp::GpuBlockSum   ? "tessera_sum_op()"
                               : op->op == CallOp::GpuBlockMax ? "tessera_max_op()"
                                                               : "tessera_min_op()";
        return "tessera_block_reduce(" + expr(op->args[0]) + ", " + combiner + ", " +
               std::to_string(dims_.block[0]) + "u)";
    }

    /// One 32-bit register of two f16 fragment elements (lo in the low half): one 32-bit load
    /// when both are loads of adjacent elements of one shared or global buffer at an even index
    /// (4-byte aligned, given aligned buffers), else the two halves packed.
    std::string half_pair(const Expr& lo, const Expr& hi) {
        const Load* a = lo.as<Load>();
        const Load* b = hi.as<Load>();
        if (a && b && a->buffer.get() == b->buffer.get() && !private_.count(a->buffer.get()) &&
            is_const_int(simplify(b->index - a->index), 1) && multiple_of(a->index, 2))
            return "*reinterpret_cast<const unsigned*>(&" + name_of(a->buffer) + "[" +
                   expr(a->index) + "])";
        return "tessera_pack_half2(" + expr(lo) + ", " + expr(hi) + ")";
    }

    /// A tensor-core product: the prelude's tessera_mma_f16 / tessera_mma_tf32 on this lane's
    /// accumulators (as references) and fragment registers. All 32 lanes of each warp must
    /// reach it together, and a warp must be one row of threadIdx.x: blockDim.x is 32.
    void warp_mma(const WarpMma& w) {
        if (thread_depth_ == 0 || divergent_ > 0)
            schedule_error(std::string("warp_mma ") +
                           (thread_depth_ == 0 ? "outside the thread-bound loops"
                                               : "inside a branch that threads may take "
                                                 "differently"));
        if (dims_.block[0] != WarpMma::kLanes)
            schedule_error("warp_mma in a block of " + std::to_string(dims_.block[0]) +
                           " threads along x (a warp is 32 lanes of threadIdx.x)");
        line_start();
        os_ << "tessera_mma_" << to_string(w.kind) << "(";
        const char* sep = "";
        for (const Expr& c : w.c) {
            const Load* l = c.as<Load>();
            os_ << sep << name_of(l->buffer) << "[" << expr(l->index) << "]";
            sep = ", ";
        }
        for (const auto* part : {&w.a, &w.b})
            for (size_t q = 0; q < part->size(); q += w.kind == MmaKind::F16 ? 2 : 1)
                os_ << ", "
                    << (w.kind == MmaKind::F16 ? half_pair((*part)[q], (*part)[q + 1])
                                               : expr((*part)[q]));
        os_ << ");\n";
    }

    // ---- statements -------------------------------------------------------------------------
    void stmt(const Stmt& s) {
        switch (s.node_type()) {
        case IRNodeType::LetStmt: {
            const auto* op = s.as<LetStmt>();
            line_start();
            os_ << "{\n";
            ++indent_;
            line_start();
            os_ << "const " << ty(op->var.type()) << " " << name_of(op->var) << " = "
                << expr(op->value) << ";\n";
            stmt(op->body);
            --indent_;
            line_start();
            os_ << "}\n";
            return;
        }
        case IRNodeType::For: return loop(s.as<For>());
        case IRNodeType::Store: {
            const auto* op = s.as<Store>();
            line_start();
            os_ << name_of(op->buffer) << "[" << expr(op->index) << "] = " << expr(op->value)
                << ";\n";
            return;
        }
        case IRNodeType::Allocate: return allocate(s.as<Allocate>());
        case IRNodeType::IfThenElse: {
            const auto* op = s.as<IfThenElse>();
            const bool divergent = thread_depth_ > 0;
            divergent_ += divergent;
            line_start();
            os_ << "if (" << expr(op->condition) << ") {\n";
            block(op->then_case);
            if (op->else_case.defined()) {
                line_start();
                os_ << "} else {\n";
                block(op->else_case);
            }
            line_start();
            os_ << "}\n";
            divergent_ -= divergent;
            return;
        }
        case IRNodeType::Seq: return seq(s.as<Seq>());
        case IRNodeType::Evaluate: {
            const auto* call_node = s.as<Evaluate>()->value.as<Call>();
            if (call_node && call_node->op == CallOp::WarpMma)
                return warp_mma(WarpMma::from_call(*call_node));
            TESSERA_CHECK(call_node && call_node->op == CallOp::Prefetch)
                << "Evaluate of a non-prefetch reached the CUDA backend";
            return; // prefetch hints are dropped
        }
        case IRNodeType::IntImm:
        case IRNodeType::FloatImm:
        case IRNodeType::Variable:
        case IRNodeType::Cast:
        case IRNodeType::Add:
        case IRNodeType::Sub:
        case IRNodeType::Mul:
        case IRNodeType::Div:
        case IRNodeType::Mod:
        case IRNodeType::Min:
        case IRNodeType::Max:
        case IRNodeType::EQ:
        case IRNodeType::NE:
        case IRNodeType::LT:
        case IRNodeType::LE:
        case IRNodeType::GT:
        case IRNodeType::GE:
        case IRNodeType::And:
        case IRNodeType::Or:
        case IRNodeType::Not:
        case IRNodeType::Select:
        case IRNodeType::Load:
        case IRNodeType::Ramp:
        case IRNodeType::Broadcast:
        case IRNodeType::VectorReduce:
        case IRNodeType::Call:
        case IRNodeType::Let:
        case IRNodeType::TensorRead:
        case IRNodeType::Reduce: break;
        }
        TESSERA_UNREACHABLE() << node_type_name(s.node_type()) << " as a statement";
    }

    void block(const Stmt& s) {
        ++indent_;
        stmt(s);
        --indent_;
    }

    void barrier() {
        if (divergent_ > 0)
            schedule_error("a shared-memory fetch needs a barrier inside a branch that threads "
                           "may take differently");
        line_start();
        os_ << "__syncthreads();\n";
    }

    /// A fetch is a statement of a Seq that stores to a Shared buffer another statement of
    /// the same Seq loads: the innermost place where both sides of the barrier are visible.
    std::vector<bool> fetches(const Seq* op) const {
        const size_t n = op->stmts.size();
        std::vector<bool> out(n, false);
        if (thread_depth_ == 0 || in_fetch_ || shared_.empty())
            return out;
        std::vector<SharedAccess> acc;
        for (const Stmt& s : op->stmts)
            acc.push_back(shared_access(s, shared_));
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n && !out[i]; ++j)
                if (j != i)
                    for (const BufferNode* b : acc[i].writes)
                        out[i] = out[i] || acc[j].reads.count(b) > 0;
        return out;
    }

    void seq(const Seq* op) {
        const std::vector<bool> fetch_at = fetches(op);
        const size_t n = op->stmts.size();
        for (size_t i = 0; i < n; ++i) {
            const bool fetch = fetch_at[i];
            // One barrier before a run of adjacent fetches, one after it.
            if (fetch && (i == 0 || !fetch_at[i - 1]))
                barrier();
            in_fetch_ = in_fetch_ || fetch; // the barriers around it cover what it contains
            stmt(op->stmts[i]);
            if (fetch)
                in_fetch_ = false;
            if (fetch && (i + 1 == n || !fetch_at[i + 1]))
                barrier();
        }
    }

    void allocate(const Allocate* op) {
        const std::string t = scalar_type(op->buffer.dtype());
        line_start();
        os_ << "{\n";
        ++indent_;
        line_start();
        switch (op->scope) {
        case MemoryScope::Shared: os_ << "__shared__ "; break;
        case MemoryScope::Local:
        case MemoryScope::Stack: private_.insert(op->buffer.get()); break;
        case MemoryScope::Heap: TESSERA_UNREACHABLE() << "heap buffer inside a kernel";
        }
        // Shared arrays of __half have no trivial constructor issue; 16-byte alignment lets
        // the compiler widen accesses.
        os_ << "__align__(16) " << t << " " << name_of(op->buffer) << "["
            << op->buffer->num_elements() << "];\n";
        stmt(op->body);
        --indent_;
        line_start();
        os_ << "}\n";
    }

    void loop(const For* op) {
        const int axis = bound_axis(op->kind);
        const std::string v = name_of(op->loop_var);
        if (axis >= 0) {
            const int64_t ext = op->extent.as<IntImm>()->value;
            const int64_t dim = axis < 3 ? dims_.grid[axis] : dims_.block[axis - 3];
            const bool guarded = ext < dim;
            const bool divergent = guarded && axis >= 3;
            line_start();
            os_ << "{\n";
            ++indent_;
            line_start();
            os_ << "const " << index_type() << " " << v << " = (" << index_type() << ")"
                << hardware_index(axis) << " + "
                << expr(op->min) << ";\n";
            if (guarded) {
                line_start();
                os_ << "if ((" << index_type() << ")" << hardware_index(axis) << " < " << ext
                    << ") {\n";
                ++indent_;
            }
            thread_depth_ += axis >= 3;
            divergent_ += divergent;
            stmt(op->body);
            divergent_ -= divergent;
            thread_depth_ -= axis >= 3;
            if (guarded) {
                --indent_;
                line_start();
                os_ << "}\n";
            }
            --indent_;
            line_start();
            os_ << "}\n";
            return;
        }
        if (op->kind == ForKind::Vectorized && vector_access_loop(op))
            return;
        switch (op->kind) {
        case ForKind::GpuVThread:
        case ForKind::Vectorized:
        case ForKind::Unrolled:
            line_start();
            os_ << "#pragma unroll\n";
            break;
        case ForKind::Serial:
        case ForKind::Parallel:
        case ForKind::TileMatmul: // CPU tiles: a plain loop here
        case ForKind::WarpMma:    // never here: lower_warp_mmas ran first
        case ForKind::Pipelined:  // nor here: pipeline_fetches ran first
        case ForKind::GpuBlockX:
        case ForKind::GpuBlockY:
        case ForKind::GpuBlockZ:
        case ForKind::GpuThreadX:
        case ForKind::GpuThreadY:
        case ForKind::GpuThreadZ: break;
        }
        const std::string mn = expr(op->min), ext = expr(op->extent);
        line_start();
        os_ << "for (" << index_type() << " " << v << " = " << mn << "; " << v << " < " << mn << " + " << ext
            << "; ++" << v << ") {\n";
        block(op->body);
        line_start();
        os_ << "}\n";
    }

    /// A Vectorized loop of 2, 4 or 8 lanes whose body is one Store, with an access (the store
    /// or a load) of lanes contiguous along the loop variable at an aligned base
    /// (aligned_vector_base) of a global or shared buffer in a type with a vector type
    /// (vector_type: float2, float4, __half2, 4 or 8 f16): such loads become one vector
    /// load each, the lanes' values are computed one by one, and the store, when it is such an
    /// access, becomes one vector store. Returns false (nothing written) for any other loop,
    /// which stays a `#pragma unroll` loop.
    bool vector_access_loop(const For* op) {
        const auto* ext = op->extent.as<IntImm>();
        const auto* mn = op->min.as<IntImm>();
        const auto* store = op->body.as<Store>();
        if (!ext || !mn || mn->value != 0 || !store || lane_var_ ||
            (ext->value != 2 && ext->value != 4 && ext->value != 8))
            return false;
        const int64_t lanes = ext->value;
        const Var& v = op->loop_var;
        // Per-thread arrays stay scalar: their elements live in registers only while every
        // access is a scalar one at a constant index.
        auto base_of = [&](const Buffer& b, const Expr& index) {
            return vector_type(b.dtype(), lanes).empty() || private_.count(b.get())
                       ? Expr()
                       : aligned_vector_base(index, v, lanes);
        };
        const Expr store_base = base_of(store->buffer, store->index);
        std::vector<std::pair<const Load*, Expr>> vec_loads;
        for (const Load* l : loads_of(store->value)) {
            if (!uses_var(l->index, v))
                continue;
            const Expr base = base_of(l->buffer, l->index);
            if (base.defined())
                vec_loads.emplace_back(l, base);
        }
        if (!store_base.defined() && vec_loads.empty())
            return false;
        line_start();
        os_ << "{ // " << lanes << " lanes of '" << name_of(v) << "' as vector accesses\n";
        ++indent_;
        for (const auto& [l, base] : vec_loads) {
            const std::string t = vector_type(l->buffer.dtype(), lanes);
            const std::string name = name_of(l, name_of(l->buffer) + "_vec");
            line_start();
            os_ << "const " << t << " " << name << " = *reinterpret_cast<const " << t << "*>(&"
                << name_of(l->buffer) << "[" << expr(base) << "]);\n";
            vector_loads_[l] = name;
        }
        const std::string out = store_base.defined() ? name_of(store, "vec_out") : "";
        if (store_base.defined()) {
            line_start();
            os_ << vector_type(store->buffer.dtype(), lanes) << " " << out << ";\n";
        }
        lane_var_ = v.get();
        vector_lanes_ = lanes;
        for (lane_ = 0; lane_ < lanes; ++lane_) {
            line_start();
            if (store_base.defined())
                os_ << vector_lane(out, store->buffer.dtype(), lanes, lane_) << " = "
                    << expr(store->value) << ";\n";
            else
                os_ << name_of(store->buffer) << "[" << expr(store->index)
                    << "] = " << expr(store->value) << ";\n";
        }
        lane_var_ = nullptr;
        lane_ = 0;
        vector_loads_.clear();
        if (store_base.defined()) {
            const std::string t = vector_type(store->buffer.dtype(), lanes);
            line_start();
            os_ << "*reinterpret_cast<" << t << "*>(&" << name_of(store->buffer) << "["
                << expr(store_base) << "]) = " << out << ";\n";
        }
        --indent_;
        line_start();
        os_ << "}\n";
        return true;
    }

    std::ostringstream& os_;
    const Variable* lane_var_ = nullptr; ///< The loop variable of a vector access loop.
    int64_t lane_ = 0;                   ///< Its lane being written.
    std::unordered_map<const Load*, std::string> vector_loads_; ///< Loads read from vectors.
    int64_t vector_lanes_ = 0; ///< Lanes of the vectors of vector_loads_.
    std::unordered_set<const BufferNode*> private_;              ///< Local and Stack arrays.
    std::unordered_map<const void*, std::string> names_;
    std::unordered_set<std::string> used_;
    LaunchDims dims_;
    std::unordered_set<const BufferNode*> shared_;
    bool index32_;
    int indent_ = 0;
    int thread_depth_ = 0;
    int divergent_ = 0;
    bool in_fetch_ = false;
};

/// Whether every i64 value of f fits a 32-bit int with room to spare: no 64-bit integer
/// buffers (their values are data, not indices), every buffer under 2^30 elements (indices and
/// the partial sums that form them stay below 2^31), every i64 constant under 2^30.
bool fits_in_index32(const LoweredFunc& f) {
    constexpr int64_t kLimit = int64_t(1) << 30;
    struct Scan : IRVisitor {
        bool ok = true;
        using IRVisitor::visit;
        void buffer(const Buffer& b) {
            const DataType t = b.dtype();
            ok = ok && b->num_elements() < kLimit && !(!t.is_float() && t.bits == 64);
        }
        void visit(const IntImm* op) override {
            if (op->type == DataType::i64())
                ok = ok && op->value < kLimit && op->value > -kLimit;
        }
        void visit(const Load* op) override {
            buffer(op->buffer);
            IRVisitor::visit(op);
        }
        void visit(const Store* op) override {
            buffer(op->buffer);
            IRVisitor::visit(op);
        }
        void visit(const Allocate* op) override {
            buffer(op->buffer);
            IRVisitor::visit(op);
        }
    } scan;
    for (const Buffer& b : f.params)
        scan.buffer(b);
    scan.visit(f.body);
    return scan.ok;
}

/// Buffers some statement stores to (a WarpMma's accumulators included).
std::unordered_set<const BufferNode*> stored_buffers(const Stmt& s) {
    struct Collector : IRVisitor {
        std::unordered_set<const BufferNode*> out;
        using IRVisitor::visit;
        void visit(const Store* op) override {
            out.insert(op->buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Call* op) override {
            if (op->op == CallOp::WarpMma)
                for (const Expr& c : WarpMma::from_call(*op).c)
                    out.insert(c.as<Load>()->buffer.get());
            IRVisitor::visit(op);
        }
    } c;
    c.visit(s);
    return c.out;
}

void check_limits(const KernelInfo& k, const DeviceLimits& lim) {
    std::ostringstream msg;
    if (k.dims.threads_per_block() > lim.max_threads_per_block)
        msg << k.dims.threads_per_block() << " threads per block (at most "
            << lim.max_threads_per_block << ")";
    for (int a = 0; a < 3 && msg.str().empty(); ++a) {
        if (k.dims.block[a] > lim.max_block[a])
            msg << "block dimension " << "xyz"[a] << " of " << k.dims.block[a] << " (at most "
                << lim.max_block[a] << ")";
        else if (k.dims.grid[a] > lim.max_grid[a])
            msg << "grid dimension " << "xyz"[a] << " of " << k.dims.grid[a] << " (at most "
                << lim.max_grid[a] << ")";
    }
    if (msg.str().empty() && k.shared_bytes > lim.max_shared_bytes)
        msg << k.shared_bytes << " bytes of shared memory (at most " << lim.max_shared_bytes
            << ")";
    if (msg.str().empty() && k.local_bytes > lim.max_local_bytes)
        msg << k.local_bytes << " bytes of per-thread arrays (at most " << lim.max_local_bytes
            << ")";
    if (!msg.str().empty())
        schedule_error("kernel " + k.name + ": " + msg.str());
}

} // namespace

CudaSource codegen_cuda(const LoweredFunc& f, const DeviceLimits& limits) {
    CudaSource out;
    out.func_name = f.name;
    out.params = f.params;
    // Warp tensor-core nests become WarpMma statements and pipelined loops fetch ahead first
    // (ScheduleError when one does not fit), so that the kernels below see only what they emit.
    const Stmt lowered = lower::pipeline_fetches(lower::lower_warp_mmas(f.body));
    // Root temporaries live in device memory for the whole call.
    Stmt body = lowered;
    while (const auto* a = body.as<Allocate>()) {
        out.workspaces.push_back(a->buffer);
        body = a->body;
    }
    std::vector<Stmt> kernels;
    if (const auto* s = body.as<Seq>())
        kernels = s->stmts;
    else
        kernels.push_back(body);

    std::vector<Buffer> args = f.params;
    args.insert(args.end(), out.workspaces.begin(), out.workspaces.end());
    const auto stored = stored_buffers(lowered);

    std::ostringstream os;
    os << "// Generated by tessera from function " << f.name << ".\n"
       << kPrelude << (contains_call(f.body, is_gpu_block_reduce) ? kBlockReducePrelude : "")
       << (contains_call(f.body, CallOp::Dot4U8S8) ? kDot4Prelude : "")
       << (contains_call(lowered, CallOp::WarpMma) ? kWarpMmaPrelude : "")
       << "\n";
    CudaWriter w(os, fits_in_index32(f));
    for (const Buffer& b : args)
        w.name_of(b);
    for (size_t i = 0; i < kernels.size(); ++i) {
        KernelAnalysis a;
        a.visit(kernels[i]);
        a.check_repeated_stores();
        KernelInfo k;
        k.name = w.name_of(&kernels[i], f.name + "_kernel" + std::to_string(i));
        k.dims = a.dims;
        k.shared_bytes = a.shared_bytes;
        k.local_bytes = a.local_bytes;
        check_limits(k, limits);
        w.write_kernel(kernels[i], k, a, args, stored);
        out.kernels.push_back(k);
    }
    out.code = os.str();
    return out;
}

} // namespace tessera::backend::cuda
