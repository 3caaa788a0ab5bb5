// The elementwise ops of src/graph/ops/elementwise.cpp added with Abs, Sign, Floor, Ceil, Round,
// Mod, Softplus, Softsign, Elu, Selu, Celu, Mish, ThresholdedRelu, PRelu, And, Or, Xor,
// LessOrEqual, GreaterOrEqual, Sum, Mean and Gelu's tanh form:
// - the reference evaluator against values of onnx.reference (onnx 1.23) pasted as literals
//   (Mean with broadcasting from numpy in f32: the reference's Mean adds in place and cannot
//   broadcast), on odd shapes and attribute variants;
// - refusals: one UserError naming the node;
// - import of each opset form (canonical attributes, legacy broadcasting, refusals);
// - the kernel cases, registered here and run by op_compute_test.cpp (names "Elementwise...").
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::in;
using testing::konst;
using testing::ModelBuilder;
using testing::run_node;

TensorData f32(const Shape& s, std::vector<float> v) {
    return TensorData::from_vector<float>(s, v);
}
TensorData f64(const Shape& s, std::vector<double> v) {
    return TensorData::from_vector<double>(s, v);
}
TensorData i64(const Shape& s, std::vector<int64_t> v) {
    return TensorData::from_vector<int64_t>(s, v);
}
TensorData i32(const Shape& s, std::vector<int32_t> v) {
    return TensorData::from_vector<int32_t>(s, v);
}
TensorData b8(const Shape& s, std::vector<uint8_t> v) {
    return TensorData::from_vector<uint8_t>(s, v);
}

// The message of the UserError f throws ("no error" when none).
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

#define EXPECT_CONTAINS(text, part)                                                                \
    EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

// ---- evaluator: known values -----------------------------------------------------------------

// x of shape [3, 5] drawn from [-4, 4] (no zeros).
const std::vector<float> kX = {-2.56850004f, 1.11930001f,  -0.261900008f, -1.03600001f,
                               -1.16069996f, 2.32410002f,  3.24119997f,   -2.58119988f,
                               1.22230005f,  -1.61360002f, 3.73569989f,   3.35879993f,
                               1.08700001f,  2.02189994f,  0.121200003f};

TEST(ElementwiseEvalTest, UnaryFloatKnownValues) {
    struct Known {
        Op op;
        Attributes attrs;
        std::vector<float> want;
    };
    const std::vector<Known> cases = {
        {Op::Abs,
         {},
         {2.56850004f, 1.11930001f, 0.261900008f, 1.03600001f, 1.16069996f, 2.32410002f,
          3.24119997f, 2.58119988f, 1.22230005f, 1.61360002f, 3.73569989f, 3.35879993f, 1.08700001f,
          2.02189994f, 0.121200003f}},
        {Op::Sign, {}, {-1, 1, -1, -1, -1, 1, 1, -1, 1, -1, 1, 1, 1, 1, 1}},
        {Op::Floor, {}, {-3, 1, -1, -2, -2, 2, 3, -3, 1, -2, 3, 3, 1, 2, 0}},
        {Op::Ceil, {}, {-2, 2, -0.0f, -1, -1, 3, 4, -2, 2, -1, 4, 4, 2, 3, 1}},
        {Op::Round, {}, {-3, 1, -0.0f, -1, -1, 2, 3, -3, 1, -2, 4, 3, 1, 2, 0}},
        {Op::Softplus,
         {},
         {0.0738547742f, 1.4018501f, 0.570746779f, 0.303706497f, 0.2725178f, 2.41747332f,
          3.27957129f, 0.0729559362f, 1.4804647f, 0.181629077f, 3.75927615f, 3.39298582f,
          1.37759781f, 2.14624238f, 0.755582273f}},
        {Op::Softsign,
         {},
         {-0.719770193f, 0.528146088f, -0.207544193f, -0.508840859f, -0.53718704f, 0.699166715f,
          0.764217675f, -0.720763981f, 0.550015748f, -0.617385983f, 0.788838029f, 0.77057904f,
          0.520843327f, 0.669082344f, 0.10809847f}},
        {Op::Elu,
         {},
         {-0.923349559f, 1.11930001f, -0.230412021f, -0.645128667f, -0.686733186f, 2.32410002f,
          3.24119997f, -0.924316883f, 1.22230005f, -0.800830662f, 3.73569989f, 3.35879993f,
          1.08700001f, 2.02189994f, 0.121200003f}},
        {Op::Elu,
         attr("alpha", F(0.5f)),
         {-0.46167478f, 1.11930001f, -0.115206011f, -0.322564334f, -0.343366593f, 2.32410002f,
          3.24119997f, -0.462158442f, 1.22230005f, -0.400415331f, 3.73569989f, 3.35879993f,
          1.08700001f, 2.02189994f, 0.121200003f}},
        {Op::Selu,
         {},
         {-1.62334025f, 1.17604971f, -0.405087233f, -1.13420022f, -1.20734525f, 2.44193435f,
          3.40553212f, -1.62504089f, 1.28427196f, -1.40793991f, 3.92510366f, 3.52909446f,
          1.14211202f, 2.1244123f, 0.127344966f}},
        {Op::Selu,
         {{"alpha", F(1.5f)}, {"gamma", F(2.0f)}},
         {-2.77004862f, 2.23860002f, -0.691236079f, -1.93538594f, -2.0601995f, 4.64820004f,
          6.48239994f, -2.77295065f, 2.44460011f, -2.40249205f, 7.47139978f, 6.71759987f,
          2.17400002f, 4.04379988f, 0.242400005f}},
        {Op::Celu,
         {},
         {-0.923349559f, 1.11930001f, -0.230412021f, -0.645128667f, -0.686733186f, 2.32410002f,
          3.24119997f, -0.924316883f, 1.22230005f, -0.800830662f, 3.73569989f, 3.35879993f,
          1.08700001f, 2.02189994f, 0.121200003f}},
        {Op::Celu,
         attr("alpha", F(2.0f)),
         {-1.4462837f, 1.11930001f, -0.245476738f, -0.808578432f, -0.880595088f, 2.32410002f,
          3.24119997f, -1.44978857f, 1.22230005f, -1.10743213f, 3.73569989f, 3.35879993f,
          1.08700001f, 2.02189994f, 0.121200003f}},
        {Op::Mish,
         {},
         {-0.189351857f, 0.991421044f, -0.13511619f, -0.30531013f, -0.30870682f, 2.28745151f,
          3.23202682f, -0.187980458f, 1.10197079f, -0.289895892f, 3.73164582f, 3.35122085f,
          0.957008123f, 1.967363f, 0.0773822591f}},
        {Op::ThresholdedRelu,
         {},
         {0, 1.11930001f, 0, 0, 0, 2.32410002f, 3.24119997f, 0, 1.22230005f, 0, 3.73569989f,
          3.35879993f, 1.08700001f, 2.02189994f, 0}},
        // alpha 1.2 drops 1.1193 and 1.087, which the default 1 keeps.
        {Op::ThresholdedRelu,
         attr("alpha", F(1.2f)),
         {0, 0, 0, 0, 0, 2.32410002f, 3.24119997f, 0, 1.22230005f, 0, 3.73569989f, 3.35879993f, 0,
          2.02189994f, 0}},
        {Op::Gelu,
         {},
         {-0.0131172929f, 0.972105265f, -0.103895538f, -0.155504704f, -0.142629072f, 2.3007195f,
          3.23927093f, -0.0127069028f, 1.08687282f, -0.0860163644f, 3.73535037f, 3.35748553f,
          0.936430514f, 1.97824037f, 0.0664459243f}},
        {Op::Gelu,
         attr("approximate", S("tanh")),
         {-0.012658162f, 0.97191304f, -0.10389702f, -0.155669987f, -0.142833054f, 2.30107331f,
          3.23958182f, -0.012245195f, 1.08665431f, -0.0861945301f, 3.73546648f, 3.35774302f,
          0.936248243f, 1.97835732f, 0.0664458498f}},
    };
    const TensorData x = f32({3, 5}, kX);
    for (const Known& k : cases) {
        SCOPED_TRACE(op_name(k.op));
        EXPECT_TENSOR_NEAR(run_node(k.op, {in(x)}, k.attrs)[0], f32({3, 5}, k.want), 1e-6, 1e-7);
    }
}

TEST(ElementwiseEvalTest, RoundHalvesToEven) {
    const TensorData x = f32({3, 5}, {-3.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, -1.75f,
                                      1.25f, 0.49999997f, -0.50000006f, 2.50000024f, 1e8f, -7});
    EXPECT_EQ(run_node(Op::Round, {in(x)})[0],
              f32({3, 5}, {-4, -2, -2, -0.0f, 0, 2, 2, 4, -2, 1, 0, -1, 3, 1e8f, -7}));
    const TensorData d = f64({4}, {-2.5, 0.5, 1.5, 4.5000000001});
    EXPECT_EQ(run_node(Op::Round, {in(d)})[0], f64({4}, {-2, 0, 2, 5}));
}

TEST(ElementwiseEvalTest, SignAndRoundingOfSpecialValues) {
    const float inf = std::numeric_limits<float>::infinity();
    const TensorData x = f32({5}, {0.0f, -0.0f, inf, -inf, NAN});
    const std::vector<float> sign = run_node(Op::Sign, {in(x)})[0].to_vector<float>();
    EXPECT_EQ(sign[0], 0.0f);
    EXPECT_EQ(sign[2], 1.0f);
    EXPECT_EQ(sign[3], -1.0f);
    EXPECT_TRUE(std::isnan(sign[4]));
    for (Op op : {Op::Round, Op::Floor, Op::Ceil}) {
        const std::vector<float> r = run_node(op, {in(x)})[0].to_vector<float>();
        EXPECT_EQ(r[2], inf) << op_name(op);
        EXPECT_EQ(r[3], -inf) << op_name(op);
        EXPECT_TRUE(std::isnan(r[4])) << op_name(op);
    }
}

TEST(ElementwiseEvalTest, IntegerAbsSignNeg) {
    // Abs and Neg of the lowest value wrap to itself, as in numpy.
    const int32_t lo = std::numeric_limits<int32_t>::min(),
                  hi = std::numeric_limits<int32_t>::max();
    const TensorData x = i32({3, 5}, {-7, 5, -1, 9, lo, hi, 3, -12, 8, -3, 1, -5, 6, -9, 4});
    EXPECT_EQ(run_node(Op::Abs, {in(x)})[0],
              i32({3, 5}, {7, 5, 1, 9, lo, hi, 3, 12, 8, 3, 1, 5, 6, 9, 4}));
    EXPECT_EQ(run_node(Op::Sign, {in(x)})[0],
              i32({3, 5}, {-1, 1, -1, 1, -1, 1, 1, -1, 1, -1, 1, -1, 1, -1, 1}));
    EXPECT_EQ(run_node(Op::Neg, {in(x)})[0],
              i32({3, 5}, {7, -5, 1, -9, lo, -2147483647, -3, 12, -8, 3, -1, 5, -6, 9, -4}));
    const TensorData xl = i64({5}, {-7000021, 2147490089450941, -2147490090450944, 4000012, -1});
    EXPECT_EQ(run_node(Op::Abs, {in(xl)})[0],
              i64({5}, {7000021, 2147490089450941, 2147490090450944, 4000012, 1}));
    EXPECT_EQ(run_node(Op::Sign, {in(xl)})[0], i64({5}, {-1, 1, -1, 1, -1}));
}

// A [3, 5] by B [5] (B holds -1: no INT_MIN % -1 trap, and 0 either way).
const std::vector<int64_t> kModA = {14, -13, -19, 6, -6, -1, -17, -5, 6, -6, 14, 12, 8, 17, 9};
const std::vector<int64_t> kModB = {-5, 5, -1, -6, -3};

TEST(ElementwiseEvalTest, IntegerModFollowsTheDivisorOrTheDividend) {
    const std::vector<int64_t> floor_mod = {-1, 2, 0, 0, 0, -1, 3, 0, 0, 0, -1, 2, 0, -1, 0};
    const std::vector<int64_t> c_fmod = {4, -3, 0, 0, 0, -1, -2, 0, 0, 0, 4, 2, 0, 5, 0};
    const TensorData a = i64({3, 5}, kModA), b = i64({5}, kModB);
    EXPECT_EQ(run_node(Op::Mod, {in(a), in(b)})[0], i64({3, 5}, floor_mod));
    EXPECT_EQ(run_node(Op::Mod, {in(a), in(b)}, attr("fmod", I(0)))[0], i64({3, 5}, floor_mod));
    EXPECT_EQ(run_node(Op::Mod, {in(a), in(b)}, attr("fmod", I(1)))[0], i64({3, 5}, c_fmod));
    const TensorData a32 = a.cast(DType::I32), b32 = b.cast(DType::I32);
    EXPECT_EQ(run_node(Op::Mod, {in(a32), in(b32)})[0], i64({3, 5}, floor_mod).cast(DType::I32));
    EXPECT_EQ(run_node(Op::Mod, {in(a32), in(b32)}, attr("fmod", I(1)))[0],
              i64({3, 5}, c_fmod).cast(DType::I32));
    const TensorData lowest = i64({1}, {std::numeric_limits<int64_t>::min()});
    EXPECT_EQ(run_node(Op::Mod, {in(lowest), konst(i64({1}, {-1}))})[0], i64({1}, {0}));
    // Integer modulo by zero is undefined in ONNX: refused.
    const std::string msg = error_of([&] {
        run_node(Op::Mod, {in(a), in(i64({5}, {3, 0, 2, 1, 4}))}, attr("fmod", I(1)));
    });
    EXPECT_CONTAINS(msg, "node 'n' (Mod)");
    EXPECT_CONTAINS(msg, "integer modulo by zero");
}

TEST(ElementwiseEvalTest, FloatModFollowsTheDivisorOrTheDividend) {
    const TensorData a =
        f32({3, 5}, {9.33920002f, 8.39700031f, 2.71740007f, 5.05459976f, 0.30309999f, 6.51789999f,
                     -1.03240001f, -3.22379994f, -4.44199991f, -5.47329998f, 0.516300023f,
                     -1.38180006f, 3.26360011f, -9.7432003f, -1.046f});
    const TensorData b = f32({3, 1}, {0.75f, -2.5f, 1.29999995f});
    EXPECT_TENSOR_NEAR(
        run_node(Op::Mod, {in(a), in(b)})[0],
        f32({3, 5}, {0.33920002f, 0.147000313f, 0.467400074f, 0.554599762f, 0.30309999f,
                     -0.98210001f, -1.03240001f, -0.723799944f, -1.94199991f, -0.47329998f,
                     0.516300023f, 1.21819985f, 0.663600206f, 0.656799316f, 0.253999949f}),
        1e-6, 1e-7);
    EXPECT_TENSOR_NEAR(
        run_node(Op::Mod, {in(a), in(b)}, attr("fmod", I(1)))[0],
        f32({3, 5}, {0.33920002f, 0.147000313f, 0.467400074f, 0.554599762f, 0.30309999f,
                     1.51789999f, -1.03240001f, -0.723799944f, -1.94199991f, -0.47329998f,
                     0.516300023f, -0.0818001032f, 0.663600206f, -0.643200636f, -1.046f}),
        1e-6, 1e-7);
    const TensorData ad = f64({5}, {6.5179006418717869, -1.3818001936838509, 3.2636004373677019,
                                    -9.7432012764440543, -1.0460001084146977});
    const TensorData bd = f64({1}, {-2.5});
    EXPECT_TENSOR_NEAR(run_node(Op::Mod, {in(ad), in(bd)}, attr("fmod", I(1)))[0],
                       f64({5}, {1.5179006418717869, -1.3818001936838509, 0.7636004373677019,
                                 -2.2432012764440543, -1.0460001084146977}),
                       1e-12, 1e-14);
    EXPECT_TENSOR_NEAR(run_node(Op::Mod, {in(ad), in(bd)})[0],
                       f64({5}, {-0.9820993581282131, -1.3818001936838509, -1.7363995626322981,
                                 -2.2432012764440543, -1.0460001084146977}),
                       1e-12, 1e-14);
    // A float divisor 0 gives NaN (no error).
    const std::vector<float> nan =
        run_node(Op::Mod, {in(a), konst(f32({1}, {0.0f}))})[0].to_vector<float>();
    EXPECT_TRUE(std::isnan(nan[0]) && std::isnan(nan[14]));
}

TEST(ElementwiseEvalTest, PReluBroadcastsTheSlopeToX) {
    const TensorData x =
        f32({2, 3, 5}, {-1.28429997f,  0.559700012f,  -0.130899996f, -0.518000007f, -0.580299973f,
                        1.16209996f,   1.62059999f,   -1.29059994f,  0.611100018f,  -0.806800008f,
                        1.8678f,       1.67939997f,   0.543500006f,  1.01090002f,   0.0606000014f,
                        1.30359995f,   -0.206499994f, -0.644800007f, -0.888400018f, -1.09469998f,
                        0.103299998f,  -0.2764f,      0.652700007f,  -1.94860005f,  -0.209199995f,
                        -0.539300025f, -1.2184f,      0.379500002f,  -0.258700013f, -0.800000012f});
    const TensorData s31 = f32({3, 1}, {0.25f, -0.5f, 2.0f});
    EXPECT_TENSOR_NEAR(
        run_node(Op::PRelu, {in(x), konst(s31)})[0],
        f32({2, 3, 5},
            {-0.321074992f, 0.559700012f,   -0.0327249989f, -0.129500002f, -0.145074993f,
             1.16209996f,   1.62059999f,    0.645299971f,   0.611100018f,  0.403400004f,
             1.8678f,       1.67939997f,    0.543500006f,   1.01090002f,   0.0606000014f,
             1.30359995f,   -0.0516249985f, -0.161200002f,  -0.222100005f, -0.273674995f,
             0.103299998f,  0.1382f,        0.652700007f,   0.974300027f,  0.104599997f,
             -1.07860005f,  -2.4368f,       0.379500002f,   -0.517400026f, -1.60000002f}),
        1e-6, 1e-7);
    const TensorData s5 =
        f32({5}, {-0.581200004f, 0.749199986f, 0.594900012f, 0.213400006f, -0.309799999f});
    EXPECT_TENSOR_NEAR(
        run_node(Op::PRelu, {in(x), in(s5)})[0],
        f32({2, 3, 5}, {0.746435165f, 0.559700012f,  -0.0778724104f, -0.110541202f,  0.179776937f,
                        1.16209996f,  1.62059999f,   -0.76777792f,   0.611100018f,   0.249946639f,
                        1.8678f,      1.67939997f,   0.543500006f,   1.01090002f,    0.0606000014f,
                        1.30359995f,  -0.154709786f, -0.383591533f,  -0.189584568f,  0.339138061f,
                        0.103299998f, -0.207078874f, 0.652700007f,   -0.415831268f,  0.0648101568f,
                        0.313441187f, -0.912825286f, 0.379500002f,   -0.0552065857f, 0.247840002f}),
        1e-6, 1e-7);
    EXPECT_EQ(run_node(Op::PRelu, {in(i64({5}, {-3, 4, -5, 6, -7})), konst(i64({1}, {3}))})[0],
              i64({5}, {-9, 4, -15, 6, -21}));
    // The slope broadcasts to X, never X to the slope.
    const std::string msg = error_of([&] {
        run_node(Op::PRelu, {in(f32({5}, {kX.begin(), kX.begin() + 5})), in(x)});
    });
    EXPECT_CONTAINS(msg, "node 'n' (PRelu)");
    EXPECT_CONTAINS(msg, "does not broadcast to X's shape [5]");
}

TEST(ElementwiseEvalTest, LogicOpsAndOrderedComparisons) {
    const TensorData a = b8({3, 5}, {1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1});
    const TensorData b = b8({5}, {0, 1, 1, 0, 0});
    EXPECT_EQ(run_node(Op::And, {in(a), in(b)})[0],
              b8({3, 5}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0}));
    EXPECT_EQ(run_node(Op::Or, {in(a), in(b)})[0],
              b8({3, 5}, {1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1}));
    EXPECT_EQ(run_node(Op::Xor, {in(a), in(b)})[0],
              b8({3, 5}, {1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 1}));
    const TensorData ci = i64({3, 5}, {-2, 3, 2, 3, -2, 1, 1, 2, -3, 0, 1, 2, 1, 0, 0});
    const TensorData di = i64({5}, {-1, -2, -2, -2, -2});
    EXPECT_EQ(run_node(Op::LessOrEqual, {in(ci), in(di)})[0],
              b8({3, 5}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(run_node(Op::GreaterOrEqual, {in(ci), in(di)})[0],
              b8({3, 5}, {0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1}));
    // Row 1 of cf equals df except in column 0: equality counts for both.
    const TensorData cf =
        f32({3, 5}, {0.0516000018f, -0.1382f, 0.326400012f, -0.974300027f, -0.104599997f,
                     -0.269600004f, -0.609200001f, 0.189700007f, -0.1294f, -0.400000006f,
                     -0.581200004f, 0.749199986f, 0.594900012f, 0.213400006f, -0.309799999f});
    const TensorData df = f32({5}, {0.5f, -0.609200001f, 0.189700007f, -0.1294f, -0.400000006f});
    EXPECT_EQ(run_node(Op::LessOrEqual, {in(cf), in(df)})[0],
              b8({3, 5}, {1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}));
    EXPECT_EQ(run_node(Op::GreaterOrEqual, {in(cf), in(df)})[0],
              b8({3, 5}, {0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1}));
}

TEST(ElementwiseEvalTest, SumAndMeanBroadcastOneOrMoreOperands) {
    const TensorData a = f32({3, 1}, {-1.28429997f, 0.559700012f, -0.130899996f});
    const TensorData b =
        f32({5}, {-0.518000007f, -0.580299973f, 1.16209996f, 1.62059999f, -1.29059994f});
    const TensorData c =
        f32({1, 5}, {0.611100018f, -0.806800008f, 1.8678f, 1.67939997f, 0.543500006f});
    EXPECT_TENSOR_NEAR(
        run_node(Op::Sum, {in(a), in(b), in(c)})[0],
        f32({3, 5}, {-1.19120002f, -2.67140007f, 1.74559999f, 2.01569986f, -2.03139997f,
                     0.652800024f, -0.827399969f, 3.58960009f, 3.85969996f, -0.187399924f,
                     -0.037800014f, -1.51800001f, 2.89899993f, 3.16909981f, -0.877999961f}),
        1e-6, 1e-7);
    EXPECT_TENSOR_NEAR(
        run_node(Op::Sum, {in(a), in(b)})[0],
        f32({3, 5}, {-1.80229998f, -1.86459994f, -0.122200012f, 0.336300015f, -2.57489991f,
                     0.0417000055f, -0.0205999613f, 1.72179997f, 2.1803f, -0.73089993f,
                     -0.648900032f, -0.711199999f, 1.03119993f, 1.48969996f, -1.42149997f}),
        1e-6, 1e-7);
    EXPECT_TENSOR_NEAR(
        run_node(Op::Mean, {in(a), in(b), in(c)})[0],
        f32({3, 5}, {-0.397066683f, -0.89046669f, 0.581866682f, 0.671899974f, -0.677133322f,
                     0.217600003f, -0.27579999f, 1.19653332f, 1.28656662f, -0.06246664f,
                     -0.0126000047f, -0.505999982f, 0.96633333f, 1.05636656f, -0.292666644f}),
        1e-6, 1e-7);
    EXPECT_TENSOR_NEAR(
        run_node(Op::Mean, {in(a), in(b)})[0],
        f32({3, 5}, {-0.901149988f, -0.932299972f, -0.0611000061f, 0.168150008f, -1.28744996f,
                     0.0208500028f, -0.0102999806f, 0.860899985f, 1.09015f, -0.365449965f,
                     -0.324450016f, -0.355599999f, 0.515599966f, 0.74484998f, -0.710749984f}),
        1e-6, 1e-7);
    EXPECT_EQ(run_node(Op::Sum, {in(b)})[0], b);
    EXPECT_EQ(run_node(Op::Mean, {in(c)})[0], c);
}

TEST(ElementwiseEvalTest, RefusalsNameTheNode) {
    const TensorData x = f32({3, 5}, kX);
    const TensorData xi = i64({3}, {-4, 2, 7});
    const TensorData m = b8({3}, {1, 0, 1});
    struct Refusal {
        Op op;
        std::vector<testing::Operand> operands;
        Attributes attrs;
        const char* part;
    };
    const std::vector<Refusal> cases = {
        {Op::Floor, {in(xi)}, {}, "input 'x0' is i64, expected f32 or f64"},
        {Op::Round, {in(xi)}, {}, "expected f32 or f64"},
        {Op::Softplus, {in(xi)}, {}, "expected f32 or f64"},
        {Op::Mish, {in(m)}, {}, "expected f32 or f64"},
        {Op::Abs, {in(m)}, {}, "input 'x0' is bool"},
        {Op::Mod, {in(x), in(x)}, attr("fmod", I(2)), "attribute 'fmod' must be 0 or 1, got 2"},
        {Op::Mod, {in(x), in(xi)}, {}, "input dtypes differ"},
        {Op::Gelu, {in(x)}, attr("approximate", S("fast")), "must be \"none\" or \"tanh\""},
        {Op::And, {in(x), in(x)}, {}, "expected bool"},
        {Op::Xor, {in(m), in(xi)}, {}, "expected bool"},
        {Op::LessOrEqual, {in(m), in(m)}, {}, "expected f32 or f64 or i32 or i64"},
        {Op::Sum, {in(xi), in(xi)}, {}, "expected f32 or f64"},
        {Op::Mean, {in(x), in(f32({4}, {1, 2, 3, 4}))}, {}, "do not broadcast"},
        {Op::PRelu, {in(x), in(xi)}, {}, "input dtypes differ"},
    };
    for (const Refusal& r : cases) {
        const std::string msg = error_of([&] { run_node(r.op, r.operands, r.attrs); });
        SCOPED_TRACE(op_name(r.op));
        EXPECT_CONTAINS(msg, "node 'n' (" + std::string(op_name(r.op)) + ")");
        EXPECT_CONTAINS(msg, r.part);
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}

// ---- import ----------------------------------------------------------------------------------

Graph import(const ModelBuilder& b) { return import_onnx_bytes(b.bytes(), "test.onnx"); }
std::string import_error(const ModelBuilder& b) {
    return error_of([&] { import(b); });
}

// The node that produces graph output i.
const Node& producer(const Graph& g, size_t i = 0) {
    for (NodeId id : g.node_ids())
        for (ValueId v : g.node(id).outputs)
            if (v == g.outputs.at(i))
                return g.node(id);
    throw UserError("no producer");
}

TEST(ElementwiseImportTest, DefaultsBecomeExplicitAttributes) {
    struct Form {
        const char* op;
        int opset;
        const char* key;
        Attribute want;
    };
    const std::vector<Form> forms = {
        {"Elu", 7, "alpha", Attribute::of_float(1.0f)},
        {"Selu", 7, "alpha", Attribute::of_float(1.67326319217681884765625f)},
        {"Selu", 7, "gamma", Attribute::of_float(1.05070102214813232421875f)},
        {"Celu", 12, "alpha", Attribute::of_float(1.0f)},
        {"ThresholdedRelu", 10, "alpha", Attribute::of_float(1.0f)},
        {"Mod", 10, "fmod", Attribute::of_int(0)},
    };
    for (const Form& f : forms) {
        ModelBuilder m(f.opset);
        m.input("x", DType::F32, {3, 5});
        if (std::string(f.op) == "Mod")
            m.node(f.op, {"x", "x"}, {"y"}, "n");
        else
            m.node(f.op, {"x"}, {"y"}, "n");
        m.output("y");
        const Graph g = import(m);
        const Node& n = producer(g);
        SCOPED_TRACE(f.op);
        ASSERT_TRUE(n.attrs.count(f.key));
        EXPECT_EQ(n.attrs.at(f.key), f.want);
    }
}

TEST(ElementwiseImportTest, OpsExistFromTheirFirstOpset) {
    auto model = [](const char* op, int opset, int inputs) {
        ModelBuilder m(opset);
        m.input("a", DType::F32, {3, 5});
        m.node(op, inputs == 1 ? std::vector<std::string>{"a"} : std::vector<std::string>{"a", "a"},
               {"y"}, "n");
        m.output("y");
        return m;
    };
    EXPECT_EQ(import_error(model("Sign", 8, 1)),
              "node 'n' (Sign, opset 8): op Sign does not exist before opset 9");
    EXPECT_EQ(import_error(model("Round", 10, 1)),
              "node 'n' (Round, opset 10): op Round does not exist before opset 11");
    EXPECT_EQ(import_error(model("Mod", 9, 2)),
              "node 'n' (Mod, opset 9): op Mod does not exist before opset 10");
    EXPECT_EQ(import_error(model("Celu", 11, 1)),
              "node 'n' (Celu, opset 11): op Celu does not exist before opset 12");
    EXPECT_EQ(import_error(model("LessOrEqual", 11, 2)),
              "node 'n' (LessOrEqual, opset 11): op LessOrEqual does not exist before opset 12");
    EXPECT_EQ(import_error(model("ThresholdedRelu", 9, 1)),
              "node 'n' (ThresholdedRelu, opset 9): op ThresholdedRelu does not exist before "
              "opset 10");
    for (const char* op : {"Abs", "Floor", "Ceil", "Softplus", "Softsign", "Elu", "Selu"})
        EXPECT_NO_THROW(import(model(op, 7, 1))) << op;
    for (const char* op : {"Sign", "Round"})
        EXPECT_NO_THROW(import(model(op, 13, 1))) << op;
    for (const char* op : {"Sum", "Mean"})
        EXPECT_NO_THROW(import(model(op, 8, 2))) << op;
}

TEST(ElementwiseImportTest, ImportRefusalsNameNodeAndOpset) {
    ModelBuilder mod(13);
    mod.input("a", DType::I64, {3, 5});
    mod.node("Mod", {"a", "a"}, {"y"}, "m").i("fmod", 3);
    mod.output("y", DType::I64);
    EXPECT_EQ(import_error(mod), "node 'm' (Mod): attribute 'fmod' must be 0 or 1, got 3");
    ModelBuilder prelu(9);
    prelu.input("x", DType::F32, {3, 5});
    prelu.input("s", DType::F32, {2, 3, 5});
    prelu.node("PRelu", {"x", "s"}, {"y"}, "p");
    prelu.output("y");
    EXPECT_CONTAINS(import_error(prelu), "node 'p' (PRelu): slope of shape [2,3,5] does not "
                                         "broadcast to X's shape [3,5]");
    ModelBuilder elu(13);
    elu.input("x", DType::F32, {3, 5});
    elu.node("Elu", {"x"}, {"y"}, "e").f("alpha", 0.5f).ints("consumed_inputs", {0});
    elu.output("y");
    EXPECT_EQ(import_error(elu),
              "node 'e' (Elu, opset 13): unsupported attribute 'consumed_inputs'");
    ModelBuilder logic(13);
    logic.input("x", DType::F32, {3, 5});
    logic.node("Or", {"x", "x"}, {"y"}, "o");
    logic.output("y", DType::Bool);
    EXPECT_CONTAINS(import_error(logic), "node 'o' (Or): input 'x' is f32, expected bool");
}

TEST(ElementwiseImportTest, ImportedOpsMatchKnownValues) {
    // Opset 13: Mod of both kinds, PRelu with a broadcast slope, And, GreaterOrEqual, Sum, Mean.
    ModelBuilder m(13);
    m.input("a", DType::I64, {3, 5});
    m.input("b", DType::I64, {5});
    m.input("x", DType::F32, {3, 5});
    m.initializer("s", f32({3, 1}, {0.25f, -0.5f, 2.0f}));
    m.node("Mod", {"a", "b"}, {"floor_mod"});
    m.node("Mod", {"a", "b"}, {"c_fmod"}).i("fmod", 1);
    m.node("PRelu", {"x", "s"}, {"prelu"});
    m.node("GreaterOrEqual", {"a", "b"}, {"ge"});
    m.node("Sum", {"x", "s"}, {"sum"});
    m.node("Mean", {"x", "s", "x"}, {"mean"});
    for (const char* o : {"floor_mod", "c_fmod"})
        m.output(o, DType::I64);
    m.output("prelu");
    m.output("ge", DType::Bool);
    m.output("sum");
    m.output("mean");
    const Graph g = import(m);
    const TensorData x = f32({3, 5}, kX);
    const std::vector<TensorData> out = evaluate(g, {i64({3, 5}, kModA), i64({5}, kModB), x});
    EXPECT_EQ(out[0], i64({3, 5}, {-1, 2, 0, 0, 0, -1, 3, 0, 0, 0, -1, 2, 0, -1, 0}));
    EXPECT_EQ(out[1], i64({3, 5}, {4, -3, 0, 0, 0, -1, -2, 0, 0, 0, 4, 2, 0, 5, 0}));
    std::vector<float> prelu, sum, mean;
    const float s[3] = {0.25f, -0.5f, 2.0f};
    for (int64_t i = 0; i < 15; ++i) {
        const float v = kX[i], sl = s[i / 5];
        prelu.push_back(v < 0 ? sl * v : v);
        sum.push_back(v + sl);
        mean.push_back((v + sl + v) / 3);
    }
    EXPECT_EQ(out[2], f32({3, 5}, prelu));
    std::vector<uint8_t> ge;
    for (int64_t i = 0; i < 15; ++i)
        ge.push_back(kModA[i] >= kModB[i % 5]);
    EXPECT_EQ(out[3], b8({3, 5}, ge));
    EXPECT_EQ(out[4], f32({3, 5}, sum));
    EXPECT_TENSOR_NEAR(out[5], f32({3, 5}, mean), 1e-6, 1e-7);
}

// ---- kernel cases ----------------------------------------------------------------------------

std::vector<OpCase> elementwise_cases() {
    std::vector<OpCase> cs;
    cs.push_back(unary_case("ElementwiseAbs", Op::Abs, -3, 3));
    cs.push_back(unary_case("ElementwiseSign", Op::Sign, -3, 3));
    cs.push_back(unary_case("ElementwiseFloor", Op::Floor, -5, 5));
    cs.push_back(unary_case("ElementwiseCeil", Op::Ceil, -5, 5));
    cs.push_back(unary_case("ElementwiseSoftplus", Op::Softplus, -6, 6));
    cs.push_back(unary_case("ElementwiseSoftsign", Op::Softsign, -6, 6));
    cs.push_back(unary_case("ElementwiseElu", Op::Elu, -4, 4, attr("alpha", F(0.75f))));
    cs.push_back(unary_case(
        "ElementwiseSelu", Op::Selu, -4, 4,
        {{"alpha", F(1.67326319217681884765625f)}, {"gamma", F(1.05070102214813232421875f)}}));
    cs.push_back(unary_case("ElementwiseCelu", Op::Celu, -4, 4, attr("alpha", F(1.5f))));
    cs.push_back(unary_case("ElementwiseMish", Op::Mish, -5, 5));
    cs.push_back(unary_case("ElementwiseThresholdedRelu", Op::ThresholdedRelu, -2, 2,
                            attr("alpha", F(0.5f))));
    cs.push_back(
        unary_case("ElementwiseGeluTanh", Op::Gelu, -4, 4, attr("approximate", S("tanh"))));
    cs.push_back({"ElementwiseRound", {Op::Round}, [](Case& c) -> std::vector<ValueId> {
                      // Quarter steps hit the halves (ties to even) and the values between.
                      TensorData x = ints({1, 7, 13}, 21, -24, 24).cast(DType::F32);
                      float* p = x.data<float>();
                      for (int64_t i = 0; i < x.numel(); ++i)
                          p[i] = p[i] * 0.25f + 0.125f * static_cast<float>(i % 2);
                      return {c.op(Op::Round, {c.input(x)})};
                  }});
    cs.push_back(
        {"ElementwiseIntegerAbsSign", {Op::Abs, Op::Sign}, [](Case& c) -> std::vector<ValueId> {
             const ValueId a = c.input(ints({7, 13}, 22, -50, 50));
             const ValueId b = c.input(ints({1, 13}, 23, -50, 50).cast(DType::I32));
             return {c.op(Op::Abs, {a}), c.op(Op::Sign, {a}), c.op(Op::Abs, {b}),
                     c.op(Op::Sign, {b})};
         }});
    cs.push_back({"ElementwiseModFloat", {Op::Mod}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId a = c.input(floats({1, 7, 13}, 24, -10, 10));
                      const ValueId b = c.input(nonzero_floats({7, 1}, 25));
                      TensorData d = floats({13}, 26, -8, 8).cast(DType::F64);
                      const ValueId ad = c.input(d);
                      const ValueId bd = c.input(nonzero_floats({1}, 27).cast(DType::F64));
                      return {c.op(Op::Mod, {a, b}, attr("fmod", I(0))),
                              c.op(Op::Mod, {a, b}, attr("fmod", I(1))),
                              c.op(Op::Mod, {ad, bd}, attr("fmod", I(0))),
                              c.op(Op::Mod, {ad, bd}, attr("fmod", I(1)))};
                  }});
    cs.push_back({"ElementwiseModInteger", {Op::Mod}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId a = c.input(ints({7, 13}, 28, -100, 100));
                      TensorData bv = ints({13}, 29, -9, 9);
                      int64_t* p = bv.data<int64_t>();
                      for (int64_t i = 0; i < bv.numel(); ++i)
                          p[i] = p[i] == 0 ? 7 : p[i]; // no divisor 0 (the evaluator refuses it)
                      p[3] = -1;
                      const ValueId b = c.input(bv);
                      const ValueId a32 = c.input(ints({7, 13}, 30, -100, 100).cast(DType::I32));
                      const ValueId b32 = c.input(bv.cast(DType::I32));
                      return {c.op(Op::Mod, {a, b}, attr("fmod", I(0))),
                              c.op(Op::Mod, {a, b}, attr("fmod", I(1))),
                              c.op(Op::Mod, {a32, b32}, attr("fmod", I(0))),
                              c.op(Op::Mod, {a32, b32}, attr("fmod", I(1)))};
                  }});
    cs.push_back({"ElementwisePRelu", {Op::PRelu}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({1, 7, 13}, 31));
                      return {c.op(Op::PRelu, {x, c.constant(floats({7, 1}, 32))}),
                              c.op(Op::PRelu, {x, c.input(floats({13}, 33))}),
                              c.op(Op::PRelu, {c.input(ints({7, 13}, 34, -9, 9)),
                                               c.input(ints({1}, 35, 2, 5))})};
                  }});
    cs.push_back(
        {"ElementwiseLogic", {Op::And, Op::Or, Op::Xor}, [](Case& c) -> std::vector<ValueId> {
             const ValueId a = c.input(bools({7, 13}, 36));
             const ValueId b = c.input(bools({13}, 37));
             return {c.op(Op::And, {a, b}), c.op(Op::Or, {a, b}), c.op(Op::Xor, {b, a})};
         }});
    cs.push_back({"ElementwiseOrderedCompare",
                  {Op::LessOrEqual, Op::GreaterOrEqual},
                  [](Case& c) -> std::vector<ValueId> {
                      // Small integers: many equal pairs.
                      const ValueId a = c.input(ints({7, 13}, 38, -3, 3));
                      const ValueId b = c.input(ints({13}, 39, -3, 3));
                      const ValueId x = c.input(floats({7, 1}, 40));
                      const ValueId y = c.input(floats({13}, 41));
                      return {c.op(Op::LessOrEqual, {a, b}), c.op(Op::GreaterOrEqual, {a, b}),
                              c.op(Op::LessOrEqual, {x, y}), c.op(Op::GreaterOrEqual, {y, x})};
                  }});
    cs.push_back({"ElementwiseSumMean", {Op::Sum, Op::Mean}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId a = c.input(floats({7, 1}, 42));
                      const ValueId b = c.input(floats({13}, 43));
                      const ValueId d = c.input(floats({1, 7, 13}, 44));
                      return {c.op(Op::Sum, {a, b, d}), c.op(Op::Mean, {a, b, d}),
                              c.op(Op::Sum, {b}), c.op(Op::Mean, {d, d})};
                  }});
    return cs;
}
TESSERA_REGISTER_OP_CASES(elementwise_cases);

} // namespace
} // namespace tessera::graph
