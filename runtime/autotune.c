/* tj_tune: enumerate the configurations, prune them by `where`, reuse
 * stored outcomes, build the rest on worker threads (autotune_build.c),
 * time them one by one on the device as they come, store each outcome
 * (autotune_store.c), and pick the fastest. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/autotune_internal.h"
#include "tilejit/tilejit.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void settle(tune_run *t, tune_item *it)
{
    it->settled = 1;
    t->done++;
    if (t->req->progress)
        t->req->progress(t->req->progress_ud, t->done, t->nitems, it->r);
}

/* ---- the candidates ---------------------------------------------------------------- */

static const tj_binding *fixed_value(const tj_tune_request *req, const char *name)
{
    for (uint32_t i = 0; req->params && i < req->nparams; i++)
        if (req->params[i].name && !strcmp(req->params[i].name, name))
            return &req->params[i];
    return NULL;
}

/* The declared tile parameters' values (a fixed one has one), and the
 * fixed parameters the kernel does not declare (warps, stages) after them. */
typedef struct space {
    const char **names;
    const int64_t **values;
    uint32_t *counts, n, nfixed_extra;
    uint64_t total;
} space;

static void make_space(tune_run *t, space *s)
{
    const tj_tile_param *tp;
    uint32_t n = tj_kernel_tile_params(t->p, t->kernel, &tp), cap = n + t->req->nparams + 1;
    s->names = tj_alloc(t->c, sizeof *s->names * cap);
    s->values = tj_alloc(t->c, sizeof *s->values * cap);
    s->counts = tj_alloc(t->c, sizeof *s->counts * cap);
    s->n = 0;
    s->total = 1;
    for (uint32_t i = 0; i < n; i++) {
        const tj_binding *f = fixed_value(t->req, tp[i].name);
        s->names[s->n] = tp[i].name;
        s->values[s->n] = f ? &f->value : tp[i].values;
        s->counts[s->n] = f ? 1 : tp[i].nvalues;
        if (s->total <= TJ_TUNE_MAX_CONFIGS)
            s->total *= s->counts[s->n];
        s->n++;
    }
    for (uint32_t i = 0; t->req->params && i < t->req->nparams; i++) {
        int declared = 0;
        for (uint32_t j = 0; j < n; j++)
            declared |= !strcmp(tp[j].name, t->req->params[i].name);
        if (!declared) {
            s->names[s->n] = t->req->params[i].name;
            s->values[s->n] = &t->req->params[i].value;
            s->counts[s->n++] = 1;
        }
    }
}

/* Item i's values: the first parameter varies slowest, as tj_select_config
 * walks them. */
static void make_item(tune_run *t, const space *s, uint64_t index, tune_item *it, tj_tune_result *r)
{
    it->r = r;
    it->given = tj_alloc(t->c, sizeof *it->given * (s->n + 1));
    it->ngiven = s->n;
    for (uint32_t k = s->n; k-- > 0;) {
        it->given[k] = (tj_binding){s->names[k], s->values[k][index % s->counts[k]]};
        index /= s->counts[k];
    }
    r->config = it->given;
    r->nconfig = it->ngiven;
    r->status = TJ_TUNE_UNTIMED;
    r->regs = r->spill_bytes = -1;
}

static int enumerate(tune_run *t)
{
    space s;
    make_space(t, &s);
    if (s.total > TJ_TUNE_MAX_CONFIGS) {
        tj_error(t->c, "kernel '%s' has more than %d configurations to tune", t->kernel_name, TJ_TUNE_MAX_CONFIGS);
        return -1;
    }
    t->nitems = (uint32_t)s.total;
    t->items = tj_alloc(t->c, sizeof *t->items * (t->nitems + 1));
    tj_tune_result *results = tj_alloc(t->c, sizeof *results * (t->nitems + 1));
    for (uint32_t i = 0; i < t->nitems; i++)
        make_item(t, &s, i, &t->items[i], &results[i]);
    return 0;
}

/* ---- examining each candidate on the calling thread ----------------------------------- */

static void failed_here(tune_run *t, tune_item *it, uint32_t diags_before)
{
    it->r->status = TJ_TUNE_FAILED;
    tj_tune_note_diag(it->r->note, sizeof it->r->note, t->c, diags_before, "failed");
}

/* Where clauses, the whole configuration, its record. -1: an error in the
 * source that every configuration shares. */
static int examine(tune_run *t, tune_item *it, int may_time)
{
    const char *clause;
    tj_binding *config;
    uint32_t nconfig, before = tj_diag_count(t->c);
    int ok = tj_config_satisfies(t->c, t->p, t->kernel, it->given, it->ngiven, t->dims, t->ndims, &clause);
    if (ok < 0)
        return -1;
    if (!ok) {
        it->r->status = TJ_TUNE_PRUNED_WHERE;
        snprintf(it->r->note, sizeof it->r->note, "where %s", clause);
        settle(t, it);
        return 0;
    }
    if (tj_select_config(t->c, t->p, t->kernel, it->given, it->ngiven, t->dims, t->ndims, &config, &nconfig))
        return -1;
    it->r->config = config;
    it->r->nconfig = nconfig;
    tj_kernel *tile = tj_build_kernel(t->c, t->p, t->kernel, config, nconfig, t->dims, t->ndims);
    if (!tile || tj_optimize(tile, 0)) {
        failed_here(t, it, before);
        settle(t, it);
        return 0;
    }
    if (!t->dev || !t->dev->arch) { /* the cpu: nothing to time */
        settle(t, it);
        return 0;
    }
    tj_tune_record_key(tile, t->dev->id, t->bucket, &it->key);
    if (tj_tune_record_load(t, it) == 0 || !may_time)
        settle(t, it);
    else
        t->todo[t->ntodo++] = (uint32_t)(it - t->items);
    return 0;
}

/* The arguments as the compiler sees them: tensors whose data is NULL (for
 * the device to fill) get a placeholder address, aligned like the device's
 * allocations, that nothing dereferences. */
static const tj_arg *compile_args(tune_run *t)
{
    tj_arg *a = tj_alloc(t->c, sizeof *a * (t->req->nargs + 1));
    for (uint32_t i = 0; i < t->req->nargs; i++) {
        a[i] = t->req->args[i];
        if (a[i].is_tensor && !a[i].tensor.data)
            a[i].tensor.data = (void *)(uintptr_t)256;
    }
    return a;
}

/* Parses, binds dims, enumerates and examines every candidate (under tj_guarded). */
static int prepare(void *arg)
{
    tune_run *t = arg;
    const tj_tune_request *req = t->req;
    t->args = compile_args(t);
    t->p = tj_parse_program(t->c, req->file ? req->file : "<source>", req->source, req->len);
    if (!t->p)
        return -1;
    t->kernel = tj_program_find_kernel(t->p, req->kernel);
    if (t->kernel < 0) {
        tj_error(t->c, "no kernel named '%s'", req->kernel ? req->kernel : "(null)");
        return -1;
    }
    t->kernel_name = req->kernel;
    t->ndims = tj_dims_from_args(t->c, t->p, t->kernel, req->args, req->nargs, &t->dims);
    tj_tune_bucket(t->dims, t->ndims, t->bucket, sizeof t->bucket);
    if (enumerate(t))
        return -1;
    t->todo = tj_alloc(t->c, sizeof *t->todo * (t->nitems + 1));
    int may_time = req->mode != TJ_TUNE_STORED && t->dev && ((t->dev->load && t->dev->time) || t->dev->time_config);
    for (uint32_t i = 0; i < t->nitems; i++)
        if (examine(t, &t->items[i], may_time))
            return -1;
    return 0;
}

/* ---- timing ---------------------------------------------------------------------------- */

static int over_loaded_limits(tune_item *it, const tj_tune_attrs *a)
{
    tj_tune_result *r = it->r;
    r->regs = a->regs;
    r->spill_bytes = a->spill_bytes;
    if (a->spill_bytes > 0)
        snprintf(r->note, sizeof r->note, "spills %d bytes per thread", a->spill_bytes);
    else if (a->max_threads > 0 && (uint32_t)a->max_threads < r->nthreads)
        snprintf(r->note, sizeof r->note, "%d registers per thread allow %d threads, not %u", a->regs,
                 a->max_threads, r->nthreads);
    else
        return 0;
    r->status = TJ_TUNE_PRUNED_LIMITS;
    return 1;
}

/* Loads and times one built item; stores the outcomes that will not change. */
static void measure(tune_run *t, tune_item *it, tj_tune_report *out)
{
    tj_tune_device *d = t->dev;
    tj_tune_attrs attrs = {-1, -1, 0};
    tj_rt_error err = {{0}};
    if (it->r->status != TJ_TUNE_UNTIMED) { /* the build pruned it or failed */
        tj_tune_record_store(t, it);
        settle(t, it);
        return;
    }
    void *h = d->load(d, &it->v, &attrs, &err);
    if (!h) {
        it->r->status = TJ_TUNE_FAILED;
        tj_tune_note(it->r->note, sizeof it->r->note, err.msg);
        settle(t, it);
        return;
    }
    if (over_loaded_limits(it, &attrs)) {
        tj_tune_record_store(t, it);
    } else {
        out->timed++;
        if (d->time(d, h, &it->v, &it->r->seconds, &err)) {
            it->r->status = TJ_TUNE_FAILED; /* not stored: it may work another time */
            tj_tune_note(it->r->note, sizeof it->r->note, err.msg);
        } else {
            it->r->status = TJ_TUNE_OK;
            tj_tune_record_store(t, it);
        }
    }
    if (d->unload)
        d->unload(d, h);
    settle(t, it);
}

/* The cpu: the device compiles and times each configuration itself, one
 * after another on this thread; outcomes stored as measure's. */
static void time_configs_here(tune_run *t, tj_tune_report *out)
{
    for (uint32_t i = 0; i < t->ntodo; i++) {
        tune_item *it = &t->items[t->todo[i]];
        tj_rt_error err = {{0}};
        out->timed++;
        if (t->dev->time_config(t->dev, it->r->config, it->r->nconfig, &it->r->seconds, &err)) {
            it->r->status = TJ_TUNE_FAILED; /* not stored: it may work another time */
            tj_tune_note(it->r->note, sizeof it->r->note, err.msg);
        } else {
            it->r->status = TJ_TUNE_OK;
            tj_tune_record_store(t, it);
        }
        settle(t, it);
    }
    out->built = t->ntodo;
}

static int time_all(tune_run *t, tj_tune_report *out)
{
    if (!t->ntodo)
        return 0;
    if (t->dev->time_config) {
        time_configs_here(t, out);
        return 0;
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->ready, NULL);
    int rc = tj_tune_build_start(t);
    for (int i; rc == 0 && (i = tj_tune_build_next(t)) >= 0;)
        measure(t, &t->items[i], out);
    tj_tune_build_finish(t);
    pthread_cond_destroy(&t->ready);
    pthread_mutex_destroy(&t->lock);
    out->built = t->ntodo;
    return rc;
}

/* ---- the result --------------------------------------------------------------------------- */

static int pick_best(const tune_run *t)
{
    int best = -1, first = -1;
    for (uint32_t i = 0; i < t->nitems; i++) {
        const tj_tune_result *r = t->items[i].r;
        if (r->status == TJ_TUNE_OK && (best < 0 || r->seconds < t->items[best].r->seconds))
            best = (int)i;
        if (r->status == TJ_TUNE_UNTIMED && first < 0)
            first = (int)i;
    }
    return best >= 0 ? best : first;
}

/* Says why with the first configuration that failed, or was pruned. */
static void no_configuration(const tj_tune_report *r, const char *kernel, tj_rt_error *err)
{
    const tj_tune_result *why = NULL;
    for (uint32_t i = 0; i < r->nresults && !why; i++)
        if (r->results[i].status == TJ_TUNE_FAILED)
            why = &r->results[i];
    for (uint32_t i = 0; i < r->nresults && !why; i++)
        if (r->results[i].status != TJ_TUNE_OK && r->results[i].status != TJ_TUNE_UNTIMED)
            why = &r->results[i];
    char config[256] = "";
    if (why)
        tj_tune_config_text(why->config, why->nconfig, config, sizeof config);
    if (err)
        snprintf(err->msg, sizeof err->msg, "no configuration of kernel '%s' can run%s%s%s%s", kernel,
                 why ? "; e.g. " : "", config, why ? ": " : "", why ? why->note : "");
}

/* The outcome, for tj_tune_winner_load: the winner, or that none has a
 * time, as of the records this run read (or wrote). */
static void store_winner(const tune_run *t, const tj_tune_report *out, uint64_t generation)
{
    if (!t->cache || !t->dev || !t->dev->arch)
        return;
    const tj_tune_result *best = out->best >= 0 ? &out->results[out->best] : NULL;
    int complete = 1;
    for (uint32_t i = 0; i < out->nresults; i++)
        complete &= out->results[i].status != TJ_TUNE_UNTIMED;
    tj_cache_key k;
    tj_tune_winner_key(t->req, t->dev->id, t->bucket, &k);
    tj_tune_winner_store(t->cache, &k, t->kernel_name, best && best->status == TJ_TUNE_OK ? best : NULL, complete,
                         out->built ? tj_tune_generation(t->cache) : generation);
}

static void report_error(tune_run *t, tj_rt_error *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s", tj_error_count(t->c) ? tj_diag_render(t->c) : "tuning failed");
}

int tj_tune(tj_tune_device *dev, tj_cache *cache, const tj_tune_request *req, tj_tune_report *out, tj_rt_error *err)
{
    if (out)
        *out = (tj_tune_report){.best = -1}; /* freeable whatever happens below */
    if (!req || !out || !tj_array_ok(req->source, req->len) || !req->kernel || !tj_array_ok(req->params, req->nparams) ||
        !tj_array_ok(req->args, req->nargs))
        return tj_rt_fail(err, "tj_tune: NULL request or out, or a request with a NULL source, kernel, params or args");
    if ((unsigned)req->mode > TJ_TUNE_OFF || req->threads < 0)
        return tj_rt_fail(err, "tj_tune: tune mode %d or %d threads out of range", (int)req->mode, req->threads);
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    out->best = -1;
    tune_run t = {.dev = dev, .cache = cache, .req = req, .c = tj_ctx_new()};
    if (!t.c) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "out of memory");
        return 1;
    }
    out->ctx = t.c;
    uint64_t generation = tj_tune_generation(cache); /* before reading records */
    if (tj_guarded(t.c, prepare, &t) || time_all(&t, out)) {
        report_error(&t, err);
        tj_tune_report_free(out);
        return 1;
    }
    out->results = tj_alloc(t.c, sizeof *out->results * (t.nitems + 1));
    for (uint32_t i = 0; i < t.nitems; i++)
        out->results[i] = *t.items[i].r;
    out->nresults = t.nitems;
    out->best = pick_best(&t);
    store_winner(&t, out, generation);
    snprintf(out->bucket, sizeof out->bucket, "%s", t.bucket);
    out->wall_seconds = now_s() - t0;
    if (out->best < 0) { /* the report says why, configuration by configuration */
        no_configuration(out, req->kernel, err);
        return 1;
    }
    return 0;
}

void tj_tune_report_free(tj_tune_report *r)
{
    if (!r)
        return;
    tj_ctx_free(r->ctx);
    memset(r, 0, sizeof *r);
    r->best = -1;
}
