// Task extraction: fused group -> te::Compute (each member node built by its op's kernel
// builder, ops/op_def.h), then deduplication by workload key.
#include "tessera/graph/tasks.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ops/node_kernel.h"
#include "tessera/graph/shape_inference.h"
#include "tessera/ir/op.h"
#include "tessera/te/flops.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"

namespace tessera::graph {

namespace {

using te::Tensor;

// Operand i of node n only steers the output shape (or is a scalar parameter): it is read at
// compile time and is not a Compute input. A scalar parameter that may be a runtime value
// (OpDef::runtime_scalars_from) is an input when it is not a compile-time value.
bool is_static_operand(const Graph& g, const Node& n, size_t i) {
    const detail::OpDef& def = detail::op_def(n.op);
    if (i < def.static_operands_from)
        return false;
    return i < def.runtime_scalars_from || static_value(g, n.inputs[i]).has_value();
}

class GroupBuilder {
  public:
    GroupBuilder(const Graph& g, const FusedGroup& group) : g_(g), group_(group) {}

    GroupCompute build() {
        GroupCompute gc;
        std::vector<bool> data_input(g_.num_values(), false);
        for (NodeId id : group_.nodes) {
            const Node& n = g_.node(id);
            for (size_t i = 0; i < n.inputs.size(); ++i)
                if (n.inputs[i] != kNoValue && !is_static_operand(g_, n, i))
                    data_input[n.inputs[i]] = true;
        }
        std::vector<Tensor> inputs;
        for (ValueId v : group_.inputs) {
            if (!data_input[v])
                continue;
            const Value& val = g_.value(v);
            // Weights stored in f16 are read as such and widened (exact) where the ops read them.
            const DType stored = val.stored_f16 ? DType::F16 : val.dtype;
            Tensor t = te::placeholder(val.shape, to_ir_type(stored), val.name);
            env_[v] =
                val.stored_f16
                    ? te::unary(
                          t, [](te::Expr e) { return ir::cast(ir::DataType::f32(), std::move(e)); },
                          "widen")
                    : t;
            inputs.push_back(t);
            gc.inputs.push_back(v);
        }
        for (NodeId id : group_.nodes) {
            // The op library's errors name the op and operands only: say which node.
            const std::string where = describe_node(g_.node(id), id);
            try {
                build_node(id, where);
            } catch (const UserError& e) {
                const std::string msg = e.what();
                if (msg.rfind(where, 0) == 0)
                    throw;
                throw UserError() << where << ": " << msg;
            }
        }
        std::vector<Tensor> outputs;
        for (ValueId v : group_.outputs) {
            Tensor t = tensor(v);
            // An output that is a group input unchanged (a lone Identity) still needs a stage.
            if (t->is_placeholder())
                t = te::unary(t, [](te::Expr e) { return e; }, "copy");
            outputs.push_back(t);
            gc.outputs.push_back(v);
        }
        gc.compute = te::make_compute(std::move(inputs), std::move(outputs));
        for (size_t i = 0; i < gc.inputs.size(); ++i)
            if (g_.value(gc.inputs[i]).is_constant() && !is_coefficient_table(gc.inputs[i]))
                gc.compute.weight_inputs.push_back(static_cast<int>(i));
        return gc;
    }

  private:
    // A constant every reader takes as its coefficient table (OpDef::table_operand, a
    // Winograd transform's matrix): not a weight, whose layout schedules would pack.
    bool is_coefficient_table(ValueId v) const {
        for (NodeId id : g_.users(v)) {
            const Node& n = g_.node(id);
            if (n.input(detail::op_def(n.op).table_operand) != v)
                return false;
        }
        return true;
    }

    Tensor tensor(ValueId v) const {
        auto it = env_.find(v);
        TESSERA_CHECK(it != env_.end()) << "value '" << g_.value(v).name << "' has no tensor";
        return it->second;
    }

    void build_node(NodeId id, const std::string& where) {
        const Node& n = g_.node(id);
        const detail::OpDef& def = detail::op_def(n.op);
        if (!def.kernel)
            throw UserError() << where << ": " << op_name(n.op)
                              << " has no kernel; tessera computes it only when all its inputs "
                                 "are compile-time constants";
        detail::NodeKernel k(g_, n, where, env_);
        def.kernel(k);
        const std::vector<Tensor>& ys = k.results();
        for (size_t i = 0; i < n.outputs.size(); ++i) {
            if (n.outputs[i] == kNoValue)
                continue;
            const Value& v = g_.value(n.outputs[i]);
            if (!ys[i].defined() && !k.needed(i))
                continue;
            if (!ys[i].defined())
                throw UserError() << where << ": output " << i << " ('" << v.name
                                  << "') has no tensor expression";
            if (ys[i].shape() != v.shape || ys[i].dtype() != to_ir_type(v.dtype))
                throw UserError() << where << ": tensor expression of output " << i << " is "
                                  << ys[i].dtype() << te::shape_to_string(ys[i].shape())
                                  << ", the graph value '" << v.name << "' "
                                  << dtype_name(v.dtype) << shape_str(v.shape);
            env_[n.outputs[i]] = ys[i];
        }
    }

    const Graph& g_;
    const FusedGroup& group_;
    std::map<ValueId, Tensor> env_;
};

} // namespace

bool op_has_kernel(Op op) { return detail::op_def(op).kernel != nullptr; }

GroupCompute group_compute(const Graph& g, const FusedGroup& group) {
    return GroupBuilder(g, group).build();
}

std::vector<Task> extract_tasks(const Graph& g, const std::vector<FusedGroup>& groups) {
    std::vector<Task> tasks;
    std::map<std::string, size_t> by_key;
    for (size_t i = 0; i < groups.size(); ++i) {
        if (groups[i].operands_in_place)
            continue; // its operands are written in place: nothing runs
        GroupCompute gc = group_compute(g, groups[i]);
        const std::string key = te::workload_key(gc.compute);
        auto it = by_key.find(key);
        if (it != by_key.end()) {
            tasks[it->second].groups.push_back(static_cast<int>(i));
            continue;
        }
        Task t;
        t.workload_key = key;
        t.pattern = groups[i].pattern;
        t.flops = te::count_flops(gc.compute);
        t.groups = {static_cast<int>(i)};
        t.compute = std::move(gc);
        by_key[key] = tasks.size();
        tasks.push_back(std::move(t));
    }
    return tasks;
}

} // namespace tessera::graph
