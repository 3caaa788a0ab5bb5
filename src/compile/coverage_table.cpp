// The coverage table of a model build (coverage_table.h).
#include "tessera/compile/coverage_table.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/tuner/database.h"

namespace tessera::compile {

namespace {

/// "1.234 ms", "56.7 us".
std::string time_text(double secs) {
    if (secs >= 1e-3)
        return fmt::format("{:.3f} ms", secs * 1e3);
    return fmt::format("{:.1f} us", secs * 1e6);
}

/// The schedule column: schedule_source_text without the details after ": " of a note (those
/// follow the table), so that rows stay aligned.
std::string short_source_text(const TaskCoverage& row) {
    const size_t colon = row.note.find(": ");
    if (row.source != tune::LookupTier::Default || colon == std::string::npos)
        return schedule_source_text(row);
    return "default (" + row.note.substr(0, colon) + ", see below)";
}

bool nothing_timed(const ModelBuild& b) {
    return std::all_of(b.tasks.begin(), b.tasks.end(),
                       [](const TaskBuild& t) { return t.coverage.total_secs <= 0; });
}

} // namespace

std::string schedule_source_text(const TaskCoverage& row) {
    switch (row.source) {
    case tune::LookupTier::Exact:
        return fmt::format("exact #{}", row.record_id);
    case tune::LookupTier::IsaClass:
    case tune::LookupTier::Compatible:
        return fmt::format("{} #{} from {}", to_string(row.source), row.record_id, row.record_cpu);
    case tune::LookupTier::Default:
        return row.note.empty() ? "default" : "default (" + row.note + ")";
    }
    return "?";
}

void print_coverage_table(std::ostream& os, const ModelBuild& b) {
    const bool untimed = nothing_timed(b);
    const std::vector<TaskCoverage> rows = b.coverage();
    size_t pattern_w = 7, source_w = 8;
    for (const TaskCoverage& r : rows) {
        pattern_w = std::max(pattern_w, r.pattern.size());
        source_w = std::max(source_w, short_source_text(r).size());
    }
    if (b.target.is_cuda()) // CPU tables keep their first line the header
        os << "target cuda " << b.target.arch << "\n";
    os << fmt::format("{:>4}  {:<{}}  {:<9}  {:>5}  {:<{}}  {:>12}  {:>6}\n", "task", "pattern",
                      pattern_w, "precision", "calls", "schedule", source_w, "time x calls",
                      untimed ? "flops%" : "share");
    for (const TaskCoverage& r : rows) {
        const std::string t = untimed ? "?" : (r.estimated ? "~" : "") + time_text(r.total_secs);
        os << fmt::format("{:>4}  {:<{}}  {:<9}  {:>5}  {:<{}}  {:>12}  {:>5.1f}%\n", r.task,
                          r.pattern, pattern_w, r.precision, r.count, short_source_text(r),
                          source_w, t, r.share * 100);
    }
    for (const TaskCoverage& r : rows)
        if (short_source_text(r) != schedule_source_text(r))
            os << fmt::format("  task {}: {}\n", r.task, r.note);
    const int exact = b.tasks_served_by(tune::LookupTier::Exact);
    const int isa = b.tasks_served_by(tune::LookupTier::IsaClass);
    const int compatible = b.tasks_served_by(tune::LookupTier::Compatible);
    const int def = b.tasks_served_by(tune::LookupTier::Default);
    os << fmt::format("tasks: {} (exact {}, isa_class {}, compatible {}, default {})",
                      rows.size(), exact, isa, compatible, def);
    if (b.db_path.empty())
        os << "; no tuning database: every task uses its default schedule";
    else
        os << "; database " << tune::database_display_name(b.db_path);
    os << "\n";
    if (untimed) {
        os << "estimated run time: ? (no task has a record; share = share of the model's "
              "FLOPs)\n";
    } else {
        double total = 0, tuned = 0;
        for (const TaskCoverage& r : rows) {
            total += r.total_secs;
            if (!r.estimated)
                tuned += r.total_secs;
        }
        os << "estimated run time: " << (def > 0 ? "~" : "") << time_text(total);
        if (def > 0)
            os << fmt::format(" ({} from records; default tasks '~' estimated at the FLOP rate "
                              "of the tuned ones)",
                              time_text(tuned));
        os << "\n";
    }
}

std::string coverage_json(const ModelBuild& b, const LibrarySummary* library) {
    const std::vector<TaskCoverage> rows = b.coverage();
    nlohmann::ordered_json j;
    j["model"] = b.model_name;
    j["database"] = b.db_path;
    j["target"] = b.target.is_cuda() ? "cuda" : "cpu";
    j["target_string"] = b.target.str();
    if (b.target.is_cuda())
        j["cuda_arch"] = b.target.arch;
    nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
    for (const TaskCoverage& r : rows) {
        nlohmann::ordered_json t;
        t["task"] = r.task;
        t["pattern"] = r.pattern;
        t["precision"] = r.precision;
        t["workload_key"] = r.workload_key;
        t["count"] = r.count;
        t["flops"] = r.flops;
        t["source"] = to_string(r.source);
        t["record_id"] = r.record_id;
        t["record_cpu"] = r.record_cpu;
        t["note"] = r.note;
        t["tuned_secs"] = r.tuned_secs;
        t["total_secs"] = r.total_secs;
        t["estimated"] = r.estimated;
        t["share"] = r.share;
        t["share_is_flops"] = r.share_is_flops;
        tasks.push_back(std::move(t));
    }
    j["tasks"] = std::move(tasks);
    j["tiers"] = {{"exact", b.tasks_served_by(tune::LookupTier::Exact)},
                  {"isa_class", b.tasks_served_by(tune::LookupTier::IsaClass)},
                  {"compatible", b.tasks_served_by(tune::LookupTier::Compatible)},
                  {"default", b.tasks_served_by(tune::LookupTier::Default)}};
    j["prepare_secs"] = b.prepare_secs;
    if (library) {
        j["output"] = library->so_path;
        j["weight_bytes"] = library->weight_bytes;
        j["arena_bytes"] = library->arena_bytes;
        j["kernels"] = library->num_kernels;
        j["calls"] = library->num_calls;
        j["codegen_secs"] = library->codegen_secs;
    }
    // Record notes come from the tuning database, whose text a damaged file may leave not
    // UTF-8: replaced by U+FFFD rather than failing the report.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace tessera::compile
