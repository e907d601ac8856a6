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

#include "tilejit/autotune.h"
#include "tilejit/cache.h"
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

/* ---- the cache (tilejit/cache.h) and the tuner (tilejit/autotune.h) ----
 *
 * Compiling the same request again returns the same tj_fn from the memory
 * cache without compiling (a few microseconds); a request that specializes
 * to an already compiled kernel shares it too. On CUDA, compiled kernels
 * (PTX and cubin) also go to the disk cache, so a later process runs only
 * the front end and loads the cubin. */

/* Gives up the caller's hold on f (optional: without it f lives until
 * tj_jit_close). f may stay in the memory cache, and be returned again. */
void tj_fn_release(tj_fn *f);

/* How tile parameters that a request leaves unbound are chosen
 * (default TJ_TUNE_STORED: a stored tuning winner, never timing). With
 * TJ_TUNE_MISSING the example arguments' tensors must point to host memory
 * with representative data (or be NULL: random data). */
void tj_jit_set_tune_mode(tj_jit *j, tj_tune_mode mode);

typedef struct tj_jit_stats {
    uint64_t memory_hits; /* compiles answered from the memory cache */
    uint64_t disk_hits;   /* kernels loaded from the disk cache */
    uint64_t compiles;    /* kernels lowered and code-generated */
    uint64_t tunings;     /* compiles that ran the tuner */
} tj_jit_stats;
void tj_jit_get_stats(tj_jit *j, tj_jit_stats *out);
/* The disk cache (NULL on the cpu), e.g. for its warning handler. */
tj_cache *tj_jit_disk_cache(tj_jit *j);
/* The compiled CUDA function (NULL on the cpu), e.g. for its attributes. */
const tj_cuda_function *tj_fn_cuda_function(const tj_fn *f);
/* Threads per program and shared memory bytes (0 on the cpu). */
uint32_t tj_fn_threads(const tj_fn *f);
uint32_t tj_fn_smem_bytes(const tj_fn *f);

/* The parameters of `kernel` in `source` as declared, for bindings that must
 * put scalars in tj_arg's union by dtype: dtypes[i] and ranks[i] (0 for a
 * scalar) for the first `max`. Returns the parameter count, or -1 when the
 * source does not parse or has no such kernel (err says why). */
int tj_source_params(const char *source, size_t len, const char *kernel, int *dtypes, int *ranks, int max,
                     tj_rt_error *err);

/* What was built, for tools and tests (NULL where it does not apply; the
 * SIMT IR is not rebuilt for a kernel loaded from the disk cache). */
const tj_kernel *tj_fn_tile_ir(const tj_fn *f);
const tj_kernel *tj_fn_simt_ir(const tj_fn *f);
const char *tj_fn_ptx(const tj_fn *f);

#ifdef __cplusplus
}
#endif
#endif
