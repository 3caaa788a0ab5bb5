// Test helpers for built model libraries: load one with dlopen and run it through its C API
// (runtime/tessera_model.h), read a shared model's reference data set, compare outputs.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/graph/tensor_data.h"
#include "tessera/runtime/tessera_model.h"

namespace tessera::testing {

/// /work/shared/models (TESSERA_SOURCE_DIR/../shared/models).
std::string shared_models_dir();

/// The folder of a model: a shared one by name, or the bundled models/mobilenet_tiny.
std::string model_dir(const std::string& name);

/// A model library loaded with dlopen(RTLD_NOW | RTLD_LOCAL) and one instance of it. Throws
/// std::runtime_error with dlerror() or tessera_model_last_error() on failure.
class LoadedModel {
  public:
    explicit LoadedModel(const std::string& so_path);
    ~LoadedModel();
    LoadedModel(const LoadedModel&) = delete;
    LoadedModel& operator=(const LoadedModel&) = delete;

    std::string name() const;
    std::vector<TesseraTensorInfo> inputs() const;
    std::vector<TesseraTensorInfo> outputs() const;
    void set_num_threads(int n);
    /// Runs on `inputs` (dtypes and shapes as declared; checked) and returns the outputs.
    std::vector<graph::TensorData> run(const std::vector<graph::TensorData>& inputs);
    /// tessera_model_run on buffers the caller owns (as the C API takes them, unchecked):
    /// allocates nothing, so a loop of runs leaves the process's memory to the runtime alone.
    void run_raw(const void* const* inputs, void* const* outputs);

  private:
    template <typename F> F sym(const char* name) const;
    void check(int rc, const char* what) const;

    void* handle_ = nullptr;
    TesseraModel* model_ = nullptr;
};

/// input_<i> (or output_<i>) of test_data_set_<set> in a shared model folder, .npy preferred.
std::vector<graph::TensorData> read_data_set(const std::string& model_dir, int set,
                                             const std::string& kind);

/// Every element within |got - ref| <= atol + rtol |ref| (and equal dtypes and shapes).
::testing::AssertionResult outputs_match(const std::vector<graph::TensorData>& got,
                                         const std::vector<graph::TensorData>& ref,
                                         double rtol = 1e-4, double atol = 1e-5);

/// Loads the library at so_path, runs it on one random f32 input of `input_shape` per seed
/// (uniform in [-1, 1], as random_floats) and compares its outputs with the reference
/// evaluator's on the ONNX model at onnx_path (outputs_match's tolerances); a failure names
/// the seed. For models of one f32 input.
::testing::AssertionResult library_matches_evaluator(const std::string& so_path,
                                                     const std::string& onnx_path,
                                                     const graph::Shape& input_shape,
                                                     const std::vector<uint64_t>& seeds);

/// A fresh directory under the test temp dir, removed when this goes away.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string& stem);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    /// Writes `bytes` (a model's, say) to file(name) and returns that path.
    std::string write(const std::string& name, const std::string& bytes) const;

  private:
    std::string path_;
};

/// Runs a shell command; returns its exit code (-1 when killed) and its stdout and stderr.
struct CommandResult {
    int code = -1;
    std::string out, err;
};
CommandResult run_command(const std::string& cmd, const std::string& scratch_prefix);

} // namespace tessera::testing
