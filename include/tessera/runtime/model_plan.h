// The description of a built model that its shared library carries: its tensors, kernels, call
// order and memory plan. The model compiler (compile layer) writes it; the executor of the
// runtime reads it when a model is created through the C API (tessera_model.h).
//
// A built model library defines these symbols (the generated part, written by the compiler),
// and links the runtime archive, whose C API reads them:
//   tessera_model_plan       the bytes of serialize_plan(plan)
//   tessera_model_plan_size  their number
//   tessera_model_weights    plan.weight_bytes bytes of weights, 64-byte aligned, each weight at
//                            its PlanTensor::offset, already in the layout its kernels read
//   tessera_model_kernels    one `void fn(void** args)` per plan.kernels entry, in that order
//
// This header has no tessera dependencies: the runtime is linked into built models alone.
// Errors are std::runtime_error with a one-line message (the C API turns them into its error
// string).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" {
/// The kernel calling convention of generated code: args[i] is the data pointer of the
/// kernel's i-th parameter.
typedef void (*TesseraKernelFn)(void** args);
extern const unsigned char tessera_model_plan[];
extern const uint64_t tessera_model_plan_size;
extern const unsigned char tessera_model_weights[];
extern const TesseraKernelFn tessera_model_kernels[];
} // extern "C"

namespace tessera::runtime {

/// The plan format this runtime reads and the compiler writes; parse_plan refuses others.
constexpr uint32_t kModelPlanVersion = 1;

/// Element types; the values equal TesseraDType's in tessera_model.h and never change.
enum class PlanDType : int32_t { F32 = 1, F64 = 2, I32 = 3, I64 = 4, Bool = 5, F16 = 6, I8 = 7, U8 = 8 };

/// Bytes per element (Bool: 1). Throws std::runtime_error for a value outside the enum.
int64_t plan_dtype_bytes(PlanDType t);

/// "f32", "f64", "i32", "i64", "bool", "f16", "i8", "u8".
const char* plan_dtype_name(PlanDType t);

/// Where a tensor's bytes live while the model runs.
enum class TensorStorage : int32_t {
    Input = 0,  ///< The caller's buffer of model input number `offset`.
    Output = 1, ///< The caller's buffer of model output number `offset`.
    Weight = 2, ///< tessera_model_weights + offset (read-only).
    Arena = 3,  ///< The model instance's arena + offset (intermediates, reused per memory plan).
};

struct PlanTensor {
    std::string name;            ///< The graph value's name (inputs/outputs: the ONNX name).
    PlanDType dtype = PlanDType::F32;
    std::vector<int64_t> shape;  ///< The logical shape (for inputs and outputs: what the caller passes).
    TensorStorage storage = TensorStorage::Arena;
    int64_t offset = 0;          ///< See TensorStorage; byte offsets are multiples of 64.
    /// Bytes the storage holds: product(shape) * element size, or more for a weight stored in
    /// a packed (padded) layout.
    int64_t bytes = 0;
};

/// One step of a run.
struct PlanCall {
    /// Index into ModelPlan::kernels, or -1 for a copy of args[0]'s bytes into args[1] (a model
    /// output that is an input or a weight, or two outputs of one value).
    int32_t kernel = -1;
    std::vector<int32_t> args; ///< Tensor ids, in the kernel's parameter order.
    std::string label;         ///< For profiling and errors, e.g. "group 3 conv2d+add+relu".
};

struct ModelPlan {
    std::string model_name;
    std::vector<PlanTensor> tensors;
    std::vector<int32_t> inputs;  ///< Tensor ids of the model inputs, in the model's order.
    std::vector<int32_t> outputs; ///< Tensor ids of the model outputs, in the model's order.
    std::vector<std::string> kernels; ///< Kernel symbol names, in tessera_model_kernels order.
    std::vector<PlanCall> calls;      ///< Run in order.
    int64_t arena_bytes = 0;          ///< Size of one instance's arena.
    int64_t weight_bytes = 0;         ///< Size of tessera_model_weights.
};

/// Checks a plan's internal consistency: tensor ids in range, inputs/outputs with the right
/// storage and distinct offsets 0..n-1, weight and arena ranges inside weight_bytes /
/// arena_bytes, bytes >= product(shape) * element size, kernel indices in range, copies with
/// two args of equal bytes. Throws std::runtime_error naming the first problem.
void validate_plan(const ModelPlan& plan);

/// A compact, versioned byte encoding of the plan (little-endian; starts with the magic
/// "TSRPLAN" and kModelPlanVersion). Pre: validate_plan passes.
std::string serialize_plan(const ModelPlan& plan);

/// The inverse of serialize_plan; validates the result. Throws std::runtime_error on a wrong
/// magic, another version (naming both), truncated or malformed bytes.
ModelPlan parse_plan(const void* data, size_t size);

} // namespace tessera::runtime
