// The index ops of src/graph/ops/indexing.cpp, Tile, DepthToSpace and SpaceToDepth of
// data_movement.cpp and the opset 18-21 forms of the data-movement ops: the reference
// evaluator against values computed independently (onnx.reference 1.23 on the same inputs,
// pasted as literals), their import canonical forms and refusals, and the kernel-vs-evaluator
// cases of every such op with a kernel (registered with op_case.h).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::konst;
using testing::ModelBuilder;
using testing::Operand;

TensorData f32t(Shape s, std::vector<float> v) {
    return TensorData::from_vector<float>(std::move(s), v);
}
TensorData i64t(Shape s, std::vector<int64_t> v) {
    return TensorData::from_vector<int64_t>(std::move(s), v);
}
TensorData iota_f32(const Shape& s) {
    std::vector<float> v(static_cast<size_t>(shape_numel(s)));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(i);
    return f32t(s, v);
}

// ---- known values: onnx.reference (ReferenceEvaluator, onnx 1.23) on these inputs ------------
const TensorData kTileX =
    f32t({2, 3}, {0.5f, 1.59000003f, 1.10000002f, -1.10000002f, -0.800000012f, 1.49000001f});
const TensorData kTileX22 = f32t(
    {4, 6}, {0.5f,         1.59000003f,   1.10000002f, 0.5f,         1.59000003f,   1.10000002f,
             -1.10000002f, -0.800000012f, 1.49000001f, -1.10000002f, -0.800000012f, 1.49000001f,
             0.5f,         1.59000003f,   1.10000002f, 0.5f,         1.59000003f,   1.10000002f,
             -1.10000002f, -0.800000012f, 1.49000001f, -1.10000002f, -0.800000012f, 1.49000001f});
const TensorData kTileXi = i64t({3}, {8, -9, 0});
const TensorData kTileXi3 = i64t({9}, {8, -9, 0, 8, -9, 0, 8, -9, 0});
const TensorData kD2sDcr =
    f32t({1, 2, 4, 6},
         {0.0f, 12.0f, 1.0f,  13.0f, 2.0f,  14.0f, 24.0f, 36.0f, 25.0f, 37.0f, 26.0f, 38.0f,
          3.0f, 15.0f, 4.0f,  16.0f, 5.0f,  17.0f, 27.0f, 39.0f, 28.0f, 40.0f, 29.0f, 41.0f,
          6.0f, 18.0f, 7.0f,  19.0f, 8.0f,  20.0f, 30.0f, 42.0f, 31.0f, 43.0f, 32.0f, 44.0f,
          9.0f, 21.0f, 10.0f, 22.0f, 11.0f, 23.0f, 33.0f, 45.0f, 34.0f, 46.0f, 35.0f, 47.0f});
const TensorData kD2sCrd =
    f32t({1, 2, 4, 6},
         {0.0f,  6.0f,  1.0f,  7.0f,  2.0f,  8.0f,  12.0f, 18.0f, 13.0f, 19.0f, 14.0f, 20.0f,
          3.0f,  9.0f,  4.0f,  10.0f, 5.0f,  11.0f, 15.0f, 21.0f, 16.0f, 22.0f, 17.0f, 23.0f,
          24.0f, 30.0f, 25.0f, 31.0f, 26.0f, 32.0f, 36.0f, 42.0f, 37.0f, 43.0f, 38.0f, 44.0f,
          27.0f, 33.0f, 28.0f, 34.0f, 29.0f, 35.0f, 39.0f, 45.0f, 40.0f, 46.0f, 41.0f, 47.0f});
const TensorData kS2d =
    f32t({1, 8, 2, 3},
         {0.0f, 2.0f, 4.0f,  12.0f, 14.0f, 16.0f, 24.0f, 26.0f, 28.0f, 36.0f, 38.0f, 40.0f,
          1.0f, 3.0f, 5.0f,  13.0f, 15.0f, 17.0f, 25.0f, 27.0f, 29.0f, 37.0f, 39.0f, 41.0f,
          6.0f, 8.0f, 10.0f, 18.0f, 20.0f, 22.0f, 30.0f, 32.0f, 34.0f, 42.0f, 44.0f, 46.0f,
          7.0f, 9.0f, 11.0f, 19.0f, 21.0f, 23.0f, 31.0f, 33.0f, 35.0f, 43.0f, 45.0f, 47.0f});
const TensorData kS2dCrd =
    f32t({1, 8, 2, 3},
         {0.0f,  2.0f,  4.0f,  12.0f, 14.0f, 16.0f, 1.0f,  3.0f,  5.0f,  13.0f, 15.0f, 17.0f,
          6.0f,  8.0f,  10.0f, 18.0f, 20.0f, 22.0f, 7.0f,  9.0f,  11.0f, 19.0f, 21.0f, 23.0f,
          24.0f, 26.0f, 28.0f, 36.0f, 38.0f, 40.0f, 25.0f, 27.0f, 29.0f, 37.0f, 39.0f, 41.0f,
          30.0f, 32.0f, 34.0f, 42.0f, 44.0f, 46.0f, 31.0f, 33.0f, 35.0f, 43.0f, 45.0f, 47.0f});
const TensorData kGeData = f32t({3, 4}, {1.19000006f, -0.129999995f, -0.790000021f, -0.889999986f,
                                         -0.980000019f, -0.219999999f, 0.0199999996f, 0.209999993f,
                                         1.98000002f, 1.16999996f, 0.49000001f, 1.96000004f});
const TensorData kGeAxis0 = f32t({2, 4}, {1.98000002f, 1.16999996f, -0.790000021f, 0.209999993f,
                                          1.19000006f, -0.219999999f, -0.790000021f, 1.96000004f});
const TensorData kGeAxis1 = f32t(
    {3, 2}, {-0.889999986f, 1.19000006f, 0.209999993f, -0.219999999f, 0.49000001f, 0.49000001f});
const TensorData kGndData =
    f32t({2, 3, 4},
         {-1.13999999f,  -1.36000001f, 0.449999988f,  -1.82000005f,  -1.86000001f,    0.0599999987f,
          -0.140000001f, 1.66999996f,  0.519999981f,  0.0599999987f, -0.00999999978f, -1.00999999f,
          -1.95000005f,  -1.23000002f, 0.769999981f,  -1.20000005f,  -0.519999981f,   -1.99000001f,
          1.32000005f,   -1.38f,       -0.930000007f, 1.51999998f,   0.0399999991f,   1.38999999f});
const TensorData kGndB0 =
    f32t({2, 4}, {-0.930000007f, 1.51999998f, 0.0399999991f, 1.38999999f, 0.519999981f,
                  0.0599999987f, -0.00999999978f, -1.00999999f});
const TensorData kGndB1Pairs =
    f32t({2, 2}, {-1.00999999f, -1.82000005f, -1.99000001f, -0.930000007f});
const TensorData kGndB1Rows =
    f32t({2, 4}, {0.519999981f, 0.0599999987f, -0.00999999978f, -1.00999999f, -1.95000005f,
                  -1.23000002f, 0.769999981f, -1.20000005f});
const TensorData kCumX =
    f32t({2, 5}, {0.560000002f, 0.970000029f, -1.63f, 0.159999996f, 0.0299999993f, 1.49000001f,
                  -0.550000012f, 0.389999986f, -1.75999999f, -0.449999988f});
const TensorData kCum =
    f32t({2, 5}, {0.560000002f, 1.52999997f, -0.100000024f, 0.0599999726f, 0.0899999738f,
                  1.49000001f, 0.939999998f, 1.32999992f, -0.430000067f, -0.880000055f});
const TensorData kCumRev =
    f32t({2, 5}, {0.0899999738f, -0.470000029f, -1.44000006f, 0.189999998f, 0.0299999993f,
                  -0.880000114f, -2.37000012f, -1.82000005f, -2.21000004f, -0.449999988f});
const TensorData kCumExcl =
    f32t({2, 5}, {0.0f, 0.560000002f, 1.52999997f, -0.100000024f, 0.0599999726f, 0.0f, 1.49000001f,
                  0.939999998f, 1.32999992f, -0.430000067f});
const TensorData kCumExclRev =
    f32t({2, 5}, {-0.470000029f, -1.44000006f, 0.189999998f, 0.0299999993f, 0.0f, -2.37000012f,
                  -1.82000005f, -2.21000004f, -0.449999988f, 0.0f});
const TensorData kCumAxisM2 =
    f32t({2, 5}, {0.560000002f, 0.970000029f, -1.63f, 0.159999996f, 0.0299999993f, 2.04999995f,
                  0.420000017f, -1.24000001f, -1.60000002f, -0.419999987f});
const TensorData kCumInts = i64t({3, 2}, {6, 2, -3, -5, -7, -2});
const TensorData kCumIntsRev = i64t({3, 2}, {-4, -5, -10, -7, -7, -2});
const TensorData kArgX =
    f32t({3, 4, 5}, {3.0f, 1.0f, 1.0f, 2.0f, 3.0f, 1.0f, 2.0f, 1.0f, 2.0f, 1.0f, 2.0f, 2.0f,
                     2.0f, 3.0f, 0.0f, 2.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 3.0f, 0.0f, 1.0f,
                     3.0f, 3.0f, 0.0f, 0.0f, 2.0f, 0.0f, 1.0f, 1.0f, 3.0f, 0.0f, 2.0f, 2.0f,
                     0.0f, 3.0f, 3.0f, 1.0f, 3.0f, 2.0f, 3.0f, 3.0f, 2.0f, 1.0f, 0.0f, 2.0f,
                     0.0f, 3.0f, 3.0f, 0.0f, 2.0f, 0.0f, 0.0f, 1.0f, 3.0f, 3.0f, 2.0f, 2.0f});
const TensorData kArgMaxKd = i64t({3, 1, 5}, {0, 1, 2, 2, 0, 1, 0, 2, 3, 0, 0, 3, 0, 0, 1});
const TensorData kArgMaxKdLast = i64t({3, 1, 5}, {0, 2, 2, 2, 0, 1, 0, 3, 3, 0, 2, 3, 3, 0, 1});
const TensorData kArgMax = i64t({3, 5}, {0, 1, 2, 2, 0, 1, 0, 2, 3, 0, 0, 3, 0, 0, 1});
const TensorData kArgMaxLast = i64t({3, 5}, {0, 2, 2, 2, 0, 1, 0, 3, 3, 0, 2, 3, 3, 0, 1});
const TensorData kArgMinKd = i64t({3, 1, 5}, {1, 0, 0, 3, 2, 0, 1, 0, 2, 1, 1, 1, 1, 1, 2});
const TensorData kArgMinKdLast = i64t({3, 1, 5}, {1, 3, 3, 3, 3, 2, 3, 1, 2, 1, 3, 2, 2, 2, 2});
const TensorData kArgMin = i64t({3, 5}, {1, 0, 0, 3, 2, 0, 1, 0, 2, 1, 1, 1, 1, 1, 2});
const TensorData kArgMinLast = i64t({3, 5}, {1, 3, 3, 3, 3, 2, 3, 1, 2, 1, 3, 2, 2, 2, 2});
const TensorData kArgMaxLastAxis = i64t({3, 4, 1}, {0, 1, 3, 0, 1, 0, 2, 2, 0, 4, 0, 1});
const TensorData kArgMinAxis0 =
    i64t({1, 4, 5}, {1, 0, 1, 1, 2, 0, 1, 1, 2, 1, 1, 2, 0, 1, 0, 2, 1, 0, 0, 0});
const TensorData kSndData =
    f32t({4, 3}, {-0.49000001f, -0.360000014f, -1.03999996f, -1.85000002f, 1.5f, -0.129999995f,
                  0.189999998f, -0.709999979f, 1.00999999f, -1.89999998f, -0.50999999f, -1.88f});
const TensorData kSndUpd =
    f32t({3, 3}, {-1.50999999f, 1.87f, 0.629999995f, -0.289999992f, 0.0900000036f, 1.49000001f,
                  -0.620000005f, 0.360000014f, 0.730000019f});
const TensorData kSndNone = f32t({4, 3}, {-0.620000005f, 0.360000014f, 0.730000019f, -1.50999999f,
                                          1.87f, 0.629999995f, 0.189999998f, -0.709999979f,
                                          1.00999999f, -0.289999992f, 0.0900000036f, 1.49000001f});
const TensorData kSndAdd = f32t({4, 3}, {-0.49000001f, -0.360000014f, -1.03999996f, -3.98000002f,
                                         3.73000002f, 1.23000002f, 0.189999998f, -0.709999979f,
                                         1.00999999f, -2.19000006f, -0.419999987f, -0.389999986f});
const TensorData kSndMul = f32t({4, 3}, {-0.49000001f, -0.360000014f, -1.03999996f, -1.73196995f,
                                         1.00980008f, -0.0597869977f, 0.189999998f, -0.709999979f,
                                         1.00999999f, 0.550999999f, -0.0459000021f, -2.80119991f});
const TensorData kSndMax = f32t({4, 3}, {-0.49000001f, -0.360000014f, -1.03999996f, -0.620000005f,
                                         1.87f, 0.730000019f, 0.189999998f, -0.709999979f,
                                         1.00999999f, -0.289999992f, 0.0900000036f, 1.49000001f});
const TensorData kSndMin = f32t({4, 3}, {-0.49000001f, -0.360000014f, -1.03999996f, -1.85000002f,
                                         0.360000014f, -0.129999995f, 0.189999998f, -0.709999979f,
                                         1.00999999f, -1.89999998f, -0.50999999f, -1.88f});
const TensorData kSndElems =
    f32t({4, 3}, {-0.49000001f, -0.360000014f, 5.0f, -1.85000002f, 1.5f, -0.129999995f,
                  0.189999998f, -0.709999979f, 1.00999999f, -1.89999998f, -6.0f, -1.88f});
const TensorData kTopX = f32t({3, 6}, {2.0f, 4.0f, 1.0f, 4.0f, 2.0f, 2.0f, 3.0f, 3.0f, 4.0f, 4.0f,
                                       0.0f, 2.0f, 4.0f, 1.0f, 0.0f, 2.0f, 3.0f, 3.0f});
const TensorData kTopLargest = f32t({3, 3}, {4.0f, 4.0f, 2.0f, 4.0f, 4.0f, 3.0f, 4.0f, 3.0f, 3.0f});
const TensorData kTopLargestIdx = i64t({3, 3}, {1, 3, 0, 2, 3, 0, 0, 4, 5});
const TensorData kTopSmallest =
    f32t({3, 3}, {1.0f, 2.0f, 2.0f, 0.0f, 2.0f, 3.0f, 0.0f, 1.0f, 2.0f});
const TensorData kTopSmallestIdx = i64t({3, 3}, {2, 0, 4, 4, 5, 0, 2, 1, 3});
const TensorData kTopAxis0 =
    f32t({2, 6}, {4.0f, 4.0f, 4.0f, 4.0f, 3.0f, 3.0f, 3.0f, 3.0f, 1.0f, 4.0f, 2.0f, 2.0f});
const TensorData kTopAxis0Idx = i64t({2, 6}, {2, 0, 1, 0, 2, 2, 1, 1, 0, 1, 0, 0});
const TensorData kEinA =
    f32t({2, 3, 4},
         {-1.45000005f,  -0.319999993f, 1.25999999f,   -1.94000006f,  0.50999999f,   1.16999996f,
          0.0500000007f, 0.899999976f,  -1.09000003f,  -1.21000004f,  -0.550000012f, -1.27999997f,
          -0.620000005f, 1.78999996f,   0.289999992f,  -0.639999986f, -0.910000026f, 1.80999994f,
          -0.219999999f, 1.91999996f,   0.0599999987f, 0.0799999982f, 1.59000003f,   0.970000029f});
const TensorData kEinB =
    f32t({2, 4, 5},
         {0.319999993f,   -0.289999992f, 1.50999999f,  -0.349999994f, 1.69000006f,   -1.73000002f,
          -0.280000001f,  0.0799999982f, 1.79999995f,  -1.0f,         1.22000003f,   0.709999979f,
          0.870000005f,   0.519999981f,  1.88999999f,  -0.670000017f, -0.409999996f, -1.19000006f,
          -1.79999995f,   -1.14999998f,  1.65999997f,  1.36000001f,   -1.54999995f,  0.419999987f,
          -0.0799999982f, 0.379999995f,  0.639999986f, -0.769999981f, 1.85000002f,   -0.140000001f,
          0.50999999f,    0.540000021f,  -1.25999999f, -1.75f,        -0.349999994f, 1.05999994f,
          1.25999999f,    0.920000017f,  -1.54999995f, 1.64999998f});
const TensorData kEinBmm =
    f32t({2, 3, 5},
         {2.92659998f,   2.20009995f,   1.18970013f,  4.07870007f,   2.48189974f,   -2.40289998f,
          -0.808999956f, -0.163800046f, 0.333499998f, -1.24859989f,  1.93110001f,   0.789200008f,
          -0.697999954f, 0.221499905f,  -0.19960016f, -0.879499912f, -0.347400039f, -1.3714999f,
          3.53559995f,   -1.3585f,      1.10019982f,  2.22119975f,   2.06040001f,   0.375300169f,
          3.06439996f,   1.9691f,       2.21360016f,  -1.26559997f,  -4.11280012f,  1.028f});
const TensorData kEinU = f32t({3}, {1.21000004f, 1.50999999f, 0.0900000036f});
const TensorData kEinV = f32t({4}, {1.65999997f, -1.80999994f, -1.88f, -1.91999996f});
const TensorData kEinOuter =
    f32t({3, 4},
         {2.0086f, -2.19009995f, -2.27480006f, -2.32319999f, 2.5065999f, -2.73309994f, -2.83879995f,
          -2.89919996f, 0.149399996f, -0.162900001f, -0.169200003f, -0.172800004f});
const TensorData kEinSq =
    f32t({3, 3}, {-0.99000001f, -1.00999999f, -1.25f, 0.270000011f, -1.84000003f, 0.360000014f,
                  -1.34000003f, 0.709999979f, -1.91999996f});
const TensorData kEinDiag = f32t({3}, {-0.99000001f, -1.84000003f, -1.91999996f});
const TensorData kEinM1 =
    f32t({2, 3}, {-0.75999999f, 1.75f, 0.150000006f, 1.25f, 0.629999995f, 0.439999998f});
const TensorData kEinM2 = f32t({3, 4}, {-1.23000002f, 0.300000012f, -1.84000003f, 1.21000004f,
                                        1.84000003f, 1.41999996f, -1.79999995f, -0.649999976f,
                                        -0.730000019f, -1.54999995f, 0.50999999f, 1.19000006f});
const TensorData kEinImplicitMm =
    f32t({2, 4}, {4.04530001f, 2.02449989f, -1.67509997f, -1.8786f, -0.699500024f, 0.587599933f,
                  -3.20959997f, 1.62660003f});
const TensorData kEinImplicitT =
    f32t({3, 2}, {-0.75999999f, 1.25f, 1.75f, 0.629999995f, 0.150000006f, 0.439999998f});
const TensorData kEinFull = f32t({}, {5.81559992f});
const TensorData kEinI = i64t({2, 3}, {3, -2, -2, 2, 4, -1});
const TensorData kEinJ = i64t({3, 2}, {3, -2, -4, 4, 3, 3});
const TensorData kEinIntMm = i64t({2, 2}, {11, -20, -13, 9});
const TensorData kPadX =
    f32t({2, 3}, {-1.21000004f, 0.289999992f, 0.550000012f, 0.439999998f, -1.62f, 0.639999986f});
const TensorData kPadWrap = f32t(
    {3, 9}, {-1.62f,       0.639999986f, 0.439999998f, -1.62f,       0.639999986f, 0.439999998f,
             -1.62f,       0.639999986f, 0.439999998f, 0.289999992f, 0.550000012f, -1.21000004f,
             0.289999992f, 0.550000012f, -1.21000004f, 0.289999992f, 0.550000012f, -1.21000004f,
             -1.62f,       0.639999986f, 0.439999998f, -1.62f,       0.639999986f, 0.439999998f,
             -1.62f,       0.639999986f, 0.439999998f});
const TensorData kPadAxes =
    f32t({2, 6}, {0.5f, 0.5f, -1.21000004f, 0.289999992f, 0.550000012f, 0.5f, 0.5f, 0.5f,
                  0.439999998f, -1.62f, 0.639999986f, 0.5f});
const TensorData kSplit0 = f32t({3, 2}, {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f});
const TensorData kSplit1 = f32t({3, 2}, {6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f});
const TensorData kSplit2 = f32t({1, 2}, {12.0f, 13.0f});

// ---- helpers ----------------------------------------------------------------------------------

std::vector<TensorData> run(Op op, const std::vector<Operand>& operands, Attributes a = {},
                            size_t outputs = 1) {
    return testing::run_node(op, operands, std::move(a), outputs);
}
Operand data(TensorData t) { return testing::in(std::move(t)); }

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

// One evaluator error: names the node (run_node calls it 'n') and says `part`.
#define EXPECT_NODE_ERROR(op_name_, call, part)                                                    \
    do {                                                                                           \
        const std::string msg_ = error_of([&] { call; });                                          \
        EXPECT_CONTAINS(msg_, "node 'n' (" op_name_ ")");                                          \
        EXPECT_CONTAINS(msg_, part);                                                               \
    } while (0)

Graph import_model(const ModelBuilder& m) { return import_onnx_bytes(m.bytes(), "test.onnx"); }
std::string import_error(const ModelBuilder& m) {
    return error_of([&] { import_model(m); });
}
// The single node of op `op` in g.
const Node& only_node(const Graph& g, Op op) {
    const Node* found = nullptr;
    for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id)
        if (g.node(id).op == op) {
            EXPECT_EQ(found, nullptr) << "two " << op_name(op) << " nodes";
            found = &g.node(id);
        }
    TESSERA_CHECK(found) << "no " << op_name(op) << " node";
    return *found;
}

// ---- evaluator: known values --------------------------------------------------------------------

TEST(IndexingEvalTest, Tile) {
    EXPECT_EQ(run(Op::Tile, {data(kTileX), konst(i64s({2, 2}))})[0], kTileX22);
    EXPECT_EQ(run(Op::Tile, {data(kTileXi), konst(i64s({3}))})[0], kTileXi3);
    EXPECT_EQ(run(Op::Tile, {data(kTileX), konst(i64s({1, 1}))})[0], kTileX);
    EXPECT_NODE_ERROR("Tile", run(Op::Tile, {data(kTileX), konst(i64s({2}))}),
                      "1 repeats for rank 2");
    EXPECT_NODE_ERROR("Tile", run(Op::Tile, {data(kTileX), konst(i64s({1, -1}))}),
                      "negative repeat -1");
    EXPECT_NODE_ERROR("Tile", run(Op::Tile, {data(kTileX), data(i64s({2, 2}))}),
                      "must be a compile-time constant");
}

TEST(IndexingEvalTest, DepthToSpaceAndSpaceToDepth) {
    const TensorData d = iota_f32({1, 8, 2, 3});
    auto d2s = [&](const char* mode) {
        return run(Op::DepthToSpace, {data(d)}, {{"blocksize", I(2)}, {"mode", S(mode)}})[0];
    };
    EXPECT_EQ(d2s("DCR"), kD2sDcr);
    EXPECT_EQ(d2s("CRD"), kD2sCrd);
    EXPECT_EQ(run(Op::SpaceToDepth, {data(iota_f32({1, 2, 4, 6}))}, {{"blocksize", I(2)}})[0],
              kS2d);
    // SpaceToDepth inverts DepthToSpace in DCR mode, on odd shapes and ints.
    const TensorData x = ints({2, 18, 3, 5}, 5, -50, 50);
    const TensorData up =
        run(Op::DepthToSpace, {data(x)}, {{"blocksize", I(3)}, {"mode", S("DCR")}})[0];
    EXPECT_EQ(up.shape(), (Shape{2, 2, 9, 15}));
    EXPECT_EQ(run(Op::SpaceToDepth, {data(up)}, {{"blocksize", I(3)}})[0], x);
    EXPECT_NODE_ERROR("DepthToSpace",
                      run(Op::DepthToSpace, {data(iota_f32({1, 6, 2, 3}))}, {{"blocksize", I(2)}}),
                      "6 channels do not split into blocks of 2x2");
    EXPECT_NODE_ERROR("DepthToSpace",
                      run(Op::DepthToSpace, {data(d)}, {{"blocksize", I(2)}, {"mode", S("RCD")}}),
                      "mode must be DCR or CRD");
    EXPECT_NODE_ERROR("SpaceToDepth",
                      run(Op::SpaceToDepth, {data(iota_f32({1, 2, 4, 5}))}, {{"blocksize", I(2)}}),
                      "not multiples of blocksize 2");
    EXPECT_NODE_ERROR("SpaceToDepth",
                      run(Op::SpaceToDepth, {data(iota_f32({2, 4, 6}))}, {{"blocksize", I(2)}}),
                      "must have rank 4");
}

TEST(IndexingEvalTest, GatherElements) {
    const TensorData i0 = i64t({2, 4}, {2, -1, 0, 1, 0, 1, -3, 2});
    const TensorData i1 = i64t({3, 2}, {3, 0, -1, 1, 2, 2});
    EXPECT_EQ(run(Op::GatherElements, {data(kGeData), data(i0)}, {{"axis", I(0)}})[0], kGeAxis0);
    EXPECT_EQ(run(Op::GatherElements, {data(kGeData), data(i1)}, {{"axis", I(-1)}})[0], kGeAxis1);
    EXPECT_EQ(
        run(Op::GatherElements, {data(kGeData), data(i1.cast(DType::I32))}, {{"axis", I(1)}})[0],
        kGeAxis1);
    EXPECT_NODE_ERROR(
        "GatherElements",
        run(Op::GatherElements, {data(kGeData), data(i64t({1, 2}, {0, 4}))}, {{"axis", I(1)}}),
        "index 4 is out of range for extent 4");
    EXPECT_NODE_ERROR("GatherElements",
                      run(Op::GatherElements, {data(kGeData), data(i64t({2}, {0, 1}))}),
                      "must have the rank");
    EXPECT_NODE_ERROR("GatherElements",
                      run(Op::GatherElements, {data(kGeData), data(i64t({1, 5}, {0, 0, 0, 0, 0}))},
                          {{"axis", I(0)}}),
                      "exceed data [3,4] in dim 1");
}

TEST(IndexingEvalTest, GatherND) {
    EXPECT_EQ(run(Op::GatherND, {data(kGndData), data(i64t({2, 2}, {1, -1, 0, 2}))})[0], kGndB0);
    EXPECT_EQ(run(Op::GatherND, {data(kGndData), data(i64t({2, 2, 2}, {2, 3, 0, -1, 1, 1, -1, 0}))},
                  {{"batch_dims", I(1)}})[0],
              kGndB1Pairs);
    EXPECT_EQ(
        run(Op::GatherND, {data(kGndData), data(i64t({2, 1}, {2, 0}))}, {{"batch_dims", I(1)}})[0],
        kGndB1Rows);
    // A full index tuple selects scalars; i32 indices.
    const TensorData all = run(Op::GatherND, {data(kGndData), data(i64t({1, 3}, {1, 2, 3}))})[0];
    EXPECT_EQ(all, f32t({1}, {kGndData.data<float>()[23]}));
    EXPECT_EQ(
        run(Op::GatherND, {data(kGndData), data(i64t({2, 2}, {1, -1, 0, 2}).cast(DType::I32))})[0],
        kGndB0);
    EXPECT_NODE_ERROR("GatherND", run(Op::GatherND, {data(kGndData), data(i64t({1, 2}, {2, 0}))}),
                      "index 2 is out of range for extent 2");
    EXPECT_NODE_ERROR(
        "GatherND",
        run(Op::GatherND, {data(kGndData), data(i64t({3, 1}, {0, 0, 0}))}, {{"batch_dims", I(1)}}),
        "batch dims of data [2,3,4] and indices [3,1] differ");
    EXPECT_NODE_ERROR("GatherND",
                      run(Op::GatherND, {data(kGndData), data(i64t({1, 4}, {0, 0, 0, 0}))}),
                      "index tuples of length 4");
}

TEST(IndexingEvalTest, Size) {
    EXPECT_EQ(run(Op::Size, {data(floats({3, 5, 7}, 1))})[0], TensorData::scalar<int64_t>(105));
    EXPECT_EQ(run(Op::Size, {data(TensorData::scalar<int64_t>(4))})[0],
              TensorData::scalar<int64_t>(1));
}

TEST(IndexingEvalTest, CumSum) {
    auto cumsum = [](const TensorData& x, int64_t axis, int64_t exclusive, int64_t reverse) {
        return run(Op::CumSum, {data(x), konst(TensorData::scalar<int64_t>(axis))},
                   {{"exclusive", I(exclusive)}, {"reverse", I(reverse)}})[0];
    };
    EXPECT_TENSOR_NEAR(cumsum(kCumX, 1, 0, 0), kCum, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(cumsum(kCumX, 1, 0, 1), kCumRev, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(cumsum(kCumX, 1, 1, 0), kCumExcl, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(cumsum(kCumX, 1, 1, 1), kCumExclRev, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(cumsum(kCumX, -2, 0, 0), kCumAxisM2, 1e-6, 1e-6);
    EXPECT_EQ(cumsum(kCumInts, 0, 0, 1), kCumIntsRev);
    // A one-element 1-D axis is accepted too (as onnxruntime does).
    EXPECT_EQ(run(Op::CumSum, {data(kCumInts), konst(i64s({-2}))}, {{"reverse", I(1)}})[0],
              kCumIntsRev);
    EXPECT_NODE_ERROR("CumSum", cumsum(kCumX, 2, 0, 0), "axis 2");
    EXPECT_NODE_ERROR("CumSum", run(Op::CumSum, {data(kCumX), konst(i64s({0, 1}))}),
                      "axis must be one integer");
}

TEST(IndexingEvalTest, ArgMaxArgMin) {
    auto arg = [](Op op, const TensorData& x, Attributes a) { return run(op, {data(x)}, a)[0]; };
    auto attrs = [](int64_t axis, int64_t keepdims, int64_t last) {
        return Attributes{
            {"axis", I(axis)}, {"keepdims", I(keepdims)}, {"select_last_index", I(last)}};
    };
    for (DType t : {DType::F32, DType::I64, DType::F64, DType::I32}) {
        const TensorData x = kArgX.cast(t);
        EXPECT_EQ(arg(Op::ArgMax, x, attrs(1, 1, 0)), kArgMaxKd);
        EXPECT_EQ(arg(Op::ArgMax, x, attrs(1, 1, 1)), kArgMaxKdLast);
        EXPECT_EQ(arg(Op::ArgMax, x, attrs(1, 0, 0)), kArgMax);
        EXPECT_EQ(arg(Op::ArgMax, x, attrs(-2, 0, 1)), kArgMaxLast);
        EXPECT_EQ(arg(Op::ArgMin, x, attrs(1, 1, 0)), kArgMinKd);
        EXPECT_EQ(arg(Op::ArgMin, x, attrs(1, 1, 1)), kArgMinKdLast);
        EXPECT_EQ(arg(Op::ArgMin, x, attrs(1, 0, 0)), kArgMin);
        EXPECT_EQ(arg(Op::ArgMin, x, attrs(1, 0, 1)), kArgMinLast);
        EXPECT_EQ(arg(Op::ArgMax, x, {{"axis", I(-1)}}), kArgMaxLastAxis);
        EXPECT_EQ(arg(Op::ArgMin, x, {}), kArgMinAxis0);
    }
    // NaN wins both, as in numpy (the first NaN, or the last with select_last_index).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const TensorData withnan = f32t({5}, {1.0f, nan, 3.0f, nan, -2.0f});
    EXPECT_EQ(arg(Op::ArgMax, withnan, attrs(0, 0, 0)), TensorData::scalar<int64_t>(1));
    EXPECT_EQ(arg(Op::ArgMin, withnan, attrs(0, 0, 0)), TensorData::scalar<int64_t>(1));
    EXPECT_EQ(arg(Op::ArgMax, withnan, attrs(0, 0, 1)), TensorData::scalar<int64_t>(3));
    EXPECT_NODE_ERROR("ArgMax", arg(Op::ArgMax, kArgX, {{"axis", I(3)}}), "axis 3");
    EXPECT_NODE_ERROR("ArgMin", arg(Op::ArgMin, TensorData::scalar(1.0f), {}), "rank >= 1");
}

TEST(IndexingEvalTest, ScatterND) {
    auto scatter = [](const TensorData& idx, const TensorData& upd, const char* red) {
        return run(Op::ScatterND, {data(kSndData), data(idx), data(upd)},
                   {{"reduction", S(red)}})[0];
    };
    const TensorData dup = i64t({3, 1}, {1, 3, 1});
    EXPECT_EQ(scatter(i64t({3, 1}, {1, 3, -4}), kSndUpd, "none"), kSndNone);
    EXPECT_TENSOR_NEAR(scatter(dup, kSndUpd, "add"), kSndAdd, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(scatter(dup, kSndUpd, "mul"), kSndMul, 1e-6, 1e-6);
    EXPECT_EQ(scatter(dup, kSndUpd, "max"), kSndMax);
    EXPECT_EQ(scatter(dup, kSndUpd, "min"), kSndMin);
    EXPECT_EQ(scatter(i64t({2, 2}, {0, 2, 3, 1}), f32t({2}, {5.0f, -6.0f}), "none"), kSndElems);
    EXPECT_NODE_ERROR("ScatterND", scatter(i64t({1, 1}, {4}), f32t({1, 3}, {1, 2, 3}), "none"),
                      "index 4 is out of range for extent 4");
    EXPECT_NODE_ERROR("ScatterND", scatter(dup, f32t({3, 2}, {1, 2, 3, 4, 5, 6}), "add"),
                      "updates [3,2] must have shape [3,3]");
    EXPECT_NODE_ERROR("ScatterND", scatter(dup, kSndUpd, "sum"), "unsupported reduction 'sum'");
}

TEST(IndexingEvalTest, TopK) {
    auto topk = [](const TensorData& x, int64_t k, Attributes a) {
        return run(Op::TopK, {data(x), konst(i64s({k}))}, std::move(a), 2);
    };
    std::vector<TensorData> r = topk(kTopX, 3, {{"axis", I(1)}, {"largest", I(1)}});
    EXPECT_EQ(r[0], kTopLargest);
    EXPECT_EQ(r[1], kTopLargestIdx);
    r = topk(kTopX, 3, {{"axis", I(-1)}, {"largest", I(0)}});
    EXPECT_EQ(r[0], kTopSmallest);
    EXPECT_EQ(r[1], kTopSmallestIdx);
    r = topk(kTopX.cast(DType::I64), 2, {{"axis", I(0)}});
    EXPECT_EQ(r[0], kTopAxis0.cast(DType::I64));
    EXPECT_EQ(r[1], kTopAxis0Idx);
    // Values only.
    EXPECT_EQ(run(Op::TopK, {data(kTopX), konst(i64s({3}))}, {{"axis", I(1)}})[0], kTopLargest);
    EXPECT_NODE_ERROR("TopK", topk(kTopX, 7, {{"axis", I(1)}}), "K = 7 is outside [0, 6]");
    EXPECT_NODE_ERROR("TopK", run(Op::TopK, {data(kTopX), konst(i64s({1, 2}))}, {}, 2),
                      "K must have one element");
}

TEST(IndexingEvalTest, Einsum) {
    auto einsum = [](const char* eq, std::vector<Operand> ins) {
        return run(Op::Einsum, ins, {{"equation", S(eq)}})[0];
    };
    EXPECT_TENSOR_NEAR(einsum("bij,bjk->bik", {data(kEinA), data(kEinB)}), kEinBmm, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(einsum("i,j->ij", {data(kEinU), data(kEinV)}), kEinOuter, 1e-6, 1e-6);
    EXPECT_EQ(einsum("ii->i", {data(kEinSq)}), kEinDiag);
    EXPECT_TENSOR_NEAR(einsum("ij,jk", {data(kEinM1), data(kEinM2)}), kEinImplicitMm, 1e-6, 1e-6);
    EXPECT_EQ(einsum("ba", {data(kEinM1)}), kEinImplicitT);
    EXPECT_TENSOR_NEAR(einsum("ij,ij->", {data(kEinM1), data(kEinM1)}), kEinFull, 1e-6, 1e-6);
    EXPECT_EQ(einsum("ij,jk->ik", {data(kEinI), data(kEinJ)}), kEinIntMm);
    // The attention forms agree with MatMul on the same operands.
    const TensorData q = floats({1, 2, 7, 5}, 1), k = floats({1, 2, 6, 5}, 2);
    const TensorData kt = run(Op::Transpose, {data(k)}, {{"perm", Is({0, 1, 3, 2})}})[0];
    EXPECT_TENSOR_NEAR(einsum("bhid,bhjd->bhij", {data(q), data(k)}),
                       run(Op::MatMul, {data(q), data(kt)})[0], 1e-5, 1e-6);
    EXPECT_NODE_ERROR("Einsum", einsum("...ij,...jk->...ik", {data(kEinM1), data(kEinM2)}),
                      "uses an ellipsis, which tessera does not support");
    EXPECT_NODE_ERROR("Einsum", einsum("ij,jk->ik", {data(kEinM1)}), "has 2 operands, the node 1");
    EXPECT_NODE_ERROR("Einsum", einsum("ij,kj->ik", {data(kEinM1), data(kEinM2)}),
                      "letter 'j' has extents 3 and 4");
    EXPECT_NODE_ERROR("Einsum", einsum("ij->iz", {data(kEinM1)}),
                      "output letter 'z' is in no operand");
    EXPECT_NODE_ERROR("Einsum", einsum("ij->ii", {data(kEinM1)}), "output letter 'i' is repeated");
    EXPECT_NODE_ERROR("Einsum", einsum("ijk->i", {data(kEinM1)}), "subscripts 'ijk'");
    EXPECT_NODE_ERROR("Einsum", einsum("ij,jk->ik", {data(kEinM1), data(kEinJ)}),
                      "input dtypes differ");
}

TEST(IndexingEvalTest, PadWrapAndSplitChunks) {
    EXPECT_EQ(run(Op::Pad, {data(kPadX), konst(i64s({1, 2, 0, 4}))}, {{"mode", S("wrap")}})[0],
              kPadWrap);
    // Canonical Split with opset 18's uneven chunks as sizes.
    const std::vector<TensorData> parts =
        run(Op::Split, {data(iota_f32({7, 2})), konst(i64s({3, 3, 1}))}, {{"axis", I(0)}}, 3);
    EXPECT_EQ(parts[0], kSplit0);
    EXPECT_EQ(parts[1], kSplit1);
    EXPECT_EQ(parts[2], kSplit2);
}

TEST(IndexingEvalTest, DataDependentShapesAreRefused) {
    EXPECT_EQ(error_of([&] { run(Op::NonZero, {data(kTopX)}); }),
              "node 'n' (NonZero) has a data-dependent output shape, which tessera does not "
              "support");
    EXPECT_EQ(error_of([&] { run(Op::Unique, {data(kTopX)}, {}, 4); }),
              "node 'n' (Unique) has a data-dependent output shape, which tessera does not "
              "support");
}

// ---- import: canonical forms across opsets, refusals ------------------------------------------

TEST(IndexingImportTest, DefaultsBecomeExplicitAndAxesNormalized) {
    ModelBuilder m(11);
    m.input("x", DType::F32, {1, 8, 2, 3});
    m.initializer("k", i64s({2})).initializer("ax", TensorData::scalar<int64_t>(-1));
    m.node("DepthToSpace", {"x"}, {"d"}, "d2s").i("blocksize", 2);
    m.node("ArgMax", {"x"}, {"am"}, "am").i("axis", -1);
    m.node("TopK", {"x", "k"}, {"tv", "ti"}, "topk").i("axis", -2);
    m.node("CumSum", {"x", "ax"}, {"cs"}, "cs");
    m.node("GatherElements", {"x", "am"}, {"ge"}, "ge").i("axis", -1);
    m.output("d").output("am", DType::I64).output("tv").output("ti", DType::I64);
    m.output("cs").output("ge");
    const Graph g = import_model(m);
    const Node& d2s = only_node(g, Op::DepthToSpace);
    EXPECT_EQ(d2s.attr_string("mode"), "DCR");
    EXPECT_EQ(d2s.attr_int("blocksize", 0), 2);
    const Node& am = only_node(g, Op::ArgMax);
    EXPECT_EQ(am.attr_int("axis", 0), 3);
    EXPECT_TRUE(am.has_attr("keepdims") && am.has_attr("select_last_index"));
    EXPECT_EQ(g.value(am.outputs[0]).shape, (Shape{1, 8, 2, 1}));
    const Node& topk = only_node(g, Op::TopK);
    EXPECT_EQ(topk.attr_int("axis", 0), 2);
    EXPECT_EQ(topk.attr_int("largest", 0), 1);
    EXPECT_EQ(topk.attr_int("sorted", 0), 1);
    EXPECT_EQ(g.value(topk.outputs[1]).shape, (Shape{1, 8, 2, 3}));
    const Node& cs = only_node(g, Op::CumSum);
    EXPECT_EQ(cs.attr_int("exclusive", 1), 0);
    EXPECT_EQ(cs.attr_int("reverse", 1), 0);
    EXPECT_EQ(only_node(g, Op::GatherElements).attr_int("axis", 0), 3);
}

TEST(IndexingImportTest, TopKOpset1AttributeBecomesOperand) {
    ModelBuilder m(9);
    m.input("x", DType::F32, {3, 6});
    m.node("TopK", {"x"}, {"v", "i"}, "topk").i("k", 3);
    m.output("v").output("i", DType::I64);
    const Graph g = import_model(m);
    const Node& topk = only_node(g, Op::TopK);
    ASSERT_EQ(topk.inputs.size(), 2u);
    EXPECT_FALSE(topk.has_attr("k"));
    const std::vector<TensorData> out = evaluate(g, {kTopX});
    EXPECT_EQ(out[0], kTopLargest);
    EXPECT_EQ(out[1], kTopLargestIdx);
    ModelBuilder bad(9);
    bad.input("x", DType::F32, {3, 6});
    bad.node("TopK", {"x"}, {"v", "i"}, "topk");
    bad.output("v").output("i", DType::I64);
    EXPECT_EQ(import_error(bad), "node 'topk' (TopK, opset 9): attribute 'k' is required");
}

TEST(IndexingImportTest, EinsumEquationIsNormalized) {
    auto model = [](const std::string& eq) {
        ModelBuilder m(12);
        m.input("a", DType::F32, {2, 3}).input("b", DType::F32, {3, 4});
        m.node("Einsum", {"a", "b"}, {"y"}, "ein").s("equation", eq);
        m.output("y");
        return m;
    };
    const Graph g = import_model(model(" ij , jk "));
    EXPECT_EQ(only_node(g, Op::Einsum).attr_string("equation"), "ij,jk->ik");
    EXPECT_TENSOR_NEAR(evaluate(g, {kEinM1, kEinM2})[0], kEinImplicitMm, 1e-6, 1e-6);
    EXPECT_EQ(import_error(model("...ij,...jk->...ik")),
              "node 'ein' (Einsum, opset 12): equation '...ij,...jk->...ik' uses an ellipsis, "
              "which tessera does not support");
    EXPECT_CONTAINS(import_error(model("ij,jk,kl->il")), "has 3 operands, the node 2");
    ModelBuilder old(11);
    old.input("a", DType::F32, {2, 3});
    old.node("Einsum", {"a"}, {"y"}, "ein").s("equation", "ij->ji");
    old.output("y");
    EXPECT_CONTAINS(import_error(old), "does not exist before opset 12");
}

TEST(IndexingImportTest, AttributesOfLaterOpsetsAreRefusedEarlier) {
    {
        ModelBuilder m(11);
        m.input("x", DType::F32, {2, 3});
        m.node("ArgMax", {"x"}, {"y"}, "am").i("select_last_index", 1);
        m.output("y", DType::I64);
        EXPECT_EQ(import_error(m),
                  "node 'am' (ArgMax, opset 11): unsupported attribute 'select_last_index'");
    }
    {
        ModelBuilder m(11);
        m.input("x", DType::F32, {2, 3}).initializer("i", i64t({2, 1}, {1, 0}));
        m.node("GatherND", {"x", "i"}, {"y"}, "gnd").i("batch_dims", 1);
        m.output("y");
        EXPECT_EQ(import_error(m),
                  "node 'gnd' (GatherND, opset 11): unsupported attribute 'batch_dims'");
    }
    {
        ModelBuilder m(10);
        m.input("x", DType::F32, {1, 8, 2, 3});
        m.node("DepthToSpace", {"x"}, {"y"}, "d2s").i("blocksize", 2).s("mode", "CRD");
        m.output("y");
        EXPECT_EQ(import_error(m),
                  "node 'd2s' (DepthToSpace, opset 10): unsupported attribute 'mode'");
    }
}

TEST(IndexingImportTest, ScatterNDReductionsByOpset) {
    auto model = [](int opset, const char* red) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {4, 3}).input("u", DType::F32, {3, 3});
        m.initializer("i", i64t({3, 1}, {1, 3, 1}));
        testing::NodeRef n = m.node("ScatterND", {"x", "i", "u"}, {"y"}, "snd");
        if (red)
            n.s("reduction", red);
        m.output("y");
        return m;
    };
    const Graph g = import_model(model(13, nullptr));
    EXPECT_EQ(only_node(g, Op::ScatterND).attr_string("reduction"), "none");
    EXPECT_EQ(evaluate(import_model(model(18, "max")), {kSndData, kSndUpd})[0], kSndMax);
    EXPECT_TENSOR_NEAR(evaluate(import_model(model(16, "add")), {kSndData, kSndUpd})[0], kSndAdd,
                       1e-6, 1e-6);
    EXPECT_EQ(import_error(model(16, "max")),
              "node 'snd' (ScatterND, opset 16): unsupported reduction 'max'");
    EXPECT_EQ(import_error(model(13, "add")),
              "node 'snd' (ScatterND, opset 13): unsupported attribute 'reduction'");
}

TEST(IndexingImportTest, NonZeroAndUniqueAreRefusedNamingTheNode) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {3, 6});
    m.node("NonZero", {"x"}, {"y"}, "nz");
    m.output("y", DType::I64);
    EXPECT_EQ(import_error(m), "node 'nz' (NonZero, opset 13) has a data-dependent output shape, "
                               "which tessera does not support");
    ModelBuilder u(11);
    u.input("x", DType::F32, {6});
    u.node("Unique", {"x"}, {"y", "idx", "inv", "counts"}, "uniq").i("sorted", 1);
    u.output("y");
    EXPECT_EQ(import_error(u), "node 'uniq' (Unique, opset 11) has a data-dependent output shape, "
                               "which tessera does not support");
}

TEST(IndexingImportTest, SplitOpset18NumOutputs) {
    auto model = [](int64_t extent, int64_t n, size_t outputs) {
        ModelBuilder m(18);
        m.input("x", DType::F32, {extent, 2});
        std::vector<std::string> outs;
        for (size_t i = 0; i < outputs; ++i)
            outs.push_back("y" + std::to_string(i));
        m.node("Split", {"x"}, outs, "split").i("axis", 0).i("num_outputs", n);
        for (const std::string& o : outs)
            m.output(o);
        return m;
    };
    const Graph g = import_model(model(7, 3, 3));
    const Node& split = only_node(g, Op::Split);
    ASSERT_EQ(split.inputs.size(), 2u);
    EXPECT_EQ(g.value(split.inputs[1]).name, "split/split");
    const std::vector<TensorData> parts = evaluate(g, {iota_f32({7, 2})});
    EXPECT_EQ(parts[0], kSplit0);
    EXPECT_EQ(parts[1], kSplit1);
    EXPECT_EQ(parts[2], kSplit2);
    // Even extents split equally.
    EXPECT_EQ(evaluate(import_model(model(6, 3, 3)), {iota_f32({6, 2})})[2].shape(), (Shape{2, 2}));
    EXPECT_EQ(import_error(model(6, 4, 4)),
              "node 'split' (Split, opset 18): extent 6 does not split into 4 chunks of 2 (the "
              "last would be empty)");
    EXPECT_EQ(import_error(model(7, 3, 2)),
              "node 'split' (Split, opset 18): num_outputs 3 differs from the 2 outputs");
    ModelBuilder both(18);
    both.input("x", DType::F32, {7, 2}).initializer("s", i64s({3, 4}));
    both.node("Split", {"x", "s"}, {"a", "b"}, "split").i("num_outputs", 2);
    both.output("a").output("b");
    EXPECT_EQ(import_error(both), "node 'split' (Split, opset 18): takes the 'split' input or the "
                                  "'num_outputs' attribute, not both");
    ModelBuilder early(17);
    early.input("x", DType::F32, {6, 2});
    early.node("Split", {"x"}, {"a", "b"}, "split").i("num_outputs", 2);
    early.output("a").output("b");
    EXPECT_EQ(import_error(early),
              "node 'split' (Split, opset 17): unsupported attribute 'num_outputs'");
}

TEST(IndexingImportTest, PadOpset18AxesAndOpset19Wrap) {
    auto model = [](int opset, const char* mode, bool with_axes, bool const_axes = true) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3});
        m.initializer("v", TensorData::scalar(0.5f));
        std::vector<std::string> ins = {"x", "pads", "v"};
        if (with_axes) {
            m.initializer("pads", i64s({2, 1}));
            if (const_axes)
                m.initializer("axes", i64s({-1}));
            else
                m.input("axes", DType::I64, {1});
            ins.push_back("axes");
        } else {
            m.initializer("pads", i64s({1, 2, 0, 4}));
        }
        m.node("Pad", ins, {"y"}, "pad").s("mode", mode);
        m.output("y");
        return m;
    };
    const Graph g = import_model(model(18, "constant", true));
    const Node& pad = only_node(g, Op::Pad);
    EXPECT_EQ(pad.inputs.size(), 3u);
    EXPECT_EQ(evaluate(g, {kPadX})[0], kPadAxes);
    EXPECT_EQ(evaluate(import_model(model(21, "constant", true)), {kPadX})[0], kPadAxes);
    EXPECT_EQ(evaluate(import_model(model(19, "wrap", false)), {kPadX})[0], kPadWrap);
    EXPECT_EQ(import_error(model(18, "wrap", false)),
              "node 'pad' (Pad, opset 18): unsupported pad mode 'wrap'");
    EXPECT_EQ(import_error(model(17, "constant", true)),
              "node 'pad' (Pad, opset 17): has 4 inputs, expected 2 to 3 in this opset");
    EXPECT_EQ(import_error(model(18, "constant", true, false)),
              "node 'pad' (Pad, opset 18): axes 'axes' must be a compile-time constant (a graph "
              "input: give its value with --bind NAME=FILE.npy)");
}

// Opsets 1-5 forms: attributes that later became operands, and defaults that later became
// required.
TEST(IndexingImportTest, OldOpsetForms) {
    const TensorData x = floats({2, 3, 4}, 31);
    auto one = [](ModelBuilder& m) { return evaluate(import_model(m), {floats({2, 3, 4}, 31)}); };
    {
        ModelBuilder m(4);
        m.input("x", DType::F32, {2, 3, 4});
        m.node("Reshape", {"x"}, {"y"}, "r").ints("shape", {0, -1}).ints("consumed_inputs", {0});
        m.output("y");
        EXPECT_EQ(one(m)[0], x.reshaped({2, 12}));
        ModelBuilder bad(4);
        bad.input("x", DType::F32, {2, 3, 4});
        bad.node("Reshape", {"x"}, {"y"}, "r");
        bad.output("y");
        EXPECT_EQ(import_error(bad), "node 'r' (Reshape, opset 4): attribute 'shape' is required");
    }
    {
        ModelBuilder m(3);
        m.input("x", DType::F32, {2, 3, 4});
        m.node("Concat", {"x", "x"}, {"y"}, "c");
        m.output("y");
        EXPECT_EQ(one(m)[0],
                  run(Op::Concat, {data(x), data(x)}, {{"axis", I(1)}})[0]); // default axis 1
    }
    {
        ModelBuilder m(5);
        m.input("x", DType::F32, {2, 3, 4});
        m.initializer("tiles", TensorData::scalar<int64_t>(3))
            .initializer("axis", TensorData::scalar<int64_t>(-1));
        m.node("Tile", {"x", "tiles", "axis"}, {"y"}, "t");
        m.output("y");
        EXPECT_EQ(one(m)[0], run(Op::Tile, {data(x), konst(i64s({1, 1, 3}))})[0]);
    }
    {
        ModelBuilder m(1);
        m.input("x", DType::F32, {2, 3, 4});
        m.node("Pad", {"x"}, {"y"}, "p").ints("paddings", {0, 1, 0, 0, 2, 1}).f("value", 0.5f);
        m.output("y");
        ModelBuilder m2(2);
        m2.input("x", DType::F32, {2, 3, 4});
        m2.node("Pad", {"x"}, {"y"}, "p").ints("pads", {0, 1, 0, 0, 2, 1}).f("value", 0.5f);
        m2.output("y");
        const TensorData want = run(
            Op::Pad, {data(x), konst(i64s({0, 1, 0, 0, 2, 1})), konst(TensorData::scalar(0.5f))},
            {{"mode", S("constant")}})[0];
        EXPECT_EQ(one(m)[0], want);
        EXPECT_EQ(one(m2)[0], want);
    }
    {
        ModelBuilder m(1);
        m.input("x", DType::F32, {2, 3, 4}).initializer("s", i64s({1, 3}));
        m.node("Split", {"x", "s"}, {"a", "b"}, "s").i("axis", 2);
        m.output("a").output("b");
        const std::vector<TensorData> parts = one(m);
        EXPECT_EQ(parts[1], run(Op::Slice, {data(x), konst(i64s({1})), konst(i64s({4})),
                                            konst(i64s({2}))})[0]);
    }
}

// SpaceToDepth takes a mode from opset 28: CRD puts each channel's block together.
TEST(IndexingImportTest, SpaceToDepthOpset28Mode) {
    auto model = [](int opset, const char* mode) {
        ModelBuilder m(opset, 13);
        m.input("x", DType::F32, {1, 2, 4, 6});
        m.node("SpaceToDepth", {"x"}, {"y"}, "s2d").i("blocksize", 2).s("mode", mode);
        m.output("y");
        return m;
    };
    const TensorData x = iota_f32({1, 2, 4, 6});
    EXPECT_EQ(evaluate(import_model(model(28, "CRD")), {x})[0], kS2dCrd);
    EXPECT_EQ(evaluate(import_model(model(28, "DCR")), {x})[0], kS2d);
    EXPECT_EQ(import_error(model(21, "CRD")),
              "node 's2d' (SpaceToDepth, opset 21): unsupported attribute 'mode'");
}

// The other data-movement ops keep their semantics through opset 21 (later versions only add
// types): a chain of them imports at 21 and evaluates as at 13.
TEST(IndexingImportTest, DataMovementOpsThroughOpset21) {
    auto model = [](int opset) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 4});
        m.initializer("shape", i64s({6, 4}))
            .initializer("ax0", i64s({0}))
            .initializer("idx", i64s({2, 0}))
            .initializer("starts", i64s({1}))
            .initializer("ends", i64s({4}))
            .initializer("axes1", i64s({1}))
            .initializer("eshape", i64s({2, 1, 1}));
        m.node("Reshape", {"x", "shape"}, {"r"});
        m.node("Transpose", {"r"}, {"t"}).ints("perm", {1, 0});
        m.node("Unsqueeze", {"t", "ax0"}, {"u"});
        m.node("Squeeze", {"u", "ax0"}, {"s"});
        m.node("Flatten", {"s"}, {"f"}).i("axis", 1);
        m.node("Gather", {"f", "idx"}, {"g"}).i("axis", 0);
        m.node("Slice", {"g", "starts", "ends", "axes1"}, {"sl"});
        m.node("Concat", {"sl", "sl"}, {"c"}).i("axis", 0);
        m.node("Expand", {"c", "eshape"}, {"e"});
        m.node("Identity", {"e"}, {"y"});
        m.output("y");
        return m;
    };
    const TensorData x = floats({2, 3, 4}, 7);
    const TensorData want = evaluate(import_model(model(13)), {x})[0];
    EXPECT_EQ(want.shape(), (Shape{2, 4, 3}));
    for (int opset : {14, 18, 19, 21})
        EXPECT_EQ(evaluate(import_model(model(opset)), {x})[0], want) << "opset " << opset;
}

// ---- kernels against the evaluator
// ---------------------------------------------------------------

std::vector<OpCase> indexing_cases() {
    std::vector<OpCase> cs;
    cs.push_back(
        {"Tile", {Op::Tile}, [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::Tile, {c.input(floats({1, 7, 13}, 1)), c.constant(i64s({2, 1, 3}))}),
                     c.op(Op::Tile, {c.input(ints({7, 1}, 2, -9, 9)), c.constant(i64s({1, 13}))})};
         }});
    cs.push_back(
        {"DepthToSpace", {Op::DepthToSpace}, [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({1, 12, 3, 5}, 1));
             auto d2s = [&](int64_t b, const char* mode) {
                 return c.op(Op::DepthToSpace, {x}, {{"blocksize", I(b)}, {"mode", S(mode)}});
             };
             return {d2s(2, "DCR"), d2s(2, "CRD"), d2s(1, "DCR")};
         }});
    cs.push_back({"SpaceToDepth", {Op::SpaceToDepth}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::SpaceToDepth, {c.input(floats({1, 3, 6, 9}, 1))},
                                   {{"blocksize", I(3)}}),
                              c.op(Op::SpaceToDepth, {c.input(ints({2, 1, 4, 2}, 2, -9, 9))},
                                   {{"blocksize", I(2)}}),
                              c.op(Op::SpaceToDepth, {c.input(floats({1, 3, 4, 6}, 3))},
                                   {{"blocksize", I(2)}, {"mode", S("CRD")}})};
                  }});
    cs.push_back(
        {"GatherElements", {Op::GatherElements}, [](Case& c) -> std::vector<ValueId> {
             // Negative indices count from the end; i32 indices; indices smaller than data.
             const ValueId x = c.input(floats({7, 13}, 1));
             return {
                 c.op(Op::GatherElements, {x, c.input(ints({5, 13}, 2, -7, 6))},
                      attr("axis", I(0))),
                 c.op(Op::GatherElements, {x, c.input(ints({7, 4}, 3, -13, 12).cast(DType::I32))},
                      attr("axis", I(1))),
                 c.op(Op::GatherElements,
                      {c.input(ints({1, 7, 13}, 4, -50, 50)), c.input(ints({1, 7, 3}, 5, 0, 12))},
                      attr("axis", I(2)))};
         }});
    cs.push_back({"GatherND", {Op::GatherND}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({3, 7, 13}, 1));
                      return {c.op(Op::GatherND, {x, c.input(ints({5, 2}, 2, -3, 2))},
                                   attr("batch_dims", I(0))),
                              c.op(Op::GatherND, {x, c.input(ints({3, 4, 1}, 3, -7, 6))},
                                   attr("batch_dims", I(1))),
                              c.op(Op::GatherND, {x, c.input(ints({3, 2, 2}, 4, -3, 2))},
                                   attr("batch_dims", I(1))),
                              c.op(Op::GatherND,
                                   {x, c.constant(i64s({2, -1, 12}).reshaped({1, 3}))},
                                   attr("batch_dims", I(0)))};
                  }});
    cs.push_back({"Size", {Op::Size}, [](Case& c) -> std::vector<ValueId> {
                      return {c.op(Op::Size, {c.input(floats({1, 7, 13}, 1))}),
                              c.op(Op::Size, {c.input(ints({13}, 2, -9, 9))})};
                  }});
    cs.push_back(
        {"CumSum", {Op::CumSum}, [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({1, 7, 13}, 1));
             auto axis = [&](int64_t a) { return c.constant(TensorData::scalar<int64_t>(a)); };
             c.atol = 1e-5;
             return {c.op(Op::CumSum, {x, axis(2)}),
                     c.op(Op::CumSum, {x, axis(1)}, {{"exclusive", I(1)}, {"reverse", I(1)}}),
                     c.op(Op::CumSum, {x, axis(-1)}, attr("reverse", I(1))),
                     c.op(Op::CumSum, {c.input(ints({7, 13}, 2, -9, 9)), axis(-2)},
                          attr("exclusive", I(1)))};
         }});
    cs.push_back({"ArgMaxArgMin", {Op::ArgMax, Op::ArgMin}, [](Case& c) -> std::vector<ValueId> {
                      // Small integers tie often: first and last index differ.
                      const ValueId t = c.input(ints({7, 13}, 1, 0, 3));
                      const ValueId x = c.input(floats({1, 7, 13}, 2));
                      auto arg = [&](Op op, ValueId v, int64_t axis, int64_t keep, int64_t last) {
                          return c.op(op, {v},
                                      {{"axis", I(axis)},
                                       {"keepdims", I(keep)},
                                       {"select_last_index", I(last)}});
                      };
                      return {arg(Op::ArgMax, t, 1, 1, 0), arg(Op::ArgMax, t, 0, 0, 1),
                              arg(Op::ArgMin, t, 1, 0, 0), arg(Op::ArgMin, t, 1, 1, 1),
                              arg(Op::ArgMax, x, 2, 0, 0), arg(Op::ArgMin, x, 1, 1, 0)};
                  }});
    cs.push_back(
        {"Einsum", {Op::Einsum}, [](Case& c) -> std::vector<ValueId> {
             // The contractions transformers emit, and an integer one.
             c.atol = 1e-5;
             auto einsum = [&](const char* eq, std::vector<ValueId> ins) {
                 return c.op(Op::Einsum, std::move(ins), attr("equation", S(eq)));
             };
             const ValueId q = c.input(floats({1, 2, 7, 5}, 1));
             const ValueId k = c.input(floats({1, 2, 6, 5}, 2));
             const ValueId p = c.input(floats({1, 2, 7, 6}, 3));
             const ValueId a = c.input(floats({3, 7, 5}, 4));
             const ValueId b = c.input(floats({3, 5, 13}, 5));
             const ValueId u = c.input(floats({7}, 6));
             const ValueId v = c.input(floats({13}, 7));
             const ValueId e = c.input(floats({3, 13, 5}, 8));
             return {
                 einsum("bhid,bhjd->bhij", {q, k}),
                 einsum("bhij,bhjd->bhid", {p, k}),
                 einsum("bij,bjk->bik", {a, b}),
                 einsum("ij,jk->ik", {c.input(floats({7, 5}, 9)), c.constant(floats({5, 13}, 10))}),
                 einsum("i,j->ij", {u, v}),
                 einsum("bid,bjd->bij", {a, e}),
                 einsum("ij,jk->ik",
                        {c.input(ints({7, 5}, 11, -9, 9)), c.input(ints({5, 13}, 12, -9, 9))}),
                 einsum("ii->i", {c.input(floats({7, 7}, 13))}),
                 einsum("ij,ij->", {c.input(floats({7, 13}, 14)), c.input(floats({7, 13}, 15))})};
         }});
    cs.push_back({"ScatterND", {Op::ScatterND}, [](Case& c) -> std::vector<ValueId> {
                      // Runtime indices with repeats and negatives; rows (k = 1) and elements (k =
                      // 2).
                      const ValueId x = c.input(floats({7, 13}, 1));
                      const ValueId rows = c.input(i64t({4, 1}, {2, -1, 2, 0}));
                      const ValueId upd = c.input(floats({4, 13}, 2));
                      auto scatter = [&](ValueId d, ValueId i, ValueId u, const char* red) {
                          return c.op(Op::ScatterND, {d, i, u}, attr("reduction", S(red)));
                      };
                      const ValueId cells =
                          c.input(i64t({2, 3, 2}, {0, 0, 6, 12, -1, 3, 2, 5, 0, 0, 6, 12}));
                      const ValueId vals = c.input(floats({2, 3}, 3));
                      const ValueId xi = c.input(ints({7, 13}, 4, -9, 9));
                      std::vector<ValueId> outs;
                      for (const char* red : {"none", "add", "mul", "max", "min"})
                          outs.push_back(scatter(x, rows, upd, red));
                      outs.push_back(scatter(x, c.constant(i64t({2, 1}, {3, -3})),
                                             c.input(floats({2, 13}, 5)), "none"));
                      outs.push_back(scatter(x, cells, vals, "add"));
                      outs.push_back(scatter(xi, cells, c.input(ints({2, 3}, 6, -9, 9)), "mul"));
                      return outs;
                  }});
    cs.push_back(
        {"TopK", {Op::TopK}, [](Case& c) -> std::vector<ValueId> {
             // Small integers tie often: the lower index comes first.
             const ValueId x = c.input(floats({7, 13}, 1));
             const ValueId t = c.input(ints({7, 13}, 2, 0, 3));
             auto topk = [&](ValueId v, int64_t k, int64_t axis, int64_t largest) {
                 return c.op_n(Op::TopK, {v, c.constant(i64s({k}))}, 2,
                               {{"axis", I(axis)}, {"largest", I(largest)}, {"sorted", I(1)}});
             };
             std::vector<ValueId> outs;
             for (const std::vector<ValueId>& r :
                  {topk(x, 5, 1, 1), topk(x, 3, 0, 0), topk(t, 13, 1, 1), topk(t, 4, 0, 0),
                   topk(c.input(floats({1, 7, 13}, 3)), 1, 2, 0)})
                 outs.insert(outs.end(), r.begin(), r.end());
             // Values only.
             outs.push_back(
                 c.op(Op::TopK, {x, c.constant(i64s({2}))}, {{"axis", I(-1)}, {"largest", I(1)}}));
             return outs;
         }});
    cs.push_back(
        {"Pad_wrap", {Op::Pad}, [](Case& c) -> std::vector<ValueId> {
             // Pads wider than the dim wrap around more than once.
             const Attributes a = attr("mode", S("wrap"));
             return {
                 c.op(Op::Pad, {c.input(floats({7, 13}, 1)), c.constant(i64s({1, 2, 3, 14}))}, a),
                 c.op(Op::Pad,
                      {c.input(ints({1, 7, 13}, 2, -9, 9)), c.constant(i64s({0, 9, 0, 0, 0, 1}))},
                      a)};
         }});
    return cs;
}

TESSERA_REGISTER_OP_CASES(indexing_cases);

} // namespace
} // namespace tessera::graph
