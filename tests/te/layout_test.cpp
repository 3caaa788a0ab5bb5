// transpose, reshape, concat, pad (constant / edge / reflect, crops) and slice (ONNX semantics).
#include "op_test_util.h"

#include <gmock/gmock.h>

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

TEST(Transpose, MatchesReference) {
    struct Case {
        std::vector<int64_t> shape, perm, ref_perm;
    };
    for (const Case& p : {Case{{7, 13}, {1, 0}, {1, 0}}, Case{{3, 5, 7}, {0, 2, 1}, {0, 2, 1}},
                          Case{{3, 5, 7}, {}, {2, 1, 0}},
                          Case{{2, 3, 5, 7}, {2, 0, -1, 1}, {2, 0, 3, 1}}, Case{{127}, {0}, {0}}}) {
        te::Tensor x = placeholder(p.shape, f32, "x");
        te::Compute c = te::make_compute({x}, {te::transpose(x, p.perm)});
        auto in = random_inputs(c, 89);
        expect_output(c, in, ref::transpose(as_refs(c, in)[0], p.ref_perm), 0);
    }
    te::Tensor x = placeholder({3, 4}, f32, "x");
    EXPECT_THROW(te::transpose(x, {0}), tessera::UserError);
    EXPECT_THROW(te::transpose(x, {1, 1}), tessera::UserError);
}

TEST(Reshape, MatchesReference) {
    struct Case {
        std::vector<int64_t> from, to, want;
    };
    for (const Case& p : {Case{{7, 13}, {13, 7}, {13, 7}}, Case{{3, 5, 7}, {-1, 7}, {15, 7}},
                          Case{{2, 3, 4}, {4, -1, 2}, {4, 3, 2}},
                          Case{{127}, {1, 127, 1}, {1, 127, 1}}, Case{{1, 1}, {}, {}}}) {
        te::Tensor x = placeholder(p.from, f32, "x");
        te::Compute c = te::make_compute({x}, {te::reshape(x, p.to)});
        auto in = random_inputs(c, 97);
        expect_output(c, in, ref::reshape(as_refs(c, in)[0], p.want), 0);
    }
    te::Tensor one = placeholder({1, 1}, f32, "one");
    EXPECT_EQ(te::reshape(one, {}).shape(), (std::vector<int64_t>{}));
    te::Tensor x = placeholder({3, 4}, f32, "x");
    try {
        te::reshape(x, {5, 2});
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_STREQ(e.what(),
                     "reshape: cannot reshape [3, 4] (12 elements) to [5, 2] (10 elements)");
    }
    EXPECT_THROW(te::reshape(x, {-1, -1}), tessera::UserError);
    EXPECT_THROW(te::reshape(x, {5, -1}), tessera::UserError);
    EXPECT_THROW(te::reshape(x, {0, 12}), tessera::UserError);
}

TEST(Concat, MatchesReference) {
    for (int64_t axis : {0, 1, -1}) {
        std::vector<int64_t> s0 = {3, 4}, s1 = {3, 4}, s2 = {3, 4};
        size_t ax = (size_t)(axis < 0 ? axis + 2 : axis);
        s0[ax] = 1, s1[ax] = 7, s2[ax] = 2;
        te::Tensor a = placeholder(s0, f32, "a"), b = placeholder(s1, f32, "b"),
                   d = placeholder(s2, f32, "d");
        te::Compute c = te::make_compute({a, b, d}, {te::concat({a, b, d}, axis)});
        auto in = random_inputs(c, 101);
        expect_output(c, in, ref::concat(as_refs(c, in), axis), 0);
    }
    te::Tensor x = placeholder({2, 3}, f32, "x");
    EXPECT_EQ(te::concat({x}, 0).shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_THROW(te::concat({x, placeholder({3, 3}, f32, "y")}, 1), tessera::UserError);
    EXPECT_THROW(te::concat({}, 0), tessera::UserError);
}

struct PadCase {
    std::vector<int64_t> shape, before, after;
    te::PadMode mode;
};
void PrintTo(const PadCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.shape) << " before " << te::shape_to_string(c.before) << " after "
        << te::shape_to_string(c.after) << " mode " << static_cast<int>(c.mode);
}

class Pad : public ::testing::TestWithParam<PadCase> {};

TEST_P(Pad, MatchesReference) {
    const auto& p = GetParam();
    te::Tensor x = placeholder(p.shape, f32, "x");
    te::Compute c = te::make_compute({x}, {te::pad(x, p.before, p.after, 0.75, p.mode)});
    auto in = random_inputs(c, 103);
    ref::PadMode m = p.mode == te::PadMode::Constant ? ref::PadMode::Constant
                     : p.mode == te::PadMode::Edge   ? ref::PadMode::Edge
                                                     : ref::PadMode::Reflect;
    expect_output(c, in, ref::pad(as_refs(c, in)[0], p.before, p.after, 0.75f, m), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, Pad,
    ::testing::Values(PadCase{{7, 13}, {1, 2}, {3, 0}, te::PadMode::Constant},
                      PadCase{{7, 13}, {-2, 1}, {1, -3}, te::PadMode::Constant},
                      PadCase{{1}, {2}, {3}, te::PadMode::Constant},
                      PadCase{{3, 5}, {2, 4}, {2, 1}, te::PadMode::Reflect},
                      PadCase{{3, 5}, {4, 0}, {1, 6}, te::PadMode::Edge},
                      PadCase{{2, 3, 4}, {0, 1, 0}, {1, 0, 2}, te::PadMode::Reflect},
                      PadCase{{127}, {0}, {0}, te::PadMode::Constant}));

TEST(Pad, BadPadsAreUserErrors) {
    te::Tensor x = placeholder({3, 5}, f32, "x");
    EXPECT_THROW(te::pad(x, {1}, {1}), tessera::UserError);
    EXPECT_THROW(te::pad(x, {-2, 0}, {-1, 0}), tessera::UserError);
    EXPECT_THROW(te::pad(x, {3, 0}, {0, 0}, 0, te::PadMode::Reflect), tessera::UserError);
}

struct SliceCase {
    std::vector<int64_t> shape, starts, ends, axes, steps;
};
void PrintTo(const SliceCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.shape) << " starts " << te::shape_to_string(c.starts) << " ends "
        << te::shape_to_string(c.ends) << " axes " << te::shape_to_string(c.axes) << " steps "
        << te::shape_to_string(c.steps);
}

class Slice : public ::testing::TestWithParam<SliceCase> {};

TEST_P(Slice, MatchesReference) {
    const auto& p = GetParam();
    te::Tensor x = placeholder(p.shape, f32, "x");
    te::Compute c = te::make_compute({x}, {te::slice(x, p.starts, p.ends, p.axes, p.steps)});
    auto in = random_inputs(c, 107);
    expect_output(c, in, ref::slice(as_refs(c, in)[0], p.starts, p.ends, p.axes, p.steps), 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, Slice,
                         ::testing::Values(SliceCase{{7, 13}, {1, 2}, {5, 13}, {}, {}},
                                           SliceCase{{7, 13}, {0}, {100}, {1}, {3}},
                                           SliceCase{{7, 13}, {-1}, {-100}, {0}, {-2}},
                                           SliceCase{{127}, {-10}, {-1}, {}, {}},
                                           SliceCase{{3, 5, 7}, {4, 1}, {-8, 3}, {-1, 1}, {-1, 1}},
                                           SliceCase{{1}, {0}, {1}, {0}, {1}}));

TEST(Slice, BadSlicesAreUserErrors) {
    te::Tensor x = placeholder({7, 13}, f32, "x");
    EXPECT_THROW(te::slice(x, {3}, {3}), tessera::UserError);
    EXPECT_THROW(te::slice(x, {0}, {3}, {0}, {0}), tessera::UserError);
    EXPECT_THROW(te::slice(x, {0, 0}, {3}), tessera::UserError);
    EXPECT_THROW(te::slice(x, {0, 0}, {3, 3}, {1, 1}), tessera::UserError);
    try {
        te::slice(x, {5}, {2}, {1});
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_STREQ(e.what(), "slice: axis 1 (size 13) sliced 5:2:1 is empty");
    }
}

} // namespace
} // namespace tessera::testing
