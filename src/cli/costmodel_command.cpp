// `tessera costmodel eval`: load the records of a tuning database, hold part of it
// out, train a model on the rest and report how well it ranks what it never saw.
#include "costmodel_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/cost_model/cost_model.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/tuner/database.h"
#include "tune_command.h"

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
    if (o.finetune < 0)
        throw UserError() << "--finetune must be >= 0, got " << o.finetune;
    if (o.finetune > 0 && o.holdout != "tasks")
        throw UserError() << "--finetune needs --holdout tasks (it refines a model on the first "
                             "records of tasks it never saw)";
    if (o.finetune > 0 && o.model != "xgboost")
        throw UserError() << "--finetune needs --model xgboost (the model that takes a prior)";
}

/// Seeded shuffle (Fisher-Yates with tessera::Rng: the same on every standard library).
template <typename T> void shuffle(std::vector<T>& v, Rng& rng) {
    for (size_t i = v.size(); i > 1; --i)
        std::swap(v[i - 1], v[size_t(rng.uniform_int(0, int64_t(i) - 1))]);
}

/// Which examples are held out (true) under opts.holdout.
std::vector<bool> split(const std::vector<CorpusExample>& all, const CostModelEvalOptions& opts) {
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
    for (const CorpusExample& e : all)
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

/// How `m` ranks the examples (within their tasks).
cost::RankingQuality ranking_of(const std::vector<cost::TrainingExample>& test, cost::CostModel& m) {
    std::vector<cost::ProgramFeatures> programs;
    programs.reserve(test.size());
    for (const cost::TrainingExample& e : test)
        programs.push_back(e.features);
    return cost::ranking_quality(test, m.predict(programs));
}

FinetuneQuality quality_of(const std::vector<cost::TrainingExample>& test, cost::CostModel& m) {
    const cost::RankingQuality q = ranking_of(test, m);
    return {q.pairwise_accuracy, q.peak_score_at_5};
}

/// The --finetune comparison: each held-out task's first k examples (measurement order) refine,
/// the rest are ranked by the pretrained model alone, by a model of the k alone, and by the
/// pretrained model refined by them.
void compare_finetuning(const std::vector<cost::TrainingExample>& held_out, int k,
                        cost::CostModel& pretrained, const CostModelEvalOptions& opts,
                        CostModelEvalResult& res, std::ostream& out) {
    std::map<std::string, int> seen;
    std::vector<cost::TrainingExample> first, rest;
    for (const cost::TrainingExample& e : held_out)
        (seen[e.task]++ < k ? first : rest).push_back(e);
    if (rest.empty())
        throw UserError() << "--finetune " << k << ": no held-out task has more than " << k
                          << " records";
    res.finetune_ranked = int64_t(rest.size());
    res.pretrained_alone = quality_of(rest, pretrained);
    std::unique_ptr<cost::CostModel> own = cost::make_model(opts.model, opts.seed);
    own->train(first);
    res.own_records_alone = quality_of(rest, *own);
    std::unique_ptr<cost::CostModel> refined = cost::make_model(opts.model, opts.seed);
    refined->set_prior(pretrained.save());
    refined->train(first);
    res.pretrained_refined = quality_of(rest, *refined);
    out << fmt::format("finetune  the first {} records of each held-out task refine, the other "
                       "{} are ranked:\n", k, rest.size());
    auto line = [&](const char* what, const FinetuneQuality& q) {
        out << fmt::format("  {:<34} pairwise accuracy {:.4f}  peak score @5 {:.4f}\n", what,
                           q.pairwise_accuracy, q.peak_score_at_5);
    };
    line("pretrained on the other tasks", res.pretrained_alone);
    line(fmt::format("trained on the {} records alone", k).c_str(), res.own_records_alone);
    line("pretrained, refined by them", res.pretrained_refined);
}

nlohmann::ordered_json quality_json(const FinetuneQuality& q) {
    return {{"pairwise_accuracy", q.pairwise_accuracy}, {"peak_score_at_5", q.peak_score_at_5}};
}

nlohmann::ordered_json eval_json(const CostModelEvalOptions& opts, const std::string& model,
                                 const CostModelEvalResult& r) {
    nlohmann::ordered_json j;
    j["database"] = tune::database_display_name(opts.db);
    j["model"] = model;
    j["holdout"] = opts.holdout;
    j["holdout_share"] = opts.holdout_share;
    j["seed"] = opts.seed;
    j["corpus"] = corpus_counts_json(r.corpus);
    j["train_records"] = r.train_examples;
    j["train_tasks"] = r.train_tasks;
    j["test_records"] = r.test_examples;
    j["test_tasks"] = r.test_tasks;
    j["train_secs"] = r.train_secs;
    j["pairwise_accuracy"] = r.pairwise_accuracy;
    j["num_pairs"] = r.num_pairs;
    j["peak_score_at_1"] = r.peak_score_at_1;
    j["peak_score_at_5"] = r.peak_score_at_5;
    j["peak_score_at_32"] = r.peak_score_at_32;
    j["scored_tasks"] = r.num_scored_tasks;
    if (opts.finetune > 0) {
        nlohmann::ordered_json f;
        f["k"] = opts.finetune;
        f["ranked_records"] = r.finetune_ranked;
        f["pretrained_alone"] = quality_json(r.pretrained_alone);
        f["own_records_alone"] = quality_json(r.own_records_alone);
        f["pretrained_refined"] = quality_json(r.pretrained_refined);
        j["finetune"] = f;
    } else {
        j["finetune"] = nullptr;
    }
    return j;
}

} // namespace

CostModelEvalResult run_costmodel_eval(const CostModelEvalOptions& opts, std::ostream& report) {
    // With --json the text goes nowhere: one object is printed once everything succeeded.
    std::ostringstream no_text;
    std::ostream& out = opts.json ? no_text : report;
    check_options(opts);
    const tune::TuningDatabase db = open_existing_tune_database(opts.db, "--db " + opts.db);

    CostModelEvalResult res;
    const std::vector<CorpusExample> all = load_corpus(db, opts.tasks_of, res.corpus);
    print_corpus_counts(opts.db, res.corpus, out);
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
    res.train_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const cost::RankingQuality q = ranking_of(test, *model);
    res.pairwise_accuracy = q.pairwise_accuracy;
    res.peak_score_at_1 = q.peak_score_at_1;
    res.peak_score_at_5 = q.peak_score_at_5;
    res.peak_score_at_32 = q.peak_score_at_32;
    res.num_pairs = q.num_pairs;
    res.num_scored_tasks = q.num_tasks;

    out << fmt::format("model     {} trained on {} records in {:.2f} s\n", model->name(),
                       res.train_examples, res.train_secs);
    out << fmt::format("pairwise accuracy  {:.4f} over {} held-out pairs\n", q.pairwise_accuracy,
                       q.num_pairs);
    out << fmt::format("peak score @1      {:.4f} (average over {} held-out tasks)\n",
                       q.peak_score_at_1, q.num_tasks);
    out << fmt::format("peak score @5      {:.4f}\n", q.peak_score_at_5);
    out << fmt::format("peak score @32     {:.4f}\n", q.peak_score_at_32);
    if (opts.finetune > 0)
        compare_finetuning(test, opts.finetune, *model, opts, res, out);
    if (opts.json)
        report << eval_json(opts, model->name(), res).dump() << "\n";
    return res;
}

} // namespace tessera::cli
