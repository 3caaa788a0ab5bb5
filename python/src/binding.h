// The parts of the Python extension tessera._tessera (python/tessera/__init__.py is its public
// face): building a model library, and a loaded model that runs on numpy arrays.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "tessera/compile/model_compiler.h"

namespace tessera::cli {
class ModelLibrary;
class ModelInstance;
} // namespace tessera::cli

namespace tessera::python {

namespace nb = nanobind;

/// Sets on `bo` what the target string of tessera.build() names (support/target.h: "llvm",
/// "llvm -mcpu=skylake-avx512", "cuda -arch=sm_80", ...) and, when bo.db_path is set, the key
/// records are looked up for, as `tessera build --target` does. A cuda target without -arch
/// gets GPU 0's architecture, else sm_90 (a build needs no GPU). Throws UserError naming a
/// malformed target.
void set_build_target(const std::string& target, compile::BuildOptions& bo);

/// What tessera.build() passes down (its documentation says what each field means).
struct BuildRequest {
    std::string model;
    std::string output;
    std::optional<std::string> db; ///< nullopt: no tuning database
    std::string target = "llvm";
    std::string precision = "fp32";
    int opt_level = compile::kDefaultOptLevel;
    std::map<std::string, std::vector<int64_t>> input_shapes;
};

/// Builds request.model into the shared library request.output, as `tessera build` does
/// (without its coverage table), and returns request.output. Throws UserError for a bad
/// option or model, naming the value.
std::string build_model(const BuildRequest& request);

/// A built model library loaded into this process, with one instance of its model: what
/// tessera.Model wraps. Runs take and give numpy arrays.
class Model {
  public:
    /// Loads the library at `path` (RTLD_LOCAL) and creates an instance. `numpy_dtype` maps a
    /// TesseraDType code to the numpy dtype that holds its elements. Throws UserError naming
    /// the path when the library cannot be loaded or its model not created.
    Model(const std::string& path, nb::callable numpy_dtype);
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const std::string& name() const { return name_; }
    const std::string& target() const { return target_; }
    const std::string& path() const;
    /// (name, numpy dtype, shape tuple) of each input, in the model's order.
    nb::list inputs() const { return describe(inputs_); }
    nb::list outputs() const { return describe(outputs_); }

    /// Threads of the model's parallel loops; 0: one per physical core. Throws UserError for a
    /// count outside 0..1024.
    void set_num_threads(int n);

    /// Runs the model on `feeds` (a dict name -> array; see tessera.Model.run) and returns a
    /// new dict name -> numpy array of its outputs. Throws UserError naming the tensor for a
    /// missing or unknown name, a wrong dtype or shape, and with the model's message when the
    /// run fails.
    nb::dict run(nb::handle feeds);

  private:
    /// One input or output with the Python objects a run needs, made once at load.
    struct Tensor {
        std::string name;
        nb::str key;      ///< name as a Python str (the dict key)
        nb::object dtype; ///< numpy dtype
        nb::tuple shape;  ///< ints
        std::vector<int64_t> dims;
        std::string shape_text; ///< "(1, 784)"
    };
    static nb::list describe(const std::vector<Tensor>& ts);
    /// The error for a feeds dict that lacks none of the inputs but has other keys.
    [[noreturn]] void fail_unknown_input(nb::handle feeds) const;

    std::unique_ptr<cli::ModelLibrary> library_; // outlives instance_
    std::unique_ptr<cli::ModelInstance> instance_;
    std::string name_, target_;
    std::vector<Tensor> inputs_, outputs_;
    nb::object ndarray_type_, asarray_, ascontiguousarray_, empty_;
    nb::str dtype_attr_{"dtype"};
    /// One instance must not run on two threads at once; runs release the GIL.
    std::mutex run_mutex_;
};

} // namespace tessera::python
