/* The C API of a model built by `tessera build`.
 *
 * A built model is one shared library (model.so) that holds the kernels, the weights, the
 * memory plan and the call sequence, and exports the functions below (and nothing else). Link
 * a program against it (cc main.c ./model.so) or dlopen() it and look the functions up.
 *
 *   TesseraModel* m = NULL;
 *   if (tessera_model_create(&m) != 0) { fprintf(stderr, "%s\n", tessera_model_last_error()); }
 *   TesseraTensorInfo info;
 *   tessera_model_input_info(m, 0, &info);    // name, dtype, rank, shape
 *   const void* inputs[1] = {x};               // dense, C order, the declared dtype and shape
 *   void* outputs[1] = {y};
 *   tessera_model_run(m, inputs, outputs);
 *   tessera_model_free(m);
 *
 * Instances are independent: several may exist at once (of one model or of different model
 * libraries in one process), each with its own intermediate memory. One instance must not run
 * on two threads at once; different instances may. Functions returning int return 0 on success
 * and -1 on failure, with the reason in tessera_model_last_error().
 */
#ifndef TESSERA_RUNTIME_TESSERA_MODEL_H
#define TESSERA_RUNTIME_TESSERA_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API; a model library and the program using it must agree. */
#define TESSERA_MODEL_ABI_VERSION 1

typedef struct TesseraModel TesseraModel;

/* Element types of inputs and outputs (values never change). */
typedef enum {
    TESSERA_F32 = 1,
    TESSERA_F64 = 2,
    TESSERA_I32 = 3,
    TESSERA_I64 = 4,
    TESSERA_BOOL = 5, /* one byte, 0 or 1 */
    TESSERA_F16 = 6,
    TESSERA_I8 = 7,
    TESSERA_U8 = 8,
    TESSERA_I16 = 9,
    TESSERA_U16 = 10,
    TESSERA_U32 = 11,
    TESSERA_U64 = 12,
    TESSERA_BF16 = 13, /* bfloat16: the top 16 bits of an IEEE binary32 */
    /* The narrow types: one element per byte, its code in the low bits (as ml_dtypes holds
       them; ONNX's names): 8-bit floats, a 4-bit float, 4- and 2-bit integers. */
    TESSERA_F8E4M3FN = 14,
    TESSERA_F8E4M3FNUZ = 15,
    TESSERA_F8E5M2 = 16,
    TESSERA_F8E5M2FNUZ = 17,
    TESSERA_F4E2M1 = 18,
    TESSERA_I4 = 19,
    TESSERA_U4 = 20,
    TESSERA_I2 = 21,
    TESSERA_U2 = 22
} TesseraDType;

/* Describes one input or output. The pointers stay valid until the model is freed. */
typedef struct {
    const char* name;
    int dtype; /* a TesseraDType */
    int rank;
    const int64_t* shape; /* rank entries */
} TesseraTensorInfo;

/* TESSERA_MODEL_ABI_VERSION of the library. */
int tessera_model_abi_version(void);

/* Creates an instance: binds the embedded weights and allocates its intermediate memory. */
int tessera_model_create(TesseraModel** out);

/* Frees an instance; NULL is ignored. */
void tessera_model_free(TesseraModel* model);

/* The name the model was built from (the ONNX file's stem). */
const char* tessera_model_name(const TesseraModel* model);

/* The target the library was built for: "cpu" or "cuda" (a CUDA model runs on GPU 0 through
 * the CUDA driver, loaded at tessera_model_create; without a driver or a device create returns
 * -1 and says why). Needs no instance. "" when the library's plan cannot be read, with the
 * reason in tessera_model_last_error(). */
const char* tessera_model_target(void);

int tessera_model_num_inputs(const TesseraModel* model);
int tessera_model_num_outputs(const TesseraModel* model);

/* Fills *info for input (or output) number `index`; -1 when index is out of range. */
int tessera_model_input_info(const TesseraModel* model, int index, TesseraTensorInfo* info);
int tessera_model_output_info(const TesseraModel* model, int index, TesseraTensorInfo* info);

/* Bytes of the instance's intermediate memory (its arena, allocated once by create); -1 when
 * model is NULL. */
int64_t tessera_model_arena_bytes(const TesseraModel* model);

/* Threads the instance's parallel loops use (the calling thread included); n <= 0 means one
 * per physical core (the default). Takes effect at the next run. */
int tessera_model_set_num_threads(TesseraModel* model, int n);

/* Runs the model: inputs[i] points to input i's data, outputs[i] to a buffer for output i
 * (dense, C order, the declared dtype and shape, any alignment). Inputs are not modified.
 * Output buffers must not overlap inputs or each other. An integer input that indexes a
 * tensor (a Gather's indices, e.g. token ids) must hold values in [-n, n) for the axis of n
 * it indexes: otherwise the run fails before any kernel, naming the input, the element, its
 * value and the node. */
int tessera_model_run(TesseraModel* model, const void* const* inputs, void* const* outputs);

/* Per-call profiling, to see where a model's time goes (`tessera bench --profile`).
 * mode 0: off (the default; runs read no clock). 1: each run adds the wall time of every call
 * of the model's call sequence to that call's total. 2 ("hot"): each call runs twice in a row
 * and the second run is timed, as a kernel benchmark with warm caches would time it; outputs of
 * such runs are unspecified (a call that updates a buffer in place computes twice). Setting a
 * mode clears the totals; -1 for another mode. */
int tessera_model_set_profiling(TesseraModel* model, int mode);

/* Calls in one run of the model (kernel launches and plan copies); -1 when model is NULL. */
int tessera_model_num_calls(const TesseraModel* model);

/* What one call of the sequence is and the time it took, summed over the runs since
 * tessera_model_set_profiling. The kernel name stays valid until the model is freed. */
typedef struct {
    const char* kernel; /* the kernel's symbol, or "copy" for a plain copy */
    double seconds;     /* total over `runs` runs */
    int64_t runs;
} TesseraCallProfile;

/* Fills *profile for call number `index`; -1 when index is out of range. */
int tessera_model_call_profile(const TesseraModel* model, int index, TesseraCallProfile* profile);

/* What call number `index` computes, e.g. "group 3 conv2d_nchwc+relu f32[1,4,55,55,16]" (its
 * fused group, pattern and output type) or "copy to output y"; valid until the model is freed.
 * NULL when model is NULL or index is out of range (the message says which). */
const char* tessera_model_call_label(const TesseraModel* model, int index);

/* The arithmetic of call number `index`: *flops gets the operations of one run of it (2 per
 * multiply-add; 0 for a copy), *precision what its products compute on ("int8", "bf16", "f32",
 * ...; "" for a copy; valid until the model is freed). -1 when model is NULL or index is out of
 * range (the message says which). */
int tessera_model_call_work(const TesseraModel* model, int index, int64_t* flops,
                            const char** precision);

/* The message of the calling thread's last failure ("" when none). */
const char* tessera_model_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_RUNTIME_TESSERA_MODEL_H */
