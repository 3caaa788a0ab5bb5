// Winograd F(m x m, 3 x 3): transform matrices, tables, the weight transform, reference kernels
// and shape rules of WinogradInput / WinogradOutput.
#include "winograd.h"

#include "../op_util.h"
#include "node_kernel.h"
#include "node_types.h"

namespace tessera::graph::detail {

namespace {

// The operand geometry of a WinogradInput node: X [N, CB, H, W, b], T [alpha, alpha].
struct InputGeometry {
    te::WinogradTile tile;
    int64_t alpha = 0;
};

InputGeometry input_geometry(const Node& n, const Shape& x, const Shape& t,
                             const std::string& where) {
    if (x.size() != 5)
        throw UserError() << where << ": X must have rank 5, got " << shape_str(x);
    const int64_t m = n.attr_int("tile", 0);
    const int64_t alpha = t.size() == 2 ? t[0] : 0;
    if (m < 1 || t.size() != 2 || t[1] != alpha || alpha <= m)
        throw UserError() << where << ": table " << shape_str(t) << " does not fit tiles of " << m;
    const std::vector<int64_t> pads = n.attr_ints("pads");
    if (pads.size() != 4 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
        throw UserError() << where << ": pads must be 4 non-negative values";
    const int64_t r = alpha - m + 1; // the kernel size
    InputGeometry gm;
    gm.alpha = alpha;
    gm.tile.m = m;
    gm.tile.pad_top = pads[0];
    gm.tile.pad_left = pads[1];
    gm.tile.out_h = x[2] + pads[0] + pads[2] - r + 1;
    gm.tile.out_w = x[3] + pads[1] + pads[3] - r + 1;
    if (gm.tile.out_h < 1 || gm.tile.out_w < 1)
        throw UserError() << where << ": a " << r << "x" << r << " kernel does not fit X "
                          << shape_str(x);
    return gm;
}

// The operand geometry of a WinogradOutput node: M [E, P, K], T [m, alpha] (E = alpha^2),
// B [KB, b].
struct OutputGeometry {
    te::WinogradTile tile;
    int64_t block = 0, n = 0, kb = 0;
};

OutputGeometry output_geometry(const Node& n, const Shape& mm, const Shape& t, const Shape* bias,
                               const std::string& where) {
    OutputGeometry gm;
    gm.tile = winograd_output_tile(n);
    gm.block = n.attr_int("block", 0);
    const te::WinogradTile& tl = gm.tile;
    if (tl.m < 1 || gm.block < 1 || tl.out_h < 1 || tl.out_w < 1)
        throw UserError() << where << ": tile, block, out_h and out_w must be positive";
    const int64_t tiles = tl.tiles_h() * tl.tiles_w();
    if (mm.size() != 3 || mm[1] % tiles != 0 || mm[2] % gm.block != 0 || t.size() != 2 ||
        t[0] != tl.m || t[1] * t[1] != mm[0])
        throw UserError() << where << ": M " << shape_str(mm) << " and table " << shape_str(t)
                          << " do not make " << tl.out_h << "x" << tl.out_w
                          << " outputs in tiles of " << tl.m << ", blocks of " << gm.block;
    gm.n = mm[1] / tiles;
    gm.kb = mm[2] / gm.block;
    if (bias && *bias != Shape{gm.kb, gm.block})
        throw UserError() << where << ": B has shape " << shape_str(*bias) << ", expected ["
                          << gm.kb << "," << gm.block << "]";
    return gm;
}

} // namespace

te::WinogradTile winograd_input_tile(const Node& n, const Shape& x, const Shape& t,
                                     const std::string& where) {
    return input_geometry(n, x, t, where).tile;
}

te::WinogradTile winograd_output_tile(const Node& n) {
    te::WinogradTile tile;
    tile.m = n.attr_int("tile", 0);
    tile.out_h = n.attr_int("out_h", 0);
    tile.out_w = n.attr_int("out_w", 0);
    return tile;
}

namespace {

EvalOutputs eval_winograd_input(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& t = require_input(in, 1, where);
    const InputGeometry gm = input_geometry(n, x.shape(), t.shape(), where);
    const te::WinogradTile& tl = gm.tile;
    const int64_t th = tl.tiles_h(), tw = tl.tiles_w();
    const int64_t N = x.shape()[0], CB = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t b = x.shape()[4], a = gm.alpha, E = a * a, P = N * th * tw;
    TensorData v(DType::F32, {E, P, CB * b});
    const float* xs = x.data<float>();
    const float* ts = t.data<float>();
    float* vs = v.data<float>();
    for (int64_t p = 0; p < P; ++p) {
        const int64_t img = p / (th * tw), ty = p / tw % th, tx = p % tw;
        for (int64_t c = 0; c < CB * b; ++c) {
            std::vector<double> d(static_cast<size_t>(E), 0.0); // the tile, 0 outside
            for (int64_t q = 0; q < E; ++q) {
                const int64_t h = ty * tl.m + q / a - tl.pad_top;
                const int64_t w = tx * tl.m + q % a - tl.pad_left;
                if (h >= 0 && h < H && w >= 0 && w < W)
                    d[q] = xs[(((img * CB + c / b) * H + h) * W + w) * b + c % b];
            }
            for (int64_t e = 0; e < E; ++e) {
                double acc = 0;
                for (int64_t q = 0; q < E; ++q)
                    acc += double(ts[e / a * a + q / a]) * ts[e % a * a + q % a] * d[q];
                vs[(e * P + p) * CB * b + c] = static_cast<float>(acc);
            }
        }
    }
    return {v};
}

EvalOutputs eval_winograd_output(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& mm = require_input(in, 0, where);
    const TensorData& t = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    const OutputGeometry gm =
        output_geometry(n, mm.shape(), t.shape(), bias ? &bias->shape() : nullptr, where);
    const te::WinogradTile& tl = gm.tile;
    const int64_t th = tl.tiles_h(), tw = tl.tiles_w();
    const int64_t E = mm.shape()[0], P = mm.shape()[1], K = mm.shape()[2];
    TensorData y(DType::F32, {gm.n, gm.kb, tl.out_h, tl.out_w, gm.block});
    const float* ms = mm.data<float>();
    const float* ts = t.data<float>();
    const float* bs = bias ? bias->data<float>() : nullptr;
    float* ys = y.data<float>();
    for (int64_t img = 0; img < gm.n; ++img)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t h = 0; h < tl.out_h; ++h)
                for (int64_t w = 0; w < tl.out_w; ++w) {
                    const int64_t tile = (img * th + h / tl.m) * tw + w / tl.m;
                    const int64_t r = h % tl.m, s = w % tl.m, a = t.shape()[1];
                    double acc = bs ? bs[k] : 0.0;
                    for (int64_t e = 0; e < E; ++e)
                        acc += double(ts[r * a + e / a]) * ts[s * a + e % a] *
                               ms[(e * P + tile) * K + k];
                    ys[(((img * gm.kb + k / gm.block) * tl.out_h + h) * tl.out_w + w) * gm.block +
                       k % gm.block] = static_cast<float>(acc);
                }
    return {y};
}

} // namespace

std::vector<std::pair<DType, Shape>>
winograd_types(const Node& n, const std::vector<const Value*>& inputs, const std::string& where) {
    auto input = [&](size_t i, const char* what) -> const Value& {
        if (i >= inputs.size() || !inputs[i])
            throw UserError() << where << ": input " << i << " (" << what << ") is missing";
        if (inputs[i]->dtype != DType::F32)
            throw UserError() << where << ": " << what << " must be f32";
        return *inputs[i];
    };
    if (n.op == Op::WinogradInput) {
        const Value& x = input(0, "X");
        const Value& t = input(1, "T");
        const te::WinogradTile tl = input_geometry(n, x.shape, t.shape, where).tile;
        return {{DType::F32,
                 {t.shape[0] * t.shape[0], x.shape[0] * tl.tiles_h() * tl.tiles_w(),
                  x.shape[1] * x.shape[4]}}};
    }
    TESSERA_CHECK(n.op == Op::WinogradOutput) << where << " is not a Winograd op";
    const Value& mm = input(0, "M");
    const Value& t = input(1, "T");
    const Value* bias = inputs.size() > 2 && inputs[2] ? &input(2, "B") : nullptr;
    const OutputGeometry gm =
        output_geometry(n, mm.shape, t.shape, bias ? &bias->shape : nullptr, where);
    return {{DType::F32, {gm.n, gm.kb, gm.tile.out_h, gm.tile.out_w, gm.block}}};
}

} // namespace tessera::graph::detail

namespace tessera::graph {

namespace {

TensorData f32_table(Shape shape, const std::vector<double>& v) {
    std::vector<float> f(v.begin(), v.end());
    return TensorData::from_vector<float>(std::move(shape), f);
}

} // namespace

const WinogradMatrices& winograd_matrices(int64_t m) {
    // F(2, 3) and F(4, 3) with the interpolation points 0, +-1 (and +-2, 1/2 ... for m = 4) of
    // Lavin and Gray; the last row/column is the point at infinity.
    static const WinogradMatrices f2{2,
                                     4,
                                     {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
                                     {1, 0, 0, .5, .5, .5, .5, -.5, .5, 0, 0, 1},
                                     {1, 1, 1, 0, 0, 1, -1, -1}};
    static const WinogradMatrices f4{
        4,
        6,
        {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
         0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1},
        {1. / 4, 0, 0, -1. / 6, -1. / 6, -1. / 6, -1. / 6, 1. / 6, -1. / 6, 1. / 24, 1. / 12,
         1. / 6, 1. / 24, -1. / 12, 1. / 6, 0, 0, 1},
        {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1}};
    if (m == 2)
        return f2;
    if (m == 4)
        return f4;
    throw UserError() << "Winograd tile " << m << " is not supported (2 or 4)";
}

TensorData winograd_input_table(int64_t m) {
    const WinogradMatrices& w = winograd_matrices(m);
    return f32_table({w.alpha, w.alpha}, w.bt);
}

TensorData winograd_output_table(int64_t m) {
    const WinogradMatrices& w = winograd_matrices(m);
    return f32_table({w.m, w.alpha}, w.at);
}

TensorData winograd_weight(const TensorData& w, int64_t m) {
    TESSERA_CHECK(w.rank() == 4 && w.shape()[2] == 3 && w.shape()[3] == 3 &&
                  w.dtype() == DType::F32)
        << "Winograd weight of " << shape_str(w.shape());
    const WinogradMatrices& wm = winograd_matrices(m);
    const int64_t K = w.shape()[0], C = w.shape()[1], a = wm.alpha;
    TensorData u(DType::F32, {a * a, C, K});
    const float* src = w.data<float>();
    float* dst = u.data<float>();
    for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c) {
            const float* g = src + (k * C + c) * 9;
            for (int64_t e = 0; e < a * a; ++e) {
                double acc = 0;
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j)
                        acc += wm.g[(e / a) * 3 + i] * wm.g[(e % a) * 3 + j] * g[i * 3 + j];
                dst[(e * C + c) * K + k] = static_cast<float>(acc);
            }
        }
    return u;
}

} // namespace tessera::graph

namespace tessera::graph::detail {

namespace {

TypeList winograd_op_types(const NodeTypes& t) {
    std::vector<const Value*> ins;
    for (size_t i = 0; i < t.num_inputs(); ++i)
        ins.push_back(t.has(i) ? &t.in(i, "input") : nullptr);
    return winograd_types(t.node(), ins, t.where());
}

void winograd_input_kernel(NodeKernel& k) {
    const te::WinogradTile tile =
        winograd_input_tile(k.node(), k.input_value(0).shape, k.input_value(1).shape, k.where());
    k.set(te::winograd_input_nchwc(k.in(0), k.in(1), tile));
}

void winograd_output_kernel(NodeKernel& k) {
    k.set(te::winograd_output_nchwc(k.in(0), k.in(1), k.opt_in(2), winograd_output_tile(k.node()),
                                    k.node().attr_int("block", 0)));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Made by the winograd pass only: no ONNX opset defines them.
const OpDef WinogradInput = OpDef(Op::WinogradInput)
                                .onnx(OpDef::kNotOnnx, 1, 3, 1)
                                .types(winograd_op_types)
                                .eval(eval_winograd_input)
                                .fuses_as(FusionKind::OutFusable)
                                .named("winograd_input")
                                .table_at(1)
                                .builds(winograd_input_kernel);
const OpDef WinogradOutput = OpDef(Op::WinogradOutput)
                                 .onnx(OpDef::kNotOnnx, 1, 3, 1)
                                 .types(winograd_op_types)
                                 .eval(eval_winograd_output)
                                 .fuses_as(FusionKind::OutFusable)
                                 .named("winograd_output")
                                 .table_at(1)
                                 .builds(winograd_output_kernel);

} // namespace tessera::graph::ops
