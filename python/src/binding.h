// The parts of the Python extension tessera._tessera (python/tessera/__init__.py is its public
// face): building a model library, tuning a model into a database, and a loaded model that runs
// on numpy arrays.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "tessera/compile/model_compiler.h"
#include "tessera/graph/tensor_data.h"

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

/// The input_shapes argument of build() and tune() as import shapes. Throws UserError naming
/// the input for a dimension that is not positive.
std::map<std::string, graph::Shape>
checked_input_shapes(const std::map<std::string, std::vector<int64_t>>& shapes);

/// What tessera.build() passes down (its documentation says what each field means).
struct BuildRequest {
    std::string model;
    std::string output;
    std::optional<std::string> db; ///< nullopt: no tuning database
    std::string target = "llvm";
    std::string precision = "fp32";
    int opt_level = compile::kDefaultOptLevel;
    std::map<std::string, std::vector<int64_t>> input_shapes;
    /// The runtime archive the library links (compile::BuildOptions::runtime_archive): the
    /// package's own copy; empty: the one this tessera was built with.
    std::string runtime_archive;
};

/// What build_model made: the library and where each task's schedule came from.
struct BuildResult {
    std::string output;
    std::vector<compile::TaskCoverage> coverage; ///< In task order.
};

/// Builds request.model into the shared library request.output, as `tessera build` does
/// (without printing its coverage table). Throws UserError for a bad option or model, naming
/// the value.
BuildResult build_model(const BuildRequest& request);

/// The coverage rows of a build as dicts (task, pattern, workload_key, count, source: the lookup
/// tier that served, "default" when none did; record_id; note: why no record served).
nb::list coverage_list(const std::vector<compile::TaskCoverage>& rows);

/// What tessera.tune() passes down (its documentation says what each field means).
struct TuneRequest {
    std::string model;
    std::string db;
    std::string target = "llvm";
    std::string precision = "fp32";
    int opt_level = compile::kDefaultOptLevel;
    uint64_t seed = 0;
    std::optional<int> trials;         ///< nullopt: the command's default, or none with a budget
    std::optional<double> time_budget; ///< Seconds; nullopt: no time limit.
    std::map<std::string, std::vector<int64_t>> input_shapes;
    std::string worker; ///< The package's tessera-measure-worker.
};

/// Tunes request.model into request.db as `tessera tune MODEL` does (compile::
/// prepare_model_tuning and tune_model), with the GIL released; `report` (None: no reports) is
/// called with the GIL held, with a dict per scheduler report (round, round_done, task,
/// task_name, tasks, trials_done, trials_total, estimated_ms, elapsed_secs, eta_secs). An
/// exception it raises stops tuning at once and propagates; a KeyboardInterrupt (Ctrl-C, seen
/// at the next report) lets the round in progress commit first, a second one stops at once.
/// Returns the summary as a dict (the fields of `tessera tune --json` that describe the run).
/// Throws UserError as the command does, with its one-line messages.
nb::dict tune_model(const TuneRequest& request, nb::handle report);

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
