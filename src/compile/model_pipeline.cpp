// The model pipeline shared by tune, build and inspect.
#include "tessera/compile/model_pipeline.h"

#include <chrono>
#include <sstream>

#include "tessera/backends/host.h"
#include "tessera/graph/pipeline.h"
#include "tessera/support/error.h"

namespace tessera::compile {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The graph options of `options`, checked: a model can take long to import, a typo should
// not wait for it.
graph::PipelineOptions pipeline_options(const ModelPipelineOptions& options) {
    if (options.precision == graph::Precision::TF32 && !options.target.is_cuda())
        throw UserError() << "--precision tf32 needs --target cuda (TF32 is a format of NVIDIA "
                             "tensor cores)";
    if (options.precision == graph::Precision::FP16 && options.target.is_cuda())
        throw UserError() << "--precision fp16 is for CPU targets (llvm): CUDA builds run f32, "
                             "or tf32 on tensor cores";
    graph::PipelineOptions po;
    po.level = options.opt_level;
    po.precision = options.precision;
    po.disabled_passes = options.disabled_passes;
    if (options.target.is_cuda())
        po.disabled_passes.insert("layout");
    else {
        const backend::CpuInfo cpu = backend::describe_cpu(options.target);
        po.layout_block = options.layout_block != 0 ? options.layout_block
                                                    : graph::layout_block_for(cpu.vector_bits);
        if (cpu.l2_bytes > 0)
            po.fp16_min_weight_bytes = cpu.l2_bytes;
    }
    if (!options.winograd)
        po.disabled_passes.insert("winograd");
    po.horizontal_fusion = options.horizontal_fusion;
    po.print_after = options.print_after;
    po.time_passes = options.time_passes;
    graph::check_pipeline_options(po);
    return po;
}

} // namespace

ModelPipeline run_model_pipeline(const ModelPipelineOptions& options) {
    graph::PipelineOptions po = pipeline_options(options);
    std::ostringstream dropped; // optimize prints only on request; keep stray output away
    po.out = options.pass_output ? options.pass_output : &dropped;

    ModelPipeline p;
    auto t0 = Clock::now();
    p.graph = graph::import_onnx(options.model_path, options.import);
    p.import_seconds = since(t0);
    p.ops_imported = graph::op_histogram(p.graph);
    p.nodes_imported = static_cast<int>(p.graph.num_nodes());

    t0 = Clock::now();
    p.passes = graph::optimize(p.graph, po);
    p.optimize_seconds = since(t0);

    t0 = Clock::now();
    p.groups = graph::fuse_ops(p.graph);
    p.fuse_seconds = since(t0);

    t0 = Clock::now();
    try {
        p.tasks = graph::extract_tasks(p.graph, p.groups);
    } catch (const UserError& e) {
        if (!options.keep_task_error)
            throw;
        p.tasks_error = e.what();
    }
    p.tasks_seconds = since(t0);
    return p;
}

} // namespace tessera::compile
