// Helpers of the graph tests: tensor comparison, random tensors, a ModelProto builder, and a
// one-node graph runner.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "onnx/onnx.pb.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/graph.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/shape_inference.h"
#include "tessera/support/rng.h"

namespace tessera::testing {

using graph::DType;
using graph::Shape;
using graph::TensorData;

struct Closeness {
    bool ok = true;
    double max_abs = 0;     // largest |out - ref|
    double worst_ratio = 0; // largest |out - ref| / (atol + rtol |ref|)
    std::string message;
};

/// Element-wise |out - ref| <= atol + rtol |ref| (exact for integers and bools); dtype and
/// shape must be equal; NaN matches NaN only.
inline Closeness compare(const TensorData& out, const TensorData& ref, double rtol, double atol) {
    Closeness c;
    if (out.dtype() != ref.dtype() || out.shape() != ref.shape()) {
        c.ok = false;
        c.message = std::string("got ") + graph::dtype_name(out.dtype()) +
                    graph::shape_str(out.shape()) + ", want " + graph::dtype_name(ref.dtype()) +
                    graph::shape_str(ref.shape());
        return c;
    }
    std::vector<double> a = out.as_f64(), b = ref.as_f64();
    const bool exact = !graph::is_float(ref.dtype());
    int64_t worst = -1;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) {
            if (std::isnan(a[i]) != std::isnan(b[i]))
                c.worst_ratio = INFINITY, worst = i;
            continue;
        }
        if (a[i] == b[i])
            continue; // equal infinities too (their difference is NaN)
        const double d = std::fabs(a[i] - b[i]);
        const double r = d == 0 ? 0 : exact ? INFINITY : d / (atol + rtol * std::fabs(b[i]));
        if (!(d <= c.max_abs))
            c.max_abs = d;
        if (!(r <= c.worst_ratio))
            c.worst_ratio = r, worst = static_cast<int64_t>(i);
    }
    c.ok = c.worst_ratio <= 1.0;
    if (!c.ok) {
        std::ostringstream os;
        os << "element " << worst << ": got " << a[worst] << ", want " << b[worst]
           << " (max abs error " << c.max_abs << ", worst ratio " << c.worst_ratio << ")";
        c.message = os.str();
    }
    return c;
}

#define EXPECT_TENSOR_NEAR(out, ref, rtol, atol)                                                   \
    do {                                                                                           \
        ::tessera::testing::Closeness c_ = ::tessera::testing::compare(out, ref, rtol, atol);      \
        EXPECT_TRUE(c_.ok) << c_.message;                                                          \
    } while (0)

/// f32 tensor of uniform values in [lo, hi) from `seed`.
inline TensorData random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f,
                                float hi = 1.0f) {
    return TensorData::from_vector<float>(
        shape, random_floats(static_cast<size_t>(graph::shape_numel(shape)), seed, lo, hi));
}

/// i64 tensor of uniform integers in [lo, hi] from `seed`.
inline TensorData random_ints(const Shape& shape, uint64_t seed, int64_t lo, int64_t hi) {
    Rng rng(seed);
    std::vector<int64_t> v(static_cast<size_t>(graph::shape_numel(shape)));
    for (int64_t& x : v)
        x = rng.uniform_int(lo, hi);
    return TensorData::from_vector<int64_t>(shape, v);
}

inline TensorData i64s(std::vector<int64_t> v) {
    return TensorData::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

/// An operand of run_node: graph input (runtime data) or constant.
struct Operand {
    TensorData data;
    bool constant = false;
    bool absent = false;
};
inline Operand in(TensorData t) { return {std::move(t), false, false}; }
inline Operand konst(TensorData t) { return {std::move(t), true, false}; }
inline Operand none() { return {TensorData(), false, true}; }

/// Builds a one-node graph (op, operands, attributes, `num_outputs` outputs), runs shape
/// inference (which must agree with the evaluated types, checked by evaluate) and evaluates.
inline std::vector<TensorData> run_node(graph::Op op, const std::vector<Operand>& operands,
                                        graph::Attributes attrs = {}, size_t num_outputs = 1) {
    graph::Graph g;
    g.name = "one_node";
    std::vector<graph::ValueId> ins;
    std::vector<TensorData> feeds;
    for (size_t i = 0; i < operands.size(); ++i) {
        const Operand& o = operands[i];
        if (o.absent) {
            ins.push_back(graph::kNoValue);
        } else if (o.constant) {
            ins.push_back(g.add_constant("c" + std::to_string(i), o.data));
        } else {
            ins.push_back(g.add_value("x" + std::to_string(i), o.data.dtype(), o.data.shape()));
            g.inputs.push_back(ins.back());
            feeds.push_back(o.data);
        }
    }
    std::vector<graph::ValueId> outs;
    for (size_t i = 0; i < num_outputs; ++i)
        outs.push_back(g.add_value("y" + std::to_string(i)));
    g.add_node(op, ins, outs, std::move(attrs), "n");
    g.outputs = outs;
    graph::infer_shapes(g);
    g.verify();
    return graph::evaluate(g, feeds);
}

// ---- ModelProto builder ----------------------------------------------------------------------

/// Fluent attribute setters on a NodeProto.
class NodeRef {
  public:
    explicit NodeRef(onnx::NodeProto* n) : n_(n) {}
    NodeRef& i(const std::string& name, int64_t v) {
        auto* a = add(name, onnx::AttributeProto::INT);
        a->set_i(v);
        return *this;
    }
    NodeRef& f(const std::string& name, float v) {
        auto* a = add(name, onnx::AttributeProto::FLOAT);
        a->set_f(v);
        return *this;
    }
    NodeRef& ints(const std::string& name, const std::vector<int64_t>& v) {
        auto* a = add(name, onnx::AttributeProto::INTS);
        for (int64_t x : v)
            a->add_ints(x);
        return *this;
    }
    NodeRef& floats(const std::string& name, const std::vector<float>& v) {
        auto* a = add(name, onnx::AttributeProto::FLOATS);
        for (float x : v)
            a->add_floats(x);
        return *this;
    }
    NodeRef& s(const std::string& name, const std::string& v) {
        auto* a = add(name, onnx::AttributeProto::STRING);
        a->set_s(v);
        return *this;
    }
    NodeRef& t(const std::string& name, const TensorData& v);
    onnx::NodeProto* proto() { return n_; }

  private:
    onnx::AttributeProto* add(const std::string& name, onnx::AttributeProto::AttributeType type) {
        auto* a = n_->add_attribute();
        a->set_name(name);
        a->set_type(type);
        return a;
    }
    onnx::NodeProto* n_;
};

inline int32_t onnx_type(DType t) { return dtype_info(t).onnx; }

/// t as a TensorProto with raw_data (or, with typed = true, the typed field).
inline onnx::TensorProto tensor_proto(const std::string& name, const TensorData& t,
                                      bool typed = false) {
    onnx::TensorProto p;
    p.set_name(name);
    p.set_data_type(onnx_type(t.dtype()));
    for (int64_t d : t.shape())
        p.add_dims(d);
    std::string bytes(reinterpret_cast<const char*>(t.raw()), t.nbytes());
    if (const std::optional<NarrowFormat> f = graph::narrow_format(t.dtype())) {
        // ONNX packs the 4- and 2-bit types, the first element in the low bits.
        const int bits = narrow_format_info(*f).bits, per = 8 / bits;
        std::string packed((bytes.size() + per - 1) / per, '\0');
        for (size_t i = 0; i < bytes.size(); ++i)
            packed[i / per] = static_cast<char>(packed[i / per] | (bytes[i] << (bits * (i % per))));
        if (!typed) {
            p.set_raw_data(packed);
        } else {
            for (char c : packed)
                p.add_int32_data(static_cast<uint8_t>(c));
        }
        return p;
    }
    if (!typed) {
        p.set_raw_data(bytes);
        return p;
    }
    // ONNX's typed fields: f32, f64 and i64 have their own; u32 and u64 share uint64_data;
    // every narrower type (f16 as its bits) and i32 go in int32_data.
    visit_dtype(t.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        for (T v : t.to_vector<T>()) {
            if constexpr (std::is_same_v<T, float>)
                p.add_float_data(v);
            else if constexpr (std::is_same_v<T, double>)
                p.add_double_data(v);
            else if constexpr (std::is_same_v<T, int64_t>)
                p.add_int64_data(v);
            else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>)
                p.add_uint64_data(v);
            else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
                p.add_int32_data(v.bits);
            else
                p.add_int32_data(static_cast<int32_t>(v));
        }
    });
    return p;
}

inline NodeRef& NodeRef::t(const std::string& name, const TensorData& v) {
    auto* a = add(name, onnx::AttributeProto::TENSOR);
    *a->mutable_t() = tensor_proto("", v);
    return *this;
}

/// Builds a ModelProto: inputs, initializers, nodes, outputs.
class ModelBuilder {
  public:
    explicit ModelBuilder(int64_t opset = 13, int64_t ir_version = 7) {
        m_.set_ir_version(ir_version);
        m_.set_producer_name("tessera-test");
        auto* o = m_.add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        m_.mutable_graph()->set_name("test");
    }
    /// A graph input; a negative dim is symbolic ("N").
    ModelBuilder& input(const std::string& name, DType t, const Shape& dims) {
        value_info(m_.mutable_graph()->add_input(), name, t, dims);
        return *this;
    }
    ModelBuilder& output(const std::string& name, DType t = DType::F32) {
        auto* vi = m_.mutable_graph()->add_output();
        vi->set_name(name);
        vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type(t));
        return *this;
    }
    ModelBuilder& output(const std::string& name, DType t, const Shape& dims) {
        value_info(m_.mutable_graph()->add_output(), name, t, dims);
        return *this;
    }
    ModelBuilder& initializer(const std::string& name, const TensorData& t, bool typed = false) {
        *m_.mutable_graph()->add_initializer() = tensor_proto(name, t, typed);
        return *this;
    }
    NodeRef node(const std::string& op, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, const std::string& name = "") {
        auto* n = m_.mutable_graph()->add_node();
        n->set_op_type(op);
        n->set_name(name.empty() ? op + "_" + std::to_string(m_.graph().node_size()) : name);
        for (const auto& s : inputs)
            n->add_input(s);
        for (const auto& s : outputs)
            n->add_output(s);
        return NodeRef(n);
    }
    onnx::ModelProto& proto() { return m_; }
    std::string bytes() const { return m_.SerializeAsString(); }

  private:
    static void value_info(onnx::ValueInfoProto* vi, const std::string& name, DType t,
                           const Shape& dims) {
        vi->set_name(name);
        auto* tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(onnx_type(t));
        auto* shape = tt->mutable_shape();
        for (int64_t d : dims) {
            auto* dim = shape->add_dim();
            if (d < 0)
                dim->set_dim_param("N");
            else
                dim->set_dim_value(d);
        }
    }
    onnx::ModelProto m_;
};

/// The message of the UserError that importing m's model throws, or "no error".
inline std::string model_import_error(const ModelBuilder& m) {
    try {
        graph::import_onnx_bytes(m.bytes(), "test.onnx");
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

} // namespace tessera::testing
