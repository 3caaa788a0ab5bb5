// The precision pass (bf16): matrix products on constant weights compute on bf16 operands with
// f32 sums (MatMulBF16); passes.h states the patterns.
#include <map>
#include <sstream>

#include "../ops/bf16_matmul.h"
#include "rewrite.h"

namespace tessera::graph {

using namespace detail;

const char* precision_name(Precision p) { return p == Precision::BF16 ? "bf16" : "fp32"; }

Precision parse_precision(const std::string& text) {
    for (Precision p : {Precision::FP32, Precision::BF16})
        if (text == precision_name(p))
            return p;
    throw UserError() << "unknown precision '" << text << "' (expected fp32 or bf16)";
}

namespace {

class Bf16Products {
  public:
    explicit Bf16Products(Graph& g) : g_(g) {}

    // Rewrites MatMul / Gemm node id when it has the pass's form; true when it did.
    bool convert(NodeId id) {
        const Node n = g_.node(id);
        const bool gemm = n.op == Op::Gemm;
        if (!is_plain_product(n))
            return false;
        const Value& x = g_.value(n.input(0));
        const Value& w = g_.value(n.input(1));
        if (x.dtype != DType::F32 || x.shape.empty() || (gemm && x.shape.size() != 2) ||
            !w.is_constant() || w.dtype != DType::F32 || w.shape.size() != 2)
            return false;
        const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
        const TensorData wkn = trans_b ? transposed_matrix(*w.constant) : *w.constant;
        const int64_t K = wkn.shape()[0];
        if (K != x.shape.back() || K % 2 != 0)
            return false;
        const ValueId words = g_.add_constant(w.name + "_bf16_words", pack_bf16_weight_words(wkn));
        const ValueId xb = bf16_of(n.input(0));
        const bool bias = gemm && n.inputs.size() > 2 && n.input(2) != kNoValue;
        if (!bias) {
            replace_node(g_, id, Op::MatMulBF16, {xb, words}, {});
            return true;
        }
        const Value& y = g_.value(n.outputs[0]);
        const ValueId product = g_.add_value(y.name + "/bf16_matmul", DType::F32, y.shape);
        g_.add_node(Op::MatMulBF16, {xb, words}, {product}, {}, n.name);
        replace_node(g_, id, Op::Add, {product, n.input(2)}, {});
        return true;
    }

  private:
    // Cast(v to bf16), one per value.
    ValueId bf16_of(ValueId v) {
        auto it = casts_.find(v);
        if (it != casts_.end())
            return it->second;
        const Value& val = g_.value(v);
        const ValueId b = g_.add_value(val.name + "/bf16", DType::BF16, val.shape);
        Attributes a;
        a["to"] = Attribute::of_string(dtype_name(DType::BF16));
        g_.add_node(Op::Cast, {v}, {b}, std::move(a), val.name + "/bf16");
        casts_.emplace(v, b);
        return b;
    }

    Graph& g_;
    std::map<ValueId, ValueId> casts_;
};

} // namespace

PassResult convert_precision_bf16(Graph& g) {
    PassResult r = begin_pass("precision", g);
    Bf16Products products(g);
    int matmuls = 0;
    for (NodeId id : g.topological_order()) {
        if (!g.is_live(id))
            continue;
        const Op op = g.node(id).op;
        if (op == Op::MatMul || op == Op::Gemm)
            matmuls += products.convert(id);
    }
    r.changes = matmuls;
    std::ostringstream os;
    os << matmuls << " matmuls to bf16";
    return end_pass(r, g, os.str());
}

} // namespace tessera::graph
