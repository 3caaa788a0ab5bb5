// Internal helpers of annotation and mutation: divisors, weighted picks and step-list edits.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/schedule/state.h"
#include "tessera/support/rng.h"

namespace tessera::sched::detail {

/// The divisors of n (n >= 1), ascending.
std::vector<int64_t> divisors(int64_t n);

/// A uniformly chosen element. Pre: !v.empty().
template <typename T> const T& pick(const std::vector<T>& v, Rng& rng) {
    return v[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(v.size()) - 1))];
}

/// The state after the first n steps (replayed from make_initial_state(c)).
State replay_prefix(const te::Compute& c, const std::vector<Step>& steps, size_t n);

/// Applies steps[from...] to `s` (which holds the state after steps[0, from)).
State replay_rest(State s, const std::vector<Step>& steps, size_t from);

/// replay_rest, then: when a vectorized loop of the result is wider than max_lanes (a tile or
/// a region that a mutation made larger than the sampler ever vectorizes), the Annotate
/// (Vectorize) steps from `from` on of that loop's stage are dropped and the rest replayed
/// again.
State replay_rest_limiting_vectors(const State& s, std::vector<Step> steps, size_t from,
                                   int64_t max_lanes);

/// Removes steps[idx]; follow_split sources after it are renumbered. Throws ScheduleError when
/// a later follow_split follows the removed step.
void erase_step(std::vector<Step>& steps, size_t idx);

/// Inserts `st` before steps[idx]; follow_split sources at or after idx are renumbered.
void insert_step(std::vector<Step>& steps, size_t idx, Step st);

} // namespace tessera::sched::detail
