// `tessera build`: the driver side of whole-model compilation (build_command.h).
#include "build_command.h"

#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tessera/compile/coverage_table.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/support/error.h"
#include "tessera/tuner/tune_target.h"
#include "tune_command.h"

namespace tessera::cli {

namespace {

/// "46.8 MiB", "23.0 KiB", "512 B".
std::string bytes_text(int64_t b) {
    if (b >= (int64_t(1) << 20))
        return fmt::format("{:.1f} MiB", static_cast<double>(b) / double(1 << 20));
    if (b >= 1024)
        return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024.0);
    return fmt::format("{} B", b);
}

} // namespace

CLI::App* add_build_command(CLI::App& app, BuildCommandOptions& opts) {
    CLI::App* cmd = app.add_subcommand(
        "build", "Compile an ONNX model into one shared library (kernels, weights, memory plan "
                 "and the C API of tessera_model.h): each task gets the best tuning record for "
                 "this machine (exact fingerprint, then the same ISA class) or its default "
                 "schedule, and a coverage table says which and their estimated time share");
    cmd->add_option("model", opts.model, "Path of the .onnx model")->required();
    cmd->add_option("-o,--output", opts.output,
                    "The shared library to write (default: <model stem>.so in the current "
                    "folder)");
    cmd->add_option("--db", opts.db,
                    std::string("Tuning database to take schedules from (default: ") +
                        kDefaultBuildDb +
                        " when it exists, else none: every task uses its "
                        "default schedule)");
    cmd->add_flag("--no-db", opts.no_db,
                  "Use no tuning database, not even the default one: every task gets its "
                  "default schedule (an untuned build, for comparisons)")
        ->excludes("--db");
    cmd->add_flag("--strict", opts.strict,
                  "Fail (exit 1, nothing written) when any task has no usable record for this "
                  "machine, listing those tasks");
    cmd->add_option("-O,--opt-level", opts.opt_level,
                    "Graph optimization level 0..3 (-O3 also moves convolutions to NCHW[x]c)")
        ->capture_default_str();
    cmd->add_flag("--no-winograd", opts.no_winograd,
                  "Keep every 3x3 conv direct: no Winograd F(4x4)/F(2x2) transform (2.25-4x fewer "
                  "multiply-adds, about twice the direct conv's rounding error). The tasks "
                  "differ, so tune and build a model with the same choice");
    cmd->add_flag("--horizontal-fusion", opts.horizontal_fusion,
                  "Merge independent products of one value: same-shaped convs (an Inception "
                  "block's 1x1 convs) into one conv with a channel slice per branch, MatMuls by "
                  "constant weights (attention's Q/K/V) into one. Off by default: no faster on "
                  "the CPUs measured. The tasks differ, so tune and build a model with the "
                  "same choice");
    cmd->add_flag("--json", opts.json,
                  "Print one JSON object (coverage rows, tiers, sizes, times) instead of the "
                  "table");
    add_model_input_options(cmd, opts.inputs);
    cmd->add_option("-j,--jobs", opts.jobs, "Threads generating code (0 = one per hardware thread)")
        ->capture_default_str();
    cmd->add_option("--target", opts.target,
                    "What the library runs on: llvm (this CPU), another CPU (\"llvm "
                    "-mcpu=skylake-avx512\", \"llvm -mtriple=aarch64-linux-gnu "
                    "-mcpu=neoverse-n1\": cross-compiled; -mattr=+f,-g, -num-cores=N) or cuda "
                    "(an NVIDIA GPU: NVRTC cubins run through the CUDA driver; \"cuda "
                    "-arch=sm_80\"; building needs no GPU)")
        ->capture_default_str();
    cmd->add_option("--arch", opts.arch,
                    "--target cuda: the GPU architecture, sm_XX (default: this machine's GPU, "
                    "else sm_90); records are looked up for it");
    return cmd;
}

int run_build(const BuildCommandOptions& opts, std::ostream& out, std::ostream& err) {
    compile::BuildOptions bo;
    bo.model_path = opts.model;
    bo.opt_level = opts.opt_level;
    bo.winograd = !opts.no_winograd;
    bo.horizontal_fusion = opts.horizontal_fusion;
    bo.precision = precision_of(opts.inputs);
    bo.jobs = opts.jobs;
    // A library may be for another CPU (cross-compiled): the build runs none of its code.
    bo.target = checked_target(opts.target, false, /*may_cross=*/true);
    if (bo.target.is_cuda()) {
        if (!opts.arch.empty() && !is_cuda_arch(opts.arch))
            throw UserError() << "CUDA architecture '" << opts.arch
                              << "' is not sm_<digits> (e.g. sm_90)";
        if (!opts.arch.empty())
            bo.target.arch = opts.arch;
        bo.target = tune::with_cuda_arch(bo.target);
    } else if (!opts.arch.empty())
        throw UserError() << "--arch " << opts.arch << " needs --target cuda";
    if (const std::string note = precision_note(bo.precision, bo.target); !note.empty())
        err << note << "\n";
    const graph::ImportOptions io = import_options(opts.inputs);
    bo.input_shapes = io.input_shapes;
    bo.bound_inputs = io.bound_inputs;
    std::error_code ec;
    if (opts.no_db)
        bo.db_path.clear();
    else if (!opts.db.empty())
        bo.db_path = opts.db;
    else if (std::filesystem::is_regular_file(kDefaultBuildDb, ec))
        bo.db_path = kDefaultBuildDb;
    // For CUDA without a GPU this machine's fingerprint has no device: only the ISA-class tier
    // can serve.
    if (!bo.db_path.empty())
        bo.lookup = tune::build_lookup_target(bo.target);
    const std::string so_path = !opts.output.empty()
                                    ? opts.output
                                    : std::filesystem::path(opts.model).stem().string() + ".so";

    if (opts.opt_level < 0 || opts.opt_level > 3)
        throw UserError() << "-O/--opt-level must be 0..3, got " << opts.opt_level;
    if (opts.jobs < 0)
        throw UserError() << "--jobs must be >= 0, got " << opts.jobs;
    compile::check_output_writable(so_path);

    const compile::ModelBuild build = compile::prepare_model_build(bo);
    if (opts.strict) {
        std::string missing;
        int n = 0;
        for (const compile::TaskCoverage& r : build.coverage()) {
            if (r.source != tune::LookupTier::Default)
                continue;
            missing += fmt::format("{}#{} {} ({})", n++ ? ", " : "", r.task, r.pattern, r.note);
        }
        if (n > 0) {
            if (opts.json)
                out << compile::coverage_json(build, nullptr) << "\n";
            else
                compile::print_coverage_table(out, build);
            err << "error: --strict: " << n << " of " << build.tasks.size()
                << " tasks have no usable record: " << missing << "\n";
            return 1;
        }
    }
    if (!opts.json)
        compile::print_coverage_table(out, build);
    const compile::LibrarySummary lib = compile::write_model_library(build, so_path, bo);
    if (opts.json) {
        out << compile::coverage_json(build, &lib) << "\n";
    } else {
        out << fmt::format("wrote {}{}: {} kernels, {} calls, weights {}, arena {}; built in {:.2f} "
                           "s (schedules {:.2f} s, code generation and link {:.2f} s)\n",
                           so_path,
                           bo.target == Target{} ? std::string() : " (" + bo.target.str() + ")",
                           lib.num_kernels, lib.num_calls, bytes_text(lib.weight_bytes),
                           bytes_text(lib.arena_bytes), build.prepare_secs + lib.codegen_secs,
                           build.prepare_secs, lib.codegen_secs);
    }
    return 0;
}

} // namespace tessera::cli
