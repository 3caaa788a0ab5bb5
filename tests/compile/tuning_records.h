// Test helpers: tuning records for a model's tasks, made from sampled schedules with made-up
// times, so that builds can be tested with every lookup tier without tuning.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/compile/model_compiler.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/lookup.h"

namespace tessera::testing {

/// The lookup key of this machine, as `tessera build` forms it (tune::llvm_tune_target of
/// "llvm").
tune::TuneTarget host_key();

/// The steps JSON of a randomly annotated sketch of the task's Compute (weights may be packed),
/// from a fixed seed; the sketches are tried in turn until one samples. Adds a gtest failure and
/// returns "" when none does.
std::string sampled_schedule(const graph::Task& task, uint64_t seed);

/// Commits one Ok record of the task's workload for `key` with a made-up median `secs`;
/// returns its id.
int64_t commit_record(tune::TuningDatabase& db, const graph::Task& task, const std::string& json,
                      const tune::TuneTarget& key, double secs);

/// A record (sampled schedule, exact tier for this machine) for every task of `b` in a new
/// database at `path`; the made-up time of a task is its FLOPs at 10 GFLOP/s (1 us at least).
void write_full_database(const std::string& path, const compile::ModelBuild& b, uint64_t seed);

} // namespace tessera::testing
