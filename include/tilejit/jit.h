/* The embedding API: compile a kernel once, launch it many times.
 *
 *   tj_jit *j = tj_jit_open(TJ_DEVICE_CUDA, 0, &err);
 *   tj_fn *f = tj_jit_compile(j, &(tj_compile_request){
 *       .file = "softmax.tj", .source = src, .len = n, .kernel = "softmax",
 *       .args = args, .nargs = 2}, &err);
 *   tj_fn_launch(f, args, 2, stream, &err);   // any number of times
 *
 * A tj_fn is specialized on what the example arguments of the request showed:
 * the sizes of dims used as tile extents, unit innermost strides, 16-byte
 * aligned bases, dims divisible by 16. Launching it with arguments that break
 * one of those is an error naming the argument (compile another tj_fn). The
 * launch itself allocates nothing and may be called from several threads.
 */
#ifndef TILEJIT_JIT_H
#define TILEJIT_JIT_H

#include "tilejit/cuda.h"
#include "tilejit/interp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tj_device_kind { TJ_DEVICE_CPU, TJ_DEVICE_CUDA } tj_device_kind;

typedef struct tj_jit tj_jit;
typedef struct tj_fn tj_fn;

/* CPU: the reference interpreter (always available). CUDA: device `ordinal`;
 * NULL with the reason when there is no driver or device. */
tj_jit *tj_jit_open(tj_device_kind kind, int ordinal, tj_rt_error *err);
/* Frees every tj_fn compiled through j. */
void tj_jit_close(tj_jit *j);
tj_device_kind tj_jit_device(const tj_jit *j);
tj_cuda *tj_jit_cuda(const tj_jit *j); /* NULL on the CPU */

typedef struct tj_compile_request {
    const char *file;        /* for diagnostics */
    const char *source;
    size_t len;
    const char *kernel;
    const tj_binding *params; /* tile parameters to fix (-D); others: first valid config */
    uint32_t nparams;
    const tj_arg *args;       /* example arguments: shapes, strides, alignment */
    uint32_t nargs;
    const char *arch;         /* PTX arch; NULL: from the device (sm_90a, sm_80) */
} tj_compile_request;

/* Front end, passes, lowering, code generation and module load. Errors carry
 * the rendered diagnostics (file:line:col ...) or the driver's message. */
tj_fn *tj_jit_compile(tj_jit *j, const tj_compile_request *req, tj_rt_error *err);

int tj_fn_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err);

/* What was built, for tools and tests (NULL where it does not apply). */
const tj_kernel *tj_fn_tile_ir(const tj_fn *f);
const tj_kernel *tj_fn_simt_ir(const tj_fn *f);
const char *tj_fn_ptx(const tj_fn *f);

#ifdef __cplusplus
}
#endif
#endif
