// The CLI's op registry: spec parsing, the table of ops with their keys, and op construction.
#include "tessera/te/op_registry.h"

#include <functional>
#include <sstream>

#include "tessera/support/error.h"
#include "tessera/te/op_library.h"

namespace tessera::te {

// ---------------------------------------------------------------------------------------------
// Parsing.

static bool is_name(const std::string& s) {
    if (s.empty() || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (char ch : s)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
            return false;
    return true;
}

/// Strict decimal integer with an optional leading '-'; false on anything else or overflow.
static bool parse_int(const std::string& s, int64_t& out) {
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size())
        return false;
    uint64_t v = 0;
    for (; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > (uint64_t)INT64_MAX)
            return false;
    }
    out = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    return true;
}

OpSpec parse_op_spec(const std::string& text) {
    auto bad = [&]() { return UserError() << "malformed op spec '" << text << "': "; };
    if (text.empty())
        throw UserError() << "empty op spec";
    OpSpec spec;
    size_t colon = text.find(':');
    spec.name = text.substr(0, colon);
    if (!is_name(spec.name))
        throw bad() << "bad op name '" << spec.name << "'";
    if (colon == std::string::npos)
        return spec;
    std::string rest = text.substr(colon + 1);
    if (rest.empty())
        throw bad() << "no parameters after ':'";
    size_t pos = 0;
    while (pos <= rest.size()) {
        size_t comma = rest.find(',', pos);
        if (comma == std::string::npos)
            comma = rest.size();
        std::string item = rest.substr(pos, comma - pos);
        pos = comma + 1;
        if (item.empty())
            throw bad() << "empty item";
        size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw bad() << "expected key=value, got '" << item << "'";
        std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        if (!is_name(key))
            throw bad() << "bad key '" << key << "'";
        if (value.empty())
            throw bad() << "missing value for '" << key << "'";
        int64_t v = 0;
        if (!parse_int(value, v))
            throw bad() << "value '" << value << "' of '" << key << "' is not an integer";
        for (const auto& kv : spec.params)
            if (kv.first == key)
                throw bad() << "duplicate key '" << key << "'";
        spec.params.emplace_back(key, v);
    }
    return spec;
}

// ---------------------------------------------------------------------------------------------
// The table.

namespace {

/// Resolved key values of one op, in key order.
class Values {
  public:
    Values(std::string op, std::vector<std::pair<std::string, int64_t>> v)
        : op_(std::move(op)), v_(std::move(v)) {}
    int64_t operator[](const char* key) const {
        for (const auto& kv : v_)
            if (kv.first == key)
                return kv.second;
        TESSERA_UNREACHABLE() << "op " << op_ << " has no key " << key;
    }
    bool flag(const char* key) const { return (*this)[key] != 0; }

  private:
    std::string op_;
    std::vector<std::pair<std::string, int64_t>> v_;
};

/// What an op builder returns; make_op adds the name and canonical spec.
struct Built {
    Compute compute;
    double flops;
    std::vector<int> weight_inputs; ///< OpInstance::weight_inputs.
};

struct OpDef {
    std::string name;
    std::vector<OpKey> keys;
    std::function<Built(const Values&)> build;
};

OpKey size(const char* name, const char* doc) {
    return OpKey{name, KeyKind::Size, true, 0, "", doc};
}
OpKey size_or(const char* name, int64_t def, const char* doc) {
    return OpKey{name, KeyKind::Size, false, def, "", doc};
}
OpKey size_from(const char* name, const char* from, const char* doc) {
    return OpKey{name, KeyKind::Size, false, 0, from, doc};
}
OpKey non_negative(const char* name, int64_t def, const char* doc) {
    return OpKey{name, KeyKind::NonNegative, false, def, "", doc};
}
OpKey flag(const char* name, const char* doc) {
    return OpKey{name, KeyKind::Flag, false, 0, "", doc};
}

const DataType f32 = DataType::f32();

double elems(const Tensor& t) { return static_cast<double>(num_elements(t.shape())); }

Built single(const std::vector<Tensor>& inputs, const Tensor& out, double flops) {
    return Built{make_compute(inputs, {out}), flops, {}};
}

Built build_conv(const Values& v, bool depthwise) {
    int64_t n = v["n"], c = v["c"], h = v["h"], w = v["w"], r = v["r"], s = v["s"];
    int64_t groups = depthwise ? c : v["groups"];
    int64_t k = depthwise ? c * v["multiplier"] : v["k"];
    if (c % groups != 0 || k % groups != 0)
        throw UserError() << "conv2d: groups " << groups << " must divide c=" << c
                          << " and k=" << k;
    Tensor x = placeholder({n, c, h, w}, f32, "x");
    Tensor wt = placeholder({k, c / groups, r, s}, f32, "w");
    std::vector<Tensor> inputs = {x, wt};
    Tensor bias;
    if (v.flag("bias"))
        inputs.push_back(bias = placeholder({k}, f32, "bias"));
    Conv2dParams p = Conv2dParams::make(v["stride"], v["pad"], v["dilation"], groups);
    Tensor y = depthwise ? depthwise_conv2d(x, wt, p, bias) : conv2d(x, wt, p, bias);
    const auto& os = y.shape();
    double flops = 2.0 * n * k * os[2] * os[3] * (c / groups) * r * s;
    if (v.flag("relu"))
        y = relu(y);
    Built b = single(inputs, y, flops);
    b.weight_inputs = {1}; // the filter
    return b;
}

// The transforms of a Winograd F(m x m, 3 x 3) conv in NCHW[block]c (the winograd pass's
// tasks), with random tables: their cost does not depend on the table's values.
Built build_winograd(const Values& v, bool input) {
    const int64_t n = v["n"], block = v["block"], m = v["tile"], alpha = m + 2;
    if (m != 2 && m != 4)
        throw UserError() << "winograd: tile " << m << " must be 2 or 4";
    WinogradTile t;
    t.m = m;
    if (input) {
        t.pad_top = t.pad_left = v["pad"];
        t.out_h = v["h"] + 2 * v["pad"] - 2;
        t.out_w = v["w"] + 2 * v["pad"] - 2;
        Tensor x = placeholder({n, (v["c"] + block - 1) / block, v["h"], v["w"], block}, f32, "x");
        Tensor table = placeholder({alpha, alpha}, f32, "table");
        Tensor y = winograd_input_nchwc(x, table, t);
        // The table is not a weight: as in a model's task (task extraction), it is read by
        // broadcasts and never packed. Rows (alpha values per tile row and image column, alpha
        // multiply-adds each) then columns (alpha multiply-adds per output).
        const double rows =
            double(alpha) * n * t.tiles_h() * (t.tiles_w() * m + alpha - m) * x.shape()[1] * block;
        return single({x, table}, y, 2.0 * alpha * (rows + elems(y)));
    }
    t.out_h = v["h"];
    t.out_w = v["w"];
    const int64_t tiles = n * t.tiles_h() * t.tiles_w();
    const int64_t k = (v["k"] + block - 1) / block * block;
    Tensor mm = placeholder({alpha * alpha, tiles, k}, f32, "m");
    Tensor table = placeholder({m, alpha}, f32, "table");
    Tensor y = winograd_output_nchwc(mm, table, Tensor(), t, block);
    // Columns (alpha x m per tile and channel), then rows.
    return single({mm, table}, y, 2.0 * alpha * (double(alpha) * m * tiles * k + elems(y)));
}

Built build_pool(const Values& v, bool avg) {
    Tensor x = placeholder({v["n"], v["c"], v["h"], v["w"]}, f32, "x");
    Pool2dParams p = Pool2dParams::make(v["kernel"], v["stride"], v["pad"]);
    if (avg)
        p.count_include_pad = v.flag("count_include_pad");
    Tensor y = avg ? avg_pool2d(x, p) : max_pool2d(x, p);
    return single({x}, y, elems(y) * p.kernel_h * p.kernel_w);
}

OpDef unary_op(const char* name, Tensor (*fn)(const Tensor&)) {
    return OpDef{name, {size_or("m", 1, "rows"), size("n", "columns")}, [fn](const Values& v) {
                     Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                     return single({x}, fn(x), elems(x));
                 }};
}

OpDef binary_op(const char* name, Tensor (*fn)(const Tensor&, const Tensor&)) {
    return OpDef{name,
                 {size("m", "rows"), size("n", "columns"),
                  OpKey{"broadcast", KeyKind::Flag, false, 1, "", "b is [n] (1) or [m, n] (0)"}},
                 [fn](const Values& v) {
                     Tensor a = placeholder({v["m"], v["n"]}, f32, "a");
                     Tensor b = v.flag("broadcast") ? placeholder({v["n"]}, f32, "b")
                                                    : placeholder({v["m"], v["n"]}, f32, "b");
                     Tensor y = fn(a, b);
                     return single({a, b}, y, elems(y));
                 }};
}

OpDef reduce_op(const char* name, Tensor (*fn)(const Tensor&, std::vector<int64_t>, bool)) {
    return OpDef{name, {size("m", "rows"), size("n", "columns (reduced)")}, [fn](const Values& v) {
                     Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                     return single({x}, fn(x, {1}, false), elems(x));
                 }};
}

const std::vector<OpDef>& table() {
    static const std::vector<OpDef> ops = [] {
        std::vector<OpDef> t;
        t.push_back({"matmul",
                     {size("m", "rows of a"), size("n", "columns of b"), size("k", "inner dim")},
                     [](const Values& v) {
                         Tensor a = placeholder({v["m"], v["k"]}, f32, "a");
                         Tensor b = placeholder({v["k"], v["n"]}, f32, "b");
                         return single({a, b}, matmul(a, b), 2.0 * v["m"] * v["n"] * v["k"]);
                     }});
        t.push_back(
            {"dense",
             {size("m", "rows of x"), size("n", "output features"), size("k", "input features"),
              flag("bias", "add a bias [n]"), flag("relu", "apply relu")},
             [](const Values& v) {
                 Tensor x = placeholder({v["m"], v["k"]}, f32, "x");
                 Tensor w = placeholder({v["n"], v["k"]}, f32, "w");
                 std::vector<Tensor> in = {x, w};
                 Tensor bias;
                 if (v.flag("bias"))
                     in.push_back(bias = placeholder({v["n"]}, f32, "bias"));
                 Tensor y = dense(x, w, bias);
                 if (v.flag("relu"))
                     y = relu(y);
                 Built b = single(in, y, 2.0 * v["m"] * v["n"] * v["k"]);
                 b.weight_inputs = {1}; // the weight matrix
                 return b;
             }});
        t.push_back(
            {"batch_matmul",
             {size("b", "batch"), size("m", "rows"), size("n", "columns"), size("k", "inner dim")},
             [](const Values& v) {
                 Tensor a = placeholder({v["b"], v["m"], v["k"]}, f32, "a");
                 Tensor b = placeholder({v["b"], v["k"], v["n"]}, f32, "b");
                 return single({a, b}, batch_matmul(a, b), 2.0 * v["b"] * v["m"] * v["n"] * v["k"]);
             }});
        std::vector<OpKey> conv_keys = {size_or("n", 1, "batch"),
                                        size("c", "input channels"),
                                        size("h", "input height"),
                                        size("w", "input width"),
                                        size("k", "output channels"),
                                        size_or("r", 3, "kernel height"),
                                        size_from("s", "r", "kernel width"),
                                        size_or("stride", 1, "stride (both dims)"),
                                        non_negative("pad", 0, "padding (all sides)"),
                                        size_or("dilation", 1, "dilation (both dims)"),
                                        size_or("groups", 1, "groups"),
                                        flag("bias", "add a bias [k]"),
                                        flag("relu", "apply relu")};
        t.push_back({"conv2d", conv_keys, [](const Values& v) { return build_conv(v, false); }});
        std::vector<OpKey> dw_keys = {size_or("n", 1, "batch"),
                                      size("c", "channels"),
                                      size("h", "input height"),
                                      size("w", "input width"),
                                      size_or("r", 3, "kernel height"),
                                      size_from("s", "r", "kernel width"),
                                      size_or("stride", 1, "stride (both dims)"),
                                      non_negative("pad", 0, "padding (all sides)"),
                                      size_or("dilation", 1, "dilation"),
                                      size_or("multiplier", 1, "output channels per input channel"),
                                      flag("bias", "add a bias [c * multiplier]"),
                                      flag("relu", "apply relu")};
        t.push_back(
            {"depthwise_conv2d", dw_keys, [](const Values& v) { return build_conv(v, true); }});
        t.push_back({"winograd_input",
                     {size_or("n", 1, "batch"), size("c", "channels"), size("h", "input height"),
                      size("w", "input width"), size_or("block", 8, "channels per block"),
                      size_or("tile", 2, "output tile m of F(m x m, 3 x 3)"),
                      non_negative("pad", 1, "the conv's padding (all sides)")},
                     [](const Values& v) { return build_winograd(v, true); }});
        t.push_back(
            {"winograd_output",
             {size_or("n", 1, "batch"), size("k", "output channels"), size("h", "output height"),
              size("w", "output width"), size_or("block", 8, "channels per block"),
              size_or("tile", 2, "output tile m of F(m x m, 3 x 3)")},
             [](const Values& v) { return build_winograd(v, false); }});
        std::vector<OpKey> pool_keys = {size_or("n", 1, "batch"),
                                        size("c", "channels"),
                                        size("h", "input height"),
                                        size("w", "input width"),
                                        size_or("kernel", 2, "window (both dims)"),
                                        size_from("stride", "kernel", "stride (both dims)"),
                                        non_negative("pad", 0, "padding (all sides)")};
        t.push_back(
            {"max_pool2d", pool_keys, [](const Values& v) { return build_pool(v, false); }});
        std::vector<OpKey> avg_keys = pool_keys;
        avg_keys.push_back(flag("count_include_pad", "count the padding in the divisor"));
        t.push_back({"avg_pool2d", avg_keys, [](const Values& v) { return build_pool(v, true); }});
        t.push_back({"global_avg_pool2d",
                     {size_or("n", 1, "batch"), size("c", "channels"), size("h", "height"),
                      size("w", "width")},
                     [](const Values& v) {
                         Tensor x = placeholder({v["n"], v["c"], v["h"], v["w"]}, f32, "x");
                         return single({x}, global_avg_pool2d(x), elems(x));
                     }});
        t.push_back(unary_op("relu", relu));
        t.push_back(unary_op("sigmoid", sigmoid));
        t.push_back(unary_op("tanh", tanh));
        t.push_back(unary_op("erf", erf));
        t.push_back(unary_op("gelu", gelu));
        t.push_back(unary_op("exp", exp));
        t.push_back(unary_op("sqrt", sqrt));
        t.push_back(binary_op("add", add));
        t.push_back(binary_op("mul", multiply));
        t.push_back({"softmax",
                     {size("m", "rows"), size("n", "columns (softmax axis)")},
                     [](const Values& v) {
                         Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                         return single({x}, softmax(x, -1), elems(x));
                     }});
        t.push_back({"layer_norm",
                     {size("m", "rows"), size("n", "columns (normalized)")},
                     [](const Values& v) {
                         Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                         Tensor g = placeholder({v["n"]}, f32, "gamma");
                         Tensor b = placeholder({v["n"]}, f32, "beta");
                         return single({x, g, b}, layer_norm(x, g, b, -1, 1e-5), elems(x));
                     }});
        t.push_back(reduce_op("reduce_sum", reduce_sum));
        t.push_back(reduce_op("reduce_mean", reduce_mean));
        t.push_back(reduce_op("reduce_max", reduce_max));
        t.push_back({"transpose", {size("m", "rows"), size("n", "columns")}, [](const Values& v) {
                         Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                         Tensor y = transpose(x, {1, 0});
                         return single({x}, y, elems(y));
                     }});
        t.push_back(
            {"concat",
             {size("m", "rows"), size("n", "columns of each part"),
              size_or("parts", 2, "number of inputs")},
             [](const Values& v) {
                 if (v["parts"] > 64)
                     throw UserError() << "concat: 'parts' must be at most 64, got " << v["parts"];
                 std::vector<Tensor> xs;
                 for (int64_t p = 0; p < v["parts"]; ++p)
                     xs.push_back(placeholder({v["m"], v["n"]}, f32, "x" + std::to_string(p)));
                 Tensor y = concat(xs, 1);
                 return single(xs, y, elems(y));
             }});
        t.push_back(
            {"pad",
             {size("m", "rows"), size("n", "columns"), non_negative("pad", 1, "pad on every side")},
             [](const Values& v) {
                 Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                 int64_t p = v["pad"];
                 Tensor y = pad(x, {p, p}, {p, p}, 0.0);
                 return single({x}, y, elems(y));
             }});
        t.push_back(
            {"slice",
             {size("m", "rows"), size("n", "columns"), non_negative("start", 0, "first column"),
              size_from("end", "n", "end column (exclusive)"), size_or("step", 1, "step")},
             [](const Values& v) {
                 Tensor x = placeholder({v["m"], v["n"]}, f32, "x");
                 Tensor y = slice(x, {v["start"]}, {v["end"]}, {1}, {v["step"]});
                 return single({x}, y, elems(y));
             }});
        t.push_back({"matmul_f16",
                     {size("m", "rows of a"), size("n", "columns of b"), size("k", "inner dim")},
                     [](const Values& v) {
                         // f16 operands, f32 products and sums: the GPU's tensor-core product.
                         Tensor a = placeholder({v["m"], v["k"]}, DataType::f16(), "a");
                         Tensor b = placeholder({v["k"], v["n"]}, DataType::f16(), "b");
                         return single({a, b}, matmul_accumulate(a, b, f32),
                                       2.0 * v["m"] * v["n"] * v["k"]);
                     }});
        return t;
    }();
    return ops;
}

const OpDef& find_op(const std::string& name) {
    for (const OpDef& d : table())
        if (d.name == name)
            return d;
    std::ostringstream known;
    for (const OpDef& d : table())
        known << (known.tellp() > 0 ? ", " : "") << d.name;
    throw UserError() << "unknown op '" << name << "' (known: " << known.str() << ")";
}

/// Sizes above this are refused: they could not be allocated and their products overflow.
constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1;

} // namespace

std::vector<std::string> list_ops() {
    std::vector<std::string> names;
    for (const OpDef& d : table())
        names.push_back(d.name);
    return names;
}

std::vector<OpKey> op_keys(const std::string& name) { return find_op(name).keys; }

OpInstance make_op(const OpSpec& spec) {
    const OpDef& def = find_op(spec.name);
    const std::string& op = def.name;
    for (const auto& kv : spec.params) {
        bool known = false;
        for (const OpKey& k : def.keys)
            known = known || k.name == kv.first;
        if (!known) {
            std::ostringstream accepted;
            for (size_t i = 0; i < def.keys.size(); ++i)
                accepted << (i ? ", " : "") << def.keys[i].name;
            throw UserError() << op << ": unknown key '" << kv.first
                              << "' (accepted: " << accepted.str() << ")";
        }
    }
    std::vector<std::pair<std::string, int64_t>> values;
    for (const OpKey& k : def.keys) {
        const int64_t* given = nullptr;
        for (const auto& kv : spec.params)
            if (kv.first == k.name)
                given = &kv.second;
        int64_t v;
        if (given) {
            v = *given;
        } else if (k.required) {
            throw UserError() << op << ": missing size '" << k.name << "'";
        } else if (!k.default_from.empty()) {
            v = Values(op, values)[k.default_from.c_str()];
        } else {
            v = k.default_value;
        }
        switch (k.kind) {
        case KeyKind::Size:
            if (v <= 0)
                throw UserError() << op << ": size '" << k.name << "' must be positive, got " << v;
            break;
        case KeyKind::NonNegative:
            if (v < 0)
                throw UserError() << op << ": '" << k.name << "' must be non-negative, got " << v;
            break;
        case KeyKind::Flag:
            if (v != 0 && v != 1)
                throw UserError() << op << ": flag '" << k.name << "' must be 0 or 1, got " << v;
            break;
        }
        if (v > kMaxSize)
            throw UserError() << op << ": '" << k.name << "' is too large, got " << v << " (max "
                              << kMaxSize << ")";
        values.emplace_back(k.name, v);
    }
    std::ostringstream canonical;
    canonical << op << ":";
    for (size_t i = 0; i < values.size(); ++i)
        canonical << (i ? "," : "") << values[i].first << "=" << values[i].second;
    Built b = def.build(Values(op, values));
    OpInstance inst;
    inst.compute = std::move(b.compute);
    inst.flops = b.flops;
    inst.weight_inputs = std::move(b.weight_inputs);
    inst.compute.weight_inputs = inst.weight_inputs;
    inst.name = op;
    inst.canonical_spec = canonical.str();
    return inst;
}

OpInstance make_op(const std::string& text) { return make_op(parse_op_spec(text)); }

} // namespace tessera::te
