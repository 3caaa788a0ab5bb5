// The Computes behind a tuning database's workloads. The database keeps each workload's
// canonical Compute text, which has no parser; a Compute is rebuilt instead from what made it:
// the registry op a record names (`tune --op` writes its spec into the measure settings) or
// the tasks of the ONNX model it was tuned from (`tune MODEL`, named with --tasks-of).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/te/compute.h"
#include "tessera/tuner/database.h"

namespace tessera::cli {

class WorkloadComputes {
  public:
    /// Extracts the tasks of each model of `models` as `tune MODEL` does for the CPU at -O3, in
    /// every variant a tune may have used (with and without the Winograd pass, each
    /// precision), so that their records find their workloads. Throws UserError for a model
    /// that does not import.
    explicit WorkloadComputes(const std::vector<std::string>& models);

    /// The Compute of workload `key`: from the first op spec among `records`' measure settings
    /// that builds exactly this workload, else from the models' tasks; nullopt when neither
    /// does (no spec, a spec of another version's registry, a model not given).
    std::optional<te::Compute> find(const std::string& key,
                                    const std::vector<tune::TuningRecord>& records) const;

  private:
    /// The models' tasks by workload key (the first model naming a key wins, always).
    std::map<std::string, te::Compute> model_workloads_;
};

} // namespace tessera::cli
