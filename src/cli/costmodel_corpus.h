// The records of a tuning database as cost-model training examples: what `costmodel eval`
// measures a model on and `costmodel train` trains the pretrained model from.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/cost_model/cost_model.h"
#include "tessera/tuner/database.h"

namespace tessera::cli {

/// What loading a database found (also printed by print_corpus_counts).
struct CorpusCounts {
    int workloads = 0;            ///< Workloads whose Compute could be rebuilt.
    int skipped_workloads = 0;    ///< Workloads neither an op spec nor a --tasks-of model rebuilds.
    int64_t records = 0;          ///< Records used (Ok and errors) ...
    int64_t error_records = 0;    ///< ... of which errors (throughput 0).
    int64_t unusable_records = 0; ///< Records whose schedule no longer replays or lowers.
};

/// One usable record.
struct CorpusExample {
    cost::TrainingExample example; ///< example.task: workload key prefix/target/fingerprint
    std::string workload_key;      ///< the unit of a "tasks" holdout
    std::string target;            ///< the record's target, e.g. "llvm -mcpu=znver1"
};

/// Every usable record (Ok and error) of every workload of `db`, workloads in key order,
/// records in id order (the order they were measured in). A workload's Compute is rebuilt from
/// the registry op its records name (`tessera tune --op` writes the spec into their measure
/// settings) or, failing that, from the tasks of the ONNX models in `tasks_of` (as `tune MODEL`
/// extracts them for the CPU at -O3); workloads neither rebuilds are skipped and counted.
/// Each schedule is replayed and lowered and its features extracted. A task is one workload
/// on one (target, fingerprint): times of different machines are not comparable. Labels are
/// throughput normalized by the task's best, 0 for errors. Throws UserError on a model of
/// `tasks_of` that does not import.
std::vector<CorpusExample> load_corpus(const tune::TuningDatabase& db,
                                       const std::vector<std::string>& tasks_of,
                                       CorpusCounts& counts);

/// The one-line account of a loaded corpus: "database  PATH: W workloads, R records (...)".
void print_corpus_counts(const std::string& db, const CorpusCounts& c, std::ostream& out);

/// The same counts as one JSON object, for --json: {"workloads", "records", "error_records",
/// "unusable_records", "skipped_workloads"}.
nlohmann::ordered_json corpus_counts_json(const CorpusCounts& c);

} // namespace tessera::cli
