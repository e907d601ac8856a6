/* The CUDA runtime's private parts: the few driver API types and constants
 * it uses (declared here so the library builds without cuda.h; values from
 * CUDA 13's cuda.h, stable across driver versions), the table of driver
 * entry points filled by dlsym, and the layout of tj_cuda. */
#ifndef TJ_CUDA_INTERNAL_H
#define TJ_CUDA_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "tilejit/cuda.h"

typedef int CUresult; /* an enum in cuda.h, int-sized */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
/* CUtensorMap: 128 opaque bytes, 64-byte aligned */
typedef struct tj_cu_tensor_map {
    _Alignas(64) uint64_t opaque[16];
} tj_cu_tensor_map;
typedef int CUjit_option;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
};

enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
    CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum {
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0 };

#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

/* The entry points used: X(return, field, symbol, fallback symbol or NULL,
 * parameters). Symbols are the versioned names cuda.h maps the plain ones
 * to; a fallback serves drivers older than the versioned name. */
#define TJ_CU_FUNCS(X)                                                                         \
    X(CUresult, GetErrorName, "cuGetErrorName", NULL, (CUresult, const char **))               \
    X(CUresult, GetErrorString, "cuGetErrorString", NULL, (CUresult, const char **))           \
    X(CUresult, Init, "cuInit", NULL, (unsigned))                                              \
    X(CUresult, DriverGetVersion, "cuDriverGetVersion", NULL, (int *))                         \
    X(CUresult, DeviceGetCount, "cuDeviceGetCount", NULL, (int *))                             \
    X(CUresult, DeviceGet, "cuDeviceGet", NULL, (CUdevice *, int))                             \
    X(CUresult, DeviceGetName, "cuDeviceGetName", NULL, (char *, int, CUdevice))               \
    X(CUresult, DeviceGetAttribute, "cuDeviceGetAttribute", NULL,                              \
      (int *, CUdevice_attribute, CUdevice))                                                   \
    X(CUresult, DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, (size_t *, CUdevice))             \
    X(CUresult, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL,                      \
      (CUcontext *, CUdevice))                                                                 \
    X(CUresult, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, (CUdevice))     \
    X(CUresult, CtxGetCurrent, "cuCtxGetCurrent", NULL, (CUcontext *))                         \
    X(CUresult, CtxPushCurrent, "cuCtxPushCurrent_v2", NULL, (CUcontext))                      \
    X(CUresult, CtxSetCurrent, "cuCtxSetCurrent", NULL, (CUcontext))                           \
    X(CUresult, CtxPopCurrent, "cuCtxPopCurrent_v2", NULL, (CUcontext *))                      \
    X(CUresult, CtxSynchronize, "cuCtxSynchronize", NULL, (void))                              \
    X(CUresult, ModuleLoadDataEx, "cuModuleLoadDataEx", NULL,                                  \
      (CUmodule *, const void *, unsigned, CUjit_option *, void **))                           \
    X(CUresult, ModuleUnload, "cuModuleUnload", NULL, (CUmodule))                              \
    X(CUresult, ModuleGetFunction, "cuModuleGetFunction", NULL,                                \
      (CUfunction *, CUmodule, const char *))                                                  \
    X(CUresult, FuncGetAttribute, "cuFuncGetAttribute", NULL,                                  \
      (int *, CUfunction_attribute, CUfunction))                                               \
    X(CUresult, FuncSetAttribute, "cuFuncSetAttribute", NULL,                                  \
      (CUfunction, CUfunction_attribute, int))                                                 \
    X(CUresult, LaunchKernel, "cuLaunchKernel", NULL,                                          \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,       \
       CUstream, void **, void **))                                                            \
    X(CUresult, MemAlloc, "cuMemAlloc_v2", NULL, (CUdeviceptr *, size_t))                      \
    X(CUresult, MemFree, "cuMemFree_v2", NULL, (CUdeviceptr))                                  \
    X(CUresult, MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, (CUdeviceptr, const void *, size_t))      \
    X(CUresult, MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, (void *, CUdeviceptr, size_t))            \
    X(CUresult, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL,                                 \
      (CUdeviceptr, const void *, size_t, CUstream))                                           \
    X(CUresult, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL,                                 \
      (void *, CUdeviceptr, size_t, CUstream))                                                 \
    X(CUresult, MemsetD8, "cuMemsetD8_v2", NULL, (CUdeviceptr, unsigned char, size_t))         \
    X(CUresult, StreamCreate, "cuStreamCreate", NULL, (CUstream *, unsigned))                  \
    X(CUresult, StreamDestroy, "cuStreamDestroy_v2", NULL, (CUstream))                         \
    X(CUresult, StreamSynchronize, "cuStreamSynchronize", NULL, (CUstream))                    \
    X(CUresult, EventCreate, "cuEventCreate", NULL, (CUevent *, unsigned))                     \
    X(CUresult, EventDestroy, "cuEventDestroy_v2", NULL, (CUevent))                            \
    X(CUresult, EventRecord, "cuEventRecord", NULL, (CUevent, CUstream))                       \
    X(CUresult, EventSynchronize, "cuEventSynchronize", NULL, (CUevent))                       \
    X(CUresult, EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime",               \
      (float *, CUevent, CUevent))                                                             \
    X(CUresult, TensorMapEncodeTiled, "cuTensorMapEncodeTiled", NULL,                          \
      (tj_cu_tensor_map *, int, uint32_t, void *, const uint64_t *, const uint64_t *,          \
       const uint32_t *, const uint32_t *, int, int, int, int))

typedef struct tj_cu_api {
#define X(ret, field, sym, alt, params) ret(*field) params;
    TJ_CU_FUNCS(X)
#undef X
} tj_cu_api;

struct tj_cuda {
    tj_cu_api api;
    void *lib;         /* dlopen handle; NULL when the table came from elsewhere */
    int ndevices;
    int ordinal;
    CUdevice device;
    CUcontext ctx;     /* the device's primary context, retained */
};

struct tj_cuda_module {
    const tj_cuda *cu;
    CUmodule mod;
};

/* ---- cuda_driver.c ---- */

/* dlopens `path` (NULL: libcuda.so.1) and fills `api`; *lib gets the
 * handle. */
int tj_cu_load_driver(const char *path, tj_cu_api *api, void **lib, tj_rt_error *err);
/* cuInit and cuDeviceGetCount; a failure starts "no CUDA driver: " or
 * "no CUDA device: ". */
int tj_cu_init(const tj_cu_api *api, int *count, tj_rt_error *err);
/* Opens device `ordinal` given a filled entry-point table (tests pass a
 * fake one): cuInit, count, retain the primary context. */
tj_cuda *tj_cuda_open_api(const tj_cu_api *api, void *lib, int ordinal, tj_rt_error *err);

/* Fills err with "WHAT (DOING): NAME: STRING" for a failed driver call and
 * returns 1; returns 0 for CUDA_SUCCESS. `doing` is a printf format. */
int tj_cu_check(const tj_cu_api *api, CUresult r, const char *what, tj_rt_error *err,
                const char *doing, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Makes cu's context current on this thread (pushing it only when another
 * is current); *pushed remembers whether tj_cu_leave must pop. */
int tj_cu_enter(const tj_cuda *cu, int *pushed, tj_rt_error *err);
void tj_cu_leave(const tj_cuda *cu, int pushed);

/* Makes one driver call (an expression of type CUresult) with cu's context
 * current, then returns from the calling function 0, or 1 with err filled
 * as tj_cu_check does (`what` the entry point, then the printf format and
 * arguments saying what was being done). */
#define TJ_CU_RETURN_CALL(cu, err, call, what, ...)                                          \
    do {                                                                                     \
        int pushed_;                                                                         \
        if (tj_cu_enter((cu), &pushed_, (err)))                                              \
            return 1;                                                                        \
        CUresult r_ = (call);                                                                \
        tj_cu_leave((cu), pushed_);                                                          \
        return tj_cu_check(&(cu)->api, r_, what, (err), __VA_ARGS__);                        \
    } while (0)

/* ---- cuda_abi.c ---- */

/* Appends one PTX parameter to p, aligned to its size: a pointer (.u64), or
 * a scalar of dtype dt from a's union (as tj_cuda_marshal does); 1 when p is
 * full or dt has no size. */
int tj_cu_put_pointer(tj_cuda_params *p, const void *ptr);
int tj_cu_put_scalar(tj_cuda_params *p, tj_dtype dt, const tj_arg *a);
/* Appends `size` bytes as one PTX parameter aligned to `align`; 1 when p is full. */
int tj_cu_put_bytes(tj_cuda_params *p, const void *value, uint32_t size, uint32_t align);

/* ---- tensor_map.c ---- */

/* Appends the TMA tensor maps of kernel k (parameters `maps`), encoded by
 * cuTensorMapEncodeTiled for these arguments, after k's parameters. */
int tj_cu_put_tensor_maps(const tj_cuda *cu, const tj_kernel *k, const tj_tensor_map_desc *maps, int nmaps,
                          const tj_arg *args, tj_cuda_params *p, tj_rt_error *err);

/* ---- cuda_device.c ---- */

/* tj_cuda_describe's device lines through `api`; returns the count, or -1
 * with the reason in err. */
int tj_cu_list_devices(const tj_cu_api *api, char *buf, size_t n, tj_rt_error *err);

/* ---- shared error helpers (cuda_driver.c) ---- */

/* tj_rt_fail (tilejit/diag.h) fills err. */
/* Appends ":\n" and a compiler log (trimmed, truncated with "...") to err. */
void tj_rt_append_log(tj_rt_error *err, const char *log);

#endif
