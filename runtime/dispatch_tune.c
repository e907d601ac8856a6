/* tj_dispatch_tune: times a signature's configurations (the tuner of
 * tilejit/autotune.h; on the cpu through a device that compiles and times
 * each one's native code, or the interpreter's run) and keeps the fastest
 * in the signature's entry. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cache_jit.h"
#include "runtime/dispatch_internal.h"

typedef void (*progress_fn)(void *, uint32_t, uint32_t, const tj_tune_result *);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static tj_tune_request tune_request(const tj_dispatch *d, const tj_arg *args, uint32_t nargs, progress_fn progress,
                                    void *ud)
{
    const tj_compile_request *r = &d->req;
    return (tj_tune_request){
        .file = r->file, .source = r->source, .len = r->len, .kernel = r->kernel, .params = r->params,
        .nparams = r->nparams, .args = args, .nargs = nargs, .mode = TJ_TUNE_MISSING,
        .progress = progress, .progress_ud = ud,
    };
}

/* ---- CUDA: random data in device memory, outcomes in the disk cache ---------------------- */

static int tune_cuda(tj_dispatch *d, const tj_arg *args, uint32_t nargs, progress_fn progress, void *ud,
                     tj_tune_report *out, tj_rt_error *err)
{
    tj_arg *random = malloc(sizeof *random * (nargs + 1));
    if (!random) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return 1;
    }
    for (uint32_t i = 0; i < nargs; i++) {
        random[i] = args[i];
        random[i].tensor.data = NULL; /* the device fills it: ours may be device memory */
    }
    tj_tune_request tr = tune_request(d, random, nargs, progress, ud);
    tj_tune_device *dev = tj_tune_device_cuda(tj_jit_cuda(d->jit), d->req.arch, random, nargs, err);
    int rc = !dev || tj_tune(dev, tj_jit_disk_cache(d->jit), &tr, out, err);
    tj_tune_device_free(dev);
    free(random);
    return rc;
}

/* ---- the cpu: native code (or the interpreter), on copies ----------------------------------- */

/* A copy of each tensor's span (zeros where data is NULL), so that timing
 * runs never write the caller's memory; *bufs gets what to free. */
static int copy_tensors(const tj_arg *args, uint32_t nargs, tj_arg *copy, void **bufs)
{
    for (uint32_t i = 0; i < nargs; i++) {
        const tj_tensor *t = &args[i].tensor;
        copy[i] = args[i];
        bufs[i] = NULL;
        if (!args[i].is_tensor || t->rank < 0 || t->rank > TJ_MAX_RANK)
            continue;
        int64_t lo = 0, hi = 0, empty = 0;
        for (int k = 0; k < t->rank; k++) {
            empty |= t->shape[k] <= 0;
            int64_t reach = (t->shape[k] - 1) * t->strides[k];
            lo += reach < 0 ? reach : 0;
            hi += reach > 0 ? reach : 0;
        }
        size_t elem = (size_t)tj_dtype_size(t->dtype), bytes = empty ? 0 : (size_t)(hi - lo + 1) * elem;
        if (!(bufs[i] = calloc(1, bytes ? bytes : 1)))
            return 1;
        if (t->data && bytes)
            memcpy(bufs[i], (const char *)t->data + lo * (int64_t)elem, bytes);
        copy[i].tensor.data = (char *)bufs[i] - lo * (int64_t)elem;
    }
    return 0;
}

static int by_seconds(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { MIN_RUNS = 3, MAX_RUNS = 31 };
#define TIMING_BUDGET_S 0.02 /* per configuration: short kernels get more runs (a busy machine stalls a few) */

/* The median of 3 to 31 runs after a warm-up: as many as fit the budget. */
static int time_fn(tj_fn *f, const tj_arg *args, uint32_t nargs, double *seconds, tj_rt_error *err)
{
    double runs[MAX_RUNS], spent = 0;
    int n = 0;
    if (tj_fn_launch(f, args, nargs, NULL, err))
        return 1;
    while (n < MIN_RUNS || (n < MAX_RUNS && spent < TIMING_BUDGET_S)) {
        double t0 = now_s();
        if (tj_fn_launch(f, args, nargs, NULL, err))
            return 1;
        runs[n] = now_s() - t0;
        spent += runs[n++];
    }
    qsort(runs, (size_t)n, sizeof *runs, by_seconds);
    *seconds = runs[n / 2];
    return 0;
}

/* The tuner's cpu device: compiles a configuration (tj_jit_compile, so the
 * winner is then in the memory cache) and times it on the copies. */
typedef struct cpu_tuner {
    tj_tune_device dev;
    tj_dispatch *d;
    const tj_arg *args; /* the copies */
    uint32_t nargs;
    char id[160];
} cpu_tuner;

static int time_config(tj_tune_device *dev, const tj_binding *config, uint32_t nconfig, double *seconds,
                       tj_rt_error *err)
{
    cpu_tuner *ct = dev->self;
    char text[256], reason[300];
    tj_tune_config_text(config, nconfig, text, sizeof text);
    snprintf(reason, sizeof reason, "tuning: configuration %s", text);
    tj_compile_request req = ct->d->req;
    req.params = config;
    req.nparams = nconfig;
    req.args = ct->args;
    req.nargs = ct->nargs;
    req.reason = reason;
    tj_fn *f = tj_jit_compile(ct->d->jit, &req, err);
    int rc = !f || time_fn(f, ct->args, ct->nargs, seconds, err);
    tj_fn_release(f);
    return rc;
}

/* The configurations without a stored time are timed; with the native
 * back end, every outcome and the winner are stored in its disk cache
 * under the cpu's id (tj_jit_cpu_tune_id), so a later process (tilejit
 * run, tj_jit_compile) takes the winner and a second tuning times nothing.
 * Times of the interpreter, when it stands in, are not stored. */
static int tune_cpu(tj_dispatch *d, const tj_arg *args, uint32_t nargs, progress_fn progress, void *ud,
                    tj_tune_report *out, tj_rt_error *err)
{
    tj_arg *copy = malloc(sizeof *copy * (nargs + 1));
    void **bufs = calloc(nargs + 1, sizeof *bufs);
    int rc = !copy || !bufs || copy_tensors(args, nargs, copy, bufs);
    if (rc) {
        *out = (tj_tune_report){.best = -1};
        snprintf(err->msg, sizeof err->msg, "out of memory");
    } else {
        cpu_tuner ct = {.dev = {.arch = "llvm-cpu", .time_config = time_config}, .d = d, .args = copy, .nargs = nargs};
        ct.dev.self = &ct;
        ct.dev.id = ct.id;
        tj_jit_cpu_tune_id(d->jit, ct.id, sizeof ct.id);
        tj_cache *disk = ct.id[0] ? tj_jit_disk_cache(d->jit) : NULL;
        tj_tune_request tr = tune_request(d, args, nargs, progress, ud);
        rc = tj_tune(&ct.dev, disk, &tr, out, err);
        if (!rc && out->results[out->best].status != TJ_TUNE_OK) { /* none timed, none stored */
            snprintf(err->msg, sizeof err->msg, "no configuration of kernel '%s' ran: %s", d->req.kernel,
                     out->results[out->best].note);
            rc = 1;
        }
    }
    for (uint32_t i = 0; bufs && i < nargs; i++)
        free(bufs[i]);
    free(bufs);
    free(copy);
    return rc;
}

/* ---- keeping the winner ------------------------------------------------------------------ */

/* A malloc'ed copy of a configuration, its names in the same block. */
static tj_binding *copy_config(const tj_binding *config, uint32_t n)
{
    size_t size = sizeof *config * (n + 1);
    for (uint32_t i = 0; i < n; i++)
        size += strlen(config[i].name) + 1;
    tj_binding *copy = malloc(size);
    char *names = (char *)(copy + n + 1);
    for (uint32_t i = 0; copy && i < n; i++) {
        size_t len = strlen(config[i].name) + 1;
        copy[i] = (tj_binding){memcpy(names, config[i].name, len), config[i].value};
        names += len;
    }
    return copy;
}

/* The winner becomes the entry's configuration; its functions retire
 * (held: the memo or another thread may still point at one). */
static int keep_winner(tj_dispatch *d, dispatch_entry *e, const tj_tune_result *best)
{
    tj_binding *config = copy_config(best->config, best->nconfig);
    if (!config)
        return 1;
    if (d->retired_cap - d->nretired < e->nfns) { /* room first: a function in both lists is released twice */
        uint32_t cap = d->retired_cap ? d->retired_cap : 8;
        while (cap - d->nretired < e->nfns)
            cap *= 2;
        tj_fn **grown = realloc(d->retired, sizeof *grown * cap);
        if (!grown) {
            free(config);
            return 1;
        }
        d->retired = grown;
        d->retired_cap = cap;
    }
    for (uint32_t i = 0; i < e->nfns; i++)
        d->retired[d->nretired++] = e->fns[i];
    e->nfns = 0;
    free(e->tuned);
    e->tuned = config;
    e->ntuned = best->nconfig;
    d->memo_fn = NULL;
    return 0;
}

static void report_tuning(tj_dispatch *d, const tj_arg *args, uint32_t nargs, const tj_tune_result *best,
                          double seconds)
{
    char signature[512], config[256];
    tj_dispatch_signature_text(d, args, nargs, signature, sizeof signature);
    tj_tune_config_text(best->config, best->nconfig, config, sizeof config);
    tj_event e = {TJ_EVENT_TUNE, d->req.kernel, signature, config, "tj_dispatch_tune", TJ_BUILT, 1e3 * seconds};
    tj_jit_emit_event(d->jit, &e);
}

int tj_dispatch_tune_entry(tj_dispatch *d, dispatch_entry *e, const tj_arg *args, uint32_t nargs,
                           progress_fn progress, void *ud, tj_tune_report *out, tj_rt_error *err)
{
    tj_rt_error ignored;
    err = err ? err : &ignored;
    double t0 = now_s();
    int rc = tj_jit_device(d->jit) == TJ_DEVICE_CUDA ? tune_cuda(d, args, nargs, progress, ud, out, err)
                                                       : tune_cpu(d, args, nargs, progress, ud, out, err);
    if (rc)
        return 1;
    out->wall_seconds = now_s() - t0;
    const tj_tune_result *best = &out->results[out->best];
    report_tuning(d, args, nargs, best, out->wall_seconds);
    if (keep_winner(d, e, best)) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return 1;
    }
    return 0;
}
