// `tessera op sketches | sample | lower`: the schedule space of a built-in operator.
#include "op_schedule.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "json_output.h"
#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tune_command.h"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda.h"
#endif
#include "tessera/ir/printer.h"
#include "tessera/lower/lower_default.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"

namespace tessera::cli {

namespace {

int cores_of(const OpScheduleOptions& opts) {
    if (opts.cores < 0)
        throw UserError() << "--cores must be >= 0, got " << opts.cores;
    return opts.cores > 0 ? opts.cores : std::max(1, backend::host_info().cores);
}

int lanes_of(const OpScheduleOptions& opts) {
    if (opts.vector_lanes < 0)
        throw UserError() << "--vector-lanes must be >= 0, got " << opts.vector_lanes;
    return opts.vector_lanes > 0 ? opts.vector_lanes
                                 : std::max(1, backend::host_info().vector_bits / 32);
}

sched::SketchOptions sketch_options(const OpScheduleOptions& opts, const te::OpInstance& inst) {
    sched::SketchOptions so;
    so.num_cores = cores_of(opts);
    so.weight_inputs = inst.weight_inputs;
    return so;
}

sched::SampleOptions sample_options(const OpScheduleOptions& opts) {
    sched::SampleOptions so;
    so.num_cores = cores_of(opts);
    so.max_vectorize_lanes = lanes_of(opts);
    return so;
}

} // namespace

sched::State load_schedule(const te::Compute& c, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UserError() << "schedule " << path << ": cannot open the file";
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
        throw UserError() << "schedule " << path << ": cannot read the file";
    std::vector<sched::Step> steps;
    try {
        steps = sched::steps_from_json(text.str());
    } catch (const UserError& e) {
        throw UserError() << "schedule " << path << ": " << e.what();
    }
    try {
        return sched::replay(c, steps);
    } catch (const ScheduleError& e) {
        throw UserError() << "schedule " << path << ": " << e.what();
    }
}

void print_sketches(const OpScheduleOptions& opts, std::ostream& out) {
    te::OpInstance inst = te::make_op(opts.spec);
    const std::vector<sched::State> sketches =
        sched::generate_sketches(inst.compute, sketch_options(opts, inst));
    if (opts.json) {
        // A sketch does not record the rules that derived it: its index names it, as in the text.
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (size_t i = 0; i < sketches.size(); ++i)
            list.push_back({{"index", i},
                            {"steps", step_list_json(sketches[i].steps)},
                            {"loops", sched::to_string(sketches[i])}});
        nlohmann::ordered_json j;
        j["op"] = inst.canonical_spec;
        j["sketches"] = list;
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("{}: {} sketches\n", inst.canonical_spec, sketches.size());
    for (size_t i = 0; i < sketches.size(); ++i) {
        const sched::State& s = sketches[i];
        out << fmt::format("\nsketch {} ({} steps)\n", i, s.steps.size());
        out << sched::to_string(s);
        for (size_t k = 0; k < s.steps.size(); ++k)
            out << fmt::format("  step {}: {}\n", k, sched::to_string(s.steps[k]));
    }
}

void print_samples(const OpScheduleOptions& opts, std::ostream& out) {
    if (opts.n < 0)
        throw UserError() << "--n must be >= 0, got " << opts.n;
    te::OpInstance inst = te::make_op(opts.spec);
    const std::vector<sched::State> sketches =
        sched::generate_sketches(inst.compute, sketch_options(opts, inst));
    const sched::SampleOptions so = sample_options(opts);
    Rng rng(opts.seed);
    // Invalid samples are rare; a bound on the attempts keeps a broken space from looping.
    const int64_t max_attempts = 50 * int64_t{opts.n} + 100;
    int printed = 0;
    for (int64_t attempt = 0; printed < opts.n && attempt < max_attempts; ++attempt) {
        const sched::State& sketch = sketches[rng.uniform_int(0, int64_t(sketches.size()) - 1)];
        try {
            sched::State s = sched::sample_initial_state(sketch, rng, so);
            sched::lower_state(s, "kernel"); // only schedules that lower are printed
            out << sched::steps_to_json(s.steps) << "\n";
            ++printed;
        } catch (const ScheduleError&) {
        }
    }
    if (printed < opts.n)
        throw UserError() << "op sample: only " << printed << " of " << opts.n
                          << " samples were valid after " << max_attempts << " attempts";
}

namespace {

/// The default-schedule options of opts' target.
sched::DefaultScheduleOptions default_options(const OpScheduleOptions& opts,
                                              const te::OpInstance& inst) {
    // A schedule only: any target, this machine need not run it.
    const Target target = checked_target(opts.target, opts.tf32, /*may_cross=*/true);
    sched::DefaultScheduleOptions o = tune::default_schedule_options_for(target, opts.cores);
    if (opts.vector_lanes > 0)
        o.vector_lanes = opts.vector_lanes;
    (void)cores_of(opts); // checks --cores
    (void)lanes_of(opts); // checks --vector-lanes
    o.weight_inputs = inst.weight_inputs;
    o.gpu_tf32 = target.is_cuda() && opts.tf32;
    return o;
}

void print_cuda(const OpScheduleOptions& opts, const te::OpInstance& inst, std::ostream& out) {
#ifdef TESSERA_HAVE_CUDA
    const sched::State s = opts.schedule_file.empty()
                               ? sched::default_schedule(inst.compute, default_options(opts, inst))
                               : load_schedule(inst.compute, opts.schedule_file);
    backend::cuda::CudaSource src;
    try {
        sched::LowerOptions lo;
        lo.gpu = true;
        src = backend::cuda::codegen_cuda(sched::lower_state(s, "kernel", lo));
    } catch (const ScheduleError& e) {
        throw UserError() << "--target cuda: the schedule does not fit the device: " << e.what();
    }
    if (opts.json) {
        nlohmann::ordered_json j;
        j["op"] = inst.canonical_spec;
        j["schedule"] = opts.schedule_file.empty() ? nlohmann::ordered_json()
                                                   : nlohmann::ordered_json(opts.schedule_file);
        j["cuda"] = src.code;
        for (const auto& k : src.kernels)
            j["kernels"].push_back({{"name", k.name},
                                    {"grid", k.dims.grid},
                                    {"block", k.dims.block},
                                    {"shared_bytes", k.shared_bytes}});
        out << j.dump() << "\n";
        return;
    }
    for (const auto& k : src.kernels)
        out << fmt::format("// kernel {}: grid ({}, {}, {}), block ({}, {}, {}), {} shared bytes\n",
                           k.name, k.dims.grid[0], k.dims.grid[1], k.dims.grid[2], k.dims.block[0],
                           k.dims.block[1], k.dims.block[2], k.shared_bytes);
    out << src.code;
#else
    (void)opts;
    (void)inst;
    (void)out;
    throw UserError() << "--target cuda: this build of tessera has no CUDA backend";
#endif
}

} // namespace

void print_default_schedule(const OpScheduleOptions& opts, std::ostream& out) {
    te::OpInstance inst = te::make_op(opts.spec);
    const sched::DefaultScheduleOptions o = default_options(opts, inst);
    const sched::State s = sched::default_schedule(inst.compute, o);
    if (opts.json) {
        nlohmann::ordered_json j;
        j["op"] = inst.canonical_spec;
        j["cores"] = o.num_cores;
        j["vector_lanes"] = o.vector_lanes;
        j["vector_registers"] = o.vector_registers;
        j["steps"] = step_list_json(s.steps);
        j["loops"] = sched::to_string(s);
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("{}: default schedule ({} steps)\n", inst.canonical_spec, s.steps.size());
    out << sched::to_string(s);
    out << sched::steps_to_json(s.steps) << "\n";
}

void print_lowered(const OpScheduleOptions& opts, std::ostream& out) {
    te::OpInstance inst = te::make_op(opts.spec);
    const Target target = checked_target(opts.target, opts.tf32, /*may_cross=*/true);
    if (target.is_cuda()) {
        if (opts.assembly)
            throw UserError() << "--asm: only for --target llvm (CUDA prints its C source)";
        return print_cuda(opts, inst, out);
    }
    ir::LoweredFunc f;
    if (opts.schedule_file.empty()) {
        f = lower::lower_default(inst.compute, "kernel");
    } else {
        const sched::State s = load_schedule(inst.compute, opts.schedule_file);
        try {
            f = sched::lower_state(s, "kernel");
        } catch (const ScheduleError& e) {
            throw UserError() << "schedule " << opts.schedule_file << ": " << e.what();
        }
    }
    std::string assembly;
    if (opts.assembly) {
        // For the target's CPU, as a build for it compiles (not necessarily this one).
        assembly = backend::emit_assembly({f}, backend::compile_options_for(target));
    }
    if (opts.json) {
        nlohmann::ordered_json j;
        j["op"] = inst.canonical_spec;
        j["schedule"] = opts.schedule_file.empty() ? nlohmann::ordered_json()
                                                   : nlohmann::ordered_json(opts.schedule_file);
        j["ir"] = ir::to_string(f);
        if (opts.assembly)
            j["asm"] = assembly;
        out << j.dump() << "\n";
        return;
    }
    out << (opts.assembly ? assembly : ir::to_string(f));
}

} // namespace tessera::cli
