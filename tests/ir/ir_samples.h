// One small sample IR per node kind of ir_nodes.def, for tests that must cover every node
// (printer, equality, hashing). Each call builds fresh variables, buffers and tensors, so two
// calls give alpha-equivalent but distinct IRs.
#pragma once

#include <string>
#include <vector>

#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"

namespace tessera::ir::testing {

struct NodeSample {
    std::string kind; ///< The node kind at the root, as node_type_name() spells it.
    Expr expr;        ///< Set for expression kinds.
    Stmt stmt;        ///< Set for statement kinds.
};

/// A placeholder tensor (what te::placeholder makes), built directly: ir tests use ir only.
inline Tensor make_placeholder(const std::string& name, DataType t, std::vector<int64_t> shape) {
    auto* n = new TensorNode;
    n->name = name;
    n->dtype = t;
    n->shape = std::move(shape);
    return Tensor(n);
}

/// A compute tensor `name[axes] = body`.
inline Tensor make_compute(const std::string& name, std::vector<int64_t> shape,
                           std::vector<Var> axes, Expr body) {
    auto* n = new TensorNode;
    n->name = name;
    n->dtype = body.type();
    n->shape = std::move(shape);
    n->axes = std::move(axes);
    n->body = std::move(body);
    return Tensor(n);
}

inline std::vector<NodeSample> every_node_sample() {
    const DataType f32 = DataType::f32();
    Var x("x"), y("y"), z("z"), k("k");
    Buffer a = Buffer::make("A", f32, {16});
    Tensor t = make_placeholder("T", f32, {4, 4});
    Expr load = Load::make(a, x);
    std::vector<NodeSample> s;
    auto e = [&](const char* kind, Expr v) { s.push_back({kind, std::move(v), Stmt()}); };
    auto st = [&](const char* kind, Stmt v) { s.push_back({kind, Expr(), std::move(v)}); };
    e("IntImm", IntImm::make(DataType::i32(), 3));
    e("FloatImm", FloatImm::make(DataType::f64(), 1.5));
    e("Variable", x);
    e("Cast", Cast::make(f32, x));
    e("Add", Add::make(x, y));
    e("Sub", Sub::make(x, y));
    e("Mul", Mul::make(x, y));
    e("Div", Div::make(x, y));
    e("Mod", Mod::make(x, y));
    e("Min", Min::make(x, y));
    e("Max", Max::make(x, y));
    e("EQ", EQ::make(x, y));
    e("NE", NE::make(x, y));
    e("LT", LT::make(x, y));
    e("LE", LE::make(x, y));
    e("GT", GT::make(x, y));
    e("GE", GE::make(x, y));
    e("And", And::make(x < y, y < x));
    e("Or", Or::make(x < y, y < x));
    e("Not", Not::make(x < y));
    e("Select", Select::make(x < y, x, y));
    e("Load", load);
    e("Ramp", Ramp::make(x, Expr(2), 8));
    e("Broadcast", Broadcast::make(y, 8));
    e("VectorReduce",
      VectorReduce::make(ReduceOp::Max, Load::make(a, Ramp::make(x, Expr(1), 8)), 2));
    e("Call", Call::make(CallOp::Pow, {load, load}));
    e("Let", Let::make(z, x + 1, z * y));
    e("TensorRead", t(x, y));
    e("Reduce", Reduce::make(ReduceOp::Sum, t(x, k), {IterVar{k, 4}}));
    Stmt store = Store::make(a, load + 1.0f, x);
    st("LetStmt", LetStmt::make(z, x + 1, Store::make(a, Load::make(a, z), y)));
    st("For", For::make(x, 0, 16, ForKind::Parallel, Store::make(a, 0.0f, x)));
    st("Store", store);
    Buffer tmp = Buffer::make("tmp", f32, {4, 2});
    st("Allocate", Allocate::make(tmp, MemoryScope::Stack,
                                  Store::make(tmp, Load::make(a, y), x)));
    st("IfThenElse", IfThenElse::make(x < y, store, Store::make(a, 2.0f, y)));
    st("Seq", Seq::make({store, Store::make(a, 3.0f, y)}));
    st("Evaluate", Evaluate::make(Call::make(CallOp::Prefetch, {load})));
    return s;
}

} // namespace tessera::ir::testing
