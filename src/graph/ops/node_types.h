// What an op's type inference (OpDef::infer) sees of its node: the typed operands, their
// compile-time values where known, and checks that throw one UserError naming the node.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "../op_util.h"
#include "eval_util.h"
#include "op_def.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph::detail {

/// f16 is not among these: ops that compute see f16 operands through Casts to f32 (see
/// OpDef::any_element_type).
inline const std::initializer_list<DType> kNumeric = {
    DType::F32, DType::F64, DType::I32, DType::I64, DType::I8,
    DType::U8,  DType::I16, DType::U16, DType::U32, DType::U64};
inline const std::initializer_list<DType> kFloat = {DType::F32, DType::F64};
inline const std::initializer_list<DType> kF32 = {DType::F32};

class NodeTypes {
  public:
    NodeTypes(const Graph& g, const Node& n, NodeId id, const ShapeInferer& inf)
        : g_(g), n_(n), inf_(inf), where_(describe_node(n, id)) {}

    const Node& node() const { return n_; }
    Op op() const { return n_.op; }
    size_t num_inputs() const { return n_.inputs.size(); }
    size_t num_outputs() const { return n_.outputs.size(); }
    const std::string& where() const { return where_; }
    [[noreturn]] void fail(const std::string& msg) const {
        throw UserError() << where_ << ": " << msg;
    }

    bool has(size_t i) const { return n_.input(i) != kNoValue; }
    /// Operand i (`what` names it in messages); an error when absent.
    const Value& in(size_t i, const char* what) const {
        if (!has(i))
            throw UserError() << where_ << ": input " << i << " (" << what << ") is missing";
        const Value& v = g_.value(n_.inputs[i]);
        TESSERA_CHECK(v.typed) << where_ << " input '" << v.name << "' has no type yet";
        return v;
    }
    /// Every operand's shape (all must be present).
    std::vector<Shape> input_shapes() const {
        std::vector<Shape> shapes;
        for (size_t i = 0; i < n_.inputs.size(); ++i)
            shapes.push_back(in(i, "input").shape);
        if (shapes.empty())
            throw UserError() << where_ << ": no inputs";
        return shapes;
    }

    void dtype(const Value& v, std::initializer_list<DType> allowed, const char* what) const {
        for (DType d : allowed)
            if (v.dtype == d)
                return;
        std::string names;
        for (DType d : allowed)
            names += std::string(names.empty() ? "" : " or ") + dtype_name(d);
        throw UserError() << where_ << ": " << what << " '" << v.name << "' is "
                          << dtype_name(v.dtype) << ", expected " << names;
    }
    void same_dtype(const Value& a, const Value& b) const {
        if (a.dtype != b.dtype)
            throw UserError() << where_ << ": input dtypes differ ('" << a.name << "' is "
                              << dtype_name(a.dtype) << ", '" << b.name << "' is "
                              << dtype_name(b.dtype) << ")";
    }
    void rank(const Value& v, int64_t r, const char* what) const {
        if (static_cast<int64_t>(v.shape.size()) != r)
            throw UserError() << where_ << ": " << what << " '" << v.name << "' must have rank "
                              << r << ", got shape " << shape_str(v.shape);
    }
    void min_rank(const Value& v, int64_t r, const char* what) const {
        if (static_cast<int64_t>(v.shape.size()) < r)
            throw UserError() << where_ << ": " << what << " '" << v.name
                              << "' must have rank >= " << r << ", got shape "
                              << shape_str(v.shape);
    }
    void scalar_of(const Value& v, DType t, const char* what) const {
        if (v.dtype != t || shape_numel(v.shape) != 1)
            throw UserError() << where_ << ": " << what << " must be a " << dtype_name(t)
                              << " scalar, got " << dtype_name(v.dtype) << shape_str(v.shape);
    }

    /// The compile-time value of operand i (shape operands); an error when unknown.
    const TensorData& value_of(size_t i, const char* what) const {
        in(i, what);
        const TensorData* t = inf_.known_value(n_.inputs[i]);
        if (!t)
            throw UserError() << where_ << ": " << must_be_constant(g_, n_.inputs[i], what);
        return *t;
    }
    std::vector<int64_t> ints_of(size_t i, const char* what) const {
        return int_elements(value_of(i, what), what, where_);
    }
    std::vector<int64_t> opt_ints_of(size_t i, const char* what) const {
        return has(i) ? ints_of(i, what) : std::vector<int64_t>{};
    }

  private:
    const Graph& g_;
    const Node& n_;
    const ShapeInferer& inf_;
    std::string where_;
};

/// Common inference rules, shared by several ops' entries.
/// One operand of the given dtypes; the output is its type.
template <const std::initializer_list<DType>& Allowed> TypeList same_as_input(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    t.dtype(x, Allowed, "input");
    return {{x.dtype, x.shape}};
}
/// The output is operand 0's type, whatever its dtype.
inline TypeList like_input(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    return {{x.dtype, x.shape}};
}

} // namespace tessera::graph::detail
