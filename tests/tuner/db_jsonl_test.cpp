// JSONL export and import of tuning records: every field round-trips, importing twice adds
// nothing, bad lines are reported with their numbers and the rest imported, records of an
// unknown schema version are skipped, a file without the header is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "tessera/ir/type.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/record_jsonl.h"

namespace tessera::tune {
namespace {

te::Compute matmul(int64_t m, int64_t k, int64_t n) {
    te::Tensor a = te::placeholder({m, k}, ir::DataType::f32(), "A");
    te::Tensor b = te::placeholder({k, n}, ir::DataType::f32(), "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

std::string sched(int i) {
    return R"({"version":1,"steps":[{"kind":"x","n":)" + std::to_string(i) + "}]}";
}

/// A database with two workloads and records on two machines and targets, with random run times
/// (awkward doubles), an error record and explicit versions and timestamps.
void fill(TuningDatabase& db, uint64_t seed) {
    Rng rng(seed);
    std::string k1 = db.add_workload(matmul(7, 13, 127));
    std::string k2 = db.add_workload(matmul(1, 13, 7));
    std::vector<TuningRecord> batch;
    for (int i = 0; i < 12; ++i) {
        TuningRecord r;
        r.workload_key = i % 3 == 0 ? k2 : k1;
        r.target = i % 2 ? "llvm -mcpu=znver3" : "llvm -mcpu=icelake-server";
        r.fingerprint = i % 2 ? "fp_amd" : "fp_intel";
        r.isa_class = i % 2 ? "x86_64;avx2,fma" : "x86_64;avx2,avx512f,fma";
        r.schedule_json = sched(i);
        for (int k = 0; k < 1 + i % 4; ++k)
            r.run_secs.push_back(1e-6 * (1 + 1000.0 * rng.uniform01()));
        r.measure_settings_json = R"({"repeats":)" + std::to_string(1 + i % 4) + "}";
        if (i == 5) {
            r.error_code = MeasureError::RunTimeout;
            r.error_message = "timed out after 1 s\nline two";
            r.run_secs.clear();
        }
        if (i == 7)
            r.tessera_version = "0.0.7";
        if (i % 4 == 1) // measured beside a baseline: its rank time is not its median
            r.rank_secs = 1e-6 * (1 + 1000.0 * rng.uniform01());
        if (i < 4)
            r.created_at = "2026-03-0" + std::to_string(i + 1) + "T10:00:00Z";
        batch.push_back(r);
    }
    db.commit_batch(batch);
}

/// Every field but the id, as text.
std::string content(const TuningRecord& r) {
    std::ostringstream s;
    s.precision(17);
    s << r.workload_key << "|" << r.target << "|" << r.fingerprint << "|" << r.isa_class << "|"
      << r.schedule_json << "|";
    for (double v : r.run_secs)
        s << v << ",";
    s << "|" << r.median_secs << "|" << r.rank_secs << "|" << int(r.error_code) << "|"
      << r.error_message << "|" << r.measure_settings_json << "|" << r.tessera_version << "|"
      << r.schema_version << "|" << r.created_at;
    return s.str();
}

std::vector<std::string> contents(const TuningDatabase& db) {
    std::vector<std::string> all;
    for (const std::string& key : db.workload_keys())
        for (const TuningRecord& r : db.records_of(key))
            all.push_back(content(r));
    return all;
}

TEST(RecordJsonl, ExportThenImportRoundTripsEveryField) {
    TuningDatabase src(":memory:");
    fill(src, 11);
    std::stringstream file;
    JsonlExportCounts ec = export_jsonl(src, {}, file);
    EXPECT_EQ(ec.workloads, 2);
    EXPECT_EQ(ec.records, 12);

    TuningDatabase dst(":memory:");
    JsonlImportReport rep = import_jsonl(dst, file, "mem.jsonl");
    EXPECT_TRUE(rep.problems.empty()) << rep.problems.front();
    EXPECT_EQ(rep.workloads_added, 2);
    EXPECT_EQ(rep.records_added, 12);
    EXPECT_EQ(dst.workload_keys(), src.workload_keys());
    for (const std::string& key : src.workload_keys())
        EXPECT_EQ(dst.compute_text(key), src.compute_text(key));
    EXPECT_EQ(contents(dst), contents(src));
    // Run times are bit-exact, not just close.
    std::vector<TuningRecord> a = src.records_of(src.workload_keys()[0]);
    std::vector<TuningRecord> b = dst.records_of(dst.workload_keys()[0]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(a[i].run_secs, b[i].run_secs);

    // Idempotent: the same file again adds nothing.
    file.clear();
    file.seekg(0);
    JsonlImportReport again = import_jsonl(dst, file, "mem.jsonl");
    EXPECT_EQ(again.records_added, 0);
    EXPECT_EQ(again.duplicates, 12);
    EXPECT_EQ(again.workloads_added, 0);
    EXPECT_EQ(dst.num_records(), 12);
}

TEST(RecordJsonl, BestOnlyAndFiltersSelectRecords) {
    TuningDatabase db(":memory:");
    fill(db, 3);
    std::stringstream best;
    JsonlExportOptions o;
    o.best_only = true;
    JsonlExportCounts c = export_jsonl(db, o, best);
    // Two workloads x two (target, fingerprint) tasks, one best record each.
    EXPECT_EQ(c.records, 4);
    TuningDatabase dst(":memory:");
    import_jsonl(dst, best, "best.jsonl");
    for (const std::string& key : db.workload_keys())
        for (const char* fp : {"fp_amd", "fp_intel"}) {
            std::string target =
                fp == std::string("fp_amd") ? "llvm -mcpu=znver3" : "llvm -mcpu=icelake-server";
            auto want = db.best_record(key, target, fp);
            auto got = dst.best_record(key, target, fp);
            ASSERT_TRUE(want && got);
            EXPECT_EQ(content(*got), content(*want));
        }

    std::stringstream one;
    o = {};
    o.workload = db.workload_keys()[1].substr(0, 12); // a unique prefix
    o.target = "llvm -mcpu=znver3";
    c = export_jsonl(db, o, one);
    EXPECT_EQ(c.workloads, 1);
    for (const TuningRecord& r : db.records_of(db.workload_keys()[1]))
        if (r.target == o.target)
            --c.records;
    EXPECT_EQ(c.records, 0);
    o.workload = "zzzz";
    std::stringstream none;
    EXPECT_THROW(export_jsonl(db, o, none), UserError);
}

TEST(RecordJsonl, BadLinesAreReportedWithNumbersAndTheRestImported) {
    TuningDatabase src(":memory:");
    fill(src, 5);
    std::stringstream file;
    export_jsonl(src, {}, file);
    std::vector<std::string> lines;
    for (std::string l; std::getline(file, l);)
        lines.push_back(l);
    ASSERT_EQ(lines.size(), 1u + 2u + 12u);
    // Line numbers are 1-based: header = 1.
    std::string bad_version = lines[3];
    const std::string version =
        "\"schema_version\":" + std::to_string(TuningDatabase::kSchemaVersion);
    size_t p = bad_version.find(version);
    ASSERT_NE(p, std::string::npos) << bad_version;
    bad_version.replace(p, version.size(), "\"schema_version\":99");
    std::vector<std::string> edited = lines;
    edited[2] = "this is garbage";                                 // line 3: a record line
    edited[3] = bad_version;                                       // line 4
    edited[5] = lines[5].substr(0, lines[5].size() / 2);           // line 6: half-written
    edited.push_back(R"({"type":"record","workload_key":"abc"})"); // line 16: missing fields
    edited.push_back(lines.back().substr(0, 40));                  // line 17: cut at the end
    std::stringstream in;
    for (const std::string& l : edited)
        in << l << "\n";
    TuningDatabase dst(":memory:");
    JsonlImportReport rep = import_jsonl(dst, in, "edited.jsonl");
    ASSERT_EQ(rep.problems.size(), 5u);
    EXPECT_EQ(rep.problems[0].rfind("line 3: ", 0), 0u) << rep.problems[0];
    EXPECT_EQ(rep.problems[1].rfind("line 4: ", 0), 0u) << rep.problems[1];
    EXPECT_NE(rep.problems[1].find("schema version 99"), std::string::npos) << rep.problems[1];
    EXPECT_EQ(rep.problems[2].rfind("line 6: ", 0), 0u) << rep.problems[2];
    EXPECT_EQ(rep.problems[3].rfind("line 16: ", 0), 0u) << rep.problems[3];
    EXPECT_EQ(rep.problems[4].rfind("line 17: ", 0), 0u) << rep.problems[4];
    EXPECT_EQ(rep.skipped, 5);
    EXPECT_EQ(rep.records_added, 12 - 3);
    EXPECT_EQ(dst.num_records(), 12 - 3);
}

TEST(RecordJsonl, FileWithoutHeaderOrOfAnotherVersionIsRefused) {
    TuningDatabase db(":memory:");
    std::stringstream garbage("{\"type\":\"workload\"}\n");
    EXPECT_THROW(import_jsonl(db, garbage, "g.jsonl"), UserError);
    std::stringstream empty;
    EXPECT_THROW(import_jsonl(db, empty, "e.jsonl"), UserError);
    std::stringstream newer(R"({"format":"tessera-records","version":2})"
                            "\n");
    try {
        import_jsonl(db, newer, "n.jsonl");
        ADD_FAILURE() << "a newer format was accepted";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos) << e.what();
    }
    EXPECT_EQ(db.num_records(), 0);
}

TEST(RecordJsonl, WorkloadWhoseKeyDoesNotMatchItsTextIsSkipped) {
    TuningDatabase src(":memory:");
    fill(src, 9);
    std::stringstream file;
    export_jsonl(src, {}, file);
    std::string text = file.str();
    // Corrupt the first workload's compute text: its key no longer matches, so the workload
    // and its records are skipped; the other workload imports.
    size_t p = text.find("input t0: f32[");
    ASSERT_NE(p, std::string::npos);
    text[p + 14] = text[p + 14] == '7' ? '8' : '7';
    std::stringstream in(text);
    TuningDatabase dst(":memory:");
    JsonlImportReport rep = import_jsonl(dst, in, "x.jsonl");
    EXPECT_EQ(rep.workloads_added, 1);
    EXPECT_GE(rep.skipped, 2);
    EXPECT_NE(rep.problems.front().find("does not match"), std::string::npos)
        << rep.problems.front();
    EXPECT_EQ(dst.workload_keys().size(), 1u);
}

} // namespace
} // namespace tessera::tune
