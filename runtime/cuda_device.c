/* Device properties and the device list for `tilejit devices`. None of
 * this needs a context, so describing devices never creates one. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cuda_internal.h"

static const struct {
    CUdevice_attribute attr;
    size_t offset;
} prop_attrs[] = {
#define P(a, field) {CU_DEVICE_ATTRIBUTE_##a, offsetof(tj_cuda_props, field)}
    P(COMPUTE_CAPABILITY_MAJOR, cc_major),
    P(COMPUTE_CAPABILITY_MINOR, cc_minor),
    P(MULTIPROCESSOR_COUNT, sm_count),
    P(WARP_SIZE, warp_size),
    P(MAX_THREADS_PER_BLOCK, max_threads_per_block),
    P(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
    P(MAX_GRID_DIM_X, max_grid[0]),
    P(MAX_GRID_DIM_Y, max_grid[1]),
    P(MAX_GRID_DIM_Z, max_grid[2]),
    P(MAX_BLOCK_DIM_X, max_block[0]),
    P(MAX_BLOCK_DIM_Y, max_block[1]),
    P(MAX_BLOCK_DIM_Z, max_block[2]),
    P(MAX_SHARED_MEMORY_PER_BLOCK, shared_per_block),
    P(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, shared_per_block_optin),
    P(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, shared_per_sm),
    P(MAX_REGISTERS_PER_BLOCK, regs_per_block),
    P(MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_sm),
    P(L2_CACHE_SIZE, l2_bytes),
    P(CLOCK_RATE, clock_khz),
    P(MEMORY_CLOCK_RATE, mem_clock_khz),
    P(GLOBAL_MEMORY_BUS_WIDTH, mem_bus_bits),
#undef P
};

static int query_props(const tj_cu_api *api, int ordinal, tj_cuda_props *out, tj_rt_error *err)
{
    CUdevice dev;
    memset(out, 0, sizeof *out);
    out->ordinal = ordinal;
    if (tj_cu_check(api, api->DeviceGet(&dev, ordinal), "cuDeviceGet", err, "device %d", ordinal))
        return 1;
    if (tj_cu_check(api, api->DeviceGetName(out->name, (int)sizeof out->name, dev),
                    "cuDeviceGetName", err, "device %d", ordinal))
        return 1;
    out->name[sizeof out->name - 1] = '\0';
    for (size_t i = 0; i < sizeof prop_attrs / sizeof prop_attrs[0]; i++) {
        int *field = (int *)((char *)out + prop_attrs[i].offset);
        CUresult r = api->DeviceGetAttribute(field, prop_attrs[i].attr, dev);
        if (tj_cu_check(api, r, "cuDeviceGetAttribute", err, "device %d, attribute %d", ordinal,
                        prop_attrs[i].attr))
            return 1;
    }
    if (tj_cu_check(api, api->DeviceTotalMem(&out->total_mem, dev), "cuDeviceTotalMem_v2", err,
                    "device %d", ordinal))
        return 1;
    return tj_cu_check(api, api->DriverGetVersion(&out->driver_version), "cuDriverGetVersion", err,
                       "device %d", ordinal);
}

int tj_cuda_device_props(const tj_cuda *cu, int ordinal, tj_cuda_props *out, tj_rt_error *err)
{
    if (!cu || !out)
        return tj_rt_fail(err, "tj_cuda_device_props: NULL cuda or out");
    if (ordinal < 0 || ordinal >= cu->ndevices)
        return tj_rt_fail(err, "no CUDA device %d: there are %d", ordinal, cu->ndevices);
    return query_props(&cu->api, ordinal, out, err);
}

/* snprintf that advances through buf and never overruns it. */
static void put(char *buf, size_t n, size_t *used, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void put(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
    if (*used >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, n - *used, fmt, ap);
    va_end(ap);
    if (w > 0)
        *used = *used + (size_t)w < n ? *used + (size_t)w : n;
}

static void describe_device(const tj_cuda_props *p, char *buf, size_t n, size_t *used)
{
    put(buf, n, used,
        "cuda:%d  %s  sm_%d%d  %d SMs  %.1f GiB  %d KiB smem/block (opt-in %d KiB)  "
        "%d MiB L2  %d MHz  driver %d.%d\n",
        p->ordinal, p->name, p->cc_major, p->cc_minor, p->sm_count,
        (double)p->total_mem / (1024.0 * 1024.0 * 1024.0), p->shared_per_block / 1024,
        p->shared_per_block_optin / 1024, p->l2_bytes / (1024 * 1024), p->clock_khz / 1000,
        p->driver_version / 1000, p->driver_version % 1000 / 10);
}

int tj_cu_list_devices(const tj_cu_api *api, char *buf, size_t n, tj_rt_error *err)
{
    int count = 0;
    if (tj_cu_init(api, &count, err))
        return -1;
    size_t used = 0;
    for (int i = 0; i < count; i++) {
        tj_cuda_props p;
        if (query_props(api, i, &p, err))
            return -1;
        describe_device(&p, buf, n, &used);
    }
    return count;
}

int tj_cuda_describe(char *buf, size_t n)
{
    if (!buf)
        n = 0; /* only the count is asked for */
    tj_rt_error err = {{0}};
    tj_cu_api api;
    void *lib = NULL;
    int count = -1;
    if (n)
        buf[0] = '\0';
    if (!tj_cu_load_driver(NULL, &api, &lib, &err)) {
        count = tj_cu_list_devices(&api, buf, n, &err);
        dlclose(lib);
    }
    if (count > 0)
        return count;
    if (n)
        snprintf(buf, n, "cuda: not available: %s\n", err.msg);
    return 0;
}
