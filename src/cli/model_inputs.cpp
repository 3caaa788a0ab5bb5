// --input-shape and --bind, shared by build, inspect and tune.
#include "model_inputs.h"

#include <CLI/CLI.hpp>

#include "tessera/backends/host.h"
#include "tessera/graph/tensor_io.h"
#include "tessera/support/error.h"

namespace tessera::cli {

void add_model_input_options(CLI::App* cmd, ModelInputOptions& opts) {
    cmd->add_option("--input-shape", opts.input_shapes,
                    "Static shape of a graph input, NAME=1x3x224x224 (repeatable; needed for "
                    "inputs with symbolic dims)")
        ->allow_extra_args(false);
    cmd->add_option("--bind", opts.binds,
                    "Fix a graph input to the value in a .npy (or .pb) file, NAME=FILE "
                    "(repeatable): the input becomes a constant and leaves the library's "
                    "inputs, so inputs that set shapes (a Reshape's shape, a Resize's sizes) "
                    "fold away")
        ->allow_extra_args(false);
    cmd->add_option(
           "--precision", opts.precision,
           "What matrix products and convolutions compute on: fp32; tf32 (--target cuda: f32 "
           "matrix products on tensor cores, operands rounded to 10 mantissa bits, sums in f32; "
           "the graph and its tasks stay those of fp32); bf16 (operands rounded to "
           "bfloat16, sums in f32; AVX512-BF16 where the CPU has it, elsewhere f32 multiply-adds "
           "after conversions, slower than fp32); or fp16 (CPU: the "
           "weights of products stored in float16, half the bytes, widened to f32 as the "
           "kernels read them; activations and arithmetic f32). The bf16 and fp16 tasks "
           "differ, so tune and build a model with the same choice")
        ->capture_default_str();
}

graph::Precision precision_of(const ModelInputOptions& opts) {
    return graph::parse_precision(opts.precision);
}

std::string precision_note(graph::Precision p, const Target& target) {
    if (p != graph::Precision::BF16 || !target.is_llvm())
        return "";
    const backend::CpuInfo cpu = backend::describe_cpu(target);
    if (cpu.has_feature("avx512bf16") || cpu.has_bf16_tiles())
        return "";
    // On a Zen 3 (AVX2) resnet18 ran 0.58x and bert_emb_op13 0.57x as fast in bf16 as in fp32.
    return "note: " + (cpu.cpu_name.empty() ? std::string("this CPU") : cpu.cpu_name) +
           " has no bf16 products (avx512bf16, amx-bf16): --precision bf16 computes them as f32 "
           "multiply-adds after conversions, slower than fp32 here";
}

graph::ImportOptions import_options(const ModelInputOptions& opts) {
    graph::ImportOptions io;
    for (const std::string& spec : opts.input_shapes) {
        auto [name, shape] = graph::parse_input_shape(spec);
        if (io.input_shapes.count(name))
            throw UserError() << "input shape of '" << name << "' given twice";
        io.input_shapes[name] = shape;
    }
    for (const std::string& spec : opts.binds) {
        const size_t eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            throw UserError() << "--bind '" << spec << "' is not NAME=FILE";
        const std::string name = spec.substr(0, eq);
        if (io.bound_inputs.count(name))
            throw UserError() << "input '" << name << "' is bound twice";
        io.bound_inputs[name] = graph::read_tensor_file(spec.substr(eq + 1));
    }
    return io;
}

} // namespace tessera::cli
