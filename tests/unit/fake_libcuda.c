/* A stand-in libcuda.so.1 for tests of the whole JIT on machines without a
 * GPU (tests/unit/test_jit_disk.c and tests/cli/devices.sh find it through
 * LD_LIBRARY_PATH): TJ_FAKE_CUDA_DEVICES sm_90 devices (1 by default; the
 * first has 132 SMs, the others 66) whose modules load any image and whose
 * kernels do nothing. With TJ_FAKE_CUDA_FAIL_WORKER_LOADS set, loads made
 * on any thread but the process's first fail (a background compile's
 * failure, tests/unit/test_array_ahead.c). */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../runtime/cuda_internal.h"

#define EXPORT __attribute__((visibility("default")))
#define CONTEXT ((CUcontext)(void *)0xc0)

static _Thread_local CUcontext current_ctx;
EXPORT CUresult cuGetErrorName(CUresult r, const char **s) { return (*s = r ? "CUDA_ERROR_FAKE" : "CUDA_SUCCESS"), 0; }
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) { return (*s = r ? "fake failure" : "no error"), 0; }
EXPORT CUresult cuInit(unsigned flags) { return flags ? 1 : 0; }
EXPORT CUresult cuDriverGetVersion(int *v) { return (*v = 13000), 0; }
static int device_count(void)
{
    const char *s = getenv("TJ_FAKE_CUDA_DEVICES");
    int n = s ? atoi(s) : 1;
    return n >= 1 && n <= 16 ? n : 1;
}

EXPORT CUresult cuDeviceGetCount(int *n) { return (*n = device_count()), 0; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int i) { return (*d = i), i >= 0 && i < device_count() ? 0 : 101; }

EXPORT CUresult cuDeviceGetName(char *buf, int n, CUdevice d)
{
    snprintf(buf, (size_t)n, "Fake GPU %d", d);
    return 0;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = d == 0 ? 132 : 66; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 << 10; break;
    default: *v = 1024; break;
    }
    return 0;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { return (void)d, (*b = (size_t)80 << 30), 0; }
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { return (void)d, (*c = CONTEXT), 0; }
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return (void)d, 0; }
EXPORT CUresult cuCtxGetCurrent(CUcontext *c) { return (*c = current_ctx), 0; }
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c) { return (current_ctx = c), 0; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { return (current_ctx = c), 0; }
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c) { return (*c = current_ctx), (current_ctx = NULL), 0; }
EXPORT CUresult cuCtxSynchronize(void) { return 0; }

/* the main thread's id is the process's */
static int on_a_worker_thread(void) { return (pid_t)syscall(SYS_gettid) != getpid(); }

EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v)
{
    (void)image, (void)n, (void)o, (void)v;
    if (getenv("TJ_FAKE_CUDA_FAIL_WORKER_LOADS") && on_a_worker_thread())
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *m = (CUmodule)(void *)0x55;
    return 0;
}

EXPORT CUresult cuModuleUnload(CUmodule m) { return (void)m, 0; }

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    (void)m, (void)name;
    *f = (CUfunction)(void *)0x77;
    return 0;
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) { return (void)a, (void)f, (*v = 0), 0; }
EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { return (void)f, (void)a, (void)v, 0; }

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)s, (void)params,
        (void)extra;
    return 0;
}

/* Memory, streams and events: enough to exist; the JIT's compile path does
 * not call them. */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return (void)n, (*p = 0x10000), 0; }
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return (void)p, 0; }
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return (void)d, (void)s, (void)n, 0; }
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return (void)d, (void)s, (void)n, 0; }
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    return (void)d, (void)s, (void)n, (void)st, 0;
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    return (void)d, (void)s, (void)n, (void)st, 0;
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return (void)d, (void)v, (void)n, 0; }
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned f) { return (void)f, (*s = NULL), 0; }
EXPORT CUresult cuStreamDestroy_v2(CUstream s) { return (void)s, 0; }
EXPORT CUresult cuStreamSynchronize(CUstream s) { return (void)s, 0; }
EXPORT CUresult cuEventCreate(CUevent *e, unsigned f) { return (void)f, (*e = (CUevent)(void *)0xe0), 0; }
EXPORT CUresult cuEventDestroy_v2(CUevent e) { return (void)e, 0; }
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) { return (void)e, (void)s, 0; }
EXPORT CUresult cuEventSynchronize(CUevent e) { return (void)e, 0; }
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { return (void)a, (void)b, (*ms = 1), 0; }
/* a map holding its dims, stride and box, as the tests may read them back */
EXPORT CUresult cuTensorMapEncodeTiled(tj_cu_tensor_map *m, int dt, uint32_t rank, void *addr, const uint64_t *dims,
                                       const uint64_t *strides, const uint32_t *box, const uint32_t *es, int il,
                                       int sw, int l2, int oob)
{
    (void)es, (void)il, (void)l2, (void)oob;
    if (rank != 2 || !dims[0] || !dims[1] || strides[0] % 16 || (uintptr_t)addr % 16)
        return 1;
    *m = (tj_cu_tensor_map){{(uint64_t)(uintptr_t)addr, dims[0], dims[1], strides[0], box[0], box[1],
                             (uint64_t)dt, (uint64_t)sw}};
    return 0;
}
