/* The CUDA runtime: device queries, modules, launches, memory, streams and
 * events over the CUDA driver API, plus PTX -> cubin through nvJitLink.
 *
 * Both libraries are loaded with dlopen when an object is opened, so the
 * library builds and runs without the toolkit or a GPU: opening then fails
 * with a reason. Nothing is global: a tj_cuda holds the driver's entry
 * points and one device's primary context (shared with any other user of
 * the driver in the process, e.g. PyTorch). Every call makes that context
 * current for its duration and restores another context the caller had
 * current; a thread with none keeps ours current afterwards (as the CUDA
 * runtime does), so later calls skip the push and pop. Any thread may use
 * a tj_cuda, and several threads may use one at once.
 *
 * Errors: every call that fails returns non-zero (or NULL) and, when `err`
 * is not NULL, fills it with what was being done and the driver's error
 * name and string, e.g. "cuModuleLoadDataEx (loading PTX for kernel
 * 'softmax'): CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed", then
 * the JIT log where there is one.
 *
 * The kernel ABI (how tj_cuda_marshal lays out a kernel's parameters) is
 * described in docs/runtime.md.
 */
#ifndef TILEJIT_CUDA_H
#define TILEJIT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "tilejit/args.h"
#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_cuda tj_cuda;
typedef struct tj_cuda_module tj_cuda_module;

/* ---- devices ---------------------------------------------------------- */

/* Loads the driver and retains the primary context of device `ordinal`.
 * NULL with a reason when there is no driver ("no CUDA driver:
 * libcuda.so.1 not found ..."), no device ("no CUDA device: ...") or no
 * such ordinal. */
tj_cuda *tj_cuda_open(int ordinal, tj_rt_error *err);
/* Releases the primary context. Modules, memory, streams and events made
 * through `cu` must be released first. */
void tj_cuda_close(tj_cuda *cu);

int tj_cuda_device_count(const tj_cuda *cu); /* NULL: 0 */
int tj_cuda_ordinal(const tj_cuda *cu); /* the device cu was opened on; NULL: -1 */

typedef struct tj_cuda_props {
    char name[256];
    int ordinal;
    int cc_major, cc_minor;         /* compute capability */
    int sm_count;
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_grid[3], max_block[3];
    int shared_per_block;           /* without opting in */
    int shared_per_block_optin;     /* the most a kernel may opt in to */
    int shared_per_sm;
    int regs_per_block, regs_per_sm; /* 32-bit registers */
    int l2_bytes;
    size_t total_mem;               /* bytes */
    int clock_khz, mem_clock_khz, mem_bus_bits;
    int driver_version;             /* e.g. 13000 for CUDA 13.0 */
} tj_cuda_props;

/* Properties of device `ordinal` (any device, not only cu's). */
int tj_cuda_device_props(const tj_cuda *cu, int ordinal, tj_cuda_props *out, tj_rt_error *err);

/* Writes one line per device ("cuda:0  NVIDIA H200  sm_90  132 SMs ...")
 * or, when there is none, "cuda: not available: REASON". Returns the
 * number of devices (0 when none). Touches no context. */
int tj_cuda_describe(char *buf, size_t n);

/* ---- modules and functions ------------------------------------------ */

/* Loads NUL-terminated PTX through the driver's JIT. `name` (may be NULL)
 * names the kernel in messages; a failure carries the JIT error log. */
tj_cuda_module *tj_cuda_module_load_ptx(const tj_cuda *cu, const char *ptx, const char *name,
                                        tj_rt_error *err);
/* Loads a cubin or fatbin image of `size` bytes (checked for an ELF or
 * fatbin header before the driver reads it). */
tj_cuda_module *tj_cuda_module_load_cubin(const tj_cuda *cu, const void *image, size_t size,
                                          const char *name, tj_rt_error *err);
void tj_cuda_module_unload(tj_cuda_module *m);

/* A kernel of a loaded module: a small value, valid while the module is
 * loaded; its fields are the runtime's own. */
typedef struct tj_cuda_function {
    const tj_cuda *cu;
    void *handle; /* the CUfunction */
    char name[64];
} tj_cuda_function;

int tj_cuda_module_function(const tj_cuda_module *m, const char *name, tj_cuda_function *out,
                            tj_rt_error *err);

/* What the compiled kernel uses, for the autotuner. */
typedef struct tj_cuda_func_attrs {
    int num_regs;               /* per thread */
    int local_bytes;            /* per thread: spills and local arrays */
    int static_shared_bytes;
    int const_bytes;
    int max_threads_per_block;  /* given its register use */
    int max_dynamic_shared_bytes;
    int ptx_version, binary_version; /* e.g. 80 and 90 */
} tj_cuda_func_attrs;

int tj_cuda_function_attrs(const tj_cuda_function *f, tj_cuda_func_attrs *out, tj_rt_error *err);
/* Allows launches with up to `bytes` of dynamic shared memory (needed
 * above 48 KiB; at most the device's opt-in limit minus static shared). */
int tj_cuda_function_set_max_dynamic_shared(const tj_cuda_function *f, int bytes, tj_rt_error *err);

/* ---- the kernel ABI and launches ------------------------------------- */

#ifdef __cplusplus
#define TJ_CUDA_ALIGN16 alignas(16)
#else
#define TJ_CUDA_ALIGN16 _Alignas(16)
#endif
#define TJ_CUDA_PARAM_BYTES 4096 /* the driver's classic kernel-parameter limit */
#define TJ_CUDA_MAX_PARAMS 512

/* A kernel's marshalled parameters: `data` holds them laid out as the
 * kernel's .param space (each aligned to its size), `ptrs[i]` points at the
 * i-th PTX parameter in `data`. Meant to live on the stack. */
typedef struct tj_cuda_params {
    TJ_CUDA_ALIGN16 unsigned char data[TJ_CUDA_PARAM_BYTES];
    void *ptrs[TJ_CUDA_MAX_PARAMS];
    uint32_t size;  /* bytes used in data */
    uint32_t count; /* PTX parameters */
} tj_cuda_params;

/* Lays out `args` for kernel k in the fixed ABI (docs/runtime.md): per
 * parameter, a tensor gives .u64 pointer, rank x .s32 sizes, rank x .s64
 * strides (elements); a scalar one value of its dtype (bool .u8, f16/bf16
 * .b16). Checks kinds, ranks, dtypes and that sizes fit .s32. */
int tj_cuda_marshal(const tj_kernel *k, const tj_arg *args, uint32_t nargs, tj_cuda_params *out,
                    tj_rt_error *err);

typedef struct tj_cuda_launch_dims {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes; /* dynamic shared memory */
    void *stream;          /* a CUstream; NULL: the default stream */
} tj_cuda_launch_dims;

/* Launches with `params` as cuLaunchKernel's kernelParams (one pointer per
 * PTX parameter). */
int tj_cuda_launch(const tj_cuda_function *f, const tj_cuda_launch_dims *d, void **params,
                   tj_rt_error *err);
/* Launches with a packed parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER),
 * e.g. tj_cuda_params.data and .size. */
int tj_cuda_launch_packed(const tj_cuda_function *f, const tj_cuda_launch_dims *d,
                          const void *data, size_t size, tj_rt_error *err);
/* Marshals and launches; no allocation. A SIMT kernel's TMA tensor maps
 * (tj_tensor_maps) are encoded for the arguments and follow its
 * parameters; with a Tile IR kernel (its ABI), the _maps form takes them. */
int tj_cuda_launch_kernel(const tj_cuda_function *f, const tj_cuda_launch_dims *d,
                          const tj_kernel *k, const tj_arg *args, uint32_t nargs,
                          tj_rt_error *err);
int tj_cuda_launch_kernel_maps(const tj_cuda_function *f, const tj_cuda_launch_dims *d, const tj_kernel *k,
                               const tj_tensor_map_desc *maps, int nmaps, const tj_arg *args, uint32_t nargs,
                               tj_rt_error *err);

/* ---- memory, streams, events ----------------------------------------- */

/* Device pointers are `void *` so they fit tj_tensor.data. */
void *tj_cuda_malloc(const tj_cuda *cu, size_t bytes, tj_rt_error *err);
int tj_cuda_free(const tj_cuda *cu, void *dptr, tj_rt_error *err); /* NULL: no-op */
int tj_cuda_memcpy_htod(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                        tj_rt_error *err);
int tj_cuda_memcpy_dtoh(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                        tj_rt_error *err);
int tj_cuda_memcpy_htod_async(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                              void *stream, tj_rt_error *err);
int tj_cuda_memcpy_dtoh_async(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                              void *stream, tj_rt_error *err);
int tj_cuda_memset(const tj_cuda *cu, void *dst, unsigned char value, size_t bytes,
                   tj_rt_error *err);
int tj_cuda_synchronize(const tj_cuda *cu, tj_rt_error *err); /* the whole context */

/* non_blocking: does not synchronize with the legacy default stream. */
void *tj_cuda_stream_create(const tj_cuda *cu, int non_blocking, tj_rt_error *err);
int tj_cuda_stream_destroy(const tj_cuda *cu, void *stream, tj_rt_error *err);
int tj_cuda_stream_synchronize(const tj_cuda *cu, void *stream, tj_rt_error *err);

/* Events record timing. */
void *tj_cuda_event_create(const tj_cuda *cu, tj_rt_error *err);
int tj_cuda_event_destroy(const tj_cuda *cu, void *event, tj_rt_error *err);
int tj_cuda_event_record(const tj_cuda *cu, void *event, void *stream, tj_rt_error *err);
int tj_cuda_event_synchronize(const tj_cuda *cu, void *event, tj_rt_error *err);
/* Milliseconds between two recorded, completed events. */
int tj_cuda_event_elapsed(const tj_cuda *cu, void *start, void *end, float *ms, tj_rt_error *err);

/* ---- nvJitLink: PTX -> cubin without a GPU --------------------------- */

typedef struct tj_nvjitlink tj_nvjitlink;

/* Loads libnvJitLink.so.13 (or libnvJitLink.so), also from $CUDA_HOME/lib64
 * and /usr/local/cuda/lib64. NULL with a reason when it is not found. */
tj_nvjitlink *tj_nvjitlink_open(tj_rt_error *err);
void tj_nvjitlink_close(tj_nvjitlink *l);
int tj_nvjitlink_version(const tj_nvjitlink *l, unsigned *major, unsigned *minor);

/* Compiles `len` bytes of PTX for `arch` ("sm_80", "sm_90a") with extra
 * nvJitLink options (e.g. "-lineinfo"; may be NULL when nopts is 0). On
 * success *cubin and *size hold the image (malloc'ed: free() it) and, when
 * info_log is not NULL, *info_log the linker's info log or NULL
 * (malloc'ed). A failure carries the error log. */
int tj_nvjitlink_compile(const tj_nvjitlink *l, const char *ptx, size_t len, const char *arch,
                         const char *const *opts, int nopts, void **cubin, size_t *size,
                         char **info_log, tj_rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
