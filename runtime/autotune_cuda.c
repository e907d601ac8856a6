/* The tuner's CUDA device: copies of the example arguments in device
 * memory (enough sets that rotating through them reads more than the L2
 * cache holds), loading of built variants, and timing with events: a
 * warm-up, then one event pair around each launch and the median. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_jit.h"
#include "tilejit/autotune.h"

enum {
    MAX_SETS = 8,
    WARMUP_LAUNCHES = 2,
    MIN_RUNS = 5,
    MAX_RUNS = 100,
};
#define TIME_BUDGET_S 0.02 /* of launches per configuration, after the warm-up */

typedef struct cuda_tuner {
    tj_tune_device dev;
    tj_cuda *cu;
    tj_cuda_props props;
    char id[320], arch[16];
    uint32_t nargs;
    tj_arg *sets[MAX_SETS]; /* the arguments, pointing into each set's buffers */
    void **buffers;         /* nargs * nsets device allocations */
    int nsets, next;
    void *events[2 * MAX_RUNS];
} cuda_tuner;

typedef struct loaded {
    tj_cuda_module *module;
    tj_cuda_function fn;
} loaded;

void tj_tune_device_id(const tj_cuda_props *props, const char *arch, char *buf, size_t n)
{
    if (!buf || !n)
        return;
    if (!props || !arch) {
        buf[0] = 0;
        return;
    }
    /* Two GPUs of one name may differ (a MIG slice, a clocked-down part):
     * each keeps its own winners. */
    snprintf(buf, n, "%s/%s/%dsm/%dMHz", props->name, arch, props->sm_count, props->clock_khz / 1000);
}

/* ---- the argument copies ------------------------------------------------------------ */

/* Offsets (in elements) of the lowest and highest element a tensor view reaches. */
static int tensor_span(const tj_tensor *t, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int a = 0; a < t->rank; a++) {
        if (t->shape[a] <= 0)
            return 0;
        int64_t reach = (t->shape[a] - 1) * t->strides[a];
        *(reach < 0 ? lo : hi) += reach;
    }
    return 1;
}

static size_t tensor_bytes(const tj_tensor *t)
{
    int64_t lo, hi;
    return tensor_span(t, &lo, &hi) ? (size_t)(hi - lo + 1) * (size_t)tj_dtype_size(t->dtype) : 0;
}

/* Random values as bytes of the dtype, made from random mantissa bits
 * (no conversions: gigabytes take a fraction of a second): floats in
 * [0.5, 1), integers in [0, 16) (valid indices for gathers of 16 rows or
 * more), bools 0 or 1. */
static uint64_t random_bits(tj_dtype dt, uint64_t r)
{
    switch (dt) {
    case TJ_DT_F64: return 0x3FE0000000000000ull | (r & 0xFFFFFFFFFFFFFull);
    case TJ_DT_F32: return 0x3F000000u | (r & 0x7FFFFFu);
    case TJ_DT_F16: return 0x3800u | (r & 0x3FFu);
    case TJ_DT_BF16: return 0x3F00u | (r & 0x7Fu);
    case TJ_DT_BOOL: return r & 1;
    default: return r % 16;
    }
}

static void fill_random(void *data, size_t bytes, tj_dtype dt, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t esize = (size_t)tj_dtype_size(dt);
    unsigned char *p = data;
    for (size_t i = 0; i + esize <= bytes; i += esize) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint64_t v = random_bits(dt, s >> 11);
        memcpy(p + i, &v, esize); /* the low bytes: little-endian */
    }
}

/* Argument i in every set: a copy of its host data (or of random data,
 * made once) in a device buffer per set. */
static int copy_argument(cuda_tuner *ct, const tj_arg *args, uint32_t i, tj_rt_error *err)
{
    for (int set = 0; set < ct->nsets; set++)
        ct->sets[set][i] = args[i];
    size_t bytes = args[i].is_tensor ? tensor_bytes(&args[i].tensor) : 0;
    if (!bytes)
        return 0;
    int64_t lo, hi;
    tensor_span(&args[i].tensor, &lo, &hi);
    size_t off = (size_t)(-lo) * (size_t)tj_dtype_size(args[i].tensor.dtype);
    void *host = args[i].tensor.data ? (char *)args[i].tensor.data - off : malloc(bytes);
    if (!host)
        return 1;
    if (!args[i].tensor.data)
        fill_random(host, bytes, args[i].tensor.dtype, i + 1);
    int rc = 0;
    for (int set = 0; set < ct->nsets && !rc; set++) {
        void *dev = tj_cuda_malloc(ct->cu, bytes, err);
        ct->buffers[(size_t)set * ct->nargs + i] = dev;
        rc = !dev || tj_cuda_memcpy_htod(ct->cu, dev, host, bytes, err);
        if (!rc)
            ct->sets[set][i].tensor.data = (char *)dev + off;
    }
    if (!args[i].tensor.data)
        free(host);
    return rc;
}

/* Enough sets that one round reads at least twice the L2 cache, within an
 * eighth of the device's memory. */
static int set_count(const cuda_tuner *ct, const tj_arg *args)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < ct->nargs; i++)
        bytes += args[i].is_tensor ? tensor_bytes(&args[i].tensor) : 0;
    if (!bytes)
        return 1;
    size_t want = 2 * (size_t)ct->props.l2_bytes / bytes + 1;
    size_t fit = ct->props.total_mem / 8 / bytes;
    size_t n = want < fit ? want : fit;
    return n < 1 ? 1 : n > MAX_SETS ? MAX_SETS : (int)n;
}

/* ---- loading and timing ---------------------------------------------------------------- */

static void *cuda_load(tj_tune_device *d, const tj_tune_variant *v, tj_tune_attrs *attrs, tj_rt_error *err)
{
    cuda_tuner *ct = d->self;
    loaded *l = calloc(1, sizeof *l);
    tj_cuda_func_attrs fa;
    if (!l)
        return NULL;
    const char *name = v->simt->name;
    l->module = v->cubin ? tj_cuda_module_load_cubin(ct->cu, v->cubin, v->cubin_size, name, err)
                         : tj_cuda_module_load_ptx(ct->cu, v->ptx, name, err);
    if (!l->module || tj_cuda_module_function(l->module, name, &l->fn, err) ||
        (v->simt->smem_bytes > 48 * 1024 &&
         tj_cuda_function_set_max_dynamic_shared(&l->fn, (int)v->simt->smem_bytes, err)) ||
        tj_cuda_function_attrs(&l->fn, &fa, err)) {
        d->unload(d, l);
        return NULL;
    }
    *attrs = (tj_tune_attrs){fa.num_regs, fa.local_bytes, fa.max_threads_per_block};
    return l;
}

static void cuda_unload(tj_tune_device *d, void *handle)
{
    (void)d;
    loaded *l = handle;
    if (l && l->module)
        tj_cuda_module_unload(l->module);
    free(l);
}

/* Launches on the next set of arguments; when `ev` is given, between the
 * events ev[0] and ev[1]. */
static int launch(cuda_tuner *ct, const loaded *l, const tj_tune_variant *v, void **ev, tj_rt_error *err)
{
    tj_cuda_launch_dims dims = {.block = {v->simt->nthreads, 1, 1}, .shared_bytes = v->simt->smem_bytes};
    for (int i = 0; i < 3; i++)
        dims.grid[i] = (uint32_t)v->grid[i];
    const tj_arg *args = ct->sets[ct->next];
    ct->next = (ct->next + 1) % ct->nsets;
    return (ev && tj_cuda_event_record(ct->cu, ev[0], NULL, err)) ||
           tj_cuda_launch_kernel(&l->fn, &dims, v->simt, args, ct->nargs, err) ||
           (ev && tj_cuda_event_record(ct->cu, ev[1], NULL, err));
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Events around `runs` launches, read after one synchronization. */
static int timed_runs(cuda_tuner *ct, const loaded *l, const tj_tune_variant *v, int runs, double *ms,
                      tj_rt_error *err)
{
    for (int r = 0; r < runs; r++)
        if (launch(ct, l, v, &ct->events[2 * r], err))
            return 1;
    if (tj_cuda_event_synchronize(ct->cu, ct->events[2 * runs - 1], err))
        return 1;
    for (int r = 0; r < runs; r++) {
        float t;
        if (tj_cuda_event_elapsed(ct->cu, ct->events[2 * r], ct->events[2 * r + 1], &t, err))
            return 1;
        ms[r] = t;
    }
    return 0;
}

static int cuda_time(tj_tune_device *d, void *handle, const tj_tune_variant *v, double *seconds, tj_rt_error *err)
{
    cuda_tuner *ct = d->self;
    double ms[MAX_RUNS];
    if (v->grid[0] == 0 || v->grid[1] == 0 || v->grid[2] == 0) {
        *seconds = 0;
        return 0;
    }
    for (int i = 0; i < WARMUP_LAUNCHES; i++)
        if (launch(ct, handle, v, NULL, err))
            return 1;
    if (timed_runs(ct, handle, v, 1, ms, err))
        return 1;
    double per = ms[0] > 1e-4 ? ms[0] * 1e-3 : 1e-7;
    int runs = (int)(TIME_BUDGET_S / per);
    runs = runs < MIN_RUNS ? MIN_RUNS : runs > MAX_RUNS ? MAX_RUNS : runs;
    if (timed_runs(ct, handle, v, runs, ms, err))
        return 1;
    qsort(ms, (size_t)runs, sizeof *ms, by_value);
    *seconds = 1e-3 * ms[runs / 2];
    return 0;
}

/* ---- the device ---------------------------------------------------------------------------- */

void tj_tune_device_free(tj_tune_device *d)
{
    if (d && d->destroy)
        d->destroy(d);
}

static void cuda_destroy(tj_tune_device *d)
{
    cuda_tuner *ct = d->self;
    for (size_t i = 0; ct->buffers && i < (size_t)MAX_SETS * ct->nargs; i++)
        if (ct->buffers[i])
            tj_cuda_free(ct->cu, ct->buffers[i], NULL);
    for (int i = 0; i < 2 * MAX_RUNS; i++)
        if (ct->events[i])
            tj_cuda_event_destroy(ct->cu, ct->events[i], NULL);
    for (int s = 0; s < MAX_SETS; s++)
        free(ct->sets[s]);
    free(ct->buffers);
    free(ct);
}

static int setup(cuda_tuner *ct, const tj_arg *args, tj_rt_error *err)
{
    if (tj_cuda_device_props(ct->cu, tj_cuda_ordinal(ct->cu), &ct->props, err))
        return 1;
    ct->buffers = calloc((size_t)MAX_SETS * ct->nargs + 1, sizeof *ct->buffers);
    if (!ct->buffers)
        return 1;
    for (int i = 0; i < 2 * MAX_RUNS; i++)
        if (!(ct->events[i] = tj_cuda_event_create(ct->cu, err)))
            return 1;
    ct->nsets = set_count(ct, args);
    for (int s = 0; s < ct->nsets; s++)
        if (!(ct->sets[s] = calloc(ct->nargs + 1, sizeof *ct->sets[s])))
            return 1;
    for (uint32_t i = 0; i < ct->nargs; i++)
        if (copy_argument(ct, args, i, err))
            return 1;
    return 0;
}

tj_tune_device *tj_tune_device_cuda(tj_cuda *cu, const char *arch, const tj_arg *args, uint32_t nargs,
                                    tj_rt_error *err)
{
    if (!cu || !tj_array_ok(args, nargs)) {
        tj_rt_fail(err, "tj_tune_device_cuda: NULL cuda, or NULL args with nargs = %u", nargs);
        return NULL;
    }
    cuda_tuner *ct = calloc(1, sizeof *ct);
    if (!ct)
        return NULL;
    ct->cu = cu;
    ct->nargs = nargs;
    ct->dev.self = ct;
    ct->dev.destroy = cuda_destroy;
    if (setup(ct, args, err)) {
        cuda_destroy(&ct->dev);
        return NULL;
    }
    snprintf(ct->arch, sizeof ct->arch, "%s", arch ? arch : tj_cuda_default_arch(&ct->props));
    tj_tune_device_id(&ct->props, ct->arch, ct->id, sizeof ct->id);
    ct->dev.id = ct->id;
    ct->dev.arch = ct->arch;
    ct->dev.wants_cubin = 1;
    ct->dev.max_smem = (uint32_t)ct->props.shared_per_block_optin;
    ct->dev.max_threads = (uint32_t)ct->props.max_threads_per_block;
    ct->dev.load = cuda_load;
    ct->dev.time = cuda_time;
    ct->dev.unload = cuda_unload;
    return &ct->dev;
}
