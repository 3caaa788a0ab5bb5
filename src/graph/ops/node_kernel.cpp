// NodeKernel: the operands and static values an op's kernel builder reads.
#include "node_kernel.h"

#include "tessera/graph/shape_inference.h"
#include "tessera/ir/op.h"

namespace tessera::graph::detail {

std::vector<te::Expr> immediates(ir::DataType t, const TensorData& d) {
    std::vector<te::Expr> out;
    if (t.is_float()) {
        for (double v : d.as_f64())
            out.push_back(ir::make_const(t, v));
    } else {
        for (int64_t v : d.as_i64())
            out.push_back(ir::make_const(t, v));
    }
    return out;
}

te::Tensor NodeKernel::in(size_t i) const {
    const ValueId v = n_.inputs.at(i);
    auto it = tensors_.find(v);
    TESSERA_CHECK(it != tensors_.end())
        << where_ << ": value '" << g_.value(v).name << "' has no tensor";
    return it->second;
}

ir::DataType NodeKernel::out_type() const { return to_ir_type(output_value(0).dtype); }

bool NodeKernel::needed(size_t i) const {
    const ValueId v = n_.outputs.at(i);
    if (v == kNoValue)
        return false;
    if (!g_.users(v).empty())
        return true;
    for (ValueId o : g_.outputs)
        if (o == v)
            return true;
    return false;
}

te::Expr NodeKernel::runtime_scalar(size_t i) const {
    if (n_.input(i) == kNoValue || !tensors_.count(n_.inputs[i]))
        return te::Expr();
    const te::Tensor t = tensors_.at(n_.inputs[i]);
    TESSERA_CHECK(te::num_elements(t.shape()) == 1)
        << where_ << ": operand " << i << " is not a scalar";
    return t(std::vector<te::Expr>(t.shape().size(), te::Expr(int64_t(0))));
}

std::optional<TensorData> NodeKernel::static_operand(size_t i) const {
    if (n_.input(i) == kNoValue)
        return std::nullopt;
    std::optional<TensorData> t = static_value(g_, n_.inputs[i]);
    if (!t)
        throw UserError() << where_ << ": operand " << i << " ('" << g_.value(n_.inputs[i]).name
                          << "') is not a compile-time value";
    return t;
}

std::vector<int64_t> NodeKernel::static_ints(size_t i) const {
    const std::optional<TensorData> t = static_operand(i);
    return t ? t->as_i64() : std::vector<int64_t>{};
}

std::vector<double> NodeKernel::static_doubles(size_t i) const {
    const std::optional<TensorData> t = static_operand(i);
    return t ? t->as_f64() : std::vector<double>{};
}

std::optional<double> NodeKernel::static_scalar(size_t i) const {
    if (n_.input(i) == kNoValue)
        return std::nullopt;
    std::optional<TensorData> t = static_value(g_, n_.inputs[i]);
    if (!t || t->numel() != 1)
        throw UserError() << where_ << ": operand " << i << " ('" << g_.value(n_.inputs[i]).name
                          << "') is not a compile-time scalar";
    return t->as_f64()[0];
}

te::Expr NodeKernel::static_immediate(size_t i, ir::DataType t) const {
    std::optional<TensorData> d =
        n_.input(i) == kNoValue ? std::nullopt : static_value(g_, n_.inputs[i]);
    if (!d || d->numel() != 1)
        throw UserError() << where_ << ": operand " << i << " ('"
                          << (n_.input(i) == kNoValue ? "" : g_.value(n_.inputs[i]).name)
                          << "') is not a compile-time scalar";
    return immediates(t, *d).at(0);
}

} // namespace tessera::graph::detail
