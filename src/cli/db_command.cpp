// `tessera db` (db_command.h).
#include "db_command.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "json_output.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/support/replace_file.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/record_jsonl.h"
#include "tune_command.h"
#include "workload_computes.h"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;

/// Opens a database that must already exist (reading commands must not create an empty one).
tune::TuningDatabase open_existing(const std::string& path) {
    return open_existing_tune_database(path, "tuning database '" + path + "'");
}

/// Creates the folder of a file about to be written.
void make_parent_dir(const std::string& path) {
    if (tune::is_server_database(path))
        return; // a postgresql:// URL names no folder
    fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty())
        fs::create_directories(parent, ec); // a failure shows when the file is opened
}

std::string ms(double secs) {
    return std::isfinite(secs) ? fmt::format("{:.4g}", secs * 1e3) : std::string("-");
}

/// The op spec a record was tuned from ("" when its settings do not name one).
std::string op_spec_of(const tune::TuningRecord& r) {
    nlohmann::json j = nlohmann::json::parse(r.measure_settings_json, nullptr, false);
    if (j.is_object() && j.contains(kOpSpecSettingsKey) && j[kOpSpecSettingsKey].is_string())
        return j[kOpSpecSettingsKey].get<std::string>();
    return "";
}

/// A short description of a workload: the op spec when a record names one, else the last stage
/// line of its canonical text (the output stage), shortened.
std::string compute_summary(const std::string& text, const std::vector<tune::TuningRecord>& recs) {
    for (const tune::TuningRecord& r : recs)
        if (std::string spec = op_spec_of(r); !spec.empty())
            return spec;
    std::string last;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(pos, end - pos);
        if (line.rfind("stage ", 0) == 0)
            last = line.substr(6);
        pos = end + 1;
    }
    return last.size() > 60 ? last.substr(0, 57) + "..." : last;
}

/// (workload key, target, fingerprint): one tuning task on one machine.
using TaskKey = std::tuple<std::string, std::string, std::string>;

/// The fastest ok record of each task, in key order.
std::map<TaskKey, tune::TuningRecord> best_per_task(const tune::TuningDatabase& db) {
    std::map<TaskKey, tune::TuningRecord> best;
    for (const std::string& key : db.workload_keys())
        for (tune::TuningRecord& r : db.records_of(key)) {
            if (r.error_code != tune::MeasureError::Ok)
                continue;
            TaskKey k{key, r.target, r.fingerprint};
            auto it = best.find(k);
            if (it == best.end())
                best.emplace(k, std::move(r));
            else if (r.rank_secs < it->second.rank_secs) // ties keep the smaller id
                it->second = std::move(r);
        }
    return best;
}

void run_list(const DbOptions& o, std::ostream& out) {
    tune::TuningDatabase db = open_existing(o.db);
    nlohmann::ordered_json workloads = nlohmann::ordered_json::array();
    if (!o.json)
        out << fmt::format("{:<16}  {:<40}  {:>8}  {:>8}  {:>10}\n", "workload", "compute",
                           "records", "ok", "best ms");
    for (const std::string& key : db.workload_keys()) {
        std::vector<tune::TuningRecord> recs = db.records_of(key);
        int64_t ok = 0;
        double best = INFINITY;
        for (const tune::TuningRecord& r : recs)
            if (r.error_code == tune::MeasureError::Ok) {
                ++ok;
                best = std::min(best, r.rank_secs);
            }
        const std::string summary = compute_summary(*db.compute_text(key), recs);
        if (o.json)
            workloads.push_back({{"key", key},
                                 {"op", summary},
                                 {"records", recs.size()},
                                 {"ok", ok},
                                 {"best_ms", ms_or_null(best)}});
        else
            out << fmt::format("{:<16}  {:<40}  {:>8}  {:>8}  {:>10}\n", key.substr(0, 16), summary,
                               recs.size(), ok, ms(best));
    }
    if (o.json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(o.db);
        j["workloads"] = workloads;
        out << json_line(j) << "\n";
    }
}

void run_stats(const DbOptions& o, std::ostream& out) {
    tune::TuningDatabase db = open_existing(o.db);
    std::vector<std::string> keys = db.workload_keys();
    int64_t records = 0, ok = 0;
    std::map<std::string, std::pair<std::string, int64_t>> per_fp; // fp -> (isa class, count)
    std::map<std::string, int64_t> per_target;
    for (const std::string& key : keys)
        for (const tune::TuningRecord& r : db.records_of(key)) {
            ++records;
            ok += r.error_code == tune::MeasureError::Ok;
            auto& fp = per_fp[r.fingerprint];
            fp.first = r.isa_class;
            ++fp.second;
            ++per_target[r.target];
        }
    if (o.json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(o.db);
        j["schema_version"] = db.schema_version();
        j["workloads"] = keys.size();
        j["records"] = records;
        j["ok"] = ok;
        j["errors"] = records - ok;
        j["fingerprints"] = nlohmann::ordered_json::array();
        for (const auto& [fp, v] : per_fp)
            j["fingerprints"].push_back(
                {{"fingerprint", fp}, {"isa_class", v.first}, {"records", v.second}});
        j["targets"] = nlohmann::ordered_json::array();
        for (const auto& [t, n] : per_target)
            j["targets"].push_back({{"target", t}, {"records", n}});
        j["best"] = nlohmann::ordered_json::array();
        for (const auto& [k, r] : best_per_task(db))
            j["best"].push_back({{"workload_key", std::get<0>(k)},
                                 {"target", std::get<1>(k)},
                                 {"fingerprint", std::get<2>(k)},
                                 {"best_ms", ms_or_null(r.rank_secs)},
                                 {"record_id", r.id}});
        out << json_line(j) << "\n";
        return;
    }
    out << fmt::format("database     {} (schema version {})\n", tune::database_display_name(o.db),
                       db.schema_version());
    out << fmt::format("workloads    {}\n", keys.size());
    out << fmt::format("records      {} ({} ok, {} errors)\n", records, ok, records - ok);
    out << "per fingerprint:\n";
    for (const auto& [fp, v] : per_fp)
        out << fmt::format("  {:<16}  {:>8} records  isa class {}\n", fp, v.second, v.first);
    out << "per target:\n";
    for (const auto& [t, n] : per_target)
        out << fmt::format("  {:<40}  {:>8} records\n", t, n);
    out << "best per task (workload, target, fingerprint):\n";
    for (const auto& [k, r] : best_per_task(db))
        out << fmt::format("  {}  {:<32}  {}  {:>10} ms  record {}\n", std::get<0>(k).substr(0, 16),
                           std::get<1>(k), std::get<2>(k), ms(r.rank_secs), r.id);
}

void run_export(const DbOptions& o, std::ostream& out) {
    tune::TuningDatabase db = open_existing(o.db);
    tune::JsonlExportOptions eo;
    eo.best_only = o.best_only;
    eo.workload = o.workload;
    eo.target = o.target;
    make_parent_dir(o.output);
    tune::JsonlExportCounts counts;
    replace_file(o.output, [&](std::ostream& file) { counts = tune::export_jsonl(db, eo, file); });
    if (o.json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(o.db);
        j["output"] = o.output;
        j["workloads"] = counts.workloads;
        j["records"] = counts.records;
        out << json_line(j) << "\n";
        return;
    }
    out << fmt::format("exported {} records of {} workloads to {}\n", counts.records,
                       counts.workloads, o.output);
}

void run_import(const DbOptions& o, std::ostream& out, std::ostream& err) {
    std::ifstream in(o.input, std::ios::binary);
    if (!in)
        throw UserError() << "cannot read '" << o.input << "'";
    make_parent_dir(o.db);
    // A database file this import creates goes again when the import fails: a refused file
    // must not leave an empty database behind under the name the user gave.
    const bool creates = !tune::is_server_database(o.db) && !fs::exists(o.db);
    tune::JsonlImportReport rep;
    try {
        tune::TuningDatabase db(o.db);
        rep = tune::import_jsonl(db, in, o.input);
    } catch (...) {
        std::error_code ec;
        if (creates)
            for (const char* suffix : {"", "-journal", "-wal", "-shm"})
                fs::remove(o.db + suffix, ec);
        throw;
    }
    for (const std::string& p : rep.problems)
        err << "warning: " << o.input << ": " << p << " (skipped)\n";
    if (o.json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(o.db);
        j["input"] = o.input;
        j["records_added"] = rep.records_added;
        j["workloads_added"] = rep.workloads_added;
        j["duplicates"] = rep.duplicates;
        j["skipped"] = rep.skipped;
        j["problems"] = rep.problems; // also warned about on stderr, as without --json
        out << json_line(j) << "\n";
        return;
    }
    out << fmt::format("imported {} records and {} new workloads into {} ({} already present, "
                       "{} lines skipped)\n",
                       rep.records_added, rep.workloads_added, o.db, rep.duplicates, rep.skipped);
}

void run_merge(const DbOptions& o, std::ostream& out) {
    TESSERA_CHECK(o.sources.size() == 2) << "merge takes two databases";
    std::vector<tune::TuningDatabase> sources;
    for (const std::string& s : o.sources)
        sources.push_back(open_existing(s));
    make_parent_dir(o.output);
    tune::TuningDatabase dest(o.output);
    nlohmann::ordered_json merged = nlohmann::ordered_json::array();
    for (size_t i = 0; i < sources.size(); ++i) {
        tune::ImportCounts c = dest.merge_from(sources[i]);
        if (o.json)
            merged.push_back({{"database", tune::database_display_name(o.sources[i])},
                              {"records_added", c.records_added},
                              {"workloads_added", c.workloads_added},
                              {"duplicates", c.duplicates}});
        else
            out << fmt::format("{}: {} records and {} new workloads added ({} already present)\n",
                               o.sources[i], c.records_added, c.workloads_added, c.duplicates);
    }
    if (o.json) {
        nlohmann::ordered_json j;
        j["output"] = tune::database_display_name(o.output);
        j["sources"] = merged;
        j["records"] = dest.num_records();
        out << json_line(j) << "\n";
        return;
    }
    out << fmt::format("{}: {} records\n", o.output, dest.num_records());
}

void run_prune(const DbOptions& o, std::ostream& out) {
    tune::TuningDatabase db = open_existing(o.db);
    int64_t before = db.num_records();
    int64_t removed = db.prune(o.keep_best, o.keep_errors);
    if (o.json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(o.db);
        j["records_before"] = before;
        j["removed"] = removed;
        j["records_after"] = before - removed;
        j["keep_best"] = o.keep_best;
        j["keep_errors"] = o.keep_errors;
        out << json_line(j) << "\n";
        return;
    }
    out << fmt::format("pruned {} of {} records (kept the {} best per workload, target and "
                       "fingerprint{})\n",
                       removed, before, o.keep_best, o.keep_errors ? ", and every error" : "");
}

} // namespace

int run_db_verify(const std::string& db_path, const std::vector<std::string>& tasks_of,
                  std::ostream& report, bool json) {
    // With json the text goes nowhere and one object is printed at the end, so that the text
    // lines below need not know about --json.
    std::ostringstream no_text;
    std::ostream& out = json ? no_text : report;
    nlohmann::ordered_json problems = nlohmann::ordered_json::array();
    auto problem = [&](const tune::TuningRecord& r, const std::string& key, const char* status,
                       const std::string& reason) {
        const std::string spec = op_spec_of(r);
        problems.push_back(
            {{"record_id", r.id},
             {"workload_key", key},
             {"target", r.target},
             {"fingerprint", r.fingerprint},
             {"status", status},
             {"op_spec", spec.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(spec)},
             {"reason", reason}});
        out << fmt::format("{} record {} (workload {}, target '{}', fingerprint {}): {}\n",
                           std::string(status) == "broken" ? "BROKEN" : status, r.id,
                           key.substr(0, 16), r.target, r.fingerprint, reason);
    };
    tune::TuningDatabase db = open_existing(db_path);
    const WorkloadComputes computes(tasks_of);
    std::string integrity = db.integrity_check();
    bool ok = integrity == "ok";
    out << "integrity    " << integrity << "\n";
    int64_t verified = 0, broken = 0, unverifiable = 0;
    std::map<std::string, std::optional<te::Compute>> compute_of; // per workload key
    for (const auto& [task, r] : best_per_task(db)) {
        const std::string& key = std::get<0>(task);
        auto it = compute_of.find(key);
        if (it == compute_of.end())
            it = compute_of.emplace(key, computes.find(key, db.records_of(key))).first;
        if (!it->second) {
            problem(r, key, "unverifiable",
                    op_spec_of(r).empty()
                        ? "no op_spec in its records and no --tasks-of model has its workload"
                        : "its op_spec no longer builds its workload, nor does a --tasks-of "
                          "model");
            ++unverifiable;
            continue;
        }
        try {
            sched::State s = sched::replay(*it->second, sched::steps_from_json(r.schedule_json));
            sched::lower_state(s, "kernel");
            ++verified;
        } catch (const std::exception& e) { // ScheduleError, UserError: the record is stale
            std::string msg = e.what();
            std::replace(msg.begin(), msg.end(), '\n', ' ');
            problem(r, key, "broken", msg);
            ++broken;
        }
    }
    out << fmt::format("best records {} replay, {} do not, {} unverifiable{}\n", verified, broken,
                       unverifiable,
                       unverifiable == 0 ? ""
                                         : " (records of `tune MODEL`: pass the model with "
                                           "--tasks-of MODEL)");
    if (json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(db_path);
        j["integrity"] = integrity;
        j["verified"] = verified;
        j["broken"] = broken;
        j["unverifiable"] = unverifiable;
        j["problems"] = problems;
        report << json_line(j) << "\n";
    }
    // An unverifiable record is not a verified one: a check that could not look fails.
    return ok && broken == 0 && unverifiable == 0 ? 0 : 1;
}

DbCommand::DbCommand(CLI::App& app) {
    db_ = app.add_subcommand("db", "Share and maintain tuning databases: list, stats, export, "
                                   "import, merge, prune, verify");
    db_->require_subcommand(1);
    const char* db_help = "The tuning database";
    // Every subcommand takes --json; merge, which has no --db, adds it itself.
    auto with_db = [&](CLI::App* sub) {
        sub->add_option("--db", opts_.db, db_help)->capture_default_str();
        add_json_flag(sub, opts_.json);
        return sub;
    };
    list_ = with_db(db_->add_subcommand(
        "list", "One line per workload: key prefix, op or output stage, records, ok, best ms"));
    stats_ = with_db(db_->add_subcommand(
        "stats", "Workloads and records, per fingerprint, per target, and the best per task"));
    export_ = with_db(db_->add_subcommand(
        "export", "Write workloads and records as JSON Lines (see tune_logs/README.md)"));
    export_->add_flag("--best-only", opts_.best_only,
                      "Only the fastest ok record per workload, target and fingerprint");
    export_->add_option("--workload", opts_.workload, "Only this workload (key or key prefix)");
    export_->add_option("--target", opts_.target, "Only records of exactly this target");
    export_->add_option("-o,--output", opts_.output, "The JSONL file written")->required();
    import_ = with_db(db_->add_subcommand(
        "import", "Add the records of a JSONL export (idempotent: a record already present is "
                  "skipped; bad lines are reported and skipped)"));
    import_->add_option("file", opts_.input, "The JSONL file")->required();
    merge_ = db_->add_subcommand(
        "merge", "Merge two databases into a third (records already present are skipped)");
    merge_->add_option("databases", opts_.sources, "The two databases merged")
        ->required()
        ->expected(2);
    merge_->add_option("-o,--output", opts_.output, "The database written (created if needed)")
        ->required();
    add_json_flag(merge_, opts_.json);
    prune_ = with_db(db_->add_subcommand(
        "prune", "Keep the K best ok records per workload, target and fingerprint, in one "
                 "transaction"));
    prune_->add_option("--keep-best", opts_.keep_best, "K")->required();
    prune_->add_flag("--keep-errors", opts_.keep_errors, "Keep error records too");
    verify_ = with_db(db_->add_subcommand(
        "verify", "Integrity check, then replay every best record on its workload (exit 1 on "
                  "a problem, also on a record whose workload cannot be rebuilt)"));
    verify_->add_option("--tasks-of", opts_.tasks_of,
                        "ONNX model whose tasks rebuild the workloads of its `tune MODEL` "
                        "records (repeatable; `tune --op` records name their op themselves)");
}

bool DbCommand::chosen() const { return db_->parsed(); }

int DbCommand::run(std::ostream& out, std::ostream& err) const {
    if (list_->parsed())
        run_list(opts_, out);
    else if (stats_->parsed())
        run_stats(opts_, out);
    else if (export_->parsed())
        run_export(opts_, out);
    else if (import_->parsed())
        run_import(opts_, out, err);
    else if (merge_->parsed())
        run_merge(opts_, out);
    else if (prune_->parsed())
        run_prune(opts_, out);
    else if (verify_->parsed())
        return run_db_verify(opts_.db, opts_.tasks_of, out, opts_.json);
    return 0;
}

} // namespace tessera::cli
