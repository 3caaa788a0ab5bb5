// Evolutionary search over complete schedules, scored by a cost model (see
// include/tessera/tuner/evolutionary_search.h).
#include "tessera/tuner/evolutionary_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>

#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"

#include "parallel_indices.h"

namespace tessera::tune {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Scores states, reusing the scores of JSONs already scored in this search (the model does not
/// change during one search, and predictions are deterministic). States that do not lower are
/// dropped.
class Scorer {
  public:
    Scorer(cost::CostModel& model, FeatureCache& cache, SearchStats& stats, int num_threads)
        : model_(model), cache_(cache), stats_(stats), num_threads_(num_threads) {}

    std::vector<ScoredState> score(std::vector<sched::State> states) {
        std::vector<std::string> jsons;
        std::vector<const sched::State*> ptrs;
        jsons.reserve(states.size());
        ptrs.reserve(states.size());
        for (const sched::State& s : states) {
            jsons.push_back(sched::steps_to_json(s.steps));
            ptrs.push_back(&s);
        }
        cache_.prefetch(ptrs, jsons, num_threads_, stats_);

        std::vector<ScoredState> out;
        out.reserve(states.size());
        // The programs to predict: each new JSON once, in first-appearance order.
        std::vector<cost::ProgramFeatures> batch;
        std::vector<std::string> batch_json;
        std::unordered_map<std::string, size_t> in_batch; // lookup only
        std::vector<size_t> pending; // indices into out whose score comes from the batch
        for (size_t i = 0; i < states.size(); ++i) {
            sched::State& s = states[i];
            std::string& json = jsons[i];
            const cost::ProgramFeatures* f = cache_.features(s, json, stats_);
            if (!f)
                continue;
            ScoredState ss{std::move(s), std::move(json), 0.0};
            auto known = scores_.find(ss.schedule_json);
            if (known != scores_.end()) {
                ss.score = known->second;
            } else {
                if (in_batch.emplace(ss.schedule_json, batch.size()).second) {
                    batch.push_back(*f);
                    batch_json.push_back(ss.schedule_json);
                }
                pending.push_back(out.size());
            }
            out.push_back(std::move(ss));
        }
        if (!batch.empty()) {
            const auto t0 = std::chrono::steady_clock::now();
            const std::vector<double> pred = model_.predict(batch);
            stats_.predict_secs += seconds_since(t0);
            stats_.predicted += static_cast<int64_t>(batch.size());
            TESSERA_CHECK(pred.size() == batch.size())
                << "cost model " << model_.name() << " returned " << pred.size() << " scores for "
                << batch.size() << " programs";
            for (size_t i = 0; i < batch.size(); ++i)
                scores_[batch_json[i]] = std::isfinite(pred[i]) ? pred[i] : 0.0;
            for (size_t i : pending)
                out[i].score = scores_.at(out[i].schedule_json);
        }
        return out;
    }

  private:
    cost::CostModel& model_;
    FeatureCache& cache_;
    SearchStats& stats_;
    int num_threads_;
    std::unordered_map<std::string, double> scores_; // lookup only
};

/// The best distinct non-excluded schedules seen, by score (ties: first seen), bounded.
class BestSet {
  public:
    BestSet(size_t capacity, const std::set<std::string>& exclude,
            std::set<std::string>* excluded_seen)
        : capacity_(capacity), exclude_(exclude), excluded_seen_(excluded_seen) {}

    void consider(const ScoredState& s) {
        if (exclude_.count(s.schedule_json)) {
            if (excluded_seen_)
                excluded_seen_->insert(s.schedule_json);
            return;
        }
        if (!seen_.insert(s.schedule_json).second)
            return;
        entries_.push_back({s, next_seq_++});
        if (entries_.size() >= 2 * capacity_ + 16)
            truncate();
    }

    std::vector<ScoredState> take() {
        truncate();
        std::vector<ScoredState> out;
        out.reserve(entries_.size());
        for (Entry& e : entries_)
            out.push_back(std::move(e.state));
        entries_.clear();
        return out;
    }

  private:
    struct Entry {
        ScoredState state;
        int64_t seq;
    };
    void truncate() {
        auto better = [](const Entry& a, const Entry& b) {
            if (a.state.score != b.state.score)
                return a.state.score > b.state.score;
            return a.seq < b.seq;
        };
        const size_t keep = std::min(capacity_, entries_.size());
        std::partial_sort(entries_.begin(), entries_.begin() + keep, entries_.end(), better);
        entries_.resize(keep);
    }

    size_t capacity_;
    const std::set<std::string>& exclude_;
    std::set<std::string>* excluded_seen_;
    std::set<std::string> seen_;
    std::vector<Entry> entries_;
    int64_t next_seq_ = 0;
};

/// Roulette-wheel parent selection over scores shifted by the population's minimum, so that
/// any score scale works (rank objectives give negative scores). Uniform when all are equal.
class Roulette {
  public:
    explicit Roulette(const std::vector<ScoredState>& pop) {
        double lo = pop.front().score;
        for (const ScoredState& s : pop)
            lo = std::min(lo, s.score);
        prefix_.reserve(pop.size());
        double sum = 0;
        for (const ScoredState& s : pop) {
            sum += s.score - lo;
            prefix_.push_back(sum);
        }
    }
    size_t draw(Rng& rng) const {
        const double total = prefix_.back();
        if (!(total > 0))
            return static_cast<size_t>(rng.uniform_int(0, int64_t(prefix_.size()) - 1));
        const double x = rng.uniform01() * total;
        const size_t i = std::upper_bound(prefix_.begin(), prefix_.end(), x) - prefix_.begin();
        return std::min(i, prefix_.size() - 1);
    }

  private:
    std::vector<double> prefix_;
};

} // namespace

const cost::ProgramFeatures* FeatureCache::features(const sched::State& s, const std::string& json,
                                                    SearchStats& stats) {
    auto it = cache_.find(json);
    if (it != cache_.end())
        return it->second.get();
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<cost::ProgramFeatures> f;
    ++stats.lowered;
    try {
        f = std::make_unique<cost::ProgramFeatures>(
            cost::extract_features(sched::lower_state(s, "candidate")));
    } catch (const ScheduleError&) {
        ++stats.lower_failures;
    }
    stats.lower_secs += seconds_since(t0);
    return cache_.emplace(json, std::move(f)).first->second.get();
}

void FeatureCache::prefetch(const std::vector<const sched::State*>& states,
                            const std::vector<std::string>& jsons, int num_threads,
                            SearchStats& stats) {
    TESSERA_CHECK(states.size() == jsons.size())
        << "prefetch: " << states.size() << " states but " << jsons.size() << " keys";
    // The distinct misses, in first-appearance order.
    std::vector<size_t> todo;
    std::set<std::string> queued;
    for (size_t i = 0; i < states.size(); ++i)
        if (!cache_.count(jsons[i]) && queued.insert(jsons[i]).second)
            todo.push_back(i);
    if (todo.empty())
        return;
    const auto t0 = std::chrono::steady_clock::now();
    // Lowering and feature extraction are pure functions of the state (IR nodes are immutable,
    // reference counts atomic), so workers share nothing but the next index.
    std::vector<std::unique_ptr<cost::ProgramFeatures>> got(todo.size());
    for_each_index(todo.size(), num_threads, [&](size_t k) {
        try {
            got[k] = std::make_unique<cost::ProgramFeatures>(
                cost::extract_features(sched::lower_state(*states[todo[k]], "candidate")));
        } catch (const ScheduleError&) {
        }
    });
    for (size_t k = 0; k < todo.size(); ++k) {
        ++stats.lowered;
        if (!got[k])
            ++stats.lower_failures;
        cache_.emplace(jsons[todo[k]], std::move(got[k]));
    }
    stats.lower_secs += seconds_since(t0);
}

const cost::ProgramFeatures* FeatureCache::find(const std::string& json) const {
    auto it = cache_.find(json);
    return it == cache_.end() ? nullptr : it->second.get();
}

void validate(const EvolutionOptions& opts) {
    if (opts.population < 1)
        throw UserError() << "population must be at least 1, got " << opts.population;
    if (opts.generations < 0)
        throw UserError() << "generations must be at least 0, got " << opts.generations;
    if (!(opts.mutation_probability >= 0 && opts.mutation_probability <= 1))
        throw UserError() << "mutation_probability must be in [0, 1], got "
                          << opts.mutation_probability;
    if (opts.num_threads < 0)
        throw UserError() << "num_threads must be at least 0, got " << opts.num_threads;
}

std::vector<sched::State> sample_states(const std::vector<sched::State>& sketches, int n, Rng& rng,
                                        const sched::SampleOptions& opts, SearchStats& stats,
                                        sched::TargetKind target, int num_threads) {
    TESSERA_CHECK(!sketches.empty()) << "sample_states needs at least one sketch";
    std::vector<sched::State> out;
    if (n <= 0)
        return out;
    out.reserve(n);
    // Illegal samples are rare; the bound keeps a broken search space from looping forever.
    const int64_t max_attempts = 50 * int64_t{n} + 100;
    int64_t attempts = 0;
    while (int(out.size()) < n && attempts < max_attempts) {
        // One attempt per missing state, each with a sketch and a seed drawn here in order, so
        // that the states made depend on rng alone, not on the thread count.
        const size_t chunk =
            size_t(std::min<int64_t>(n - int64_t(out.size()), max_attempts - attempts));
        std::vector<std::optional<sched::State>> made = draw_then_make(
            chunk, rng, num_threads,
            [&](Rng& r) {
                return &sketches[size_t(r.uniform_int(0, int64_t(sketches.size()) - 1))];
            },
            [&](const sched::State* sketch, Rng& own) -> std::optional<sched::State> {
                try {
                    return target == sched::TargetKind::Gpu
                               ? sched::sample_initial_gpu_state(*sketch, own)
                               : sched::sample_initial_state(*sketch, own, opts);
                } catch (const ScheduleError&) {
                    return std::nullopt;
                }
            });
        for (std::optional<sched::State>& s : made) {
            if (s) {
                ++stats.sampled;
                out.push_back(std::move(*s));
            } else {
                ++stats.sample_failures;
            }
        }
        attempts += int64_t(chunk);
    }
    return out;
}

std::vector<ScoredState> score_states(std::vector<sched::State> states, cost::CostModel& model,
                                      FeatureCache& cache, SearchStats& stats, int num_threads) {
    return Scorer(model, cache, stats, num_threads).score(std::move(states));
}

std::vector<ScoredState> evolve(const std::vector<sched::State>& init, int num_out,
                                const std::set<std::string>& exclude, cost::CostModel& model,
                                FeatureCache& cache, const EvolutionOptions& opts, Rng& rng,
                                SearchStats& stats, std::set<std::string>* excluded_seen) {
    validate(opts);
    if (num_out <= 0)
        return {};
    Scorer scorer(model, cache, stats, opts.num_threads);
    BestSet best(static_cast<size_t>(num_out), exclude, excluded_seen);

    std::vector<ScoredState> pop = scorer.score(init);
    for (const ScoredState& s : pop)
        best.consider(s);

    for (int gen = 0; gen < opts.generations && !pop.empty(); ++gen) {
        const Roulette roulette(pop);
        std::vector<sched::State> children;
        children.reserve(opts.population);
        // A state with nothing to mutate must not stall the generation: failed mutations draw
        // another parent, up to a bound, then the generation is what it has. Parents, coins
        // and mutation seeds are drawn here in order, one draw per missing child, and the
        // mutations run on num_threads threads: the children depend on rng alone.
        const int64_t max_draws = 4 * int64_t{opts.population} + 16;
        int64_t draws = 0;
        while (int(children.size()) < opts.population && draws < max_draws) {
            const size_t chunk = size_t(
                std::min<int64_t>(opts.population - int64_t(children.size()), max_draws - draws));
            struct Draw {
                const sched::State* parent;
                bool mutates;
            };
            struct Child {
                std::optional<sched::State> state; ///< nullopt: the mutation gave nothing
                bool mutated = false;
            };
            std::vector<Child> made = draw_then_make(
                chunk, rng, opts.num_threads,
                [&](Rng& r) {
                    const sched::State* parent = &pop[roulette.draw(r)].state;
                    return Draw{parent, r.uniform01() < opts.mutation_probability};
                },
                [&](const Draw& d, Rng& own) {
                    if (!d.mutates)
                        return Child{*d.parent, false};
                    // A state bound to GPU hardware takes the GPU rules (device limits,
                    // cooperative fetches); CPU states never carry GPU bindings.
                    return Child{sched::is_gpu_state(*d.parent)
                                     ? sched::mutate_gpu(*d.parent, own)
                                     : sched::mutate(*d.parent, own, opts.sample, opts.weights),
                                 true};
                });
            for (Child& c : made) {
                if (c.mutated && !c.state) {
                    ++stats.mutation_failures;
                    continue;
                }
                stats.mutations += c.mutated;
                children.push_back(std::move(*c.state));
            }
            draws += int64_t(chunk);
        }
        pop = scorer.score(std::move(children));
        for (const ScoredState& s : pop)
            best.consider(s);
    }
    return best.take();
}

} // namespace tessera::tune
