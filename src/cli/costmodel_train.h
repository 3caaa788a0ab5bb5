// `tessera costmodel train`: the pretrained cost model from every record of a corpus database.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

/// Options of `tessera costmodel train`, with their defaults.
struct CostModelTrainOptions {
    std::string db;                    ///< The corpus database (must exist).
    std::vector<std::string> tasks_of; ///< ONNX models whose tasks rebuild `tune MODEL` records.
    std::string out;                   ///< The blob to write; its sidecar is out with ".json".
    uint64_t seed = 1;                 ///< Seeds the model (its validation draw).
    bool json = false;                 ///< One JSON object instead of text.
};

/// Trains an "xgboost" model on every usable record of opts.db (load_corpus) and writes its blob
/// (CostModel::save: kind, feature layout version, trees) to opts.out, and beside it a JSON
/// sidecar (the path with its extension replaced by .json) naming the feature layout version,
/// the counts of records, workloads and tasks, the targets the records were measured on and the
/// date. Both files are written to temporary names and renamed, so a crash leaves the old model.
/// Prints the corpus line, the training time and the paths, or with opts.json one JSON object
/// once both files are written: {"database", "corpus" (corpus_counts_json), "model",
/// "records", "tasks", "train_secs", "out", "blob_bytes", "feature_layout_version", "info"
/// (the sidecar's path)}. Throws UserError on a bad option,
/// a missing database, a model of tasks_of that does not import, an empty corpus or a file
/// that cannot be written.
void run_costmodel_train(const CostModelTrainOptions& opts, std::ostream& out);

/// The sidecar path of a blob: `blob` with its extension replaced by ".json".
std::string pretrained_info_path(const std::string& blob);

} // namespace tessera::cli
