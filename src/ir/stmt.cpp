// Constructors of statement nodes.
#include "tessera/ir/stmt.h"

#include "tessera/ir/printer.h"
#include "tessera/support/error.h"

namespace tessera::ir {

const char* to_string(ForKind k) {
    switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::TileMatmul: return "tile_matmul";
    case ForKind::WarpMma: return "warp_mma";
    case ForKind::Pipelined: return "pipelined";
    case ForKind::GpuBlockX: return "blockIdx.x";
    case ForKind::GpuBlockY: return "blockIdx.y";
    case ForKind::GpuBlockZ: return "blockIdx.z";
    case ForKind::GpuThreadX: return "threadIdx.x";
    case ForKind::GpuThreadY: return "threadIdx.y";
    case ForKind::GpuThreadZ: return "threadIdx.z";
    case ForKind::GpuVThread: return "vthread";
    }
    return "?";
}

bool is_gpu_kind(ForKind k) {
    switch (k) {
    case ForKind::Serial:
    case ForKind::Parallel:
    case ForKind::Vectorized:
    case ForKind::Unrolled:
    case ForKind::TileMatmul:
    case ForKind::WarpMma:
    case ForKind::Pipelined: return false;
    case ForKind::GpuBlockX:
    case ForKind::GpuBlockY:
    case ForKind::GpuBlockZ:
    case ForKind::GpuThreadX:
    case ForKind::GpuThreadY:
    case ForKind::GpuThreadZ:
    case ForKind::GpuVThread: return true;
    }
    return false;
}

Stmt LetStmt::make(Var var, Expr value, Stmt body) {
    TESSERA_CHECK(var.defined() && value.defined() && body.defined()) << "LetStmt with undefined part";
    TESSERA_CHECK(var.type() == value.type())
        << "LetStmt " << var.name() << " of type " << var.type() << " bound to " << value.type();
    auto* n = new LetStmt;
    n->var = std::move(var);
    n->value = std::move(value);
    n->body = std::move(body);
    return Stmt(n);
}

Stmt For::make(Var loop_var, Expr min, Expr extent, ForKind kind, Stmt body) {
    TESSERA_CHECK(loop_var.defined() && min.defined() && extent.defined() && body.defined())
        << "For with undefined part";
    TESSERA_CHECK(loop_var.type() == DataType::i64() && min.type() == DataType::i64() &&
                  extent.type() == DataType::i64())
        << "For " << loop_var.name() << " must be i64";
    auto* n = new For;
    n->loop_var = std::move(loop_var);
    n->min = std::move(min);
    n->extent = std::move(extent);
    n->kind = kind;
    n->body = std::move(body);
    return Stmt(n);
}

Stmt Store::make(Buffer buffer, Expr value, Expr index) {
    TESSERA_CHECK(buffer.defined() && value.defined() && index.defined()) << "Store with undefined part";
    TESSERA_CHECK(value.type().element_of() == buffer.dtype())
        << "Store of " << value.type() << " into " << buffer.name() << " of " << buffer.dtype()
        << ": " << value;
    TESSERA_CHECK(index.type() == DataType::i64(value.type().lanes))
        << "Store into " << buffer.name() << " with index type " << index.type() << " for value "
        << value.type();
    auto* n = new Store;
    n->buffer = std::move(buffer);
    n->value = std::move(value);
    n->index = std::move(index);
    return Stmt(n);
}

Stmt Allocate::make(Buffer buffer, MemoryScope scope, Stmt body) {
    TESSERA_CHECK(buffer.defined() && body.defined()) << "Allocate with undefined part";
    auto* n = new Allocate;
    n->buffer = std::move(buffer);
    n->scope = scope;
    n->body = std::move(body);
    return Stmt(n);
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
    TESSERA_CHECK(condition.defined() && then_case.defined()) << "IfThenElse with undefined part";
    TESSERA_CHECK(condition.type() == DataType::boolean())
        << "IfThenElse condition of type " << condition.type();
    auto* n = new IfThenElse;
    n->condition = std::move(condition);
    n->then_case = std::move(then_case);
    n->else_case = std::move(else_case);
    return Stmt(n);
}

Stmt Seq::make(std::vector<Stmt> stmts) {
    std::vector<Stmt> flat;
    for (auto& s : stmts) {
        TESSERA_CHECK(s.defined()) << "Seq with undefined statement";
        if (const Seq* inner = s.as<Seq>())
            flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
        else
            flat.push_back(std::move(s));
    }
    TESSERA_CHECK(!flat.empty()) << "empty Seq";
    if (flat.size() == 1) return flat[0];
    auto* n = new Seq;
    n->stmts = std::move(flat);
    return Stmt(n);
}

Stmt Evaluate::make(Expr value) {
    TESSERA_CHECK(value.defined()) << "Evaluate of undefined";
    auto* n = new Evaluate;
    n->value = std::move(value);
    return Stmt(n);
}

} // namespace tessera::ir
