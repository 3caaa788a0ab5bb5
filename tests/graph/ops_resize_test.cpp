// Resize (src/graph/ops/resize.cpp): the evaluator against values computed by ONNX's reference
// implementation (opsets 11-19 forms) and by ONNX Runtime (the opset-10 and opset-11 forms,
// whose coordinate rules the reference implementation does not model), the kernel against the
// evaluator through the JIT, whole models through build and run, and the refusals.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/shape_inference.h"
#include "tessera/graph/tasks.h"
#include "tessera/support/error.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

// One input [1, 2, 3, 5] of these values (numpy default_rng(3) uniform in [-1, 1)).
const std::vector<float> kX = {
    -0.828701675f,  -0.526378989f, 0.602548957f,   0.164324075f,  -0.811742723f, -0.133746117f,
    -0.0418974049f, -0.680522144f, 0.469154298f,   -0.772655964f, -0.217543617f, 0.0334803648f,
    -0.138743952f,  0.173597142f,  0.475675583f,   0.912534535f,  -0.43159768f,  0.297094405f,
    0.392432004f,   -0.4145585f,   -0.997019827f,  0.946920574f,  -0.403197557f, -0.372027993f,
    0.783422112f,   0.170325875f,  -0.0573806688f, 0.546554029f,  -0.939307988f, 0.413930178f};

struct ResizeCase {
    const char* name;
    int64_t opset;
    std::vector<std::pair<const char*, const char*>> strings;
    std::vector<std::pair<const char*, int64_t>> ints;
    std::vector<std::pair<const char*, float>> floats;
    std::vector<int64_t> axes; // opset 18's attribute; empty: none
    std::vector<float> roi, scales;
    std::vector<int64_t> sizes;
    Shape shape;
    std::vector<float> want;
};
void PrintTo(const ResizeCase& c, std::ostream* os) { *os << c.name; }

// Values printed with 9 significant digits by the reference implementation.
const std::vector<ResizeCase>& resize_cases() {
    static const std::vector<ResizeCase> cases = {
        {"LinearHalfPixelScales",
         19,
         {{"mode", "linear"}},
         {},
         {},
         {},
         {},
         {1, 1, 1.5f, 0.6f},
         {},
         {1, 2, 4, 3},
         {-0.727927446f, 0.602548838f,   -0.486386955f, -0.415528655f, -0.0389866196f,
          -0.422552973f, -0.108253062f,  -0.590225697f, -0.236435384f, -0.128745779f,
          -0.229040295f, 0.252699107f,   0.464490503f,  0.297094345f,  -0.145561531f,
          0.0577253737f, -0.0530515462f, 0.126355171f,  -0.275129169f, -0.244905531f,
          0.325701654f,  0.0205131248f,  0.388262063f,  0.0354207866f}},
        {"NearestAsymmetricSizes",
         19,
         {{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"}},
         {},
         {},
         {},
         {},
         {},
         {1, 2, 7, 2},
         {1, 2, 7, 2},
         {-0.828701675f, 0.602548957f,  -0.828701675f, 0.602548957f,  -0.133746117f, -0.680522144f,
          -0.133746117f, -0.680522144f, -0.217543617f, -0.138743952f, -0.217543617f, -0.138743952f,
          -0.217543617f, -0.138743952f, 0.912534535f,  0.297094405f,  0.912534535f,  0.297094405f,
          -0.997019827f, -0.403197557f, -0.997019827f, -0.403197557f, 0.170325875f,  0.546554029f,
          0.170325875f,  0.546554029f,  0.170325875f,  0.546554029f}},
        {"CubicAlignCorners",
         19,
         {{"mode", "cubic"}, {"coordinate_transformation_mode", "align_corners"}},
         {},
         {},
         {},
         {},
         {},
         {1, 2, 4, 9},
         {1, 2, 4, 9},
         {-0.828701675f,  -0.783377349f, -0.526378989f,  0.107511319f,    0.602548957f,
          0.580779791f,   0.164324075f,  -0.364792913f,  -0.811742723f,   -0.343217373f,
          -0.260443896f,  -0.202794567f, -0.326266944f,  -0.336790085f,   0.146716058f,
          0.406028867f,   -0.189178482f, -0.923664391f,  -0.0829094276f,  0.0408950448f,
          0.03566394f,    -0.396924466f, -0.652525783f,  -0.11216972f,    0.409978509f,
          0.116939127f,   -0.375319809f, -0.217543617f,  -0.0758855939f,  0.0334803648f,
          -0.0583802722f, -0.138743952f, -0.0270392876f, 0.173597142f,    0.353918344f,
          0.475675583f,   0.912534535f,  0.172153547f,   -0.43159768f,    -0.202201933f,
          0.297094405f,   0.488733441f,  0.392432004f,   -0.00212534796f, -0.4145585f,
          -0.525569141f,  0.13505584f,   0.624531746f,   0.255337745f,    -0.288263321f,
          -0.312216908f,  -0.068333596f, 0.210119024f,   0.447334796f,    -0.841694891f,
          0.0616689138f,  0.783920407f,  0.495875329f,   -0.182012051f,   -0.633943141f,
          -0.635555923f,  0.0398070253f, 0.800209463f,   0.170325875f,    -0.000146274688f,
          -0.0573806688f, 0.362538755f,  0.546554029f,   -0.266624182f,   -0.939307988f,
          -0.401988477f,  0.413930178f}},
        {"CubicExcludeOutside",
         19,
         {{"mode", "cubic"}},
         {{"exclude_outside", 1}},
         {{"cubic_coeff_a", -0.5f}},
         {},
         {},
         {1, 1, 2, 2},
         {},
         {1, 2, 6, 10},
         {-0.918335438f,  -0.857257962f,  -0.728439748f,   -0.272016853f,  0.502953172f,
          0.710957766f,   0.351996928f,   -0.113190658f,   -0.647066832f,  -0.899246156f,
          -0.717820823f,  -0.662996173f,  -0.547208607f,   -0.256001502f,  0.202483922f,
          0.403029531f,   0.345635355f,   -0.0142211355f,  -0.633029938f,  -0.925217092f,
          -0.293084741f,  -0.251518101f,  -0.163360447f,   -0.222165957f,  -0.434133202f,
          -0.249325857f,  0.332256049f,   0.195403382f,    -0.603697121f,  -0.980811715f,
          -0.114489257f,  -0.0687946901f, 0.0282662101f,   -0.142579317f,  -0.588155866f,
          -0.455360711f,  0.255806148f,   0.295127809f,    -0.295843065f,  -0.574648023f,
          -0.205499485f,  -0.138833359f,  0.00249412167f,  -0.0276982281f, -0.239347503f,
          -0.188004702f,  0.126330152f,   0.271849662f,    0.250084251f,   0.239909366f,
          -0.248325944f,  -0.171762303f,  -0.00954311993f, 0.0265562609f,  -0.0748701915f,
          -0.0619917996f, 0.0651914477f,  0.26093033f,     0.507862449f,   0.624496341f,
          1.22522366f,    0.750900447f,   -0.254114211f,   -0.485233784f,  0.128206804f,
          0.466505766f,   0.529663146f,   0.249844134f,    -0.332037687f,  -0.606746256f,
          0.583918929f,   0.390554458f,   -0.0191195775f,  -0.138819039f,  0.0602613017f,
          0.197808728f,   0.273823231f,   0.170611396f,    -0.0932724476f, -0.217838839f,
          -0.774956048f,  -0.372968942f,  0.478883624f,    0.595202863f,   -0.0839071125f,
          -0.371626467f,  -0.267955154f,  0.00306102773f,  0.412624657f,   0.606025398f,
          -1.01882815f,   -0.526013315f,  0.518229723f,    0.729924083f,   0.0356464833f,
          -0.409662396f,  -0.606002569f,  -0.276036918f,   0.523983061f,   0.901641309f,
          -0.115655631f,  -0.048470635f,  0.0937491283f,   0.247644052f,   0.403214306f,
          0.0886983126f,  -0.695903957f,  -0.630012631f,   0.226171747f,   0.630168974f,
          0.31032601f,    0.176747128f,   -0.106505476f,   0.020179363f,   0.576717854f,
          0.323812127f,   -0.738537848f,  -0.79720521f,    0.0857287198f,  0.502271175f}},
        {"LinearCropAndResize",
         19,
         {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}},
         {},
         {{"extrapolation_value", 7.0f}},
         {},
         {0, 0, 0.2f, -0.1f, 1, 1, 0.9f, 0.8f},
         {},
         {1, 2, 4, 4},
         {1, 2, 4, 4},
         {7.0f,          -0.376212955f,  0.0893205255f, 0.069783181f,   7.0f,
          -0.130477324f, -0.509445906f,  0.187234536f,  7.0f,           -0.0457529016f,
          -0.499929339f, 0.225199014f,   7.0f,          -0.0254329666f, -0.247099563f,
          0.231368706f,  7.0f,           0.125590265f,  0.0169776231f,  0.0822451487f,
          7.0f,          0.462012053f,   -0.309825301f, -0.0913415998f, 7.0f,
          0.368141919f,  -0.0866137445f, -0.316845268f, 7.0f,           0.10215503f,
          0.356603593f,  -0.563115716f}},
        {"NearestPreferCeil",
         19,
         {{"mode", "nearest"}, {"nearest_mode", "round_prefer_ceil"}},
         {},
         {},
         {},
         {},
         {1, 1, 2.5f, 0.5f},
         {},
         {1, 2, 7, 2},
         {-0.526378989f, 0.164324075f,   -0.526378989f, 0.164324075f,   -0.0418974049f,
          0.469154298f,  -0.0418974049f, 0.469154298f,  -0.0418974049f, 0.469154298f,
          0.0334803648f, 0.173597142f,   0.0334803648f, 0.173597142f,   -0.43159768f,
          0.392432004f,  -0.43159768f,   0.392432004f,  0.946920574f,   -0.372027993f,
          0.946920574f,  -0.372027993f,  0.946920574f,  -0.372027993f,  -0.0573806688f,
          -0.939307988f, -0.0573806688f, -0.939307988f}},
        {"NearestCeilPytorch",
         19,
         {{"mode", "nearest"},
          {"nearest_mode", "ceil"},
          {"coordinate_transformation_mode", "pytorch_half_pixel"}},
         {},
         {},
         {},
         {},
         {},
         {1, 2, 1, 4},
         {1, 2, 1, 4},
         {-0.526378989f, 0.602548957f, 0.164324075f, -0.811742723f, -0.43159768f, 0.297094405f,
          0.392432004f, -0.4145585f}},
        {"LinearHalfPixelSymmetric",
         19,
         {{"mode", "linear"}, {"coordinate_transformation_mode", "half_pixel_symmetric"}},
         {},
         {},
         {},
         {},
         {1, 1, 1.7f, 0.7f},
         {},
         {1, 2, 5, 3},
         {-0.655945837f, 0.602548957f,   -0.253990293f,  -0.419310957f,  0.0742255449f,
          -0.175367862f, -0.0812611431f, -0.680522144f,  -0.0630501285f, -0.0770495012f,
          -0.361829102f, 0.152308375f,   -0.0741013512f, -0.138743952f,  0.30305934f,
          0.144459009f,  0.297094405f,   0.0465789102f,  0.131836042f,   0.00873888005f,
          0.0781143382f, 0.113803215f,   -0.403197557f,  0.123164937f,   0.0705118254f,
          0.155479833f,  -0.16066663f,   0.0402078554f,  0.546554029f,   -0.359348744f}},
        {"CubicAxesNotLarger",
         19,
         {{"mode", "cubic"}, {"keep_aspect_ratio_policy", "not_larger"}},
         {},
         {},
         {3, 2},
         {},
         {},
         {8, 4},
         {1, 2, 4, 7},
         {-0.901368022f,  -0.813506305f, -0.0373511389f, 0.736894548f,   0.281711996f,
          -0.506094456f,  -0.919686615f, -0.385749549f,  -0.273074776f,  -0.271461576f,
          -0.198041096f,  0.415717453f,  -0.405654639f,  -1.06843007f,   -0.0966425836f,
          0.0660882667f,  -0.254592389f, -0.55980742f,   0.333787709f,   0.00640048506f,
          -0.397038758f,  -0.24239628f,  -0.0404399447f, 0.00109938043f, -0.0876922086f,
          0.0949666053f,  0.43311736f,   0.610639453f,   1.1630156f,     -0.0575870275f,
          -0.394377708f,  0.430535555f,  0.513895631f,   -0.152399331f,  -0.604680181f,
          -0.508766949f,  0.29061079f,   0.361609817f,   -0.295022815f,  -0.0962996706f,
          0.25317803f,    0.439183921f,  -0.895444691f,  0.283847928f,   0.62311703f,
          -0.270039797f,  -0.718324184f, 0.227700576f,   0.940347612f,   0.281647325f,
          -0.0730018318f, 0.201684982f,  0.487480253f,   -0.903906822f,  -0.210470974f,
          0.537639916f}},
        {"LinearAxesNotSmaller",
         19,
         {{"mode", "linear"}, {"keep_aspect_ratio_policy", "not_smaller"}},
         {},
         {},
         {2, 3},
         {},
         {},
         {4, 4},
         {1, 2, 4, 7},
         {-0.828701675f,  -0.639750004f, -0.103031009f,  0.547770858f,   0.219102189f,
          -0.445717663f,  -0.811742723f, -0.394354463f,  -0.287619174f,  -0.214500174f,
          -0.130093798f,  0.28556627f,   -0.359004825f,  -0.787313521f,  -0.165170178f,
          -0.0704580322f, -0.187527463f, -0.372895867f,  0.253860891f,   -0.0559621342f,
          -0.304531634f,  -0.217543617f, -0.0606536269f, -0.0311037544f, -0.0997013152f,
          0.134554505f,   0.362396181f,  0.475675583f,   0.912534535f,   0.0724519044f,
          -0.158338144f,  0.309011608f,  0.380514801f,   -0.111937061f,  -0.4145585f,
          -0.280936956f,  0.163383797f,  0.216014624f,   -0.133683994f,  -0.0922595635f,
          0.176853806f,   0.334179372f,  -0.559265196f,  0.146717802f,   0.33880198f,
          -0.114255369f,  -0.517543316f, 0.183754906f,   0.644862652f,   0.170325875f,
          0.0280092843f,  0.169094846f,  0.360821277f,   -0.753575206f,  -0.0935341343f,
          0.413930178f}},
        {"NearestFloorScaleOnChannels",
         19,
         {{"mode", "nearest"}, {"nearest_mode", "floor"}},
         {},
         {},
         {},
         {},
         {1, 1.5f, 1, 1},
         {},
         {1, 3, 3, 5},
         {-0.828701675f, -0.526378989f,  0.602548957f,  0.164324075f,  -0.811742723f,
          -0.133746117f, -0.0418974049f, -0.680522144f, 0.469154298f,  -0.772655964f,
          -0.217543617f, 0.0334803648f,  -0.138743952f, 0.173597142f,  0.475675583f,
          -0.828701675f, -0.526378989f,  0.602548957f,  0.164324075f,  -0.811742723f,
          -0.133746117f, -0.0418974049f, -0.680522144f, 0.469154298f,  -0.772655964f,
          -0.217543617f, 0.0334803648f,  -0.138743952f, 0.173597142f,  0.475675583f,
          0.912534535f,  -0.43159768f,   0.297094405f,  0.392432004f,  -0.4145585f,
          -0.997019827f, 0.946920574f,   -0.403197557f, -0.372027993f, 0.783422112f,
          0.170325875f,  -0.0573806688f, 0.546554029f,  -0.939307988f, 0.413930178f}},
        {"Opset10Nearest",
         10,
         {{"mode", "nearest"}},
         {},
         {},
         {},
         {},
         {1, 1, 2, 1.5f},
         {},
         {1, 2, 6, 7},
         {-0.828701675f, -0.828701675f,  -0.526378989f,  0.602548957f,   0.602548957f,
          0.164324075f,  -0.811742723f,  -0.828701675f,  -0.828701675f,  -0.526378989f,
          0.602548957f,  0.602548957f,   0.164324075f,   -0.811742723f,  -0.133746117f,
          -0.133746117f, -0.0418974049f, -0.680522144f,  -0.680522144f,  0.469154298f,
          -0.772655964f, -0.133746117f,  -0.133746117f,  -0.0418974049f, -0.680522144f,
          -0.680522144f, 0.469154298f,   -0.772655964f,  -0.217543617f,  -0.217543617f,
          0.0334803648f, -0.138743952f,  -0.138743952f,  0.173597142f,   0.475675583f,
          -0.217543617f, -0.217543617f,  0.0334803648f,  -0.138743952f,  -0.138743952f,
          0.173597142f,  0.475675583f,   0.912534535f,   0.912534535f,   -0.43159768f,
          0.297094405f,  0.297094405f,   0.392432004f,   -0.4145585f,    0.912534535f,
          0.912534535f,  -0.43159768f,   0.297094405f,   0.297094405f,   0.392432004f,
          -0.4145585f,   -0.997019827f,  -0.997019827f,  0.946920574f,   -0.403197557f,
          -0.403197557f, -0.372027993f,  0.783422112f,   -0.997019827f,  -0.997019827f,
          0.946920574f,  -0.403197557f,  -0.403197557f,  -0.372027993f,  0.783422112f,
          0.170325875f,  0.170325875f,   -0.0573806688f, 0.546554029f,   0.546554029f,
          -0.939307988f, 0.413930178f,   0.170325875f,   0.170325875f,   -0.0573806688f,
          0.546554029f,  0.546554029f,   -0.939307988f,  0.413930178f}},
        {"Opset10Linear",
         10,
         {{"mode", "linear"}},
         {},
         {},
         {},
         {},
         {1, 1, 2, 0.8f},
         {},
         {1, 2, 6, 4},
         {-0.828701675f,  -0.244147003f,   0.383436501f,    -0.567726016f,  -0.481223881f,
          -0.222850293f,  0.138876289f,    -0.5149647f,     -0.133746117f,  -0.201553583f,
          -0.105683923f,  -0.462203383f,   -0.175644875f,   -0.105564646f,  -0.0441286601f,
          -0.031023711f,  -0.217543617f,   -0.00957571343f, 0.0174265951f,  0.400155962f,
          -0.217543617f,  -0.00957571343f, 0.0174265951f,   0.400155962f,   0.912534535f,
          -0.249424651f,  0.344763219f,    -0.212810874f,   -0.0422426462f, 0.179983199f,
          -0.0214247778f, 0.140874371f,    -0.997019827f,   0.609391034f,   -0.38761276f,
          0.494559616f,   -0.413346976f,   0.351497024f,    -0.29199487f,   0.285090119f,
          0.170325875f,   0.0936030075f,   -0.196376979f,   0.0756206363f,  0.170325875f,
          0.0936030075f,  -0.196376979f,   0.0756206363f}},
        // Antialiased downsampling: the filter widened by 1 / scale (5 and 4 taps).
        {"LinearAntialias",
         19,
         {{"mode", "linear"}},
         {{"antialias", 1}},
         {},
         {},
         {},
         {1, 1, 0.6f, 0.4f},
         {},
         {1, 2, 1, 2},
         {-0.315903902f, -0.208033785f, 0.120432831f, 0.0622579642f}},
        {"CubicAntialias",
         19,
         {{"mode", "cubic"}},
         {{"antialias", 1}},
         {},
         {},
         {},
         {},
         {1, 2, 2, 3},
         {1, 2, 2, 3},
         {-0.537705421f, 0.168420553f, -0.400413066f, -0.0807161853f, -0.144423038f, 0.16772601f,
          0.157228842f, 0.0605444312f, 0.0765413195f, -0.0154611012f, -0.0285134688f,
          0.0105770174f}},
        {"Opset11EmptyScales",
         11,
         {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}},
         {},
         {},
         {},
         {},
         {},
         {1, 2, 5, 3},
         {1, 2, 5, 3},
         {-0.828701675f, 0.602548957f,  -0.811742723f, -0.481223881f,  -0.0389865935f,
          -0.792199373f, -0.133746117f, -0.680522144f, -0.772655964f,  -0.175644875f,
          -0.40963304f,  -0.148490191f, -0.217543617f, -0.138743952f,  0.475675583f,
          0.912534535f,  0.297094405f,  -0.4145585f,   -0.0422426462f, -0.053051576f,
          0.184431806f,  -0.997019827f, -0.403197557f, 0.783422112f,   -0.413346976f,
          0.0716782361f, 0.598676145f,  0.170325875f,  0.546554029f,   0.413930178f}},
    };
    return cases;
}

// The case as an ONNX model: X -> Resize -> Y, roi / scales / sizes as initializers (opset 11
// passes empty roi and scales tensors for the absent ones, as exporters of that opset do).
std::string resize_model(const ResizeCase& c) {
    ModelBuilder mb(c.opset);
    mb.input("X", DType::F32, {1, 2, 3, 5});
    std::vector<std::string> ins = {"X"};
    auto floats = [](const std::vector<float>& v) {
        return TensorData::from_vector<float>({static_cast<int64_t>(v.size())}, v);
    };
    if (c.opset < 11) {
        mb.initializer("scales", floats(c.scales));
        ins.push_back("scales");
    } else {
        const bool empty_operands = c.opset < 13;
        if (!c.roi.empty() || empty_operands) {
            mb.initializer("roi", floats(c.roi));
            ins.push_back("roi");
        } else {
            ins.push_back("");
        }
        if (!c.scales.empty() || empty_operands) {
            mb.initializer("scales", floats(c.scales));
            ins.push_back("scales");
        } else {
            ins.push_back("");
        }
        if (!c.sizes.empty()) {
            mb.initializer("sizes", testing::i64s(c.sizes));
            ins.push_back("sizes");
        }
    }
    while (ins.back().empty())
        ins.pop_back();
    testing::NodeRef n = mb.node("Resize", ins, {"Y"});
    for (const auto& [k, v] : c.strings)
        n.s(k, v);
    for (const auto& [k, v] : c.ints)
        n.i(k, v);
    for (const auto& [k, v] : c.floats)
        n.f(k, v);
    if (!c.axes.empty())
        n.ints("axes", c.axes);
    mb.output("Y");
    return mb.bytes();
}

TensorData resize_input() { return TensorData::from_vector<float>({1, 2, 3, 5}, kX); }

class ResizeEval : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(ResizeEval, MatchesTheReferenceImplementation) {
    const ResizeCase& c = GetParam();
    const Graph g = import_onnx_bytes(resize_model(c), "resize.onnx");
    const std::vector<TensorData> y = evaluate(g, {resize_input()});
    ASSERT_EQ(y.size(), 1u);
    const TensorData want = TensorData::from_vector<float>(c.shape, c.want);
    const testing::Closeness cl = testing::compare(y[0], want, 1e-5, 1e-6);
    EXPECT_TRUE(cl.ok) << cl.message;
}

INSTANTIATE_TEST_SUITE_P(Resize, ResizeEval, ::testing::ValuesIn(resize_cases()),
                         [](const ::testing::TestParamInfo<ResizeCase>& info) {
                             return std::string(info.param.name);
                         });

// The kernel of each case (nearest, linear, cubic; every coordinate mode; exclude_outside;
// extrapolation) against the evaluator, through both lowerings.
std::vector<OpCase> resize_op_cases() {
    std::vector<OpCase> cs;
    for (const ResizeCase& rc : resize_cases()) {
        cs.push_back({std::string("Resize") + rc.name, {Op::Resize}, [rc](Case& c) {
                          const Graph imported = import_onnx_bytes(resize_model(rc), "resize.onnx");
                          const Node* resize = nullptr;
                          for (NodeId id : imported.topological_order())
                              if (imported.node(id).op == Op::Resize)
                                  resize = &imported.node(id);
                          std::vector<ValueId> ins = {c.input(floats({1, 2, 3, 5}, 41))};
                          for (size_t i = 1; i < resize->inputs.size(); ++i)
                              ins.push_back(
                                  resize->inputs[i] == kNoValue
                                      ? kNoValue
                                      : c.constant(*imported.value(resize->inputs[i]).constant));
                          return std::vector<ValueId>{c.op(Op::Resize, ins, resize->attrs)};
                      }});
    }
    // A larger odd image, as segmentation heads upsample: linear half_pixel x 2.5 / x 3.
    cs.push_back(
        {"ResizeLinearUpsample", {Op::Resize}, [](Case& c) {
             Attributes a = {
                 {"mode", Attribute::of_string("linear")},
                 {"coordinate_transformation_mode", Attribute::of_string("half_pixel")}};
             const ValueId x = c.input(floats({1, 3, 7, 13}, 42));
             const ValueId sizes = c.constant(testing::i64s({1, 3, 17, 39}));
             return std::vector<ValueId>{c.op(Op::Resize, {x, kNoValue, kNoValue, sizes}, a)};
         }});
    return cs;
}
TESSERA_REGISTER_OP_CASES(resize_op_cases);

// Whole models through build and run at -O0 and -O3: opset 10, 13 (sizes only) and 19 forms
// after a convolution, as a segmentation head has them.
TEST(ResizeModel, LibraryMatchesEvaluator) {
    for (int64_t opset : {10, 13, 19}) {
        SCOPED_TRACE("opset " + std::to_string(opset));
        ModelBuilder mb(opset);
        mb.input("X", DType::F32, {1, 3, 9, 11});
        mb.initializer("W", floats({5, 3, 3, 3}, 7));
        mb.node("Conv", {"X", "W"}, {"c"}).ints("pads", {1, 1, 1, 1});
        if (opset == 10) {
            mb.initializer("scales", TensorData::from_vector<float>({4}, {1, 1, 2, 2}));
            mb.node("Resize", {"c", "scales"}, {"Y"}).s("mode", "nearest");
        } else if (opset == 13) {
            mb.initializer("sizes", testing::i64s({1, 5, 20, 23}));
            mb.node("Resize", {"c", "", "", "sizes"}, {"Y"})
                .s("mode", "linear")
                .s("coordinate_transformation_mode", "pytorch_half_pixel");
        } else {
            mb.initializer("sizes", testing::i64s({17, 21}));
            mb.node("Resize", {"c", "", "", "sizes"}, {"Y"})
                .s("mode", "cubic")
                .ints("axes", {2, 3});
        }
        mb.output("Y");
        for (int level : {0, 3})
            expect_library_matches_evaluator(mb.bytes(), {floats({1, 3, 9, 11}, 8)}, level, 1e-5,
                                             1e-5);
    }
}

// The names of the stages of the one fused group of a graph holding one Resize.
std::vector<std::string> resize_stages(const std::string& model_bytes) {
    Graph g = import_onnx_bytes(model_bytes, "resize");
    infer_shapes(g);
    const std::vector<FusedGroup> groups = fuse_ops(g);
    EXPECT_EQ(groups.size(), 1u);
    std::vector<std::string> names;
    for (const te::Tensor& t : group_compute(g, groups.at(0)).compute.stages)
        names.push_back(t.name());
    return names;
}

// Linear and cubic resizes interpolate one axis per stage, the last axis first (an output row
// is a few rows of the stage before it scaled and added); nearest stays one gathering stage.
// Their values: OpComputeTest's Resize cases.
TEST(ResizeKernel, LinearAndCubicInterpolateOneAxisPerStage) {
    auto model = [](const char* mode, const char* coordinates) {
        ModelBuilder mb(13);
        mb.input("X", DType::F32, {1, 3, 9, 11});
        mb.initializer("sizes", testing::i64s({1, 3, 20, 23}));
        mb.node("Resize", {"X", "", "", "sizes"}, {"Y"})
            .s("mode", mode)
            .s("coordinate_transformation_mode", coordinates);
        mb.output("Y");
        return mb.bytes();
    };
    using Names = std::vector<std::string>;
    EXPECT_EQ(resize_stages(model("linear", "half_pixel")), (Names{"resize_axis3", "resize"}));
    EXPECT_EQ(resize_stages(model("cubic", "align_corners")), (Names{"resize_axis3", "resize"}));
    EXPECT_EQ(resize_stages(model("nearest", "half_pixel")), (Names{"resize"}));
}

// Sizes computed from the input's shape, as exporters write them: import reads the value and
// leaves the Shape -> Slice -> Concat chain dead, which -O0 keeps and must not turn into a task.
TEST(ResizeModel, SizesFromTheShapeAtO0) {
    ModelBuilder mb(13);
    mb.input("X", DType::F32, {1, 3, 9, 11});
    mb.initializer("starts", testing::i64s({0}))
        .initializer("ends", testing::i64s({2}))
        .initializer("hw", testing::i64s({18, 23}));
    mb.node("Relu", {"X"}, {"r"});
    mb.node("Shape", {"r"}, {"s"});
    mb.node("Slice", {"s", "starts", "ends"}, {"nc"});
    mb.node("Concat", {"nc", "hw"}, {"sizes"}).i("axis", 0);
    mb.node("Resize", {"r", "", "", "sizes"}, {"Y"}).s("mode", "linear");
    mb.output("Y");
    for (int level : {0, 2})
        expect_library_matches_evaluator(mb.bytes(), {floats({1, 3, 9, 11}, 9)}, level);
}

std::string resize_error(const std::function<void(ModelBuilder&)>& add, int64_t opset = 19) {
    ModelBuilder mb(opset);
    mb.input("X", DType::F32, {1, 2, 3, 5});
    add(mb);
    mb.output("Y");
    try {
        import_onnx_bytes(mb.bytes(), "resize.onnx");
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

#define EXPECT_CONTAINS(text, part)                                                                \
    EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

TEST(ResizeImport, RefusalsNameTheNode) {
    const auto scales = [](ModelBuilder& mb) {
        mb.initializer("scales", TensorData::from_vector<float>({4}, {1, 1, 0.5f, 0.5f}));
    };
    EXPECT_CONTAINS(resize_error([&](ModelBuilder& mb) {
                        scales(mb);
                        mb.node("Resize", {"X", "", "scales"}, {"Y"}, "r").s("mode", "area");
                    }),
                    "node 'r' (Resize): unsupported mode 'area'");
    EXPECT_CONTAINS(resize_error([&](ModelBuilder& mb) { mb.node("Resize", {"X"}, {"Y"}, "r"); }),
                    "exactly one of scales and sizes");
    EXPECT_CONTAINS(resize_error([&](ModelBuilder& mb) {
                        mb.initializer("scales", TensorData::from_vector<float>({3}, {1, 1, 2}));
                        mb.node("Resize", {"X", "", "scales"}, {"Y"}, "r");
                    }),
                    "3 scales for 4 axes");
    EXPECT_CONTAINS(
        resize_error([&](ModelBuilder& mb) {
            mb.initializer("scales", TensorData::from_vector<float>({4}, {1, 1, -2, 1}));
            mb.node("Resize", {"X", "", "scales"}, {"Y"}, "r");
        }),
        "scale -2 of dim 2 is not positive");
    // A runtime size cannot set a static shape.
    EXPECT_CONTAINS(resize_error([&](ModelBuilder& mb) {
                        mb.input("S", DType::I64, {4});
                        mb.node("Resize", {"X", "", "", "S"}, {"Y"}, "r");
                    }),
                    "must be a compile-time constant");
}

} // namespace
} // namespace tessera::graph
