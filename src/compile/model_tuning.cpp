// Tuning a whole model: the pipeline's tasks for the tuner, shards, a run assembled from its
// options, the task scheduler.
#include "tessera/compile/model_tuning.h"

#include <algorithm>
#include <limits>

#include "tessera/support/error.h"

namespace tessera::compile {

namespace {

/// The work of a task for throughputs: its flops, or one operation per output element when it
/// only moves data.
double task_work(const graph::Task& t) {
    if (t.flops > 0)
        return double(t.flops);
    double elements = 0;
    for (const te::Tensor& out : t.compute.compute.outputs)
        elements += double(te::num_elements(out.shape()));
    return std::max(1.0, elements);
}

/// The first op of a fused pattern ("conv2d_nchwc+add+relu" -> "conv2d_nchwc").
std::string anchor_op(const std::string& pattern) { return pattern.substr(0, pattern.find('+')); }

} // namespace

std::vector<tune::TaskToTune> model_tuning_tasks(const ModelPipelineOptions& model) {
    const ModelPipeline pipeline = run_model_pipeline(model);
    std::vector<tune::TaskToTune> tasks;
    for (const graph::Task& t : pipeline.tasks) {
        tune::TaskToTune tt;
        tt.compute = t.compute.compute;
        tt.flops = task_work(t);
        tt.count = t.count();
        tt.name = t.pattern;
        tt.similarity_tag = tune::similarity_tag(anchor_op(t.pattern), tt.flops);
        tasks.push_back(std::move(tt));
    }
    if (tasks.empty())
        throw UserError() << "model " << model.model_path << " has no task to tune";
    return tasks;
}

std::vector<size_t> shard_task_indices(const std::vector<tune::TaskToTune>& tasks,
                                       TaskShard shard) {
    TESSERA_CHECK(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count)
        << "bad shard " << shard.index << "/" << shard.count;
    std::vector<size_t> by_cost(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i)
        by_cost[i] = i;
    // Costs are computed from the model alone (no timing), so every machine sorts alike; the
    // index breaks ties so that the order is total.
    auto cost = [&](size_t i) { return tasks[i].flops * double(tasks[i].count); };
    std::sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) {
        const double ca = cost(a), cb = cost(b);
        return ca != cb ? ca > cb : a < b;
    });
    // Snake deal: position p of the sorted list goes to shard p mod 2N, folded back at N, so
    // that the shard dealt the biggest task of a lap is dealt the smallest of the next.
    const size_t n = size_t(shard.count);
    std::vector<size_t> mine;
    for (size_t p = 0; p < by_cost.size(); ++p) {
        const size_t lap = p % (2 * n);
        if ((lap < n ? lap : 2 * n - 1 - lap) == size_t(shard.index))
            mine.push_back(by_cost[p]);
    }
    std::sort(mine.begin(), mine.end());
    return mine;
}

ModelTuningPlan plan_model_tuning(const ModelPipelineOptions& model, TaskShard shard) {
    ModelTuningPlan plan;
    std::vector<tune::TaskToTune> all = model_tuning_tasks(model);
    plan.model_tasks = all.size();
    plan.index = shard_task_indices(all, shard);
    for (size_t i : plan.index)
        plan.tasks.push_back(std::move(all[i]));
    return plan;
}

tune::TasksResult tune_model(const ModelTuningPlan& plan, const tune::TuneTarget& target,
                             tune::TuningDatabase& db,
                             const std::function<std::unique_ptr<cost::CostModel>()>& make_model,
                             tune::Measurer& measurer, const tune::SearchOptions& search,
                             const std::function<void(const tune::TasksProgress&)>& on_progress) {
    if (plan.tasks.empty()) {
        tune::TasksResult none;
        none.estimated_secs_before = none.estimated_secs_after =
            std::numeric_limits<double>::infinity();
        return none;
    }
    return tune::tune_tasks(plan.tasks, target, db, make_model, measurer, search, {}, on_progress);
}

ModelTuning prepare_model_tuning(const ModelTuningOptions& opts) {
    const TuningOptions& o = opts.tuning;
    check_tuning_options(o);
    if (opts.model.opt_level < 0 || opts.model.opt_level > 3)
        throw UserError() << "-O must be 0..3, got " << opts.model.opt_level;
    // Per task: its Compute's weights (tune_tasks sets them).
    tune::SearchOptions search = tuning_search_options(o, {});
    tune::validate(search); // before the import: a bad option should not wait for it
    tune::TuneTarget target = tuning_target(o);
    ModelPipelineOptions model = opts.model;
    model.target = tuning_target_option(o);
    ModelTuningPlan plan = plan_model_tuning(model, opts.shard);
    tune::TuningDatabase db = open_tuning_database(o.db);
    std::unique_ptr<tune::Measurer> measurer = make_tuning_measurer(o, /*tunes_model=*/true);
    TuningCostModels cost_models = tuning_cost_models(o);
    return ModelTuning{std::move(plan), std::move(target),   std::move(search),
                       std::move(db),   std::move(measurer), std::move(cost_models)};
}

tune::TasksResult tune_model(ModelTuning& run,
                             const std::function<void(const tune::TasksProgress&)>& on_progress) {
    return tune_model(run.plan, run.target, run.db, run.cost_models.make, *run.measurer, run.search,
                      on_progress);
}

} // namespace tessera::compile
