/* Loading the CUDA driver, opening a device's primary context, making it
 * current around each call, and turning CUresults into messages. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_internal.h"

static const struct {
    const char *sym, *alt;
    size_t offset;
} cu_symbols[] = {
#define X(ret, field, sym, alt, params) {sym, alt, offsetof(tj_cu_api, field)},
    TJ_CU_FUNCS(X)
#undef X
};

/* ---- errors ------------------------------------------------------------ */

static void prefix_error(tj_rt_error *err, const char *prefix)
{
    if (!err)
        return;
    size_t plen = strlen(prefix), cap = sizeof err->msg - 1;
    if (plen > cap)
        plen = cap;
    size_t keep = strlen(err->msg);
    if (keep > cap - plen)
        keep = cap - plen; /* truncates the tail */
    memmove(err->msg + plen, err->msg, keep);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + keep] = '\0';
}

void tj_rt_append_log(tj_rt_error *err, const char *log)
{
    if (!err || !log)
        return;
    size_t n = strlen(log);
    while (n &&
           (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r' || log[n - 1] == '\0'))
        n--;
    if (!n)
        return;
    size_t used = strlen(err->msg), room = sizeof err->msg - used;
    int w = snprintf(err->msg + used, room, ":\n%.*s", (int)(n > 65536 ? 65536 : n), log);
    if (w >= 0 && (size_t)w >= room && sizeof err->msg > 4)
        memcpy(err->msg + sizeof err->msg - 4, "...", 4);
}

/* What the driver's cuGetErrorName/String cannot say when it is not a
 * working driver (the toolkit's stub answers nothing). */
static const struct {
    CUresult r;
    const char *name, *text;
} early_errors[] = {
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "libcuda.so.1 is the CUDA toolkit's stub library, not a driver"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
};

static void error_name(const tj_cu_api *api, CUresult r, const char **name, const char **text)
{
    *name = *text = NULL;
    if (api->GetErrorName(r, name) != CUDA_SUCCESS)
        *name = NULL;
    if (api->GetErrorString(r, text) != CUDA_SUCCESS)
        *text = NULL;
    for (size_t i = 0; i < sizeof early_errors / sizeof early_errors[0] && !*name; i++)
        if (early_errors[i].r == r) {
            *name = early_errors[i].name;
            *text = early_errors[i].text;
        }
    if (!*text)
        *text = "unknown error";
}

int tj_cu_check(const tj_cu_api *api, CUresult r, const char *what, tj_rt_error *err,
                const char *doing, ...)
{
    if (r == CUDA_SUCCESS)
        return 0;
    if (!err)
        return 1;
    const char *name, *text;
    error_name(api, r, &name, &text);
    char ctx[256];
    va_list ap;
    va_start(ap, doing);
    vsnprintf(ctx, sizeof ctx, doing, ap);
    va_end(ap);
    if (name)
        snprintf(err->msg, sizeof err->msg, "%s (%s): %s: %s", what, ctx, name, text);
    else
        snprintf(err->msg, sizeof err->msg, "%s (%s): CUresult %d: %s", what, ctx, r, text);
    return 1;
}

/* ---- loading ----------------------------------------------------------- */

int tj_cu_load_driver(const char *path, tj_cu_api *api, void **lib, tj_rt_error *err)
{
    /* RTLD_NODELETE: the driver keeps threads and atexit handlers, so it is
     * never unloaded, even after the last tj_cuda_close. */
    path = path ? path : "libcuda.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *why = dlerror();
        return tj_rt_fail(err, "no CUDA driver: %s not found (%s)", path,
                          why ? why : "dlopen failed");
    }
    for (size_t i = 0; i < sizeof cu_symbols / sizeof cu_symbols[0]; i++) {
        void *f = dlsym(h, cu_symbols[i].sym);
        if (!f && cu_symbols[i].alt)
            f = dlsym(h, cu_symbols[i].alt);
        if (!f) {
            dlclose(h);
            return tj_rt_fail(err, "CUDA driver too old: %s lacks %s", path, cu_symbols[i].sym);
        }
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy((char *)api + cu_symbols[i].offset, &f, sizeof f);
    }
    *lib = h;
    return 0;
}

int tj_cu_init(const tj_cu_api *api, int *count, tj_rt_error *err)
{
    CUresult r = api->Init(0);
    if (tj_cu_check(api, r, "cuInit", err, "initializing the CUDA driver")) {
        prefix_error(err, r == CUDA_ERROR_STUB_LIBRARY ? "no CUDA driver: " : "no CUDA device: ");
        return 1;
    }
    if (tj_cu_check(api, api->DeviceGetCount(count), "cuDeviceGetCount", err, "counting devices"))
        return 1;
    if (*count <= 0)
        return tj_rt_fail(err, "no CUDA device: the driver reports none");
    return 0;
}

static int find_device(const tj_cu_api *api, int ordinal, int *count, CUdevice *dev,
                       tj_rt_error *err)
{
    if (tj_cu_init(api, count, err))
        return 1;
    if (ordinal < 0 || ordinal >= *count)
        return tj_rt_fail(err, "no CUDA device %d: there %s %d (0 to %d)", ordinal,
                          *count == 1 ? "is" : "are", *count, *count - 1);
    return tj_cu_check(api, api->DeviceGet(dev, ordinal), "cuDeviceGet", err, "device %d", ordinal);
}

tj_cuda *tj_cuda_open_api(const tj_cu_api *api, void *lib, int ordinal, tj_rt_error *err)
{
    int count = 0;
    CUdevice dev = 0;
    if (find_device(api, ordinal, &count, &dev, err))
        return NULL;
    tj_cuda *cu = calloc(1, sizeof *cu);
    if (!cu) {
        tj_rt_fail(err, "out of memory opening CUDA device %d", ordinal);
        return NULL;
    }
    cu->api = *api;
    cu->ndevices = count;
    cu->ordinal = ordinal;
    cu->device = dev;
    CUresult r = api->DevicePrimaryCtxRetain(&cu->ctx, dev);
    if (tj_cu_check(api, r, "cuDevicePrimaryCtxRetain", err, "device %d", ordinal)) {
        free(cu);
        return NULL;
    }
    cu->lib = lib;
    return cu;
}

tj_cuda *tj_cuda_open(int ordinal, tj_rt_error *err)
{
    if (ordinal < 0) {
        tj_rt_fail(err, "tj_cuda_open: no CUDA device %d", ordinal);
        return NULL;
    }
    tj_cu_api api;
    void *lib = NULL;
    if (tj_cu_load_driver(NULL, &api, &lib, err))
        return NULL;
    tj_cuda *cu = tj_cuda_open_api(&api, lib, ordinal, err);
    if (!cu)
        dlclose(lib);
    return cu;
}

void tj_cuda_close(tj_cuda *cu)
{
    if (!cu)
        return;
    CUcontext cur = NULL;
    if (cu->api.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == cu->ctx)
        cu->api.CtxSetCurrent(NULL); /* tj_cu_enter may have left it current here */
    cu->api.DevicePrimaryCtxRelease(cu->device);
    if (cu->lib)
        dlclose(cu->lib);
    free(cu);
}

int tj_cuda_device_count(const tj_cuda *cu) { return cu ? cu->ndevices : 0; }
int tj_cuda_ordinal(const tj_cuda *cu) { return cu ? cu->ordinal : -1; }

/* ---- the current context ----------------------------------------------- */

int tj_cu_enter(const tj_cuda *cu, int *pushed, tj_rt_error *err)
{
    CUcontext cur = NULL;
    *pushed = 0;
    if (cu->api.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == cu->ctx)
        return 0; /* the caller (or another library) made it current already */
    /* A thread with no current context gets ours and keeps it, as the CUDA
     * runtime does with primary contexts: later calls from this thread then
     * skip the push and pop (about a microsecond per launch). */
    if (!cur && cu->api.CtxSetCurrent(cu->ctx) == CUDA_SUCCESS)
        return 0;
    if (tj_cu_check(&cu->api, cu->api.CtxPushCurrent(cu->ctx), "cuCtxPushCurrent_v2", err,
                    "making device %d's context current", cu->ordinal))
        return 1;
    *pushed = 1;
    return 0;
}

void tj_cu_leave(const tj_cuda *cu, int pushed)
{
    CUcontext popped;
    if (pushed)
        cu->api.CtxPopCurrent(&popped);
}
