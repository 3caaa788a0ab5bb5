// STABLE API (S2 builds on it).
//
// The schedule primitives. Each checks its preconditions, applies itself to the State and
// appends its Step to state.steps. Any illegal request (bad stage or iterator id, a length that
// is not positive, a fuse of non-consecutive iterators, a reorder that is not a permutation, a
// compute_at that would make a cycle, ...) throws ScheduleError naming the reason and leaves
// the State unchanged. No primitive crashes or throws InternalError on input the search can
// produce.
//
// After every step the iterator extents of attached stages are re-inferred (bounds inference
// over the consumers' loops), so extents seen by later steps are those the lowering uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/schedule/state.h"
#include "tessera/support/error.h"

namespace tessera::sched {

/// Splits iterator `iter` (extent E) of `stage` into lengths.size() + 1 iterators, which
/// replace it in place. inner_to_outer = true (the usual tiling): lengths are the extents of
/// the inner parts, outer to inner, and the outermost part gets ceil(E / prod(lengths)), e.g.
/// E = 100, lengths [4, 8] gives (4, 4, 8). inner_to_outer = false: lengths are the extents of
/// the outer parts and the innermost gets the ceiling. Lengths need not divide E: the excess
/// iterations are guarded (and the guards taken off full tiles by loop partitioning).
/// Returns the ids of the new iterators, outer to inner (iter, iter+1, ...).
/// Throws ScheduleError on an empty length list or a length < 1.
std::vector<int> split(State& s, int stage, int iter, const std::vector<int64_t>& lengths,
                       bool inner_to_outer = true);

/// Splits like the Split step `src_step` (an index into s.steps): the first n_split - 1 of its
/// lengths, then the product of the rest, giving n_split + 1 iterators (inner_to_outer).
/// Used to make a consumer follow a producer's tiling. Returns the new iterator ids.
/// Throws ScheduleError when src_step is not a Split step or n_split is outside
/// [1, lengths.size()].
std::vector<int> follow_split(State& s, int stage, int iter, int src_step, int n_split);

/// Fuses consecutive iterators (ids ascending by one, all spatial or all reduce) into one
/// whose extent is their product, at the position of the first. Returns its id.
int fuse(State& s, int stage, const std::vector<int>& iters);

/// Reorders the iterators of `stage`: order[k] is the id of the iterator that becomes k-th.
/// Pre: a permutation of 0..iters.size()-1. Attached stages follow their loop.
void reorder(State& s, int stage, const std::vector<int>& order);
/// reorder with loop `iter` moved innermost, the other loops keeping their order. Throws
/// ScheduleError when `iter` is out of range.
void move_innermost(State& s, int stage, int iter);

/// Annotates one loop. Parallel and Vectorize need a spatial iterator (a reduce loop would
/// race, and the vectorizer cannot widen an accumulation); GPU bindings are recorded as is.
/// An iterator already annotated (other than None) may be re-annotated.
void annotate(State& s, int stage, int iter, IterAnnotation a);
inline void parallel(State& s, int stage, int iter) {
    annotate(s, stage, iter, IterAnnotation::Parallel);
}
inline void vectorize(State& s, int stage, int iter) {
    annotate(s, stage, iter, IterAnnotation::Vectorize);
}
inline void unroll(State& s, int stage, int iter) {
    annotate(s, stage, iter, IterAnnotation::Unroll);
}

/// A pragma on a stage, placed at iterator `iter` (recorded; applies to the whole stage). The
/// only pragma is "auto_unroll_max_step" (value >= 0): loops whose total trip count (with the
/// loops inside them) is at most `value` are unrolled. Throws ScheduleError on another name.
void pragma(State& s, int stage, int iter, const std::string& name, int64_t value);

/// Computes `stage` inside loop `target_iter` of `target_stage`: for each iteration of that
/// loop, only the region of `stage` that the loops inside it read. Throws ScheduleError when
/// the stage is an input, an output, targets itself, the target is inlined or an input, the
/// stage is not read (through inlined stages) by the target or stages attached inside it, or
/// the attachment would make a cycle.
void compute_at(State& s, int stage, int target_stage, int target_iter);

/// Substitutes the stage's body into its consumers. Throws ScheduleError for inputs,
/// outputs, reductions and stages that others are attached to.
void compute_inline(State& s, int stage);

/// Gives the stage its own top-level loop nest again (undoes compute_at / compute_inline).
void compute_root(State& s, int stage);

/// Adds a stage before `stage` that computes its body into a `scope` buffer ("local" for a
/// register tile); `stage` becomes a copy of it. Returns the new stage's id (= stage; the
/// original moves to stage + 1). Pre: a compute stage at root with untouched iterators and
/// nothing attached to it.
int cache_write(State& s, int stage, const std::string& scope);

/// Adds a stage right after `stage` that copies it into a `scope` buffer, and makes the
/// `readers` (consumers of `stage`, non-empty) read the copy instead. Returns the new stage's
/// id (= stage + 1; later stages shift by one). Use compute_at to place the copy (for example
/// to pack a panel per tile).
int cache_read(State& s, int stage, const std::string& scope, const std::vector<int>& readers);

/// Factors a reduction: `iter` (a reduce iterator of `stage`) becomes a spatial axis of a new
/// stage inserted before `stage` that reduces over the other reduce iterators; `stage` then
/// reduces the new stage over that axis. Returns the new stage's id (= stage; the original
/// moves to stage + 1). The new stage's loops are its spatial axes, the factored axis, then the
/// remaining reduce iterators; the original gets fresh loops.
int rfactor(State& s, int stage, int iter);

/// Stores `stage` (an input, or a compute stage that is not an output) in a transformed
/// layout (state.h LayoutTransform): readers index the new layout. For an input, the caller
/// passes data packed by pack_layout (layout.h), done once ahead of time as vendor libraries
/// do for weights, and the function's parameter has the packed shape.
void transform_layout(State& s, int stage, const LayoutTransform& layout);

/// Applies one step (as recorded) to s and appends it. Same errors as the primitives; the
/// state is unchanged when it throws.
void apply_step(State& s, const Step& step);

/// make_initial_state(c) with every step applied in order: a pure, deterministic function.
/// Throws ScheduleError at the first illegal step, naming its index.
State replay(const te::Compute& c, const std::vector<Step>& steps);

/// Parses a scope name: "global", "local", "shared"; ScheduleError otherwise.
StageScope parse_scope(const std::string& s);

} // namespace tessera::sched
