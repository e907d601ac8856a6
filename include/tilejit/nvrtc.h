/* CUDA C kernels through NVRTC, beside the kernels of the tiled language
 * (docs/interop.md).
 *
 *   tj_cuda_kernel *k = tj_cuda_kernel_build(cu, &(tj_cuda_source){
 *       .file = "scale.cu", .source = src, .len = n, .kernel = "scale<float, 256>"},
 *       &(tj_cuda_build_options){.cache = cache}, &err);
 *   tj_cuda_kernel_launch(k, &dims, args, nargs, &err);   // any number of times
 *
 * NVRTC (libnvrtc.so.13) is loaded with dlopen, like the driver: without it
 * only this feature fails, with a reason. Source -> PTX by NVRTC for the
 * device's arch (or a given one) -> cubin by nvJitLink (tj_nvjitlink_compile)
 * -> the driver. The PTX and cubin are kept in the compiled-binary disk cache
 * (tilejit/cache.h) under a key of everything NVRTC is given (source, the
 * headers given by name, every option, the arch, the kernel's name
 * expression) and the NVRTC library's identity; a hit loads the cubin without
 * loading NVRTC or nvJitLink.
 *
 * Parameters: a pointer is passed from a tensor argument (its `data`, a
 * device pointer); a scalar from tj_arg's scalar by the parameter's dtype.
 * The types come from the kernel's declaration in the source (template
 * parameters replaced by the name expression's arguments) or, when given,
 * from tj_cuda_source.signature; either way they are checked against the
 * parameter sizes in the PTX NVRTC made.
 */
#ifndef TILEJIT_NVRTC_H
#define TILEJIT_NVRTC_H

#include <stddef.h>
#include <stdint.h>

#include "tilejit/cache.h"
#include "tilejit/cuda.h"
#include "tilejit/diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- NVRTC itself ---------------------------------------------------- */

typedef struct tj_nvrtc tj_nvrtc;

/* The library NVRTC would be loaded from, found without loading it:
 * $TILEJIT_NVRTC (a path), else libnvrtc.so.13 or libnvrtc.so in each
 * directory of $LD_LIBRARY_PATH, $CUDA_HOME/lib64, /usr/local/cuda/lib64,
 * /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib. *identity gets "PATH
 * SIZE MTIME" of the file (what cache keys use: a new NVRTC is a new file).
 * Both buffers of `n` bytes. 0 when found. */
int tj_nvrtc_locate(char *path, char *identity, size_t n, tj_rt_error *err);
/* Loads NVRTC from tj_nvrtc_locate's path. NULL with a reason ("no NVRTC:
 * libnvrtc.so.13 not found (searched ...)"). */
tj_nvrtc *tj_nvrtc_open(tj_rt_error *err);
void tj_nvrtc_close(tj_nvrtc *nv);
/* nvrtcVersion; 0 on success. */
int tj_nvrtc_version(const tj_nvrtc *nv, int *major, int *minor);
const char *tj_nvrtc_identity(const tj_nvrtc *nv); /* as tj_nvrtc_locate */

/* ---- a CUDA C source ------------------------------------------------ */

/* A header given by name: `#include "NAME"` finds TEXT. */
typedef struct tj_cuda_header {
    const char *name;
    const char *text;
} tj_cuda_header;

typedef struct tj_cuda_source {
    const char *file;   /* the name in diagnostics; NULL: "kernel.cu" */
    const char *source; /* `len` bytes (a NUL inside ends it) */
    size_t len;
    /* The __global__ function: its name, or a name expression with template
     * arguments ("scale<float, 256>"), looked up with
     * nvrtcAddNameExpression / nvrtcGetLoweredName. NULL: none (check). */
    const char *kernel;
    /* The parameter types, in tilejit's dtype names, '*' for pointers,
     * optionally named: "y: f32*, x: f32*, alpha: f32, n: i32". NULL: from
     * the kernel's declaration. */
    const char *signature;
    const tj_cuda_header *headers;
    uint32_t nheaders; /* at most TJ_CUDA_C_MAX_HEADERS */
    const char *const *defines;      /* "NAME" or "NAME=VALUE" (-D) */
    uint32_t ndefines;
    const char *const *include_dirs; /* -I; files found there are not in the key */
    uint32_t ninclude_dirs;
    const char *const *options;      /* more NVRTC options, e.g. "-use_fast_math" */
    uint32_t noptions;
    const char *arch; /* "sm_80", "sm_90a"; NULL: the device's (sm_90 without one) */
} tj_cuda_source;

/* One kernel parameter. */
typedef struct tj_cuda_param {
    char name[64];  /* from the declaration or the signature; "" when unnamed */
    tj_dtype dtype; /* the scalar's, or the pointee's (TJ_DT_INVALID: void or a
                     * type tilejit has no dtype for; any tensor fits) */
    int pointer;
    int is_const;   /* a pointer to const: an input only */
} tj_cuda_param;

#define TJ_CUDA_C_MAX_PARAMS 64
#define TJ_CUDA_C_MAX_HEADERS 4096

/* What NVRTC made of a source. Free with tj_nvrtc_output_free. */
typedef struct tj_nvrtc_output {
    char *ptx;          /* NUL-terminated */
    size_t ptx_len;
    char *lowered_name; /* the kernel's symbol in the PTX; NULL without a kernel */
    tj_cuda_param params[TJ_CUDA_C_MAX_PARAMS];
    uint32_t nparams;
    char *log;          /* NVRTC's log as it wrote it, or NULL */
    double nvrtc_ms;    /* nvrtcCompileProgram alone */
} tj_nvrtc_output;

/* Compiles to PTX for src->arch (no GPU needed). NVRTC's log goes into
 * `diags` (may be NULL) as FILE:LINE:COL diagnostics, the source line
 * quoted (warnings too); a failure's err says "NVRTC: N errors compiling
 * FILE" and, without diags, carries them rendered. 0 on success. */
int tj_nvrtc_compile(const tj_nvrtc *nv, const tj_cuda_source *src, tj_ctx *diags,
                     tj_nvrtc_output *out, tj_rt_error *err);
void tj_nvrtc_output_free(tj_nvrtc_output *out);

/* Turns NVRTC's log ("file(12): error: ...", its quoted line and caret)
 * into diagnostics of c, quoting the sources (and headers) of src. Lines
 * in no such form become errors or notes without a location. Returns the
 * number of errors. */
uint32_t tj_nvrtc_log_to_diags(tj_ctx *c, const tj_cuda_source *src, const char *log);

/* ---- the cache key ---------------------------------------------------- */

/* The disk cache key of src compiled for `arch` by the NVRTC library of
 * `nvrtc_identity` (tj_nvrtc_locate), loaded by a driver of
 * `driver_version` (0: any): the source, every header's name and text, the
 * NVRTC options as passed (defines, include directories, the arch, the
 * options), the kernel's name expression, the signature, and tilejit's
 * version and build. */
void tj_nvrtc_key(const tj_cuda_source *src, const char *arch, const char *nvrtc_identity,
                  int driver_version, tj_cache_key *out);

/* ---- kernels on a device ------------------------------------------ */

typedef struct tj_cuda_kernel tj_cuda_kernel;

typedef struct tj_cuda_build_options {
    tj_cache *cache;         /* NULL: no disk cache */
    tj_nvrtc *nvrtc;         /* NULL: opened when a compile is needed */
    tj_nvjitlink *nvjitlink; /* NULL: opened when a compile is needed */
    tj_ctx *diags;           /* NVRTC's diagnostics; NULL: into err */
} tj_cuda_build_options;

/* How a kernel was built, for benchmarks and tools. */
typedef struct tj_cuda_kernel_info {
    int from_disk;     /* loaded from the disk cache */
    double total_ms;   /* tj_cuda_kernel_build, end to end */
    double nvrtc_ms;   /* nvrtcCompileProgram (0 from the cache) */
    double link_ms;    /* nvJitLink (0 from the cache) */
    double load_ms;    /* the driver loading the cubin */
    char arch[16];
    char nvrtc_version[16]; /* "13.0", of the NVRTC that compiled it */
} tj_cuda_kernel_info;

/* Compiles (or loads from the cache) and loads src->kernel on cu. */
tj_cuda_kernel *tj_cuda_kernel_build(tj_cuda *cu, const tj_cuda_source *src,
                                     const tj_cuda_build_options *opt, tj_rt_error *err);
void tj_cuda_kernel_free(tj_cuda_kernel *k);

/* Marshals (pointers from tensors' data, scalars by dtype) and launches;
 * checks the count and tensor vs scalar. Allocates nothing. */
int tj_cuda_kernel_launch(const tj_cuda_kernel *k, const tj_cuda_launch_dims *d,
                          const tj_arg *args, uint32_t nargs, tj_rt_error *err);

/* For bindings: dlpack[i] is a DLTensor (dlpack.h) for a pointer parameter,
 * or NULL where args[i] is filled (a scalar); the tensors must be on k's
 * device (kDLCUDA of its ordinal, or kDLCUDAManaged). Fills args, then
 * tj_cuda_kernel_launch. */
int tj_cuda_kernel_launch_dlpack(const tj_cuda_kernel *k, const tj_cuda_launch_dims *d, tj_arg *args,
                                 const void *const *dlpack, uint32_t nargs, tj_rt_error *err);

const tj_cuda_function *tj_cuda_kernel_function(const tj_cuda_kernel *k);
uint32_t tj_cuda_kernel_params(const tj_cuda_kernel *k, const tj_cuda_param **params);
const tj_cuda_kernel_info *tj_cuda_kernel_get_info(const tj_cuda_kernel *k);
const char *tj_cuda_kernel_ptx(const tj_cuda_kernel *k);

/* ---- signatures (also for tools) ------------------------------------- */

/* The parameters of kernel `name` ("scale" or "scale<float, 256>") as
 * declared in `source` (template parameters replaced by the arguments),
 * or of `signature` when not NULL. Returns the count, or -1 with err. */
int tj_cuda_c_params(const char *source, size_t len, const char *name, const char *signature,
                     tj_cuda_param *out, int max, tj_rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
