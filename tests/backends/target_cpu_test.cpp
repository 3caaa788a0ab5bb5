// describe_cpu and compile_options_for: the CPU of a Target as LLVM's tables describe it, and
// object code for it.
#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include "common/model_library_loader.h"
#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/stmt.h"
#include "tessera/lower/lower_default.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"

namespace tessera::backend {
namespace {

bool has(const CpuInfo& c, const std::string& f) {
    return std::find(c.features.begin(), c.features.end(), f) != c.features.end();
}

TEST(DescribeCpu, TheHostTargetIsTheHost) {
    const CpuInfo& host = host_info();
    const CpuInfo d = describe_cpu(parse_target("llvm"));
    EXPECT_EQ(d.triple, host.triple);
    EXPECT_EQ(d.cpu_name, host.cpu_name);
    EXPECT_EQ(d.features, host.features);
    EXPECT_EQ(d.vector_bits, host.vector_bits);
    EXPECT_EQ(d.l2_bytes, host.l2_bytes);
    EXPECT_EQ(describe_cpu(parse_target("llvm -num-cores=3")).cores, 3);
    EXPECT_EQ(describe_cpu(parse_target("llvm -mcpu=" + host.cpu_name)).features, host.features);
    // The host's own code: no options.
    const CompileOptions o = compile_options_for(Target{});
    EXPECT_TRUE(o.triple.empty() && o.cpu.empty() && o.features.empty());
}

TEST(DescribeCpu, AnotherX86CpuHasItsOwnFeatures) {
    if (host_info().triple.rfind("x86_64", 0) != 0)
        GTEST_SKIP() << "x86-64 CPU names";
    const CpuInfo sky = describe_cpu(parse_target("llvm -mcpu=skylake"));
    EXPECT_EQ(sky.triple, host_info().triple);
    EXPECT_EQ(sky.cpu_name, "skylake");
    EXPECT_TRUE(has(sky, "avx2") && has(sky, "fma"));
    EXPECT_FALSE(has(sky, "avx512f"));
    EXPECT_EQ(sky.vector_bits, 256);
    EXPECT_EQ(sky.l2_bytes, 0); // not the host's CPU: its caches are unknown
    const CpuInfo skx = describe_cpu(parse_target("llvm -mcpu=skylake-avx512"));
    EXPECT_EQ(skx.vector_bits, 512);
    // -mattr switches features off, and those that need them.
    const CpuInfo off = describe_cpu(parse_target("llvm -mcpu=skylake-avx512 -mattr=-avx512f"));
    EXPECT_FALSE(has(off, "avx512f"));
    EXPECT_FALSE(has(off, "avx512bw"));
    EXPECT_EQ(off.vector_bits, 256);
    const CompileOptions o = compile_options_for(parse_target("llvm -mcpu=skylake -mattr=-fma"));
    EXPECT_EQ(o.cpu, "skylake");
    EXPECT_EQ(o.features, "-fma");
}

TEST(DescribeCpu, Aarch64IsDescribedFromLlvmsTables) {
    const CpuInfo a =
        describe_cpu(parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"));
    EXPECT_EQ(a.triple, "aarch64-unknown-linux-gnu");
    EXPECT_EQ(a.cpu_name, "neoverse-n1");
    EXPECT_TRUE(has(a, "neon"));
    EXPECT_EQ(a.vector_bits, 128);
    EXPECT_EQ(a.cores, host_info().cores);
    EXPECT_EQ(describe_cpu(parse_target("llvm -mtriple=aarch64-linux-gnu")).cpu_name, "generic");
    const CompileOptions o =
        compile_options_for(parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"));
    EXPECT_EQ(o.triple, "aarch64-linux-gnu");
    EXPECT_EQ(o.cpu, "neoverse-n1");
}

TEST(DescribeCpu, UnknownTriplesAndCpusAreUserErrors) {
    for (const char* t : {"llvm -mcpu=no-such-cpu", "llvm -mtriple=nosucharch-linux-gnu"}) {
        try {
            describe_cpu(parse_target(t));
            ADD_FAILURE() << t << " was accepted";
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("target '") + t + "'"),
                      std::string::npos)
                << e.what();
        }
    }
}

// An object file for aarch64: the ELF machine is AArch64 and the code is NEON.
TEST(CompileForTarget, EmitsAnAarch64ObjectWithNeonCode) {
    te::OpInstance inst = te::make_op(te::parse_op_spec("add:m=4,n=67"));
    ir::LoweredFunc f = lower::lower_default(inst.compute, "k");
    const CompileOptions o =
        compile_options_for(parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"));
    testing::ScratchDir dir("tessera_target_cpu");
    const std::string obj = dir.file("k.o");
    emit_object_file({f}, obj, o);
    std::ifstream in(obj, std::ios::binary);
    unsigned char h[20] = {};
    in.read(reinterpret_cast<char*>(h), sizeof h);
    EXPECT_EQ(h[18] | h[19] << 8, 183); // EM_AARCH64
    const std::string ir = emit_llvm_ir({f}, o);
    EXPECT_NE(ir.find("target triple = \"aarch64-unknown-linux-gnu\""), std::string::npos);
    EXPECT_NE(ir.find("\"target-cpu\"=\"neoverse-n1\""), std::string::npos);
}

// Another x86 CPU: its name and features are what the code is compiled for.
TEST(CompileForTarget, AnotherX86CpuNamesItselfInTheCode) {
    if (host_info().triple.rfind("x86_64", 0) != 0)
        GTEST_SKIP() << "x86-64 CPU names";
    te::OpInstance inst = te::make_op(te::parse_op_spec("add:m=4,n=67"));
    ir::LoweredFunc f = lower::lower_default(inst.compute, "k");
    const std::string ir =
        emit_llvm_ir({f}, compile_options_for(parse_target("llvm -mcpu=skylake")));
    EXPECT_NE(ir.find("\"target-cpu\"=\"skylake\""), std::string::npos);
    EXPECT_EQ(ir.find("+avx512f"), std::string::npos);
}

} // namespace
} // namespace tessera::backend
