// Loading a tuning database's records as cost-model training examples (costmodel_corpus.h).
#include "costmodel_corpus.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/cost_model/features.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "workload_computes.h"

namespace tessera::cli {

std::vector<CorpusExample> load_corpus(const tune::TuningDatabase& db,
                                       const std::vector<std::string>& tasks_of,
                                       CorpusCounts& counts) {
    const WorkloadComputes computes(tasks_of);

    std::vector<CorpusExample> all;
    for (const std::string& key : db.workload_keys()) {
        const std::vector<tune::TuningRecord> records = db.records_of(key);
        if (records.empty())
            continue;
        const std::optional<te::Compute> compute = computes.find(key, records);
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
            if (r.error_code == tune::MeasureError::Ok && r.rank_secs > 0)
                best = std::max(best, 1.0 / r.rank_secs);
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
            const bool ok = r.error_code == tune::MeasureError::Ok && r.rank_secs > 0;
            e.example.normalized_throughput = ok && best > 0 ? (1.0 / r.rank_secs) / best : 0;
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
