// Workload identity: canonical text and SHA-256 key of a Compute.
#include <gtest/gtest.h>

#include "tessera/ir/type.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"

namespace tessera::te {
namespace {

using ir::DataType;
using te::Tensor;

te::Compute matmul_compute(int64_t m, int64_t k, int64_t n, const std::string& prefix) {
    Tensor a = te::placeholder({m, k}, DataType::f32(), prefix + "A");
    Tensor b = te::placeholder({k, n}, DataType::f32(), prefix + "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

te::Compute softmax_compute(int64_t m, int64_t n) {
    Tensor x = te::placeholder({m, n}, DataType::f32(), "x");
    return te::make_compute({x}, {te::softmax(x)});
}

TEST(WorkloadKey, SameOpAndShapesBuiltSeparatelyGiveTheSameKey) {
    te::Compute c1 = matmul_compute(7, 13, 127, "first_");
    te::Compute c2 = matmul_compute(7, 13, 127, "other_");
    EXPECT_EQ(canonical_compute_text(c1), canonical_compute_text(c2));
    EXPECT_EQ(workload_key(c1), workload_key(c2));
    EXPECT_EQ(workload_key(c1).size(), 64u);
    // Deterministic across calls on one Compute.
    EXPECT_EQ(workload_key(c1), workload_key(c1));
    // Multi-stage computes (max, exp, sum, divide) too.
    EXPECT_EQ(workload_key(softmax_compute(13, 7)), workload_key(softmax_compute(13, 7)));
}

TEST(WorkloadKey, NamesNeverReachTheText) {
    std::string text = canonical_compute_text(matmul_compute(7, 13, 127, "zzz_"));
    EXPECT_EQ(text.find("zzz"), std::string::npos) << text;
    EXPECT_EQ(text.rfind(kComputeTextHeader, 0), 0u) << text;
    EXPECT_NE(text.find("input t0: f32[7, 13]"), std::string::npos) << text;
    EXPECT_NE(text.find("input t1: f32[13, 127]"), std::string::npos) << text;
    EXPECT_NE(text.find("stage t2: f32[7, 127] (v0, v1) = "), std::string::npos) << text;
    EXPECT_NE(text.find("outputs t2\n"), std::string::npos) << text;
}

TEST(WorkloadKey, DifferentShapesDtypesOrOpsGiveDifferentKeys) {
    std::string base = workload_key(matmul_compute(7, 13, 127, ""));
    EXPECT_NE(base, workload_key(matmul_compute(7, 13, 128, "")));
    EXPECT_NE(base, workload_key(matmul_compute(13, 7, 127, "")));
    EXPECT_NE(base, workload_key(matmul_compute(1, 13, 127, "")));
    Tensor a = te::placeholder({7, 13}, DataType::f64(), "A");
    Tensor b = te::placeholder({13, 127}, DataType::f64(), "B");
    EXPECT_NE(base, workload_key(te::make_compute({a, b}, {te::matmul(a, b)})));
    Tensor x = te::placeholder({7, 13}, DataType::f32(), "x");
    Tensor y = te::placeholder({7, 13}, DataType::f32(), "y");
    std::string add = workload_key(te::make_compute({x, y}, {te::add(x, y)}));
    std::string mul = workload_key(te::make_compute({x, y}, {te::multiply(x, y)}));
    EXPECT_NE(add, mul);
    EXPECT_NE(add, base);
    // Operand order matters: x + relu(y) differs from relu(x) + y.
    std::string left = workload_key(te::make_compute({x, y}, {te::add(te::relu(x), y)}));
    std::string right = workload_key(te::make_compute({x, y}, {te::add(x, te::relu(y))}));
    EXPECT_NE(left, right);
}

TEST(WorkloadKey, WeightMarksArePartOfTheKey) {
    // A matmul whose B is a constant weight may be scheduled with B packed ahead of time; the
    // same expressions over two activations may not, so they are different tasks.
    te::Compute plain = matmul_compute(7, 13, 127, "");
    te::Compute weighted = matmul_compute(7, 13, 127, "");
    weighted.weight_inputs = {1};
    EXPECT_NE(workload_key(plain), workload_key(weighted));
    const std::string text = canonical_compute_text(weighted);
    EXPECT_NE(text.find("input t1: f32[13, 127] weight\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("input t0: f32[7, 13] weight"), std::string::npos) << text;
    te::Compute other = matmul_compute(7, 13, 127, "x");
    other.weight_inputs = {1};
    EXPECT_EQ(workload_key(weighted), workload_key(other));
}

TEST(WorkloadKey, KeyIsTheSha256OfTheText) {
    te::Compute c = softmax_compute(1, 7);
    EXPECT_EQ(workload_key(c), workload_key_of_text(canonical_compute_text(c)));
}

} // namespace
} // namespace tessera::te
