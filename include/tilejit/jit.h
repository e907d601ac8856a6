/* The embedding API: compile a kernel once, launch it many times.
 *
 *   tj_jit *j = tj_jit_open(TJ_DEVICE_CUDA, 0, &err);
 *   tj_fn *f = tj_jit_compile(j, &(tj_compile_request){
 *       .file = "softmax.tj", .source = src, .len = n, .kernel = "softmax",
 *       .args = args, .nargs = 2}, &err);
 *   tj_fn_launch(f, args, 2, stream, &err);   // any number of times
 *
 * The contract: a tj_fn never runs where it is invalid. It carries what
 * its configuration relies on: the `where` clauses that chose its tile
 * parameters, the sizes of dims used as tile extents, and (CUDA) the facts
 * the example arguments showed (unit innermost strides, 16-byte aligned
 * bases, dims and strides divisible by 16). A launch whose shapes differ
 * from the last that passed checks them all again; one that breaks any is
 * an error naming the clause or argument and the values. Launches with the
 * shapes of the last pass skip the checks (only alignment is checked each
 * time). To launch a kernel at any shape, use tj_dispatch
 * (tilejit/dispatch.h), which compiles what each signature needs. The
 * launch allocates nothing and may be called from several threads.
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

/* CPU: native code from the LLVM back end (tilejit/cpu.h) when tilejit
 * was built with LLVM 22, else the reference interpreter; INTERP: always
 * the reference interpreter (the oracle). */
typedef enum tj_device_kind { TJ_DEVICE_CPU, TJ_DEVICE_CUDA, TJ_DEVICE_INTERP } tj_device_kind;

typedef struct tj_jit tj_jit;
typedef struct tj_fn tj_fn;

/* CPU and INTERP: always available (CPU falls back to the interpreter
 * without LLVM: tj_jit_native_cpu says which). CUDA: device `ordinal`;
 * NULL with the reason when there is no driver or device. */
tj_jit *tj_jit_open(tj_device_kind kind, int ordinal, tj_rt_error *err);
/* Frees every tj_fn compiled through j. */
void tj_jit_close(tj_jit *j);
tj_device_kind tj_jit_device(const tj_jit *j);
/* 1 when j runs native cpu code (TJ_DEVICE_CPU with LLVM built in). */
int tj_jit_native_cpu(const tj_jit *j);
/* TJ_DEVICE_CPU running the interpreter: why (LLVM missing, or the back
 * end could not start, with its reason); NULL otherwise. */
const char *tj_jit_cpu_fallback(const tj_jit *j);
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
    const char *reason;       /* why it is compiled, for the event handler; NULL: "tj_jit_compile" */
    int quick;                /* a first tier that is replaced soon: on CUDA ptxas at -O1, a shorter compile
                                 of the same results in code that may run slower (a key of its own) */
} tj_compile_request;

/* Front end, passes, lowering, code generation and module load. Errors carry
 * the rendered diagnostics (file:line:col ...) or the driver's message. */
tj_fn *tj_jit_compile(tj_jit *j, const tj_compile_request *req, tj_rt_error *err);

int tj_fn_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err);
/* 0 when f may be launched with these arguments (the launch's checks,
 * without launching); err may be NULL. */
int tj_fn_check(tj_fn *f, const tj_arg *args, uint32_t nargs, tj_rt_error *err);
/* The configuration f was compiled with: every tile parameter, warps and
 * stages included (owned by f). Returns the count. */
uint32_t tj_fn_config(const tj_fn *f, const tj_binding **config);

/* A row-major tensor over `data`: strides from the shape. A rank outside
 * 0..TJ_MAX_RANK gives a tensor every launch refuses. */
tj_tensor tj_tensor_contiguous(void *data, tj_dtype dtype, int rank, const int64_t *shape);

/* ---- events: every compile and tuning, for the embedder ---- */

typedef enum tj_event_kind { TJ_EVENT_COMPILE, TJ_EVENT_TUNE } tj_event_kind;
typedef enum tj_build_source {
    TJ_BUILT,       /* lowered and code-generated (the cpu: front end and passes) */
    TJ_FROM_MEMORY, /* the front end ran; the kernel was compiled before */
    TJ_FROM_DISK,   /* the front end ran; the binary came from the disk cache */
} tj_build_source;

typedef struct tj_event {
    tj_event_kind kind;
    const char *kernel;
    const char *signature; /* the arguments: "X: f32[4,1000], Y: f32[4,1000]" */
    const char *config;    /* the configuration chosen: "BLOCK=1024,warps=4,stages=2" */
    const char *reason;    /* the request's reason, e.g. tj_dispatch's "new signature ..." */
    tj_build_source from;
    double ms;             /* wall time of the compile (a tuning: included) */
} tj_event;

/* Called after every successful compile that was not answered from the
 * memory cache (the memory hits cost microseconds), and after every tuning
 * run, on the compiling thread; the strings live only during the call.
 * NULL: none (the default). */
typedef void (*tj_event_handler)(void *ud, const tj_event *e);
void tj_jit_set_event_handler(tj_jit *j, tj_event_handler handler, void *ud);
/* Hands e to the handler (for tj_dispatch's tunings). */
void tj_jit_emit_event(tj_jit *j, const tj_event *e);

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
void tj_fn_retain(tj_fn *f); /* another hold, for tj_fn_release */

/* How tile parameters that a request leaves unbound are chosen
 * (default TJ_TUNE_STORED: a stored tuning winner, never timing). With
 * TJ_TUNE_MISSING the example arguments' tensors must point to host memory
 * with representative data (or be NULL: random data). */
void tj_jit_set_tune_mode(tj_jit *j, tj_tune_mode mode);
tj_tune_mode tj_jit_tune_mode(tj_jit *j);
int tj_jit_ordinal(const tj_jit *j); /* the CUDA device's; 0 on the cpu */

typedef struct tj_jit_stats {
    uint64_t memory_hits; /* compiles answered from the memory cache */
    uint64_t disk_hits;   /* kernels loaded from the disk cache */
    uint64_t compiles;    /* kernels lowered and code-generated */
    uint64_t tunings;     /* compiles that ran the tuner */
} tj_jit_stats;
void tj_jit_get_stats(tj_jit *j, tj_jit_stats *out);
/* The disk cache (on the cpu: its object code and tuning records; NULL
 * without the native back end), e.g. for its warning handler. */
tj_cache *tj_jit_disk_cache(tj_jit *j);
/* The compiled CUDA function (NULL on the cpu), e.g. for its attributes. */
const tj_cuda_function *tj_fn_cuda_function(const tj_fn *f);
/* Threads per program and shared memory bytes (0 on the cpu). The
 * accessors read a NULL handle as one that has nothing (NULL, 0;
 * tj_jit_device: TJ_DEVICE_CPU, tj_jit_ordinal: -1, tj_jit_tune_mode:
 * TJ_TUNE_STORED); setters ignore a NULL handle or a mode out of range. */
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
