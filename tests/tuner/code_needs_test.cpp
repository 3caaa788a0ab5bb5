// What a schedule's code needs of a CPU (code_needs.h), and the `compatible` lookup tier built
// on it (lookup.h): records of another CPU model serve when their code needs only what this CPU
// has, and are refused with the reason in words when they need more; transfer seeds.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tessera/backends/host.h"
#include "tessera/ir/type.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/te/op_library.h"
#include "tessera/tuner/code_needs.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"
#include "tessera/tuner/lookup.h"

namespace tessera::tune {
namespace {

te::Compute matmul(int64_t m, int64_t k, int64_t n, ir::DataType t = ir::DataType::f32()) {
    te::Tensor a = te::placeholder({m, k}, t, "A");
    te::Tensor b = te::placeholder({k, n}, t, "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

/// The output columns split by `lanes`, the inner part innermost and vectorized (lanes 1: a
/// scalar nest with the same split).
sched::State vectorized(const te::Compute& c, int64_t lanes) {
    sched::State s = sched::make_initial_state(c);
    const int out = int(s.stages.size()) - 1; // i, j, k
    sched::split(s, out, 1, {lanes});         // i, j.0, j.1, k
    sched::reorder(s, out, {0, 1, 3, 2});     // i, j.0, k, j.1
    if (lanes > 1)
        sched::vectorize(s, out, 3);
    return s;
}

const std::string kX86 = "x86_64-pc-linux-gnu";
/// ISA classes of the CPUs met so far: Rocket Lake (AVX-512 with FP16 and AMX as its VM reports
/// it), Zen 5 (AVX-512 with BF16 and VNNI, no FP16), Zen 1 (AVX2 only).
const std::string kRocketLake =
    kX86 + ";amx-bf16,amx-int8,amx-tile,avx,avx2,avx512bw,avx512f,avx512fp16,avx512vnni,fma,sse4.2";
const std::string kZen5 =
    kX86 + ";avx,avx2,avx512bf16,avx512bw,avx512f,avx512vnni,avx512vp2intersect,fma,sse4.2,sse4a";
const std::string kZen1 = kX86 + ";avx,avx2,fma,sse4.2,sse4a";

TEST(CodeNeeds, IsaClassPartsAndRegisterWidth) {
    EXPECT_EQ(isa_class_triple(kZen1), kX86);
    EXPECT_EQ(isa_class_features(kZen1),
              (std::vector<std::string>{"avx", "avx2", "fma", "sse4.2", "sse4a"}));
    EXPECT_EQ(isa_class_vector_bits(kRocketLake), 512);
    EXPECT_EQ(isa_class_vector_bits(kZen1), 256);
    EXPECT_EQ(isa_class_vector_bits(kX86 + ";sse4.2"), 128);
    EXPECT_EQ(isa_class_vector_bits("aarch64-unknown-linux-gnu;neon"), 128);
    EXPECT_TRUE(isa_class_features("x86_64-pc-linux-gnu;").empty());
}

TEST(CodeNeeds, WidthCappedAtTheRecordingRegisterDecidesTheFeatures) {
    const te::Compute c = matmul(7, 13, 67);
    // 16 float lanes recorded on AVX-512: one zmm register, needs avx512f.
    CodeNeeds n16 = code_needs(vectorized(c, 16), kRocketLake);
    EXPECT_EQ(n16.vector_bits, 512);
    EXPECT_EQ(n16.features, (std::vector<std::string>{"avx512f"}));
    // The same schedule recorded on AVX2 was two ymm registers there: AVX is enough.
    CodeNeeds n16_avx2 = code_needs(vectorized(c, 16), kZen1);
    EXPECT_EQ(n16_avx2.vector_bits, 256);
    EXPECT_EQ(n16_avx2.features, (std::vector<std::string>{"avx"}));
    // 8 float lanes: 256 bits wherever recorded.
    EXPECT_EQ(code_needs(vectorized(c, 8), kRocketLake).features, (std::vector<std::string>{"avx"}));
    // 4 lanes: SSE, which every x86-64 has.
    EXPECT_TRUE(code_needs(vectorized(c, 4), kRocketLake).features.empty());
    // Scalar code needs nothing.
    CodeNeeds scalar = code_needs(vectorized(c, 1), kRocketLake);
    EXPECT_EQ(scalar.vector_bits, 0);
    EXPECT_TRUE(scalar.features.empty());
    // On Arm: neon up to 128 bits, sve beyond.
    const std::string arm = "aarch64-unknown-linux-gnu;neon,sve";
    EXPECT_EQ(code_needs(vectorized(c, 4), arm).features, (std::vector<std::string>{"neon"}));
}

TEST(CodeNeeds, ElementTypesWithAnExtensionNeedItWhenTheRecorderHadIt) {
    // f16 vectors on a machine with avx512fp16 used it; on one without, only F16C conversions.
    const te::Compute h = matmul(5, 9, 33, ir::DataType::f16());
    EXPECT_EQ(code_needs(vectorized(h, 32), kRocketLake).features,
              (std::vector<std::string>{"avx512f", "avx512fp16"}));
    EXPECT_EQ(code_needs(vectorized(h, 16), kZen1 + ",f16c").features,
              (std::vector<std::string>{"avx", "f16c"}));
}

TEST(CodeNeeds, TileMatmulNestsNeedAmxWhereTheRecorderHadIt) {
    // The root of a tile nest annotated (scalar loops otherwise): AMX on the machine that had
    // it, nothing where the code ran as plain loops.
    const te::Compute c = matmul(7, 13, 67);
    sched::State s = vectorized(c, 1);
    sched::annotate(s, int(s.stages.size()) - 1, 2, sched::IterAnnotation::TileMatmul);
    EXPECT_EQ(code_needs(s, kRocketLake).features,
              (std::vector<std::string>{"amx-int8", "amx-tile"}));
    EXPECT_TRUE(code_needs(s, kZen5).features.empty());
    EXPECT_EQ(missing_features(code_needs(s, kRocketLake), kZen5),
              (std::vector<std::string>{"amx-int8", "amx-tile"}));
}

TEST(CodeNeeds, Bf16TileNestsNeedAmxBf16) {
    // A bf16 product's stage (sums of dot2_bf16) on tiles needs AMX-BF16, not AMX-INT8.
    const te::Tensor x = te::placeholder({16, 32}, ir::DataType::bf16(), "X");
    const te::Tensor w = te::placeholder({16, 16}, ir::DataType::i32(), "W");
    sched::State s = sched::make_initial_state(te::make_compute({x, w}, {te::bf16_matmul(x, w)}));
    sched::annotate(s, int(s.stages.size()) - 1, 0, sched::IterAnnotation::TileMatmul);
    EXPECT_EQ(code_needs(s, kRocketLake).features,
              (std::vector<std::string>{"amx-bf16", "amx-tile"}));
    EXPECT_TRUE(code_needs(s, kZen5).features.empty());
}

TEST(CodeNeeds, MissingFeaturesAreThoseTheHostLacks) {
    CodeNeeds n;
    n.features = {"avx", "avx512f"};
    EXPECT_EQ(missing_features(n, kZen1), (std::vector<std::string>{"avx512f"}));
    EXPECT_TRUE(missing_features(n, kZen5).empty());
}

// ---- the compatible tier --------------------------------------------------------------------

struct Machine {
    std::string cpu, fingerprint, isa_class;
    TuneTarget key() const { return {"llvm -mcpu=" + cpu, fingerprint, isa_class}; }
};
const Machine kRocketLakeBox{"rocketlake", "aaaa000011112222", kRocketLake};
const Machine kZen5Box{"znver5", "bbbb000011112222", kZen5};
const Machine kZen1Box{"znver1", "cccc000011112222", kZen1};

/// Commits one Ok record of `state` measured on `m` with median `secs`; returns its id.
int64_t record(TuningDatabase& db, const std::string& key, const Machine& m,
               const sched::State& state, double secs) {
    std::vector<TuningRecord> batch(1);
    batch[0].workload_key = key;
    batch[0].target = m.key().target;
    batch[0].fingerprint = m.fingerprint;
    batch[0].isa_class = m.isa_class;
    batch[0].schedule_json = sched::steps_to_json(state.steps);
    batch[0].run_secs = {secs};
    db.commit_batch(batch);
    return batch[0].id;
}

TEST(CompatibleTier, AnotherCpuModelServesWhenItsCodeRunsHere) {
    const te::Compute c = matmul(7, 13, 67);
    TuningDatabase db(":memory:");
    const std::string key = db.add_workload(c);
    const int64_t fast16 = record(db, key, kRocketLakeBox, vectorized(c, 16), 1e-3);
    const int64_t slow8 = record(db, key, kRocketLakeBox, vectorized(c, 8), 2e-3);
    const NeedsOf needs = needs_by_replay(c);

    // Zen 5 has AVX-512: Rocket Lake's fastest record serves, named by its CPU.
    LookupResult z5 = lookup_best(db, key, kZen5Box.key(), needs);
    ASSERT_EQ(z5.tier, LookupTier::Compatible);
    EXPECT_EQ(z5.record->id, fast16);
    EXPECT_EQ(z5.record_cpu, "rocketlake");
    EXPECT_TRUE(z5.why_none.empty());
    EXPECT_EQ(z5.foreign_records, 2);

    // Zen 1 has AVX2 only: the 16-lane record is passed over, the 8-lane one serves.
    LookupResult z1 = lookup_best(db, key, kZen1Box.key(), needs);
    ASSERT_EQ(z1.tier, LookupTier::Compatible);
    EXPECT_EQ(z1.record->id, slow8);

    // Without a check of the code's needs the tier is not used.
    EXPECT_EQ(lookup_best(db, key, kZen5Box.key()).tier, LookupTier::Default);
}

TEST(CompatibleTier, RefusedRecordsSayWhyInWords) {
    const te::Compute c = matmul(7, 13, 67);
    TuningDatabase db(":memory:");
    const std::string key = db.add_workload(c);
    for (int i = 0; i < 12; ++i)
        record(db, key, kRocketLakeBox, vectorized(c, 16 + 16 * (i % 3)), 1e-3 * (i + 1));
    LookupResult r = lookup_best(db, key, kZen1Box.key(), needs_by_replay(c));
    EXPECT_EQ(r.tier, LookupTier::Default);
    EXPECT_FALSE(r.record.has_value());
    EXPECT_EQ(r.why_none, "12 records from rocketlake: they need avx512f, absent here");

    // Another architecture and another target family are named as such.
    Machine arm{"neoverse-v2", "dddd000011112222", "aarch64-unknown-linux-gnu;neon,sve"};
    record(db, key, arm, vectorized(c, 4), 1e-3);
    std::vector<TuningRecord> cuda(1);
    cuda[0].workload_key = key;
    cuda[0].target = "cuda -arch=sm_90";
    cuda[0].fingerprint = "eeee000011112222";
    cuda[0].isa_class = kZen1;
    cuda[0].schedule_json = sched::steps_to_json(vectorized(c, 1).steps);
    cuda[0].run_secs = {1e-5};
    db.commit_batch(cuda);
    r = lookup_best(db, key, kZen1Box.key(), needs_by_replay(c));
    EXPECT_EQ(r.tier, LookupTier::Default);
    EXPECT_NE(r.why_none.find("12 records from rocketlake: they need avx512f, absent here"),
              std::string::npos)
        << r.why_none;
    EXPECT_NE(r.why_none.find("1 record from neoverse-v2: another architecture "
                              "(aarch64-unknown-linux-gnu)"),
              std::string::npos)
        << r.why_none;
    EXPECT_NE(r.why_none.find("target cuda -arch=sm_90"), std::string::npos) << r.why_none;

    // Schedules that do not replay on this workload are refused as such: a matmul's steps
    // (stage 2 of three) stored for a one-input relu (two stages).
    TuningDatabase other(":memory:");
    te::Tensor x = te::placeholder({7, 67}, ir::DataType::f32(), "X");
    const te::Compute relu = te::make_compute({x}, {te::relu(x)});
    const std::string key2 = other.add_workload(relu);
    std::vector<TuningRecord> bad(1);
    bad[0].workload_key = key2;
    bad[0].target = "llvm -mcpu=rocketlake";
    bad[0].fingerprint = kRocketLakeBox.fingerprint;
    bad[0].isa_class = kRocketLake;
    bad[0].schedule_json = sched::steps_to_json(vectorized(c, 16).steps);
    bad[0].run_secs = {1e-3};
    other.commit_batch(bad);
    EXPECT_EQ(lookup_best(other, key2, kZen1Box.key(), needs_by_replay(relu)).why_none,
              "1 record from rocketlake: they do not replay on this workload");
}

TEST(CompatibleTier, ExactAndIsaClassTiersComeFirst) {
    const te::Compute c = matmul(7, 13, 67);
    TuningDatabase db(":memory:");
    const std::string key = db.add_workload(c);
    record(db, key, kRocketLakeBox, vectorized(c, 8), 1e-4); // fastest, compatible with zen5
    const Machine zen5b{"znver5", "ffff000011112222", kZen5}; // another Zen 5 box
    const int64_t same_class = record(db, key, zen5b, vectorized(c, 16), 3e-3);
    LookupResult r = lookup_best(db, key, kZen5Box.key(), needs_by_replay(c));
    EXPECT_EQ(r.tier, LookupTier::IsaClass);
    EXPECT_EQ(r.record->id, same_class);
    const int64_t own = record(db, key, kZen5Box, vectorized(c, 4), 9e-3);
    r = lookup_best(db, key, kZen5Box.key(), needs_by_replay(c));
    EXPECT_EQ(r.tier, LookupTier::Exact);
    EXPECT_EQ(r.record->id, own);
    EXPECT_EQ(r.record_cpu, "znver5");
}

TEST(CompatibleTier, TransferSeedsAreEachOtherMachinesBestUsableMostSimilarFirst) {
    const te::Compute c = matmul(7, 13, 67);
    TuningDatabase db(":memory:");
    const std::string key = db.add_workload(c);
    const int64_t rl16 = record(db, key, kRocketLakeBox, vectorized(c, 16), 1e-3);
    record(db, key, kRocketLakeBox, vectorized(c, 8), 2e-3);
    const int64_t z1 = record(db, key, kZen1Box, vectorized(c, 8), 5e-3);
    record(db, key, kZen5Box, vectorized(c, 4), 1e-3); // the tuning machine's own: no seed
    const NeedsOf needs = needs_by_replay(c);

    // For Zen 5: one seed per other machine, in the order of the shared-feature ratio.
    const std::vector<OtherMachine> others = other_machines(db, key, kZen5Box.key(), needs);
    ASSERT_EQ(others.size(), 2u);
    EXPECT_GE(others[0].similarity, others[1].similarity);
    const std::vector<TuningRecord> seeds = transfer_seeds(db, key, kZen5Box.key(), needs, 4);
    ASSERT_EQ(seeds.size(), 2u);
    std::set<int64_t> ids{seeds[0].id, seeds[1].id};
    EXPECT_EQ(ids, (std::set<int64_t>{rl16, z1}));
    EXPECT_EQ(seeds[0].fingerprint, others[0].fingerprint);
    EXPECT_EQ(transfer_seeds(db, key, kZen5Box.key(), needs, 1).size(), 1u);
    EXPECT_TRUE(transfer_seeds(db, key, kZen5Box.key(), needs, 0).empty());

    // For Zen 1: Rocket Lake's best usable is its 8-lane record.
    const std::vector<TuningRecord> z1_seeds = transfer_seeds(db, key, kZen1Box.key(), needs, 4);
    ASSERT_EQ(z1_seeds.size(), 2u);
    for (const TuningRecord& s : z1_seeds)
        EXPECT_NE(s.id, rl16);
}

TEST(CompatibleTier, RecordingCpuComesFromTheTarget) {
    TuningRecord r;
    r.target = "llvm -mcpu=rocketlake";
    EXPECT_EQ(recording_cpu(r), "rocketlake");
    r.target = "llvm -mcpu=znver5 -opt=x";
    EXPECT_EQ(recording_cpu(r), "znver5");
    r.target = "cuda";
    r.fingerprint = "0123456789abcdef";
    EXPECT_EQ(recording_cpu(r), "fp 01234567");
}

} // namespace
} // namespace tessera::tune
