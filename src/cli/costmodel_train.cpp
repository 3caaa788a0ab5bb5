// `tessera costmodel train` (costmodel_train.h).
#include "costmodel_train.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "costmodel_corpus.h"
#include "tune_command.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/cost_model/features.h"
#include "tessera/support/error.h"
#include "tessera/support/replace_file.h"
#include "tessera/support/utc_time.h"

namespace tessera::cli {

std::string pretrained_info_path(const std::string& blob) {
    return std::filesystem::path(blob).replace_extension(".json").string();
}

void run_costmodel_train(const CostModelTrainOptions& opts, std::ostream& out) {
    if (opts.db.empty())
        throw UserError() << "--db is required";
    if (opts.out.empty())
        throw UserError() << "--out is required";
    const tune::TuningDatabase db = open_existing_tune_database(opts.db, "--db " + opts.db);
    CorpusCounts counts;
    const std::vector<CorpusExample> corpus = load_corpus(db, opts.tasks_of, counts);
    if (!opts.json)
        print_corpus_counts(opts.db, counts, out);
    if (corpus.empty())
        throw UserError() << "--db " << opts.db << ": no usable records to train on";

    std::vector<cost::TrainingExample> examples;
    std::set<std::string> tasks, targets;
    for (const CorpusExample& e : corpus) {
        examples.push_back(e.example);
        tasks.insert(e.example.task);
        targets.insert(e.target);
    }
    std::unique_ptr<cost::CostModel> model = cost::make_model("xgboost", opts.seed);
    const auto t0 = std::chrono::steady_clock::now();
    model->train(examples);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<uint8_t> blob = model->save();

    nlohmann::ordered_json info;
    info["what"] = "tessera pretrained cost model (scripts/train_cost_model.sh)";
    info["model"] = model->name();
    info["feature_layout_version"] = cost::kFeatureLayoutVersion;
    info["records"] = counts.records;
    info["error_records"] = counts.error_records;
    info["workloads"] = counts.workloads;
    info["tasks"] = tasks.size();
    info["targets"] = targets; // std::set: sorted, the same on every run
    info["seed"] = opts.seed;
    info["trained_at"] = utc_now();

    const std::filesystem::path dir = std::filesystem::path(opts.out).parent_path();
    std::error_code ec;
    if (!dir.empty())
        std::filesystem::create_directories(dir, ec);
    replace_file(opts.out, [&](std::ostream& f) {
        f.write(reinterpret_cast<const char*>(blob.data()), std::streamsize(blob.size()));
    });
    const std::string info_path = pretrained_info_path(opts.out);
    replace_file(info_path, [&](std::ostream& f) { f << info.dump(2) << "\n"; });
    if (opts.json) {
        nlohmann::ordered_json j;
        j["database"] = tune::database_display_name(opts.db);
        j["corpus"] = corpus_counts_json(counts);
        j["model"] = model->name();
        j["records"] = examples.size();
        j["tasks"] = tasks.size();
        j["train_secs"] = secs;
        j["out"] = opts.out;
        j["blob_bytes"] = blob.size();
        j["feature_layout_version"] = cost::kFeatureLayoutVersion;
        j["info"] = info_path;
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("model     {} trained on {} records of {} tasks in {:.2f} s\n",
                       model->name(), examples.size(), tasks.size(), secs);
    out << fmt::format("wrote     {} ({} bytes, feature layout {}) and {}\n", opts.out,
                       blob.size(), cost::kFeatureLayoutVersion, info_path);
}

} // namespace tessera::cli
