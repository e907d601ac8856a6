/* The `cuda` device: compiles through the JIT API (tilejit/jit.h) for the
 * example arguments, copies tensors to device buffers and back, and times
 * launches with CUDA events. */
#include <string.h>

#include "run.h"
#include "tilejit/jit.h"

typedef struct cuda_state {
    tj_jit *jit;
    tj_cuda *cu;
    tj_fn *fn;
    tj_arg *dev_args; /* the arguments with device buffers */
    void *events[2];
} cuda_state;

static int cuda_fail(run_session *s, const char *doing, const tj_rt_error *err)
{
    tj_error(s->c, "device cuda: %s: %s", doing, err->msg);
    return -1;
}

static const char *cuda_unavailable(tj_ctx *c)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu)
        return tj_strdup(c, err.msg);
    tj_cuda_close(cu);
    return NULL;
}

/* Lists each GPU the driver reports, or why there is none. */
static void cuda_describe(tj_ctx *c, const run_device *d)
{
    (void)c;
    (void)d;
    char buf[4096];
    tj_cuda_describe(buf, sizeof buf);
    fputs(buf, stdout);
}

/* A device buffer for each tensor (none for an empty one). */
static int alloc_buffers(run_session *s, cuda_state *st)
{
    const run_request *r = s->req;
    st->dev_args = tj_alloc(s->c, (r->nargs + 1) * sizeof *st->dev_args);
    for (uint32_t i = 0; i < r->nargs; i++) {
        st->dev_args[i] = r->args[i];
        size_t bytes = r->args[i].is_tensor ? run_bytes(&r->args[i].tensor) : 0;
        if (!r->args[i].is_tensor || !bytes)
            continue;
        tj_rt_error err = {{0}};
        st->dev_args[i].tensor.data = tj_cuda_malloc(st->cu, bytes, &err);
        if (!st->dev_args[i].tensor.data)
            return cuda_fail(s, "allocating device memory", &err);
    }
    return 0;
}

static void cuda_warning(void *ud, const char *msg) { tj_diag_report(ud, TJ_SEV_WARNING, 0, 0, 0, "%s", msg); }

static int cuda_open(run_session *s)
{
    const run_request *r = s->req;
    cuda_state *st = s->impl = tj_alloc(s->c, sizeof *st);
    tj_rt_error err = {{0}};
    st->jit = tj_jit_open(TJ_DEVICE_CUDA, r->ordinal, &err);
    if (!st->jit) {
        char what[32];
        snprintf(what, sizeof what, "opening device %d", r->ordinal);
        return cuda_fail(s, what, &err);
    }
    st->cu = tj_jit_cuda(st->jit);
    /* the cache's one warning (e.g. a read-only directory), and tuning */
    tj_cache_set_warning_handler(tj_jit_disk_cache(st->jit), cuda_warning, s->c);
    tj_jit_set_tune_mode(st->jit, r->tune ? TJ_TUNE_MISSING : TJ_TUNE_STORED);
    tj_compile_request req = {
        .file = r->k->path, .source = r->k->text, .len = r->k->len,
        .kernel = r->tile->name,
        .params = r->defines, .nparams = r->ndefines, .args = r->args, .nargs = r->nargs,
    };
    st->fn = tj_jit_compile(st->jit, &req, &err);
    if (!st->fn)
        return cuda_fail(s, "compiling", &err);
    for (int i = 0; i < 2; i++)
        if (!(st->events[i] = tj_cuda_event_create(st->cu, &err)))
            return cuda_fail(s, "creating an event", &err);
    return alloc_buffers(s, st);
}

/* Copies every tensor between host args and the device buffers. */
static int copy_tensors(run_session *s, const tj_arg *host, int to_device)
{
    cuda_state *st = s->impl;
    for (uint32_t i = 0; i < s->req->nargs; i++) {
        size_t bytes = host[i].is_tensor ? run_bytes(&host[i].tensor) : 0;
        if (!bytes)
            continue;
        tj_rt_error err = {{0}};
        void *dev = st->dev_args[i].tensor.data;
        int rc = to_device ? tj_cuda_memcpy_htod(st->cu, dev, host[i].tensor.data, bytes, &err)
                           : tj_cuda_memcpy_dtoh(st->cu, host[i].tensor.data, dev, bytes, &err);
        if (rc)
            return cuda_fail(s, to_device ? "copying to the device" : "copying from the device", &err);
    }
    return 0;
}

static int launch_sync(run_session *s)
{
    cuda_state *st = s->impl;
    tj_rt_error err = {{0}};
    if (tj_fn_launch(st->fn, st->dev_args, s->req->nargs, NULL, &err) || tj_cuda_synchronize(st->cu, &err))
        return cuda_fail(s, "running the kernel", &err);
    return 0;
}

static int cuda_run(run_session *s, tj_arg *args)
{
    return copy_tensors(s, args, 1) || launch_sync(s) || copy_tensors(s, args, 0) ? -1 : 0;
}

/* One launch between two events on the default stream. */
static int timed_launch(run_session *s, double *seconds)
{
    cuda_state *st = s->impl;
    tj_rt_error err = {{0}};
    float ms = 0;
    if (tj_cuda_event_record(st->cu, st->events[0], NULL, &err) ||
        tj_fn_launch(st->fn, st->dev_args, s->req->nargs, NULL, &err) ||
        tj_cuda_event_record(st->cu, st->events[1], NULL, &err) ||
        tj_cuda_event_synchronize(st->cu, st->events[1], &err) ||
        tj_cuda_event_elapsed(st->cu, st->events[0], st->events[1], &ms, &err))
        return cuda_fail(s, "timing the kernel", &err);
    *seconds = 1e-3 * ms;
    return 0;
}

/* The device buffers start from the inputs; later runs see earlier runs'
 * results (only the real run's are written back). */
static int cuda_time(run_session *s, const tj_arg *inputs, run_timing *t)
{
    double warmup;
    if (copy_tensors(s, inputs, 1) || timed_launch(s, &warmup))
        return -1;
    t->runs = run_count(t, warmup);
    double *times = tj_alloc(s->c, (size_t)t->runs * sizeof *times);
    for (int r = 0; r < t->runs; r++)
        if (timed_launch(s, &times[r]))
            return -1;
    t->median_s = run_median(times, t->runs);
    return 0;
}

static void cuda_close(run_session *s)
{
    cuda_state *st = s->impl;
    if (!st || !st->jit)
        return;
    for (uint32_t i = 0; st->dev_args && i < s->req->nargs; i++)
        if (st->dev_args[i].is_tensor && st->dev_args[i].tensor.data != s->req->args[i].tensor.data)
            tj_cuda_free(st->cu, st->dev_args[i].tensor.data, NULL);
    for (int i = 0; i < 2; i++)
        if (st->events[i])
            tj_cuda_event_destroy(st->cu, st->events[i], NULL);
    tj_jit_close(st->jit);
    st->jit = NULL;
}

const run_device run_device_cuda = {
    "cuda", "NVIDIA GPUs through the CUDA driver", cuda_unavailable, cuda_describe,
    cuda_open, cuda_run, cuda_time, cuda_close,
};
