// The lookup tiers over shared databases: merging databases tuned on two machines keeps both,
// and each machine's lookup picks its own records; the ISA-class tier serves a machine of the
// same kind whose CPU name (-mcpu) differs; pruning keeps the best per task.
#include <gtest/gtest.h>

#include <string>

#include "tessera/backends/host.h"
#include "tessera/ir/type.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"
#include "tessera/tuner/lookup.h"

namespace tessera::tune {
namespace {

te::Compute matmul(int64_t m, int64_t k, int64_t n) {
    te::Tensor a = te::placeholder({m, k}, ir::DataType::f32(), "A");
    te::Tensor b = te::placeholder({k, n}, ir::DataType::f32(), "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

/// A machine as tune would record it: target "llvm -mcpu=<cpu>" and its fingerprint.
struct Machine {
    HardwareFingerprint fp;
    std::string target;
    TuneTarget key() const { return {target, fp.hash(), fp.isa_class()}; }
};

Machine machine(const std::string& cpu, std::vector<std::string> features, int cores,
                const std::string& model_name) {
    backend::CpuInfo h;
    h.triple = "x86_64-pc-linux-gnu";
    h.cpu_name = cpu;
    h.features = std::move(features);
    h.cores = cores;
    h.l1d_bytes = 32 * 1024;
    h.l2_bytes = 1024 * 1024;
    h.cpu_model_name = model_name;
    return {make_fingerprint(h, ""), "llvm -mcpu=" + cpu};
}

std::string sched(int i) {
    return R"({"version":1,"steps":[{"kind":"x","n":)" + std::to_string(i) + "}]}";
}

/// Commits `n` ok records of `key` measured on `m` (median i+1 ms for schedule base+i) and one
/// error record.
void tune_on(TuningDatabase& db, const std::string& key, const Machine& m, int base, int n) {
    std::vector<TuningRecord> batch;
    for (int i = 0; i <= n; ++i) {
        TuningRecord r;
        r.workload_key = key;
        r.target = m.target;
        r.fingerprint = m.fp.hash();
        r.isa_class = m.fp.isa_class();
        r.schedule_json = sched(base + i);
        if (i == n) {
            r.error_code = MeasureError::CompileHost;
            r.error_message = "no";
        } else {
            r.run_secs = {1e-3 * (n - i)}; // the last ok record is the fastest
        }
        batch.push_back(r);
    }
    db.commit_batch(batch);
}

TEST(TargetFamily, DropsOnlyTheCpuName) {
    EXPECT_EQ(target_family("llvm -mcpu=skylake-avx512"), "llvm");
    EXPECT_EQ(target_family("llvm  -mcpu=znver3 -opt=x"), "llvm -opt=x");
    EXPECT_EQ(target_family("simulated:llvm -mcpu=znver3"), "simulated:llvm");
    EXPECT_EQ(target_family("cuda"), "cuda");
}

TEST(DbLookup, MergedDatabasesServeEachMachineItsOwnRecords) {
    // Two machines of different ISA classes (AVX-512 and AVX2 only) tune the same workload
    // into their own databases; the merged database keeps both.
    Machine intel = machine("icelake-server", {"avx2", "avx512f", "fma", "sse4.2"}, 7,
                            "Intel(R) Xeon(R) Gold 6330");
    Machine amd = machine("znver3", {"avx2", "fma", "sse4.2"}, 13, "AMD EPYC 7763");
    ASSERT_NE(intel.fp.isa_class(), amd.fp.isa_class());
    TuningDatabase a(":memory:"), b(":memory:"), merged(":memory:");
    std::string key = a.add_workload(matmul(7, 13, 127));
    ASSERT_EQ(b.add_workload(matmul(7, 13, 127)), key);
    tune_on(a, key, intel, 0, 5);
    tune_on(b, key, amd, 100, 3);

    ImportCounts ca = merged.merge_from(a);
    EXPECT_EQ(ca.workloads_added, 1);
    EXPECT_EQ(ca.records_added, 6);
    ImportCounts cb = merged.merge_from(b);
    EXPECT_EQ(cb.workloads_added, 0);
    EXPECT_EQ(cb.records_added, 4);
    EXPECT_EQ(merged.num_records(), 10);
    // Merging again adds nothing.
    EXPECT_EQ(merged.merge_from(a).duplicates, 6);
    EXPECT_EQ(merged.num_records(), 10);

    LookupResult li = lookup_best(merged, key, intel.key());
    ASSERT_EQ(li.tier, LookupTier::Exact);
    EXPECT_EQ(li.record->schedule_json, sched(4));
    EXPECT_EQ(li.record->fingerprint, intel.fp.hash());
    EXPECT_EQ(li.foreign_records, 3); // amd's ok records
    LookupResult la = lookup_best(merged, key, amd.key());
    ASSERT_EQ(la.tier, LookupTier::Exact);
    EXPECT_EQ(la.record->schedule_json, sched(102));
    EXPECT_EQ(la.foreign_records, 5); // intel's ok records
}

TEST(DbLookup, IsaClassTierServesAnotherCpuNameOfTheSameKind) {
    // Two AVX-512 machines with different CPU names (so different -mcpu targets) and
    // different core counts: the same ISA class, different fingerprints.
    std::vector<std::string> avx512 = {"avx2", "avx512f", "fma", "sse4.2"};
    Machine skx = machine("skylake-avx512", avx512, 7, "Intel(R) Xeon(R) Gold 6140");
    Machine clx = machine("cascadelake", avx512, 13, "Intel(R) Xeon(R) Gold 6248");
    Machine amd = machine("znver3", {"avx2", "fma", "sse4.2"}, 13, "AMD EPYC 7763");
    ASSERT_EQ(skx.fp.isa_class(), clx.fp.isa_class());
    ASSERT_NE(skx.fp.hash(), clx.fp.hash());
    ASSERT_NE(skx.target, clx.target);

    TuningDatabase db(":memory:");
    std::string key = db.add_workload(matmul(1, 13, 7));
    tune_on(db, key, skx, 0, 4);
    LookupResult r = lookup_best(db, key, clx.key());
    ASSERT_EQ(r.tier, LookupTier::IsaClass);
    EXPECT_EQ(r.record->schedule_json, sched(3));
    EXPECT_EQ(r.record->target, skx.target);
    EXPECT_EQ(r.foreign_records, 0);

    // Another ISA class, or another target family on the same class, is never served.
    LookupResult ra = lookup_best(db, key, amd.key());
    EXPECT_EQ(ra.tier, LookupTier::Default);
    EXPECT_FALSE(ra.record.has_value());
    EXPECT_EQ(ra.foreign_records, 4);
    TuneTarget sim = clx.key();
    sim.target = "simulated:" + sim.target;
    LookupResult rs = lookup_best(db, key, sim);
    EXPECT_EQ(rs.tier, LookupTier::Default);
    EXPECT_EQ(rs.foreign_records, 4);

    // Once clx has its own record, the exact tier wins even though skx's is faster.
    std::vector<TuningRecord> own(1);
    own[0].workload_key = key;
    own[0].target = clx.target;
    own[0].fingerprint = clx.fp.hash();
    own[0].isa_class = clx.fp.isa_class();
    own[0].schedule_json = sched(50);
    own[0].run_secs = {1.0};
    db.commit_batch(own);
    LookupResult re = lookup_best(db, key, clx.key());
    EXPECT_EQ(re.tier, LookupTier::Exact);
    EXPECT_EQ(re.record->schedule_json, sched(50));
    // An unknown workload is tier None, not an error.
    EXPECT_EQ(lookup_best(db, "feed", clx.key()).tier, LookupTier::Default);
}

TEST(DbPrune, KeepsTheBestPerTaskAndDropsErrorsUnlessAsked) {
    Machine intel = machine("icelake-server", {"avx2", "avx512f", "fma"}, 7, "Xeon");
    Machine amd = machine("znver3", {"avx2", "fma"}, 13, "EPYC");
    TuningDatabase db(":memory:");
    std::string k1 = db.add_workload(matmul(7, 13, 127));
    std::string k2 = db.add_workload(matmul(13, 7, 1));
    tune_on(db, k1, intel, 0, 5);   // 5 ok + 1 error
    tune_on(db, k1, amd, 100, 3);   // 3 ok + 1 error
    tune_on(db, k2, intel, 200, 1); // 1 ok + 1 error
    ASSERT_EQ(db.num_records(), 12);
    auto best_before = db.best_record(k1, intel.target, intel.fp.hash());

    EXPECT_EQ(db.prune(2, /*keep_errors=*/true), 3 + 1); // k1/intel keeps 2 of 5, amd 2 of 3
    EXPECT_EQ(db.num_records(), 8);
    EXPECT_EQ(db.best_record(k1, intel.target, intel.fp.hash())->id, best_before->id);
    EXPECT_EQ(db.top_k(k1, 10, intel.target, intel.fp.hash()).size(), 2u);
    EXPECT_EQ(db.top_k(k1, 10, intel.target, intel.fp.hash())[1].schedule_json, sched(3));

    EXPECT_EQ(db.prune(1, /*keep_errors=*/false), 2 + 3); // one more each on k1; 3 errors
    EXPECT_EQ(db.num_records(), 3);
    for (const std::string& k : {k1, k2})
        for (const TuningRecord& r : db.records_of(k))
            EXPECT_EQ(r.error_code, MeasureError::Ok);
    EXPECT_EQ(db.prune(1, false), 0);
    EXPECT_THROW(db.prune(-1, false), UserError);
}

} // namespace
} // namespace tessera::tune
