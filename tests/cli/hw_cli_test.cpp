// `tessera hw`: the text form shows the CPU identity, the hashed fingerprint text and the short
// hash, and agrees with the JSON form and with the library's host_fingerprint().
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/tuner/fingerprint.h"

namespace {

std::string run_stdout(const std::string& args) {
    std::string cmd = std::string(TESSERA_BINARY) + " " + args + " 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
        out.append(buf, n);
    EXPECT_EQ(p ? ::pclose(p) : -1, 0) << args;
    return out;
}

TEST(HwCli, ShowsIdentityFingerprintTextAndHash) {
    const tessera::tune::HardwareFingerprint& fp = tessera::tune::host_fingerprint();
    std::string text = run_stdout("hw");
    EXPECT_NE(text.find("fingerprint  " + fp.hash()), std::string::npos) << text;
    EXPECT_NE(text.find("vendor       "), std::string::npos) << text;
    EXPECT_NE(text.find("family " + std::to_string(fp.cpu_family) + ", model " +
                        std::to_string(fp.cpu_model) + ", stepping " +
                        std::to_string(fp.cpu_stepping)),
              std::string::npos)
        << text;
    // Every line of the canonical text is shown (indented), so a user can see what is hashed.
    std::string canon = fp.canonical_text();
    for (size_t pos = 0; pos < canon.size();) {
        size_t end = canon.find('\n', pos);
        EXPECT_NE(text.find("  " + canon.substr(pos, end - pos) + "\n"), std::string::npos)
            << canon.substr(pos, end - pos);
        pos = end + 1;
    }

    nlohmann::json j = nlohmann::json::parse(run_stdout("hw --json"));
    EXPECT_EQ(j["fingerprint"], fp.hash());
    EXPECT_EQ(j["fingerprint_text"], canon);
    EXPECT_EQ(j["vendor"], fp.cpu_vendor);
    EXPECT_EQ(j["stepping"], fp.cpu_stepping);
    EXPECT_EQ(j["isa_class"], fp.isa_class());
    EXPECT_EQ(j["gpu_arch"], fp.gpu_arch);
    EXPECT_FALSE(j.contains("peak_rates")); // measured only when asked
    EXPECT_FALSE(j.contains("core_round_trip_ns"));
}

// --peak: the f32, bf16 and int8 product rates, each named by its instruction, positive, on one
// core and on --threads cores, in the JSON and in the text.
TEST(HwCli, PeakMeasuresTheThreeProductRates) {
    const nlohmann::json j = nlohmann::json::parse(run_stdout("hw --peak --threads 1 --json"));
    ASSERT_TRUE(j.contains("peak_rates"));
    std::vector<std::string> precisions;
    for (const nlohmann::json& r : j["peak_rates"]) {
        precisions.push_back(r["precision"]);
        EXPECT_FALSE(r["instruction"].get<std::string>().empty()) << r;
        EXPECT_GT(r["one_core"].get<double>(), 0.0) << r;
        EXPECT_GT(r["all_cores"].get<double>(), 0.0) << r;
        EXPECT_EQ(r["threads"], 1) << r;
    }
    EXPECT_EQ(precisions, (std::vector<std::string>{"f32", "bf16", "int8"}));
    // The cache-line round trip between two CPUs, measured where the process has two.
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    ASSERT_TRUE(j.contains("core_round_trip_ns"));
    if (CPU_COUNT(&set) >= 2) {
        EXPECT_GT(j["core_round_trip_ns"].get<double>(), 0.0);
    } else {
        EXPECT_TRUE(j["core_round_trip_ns"].is_null());
    }
    const std::string text = run_stdout("hw --peak --threads 1");
    for (const char* what :
         {"peak rates", "f32 ", "bf16 ", "int8 ", "GFLOP/s", "GOP/s", "core round trip"})
        EXPECT_NE(text.find(what), std::string::npos) << what << " in\n" << text;
}

// --round-trip alone: the round trip (positive with two CPUs, null with one), no peak rates.
TEST(HwCli, RoundTripAloneMeasuresNoPeaks) {
    const nlohmann::json j = nlohmann::json::parse(run_stdout("hw --round-trip --json"));
    EXPECT_FALSE(j.contains("peak_rates"));
    ASSERT_TRUE(j.contains("core_round_trip_ns"));
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    if (CPU_COUNT(&set) >= 2)
        EXPECT_GT(j["core_round_trip_ns"].get<double>(), 0.0);
    else
        EXPECT_TRUE(j["core_round_trip_ns"].is_null());
    const std::string text = run_stdout("hw --round-trip");
    EXPECT_NE(text.find("core round trip"), std::string::npos) << text;
    EXPECT_EQ(text.find("peak rates"), std::string::npos) << text;
}

} // namespace
