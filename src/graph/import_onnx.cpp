// ONNX import of a whole model: version checks, initializers, inputs with static shapes,
// nodes in dependency order (import_onnx_node.cpp), outputs checked against declared types.
#include "tessera/graph/import_onnx.h"

#include <algorithm>
#include <fstream>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "onnx_import.h"
#include "onnx_tensor.h"
#include "tessera/graph/tensor_io.h"

namespace tessera::graph {

using namespace detail;

// Up to what onnx 1.23 writes. Opsets after 21 change the ops of the table only by types they
// accept, except Range (27) and Cast (24), whose new attributes and operands their entries
// refuse: each entry validates its attributes and operand counts per opset.
constexpr int64_t kMinIrVersion = 3, kMaxIrVersion = 14;
constexpr int64_t kMinOpset = 1, kMaxOpset = 28;

std::pair<std::string, Shape> parse_input_shape(const std::string& spec) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
        throw UserError() << "bad input shape '" << spec
                          << "': expected NAME=D1xD2x... such as "
                             "input=1x3x224x224";
    Shape dims;
    const std::string text = spec.substr(eq + 1);
    std::stringstream ss(text);
    std::string part;
    while (!text.empty() && std::getline(ss, part, 'x')) {
        if (part.empty() || part.size() > 12 ||
            part.find_first_not_of("0123456789") != std::string::npos)
            throw UserError() << "bad input shape '" << spec << "': dim '" << part
                              << "' is not a non-negative integer";
        dims.push_back(std::stoll(part));
    }
    if (!text.empty() && text.back() == 'x')
        throw UserError() << "bad input shape '" << spec << "': trailing 'x'";
    return {spec.substr(0, eq), dims};
}

// Node indices in an order where every node follows the producers of its inputs; the model's
// own order when it already is one (ONNX requires it, some writers do not comply).
static std::vector<int> node_order(const onnx::GraphProto& gp) {
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < gp.node_size(); ++i)
        for (const std::string& o : gp.node(i).output())
            if (!o.empty())
                producer.emplace(o, i);
    std::vector<int> pending(gp.node_size(), 0);
    std::vector<std::vector<int>> consumers(gp.node_size());
    for (int i = 0; i < gp.node_size(); ++i)
        for (const std::string& in : gp.node(i).input()) {
            auto it = producer.find(in);
            if (in.empty() || it == producer.end())
                continue;
            ++pending[i];
            consumers[it->second].push_back(i);
        }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < gp.node_size(); ++i)
        if (pending[i] == 0)
            ready.push(i);
    std::vector<int> order;
    while (!ready.empty()) {
        int i = ready.top();
        ready.pop();
        order.push_back(i);
        for (int c : consumers[i])
            if (--pending[c] == 0)
                ready.push(c);
    }
    for (int i = 0; i < gp.node_size(); ++i)
        if (pending[i] > 0)
            throw UserError() << (gp.node(i).name().empty() ? "node #" + std::to_string(i)
                                                            : "node '" + gp.node(i).name() + "'")
                              << " (" << gp.node(i).op_type() << ") is part of a cycle";
    return order;
}

// The static shape of graph input `vi`, from the model or the options.
static Shape input_shape(const onnx::ValueInfoProto& vi, const ImportOptions& options) {
    const auto& tt = vi.type().tensor_type();
    auto given = options.input_shapes.find(vi.name());
    if (!tt.has_shape()) {
        if (given == options.input_shapes.end())
            throw UserError() << "graph input '" << vi.name()
                              << "' has no shape; give one with --input-shape " << vi.name()
                              << "=D1xD2x...";
        return given->second;
    }
    Shape shape;
    std::string symbolic;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() >= 0) {
            shape.push_back(dim.dim_value());
        } else {
            shape.push_back(-1);
            if (symbolic.empty())
                symbolic = dim.dim_param().empty()
                               ? "dim " + std::to_string(d)
                               : "dim " + std::to_string(d) + " '" + dim.dim_param() + "'";
        }
    }
    if (given == options.input_shapes.end()) {
        if (!symbolic.empty())
            throw UserError() << "graph input '" << vi.name() << "' has symbolic " << symbolic
                              << " in " << shape.size() << "-D shape; fix it with --input-shape "
                              << vi.name() << "=D1xD2x...";
        return shape;
    }
    const Shape& s = given->second;
    bool agree = s.size() == shape.size();
    for (size_t d = 0; agree && d < s.size(); ++d)
        agree = shape[d] < 0 || shape[d] == s[d];
    if (!agree) {
        std::string model;
        for (size_t d = 0; d < shape.size(); ++d)
            model += (d ? "x" : "") + (shape[d] < 0 ? std::string("?") : std::to_string(shape[d]));
        throw UserError() << "input shape " << shape_str(s) << " for '" << vi.name()
                          << "' does not match the model's " << (model.empty() ? "scalar" : model);
    }
    return s;
}

// Graph input `vi` bound to `value`: a constant, after checking the value fits the input.
static ValueId bind_input(const onnx::ValueInfoProto& vi, DType dtype, TensorData value,
                          Graph& g) {
    value = npy_as(std::move(value), dtype);
    const auto& tt = vi.type().tensor_type();
    bool agree = value.dtype() == dtype;
    if (tt.has_shape()) {
        agree = agree && tt.shape().dim_size() == static_cast<int>(value.shape().size());
        for (int d = 0; agree && d < tt.shape().dim_size(); ++d)
            agree = !tt.shape().dim(d).has_dim_value() || tt.shape().dim(d).dim_value() < 0 ||
                    tt.shape().dim(d).dim_value() == value.shape()[d];
    }
    if (!agree) {
        std::string model = "[";
        for (int d = 0; tt.has_shape() && d < tt.shape().dim_size(); ++d)
            model += (d ? "," : "") + (tt.shape().dim(d).has_dim_value()
                                           ? std::to_string(tt.shape().dim(d).dim_value())
                                           : std::string("?"));
        throw UserError() << "the value bound to input '" << vi.name() << "' is "
                          << dtype_name(value.dtype()) << shape_str(value.shape())
                          << ", the input is " << dtype_name(dtype)
                          << (tt.has_shape() ? model + "]" : std::string(" of any shape"));
    }
    return g.add_constant(vi.name(), value);
}

static Graph import_model(const std::string& bytes, const std::string& origin,
                          const std::string& base_dir, const ImportOptions& options) {
    onnx::ModelProto model;
    if (bytes.empty())
        throw UserError() << "'" << origin << "' is empty, not an ONNX model";
    if (!model.ParseFromString(bytes))
        throw UserError() << "cannot parse '" << origin
                          << "' as an ONNX model (truncated or corrupted file)";
    if (!model.has_ir_version() || model.ir_version() < kMinIrVersion ||
        model.ir_version() > kMaxIrVersion)
        throw UserError() << "'" << origin << "' has unsupported ONNX IR version "
                          << model.ir_version() << " (supported: " << kMinIrVersion << " to "
                          << kMaxIrVersion << ")";
    int64_t opset = -1;
    for (const auto& imp : model.opset_import())
        if (imp.domain().empty() || imp.domain() == "ai.onnx")
            opset = imp.version();
    if (opset < 0)
        throw UserError() << "'" << origin << "' imports no ai.onnx opset";
    if (opset < kMinOpset || opset > kMaxOpset)
        throw UserError() << "'" << origin << "' uses unsupported opset " << opset
                          << " (supported: " << kMinOpset << " to " << kMaxOpset << ")";
    if (!model.has_graph())
        throw UserError() << "'" << origin << "' has no graph";
    const onnx::GraphProto& gp = model.graph();
    if (gp.sparse_initializer_size() > 0)
        throw UserError() << "'" << origin << "': sparse initializers are not supported";

    Graph g;
    g.name = gp.name();
    g.opset = opset;
    ShapeInferer inf(g);
    ImportContext ctx{g, inf, opset, base_dir, {}};

    for (const onnx::TensorProto& t : gp.initializer()) {
        const std::string what = "initializer '" + t.name() + "'";
        if (t.name().empty())
            throw UserError() << "'" << origin << "' has an unnamed initializer";
        ValueId v = g.add_constant(t.name(), tensor_from_proto(t, what, base_dir));
        ctx.define(t.name(), v, what);
    }

    // Graph inputs; an input that is also an initializer (IR < 4 lists weights as inputs) is
    // that constant.
    std::vector<std::string> input_names;
    for (const onnx::ValueInfoProto& vi : gp.input())
        if (!ctx.names.count(vi.name()))
            input_names.push_back(vi.name());
    auto require_input = [&](const std::string& name, const char* what) {
        if (std::find(input_names.begin(), input_names.end(), name) != input_names.end())
            return;
        std::string list;
        for (const std::string& n : input_names)
            list += (list.empty() ? "" : ", ") + n;
        throw UserError() << what << " given for '" << name << "', which is not an input of '"
                          << origin << "' (inputs: " << list << ")";
    };
    for (const auto& [name, value] : options.bound_inputs) {
        require_input(name, "a bound value");
        if (options.input_shapes.count(name))
            throw UserError() << "input '" << name
                              << "' is given both a bound value and an input shape";
    }
    for (const auto& [name, shape] : options.input_shapes) {
        require_input(name, "input shape");
        for (int64_t d : shape)
            if (d < 0)
                throw UserError() << "input shape for '" << name << "' has negative dim " << d;
    }
    for (const onnx::ValueInfoProto& vi : gp.input()) {
        if (ctx.names.count(vi.name()) && g.value(ctx.names.at(vi.name())).is_constant())
            continue;
        const std::string what = "graph input '" + vi.name() + "'";
        if (!vi.type().has_tensor_type())
            throw UserError() << what
                              << " is not a tensor (sequences, maps and optionals are "
                                 "not supported)";
        const int32_t et = vi.type().tensor_type().elem_type();
        std::optional<DType> dtype = dtype_from_onnx(et);
        if (!dtype)
            throw UserError() << what << " has unsupported element type " << onnx_type_name(et);
        auto bound = options.bound_inputs.find(vi.name());
        if (bound != options.bound_inputs.end()) {
            ctx.define(vi.name(), bind_input(vi, *dtype, bound->second, g), what);
            continue;
        }
        ValueId v = g.add_value(vi.name(), *dtype, input_shape(vi, options));
        ctx.define(vi.name(), v, what);
        g.inputs.push_back(v);
    }

    for (int i : node_order(gp))
        if (!import_expanded_node(ctx, gp.node(i), i))
            import_node(ctx, gp.node(i), i);

    for (const onnx::ValueInfoProto& vi : gp.output()) {
        auto it = ctx.names.find(vi.name());
        if (it == ctx.names.end())
            throw UserError() << "graph output '" << vi.name()
                              << "' is not produced by any node, input or initializer";
        const Value& v = g.value(it->second);
        const auto& tt = vi.type().tensor_type();
        if (tt.elem_type() != 0 && dtype_from_onnx(tt.elem_type()) != v.dtype)
            throw UserError() << "graph output '" << vi.name() << "' is declared "
                              << onnx_type_name(tt.elem_type()) << " but computes "
                              << dtype_name(v.dtype);
        if (tt.has_shape()) {
            bool agree = tt.shape().dim_size() == static_cast<int>(v.shape.size());
            for (int d = 0; agree && d < tt.shape().dim_size(); ++d)
                agree = !tt.shape().dim(d).has_dim_value() ||
                        tt.shape().dim(d).dim_value() == v.shape[d];
            if (!agree)
                throw UserError() << "graph output '" << vi.name()
                                  << "' has a declared shape that differs from the inferred "
                                  << shape_str(v.shape);
        }
        g.outputs.push_back(it->second);
    }
    if (g.outputs.empty())
        throw UserError() << "'" << origin << "' has no graph outputs";
    g.verify();
    return g;
}

Graph import_onnx(const std::string& path, const ImportOptions& options) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw UserError() << "cannot open ONNX model '" << path << "'";
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad())
        throw UserError() << "cannot read ONNX model '" << path << "'";
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    return import_model(ss.str(), path, dir.empty() ? "/" : dir, options);
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& origin,
                        const ImportOptions& options) {
    return import_model(bytes, origin, "", options);
}

} // namespace tessera::graph
