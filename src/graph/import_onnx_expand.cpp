// The quantized operators of ONNX's QOperator format, imported as the standard ONNX nodes that
// compute them (each then goes through its own entry of the operator table):
//   MatMulInteger(A, B, a_zp?, b_zp?)      -> i32: (A - a_zp) x (B - b_zp)
//   QLinearMatMul(a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp)
//                                          -> QuantizeLinear((a - a_zp) x (b - b_zp) * a_s * b_s)
//   ConvInteger(x, w, x_zp?, w_zp?) with Conv's attributes -> i32: Conv(x - x_zp, w - w_zp)
//   QLinearConv(x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp, B?) with Conv's attributes
//                                          -> QuantizeLinear(Conv(x_s (x - x_zp), w_s (w - w_zp))
//                                             + B * x_s * w_s)
//   DynamicQuantizeLinear(x)               -> y, y_scale, y_zero_point of ONNX's definition
// The products accumulate in f32 on the zero-point-shifted integers, as the f32 ops do: exact
// while the partial sums stay below 2^24 in magnitude (u8 x s8 products are below 2^15), which
// integer kernels will not need. The expansions use only ops and operand forms that exist at
// every opset the quantized ops do (10 and later), so the model's opset imports them all.
#include <string>
#include <vector>

#include "onnx_import.h"
#include "onnx_tensor.h"

namespace tessera::graph::detail {

namespace {

// Builds the replacement nodes of one ONNX node: fresh value names under the node's name, and
// constants as initializers of the import.
class Expansion {
  public:
    Expansion(ImportContext& ctx, const onnx::NodeProto& np, int index)
        : ctx_(ctx), np_(np), index_(index),
          base_((np.name().empty() ? np.output(0) : np.name()) + "/") {}

    std::string in(int i) const { return i < np_.input_size() ? np_.input(i) : std::string(); }
    const Value& value(const std::string& name) const {
        auto it = ctx_.names.find(name);
        if (it == ctx_.names.end())
            throw UserError() << where() << ": input '" << name << "' is not defined";
        return ctx_.g.value(it->second);
    }
    std::string where() const {
        return "node '" + (np_.name().empty() ? np_.output(0) : np_.name()) + "' (" +
               np_.op_type() + ")";
    }

    /// Imports `op_type` on `inputs`; returns its output (named `out`, or a fresh name).
    std::string node(const std::string& op_type, std::vector<std::string> inputs,
                     std::string out = "", const onnx::NodeProto* attrs_from = nullptr,
                     std::vector<std::pair<std::string, int64_t>> ints = {}) {
        onnx::NodeProto n;
        n.set_op_type(op_type);
        n.set_name(base_ + op_type + std::to_string(serial_));
        if (out.empty())
            out = base_ + std::to_string(serial_);
        ++serial_;
        for (const std::string& s : inputs)
            n.add_input(s);
        n.add_output(out);
        if (attrs_from)
            *n.mutable_attribute() = attrs_from->attribute();
        for (const auto& [k, v] : ints) {
            auto* a = n.add_attribute();
            a->set_name(k);
            a->set_type(onnx::AttributeProto::INT);
            a->set_i(v);
        }
        import_node(ctx_, n, index_);
        return out;
    }
    std::string constant(TensorData t) {
        const std::string name = base_ + "c" + std::to_string(serial_++);
        ctx_.define(name, ctx_.g.add_constant(name, std::move(t)), where());
        return name;
    }
    std::string to_float(const std::string& v) {
        return node("Cast", {v}, "", nullptr, {{"to", onnx::TensorProto::FLOAT}});
    }
    /// x - zero_point in f32 (x alone when the zero point is absent); a 1-D zero point of
    /// `per_rows` elements applies per row (reshaped to [n, 1]).
    std::string shifted(const std::string& x, const std::string& zp, bool per_rows) {
        std::string xf = to_float(x);
        if (zp.empty())
            return xf;
        return node("Sub", {xf, rows(to_float(zp), per_rows)});
    }
    /// v reshaped to [n, 1] when it is 1-D of n > 1 elements and per_rows; else v.
    std::string rows(const std::string& v, bool per_rows) {
        const Shape s = value(v).shape; // a copy: constants added below move the storage
        if (!per_rows || s.size() != 1 || s[0] == 1)
            return v;
        return node("Reshape", {v, constant(TensorData::from_vector<int64_t>({2}, {s[0], 1}))});
    }
    /// v reshaped to [n, 1, ..., 1] (rank `rank`) when it is 1-D of n > 1 elements.
    std::string channels(const std::string& v, size_t rank) {
        const Shape s = value(v).shape; // a copy: constants added below move the storage
        if (s.size() != 1 || s[0] == 1)
            return v;
        std::vector<int64_t> shape(rank, 1);
        shape[0] = s[0];
        return node("Reshape",
                    {v, constant(TensorData::from_vector<int64_t>({int64_t(rank)}, shape))});
    }
    const onnx::NodeProto& proto() const { return np_; }

  private:
    ImportContext& ctx_;
    const onnx::NodeProto& np_;
    int index_;
    std::string base_;
    int serial_ = 0;
};

void expand_matmul_integer(Expansion& e) {
    const std::string a = e.shifted(e.in(0), e.in(2), true);
    const std::string b = e.shifted(e.in(1), e.in(3), false);
    const std::string y = e.node("MatMul", {a, b});
    e.node("Cast", {y}, e.proto().output(0), nullptr, {{"to", onnx::TensorProto::INT32}});
}

void expand_qlinear_matmul(Expansion& e) {
    const std::string a = e.shifted(e.in(0), e.in(2), true);
    const std::string b = e.shifted(e.in(3), e.in(5), false);
    std::string y = e.node("MatMul", {a, b});
    y = e.node("Mul", {y, e.rows(e.in(1), true)});
    y = e.node("Mul", {y, e.in(4)});
    e.node("QuantizeLinear", {y, e.in(6), e.in(7)}, e.proto().output(0));
}

void expand_conv_integer(Expansion& e) {
    const size_t rank = e.value(e.in(1)).shape.size();
    const std::string x = e.shifted(e.in(0), e.in(2), false);
    std::string w = e.to_float(e.in(1));
    if (!e.in(3).empty())
        w = e.node("Sub", {w, e.channels(e.to_float(e.in(3)), rank)});
    const std::string y = e.node("Conv", {x, w}, "", &e.proto());
    e.node("Cast", {y}, e.proto().output(0), nullptr, {{"to", onnx::TensorProto::INT32}});
}

void expand_qlinear_conv(Expansion& e) {
    const size_t rank = e.value(e.in(3)).shape.size();
    const std::string x = e.node("Mul", {e.shifted(e.in(0), e.in(2), false), e.in(1)});
    std::string w = e.to_float(e.in(3));
    if (!e.in(5).empty())
        w = e.node("Sub", {w, e.channels(e.to_float(e.in(5)), rank)});
    w = e.node("Mul", {w, e.channels(e.in(4), rank)});
    std::vector<std::string> conv_in = {x, w};
    if (!e.in(8).empty()) // the i32 bias, in units of x_scale * w_scale
        conv_in.push_back(e.node("Mul", {e.node("Mul", {e.to_float(e.in(8)), e.in(1)}), e.in(4)}));
    const std::string y = e.node("Conv", conv_in, "", &e.proto());
    e.node("QuantizeLinear", {y, e.in(6), e.in(7)}, e.proto().output(0));
}

// ONNX's definition: the range of x widened to include 0, mapped onto [0, 255].
void expand_dynamic_quantize(Expansion& e) {
    const std::string zero = e.constant(TensorData::scalar(0.0f));
    const std::string lo =
        e.node("Min", {e.node("ReduceMin", {e.in(0)}, "", nullptr, {{"keepdims", 0}}), zero});
    const std::string hi =
        e.node("Max", {e.node("ReduceMax", {e.in(0)}, "", nullptr, {{"keepdims", 0}}), zero});
    const std::string scale =
        e.node("Div", {e.node("Sub", {hi, lo}), e.constant(TensorData::scalar(255.0f))},
               e.proto().output_size() > 1 ? e.proto().output(1) : "");
    const std::string zp_f =
        e.node("Clip", {e.node("Round", {e.node("Div", {e.node("Sub", {zero, lo}), scale})}), zero,
                        e.constant(TensorData::scalar(255.0f))});
    const std::string zp =
        e.node("Cast", {zp_f}, e.proto().output_size() > 2 ? e.proto().output(2) : "", nullptr,
               {{"to", onnx::TensorProto::UINT8}});
    e.node("QuantizeLinear", {e.in(0), scale, zp}, e.proto().output(0));
}

struct ExpandedOp {
    const char* op_type;
    int since;
    int min_inputs, max_inputs;
    void (*expand)(Expansion&);
};
const ExpandedOp kExpanded[] = {
    {"MatMulInteger", 10, 2, 4, expand_matmul_integer},
    {"QLinearMatMul", 10, 8, 8, expand_qlinear_matmul},
    {"ConvInteger", 10, 2, 4, expand_conv_integer},
    {"QLinearConv", 10, 8, 9, expand_qlinear_conv},
    {"DynamicQuantizeLinear", 11, 1, 1, expand_dynamic_quantize},
};

} // namespace

bool import_expanded_node(ImportContext& ctx, const onnx::NodeProto& np, int index) {
    if (!(np.domain().empty() || np.domain() == "ai.onnx"))
        return false;
    for (const ExpandedOp& op : kExpanded) {
        if (np.op_type() != op.op_type)
            continue;
        Expansion e(ctx, np, index);
        if (ctx.opset < op.since)
            throw UserError() << e.where() << " is not defined at opset " << ctx.opset;
        int n = np.input_size();
        while (n > 0 && np.input(n - 1).empty())
            --n;
        if (n < op.min_inputs || n > op.max_inputs)
            throw UserError() << e.where() << ": has " << n << " inputs, expected "
                              << (op.min_inputs == op.max_inputs
                                      ? std::to_string(op.min_inputs)
                                      : std::to_string(op.min_inputs) + " to " +
                                            std::to_string(op.max_inputs));
        if (np.output_size() < 1 || np.output(0).empty())
            throw UserError() << e.where() << ": output 0 has no name";
        op.expand(e);
        return true;
    }
    return false;
}

} // namespace tessera::graph::detail
