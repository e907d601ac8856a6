/* tj_dispatch (tilejit/dispatch.h): a kernel launched at any shapes,
 * through a table of the functions compiled for each argument signature. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/dispatch_internal.h"
#include "tilejit/passes.h"

enum { SIG_ARGS = 64, SIG_BYTES_PER_ARG = 4 + 2 * TJ_MAX_RANK };

static void set_error(tj_rt_error *err, const char *msg)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s", msg);
}

/* ---- the kernel -------------------------------------------------------------------------- */

static const char *copy_text(tj_ctx *c, const char *s, size_t len) { return s ? tj_strndup(c, s, len) : NULL; }

typedef struct request_job {
    tj_dispatch *d;
    const tj_compile_request *req;
} request_job;

/* Copies the request into d's context and parses its source (under
 * tj_guarded). */
static int take_request(void *arg)
{
    const request_job *j = arg;
    tj_dispatch *d = j->d;
    const tj_compile_request *req = j->req;
    tj_compile_request *r = &d->req;
    r->file = copy_text(d->ctx, req->file ? req->file : "<source>", strlen(req->file ? req->file : "<source>"));
    r->source = copy_text(d->ctx, req->source, req->len);
    r->len = req->len;
    r->kernel = copy_text(d->ctx, req->kernel ? req->kernel : "", strlen(req->kernel ? req->kernel : ""));
    r->arch = req->arch ? copy_text(d->ctx, req->arch, strlen(req->arch)) : NULL;
    r->quick = req->quick;
    tj_binding *params = tj_alloc(d->ctx, sizeof *params * (req->nparams + 1));
    for (uint32_t i = 0; i < req->nparams; i++)
        params[i] = (tj_binding){tj_strdup(d->ctx, req->params[i].name), req->params[i].value};
    r->params = params;
    r->nparams = req->nparams;
    const tj_program *p = tj_parse_program(d->ctx, r->file, r->source, r->len);
    int k = p ? tj_program_find_kernel(p, r->kernel) : -1;
    if (p && k < 0)
        tj_error(d->ctx, "no kernel named '%s' in %s", r->kernel, r->file);
    if (k >= 0)
        d->nparams = tj_kernel_params(p, k, &d->params);
    return k < 0;
}

tj_dispatch *tj_dispatch_new(tj_jit *j, const tj_compile_request *req, tj_rt_error *err)
{
    if (!j || !req || !tj_array_ok(req->source, req->len) || !req->kernel || !tj_array_ok(req->params, req->nparams)) {
        set_error(err, "tj_dispatch_new: NULL jit or request, or a request without source or kernel");
        return NULL;
    }
    tj_dispatch *d = calloc(1, sizeof *d);
    if (!d || !(d->ctx = tj_ctx_new())) {
        free(d);
        set_error(err, "out of memory");
        return NULL;
    }
    d->jit = j;
    pthread_mutex_init(&d->lock, NULL);
    if (!req->source || tj_guarded(d->ctx, take_request, &(request_job){d, req})) {
        set_error(err, tj_error_count(d->ctx) ? tj_diag_render(d->ctx) : "tj_dispatch_new: no source");
        tj_dispatch_free(d);
        return NULL;
    }
    return d;
}

static void release_all(tj_fn **fns, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        tj_fn_release(fns[i]);
    free(fns);
}

void tj_dispatch_free(tj_dispatch *d)
{
    if (!d)
        return;
    for (uint32_t i = 0; i < d->nentries; i++) {
        release_all(d->entries[i].fns, d->entries[i].nfns);
        free(d->entries[i].sig);
        free(d->entries[i].tuned);
    }
    free(d->entries);
    release_all(d->retired, d->nretired);
    pthread_mutex_destroy(&d->lock);
    tj_ctx_free(d->ctx);
    free(d);
}

uint32_t tj_dispatch_params(const tj_dispatch *d, const tj_param **params)
{
    if (!params)
        return 0;
    if (!d) {
        *params = NULL;
        return 0;
    }
    *params = d->params;
    return d->nparams;
}

/* ---- signatures -------------------------------------------------------------------------- */

/* log2 of the size rounded up to a power of two; 0xff for an empty dim. */
static unsigned char bucket(int64_t size)
{
    unsigned char b = 0;
    while (b < 63 && ((int64_t)1 << b) < size)
        b++;
    return size > 0 ? b : 0xff;
}

/* Packs what a compile depends on: per tensor its dtype, rank and dims'
 * buckets, and on CUDA the facts tj_jit_compile specializes on (the native
 * cpu specializes too, but keeps one entry: pick_slow's tj_fn_check tells
 * its functions apart). */
static size_t signature(const tj_dispatch *d, const tj_arg *args, uint32_t nargs, unsigned char *sig)
{
    int facts = tj_jit_device(d->jit) == TJ_DEVICE_CUDA;
    size_t n = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        const tj_tensor *t = &args[i].tensor;
        int rank = t->rank < 0 || t->rank > TJ_MAX_RANK ? 0 : t->rank;
        sig[n++] = args[i].is_tensor ? (unsigned char)t->dtype : 0xff;
        if (!args[i].is_tensor)
            continue;
        tj_facts f = tj_facts_of_tensor(t);
        sig[n++] = (unsigned char)t->rank;
        for (int k = 0; k < rank; k++) {
            sig[n++] = bucket(t->shape[k]);
            if (facts)
                sig[n++] = (unsigned char)(f.dim_div16[k] | f.stride_div16[k] << 1);
        }
        if (facts)
            sig[n++] = (unsigned char)(f.aligned16 | f.unit_stride << 1);
    }
    return n;
}

/* Bit i: tensor argument i is 16-byte aligned (CUDA and the native cpu,
 * whose functions specialize on it: what the memo, which ignores data
 * pointers, must still tell apart). */
static uint32_t aligned_mask(const tj_dispatch *d, const tj_arg *args, uint32_t nargs)
{
    int facts = tj_jit_device(d->jit) == TJ_DEVICE_CUDA || tj_jit_native_cpu(d->jit);
    uint32_t m = 0;
    for (uint32_t i = 0; facts && i < nargs && i < 32; i++)
        m |= (uint32_t)(args[i].is_tensor && tj_facts_of_tensor(&args[i].tensor).aligned16) << i;
    return m;
}

void tj_dispatch_signature_text(const tj_dispatch *d, const tj_arg *args, uint32_t nargs, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
#define PUT(...) (len += len < size ? (size_t)snprintf(buf + len, size - len, __VA_ARGS__) : 0)
    for (uint32_t i = 0; i < nargs && i < d->nparams; i++) {
        const tj_tensor *t = &args[i].tensor;
        PUT("%s%s: %s", i ? ", " : "", d->params[i].name,
            tj_dtype_name(args[i].is_tensor ? t->dtype : d->params[i].dtype));
        for (int k = 0; args[i].is_tensor && k < t->rank && k < TJ_MAX_RANK; k++)
            PUT("%s<=%llu%s", k ? "," : "[", t->shape[k] > 0 ? 1ULL << bucket(t->shape[k]) : 0ULL,
                k + 1 == t->rank ? "]" : "");
    }
#undef PUT
}

static int check_count(const tj_dispatch *d, uint32_t nargs, tj_rt_error *err)
{
    if (nargs == d->nparams && nargs <= SIG_ARGS)
        return 0;
    if (err)
        snprintf(err->msg, sizeof err->msg, nargs == d->nparams ? "kernel '%s' has more than %d parameters"
                                                                : "kernel '%s' takes %u arguments, %u given",
                 d->req.kernel, nargs == d->nparams ? SIG_ARGS : (int)d->nparams, nargs);
    return 1;
}

dispatch_entry *tj_dispatch_entry(tj_dispatch *d, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    unsigned char sig[SIG_ARGS * SIG_BYTES_PER_ARG];
    if (check_count(d, nargs, err))
        return NULL;
    size_t len = signature(d, args, nargs, sig);
    for (uint32_t i = 0; i < d->nentries; i++)
        if (d->entries[i].len == len && !memcmp(d->entries[i].sig, sig, len))
            return &d->entries[i];
    dispatch_entry *grown = tj_heap_grow(d->entries, &d->cap, d->nentries + 1, sizeof *grown);
    if (!grown) {
        set_error(err, "out of memory");
        return NULL;
    }
    d->entries = grown;
    dispatch_entry *e = &d->entries[d->nentries];
    *e = (dispatch_entry){.sig = malloc(len ? len : 1), .len = len};
    if (!e->sig) {
        set_error(err, "out of memory");
        return NULL;
    }
    memcpy(e->sig, sig, len);
    d->nentries++;
    return e;
}

/* ---- picking a function ------------------------------------------------------------------ */

static int hold(tj_fn ***fns, uint32_t *n, uint32_t *cap, tj_fn *f)
{
    tj_fn **grown = tj_heap_grow(*fns, cap, *n + 1, sizeof *grown);
    if (!grown)
        return 1;
    *fns = grown;
    (*fns)[(*n)++] = f;
    return 0;
}

/* Why the entry needs another function: a new signature, or what its
 * newest function says of these arguments. */
static void compile_reason(const tj_dispatch *d, const dispatch_entry *e, const tj_arg *args, uint32_t nargs,
                           char *buf, size_t size)
{
    char sig[400];
    tj_dispatch_signature_text(d, args, nargs, sig, sizeof sig);
    tj_rt_error why = {{0}};
    if (!e->nfns || !tj_fn_check(e->fns[e->nfns - 1], args, nargs, &why))
        snprintf(buf, size, "%s signature %s", e->tuned ? "tuned" : "new", sig);
    else
        snprintf(buf, size, "signature %s: %s", sig, why.msg);
}

static tj_fn *compile_for(tj_dispatch *d, dispatch_entry *e, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    char reason[1024];
    compile_reason(d, e, args, nargs, reason, sizeof reason);
    tj_compile_request req = d->req;
    req.args = args;
    req.nargs = nargs;
    req.reason = reason;
    if (e->tuned) {
        req.params = e->tuned;
        req.nparams = e->ntuned;
    }
    tj_fn *f = tj_jit_compile(d->jit, &req, err);
    if (f && hold(&e->fns, &e->nfns, &e->cap, f)) {
        tj_fn_release(f);
        set_error(err, "out of memory");
        return NULL;
    }
    return f && !tj_fn_check(f, args, nargs, err) ? f : NULL;
}

static tj_fn *pick_slow(tj_dispatch *d, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    dispatch_entry *e = tj_dispatch_entry(d, args, nargs, err);
    if (!e)
        return NULL;
    for (uint32_t i = e->nfns; i-- > 0;)
        if (!tj_fn_check(e->fns[i], args, nargs, NULL))
            return e->fns[i];
    if (!e->nfns && !e->tuned && tj_jit_tune_mode(d->jit) == TJ_TUNE_MISSING) {
        tj_tune_report rep;
        int rc = tj_dispatch_tune_entry(d, e, args, nargs, NULL, NULL, &rep, err);
        tj_tune_report_free(&rep);
        if (rc)
            return NULL;
    }
    return compile_for(d, e, args, nargs, err);
}

/* The function for these arguments; d keeps the hold. */
static tj_fn *pick(tj_dispatch *d, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    uint32_t aligned = aligned_mask(d, args, nargs);
    pthread_mutex_lock(&d->lock);
    tj_fn *f = d->memo_fn && aligned == d->memo_aligned && tj_memo_hit(&d->memo, args, nargs) ? d->memo_fn : NULL;
    if (!f && (f = pick_slow(d, args, nargs, err))) {
        tj_memo_store(&d->memo, args, nargs);
        d->memo_aligned = aligned;
        d->memo_fn = f;
    }
    pthread_mutex_unlock(&d->lock);
    return f;
}

int tj_dispatch_launch(tj_dispatch *d, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err)
{
    if (!d || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_dispatch_launch: NULL %s", d ? "args with nargs > 0" : "dispatch");
    tj_fn *f = pick(d, args, nargs, err);
    return f ? tj_fn_launch(f, args, nargs, stream, err) : 1;
}

tj_fn *tj_dispatch_fn(tj_dispatch *d, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    if (!d || !tj_array_ok(args, nargs)) {
        tj_rt_fail(err, "tj_dispatch_fn: NULL %s", d ? "args with nargs > 0" : "dispatch");
        return NULL;
    }
    tj_fn *f = pick(d, args, nargs, err);
    if (f)
        tj_fn_retain(f);
    return f;
}

int tj_dispatch_tune(tj_dispatch *d, const tj_arg *args, uint32_t nargs,
                     void (*progress)(void *ud, uint32_t done, uint32_t total, const tj_tune_result *r), void *ud,
                     tj_tune_report *out, tj_rt_error *err)
{
    if (out)
        *out = (tj_tune_report){.best = -1}; /* freeable whatever happens below */
    if (!d || !out || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_dispatch_tune: NULL dispatch or out, or NULL args with nargs > 0");
    memset(out, 0, sizeof *out);
    out->best = -1;
    pthread_mutex_lock(&d->lock);
    dispatch_entry *e = tj_dispatch_entry(d, args, nargs, err);
    int rc = !e || tj_dispatch_tune_entry(d, e, args, nargs, progress, ud, out, err);
    pthread_mutex_unlock(&d->lock);
    return rc;
}
