// The canonical Compute text: rebuild the Compute with canonical names, then print it.
#include <algorithm>
#include <map>
#include <sstream>

#include "tessera/ir/functor.h"
#include "tessera/ir/printer.h"
#include "tessera/support/error.h"
#include "tessera/support/sha256.h"
#include "tessera/te/tensor.h"
#include "tessera/te/workload_key.h"

namespace tessera::te {

namespace {

using ir::Expr;
using ir::Tensor;
using ir::Var;

/// Rewrites one stage body onto canonically named variables and tensors. Binding sites (Let,
/// Reduce axes) get the next name when met, which is the printer's order of appearance too.
/// Maps are keyed by object pointer for lookup only; no output depends on pointer order.
class Renamer : public ir::IRMutator {
  public:
    Renamer(const std::map<const ir::TensorNode*, Tensor>& tensors) : tensors_(tensors) {}
    using IRMutator::visit;

    /// Binds `old` to a fresh variable with the next canonical name.
    Var bind(const Var& old) { return bind_as(old, Var("v" + std::to_string(next_), old.type())); }
    /// Binds `old` to `fresh`, which already carries the next canonical name.
    Var bind_as(const Var& old, const Var& fresh) {
        ++next_;
        vars_[old.get()] = fresh;
        return fresh;
    }

    Expr visit(const ir::Variable* op) override {
        auto it = vars_.find(op);
        TESSERA_CHECK(it != vars_.end()) << "free variable '" << op->name << "' in a stage body";
        return it->second;
    }
    Expr visit(const ir::Let* op) override {
        Expr value = mutate(op->value);
        Var v = bind(op->var);
        return ir::Let::make(v, value, mutate(op->body));
    }
    Expr visit(const ir::Reduce* op) override {
        std::vector<ir::IterVar> axes;
        for (const ir::IterVar& a : op->axes)
            axes.push_back({bind(a.var), a.extent});
        return ir::Reduce::make(op->op, mutate(op->source), std::move(axes));
    }
    Expr visit(const ir::TensorRead* op) override {
        auto it = tensors_.find(op->tensor.get());
        TESSERA_CHECK(it != tensors_.end())
            << "tensor '" << op->tensor.name() << "' read before its definition";
        std::vector<Expr> idx;
        for (const Expr& e : op->indices)
            idx.push_back(mutate(e));
        return ir::TensorRead::make(it->second, std::move(idx));
    }

  private:
    const std::map<const ir::TensorNode*, Tensor>& tensors_;
    std::map<const ir::Variable*, Var> vars_;
    int next_ = 0;
};

std::string type_and_shape(const Tensor& t) {
    return ir::to_string(t.dtype()) + te::shape_to_string(t.shape());
}

} // namespace

std::string canonical_compute_text(const te::Compute& c) {
    std::ostringstream os;
    os << kComputeTextHeader << "\n";
    std::map<const ir::TensorNode*, Tensor> renamed;
    std::map<const ir::TensorNode*, int> index;
    int next = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        const Tensor& in = c.inputs[i];
        std::string name = "t" + std::to_string(next);
        index[in.get()] = next++;
        renamed[in.get()] = te::placeholder(in.shape(), in.dtype(), name);
        const bool weight = std::find(c.weight_inputs.begin(), c.weight_inputs.end(),
                                      static_cast<int>(i)) != c.weight_inputs.end();
        os << "input " << name << ": " << type_and_shape(in) << (weight ? " weight" : "") << "\n";
    }
    for (const Tensor& st : c.stages) {
        std::string name = "t" + std::to_string(next);
        index[st.get()] = next++;
        Renamer r(renamed);
        std::vector<std::string> axis_names;
        for (size_t i = 0; i < st->axes.size(); ++i)
            axis_names.push_back("v" + std::to_string(i));
        Expr body;
        Tensor fresh = te::compute(
            st.shape(),
            [&](const std::vector<Var>& axes) {
                // compute() names its fresh axes v0..v(n-1); the old axes map onto them.
                for (size_t i = 0; i < axes.size(); ++i)
                    r.bind_as(st->axes[i], axes[i]);
                body = r.mutate(st->body);
                return body;
            },
            name, axis_names);
        os << "stage " << name << ": " << type_and_shape(st) << " (";
        for (size_t i = 0; i < st->axes.size(); ++i)
            os << (i ? ", " : "") << "v" << i;
        os << ") = " << ir::to_string(body) << "\n";
        renamed[st.get()] = fresh;
    }
    os << "outputs";
    for (const Tensor& out : c.outputs) {
        auto it = index.find(out.get());
        TESSERA_CHECK(it != index.end()) << "output '" << out.name() << "' is not a stage";
        os << " t" << it->second;
    }
    os << "\n";
    return os.str();
}

std::string workload_key(const te::Compute& c) {
    return workload_key_of_text(canonical_compute_text(c));
}

std::string workload_key_of_text(const std::string& canonical_text) {
    return sha256_hex(canonical_text);
}

} // namespace tessera::te
