/* The cache as tj_jit uses it (runtime/cache_jit.c): the memory LRU of
 * compiled functions under two keys (the request's, cheap to compute, and
 * the kernel's, after specialization), the disk cache of PTX and cubins,
 * nvJitLink for making cubins, and the tuning mode. */
#ifndef TJ_CACHE_JIT_H
#define TJ_CACHE_JIT_H

#include "tilejit/autotune.h"
#include "tilejit/cache.h"
#include "tilejit/frontend.h"
#include "tilejit/jit.h"

typedef struct tj_jit_cache tj_jit_cache;

/* props NULL: the cpu (memory cache only); else the CUDA device's (its
 * driver version and default arch go into keys). retain/release count the
 * LRU's references to the values it holds (tj_fn). */
tj_jit_cache *tj_jit_cache_new(const tj_cuda_props *props, void (*retain)(void *), void (*release)(void *));
void tj_jit_cache_free(tj_jit_cache *jc);
tj_cache *tj_jit_cache_disk(tj_jit_cache *jc); /* NULL on the cpu */
const tj_cuda_props *tj_jit_cache_props(const tj_jit_cache *jc); /* zero on the cpu */
void tj_jit_cache_set_tune_mode(tj_jit_cache *jc, tj_tune_mode mode);
tj_tune_mode tj_jit_cache_tune_mode(tj_jit_cache *jc);
void tj_jit_cache_stats(tj_jit_cache *jc, tj_jit_stats *out);
void tj_jit_cache_count_compile(tj_jit_cache *jc);
void tj_jit_cache_count_tuning(tj_jit_cache *jc);
/* The arch to compile for: the request's, else the device's; NULL on the cpu. */
const char *tj_jit_cache_arch(const tj_jit_cache *jc, const tj_compile_request *req);
/* The arch a device gets by default: sm_90a on compute capability 9.0,
 * else sm_80. */
const char *tj_cuda_default_arch(const tj_cuda_props *p);

/* ---- memory ---- */

/* A request's signature: what it determines besides its source text (the
 * kernel, tile parameters, the arguments' dtypes, shapes and
 * specialization facts, the arch, the tuning mode), packed. */
typedef struct tj_jit_request {
    unsigned char sig[2048];
    size_t len;
    int usable; /* it fit */
} tj_jit_request;

/* cache_request.c: requests seen before, compared exactly (signature and
 * source), each holding its value (a tj_fn) through retain/release. */
typedef struct tj_requests tj_requests;
tj_requests *tj_requests_new(uint32_t capacity, void (*retain)(void *), void (*release)(void *));
void tj_requests_free(tj_requests *r);
/* The value remembered for this request (retained), or NULL; *seen gets
 * the signature for tj_requests_remember. */
void *tj_requests_find(tj_requests *r, const tj_compile_request *req, const char *arch, int mode,
                       tj_jit_request *seen);
void tj_requests_remember(tj_requests *r, const tj_jit_request *seen, const tj_compile_request *req, void *fn);

/* The same through the jit's cache (counting memory hits). */
void *tj_jit_request_find(tj_jit_cache *jc, const tj_compile_request *req, tj_jit_request *seen);
void tj_jit_request_remember(tj_jit_cache *jc, const tj_jit_request *seen, const tj_compile_request *req,
                             void *value);

/* Kernel keys: the value under the key (retained), counted as a memory
 * hit; or NULL. */
void *tj_jit_cache_get(tj_jit_cache *jc, const tj_cache_key *k);
void tj_jit_cache_put(tj_jit_cache *jc, const tj_cache_key *k, void *value);

/* ---- disk ---- */

/* The key of the kernel compiled from `spec` (Tile IR after
 * specialization) for `arch` (NULL on the cpu); `quick`: linked at ptxas
 * -O1 (tj_compile_request.quick). */
void tj_jit_kernel_key(tj_jit_cache *jc, const tj_kernel *spec, const char *arch, int quick, tj_cache_key *out);

/* A compiled kernel ready to load: PTX, and a cubin when nvJitLink made one. */
typedef struct tj_jit_binary {
    const char *ptx;
    const void *cubin;   /* NULL: load the PTX through the driver */
    size_t cubin_size;
    uint32_t nthreads, smem_bytes;
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS]; /* TMA tensor maps after the parameters */
    int nmaps;
    tj_cache_entry entry; /* owns ptx and cubin after a disk hit */
    void *owned_cubin;    /* nvJitLink's, after a miss */
} tj_jit_binary;

/* A disk hit whose metadata fit spec (name, parameters): 0. */
int tj_jit_cache_lookup(tj_jit_cache *jc, const tj_cache_key *k, const tj_kernel *spec, tj_jit_binary *out);
/* After a miss: makes the cubin of `ptx` for `arch` (when nvJitLink is
 * there) and stores the entry. Fails only when nvJitLink rejects the PTX. */
int tj_jit_cache_finish(tj_jit_cache *jc, const tj_cache_key *k, const tj_kernel *simt, const char *ptx,
                        const char *arch, int quick, tj_jit_binary *out, tj_rt_error *err);
/* The driver refused a cached binary: forget the entry. */
void tj_jit_cache_reject(tj_jit_cache *jc, const tj_cache_key *k);
void tj_jit_binary_free(tj_jit_binary *b);

/* The metadata of a kernel entry: name, arch, threads, shared memory and
 * the parameter ABI (docs/runtime.md) of a SIMT kernel, and the linker that
 * made its cubin (major * 1000 + minor * 10; 0: none, PTX only) with its
 * ptxas level when `quick`. */
void tj_jit_kernel_meta(const tj_kernel *simt, const char *arch, int linker_version, int quick, tj_buf *out);

/* PTX -> cubin with the jit's nvJitLink (opened on first use), at ptxas
 * -O1 when `quick`. 1 with *cubin NULL and no error when there is no
 * nvJitLink. */
int tj_jit_cache_link(tj_jit_cache *jc, const char *ptx, const char *arch, int quick, void **cubin, size_t *size,
                      tj_rt_error *err);

/* ---- tuning (autotune_jit.c) ---- */

/* The tile parameters a compile uses: the request's, completed with the
 * tuner's winner where tunable ones are unbound (TJ_TUNE_STORED: a stored
 * winner only; TJ_TUNE_MISSING: timing what has no stored time first).
 * Unchanged when there is nothing to tune or no winner. Non-zero after
 * reporting into c. */
int tj_jit_tuned_params(tj_jit_cache *jc, tj_cuda *cu, tj_ctx *c, const tj_program *p, int kernel,
                        const tj_compile_request *req, const tj_binding **params, uint32_t *nparams);
/* The same on the native cpu, from the records in disk under device_id
 * (tj_jit_cpu_tune_id): a lookup in either mode but TJ_TUNE_OFF (the cpu
 * times through tj_dispatch_tune). */
int tj_jit_cpu_tuned_params(tj_cache *disk, const char *device_id, tj_tune_mode mode, tj_ctx *c, const tj_program *p,
                            int kernel, const tj_compile_request *req, const tj_binding **params, uint32_t *nparams);
/* The native cpu's id in the tuner's records: "cpu/NAME/THREADSt/HASH"
 * (the host CPU's name, the pool's threads, a hash of its features: the
 * times depend on all three); "" without the native back end. */
void tj_jit_cpu_tune_id(const tj_jit *j, char *buf, size_t n);

/* ---- the build steps the jit and the tuner share ---- */

/* Binds every dim name of the kernel's tensor parameters to the example
 * arguments' sizes (arena memory); returns how many. */
uint32_t tj_dims_from_args(tj_ctx *c, const tj_program *p, int kernel, const tj_arg *args, uint32_t nargs,
                           tj_binding **out);
/* Tile IR specialized on what the arguments show (a copy in tile's
 * context); NULL after reporting. */
tj_kernel *tj_jit_specialize(const tj_kernel *tile, const tj_arg *args, uint32_t nargs);
/* SIMT IR and PTX text (both in spec's context); non-zero after reporting. */
int tj_jit_lower_ptx(const tj_kernel *spec, const char *arch, tj_kernel **simt, const char **ptx);

#endif
