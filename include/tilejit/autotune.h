/* The autotuner (docs/cache.md): picks a kernel's tile parameters by
 * timing its `tune` configurations on the device.
 *
 * It enumerates the configurations (the product of the `tune` lists),
 * drops those that violate a `where` clause for the argument shapes, and
 * looks up each one's stored time in the disk cache, keyed by (the
 * configuration's Tile IR, the device and arch, the shape bucket: every
 * dim rounded up to a power of two). Configurations without a stored time
 * are built on several threads (one tj_ctx each), dropped when they exceed
 * the device's shared memory, threads per block or registers or spill,
 * timed one after another on the device (warm-up, then the median of
 * launches on input copies rotated so that the L2 cache does not flatter),
 * and their times stored one by one. Adding a configuration to a `tune`
 * list therefore times only that one, and a second run times nothing.
 *
 * Timing goes through tj_tune_device, a table of functions, so tests can
 * use a fake device with deterministic times.
 */
#ifndef TILEJIT_AUTOTUNE_H
#define TILEJIT_AUTOTUNE_H

#include "tilejit/cache.h"
#include "tilejit/cuda.h"
#include "tilejit/interp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How tj_jit_compile chooses tile parameters the request leaves unbound. */
typedef enum tj_tune_mode {
    TJ_TUNE_STORED = 0,  /* the stored winner when there is one, else the first valid
                            configuration; never times (the default) */
    TJ_TUNE_MISSING = 1, /* times the configurations without a stored time first */
    TJ_TUNE_OFF = 2,     /* the first valid configuration, as without a tuner */
} tj_tune_mode;

typedef enum tj_tune_status {
    TJ_TUNE_OK = 0,        /* timed (now or before) */
    TJ_TUNE_PRUNED_WHERE,  /* violates a where clause for these shapes */
    TJ_TUNE_PRUNED_LIMITS, /* exceeds the device's shared memory, threads or registers, or spills */
    TJ_TUNE_FAILED,        /* did not compile, load or run */
    TJ_TUNE_UNTIMED,       /* no stored time and none taken (TJ_TUNE_STORED, or the cpu) */
} tj_tune_status;

const char *tj_tune_status_name(tj_tune_status s); /* "ok", "pruned", ... */

/* One configuration and what became of it. */
typedef struct tj_tune_result {
    tj_binding *config;   /* every tile parameter, warps and stages included */
    uint32_t nconfig;
    tj_tune_status status;
    int stored;           /* the outcome came from the cache, not from this run */
    double seconds;       /* median time of one launch (TJ_TUNE_OK) */
    uint32_t nthreads, smem_bytes;
    int regs, spill_bytes; /* as the compiled binary reports them; -1: unknown */
    char note[200];       /* why it was pruned or failed */
} tj_tune_result;

/* A configuration built for the device. */
typedef struct tj_tune_variant {
    const tj_kernel *simt; /* parameters (the ABI), threads, shared memory */
    const char *ptx;
    const void *cubin;     /* NULL when the device did not ask for one */
    size_t cubin_size;
    const int64_t *grid;   /* programs along each axis, for these arguments */
} tj_tune_variant;

/* What a loaded variant uses, from its binary. */
typedef struct tj_tune_attrs {
    int regs, spill_bytes;
    int max_threads; /* the largest block its register use allows */
} tj_tune_attrs;

typedef struct tj_tune_device tj_tune_device;
struct tj_tune_device {
    void *self;
    const char *id;         /* the device and arch in the record keys: "NVIDIA H200/sm_90a" */
    const char *arch;       /* what to compile for ("sm_90a"); NULL: the cpu, nothing is timed */
    int wants_cubin;        /* variants come with a cubin from nvJitLink */
    uint32_t max_smem;      /* shared memory per program the device allows */
    uint32_t max_threads;   /* threads per program */
    /* Loads a variant: a handle, or NULL with err. */
    void *(*load)(tj_tune_device *d, const tj_tune_variant *v, tj_tune_attrs *attrs, tj_rt_error *err);
    /* The median seconds of one launch, after warm-up. */
    int (*time)(tj_tune_device *d, void *loaded, const tj_tune_variant *v, double *seconds, tj_rt_error *err);
    void (*unload)(tj_tune_device *d, void *loaded);
    void (*destroy)(tj_tune_device *d); /* may be NULL */
    /* The cpu (load and time NULL, arch "llvm-cpu"): compiles and times one
     * configuration itself, no variant built; NULL for CUDA. The records
     * and the winner are stored as for CUDA, under the device's id. */
    int (*time_config)(tj_tune_device *d, const tj_binding *config, uint32_t nconfig, double *seconds,
                       tj_rt_error *err);
};

/* The CUDA device: launches on copies of the example arguments, made in
 * device memory from their tensors' host data (or random data where a
 * tensor's data is NULL), enough copies to rotate through more than the L2
 * cache holds. arch NULL: the device's (sm_90a, sm_80). */
tj_tune_device *tj_tune_device_cuda(tj_cuda *cu, const char *arch, const tj_arg *args, uint32_t nargs,
                                    tj_rt_error *err);
void tj_tune_device_free(tj_tune_device *d);
/* The id of a CUDA device and arch, as the records use it:
 * NAME/ARCH/SMSsm/CLOCKMHz, so that two GPUs of one name but another SM
 * count or clock (a MIG slice, another board) keep their own winners. */
void tj_tune_device_id(const tj_cuda_props *props, const char *arch, char *buf, size_t n);

typedef struct tj_tune_request {
    const char *file;       /* for diagnostics */
    const char *source;
    size_t len;
    const char *kernel;
    const tj_binding *params; /* tile parameters held fixed */
    uint32_t nparams;
    const tj_arg *args;       /* shapes, strides, alignment of the arguments */
    uint32_t nargs;
    tj_tune_mode mode;        /* TJ_TUNE_STORED: look up only; otherwise time what is missing */
    int threads;              /* compiling threads; 0: one per core (at most 16) */
    /* Called after each configuration is settled, from the calling thread. */
    void (*progress)(void *ud, uint32_t done, uint32_t total, const tj_tune_result *r);
    void *progress_ud;
} tj_tune_request;

typedef struct tj_tune_report {
    tj_ctx *ctx;              /* owns the results */
    tj_tune_result *results;  /* every configuration, in the order of the tune lists */
    uint32_t nresults;
    int best;                 /* the fastest, or the first valid one when none was timed; -1: none */
    uint32_t timed, built;    /* work done by this call */
    double wall_seconds;
    char bucket[160];         /* the shape bucket, "M=8192,N=1024" */
} tj_tune_report;

/* Tunes kernel `req->kernel` for `dev` (NULL: the cpu, the first valid
 * configuration). cache NULL: nothing is looked up or stored. 0 with the
 * report; 1 with the reason in err: diagnostics of the source (the report
 * is empty), or no configuration can run (the report says why for each).
 * Free the report with tj_tune_report_free in either case. */
int tj_tune(tj_tune_device *dev, tj_cache *cache, const tj_tune_request *req, tj_tune_report *out,
            tj_rt_error *err);
void tj_tune_report_free(tj_tune_report *r);

/* "BM=64,BN=128,warps=4" into buf (nothing when buf is NULL or size 0). */
void tj_tune_config_text(const tj_binding *config, uint32_t n, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
