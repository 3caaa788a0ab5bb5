// One ONNX node to canonical graph nodes: the op's table entry (ops/op_def.h) gives its opset
// range, operand counts and attributes per opset, checked here; its canonicalization then
// rewrites the node into the form shape inference, the evaluator and the kernels accept.
#include "ops/op_import.h"

#include <optional>

#include "onnx_import.h"
#include "onnx_tensor.h"
#include "op_util.h"
#include "ops/op_def.h"

namespace tessera::graph::detail {

namespace {

using Kind = Attribute::Kind;

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

} // namespace

OpImport::OpImport(ImportContext& ctx, const onnx::NodeProto& np, int index)
    : ctx_(ctx), np_(np), opset_(ctx.opset) {
    label_ = np.name().empty() ? "node #" + std::to_string(index) : "node '" + np.name() + "'";
    where_ = label_ + " (" + np.op_type() + ", opset " + std::to_string(opset_) + ")";
}

const std::string& OpImport::op_type() const { return np_.op_type(); }

void OpImport::fail(const std::string& msg) const { throw UserError() << where_ << ": " << msg; }

void OpImport::fail_not_constant(size_t i, const std::string& what) const {
    fail(must_be_constant(ctx_.g, inputs_.at(i), what));
}

void OpImport::keep(const char* key, Attribute def) {
    out_[key] = view_.attrs.count(key) ? view_.attrs.at(key) : std::move(def);
}

void OpImport::keep_if_present(const char* key) {
    if (view_.attrs.count(key))
        out_[key] = view_.attrs.at(key);
}

const Value& OpImport::input_value(size_t i) const { return ctx_.g.value(inputs_.at(i)); }

int64_t OpImport::input_rank(size_t i) const {
    return static_cast<int64_t>(input_value(i).shape.size());
}

const TensorData* OpImport::known_value(ValueId v) const { return ctx_.inf.known_value(v); }

void OpImport::expect_inputs(size_t lo, size_t hi) const {
    if (inputs_.size() < lo || inputs_.size() > hi)
        fail("has " + std::to_string(inputs_.size()) + " inputs, expected " +
             (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
             " in this opset");
}

void OpImport::only_first_output(const char* why) const {
    for (int i = 1; i < np_.output_size(); ++i)
        if (!np_.output(i).empty())
            fail(std::string("output ") + std::to_string(i) + " ('" + np_.output(i) +
                 "') is not supported: " + why);
}

std::string OpImport::base_name() const { return np_.name().empty() ? np_.output(0) : np_.name(); }

ValueId OpImport::constant(const std::string& suffix, TensorData t) {
    return ctx_.g.add_constant(base_name() + "/" + suffix, std::move(t));
}

ValueId OpImport::ints_constant(const std::string& suffix, const std::vector<int64_t>& v) {
    return constant(suffix, TensorData::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

ValueId OpImport::new_value(const std::string& suffix) {
    return ctx_.g.add_value(base_name() + "/" + suffix);
}

NodeId OpImport::emit(Op op, std::vector<ValueId> ins, std::vector<ValueId> outs,
                      Attributes attrs) {
    emitted_ = true;
    return ctx_.emit(op, std::move(ins), std::move(outs), std::move(attrs), np_.name());
}

void OpImport::define_output_constant(TensorData t) {
    TESSERA_CHECK(!outputs_made_) << where_ << ": outputs made before the constant";
    ValueId v = ctx_.g.add_constant(np_.output(0), std::move(t));
    ctx_.define(np_.output(0), v, where_);
    emitted_ = true;
}

void OpImport::check_op() {
    const std::string domain = np_.domain().empty() ? "" : " of domain '" + np_.domain() + "'";
    std::optional<Op> op = op_from_name(np_.op_type());
    if (!op || !(np_.domain().empty() || np_.domain() == "ai.onnx"))
        throw UserError() << "unsupported op '" << np_.op_type() << "'" << domain << " in "
                          << label_ << " (opset " << opset_ << ")";
    op_ = *op;
    const OpDef& def = op_def(op_);
    if (def.since == OpDef::kNotOnnx)
        throw UserError() << "unsupported op '" << np_.op_type() << "'" << domain << " in "
                          << label_ << ": an internal tessera op, not an ONNX op";
    if (def.since > opset_)
        fail("op " + np_.op_type() + " does not exist before opset " + std::to_string(def.since));
    if (opset_ < def.min_opset || opset_ > def.max_opset)
        fail("op " + np_.op_type() + " is supported at opsets " + std::to_string(def.min_opset) +
             " to " + std::to_string(def.max_opset) + " only");
}

void OpImport::read_attributes() {
    const OpDef& def = op_def(op_);
    for (const onnx::AttributeProto& a : np_.attribute()) {
        const AttrSpec* s = nullptr;
        for (const AttrSpec& cand : def.attrs)
            if (a.name() == cand.name && opset_ >= cand.since && opset_ < cand.until)
                s = &cand;
        if (!s)
            fail("unsupported attribute '" + a.name() + "'");
        if (!a.ref_attr_name().empty())
            fail("attribute '" + a.name() + "' refers to a function attribute");
        std::optional<Kind> kind = proto_kind(a);
        if (!kind || *kind != s->kind)
            fail("attribute '" + a.name() + "' must be " + attribute_kind_name(s->kind));
        if (view_.attrs.count(a.name()))
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
        view_.attrs[a.name()] = std::move(attr);
    }
    view_.op = op_;
    view_.name = np_.name();
}

void OpImport::resolve_operands() {
    const OpDef& def = op_def(op_);
    const int nin = np_.input_size();
    // Trailing "" inputs are absent optional ones: drop them.
    int last = nin;
    while (last > 0 && np_.input(last - 1).empty())
        --last;
    if (last < def.min_inputs || last > def.max_inputs)
        fail("has " + std::to_string(last) + " inputs, expected " +
             (def.max_inputs == OpDef::kAnyCount
                  ? "at least " + std::to_string(def.min_inputs)
                  : std::to_string(def.min_inputs) + " to " + std::to_string(def.max_inputs)));
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
    for (size_t i = 0; i < static_cast<size_t>(def.min_inputs) && i < inputs_.size(); ++i)
        if (inputs_[i] == kNoValue)
            fail("required input " + std::to_string(i) + " is empty");
    int nout = np_.output_size();
    while (nout > 0 && np_.output(nout - 1).empty())
        --nout;
    if (nout < 1 || nout > def.max_outputs)
        fail("has " + std::to_string(nout) + " outputs, expected " +
             (def.max_outputs == 1 ? std::string("1")
                                   : "1 to " + (def.max_outputs == OpDef::kAnyCount
                                                    ? std::string("any")
                                                    : std::to_string(def.max_outputs))));
    if (np_.output(0).empty())
        fail("output 0 has no name");
}

// Output values, made on first use (an op that becomes a constant makes none); unnamed
// optional outputs in the middle get placeholder values.
std::vector<ValueId>& OpImport::outputs() {
    if (outputs_made_)
        return outputs_;
    outputs_made_ = true;
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
    return outputs_;
}

void OpImport::run() {
    check_op();
    read_attributes();
    resolve_operands();
    const OpDef& def = op_def(op_);
    if (def.canonicalize)
        def.canonicalize(*this);
    if (!emitted_)
        emit(op_, inputs_, outputs(), out_);
}

void ImportContext::define(const std::string& name, ValueId v, const std::string& where) {
    if (!names.emplace(name, v).second)
        throw UserError() << where << ": value '" << name << "' is already defined";
}

NodeId ImportContext::emit(Op op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                           Attributes attrs, const std::string& name) {
    // The 16-bit float the op's results return to: that of its first such operand.
    std::optional<DType> narrow;
    if (!op_def(op).any_element_type)
        for (ValueId v : inputs)
            if (!narrow && v != kNoValue && is_storage_float(g.value(v).dtype))
                narrow = g.value(v).dtype;
    if (!narrow) {
        NodeId id = g.add_node(op, std::move(inputs), std::move(outputs), std::move(attrs), name);
        inf.infer(id);
        return id;
    }
    // The op computes in f32: its f16 / bf16 operands are cast up, and its float results are
    // cast back into the values the model names (other results pass through an Identity).
    auto cast = [&](ValueId from, ValueId to, DType dtype) {
        Attributes a;
        a["to"] = Attribute::of_string(dtype_name(dtype));
        inf.infer(g.add_node(Op::Cast, {from}, {to}, std::move(a), name));
    };
    for (ValueId& v : inputs) {
        if (v == kNoValue || !is_storage_float(g.value(v).dtype))
            continue;
        ValueId wide = g.add_value(g.value(v).name + "/f32");
        cast(v, wide, DType::F32);
        v = wide;
    }
    std::vector<ValueId> wide_outputs;
    for (ValueId v : outputs)
        wide_outputs.push_back(g.add_value(g.value(v).name + "/f32"));
    NodeId id = g.add_node(op, std::move(inputs), wide_outputs, std::move(attrs), name);
    inf.infer(id);
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (g.value(wide_outputs[i]).dtype == DType::F32)
            cast(wide_outputs[i], outputs[i], *narrow);
        else
            inf.infer(g.add_node(Op::Identity, {wide_outputs[i]}, {outputs[i]}, {}, name));
    }
    return id;
}

void import_node(ImportContext& ctx, const onnx::NodeProto& np, int index) {
    OpImport(ctx, np, index).run();
}

} // namespace tessera::graph::detail
