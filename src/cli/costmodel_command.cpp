// `tessera costmodel eval`: rebuild the training set of a tuning database, hold part of it
// out, train a model on the rest and report how well it ranks what it never saw.
#include "costmodel_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tune_command.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/cost_model/features.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"

namespace tessera::cli {

namespace {

void check_options(const CostModelEvalOptions& o) {
    if (o.db.empty())
        throw UserError() << "--db is required";
    if (o.model != "xgboost" && o.model != "random")
        throw UserError() << "--model must be xgboost or random, got '" << o.model << "'";
    if (o.holdout != "records" && o.holdout != "tasks")
        throw UserError() << "--holdout must be records or tasks, got '" << o.holdout << "'";
    if (!(o.holdout_share > 0 && o.holdout_share < 1))
        throw UserError() << "--holdout-share must be in (0, 1), got " << o.holdout_share;
}

/// The registry op a workload's records name (kOpSpecSettingsKey), if it rebuilds the workload.
std::optional<te::OpInstance> rebuild_workload(const std::string& key,
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
                return inst;
        } catch (const UserError&) {
            // A spec of another tessera version's registry: try the next record's.
        }
    }
    return std::nullopt;
}

/// One usable record: its example and the workload it belongs to (the "tasks" split unit).
struct Example {
    cost::TrainingExample example;
    std::string workload_key;
};

/// Every usable record of the database as an example, tasks in key order, records in id order.
std::vector<Example> load_examples(const tune::TuningDatabase& db, CostModelEvalResult& res) {
    std::vector<Example> all;
    for (const std::string& key : db.workload_keys()) {
        const std::vector<tune::TuningRecord> records = db.records_of(key);
        if (records.empty())
            continue;
        const std::optional<te::OpInstance> inst = rebuild_workload(key, records);
        if (!inst) {
            ++res.skipped_workloads;
            continue;
        }
        ++res.workloads;
        // A task is the workload on one target and machine: times of different machines are
        // not comparable. std::map: tasks in a deterministic order.
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
                        sched::replay(inst->compute, sched::steps_from_json(r.schedule_json));
                    f = cost::extract_features(sched::lower_state(s, "record"));
                } catch (const ScheduleError&) {
                } catch (const UserError&) { // a schedule JSON of another format version
                }
                it = features.emplace(r.schedule_json, std::move(f)).first;
            }
            if (!it->second) {
                ++res.unusable_records;
                continue;
            }
            Example e;
            e.workload_key = key;
            e.example.features = *it->second;
            e.example.task = task_of(r);
            const double best = best_of_task[e.example.task];
            const bool ok = r.error_code == tune::MeasureError::Ok && r.median_secs > 0;
            e.example.normalized_throughput = ok && best > 0 ? (1.0 / r.median_secs) / best : 0;
            res.error_records += ok ? 0 : 1;
            ++res.records;
            all.push_back(std::move(e));
        }
    }
    return all;
}

/// Seeded shuffle (Fisher-Yates with tessera::Rng: the same on every standard library).
template <typename T> void shuffle(std::vector<T>& v, Rng& rng) {
    for (size_t i = v.size(); i > 1; --i)
        std::swap(v[i - 1], v[size_t(rng.uniform_int(0, int64_t(i) - 1))]);
}

/// Which examples are held out (true) under opts.holdout.
std::vector<bool> split(const std::vector<Example>& all, const CostModelEvalOptions& opts) {
    Rng rng(opts.seed);
    std::vector<bool> test(all.size(), false);
    if (opts.holdout == "records") {
        std::map<std::string, std::vector<size_t>> by_task;
        for (size_t i = 0; i < all.size(); ++i)
            by_task[all[i].example.task].push_back(i);
        for (auto& [task, idx] : by_task) {
            if (idx.size() < 2)
                continue; // one record: nothing to rank on either side
            shuffle(idx, rng);
            const size_t n = std::clamp<size_t>(
                size_t(std::lround(opts.holdout_share * double(idx.size()))), 1, idx.size() - 1);
            for (size_t k = 0; k < n; ++k)
                test[idx[k]] = true;
        }
        return test;
    }
    std::vector<std::string> workloads;
    for (const Example& e : all)
        if (workloads.empty() || workloads.back() != e.workload_key)
            workloads.push_back(e.workload_key); // examples are grouped by workload already
    if (workloads.size() < 2)
        throw UserError() << "--holdout tasks needs at least 2 workloads with usable records, "
                          << "the database has " << workloads.size();
    shuffle(workloads, rng);
    const size_t n =
        std::clamp<size_t>(size_t(std::lround(opts.holdout_share * double(workloads.size()))), 1,
                           workloads.size() - 1);
    const std::set<std::string> held(workloads.begin(), workloads.begin() + long(n));
    for (size_t i = 0; i < all.size(); ++i)
        test[i] = held.count(all[i].workload_key) > 0;
    return test;
}

int count_tasks(const std::vector<cost::TrainingExample>& v) {
    std::set<std::string> tasks;
    for (const cost::TrainingExample& e : v)
        tasks.insert(e.task);
    return int(tasks.size());
}

} // namespace

CostModelEvalResult run_costmodel_eval(const CostModelEvalOptions& opts, std::ostream& out) {
    check_options(opts);
    std::error_code ec;
    if (!tune::is_server_database(opts.db) && !std::filesystem::is_regular_file(opts.db, ec))
        throw UserError() << "--db " << opts.db << ": no such file";
    const tune::TuningDatabase db(opts.db);

    CostModelEvalResult res;
    const std::vector<Example> all = load_examples(db, res);
    out << fmt::format("database  {}: {} workloads, {} records ({} errors), {} records that no "
                       "longer replay, {} workloads skipped (no record names their op)\n",
                       opts.db, res.workloads, res.records, res.error_records,
                       res.unusable_records, res.skipped_workloads);
    if (all.empty())
        throw UserError() << "--db " << opts.db << ": no usable records to evaluate on";

    const std::vector<bool> held = split(all, opts);
    std::vector<cost::TrainingExample> train, test;
    for (size_t i = 0; i < all.size(); ++i)
        (held[i] ? test : train).push_back(all[i].example);
    if (test.empty())
        throw UserError() << "--db " << opts.db
                          << ": nothing to hold out (every task has a single record)";
    res.train_examples = int64_t(train.size());
    res.test_examples = int64_t(test.size());
    res.train_tasks = count_tasks(train);
    res.test_tasks = count_tasks(test);
    out << fmt::format("split     holdout {} (share {:.2f}, seed {}): train {} records in {} "
                       "tasks, test {} records in {} tasks\n",
                       opts.holdout, opts.holdout_share, opts.seed, res.train_examples,
                       res.train_tasks, res.test_examples, res.test_tasks);

    std::unique_ptr<cost::CostModel> model = cost::make_model(opts.model, opts.seed);
    const auto t0 = std::chrono::steady_clock::now();
    model->train(train);
    const double train_secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<cost::ProgramFeatures> programs;
    programs.reserve(test.size());
    for (const cost::TrainingExample& e : test)
        programs.push_back(e.features);
    const cost::RankingQuality q = cost::ranking_quality(test, model->predict(programs));
    res.pairwise_accuracy = q.pairwise_accuracy;
    res.peak_score_at_1 = q.peak_score_at_1;
    res.peak_score_at_5 = q.peak_score_at_5;
    res.peak_score_at_32 = q.peak_score_at_32;
    res.num_pairs = q.num_pairs;
    res.num_scored_tasks = q.num_tasks;

    out << fmt::format("model     {} trained on {} records in {:.2f} s\n", model->name(),
                       res.train_examples, train_secs);
    out << fmt::format("pairwise accuracy  {:.4f} over {} held-out pairs\n", q.pairwise_accuracy,
                       q.num_pairs);
    out << fmt::format("peak score @1      {:.4f} (average over {} held-out tasks)\n",
                       q.peak_score_at_1, q.num_tasks);
    out << fmt::format("peak score @5      {:.4f}\n", q.peak_score_at_5);
    out << fmt::format("peak score @32     {:.4f}\n", q.peak_score_at_32);
    return res;
}

} // namespace tessera::cli
