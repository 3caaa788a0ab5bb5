// The CLI op registry: spec parsing, error messages, and every op built and run.
#include "op_test_util.h"

#include <gmock/gmock.h>

#include <cmath>

namespace tessera::testing {
namespace {

using te::make_op;
using te::parse_op_spec;

TEST(ParseOpSpec, GoodSpecs) {
    te::OpSpec s = parse_op_spec("matmul:m=1024,n=1024,k=1024");
    EXPECT_EQ(s.name, "matmul");
    ASSERT_EQ(s.params.size(), 3u);
    EXPECT_EQ(s.params[0], (std::pair<std::string, int64_t>{"m", 1024}));
    EXPECT_EQ(s.params[2], (std::pair<std::string, int64_t>{"k", 1024}));
    te::OpSpec c = parse_op_spec("conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1");
    EXPECT_EQ(c.params.size(), 9u);
    EXPECT_EQ(parse_op_spec("relu").params.size(), 0u);
    EXPECT_EQ(parse_op_spec("matmul:m=-4").params[0].second, -4);
    EXPECT_EQ(parse_op_spec("max_pool2d:count_include_pad=1").params[0].first, "count_include_pad");
}

void expect_parse_error(const std::string& text, const std::string& message) {
    try {
        parse_op_spec(text);
        FAIL() << "no error for '" << text << "'";
    } catch (const tessera::UserError& e) {
        EXPECT_EQ(std::string(e.what()), message);
    }
}

TEST(ParseOpSpec, MalformedSpecsNameTheBadPart) {
    expect_parse_error("", "empty op spec");
    expect_parse_error("matmul:m=", "malformed op spec 'matmul:m=': missing value for 'm'");
    expect_parse_error("matmul:m=abc",
                       "malformed op spec 'matmul:m=abc': value 'abc' of 'm' is not an integer");
    expect_parse_error("matmul:m=1,m=2", "malformed op spec 'matmul:m=1,m=2': duplicate key 'm'");
    expect_parse_error("matmul:", "malformed op spec 'matmul:': no parameters after ':'");
    expect_parse_error("matmul:m=1,,k=2", "malformed op spec 'matmul:m=1,,k=2': empty item");
    expect_parse_error("matmul:m=1,", "malformed op spec 'matmul:m=1,': empty item");
    expect_parse_error("matmul:m", "malformed op spec 'matmul:m': expected key=value, got 'm'");
    expect_parse_error("matmul:=3", "malformed op spec 'matmul:=3': bad key ''");
    expect_parse_error("MatMul:m=1", "malformed op spec 'MatMul:m=1': bad op name 'MatMul'");
    expect_parse_error(":m=1", "malformed op spec ':m=1': bad op name ''");
    expect_parse_error("matmul:m=1.5",
                       "malformed op spec 'matmul:m=1.5': value '1.5' of 'm' is not an integer");
    expect_parse_error("matmul:m=99999999999999999999",
                       "malformed op spec 'matmul:m=99999999999999999999': value "
                       "'99999999999999999999' of 'm' is not an integer");
    expect_parse_error("matmul:m=-",
                       "malformed op spec 'matmul:m=-': value '-' of 'm' is not an integer");
    expect_parse_error("matmul:m= 4",
                       "malformed op spec 'matmul:m= 4': value ' 4' of 'm' is not an integer");
}

void expect_make_error(const std::string& text, const std::string& message) {
    try {
        make_op(text);
        FAIL() << "no error for '" << text << "'";
    } catch (const tessera::UserError& e) {
        EXPECT_EQ(std::string(e.what()), message);
    }
}

TEST(MakeOp, BadSpecsNameTheBadPart) {
    try {
        make_op("matmull:m=1");
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(),
                    ::testing::StartsWith(
                        "unknown op 'matmull' (known: matmul, dense, batch_matmul, conv2d"));
    }
    expect_make_error("matmul:m=4,n=4", "matmul: missing size 'k'");
    expect_make_error("matmul:m=-4,n=4,k=4", "matmul: size 'm' must be positive, got -4");
    expect_make_error("matmul:m=0,n=4,k=4", "matmul: size 'm' must be positive, got 0");
    expect_make_error("matmul:m=4,n=4,k=4,q=1", "matmul: unknown key 'q' (accepted: m, n, k)");
    expect_make_error("dense:m=4,n=4,k=4,bias=2", "dense: flag 'bias' must be 0 or 1, got 2");
    expect_make_error("conv2d:c=4,h=8,w=8,k=4,pad=-1",
                      "conv2d: 'pad' must be non-negative, got -1");
    expect_make_error("matmul:m=4,n=4,k=4294967296",
                      "matmul: 'k' is too large, got 4294967296 (max 2147483647)");
    expect_make_error("conv2d:c=6,h=8,w=8,k=4,groups=4",
                      "conv2d: groups 4 must divide c=6 and k=4");
    EXPECT_THROW(make_op("conv2d:c=4,h=2,w=2,k=4,r=5"), tessera::UserError);
    EXPECT_THROW(make_op("slice:m=3,n=4,start=4"), tessera::UserError);
    expect_make_error("concat:m=2,n=2,parts=65", "concat: 'parts' must be at most 64, got 65");
    expect_make_error("conv2d:n=2147483647,c=2147483647,h=2147483647,w=2147483647,k=1,r=1",
                      "tensor 'x' of shape [2147483647, 2147483647, 2147483647, 2147483647] has "
                      "too many elements");
}

TEST(MakeOp, CanonicalSpecAndFlops) {
    te::OpInstance mm = make_op("matmul:k=5,m=3,n=4");
    EXPECT_EQ(mm.name, "matmul");
    EXPECT_EQ(mm.canonical_spec, "matmul:m=3,n=4,k=5");
    EXPECT_EQ(mm.flops, 2.0 * 3 * 4 * 5);
    te::OpInstance conv = make_op("conv2d:c=4,h=9,w=9,k=8,stride=2,pad=1,groups=2");
    EXPECT_EQ(
        conv.canonical_spec,
        "conv2d:n=1,c=4,h=9,w=9,k=8,r=3,s=3,stride=2,pad=1,dilation=1,groups=2,bias=0,relu=0");
    EXPECT_EQ(conv.flops, 2.0 * 1 * 8 * 5 * 5 * 2 * 3 * 3);
    EXPECT_EQ(
        make_op("conv2d:c=4,h=9,w=9,k=8,r=1").canonical_spec,
        "conv2d:n=1,c=4,h=9,w=9,k=8,r=1,s=1,stride=1,pad=0,dilation=1,groups=1,bias=0,relu=0");
    EXPECT_EQ(make_op("max_pool2d:c=2,h=8,w=8,kernel=3").canonical_spec,
              "max_pool2d:n=1,c=2,h=8,w=8,kernel=3,stride=3,pad=0");
    EXPECT_EQ(make_op("relu:n=10").flops, 10.0);
    EXPECT_EQ(make_op("slice:m=2,n=9,start=1,step=2").canonical_spec,
              "slice:m=2,n=9,start=1,end=9,step=2");
}

TEST(MakeOp, KeysDocumentEveryOp) {
    for (const auto& name : te::list_ops()) {
        auto keys = te::op_keys(name);
        EXPECT_FALSE(keys.empty()) << name;
        for (const auto& k : keys)
            EXPECT_FALSE(k.doc.empty()) << name << "." << k.name;
    }
    EXPECT_THROW(te::op_keys("nope"), tessera::UserError);
}

/// A small spec for every op, all its required sizes given.
std::string small_spec(const std::string& name) {
    std::string spec = name + ":";
    bool first = true;
    for (const auto& k : te::op_keys(name)) {
        if (!k.required)
            continue;
        int64_t v = (k.name == "k" || k.name == "c") ? 4 : (k.name == "h" || k.name == "w") ? 7 : 3;
        spec += (first ? "" : ",") + k.name + "=" + std::to_string(v);
        first = false;
    }
    return first ? name : spec;
}

TEST(MakeOp, EveryOpBuildsAndRunsFinite) {
    std::vector<std::string> ops = te::list_ops();
    EXPECT_GE(ops.size(), 25u);
    for (const auto& name : ops) {
        SCOPED_TRACE(name);
        te::OpInstance inst = make_op(small_spec(name));
        EXPECT_EQ(inst.name, name);
        EXPECT_GT(inst.flops, 0);
        EXPECT_EQ(make_op(inst.canonical_spec).canonical_spec, inst.canonical_spec);
        auto in = random_inputs(inst.compute, 7, 0.25f, 1.0f); // positive for sqrt
        auto out = run_compute(inst.compute, in);
        for (const auto& o : out)
            for (float v : o)
                ASSERT_TRUE(std::isfinite(v)) << v;
        auto jit_out = run_compute(inst.compute, in, jit_executor());
        ASSERT_EQ(jit_out.size(), out.size());
        for (size_t i = 0; i < out.size(); ++i)
            EXPECT_LE(max_rel_error(jit_out[i], out[i]), 1e-5) << "output " << i;
    }
}

TEST(MakeOp, RegistryOpsMatchReferences) {
    {
        te::OpInstance op = make_op("dense:m=7,n=13,k=5,bias=1,relu=1");
        auto in = random_inputs(op.compute, 113);
        auto r = as_refs(op.compute, in);
        expect_output(op.compute, in, ref::dense(r[0], r[1], &r[2], true));
    }
    {
        te::OpInstance op =
            make_op("conv2d:n=2,c=4,h=9,w=7,k=6,r=3,s=1,stride=2,pad=1,groups=2,bias=1");
        auto in = random_inputs(op.compute, 127);
        auto r = as_refs(op.compute, in);
        ref::ConvArgs a;
        a.stride_h = a.stride_w = 2;
        a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
        a.groups = 2;
        expect_output(op.compute, in, ref::conv2d(r[0], r[1], a, &r[2]));
    }
    {
        te::OpInstance op = make_op("add:m=7,n=13");
        auto in = random_inputs(op.compute, 131);
        auto r = as_refs(op.compute, in);
        EXPECT_EQ(r[1].shape, (std::vector<int64_t>{13}));
        expect_output(op.compute, in, ref::binary(r[0], r[1], [](double a, double b) {
                          return (float)a + (float)b;
                      }));
    }
    {
        te::OpInstance op =
            make_op("avg_pool2d:c=2,h=9,w=9,kernel=3,stride=2,pad=1,count_include_pad=1");
        auto in = random_inputs(op.compute, 137);
        ref::PoolArgs a;
        a.kernel_h = a.kernel_w = 3, a.stride_h = a.stride_w = 2;
        a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
        a.count_include_pad = true;
        expect_output(op.compute, in, ref::avg_pool2d(as_refs(op.compute, in)[0], a));
    }
}

} // namespace
} // namespace tessera::testing
