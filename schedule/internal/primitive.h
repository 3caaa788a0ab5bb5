// The primitives as in-place transforms of a State (without recording the step or checking
// the compute locations afterwards: apply_step does both). Each throws ScheduleError on an
// illegal request; the caller works on a copy, so a throw leaves the caller's State as it was.
#pragma once

#include <string>
#include <vector>

#include "tessera/schedule/state.h"

namespace tessera::sched {

/// The stage of a step that needs loops: valid id, not an input, not inlined.
Stage& loop_stage(State& s, int stage, const char* step);
/// Throws unless 0 <= iter < st.iters.size().
void check_iter(const Stage& st, int iter, const char* step);
/// Inserts a stage at `pos`; compute locations pointing at pos or later shift by one.
void insert_stage(State& s, int pos, Stage st);

void do_split(State& s, int stage, int iter, const std::vector<int64_t>& lengths,
              bool inner_to_outer);
void do_follow_split(State& s, int stage, int iter, int src_step, int n_split);
void do_fuse(State& s, int stage, const std::vector<int>& iters);
void do_reorder(State& s, int stage, const std::vector<int>& order);
void do_annotate(State& s, int stage, int iter, IterAnnotation a);
void do_pragma(State& s, int stage, int iter, const std::string& name, int64_t value);
void do_compute_at(State& s, int stage, int target_stage, int target_iter);
void do_compute_inline(State& s, int stage);
void do_compute_root(State& s, int stage);
void do_cache_write(State& s, int stage, const std::string& scope);
void do_cache_read(State& s, int stage, const std::string& scope, const std::vector<int>& readers);
void do_rfactor(State& s, int stage, int iter);
void do_transform_layout(State& s, int stage, const LayoutTransform& layout);

} // namespace tessera::sched
