// Statement nodes of the loop IR, and LoweredFunc, the unit a backend compiles.
#pragma once

#include <string>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::ir {

/// `let var = value` in body.
struct LetStmt : StmtNode<LetStmt> {
    static constexpr IRNodeType kNodeType = IRNodeType::LetStmt;
    Var var;
    Expr value;
    Stmt body;
    static Stmt make(Var var, Expr value, Stmt body);
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("var", s.var);
        v("value", s.value);
        v("body", s.body);
    }
};

/// How a loop runs.
enum class ForKind : uint8_t {
    Serial,
    Parallel,   ///< Iterations run on the runtime thread pool in any order.
    Vectorized, ///< Becomes vector instructions (the vectorize pass removes it). Constant extent.
    Unrolled,   ///< Fully unrolled (the unroll pass removes it). Constant extent.
    /// The root of a loop nest of 8-bit products that lowering turns into one TileMatmul
    /// (lower/tile_matmul.h; prepare_for_codegen does it). Runs serially where it remains.
    TileMatmul,
    /// The root of a loop nest of one warp's tensor-core product that lowering turns into one
    /// WarpMma (lower/warp_mma.h; the CUDA backend does it). GPU code only.
    WarpMma,
    /// GPU: a serial loop whose shared-memory copies are loaded one iteration ahead through
    /// registers (lower/pipeline_fetches.h; the CUDA backend does it).
    Pipelined,
    // GPU bindings (only the CUDA backend accepts them; CPU backends reject them). One kind per
    // hardware index rather than one "bound" kind plus a tag field: the kind is already part of
    // For's reflection, so equality, hashing and printing cover the binding with no new field.
    // The loop variable takes the value of that hardware index; the extent must be constant and
    // sets the launch dimension (loops of one kind inside one kernel share the index, the
    // largest extent wins, smaller ones are guarded). min is 0.
    GpuBlockX,
    GpuBlockY,
    GpuBlockZ,
    GpuThreadX,
    GpuThreadY,
    GpuThreadZ,
    GpuVThread, ///< A virtual thread: runs serially (unrolled) inside each thread.
};
const char* to_string(ForKind k);
/// Whether k binds the loop to a GPU block or thread index (GpuVThread included).
bool is_gpu_kind(ForKind k);

/// for (loop_var = min; loop_var < min + extent; ++loop_var) body. min and extent are Int(64)
/// scalars evaluated once before the loop; extent <= 0 runs no iteration.
struct For : StmtNode<For> {
    static constexpr IRNodeType kNodeType = IRNodeType::For;
    Var loop_var;
    Expr min, extent;
    ForKind kind = ForKind::Serial;
    Stmt body;
    static Stmt make(Var loop_var, Expr min, Expr extent, ForKind kind, Stmt body);
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("loop_var", s.loop_var);
        v("min", s.min);
        v("extent", s.extent);
        v("kind", s.kind);
        v("body", s.body);
    }
};

/// buffer[index] = value. A vector index stores lane-wise (a scatter unless a stride-1 Ramp).
struct Store : StmtNode<Store> {
    static constexpr IRNodeType kNodeType = IRNodeType::Store;
    Buffer buffer;
    Expr value, index;
    /// Pre: value's element type is buffer's dtype; value and index have the same lanes.
    static Stmt make(Buffer buffer, Expr value, Expr index);
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("buffer", s.buffer);
        v("value", s.value);
        v("index", s.index);
    }
};

/// Allocates `buffer` (num_elements of its dtype, uninitialized) for the duration of body.
struct Allocate : StmtNode<Allocate> {
    static constexpr IRNodeType kNodeType = IRNodeType::Allocate;
    Buffer buffer;
    MemoryScope scope = MemoryScope::Heap;
    Stmt body;
    static Stmt make(Buffer buffer, MemoryScope scope, Stmt body);
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("buffer", s.buffer);
        v("scope", s.scope);
        v("body", s.body);
    }
};

/// if (condition) then_case else else_case; else_case may be undefined. condition: scalar bool.
struct IfThenElse : StmtNode<IfThenElse> {
    static constexpr IRNodeType kNodeType = IRNodeType::IfThenElse;
    Expr condition;
    Stmt then_case, else_case;
    static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("condition", s.condition);
        v("then_case", s.then_case);
        v("else_case", s.else_case);
    }
};

/// Statements in order.
struct Seq : StmtNode<Seq> {
    static constexpr IRNodeType kNodeType = IRNodeType::Seq;
    std::vector<Stmt> stmts;
    /// Flattens nested Seqs; a single statement is returned as is. Pre: not empty.
    static Stmt make(std::vector<Stmt> stmts);
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("stmts", s.stmts); }
};

/// Evaluates an expression for its side effect (Call(Prefetch)).
struct Evaluate : StmtNode<Evaluate> {
    static constexpr IRNodeType kNodeType = IRNodeType::Evaluate;
    Expr value;
    static Stmt make(Expr value);
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("value", s.value); }
};

/// A compiled unit: `void name(void** args)` where args[i] points to the data of params[i]. The
/// body may only touch params and buffers it allocates. Free variables are not allowed.
struct LoweredFunc {
    std::string name;
    std::vector<Buffer> params;
    Stmt body;
    /// Set by lower::prepare_for_codegen: the body holds only what backends take (no
    /// Vectorized or Unrolled loops); preparing it again returns it as it is.
    bool ready_for_codegen = false;
};

} // namespace tessera::ir
