// The windowed ops beyond the 2-D Conv: ConvTranspose (every attribute form: strides, pads,
// output_padding, dilations, group, output_shape, auto_pad; 1-D, 2-D and 3-D), and Conv,
// MaxPool and AveragePool on 1-D (3-D input, lifted to 2-D at import) and 3-D (5-D input)
// tensors. Each single-node ONNX model is imported (so auto_pad / output_shape resolution and
// the 1-D lifting are covered) and evaluated against values computed independently with
// onnxruntime 1.23, onnx.reference and a numpy scatter loop (ConvTranspose with output_shape of
// odd total padding, where onnxruntime departs from the ONNX rule). Then the refusals, and the
// kernel-vs-evaluator cases of the op table (op_case.h).
#include <gtest/gtest.h>

#include <array>
#include <functional>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;
using testing::NodeRef;

// ---- known values (inputs rounded to 2 decimals, outputs from the tools above) ---------------

// ct_s2k2
const std::vector<float> ct_s2k2_x = {-0.67f, -0.97f, 0.25f,  0.55f,  -0.4f, 0.34f,  0.44f,
                                      0.6f,   -0.65f, -0.79f, -0.67f, 0.94f, -0.45f, -1.13f,
                                      0.28f,  0.92f,  0.67f,  -0.81f}; // [1, 2, 3, 3]
const std::vector<float> ct_s2k2_w = {-0.69f, 0.28f,  -0.8f,  -0.69f, -0.67f, -0.58f, -0.45f,
                                      -0.87f, 0.55f,  -0.52f, 0.87f,  -0.78f, 0.38f,  0.76f,
                                      -0.43f, 1.04f,  1.1f,   0.74f,  1.1f,   -0.33f, 0.76f,
                                      -0.32f, -0.68f, 0.35f}; // [2, 3, 2, 2]
const std::vector<float> ct_s2k2_b = {0.8f, 0.96f, 0.54f};    // [3]
const std::vector<float> ct_s2k2_y = {
    0.9621f,      0.01200002f,  1.2147f,     0.01920003f, 0.9847f,     1.5844f,      1.6757f,
    0.4407f,      1.8641f,      0.7725f,     0.1958f,     1.6051f,     0.2495f,      0.612f,
    0.6466f,      -0.1708f,     0.6718f,     1.108f,      0.5535f,     -0.04749995f, 1.6059f,
    -0.09919995f, 0.4076f,      0.8566f,     0.846f,      1.6224f,     0.6406f,      1.4772f,
    0.9407f,      0.002400041f, 0.05239999f, 1.4532f,     0.03189999f, 1.0828f,      1.6683f,
    0.4061f,      0.5398999f,   0.7639999f,  0.8728999f,  1.0268f,     1.8265f,      1.5106f,
    0.3924999f,   1.8036f,      0.6594999f,  2.025f,      1.8815f,     0.4323f,      0.09649998f,
    0.308f,       -0.01500005f, 0.3558f,     1.0402f,     0.97f,       0.2175f,      0.63f,
    -0.1030001f,  1.6809f,      1.115f,      0.5718f,     1.6772f,     1.3856f,      1.295f,
    1.1078f,      0.5044999f,   0.7376f,     1.774f,      0.2735999f,  1.427f,       0.2168999f,
    0.3615f,      1.7928f,      -0.4289f,    1.1412f,     -0.5027f,    1.2588f,      1.3919f,
    0.1092f,      0.4943f,      0.7861f,     0.1517f,     1.0621f,     0.1183f,      0.674f,
    0.5005f,      0.398f,       -0.5387999f, 1.1096f,     0.9398f,     0.2736f,      1.3245f,
    -0.04649997f, 0.9604f,      0.4565001f,  0.6454f,     0.3728001f,  1.4812f,      0.01680005f,
    1.3792f,      0.01359999f,  -0.4331f,    1.1372f,     0.2972f,     0.5188f,      0.6064f,
    0.3065f,      0.5253001f,   0.7635f}; // [1, 3, 6, 6]
// ct_k3s2p1op1
const std::vector<float> ct_k3s2p1op1_x = {-1.22f, -0.8f, 1.22f,  -0.96f, 0.95f, -0.47f, 1.23f,
                                           0.26f,  0.5f,  -0.68f, -1.03f, 0.45f, 1.11f,  1.23f,
                                           -0.41f, 0.85f, -0.26f, 0.64f,  0.29f, -1.21f, -0.69f,
                                           1.2f,   1.04f, -1.12f}; // [1, 2, 3, 4]
const std::vector<float> ct_k3s2p1op1_w = {
    -0.47f, 1.12f,  0.46f,  1.17f,  -0.74f, 0.86f, 1.02f,  0.77f,  -0.55f,
    -0.44f, 0.33f,  -0.99f, 0.69f,  0.41f,  1.13f, -0.52f, -0.66f, -0.55f,
    -0.88f, -0.83f, 0.85f,  0.52f,  0.53f,  0.5f,  0.58f,  0.39f,  0.42f,
    1.21f,  1.21f,  -0.44f, -0.27f, -0.45f, 0.95f, 1.03f,  -0.27f, -0.83f}; // [2, 2, 3, 3]
const std::vector<float> ct_k3s2p1op1_y = {
    1.4911f,      -0.7906001f,  1.2439f,    1.1412f,      -1.1201f,     0.1630001f,   1.1609f,
    -0.4006f,     0.7733001f,   0.9083f,    -1.1939f,     1.4577f,      1.9164f,      0.4255f,
    0.8878001f,   -0.02390009f, -0.8408f,   0.4699f,      0.687f,       1.5057f,      -0.7565f,
    0.8778f,      -0.8337f,     -0.3814f,   1.7628f,      -1.8328f,     -1.8699f,     2.2262f,
    -0.9566f,     0.193f,       1.1619f,    -1.3962f,     -0.7357f,     -0.08659999f, 1.1392f,
    -0.6490999f,  1.3134f,      -0.4217f,   -0.9266f,     -0.173f,      0.1159f,      -0.5624f,
    -0.05559998f, 0.4306f,      -0.3875f,   0.8127f,      -0.09030001f, -0.7179f,     -0.9997f,
    -1.2082f,     -0.8815f,     1.217f,     0.6847f,      0.09720004f,  -0.7761f,     -0.2773f,
    0.5044f,      1.5877f,      0.8152f,    -1.6442f,     0.06230003f,  -1.8798f,     -0.9742001f,
    0.0975f,      0.5065f,      0.3294001f, -0.4807f,     0.8473f,      0.3738f,      2.1715f,
    0.6511f,      -0.8557f,     -1.2267f,   2.1567f,      1.365f,       1.2432f,      0.02839994f,
    -3.2898f,     -1.0516f,     0.9086f,    0.5155f,      -0.8837f,     -0.8188f,     -0.6198999f,
    -0.8903f,     0.4369999f,   0.6885f,    -0.5555f,     -0.1437f,     1.8873f,      0.1248f,
    0.9847999f,   0.399f,       -1.6843f,   0.005400022f, 0.6821f}; // [1, 2, 6, 8]
// ct_group2
const std::vector<float> ct_group2_x = {
    1.14f,  -0.58f, -1.07f, -0.29f, 0.36f, 0.85f, -0.78f, 0.67f,  -0.59f,
    -0.87f, 0.69f,  -0.99f, -0.77f, 0.83f, 0.9f,  -1.24f, -1.07f, -0.66f,
    -1.13f, 1.07f,  -0.3f,  -0.97f, 1.05f, 0.99f, 0.96f,  0.79f,  0.37f,
    -1.21f, 0.65f,  -0.47f, -0.97f, 1.24f, 0.51f, 0.92f,  -0.85f, 0.97f}; // [1, 4, 3, 3]
const std::vector<float> ct_group2_w = {0.33f,  -1.03f, 0.69f,  0.97f,  1.23f, -0.79f, -0.75f,
                                        -0.32f, -0.52f, -0.75f, -0.93f, 1.05f, 0.63f,  -0.32f,
                                        0.54f,  -1.16f, -0.46f, -0.7f,  1.18f, -0.27f, -0.85f,
                                        1.2f,   -0.48f, 0.8f}; // [4, 1, 2, 3]
const std::vector<float> ct_group2_b = {1.12f, 1.22f};         // [2]
const std::vector<float> ct_group2_y = {
    1.6018f,     1.6651f,  0.8166f,    0.4836f, 0.5423001f, 3.5509f,    4.5315f,
    -0.6439999f, -0.5828f, 3.3263f,    1.4162f, 1.4794f,    0.2673001f, 0.7909f,
    1.8566f,     1.2934f,  1.3138f,    1.8866f, 2.9392f,    -0.6101f,   -0.5357f,
    1.7923f,     3.6454f,  0.5492001f, 1.9585f, 2.7692f,    1.765f,     -0.1871001f,
    0.3925f,     3.3018f,  1.1812f,    2.1318f, 1.393f,     0.1418f,    0.9406002f,
    1.2104f,     0.3368f,  -0.6524f,   1.2646f, 0.7218001f}; // [1, 2, 4, 5]
// ct_outshape
const std::vector<float> ct_outshape_x = {-0.26f, -0.75f, 0.75f, 0.38f, -0.39f,
                                          0.47f,  0.67f,  0.5f,  0.33f}; // [1, 1, 3, 3]
const std::vector<float> ct_outshape_w = {1.02f,  0.27f,  0.88f,  -1.0f, -0.75f, 0.47f, -0.45f,
                                          -1.01f, 0.42f,  0.34f,  0.94f, 1.2f,   0.25f, 0.76f,
                                          1.06f,  -0.86f, -0.97f, -0.54f}; // [1, 2, 3, 3]
const std::vector<float> ct_outshape_y = {
    0.26f,        0.195f,       0.6278f,  0.5625f,  -1.1025f, -0.5625f, 0.3525f,  0.0f,
    0.0f,         0.5046f,      0.3652f,  0.1649f,  0.6522f,  -0.5163f, -0.6306f, 0.7286f,
    0.0f,         0.0f,         -0.38f,   -0.285f,  0.5686f,  0.2925f,  -0.6533f, -0.3525f,
    0.2209f,      0.0f,         0.0f,     0.5124f,  -0.2029f, 1.4347f,  0.5289f,  0.4013f,
    -0.3856f,     0.4878f,      0.0f,     0.0f,     -0.67f,   -0.5025f, -0.1851f, -0.375f,
    -0.09500001f, -0.2475f,     0.1551f,  0.0f,     0.0f,     -0.3015f, -0.6767f, 0.0564f,
    -0.505f,      0.0615f,      -0.3333f, 0.1386f,  0.0f,     0.0f,     -0.065f,  -0.1976f,
    -0.4631f,     -0.57f,       -0.6075f, 0.57f,    0.795f,   0.0f,     0.0f,     0.3528f,
    0.6094f,      1.1088f,      0.3609f,  -0.5482f, -0.2857f, 0.159f,   0.0f,     0.0f,
    0.095f,       0.2888f,      0.3053f,  -0.2964f, -0.2959f, 0.3572f,  0.4982f,  0.0f,
    0.0f,         -0.09899998f, 0.2612f,  1.1042f,  0.8483f,  0.5186f,  -0.1457f, 0.1422f,
    0.0f,         0.0f,         0.1675f,  0.5092f,  0.8352f,  0.38f,    0.6125f,  0.2508f,
    0.3498f,      0.0f,         0.0f,     -0.5762f, -0.6499f, -0.7918f, -0.485f,  -0.5538f,
    -0.3201f,     -0.1782f,     0.0f,     0.0f}; // [1, 2, 6, 9]
// ct_outshape_even
const std::vector<float> ct_outshape_even_y = {
    0.195f,   0.6278f,  0.5625f,  -1.1025f, -0.5625f, 0.3652f,      0.1649f,  0.6522f,  -0.5163f,
    -0.6306f, -0.285f,  0.5686f,  0.2925f,  -0.6533f, -0.3525f,     -0.2029f, 1.4347f,  0.5289f,
    0.4013f,  -0.3856f, -0.5025f, -0.1851f, -0.375f,  -0.09500001f, -0.2475f, -0.1976f, -0.4631f,
    -0.57f,   -0.6075f, 0.57f,    0.6094f,  1.1088f,  0.3609f,      -0.5482f, -0.2857f, 0.2888f,
    0.3053f,  -0.2964f, -0.2959f, 0.3572f,  0.2612f,  1.1042f,      0.8483f,  0.5186f,  -0.1457f,
    0.5092f,  0.8352f,  0.38f,    0.6125f,  0.2508f}; // [1, 2, 5, 5]
// ct_same
const std::vector<float> ct_same_x = {0.43f,  0.27f, -0.71f, 0.97f, 0.67f,
                                      -0.74f, 0.26f, -0.74f, -1.19f}; // [1, 1, 3, 3]
const std::vector<float> ct_same_w = {-0.4f,  -0.99f, 0.51f, 0.78f, 0.26f,
                                      -1.17f, 1.15f,  0.28f, -1.21f}; // [1, 1, 3, 3]
const std::vector<float> ct_same_upper = {
    -0.172f,  -0.4257f, 0.1113f,      -0.2673f, 0.4217f,  0.7029f,    0.3354f,     0.1118f,
    -0.2925f, 0.0702f,  -0.8697f,     -0.1846f, 0.1065f,  -0.8399f,   0.01689994f, -0.5877f,
    -0.5055f, 0.5338f,  0.7566f,      0.2522f,  -0.6123f, 0.1742f,    -1.3611f,    -0.1924f,
    1.0115f,  0.0142f,  0.02539992f,  0.9202f,  -1.5631f, 0.9709001f, 0.2028f,     0.0676f,
    -0.8814f, -0.1924f, -0.06240004f, -0.3094f}; // [1, 1, 6, 6]
const std::vector<float> ct_same_lower = {
    0.1118f,  -0.2925f,    0.0702f,  -0.8697f,     -0.1846f, 0.8306999f, -0.8399f,   0.01689994f,
    -0.5877f, -0.5055f,    0.5338f,  0.4817f,      0.2522f,  -0.6123f,   0.1742f,    -1.3611f,
    -0.1924f, 0.8658f,     0.0142f,  0.02539992f,  0.9202f,  -1.5631f,   0.9709001f, 0.2885f,
    0.0676f,  -0.8814f,    -0.1924f, -0.06240004f, -0.3094f, 1.3923f,    0.0728f,    -1.1656f,
    -0.2072f, -0.4730999f, -0.3332f, 1.4399f}; // [1, 1, 6, 6]
// ct_1d
const std::vector<float> ct_1d_x = {-1.03f, -0.49f, -1.07f, 1.22f,  -1.22f,
                                    0.7f,   -0.86f, -1.03f, -0.89f, -0.97f}; // [1, 2, 5]
const std::vector<float> ct_1d_w = {0.76f, 1.02f,  1.12f, -0.26f, -0.56f, -1.21f,
                                    0.76f, -0.57f, 0.79f, 0.47f,  -1.06f, -0.59f,
                                    0.79f, -0.26f, 0.92f, -0.46f, 1.18f,  0.62f}; // [2, 3, 3]
const std::vector<float> ct_1d_b = {-1.1f, -0.43f, 0.3f};                         // [3]
const std::vector<float> ct_1d_y = {
    -2.8926f,    -3.4432f,    -0.6882001f, -2.4387f,     -1.0996f,    -1.1818f,
    1.0878f,     -0.5916001f, -1.3162f,    -1.8941f,     -0.0352f,    0.9083f,
    0.06799999f, -1.1638f,    0.437f,      -1.1032f,     -0.8818001f, -3.1741f,
    0.5054f,     0.1538001f,  1.7131f,     -0.05650002f, -0.4355f,    -0.9597f,
    -0.3054999f, 0.1527f,     -1.4456f,    0.2310001f,   -0.1492f,    -1.2652f}; // [1, 3, 10]
// ct_3d
const std::vector<float> ct_3d_x = {-0.47f, -0.77f, 0.8f,  0.3f,   0.61f,  0.47f, -0.94f,
                                    0.41f,  -0.32f, 1.19f, -0.81f, -0.33f, 0.97f, 0.41f,
                                    -0.5f,  -0.54f, 0.95f, 0.71f,  -0.47f, 0.7f,  -0.37f,
                                    -1.17f, -0.82f, -0.72f}; // [1, 2, 2, 3, 2]
const std::vector<float> ct_3d_w = {
    0.54f, 0.78f,  0.44f,  -0.32f, -1.04f, -0.91f, 0.89f,  -0.83f, -0.29f, 0.61f,
    -1.2f, 0.31f,  1.11f,  1.13f,  -0.3f,  -0.9f,  0.8f,   -0.85f, 0.73f,  0.53f,
    0.55f, 0.81f,  -0.65f, -1.04f, -0.67f, 0.39f,  -0.4f,  0.31f,  0.97f,  0.54f,
    0.45f, -1.08f, -0.82f, -0.33f, 0.79f,  -0.41f, -0.93f, -0.37f, 0.69f,  -1.14f,
    1.05f, 0.32f,  1.21f,  0.91f,  0.97f,  0.99f,  -1.14f, -0.38f}; // [2, 2, 2, 2, 3]
const std::vector<float> ct_3d_y = {
    1.8032f,      2.15f,        0.9221f,    0.9528f,     0.5754f,      0.348f,      -1.5804f,
    -1.8338f,     -0.5646001f,  0.6244f,    0.5319f,     -0.0772f,     0.3568f,     0.1578f,
    -0.04430001f, 0.7253001f,   0.7045f,    -0.4068f,    -0.09999993f, 0.5122001f,  0.3558f,
    -0.9938f,     -0.3336f,     0.3144f,    -0.7945f,    -2.1128f,     -0.7185f,    0.07089996f,
    -0.2035f,     -0.1454f,     0.6075f,    0.8542f,     0.004899996f, 1.0326f,     0.4791f,
    0.9916f,      -0.7696f,     -2.2811f,   -1.7147f,    -0.6473999f,  -0.5666f,    0.1428f,
    -0.07060007f, -0.06090006f, -0.0885f,   0.8680999f,  0.5244f,      0.7857f,     1.9242f,
    -0.04620004f, -0.4626f,     0.4606001f, -1.167f,     -0.4278f,     0.1992f,     0.7408999f,
    0.3489f,      0.2531f,      0.9069999f, -0.1723f,    -1.0181f,     0.1533f,     0.645f,
    -0.4654f,     -0.3774f,     -0.3588f,   -0.2416f,    -0.2214f,     -0.1068f,    2.39f,
    2.1522f,      0.9472f,      -0.3959f,   -2.1103f,    -0.7586f,     -2.4125f,    1.7116f,
    -0.1245f,     2.1843f,      1.6183f,    -1.1643f,    -0.3817001f,  -0.1228998f, -1.3859f,
    -0.3086f,     -0.4293f,     -0.3978f,   -0.3911999f, -0.5939f,     0.05010002f}; // [1, 2, 3, 5,
                                                                                     // 3]
// conv1d
const std::vector<float> conv1d_x = {0.84f,  1.15f, -1.14f, 1.07f,  -0.29f, 0.94f, 0.63f,  -0.77f,
                                     -0.91f, 0.44f, 0.52f,  -0.97f, -1.03f, 1.1f,  -1.03f, -0.29f,
                                     0.37f,  -1.0f, -0.49f, 0.5f,   1.11f}; // [1, 3, 7]
const std::vector<float> conv1d_w = {0.3f,   -0.54f, 0.97f,  0.27f,  -0.46f, -0.3f,  0.55f, 0.91f,
                                     0.56f,  -0.83f, 0.32f,  1.12f,  0.38f,  0.43f,  0.75f, -1.11f,
                                     -1.01f, 1.22f,  -1.01f, -0.63f, -0.66f, 0.96f,  0.52f, -1.1f,
                                     1.16f,  1.01f,  0.77f,  -0.42f, 0.55f,  -0.53f, 0.58f, -0.71f,
                                     0.79f,  0.47f,  -1.05f, -0.98f}; // [4, 3, 3]
const std::vector<float> conv1d_b = {-0.46f, -0.73f, -0.67f, 1.11f};  // [4]
const std::vector<float> conv1d_y = {-0.2706f,   0.5516f,     1.1091f,     -0.01720005f,
                                     0.4997001f, -1.8893f,    0.5647999f,  -2.9031f,
                                     -2.6212f,   -3.769f,     -2.3305f,    -0.732f,
                                     2.156f,     -0.5413002f, -0.2660002f, -1.2472f}; // [1, 4, 4]
// conv1d_same
const std::vector<float> conv1d_same_x = {0.77f,  -1.2f,  -1.02f, -0.53f, 0.47f,  -0.94f, 0.42f,
                                          0.64f,  -0.87f, 0.66f,  -0.25f, -1.13f, 1.13f,  -0.55f,
                                          -0.84f, 1.23f,  1.1f,   0.32f,  0.54f,  0.54f,  -1.07f,
                                          -0.88f, 0.36f,  -0.25f}; // [1, 3, 8]
const std::vector<float> conv1d_same_w = {1.21f, 0.95f, 1.25f, -0.47f, 0.61f, 0.99f,
                                          1.25f, 0.57f, 0.39f, -0.63f, 0.57f, 0.62f}; // [6, 1, 2]
const std::vector<float> conv1d_same_y = {
    -0.03729998f, -0.7877f, 0.9677f,  0.5082f,  1.4419f,     -1.4959f,
    0.3901f,      0.525f,   -0.7782f, 0.9662f,  -0.1423f,    -0.5124f,
    -1.23f,       0.3316f,  0.9337f,  -1.05f,   0.08879998f, 0.8847001f,
    -0.6441f,     0.1404f,  0.9618f,  -0.3556f, -0.3867f,    0.2052f}; // [1, 6, 4]
// conv3d
const std::vector<float> conv3d_x = {-1.12f, -0.83f, -0.53f, 0.44f,  -0.66f, -0.37f, 0.93f,
                                     0.69f,  0.81f,  -0.62f, 0.65f,  -0.36f, 0.7f,   -0.84f,
                                     -0.41f, 0.77f,  -0.58f, 0.95f,  0.62f,  1.09f,  -0.73f,
                                     0.77f,  0.63f,  -1.25f, -0.76f, 0.81f,  -0.28f, -0.97f,
                                     -0.67f, -0.69f, -0.53f, -1.15f, 0.92f,  0.71f,  0.54f,
                                     0.78f,  -0.81f, -1.0f,  -1.08f, 1.07f,  0.33f,  0.89f,
                                     0.56f,  0.77f,  1.21f,  -1.13f, 0.55f,  -0.76f, -0.34f,
                                     0.89f,  -0.38f, -1.02f, -0.33f, -0.58f, 0.93f,  -0.76f,
                                     -0.91f, -0.85f, -0.97f, 0.67f,  -0.65f, 1.08f,  -0.96f,
                                     0.35f,  1.09f,  0.69f,  -0.62f, 1.16f,  -0.8f,  0.5f,
                                     -0.28f, 0.46f,  -0.84f, -0.41f, -1.09f, -1.03f, 0.42f,
                                     -1.02f, 0.59f,  0.72f,  0.47f,  -1.16f, -1.01f, -0.93f,
                                     -0.27f, 0.91f,  -0.34f, -1.08f, 0.36f,  -0.82f, 0.42f,
                                     -1.04f, 0.28f,  -1.05f, -0.94f, 0.74f,  -0.34f, -1.19f,
                                     -0.33f, -0.72f, -1.06f, 0.34f,  0.49f,  1.14f,  0.73f,
                                     -0.44f, 0.5f,   1.01f,  -1.21f, -1.01f, 0.57f,  1.04f,
                                     0.74f,  -0.55f, -0.85f, -0.47f, -0.64f, 0.26f,  -0.61f,
                                     -0.45f}; // [1, 2, 4, 5, 3]
const std::vector<float> conv3d_w = {
    0.56f,  -0.77f, 1.02f,  -1.04f, -1.12f, -0.44f, 0.52f,  -0.75f, -0.99f, 0.44f, -0.43f,
    -0.79f, 0.53f,  -1.01f, 0.52f,  -0.54f, 1.21f,  -1.16f, -0.82f, -0.74f, 0.9f,  -0.79f,
    -1.25f, 0.39f,  1.23f,  -0.87f, -0.97f, 0.55f,  0.85f,  -1.0f,  -0.89f, 1.17f, -1.14f,
    -0.89f, -0.55f, -0.93f, -0.53f, 0.38f,  -0.82f, 0.66f,  0.81f,  1.1f,   0.35f, 0.6f,
    1.22f,  -1.17f, 1.22f,  0.3f,   1.13f,  1.02f,  0.49f,  0.35f,  0.44f,  -1.0f, -1.2f,
    1.04f,  -0.44f, 0.76f,  -0.33f, -0.77f, 0.38f,  -0.45f, 0.36f,  -0.88f, -1.2f, -0.78f,
    -0.59f, -0.76f, -1.24f, 0.88f,  -0.61f, -1.23f};        // [3, 2, 2, 3, 2]
const std::vector<float> conv3d_b = {0.68f, -1.06f, 0.99f}; // [3]
const std::vector<float> conv3d_y = {
    2.0194f,     -0.3848999f, 2.5925f,  -0.5768f, 1.8812f,  -2.2074f,   2.3802f,  1.308f,
    1.8717f,     1.827f,      -1.6799f, 2.2949f,  -3.7657f, -5.1533f,   -0.2796f, -0.3683999f,
    -0.3813998f, -1.4104f,    -2.3046f, 1.7039f,  -1.7838f, -1.8806f,   -1.3634f, -3.5098f,
    0.9746f,     4.3708f,     1.8805f,  1.1504f,  -1.3589f, 0.4221001f, 2.5225f,  -0.5099f,
    3.6139f,     3.0445f,     2.4992f,  4.7651f}; // [1, 3, 2, 2, 3]
// conv3d_group
const std::vector<float> conv3d_group_x = {
    -0.98f, -0.81f, 0.37f,  0.65f,  1.03f,  -0.76f, 0.43f,  1.1f,   -1.21f, 1.23f,  0.44f,
    1.22f,  -0.48f, -0.28f, -1.2f,  1.17f,  -0.54f, -0.42f, 0.65f,  0.76f,  -0.56f, -0.68f,
    1.08f,  -0.81f, -1.08f, -1.25f, -0.58f, 0.34f,  1.02f,  0.4f,   -0.98f, 1.21f,  -0.32f,
    0.7f,   1.09f,  0.4f,   -1.02f, 1.03f,  -0.93f, 0.38f,  -0.29f, -0.91f, 0.5f,   -1.24f,
    0.78f,  -0.31f, 0.95f,  0.88f,  -1.15f, -0.41f, 0.86f,  0.57f,  1.01f,  -0.41f, -1.18f,
    -0.75f, 1.08f,  0.48f,  -0.36f, 0.92f,  0.83f,  -1.13f, -1.25f, -0.53f, 0.99f,  -0.53f,
    -0.98f, 0.74f,  -1.12f, -0.41f, 1.22f,  0.3f,   -0.95f, -0.9f,  0.3f,   0.45f,  0.58f,
    -1.0f,  0.62f,  -0.78f, 0.6f,   0.76f,  0.51f,  -1.1f,  0.87f,  -0.55f, -1.03f, -1.15f,
    0.99f,  1.11f,  -1.07f, 1.12f,  -0.63f, -0.86f, -0.67f, -0.49f, 0.31f,  1.07f,  0.63f,
    1.23f,  -0.63f, -0.88f, -0.69f, -0.28f, -0.48f, 1.03f,  0.42f,  -0.66f, 0.84f,  1.16f,
    -0.76f, 0.69f,  -0.28f, -0.48f, -0.43f, -0.49f, -1.06f, 0.77f,  0.62f,  -0.71f, -0.85f,
    -0.81f, -0.28f, -0.65f, 0.33f,  -0.73f, -1.11f, 1.1f,   0.62f,  0.97f,  -0.25f, 1.01f,
    -1.0f,  -1.11f, 0.71f,  1.2f,   -0.89f, -0.75f, -0.44f, 1.01f,  -0.62f, 0.46f,  0.57f,
    -0.46f}; // [1, 4, 3, 4, 3]
const std::vector<float> conv3d_group_w = {-1.11f, 0.53f,  -0.32f, 1.01f,  -0.7f, 0.79f,  -0.98f,
                                           -1.1f,  -1.02f, 0.98f,  -0.49f, 0.97f, -0.31f, 0.66f,
                                           0.86f,  0.51f,  -0.54f, 0.93f,  1.09f, -1.06f, -0.25f,
                                           1.17f,  1.06f,  -1.21f, -0.73f, 0.91f, 0.98f,  0.72f,
                                           -1.06f, -0.69f, 0.38f,  -0.89f}; // [2, 2, 2, 2, 2]
const std::vector<float> conv3d_group_y = {
    -1.9686f, -0.549f,  -0.9607f,    -0.8414f,    -1.8769f, -1.3341f, -2.6284f,    3.7265f,
    -1.1112f, 2.387f,   -0.7715001f, 1.6095f,     -0.5965f, -1.7045f, -1.1246f,    -3.4332f,
    1.6926f,  -1.7863f, -2.8497f,    -2.2197f,    2.0164f,  -0.5828f, -0.3444f,    4.8869f,
    3.4751f,  -1.89f,   0.7644f,     -0.3745998f, 2.7823f,  -1.5315f, -0.7170002f, 2.5143f,
    1.2585f,  -2.5546f, 3.8396f,     -0.4227999f}; // [1, 2, 3, 2, 3]
// maxpool1d
const std::vector<float> maxpool1d_x = {-0.89f, 0.63f,  -0.91f, -0.41f, 1.21f, 0.6f,
                                        1.24f,  -0.49f, 0.84f,  -0.66f, 0.39f, -0.79f,
                                        -0.77f, -1.02f, 1.18f,  -0.34f}; // [1, 2, 8]
const std::vector<float> maxpool1d_y = {0.63f, 0.63f, 1.21f,  1.24f, -0.49f,
                                        0.84f, 0.39f, -0.77f, 1.18f, -0.34f}; // [1, 2, 5]
// avgpool1d
const std::vector<float> avgpool1d_x = {-0.54f, -1.21f, -1.02f, -1.24f, -0.46f,
                                        0.39f,  -1.16f, -0.32f, -0.33f, 0.79f,
                                        0.34f,  -0.63f, -0.92f, 0.68f}; // [1, 2, 7]
const std::vector<float> avgpool1d_incl = {-0.5833333f, -1.156667f,  -0.4366667f,
                                           -0.2566667f, -0.2166667f, 0.2666667f,
                                           -0.4033333f, -0.08000001f}; // [1, 2, 4]
const std::vector<float> avgpool1d_excl = {-0.875f, -1.156667f, -0.4366667f, -0.385f,
                                           -0.325f, 0.2666667f, -0.4033333f, -0.12f}; // [1, 2, 4]
// maxpool3d
const std::vector<float> maxpool3d_x = {1.11f,  -0.62f, -0.81f, 1.21f,  0.99f,  1.07f,  0.35f,
                                        1.18f,  -0.86f, -0.85f, -0.34f, 0.6f,   0.91f,  -0.69f,
                                        0.8f,   0.95f,  0.84f,  -0.3f,  0.81f,  -1.02f, -1.16f,
                                        -0.34f, -1.15f, 0.71f,  -0.7f,  1.25f,  -0.41f, 0.96f,
                                        -0.41f, 1.06f,  0.29f,  0.78f,  0.42f,  -0.56f, -0.3f,
                                        -0.49f, -0.92f, 1.03f,  0.95f,  -0.58f, -0.74f, 0.77f,
                                        0.55f,  0.71f,  -1.23f, -0.75f, -0.65f, -0.98f, 1.11f,
                                        0.28f,  -0.54f, 1.04f,  -0.71f, -0.26f, -0.67f, -0.58f,
                                        0.85f,  0.57f,  1.23f,  -0.84f, -0.38f, 0.77f,  0.61f,
                                        0.26f,  -0.35f, -1.03f, -0.68f, 0.45f,  0.87f,  -0.89f,
                                        -0.52f, 0.38f,  -0.72f, -0.64f, -0.66f, 0.63f,  -0.54f,
                                        -0.8f,  0.68f,  -1.03f, -0.95f, 1.03f,  -0.54f, 0.46f,
                                        -0.75f, -0.38f, 0.42f,  0.5f,   0.29f,  0.48f,  0.88f,
                                        0.88f,  -0.78f, 0.99f,  -1.07f, -0.62f, -1.05f, -1.13f,
                                        0.84f,  -0.91f, -0.54f, 0.64f,  -0.38f, -0.46f, 1.01f,
                                        0.83f,  0.88f,  1.21f,  0.34f,  0.38f,  -0.66f, 0.47f,
                                        -0.78f, 1.08f,  0.85f,  0.44f,  0.63f,  0.53f,  -0.95f,
                                        -0.5f}; // [1, 2, 4, 5, 3]
const std::vector<float> maxpool3d_y = {
    1.11f, 0.84f, 1.21f, 1.18f, 1.06f, 1.25f, 0.42f, 0.78f, 1.11f, 1.03f, 0.85f, 1.23f, 0.63f,
    0.77f, 1.03f, 0.45f, 0.5f,  0.29f, 1.21f, 0.88f, 1.08f, 0.38f, 1.01f, 0.44f}; // [1, 2, 2, 3, 2]
// avgpool3d
const std::vector<float> avgpool3d_x = {0.5f,   0.7f,   0.66f,  0.51f,  1.12f,  0.44f,  0.27f,
                                        -1.2f,  -0.93f, 0.74f,  1.22f,  -0.64f, -0.33f, 0.6f,
                                        -0.41f, -1.23f, -1.13f, 0.74f,  0.65f,  -0.7f,  -0.97f,
                                        -0.5f,  0.87f,  0.39f,  -0.45f, -0.33f, -1.2f,  -0.31f,
                                        -0.85f, -0.97f, 1.22f,  -1.07f, 0.78f,  -0.58f, 0.6f,
                                        0.33f,  0.81f,  0.42f,  -0.55f, -1.09f, -0.61f, -0.59f,
                                        0.96f,  0.28f,  0.72f,  0.98f,  1.02f,  -0.49f, 0.56f,
                                        -0.39f, -0.85f, -0.41f, -1.05f, -0.75f, -0.31f, -0.64f,
                                        0.87f,  -0.44f, -0.68f, 0.34f,  0.98f,  -0.64f, -0.59f,
                                        -0.65f, -0.27f, 0.72f,  1.14f,  -0.41f, -1.09f, -0.53f,
                                        -1.02f, 1.08f,  1.15f,  -1.22f, -0.68f, 0.94f,  0.58f,
                                        -1.05f, 0.68f,  0.76f,  1.01f,  0.42f,  0.7f,   -1.15f,
                                        -0.94f, -0.54f, -0.67f, 0.82f,  1.22f,  0.81f,  1.22f,
                                        0.42f,  0.49f,  0.82f,  -0.9f,  1.21f,  1.14f,  -0.62f,
                                        -0.59f, 1.1f,   0.64f,  -0.92f, -0.69f, 0.86f,  -1.03f,
                                        -1.22f, 0.62f,  -0.92f, 1.06f,  -0.95f, -1.06f, -0.52f,
                                        -0.57f, 0.41f,  1.07f,  -1.12f, 1.08f,  1.01f,  -0.77f,
                                        0.8f}; // [1, 2, 3, 4, 5]
const std::vector<float> avgpool3d_excl = {
    0.4775f,      -0.24f,   0.93f,    -0.1783333f, -0.07833335f, -0.1233333f,
    -0.275f,      0.17625f, -0.2725f, 0.06083333f, -0.3283333f,  -0.3033333f,
    0.55f,        -0.685f,  -0.4f,    0.5733333f,  -0.3233333f,  -0.15f,
    -0.08250003f, 0.2375f,  -0.5275f, 0.04666669f, 0.1966667f,   0.3216667f}; // [1, 2, 2, 2, 3]
const std::vector<float> avgpool3d_incl_ceil = {
    0.1591667f,  -0.08f,      0.155f,       -0.08916666f, -0.03916667f, -0.03083333f, -0.295f,
    0.17375f,    -0.0875f,    -0.1833334f,  0.1175f,      -0.09083334f, 0.06083333f,  -0.3283333f,
    -0.1516667f, 0.17125f,    -0.15625f,    -0.09375f,    0.1833333f,   -0.2283333f,  -0.06666666f,
    0.2866667f,  -0.1616666f, -0.03750001f, 0.19f,        -0.04624999f, 0.095f,       -0.05500002f,
    0.1583333f,  -0.1758333f, 0.04666666f,  0.1966667f,   0.1608333f,   0.28875f,     -0.12125f,
    0.2375f}; // [1, 2, 2, 3, 3]

// ---- helpers ---------------------------------------------------------------------------------

TensorData f32(Shape s, const std::vector<float>& v) {
    return TensorData::from_vector<float>(std::move(s), v);
}

/// One `op` node named "win" of `opset`: x is a graph input, the other operands initializers
/// (or graph inputs with `runtime_weights`, so that import cannot reshape them).
ModelBuilder one_node(const std::string& op, const std::vector<TensorData>& ins,
                      const std::function<void(NodeRef&)>& attrs, bool runtime_weights = false,
                      int opset = 17) {
    ModelBuilder m(opset);
    const char* names[] = {"x", "w", "b"};
    std::vector<std::string> in_names;
    for (size_t i = 0; i < ins.size(); ++i) {
        in_names.push_back(names[i]);
        if (i == 0 || runtime_weights)
            m.input(names[i], DType::F32, ins[i].shape());
        else
            m.initializer(names[i], ins[i]);
    }
    NodeRef n = m.node(op, in_names, {"y"}, "win");
    attrs(n);
    m.output("y");
    return m;
}

Graph import_model(const ModelBuilder& m) { return import_onnx_bytes(m.bytes(), "win.onnx"); }

/// Imports and evaluates the model; feeds are x (and w, b with runtime weights).
TensorData eval_model(const ModelBuilder& m, const std::vector<TensorData>& feeds) {
    Graph g = import_model(m);
    std::vector<TensorData> out = evaluate(g, feeds);
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

void expect_values(const TensorData& got, Shape shape, const std::vector<float>& want) {
    ASSERT_EQ(got.shape(), shape);
    EXPECT_TENSOR_NEAR(got, f32(shape, want), 1e-5, 1e-5);
}

std::string import_error(const ModelBuilder& m) {
    try {
        import_model(m);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

/// The ops of the imported graph in node order.
std::vector<Op> ops_of(const Graph& g) {
    std::vector<Op> ops;
    for (NodeId id : g.topological_order())
        ops.push_back(g.node(id).op);
    return ops;
}

const Node& only_node(const Graph& g, Op op) {
    const Node* found = nullptr;
    for (NodeId id : g.node_ids())
        if (g.node(id).op == op) {
            EXPECT_EQ(found, nullptr) << "two " << op_name(op) << " nodes";
            found = &g.node(id);
        }
    TESSERA_CHECK(found) << "no " << op_name(op) << " node";
    return *found;
}

// ---- ConvTranspose ---------------------------------------------------------------------------

TEST(WindowConvTransposeEval, Stride2Kernel2WithBias) {
    const TensorData x = f32({1, 2, 3, 3}, ct_s2k2_x), w = f32({2, 3, 2, 2}, ct_s2k2_w),
                     b = f32({3}, ct_s2k2_b);
    ModelBuilder m = one_node("ConvTranspose", {x, w, b}, [](NodeRef& n) {
        n.ints("strides", {2, 2});
    });
    expect_values(eval_model(m, {x}), {1, 3, 6, 6}, ct_s2k2_y);
}

TEST(WindowConvTransposeEval, Kernel3Stride2Pad1OutputPadding1) {
    const TensorData x = f32({1, 2, 3, 4}, ct_k3s2p1op1_x), w = f32({2, 2, 3, 3}, ct_k3s2p1op1_w);
    ModelBuilder m = one_node("ConvTranspose", {x, w}, [](NodeRef& n) {
        n.ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("output_padding", {1, 1});
        n.ints("kernel_shape", {3, 3});
    });
    expect_values(eval_model(m, {x}), {1, 2, 6, 8}, ct_k3s2p1op1_y);
}

TEST(WindowConvTransposeEval, Group2DilationsAsymmetricPads) {
    const TensorData x = f32({1, 4, 3, 3}, ct_group2_x), w = f32({4, 1, 2, 3}, ct_group2_w),
                     b = f32({2}, ct_group2_b);
    ModelBuilder m = one_node("ConvTranspose", {x, w, b}, [](NodeRef& n) {
        n.i("group", 2).ints("dilations", {2, 1}).ints("pads", {1, 0, 0, 2});
        n.ints("strides", {1, 2});
    });
    expect_values(eval_model(m, {x}), {1, 2, 4, 5}, ct_group2_y);
}

TEST(WindowConvTransposeEval, OutputShapeResolvesPadsAndOutputPadding) {
    // Natural extent 7 x 7. Height 6: total padding 1, the odd unit at the begin (NOTSET);
    // width 9: negative total, so no pads and output_padding 2. Given pads are ignored.
    const TensorData x = f32({1, 1, 3, 3}, ct_outshape_x), w = f32({1, 2, 3, 3}, ct_outshape_w);
    ModelBuilder m = one_node("ConvTranspose", {x, w}, [](NodeRef& n) {
        n.ints("strides", {2, 2}).ints("output_shape", {6, 9}).ints("pads", {2, 2, 2, 2});
    });
    const Graph g = import_model(m);
    const Node& ct = only_node(g, Op::ConvTranspose);
    EXPECT_EQ(ct.attr_ints("pads"), (std::vector<int64_t>{1, 0, 0, 0}));
    EXPECT_EQ(ct.attr_ints("output_padding"), (std::vector<int64_t>{0, 2}));
    expect_values(eval_model(m, {x}), {1, 2, 6, 9}, ct_outshape_y);
    ModelBuilder even = one_node("ConvTranspose", {x, w}, [](NodeRef& n) {
        n.ints("strides", {2, 2}).ints("output_shape", {5, 5});
    });
    expect_values(eval_model(even, {x}), {1, 2, 5, 5}, ct_outshape_even_y);
}

TEST(WindowConvTransposeEval, SameUpperAndSameLower) {
    const TensorData x = f32({1, 1, 3, 3}, ct_same_x), w = f32({1, 1, 3, 3}, ct_same_w);
    for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
        ModelBuilder m = one_node("ConvTranspose", {x, w}, [&](NodeRef& n) {
            n.ints("strides", {2, 2}).s("auto_pad", mode);
        });
        const bool upper = std::string(mode) == "SAME_UPPER";
        EXPECT_EQ(only_node(import_model(m), Op::ConvTranspose).attr_ints("pads"),
                  upper ? (std::vector<int64_t>{0, 0, 1, 1}) : (std::vector<int64_t>{1, 1, 0, 0}));
        expect_values(eval_model(m, {x}), {1, 1, 6, 6}, upper ? ct_same_upper : ct_same_lower);
    }
}

TEST(WindowConvTransposeEval, ValidIgnoresPads) {
    const TensorData x = f32({1, 2, 3, 3}, ct_s2k2_x), w = f32({2, 3, 2, 2}, ct_s2k2_w),
                     b = f32({3}, ct_s2k2_b);
    ModelBuilder m = one_node("ConvTranspose", {x, w, b}, [](NodeRef& n) {
        n.ints("strides", {2, 2}).s("auto_pad", "VALID").ints("pads", {1, 1, 1, 1});
    });
    expect_values(eval_model(m, {x}), {1, 3, 6, 6}, ct_s2k2_y);
}

TEST(WindowConvTransposeEval, OneDLiftedToTwoD) {
    const TensorData x = f32({1, 2, 5}, ct_1d_x), w = f32({2, 3, 3}, ct_1d_w),
                     b = f32({3}, ct_1d_b);
    auto attrs = [](NodeRef& n) {
        n.ints("strides", {2}).ints("pads", {1, 1}).ints("output_padding", {1});
    };
    ModelBuilder m = one_node("ConvTranspose", {x, w, b}, attrs);
    const Graph g = import_model(m);
    EXPECT_EQ(ops_of(g), (std::vector<Op>{Op::Unsqueeze, Op::ConvTranspose, Op::Squeeze}));
    const Node& ct = only_node(g, Op::ConvTranspose);
    EXPECT_EQ(ct.attr_ints("pads"), (std::vector<int64_t>{0, 1, 0, 1}));
    EXPECT_EQ(ct.attr_ints("output_padding"), (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(g.value(ct.inputs[1]).shape, (Shape{2, 3, 1, 3}));
    expect_values(eval_model(m, {x}), {1, 3, 10}, ct_1d_y);
    // A weight known only at run time gets an Unsqueeze node.
    ModelBuilder r = one_node("ConvTranspose", {x, w, b}, attrs, /*runtime_weights=*/true);
    EXPECT_EQ(ops_of(import_model(r)).size(), 4u);
    expect_values(eval_model(r, {x, w, b}), {1, 3, 10}, ct_1d_y);
}

TEST(WindowConvTransposeEval, ThreeD) {
    const TensorData x = f32({1, 2, 2, 3, 2}, ct_3d_x), w = f32({2, 2, 2, 2, 3}, ct_3d_w);
    ModelBuilder m = one_node("ConvTranspose", {x, w}, [](NodeRef& n) {
        n.ints("strides", {2, 2, 1}).ints("pads", {0, 1, 1, 1, 0, 0});
    });
    expect_values(eval_model(m, {x}), {1, 2, 3, 5, 3}, ct_3d_y);
}

// ---- 1-D and 3-D Conv and pools --------------------------------------------------------------

TEST(WindowConvEval, OneDStride2Pad1WithBias) {
    const TensorData x = f32({1, 3, 7}, conv1d_x), w = f32({4, 3, 3}, conv1d_w),
                     b = f32({4}, conv1d_b);
    auto attrs = [](NodeRef& n) { n.ints("pads", {1, 1}).ints("strides", {2}); };
    ModelBuilder m = one_node("Conv", {x, w, b}, attrs);
    const Graph g = import_model(m);
    EXPECT_EQ(ops_of(g), (std::vector<Op>{Op::Unsqueeze, Op::Conv, Op::Squeeze}));
    const Node& conv = only_node(g, Op::Conv);
    EXPECT_EQ(conv.attr_ints("kernel_shape"), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(conv.attr_ints("strides"), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(conv.attr_ints("pads"), (std::vector<int64_t>{0, 1, 0, 1}));
    expect_values(eval_model(m, {x}), {1, 4, 4}, conv1d_y);
    ModelBuilder r = one_node("Conv", {x, w, b}, attrs, /*runtime_weights=*/true);
    expect_values(eval_model(r, {x, w, b}), {1, 4, 4}, conv1d_y);
}

TEST(WindowConvEval, OneDSameUpperDilatedGrouped) {
    const TensorData x = f32({1, 3, 8}, conv1d_same_x), w = f32({6, 1, 2}, conv1d_same_w);
    ModelBuilder m = one_node("Conv", {x, w}, [](NodeRef& n) {
        n.s("auto_pad", "SAME_UPPER").ints("strides", {2}).ints("dilations", {2}).i("group", 3);
    });
    expect_values(eval_model(m, {x}), {1, 6, 4}, conv1d_same_y);
}

TEST(WindowConvEval, ThreeDPadsStridesDilations) {
    const TensorData x = f32({1, 2, 4, 5, 3}, conv3d_x), w = f32({3, 2, 2, 3, 2}, conv3d_w),
                     b = f32({3}, conv3d_b);
    ModelBuilder m = one_node("Conv", {x, w, b}, [](NodeRef& n) {
        n.ints("pads", {1, 0, 1, 0, 1, 0}).ints("strides", {2, 1, 1}).ints("dilations", {1, 2, 1});
    });
    expect_values(eval_model(m, {x}), {1, 3, 2, 2, 3}, conv3d_y);
}

TEST(WindowConvEval, ThreeDGroupedSameLower) {
    const TensorData x = f32({1, 4, 3, 4, 3}, conv3d_group_x),
                     w = f32({2, 2, 2, 2, 2}, conv3d_group_w);
    ModelBuilder m = one_node("Conv", {x, w}, [](NodeRef& n) {
        n.i("group", 2).s("auto_pad", "SAME_LOWER").ints("strides", {1, 2, 1});
    });
    const Graph g = import_model(m);
    EXPECT_EQ(only_node(g, Op::Conv).attr_ints("pads"), (std::vector<int64_t>{1, 0, 1, 0, 0, 0}));
    expect_values(eval_model(m, {x}), {1, 2, 3, 2, 3}, conv3d_group_y);
}

TEST(WindowPoolEval, MaxPoolOneDCeilMode) {
    const TensorData x = f32({1, 2, 8}, maxpool1d_x);
    ModelBuilder m = one_node("MaxPool", {x}, [](NodeRef& n) {
        n.ints("kernel_shape", {3}).ints("strides", {2}).ints("pads", {1, 1}).i("ceil_mode", 1);
    });
    expect_values(eval_model(m, {x}), {1, 2, 5}, maxpool1d_y);
}

TEST(WindowPoolEval, AveragePoolOneDWithAndWithoutPadInCount) {
    const TensorData x = f32({1, 2, 7}, avgpool1d_x);
    for (int include : {0, 1}) {
        ModelBuilder m = one_node("AveragePool", {x}, [&](NodeRef& n) {
            n.ints("kernel_shape", {3}).ints("strides", {2}).ints("pads", {1, 1});
            n.i("count_include_pad", include);
        });
        expect_values(eval_model(m, {x}), {1, 2, 4}, include ? avgpool1d_incl : avgpool1d_excl);
    }
}

TEST(WindowPoolEval, MaxPoolThreeDDilated) {
    const TensorData x = f32({1, 2, 4, 5, 3}, maxpool3d_x);
    ModelBuilder m = one_node("MaxPool", {x}, [](NodeRef& n) {
        n.ints("kernel_shape", {2, 2, 2}).ints("strides", {2, 2, 1});
        n.ints("pads", {0, 1, 0, 1, 0, 1}).ints("dilations", {1, 1, 2});
    });
    expect_values(eval_model(m, {x}), {1, 2, 2, 3, 2}, maxpool3d_y);
}

TEST(WindowPoolEval, AveragePoolThreeD) {
    const TensorData x = f32({1, 2, 3, 4, 5}, avgpool3d_x);
    ModelBuilder ex = one_node("AveragePool", {x}, [](NodeRef& n) {
        n.ints("kernel_shape", {2, 3, 2}).ints("strides", {2, 2, 2});
        n.ints("pads", {1, 1, 0, 0, 1, 1});
    });
    expect_values(eval_model(ex, {x}), {1, 2, 2, 2, 3}, avgpool3d_excl);
    ModelBuilder in = one_node("AveragePool", {x}, [](NodeRef& n) {
        n.ints("kernel_shape", {2, 3, 2}).ints("strides", {2, 2, 2});
        n.ints("pads", {1, 1, 0, 0, 1, 1}).i("count_include_pad", 1).i("ceil_mode", 1);
    });
    expect_values(eval_model(in, {x}), {1, 2, 2, 3, 3}, avgpool3d_incl_ceil);
}

/// 2-D average pooling by its definition, written apart from the evaluator: the input padded
/// with zeros into a larger plane, each window's taps summed over the padded plane, divided by
/// the taps inside the input (count_include_pad 0) or inside the padded plane (1); a ceil-mode
/// window's taps past the padded plane count for nothing.
TensorData avg_pool_2d_by_definition(const TensorData& x, const std::array<int64_t, 2>& k,
                                     const std::array<int64_t, 2>& s,
                                     const std::array<int64_t, 2>& d,
                                     const std::array<int64_t, 4>& pads, bool ceil, bool include) {
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t PH = H + pads[0] + pads[2], PW = W + pads[1] + pads[3];
    std::vector<double> plane(static_cast<size_t>(PH * PW));
    std::vector<char> inside(plane.size());
    auto out_dim = [&](int64_t padded, int64_t in, int64_t kk, int64_t ss, int64_t dd, int64_t pb) {
        const int64_t span = padded - ((kk - 1) * dd + 1);
        int64_t o = (ceil ? (span + ss - 1) / ss : span / ss) + 1;
        if (ceil && (o - 1) * ss >= in + pb)
            --o; // a window must start inside the input or the front padding
        return o;
    };
    const int64_t OH = out_dim(PH, H, k[0], s[0], d[0], pads[0]);
    const int64_t OW = out_dim(PW, W, k[1], s[1], d[1], pads[1]);
    TensorData y(DType::F32, {N, C, OH, OW});
    for (int64_t p = 0; p < N * C; ++p) {
        std::fill(plane.begin(), plane.end(), 0.0);
        std::fill(inside.begin(), inside.end(), 0);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) {
                const size_t at = static_cast<size_t>((h + pads[0]) * PW + w + pads[1]);
                plane[at] = x.data<float>()[(p * H + h) * W + w];
                inside[at] = 1;
            }
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
                double sum = 0;
                int64_t taps = 0;
                for (int64_t i = 0; i < k[0]; ++i)
                    for (int64_t j = 0; j < k[1]; ++j) {
                        const int64_t ph = oh * s[0] + i * d[0], pw = ow * s[1] + j * d[1];
                        if (ph >= PH || pw >= PW)
                            continue;
                        const size_t at = static_cast<size_t>(ph * PW + pw);
                        sum += plane[at];
                        taps += include || inside[at] ? 1 : 0;
                    }
                y.data<float>()[(p * OH + oh) * OW + ow] = static_cast<float>(sum / taps);
            }
    }
    return y;
}

// AveragePool has dilations from opset 19.
TEST(WindowPoolEval, AveragePoolDilatedMatchesItsDefinition) {
    const TensorData x = testing::random_tensor({2, 3, 9, 11}, 41);
    for (int include : {0, 1})
        for (int ceil : {0, 1}) {
            SCOPED_TRACE("include " + std::to_string(include) + " ceil " + std::to_string(ceil));
            ModelBuilder m = one_node(
                "AveragePool", {x},
                [&](NodeRef& n) {
                    n.ints("kernel_shape", {3, 2}).ints("strides", {2, 1});
                    n.ints("dilations", {2, 3}).ints("pads", {1, 2, 2, 1});
                    n.i("ceil_mode", ceil).i("count_include_pad", include);
                },
                false, 19);
            const TensorData want =
                avg_pool_2d_by_definition(x, {3, 2}, {2, 1}, {2, 3}, {1, 2, 2, 1}, ceil, include);
            const TensorData got = eval_model(m, {x});
            ASSERT_EQ(got.shape(), want.shape());
            EXPECT_TENSOR_NEAR(got, want, 1e-6, 1e-6);
        }
    // Before opset 19 the attribute does not exist.
    ModelBuilder old = one_node("AveragePool", {x}, [](NodeRef& n) {
        n.ints("kernel_shape", {3, 2}).ints("dilations", {2, 3});
    });
    EXPECT_NE(import_error(old).find("dilations"), std::string::npos) << import_error(old);
}

// ---- refusals --------------------------------------------------------------------------------

TEST(WindowRefusals, OneCleanErrorNamingTheNode) {
    const TensorData x6 = testing::random_tensor({1, 2, 2, 2, 2, 3}, 1);
    EXPECT_EQ(import_error(one_node("Conv", {x6, testing::random_tensor({2, 2, 1, 1, 1, 1}, 2)},
                                    [](NodeRef&) {})),
              "node 'win' (Conv, opset 17): input 'x' has shape [1,2,2,2,2,3]: only 1-D, 2-D "
              "and 3-D (3-D to 5-D input) Conv is supported");
    const TensorData x = f32({1, 2, 3, 3}, ct_s2k2_x);
    EXPECT_EQ(import_error(one_node("ConvTranspose", {x, testing::random_tensor({3, 2, 2, 2}, 3)},
                                    [](NodeRef&) {})),
              "node 'win' (ConvTranspose): X [1,2,3,3] and W [3,2,2,2] do not match group 1 "
              "(W is [C, M / group, kernel...])");
    EXPECT_EQ(import_error(one_node("ConvTranspose", {x, testing::random_tensor({2, 2, 2}, 4)},
                                    [](NodeRef&) {})),
              "node 'win' (ConvTranspose, opset 17): weight 'w' must have rank 4, got shape "
              "[2,2,2]");
    EXPECT_EQ(import_error(one_node("ConvTranspose", {x, testing::random_tensor({2, 2, 2, 2}, 5)},
                                    [](NodeRef& n) {
                                        n.ints("output_shape", {1, 6, 6});
                                    })),
              "node 'win' (ConvTranspose, opset 17): output_shape has 3 values, expected 2");
    EXPECT_EQ(import_error(one_node("ConvTranspose", {x, testing::random_tensor({2, 2, 2, 2}, 6)},
                                    [](NodeRef& n) {
                                        n.ints("pads", {3, 3, 3, 3});
                                    })),
              "node 'win' (ConvTranspose): output extent -2 is not positive (X [1,2,3,3], "
              "pads [3,3,3,3])");
    EXPECT_EQ(import_error(one_node("ConvTranspose", {x, testing::random_tensor({2, 2, 2, 2}, 7)},
                                    [](NodeRef& n) { n.ints("strides", {2}); })),
              "node 'win' (ConvTranspose, opset 17): kernel_shape, strides, dilations and "
              "output_padding must have 2 values (one per spatial dim)");
    const TensorData x1 = f32({1, 3, 7}, conv1d_x);
    EXPECT_EQ(import_error(one_node("MaxPool", {x1},
                                    [](NodeRef& n) {
                                        n.ints("kernel_shape", {3, 3});
                                    })),
              "node 'win' (MaxPool, opset 17): kernel_shape has 2 values, expected 1 (one per "
              "spatial dim)");
    EXPECT_EQ(import_error(one_node("Conv", {x1, f32({4, 3, 3}, conv1d_w)},
                                    [](NodeRef& n) {
                                        n.ints("strides", {1, 1});
                                    })),
              "node 'win' (Conv, opset 17): strides and dilations must have 1 value and pads 2 "
              "(one spatial dim)");
}

// ---- fusion ----------------------------------------------------------------------------------

// ConvTranspose is an out-fusable anchor like Conv: a bias Add and a Relu after it join its
// group (one kernel), and so does the epilogue of a 3-D Conv.
TEST(WindowFusion, EpiloguesJoinConvTransposeAnd3dConv) {
    for (bool three_d : {false, true}) {
        GraphBuilder b;
        const Shape xs = three_d ? Shape{1, 3, 4, 5, 3} : Shape{1, 3, 4, 5};
        const ValueId x = b.input("x", xs);
        ValueId y;
        if (three_d) {
            y = b.op(Op::Conv, {x, b.constant_f32({4, 3, 2, 2, 2}, 1)},
                     {{"kernel_shape", Is({2, 2, 2})}, {"pads", Is({0, 0, 0, 1, 1, 1})}});
        } else {
            y = b.op(Op::ConvTranspose, {x, b.constant_f32({3, 4, 2, 2}, 1)},
                     {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}});
        }
        const Shape bias = three_d ? Shape{1, 4, 1, 1, 1} : Shape{1, 4, 1, 1};
        const ValueId z = b.op(Op::Relu, {b.op(Op::Add, {y, b.constant_f32(bias, 2)})});
        const Graph g = b.finish({z});
        const std::vector<FusedGroup> groups = fuse_ops(g);
        ASSERT_EQ(groups.size(), 1u);
        ASSERT_NE(groups[0].anchor, kNoNode);
        EXPECT_EQ(g.node(groups[0].anchor).op, three_d ? Op::Conv : Op::ConvTranspose);
        EXPECT_EQ(groups[0].nodes.size(), 3u) << groups[0].pattern;
    }
}

// ---- kernels against the evaluator (op_case.h) -----------------------------------------------

Attributes ct_attrs(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> d,
                    std::vector<int64_t> pads, std::vector<int64_t> op, int64_t group) {
    return {{"kernel_shape", Is(std::move(k))},    {"strides", Is(std::move(s))},
            {"dilations", Is(std::move(d))},       {"pads", Is(std::move(pads))},
            {"output_padding", Is(std::move(op))}, {"group", I(group)}};
}

std::vector<OpCase> window_cases() {
    std::vector<OpCase> cs;
    cs.push_back({"WindowConvTransposeStride2Kernel2", {Op::ConvTranspose}, [](Case& c) {
                      const ValueId x = c.input(floats({1, 7, 5, 6}, 1));
                      const ValueId w = c.constant(floats({7, 5, 2, 2}, 2));
                      const ValueId b = c.constant(floats({5}, 3));
                      return std::vector<ValueId>{
                          c.op(Op::ConvTranspose, {x, w, b},
                               ct_attrs({2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 1))};
                  }});
    cs.push_back(
        {"WindowConvTransposeK3S2P1OutputPadding1Relu", {Op::ConvTranspose, Op::Relu}, [](Case& c) {
             const ValueId x = c.input(floats({2, 3, 4, 7}, 4));
             const ValueId w = c.constant(floats({3, 4, 3, 3}, 5));
             const ValueId y = c.op(Op::ConvTranspose, {x, w},
                                    ct_attrs({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
             return std::vector<ValueId>{c.op(Op::Relu, {y})};
         }});
    cs.push_back({"WindowConvTransposeGroupDilatedAsymmetric", {Op::ConvTranspose}, [](Case& c) {
                      const ValueId x = c.input(floats({1, 6, 5, 7}, 6));
                      const ValueId w = c.input(floats({6, 2, 3, 2}, 7));
                      const ValueId b = c.constant(floats({4}, 8));
                      return std::vector<ValueId>{
                          c.op(Op::ConvTranspose, {x, w, b},
                               ct_attrs({3, 2}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {2, 1}, 2))};
                  }});
    cs.push_back({"WindowConvTranspose3d", {Op::ConvTranspose}, [](Case& c) {
                      const ValueId x = c.input(floats({1, 3, 3, 4, 5}, 9));
                      const ValueId w = c.constant(floats({3, 2, 2, 3, 2}, 10));
                      return std::vector<ValueId>{c.op(Op::ConvTranspose, {x, w},
                                                       ct_attrs({2, 3, 2}, {2, 1, 2}, {1, 1, 1},
                                                                {0, 1, 0, 1, 1, 0}, {1, 0, 0}, 1))};
                  }});
    cs.push_back({"WindowConv3dBiasRelu", {Op::Conv, Op::Relu}, [](Case& c) {
                      const ValueId x = c.input(floats({1, 3, 5, 7, 6}, 11));
                      const ValueId w = c.constant(floats({5, 3, 3, 2, 3}, 12));
                      const ValueId b = c.constant(floats({5}, 13));
                      const ValueId y = c.op(Op::Conv, {x, w, b},
                                             {{"kernel_shape", Is({3, 2, 3})},
                                              {"strides", Is({1, 2, 1})},
                                              {"dilations", Is({1, 1, 2})},
                                              {"pads", Is({1, 0, 1, 1, 1, 1})},
                                              {"group", I(1)}});
                      return std::vector<ValueId>{c.op(Op::Relu, {y})};
                  }});
    cs.push_back({"WindowConv3dGrouped", {Op::Conv}, [](Case& c) {
                      const ValueId x = c.input(floats({2, 4, 3, 5, 4}, 14));
                      const ValueId w = c.constant(floats({6, 2, 2, 2, 2}, 15));
                      return std::vector<ValueId>{c.op(Op::Conv, {x, w},
                                                       {{"kernel_shape", Is({2, 2, 2})},
                                                        {"strides", Is({1, 2, 1})},
                                                        {"dilations", Is({1, 1, 1})},
                                                        {"pads", Is({0, 0, 0, 0, 1, 0})},
                                                        {"group", I(2)}})};
                  }});
    cs.push_back({"WindowMaxPool3dCeilDilated", {Op::MaxPool}, [](Case& c) {
                      const ValueId x = c.input(floats({1, 3, 5, 7, 6}, 16));
                      return std::vector<ValueId>{c.op(Op::MaxPool, {x},
                                                       {{"kernel_shape", Is({2, 3, 2})},
                                                        {"strides", Is({2, 2, 1})},
                                                        {"dilations", Is({1, 1, 2})},
                                                        {"pads", Is({0, 1, 1, 1, 1, 0})},
                                                        {"ceil_mode", I(1)}})};
                  }});
    for (int include : {0, 1})
        cs.push_back(
            {include ? "WindowAveragePool2dDilatedCountPadCeil" : "WindowAveragePool2dDilated",
             {Op::AveragePool},
             [include](Case& c) {
                 const ValueId x = c.input(floats({1, 3, 9, 11}, 18));
                 return std::vector<ValueId>{c.op(Op::AveragePool, {x},
                                                  {{"kernel_shape", Is({3, 2})},
                                                   {"strides", Is({2, 1})},
                                                   {"dilations", Is({2, 3})},
                                                   {"pads", Is({1, 2, 2, 1})},
                                                   {"ceil_mode", I(include)},
                                                   {"count_include_pad", I(include)}})};
             }});
    cs.push_back({"WindowAveragePool3dDilatedCountPadCeil", {Op::AveragePool}, [](Case& c) {
                      const ValueId x = c.input(floats({1, 2, 5, 7, 6}, 19));
                      return std::vector<ValueId>{c.op(Op::AveragePool, {x},
                                                       {{"kernel_shape", Is({2, 3, 2})},
                                                        {"strides", Is({1, 2, 2})},
                                                        {"dilations", Is({2, 1, 2})},
                                                        {"pads", Is({1, 0, 1, 1, 1, 1})},
                                                        {"ceil_mode", I(1)},
                                                        {"count_include_pad", I(1)}})};
                  }});
    for (int include : {0, 1})
        cs.push_back({include ? "WindowAveragePool3dCountPadCeil" : "WindowAveragePool3d",
                      {Op::AveragePool},
                      [include](Case& c) {
                          const ValueId x = c.input(floats({1, 3, 5, 7, 6}, 17));
                          return std::vector<ValueId>{c.op(Op::AveragePool, {x},
                                                           {{"kernel_shape", Is({3, 2, 3})},
                                                            {"strides", Is({2, 2, 2})},
                                                            {"pads", Is({1, 0, 1, 1, 1, 1})},
                                                            {"ceil_mode", I(include)},
                                                            {"count_include_pad", I(include)}})};
                      }});
    return cs;
}
TESSERA_REGISTER_OP_CASES(window_cases);

} // namespace
} // namespace tessera::graph
