// The tuning-coverage report of a model build: which tasks a tuning record served, which fell
// back to the default schedule and why, and each task's estimated share of a model run
// (DESIGN.md decision 2: never silent).
#pragma once

#include <ostream>
#include <string>

#include "tessera/compile/model_compiler.h"

namespace tessera::compile {

/// The schedule column of a row: "exact #12", "isa_class #7 from cascadelake", "compatible #9
/// from rocketlake", "default (no record)", "default (record #3 does not replay: ...)",
/// "default (12 records from rocketlake: they need avx512f, absent here)".
std::string schedule_source_text(const TaskCoverage& row);

/// Prints one line per task (index, pattern, precision of its products, calls per run, schedule
/// source, estimated time of its calls per run, share of the estimated run; a long reason such
/// as why a record does not replay is cut at its first ": " and given in full below the
/// table), then a summary line: tasks per tier, the estimated run time and how default rows
/// were estimated (TaskCoverage::estimated). When no task has a record, times are "?" and the
/// share column is the share of FLOPs.
void print_coverage_table(std::ostream& os, const ModelBuild& build);

/// The same as one JSON object: {"model", "database", "tasks": [{"task", "pattern", "precision",
/// "workload_key", "count", "flops", "source", "record_id", "record_cpu", "note", "tuned_secs",
/// "total_secs", "estimated", "share", "share_is_flops"}...], "tiers": {"exact", "isa_class",
/// "compatible", "default"}, "prepare_secs"}; with `library`, also "output", "weight_bytes", "arena_bytes",
/// "kernels", "calls", "codegen_secs".
std::string coverage_json(const ModelBuild& build, const LibrarySummary* library);

} // namespace tessera::compile
