// `tessera tune`: options checked here (naming the CLI option), the search in tune::tune_task
// (--op; a model's tasks: tune_model.cpp), a live progress line, the per-round curve file, the
// final summary, and Ctrl-C that ends a run cleanly between rounds.
#include "tune_command.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include "progress_line.h"
#include "tessera/backends/host.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/cost_model/pretrained.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"
#include "tessera/tuner/measure.h"
#include "tune_model.h"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda_driver.h"
#include "tessera/tuner/cuda_measure.h"
#endif

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
    if (o.time_bounded) {
        if (!(std::isfinite(o.time_budget_secs) && o.time_budget_secs > 0))
            throw UserError() << "--time-budget must be a number of seconds above 0, got "
                              << o.time_budget_secs;
    }
    if (o.trials < (o.time_bounded ? 0 : 1)) {
        throw UserError() << "--trials must be at least 1, got " << o.trials;
    }
    if (!o.op.empty() && (!o.inputs.input_shapes.empty() || !o.inputs.binds.empty()))
        throw UserError() << "--input-shape and --bind apply to a MODEL, not to --op";
    if (o.threads < 0)
        throw UserError() << "--threads must be >= 0, got " << o.threads;
    if (!(o.min_repeat_secs >= 0) || !std::isfinite(o.min_repeat_secs))
        throw UserError() << "--min-repeat-secs must be a number of seconds >= 0, got "
                          << o.min_repeat_secs;
    if (!(o.slow_factor == 0 || o.slow_factor >= 1) || !std::isfinite(o.slow_factor))
        throw UserError() << "--slow-factor must be 0 (never cut) or at least 1, got "
                          << o.slow_factor;
    if (o.population < 1)
        throw UserError() << "--population must be at least 1, got " << o.population;
    if (o.generations < 0)
        throw UserError() << "--generations must be >= 0, got " << o.generations;
    if (o.measure_per_round < 1)
        throw UserError() << "--measure-per-round must be at least 1, got " << o.measure_per_round;
    if (!(o.eps_greedy >= 0 && o.eps_greedy <= 1))
        throw UserError() << "--eps-greedy must be in [0, 1], got " << o.eps_greedy;
    if (o.model != "xgboost" && o.model != "random")
        throw UserError() << "--model must be xgboost or random, got '" << o.model << "'";
    runner_command(o); // a worker command that names a program
    if (o.db.empty())
        throw UserError() << "--db must name a file, got ''";
    if (o.opt_level < 0 || o.opt_level > 3)
        throw UserError() << "-O must be 0..3, got " << o.opt_level;
    tune_target_option(o);
}

std::vector<std::string> runner_command(const TuneOptions& o) {
    if (o.runner == "local" || o.runner == "simulated")
        return {};
    std::istringstream in(o.runner);
    std::vector<std::string> words;
    for (std::string w; in >> w;)
        words.push_back(w);
    if (words.empty())
        throw UserError() << "--runner must be local, simulated or a worker command, got ''";
    std::string& program = words[0];
    if (program.find('/') == std::string::npos) { // searched in PATH, as a shell would
        const char* path = std::getenv("PATH");
        std::istringstream dirs(path ? path : "");
        for (std::string d; std::getline(dirs, d, ':');)
            if (!d.empty() && access((d + "/" + program).c_str(), X_OK) == 0) {
                program = d + "/" + program;
                break;
            }
    }
    if (access(program.c_str(), X_OK) != 0)
        throw UserError() << "--runner '" << o.runner << "': no program '" << words[0]
                          << "' (expected local, simulated, or a command that starts a "
                             "measurement worker)";
    return words;
}

Target tune_target_option(const TuneOptions& o) {
    const bool worker = !runner_command(o).empty();
    const Target t = checked_target(o.target, false, /*may_cross=*/worker);
    if (worker && !t.is_llvm())
        throw UserError() << "--runner '" << o.runner << "': a worker command serves llvm "
                          << "targets, not " << o.target;
    return t;
}

Target checked_target(const std::string& text, bool tf32, bool may_cross) {
    const Target t = parse_target(text);
    if (tf32 && !t.is_cuda())
        throw UserError() << "--tf32 needs --target cuda (TF32 is a tensor-core format)";
    if (t.is_llvm() && !may_cross && !tune::runs_on_this_machine(t))
        throw UserError() << "target '" << text << "': its code does not run on this machine ("
                          << backend::host_info().cpu_name << ", " << backend::host_info().triple
                          << ")";
    return t;
}

tune::TuneTarget cuda_tune_target() {
#ifdef TESSERA_HAVE_CUDA
    const backend::cuda::CudaDriver& d = backend::cuda::CudaDriver::get();
    if (!d.available())
        throw UserError() << "--target cuda: " << d.unavailable_reason();
    tune::TuneTarget t;
    t.target = tune::cuda_target_string();
    t.fingerprint = tune::host_fingerprint().hash();
    t.isa_class = "cuda;" + d.device().arch();
    return t;
#else
    throw UserError() << "--target cuda: this tessera was built without the CUDA toolkit";
#endif
}

tune::SearchOptions tune_search_options(const TuneOptions& o,
                                        const std::vector<int>& weight_inputs) {
    const Target target = tune_target_option(o);
    tune::SearchOptions so;
    so.num_trials = o.trials;
    so.time_budget_secs = o.time_budget_secs;
    so.population = o.population;
    so.generations = o.generations;
    so.measure_per_round = o.measure_per_round;
    so.eps_greedy = o.eps_greedy;
    so.seed = o.seed;
    so.sketch.weight_inputs = weight_inputs; // packed once, outside the timed call
    // Cores and vector width of the target's CPU; for cuda: GPU sketches, the GPU default
    // schedule and the GPU mutations.
    tune::set_search_target(target, o.threads, so.sketch, so.sample);
    const sched::DefaultScheduleOptions d = tune::default_schedule_options_for(target);
    so.cpu_tiles = d.cpu_tiles;
    so.cpu_tiles_bf16 = d.cpu_tiles_bf16;
    return so;
}

std::unique_ptr<tune::Measurer> make_tune_measurer(const TuneOptions& o) {
    if (o.runner == "simulated")
        return tune::make_simulated_measurer(o.seed);
    const Target target = tune_target_option(o);
    if (target.is_cuda()) {
#ifdef TESSERA_HAVE_CUDA
        cuda_tune_target(); // the one-line reason when there is no device
        tune::CudaMeasureOptions mo;
        mo.seed = o.seed;
        return tune::make_cuda_measurer(mo);
#else
        cuda_tune_target(); // throws: built without the toolkit
#endif
    }
    tune::MeasureOptions mo;
    mo.kernel_threads = o.threads;
    mo.realtime = o.realtime;
    mo.min_repeat_secs = o.min_repeat_secs;
    mo.slow_factor = o.slow_factor;
    mo.cold_weights = o.weights == "cold" || (o.weights == "auto" && !o.model_path.empty());
    mo.seed = o.seed;
    mo.compile = backend::compile_options_for(target);
    mo.worker_command = runner_command(o); // empty: this executable's __measure-worker
    return tune::make_local_measurer(mo);
}

tune::TuneTarget tune_target_of(const TuneOptions& o) {
    tune::TuneTarget target;
    const Target t = tune_target_option(o);
    if (t.is_llvm()) {
        target = tune::llvm_tune_target(t);
    } else if (o.runner != "simulated") {
        target = cuda_tune_target();
        if (!t.arch.empty() && target.target != "cuda -arch=" + t.arch)
            throw UserError() << "target '" << o.target << "': GPU 0, where tuning measures, is "
                              << target.target.substr(target.target.find('=') + 1);
    } else {
        // Synthetic times need no device; name the architecture the GPU sampling assumes.
        try {
            target = cuda_tune_target();
        } catch (const UserError&) {
            target.target = "cuda -arch=sm_90";
            target.fingerprint = tune::host_fingerprint().hash();
            target.isa_class = "cuda;sm_90";
        }
    }
    // Synthetic times must never serve a real run: simulated records get a target of their own,
    // which `op run --db` and builds never look up.
    if (o.runner == "simulated")
        target.target = kSimulatedTargetPrefix + target.target;
    return target;
}

tune::TuningDatabase open_existing_tune_database(const std::string& path,
                                                 const std::string& named) {
    std::error_code ec;
    if (!tune::is_server_database(path) && !std::filesystem::is_regular_file(path, ec))
        throw UserError() << named << ": no such file";
    return tune::TuningDatabase(path);
}

tune::TuningDatabase open_tune_database(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty() && !tune::is_server_database(path)) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec)
            throw UserError() << "--db " << path << ": cannot create the folder " << parent.string()
                              << " (" << ec.message() << ")";
    }
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
    const double best_secs = r.best ? r.best->median_secs : std::numeric_limits<double>::infinity();
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
        j["model"] = o.model;
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
    out << fmt::format("elapsed   {}\n", format_duration(r.elapsed_secs));
}

} // namespace

TuneCostModels tune_cost_models(const TuneOptions& opts, std::ostream& note) {
    const bool explicit_file = opts.pretrained != "builtin" && opts.pretrained != "none";
    auto blob =
        std::make_shared<const std::vector<uint8_t>>(cost::pretrained_blob(opts.pretrained));
    // The prior was trained on this CPU's records: it serves tuning this CPU's own code.
    const Target target = parse_target(opts.target);
    const bool this_cpu =
        target.is_llvm() && target.triple.empty() && target.cpu.empty() && target.features.empty();
    const bool applies = opts.model == "xgboost" && this_cpu && opts.runner == "local";
    bool uses_prior = false;
    if (!blob->empty() && applies) {
        try {
            cost::make_model(opts.model, opts.seed)->set_prior(*blob);
            uses_prior = true;
        } catch (const UserError& e) {
            if (explicit_file)
                throw UserError() << "--pretrained " << opts.pretrained << ": " << e.what();
            note << "note: the built-in pretrained cost model is not used: " << e.what()
                 << " (scripts/train_cost_model.sh retrains it)\n";
        }
    } else if (explicit_file && !applies) {
        throw UserError() << "--pretrained " << opts.pretrained
                          << ": a pretrained model serves only --model xgboost, --target llvm "
                             "and --runner local";
    }
    auto make = [model = opts.model, seed = opts.seed, blob, prior = uses_prior] {
        std::unique_ptr<cost::CostModel> m = cost::make_model(model, seed);
        if (prior)
            m->set_prior(*blob);
        return m;
    };
    return {make, uses_prior};
}

tune::TuneResult run_tune(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                          bool progress_is_terminal, const std::atomic<bool>* cancel) {
    check_tune_options(opts);
    const te::OpInstance inst = te::make_op(te::parse_op_spec(opts.op));
    tune::SearchOptions so = tune_search_options(opts, inst.weight_inputs);
    so.cancel = cancel;
    tune::validate(so); // the CLI's checks above name the options; this keeps them in step
    const tune::TuneTarget target = tune_target_of(opts);

    tune::TuningDatabase db = open_tune_database(opts.db);
    CurveWriter curve(opts.curve_file, inst.flops);
    const TuneCostModels models = tune_cost_models(opts, progress);
    const bool uses_prior = models.uses_prior;
    std::unique_ptr<cost::CostModel> model = models.make();
    std::unique_ptr<tune::Measurer> measurer =
        std::make_unique<SpecRecordingMeasurer>(make_tune_measurer(opts), inst.canonical_spec);

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
    if (opts.weights != "auto" && opts.weights != "cold" && opts.weights != "warm")
        throw UserError() << "--weights must be auto, cold or warm, got '" << opts.weights << "'";
    const SigintCancel sigint;
    if (opts.model_path.empty())
        run_tune(opts, out, progress, progress_is_terminal, sigint.flag());
    else
        run_tune_model(opts, out, progress, progress_is_terminal, sigint.flag());
    return sigint.flag()->load() ? kInterruptedExitCode : 0;
}

} // namespace tessera::cli
