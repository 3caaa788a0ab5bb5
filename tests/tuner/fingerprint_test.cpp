// Hardware fingerprint: canonical text, short hash, ISA class.
#include <gtest/gtest.h>

#include "tessera/backends/host.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::tune {
namespace {

backend::CpuInfo sample_host() {
    backend::CpuInfo h;
    h.triple = "x86_64-pc-linux-gnu";
    h.cpu_name = "sapphirerapids";
    h.features = {"avx2", "avx512f", "cmov", "fma", "sse4.2", "popcnt"};
    h.cores = 7;
    h.l1d_bytes = 48 * 1024;
    h.l2_bytes = 2048 * 1024;
    h.l3_bytes = 105 * 1024 * 1024;
    h.cpu_model_name = "Intel(R) Xeon(R) Platinum 8480+";
    return h;
}

const char* kCpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
                       "model\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
                       "stepping\t: 8\n\nprocessor\t: 1\nvendor_id\t: Other\n";

TEST(Fingerprint, ReadsCpuIdentityFromCpuinfo) {
    HardwareFingerprint fp = make_fingerprint(sample_host(), kCpuinfo);
    EXPECT_EQ(fp.cpu_vendor, "GenuineIntel");
    EXPECT_EQ(fp.cpu_family, 6);
    EXPECT_EQ(fp.cpu_model, 143);
    EXPECT_EQ(fp.cpu_stepping, 8);
    EXPECT_EQ(fp.cores, 7);
    EXPECT_EQ(fp.l2_bytes, 2048 * 1024);
    EXPECT_TRUE(fp.gpu_name.empty());
    std::string text = fp.canonical_text();
    EXPECT_NE(text.find("cpu_vendor=GenuineIntel\n"), std::string::npos) << text;
    EXPECT_NE(text.find("features=avx2,avx512f,cmov,fma,popcnt,sse4.2\n"), std::string::npos)
        << text;
    EXPECT_EQ(fp.hash().size(), 16u);
}

TEST(Fingerprint, IsaClassKeepsTripleAndSortedVectorFeaturesOnly) {
    HardwareFingerprint fp = make_fingerprint(sample_host(), kCpuinfo);
    EXPECT_EQ(fp.isa_class(), "x86_64-pc-linux-gnu;avx2,avx512f,fma,sse4.2");
    // Another machine of the same kind (cores, caches, model differ): same class, other hash.
    backend::CpuInfo other = sample_host();
    other.cores = 56;
    other.l3_bytes = 0;
    other.cpu_model_name = "Intel(R) Xeon(R) Gold 6430";
    other.features = {"sse4.2", "fma", "popcnt", "avx512f", "avx2"};
    HardwareFingerprint fp2 = make_fingerprint(other, "");
    EXPECT_EQ(fp2.isa_class(), fp.isa_class());
    EXPECT_NE(fp2.hash(), fp.hash());
    // A missing vector feature changes the class.
    other.features = {"avx2", "fma", "sse4.2"};
    EXPECT_NE(make_fingerprint(other, "").isa_class(), fp.isa_class());
}

TEST(Fingerprint, HashDependsOnEveryIdentityField) {
    HardwareFingerprint base = make_fingerprint(sample_host(), kCpuinfo);
    HardwareFingerprint fp = base;
    fp.cpu_stepping = 9;
    EXPECT_NE(fp.hash(), base.hash());
    fp = base;
    fp.l1d_bytes = 32 * 1024;
    EXPECT_NE(fp.hash(), base.hash());
    fp = base;
    fp.gpu_arch = "sm_90";
    EXPECT_NE(fp.hash(), base.hash());
}

TEST(Fingerprint, HostFingerprintIsStableAcrossCalls) {
    const HardwareFingerprint& a = host_fingerprint();
    std::string h1 = a.hash();
    std::string text = a.canonical_text();
    EXPECT_EQ(host_fingerprint().hash(), h1);
    // Recomputing from scratch gives the same result.
    EXPECT_EQ(make_fingerprint(backend::host_info(), "").triple, a.triple);
    EXPECT_EQ(host_fingerprint().canonical_text(), text);
    EXPECT_FALSE(a.triple.empty());
    EXPECT_EQ(a.isa_class().rfind(a.triple + ";", 0), 0u);
}

} // namespace
} // namespace tessera::tune
