// `tessera run`: .npy in, the model's C API, .npy out.
#include "run_command.h"

#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "json_output.h"
#include "model_library.h"
#include "threads_option.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/tensor_io.h"
#include "tessera/support/error.h"

namespace tessera::cli {

namespace {

/// The tensor-file dtype of a model dtype, when tessera's .npy and .pb files carry it.
std::optional<graph::DType> file_dtype(int dtype) { return compile::graph_dtype_of(dtype); }

std::string given(const graph::TensorData& t) {
    return std::string(graph::dtype_name(t.dtype())) + graph::shape_str(t.shape());
}

std::string input_names(const std::vector<ModelTensorInfo>& inputs) {
    std::string s;
    for (const ModelTensorInfo& t : inputs)
        s += (s.empty() ? "" : ", ") + t.name;
    return s.empty() ? "none" : s;
}

/// A file name for an output: its name with path separators and other odd characters
/// replaced, so that an ONNX name like "onnx::Gemm/5" cannot leave the output folder.
std::string file_stem(const std::string& name) {
    std::string s = name;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    if (s.empty() || s == "." || s == "..")
        s = "output" + s;
    return s;
}

/// Matches the --input arguments to the model's inputs and reads their files.
std::vector<graph::TensorData> read_inputs(const std::vector<std::string>& args,
                                           const std::vector<ModelTensorInfo>& inputs) {
    std::map<std::string, std::string> files; // input name -> file
    for (const std::string& arg : args) {
        const size_t eq = arg.find('=');
        std::string name, file;
        if (eq == std::string::npos) {
            if (inputs.size() != 1)
                throw UserError() << "--input '" << arg << "' has no NAME=: the model has "
                                  << inputs.size() << " inputs (" << input_names(inputs)
                                  << "), pass --input NAME=FILE.npy for each";
            if (args.size() != 1)
                throw UserError() << "--input '" << arg << "': a bare FILE is allowed only as "
                                  << "the single --input of a single-input model";
            name = inputs[0].name;
            file = arg;
        } else {
            name = arg.substr(0, eq);
            file = arg.substr(eq + 1);
        }
        bool known = false;
        for (const ModelTensorInfo& t : inputs)
            known = known || t.name == name;
        if (!known)
            throw UserError() << "unknown input '" << name
                              << "' (the model's inputs: " << input_names(inputs) << ")";
        if (!files.emplace(name, file).second)
            throw UserError() << "input '" << name << "' is given twice";
    }
    std::vector<graph::TensorData> data;
    for (const ModelTensorInfo& t : inputs) {
        auto it = files.find(t.name);
        if (it == files.end())
            throw UserError() << "missing input '" << t.name << "' (expected " << describe(t)
                              << "): pass --input " << t.name << "=FILE.npy";
        const std::optional<graph::DType> want = file_dtype(t.dtype);
        if (!want)
            throw UserError() << "input '" << t.name << "' has dtype " << model_dtype_name(t.dtype)
                              << ", which tessera's input files "
                              << "cannot supply";
        graph::TensorData d;
        try {
            d = graph::npy_as(graph::read_tensor_file(it->second), *want);
        } catch (const UserError& e) {
            throw UserError() << "input '" << t.name << "': " << e.what();
        }
        if (d.dtype() != *want || d.shape() != t.shape)
            throw UserError() << "input '" << t.name << "': expected " << describe(t) << ", given "
                              << given(d) << " in '" << it->second << "'";
        data.push_back(std::move(d));
    }
    return data;
}

} // namespace

void run_model(const RunModelOptions& opts, std::ostream& out) {
    if (opts.output_dir.empty())
        throw UserError() << "--output DIR is required";
    ModelLibrary lib(opts.model);
    ModelInstance model(lib);
    std::vector<graph::TensorData> inputs = read_inputs(opts.inputs, model.inputs());

    std::vector<graph::TensorData> outputs;
    for (const ModelTensorInfo& t : model.outputs()) {
        const std::optional<graph::DType> d = file_dtype(t.dtype);
        if (!d)
            throw UserError() << "output '" << t.name << "' has dtype " << model_dtype_name(t.dtype)
                              << ", which tessera cannot write "
                              << "as .npy";
        outputs.emplace_back(*d, t.shape);
    }
    // Distinct file names: two outputs whose names differ only in replaced characters.
    std::map<std::string, std::string> stems; // stem -> output name
    for (const ModelTensorInfo& t : model.outputs()) {
        auto [it, fresh] = stems.emplace(file_stem(t.name), t.name);
        if (!fresh)
            throw UserError() << "outputs '" << it->second << "' and '" << t.name
                              << "' would both be written to " << it->first << ".npy";
    }

    std::vector<const void*> in_ptrs;
    for (const graph::TensorData& t : inputs)
        in_ptrs.push_back(t.raw());
    std::vector<void*> out_ptrs;
    for (graph::TensorData& t : outputs)
        out_ptrs.push_back(t.raw());
    model.set_num_threads(opts.threads);
    model.run(in_ptrs.data(), out_ptrs.data());

    std::error_code ec;
    std::filesystem::create_directories(opts.output_dir, ec);
    if (ec || !std::filesystem::is_directory(opts.output_dir))
        throw UserError() << "cannot create the output folder '" << opts.output_dir
                          << "': " << (ec ? ec.message() : "a file of that name exists");
    nlohmann::ordered_json written = nlohmann::ordered_json::array();
    for (size_t i = 0; i < outputs.size(); ++i) {
        const ModelTensorInfo& t = model.outputs()[i];
        const std::string path =
            (std::filesystem::path(opts.output_dir) / (file_stem(t.name) + ".npy")).string();
        graph::write_npy(path, outputs[i]);
        if (opts.json)
            written.push_back({{"name", t.name},
                               {"file", path},
                               {"dtype", model_dtype_name(t.dtype)},
                               {"shape", t.shape}});
        else
            out << "wrote " << path << " (" << t.name << ": " << describe(t) << ")\n";
    }
    if (opts.json) {
        nlohmann::ordered_json j;
        j["model"] = model.name();
        j["path"] = opts.model;
        j["threads"] = opts.threads > 0 ? opts.threads : 0;
        j["output_dir"] = opts.output_dir;
        j["outputs"] = written;
        out << j.dump() << "\n";
    }
}

CLI::App* add_run_command(CLI::App& app, RunModelOptions& opts) {
    CLI::App* cmd = app.add_subcommand(
        "run", "Run a model library built by `tessera build` on .npy inputs and write one "
               "NAME.npy per output");
    cmd->add_option("model", opts.model, "Path of the model library (.so)")->required();
    cmd->add_option("--input", opts.inputs,
                    "An input, NAME=FILE.npy (repeat for each input; an ONNX TensorProto "
                    "FILE.pb works too); a single-input model also takes FILE.npy")
        ->allow_extra_args(false);
    cmd->add_option("--output", opts.output_dir,
                    "Folder for the outputs (created if missing), one NAME.npy each")
        ->required();
    add_threads_option(cmd, opts.threads, "Threads of the model (0 = one per core)");
    add_json_flag(cmd, opts.json);
    return cmd;
}

} // namespace tessera::cli
