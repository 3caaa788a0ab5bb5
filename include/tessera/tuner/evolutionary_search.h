// Evolutionary search over the complete schedules of one task, scored by a cost model (the
// search of Ansor's sketch policy), usable alone: tune_task runs it once per measured round,
// and it serves random-search baselines and model evaluations as well.
//
// Scoring a schedule means lowering it (sched::lower_state), extracting its program features
// (cost::extract_features) and asking the model; lowering dominates, so features are cached by
// schedule JSON (the same schedule recurs across generations) and SearchStats counts every
// lowering with its time.
//
// evolve() (one search):
//   1. score the initial population (states that fail to lower are dropped, counted);
//   2. for each of `generations` rounds: draw population parents by roulette over their
//      scores (shifted so the population's worst has weight 0: any score scale works); each
//      child is a mutation of its parent with probability mutation_probability (a failed
//      mutation draws another parent, a bounded number of times), otherwise a copy; the
//      mutations run on num_threads threads, each with its own Rng seeded from the search's in
//      draw order; score the children;
//   3. every scored state of every generation competes for the result: the best distinct
//      schedules (by JSON) whose JSON is not excluded, by score, ties by first appearance.
// Given the Rng's state, the model's state and the inputs, the result is deterministic.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/cost_model/cost_model.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/schedule/state.h"
#include "tessera/support/rng.h"

namespace tessera::tune {

/// Counters of the search (cumulative: pass the same object to every call of a tuning run).
struct SearchStats {
    int64_t sampled = 0;           ///< Complete states made by sample_initial_state.
    int64_t sample_failures = 0;   ///< Its ScheduleErrors (the sketch was sampled again).
    int64_t mutations = 0;         ///< Children made by a successful mutation.
    int64_t mutation_failures = 0; ///< Mutations that gave nothing (another parent was drawn).
    int64_t lowered = 0;           ///< lower_state calls (cache misses of FeatureCache).
    int64_t lower_failures = 0;    ///< States lower_state rejected (dropped from the search).
    int64_t predicted = 0;         ///< Programs scored by the model.
    double lower_secs = 0;         ///< Wall time of lowering + feature extraction.
    double predict_secs = 0;       ///< Wall time of model predictions.
};

/// Program features of schedules, by schedule JSON (sched::steps_to_json of the steps). A
/// schedule that does not lower is remembered as such. Not thread-safe.
class FeatureCache {
  public:
    /// The features of s, whose steps_to_json is `json`; lowers s on the first request (counted
    /// in stats). nullptr when lower_state throws ScheduleError. The pointer stays valid until
    /// clear() or the cache's destruction.
    const cost::ProgramFeatures* features(const sched::State& s, const std::string& json,
                                          SearchStats& stats);
    /// Lowers the states not cached yet (distinct JSONs), on up to num_threads threads (0 = the
    /// host's cores), so that features() then finds them all. The cache's content is the same
    /// for every thread count. Pre: jsons[i] is the steps_to_json of states[i].
    void prefetch(const std::vector<const sched::State*>& states,
                  const std::vector<std::string>& jsons, int num_threads, SearchStats& stats);
    /// The entry of `json` if it was requested before (nullptr: unknown or did not lower).
    const cost::ProgramFeatures* find(const std::string& json) const;
    /// Forgets every entry (bounds memory between rounds).
    void clear() { cache_.clear(); }
    size_t size() const { return cache_.size(); }

  private:
    // Values behind unique_ptr so that returned pointers survive rehashing. Lookup only;
    // never iterated, so the map's order cannot leak into results.
    std::unordered_map<std::string, std::unique_ptr<cost::ProgramFeatures>> cache_;
};

/// A scored complete schedule.
struct ScoredState {
    sched::State state;
    std::string schedule_json; ///< sched::steps_to_json(state.steps): the dedup key.
    double score = 0;          ///< The model's prediction (higher = faster).
};

/// Options of evolve(), one documented default each (Ansor's CPU defaults).
struct EvolutionOptions {
    int population = 512;               ///< Children per generation. >= 1.
    int generations = 3;                ///< Rounds of mutation and selection. >= 0.
    double mutation_probability = 0.85; ///< Chance a child is a mutation, else a copy. [0, 1].
    sched::SampleOptions sample;        ///< Passed to the mutations.
    sched::MutationWeights weights;     ///< Which mutations, how often.
    /// Threads mutating and lowering candidates (0 = the host's cores). Results do not depend
    /// on it. >= 0.
    int num_threads = 1;
};

/// Throws UserError naming the option and its value when an option is outside its range.
void validate(const EvolutionOptions& opts);

/// `n` complete states from `sketches`, each from a uniformly drawn sketch. A ScheduleError
/// (an illegal sample) is counted and that draw repeated; after 50 * n + 100 attempts the
/// states made so far are returned (fewer than n only for a broken search space). GPU sketches
/// (target Gpu) are annotated by sched::sample_initial_gpu_state (block/vthread/thread
/// bindings, cooperative fetching) instead of sched::sample_initial_state. Draws run on
/// num_threads threads (0 = the host's cores), each with a seed drawn from rng in order, so
/// the states are the same for every thread count.
/// Pre: sketches is not empty.
std::vector<sched::State> sample_states(const std::vector<sched::State>& sketches, int n, Rng& rng,
                                        const sched::SampleOptions& opts, SearchStats& stats,
                                        sched::TargetKind target = sched::TargetKind::Cpu,
                                        int num_threads = 1);

/// Scores states with the model (features from `cache`, lowered on num_threads threads).
/// States that do not lower are dropped; the others keep their order.
std::vector<ScoredState> score_states(std::vector<sched::State> states, cost::CostModel& model,
                                      FeatureCache& cache, SearchStats& stats, int num_threads = 1);

/// The evolutionary search described at the top of this file. Returns up to num_out distinct
/// schedules, best predicted first, none of whose JSON is in `exclude`. Each distinct excluded
/// JSON the search met is inserted into *excluded_seen when it is not null (tune_task counts
/// them as already measured). Throws UserError on invalid options.
std::vector<ScoredState> evolve(const std::vector<sched::State>& init, int num_out,
                                const std::set<std::string>& exclude, cost::CostModel& model,
                                FeatureCache& cache, const EvolutionOptions& opts, Rng& rng,
                                SearchStats& stats, std::set<std::string>* excluded_seen = nullptr);

} // namespace tessera::tune
