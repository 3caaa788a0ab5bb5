// Program features for the cost model, in the manner of Ansor: one fixed-length vector of
// floats per buffer store in a lowered program (ir::LoweredFunc from sched::lower_state,
// before lower::prepare_for_codegen, so Vectorized/Unrolled/Parallel loop kinds are visible).
//
// Every feature is named and documented in ONE place, cost_model/feature_list.def, and in
// the same order in cost_model/FEATURES.md. Counts are scaled with log2(1 + x) as Ansor does.
// The layout (names, order, scaling) has a version, kFeatureLayoutVersion, stored beside every
// cost-model blob and training set: a change of the layout bumps it and old blobs are retrained.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::cost {

/// Version of the feature layout (names, order, scaling). Bump on any change.
extern const int kFeatureLayoutVersion;

/// The number of floats per store (the length of every row).
int num_features();
/// The feature names, in row order (num_features() entries), e.g. "float_mad", "vec_len",
/// "B0.bytes". Stable strings, used by docs and `tessera costmodel` output.
const std::vector<std::string>& feature_names();

/// What one feature is, from cost_model/feature_list.def (FEATURES.md shows the same table).
struct FeatureInfo {
    std::string name;    ///< As in feature_names().
    std::string group;   ///< "compute", "vectorize", "unroll", "parallel", "buffer",
                         ///< "intensity", "allocation" or "outer".
    std::string meaning; ///< One line: unit or kind, then what it measures.
    bool log_scaled;     ///< Stored as log2(1 + x); otherwise raw (one-hots, intensities).
};
/// One entry per feature, in row order (num_features() entries).
const std::vector<FeatureInfo>& feature_info();

/// The features of one program: one row per Store statement (in program order), each of
/// num_features() floats. A program without stores has no rows.
struct ProgramFeatures {
    std::vector<std::vector<float>> rows;
};

/// Extracts the features of f. Pre: f is lower_state's output (verified loop IR; loops may be
/// Parallel, Vectorized, Unrolled or Serial). Deterministic; never throws for valid IR.
ProgramFeatures extract_features(const ir::LoweredFunc& f);

} // namespace tessera::cost
