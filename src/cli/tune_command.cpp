// `tessera tune`: options checked (compile/tuning_options.h, naming the CLI option), the search
// in tune::tune_task (--op; a model's tasks: tune_model.cpp), a live progress line, the
// per-round curve file, the final summary, and Ctrl-C that ends a run cleanly between rounds.
#include "tune_command.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include "progress_line.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"
#include "tune_model.h"

namespace tessera::cli {

namespace {

/// Adds the operator's spec to the measurer's settings, so every record names the registry op
/// it measured (the database keeps the canonical Compute text, which has no parser).
class SpecRecordingMeasurer : public tune::Measurer {
  public:
    SpecRecordingMeasurer(std::unique_ptr<tune::Measurer> inner, std::string spec)
        : inner_(std::move(inner)), spec_(std::move(spec)) {}
    std::vector<tune::MeasureResult> measure(const te::Compute& c,
                                             const std::vector<sched::State>& states) override {
        return inner_->measure(c, states);
    }
    std::string settings_json() const override {
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(inner_->settings_json());
        TESSERA_CHECK(j.is_object()) << "measurer settings are not a JSON object: " << j.dump();
        j[kOpSpecSettingsKey] = spec_;
        return j.dump();
    }
    void note_best_secs(const std::string& workload_key, double secs) override {
        inner_->note_best_secs(workload_key, secs);
    }
    void set_baseline(const te::Compute& c, const sched::State& baseline) override {
        inner_->set_baseline(c, baseline);
    }

  private:
    std::unique_ptr<tune::Measurer> inner_;
    std::string spec_;
};

/// Set by the SIGINT handler while run_tune_command runs.
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
    if (g_interrupted.exchange(true))
        _exit(kInterruptedExitCode); // the second Ctrl-C: at once (committed rounds are safe)
    const char msg[] =
        "\ninterrupted: finishing the current round (Ctrl-C again to quit at once)\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
}

/// Installs on_sigint for its lifetime (SA_RESTART: blocking reads go on), then restores the
/// previous disposition.
class SigintCancel {
  public:
    SigintCancel() {
        g_interrupted.store(false);
        struct sigaction sa {};
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGINT, &sa, &previous_);
    }
    ~SigintCancel() { sigaction(SIGINT, &previous_, nullptr); }
    SigintCancel(const SigintCancel&) = delete;
    SigintCancel& operator=(const SigintCancel&) = delete;
    const std::atomic<bool>* flag() const { return &g_interrupted; }

  private:
    struct sigaction previous_ {};
};

} // namespace

void check_tune_options(const TuneOptions& o) {
    if (!o.op.empty() && (!o.inputs.input_shapes.empty() || !o.inputs.binds.empty()))
        throw UserError() << "--input-shape and --bind apply to a MODEL, not to --op";
    if (o.opt_level < 0 || o.opt_level > 3)
        throw UserError() << "-O must be 0..3, got " << o.opt_level;
    compile::check_tuning_options(o);
}

tune::TuningDatabase open_existing_tune_database(const std::string& path,
                                                 const std::string& named) {
    std::error_code ec;
    if (!tune::is_server_database(path) && !std::filesystem::is_regular_file(path, ec))
        throw UserError() << named << ": no such file";
    return tune::TuningDatabase(path);
}

std::string ms_text(double secs) {
    return std::isfinite(secs) ? fmt::format("{:.4g} ms", secs * 1e3) : std::string("-");
}

namespace {

std::string progress_text(const std::string& spec, const tune::TuneProgress& p) {
    std::string trials = p.trials_total > 0
                             ? fmt::format("{}/{} trials", p.trials_done, p.trials_total)
                             : fmt::format("{} trials", p.trials_done);
    std::string best = std::isfinite(p.best_secs) ? fmt::format("best {:.2f} GFLOP/s ({})",
                                                                p.best_gflops, ms_text(p.best_secs))
                                                  : std::string("best -");
    std::string eta = p.eta_secs > 0 ? "  eta " + format_duration(p.eta_secs) : "";
    return fmt::format("tune {}  {}  {}  errors {}  elapsed {}{}", spec, trials, best, p.errors,
                       format_duration(p.elapsed_secs), eta);
}

/// The --curve file: a header, then one row per measured round, flushed as it goes so a long
/// run can be plotted (and an interrupted one keeps its rows).
class CurveWriter {
  public:
    CurveWriter(const std::string& path, double flops) : flops_(flops) {
        if (path.empty())
            return;
        file_.open(path, std::ios::trunc);
        if (!file_)
            throw UserError() << "--curve " << path << ": cannot write the file";
        file_ << "trials,seconds,best_ms,best_gflops\n" << std::flush;
    }
    /// best_secs is +infinity while no candidate measured Ok: both best fields stay empty.
    void row(int trials, double secs, double best_secs) {
        if (!file_.is_open())
            return;
        if (std::isfinite(best_secs))
            file_ << fmt::format("{},{:.3f},{:.6g},{:.6g}\n", trials, secs, best_secs * 1e3,
                                 flops_ / best_secs / 1e9);
        else
            file_ << fmt::format("{},{:.3f},,\n", trials, secs);
        file_.flush();
    }

  private:
    std::ofstream file_;
    double flops_;
};

void print_summary(const TuneOptions& o, const te::OpInstance& inst, const tune::TuneTarget& t,
                   const tune::TuneResult& r, bool uses_prior, int64_t db_records,
                   std::ostream& out) {
    const double best_secs = r.best ? r.best->rank_secs : std::numeric_limits<double>::infinity();
    const double gflops = r.best ? inst.flops / best_secs / 1e9 : 0;
    if (o.json) {
        nlohmann::ordered_json j;
        j["op"] = inst.name;
        j["spec"] = inst.canonical_spec;
        j["workload_key"] = r.workload_key;
        j["target"] = t.target;
        j["fingerprint"] = t.fingerprint;
        j["isa_class"] = t.isa_class;
        j["db"] = o.db;
        j["runner"] = o.runner;
        j["model"] = o.cost_model;
        j["seed"] = o.seed;
        j["trials"] = r.trials;
        j["rounds"] = r.rounds;
        j["errors"] = r.errors;
        j["skipped"] = r.skipped_already_measured;
        j["warm_start"] = r.warm_start;
        j["pretrained"] = uses_prior;
        j["best_ms"] = r.best ? nlohmann::ordered_json(best_secs * 1e3) : nullptr;
        j["best_gflops"] = gflops;
        j["best_record_id"] = r.best ? nlohmann::ordered_json(r.best->id) : nullptr;
        j["db_records"] = db_records;
        j["elapsed_secs"] = r.elapsed_secs;
        j["measure_secs"] = r.measure_secs;
        j["repeat_secs"] = r.repeat_secs;
        nlohmann::ordered_json curve = nlohmann::ordered_json::array();
        for (const auto& [trials, secs, best] : r.curve)
            curve.push_back(
                {{"trials", trials},
                 {"seconds", secs},
                 {"best_ms", std::isfinite(best) ? nlohmann::ordered_json(best * 1e3) : nullptr}});
        j["curve"] = curve;
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("tuned     {}\n", inst.canonical_spec);
    out << fmt::format("workload  {}\n", r.workload_key);
    out << fmt::format("trials    {} measured in {} rounds, {} errors, {} skipped (already in "
                       "the database){}\n",
                       r.trials, r.rounds, r.errors, r.skipped_already_measured,
                       r.warm_start ? "; warm-started model"
                       : uses_prior ? "; model started from the pretrained one"
                                    : "");
    if (r.best)
        out << fmt::format("best      {}, {:.2f} GFLOP/s (record {})\n", ms_text(best_secs), gflops,
                           r.best->id);
    else
        out << "best      none: no candidate measured ok on this machine yet\n";
    out << fmt::format("database  {} ({} records; target '{}', fingerprint {})\n",
                       tune::database_display_name(o.db), db_records, t.target, t.fingerprint);
    out << fmt::format("elapsed   {}: {}\n", format_duration(r.elapsed_secs),
                       tune_time_split(r.elapsed_secs, r.measure_secs, r.repeat_secs));
}

} // namespace

tune::TuneResult run_tune(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                          bool progress_is_terminal, const std::atomic<bool>* cancel) {
    check_tune_options(opts);
    const te::OpInstance inst = te::make_op(te::parse_op_spec(opts.op));
    compile::TuningOptions tuning = opts;
    tuning.cancel = cancel;
    tune::SearchOptions so = compile::tuning_search_options(tuning, inst.weight_inputs);
    tune::validate(so); // the CLI's checks above name the options; this keeps them in step
    const tune::TuneTarget target = compile::tuning_target(opts);

    tune::TuningDatabase db = compile::open_tuning_database(opts.db);
    CurveWriter curve(opts.curve_file, inst.flops);
    const compile::TuningCostModels models = compile::tuning_cost_models(opts);
    if (!models.note.empty())
        progress << models.note << "\n";
    const bool uses_prior = models.uses_prior;
    std::unique_ptr<cost::CostModel> model = models.make();
    std::unique_ptr<tune::Measurer> measurer = std::make_unique<SpecRecordingMeasurer>(
        compile::make_tuning_measurer(opts, /*tunes_model=*/false), inst.canonical_spec);

    LatestProgress<tune::TuneProgress> latest; // outlives the line, whose refresher reads it
    ProgressLine line(progress, progress_is_terminal);
    bool started = false;
    auto on_progress = [&](const tune::TuneProgress& p) {
        latest.set(p);
        line.update(progress_text(inst.canonical_spec, p));
        if (started && p.round_done) // the first call reports the start
            curve.row(p.trials_done, p.elapsed_secs, p.best_secs);
        started = true;
    };
    line.refresh_every(progress_refresh_secs(progress_is_terminal),
                       [&] { return progress_text(inst.canonical_spec, latest.now()); });
    tune::TuneResult r =
        tune::tune_task(inst.compute, inst.flops, target, db, *model, *measurer, so, on_progress);
    line.finish();
    print_summary(opts, inst, target, r, uses_prior, db.num_records(), out);
    return r;
}

int run_tune_command(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                     bool progress_is_terminal) {
    if (opts.model_path.empty() == opts.op.empty())
        throw UserError() << "tune needs exactly one of MODEL (an .onnx path) and --op SPEC, got "
                          << (opts.op.empty() ? "neither" : "both");
    const SigintCancel sigint;
    if (opts.model_path.empty())
        run_tune(opts, out, progress, progress_is_terminal, sigint.flag());
    else
        run_tune_model(opts, out, progress, progress_is_terminal, sigint.flag());
    return sigint.flag()->load() ? kInterruptedExitCode : 0;
}

} // namespace tessera::cli
