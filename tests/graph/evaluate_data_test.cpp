// The reference evaluator's data-movement and index ops, against element-by-element
// expectations computed here.
#include <gtest/gtest.h>

#include "graph_test_util.h"

namespace tessera::testing {
namespace {

using graph::Attribute;
using graph::Op;

TensorData iota(const Shape& s, DType t = DType::F32) {
    std::vector<int64_t> v(static_cast<size_t>(graph::shape_numel(s)));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<int64_t>(i);
    return TensorData::from_vector<int64_t>(s, v).cast(t);
}

TEST(ReshapeTest, ReshapeFlattenSqueezeUnsqueeze) {
    TensorData x = random_tensor({2, 3, 5}, 201);
    auto r = run_node(Op::Reshape, {in(x), konst(i64s({0, -1}))})[0];
    EXPECT_EQ(r, x.reshaped({2, 15}));
    auto rz = run_node(Op::Reshape, {in(x), konst(i64s({5, 0, 2}))},
                       {{"allowzero", Attribute::of_int(0)}})[0];
    EXPECT_EQ(rz.shape(), (Shape{5, 3, 2}));
    EXPECT_THROW(run_node(Op::Reshape, {in(x), konst(i64s({7, -1}))}), UserError);
    EXPECT_THROW(run_node(Op::Reshape, {in(x), konst(i64s({-1, -1}))}), UserError);
    EXPECT_EQ(run_node(Op::Flatten, {in(x)}, {{"axis", Attribute::of_int(2)}})[0],
              x.reshaped({6, 5}));
    EXPECT_EQ(run_node(Op::Flatten, {in(x)}, {{"axis", Attribute::of_int(0)}})[0],
              x.reshaped({1, 30}));
    EXPECT_EQ(run_node(Op::Flatten, {in(x)}, {{"axis", Attribute::of_int(-1)}})[0],
              x.reshaped({6, 5}));
    TensorData y = random_tensor({1, 3, 1, 5}, 202);
    EXPECT_EQ(run_node(Op::Squeeze, {in(y)})[0], y.reshaped({3, 5}));
    EXPECT_EQ(run_node(Op::Squeeze, {in(y), konst(i64s({-2}))})[0], y.reshaped({1, 3, 5}));
    EXPECT_THROW(run_node(Op::Squeeze, {in(y), konst(i64s({1}))}), UserError);
    EXPECT_EQ(run_node(Op::Unsqueeze, {in(x), konst(i64s({0, -1}))})[0],
              x.reshaped({1, 2, 3, 5, 1}));
    EXPECT_EQ(run_node(Op::Unsqueeze, {in(x), konst(i64s({2}))})[0], x.reshaped({2, 3, 1, 5}));
    EXPECT_EQ(run_node(Op::Identity, {in(x)})[0], x);
}

TEST(TransposeTest, PermutationsAndDefaultReverse) {
    TensorData x = iota({2, 3, 5});
    auto t = run_node(Op::Transpose, {in(x)}, {{"perm", Attribute::of_ints({2, 0, 1})}})[0];
    ASSERT_EQ(t.shape(), (Shape{5, 2, 3}));
    for (int64_t k = 0; k < 5; ++k)
        for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j)
                EXPECT_EQ(t.data<float>()[(k * 2 + i) * 3 + j],
                          x.data<float>()[(i * 3 + j) * 5 + k]);
    auto r = run_node(Op::Transpose, {in(x)})[0];
    ASSERT_EQ(r.shape(), (Shape{5, 3, 2}));
    EXPECT_EQ(r.data<float>()[(4 * 3 + 1) * 2 + 1], x.data<float>()[(1 * 3 + 1) * 5 + 4]);
    EXPECT_THROW(run_node(Op::Transpose, {in(x)}, {{"perm", Attribute::of_ints({0, 0, 1})}}),
                 UserError);
}

TEST(ConcatSplitTest, ConcatThenSplitRoundTrips) {
    TensorData a = random_tensor({2, 1, 3}, 211), b = random_tensor({2, 4, 3}, 212),
               c = random_tensor({2, 2, 3}, 213);
    auto cat = run_node(Op::Concat, {in(a), in(b), in(c)}, {{"axis", Attribute::of_int(1)}})[0];
    ASSERT_EQ(cat.shape(), (Shape{2, 7, 3}));
    for (int64_t n = 0; n < 2; ++n)
        for (int64_t j = 0; j < 7; ++j)
            for (int64_t k = 0; k < 3; ++k) {
                float want = j < 1   ? a.data<float>()[(n * 1 + j) * 3 + k]
                             : j < 5 ? b.data<float>()[(n * 4 + j - 1) * 3 + k]
                                     : c.data<float>()[(n * 2 + j - 5) * 3 + k];
                EXPECT_EQ(cat.data<float>()[(n * 7 + j) * 3 + k], want);
            }
    auto parts = run_node(Op::Split, {in(cat), konst(i64s({1, 4, 2}))},
                          {{"axis", Attribute::of_int(-2)}}, 3);
    EXPECT_EQ(parts[0], a);
    EXPECT_EQ(parts[1], b);
    EXPECT_EQ(parts[2], c);
    TensorData x = iota({2, 6}, DType::I64);
    auto halves = run_node(Op::Split, {in(x)}, {{"axis", Attribute::of_int(1)}}, 2);
    EXPECT_EQ(halves[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 6, 7, 8}));
    EXPECT_EQ(halves[1].to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 5, 9, 10, 11}));
    EXPECT_THROW(run_node(Op::Split, {in(x)}, {{"axis", Attribute::of_int(1)}}, 4), UserError);
    EXPECT_THROW(run_node(Op::Concat, {in(a), in(x)}, {{"axis", Attribute::of_int(0)}}), UserError);
}

TEST(SliceTest, ClampingNegativeStepsAndAxes) {
    TensorData x = iota({5, 7});
    // Rows 1..3, columns from the end backwards with step -2 (6, 4, 2, 0).
    auto s = run_node(Op::Slice, {in(x), konst(i64s({1, -1})), konst(i64s({4, -1000})),
                                  konst(i64s({0, 1})), konst(i64s({1, -2}))})[0];
    ASSERT_EQ(s.shape(), (Shape{3, 4}));
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
            EXPECT_EQ(s.data<float>()[i * 4 + j], x.data<float>()[(1 + i) * 7 + 6 - 2 * j]);
    // Only axis 1 sliced, end clamped to the extent.
    auto t = run_node(Op::Slice,
                      {in(x), konst(i64s({2})), konst(i64s({INT64_MAX})), konst(i64s({-1}))})[0];
    ASSERT_EQ(t.shape(), (Shape{5, 5}));
    EXPECT_EQ(t.data<float>()[0], 2.0f);
    // Empty result.
    auto e = run_node(Op::Slice, {in(x), konst(i64s({3})), konst(i64s({1}))})[0];
    EXPECT_EQ(e.shape(), (Shape{0, 7}));
    EXPECT_THROW(run_node(Op::Slice, {in(x), konst(i64s({0})), konst(i64s({1})), konst(i64s({0})),
                                      konst(i64s({0}))}),
                 UserError);
}

TEST(GatherTest, AxesAndNegativeIndices) {
    TensorData x = iota({4, 5});
    TensorData idx = TensorData::from_vector<int64_t>({2, 2}, {0, -1, 2, 1});
    auto g0 = run_node(Op::Gather, {in(x), in(idx)}, {{"axis", Attribute::of_int(0)}})[0];
    ASSERT_EQ(g0.shape(), (Shape{2, 2, 5}));
    const int64_t rows[4] = {0, 3, 2, 1};
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t j = 0; j < 5; ++j)
            EXPECT_EQ(g0.data<float>()[r * 5 + j], x.data<float>()[rows[r] * 5 + j]);
    auto g1 = run_node(Op::Gather, {in(x), konst(TensorData::scalar<int64_t>(-2))},
                       {{"axis", Attribute::of_int(1)}})[0];
    ASSERT_EQ(g1.shape(), (Shape{4}));
    for (int64_t i = 0; i < 4; ++i)
        EXPECT_EQ(g1.data<float>()[i], x.data<float>()[i * 5 + 3]);
    // Token-id style: i64 table rows by i32 ids.
    TensorData table = iota({6, 3}, DType::I64);
    TensorData ids = TensorData::from_vector<int32_t>({1, 3}, {5, 0, 5});
    auto g2 = run_node(Op::Gather, {konst(table), in(ids)})[0];
    EXPECT_EQ(g2.to_vector<int64_t>(), (std::vector<int64_t>{15, 16, 17, 0, 1, 2, 15, 16, 17}));
    TensorData bad = TensorData::from_vector<int64_t>({1}, {4});
    EXPECT_THROW(run_node(Op::Gather, {in(x), in(bad)}), UserError);
}

TEST(ShapeOpsTest, ShapeConstantOfShapeRangeExpand) {
    TensorData x = random_tensor({2, 3, 5, 7}, 221);
    EXPECT_EQ(run_node(Op::Shape, {in(x)})[0], i64s({2, 3, 5, 7}));
    EXPECT_EQ(run_node(Op::Shape, {in(x)},
                       {{"start", Attribute::of_int(1)}, {"end", Attribute::of_int(-1)}})[0],
              i64s({3, 5}));
    EXPECT_EQ(run_node(Op::Shape, {in(x)}, {{"start", Attribute::of_int(-9)}})[0],
              i64s({2, 3, 5, 7}));

    auto c =
        run_node(Op::ConstantOfShape, {konst(i64s({2, 3}))},
                 {{"value", Attribute::of_tensor(TensorData::from_vector<int64_t>({1}, {7}))}})[0];
    EXPECT_EQ(c, TensorData::from_vector<int64_t>({2, 3}, std::vector<int64_t>(6, 7)));
    auto cz = run_node(Op::ConstantOfShape, {konst(i64s({3}))})[0];
    EXPECT_EQ(cz, TensorData::from_vector<float>({3}, {0, 0, 0}));

    auto ri = run_node(Op::Range, {konst(TensorData::scalar<int64_t>(10)),
                                   konst(TensorData::scalar<int64_t>(-3)),
                                   konst(TensorData::scalar<int64_t>(-4))})[0];
    EXPECT_EQ(ri, i64s({10, 6, 2, -2}));
    auto rf = run_node(Op::Range, {konst(TensorData::scalar(0.5f)), konst(TensorData::scalar(2.0f)),
                                   konst(TensorData::scalar(0.5f))})[0];
    EXPECT_EQ(rf, TensorData::from_vector<float>({3}, {0.5f, 1.0f, 1.5f}));
    auto re = run_node(Op::Range, {konst(TensorData::scalar<int64_t>(3)),
                                   konst(TensorData::scalar<int64_t>(3)),
                                   konst(TensorData::scalar<int64_t>(1))})[0];
    EXPECT_EQ(re.shape(), (Shape{0}));

    TensorData v = random_tensor({3, 1}, 222);
    auto e = run_node(Op::Expand, {in(v), konst(i64s({2, 1, 4}))})[0];
    ASSERT_EQ(e.shape(), (Shape{2, 3, 4}));
    for (int64_t i = 0; i < 24; ++i)
        EXPECT_EQ(e.data<float>()[i], v.data<float>()[(i / 4) % 3]);
    EXPECT_THROW(run_node(Op::Expand, {in(v), konst(i64s({2, 4}))}), UserError);
}

TEST(PadTest, ConstantReflectEdgeAndCrop) {
    TensorData x = iota({2, 3});
    auto c =
        run_node(Op::Pad, {in(x), konst(i64s({1, 0, 0, 2})), konst(TensorData::scalar(-1.0f))})[0];
    EXPECT_EQ(c, TensorData::from_vector<float>(
                     {3, 5}, {-1, -1, -1, -1, -1, 0, 1, 2, -1, -1, 3, 4, 5, -1, -1}));
    auto z = run_node(Op::Pad, {in(x), konst(i64s({0, 1, 0, 0}))})[0];
    EXPECT_EQ(z, TensorData::from_vector<float>({2, 4}, {0, 0, 1, 2, 0, 3, 4, 5}));
    auto r = run_node(Op::Pad, {in(x), konst(i64s({0, 2, 0, 1}))},
                      {{"mode", Attribute::of_string("reflect")}})[0];
    EXPECT_EQ(r, TensorData::from_vector<float>({2, 6}, {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}));
    auto e = run_node(Op::Pad, {in(x), konst(i64s({1, 1, 0, 0}))},
                      {{"mode", Attribute::of_string("edge")}})[0];
    EXPECT_EQ(e, TensorData::from_vector<float>({3, 4}, {0, 0, 1, 2, 0, 0, 1, 2, 3, 3, 4, 5}));
    auto crop = run_node(Op::Pad, {in(x), konst(i64s({0, -1, 0, -1}))})[0];
    EXPECT_EQ(crop, TensorData::from_vector<float>({2, 1}, {1, 4}));
    EXPECT_THROW(run_node(Op::Pad, {in(x), konst(i64s({0, 3, 0, 0}))},
                          {{"mode", Attribute::of_string("reflect")}}),
                 UserError);
    EXPECT_THROW(run_node(Op::Pad, {in(x), konst(i64s({0, 1}))}), UserError);
}

TEST(MiscTest, ConstantAndDropout) {
    TensorData v = random_tensor({2, 2}, 231);
    EXPECT_EQ(run_node(Op::Constant, {}, {{"value", Attribute::of_tensor(v)}})[0], v);
    TensorData x = random_tensor({3, 5}, 232);
    auto d = run_node(Op::Dropout, {in(x)}, {}, 2);
    EXPECT_EQ(d[0], x);
    EXPECT_EQ(d[1].dtype(), DType::Bool);
    EXPECT_EQ(d[1].as_i64(), std::vector<int64_t>(15, 1));
}

} // namespace
} // namespace tessera::testing
