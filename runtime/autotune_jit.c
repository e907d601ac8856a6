/* The tuner inside tj_jit_compile: tile parameters a request leaves
 * unbound take the stored winner for the device and shape bucket
 * (TJ_TUNE_STORED, the default: a lookup, no timing), or the winner of a
 * tuning run that times what has no stored time (TJ_TUNE_MISSING; CUDA
 * only: the cpu times through tj_dispatch_tune, and its compiles look up). */
#include <stdio.h>
#include <string.h>

#include "runtime/autotune_internal.h"
#include "tilejit/tilejit.h"

/* Whether a tunable parameter (one with several values) is left unbound. */
static int leaves_tunable(const tj_program *p, int kernel, const tj_compile_request *req)
{
    const tj_tile_param *tp;
    uint32_t n = tj_kernel_tile_params(p, kernel, &tp);
    for (uint32_t i = 0; i < n; i++) {
        int bound = 0;
        for (uint32_t j = 0; req->params && j < req->nparams; j++)
            bound |= req->params[j].name && !strcmp(req->params[j].name, tp[i].name);
        if (tp[i].tunable && tp[i].nvalues > 1 && !bound)
            return 1;
    }
    return 0;
}

/* A device that only names itself: enough for looking up stored times. */
static tj_tune_device lookup_device(const tj_jit_cache *jc, const tj_cuda_props *props,
                                    const tj_compile_request *req, char *id, size_t n)
{
    const char *arch = tj_jit_cache_arch(jc, req);
    tj_tune_device_id(props, arch, id, n);
    return (tj_tune_device){.id = id, .arch = arch};
}

/* The winner stored for exactly this request, when it still satisfies
 * the where clauses for these shapes (the bucket's shapes may differ):
 * 0, with params set (left as they are when no configuration has a time).
 * -1: no such summary, or (TJ_TUNE_MISSING) one with configurations left
 * to time. */
static int stored_winner(tj_cache *disk, const tj_tune_device *dev, tj_ctx *c, const tj_program *p, int kernel,
                         const tj_tune_request *tr, const tj_binding **params, uint32_t *nparams)
{
    tj_binding *dims, *config;
    uint32_t ndims = tj_dims_from_args(c, p, kernel, tr->args, tr->nargs, &dims), nconfig;
    char bucket[160];
    tj_cache_key k;
    tj_tune_bucket(dims, ndims, bucket, sizeof bucket);
    tj_tune_winner_key(tr, dev->id, bucket, &k);
    int complete, found = tj_tune_winner_load(disk, &k, c, p, kernel, &config, &nconfig, &complete);
    if (found < 0 || (tr->mode == TJ_TUNE_MISSING && !complete))
        return -1;
    if (found == 1)
        return 0; /* no configuration has a time: tj_select_config's first valid one */
    if (tj_config_satisfies(c, p, kernel, config, nconfig, dims, ndims, NULL) != 1)
        return -1;
    *params = config;
    *nparams = nconfig;
    return 0;
}

static void copy_winner(tj_ctx *c, const tj_tune_result *best, const tj_binding **params, uint32_t *nparams)
{
    tj_binding *b = tj_alloc(c, sizeof *b * (best->nconfig + 1));
    for (uint32_t i = 0; i < best->nconfig; i++)
        b[i] = (tj_binding){tj_strdup(c, best->config[i].name), best->config[i].value};
    *params = b;
    *nparams = best->nconfig;
}

int tj_jit_tuned_params(tj_jit_cache *jc, tj_cuda *cu, tj_ctx *c, const tj_program *p, int kernel,
                        const tj_compile_request *req, const tj_binding **params, uint32_t *nparams)
{
    tj_tune_mode mode = tj_jit_cache_tune_mode(jc);
    if (mode == TJ_TUNE_OFF || !leaves_tunable(p, kernel, req))
        return 0;
    tj_rt_error err = {{0}};
    char id[320];
    tj_tune_device lookup = lookup_device(jc, tj_jit_cache_props(jc), req, id, sizeof id);
    tj_tune_request tr = {
        .file = req->file, .source = req->source, .len = req->len, .kernel = req->kernel,
        .params = req->params, .nparams = req->nparams, .args = req->args, .nargs = req->nargs, .mode = mode,
    };
    if (stored_winner(tj_jit_cache_disk(jc), &lookup, c, p, kernel, &tr, params, nparams) == 0)
        return 0;
    tj_tune_device *dev = mode == TJ_TUNE_MISSING
                              ? tj_tune_device_cuda(cu, tj_jit_cache_arch(jc, req), req->args, req->nargs, &err)
                              : &lookup;
    if (!dev) {
        tj_error(c, "autotuning kernel '%s': %s", req->kernel, err.msg);
        return 1;
    }
    tj_tune_report rep;
    int rc = tj_tune(dev, tj_jit_cache_disk(jc), &tr, &rep, &err);
    if (rc == 0 && rep.results[rep.best].status == TJ_TUNE_OK)
        copy_winner(c, &rep.results[rep.best], params, nparams);
    if (mode == TJ_TUNE_MISSING && rep.timed)
        tj_jit_cache_count_tuning(jc);
    tj_tune_report_free(&rep);
    if (dev != &lookup)
        tj_tune_device_free(dev);
    /* A failed lookup leaves the choice to tj_select_config, which reports
     * what is wrong with the kernel; a failed tuning run is an error. */
    if (rc && mode == TJ_TUNE_MISSING) {
        tj_error(c, "autotuning kernel '%s': %s", req->kernel, err.msg);
        return 1;
    }
    return 0;
}

int tj_jit_cpu_tuned_params(tj_cache *disk, const char *device_id, tj_tune_mode mode, tj_ctx *c, const tj_program *p,
                            int kernel, const tj_compile_request *req, const tj_binding **params, uint32_t *nparams)
{
    if (mode == TJ_TUNE_OFF || !disk || !device_id[0] || !leaves_tunable(p, kernel, req))
        return 0;
    tj_tune_device lookup = {.id = device_id, .arch = "llvm-cpu"};
    tj_tune_request tr = {
        .file = req->file, .source = req->source, .len = req->len, .kernel = req->kernel,
        .params = req->params, .nparams = req->nparams, .args = req->args, .nargs = req->nargs,
        .mode = TJ_TUNE_STORED,
    };
    if (stored_winner(disk, &lookup, c, p, kernel, &tr, params, nparams) == 0)
        return 0;
    /* No summary of the current records: the records themselves (and a
     * new summary), as on CUDA; nothing is timed. */
    tj_tune_report rep;
    tj_rt_error err = {{0}};
    if (tj_tune(&lookup, disk, &tr, &rep, &err) == 0 && rep.results[rep.best].status == TJ_TUNE_OK)
        copy_winner(c, &rep.results[rep.best], params, nparams);
    tj_tune_report_free(&rep);
    return 0; /* a failed lookup leaves the choice to tj_select_config, which reports what is wrong */
}
