// The model plan: byte round trip of every field, each validate_plan error, and parse_plan on
// truncated, garbage and wrong-version bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "tessera/runtime/checksum.h"
#include "tessera/runtime/model_plan.h"

using namespace tessera::runtime;

namespace {

/// A valid plan that uses every field: two inputs, a weight, an arena intermediate, two
/// kernels, a copy and two outputs.
ModelPlan sample_plan() {
    ModelPlan p;
    p.model_name = "sample";
    // 0: input x f32[7,13]; 1: input ids i64[3]; 2: weight w f32[13,5] padded to 320 bytes;
    // 3: arena h f32[7,5]; 4: output y f32[7,5]; 5: output y2 f32[7,5] (copy of y).
    p.tensors = {
        {"x", PlanDType::F32, {7, 13}, TensorStorage::Input, 0, 7 * 13 * 4},
        {"ids", PlanDType::I64, {3}, TensorStorage::Input, 1, 3 * 8},
        {"w", PlanDType::F32, {13, 5}, TensorStorage::Weight, 64, 320},
        {"h", PlanDType::F32, {7, 5}, TensorStorage::Arena, 128, 7 * 5 * 4},
        {"y", PlanDType::F32, {7, 5}, TensorStorage::Output, 0, 7 * 5 * 4},
        {"y2", PlanDType::F32, {7, 5}, TensorStorage::Output, 1, 7 * 5 * 4},
    };
    p.inputs = {0, 1};
    p.outputs = {4, 5};
    p.kernels = {"k0_matmul", "k1_relu"};
    p.calls = {{0, {0, 2, 3}, "group 0 matmul", 2 * 7 * 13 * 5, "f32"},
               {1, {3, 4}, "group 1 relu", 7 * 5, "int8"},
               {-1, {4, 5}, "copy y -> y2", 0, ""}};
    p.arena_bytes = 128 + 192;
    p.weight_bytes = 64 + 320;
    p.index_checks = {{1, 17, "node 'lookup' (Gather) (axis 0 of 'emb', 17 long)"}};
    return p;
}

void expect_equal(const ModelPlan& a, const ModelPlan& b) {
    EXPECT_EQ(a.model_name, b.model_name);
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
        const PlanTensor& x = a.tensors[i];
        const PlanTensor& y = b.tensors[i];
        EXPECT_EQ(x.name, y.name) << i;
        EXPECT_EQ(x.dtype, y.dtype) << i;
        EXPECT_EQ(x.shape, y.shape) << i;
        EXPECT_EQ(x.storage, y.storage) << i;
        EXPECT_EQ(x.offset, y.offset) << i;
        EXPECT_EQ(x.bytes, y.bytes) << i;
    }
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.outputs, b.outputs);
    EXPECT_EQ(a.kernels, b.kernels);
    ASSERT_EQ(a.calls.size(), b.calls.size());
    for (size_t i = 0; i < a.calls.size(); ++i) {
        EXPECT_EQ(a.calls[i].kernel, b.calls[i].kernel) << i;
        EXPECT_EQ(a.calls[i].args, b.calls[i].args) << i;
        EXPECT_EQ(a.calls[i].label, b.calls[i].label) << i;
        EXPECT_EQ(a.calls[i].flops, b.calls[i].flops) << i;
        EXPECT_EQ(a.calls[i].precision, b.calls[i].precision) << i;
    }
    EXPECT_EQ(a.arena_bytes, b.arena_bytes);
    EXPECT_EQ(a.weight_bytes, b.weight_bytes);
    ASSERT_EQ(a.index_checks.size(), b.index_checks.size());
    for (size_t i = 0; i < a.index_checks.size(); ++i) {
        EXPECT_EQ(a.index_checks[i].input, b.index_checks[i].input) << i;
        EXPECT_EQ(a.index_checks[i].bound, b.index_checks[i].bound) << i;
        EXPECT_EQ(a.index_checks[i].consumer, b.index_checks[i].consumer) << i;
    }
}

/// The message validate_plan throws for the plan `edit` makes of sample_plan(), or "" if none.
std::string validate_error(const std::function<void(ModelPlan&)>& edit) {
    ModelPlan p = sample_plan();
    edit(p);
    try {
        validate_plan(p);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

std::string parse_error(const std::string& bytes) {
    try {
        parse_plan(bytes.data(), bytes.size());
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(ModelPlan, DTypeBytesAndNames) {
    EXPECT_EQ(plan_dtype_bytes(PlanDType::F32), 4);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::F64), 8);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::I32), 4);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::I64), 8);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::Bool), 1);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::F16), 2);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::I8), 1);
    EXPECT_EQ(plan_dtype_bytes(PlanDType::U8), 1);
    EXPECT_STREQ(plan_dtype_name(PlanDType::F32), "f32");
    EXPECT_STREQ(plan_dtype_name(PlanDType::Bool), "bool");
    EXPECT_STREQ(plan_dtype_name(PlanDType::U8), "u8");
    EXPECT_THROW(plan_dtype_bytes(static_cast<PlanDType>(42)), std::runtime_error);
}

TEST(ModelPlan, RoundTripKeepsEveryField) {
    const ModelPlan p = sample_plan();
    validate_plan(p);
    const std::string bytes = serialize_plan(p);
    ASSERT_GE(bytes.size(), 12u);
    EXPECT_EQ(bytes.substr(0, 7), "TSRPLAN");
    expect_equal(parse_plan(bytes.data(), bytes.size()), p);
    // Deterministic: the same plan gives the same bytes.
    EXPECT_EQ(serialize_plan(parse_plan(bytes.data(), bytes.size())), bytes);
}

TEST(ModelPlan, RoundTripOfAnEmptyPlanAndOfEveryDType) {
    ModelPlan empty;
    const std::string e = serialize_plan(empty);
    expect_equal(parse_plan(e.data(), e.size()), empty);

    ModelPlan p;
    p.model_name = "dtypes";
    int64_t offset = 0;
    for (int d = 1; d <= 8; ++d) {
        PlanTensor t{"t" + std::to_string(d),
                     static_cast<PlanDType>(d),
                     {1, 3},
                     TensorStorage::Arena,
                     offset,
                     3 * plan_dtype_bytes(static_cast<PlanDType>(d))};
        p.tensors.push_back(t);
        offset += 64;
    }
    // A scalar (rank 0) input.
    p.tensors.push_back({"s", PlanDType::F64, {}, TensorStorage::Input, 0, 8});
    p.inputs = {8};
    p.arena_bytes = offset;
    const std::string bytes = serialize_plan(p);
    expect_equal(parse_plan(bytes.data(), bytes.size()), p);
}

TEST(ModelPlan, ValidateNamesEachProblem) {
    EXPECT_EQ(validate_error([](ModelPlan&) {}), "");
    struct Case {
        std::function<void(ModelPlan&)> edit;
        std::string expected; // a part of the message
    };
    const Case cases[] = {
        {[](ModelPlan& p) { p.arena_bytes = -1; }, "arena_bytes -1"},
        {[](ModelPlan& p) { p.index_checks[0].input = 2; }, "index check of input 2: out of"},
        {[](ModelPlan& p) { p.index_checks[0].input = 0; }, "input is f32, not an integer"},
        {[](ModelPlan& p) { p.index_checks[0].bound = -3; }, "bound -3 < 0"},
        {[](ModelPlan& p) { p.index_checks.push_back(p.index_checks[0]); }, "checked twice"},
        {[](ModelPlan& p) { p.weight_bytes = -64; }, "weight_bytes -64"},
        {[](ModelPlan& p) { p.tensors[3].dtype = static_cast<PlanDType>(0); }, "unknown dtype 0"},
        {[](ModelPlan& p) { p.tensors[3].storage = static_cast<TensorStorage>(9); },
         "unknown storage 9"},
        {[](ModelPlan& p) {
             p.tensors[3].shape = {7, -5};
         },
         "negative extent -5"},
        {[](ModelPlan& p) { p.tensors[3].bytes = 100; }, "holds 100 bytes, less than its shape "
                                                         "needs (140)"},
        {[](ModelPlan& p) { p.tensors[2].offset = 32; }, "weight offset 32, not a non-negative "
                                                         "multiple of 64"},
        {[](ModelPlan& p) { p.tensors[3].offset = -64; }, "arena offset -64"},
        {[](ModelPlan& p) { p.weight_bytes = 320; }, "outside the weights of 320 bytes"},
        {[](ModelPlan& p) { p.arena_bytes = 256; }, "outside the arena of 256 bytes"},
        {[](ModelPlan& p) { p.tensors[0].bytes += 4; }, "is a model input of 368 bytes, but its "
                                                        "shape needs 364"},
        {[](ModelPlan& p) {
             p.inputs = {0, 6};
         },
         "model input 1 is tensor 6, out of range"},
        {[](ModelPlan& p) {
             p.outputs = {4, -1};
         },
         "model output 1 is tensor -1, out of range"},
        {[](ModelPlan& p) {
             p.inputs = {0, 3};
         },
         "has storage arena, expected input"},
        {[](ModelPlan& p) {
             p.outputs = {5, 4};
         },
         "has offset 1, expected 0"},
        {[](ModelPlan& p) { p.inputs = {0}; }, "tensor 1 'ids' has storage input but is not "
                                               "model input 1"},
        {[](ModelPlan& p) { p.calls[1].kernel = 2; }, "call 1 'group 1 relu' names kernel 2, "
                                                      "out of range [-1, 2)"},
        {[](ModelPlan& p) { p.calls[0].kernel = -2; }, "names kernel -2"},
        {[](ModelPlan& p) { p.calls[0].args[2] = 6; }, "argument tensor 6, out of range [0, 6)"},
        {[](ModelPlan& p) { p.calls[2].args = {4}; }, "is a copy with 1 arguments, expected 2"},
        {[](ModelPlan& p) {
             p.calls[2].args = {0, 5};
         },
         "copies 364 bytes of 'x' into 'y2' of "
         "140 bytes"},
        {[](ModelPlan& p) {
             p.calls[2].args = {4, 2};
         },
         "copies 140 bytes"},
        {[](ModelPlan& p) {
             p.calls[2].args = {3, 0};
         },
         "copies 140 bytes"},
    };
    for (const Case& c : cases) {
        const std::string msg = validate_error(c.edit);
        EXPECT_NE(msg.find(c.expected), std::string::npos)
            << "expected '" << c.expected << "' in '" << msg << "'";
    }
    // A copy into a read-only tensor of matching size.
    EXPECT_NE(validate_error([](ModelPlan& p) {
                  p.tensors.push_back(
                      {"x2", PlanDType::F32, {7, 13}, TensorStorage::Weight, 0, 7 * 13 * 4});
                  p.weight_bytes = 384;
                  p.tensors[2].offset = 0; // keep w inside too
                  p.calls.push_back({-1, {0, 6}, "copy into a weight", 0, ""});
              }).find("copies into read-only weight 'x2'"),
              std::string::npos);
}

/// The plan bytes before their trailing checksum.
std::string body_of(const std::string& plan_bytes) {
    return plan_bytes.substr(0, plan_bytes.size() - 8);
}

/// body followed by its checksum: edited bytes that pass the checksum, so that the checks
/// behind it are what refuses them.
std::string sealed(const std::string& body) {
    const uint64_t sum = content_checksum(body.data(), body.size());
    std::string out = body;
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
    return out;
}

TEST(ModelPlan, ParseRefusesGarbageAndTruncatedBytes) {
    const std::string good = serialize_plan(sample_plan());
    EXPECT_EQ(sealed(body_of(good)), good);
    EXPECT_NE(parse_error("").find("magic"), std::string::npos);
    EXPECT_NE(parse_error("TSR").find("magic"), std::string::npos);
    EXPECT_NE(parse_error("not a plan at all, just some text").find("magic"), std::string::npos);
    // Every strict prefix fails with a clear message and never crashes, sealed or not.
    const std::string body = body_of(good);
    for (size_t n = 0; n < good.size(); ++n) {
        EXPECT_FALSE(parse_error(good.substr(0, n)).empty()) << "prefix of " << n << " bytes";
        if (n < body.size()) {
            EXPECT_FALSE(parse_error(sealed(body.substr(0, n))).empty()) << "sealed " << n;
        }
    }
    EXPECT_NE(parse_error(good.substr(0, good.size() - 3)).find("corrupt"), std::string::npos);
    EXPECT_NE(parse_error(sealed(body.substr(0, body.size() - 3))).find("truncated"),
              std::string::npos);
    EXPECT_NE(parse_error(good + "x").find("corrupt"), std::string::npos);
    EXPECT_NE(parse_error(sealed(body + "x")).find("1 bytes left after the plan's end"),
              std::string::npos);
    // A huge count is refused before anything is allocated.
    std::string huge = body;
    const size_t tensors_count_at = 8 + 4 + 4 + std::string("sample").size();
    std::memset(&huge[tensors_count_at], 0xff, 4);
    EXPECT_NE(parse_error(sealed(huge)).find("tensors count 4294967295"), std::string::npos);
    EXPECT_NE(parse_error(huge + good.substr(body.size())).find("corrupt"), std::string::npos);
    // Bytes that decode but describe an invalid plan.
    ModelPlan bad = sample_plan();
    bad.calls[0].kernel = 7;
    const std::string invalid = serialize_plan(bad);
    EXPECT_NE(parse_error(invalid).find("invalid model plan: call 0"), std::string::npos);
}

TEST(ModelPlan, ParseFlippedBytesNeverCrashes) {
    // Each single-byte corruption fails the checksum; resealed (a corruption the checksum
    // cannot see), it either parses to a valid plan or throws runtime_error.
    const std::string good = serialize_plan(sample_plan());
    const std::string body = body_of(good);
    for (size_t i = 0; i < good.size(); ++i) {
        for (unsigned char x : {0x01, 0x80, 0xff}) {
            std::string b = good;
            b[i] = static_cast<char>(static_cast<unsigned char>(b[i]) ^ x);
            const std::string msg = parse_error(b);
            if (i >= 12) { // past the magic and the version, which are checked first
                EXPECT_NE(msg.find("corrupt"), std::string::npos) << i << ": " << msg;
            }
            if (i >= body.size())
                continue;
            b.resize(body.size());
            const std::string resealed = sealed(b);
            try {
                validate_plan(parse_plan(resealed.data(), resealed.size()));
            } catch (const std::runtime_error&) {
            }
        }
    }
}

TEST(ModelPlan, WrongVersionNamesBoth) {
    std::string bytes = serialize_plan(sample_plan());
    const uint32_t other = kModelPlanVersion + 6;
    for (int i = 0; i < 4; ++i)
        bytes[8 + i] = static_cast<char>((other >> (8 * i)) & 0xff);
    const std::string msg = parse_error(bytes);
    EXPECT_NE(msg.find("version " + std::to_string(other)), std::string::npos) << msg;
    EXPECT_NE(msg.find("reads version " + std::to_string(kModelPlanVersion)), std::string::npos)
        << msg;
}

TEST(ContentChecksum, EveryFlippedByteAndEveryLengthChangesIt) {
    std::string bytes;
    for (int i = 0; i < 75; ++i)
        bytes.push_back(static_cast<char>(i * 37 + 11));
    for (size_t n = 0; n <= bytes.size(); ++n) {
        const uint64_t sum = content_checksum(bytes.data(), n);
        EXPECT_EQ(content_checksum(bytes.data(), n), sum); // deterministic
        if (n > 0) {
            EXPECT_NE(content_checksum(bytes.data(), n - 1), sum) << n;
        }
        for (size_t i = 0; i < n; ++i) {
            std::string b = bytes.substr(0, n);
            b[i] = static_cast<char>(b[i] ^ 0x10);
            EXPECT_NE(content_checksum(b.data(), n), sum) << "byte " << i << " of " << n;
        }
    }
}

TEST(ModelPlan, IndexChecksRefuseTheFirstValueOutOfRange) {
    const ModelPlan p = sample_plan(); // input 1: ids i64[3], bound 17
    const std::vector<float> x(7 * 13, 0.5f);
    for (const std::vector<int64_t>& ids : {std::vector<int64_t>{0, 16, -17}}) {
        const void* inputs[2] = {x.data(), ids.data()};
        EXPECT_NO_THROW(check_index_inputs(p, inputs));
    }
    for (int64_t bad : {int64_t(17), int64_t(-18), int64_t(1) << 40}) {
        const std::vector<int64_t> ids = {3, bad, 99};
        const void* inputs[2] = {x.data(), ids.data()};
        try {
            check_index_inputs(p, inputs);
            ADD_FAILURE() << bad << " passed";
        } catch (const std::runtime_error& e) {
            EXPECT_EQ(std::string(e.what()),
                      "input 'ids' element [1] is " + std::to_string(bad) +
                          ", outside [-17, 17) of node 'lookup' (Gather) (axis 0 of 'emb', 17 "
                          "long)");
        }
    }
    // Unsigned ids: never negative, so only the upper bound applies.
    ModelPlan u = sample_plan();
    u.tensors[1].dtype = PlanDType::U32;
    u.tensors[1].bytes = 3 * 4;
    const std::vector<uint32_t> small = {0, 16, 5}, big = {0, 4000000000u, 5};
    const void* ok_inputs[2] = {x.data(), small.data()};
    EXPECT_NO_THROW(check_index_inputs(u, ok_inputs));
    const void* bad_inputs[2] = {x.data(), big.data()};
    EXPECT_THROW(check_index_inputs(u, bad_inputs), std::runtime_error);
}
