#include "tessera/support/target.h"

#include <gtest/gtest.h>

#include "tessera/support/error.h"

namespace tessera {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_target(text);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TEST(Target, ParsesEveryFieldAndPrintsThemInOneOrder) {
    const Target t = parse_target(
        "llvm -mcpu=neoverse-n1 -num-cores 4 --mtriple=aarch64-linux-gnu -mattr=+sve,-fp16");
    EXPECT_TRUE(t.is_llvm());
    EXPECT_EQ(t.triple, "aarch64-linux-gnu");
    EXPECT_EQ(t.cpu, "neoverse-n1");
    EXPECT_EQ(t.features, "+sve,-fp16");
    EXPECT_EQ(t.num_cores, 4);
    EXPECT_EQ(t.str(),
              "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -mattr=+sve,-fp16 -num-cores=4");
    EXPECT_EQ(parse_target(t.str()), t);

    const Target c = parse_target("  cuda   -arch=sm_80 ");
    EXPECT_TRUE(c.is_cuda());
    EXPECT_EQ(c.arch, "sm_80");
    EXPECT_EQ(c.str(), "cuda -arch=sm_80");
    EXPECT_EQ(parse_target("cuda").str(), "cuda");
}

TEST(Target, TheHostIsTheDefaultAndCpuMeansLlvm) {
    EXPECT_EQ(parse_target("llvm"), Target{});
    EXPECT_EQ(parse_target("cpu"), Target{});
    EXPECT_EQ(Target{}.str(), "llvm");
    // The last of a repeated option wins.
    EXPECT_EQ(parse_target("llvm -mcpu=a -mcpu=skylake").cpu, "skylake");
}

TEST(Target, BadStringsNameTheOffendingWord) {
    EXPECT_NE(error_of("").find("empty"), std::string::npos);
    EXPECT_NE(error_of("opencl").find("unknown kind 'opencl'"), std::string::npos);
    EXPECT_NE(error_of("llvm -march=x").find("unknown option -march"), std::string::npos);
    EXPECT_NE(error_of("llvm -arch=sm_90").find("-arch does not apply to llvm"), std::string::npos);
    EXPECT_NE(error_of("cuda -mcpu=x").find("-mcpu does not apply to cuda"), std::string::npos);
    EXPECT_NE(error_of("llvm -mcpu").find("-mcpu needs a value"), std::string::npos);
    EXPECT_NE(error_of("llvm -mcpu=").find("-mcpu needs a value"), std::string::npos);
    EXPECT_NE(error_of("llvm skylake").find("'skylake' is not an option"), std::string::npos);
    EXPECT_NE(error_of("llvm -num-cores=0").find("1..4096"), std::string::npos);
    EXPECT_NE(error_of("llvm -num-cores=3x").find("1..4096"), std::string::npos);
    EXPECT_NE(error_of("cuda -arch=compute_90").find("sm_<digits>"), std::string::npos);
    EXPECT_NE(error_of("llvm -mattr=avx2").find("+name or -name"), std::string::npos);
    EXPECT_NE(error_of("llvm -mattr=+avx2,").find("+name or -name"), std::string::npos);
    // Every message names the whole string.
    EXPECT_EQ(error_of("llvm -foo=1").rfind("target 'llvm -foo=1': ", 0), 0u);
}

} // namespace
} // namespace tessera
