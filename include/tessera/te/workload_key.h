// Workload identity: the canonical text of a Compute and its stable key (what the tuning
// database indexes records by).
//
// The canonical text is alpha-renamed: tensors are named t0, t1, ... (inputs in parameter
// order, then the compute stages in stage order), and the variables of each stage's body v0,
// v1, ... (the stage's axes in order, then reduction axes and let bindings in order of first
// appearance). Names given by operators are hints and never reach the text, so two Computes
// built separately for the same op and shapes get the same text and key. Shapes, dtypes and
// bodies (through the IR printer) are part of it, so different shapes or ops get different keys.
//
// Example (matmul 2x3 by 3x4):
//
//     tessera-compute v1
//     input t0: f32[2, 3]
//     input t1: f32[3, 4]
//     stage t2: f32[2, 4] (v0, v1) = sum(v2: 0..3, t0[v0, v2]*t1[v2, v1])
//     outputs t2
#pragma once

#include <string>

#include "tessera/te/compute.h"

namespace tessera::te {

/// The first line of every canonical text; bumped if the text format ever changes, so a key
/// of one format never silently equals a key of another.
constexpr const char* kComputeTextHeader = "tessera-compute v1";

/// The canonical, alpha-renamed text of `c` (one line per tensor, each ending in '\n').
/// Deterministic: depends only on the Compute's structure, never on names or addresses.
std::string canonical_compute_text(const te::Compute& c);

/// The workload key: SHA-256 (64 lower-case hex digits) of canonical_compute_text(c).
std::string workload_key(const te::Compute& c);

/// The key of an already canonical text (what the database checks stored texts with).
std::string workload_key_of_text(const std::string& canonical_text);

} // namespace tessera::te
