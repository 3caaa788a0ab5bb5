// `tessera costmodel features`: the speed of feature extraction on sampled schedules of an op.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::cli {

/// Samples `samples` schedules of the op `op_spec` (NAME:key=value,..., see `tessera op list`)
/// from its sketches with the host's cores and vector width (a sample that fails to apply or
/// lower is drawn again), lowers them, then times cost::extract_features alone over all of
/// them and prints programs/s, stores/s and features/s to out (with json one JSON object
/// instead: {"op", "programs", "sketches", "seed", "stores_per_program", "features_per_store",
/// "passes", "elapsed_secs", "programs_per_sec", "stores_per_sec", "features_per_sec"}).
/// Deterministic schedules for a given seed and host. Returns 0. Throws UserError on a bad
/// spec, samples < 1, or when too few samples lower (50 x samples + 100 attempts).
int run_costmodel_features(const std::string& op_spec, int samples, uint64_t seed,
                           std::ostream& out, bool json = false);

} // namespace tessera::cli
