// tessera.build(): an ONNX model to a shared library through compile/model_compiler.h, with the
// options `tessera build` takes (src/cli/build_command.cpp is the command's side).
#include "binding.h"

#include "tessera/support/error.h"
#include "tessera/support/target.h"
#include "tessera/tuner/tune_target.h"

namespace tessera::python {

void set_build_target(const std::string& target, compile::BuildOptions& bo) {
    // A library may be for another CPU (cross-compiled): the build runs none of its code.
    bo.target = tune::with_cuda_arch(parse_target(target));
    if (!bo.db_path.empty())
        bo.lookup = tune::build_lookup_target(bo.target);
}

std::map<std::string, graph::Shape>
checked_input_shapes(const std::map<std::string, std::vector<int64_t>>& shapes) {
    for (const auto& [name, dims] : shapes)
        for (int64_t d : dims)
            if (d <= 0)
                throw UserError() << "input_shapes['" << name << "'] has dimension " << d
                                  << ": dimensions must be positive";
    return {shapes.begin(), shapes.end()};
}

BuildResult build_model(const BuildRequest& request) {
    compile::BuildOptions bo;
    bo.model_path = request.model;
    if (request.db) {
        if (request.db->empty())
            throw UserError() << "db must name a tuning database file, got ''";
        bo.db_path = *request.db;
    }
    if (request.opt_level < 0 || request.opt_level > 3)
        throw UserError() << "opt_level must be 0..3, got " << request.opt_level;
    bo.opt_level = request.opt_level;
    bo.precision = graph::parse_precision(request.precision);
    bo.input_shapes = checked_input_shapes(request.input_shapes);
    bo.runtime_archive = request.runtime_archive;
    set_build_target(request.target, bo);
    compile::check_output_writable(request.output);
    const compile::ModelBuild build = compile::prepare_model_build(bo);
    compile::write_model_library(build, request.output, bo);
    return {request.output, build.coverage()};
}

} // namespace tessera::python
