// What an op's kernel builder (OpDef::kernel) sees while task extraction turns a fused group
// into tensor expressions: the node, the tensors of its operands, the compile-time values of
// its static operands, and the outputs to define.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "op_def.h"
#include "tessera/te/tensor.h"

namespace tessera::graph::detail {

class NodeKernel {
  public:
    /// `tensors` maps value ids to the tensors built so far (operands of the node included).
    NodeKernel(const Graph& g, const Node& n, std::string where,
               const std::map<ValueId, te::Tensor>& tensors)
        : g_(g), n_(n), where_(std::move(where)), tensors_(tensors), ys_(n.outputs.size()) {}

    const Graph& graph() const { return g_; }
    const Node& node() const { return n_; }
    Op op() const { return n_.op; }
    const std::string& where() const { return where_; }

    /// The tensor of operand i; an internal error when it has none.
    te::Tensor in(size_t i) const;
    /// The tensor of operand i, or an undefined tensor when the operand is absent.
    te::Tensor opt_in(size_t i) const { return n_.input(i) == kNoValue ? te::Tensor() : in(i); }
    const Value& input_value(size_t i) const { return g_.value(n_.inputs.at(i)); }
    const Value& output_value(size_t i = 0) const { return g_.value(n_.outputs.at(i)); }
    /// The scalar type of output 0.
    ir::DataType out_type() const;
    /// True when output i is read by another node or is a graph output.
    bool needed(size_t i) const;

    /// The element of scalar operand i when it is a kernel input (a runtime value of an op
    /// with OpDef::runtime_scalars_from); an undefined expression when it is absent or static.
    te::Expr runtime_scalar(size_t i) const;

    /// The compile-time value of static operand i as integers; empty when absent.
    std::vector<int64_t> static_ints(size_t i) const;
    /// The compile-time value of static operand i as doubles; empty when absent.
    std::vector<double> static_doubles(size_t i) const;
    /// The compile-time scalar operand i, or nullopt when absent.
    std::optional<double> static_scalar(size_t i) const;
    /// A compile-time scalar operand as an immediate of type t (integers exactly).
    te::Expr static_immediate(size_t i, ir::DataType t) const;

    /// Defines output i (0: the node's main result).
    void set(te::Tensor y, size_t i = 0) { ys_.at(i) = std::move(y); }
    const std::vector<te::Tensor>& results() const { return ys_; }

  private:
    /// The compile-time value of static operand i, nullopt when absent; an error when it is
    /// not a compile-time value.
    std::optional<TensorData> static_operand(size_t i) const;

    const Graph& g_;
    const Node& n_;
    std::string where_;
    const std::map<ValueId, te::Tensor>& tensors_;
    std::vector<te::Tensor> ys_;
};

/// The elements of d as immediates of scalar type t (integers exactly, not through double).
std::vector<te::Expr> immediates(ir::DataType t, const TensorData& d);

} // namespace tessera::graph::detail
