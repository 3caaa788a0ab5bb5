// The record identity and default-schedule options derived from a Target (tune_target.h).
#include "tessera/tuner/tune_target.h"

#include <gtest/gtest.h>

#include "tessera/backends/host.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::tune {
namespace {

// Records of this host keep the identity they always had.
TEST(TuneTarget, TheHostKeepsItsRecordIdentity) {
    const HardwareFingerprint& fp = host_fingerprint();
    const TuneTarget t = llvm_tune_target(parse_target("llvm"));
    EXPECT_EQ(t.target, "llvm -mcpu=" + backend::host_info().cpu_name);
    EXPECT_EQ(t.fingerprint, fp.hash());
    EXPECT_EQ(t.isa_class, fp.isa_class());
    // The core count is not part of it.
    EXPECT_EQ(llvm_tune_target(parse_target("llvm -num-cores=3")).target, t.target);
    EXPECT_TRUE(runs_on_this_machine(Target{}));
}

TEST(TuneTarget, AnotherCpuOfThisArchitectureIsNamedInItsRecords) {
    if (backend::host_info().triple.rfind("x86_64", 0) != 0)
        GTEST_SKIP() << "x86-64 CPU names";
    const Target sky = parse_target("llvm -mcpu=skylake -mattr=-fma");
    const TuneTarget t = llvm_tune_target(sky);
    EXPECT_EQ(t.target, "llvm -mcpu=skylake -mattr=-fma");
    EXPECT_EQ(t.isa_class.find("fma"), std::string::npos) << t.isa_class;
    EXPECT_NE(t.isa_class.find("avx2"), std::string::npos) << t.isa_class;
    // Measured here when its code runs here, else it is the CPU's own identity.
    if (runs_on_this_machine(sky))
        EXPECT_EQ(t.fingerprint, host_fingerprint().hash());
    else
        EXPECT_NE(t.fingerprint, host_fingerprint().hash());
}

TEST(TuneTarget, ACrossTargetIsNeverTheHost) {
    const Target arm = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1");
    EXPECT_FALSE(runs_on_this_machine(arm));
    const TuneTarget t = llvm_tune_target(arm);
    EXPECT_EQ(t.target, "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-n1");
    EXPECT_NE(t.fingerprint, host_fingerprint().hash());
    EXPECT_EQ(t.isa_class.rfind("aarch64-unknown-linux-gnu;", 0), 0u) << t.isa_class;
    EXPECT_NE(t.isa_class.find("neon"), std::string::npos) << t.isa_class;
    // Deterministic: the same target, the same identity.
    EXPECT_EQ(llvm_tune_target(arm).fingerprint, t.fingerprint);
}

TEST(TuneTarget, DefaultScheduleOptionsComeFromTheTargetsCpu) {
    const backend::CpuInfo& host = backend::host_info();
    const sched::DefaultScheduleOptions h = default_schedule_options_for(Target{});
    EXPECT_EQ(h.target, sched::TargetKind::Cpu);
    EXPECT_EQ(h.num_cores, std::max(1, host.cores));
    EXPECT_EQ(h.vector_lanes, std::max(4, host.vector_bits / 32));
    EXPECT_EQ(h.cpu_tiles, host.has_u8s8_tiles());
    EXPECT_EQ(default_schedule_options_for(Target{}, 3).num_cores, 3);
    EXPECT_EQ(default_schedule_options_for(parse_target("llvm -num-cores=5")).num_cores, 5);
    const sched::DefaultScheduleOptions arm = default_schedule_options_for(
        parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"));
    EXPECT_EQ(arm.vector_lanes, 4);
    EXPECT_EQ(arm.vector_registers, 32); // NEON's v0-v31, not the 16 of x86 without AVX-512
    EXPECT_FALSE(arm.cpu_tiles);
    EXPECT_EQ(h.vector_registers, host.vector_registers);
    EXPECT_EQ(default_schedule_options_for(parse_target("llvm -mcpu=haswell")).vector_registers,
              16);
    EXPECT_EQ(
        default_schedule_options_for(parse_target("llvm -mcpu=skylake-avx512")).vector_registers,
        32);
    EXPECT_EQ(default_schedule_options_for(parse_target("cuda")).target, sched::TargetKind::Gpu);

    sched::SketchOptions sk;
    sched::SampleOptions sa;
    set_search_target(default_schedule_options_for(parse_target("llvm -num-cores=6")), sk, sa);
    EXPECT_EQ(sk.num_cores, 6);
    EXPECT_EQ(sa.num_cores, 6);
    EXPECT_EQ(sa.max_vectorize_lanes, h.vector_lanes);
    set_search_target(default_schedule_options_for(parse_target("cuda")), sk, sa);
    EXPECT_EQ(sk.target, sched::TargetKind::Gpu);
}

} // namespace
} // namespace tessera::tune
