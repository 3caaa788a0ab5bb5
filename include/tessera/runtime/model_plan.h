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
//                            (CPU plans; empty in a CUDA model library)
//   tessera_model_cubins     CUDA plans: plan.cubin_bytes bytes holding every module's cubin at
//                            its PlanCudaModule::cubin_offset (absent from CPU libraries)
//
// This header has no tessera dependencies: the runtime is linked into built models alone.
// Errors are std::runtime_error with a one-line message (the C API turns them into its error
// string).
#pragma once

#include <array>
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
extern const unsigned char tessera_model_cubins[];
} // extern "C"

namespace tessera::runtime {

/// The plan format this runtime reads and the compiler writes; parse_plan refuses others.
/// Version 2 added the target and the CUDA modules; version 3 the checksums of the weights
/// and of the encoded plan itself; version 4 the index checks of the inputs; version 5 each
/// call's operations and product precision.
constexpr uint32_t kModelPlanVersion = 5;

/// What the kernels of a plan run on; the C API picks the executor by it.
enum class PlanTarget : int32_t {
    Cpu = 0,  ///< Host functions in tessera_model_kernels (ModelExecutor).
    Cuda = 1, ///< Cubins in tessera_model_cubins run through the CUDA driver (CudaModelExecutor).
};

/// "cpu", "cuda".
const char* plan_target_name(PlanTarget t);

/// Element types; the values equal TesseraDType's in tessera_model.h and never change.
enum class PlanDType : int32_t {
    F32 = 1,
    F64 = 2,
    I32 = 3,
    I64 = 4,
    Bool = 5,
    F16 = 6,
    I8 = 7,
    U8 = 8,
    I16 = 9,
    U16 = 10,
    U32 = 11,
    U64 = 12,
    BF16 = 13,
    F8E4M3FN = 14, ///< the narrow types: one code per byte (TesseraDType's comment)
    F8E4M3FNUZ = 15,
    F8E5M2 = 16,
    F8E5M2FNUZ = 17,
    F4E2M1 = 18,
    I4 = 19,
    U4 = 20,
    I2 = 21,
    U2 = 22
};

/// Bytes per element (Bool: 1). Throws std::runtime_error for a value outside the enum.
int64_t plan_dtype_bytes(PlanDType t);

/// "f32", "f64", "i32", "i64", "bool", "f16", "i8", "u8", "i16", "u16", "u32", "u64", "bf16",
/// "f8e4m3fn", ..., "u2" ("?" for a value outside the enum).
const char* plan_dtype_name(PlanDType t);

/// Where a tensor's bytes live while the model runs.
enum class TensorStorage : int32_t {
    Input = 0,  ///< The caller's buffer of model input number `offset`.
    Output = 1, ///< The caller's buffer of model output number `offset`.
    Weight = 2, ///< tessera_model_weights + offset (read-only).
    Arena = 3,  ///< The model instance's arena + offset (intermediates, reused per memory plan).
};

struct PlanTensor {
    std::string name; ///< The graph value's name (inputs/outputs: the ONNX name).
    PlanDType dtype = PlanDType::F32;
    std::vector<int64_t>
        shape; ///< The logical shape (for inputs and outputs: what the caller passes).
    TensorStorage storage = TensorStorage::Arena;
    int64_t offset = 0; ///< See TensorStorage; byte offsets are multiples of 64.
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
    /// The arithmetic of one run of the call (te::count_flops of its task: 2 per multiply-add)
    /// and what its products compute on (te::product_precision: "int8", "bf16", "f32", ...);
    /// 0 and "" for a copy.
    int64_t flops = 0;
    std::string precision;
};

/// One launch of a CUDA module: a `__global__` function of its cubin and its configuration.
struct PlanCudaLaunch {
    std::string symbol;                    ///< The extern "C" kernel name inside the cubin.
    std::array<int64_t, 3> grid{1, 1, 1};  ///< Blocks in x, y, z; each in [1, 2^31 - 1].
    std::array<int64_t, 3> block{1, 1, 1}; ///< Threads in x, y, z; product at most 1024.
    int64_t shared_bytes = 0;              ///< Dynamic shared memory (the codegen uses static: 0).
};

/// The device code of one plan kernel (a task): its cubin and its launches, run in order, each
/// with the arguments of the call (the call's tensors' device pointers) followed by one device
/// pointer per workspace.
struct PlanCudaModule {
    int64_t cubin_offset = 0;             ///< Into tessera_model_cubins.
    int64_t cubin_bytes = 0;              ///< > 0.
    std::vector<PlanCudaLaunch> launches; ///< At least one.
    std::vector<int64_t> workspace_bytes; ///< Device temporaries, allocated once per instance.
};

/// A model input whose values index an axis of a tensor (a Gather's indices, graph/
/// index_inputs.h). A compiled gather clamps an index into range, so a run first checks the
/// input's values instead (check_index_inputs).
struct PlanIndexCheck {
    int32_t input = 0;    ///< Position in ModelPlan::inputs; an integer tensor.
    int64_t bound = 0;    ///< Valid values: -bound <= v < bound.
    std::string consumer; ///< The indexing node, for the error ("node 'g' (Gather) (axis 0 ...").
};

struct ModelPlan {
    std::string model_name;
    std::vector<PlanTensor> tensors;
    std::vector<int32_t> inputs;      ///< Tensor ids of the model inputs, in the model's order.
    std::vector<int32_t> outputs;     ///< Tensor ids of the model outputs, in the model's order.
    std::vector<std::string> kernels; ///< Kernel symbol names, in tessera_model_kernels order.
    std::vector<PlanCall> calls;      ///< Run in order.
    int64_t arena_bytes = 0;          ///< Size of one instance's arena.
    int64_t weight_bytes = 0;         ///< Size of tessera_model_weights.
    PlanTarget target = PlanTarget::Cpu;
    /// CUDA plans only (empty / 0 for CPU plans): the architecture the cubins are for
    /// ("sm_90"), one module per entry of `kernels` (same order), and the size of
    /// tessera_model_cubins.
    std::string cuda_arch;
    std::vector<PlanCudaModule> cuda_modules;
    int64_t cubin_bytes = 0;
    /// content_checksum (checksum.h) of the weight_bytes of tessera_model_weights, as built.
    uint64_t weights_checksum = 0;
    std::vector<PlanIndexCheck> index_checks; ///< At most one per input.
};

/// Checks a plan's internal consistency: tensor ids in range, inputs/outputs with the right
/// storage and distinct offsets 0..n-1, weight and arena ranges inside weight_bytes /
/// arena_bytes, bytes >= product(shape) * element size, kernel indices in range, copies with
/// two args of equal bytes; a CPU plan has no CUDA fields, a CUDA plan an "sm_<digits>" arch,
/// one module per kernel with a non-empty cubin range inside cubin_bytes, at least one launch
/// of a named symbol with grid and block extents >= 1 (at most 1024 threads per block, grid x
/// below 2^31, y and z below 65536), non-negative shared and workspace bytes; index checks of
/// distinct integer inputs with bounds >= 0. Throws
/// std::runtime_error naming the first problem.
void validate_plan(const ModelPlan& plan);

/// Checks every index input of `plan` (PlanIndexCheck) in `inputs` (the caller's buffers, in
/// model input order, as tessera_model_run receives them). Throws std::runtime_error naming the
/// input, the first offending element (its multi-index), its value, the valid range and the
/// indexing node.
void check_index_inputs(const ModelPlan& plan, const void* const* inputs);

/// A compact, versioned byte encoding of the plan (little-endian; starts with the magic
/// "TSRPLAN" and kModelPlanVersion, ends with the content_checksum of the bytes before it).
/// Pre: validate_plan passes.
std::string serialize_plan(const ModelPlan& plan);

/// The inverse of serialize_plan; validates the result. Throws std::runtime_error on a wrong
/// magic, another version (naming both), a checksum that does not match (corrupt bytes),
/// truncated or malformed bytes.
ModelPlan parse_plan(const void* data, size_t size);

} // namespace tessera::runtime
