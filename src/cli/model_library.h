// A model library built by `tessera build`, loaded into this process with dlopen, and
// instances of its model: the C API of tessera_model.h behind RAII classes that throw
// UserError with clear messages (the path, the model's own error text).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/runtime/tessera_model.h"

namespace tessera::cli {

/// An input or output of a model, copied out of TesseraTensorInfo.
struct ModelTensorInfo {
    std::string name;
    int dtype = 0; ///< A TesseraDType.
    std::vector<int64_t> shape;
};

/// "f32", "i64", ... for a TesseraDType; "dtype N" for an unknown value.
std::string model_dtype_name(int dtype);
/// Bytes per element of a TesseraDType (0 for an unknown value).
int64_t model_dtype_bytes(int dtype);
/// "f32[1,784]".
std::string describe(const ModelTensorInfo& t);
/// Bytes of a dense buffer of t.
int64_t dense_bytes(const ModelTensorInfo& t);

/// A loaded model library (RTLD_NOW | RTLD_LOCAL, so several may be loaded at once and their
/// symbols never mix). Unloaded by the destructor; instances must be freed first.
class ModelLibrary {
  public:
    /// Loads `path` (a path without '/' is taken relative to the working directory, not
    /// searched for). Throws UserError naming the path when the file is missing, truncated,
    /// built for another machine, cannot be loaded, lacks a C API function, or was built for
    /// another TESSERA_MODEL_ABI_VERSION.
    explicit ModelLibrary(const std::string& path);
    ~ModelLibrary();
    ModelLibrary(const ModelLibrary&) = delete;
    ModelLibrary& operator=(const ModelLibrary&) = delete;

    const std::string& path() const { return path_; }

    /// The library's C API functions.
    struct Api {
        int (*abi_version)(void);
        int (*create)(TesseraModel**);
        void (*free)(TesseraModel*);
        const char* (*name)(const TesseraModel*);
        int (*num_inputs)(const TesseraModel*);
        int (*num_outputs)(const TesseraModel*);
        int (*input_info)(const TesseraModel*, int, TesseraTensorInfo*);
        int (*output_info)(const TesseraModel*, int, TesseraTensorInfo*);
        int (*set_num_threads)(TesseraModel*, int);
        int (*run)(TesseraModel*, const void* const*, void* const*);
        const char* (*last_error)(void);
        /// Optional (null in a library that lacks them).
        int64_t (*arena_bytes)(const TesseraModel*);
        int (*set_profiling)(TesseraModel*, int);
        int (*num_calls)(const TesseraModel*);
        int (*call_profile)(const TesseraModel*, int, TesseraCallProfile*);
        /// Optional: libraries built before it have no call labels.
        const char* (*call_label)(const TesseraModel*, int);
        /// Optional: "cpu" or "cuda" (libraries built before it lack it).
        const char* (*target)(void);
        /// Optional: libraries built before it do not say their calls' arithmetic.
        int (*call_work)(const TesseraModel*, int, int64_t*, const char**);
    };
    const Api& api() const { return api_; }

  private:
    std::string path_;
    void* handle_ = nullptr;
    Api api_{};
};

/// One instance of a loaded model: tessera_model_create ... tessera_model_free.
class ModelInstance {
  public:
    /// Creates an instance. Throws UserError with the library's path and error text.
    explicit ModelInstance(const ModelLibrary& lib);
    ~ModelInstance();
    ModelInstance(const ModelInstance&) = delete;
    ModelInstance& operator=(const ModelInstance&) = delete;

    std::string name() const;
    const std::vector<ModelTensorInfo>& inputs() const { return inputs_; }
    const std::vector<ModelTensorInfo>& outputs() const { return outputs_; }
    /// Bytes of the instance's arena, or -1 when the library does not say.
    int64_t arena_bytes() const;

    /// Threads of the instance's parallel loops (<= 0: one per physical core).
    void set_num_threads(int n);
    /// Runs the model (buffers as in tessera_model_run). Throws UserError with the model's
    /// error text when the run fails.
    void run(const void* const* inputs, void* const* outputs);

    /// Whether the library has the profiling entry points (libraries built before them lack it).
    bool can_profile() const;
    /// tessera_model_set_profiling (0 off, 1 sequence, 2 hot). Throws UserError when the
    /// library cannot profile.
    void set_profiling(int mode);
    /// One call of the model's sequence and its summed time since set_profiling.
    struct CallProfile {
        std::string kernel;
        std::string label; ///< What the call computes ("" from a library without labels).
        double seconds = 0;
        int64_t runs = 0;
        /// Operations of one run and product precision (0 and "" for copies, and from a
        /// library that does not say: tessera_model_call_work).
        int64_t flops = 0;
        std::string precision;
    };
    std::vector<CallProfile> call_profiles() const;

  private:
    /// Frees the half-made instance and throws UserError with the library's error text.
    [[noreturn]] void fail_create(const std::string& what);

    const ModelLibrary& lib_;
    TesseraModel* model_ = nullptr;
    std::vector<ModelTensorInfo> inputs_, outputs_;
};

} // namespace tessera::cli
