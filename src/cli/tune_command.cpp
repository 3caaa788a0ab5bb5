// `tessera tune`: options checked here (naming the CLI option), the search in tune::tune_task,
// a live progress line, the per-round curve file and the final summary.
#include "tune_command.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "progress_line.h"
#include "tessera/backends/host.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"
#include "tessera/tuner/measure.h"

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

  private:
    std::unique_ptr<tune::Measurer> inner_;
    std::string spec_;
};

void check_options(const TuneOptions& o) {
    if (o.time_bounded) {
        if (!(std::isfinite(o.time_budget_secs) && o.time_budget_secs > 0))
            throw UserError() << "--time-budget must be a number of seconds above 0, got "
                              << o.time_budget_secs;
    }
    if (o.trials < (o.time_bounded ? 0 : 1)) {
        throw UserError() << "--trials must be at least 1, got " << o.trials;
    }
    if (o.threads < 0)
        throw UserError() << "--threads must be >= 0, got " << o.threads;
    if (o.population < 1)
        throw UserError() << "--population must be at least 1, got " << o.population;
    if (o.generations < 0)
        throw UserError() << "--generations must be >= 0, got " << o.generations;
    if (o.measure_per_round < 1)
        throw UserError() << "--measure-per-round must be at least 1, got "
                          << o.measure_per_round;
    if (!(o.eps_greedy >= 0 && o.eps_greedy <= 1))
        throw UserError() << "--eps-greedy must be in [0, 1], got " << o.eps_greedy;
    if (o.model != "xgboost" && o.model != "random")
        throw UserError() << "--model must be xgboost or random, got '" << o.model << "'";
    if (o.runner != "local" && o.runner != "simulated")
        throw UserError() << "--runner must be local or simulated, got '" << o.runner << "'";
    if (o.db.empty())
        throw UserError() << "--db must name a file, got ''";
}

tune::SearchOptions search_options(const TuneOptions& o, const te::OpInstance& inst) {
    const backend::HostInfo& host = backend::host_info();
    const int cores = o.threads > 0 ? o.threads : std::max(1, host.cores);
    tune::SearchOptions so;
    so.num_trials = o.trials;
    so.time_budget_secs = o.time_budget_secs;
    so.population = o.population;
    so.generations = o.generations;
    so.measure_per_round = o.measure_per_round;
    so.eps_greedy = o.eps_greedy;
    so.seed = o.seed;
    so.sketch.num_cores = cores;
    so.sketch.weight_inputs = inst.weight_inputs; // packed once, outside the timed call
    so.sample.num_cores = cores;
    so.sample.max_vectorize_lanes = std::max(1, host.vector_bits / 32);
    return so;
}

std::unique_ptr<tune::Measurer> make_measurer(const TuneOptions& o, const std::string& spec) {
    std::unique_ptr<tune::Measurer> inner;
    if (o.runner == "simulated") {
        inner = tune::make_simulated_measurer(o.seed);
    } else {
        tune::MeasureOptions mo;
        mo.kernel_threads = o.threads;
        mo.seed = o.seed;
        inner = tune::make_local_measurer(mo);
    }
    return std::make_unique<SpecRecordingMeasurer>(std::move(inner), spec);
}

/// Opens the database, creating its folder first (tune_logs/ on a first run).
tune::TuningDatabase open_database(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
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

std::string progress_text(const std::string& spec, const tune::TuneProgress& p) {
    std::string trials = p.trials_total > 0
                             ? fmt::format("{}/{} trials", p.trials_done, p.trials_total)
                             : fmt::format("{} trials", p.trials_done);
    std::string best = std::isfinite(p.best_secs)
                           ? fmt::format("best {:.2f} GFLOP/s ({})", p.best_gflops,
                                         ms_text(p.best_secs))
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
                   const tune::TuneResult& r, int64_t db_records, std::ostream& out) {
    const double best_secs =
        r.best ? r.best->median_secs : std::numeric_limits<double>::infinity();
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
        j["best_ms"] = r.best ? nlohmann::ordered_json(best_secs * 1e3) : nullptr;
        j["best_gflops"] = gflops;
        j["best_record_id"] = r.best ? nlohmann::ordered_json(r.best->id) : nullptr;
        j["db_records"] = db_records;
        j["elapsed_secs"] = r.elapsed_secs;
        nlohmann::ordered_json curve = nlohmann::ordered_json::array();
        for (const auto& [trials, secs, best] : r.curve)
            curve.push_back({{"trials", trials},
                             {"seconds", secs},
                             {"best_ms", std::isfinite(best) ? nlohmann::ordered_json(best * 1e3)
                                                             : nullptr}});
        j["curve"] = curve;
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("tuned     {}\n", inst.canonical_spec);
    out << fmt::format("workload  {}\n", r.workload_key);
    out << fmt::format("trials    {} measured in {} rounds, {} errors, {} skipped (already in "
                       "the database){}\n",
                       r.trials, r.rounds, r.errors, r.skipped_already_measured,
                       r.warm_start ? "; warm-started model" : "");
    if (r.best)
        out << fmt::format("best      {}, {:.2f} GFLOP/s (record {})\n", ms_text(best_secs), gflops,
                           r.best->id);
    else
        out << "best      none: no candidate measured ok on this machine yet\n";
    out << fmt::format("database  {} ({} records; target '{}', fingerprint {})\n", o.db,
                       db_records, t.target, t.fingerprint);
    out << fmt::format("elapsed   {}\n", format_duration(r.elapsed_secs));
}

} // namespace

tune::TuneTarget host_tune_target() {
    const tune::HardwareFingerprint& fp = tune::host_fingerprint();
    tune::TuneTarget t;
    t.target = "llvm -mcpu=" + backend::host_info().cpu_name;
    t.fingerprint = fp.hash();
    t.isa_class = fp.isa_class();
    return t;
}

tune::TuneResult run_tune(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                          bool progress_is_terminal) {
    check_options(opts);
    const te::OpInstance inst = te::make_op(te::parse_op_spec(opts.op));
    const tune::SearchOptions so = search_options(opts, inst);
    tune::validate(so); // the CLI's checks above name the options; this keeps them in step
    tune::TuneTarget target = host_tune_target();
    // Synthetic times must never serve a real run: simulated records get a target of their own,
    // which `op run --db` and builds never look up.
    if (opts.runner == "simulated")
        target.target = kSimulatedTargetPrefix + target.target;

    tune::TuningDatabase db = open_database(opts.db);
    CurveWriter curve(opts.curve_file, inst.flops);
    std::unique_ptr<cost::CostModel> model = cost::make_model(opts.model, opts.seed);
    std::unique_ptr<tune::Measurer> measurer = make_measurer(opts, inst.canonical_spec);

    ProgressLine line(progress, progress_is_terminal);
    bool started = false;
    auto on_progress = [&](const tune::TuneProgress& p) {
        line.update(progress_text(inst.canonical_spec, p));
        if (started) // the first call reports the start, every later one a measured round
            curve.row(p.trials_done, p.elapsed_secs, p.best_secs);
        started = true;
    };
    tune::TuneResult r =
        tune::tune_task(inst.compute, inst.flops, target, db, *model, *measurer, so, on_progress);
    line.finish();
    print_summary(opts, inst, target, r, db.num_records(), out);
    return r;
}

} // namespace tessera::cli
