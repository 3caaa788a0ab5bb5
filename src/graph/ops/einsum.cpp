// Einsum: products of tensors summed over the letters the output does not keep.
//
// Canonical form: Einsum(inputs...) equation in explicit form without spaces ("ij,jk->ik"; the
// implicit form gets its output: the letters that occur once, in alphabetical order). A letter
// repeated within one operand reads its diagonal. Ellipsis ("...") is refused. The kernel is
// one te::compute summing over the contracted letters; transformers emit the batched matmul
// forms ("bhid,bhjd->bhij", "bhij,bhjd->bhid").
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <numeric>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/ir/op.h"
#include "tessera/te/ops_extra.h"

namespace tessera::graph::detail {

namespace {

using te::Expr;
using te::Var;

// A parsed equation: one letter string per operand and the output's letters.
struct EinsumEq {
    std::vector<std::string> inputs;
    std::string output;
    std::string text() const {
        std::string s;
        for (size_t i = 0; i < inputs.size(); ++i)
            s += (i ? "," : "") + inputs[i];
        return s + "->" + output;
    }
};

// Parses `eq` for `n` operands; the implicit form gets the letters that occur once, sorted.
EinsumEq parse_einsum(const std::string& eq, size_t n, const std::string& where) {
    std::string s;
    for (char c : eq)
        if (c != ' ')
            s += c;
    if (s.find("...") != std::string::npos || s.find('.') != std::string::npos)
        throw UserError() << where << ": equation '" << eq
                          << "' uses an ellipsis, which tessera does not support";
    EinsumEq e;
    const size_t arrow = s.find("->");
    const std::string lhs = s.substr(0, arrow);
    size_t start = 0;
    while (true) {
        const size_t comma = lhs.find(',', start);
        e.inputs.push_back(lhs.substr(start, comma - start));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    auto letters_only = [&](const std::string& t) {
        for (char c : t)
            if (!std::isalpha(static_cast<unsigned char>(c)))
                throw UserError() << where << ": equation '" << eq << "' has '" << c
                                  << "', expected letters";
    };
    for (const std::string& t : e.inputs)
        letters_only(t);
    if (e.inputs.size() != n)
        throw UserError() << where << ": equation '" << eq << "' has " << e.inputs.size()
                          << " operands, the node " << n;
    if (arrow != std::string::npos) {
        e.output = s.substr(arrow + 2);
        letters_only(e.output);
        for (size_t i = 0; i < e.output.size(); ++i) {
            if (e.output.find(e.output[i], i + 1) != std::string::npos)
                throw UserError() << where << ": output letter '" << e.output[i]
                                  << "' is repeated in '" << eq << "'";
            if (lhs.find(e.output[i]) == std::string::npos)
                throw UserError() << where << ": output letter '" << e.output[i]
                                  << "' is in no operand of '" << eq << "'";
        }
    } else {
        for (char c : lhs)
            if (c != ',' && std::count(lhs.begin(), lhs.end(), c) == 1)
                e.output += c;
        std::sort(e.output.begin(), e.output.end());
    }
    return e;
}

// The extent of every letter (index by char), checked against every operand's shape.
std::array<int64_t, 128> einsum_dims(const EinsumEq& e, const std::vector<Shape>& shapes,
                                     const std::string& where) {
    std::array<int64_t, 128> dim;
    dim.fill(-1);
    for (size_t i = 0; i < e.inputs.size(); ++i) {
        const std::string& t = e.inputs[i];
        if (t.size() != shapes[i].size())
            throw UserError() << where << ": operand " << i << " has shape " << shape_str(shapes[i])
                              << ", its subscripts '" << t << "' rank " << t.size();
        for (size_t d = 0; d < t.size(); ++d) {
            int64_t& x = dim[static_cast<unsigned char>(t[d])];
            if (x >= 0 && x != shapes[i][d])
                throw UserError() << where << ": letter '" << t[d] << "' has extents " << x
                                  << " and " << shapes[i][d];
            x = shapes[i][d];
        }
    }
    return dim;
}

// The letters summed over: in some operand, not in the output (in order of appearance).
std::string contracted(const EinsumEq& e) {
    std::string c;
    for (const std::string& t : e.inputs)
        for (char l : t)
            if (e.output.find(l) == std::string::npos && c.find(l) == std::string::npos)
                c += l;
    return c;
}

EinsumEq node_einsum(const Node& n, const std::string& where) {
    return parse_einsum(n.attr_string("equation"), n.inputs.size(), where);
}

EvalOutputs eval_einsum(const Node& n, const EvalInputs& in, const std::string& where) {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < in.size(); ++i) {
        const TensorData& t = require_input(in, i, where);
        require_dtype(t, kNumeric, "input", where);
        if (t.dtype() != in[0]->dtype())
            throw UserError() << where << ": input " << i << " is " << dtype_name(t.dtype())
                              << ", input 0 is " << dtype_name(in[0]->dtype());
        shapes.push_back(t.shape());
    }
    const EinsumEq e = node_einsum(n, where);
    const std::array<int64_t, 128> dim = einsum_dims(e, shapes, where);
    // All letters: the output's, then the summed ones; one loop nest over them.
    const std::string all = e.output + contracted(e);
    Shape extents;
    for (char l : all)
        extents.push_back(dim[static_cast<unsigned char>(l)]);
    Shape out_shape(extents.begin(), extents.begin() + e.output.size());
    // Each operand's stride per letter of `all` (a repeated letter adds its strides).
    std::vector<std::vector<int64_t>> strides(in.size(), std::vector<int64_t>(all.size(), 0));
    for (size_t i = 0; i < in.size(); ++i) {
        const std::vector<int64_t> cs = contiguous_strides(shapes[i]);
        for (size_t d = 0; d < e.inputs[i].size(); ++d)
            strides[i][all.find(e.inputs[i][d])] += cs[d];
    }
    TensorData out(in[0]->dtype(), out_shape);
    const int64_t per_out = out.numel() ? shape_numel(extents) / out.numel() : 0;
    visit_computed(out.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
        T* po = out.data<T>();
        std::vector<int64_t> idx(all.size(), 0);
        for (int64_t o = 0; o < out.numel(); ++o) {
            Acc acc = 0;
            for (int64_t s = 0; s < per_out; ++s, next_index(idx, extents)) {
                Acc prod = 1;
                for (size_t i = 0; i < in.size(); ++i) {
                    int64_t off = 0;
                    for (size_t d = 0; d < all.size(); ++d)
                        off += idx[d] * strides[i][d];
                    prod *= static_cast<Acc>(in[i]->data<T>()[off]);
                }
                acc += prod;
            }
            po[o] = static_cast<T>(acc);
        }
        return 0;
    });
    return {std::move(out)};
}

TypeList einsum_types(const NodeTypes& t) {
    std::vector<Shape> shapes;
    const Value& a = t.in(0, "input");
    t.dtype(a, kNumeric, "input");
    for (size_t i = 0; i < t.num_inputs(); ++i) {
        t.same_dtype(a, t.in(i, "input"));
        shapes.push_back(t.in(i, "input").shape);
    }
    const EinsumEq e = node_einsum(t.node(), t.where());
    const std::array<int64_t, 128> dim = einsum_dims(e, shapes, t.where());
    Shape out;
    for (char l : e.output)
        out.push_back(dim[static_cast<unsigned char>(l)]);
    return {{a.dtype, out}};
}

void import_einsum(OpImport& im) {
    if (!im.has("equation"))
        im.fail("attribute 'equation' is missing");
    const EinsumEq e = parse_einsum(im.attr("equation").s, im.inputs().size(), im.where());
    im.set("equation", Attribute::of_string(e.text()));
}

// out[output letters] = sum over the contracted letters of the product of the operands.
void einsum_kernel(NodeKernel& k) {
    const EinsumEq e = node_einsum(k.node(), k.where());
    std::vector<te::Tensor> xs;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < k.node().inputs.size(); ++i) {
        xs.push_back(k.in(i));
        shapes.push_back(xs.back().shape());
    }
    const std::array<int64_t, 128> dim = einsum_dims(e, shapes, k.where());
    const std::string summed = contracted(e);
    std::vector<te::IterVar> r;
    for (char l : summed)
        r.push_back(te::reduce_axis(dim[static_cast<unsigned char>(l)], std::string(1, l)));
    k.set(te::compute(
        k.output_value().shape,
        [&](const std::vector<Var>& i) {
            auto letter = [&](char l) -> Expr {
                const size_t o = e.output.find(l);
                return o != std::string::npos ? Expr(i[o]) : Expr(r[summed.find(l)].var);
            };
            Expr prod;
            for (size_t t = 0; t < xs.size(); ++t) {
                std::vector<Expr> at;
                for (char l : e.inputs[t])
                    at.push_back(letter(l));
                prod = t == 0 ? xs[t](at) : prod * xs[t](at);
            }
            return r.empty() ? prod : te::sum(prod, r);
        },
        "einsum"));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef Einsum = OpDef(Op::Einsum)
                         .onnx(12, 1, OpDef::kAnyCount, 1, {{"equation", Attribute::Kind::String}})
                         .import_with(import_einsum)
                         .types(einsum_types)
                         .eval(eval_einsum)
                         .fuses_as(FusionKind::Reduction)
                         .builds(einsum_kernel);

} // namespace tessera::graph::ops
