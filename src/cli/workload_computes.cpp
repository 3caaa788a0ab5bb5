// Rebuilding the Computes of a tuning database's workloads (workload_computes.h).
#include "workload_computes.h"

#include <set>

#include <nlohmann/json.hpp>

#include "tessera/compile/model_tuning.h"
#include "tessera/graph/passes.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tune_command.h"
#include "tune_model.h"

namespace tessera::cli {

namespace {

// A model as `tune MODEL` tunes it by default, with these Winograd and precision choices.
compile::ModelPipelineOptions model_options(const std::string& path, bool winograd,
                                            graph::Precision precision) {
    compile::ModelPipelineOptions o;
    o.model_path = path;
    o.winograd = winograd;
    o.precision = precision;
    return o;
}

} // namespace

WorkloadComputes::WorkloadComputes(const std::vector<std::string>& models) {
    for (const std::string& path : models)
        for (bool winograd : {true, false})
            for (graph::Precision p :
                 {graph::Precision::FP32, graph::Precision::BF16, graph::Precision::FP16})
                for (tune::TaskToTune& t :
                     compile::model_tuning_tasks(model_options(path, winograd, p)))
                    model_workloads_.try_emplace(te::workload_key(t.compute), std::move(t.compute));
}

std::optional<te::Compute>
WorkloadComputes::find(const std::string& key,
                       const std::vector<tune::TuningRecord>& records) const {
    std::set<std::string> tried;
    for (const tune::TuningRecord& r : records) {
        const nlohmann::json j = nlohmann::json::parse(r.measure_settings_json, nullptr, false);
        if (!j.is_object() || !j.contains(kOpSpecSettingsKey) || !j[kOpSpecSettingsKey].is_string())
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
    auto it = model_workloads_.find(key);
    if (it != model_workloads_.end())
        return it->second;
    return std::nullopt;
}

} // namespace tessera::cli
