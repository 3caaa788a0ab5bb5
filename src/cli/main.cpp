// The tessera command: parses options, calls the library, maps errors to exit codes.
//
// Exit codes: 0 success; 1 bad input (one line "error: ..."); 2 internal error (a bug);
// 3 a compiled operator disagreed with the reference.
#include <iostream>
#include <string>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "bench_command.h"
#include "build_command.h"
#include "costmodel_command.h"
#include "costmodel_features.h"
#include "costmodel_train.h"
#include "db_command.h"
#include "hw_command.h"
#include "inspect_command.h"
#include "json_output.h"
#include "op_list.h"
#include "op_run.h"
#include "op_schedule.h"
#include "run_command.h"
#include "threads_option.h"
#include "tune_command.h"
#include "tessera/graph/pipeline.h"
#include "tessera/support/error.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"

using namespace tessera;

int main(int argc, char** argv) {
    // The measurement worker the tuner starts (tuner/measure.h); not a user command.
    if (argc == 2 && std::string(argv[1]) == "__measure-worker") return tune::measure_worker_main();
    // Every file through the connection, none read by path (tests of a streaming tuner).
    if (argc == 3 && std::string(argv[1]) == "__measure-worker" &&
        std::string(argv[2]) == "--streamed-only")
        return tune::measure_worker_main(true);

    CLI::App app{"tessera: an auto-tuning tensor compiler (ONNX and tensor programs to fast "
                 "CPU and GPU code)"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Print help for every subcommand");
    app.set_version_flag("--version", std::string("tessera ") + tune::tessera_version(),
                         "Print the version and exit");

    cli::HwOptions hw_opts;
    CLI::App* hw = app.add_subcommand("hw", "Show this machine as the compiler sees it: target "
                                            "triple, CPU, ISA features, cores, cache sizes, and the hardware "
                                            "fingerprint that tuning records are keyed by");
    hw->add_flag("--json", hw_opts.json, "Print one JSON object instead of text");
    hw->add_flag("--peak", hw_opts.peak,
                 "Also measure the peak rates of the f32, bf16 and int8 products (operands in "
                 "registers, no memory traffic; about a second): what a kernel of each "
                 "precision can reach at best on one core and on --threads cores; and the "
                 "round trip of a cache line between two CPUs");
    hw->add_flag("--round-trip", hw_opts.round_trip,
                 "Also measure the round trip of a cache line between two CPUs alone (a few "
                 "milliseconds; --peak measures it too): 50-100 ns on one die, several times "
                 "that when a virtual machine's CPUs sit on different dies");
    hw->add_option("--threads", hw_opts.threads,
                   "Cores of the --peak rate measured at once (0 = every core)")
        ->check(CLI::Range(0, 1024));

    CLI::App* op = app.add_subcommand("op", "Work with one built-in operator");
    op->require_subcommand(1);
    cli::OpRunOptions run_opts;
    CLI::App* run = op->add_subcommand(
        "run", "Compile an operator, check it against the tensor-expression reference on "
               "random inputs, and time it (exit 3 if the check fails)");
    run->add_option("spec", run_opts.spec,
                    "Operator and sizes, NAME:key=value,... e.g. matmul:m=1024,n=1024,k=1024 "
                    "or conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1 "
                    "(`tessera op list` shows every operator and its keys)")
        ->required();
    cli::add_threads_option(run, run_opts.threads, "Runtime threads (0 = one per core)");
    run->add_option("--repeat", run_opts.repeat, "Timed runs after one warm-up run")
        ->capture_default_str();
    run->add_option("--seed", run_opts.seed, "Seed of the random inputs")->capture_default_str();
    run->add_option("--tolerance", run_opts.tolerance,
                    "Largest accepted |got - ref| / max(|ref|, 1)")
        ->capture_default_str();
    run->add_option("--check-budget", run_opts.check_budget,
                    "Reference operations to spend on checking; beyond it a seeded sample of "
                    "output elements is checked")
        ->capture_default_str();
    run->add_flag("--json", run_opts.json,
                  "End the output with one JSON object (op, gflops, median_ms, max_rel_err, ...)");
    run->add_option("--schedule", run_opts.schedule_file,
                    "Run this schedule (a step-list JSON file, e.g. one line of `tessera op "
                    "sample`) instead of the default schedule; inputs in transformed layouts "
                    "are packed before the call");
    run->add_option("--db", run_opts.db,
                    "Run the best record of this tuning database for the op's workload on this "
                    "machine (exact fingerprint, then the same ISA class; the default schedule "
                    "when it has none) and say which tier served")
        ->excludes("--schedule");
    run->add_flag("--naive", run_opts.naive,
                  "Run the naive loop nest instead of the default schedule (for comparisons)")
        ->excludes("--schedule")
        ->excludes("--db");
    run->add_option("--beside", run_opts.beside,
                    "Also run this schedule (a step-list JSON file, or 'default' for the "
                    "default schedule), checked the same way, each of its runs just before one "
                    "of the first's, and print its median and the run-by-run ratio of the two "
                    "(CPU only; compares schedules on a host whose speed drifts)");
    run->add_option("--target", run_opts.target,
                    "llvm: this CPU; cuda: CUDA device 0 (NVRTC, CUDA events; --db looks up "
                    "'cuda -arch=sm_XX' records, and without --schedule or --db the GPU default "
                    "schedule runs, as in an untuned CUDA model build)")
        ->capture_default_str();
    run->add_flag("--tf32", run_opts.tf32,
                  "With --target cuda: the default schedule may run f32 matrix products on "
                  "tensor cores in TF32 (operands rounded to 10 mantissa bits; pass a "
                  "--tolerance such as 1e-2)");

    // The schedule space: sketches, sampled schedules and the loop IR they lower to.
    cli::OpScheduleOptions sched_opts;
    const char* spec_help = "Operator and sizes, NAME:key=value,... (see `tessera op list`)";
    const char* cores_help = "Cores the rfactor and parallel heuristics assume (0 = this host's)";
    CLI::App* sketches = op->add_subcommand(
        "sketches", "Print the sketches of an operator (the loop structures the search starts "
                    "from, with placeholder tile sizes) and their steps");
    sketches->add_option("spec", sched_opts.spec, spec_help)->required();
    sketches->add_option("--cores", sched_opts.cores, cores_help)->capture_default_str();
    cli::add_json_flag(sketches, sched_opts.json);
    CLI::App* sample = op->add_subcommand(
        "sample", "Print randomly annotated schedules of an operator, one step-list JSON per "
                  "line (each replays with `op run --schedule` and `op lower --schedule`)");
    sample->add_option("spec", sched_opts.spec, spec_help)->required();
    sample->add_option("--n", sched_opts.n, "Schedules to print")->capture_default_str();
    sample->add_option("--seed", sched_opts.seed, "Seed of the sampler (same seed, same output)")
        ->capture_default_str();
    sample->add_option("--cores", sched_opts.cores, cores_help)->capture_default_str();
    sample->add_option("--vector-lanes", sched_opts.vector_lanes,
                       "Widest vectorized loop in f32 lanes (0 = this host's vector width / 32)")
        ->capture_default_str();
    CLI::App* default_cmd = op->add_subcommand(
        "default", "Print the rule-based default schedule of an operator (what an untuned build "
                   "runs and what tuning starts from): its loop structure and its step-list JSON "
                   "(replays with `op run --schedule` and `op lower --schedule`)");
    default_cmd->add_option("spec", sched_opts.spec, spec_help)->required();
    default_cmd->add_option("--cores", sched_opts.cores, cores_help)->capture_default_str();
    default_cmd->add_option("--vector-lanes", sched_opts.vector_lanes,
                            "f32 lanes of the widest vector register (0 = the target's; "
                            "the register tile keeps the target's register count)")
        ->capture_default_str();
    cli::add_json_flag(default_cmd, sched_opts.json);
    auto add_target = [&](CLI::App* cmd, const char* what) {
        cmd->add_option("--target", sched_opts.target, what)->capture_default_str();
        cmd->add_flag("--tf32", sched_opts.tf32,
                      "With --target cuda: f32 matrix products may run on tensor cores in TF32");
    };
    add_target(default_cmd, "llvm: this CPU's default schedule; cuda: the GPU default schedule");
    CLI::App* lower_cmd = op->add_subcommand(
        "lower", "Print the loop IR of an operator: its default loop nest, or a schedule's");
    lower_cmd->add_option("spec", sched_opts.spec, spec_help)->required();
    lower_cmd->add_option("--schedule", sched_opts.schedule_file,
                          "Lower this schedule (a step-list JSON file) instead of the default "
                          "loop nest");
    cli::add_json_flag(lower_cmd, sched_opts.json);
    lower_cmd->add_flag("--asm", sched_opts.assembly,
                        "Print the assembly LLVM generates for --target's CPU (by default this "
                        "one: what `op run` runs) instead of the loop IR");
    add_target(lower_cmd, "llvm: print the loop IR; cuda: print the CUDA C of --schedule or of "
                          "the GPU default schedule (what `op run --target cuda` compiles), "
                          "each kernel's launch dimensions first");

    CLI::App* list = op->add_subcommand("list", "List the built-in operators and their keys");
    bool list_json = false;
    cli::add_json_flag(list, list_json);

    // Whole-model compilation into one shared library.
    cli::BuildCommandOptions build_opts;
    CLI::App* build_cmd = cli::add_build_command(app, build_opts);

    // Running and timing a built model library.
    cli::RunModelOptions run_model_opts;
    CLI::App* run_model_cmd = cli::add_run_command(app, run_model_opts);
    cli::BenchOptions bench_opts;
    CLI::App* bench_cmd = cli::add_bench_command(app, bench_opts);

    // Graph-level inspection of an ONNX model.
    cli::InspectOptions inspect_opts;
    CLI::App* inspect = app.add_subcommand(
        "inspect", "Import an ONNX model, run the graph optimization pipeline and report node "
                   "counts per op before and after, what each pass changed, the fused groups, "
                   "the tuning tasks they make and the memory plan of the intermediates");
    inspect->add_option("model", inspect_opts.model, "Path of the .onnx model")->required();
    add_model_input_options(inspect, inspect_opts.inputs);
    inspect->add_option("-O,--opt-level", inspect_opts.opt_level,
                        "Optimization level 0..3 (-O0 shape inference only, -O1 + folding and "
                        "dce, -O2 + simplification and cse, -O3 repeats to a fixpoint, then "
                        "moves convolutions to the NCHW[x]c layout)")
        ->capture_default_str();
    inspect->add_option("--nchwc-block", inspect_opts.layout_block,
                        "The x of the NCHW[x]c layout at -O3 (0: what build and tune use on this "
                        "host, one vector register of f32: 16 with AVX-512, 8 with AVX2)")
        ->capture_default_str();
    inspect->add_option("--print-after", inspect_opts.print_after,
                        "Print the graph after this pass, or after every pass with 'all'");
    inspect->add_flag("--time-passes", inspect_opts.time_passes,
                      "Report the wall time of each pass and of import, fusion and planning");
    std::string pass_names; // from the pipeline itself, so that the list cannot go stale
    for (const std::string& p : graph::pipeline_pass_names())
        pass_names += (pass_names.empty() ? "" : ", ") + p;
    inspect->add_option("--disable-pass", inspect_opts.disabled_passes,
                        "Skip this pipeline pass (repeatable): " + pass_names)
        ->allow_extra_args(false);
    inspect->add_flag("--horizontal-fusion", inspect_opts.horizontal_fusion,
                      "Run the horizontal fusion passes, as `build --horizontal-fusion` does");
    inspect->add_option("--target", inspect_opts.target,
                        "The target the tasks are for, as `build --target` takes it (cuda keeps "
                        "NCHW; a CPU's vector width sets the NCHW[x]c block)")
        ->capture_default_str();
    inspect->add_option("--schedule", inspect_opts.schedule_task,
                        "Print the default schedule of one task on this host (what an untuned "
                        "build runs): its loop structure and step-list JSON. TASK is its index "
                        "in the task list or a prefix of its workload key");
    inspect->add_flag("--json", inspect_opts.json,
                      "Print one JSON object instead of text (graph printouts go to stderr)");

    // Tuning one operator into the database.
    cli::TuneOptions tune_opts;
    CLI::App* tune_cmd = app.add_subcommand(
        "tune", "Tune a model's tasks (MODEL) or one operator (--op) on this machine: "
                "evolutionary search guided by a cost model, candidates measured for real and "
                "every measurement committed to the tuning database round by round (a rerun "
                "resumes; concurrent runs may share the database). A model's rounds go to the "
                "tasks that lower the estimated end-to-end latency most (gradient task "
                "scheduler). Ctrl-C finishes the current round, prints the summary and exits "
                "with 130; a second Ctrl-C exits at once (committed rounds are kept)");
    tune_cmd->add_option("model", tune_opts.model_path,
                         "ONNX model whose tasks to tune (as `build` extracts them); exactly one "
                         "of MODEL and --op");
    tune_cmd->add_option("--op", tune_opts.op, spec_help);
    add_model_input_options(tune_cmd, tune_opts.inputs);
    tune_cmd->add_option("-O,--opt-level", tune_opts.opt_level,
                         "Graph optimization level 0..3 of MODEL (use the level you build with)")
        ->capture_default_str();
    tune_cmd->add_flag("--no-winograd", tune_opts.no_winograd,
                       "Keep every 3x3 conv direct: no Winograd F(4x4)/F(2x2) transform (2.25-4x fewer "
                       "multiply-adds, about twice the direct conv's rounding error). The tasks "
                       "differ, so tune and build a model with the same choice");
    tune_cmd->add_flag("--horizontal-fusion", tune_opts.horizontal_fusion,
                       "Merge independent products of one value, as `build --horizontal-fusion` "
                       "does (off by default). The tasks differ, so tune and build a model with "
                       "the same choice");
    CLI::Option* trials_opt =
        tune_cmd->add_option("--trials", tune_opts.trials,
                             "Candidates to measure in this run (a model: all tasks together)")
            ->capture_default_str();
    CLI::Option* budget_opt = tune_cmd->add_option(
        "--time-budget", tune_opts.time_budget_secs,
        "Stop after this many seconds (a round started in time finishes); alone, the run ends "
        "by time only, with --trials at whichever limit comes first");
    tune_cmd->add_option("--db", tune_opts.db, "The tuning database (created with its folder)")
        ->capture_default_str();
    tune_cmd->add_option("--seed", tune_opts.seed,
                         "Seeds the search, the cost model and the measured inputs")
        ->capture_default_str();
    cli::add_threads_option(tune_cmd, tune_opts.threads,
                            "Threads of the measured kernels, also the cores the schedules "
                            "assume (0 = one per core)");
    tune_cmd->add_flag("--realtime", tune_opts.realtime,
                       "Time candidates with real-time scheduling (SCHED_FIFO), so that other "
                       "processes on a busy machine cannot disturb the timings (needs root or "
                       "CAP_SYS_NICE; otherwise one warning and normal scheduling; records note "
                       "it in their measurement settings)");
    tune_cmd->add_option("--min-repeat-secs", tune_opts.min_repeat_secs,
                         "Time each candidate's repeats for at least this long in total (at "
                         "least 5 repeats, at most 200; the median is recorded)")
        ->capture_default_str();
    tune_cmd->add_option("--slow-factor", tune_opts.slow_factor,
                         "A candidate whose checked run is slower than this many times the "
                         "task's best so far is timed once instead of repeated (0: never)")
        ->capture_default_str();
    tune_cmd
        ->add_option("--behind-factor", tune_opts.behind_factor,
                     "Timed in alternation with the task's best, a candidate whose runs take "
                     "more than this many times the best's beside them (median over at least "
                     "5 pairs) stops being timed: clearly behind, it needs no precise rank "
                     "(0: never)")
        ->capture_default_str();
    tune_cmd
        ->add_option("--ratio-precision", tune_opts.ratio_precision,
                     "Timed in alternation with the task's best, a candidate's runs also end "
                     "(after at least 8 pairs) once the median of their time ratios has this "
                     "relative standard error (0: time --min-repeat-secs always)")
        ->capture_default_str();
    tune_cmd->add_flag("--measure-alone", tune_opts.measure_alone,
                       "Time each candidate alone, not run for run in alternation with its "
                       "task's best record (records are then ranked by their medians, which a "
                       "busy or drifting machine skews)");
    tune_cmd
        ->add_option("--weights", tune_opts.weights,
                     "Caches of each task's weights in timed runs: cold (evicted before "
                     "every run, as in a whole model, where the other kernels' data evicts "
                     "them), warm (left in cache, as a kernel benchmark sees them), or auto: "
                     "cold for a model, warm for --op (CPU targets; records note it in "
                     "their measurement settings)")
        ->capture_default_str();
    tune_cmd->add_option("--population", tune_opts.population,
                         "Schedules kept per generation of the evolutionary search")
        ->capture_default_str();
    tune_cmd->add_option("--generations", tune_opts.generations,
                         "Evolution rounds between two measured rounds")
        ->capture_default_str();
    tune_cmd->add_option("--measure-per-round", tune_opts.measure_per_round,
                         "Candidates measured and committed per round")
        ->capture_default_str();
    tune_cmd->add_option("--eps-greedy", tune_opts.eps_greedy,
                         "Share of each round given to random samples instead of the model's "
                         "picks, in [0, 1]")
        ->capture_default_str();
    tune_cmd->add_option("--model", tune_opts.cost_model,
                         "Cost model: xgboost, or random (a random-search baseline); saved in "
                         "and warm-started from the database")
        ->capture_default_str();
    tune_cmd->add_option("--pretrained", tune_opts.pretrained,
                         "What a task's xgboost model starts from when tuning this CPU: builtin "
                         "(the model trained on a corpus of tasks, built into tessera; "
                         "scripts/train_cost_model.sh), none (an untrained model, a local "
                         "search around the default until it has records), or the path of a "
                         "blob `tessera costmodel train` wrote. The task's own records add trees "
                         "on top of it")
        ->capture_default_str();
    tune_cmd->add_option("--runner", tune_opts.runner,
                         "local: build and run every candidate on this machine (checked "
                         "against the reference); simulated: synthetic times computed from the "
                         "schedule, no compilation (for tests and demos only: its records get "
                         "the target 'simulated:llvm ...', which never serves `op run --db`); "
                         "or a command that starts a measurement worker where --target's code "
                         "runs, e.g. \"qemu-aarch64 -L /usr/aarch64-linux-gnu "
                         "build/runtime-aarch64-linux-gnu/tessera-measure-worker\": candidates "
                         "are built here and sent through its connection with their data, checked "
                         "and timed there")
        ->capture_default_str();
    tune_cmd->add_option("--target", tune_opts.target,
                         "llvm: this CPU; \"llvm -mcpu=NAME [-mattr=+f,-g] [-num-cores=N]\": "
                         "code for another CPU that runs on this one (records get that target); "
                         "\"llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1\": another "
                         "architecture, measured by a --runner worker command; "
                         "cuda: CUDA device 0 (GPU sketches, the GPU default "
                         "schedule and mutations, candidates compiled by NVRTC, checked and timed "
                         "on the device; records get the target 'cuda -arch=sm_XX'; a MODEL's "
                         "tasks are those `build --target cuda` makes)")
        ->capture_default_str();
    tune_cmd->add_option("--curve", tune_opts.curve_file,
                         "Write the tuning curve as CSV, one row per round: "
                         "trials,seconds,best_ms,best_gflops (plot with scripts/plot_curve.sh); "
                         "for a model round,trials,seconds,estimated_ms (end-to-end estimate)");
    tune_cmd->add_flag("--json", tune_opts.json,
                       "Print the summary as one JSON object on stdout instead of text "
                       "(progress stays on stderr)");
    tune_cmd->add_option("--shard", tune_opts.shard,
                         "I/N: tune only share I (0 <= I < N) of MODEL's tasks, so N machines "
                         "(a Slurm array, a Kubernetes indexed Job) tune one model into one "
                         "database together (docs/CLUSTER.md). Tasks are sorted by flops x count "
                         "and dealt in snake order; the deal depends only on the model, -O and "
                         "the tessera version, so it is the same on every machine and the N "
                         "shares cover every task once. --trials and --time-budget are per shard")
        ->excludes("--op");

    // The cost model: its accuracy on a database, the speed of its features.
    CLI::App* costmodel = app.add_subcommand(
        "costmodel", "Evaluate the cost model on a tuning database, train the pretrained model, "
                     "or time its features");
    costmodel->require_subcommand(1);
    cli::CostModelEvalOptions eval_opts;
    CLI::App* cm_eval = costmodel->add_subcommand(
        "eval", "Train a cost model on part of a tuning database's records and report how it "
                "ranks the held-out rest: pairwise accuracy and average peak score at 1, 5, 32");
    cm_eval->add_option("--db", eval_opts.db, "The tuning database")->required();
    cm_eval->add_option("--model", eval_opts.model, "xgboost, or random (the baseline)")
        ->capture_default_str();
    cm_eval->add_option("--holdout", eval_opts.holdout,
                        "records: a seeded share of every task's records; tasks: whole "
                        "workloads (needs at least 2)")
        ->capture_default_str();
    cm_eval->add_option("--holdout-share", eval_opts.holdout_share,
                        "Share of records (or workloads) held out, in (0, 1)")
        ->capture_default_str();
    cm_eval->add_option("--seed", eval_opts.seed, "Seeds the split and the model")
        ->capture_default_str();
    const char* tasks_of_help =
        "ONNX model whose tasks rebuild the workloads of its `tune MODEL` records (repeatable; "
        "`tune --op` records name their op themselves)";
    cm_eval->add_option("--tasks-of", eval_opts.tasks_of, tasks_of_help);
    cm_eval->add_option("--finetune", eval_opts.finetune,
                        "With --holdout tasks: also rank each held-out task's records after its "
                        "first K three ways: the model of the other tasks alone, a model of the K "
                        "alone, and the first refined by the K (what tune does with the "
                        "pretrained model)")
        ->capture_default_str();
    cli::add_json_flag(cm_eval, eval_opts.json);
    cli::CostModelTrainOptions train_opts;
    CLI::App* cm_train = costmodel->add_subcommand(
        "train", "Train the pretrained cost model on every record of a corpus database "
                 "(scripts/train_cost_model.sh makes the corpus) and write its blob and a JSON "
                 "sidecar; `tune --pretrained FILE` uses it, cost_model/pretrained/ is built in");
    cm_train->add_option("--db", train_opts.db, "The corpus tuning database")->required();
    cm_train->add_option("--tasks-of", train_opts.tasks_of, tasks_of_help);
    cm_train->add_option("--out", train_opts.out,
                         "The model blob to write (the sidecar: the same path with .json)")
        ->required();
    cm_train->add_option("--seed", train_opts.seed, "Seeds the model's validation draw")
        ->capture_default_str();
    cli::add_json_flag(cm_train, train_opts.json);
    std::string features_spec;
    int features_samples = 1000;
    uint64_t features_seed = 1;
    bool features_json = false;
    CLI::App* cm_features = costmodel->add_subcommand(
        "features", "Time feature extraction on sampled schedules of an operator: programs/s, "
                    "stores/s and features/s");
    cm_features->add_option("--op", features_spec, spec_help)->required();
    cm_features->add_option("--samples", features_samples, "Schedules to sample and extract")
        ->capture_default_str();
    cm_features->add_option("--seed", features_seed, "Seed of the sampler")
        ->capture_default_str();
    cli::add_json_flag(cm_features, features_json);

    // Sharing and maintaining tuning databases.
    cli::DbCommand db_cmd(app);

    // CLI11 reports an unknown subcommand only as "a subcommand is required"; name it instead.
    CLI::App* level = &app;
    for (int pos = 1; pos < argc && argv[pos][0] != '-'; ++pos) {
        CLI::App* sub = nullptr;
        for (CLI::App* s : level->get_subcommands({}))
            if (s->get_name() == argv[pos]) sub = s;
        if (!sub) {
            if (level->get_require_subcommand_min() == 0) break;
            std::string known;
            for (CLI::App* s : level->get_subcommands({}))
                known += (known.empty() ? "" : ", ") + s->get_name();
            std::cerr << "error: unknown command '" << argv[pos] << "' (known: " << known << ")\n";
            return 1;
        }
        level = sub;
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "error: " << e.what() << " (see --help)\n";
        return 1;
    }

    try {
        if (*hw) {
            cli::print_hw(hw_opts, std::cout);
        } else if (*run) {
            cli::OpRunResult r = cli::run_op(run_opts, std::cout);
            return r.passed ? 0 : 3;
        } else if (*list) {
            cli::print_op_list(std::cout, list_json);
        } else if (*sketches) {
            cli::print_sketches(sched_opts, std::cout);
        } else if (*sample) {
            cli::print_samples(sched_opts, std::cout);
        } else if (*lower_cmd) {
            cli::print_lowered(sched_opts, std::cout);
        } else if (*default_cmd) {
            cli::print_default_schedule(sched_opts, std::cout);
        } else if (*tune_cmd) {
            if (budget_opt->count() > 0 && trials_opt->count() == 0)
                tune_opts.trials = 0; // ends by time alone
            tune_opts.time_bounded = budget_opt->count() > 0;
            return cli::run_tune_command(tune_opts, std::cout, std::cerr,
                                         isatty(STDERR_FILENO) == 1);
        } else if (*cm_eval) {
            cli::run_costmodel_eval(eval_opts, std::cout);
        } else if (*cm_train) {
            cli::run_costmodel_train(train_opts, std::cout);
        } else if (*cm_features) {
            return cli::run_costmodel_features(features_spec, features_samples, features_seed,
                                               std::cout, features_json);
        } else if (db_cmd.chosen()) {
            return db_cmd.run(std::cout, std::cerr);
        } else if (*build_cmd) {
            return cli::run_build(build_opts, std::cout, std::cerr);
        } else if (*run_model_cmd) {
            cli::run_model(run_model_opts, std::cout);
        } else if (*bench_cmd) {
            cli::bench_model(bench_opts, std::cout);
        } else if (*inspect) {
            cli::run_inspect(inspect_opts, std::cout);
        }
        return 0;
    } catch (const UserError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    } catch (const InternalError& e) {
        std::cerr << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "internal error: " << e.what() << "\n";
        return 2;
    }
}
