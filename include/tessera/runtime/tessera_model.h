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
    TESSERA_U8 = 8
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
 * Output buffers must not overlap inputs or each other. */
int tessera_model_run(TesseraModel* model, const void* const* inputs, void* const* outputs);

/* The message of the calling thread's last failure ("" when none). */
const char* tessera_model_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_RUNTIME_TESSERA_MODEL_H */
