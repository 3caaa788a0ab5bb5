// The pretrained cost model: an XGBoost model trained on the records of a corpus of tasks
// (scripts/train_cost_model.sh; the corpus and its measured accuracy on tasks it never saw are
// in cost_model/README.md). `tessera tune` starts a task's model from it (CostModel::set_prior)
// when the task has no model of its own, so that the first searched round is already ranked.
//
// The built-in one is cost_model/pretrained/cpu_xgboost.tscm, compiled into the binary. Its
// blob carries the feature layout version it was trained with: after a change of the features
// it no longer loads (set_prior throws) until it is retrained, and a test says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cost {

/// The built-in pretrained model for CPU (LLVM) targets, a blob for the set_prior() of an
/// "xgboost" model. Empty when this build was made without one.
const std::vector<uint8_t>& builtin_pretrained_blob();

/// What the built-in model was trained on (the JSON sidecar `costmodel train` writes beside
/// the blob: feature layout version, records, tasks, machines, date); empty when none.
const std::string& builtin_pretrained_info();

/// The blob a `--pretrained` choice names: "builtin" (builtin_pretrained_blob(), possibly
/// empty), "none" (empty) or the path of a blob `costmodel train` wrote. Throws UserError
/// naming the path when the file cannot be read.
std::vector<uint8_t> pretrained_blob(const std::string& choice);

} // namespace tessera::cost
