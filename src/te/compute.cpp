// make_compute: collects the stages of a tensor-expression DAG in a deterministic topological
// order.
#include "tessera/te/compute.h"

#include <unordered_set>

#include "tessera/ir/functor.h"
#include "tessera/support/error.h"

namespace tessera::te {

namespace {
struct StageCollector {
    std::unordered_set<const ir::TensorNode*> done;
    std::unordered_set<const ir::TensorNode*> on_path;
    std::unordered_set<const ir::TensorNode*> inputs;
    std::vector<Tensor> stages;

    void visit(const Tensor& t) {
        if (done.count(t.get()))
            return;
        if (t->is_placeholder()) {
            if (!inputs.count(t.get()))
                throw UserError() << "compute reads placeholder '" << t.name()
                                  << "' that is not among its inputs";
            done.insert(t.get());
            return;
        }
        // Tensors are immutable and built bottom-up, so a cycle cannot be built; the check
        // guards against a hand-made TensorNode.
        TESSERA_CHECK(on_path.insert(t.get()).second)
            << "tensor cycle through '" << t.name() << "'";
        for (const Tensor& in : t->inputs())
            visit(in);
        on_path.erase(t.get());
        done.insert(t.get());
        stages.push_back(t);
    }
};
} // namespace

Compute make_compute(std::vector<Tensor> inputs, std::vector<Tensor> outputs) {
    StageCollector collector;
    for (const Tensor& t : inputs) {
        TESSERA_CHECK(t.defined()) << "undefined input tensor";
        if (!t->is_placeholder())
            throw UserError() << "compute input '" << t.name() << "' is not a placeholder";
        if (!collector.inputs.insert(t.get()).second)
            throw UserError() << "compute input '" << t.name() << "' is listed twice";
    }
    if (outputs.empty())
        throw UserError() << "compute without outputs";
    std::unordered_set<const ir::TensorNode*> seen_outputs;
    for (const Tensor& t : outputs) {
        TESSERA_CHECK(t.defined()) << "undefined output tensor";
        if (t->is_placeholder())
            throw UserError() << "compute output '" << t.name() << "' is a placeholder";
        if (!seen_outputs.insert(t.get()).second)
            throw UserError() << "compute output '" << t.name() << "' is listed twice";
    }
    for (const Tensor& t : outputs)
        collector.visit(t);
    Compute c;
    c.inputs = std::move(inputs);
    c.outputs = std::move(outputs);
    c.stages = std::move(collector.stages);
    return c;
}

bool is_output(const Compute& c, const Tensor& t) {
    for (const Tensor& o : c.outputs)
        if (o.same_as(t))
            return true;
    return false;
}

std::string product_precision(const Compute& c) {
    for (const Tensor& t : c.stages) {
        if (ir::contains_call(t->body, ir::CallOp::Dot4U8S8))
            return "int8";
        if (ir::contains_call(t->body, ir::CallOp::Dot2BF16))
            return "bf16";
    }
    if (c.outputs.empty())
        return "";
    const std::string out = ir::to_string(c.outputs[0].dtype());
    for (int wi : c.weight_inputs)
        if (wi >= 0 && static_cast<size_t>(wi) < c.inputs.size() &&
            c.inputs[static_cast<size_t>(wi)].dtype() == ir::DataType::f16() && out == "f32")
            return "f32+f16w";
    return out;
}

} // namespace tessera::te
