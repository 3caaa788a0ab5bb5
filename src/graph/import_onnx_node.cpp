// One ONNX node to canonical graph nodes: op lookup and opset range, operand counts, attribute
// names and kinds per opset, then the per-op normalization to the opset-17 form (see graph.h).
#include <algorithm>
#include <climits>

#include "onnx_import.h"
#include "onnx_tensor.h"
#include "op_util.h"

namespace tessera::graph::detail {

namespace {

using Kind = Attribute::Kind;
constexpr int kAny = INT_MAX;

// An attribute the op defines in opsets [since, until).
struct AttrSpec {
    const char* name;
    Kind kind;
    int since = 1;
    int until = kAny;
};

struct OpSpec {
    int since = 1; // first opset defining the op
    int min_in = 1, max_in = 1, max_out = 1;
    std::vector<AttrSpec> attrs;
};

// The operand counts and attributes of each op, per opset. clang-format off keeps one op per
// line or two, so the table reads as one.
// clang-format off
OpSpec spec_of(Op op) {
    using K = Kind;
    switch (op) {
    //                     since  inputs  max_out  attributes (name, kind, since, until)
    case Op::Conv:
        return {1, 2, 3, 1, {{"auto_pad", K::String}, {"dilations", K::Ints}, {"group", K::Int},
                             {"kernel_shape", K::Ints}, {"pads", K::Ints}, {"strides", K::Ints}}};
    case Op::Gemm:
        return {1, 2, 3, 1, {{"alpha", K::Float}, {"beta", K::Float}, {"transA", K::Int},
                             {"transB", K::Int}}};
    case Op::MatMul: return {1, 2, 2, 1, {}};
    case Op::BatchNormalization:
        return {1, 5, 5, 5, {{"epsilon", K::Float}, {"momentum", K::Float},
                             {"spatial", K::Int, 1, 9}, {"training_mode", K::Int, 14}}};
    case Op::Relu:
    case Op::Sigmoid:
    case Op::Tanh:
    case Op::Sqrt:
    case Op::Exp:
    case Op::Log:
    case Op::Neg:
    case Op::Reciprocal:
    case Op::Not:
    case Op::Identity:
    case Op::GlobalAveragePool: return {1, 1, 1, 1, {}};
    case Op::Erf: return {9, 1, 1, 1, {}};
    case Op::Gelu: return {20, 1, 1, 1, {}};
    // Internal ops of the layout pass, never in a model: no opset defines them.
    case Op::LayoutToBlocked:
    case Op::LayoutFromBlocked:
    case Op::ConvBlocked:
    case Op::MaxPoolBlocked:
    case Op::WinogradInput:
    case Op::WinogradOutput: return {1 << 30, 1, 3, 1, {}};
    case Op::HardSwish: return {14, 1, 1, 1, {}};
    case Op::Clip: return {1, 1, 3, 1, {{"min", K::Float, 1, 11}, {"max", K::Float, 1, 11}}};
    case Op::LeakyRelu: return {1, 1, 1, 1, {{"alpha", K::Float}}};
    case Op::HardSigmoid: return {1, 1, 1, 1, {{"alpha", K::Float}, {"beta", K::Float}}};
    case Op::Softmax: return {1, 1, 1, 1, {{"axis", K::Int}}};
    case Op::LayerNormalization:
        return {17, 2, 3, 3, {{"axis", K::Int}, {"epsilon", K::Float}, {"stash_type", K::Int}}};
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow:
    case Op::Equal:
    case Op::Less:
    case Op::Greater: return {1, 2, 2, 1, {}};
    case Op::Max:
    case Op::Min: return {1, 1, kAny, 1, {}};
    case Op::MaxPool:
        return {1, 1, 1, 2, {{"auto_pad", K::String}, {"ceil_mode", K::Int, 10},
                             {"dilations", K::Ints, 10}, {"kernel_shape", K::Ints},
                             {"pads", K::Ints}, {"storage_order", K::Int, 8},
                             {"strides", K::Ints}}};
    case Op::AveragePool:
        return {1, 1, 1, 1, {{"auto_pad", K::String}, {"ceil_mode", K::Int, 10},
                             {"count_include_pad", K::Int}, {"kernel_shape", K::Ints},
                             {"pads", K::Ints}, {"strides", K::Ints}}};
    case Op::Flatten: return {1, 1, 1, 1, {{"axis", K::Int}}};
    case Op::Reshape: return {5, 2, 2, 1, {{"allowzero", K::Int, 14}}};
    case Op::Transpose: return {1, 1, 1, 1, {{"perm", K::Ints}}};
    case Op::Concat: return {1, 1, kAny, 1, {{"axis", K::Int}}};
    case Op::Split: return {1, 1, 2, kAny, {{"axis", K::Int}, {"split", K::Ints, 1, 13}}};
    case Op::Slice:
        return {1, 1, 5, 1, {{"starts", K::Ints, 1, 10}, {"ends", K::Ints, 1, 10},
                             {"axes", K::Ints, 1, 10}}};
    case Op::Gather: return {1, 2, 2, 1, {{"axis", K::Int}}};
    case Op::Squeeze:
    case Op::Unsqueeze: return {1, 1, 2, 1, {{"axes", K::Ints, 1, 13}}};
    case Op::ReduceMean:
    case Op::ReduceMax: return {1, 1, 1, 1, {{"axes", K::Ints}, {"keepdims", K::Int}}};
    case Op::ReduceSum:
        return {1, 1, 2, 1, {{"axes", K::Ints, 1, 13}, {"keepdims", K::Int},
                             {"noop_with_empty_axes", K::Int, 13}}};
    case Op::Shape: return {1, 1, 1, 1, {{"start", K::Int, 15}, {"end", K::Int, 15}}};
    case Op::Constant:
        return {1, 0, 0, 1, {{"value", K::Tensor}, {"value_float", K::Float, 12},
                             {"value_floats", K::Floats, 12}, {"value_int", K::Int, 12},
                             {"value_ints", K::Ints, 12}}};
    case Op::ConstantOfShape: return {9, 1, 1, 1, {{"value", K::Tensor}}};
    case Op::Range: return {11, 3, 3, 1, {}};
    case Op::Expand: return {8, 2, 2, 1, {}};
    case Op::Where: return {9, 3, 3, 1, {}};
    case Op::Cast: return {1, 1, 1, 1, {{"to", K::Int}}};
    case Op::Pad:
        return {1, 1, 3, 1, {{"mode", K::String}, {"pads", K::Ints, 1, 11},
                             {"value", K::Float, 1, 11}}};
    case Op::Dropout:
        return {1, 1, 3, 2, {{"ratio", K::Float, 1, 12}, {"seed", K::Int, 12},
                             {"is_test", K::Int, 1, 7}}};
    }
    TESSERA_UNREACHABLE();
    return {};
}
// clang-format on

// The kind an AttributeProto carries: its type field, or (old writers leave it unset) the
// field that is populated.
std::optional<Kind> proto_kind(const onnx::AttributeProto& a) {
    switch (a.type()) {
    case onnx::AttributeProto::FLOAT:
        return Kind::Float;
    case onnx::AttributeProto::INT:
        return Kind::Int;
    case onnx::AttributeProto::STRING:
        return Kind::String;
    case onnx::AttributeProto::TENSOR:
        return Kind::Tensor;
    case onnx::AttributeProto::FLOATS:
        return Kind::Floats;
    case onnx::AttributeProto::INTS:
        return Kind::Ints;
    case onnx::AttributeProto::UNDEFINED:
        if (a.has_f())
            return Kind::Float;
        if (a.has_i())
            return Kind::Int;
        if (a.has_s())
            return Kind::String;
        if (a.has_t())
            return Kind::Tensor;
        if (a.floats_size())
            return Kind::Floats;
        if (a.ints_size())
            return Kind::Ints;
        return std::nullopt;
    default:
        return std::nullopt; // graphs, sparse tensors, lists of strings or tensors
    }
}

// Translates one ONNX node.
class NodeImport {
  public:
    NodeImport(ImportContext& ctx, const onnx::NodeProto& np, int index)
        : ctx_(ctx), np_(np), opset_(ctx.opset) {
        label_ = np.name().empty() ? "node #" + std::to_string(index) : "node '" + np.name() + "'";
        where_ = label_ + " (" + np.op_type() + ", opset " + std::to_string(opset_) + ")";
    }

    void run();

  private:
    [[noreturn]] void fail(const std::string& msg) const {
        throw UserError() << where_ << ": " << msg;
    }

    void check_op();
    void read_attributes(const OpSpec& spec);
    void resolve_operands(const OpSpec& spec);
    void expect_inputs(size_t lo, size_t hi) const {
        if (inputs_.size() < lo || inputs_.size() > hi)
            fail(
                "has " + std::to_string(inputs_.size()) + " inputs, expected " +
                (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                " in this opset");
    }
    // Only the first output may be used (training-only or unsupported extra outputs).
    void only_first_output(const char* why) const {
        for (int i = 1; i < np_.output_size(); ++i)
            if (!np_.output(i).empty())
                fail(std::string("output ") + std::to_string(i) + " ('" + np_.output(i) +
                     "') is not supported: " + why);
    }

    const Value& input_value(size_t i) const { return ctx_.g.value(inputs_.at(i)); }
    int64_t input_rank(size_t i) const { return static_cast<int64_t>(input_value(i).shape.size()); }
    // A new constant named after this node.
    ValueId constant(const std::string& suffix, TensorData t) {
        return ctx_.g.add_constant(base_name() + "/" + suffix, std::move(t));
    }
    ValueId ints_constant(const std::string& suffix, const std::vector<int64_t>& v) {
        return constant(suffix,
                        TensorData::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
    }
    std::string base_name() const { return np_.name().empty() ? np_.output(0) : np_.name(); }
    NodeId emit(Op op, std::vector<ValueId> ins, std::vector<ValueId> outs, Attributes attrs) {
        return ctx_.emit(op, std::move(ins), std::move(outs), std::move(attrs), np_.name());
    }
    // Attribute `key` (copied from the model) into the canonical set, or `def` when absent.
    void keep(const char* key, Attribute def) { out_[key] = src_.count(key) ? src_.at(key) : def; }
    void keep_if_present(const char* key) {
        if (src_.count(key))
            out_[key] = src_.at(key);
    }
    void window(bool is_conv);
    void softmax();

    ImportContext& ctx_;
    const onnx::NodeProto& np_;
    int64_t opset_;
    std::string label_; // "node 'name'", or "node #index" when unnamed
    std::string where_; // label_ plus op and opset: the prefix of messages
    Op op_ = Op::Identity;
    Attributes src_;              // the model's attributes
    Node view_;                   // src_ as a Node, for typed access with defaults
    Attributes out_;              // canonical attributes
    std::vector<ValueId> inputs_; // kNoValue for "" (absent optional)
    std::vector<ValueId> outputs_;
};

void NodeImport::check_op() {
    const std::string domain = np_.domain().empty() ? "" : " of domain '" + np_.domain() + "'";
    std::optional<Op> op = op_from_name(np_.op_type());
    if (!op || !(np_.domain().empty() || np_.domain() == "ai.onnx"))
        throw UserError() << "unsupported op '" << np_.op_type() << "'" << domain << " in "
                          << label_ << " (opset " << opset_ << ")";
    op_ = *op;
    // Ops only passes create (blocked layouts) have an unreachable `since`: not ONNX ops.
    if (spec_of(op_).since > 1000)
        throw UserError() << "unsupported op '" << np_.op_type() << "'" << domain << " in "
                          << label_ << ": an internal tessera op, not an ONNX op";
    if (spec_of(op_).since > opset_)
        fail("op " + np_.op_type() + " does not exist before opset " +
             std::to_string(spec_of(op_).since));
}

void NodeImport::read_attributes(const OpSpec& spec) {
    for (const onnx::AttributeProto& a : np_.attribute()) {
        const AttrSpec* s = nullptr;
        for (const AttrSpec& cand : spec.attrs)
            if (a.name() == cand.name && opset_ >= cand.since && opset_ < cand.until)
                s = &cand;
        if (!s)
            fail("unsupported attribute '" + a.name() + "'");
        if (!a.ref_attr_name().empty())
            fail("attribute '" + a.name() + "' refers to a function attribute");
        std::optional<Kind> kind = proto_kind(a);
        if (!kind || *kind != s->kind)
            fail("attribute '" + a.name() + "' must be " + attribute_kind_name(s->kind));
        if (src_.count(a.name()))
            fail("attribute '" + a.name() + "' is given twice");
        Attribute attr;
        switch (*kind) {
        case Kind::Int:
            attr = Attribute::of_int(a.i());
            break;
        case Kind::Float:
            attr = Attribute::of_float(a.f());
            break;
        case Kind::Ints:
            attr = Attribute::of_ints({a.ints().begin(), a.ints().end()});
            break;
        case Kind::Floats:
            attr = Attribute::of_floats({a.floats().begin(), a.floats().end()});
            break;
        case Kind::String:
            attr = Attribute::of_string(a.s());
            break;
        case Kind::Tensor:
            attr = Attribute::of_tensor(
                tensor_from_proto(a.t(), where_ + ": attribute '" + a.name() + "'", ctx_.base_dir));
            break;
        }
        src_[a.name()] = std::move(attr);
    }
    view_.op = op_;
    view_.name = np_.name();
    view_.attrs = src_;
}

void NodeImport::resolve_operands(const OpSpec& spec) {
    const int nin = np_.input_size();
    // Trailing "" inputs are absent optional ones: drop them.
    int last = nin;
    while (last > 0 && np_.input(last - 1).empty())
        --last;
    if (last < spec.min_in || last > spec.max_in)
        fail("has " + std::to_string(last) + " inputs, expected " +
             (spec.max_in == kAny
                  ? "at least " + std::to_string(spec.min_in)
                  : std::to_string(spec.min_in) + " to " + std::to_string(spec.max_in)));
    for (int i = 0; i < last; ++i) {
        const std::string& name = np_.input(i);
        if (name.empty()) {
            inputs_.push_back(kNoValue);
            continue;
        }
        auto it = ctx_.names.find(name);
        if (it == ctx_.names.end())
            fail("input '" + name +
                 "' is not defined (no initializer, graph input or earlier "
                 "node output has that name)");
        inputs_.push_back(it->second);
    }
    for (size_t i = 0; i < static_cast<size_t>(spec.min_in) && i < inputs_.size(); ++i)
        if (inputs_[i] == kNoValue)
            fail("required input " + std::to_string(i) + " is empty");
    int nout = np_.output_size();
    while (nout > 0 && np_.output(nout - 1).empty())
        --nout;
    if (nout < 1 || nout > spec.max_out)
        fail("has " + std::to_string(nout) + " outputs, expected " +
             (spec.max_out == 1 ? std::string("1")
                                : "1 to " + (spec.max_out == kAny ? std::string("any")
                                                                  : std::to_string(spec.max_out))));
    if (np_.output(0).empty())
        fail("output 0 has no name");
}

// Conv and pools: kernel, strides, dilations and explicit pads (auto_pad resolved).
void NodeImport::window(bool is_conv) {
    if (input_rank(0) != 4)
        fail("input '" + input_value(0).name + "' has shape " + shape_str(input_value(0).shape) +
             ": only 2-D (4-D NCHW input) " + np_.op_type() + " is supported");
    std::vector<int64_t> kernel = view_.attr_ints("kernel_shape");
    if (is_conv && kernel.empty()) {
        const Value& w = input_value(1);
        if (w.shape.size() != 4)
            fail("weight '" + w.name + "' must have rank 4, got shape " + shape_str(w.shape));
        kernel = {w.shape[2], w.shape[3]};
    }
    if (kernel.size() != 2)
        fail("kernel_shape must have 2 values (2-D only)");
    out_["kernel_shape"] = Attribute::of_ints(kernel);
    keep("strides", Attribute::of_ints({1, 1}));
    if (op_ != Op::AveragePool)
        keep("dilations", Attribute::of_ints({1, 1}));
    const std::string auto_pad = view_.attr_string("auto_pad", "NOTSET");
    if (auto_pad == "NOTSET") {
        keep("pads", Attribute::of_ints({0, 0, 0, 0}));
    } else if (auto_pad == "VALID") {
        out_["pads"] = Attribute::of_ints({0, 0, 0, 0});
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        std::vector<int64_t> strides = out_["strides"].ints;
        std::vector<int64_t> dil =
            op_ == Op::AveragePool ? std::vector<int64_t>{1, 1} : out_["dilations"].ints;
        if (strides.size() != 2 || dil.size() != 2)
            fail("strides and dilations must have 2 values");
        std::vector<int64_t> pads(4);
        for (int d = 0; d < 2; ++d) {
            if (strides[d] < 1)
                fail("stride " + std::to_string(strides[d]) + " is not positive");
            const int64_t in = input_value(0).shape[2 + d];
            const int64_t out = ceil_div(in, strides[d]);
            const int64_t total =
                std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - in);
            const int64_t small = total / 2, large = total - small;
            pads[d] = auto_pad == "SAME_UPPER" ? small : large;
            pads[d + 2] = auto_pad == "SAME_UPPER" ? large : small;
        }
        out_["pads"] = Attribute::of_ints(pads);
    } else {
        fail("unsupported auto_pad '" + auto_pad + "'");
    }
    if (is_conv)
        keep("group", Attribute::of_int(1));
    if (!is_conv)
        keep("ceil_mode", Attribute::of_int(0));
    if (op_ == Op::AveragePool)
        keep("count_include_pad", Attribute::of_int(0));
}

// Softmax before opset 13 normalizes the input coerced to 2-D at `axis`; from 13 on, one axis.
void NodeImport::softmax() {
    const int64_t rank = input_rank(0);
    if (rank == 0)
        fail("softmax of a scalar");
    const int64_t axis =
        normalize_axis(view_.attr_int("axis", opset_ >= 13 ? -1 : 1), rank, where_);
    if (opset_ >= 13 || axis == rank - 1) {
        emit(Op::Softmax, inputs_, outputs_, {{"axis", Attribute::of_int(axis)}});
        return;
    }
    const Shape shape = input_value(0).shape;
    ValueId flat = ctx_.g.add_value(base_name() + "/flatten");
    ValueId soft = ctx_.g.add_value(base_name() + "/softmax");
    emit(Op::Flatten, {inputs_[0]}, {flat}, {{"axis", Attribute::of_int(axis)}});
    emit(Op::Softmax, {flat}, {soft}, {{"axis", Attribute::of_int(1)}});
    emit(Op::Reshape, {soft, ints_constant("shape", shape)}, outputs_,
         {{"allowzero", Attribute::of_int(0)}});
}

void NodeImport::run() {
    check_op();
    const OpSpec spec = spec_of(op_);
    read_attributes(spec);
    resolve_operands(spec);

    // Constant: no node, the output is a constant value.
    if (op_ == Op::Constant) {
        if (src_.size() != 1)
            fail("needs exactly one value attribute");
        const auto& [key, a] = *src_.begin();
        TensorData t;
        if (key == "value")
            t = *a.t;
        else if (key == "value_float")
            t = TensorData::scalar(a.f);
        else if (key == "value_floats")
            t = TensorData::from_vector<float>({static_cast<int64_t>(a.floats.size())}, a.floats);
        else if (key == "value_int")
            t = TensorData::scalar(a.i);
        else
            t = TensorData::from_vector<int64_t>({static_cast<int64_t>(a.ints.size())}, a.ints);
        ValueId v = ctx_.g.add_constant(np_.output(0), std::move(t));
        ctx_.define(np_.output(0), v, where_);
        return;
    }

    // Output values; unnamed optional outputs in the middle get placeholder values.
    int nout = np_.output_size();
    while (nout > 0 && np_.output(nout - 1).empty())
        --nout;
    for (int i = 0; i < nout; ++i) {
        const std::string& name = np_.output(i);
        ValueId v =
            ctx_.g.add_value(name.empty() ? base_name() + "/unused" + std::to_string(i) : name);
        if (!name.empty())
            ctx_.define(name, v, where_);
        outputs_.push_back(v);
    }

    const auto f32_scalar = [&](float v) {
        return TensorData::scalar(v).cast(input_value(0).dtype);
    };
    switch (op_) {
    case Op::Conv:
        window(true);
        break;
    case Op::MaxPool:
        only_first_output("MaxPool indices");
        outputs_.resize(1);
        window(false);
        break;
    case Op::AveragePool:
        window(false);
        break;
    case Op::Gemm:
        keep("alpha", Attribute::of_float(1.0f));
        keep("beta", Attribute::of_float(1.0f));
        keep("transA", Attribute::of_int(0));
        keep("transB", Attribute::of_int(0));
        break;
    case Op::BatchNormalization:
        only_first_output("training-mode statistics");
        outputs_.resize(1);
        if (view_.attr_int("spatial", 1) != 1)
            fail("spatial=0 is not supported");
        if (view_.attr_int("training_mode", 0) != 0)
            fail("training_mode=1 is not supported");
        keep("epsilon", Attribute::of_float(1e-5f));
        break;
    case Op::Clip:
        if (opset_ < 11) {
            expect_inputs(1, 1);
            // Bounds become inputs; absent ones stay absent (unbounded).
            inputs_.push_back(src_.count("min") ? constant("min", f32_scalar(src_["min"].f))
                                                : kNoValue);
            if (src_.count("max"))
                inputs_.push_back(constant("max", f32_scalar(src_["max"].f)));
            if (inputs_.back() == kNoValue)
                inputs_.pop_back();
        }
        break;
    case Op::LeakyRelu:
        keep("alpha", Attribute::of_float(0.01f));
        break;
    case Op::HardSigmoid:
        keep("alpha", Attribute::of_float(0.2f));
        keep("beta", Attribute::of_float(0.5f));
        break;
    case Op::Softmax:
        softmax();
        return;
    case Op::LayerNormalization:
        if (view_.attr_int("stash_type", 1) != 1)
            fail("stash_type other than 1 (float) is not supported");
        out_["axis"] =
            Attribute::of_int(normalize_axis(view_.attr_int("axis", -1), input_rank(0), where_));
        keep("epsilon", Attribute::of_float(1e-5f));
        break;
    case Op::Relu:
    case Op::Sigmoid:
    case Op::HardSwish:
    case Op::Tanh:
    case Op::Erf:
    case Op::Gelu:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow:
    case Op::Sqrt:
    case Op::Exp:
    case Op::Log:
    case Op::Neg:
    case Op::Reciprocal:
    case Op::Max:
    case Op::Min:
    case Op::GlobalAveragePool:
    case Op::LayoutToBlocked:
    case Op::LayoutFromBlocked:
    case Op::ConvBlocked:
    case Op::MaxPoolBlocked:
    case Op::WinogradInput:
    case Op::WinogradOutput:
    case Op::MatMul:
    case Op::Range:
    case Op::Expand:
    case Op::Where:
    case Op::Identity:
    case Op::Equal:
    case Op::Less:
    case Op::Greater:
    case Op::Not:
        break;
    case Op::Flatten: {
        const int64_t rank = input_rank(0);
        int64_t axis = view_.attr_int("axis", 1);
        if (axis < -rank || axis > rank)
            fail("axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
        out_["axis"] = Attribute::of_int(axis < 0 ? axis + rank : axis);
        break;
    }
    case Op::Reshape:
        keep("allowzero", Attribute::of_int(0));
        break;
    case Op::Transpose:
        out_["perm"] =
            Attribute::of_ints(transpose_perm(view_.attr_ints("perm"), input_rank(0), where_));
        break;
    case Op::Concat:
        if (!src_.count("axis"))
            fail("attribute 'axis' is missing");
        if (input_rank(0) == 0)
            fail("cannot concatenate scalars");
        out_["axis"] =
            Attribute::of_int(normalize_axis(view_.attr_int("axis", 0), input_rank(0), where_));
        break;
    case Op::Split:
        if (opset_ < 13) {
            expect_inputs(1, 1);
            if (src_.count("split"))
                inputs_.push_back(ints_constant("split", src_["split"].ints));
        }
        out_["axis"] =
            Attribute::of_int(normalize_axis(view_.attr_int("axis", 0), input_rank(0), where_));
        break;
    case Op::Slice:
        if (opset_ < 10) {
            expect_inputs(1, 1);
            if (!src_.count("starts") || !src_.count("ends"))
                fail("attributes 'starts' and 'ends' are required");
            inputs_.push_back(ints_constant("starts", src_["starts"].ints));
            inputs_.push_back(ints_constant("ends", src_["ends"].ints));
            if (src_.count("axes"))
                inputs_.push_back(ints_constant("axes", src_["axes"].ints));
        } else {
            expect_inputs(3, 5);
        }
        break;
    case Op::Gather:
        if (input_rank(0) == 0)
            fail("gather from a scalar");
        out_["axis"] =
            Attribute::of_int(normalize_axis(view_.attr_int("axis", 0), input_rank(0), where_));
        break;
    case Op::Squeeze:
    case Op::Unsqueeze:
        if (opset_ < 13) {
            expect_inputs(1, 1);
            if (op_ == Op::Unsqueeze && !src_.count("axes"))
                fail("attribute 'axes' is required");
            if (src_.count("axes"))
                inputs_.push_back(ints_constant("axes", src_["axes"].ints));
        } else if (op_ == Op::Unsqueeze) {
            expect_inputs(2, 2);
        }
        break;
    case Op::ReduceMean:
    case Op::ReduceMax:
        keep_if_present("axes");
        keep("keepdims", Attribute::of_int(1));
        break;
    case Op::ReduceSum:
        if (opset_ < 13) {
            expect_inputs(1, 1);
            if (src_.count("axes"))
                inputs_.push_back(ints_constant("axes", src_["axes"].ints));
        }
        keep("keepdims", Attribute::of_int(1));
        keep("noop_with_empty_axes", Attribute::of_int(0));
        break;
    case Op::Shape:
        keep_if_present("start");
        keep_if_present("end");
        break;
    case Op::Constant:
        TESSERA_UNREACHABLE();
        break;
    case Op::ConstantOfShape:
        keep("value", Attribute::of_tensor(TensorData::from_vector<float>({1}, {0.0f})));
        break;
    case Op::Cast: {
        if (!src_.count("to"))
            fail("attribute 'to' is missing");
        std::optional<DType> t = dtype_from_onnx(static_cast<int32_t>(src_["to"].i));
        if (!t)
            fail("cast to " + onnx_type_name(static_cast<int32_t>(src_["to"].i)) +
                 " is not supported");
        out_["to"] = Attribute::of_string(dtype_name(*t));
        break;
    }
    case Op::Pad:
        if (opset_ < 11) {
            expect_inputs(1, 1);
            if (!src_.count("pads"))
                fail("attribute 'pads' is required");
            inputs_.push_back(ints_constant("pads", src_["pads"].ints));
            inputs_.push_back(constant("value", f32_scalar(view_.attr_float("value", 0.0f))));
        }
        keep("mode", Attribute::of_string("constant"));
        break;
    case Op::Dropout:
        if (opset_ < 12)
            expect_inputs(1, 1);
        if (inputs_.size() > 2 && inputs_[2] != kNoValue) {
            const TensorData* mode = ctx_.inf.known_value(inputs_[2]);
            if (!mode || mode->numel() != 1)
                fail("training_mode must be a constant scalar");
            if (mode->as_i64()[0] != 0)
                fail("training_mode=true is not supported");
        }
        inputs_.resize(1); // ratio and training_mode do not matter in inference
        break;
    }
    emit(op_, inputs_, outputs_, out_);
}

} // namespace

void ImportContext::define(const std::string& name, ValueId v, const std::string& where) {
    if (!names.emplace(name, v).second)
        throw UserError() << where << ": value '" << name << "' is already defined";
}

NodeId ImportContext::emit(Op op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                           Attributes attrs, const std::string& name) {
    NodeId id = g.add_node(op, std::move(inputs), std::move(outputs), std::move(attrs), name);
    inf.infer(id);
    return id;
}

void import_node(ImportContext& ctx, const onnx::NodeProto& np, int index) {
    NodeImport(ctx, np, index).run();
}

} // namespace tessera::graph::detail
