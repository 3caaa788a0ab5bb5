// tune_task: the measured-round loop of one task (see include/tessera/tuner/tune_task.h).
#include "tessera/tuner/tune_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/lookup.h"
#include "tessera/tuner/pair_ratios.h"

#include "parallel_indices.h"

namespace tessera::tune {

namespace {

/// Neighbours drawn per neighbour measured when a pretrained prior ranks them.
constexpr int kNeighbourOversample = 4;

/// The evolution's share of the search options.
EvolutionOptions evolution_options(const SearchOptions& opts) {
    EvolutionOptions eo;
    eo.population = opts.population;
    eo.generations = opts.generations;
    // GPU states take the GPU mutation rules (evolve picks them by the state's bindings).
    eo.mutation_probability = opts.mutation_probability;
    eo.sample = opts.sample;
    eo.num_threads = opts.search_threads;
    return eo;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

/// One task's tuning: the state that lives across its rounds (one tune_task call, or one
/// TaskTuningSession driven round by round). Keeps copies of the compute, target, options and
/// callback; the database, model and measurer are the caller's.
class TaskTuner {
  public:
    TaskTuner(const te::Compute& c, double flops, const TuneTarget& target, TuningDatabase& db,
              cost::CostModel& model, Measurer& measurer, const SearchOptions& opts,
              const std::function<void(const TuneProgress&)>& on_progress)
        : c_(c), flops_(flops), target_(target), db_(db), model_(model), measurer_(measurer),
          opts_(opts), on_progress_(on_progress), rng_(opts.seed), clock_(search_clock(opts)),
          start_(clock_()) {}

    /// Before the first round: adds the workload, warm-starts the model, reports the start.
    void begin() {
        result_.workload_key = db_.add_workload(c_);
        model_name_ = cost_model_name(model_, result_.workload_key, target_);
        warm_start();
        report_progress();

        measured_ =
            db_.measured_schedules(result_.workload_key, target_.target, target_.fingerprint);
        if (const std::optional<TuningRecord> best = best_record())
            measurer_.note_best_secs(result_.workload_key, best->median_secs);
        sketches_ = sched::generate_sketches(c_, opts_.sketch);
        TESSERA_CHECK(!sketches_.empty()) << "no sketch for workload " << result_.workload_key;
        if (opts_.seed_default_schedule) {
            sched::DefaultScheduleOptions d = opts_.defaults;
            d.weight_inputs = opts_.sketch.weight_inputs;
            try {
                seeds_.push_back(sched::default_schedule(c_, d));
            } catch (const ScheduleError&) { // a Compute the rules do not cover: search alone
            }
        }
        const TuneTarget key{target_.target, target_.fingerprint, target_.isa_class};
        for (const TuningRecord& r : transfer_seeds(db_, result_.workload_key, key,
                                                    needs_by_replay(c_), opts_.transfer_seeds)) {
            try {
                seeds_.push_back(sched::replay(c_, sched::steps_from_json(r.schedule_json)));
            } catch (const ScheduleError&) { // needs_by_replay replayed it: not expected
            } catch (const UserError&) {
            }
        }
    }

    TuneResult run() {
        begin();
        const double deadline = opts_.time_budget_secs > 0 ? start_ + opts_.time_budget_secs : kInf;
        while (!finished()) {
            const int before = result_.trials;
            if (!run_round(opts_.measure_per_round, deadline))
                break; // nothing left to measure
            if (result_.trials == before)
                break; // the time left fits no candidate
        }
        return summary();
    }

    double elapsed() const { return clock_() - start_; }

    /// The result so far, with the best record, elapsed time and skip count brought up to date.
    TuneResult summary() const {
        TuneResult r = result_;
        r.best = best_record();
        r.elapsed_secs = elapsed();
        r.skipped_already_measured = int(skipped_.size());
        return r;
    }

    /// One measured round of at most max_candidates (and opts.measure_per_round, and the
    /// trials left of opts.num_trials) candidates; false when it found nothing new to measure.
    bool run_round(int max_candidates, double deadline) {
        int n = std::min(opts_.measure_per_round, max_candidates);
        if (opts_.num_trials > 0)
            n = std::min(n, opts_.num_trials - result_.trials);
        if (n < 1)
            return false;
        return run_round_of(n, deadline);
    }

    int run_seed_round(double deadline) {
        int n = int(seeds_.size());
        if (opts_.num_trials > 0)
            n = std::min(n, opts_.num_trials - result_.trials);
        search_cache_.clear();
        std::vector<const sched::State*> picks;
        std::vector<std::string> pick_json;
        std::set<std::string> picked;
        add_unmeasured_seeds(n, picks, pick_json, picked);
        if (picks.empty())
            return 0;
        const int measured = measure_and_commit(picks, pick_json, deadline);
        if (measured > 0)
            finish_round();
        return measured;
    }

    /// See TaskTuningSession::run_retime_round.
    int run_retime_round(double deadline) {
        const std::optional<TuningRecord> best = best_record();
        if (!best || (opts_.num_trials > 0 && result_.trials >= opts_.num_trials))
            return 0;
        int times = 0;
        for (const TuningRecord& r : db_.records_of(result_.workload_key))
            times += r.target == target_.target && r.fingerprint == target_.fingerprint &&
                     r.schedule_json == best->schedule_json;
        if (times >= 2)
            return 0;
        sched::State s;
        try {
            s = sched::replay(c_, sched::steps_from_json(best->schedule_json));
        } catch (const ScheduleError&) { // recorded by this tessera: not expected
            return 0;
        } catch (const UserError&) {
            return 0;
        }
        const int measured = measure_and_commit({&s}, {best->schedule_json}, deadline, true);
        if (measured > 0)
            report_progress();
        return measured;
    }

  private:
    /// Adds the seeds (default schedule first, then the transfer seeds) that were not measured
    /// yet and lower, until picks holds n.
    void add_unmeasured_seeds(int n, std::vector<const sched::State*>& picks,
                              std::vector<std::string>& pick_json, std::set<std::string>& picked) {
        for (const sched::State& s : seeds_) {
            if (int(picks.size()) >= n)
                break;
            std::string json = sched::steps_to_json(s.steps);
            if (measured_.count(json) || picked.count(json) ||
                !search_cache_.features(s, json, result_.search))
                continue;
            picked.insert(json);
            picks.push_back(&s);
            pick_json.push_back(std::move(json));
        }
    }

    bool finished() const {
        if (opts_.cancel && opts_.cancel->load())
            return true;
        if (opts_.num_trials > 0 && result_.trials >= opts_.num_trials)
            return true;
        return opts_.time_budget_secs > 0 && elapsed() >= opts_.time_budget_secs;
    }

    std::optional<TuningRecord> best_record() const {
        return db_.best_record(result_.workload_key, target_.target, target_.fingerprint);
    }

    /// Loads the saved model (if it fits) and brings it up to date with the records; a model
    /// with nothing to learn from is reset, so that the call depends on the database alone.
    void warm_start() {
        bool loaded = false;
        if (auto blob = db_.load_cost_model(model_name_)) {
            try {
                model_.load(*blob);
                loaded = true;
            } catch (const UserError&) {
                // Another model kind or feature layout: retrained from the records below.
            }
        }
        int num_ok = 0;
        std::vector<cost::TrainingExample> examples = training_examples(num_ok);
        if (num_ok >= opts_.retrain_min_records) {
            if (!loaded || model_.num_trained() != int64_t(examples.size()))
                train_and_save(examples);
        } else if (!loaded) {
            model_.train({});
        }
        result_.warm_start = model_.num_trained() > 0;
        result_.model_examples_at_start = model_.num_trained();
    }

    void train_and_save(const std::vector<cost::TrainingExample>& examples) {
        model_.train(examples);
        db_.save_cost_model(model_name_, model_.save());
    }

    /// The features of a record's schedule: from this round's search when it scored it,
    /// otherwise by replaying and lowering (nullptr when that fails: the record is skipped).
    const cost::ProgramFeatures* record_features(const std::string& json) {
        auto it = record_features_.find(json);
        if (it != record_features_.end())
            return it->second.get();
        std::unique_ptr<cost::ProgramFeatures> f;
        if (const cost::ProgramFeatures* scored = search_cache_.find(json)) {
            f = std::make_unique<cost::ProgramFeatures>(*scored);
        } else {
            try {
                const sched::State s = sched::replay(c_, sched::steps_from_json(json));
                f = std::make_unique<cost::ProgramFeatures>(
                    cost::extract_features(sched::lower_state(s, "record")));
            } catch (const ScheduleError&) {
            } catch (const UserError&) {
                // A schedule JSON of another format version: not usable for training.
            }
        }
        return record_features_.emplace(json, std::move(f)).first->second.get();
    }

    /// Every record of the task for (target, fingerprint) with usable features, in id order.
    std::vector<cost::TrainingExample> training_examples(int& num_ok) {
        std::vector<TuningRecord> records;
        double best = kInf;
        for (TuningRecord& r : db_.records_of(result_.workload_key)) {
            if (r.target != target_.target || r.fingerprint != target_.fingerprint)
                continue;
            if (r.error_code == MeasureError::Ok)
                best = std::min(best, r.rank_secs);
            records.push_back(std::move(r));
        }
        std::vector<cost::TrainingExample> examples;
        num_ok = 0;
        for (const TuningRecord& r : records) {
            const cost::ProgramFeatures* f = record_features(r.schedule_json);
            if (!f)
                continue;
            cost::TrainingExample e;
            e.features = *f;
            e.task = result_.workload_key;
            if (r.error_code == MeasureError::Ok && r.rank_secs > 0) {
                e.normalized_throughput = best / r.rank_secs;
                ++num_ok;
            }
            examples.push_back(std::move(e));
        }
        return examples;
    }

    /// The best measured states of the task, replayed (records that no longer replay skipped).
    std::vector<sched::State> database_seeds() {
        std::vector<sched::State> seeds;
        for (const TuningRecord& r : db_.top_k(result_.workload_key, opts_.init_from_db,
                                               target_.target, target_.fingerprint)) {
            try {
                seeds.push_back(sched::replay(c_, sched::steps_from_json(r.schedule_json)));
            } catch (const ScheduleError&) {
            } catch (const UserError&) {
            }
        }
        return seeds;
    }

    /// One measured round of n >= 1 candidates; false when it found nothing new to measure.
    bool run_round_of(int n, double deadline) {
        const std::vector<sched::State>& sketches = sketches_;
        const int n_random = int(std::floor(opts_.eps_greedy * n));
        search_cache_.clear();

        const std::vector<sched::State> measured_best = database_seeds();
        std::vector<sched::State> population = measured_best;
        population.insert(population.end(), seeds_.begin(), seeds_.end());
        const int n_fresh = std::max(opts_.population - int(population.size()), n_random);
        const std::vector<sched::State> fresh =
            sample_states(sketches, n_fresh, rng_, opts_.sample, result_.search,
                          opts_.sketch.target, opts_.search_threads);
        population.insert(population.end(), fresh.begin(), fresh.end());

        // The pick: eps-greedy random fresh samples (that lower), then the best predicted.
        std::vector<const sched::State*> picks;
        std::vector<std::string> pick_json;
        std::set<std::string> picked;
        // The seeds are measured once: the default is the search's floor, the transfer seeds
        // what other machines found.
        add_unmeasured_seeds(n, picks, pick_json, picked);
        const int n_seeds = int(picks.size());
        for (const sched::State& s : fresh) {
            if (int(picks.size()) >= n_seeds + n_random || int(picks.size()) >= n)
                break;
            std::string json = sched::steps_to_json(s.steps);
            if (measured_.count(json)) {
                skipped_.insert(json);
                continue;
            }
            if (picked.count(json) || !search_cache_.features(s, json, result_.search))
                continue;
            picked.insert(json);
            picks.push_back(&s);
            pick_json.push_back(std::move(json));
        }

        // While the model has learnt nothing of this task, the round measures mutations of the
        // best measured states (a local search around the default schedule and the transfer
        // seeds), which also gives the model its first lessons: random states are far slower
        // than a good default. Without a prior the neighbours are drawn at random; with one,
        // kNeighbourOversample times as many are drawn and the prior keeps the best predicted.
        // (ResNet-18 on a 2-core Zen 1, 300 s: letting the prior rank the evolution's states
        // instead measured 262 candidates, slower to build, and ended 5% above the unranked
        // local search's 50.9 ms.)
        neighbour_picks_.clear();
        if (int(picks.size()) < n && model_.num_trained() == 0) {
            const int wanted = n - int(picks.size());
            neighbour_picks_ = neighbours_of_best(
                measured_best, model_.has_prior() ? kNeighbourOversample * wanted : wanted, picked);
            if (model_.has_prior())
                keep_best_predicted(neighbour_picks_, wanted);
        }
        for (const ScoredState& s : neighbour_picks_) {
            picked.insert(s.schedule_json);
            picks.push_back(&s.state);
            pick_json.push_back(s.schedule_json);
        }

        // The evolution (skipped when the whole round is random picks).
        std::vector<ScoredState> best;
        if (int(picks.size()) < n) {
            const EvolutionOptions eo = evolution_options(opts_);
            // Ask for n: the random picks may be among the best as well.
            best = evolve(population, n, measured_, model_, search_cache_, eo, rng_, result_.search,
                          &skipped_);
        }
        for (const ScoredState& b : best) {
            if (int(picks.size()) >= n)
                break;
            if (!picked.insert(b.schedule_json).second)
                continue;
            picks.push_back(&b.state);
            pick_json.push_back(b.schedule_json);
        }
        if (picks.empty())
            return false;

        if (measure_and_commit(picks, pick_json, deadline) > 0)
            finish_round();
        return true;
    }

    /// Up to n distinct states, none measured or in `picked`, each 1 to 3 mutations of one of
    /// `parents` (the task's best measured states on this machine, fastest first; the fastest
    /// drawn most often), that lower, with their JSON (scores 0). CPU states only (GPU states
    /// have mutations of their own): none otherwise.
    std::vector<ScoredState> neighbours_of_best(const std::vector<sched::State>& parents, int n,
                                                const std::set<std::string>& picked) {
        std::vector<ScoredState> out;
        if (parents.empty() || sched::is_gpu_state(parents.front()))
            return out;
        std::set<std::string> seen = picked;
        const int max_attempts = 20 * n;
        int attempts = 0;
        while (int(out.size()) < n && attempts < max_attempts) {
            // A quarter more attempts than states missing (some repeat a schedule or fail),
            // each with a parent, a mutation count and a seed drawn here in order; the
            // mutations run on search_threads threads, so the children depend on rng_ alone.
            const int missing = n - int(out.size());
            const size_t chunk =
                size_t(std::min(missing + missing / 4 + 1, max_attempts - attempts));
            struct Draw {
                size_t parent;
                int steps;
            };
            std::vector<std::optional<sched::State>> child = draw_then_make(
                chunk, rng_, opts_.search_threads,
                [&](Rng& r) {
                    // The fastest parents most often: the smaller of two uniform draws.
                    const size_t parent =
                        std::min(size_t(r.uniform_int(0, int64_t(parents.size()) - 1)),
                                 size_t(r.uniform_int(0, int64_t(parents.size()) - 1)));
                    return Draw{parent, int(r.uniform_int(1, 3))};
                },
                [&](const Draw& d, Rng& own) {
                    std::optional<sched::State> c = parents[d.parent];
                    for (int m = 0; m < d.steps && c; ++m)
                        c = sched::mutate(*c, own, opts_.sample);
                    return c;
                });
            // The new distinct children, lowered together, then kept in draw order.
            std::vector<size_t> fresh;
            std::vector<const sched::State*> fresh_state;
            std::vector<std::string> fresh_json;
            for (size_t i = 0; i < chunk; ++i) {
                if (!child[i])
                    continue;
                std::string json = sched::steps_to_json(child[i]->steps);
                if (measured_.count(json) || !seen.insert(json).second)
                    continue;
                fresh.push_back(i);
                fresh_state.push_back(&*child[i]);
                fresh_json.push_back(std::move(json));
            }
            search_cache_.prefetch(fresh_state, fresh_json, opts_.search_threads, result_.search);
            for (size_t k = 0; k < fresh.size() && int(out.size()) < n; ++k)
                if (search_cache_.find(fresh_json[k]))
                    out.push_back({std::move(*child[fresh[k]]), std::move(fresh_json[k]), 0.0});
            attempts += int(chunk);
        }
        return out;
    }

    /// Keeps the n states of `states` the model predicts fastest (ties: the earlier first).
    void keep_best_predicted(std::vector<ScoredState>& states, int n) {
        if (int(states.size()) <= n)
            return;
        std::vector<cost::ProgramFeatures> features;
        features.reserve(states.size());
        for (const ScoredState& s : states) // neighbours_of_best cached every one
            features.push_back(*search_cache_.find(s.schedule_json));
        const std::vector<double> score = model_.predict(features);
        for (size_t i = 0; i < states.size(); ++i)
            states[i].score = score[i];
        std::stable_sort(
            states.begin(), states.end(),
            [](const ScoredState& a, const ScoredState& b) { return a.score > b.score; });
        states.erase(states.begin() + n, states.end());
    }

    /// After a round's measurements: retrain, record the curve point, report.
    void finish_round() {
        ++result_.rounds;
        int num_ok = 0;
        std::vector<cost::TrainingExample> examples = training_examples(num_ok);
        if (num_ok >= opts_.retrain_min_records)
            train_and_save(examples);

        const std::optional<TuningRecord> best_now = best_record();
        result_.curve.emplace_back(result_.trials, elapsed(),
                                   best_now ? best_now->rank_secs : kInf);
        report_progress();
    }

    /// Measures and commits the picks in batches of opts.commit_every, until all are measured
    /// or the deadline: a batch is cut to the candidates the time left affords at the measuring
    /// time per candidate seen so far, and none starts once not one fits. Returns how many were
    /// measured.
    int measure_and_commit(const std::vector<const sched::State*>& picks,
                           const std::vector<std::string>& pick_json, double deadline,
                           bool retime = false) {
        size_t done = 0;
        while (done < picks.size()) {
            size_t batch = size_t(opts_.commit_every);
            const double left = deadline - clock_();
            if (left <= 0)
                break;
            if (std::isfinite(left) && measured_count_ > 0) {
                const double per_candidate = result_.measure_secs / measured_count_;
                const double fits = per_candidate > 0 ? std::floor(left / per_candidate) : kInf;
                if (fits < 1)
                    break;
                batch = size_t(std::min<double>(double(batch), fits));
            }
            const size_t end = std::min(picks.size(), done + batch);
            const double t0 = clock_();
            measure_and_commit_batch(std::vector<const sched::State*>(picks.begin() + long(done),
                                                                      picks.begin() + long(end)),
                                     std::vector<std::string>(pick_json.begin() + long(done),
                                                              pick_json.begin() + long(end)),
                                     retime);
            result_.measure_secs += clock_() - t0;
            measured_count_ += int(end - done);
            done = end;
            if (done < picks.size())
                report_progress(false); // the round goes on: show the batch
        }
        return int(done);
    }

    /// retime: the picks were measured before; their records say so in their measurement
    /// settings ("retime": true), so that a repeated measurement is told from a duplicate.
    void measure_and_commit_batch(const std::vector<const sched::State*>& picks,
                                  const std::vector<std::string>& pick_json, bool retime) {
        std::vector<sched::State> states;
        states.reserve(picks.size());
        for (const sched::State* s : picks)
            states.push_back(*s);
        const std::optional<TuningRecord> baseline = set_baseline();
        const std::vector<MeasureResult> results = measurer_.measure(c_, states);
        TESSERA_CHECK(results.size() == states.size())
            << "measurer returned " << results.size() << " results for " << states.size()
            << " candidates";
        std::string settings = measurer_.settings_json();
        if (retime) {
            nlohmann::json j = nlohmann::json::parse(settings);
            j["retime"] = true;
            settings = j.dump();
        }
        std::vector<TuningRecord> records;
        records.reserve(results.size());
        for (size_t i = 0; i < results.size(); ++i) {
            const MeasureResult& m = results[i];
            TuningRecord r;
            r.workload_key = result_.workload_key;
            r.target = target_.target;
            r.fingerprint = target_.fingerprint;
            r.isa_class = target_.isa_class;
            r.schedule_json = pick_json[i];
            r.run_secs = m.run_secs;
            for (double secs : m.run_secs)
                result_.repeat_secs += secs;
            r.error_code = m.error;
            if (m.error != MeasureError::Ok) {
                r.error_message = m.error_message.empty() ? to_string(m.error) : m.error_message;
                ++result_.errors;
            }
            r.measure_settings_json = settings;
            if (baseline)
                rank_beside(r, m, *baseline);
            records.push_back(std::move(r));
        }
        if (baseline)
            confirm_new_bests(states, records, *baseline);
        db_.commit_batch(records);
        for (const std::string& json : pick_json)
            measured_.insert(json);
        result_.trials += int(records.size());
    }

    /// The ratios of `m`'s timed pairs (its runs over the baseline's beside them), if it has
    /// any. The Measurer contract pairs them one to one.
    static std::optional<PairRatios> pair_ratios_of(const MeasureResult& m) {
        if (m.run_secs.empty() || m.baseline_run_secs.empty())
            return std::nullopt;
        TESSERA_CHECK(m.run_secs.size() == m.baseline_run_secs.size())
            << m.run_secs.size() << " runs timed beside " << m.baseline_run_secs.size()
            << " of the baseline";
        for (double secs : m.baseline_run_secs)
            if (!(secs > 0))
                return std::nullopt;
        return PairRatios(m.run_secs, m.baseline_run_secs);
    }

    /// Ranks Ok record `r` by the median ratio of `m`'s timed pairs (TuningRecord::rank_secs:
    /// that ratio times the baseline's rank) and names the baseline in its settings; a
    /// measurement without baseline runs leaves it ranked by its median. The median of the
    /// ratios, not the ratio of the medians: timed beside itself 40 times (a 128 x 1024 x 256
    /// matmul, 2 threads, Zen 4), the one stayed within 0.993-1.005, the other spread over
    /// 0.959-1.013, a burst of slow runs moving one median and not the other.
    static void rank_beside(TuningRecord& r, const MeasureResult& m, const TuningRecord& baseline) {
        if (r.error_code != MeasureError::Ok)
            return; // (an Ok record without runs is commit_batch's to refuse)
        const std::optional<PairRatios> ratios = pair_ratios_of(m);
        if (!ratios)
            return;
        r.rank_secs = ratios->median() * baseline.rank_secs;
        nlohmann::json j = nlohmann::json::parse(r.measure_settings_json);
        j["baseline_record"] = baseline.id;
        j["baseline_median_secs"] = median_secs_of(m.baseline_run_secs);
        r.measure_settings_json = j.dump();
    }

    /// A candidate that beats the baseline does so by one ratio, the luckiest of its batch's:
    /// among many candidates near the baseline's speed, the smallest ratio measured is biased
    /// low, and as the next baseline it would pass that bias on to every rank after it. So the
    /// batch's fastest candidate, while it beats the baseline, is measured beside it once more
    /// and ranked by that second, independent ratio alone (its record keeps both measurements'
    /// runs, the first rank as "first_rank_secs"); then the next fastest, up to
    /// kMaxConfirmations per batch. The second ratio must prove the gain: below 1 by more than
    /// kProofErrors of its standard errors (PairRatios::relative_error), and won by enough of
    /// its pairs that equal kernels would do so with chance kProofSignP at most (the sign test,
    /// which a spread left narrow by chance cannot fool). One that does not prove it is ranked
    /// by it but no better than the baseline ("unproven": true; ties go to the older record,
    /// so the baseline stays the best). Without the proof, a candidate as fast as the baseline
    /// passes half of its second measurements: a bert_emb_op13 tune (300 s, Zen 4) took 26
    /// such steps of about 1%, its best ranked at 0.259 ms while it and the first baseline ran
    /// at 0.319 and 0.341 ms and no faster in the model; candidates all as fast as each other
    /// (tune_task_test) drifted the best 3-12% in 96 trials, still 0-4% with 2 errors and a
    /// 0.05 sign test, not at all with these. The proof cannot see what both measurements
    /// share (the same library and the same input buffers in one worker). Candidates the cap
    /// left unconfirmed rank no better than the best proven.
    void confirm_new_bests(const std::vector<sched::State>& states,
                           std::vector<TuningRecord>& records, const TuningRecord& baseline) {
        constexpr int kMaxConfirmations = 8;
        constexpr double kProofErrors = 3;
        constexpr double kProofSignP = 0.01;
        std::set<size_t> confirmed;
        double proven_best = baseline.rank_secs;
        auto mark_unproven = [](TuningRecord& r, double rank_secs) {
            nlohmann::json j = nlohmann::json::parse(r.measure_settings_json);
            if (!j.contains("first_rank_secs"))
                j["first_rank_secs"] = r.rank_secs;
            j["unproven"] = true;
            r.measure_settings_json = j.dump();
            r.rank_secs = rank_secs;
        };
        for (int round = 0; round < kMaxConfirmations; ++round) {
            std::optional<size_t> fastest;
            for (size_t i = 0; i < records.size(); ++i)
                if (records[i].error_code == MeasureError::Ok && records[i].rank_secs > 0 &&
                    records[i].rank_secs < baseline.rank_secs &&
                    (!fastest || records[i].rank_secs < records[*fastest].rank_secs))
                    fastest = i;
            if (!fastest || confirmed.count(*fastest))
                return; // nothing beats the baseline, or the fastest stands proven
            confirmed.insert(*fastest);
            TuningRecord& r = records[*fastest];
            const std::vector<MeasureResult> again = measurer_.measure(c_, {states[*fastest]});
            const std::optional<PairRatios> ratios =
                again.size() == 1 && again[0].error == MeasureError::Ok ? pair_ratios_of(again[0])
                                                                        : std::nullopt;
            if (!ratios) { // not measured again: its first ratio cannot stand as proof
                mark_unproven(r, baseline.rank_secs);
                continue;
            }
            const double first_rank = r.rank_secs;
            rank_beside(r, again[0], baseline); // ranked, and its settings, by the second alone
            nlohmann::json j = nlohmann::json::parse(r.measure_settings_json);
            j["first_rank_secs"] = first_rank;
            r.measure_settings_json = j.dump();
            r.run_secs.insert(r.run_secs.end(), again[0].run_secs.begin(), again[0].run_secs.end());
            for (double secs : again[0].run_secs)
                result_.repeat_secs += secs;
            if (ratios->median() * (1 + kProofErrors * ratios->relative_error()) < 1 &&
                ratios->sign_test_p() <= kProofSignP)
                proven_best = std::min(proven_best, r.rank_secs);
            else // no better than the baseline, or slower by the second ratio
                mark_unproven(r, std::max(r.rank_secs, baseline.rank_secs));
        }
        // The cap reached: what is left unconfirmed may not pass the best proven.
        for (size_t i = 0; i < records.size(); ++i)
            if (!confirmed.count(i) && records[i].error_code == MeasureError::Ok &&
                records[i].rank_secs > 0 && records[i].rank_secs < proven_best)
                mark_unproven(records[i], std::nextafter(proven_best, kInf));
    }

    /// Makes the task's best record on this machine the measurer's baseline (replayed), so
    /// that the next batch is timed beside it, and returns it; none before the first record,
    /// or with SearchOptions::measure_beside_best off.
    std::optional<TuningRecord> set_baseline() {
        if (!opts_.measure_beside_best)
            return std::nullopt;
        std::optional<TuningRecord> best = best_record();
        if (!best || !(best->rank_secs > 0))
            return std::nullopt;
        try {
            measurer_.set_baseline(c_,
                                   sched::replay(c_, sched::steps_from_json(best->schedule_json)));
        } catch (const ScheduleError&) { // a record of another tessera that no longer replays
            return std::nullopt;
        } catch (const UserError&) {
            return std::nullopt;
        }
        return best;
    }

    void report_progress(bool round_done = true) {
        if (!on_progress_)
            return;
        TuneProgress p;
        p.round_done = round_done;
        p.trials_done = result_.trials;
        p.trials_total = opts_.num_trials;
        p.errors = result_.errors;
        const std::optional<TuningRecord> best = best_record();
        p.best_secs = best ? best->rank_secs : kInf;
        p.best_gflops = best && best->rank_secs > 0 ? flops_ / best->rank_secs / 1e9 : 0;
        p.elapsed_secs = elapsed();
        double eta = 0;
        if (opts_.num_trials > 0 && result_.trials > 0)
            eta = p.elapsed_secs / result_.trials * (opts_.num_trials - result_.trials);
        if (opts_.time_budget_secs > 0) {
            const double left = std::max(0.0, opts_.time_budget_secs - p.elapsed_secs);
            eta = eta > 0 ? std::min(eta, left) : left;
        }
        p.eta_secs = eta;
        on_progress_(p);
    }

    const te::Compute c_;
    double flops_;
    const TuneTarget target_;
    TuningDatabase& db_;
    cost::CostModel& model_;
    Measurer& measurer_;
    const SearchOptions opts_;
    const std::function<void(const TuneProgress&)> on_progress_;
    Rng rng_;
    std::function<double()> clock_;
    double start_;                       ///< clock_() when the tuner was made.
    int measured_count_ = 0;             ///< Candidates in result_.measure_secs's batches so far.
    std::vector<sched::State> sketches_; ///< Of the task, made once by begin().
    /// Measured first: the default schedule (when made), then the transfer seeds.
    std::vector<sched::State> seeds_;
    /// The neighbours of the best picked in the current round (the round's picks point here).
    std::vector<ScoredState> neighbour_picks_;

    TuneResult result_;
    std::string model_name_;
    std::set<std::string> measured_; ///< JSONs measured for (task, target, fingerprint).
    std::set<std::string> skipped_;  ///< Distinct already-measured JSONs the search met.
    FeatureCache search_cache_;      ///< Features of the current round's search.
    /// Features of records, by schedule JSON, for retraining (lookup only, never iterated).
    std::unordered_map<std::string, std::unique_ptr<cost::ProgramFeatures>> record_features_;
};

} // namespace

void validate(const SearchOptions& opts) {
    if (opts.num_trials < 0)
        throw UserError() << "num_trials must be at least 0, got " << opts.num_trials;
    if (!(opts.time_budget_secs >= 0) || !std::isfinite(opts.time_budget_secs))
        throw UserError() << "time_budget_secs must be a finite number >= 0, got "
                          << opts.time_budget_secs;
    if (opts.num_trials == 0 && opts.time_budget_secs == 0)
        throw UserError() << "num_trials 0 (no limit) needs a time_budget_secs above 0, got 0";
    if (opts.search_threads < 0) // before the evolution's check, which calls it num_threads
        throw UserError() << "search_threads must be at least 0, got " << opts.search_threads;
    validate(evolution_options(opts)); // population, generations, mutation_probability
    if (!(opts.eps_greedy >= 0 && opts.eps_greedy <= 1))
        throw UserError() << "eps_greedy must be in [0, 1], got " << opts.eps_greedy;
    if (opts.measure_per_round < 1)
        throw UserError() << "measure_per_round must be at least 1, got " << opts.measure_per_round;
    if (opts.init_from_db < 0)
        throw UserError() << "init_from_db must be at least 0, got " << opts.init_from_db;
    if (opts.retrain_min_records < 1)
        throw UserError() << "retrain_min_records must be at least 1, got "
                          << opts.retrain_min_records;
    if (opts.transfer_seeds < 0)
        throw UserError() << "transfer_seeds must be at least 0, got " << opts.transfer_seeds;
    if (opts.commit_every < 1)
        throw UserError() << "commit_every must be at least 1, got " << opts.commit_every;
    if (opts.defaults.target != opts.sketch.target) // a seeded default the measurer cannot run
        throw UserError() << "defaults.target must be sketch.target ("
                          << (opts.sketch.target == sched::TargetKind::Gpu ? "gpu" : "cpu") << ")";
}

SearchOptions search_options_for(const Target& target, int threads) {
    SearchOptions o;
    o.defaults = default_schedule_options_for(target, threads); // describes the CPU once
    set_search_target(o.defaults, o.sketch, o.sample);
    return o;
}

std::function<double()> search_clock(const SearchOptions& opts) {
    if (opts.clock)
        return opts.clock;
    return [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    };
}

std::string cost_model_name(const cost::CostModel& model, const std::string& workload_key,
                            const TuneTarget& target) {
    return model.name() + "/" + workload_key + "/" + target.fingerprint + "/" + target.target;
}

namespace {

/// tune_task's checks of everything but the compute (shared with TaskTuningSession).
void validate_call(double flops, const TuneTarget& target, const SearchOptions& opts) {
    validate(opts);
    if (!(flops > 0) || !std::isfinite(flops))
        throw UserError() << "flops of the task must be a finite number above 0, got " << flops;
    if (target.target.empty())
        throw UserError() << "tune target is empty";
    if (target.fingerprint.empty())
        throw UserError() << "hardware fingerprint of target '" << target.target << "' is empty";
}

} // namespace

TuneResult tune_task(const te::Compute& c, double flops, const TuneTarget& target,
                     TuningDatabase& db, cost::CostModel& model, Measurer& measurer,
                     const SearchOptions& opts,
                     const std::function<void(const TuneProgress&)>& on_progress) {
    validate_call(flops, target, opts);
    return TaskTuner(c, flops, target, db, model, measurer, opts, on_progress).run();
}

struct TaskTuningSession::Impl {
    template <class... Args> explicit Impl(Args&&... args) : tuner(std::forward<Args>(args)...) {}
    TaskTuner tuner;
};

TaskTuningSession::TaskTuningSession(const te::Compute& c, double flops, const TuneTarget& target,
                                     TuningDatabase& db, cost::CostModel& model, Measurer& measurer,
                                     const SearchOptions& opts,
                                     const std::function<void(const TuneProgress&)>& on_progress) {
    validate_call(flops, target, opts);
    impl_ = std::make_unique<Impl>(c, flops, target, db, model, measurer, opts, on_progress);
    impl_->tuner.begin();
}

TaskTuningSession::~TaskTuningSession() = default;
TaskTuningSession::TaskTuningSession(TaskTuningSession&&) noexcept = default;
TaskTuningSession& TaskTuningSession::operator=(TaskTuningSession&&) noexcept = default;

bool TaskTuningSession::run_round(int max_candidates, double deadline) {
    return impl_->tuner.run_round(max_candidates, deadline);
}

int TaskTuningSession::run_seed_round(double deadline) {
    return impl_->tuner.run_seed_round(deadline);
}

int TaskTuningSession::run_retime_round(double deadline) {
    return impl_->tuner.run_retime_round(deadline);
}

double TaskTuningSession::elapsed_secs() const { return impl_->tuner.elapsed(); }

TuneResult TaskTuningSession::result() const { return impl_->tuner.summary(); }

} // namespace tessera::tune
