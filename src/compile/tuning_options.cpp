// The options of a tuning run, checked with the command's messages, and what they make: search
// options, the record target, the measurer, the cost models, the database (tuning_options.h).
#include "tessera/compile/tuning_options.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <unistd.h>

#include "tessera/backends/host.h"
#include "tessera/cost_model/pretrained.h"
#include "tessera/support/error.h"
#include "tessera/support/find_in_path.h"
#include "tessera/tuner/fingerprint.h"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda_driver.h"
#include "tessera/tuner/cuda_measure.h"
#endif

namespace tessera::compile {

void check_tuning_options(const TuningOptions& o) {
    if (o.weights != "auto" && o.weights != "cold" && o.weights != "warm")
        throw UserError() << "--weights must be auto, cold or warm, got '" << o.weights << "'";
    if (o.time_bounded) {
        if (!(std::isfinite(o.time_budget_secs) && o.time_budget_secs > 0))
            throw UserError() << "--time-budget must be a number of seconds above 0, got "
                              << o.time_budget_secs;
    }
    if (o.trials < (o.time_bounded ? 0 : 1))
        throw UserError() << "--trials must be at least 1, got " << o.trials;
    if (o.threads < 0)
        throw UserError() << "--threads must be >= 0, got " << o.threads;
    if (!(o.min_repeat_secs >= 0) || !std::isfinite(o.min_repeat_secs))
        throw UserError() << "--min-repeat-secs must be a number of seconds >= 0, got "
                          << o.min_repeat_secs;
    if (!tune::valid_cut_factor(o.slow_factor))
        throw UserError() << "--slow-factor must be 0 (never cut) or at least 1, got "
                          << o.slow_factor;
    if (!tune::valid_ratio_precision(o.ratio_precision))
        throw UserError() << "--ratio-precision must be in [0, 1), got " << o.ratio_precision;
    if (!tune::valid_cut_factor(o.behind_factor))
        throw UserError() << "--behind-factor must be 0 (never cut) or at least 1, got "
                          << o.behind_factor;
    if (o.population < 1)
        throw UserError() << "--population must be at least 1, got " << o.population;
    if (o.generations < 0)
        throw UserError() << "--generations must be >= 0, got " << o.generations;
    if (o.measure_per_round < 1)
        throw UserError() << "--measure-per-round must be at least 1, got " << o.measure_per_round;
    if (!(o.eps_greedy >= 0 && o.eps_greedy <= 1))
        throw UserError() << "--eps-greedy must be in [0, 1], got " << o.eps_greedy;
    if (o.cost_model != "xgboost" && o.cost_model != "random")
        throw UserError() << "--model must be xgboost or random, got '" << o.cost_model << "'";
    runner_command(o); // a worker command that names a program
    if (o.db.empty())
        throw UserError() << "--db must name a file, got ''";
    tuning_target_option(o);
}

std::vector<std::string> runner_command(const TuningOptions& o) {
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
        const std::string found = find_in_path(program);
        if (!found.empty())
            program = found;
    }
    if (access(program.c_str(), X_OK) != 0)
        throw UserError() << "--runner '" << o.runner << "': no program '" << words[0]
                          << "' (expected local, simulated, or a command that starts a "
                             "measurement worker)";
    return words;
}

Target tuning_target_option(const TuningOptions& o) {
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
    Target gpu = parse_target("cuda");
    gpu.arch = d.device().arch();
    return tune::build_lookup_target(gpu);
#else
    throw UserError() << "--target cuda: this tessera was built without the CUDA toolkit";
#endif
}

tune::TuneTarget tuning_target(const TuningOptions& o) {
    tune::TuneTarget target;
    const Target t = tuning_target_option(o);
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
            target = tune::build_lookup_target(parse_target("cuda -arch=sm_90"));
        }
    }
    // Synthetic times must never serve a real run: simulated records get a target of their own,
    // which `op run --db` and builds never look up.
    if (o.runner == "simulated")
        target.target = kSimulatedTargetPrefix + target.target;
    return target;
}

tune::SearchOptions tuning_search_options(const TuningOptions& o,
                                          const std::vector<int>& weight_inputs) {
    // Cores, vector lanes and registers, matrix tiles of the target's CPU; for cuda: GPU
    // sketches, the GPU default schedule and the GPU mutations.
    tune::SearchOptions so = tune::search_options_for(tuning_target_option(o), o.threads);
    so.num_trials = o.trials;
    so.time_budget_secs = o.time_budget_secs;
    so.population = o.population;
    so.generations = o.generations;
    so.measure_per_round = o.measure_per_round;
    so.eps_greedy = o.eps_greedy;
    so.measure_beside_best = !o.measure_alone;
    so.seed = o.seed;
    so.cancel = o.cancel;
    so.sketch.weight_inputs = weight_inputs; // packed once, outside the timed call
    return so;
}

std::unique_ptr<tune::Measurer> make_tuning_measurer(const TuningOptions& o, bool tunes_model) {
    if (o.runner == "simulated")
        return tune::make_simulated_measurer(o.seed);
    const Target target = tuning_target_option(o);
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
    mo.behind_factor = o.behind_factor;
    mo.ratio_precision = o.ratio_precision;
    mo.cold_weights = o.weights == "cold" || (o.weights == "auto" && tunes_model);
    mo.seed = o.seed;
    mo.compile = backend::compile_options_for(target);
    mo.worker_command = runner_command(o);
    // A --runner worker may run on another machine: it gets everything through its connection.
    mo.stream_files = !mo.worker_command.empty();
    if (mo.worker_command.empty())
        mo.worker_command = o.local_worker; // empty: this executable's __measure-worker
    return tune::make_local_measurer(mo);
}

TuningCostModels tuning_cost_models(const TuningOptions& opts) {
    const bool explicit_file = opts.pretrained != "builtin" && opts.pretrained != "none";
    auto blob =
        std::make_shared<const std::vector<uint8_t>>(cost::pretrained_blob(opts.pretrained));
    // The prior was trained on this CPU's records: it serves tuning this CPU's own code.
    const Target target = parse_target(opts.target);
    const bool this_cpu =
        target.is_llvm() && target.triple.empty() && target.cpu.empty() && target.features.empty();
    const bool applies = opts.cost_model == "xgboost" && this_cpu && opts.runner == "local";
    TuningCostModels models;
    if (!blob->empty() && applies) {
        try {
            cost::make_model(opts.cost_model, opts.seed)->set_prior(*blob);
            models.uses_prior = true;
        } catch (const UserError& e) {
            if (explicit_file)
                throw UserError() << "--pretrained " << opts.pretrained << ": " << e.what();
            models.note = std::string("note: the built-in pretrained cost model is not used: ") +
                          e.what() + " (scripts/train_cost_model.sh retrains it)";
        }
    } else if (explicit_file && !applies) {
        throw UserError() << "--pretrained " << opts.pretrained
                          << ": a pretrained model serves only --model xgboost, --target llvm "
                             "and --runner local";
    }
    models.make = [model = opts.cost_model, seed = opts.seed, blob, prior = models.uses_prior] {
        std::unique_ptr<cost::CostModel> m = cost::make_model(model, seed);
        if (prior)
            m->set_prior(*blob);
        return m;
    };
    return models;
}

tune::TuningDatabase open_tuning_database(const std::string& path) {
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

} // namespace tessera::compile
