// reduce_sum / mean / max / min over chosen axes, with and without keepdims.
#include "op_test_util.h"

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct ReduceCase {
    std::vector<int64_t> shape, axes;
    bool keepdims;
};
void PrintTo(const ReduceCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.shape) << " axes " << te::shape_to_string(c.axes) << " keepdims "
        << c.keepdims;
}

class Reduce : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(Reduce, AllKindsMatchReference) {
    const auto& p = GetParam();
    using Fn = te::Tensor (*)(const te::Tensor&, std::vector<int64_t>, bool);
    std::vector<std::pair<Fn, ref::Reduce>> kinds = {{te::reduce_sum, ref::Reduce::Sum},
                                                     {te::reduce_mean, ref::Reduce::Mean},
                                                     {te::reduce_max, ref::Reduce::Max},
                                                     {te::reduce_min, ref::Reduce::Min}};
    for (auto [fn, kind] : kinds) {
        te::Tensor x = placeholder(p.shape, f32, "x");
        te::Compute c = te::make_compute({x}, {fn(x, p.axes, p.keepdims)});
        auto in = random_inputs(c, 83);
        expect_output(c, in, ref::reduce(as_refs(c, in)[0], p.axes, p.keepdims, kind));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Reduce,
    ::testing::Values(ReduceCase{{7, 13}, {1}, false}, ReduceCase{{7, 13}, {0}, true},
                      ReduceCase{{3, 5, 7}, {0, 2}, false}, ReduceCase{{3, 5, 7}, {-1, -3}, true},
                      ReduceCase{{2, 127}, {}, false}, ReduceCase{{2, 127}, {}, true},
                      ReduceCase{{1}, {0}, false}, ReduceCase{{13, 1, 7}, {1}, false}));

TEST(Reduce, ShapesAndErrors) {
    te::Tensor x = placeholder({3, 5, 7}, f32, "x");
    EXPECT_EQ(te::reduce_sum(x, {1}, true).shape(), (std::vector<int64_t>{3, 1, 7}));
    EXPECT_EQ(te::reduce_sum(x, {}, false).shape(), (std::vector<int64_t>{}));
    EXPECT_THROW(te::reduce_sum(x, {3}), tessera::UserError);
    EXPECT_THROW(te::reduce_sum(x, {1, -2}), tessera::UserError);
    EXPECT_THROW(te::reduce_mean(placeholder({3}, ir::DataType::i32(), "xi"), {0}),
                 tessera::UserError);
}

} // namespace
} // namespace tessera::testing
