// Every graph operator has a tensor expression that builds and computes what the graph reference
// evaluator computes. Per operator (ops.def, all of them: the importer's ops plus the internal
// ones the passes make), a small graph with odd shapes (1, 7, 13) and seeded random non-zero data
// is shape-inferred and fused without any pass (as at -O0, so nothing is folded away); each
// fused group's Compute is lowered twice (the default loop nest, and sched::default_schedule with
// its packed weights, as `tessera build` does without a tuning record), JIT-compiled for this
// host and run on the group's input values, and its outputs are compared with the graph
// evaluator's values: integer and bool outputs exactly, floats within rtol 1e-5 (plus atol 1e-6
// for values near zero after cancellation).
//
// Integer and bool tensors run end to end: int64 index arithmetic (truncating Div included),
// comparisons producing bool, Where selecting floats by a bool mask, Cast between f32, i64 and
// bool, Gather of token ids with negative indices, Range, Shape and ConstantOfShape. Last, a
// small ONNX model of such ops goes through the whole build (compile/model_compiler.h) at -O0
// and -O2 and its library runs through the C API.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <set>

#include "common/jit_executor.h"
#include "op_case.h"
#include "passes_util.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/tasks.h"
#include "tessera/graph/winograd.h"
#include "tessera/lower/lower_default.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/ops_extra.h"
#include "tessera/te/workload_key.h"

namespace tessera::graph {
namespace {

std::vector<OpCase> op_cases() {
    std::vector<OpCase> cs;
    // -- anchors
    cs.push_back({"Conv", {Op::Conv}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({1, 3, 7, 13}, 1));
                      const ValueId w = c.constant(floats({5, 3, 3, 3}, 2));
                      const ValueId b = c.constant(floats({5}, 3));
                      return {c.op(Op::Conv, {x, w, b},
                                   {{"kernel_shape", Is({3, 3})},
                                    {"strides", Is({2, 1})},
                                    {"dilations", Is({1, 1})},
                                    {"pads", Is({1, 0, 1, 2})},
                                    {"group", I(1)}})};
                  }});
    cs.push_back({"ConvDepthwise", {Op::Conv}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({1, 7, 13, 7}, 1));
                      const ValueId w = c.constant(floats({7, 1, 3, 3}, 2));
                      return {c.op(Op::Conv, {x, w},
                                   {{"kernel_shape", Is({3, 3})},
                                    {"strides", Is({1, 1})},
                                    {"dilations", Is({1, 1})},
                                    {"pads", Is({1, 1, 1, 1})},
                                    {"group", I(7)}})};
                  }});
    cs.push_back(
        {"BlockedLayoutConv",
         {Op::LayoutToBlocked, Op::ConvBlocked, Op::LayoutFromBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // 7 channels in blocks of 4 (one padding channel), 5 output channels.
             const ValueId x = c.input(floats({1, 7, 7, 13}, 1));
             const ValueId xb = c.op(Op::LayoutToBlocked, {x}, attr("block", I(4)));
             TensorData w = floats({2, 2, 3, 3, 4, 4}, 2);
             const ValueId y =
                 c.op(Op::ConvBlocked, {xb, c.constant(w), c.constant(floats({2, 4}, 3))},
                      {{"kernel_shape", Is({3, 3})},
                       {"strides", Is({1, 2})},
                       {"dilations", Is({1, 1})},
                       {"pads", Is({1, 1, 1, 1})},
                       {"block", I(4)},
                       {"depthwise", I(0)}});
             return {c.op(Op::LayoutFromBlocked, {y}, {{"block", I(4)}, {"channels", I(5)}})};
         }});
    cs.push_back(
        {"BlockedLayoutConvOneInputBlock",
         {Op::LayoutToBlocked, Op::ConvBlocked, Op::LayoutFromBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // 3 input channels read as one block of 3, 8 output channels in blocks of 4.
             const ValueId x = c.input(floats({1, 3, 13, 7}, 1));
             const ValueId xb = c.op(Op::LayoutToBlocked, {x}, attr("block", I(3)));
             const ValueId y = c.op(
                 Op::ConvBlocked,
                 {xb, c.constant(floats({2, 1, 3, 3, 3, 4}, 2)), c.constant(floats({2, 4}, 3))},
                 {{"kernel_shape", Is({3, 3})},
                  {"strides", Is({2, 1})},
                  {"dilations", Is({1, 1})},
                  {"pads", Is({1, 0, 1, 1})},
                  {"block", I(4)},
                  {"depthwise", I(0)}});
             return {c.op(Op::LayoutFromBlocked, {y}, {{"block", I(4)}, {"channels", I(8)}})};
         }});
    for (int64_t m : {2, 4}) {
        // A Winograd conv as the winograd pass makes it: 7 channels in blocks of 4 (one padding
        // channel), 5 outputs, a 13x7 image with uneven pads, so the last tiles hang over the
        // image; the real transform tables, random transformed weights and bias.
        cs.push_back(
            {"WinogradConvTile" + std::to_string(m),
             {Op::WinogradInput, Op::MatMul, Op::WinogradOutput},
             [m](Case& c) -> std::vector<ValueId> {
                 // F(4x4)'s Bt has entries up to 5, 25 in products of two: its sums of 36
                 // terms cancel to values near 0 with errors of the terms' size.
                 c.atol = 1e-4;
                 const ValueId x = c.input(floats({1, 7, 13, 7}, 1));
                 const ValueId xb = c.op(Op::LayoutToBlocked, {x}, attr("block", I(4)));
                 const int64_t alpha = m + 2, oh = 13 + 1 + 0 - 2, ow = 7 + 1 + 1 - 2;
                 const ValueId v =
                     c.op(Op::WinogradInput, {xb, c.constant(winograd_input_table(m))},
                          {{"tile", I(m)}, {"pads", Is({1, 1, 0, 1})}});
                 const ValueId mm =
                     c.op(Op::MatMul, {v, c.constant(floats({alpha * alpha, 8, 8}, 2))});
                 const ValueId y =
                     c.op(Op::WinogradOutput,
                          {mm, c.constant(winograd_output_table(m)), c.constant(floats({2, 4}, 3))},
                          {{"tile", I(m)}, {"block", I(4)}, {"out_h", I(oh)}, {"out_w", I(ow)}});
                 return {c.op(Op::LayoutFromBlocked, {y}, {{"block", I(4)}, {"channels", I(5)}})};
             }});
    }
    // 7 channels in blocks of 4; a 3x3 window, strides 2 and 1, ceil mode; the average's
    // windows at the edges count only the image, or the padding too.
    struct BlockedPool {
        const char* name;
        Op op;
        int64_t include_pad;
    };
    for (const BlockedPool& p :
         {BlockedPool{"BlockedLayoutMaxPool", Op::MaxPoolBlocked, 0},
          BlockedPool{"BlockedLayoutAveragePool0", Op::AveragePoolBlocked, 0},
          BlockedPool{"BlockedLayoutAveragePool1", Op::AveragePoolBlocked, 1}})
        cs.push_back(
            {p.name, {p.op}, [p](Case& c) -> std::vector<ValueId> {
                 const ValueId x = c.input(floats({1, 7, 13, 7}, 1));
                 const ValueId xb = c.op(Op::LayoutToBlocked, {x}, attr("block", I(4)));
                 Attributes attrs = {{"kernel_shape", Is({3, 3})},
                                     {"strides", Is({2, 1})},
                                     {"pads", Is({1, 1, 1, 0})},
                                     {"ceil_mode", I(1)},
                                     {"block", I(4)}};
                 if (p.op == Op::AveragePoolBlocked)
                     attrs["count_include_pad"] = I(p.include_pad);
                 const ValueId y = c.op(p.op, {xb}, attrs);
                 return {c.op(Op::LayoutFromBlocked, {y}, {{"block", I(4)}, {"channels", I(7)}})};
             }});
    cs.push_back(
        {"Gemm", {Op::Gemm}, [](Case& c) -> std::vector<ValueId> {
             const ValueId a = c.input(floats({7, 13}, 1));
             const ValueId b = c.constant(floats({5, 13}, 2));
             const ValueId bias = c.constant(floats({5}, 3));
             return {
                 c.op(Op::Gemm, {a, b, bias},
                      {{"alpha", F(0.5f)}, {"beta", F(2.0f)}, {"transA", I(0)}, {"transB", I(1)}})};
         }});
    cs.push_back({"MatMul", {Op::MatMul}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::MatMul,
                                   {c.input(floats({2, 7, 13}, 1)), c.input(floats({13, 1}, 2))})};
                  }});
    cs.push_back(
        {"BatchNormalization", {Op::BatchNormalization}, [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({1, 7, 13, 1}, 1));
             return {c.op(Op::BatchNormalization,
                          {x, c.constant(floats({7}, 2)), c.constant(floats({7}, 3)),
                           c.constant(floats({7}, 4)), c.constant(floats({7}, 5, 0.5f, 2.0f))},
                          attr("epsilon", F(1e-3f)))};
         }});
    // -- unary
    cs.push_back(unary_case("Relu", Op::Relu));
    cs.push_back(unary_case("Sigmoid", Op::Sigmoid, -4, 4));
    cs.push_back(unary_case("Tanh", Op::Tanh, -3, 3));
    cs.push_back(unary_case("Erf", Op::Erf, -2, 2));
    cs.push_back(unary_case("Gelu", Op::Gelu, -3, 3));
    cs.push_back(unary_case("Sqrt", Op::Sqrt, 0.1f, 4));
    cs.push_back(unary_case("Exp", Op::Exp, -3, 3));
    cs.push_back(unary_case("Log", Op::Log, 0.1f, 4));
    cs.push_back(unary_case("Neg", Op::Neg));
    cs.push_back(unary_case("Reciprocal", Op::Reciprocal, 0.25f, 4));
    cs.push_back(unary_case("LeakyRelu", Op::LeakyRelu, -1, 1, attr("alpha", F(0.125f))));
    cs.push_back(unary_case("HardSigmoid", Op::HardSigmoid, -6, 6,
                            {{"alpha", F(0.25f)}, {"beta", F(0.375f)}}));
    cs.push_back(unary_case("HardSwish", Op::HardSwish, -6, 6));
    cs.push_back(unary_case("Softmax", Op::Softmax, -3, 3, attr("axis", I(1))));
    cs.push_back(unary_case("Identity", Op::Identity));
    cs.push_back({"Clip", {Op::Clip}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::Clip, {c.input(floats({7, 13}, 1)), c.b.scalar(-0.5f),
                                              c.b.scalar(0.25f)})};
                  }});
    cs.push_back({"NotOfLess", {Op::Not, Op::Less}, [](Case& c) -> std::vector<ValueId> {
                      // Not of a runtime bool input, and of a comparison.
                      const ValueId m = c.input(bools({7, 13}, 1));
                      const ValueId l =
                          c.op(Op::Less, {c.input(floats({7, 13}, 2)), c.input(floats({13}, 3))});
                      return {c.op(Op::Not, {m}), c.op(Op::Not, {l})};
                  }});
    // -- binary, float and integer
    for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
        const std::string name = std::string(op_name(op));
        cs.push_back({name, {op}, [op](Case& c) -> std::vector<ValueId> {
                          return {c.op(op, {c.input(nonzero_floats({7, 13}, 1)),
                                            c.input(nonzero_floats({13}, 2))})};
                      }});
        cs.push_back({name + "I64", {op}, [op](Case& c) -> std::vector<ValueId> {
                          // Divisors never 0; operands of both signs, so that truncating and
                          // floor division differ.
                          TensorData b = ints({7, 1}, 2, 1, 9);
                          int64_t* pb = b.data<int64_t>();
                          for (int64_t i = 0; i < b.numel(); i += 2)
                              pb[i] = -pb[i];
                          return {c.op(op, {c.input(ints({7, 13}, 1, -50, 50)), c.input(b)})};
                      }});
    }
    cs.push_back({"Pow", {Op::Pow}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::Pow, {c.input(floats({7, 13}, 1, 0.25f, 2.0f)),
                                             c.input(floats({13}, 2, -2.0f, 2.0f))})};
                  }});
    cs.push_back({"PowIntExponent", {Op::Pow}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::Pow, {c.input(nonzero_floats({7, 13}, 1)),
                                             c.input(ints({1}, 2, 3, 3))})};
                  }});
    cs.push_back({"PowI64", {Op::Pow}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::Pow, {c.input(ints({7, 13}, 1, -5, 5)),
                                             c.input(ints({13}, 2, 0, 4))})};
                  }});
    cs.push_back({"MaxMin", {Op::Max, Op::Min}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId a = c.input(floats({7, 13}, 1));
                      const ValueId b = c.input(floats({1, 13}, 2));
                      const ValueId d = c.input(floats({7, 1}, 3));
                      return {c.op(Op::Max, {a, b, d}), c.op(Op::Min, {a, b}),
                              c.op(Op::Max, {c.input(ints({7, 13}, 4, -9, 9)),
                                             c.input(ints({13}, 5, -9, 9))})};
                  }});
    cs.push_back(
        {"Compare", {Op::Equal, Op::Less, Op::Greater}, [](Case& c) -> std::vector<ValueId> {
             const ValueId a = c.input(ints({7, 13}, 1, 0, 3));
             const ValueId b = c.input(ints({13}, 2, 0, 3));
             const ValueId x = c.input(floats({1, 13}, 3));
             const ValueId m = c.input(bools({7, 13}, 4));
             return {c.op(Op::Equal, {a, b}), c.op(Op::Less, {a, b}),
                     c.op(Op::Greater, {x, c.b.scalar(0.0f)}),
                     c.op(Op::Equal, {m, c.input(bools({13}, 5))})};
         }});
    cs.push_back(
        {"Where", {Op::Where}, [](Case& c) -> std::vector<ValueId> {
             // Floats selected by a runtime bool mask, with all three broadcasting.
             const ValueId m = c.input(bools({7, 1}, 1));
             return {c.op(Op::Where, {m, c.input(floats({7, 13}, 2)), c.input(floats({13}, 3))}),
                     c.op(Op::Where, {c.input(bools({13}, 4)), c.input(ints({7, 1}, 5, -9, 9)),
                                      c.constant(i64s({-1}))})};
         }});
    cs.push_back({"Cast", {Op::Cast}, [](Case& c) -> std::vector<ValueId> {
                      TensorData x = floats({7, 13}, 1, -4.0f, 4.0f);
                      x.data<float>()[0] = 0.0f; // a zero, to see false from f32 -> bool
                      const ValueId f = c.input(x);
                      const ValueId i = c.input(ints({7, 13}, 2, -2, 2));
                      const ValueId m = c.input(bools({13}, 3));
                      auto cast = [&](ValueId v, const char* to) {
                          return c.op(Op::Cast, {v}, attr("to", S(to)));
                      };
                      return {cast(f, "i64"), cast(f, "bool"), cast(i, "f32"), cast(i, "bool"),
                              cast(m, "f32"), cast(m, "i64"),  cast(i, "i32"), cast(f, "f32")};
                  }});
    cs.push_back(
        {"CastNarrow", {Op::Cast}, [](Case& c) -> std::vector<ValueId> {
             // Ties, overflow, subnormals, zeros, NaN and infinities, then random values, to
             // every narrow float (saturating and not) and back; every 8-bit code to f32 and
             // f16; integers and floats to and from the 4- and 2-bit integers.
             const float inf = std::numeric_limits<float>::infinity();
             TensorData x = floats({3, 13}, 1, -600.0f, 600.0f);
             const float special[] = {
                 0.47892547f, 1e6f, 1e-7f, -1e-7f, -1e6f, 460,   464, 465,  -0.0f, 57344,
                 61440,       249,  5,     2.5f,   0.25f, 0.75f, inf, -inf, NAN,   0.0013671875f};
             std::copy(std::begin(special), std::end(special), x.data<float>());
             const ValueId f = c.input(x);
             const ValueId h = c.op(Op::Cast, {f}, attr("to", S("f16")));
             std::vector<ValueId> outs;
             for (const char* t : {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f4e2m1"}) {
                 const ValueId sat = c.op(Op::Cast, {f}, attr("to", S(t)));
                 Attributes raw = attr("to", S(t));
                 raw["saturate"] = I(0);
                 outs.push_back(sat);
                 outs.push_back(c.op(Op::Cast, {h}, raw));
                 outs.push_back(c.op(Op::Cast, {sat}, attr("to", S("f32"))));
             }
             TensorData codes = ints({16, 16}, 2, 0, 255).cast(DType::U8);
             for (int i = 0; i < 256; ++i)
                 codes.data<uint8_t>()[i] = static_cast<uint8_t>(i); // every code
             for (const char* t : {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz"}) {
                 TensorData v = codes;
                 v.reinterpret_as(*parse_dtype(t));
                 const ValueId in = c.input(v);
                 outs.push_back(c.op(Op::Cast, {in}, attr("to", S("f32"))));
                 outs.push_back(c.op(Op::Cast, {in}, attr("to", S("f16"))));
                 outs.push_back(c.op(Op::Cast, {in}, attr("to", S("f4e2m1"))));
             }
             const ValueId i = c.input(ints({7, 13}, 3, -20, 20).cast(DType::I32));
             const ValueId q = c.input(floats({7, 13}, 4, -20.0f, 20.0f));
             for (const char* t : {"i4", "u4", "i2", "u2"}) {
                 const ValueId from_int = c.op(Op::Cast, {i}, attr("to", S(t)));
                 outs.push_back(from_int);
                 outs.push_back(c.op(Op::Cast, {q}, attr("to", S(t))));
                 outs.push_back(c.op(Op::Cast, {from_int}, attr("to", S("f32"))));
                 outs.push_back(c.op(Op::Cast, {from_int}, attr("to", S("i64"))));
             }
             return outs;
         }});
    // -- pooling and reductions
    cs.push_back({"Pools",
                  {Op::MaxPool, Op::AveragePool, Op::GlobalAveragePool},
                  [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({1, 7, 13, 7}, 1));
                      const Attributes w = {{"kernel_shape", Is({3, 3})},
                                            {"strides", Is({2, 2})},
                                            {"pads", Is({1, 1, 1, 1})},
                                            {"ceil_mode", I(1)}};
                      Attributes mp = w, ap = w;
                      mp["dilations"] = Is({1, 1});
                      ap["count_include_pad"] = I(0);
                      return {c.op(Op::MaxPool, {x}, mp), c.op(Op::AveragePool, {x}, ap),
                              c.op(Op::GlobalAveragePool, {x})};
                  }});
    cs.push_back(
        {"Reduce",
         {Op::ReduceMean, Op::ReduceSum, Op::ReduceMax},
         [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({7, 13, 1}, 1));
             return {c.op(Op::ReduceMean, {x}, {{"axes", Is({1})}, {"keepdims", I(1)}}),
                     c.op(Op::ReduceSum, {x, c.constant(i64s({0, -1}))}, {{"keepdims", I(0)}}),
                     c.op(Op::ReduceMax, {x}, {{"axes", Is({0})}, {"keepdims", I(0)}}),
                     c.op(Op::ReduceSum, {c.input(ints({7, 13}, 2, -9, 9)), c.constant(i64s({1}))},
                          {{"keepdims", I(1)}})};
         }});
    cs.push_back(
        {"LayerNormalization", {Op::LayerNormalization}, [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({1, 7, 13}, 1));
             return {c.op(Op::LayerNormalization,
                          {x, c.constant(floats({13}, 2)), c.constant(floats({13}, 3))},
                          {{"axis", I(2)}, {"epsilon", F(1e-5f)}})};
         }});
    cs.push_back(
        {"LayerNormalizationStats", {Op::LayerNormalization}, [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({7, 13, 1}, 1));
             return c.op_n(Op::LayerNormalization, {x, c.constant(floats({13, 1}, 2))}, 3,
                           {{"axis", I(1)}, {"epsilon", F(1e-5f)}});
         }});
    // -- data movement
    cs.push_back(
        {"ShapeOps",
         {Op::Flatten, Op::Reshape, Op::Transpose, Op::Squeeze, Op::Unsqueeze},
         [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({1, 7, 13}, 1));
             const ValueId t = c.op(Op::Transpose, {x}, attr("perm", Is({2, 0, 1})));
             return {
                 c.op(Op::Flatten, {x}, attr("axis", I(2))),
                 c.op(Op::Reshape, {t, c.constant(i64s({7, -1}))}, attr("allowzero", I(0))),
                 c.op(Op::Squeeze, {x, c.constant(i64s({0}))}),
                 c.op(Op::Unsqueeze, {c.input(ints({7, 13}, 2, -9, 9)), c.constant(i64s({0, 3}))})};
         }});
    cs.push_back(
        {"ConcatSlice", {Op::Concat, Op::Slice}, [](Case& c) -> std::vector<ValueId> {
             const ValueId a = c.input(floats({7, 13}, 1));
             const ValueId b = c.input(floats({1, 13}, 2));
             const ValueId cat = c.op(Op::Concat, {a, b, a}, attr("axis", I(0)));
             return {cat, c.op(Op::Slice, {a, c.constant(i64s({-2, 1})), c.constant(i64s({0, 12})),
                                           c.constant(i64s({1, 0})), c.constant(i64s({-3, 1}))})};
         }});
    cs.push_back({"Split", {Op::Split}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({7, 13}, 1));
                      std::vector<ValueId> outs = c.op_n(
                          Op::Split, {x, c.constant(i64s({1, 7, 5}))}, 3, attr("axis", I(1)));
                      // Equal parts of an integer tensor, without the sizes operand.
                      for (ValueId v : c.op_n(Op::Split, {c.input(ints({7, 26}, 2, -9, 9))}, 2,
                                              attr("axis", I(-1))))
                          outs.push_back(v);
                      return outs;
                  }});
    cs.push_back({"Gather", {Op::Gather}, [](Case& c) -> std::vector<ValueId> {
                      // Token ids into an embedding table, negative ids counting from the end.
                      const ValueId table = c.constant(floats({13, 7}, 1));
                      const ValueId ids = c.input(ints({1, 7}, 2, -13, 12));
                      const ValueId x = c.input(ints({7, 13}, 3, -9, 9));
                      return {
                          c.op(Op::Gather, {table, ids}, attr("axis", I(0))),
                          c.op(Op::Gather, {x, c.constant(i64s({-1, 0, 5}))}, attr("axis", I(1)))};
                  }});
    cs.push_back(
        {"Expand", {Op::Expand}, [](Case& c) -> std::vector<ValueId> {
             return {
                 c.op(Op::Expand, {c.input(floats({7, 1}, 1)), c.constant(i64s({1, 7, 13}))}),
                 c.op(Op::Expand, {c.input(ints({1, 13}, 2, -9, 9)), c.constant(i64s({7, 1}))})};
         }});
    for (const char* mode : {"constant", "edge", "reflect"}) {
        cs.push_back(
            {std::string("Pad_") + mode, {Op::Pad}, [mode](Case& c) -> std::vector<ValueId> {
                 const Attributes a = attr("mode", S(mode));
                 return {c.op(Op::Pad,
                              {c.input(floats({7, 13}, 1)), c.constant(i64s({1, 2, 3, 0})),
                               c.b.scalar(0.5f)},
                              a),
                         c.op(Op::Pad,
                              {c.input(ints({7, 13}, 2, -9, 9)), c.constant(i64s({0, 1, 2, 3})),
                               c.constant(TensorData::scalar<int64_t>(-7))},
                              a)};
             }});
    }
    cs.push_back({"Dropout", {Op::Dropout}, [](Case& c) -> std::vector<ValueId> {
                      return c.op_n(Op::Dropout, {c.input(floats({7, 13}, 1))}, 2);
                  }});
    // -- tensors from compile-time values
    cs.push_back({"Shape", {Op::Shape}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({1, 7, 13}, 1));
                      return {c.op(Op::Shape, {x}), c.op(Op::Shape, {x}, attr("start", I(-2)))};
                  }});
    cs.push_back(
        {"Constant", {Op::Constant}, [](Case& c) -> std::vector<ValueId> {
             return {
                 c.op(Op::Constant, {}, {{"value", Attribute::of_tensor(floats({7, 13}, 1))}}),
                 c.op(Op::Constant, {}, {{"value", Attribute::of_tensor(ints({13}, 2, -99, 99))}})};
         }});
    cs.push_back({"ConstantOfShape", {Op::ConstantOfShape}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId shape = c.constant(i64s({7, 13}));
                      return {c.op(Op::ConstantOfShape, {shape},
                                   {{"value", Attribute::of_tensor(i64s({-3}))}}),
                              c.op(Op::ConstantOfShape, {shape},
                                   {{"value", Attribute::of_tensor(
                                                  TensorData::from_vector<float>({1}, {2.5f}))}}),
                              c.op(Op::ConstantOfShape, {c.constant(i64s({13}))})};
                  }});
    cs.push_back(
        {"Range", {Op::Range}, [](Case& c) -> std::vector<ValueId> {
             auto i = [&](int64_t v) { return c.constant(TensorData::scalar<int64_t>(v)); };
             auto f = [&](float v) { return c.b.scalar(v); };
             return {c.op(Op::Range, {i(-3), i(10), i(1)}), c.op(Op::Range, {i(13), i(-1), i(-2)}),
                     c.op(Op::Range, {f(0.25f), f(-1.5f), f(-0.125f)})};
         }});
    // -- an attention mask as exported transformers compute it: int64 position arithmetic,
    //    comparisons, casts and a select, all in one program
    cs.push_back({"AttentionMask",
                  {Op::Range, Op::Unsqueeze, Op::Sub, Op::Div, Op::Less, Op::Where, Op::Cast,
                   Op::Mul, Op::Add, Op::Equal, Op::Not},
                  [](Case& c) -> std::vector<ValueId> {
                      auto i = [&](int64_t v) {
                          return c.constant(TensorData::scalar<int64_t>(v));
                      };
                      const ValueId pos = c.op(Op::Range, {i(0), i(13), i(1)});
                      const ValueId row = c.op(Op::Unsqueeze, {pos, c.constant(i64s({1}))});
                      // (q - k) / 2 < 0 marks keys at least two positions ahead of the query;
                      // truncating division keeps -1 / 2 at 0 (floor division would not)
                      const ValueId diff = c.op(Op::Sub, {row, pos});
                      const ValueId half = c.op(Op::Div, {diff, i(2)});
                      const ValueId future = c.op(Op::Less, {half, i(0)});
                      // padding mask from the runtime attention_mask input (1 keep, 0 pad)
                      const ValueId am = c.input(ints({1, 13}, 1, 0, 1));
                      const ValueId pad = c.op(Op::Equal, {am, i(0)});
                      const ValueId keep = c.op(Op::Not, {pad});
                      const ValueId keepf = c.op(Op::Cast, {keep}, attr("to", S("f32")));
                      const ValueId scores = c.input(floats({1, 13, 13}, 2));
                      const ValueId scaled = c.op(Op::Mul, {scores, keepf});
                      const ValueId masked = c.op(Op::Where, {future, c.b.scalar(-1e4f), scaled});
                      return {c.op(Op::Add, {masked, c.b.scalar(0.5f)})};
                  }});
    return cs;
}

class OpComputeTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpComputeTest, BuiltKernelMatchesGraphEvaluator) {
    const OpCase& oc = GetParam();
    Case c;
    std::vector<ValueId> outs = oc.build(c);
    const std::set<Op> covered = check_case(c, std::move(outs));
    for (Op op : oc.ops)
        EXPECT_TRUE(covered.count(op)) << op_name(op) << " is in no group";
}

INSTANTIATE_TEST_SUITE_P(Ops, OpComputeTest, ::testing::ValuesIn(all_op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) {
                             return std::string(info.param.name);
                         });

// The table covers every operator of ops.def that has a kernel (an op without one is checked
// by its evaluator tests and folds away before task extraction).
TEST(OpCompute, TableCoversEveryGraphOp) {
    std::set<Op> listed;
    for (const OpCase& c : all_op_cases())
        listed.insert(c.ops.begin(), c.ops.end());
#define TESSERA_GRAPH_OP(name)                                                                     \
    EXPECT_TRUE(listed.count(Op::name) || !op_has_kernel(Op::name)) << #name " has no case";
#include "tessera/graph/ops.def"
#undef TESSERA_GRAPH_OP
}

// What has no tensor expression is a UserError naming the node and the offending value.
TEST(OpCompute, ErrorsNameTheNode) {
    auto message = [](Case& c, std::vector<ValueId> outs) -> std::string {
        const Graph g = c.b.finish(std::move(outs));
        try {
            extract_tasks(g, fuse_ops(g));
        } catch (const UserError& e) {
            return e.what();
        }
        return "no error";
    };
    {
        // Clip's bounds are scalar parameters: a runtime bound is read by the kernel.
        Case c;
        const ValueId lo = c.input(TensorData::scalar<float>(-0.5f));
        const ValueId y = c.op(Op::Clip, {c.input(floats({7, 13}, 1)), lo});
        EXPECT_EQ(message(c, {y}), "no error");
    }
    {
        // Too large to bake into an expression (the importer makes initializers instead).
        Case c;
        const ValueId k =
            c.op(Op::Constant, {}, {{"value", Attribute::of_tensor(floats({41, 29}, 1))}});
        const std::string msg = message(c, {k});
        EXPECT_NE(msg.find("node 'Constant' (Constant)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("1189 elements"), std::string::npos) << msg;
    }
}

// The builders of ops_extra.h reject bad operands with a UserError naming the op and value.
TEST(OpCompute, BuildersRejectBadOperands) {
    auto message = [](const std::function<void()>& f) -> std::string {
        try {
            f();
        } catch (const UserError& e) {
            return e.what();
        }
        return "no error";
    };
    const te::Tensor x = te::placeholder({7, 13}, ir::DataType::f32(), "x");
    const te::Tensor m = te::placeholder({13}, ir::DataType::f32(), "m");
    const te::Tensor c = te::placeholder({7, 1}, ir::DataType::boolean(), "c");
    const te::Tensor k = te::placeholder({7, 13}, ir::DataType::i64(), "k");
    EXPECT_NE(message([&] { te::split(x, {5, 7}, 1); }).find("sum to 12"), std::string::npos);
    EXPECT_NE(message([&] { te::split(x, {7, 0, 6}, 1); }).find("size 0"), std::string::npos);
    EXPECT_NE(message([&] { te::where(m, x, x); }).find("'m' must be bool"), std::string::npos);
    EXPECT_NE(message([&] { te::where(c, x, k); }).find("different dtypes"), std::string::npos);
    const te::Tensor p = te::placeholder({7}, ir::DataType::f32(), "p");
    EXPECT_NE(message([&] {
                  te::batch_norm_inference(x, m, m, m, p, 1e-5);
              }).find("'p' must have shape [13]"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  te::arange(ir::Expr(int64_t(0)), ir::Expr(int64_t(1)), 0);
              }).find("must not be empty"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  te::constant_table({2, 2}, {ir::Expr(int64_t(1))});
              }).find("1 values"),
              std::string::npos);
    EXPECT_NE(message([&] { te::power(c, x); }).find("'c' must be numeric"), std::string::npos);
    // The integer result of pow truncates toward zero; the exponent may be another dtype.
    EXPECT_EQ(te::power(k, x).dtype(), ir::DataType::i64());
    EXPECT_EQ(te::truncating_divide(k, k).dtype(), ir::DataType::i64());
}

TESSERA_REGISTER_OP_CASES(op_cases);

// ---- whole builds ----------------------------------------------------------------------------

/// A transformer-style front end as an ONNX model: token ids through an embedding Gather
/// (negative ids included), LayerNormalization with its Mean output, Split, the attention mask
/// from int64 position arithmetic (Shape, Gather, Range, Unsqueeze, Sub, truncating Div,
/// Greater), a padding mask (Equal, Cast), Where, Softmax and a reflect Pad.
std::string attention_front_end_model() {
    using testing::ModelBuilder;
    ModelBuilder mb(17);
    mb.input("input_ids", DType::I64, {1, 7})
        .input("attention_mask", DType::I64, {1, 7})
        .input("scores", DType::F32, {1, 7, 7});
    mb.initializer("emb", floats({13, 5}, 1))
        .initializer("ln_scale", floats({5}, 2))
        .initializer("ln_bias", floats({5}, 3))
        .initializer("zero", TensorData::scalar<int64_t>(0))
        .initializer("one", TensorData::scalar<int64_t>(1))
        .initializer("two", TensorData::scalar<int64_t>(2))
        .initializer("axes1", i64s({1}))
        .initializer("split", i64s({2, 3}))
        .initializer("pads", i64s({0, 0, 1, 0, 0, 2}))
        .initializer("neg", TensorData::scalar<float>(-1e4f));
    mb.node("Gather", {"emb", "input_ids"}, {"embedded"}).i("axis", 0);
    mb.node("LayerNormalization", {"embedded", "ln_scale", "ln_bias"}, {"ln", "ln_mean"})
        .i("axis", -1);
    mb.node("Split", {"ln", "split"}, {"part_a", "part_b"}).i("axis", 2);
    mb.node("Shape", {"input_ids"}, {"ids_shape"});
    mb.node("Gather", {"ids_shape", "one"}, {"len"}).i("axis", 0);
    mb.node("Range", {"zero", "len", "one"}, {"pos"});
    mb.node("Unsqueeze", {"pos", "axes1"}, {"pos_col"});
    mb.node("Sub", {"pos", "pos_col"}, {"diff"});
    mb.node("Div", {"diff", "two"}, {"half"});
    mb.node("Greater", {"half", "zero"}, {"future"});
    mb.node("Equal", {"attention_mask", "zero"}, {"pad"});
    mb.node("Cast", {"pad"}, {"pad_f"}).i("to", 1 /* FLOAT */);
    mb.node("Mul", {"pad_f", "neg"}, {"pad_bias"});
    mb.node("Add", {"scores", "pad_bias"}, {"biased"});
    mb.node("Where", {"future", "neg", "biased"}, {"masked"});
    mb.node("Softmax", {"masked"}, {"probs"}).i("axis", -1);
    mb.node("Pad", {"probs", "pads"}, {"padded"}).s("mode", "reflect");
    mb.output("part_a")
        .output("part_b")
        .output("ln_mean")
        .output("half", DType::I64)
        .output("padded");
    return mb.bytes();
}

class OpComputeBuild : public ::testing::TestWithParam<int> {};

// The whole path of `tessera build` (import, -O level, tasks, default schedules, code, link)
// on a model of integer, bool and multi-output ops; the library's outputs match the graph
// evaluator on the imported graph. -O0 keeps Shape, Range and the mask arithmetic as kernels;
// -O2 folds them.
TEST_P(OpComputeBuild, LibraryMatchesEvaluator) {
    const Graph built = expect_library_matches_evaluator(
        attention_front_end_model(),
        {ints({1, 7}, 4, -13, 12), ints({1, 7}, 5, 0, 1), floats({1, 7, 7}, 6, -3.0f, 3.0f)},
        GetParam());
    const std::map<std::string, int> ops = op_histogram(built);
    for (const char* op : {"Gather", "LayerNormalization", "Split", "Where", "Softmax", "Pad"})
        EXPECT_TRUE(ops.count(op)) << op << " is not in the built graph";
    if (GetParam() == 0) {
        for (const char* op : {"Shape", "Range", "Div", "Greater", "Equal", "Cast"})
            EXPECT_TRUE(ops.count(op)) << op << " was folded at -O0";
    }
}

INSTANTIATE_TEST_SUITE_P(OptLevels, OpComputeBuild, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                             return "O" + std::to_string(info.param);
                         });

} // namespace
} // namespace tessera::graph
