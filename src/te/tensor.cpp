// Placeholders, compute tensors and reductions of the tensor-expression language.
#include "tessera/te/tensor.h"

#include <sstream>
#include <unordered_set>

#include "tessera/ir/functor.h"
#include "tessera/support/error.h"

namespace tessera::te {

int64_t num_elements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t e : shape)
        n *= e;
    return n;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < shape.size(); ++i)
        os << (i ? ", " : "") << shape[i];
    os << "]";
    return os.str();
}

static void check_extents(const std::vector<int64_t>& shape, const std::string& name) {
    int64_t total = 1;
    for (int64_t e : shape) {
        if (e <= 0)
            throw UserError() << "tensor '" << name << "' of shape " << shape_to_string(shape)
                              << " has a non-positive extent " << e;
        // Flat indices are i64: the element count must fit.
        if (__builtin_mul_overflow(total, e, &total))
            throw UserError() << "tensor '" << name << "' of shape " << shape_to_string(shape)
                              << " has too many elements";
    }
}

Tensor placeholder(std::vector<int64_t> shape, DataType dtype, std::string name) {
    check_extents(shape, name);
    if (!dtype.is_scalar())
        throw UserError() << "placeholder '" << name << "' of vector type " << dtype;
    auto* n = new ir::TensorNode;
    n->name = std::move(name);
    n->dtype = dtype;
    n->shape = std::move(shape);
    return Tensor(n);
}

namespace {
/// Checks that a compute body only uses its own variables and has no nested Reduce.
class BodyChecker : public ir::IRVisitor {
  public:
    using ir::IRVisitor::visit;
    BodyChecker(const std::string& tensor, std::unordered_set<const ir::Variable*> allowed)
        : tensor_(tensor), allowed_(std::move(allowed)) {}

    void visit(const ir::Variable* op) override {
        TESSERA_CHECK(allowed_.count(op))
            << "compute '" << tensor_ << "' uses variable '" << op->name
            << "' that is neither one of its axes nor bound inside its body";
    }
    void visit(const ir::Let* op) override {
        visit(op->value);
        bool fresh = allowed_.insert(op->var.get()).second;
        visit(op->body);
        if (fresh)
            allowed_.erase(op->var.get());
    }
    void visit(const ir::Reduce* op) override {
        TESSERA_UNREACHABLE() << "compute '" << tensor_
                              << "' has a Reduce that is not its whole body";
    }

  private:
    std::string tensor_;
    std::unordered_set<const ir::Variable*> allowed_;
};
} // namespace

Tensor compute(std::vector<int64_t> shape, std::function<Expr(const std::vector<Var>&)> f,
               std::string name, std::vector<std::string> axis_names) {
    check_extents(shape, name);
    TESSERA_CHECK(axis_names.empty() || axis_names.size() == shape.size())
        << "compute '" << name << "' of rank " << shape.size() << " given " << axis_names.size()
        << " axis names";
    std::vector<Var> axes;
    axes.reserve(shape.size());
    for (size_t i = 0; i < shape.size(); ++i)
        axes.emplace_back(axis_names.empty() ? "i" + std::to_string(i) : axis_names[i]);
    Expr body = f(axes);
    TESSERA_CHECK(body.defined()) << "compute '" << name << "' with an undefined body";
    TESSERA_CHECK(body.type().is_scalar())
        << "compute '" << name << "' with a body of vector type " << body.type();

    std::unordered_set<const ir::Variable*> allowed;
    for (const auto& a : axes)
        allowed.insert(a.get());
    Expr checked = body;
    if (const auto* r = body.as<ir::Reduce>()) {
        for (const auto& iv : r->axes) {
            TESSERA_CHECK(allowed.insert(iv.var.get()).second)
                << "compute '" << name << "' reduces over variable '" << iv.var.name()
                << "' twice or over one of its own axes";
        }
        checked = r->source;
    }
    BodyChecker(name, std::move(allowed)).visit(checked);

    auto* n = new ir::TensorNode;
    n->name = std::move(name);
    n->dtype = body.type();
    n->shape = std::move(shape);
    n->axes = std::move(axes);
    n->body = std::move(body);
    return Tensor(n);
}

IterVar reduce_axis(int64_t extent, std::string name) {
    TESSERA_CHECK(extent > 0) << "reduce axis '" << name << "' of extent " << extent;
    return IterVar{Var(name), extent};
}

Expr sum(Expr src, std::vector<IterVar> axes) {
    return ir::Reduce::make(ir::ReduceOp::Sum, std::move(src), std::move(axes));
}
Expr reduce_max(Expr src, std::vector<IterVar> axes) {
    return ir::Reduce::make(ir::ReduceOp::Max, std::move(src), std::move(axes));
}
Expr reduce_min(Expr src, std::vector<IterVar> axes) {
    return ir::Reduce::make(ir::ReduceOp::Min, std::move(src), std::move(axes));
}

} // namespace tessera::te
