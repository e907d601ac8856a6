/* Building the configurations that need timing, on worker threads: each
 * worker has its own context (parses the program once, then lowers,
 * specializes, generates PTX and links a cubin per configuration it takes
 * from the queue) and hands finished items back through t->finished. The
 * contexts live until tj_tune_build_finish, since the variants' IR does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/autotune_internal.h"
#include "runtime/cache_jit.h"
#include "tilejit/tilejit.h"

typedef struct worker_state {
    tune_run *t;
    tj_ctx *c;
    const tj_program *p;
    tj_binding *dims;
    uint32_t ndims;
    uint32_t diags_before; /* the diagnostics before the current item */
} worker_state;

/* The item failed: its note is the newest diagnostic, when it reported one. */
static int fail(worker_state *w, tune_item *it, tj_tune_status status, const char *fallback)
{
    it->r->status = status;
    tj_tune_note_diag(it->r->note, sizeof it->r->note, w->c, w->diags_before, fallback);
    return -1;
}

/* Device limits known before loading: threads and shared memory. */
static int over_limits(const tune_run *t, tune_item *it)
{
    tj_tune_result *r = it->r;
    if (r->nthreads > t->dev->max_threads)
        snprintf(r->note, sizeof r->note, "%u threads per program; the device allows %u", r->nthreads,
                 t->dev->max_threads);
    else if (r->smem_bytes > t->dev->max_smem)
        snprintf(r->note, sizeof r->note, "%u bytes of shared memory; the device allows %u", r->smem_bytes,
                 t->dev->max_smem);
    else
        return 0;
    r->status = TJ_TUNE_PRUNED_LIMITS;
    return 1;
}

static void link_cubin(worker_state *w, tune_item *it)
{
    tj_rt_error err = {{0}};
    if (!w->t->linker || !w->t->dev->wants_cubin)
        return;
    if (tj_nvjitlink_compile(w->t->linker, it->v.ptx, strlen(it->v.ptx), w->t->dev->arch, NULL, 0, &it->cubin,
                             &it->v.cubin_size, NULL, &err)) {
        it->r->status = TJ_TUNE_FAILED;
        tj_tune_note(it->r->note, sizeof it->r->note, err.msg);
        return;
    }
    it->v.cubin = it->cubin;
}

/* Front end to PTX (and cubin) for one configuration. */
static int build_item(worker_state *w, tune_item *it)
{
    const tune_run *t = w->t;
    const tj_tune_request *req = t->req;
    tj_binding *config;
    uint32_t nconfig;
    tj_kernel *simt;
    const char *ptx;
    if (tj_select_config(w->c, w->p, t->kernel, it->given, it->ngiven, w->dims, w->ndims, &config, &nconfig))
        return fail(w, it, TJ_TUNE_FAILED, "no configuration");
    tj_kernel *tile = tj_build_kernel(w->c, w->p, t->kernel, config, nconfig, w->dims, w->ndims);
    tj_kernel *spec = tile && !tj_optimize(tile, 0) ? tj_jit_specialize(tile, t->args, req->nargs) : NULL;
    if (!spec || tj_jit_lower_ptx(spec, t->dev->arch, &simt, &ptx))
        return fail(w, it, TJ_TUNE_FAILED, "compilation failed");
    it->r->nthreads = simt->nthreads;
    it->r->smem_bytes = simt->smem_bytes;
    if (over_limits(t, it))
        return 0;
    if (tj_eval_grid(tile, t->args, req->nargs, it->grid))
        return fail(w, it, TJ_TUNE_FAILED, "the grid does not evaluate");
    it->v = (tj_tune_variant){.simt = simt, .ptx = ptx, .grid = it->grid};
    link_cubin(w, it);
    return 0;
}

typedef struct build_job {
    worker_state *w;
    tune_item *it;
} build_job;

/* build_item reports its own failures: nonzero from tj_guarded is out of memory. */
static int run_build(void *arg)
{
    build_job *j = arg;
    build_item(j->w, j->it);
    return 0;
}

static void build_guarded(worker_state *w, tune_item *it)
{
    w->diags_before = tj_diag_count(w->c);
    build_job j = {w, it};
    if (tj_guarded(w->c, run_build, &j))
        fail(w, it, TJ_TUNE_FAILED, "out of memory");
}

static int parse_request(void *arg)
{
    worker_state *w = arg;
    const tj_tune_request *req = w->t->req;
    w->p = tj_parse_program(w->c, req->file ? req->file : "<source>", req->source, req->len);
    if (w->p)
        w->ndims = tj_dims_from_args(w->c, w->p, w->t->kernel, req->args, req->nargs, &w->dims);
    return 0;
}

static void parse_guarded(worker_state *w)
{
    if (tj_guarded(w->c, parse_request, w))
        w->p = NULL;
}

static int take(tune_run *t)
{
    pthread_mutex_lock(&t->lock);
    int i = t->next_todo < t->ntodo ? (int)t->todo[t->next_todo++] : -1;
    pthread_mutex_unlock(&t->lock);
    return i;
}

static void *worker_main(void *arg)
{
    worker_state w = {.t = ((worker_state *)arg)->t, .c = ((worker_state *)arg)->c};
    parse_guarded(&w);
    for (int i; (i = take(w.t)) >= 0;) {
        tune_item *it = &w.t->items[i];
        if (w.p)
            build_guarded(&w, it);
        else
            fail(&w, it, TJ_TUNE_FAILED, "the source does not parse");
        pthread_mutex_lock(&w.t->lock);
        it->built = 1;
        w.t->finished[w.t->nfinished++] = (uint32_t)i;
        pthread_cond_broadcast(&w.t->ready);
        pthread_mutex_unlock(&w.t->lock);
    }
    return NULL;
}

static int worker_count(const tune_run *t)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = t->req->threads > 0 ? t->req->threads : cores > 0 ? (int)cores : 1;
    if (n > TJ_TUNE_MAX_THREADS)
        n = TJ_TUNE_MAX_THREADS;
    return n > (int)t->ntodo ? (int)t->ntodo : n;
}

int tj_tune_build_start(tune_run *t)
{
    int n = worker_count(t);
    t->finished = tj_alloc(t->c, sizeof *t->finished * (t->ntodo + 1));
    t->threads = tj_alloc(t->c, sizeof *t->threads * (size_t)(n + 1));
    t->worker_ctx = tj_alloc(t->c, sizeof *t->worker_ctx * (size_t)(n + 1));
    worker_state *ws = tj_alloc(t->c, sizeof *ws * (size_t)(n + 1));
    if (t->dev->wants_cubin)
        t->linker = tj_nvjitlink_open(NULL);
    for (int i = 0; i < n; i++) {
        ws[i] = (worker_state){.t = t, .c = tj_ctx_new()};
        t->worker_ctx[i] = ws[i].c;
        if (!ws[i].c || pthread_create(&t->threads[i], NULL, worker_main, &ws[i])) {
            tj_ctx_free(ws[i].c);
            t->worker_ctx[i] = NULL;
            break;
        }
        t->nworkers = i + 1;
    }
    return t->nworkers > 0 || t->ntodo == 0 ? 0 : -1;
}

int tj_tune_build_next(tune_run *t)
{
    static const uint32_t none = UINT32_MAX;
    pthread_mutex_lock(&t->lock);
    uint32_t i = none;
    while (t->next_finished < t->ntodo) {
        if (t->next_finished < t->nfinished) {
            i = t->finished[t->next_finished++];
            break;
        }
        pthread_cond_wait(&t->ready, &t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return i == none ? -1 : (int)i;
}

void tj_tune_build_finish(tune_run *t)
{
    for (int i = 0; i < t->nworkers; i++)
        pthread_join(t->threads[i], NULL);
    for (uint32_t i = 0; i < t->nitems; i++) {
        free(t->items[i].cubin);
        t->items[i].cubin = NULL;
    }
    for (int i = 0; i < t->nworkers; i++)
        tj_ctx_free(t->worker_ctx[i]);
    t->nworkers = 0;
    if (t->linker)
        tj_nvjitlink_close(t->linker);
    t->linker = NULL;
}
