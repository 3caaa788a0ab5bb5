// --input-shape and --bind, shared by build, inspect and tune.
#include "model_inputs.h"

#include <CLI/CLI.hpp>

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
           "bfloat16, sums in f32; AVX512-BF16 where the CPU has it); or fp16 (CPU: the "
           "weights of products stored in float16, half the bytes, widened to f32 as the "
           "kernels read them; activations and arithmetic f32). The bf16 and fp16 tasks "
           "differ, so tune and build a model with the same choice")
        ->capture_default_str();
}

graph::Precision precision_of(const ModelInputOptions& opts) {
    return graph::parse_precision(opts.precision);
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
