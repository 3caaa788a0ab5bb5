// Loading a tuning database's records as cost-model training examples (costmodel_corpus.h).
#include "costmodel_corpus.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/cost_model/features.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tune_command.h"
#include "tune_model.h"

namespace tessera::cli {

namespace {

/// The registry op a workload's records name (kOpSpecSettingsKey), if it rebuilds the workload.
std::optional<te::Compute> rebuild_from_spec(const std::string& key,
                                             const std::vector<tune::TuningRecord>& records) {
    std::set<std::string> tried;
    for (const tune::TuningRecord& r : records) {
        const nlohmann::json j = nlohmann::json::parse(r.measure_settings_json, nullptr, false);
        if (!j.is_object() || !j.contains(kOpSpecSettingsKey) ||
            !j[kOpSpecSettingsKey].is_string())
            continue;
        const std::string spec = j[kOpSpecSettingsKey].get<std::string>();
        if (!tried.insert(spec).second)
            continue;
        try {
            te::OpInstance inst = te::make_op(spec);
            if (te::workload_key(inst.compute) == key)
                return inst.compute;
        } catch (const UserError&) {
            // A spec of another tessera version's registry: try the next record's.
        }
    }
    return std::nullopt;
}

} // namespace

std::vector<CorpusExample> load_corpus(const tune::TuningDatabase& db,
                                       const std::vector<std::string>& tasks_of,
                                       CorpusCounts& counts) {
    // The models' tasks by workload key (std::map: the first model naming a key wins, always),
    // with and without the winograd pass: records tuned either way (`tune --no-winograd`, or
    // before the pass existed) find their workloads.
    std::map<std::string, te::Compute> model_workloads;
    for (const std::string& path : tasks_of)
        for (bool winograd : {true, false})
            for (tune::TaskToTune& t : model_tasks(path, {}, 3, "llvm", winograd))
                model_workloads.try_emplace(te::workload_key(t.compute), std::move(t.compute));

    std::vector<CorpusExample> all;
    for (const std::string& key : db.workload_keys()) {
        const std::vector<tune::TuningRecord> records = db.records_of(key);
        if (records.empty())
            continue;
        std::optional<te::Compute> compute = rebuild_from_spec(key, records);
        if (!compute) {
            auto it = model_workloads.find(key);
            if (it != model_workloads.end())
                compute = it->second;
        }
        if (!compute) {
            ++counts.skipped_workloads;
            continue;
        }
        ++counts.workloads;
        std::map<std::string, double> best_of_task;
        auto task_of = [&](const tune::TuningRecord& r) {
            return key.substr(0, 16) + "/" + r.target + "/" + r.fingerprint;
        };
        for (const tune::TuningRecord& r : records) {
            double& best = best_of_task.try_emplace(task_of(r), 0.0).first->second;
            if (r.error_code == tune::MeasureError::Ok && r.median_secs > 0)
                best = std::max(best, 1.0 / r.median_secs);
        }
        // The same schedule measured on two machines is lowered once.
        std::unordered_map<std::string, std::optional<cost::ProgramFeatures>> features;
        for (const tune::TuningRecord& r : records) {
            auto it = features.find(r.schedule_json);
            if (it == features.end()) {
                std::optional<cost::ProgramFeatures> f;
                try {
                    const sched::State s =
                        sched::replay(*compute, sched::steps_from_json(r.schedule_json));
                    f = cost::extract_features(sched::lower_state(s, "record"));
                } catch (const ScheduleError&) {
                } catch (const UserError&) { // a schedule JSON of another format version
                }
                it = features.emplace(r.schedule_json, std::move(f)).first;
            }
            if (!it->second) {
                ++counts.unusable_records;
                continue;
            }
            CorpusExample e;
            e.workload_key = key;
            e.target = r.target;
            e.example.features = *it->second;
            e.example.task = task_of(r);
            const double best = best_of_task[e.example.task];
            const bool ok = r.error_code == tune::MeasureError::Ok && r.median_secs > 0;
            e.example.normalized_throughput = ok && best > 0 ? (1.0 / r.median_secs) / best : 0;
            counts.error_records += ok ? 0 : 1;
            ++counts.records;
            all.push_back(std::move(e));
        }
    }
    return all;
}

void print_corpus_counts(const std::string& db, const CorpusCounts& c, std::ostream& out) {
    out << fmt::format("database  {}: {} workloads, {} records ({} errors), {} records that no "
                       "longer replay, {} workloads skipped (neither an op spec in their records "
                       "nor a --tasks-of model rebuilds them)\n",
                       db, c.workloads, c.records, c.error_records, c.unusable_records,
                       c.skipped_workloads);
}

nlohmann::ordered_json corpus_counts_json(const CorpusCounts& c) {
    nlohmann::ordered_json j;
    j["workloads"] = c.workloads;
    j["records"] = c.records;
    j["error_records"] = c.error_records;
    j["unusable_records"] = c.unusable_records;
    j["skipped_workloads"] = c.skipped_workloads;
    return j;
}

} // namespace tessera::cli
