/* tj_jit: compile once (front end -> passes -> lowering -> PTX -> module),
 * launch many times. Compiled functions are cached (runtime/cache_jit.c):
 * in memory under the request's key and the kernel's, on disk (CUDA) under
 * the kernel's. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cache_cpu.h"
#include "runtime/cache_jit.h"
#include "runtime/launch_memo.h"
#include "tilejit/cpu.h"
#include "tilejit/tilejit.h"
#include "tilejit/jit.h"

/* The where clauses that chose a function's configuration, for checking
 * it against the dims of arguments it was not compiled for: the program
 * (parsed again into the function's context) and room for the dims. */
typedef struct where_contract {
    const tj_program *program;
    int kernel;
    tj_binding *dims; /* one per dim of the parameters (check_lock) */
} where_contract;

struct tj_fn {
    tj_jit *jit;
    tj_launch_memo memo; /* the last arguments that passed the checks (check_lock) */
    int64_t memo_grid[3];
    where_contract where;
    tj_ctx *ctx; /* owns the IR and the PTX text */
    pthread_mutex_t check_lock; /* argument checks report into ctx */
    tj_kernel *tile, *simt;
    tj_kernel *spec; /* specialized Tile IR: launch checks and the ABI (CUDA) */
    const char *ptx;
    uint32_t nthreads, smem_bytes;
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS]; /* TMA tensor maps after the parameters */
    int nmaps;
    tj_cache_key key; /* the kernel's */
    int refs;         /* callers' and the memory cache's holds (jit->lock) */
    tj_cuda_module *module;
    tj_cuda_function function;
    tj_cpu_fn *native; /* the cpu's machine code (tilejit/cpu.h); NULL: the interpreter */
    tj_fn *next;
};

struct tj_jit {
    tj_device_kind kind;
    int ordinal;
    tj_cuda *cuda;
    tj_cuda_props props;
    pthread_mutex_t lock; /* guards fns and their refs, and the event handler */
    tj_fn *fns;
    tj_jit_cache *cache;
    tj_event_handler on_event;
    void *on_event_ud;
    tj_cpu *cpu; /* TJ_DEVICE_CPU with the native back end; NULL: the interpreter runs */
    char cpu_fallback[256]; /* TJ_DEVICE_CPU without it: why ("" otherwise) */
    tj_cache *cpu_disk; /* its object code ($TILEJIT_CACHE_DIR); NULL: none */
};

static void set_error(tj_rt_error *err, const char *fmt, const char *detail)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, fmt, detail);
}

static void fn_free(tj_fn *f);

static void fn_retain(void *v)
{
    tj_fn *f = v;
    pthread_mutex_lock(&f->jit->lock);
    f->refs++;
    pthread_mutex_unlock(&f->jit->lock);
}

/* The last hold frees f. */
static void fn_release(void *v)
{
    tj_fn *f = v;
    tj_jit *j = f->jit;
    pthread_mutex_lock(&j->lock);
    int last = --f->refs == 0;
    for (tj_fn **p = &j->fns; last && *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    pthread_mutex_unlock(&j->lock);
    if (last)
        fn_free(f);
}

void tj_fn_release(tj_fn *f)
{
    if (f)
        fn_release(f);
}

void tj_fn_retain(tj_fn *f)
{
    if (f)
        fn_retain(f);
}

tj_jit *tj_jit_open(tj_device_kind kind, int ordinal, tj_rt_error *err)
{
    if ((unsigned)kind > TJ_DEVICE_INTERP) {
        tj_rt_fail(err, "tj_jit_open: no device kind %d (TJ_DEVICE_CPU, TJ_DEVICE_CUDA or TJ_DEVICE_INTERP)",
                   (int)kind);
        return NULL;
    }
    tj_jit *j = calloc(1, sizeof *j);
    if (!j) {
        set_error(err, "%s", "out of memory");
        return NULL;
    }
    j->kind = kind;
    j->ordinal = kind == TJ_DEVICE_CUDA ? ordinal : 0;
    pthread_mutex_init(&j->lock, NULL);
    if (kind == TJ_DEVICE_CUDA) {
        j->cuda = tj_cuda_open(ordinal, err);
        if (!j->cuda || tj_cuda_device_props(j->cuda, ordinal, &j->props, err)) {
            tj_jit_close(j);
            return NULL;
        }
    }
    if (kind == TJ_DEVICE_CPU && (j->cpu = tj_cpu_new(0, j->cpu_fallback, sizeof j->cpu_fallback)))
        j->cpu_disk = tj_cache_open(NULL);
    else if (kind == TJ_DEVICE_CPU && !j->cpu_fallback[0]) /* the interpreter stands in: say why */
        snprintf(j->cpu_fallback, sizeof j->cpu_fallback, "the native cpu back end could not start");
    j->cache = tj_jit_cache_new(j->cuda ? &j->props : NULL, fn_retain, fn_release);
    if (!j->cache) {
        set_error(err, "%s", "out of memory");
        tj_jit_close(j);
        return NULL;
    }
    return j;
}

static void fn_free(tj_fn *f)
{
    pthread_mutex_destroy(&f->check_lock);
    if (f->module)
        tj_cuda_module_unload(f->module);
    tj_ctx_free(f->ctx);
    free(f);
}

void tj_jit_close(tj_jit *j)
{
    if (!j)
        return;
    tj_jit_cache_free(j->cache); /* releases its holds first */
    for (tj_fn *f = j->fns, *next; f; f = next) {
        next = f->next;
        fn_free(f);
    }
    if (j->cuda)
        tj_cuda_close(j->cuda);
    tj_cpu_free(j->cpu); /* after the functions: it owns their machine code */
    tj_cache_close(j->cpu_disk);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

tj_device_kind tj_jit_device(const tj_jit *j) { return j ? j->kind : TJ_DEVICE_CPU; }
int tj_jit_native_cpu(const tj_jit *j) { return j && j->cpu; }
const char *tj_jit_cpu_fallback(const tj_jit *j) { return j && j->cpu_fallback[0] ? j->cpu_fallback : NULL; }
tj_cuda *tj_jit_cuda(const tj_jit *j) { return j ? j->cuda : NULL; }
int tj_source_params(const char *source, size_t len, const char *kernel, int *dtypes, int *ranks, int max,
                     tj_rt_error *err)
{
    if (!tj_array_ok(source, len) || !kernel || max < 0 || (max > 0 && (!dtypes || !ranks))) {
        tj_rt_fail(err, "tj_source_params: NULL source, kernel, dtypes or ranks, or max < 0");
        return -1;
    }
    tj_ctx *c = tj_ctx_new();
    if (!c) {
        set_error(err, "%s", "out of memory");
        return -1;
    }
    tj_program *p = tj_parse_program(c, "<source>", source, len);
    int k = p ? tj_program_find_kernel(p, kernel) : -1;
    int n = -1;
    if (k >= 0) {
        const tj_param *params;
        n = (int)tj_kernel_params(p, k, &params);
        for (int i = 0; i < n && i < max; i++) {
            dtypes[i] = params[i].dtype;
            ranks[i] = params[i].rank;
        }
    } else if (p) {
        set_error(err, "no kernel named '%s'", kernel);
    } else {
        set_error(err, "%s", tj_diag_render(c));
    }
    tj_ctx_free(c);
    return n;
}

/* The accessors read a NULL handle as one that has nothing. */
const tj_kernel *tj_fn_tile_ir(const tj_fn *f) { return f ? f->tile : NULL; }
const tj_kernel *tj_fn_simt_ir(const tj_fn *f) { return f ? f->simt : NULL; }
const char *tj_fn_ptx(const tj_fn *f) { return f ? f->ptx : NULL; }
const tj_cuda_function *tj_fn_cuda_function(const tj_fn *f) { return f && f->module ? &f->function : NULL; }
uint32_t tj_fn_threads(const tj_fn *f) { return f ? f->nthreads : 0; }
uint32_t tj_fn_smem_bytes(const tj_fn *f) { return f ? f->smem_bytes : 0; }
tj_cache *tj_jit_disk_cache(tj_jit *j) { return !j ? NULL : j->cpu ? j->cpu_disk : tj_jit_cache_disk(j->cache); }

void tj_jit_cpu_tune_id(const tj_jit *j, char *buf, size_t n)
{
    if (!n)
        return;
    buf[0] = 0;
    if (!j || !j->cpu)
        return;
    const char *target = tj_cpu_target(j->cpu), *space = strchr(target, ' ');
    int name_len = space ? (int)(space - target) : (int)strlen(target);
    snprintf(buf, n, "cpu/%.*s/%dt/%016llx", name_len, target, tj_cpu_threads(j->cpu),
             (unsigned long long)tj_hash64(target, strlen(target), 0));
}
tj_tune_mode tj_jit_tune_mode(tj_jit *j) { return j ? tj_jit_cache_tune_mode(j->cache) : TJ_TUNE_STORED; }
int tj_jit_ordinal(const tj_jit *j) { return j ? j->ordinal : -1; }

void tj_jit_set_tune_mode(tj_jit *j, tj_tune_mode mode)
{
    if (j && (unsigned)mode <= TJ_TUNE_OFF)
        tj_jit_cache_set_tune_mode(j->cache, mode);
}

void tj_jit_get_stats(tj_jit *j, tj_jit_stats *out)
{
    if (!out)
        return;
    if (!j) {
        *out = (tj_jit_stats){0};
        return;
    }
    tj_jit_cache_stats(j->cache, out);
}

uint32_t tj_fn_config(const tj_fn *f, const tj_binding **config)
{
    if (!config)
        return 0;
    if (!f) {
        *config = NULL;
        return 0;
    }
    *config = f->tile->config;
    return f->tile->nconfig;
}

void tj_jit_set_event_handler(tj_jit *j, tj_event_handler handler, void *ud)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->lock);
    j->on_event = handler;
    j->on_event_ud = ud;
    pthread_mutex_unlock(&j->lock);
}

/* Tile IR for the request, optimized and checked against the arguments.
 * Tile parameters the request leaves unbound may come from the tuner. */
static tj_kernel *build_tile_ir(tj_jit *j, tj_ctx *c, const tj_compile_request *req)
{
    tj_program *p = tj_parse_program(c, req->file ? req->file : "<source>", req->source, req->len);
    if (!p)
        return NULL;
    int k = tj_program_find_kernel(p, req->kernel);
    if (k < 0) {
        tj_error(c, "no kernel named '%s'", req->kernel);
        return NULL;
    }
    tj_binding *dims, *config;
    uint32_t ndims = tj_dims_from_args(c, p, k, req->args, req->nargs, &dims), nconfig;
    const tj_binding *given = req->params;
    uint32_t ngiven = req->nparams;
    if (j->cuda && tj_jit_tuned_params(j->cache, j->cuda, c, p, k, req, &given, &ngiven))
        return NULL;
    char cpu_id[160];
    tj_jit_cpu_tune_id(j, cpu_id, sizeof cpu_id);
    if (j->cpu && tj_jit_cpu_tuned_params(j->cpu_disk, cpu_id, tj_jit_cache_tune_mode(j->cache), c, p, k, req, &given,
                                          &ngiven))
        return NULL;
    if (tj_select_config(c, p, k, given, ngiven, dims, ndims, &config, &nconfig))
        return NULL;
    tj_kernel *tile = tj_build_kernel(c, p, k, config, nconfig, dims, ndims);
    if (!tile || tj_optimize(tile, 0) || tj_check_args(tile, req->args, req->nargs))
        return NULL;
    return tile;
}

/* The front end, then (CUDA) specialization, then the kernel's cache key. */
static int build_ir(tj_fn *f, const tj_compile_request *req)
{
    f->tile = build_tile_ir(f->jit, f->ctx, req);
    if (!f->tile)
        return 1;
    f->spec = f->tile;
    int native = f->jit->kind == TJ_DEVICE_CUDA || f->jit->cpu; /* both specialize on facts */
    if (native && !(f->spec = tj_jit_specialize(f->tile, req->args, req->nargs)))
        return 1;
    if (f->jit->cpu)
        tj_jit_cpu_key(f->spec, tj_cpu_target(f->jit->cpu), &f->key);
    else
        tj_jit_kernel_key(f->jit->cache, f->spec, tj_jit_cache_arch(f->jit->cache, req), req->quick, &f->key);
    return 0;
}

/* Specialized SIMT IR and PTX for the CUDA device (a disk cache miss). */
static int build_ptx(tj_fn *f, const tj_compile_request *req)
{
    if (tj_jit_lower_ptx(f->spec, tj_jit_cache_arch(f->jit->cache, req), &f->simt, &f->ptx))
        return 1;
    f->nthreads = f->simt->nthreads;
    f->smem_bytes = f->simt->smem_bytes;
    return 0;
}

typedef struct step_job {
    tj_fn *f;
    int (*step)(tj_fn *, const tj_compile_request *);
    const tj_compile_request *req;
} step_job;

static int run_step(void *arg)
{
    step_job *j = arg;
    return j->step(j->f, j->req);
}

/* Runs a compile step with the context's out-of-memory guard set; its
 * diagnostics go to err. */
static int run_guarded(tj_fn *f, int (*step)(tj_fn *, const tj_compile_request *), const tj_compile_request *req,
                       tj_rt_error *err)
{
    step_job j = {f, step, req};
    int rc = tj_guarded(f->ctx, run_step, &j);
    if (rc || tj_error_count(f->ctx)) {
        set_error(err, "%s", tj_error_count(f->ctx) ? tj_diag_render(f->ctx) : "compilation failed");
        return 1;
    }
    return 0;
}

static int load_module(tj_fn *f, const tj_jit_binary *bin, tj_rt_error *err)
{
    const char *name = f->spec->name;
    if (f->smem_bytes > (uint32_t)f->jit->props.shared_per_block_optin) {
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "kernel '%s' needs %u bytes of shared memory per program; the device allows at most %d", name,
                     f->smem_bytes, f->jit->props.shared_per_block_optin);
        return 1;
    }
    f->module = bin->cubin ? tj_cuda_module_load_cubin(f->jit->cuda, bin->cubin, bin->cubin_size, name, err)
                           : tj_cuda_module_load_ptx(f->jit->cuda, bin->ptx, name, err);
    if (!f->module || tj_cuda_module_function(f->module, name, &f->function, err))
        return 1;
    if (f->smem_bytes > 48 * 1024)
        return tj_cuda_function_set_max_dynamic_shared(&f->function, (int)f->smem_bytes, err);
    return 0;
}

/* The kernel from the disk cache, loaded; 1 when there is none, or the
 * driver refuses it (then it is dropped and rebuilt). */
static int load_cached(tj_fn *f)
{
    tj_jit_binary bin;
    if (tj_jit_cache_lookup(f->jit->cache, &f->key, f->spec, &bin))
        return 1;
    f->ptx = tj_strndup(f->ctx, bin.ptx, bin.entry.ptx_len);
    f->nthreads = bin.nthreads;
    f->smem_bytes = bin.smem_bytes;
    f->nmaps = bin.nmaps;
    memcpy(f->maps, bin.maps, sizeof f->maps);
    int rc = load_module(f, &bin, NULL);
    tj_jit_binary_free(&bin);
    if (rc) {
        tj_jit_cache_reject(f->jit->cache, &f->key);
        if (f->module)
            tj_cuda_module_unload(f->module);
        f->module = NULL;
    }
    return rc;
}

/* Lowering, PTX, cubin (nvJitLink), the disk entry, the module. */
static int build_binary(tj_fn *f, const tj_compile_request *req, tj_rt_error *err)
{
    tj_jit_binary bin;
    if (run_guarded(f, build_ptx, req, err))
        return 1;
    tj_jit_cache_count_compile(f->jit->cache);
    if (tj_jit_cache_finish(f->jit->cache, &f->key, f->simt, f->ptx, tj_jit_cache_arch(f->jit->cache, req),
                            req->quick, &bin, err))
        return 1;
    f->nmaps = bin.nmaps;
    memcpy(f->maps, bin.maps, sizeof f->maps);
    int rc = load_module(f, &bin, err);
    tj_jit_binary_free(&bin);
    return rc;
}

/* The cpu's object code from the disk cache, linked; 1 when there is
 * none or it does not link (then it is dropped and rebuilt). */
static int load_native(tj_fn *f)
{
    tj_cache_entry e;
    if (tj_jit_cpu_lookup(f->jit->cpu_disk, &f->key, f->spec, &e))
        return 1;
    f->native = tj_cpu_load(f->jit->cpu, e.bin, e.bin_len, NULL, 0);
    tj_cache_entry_free(&e);
    if (!f->native)
        tj_cache_drop(f->jit->cpu_disk, &f->key);
    return !f->native;
}

/* The cpu's machine code from the specialized Tile IR (tilejit/cpu.h),
 * and its object code into the disk cache. */
static int build_native(tj_fn *f, const tj_compile_request *req)
{
    (void)req;
    tj_buf obj = {0};
    char msg[512];
    if (!tj_cpu_compile_object(f->jit->cpu, f->spec, &obj, NULL)) {
        if (!(f->native = tj_cpu_load(f->jit->cpu, obj.data, obj.len, msg, sizeof msg)))
            tj_error(f->ctx, "kernel '%s': %s", f->spec->name, msg);
        else /* only what loads: a cached object that cannot would fail every process */
            tj_jit_cpu_store(f->jit->cpu_disk, &f->key, f->spec, tj_cpu_target(f->jit->cpu), obj.data, obj.len);
    }
    tj_buf_free(&obj);
    return !f->native;
}

/* The context's parse of the request's source, for checking its where
 * clauses at launch (build_tile_ir's parse belongs to the compile). */
static int build_where_contract(tj_fn *f, const tj_compile_request *req)
{
    where_contract *w = &f->where;
    w->program = tj_parse_program(f->ctx, req->file ? req->file : "<source>", req->source, req->len);
    w->kernel = w->program ? tj_program_find_kernel(w->program, req->kernel) : -1;
    w->dims = tj_alloc(f->ctx, sizeof *w->dims * (f->tile->nparams * TJ_MAX_RANK + 1));
    return w->kernel < 0;
}

/* ---- compiling, with events ------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* "X: f32[4,1000], Y: f32[4,1000] strides [1,4], n: i32": the arguments a
 * compile was for. */
static void args_text(const tj_kernel *k, const tj_arg *args, uint32_t nargs, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
#define PUT(...) (len += len < size ? (size_t)snprintf(buf + len, size - len, __VA_ARGS__) : 0)
    for (uint32_t i = 0; i < nargs && i < k->nparams; i++) {
        const tj_tensor *t = &args[i].tensor;
        PUT("%s%s: %s", i ? ", " : "", k->params[i].name, tj_dtype_name(args[i].is_tensor ? t->dtype : k->params[i].dtype));
        if (!args[i].is_tensor)
            continue;
        int64_t row_major = 1, contiguous = 1;
        for (int d = t->rank; d-- > 0; row_major *= t->shape[d])
            contiguous &= t->shape[d] == 1 || t->strides[d] == row_major;
        for (int d = 0; d < t->rank; d++)
            PUT("%s%lld", d ? "," : "[", (long long)t->shape[d]);
        PUT("%s", t->rank ? "]" : "[]");
        for (int d = 0; !contiguous && d < t->rank; d++)
            PUT("%s%lld%s", d ? "," : " strides [", (long long)t->strides[d], d + 1 == t->rank ? "]" : "");
    }
#undef PUT
}

void tj_jit_emit_event(tj_jit *j, const tj_event *e)
{
    if (!j || !e)
        return;
    pthread_mutex_lock(&j->lock);
    tj_event_handler h = j->on_event;
    void *ud = j->on_event_ud;
    pthread_mutex_unlock(&j->lock);
    if (h)
        h(ud, e);
}

static void report(tj_jit *j, const tj_fn *f, const tj_compile_request *req, tj_event_kind kind, tj_build_source from,
                   double ms)
{
    char signature[512], config[256];
    args_text(f->tile, req->args, req->nargs, signature, sizeof signature);
    tj_tune_config_text(f->tile->config, f->tile->nconfig, config, sizeof config);
    tj_event e = {kind, f->tile->name, signature, config, req->reason ? req->reason : "tj_jit_compile", from, ms};
    tj_jit_emit_event(j, &e);
}

/* Everything after the front end for a new kernel key: the where clauses
 * kept for launches, then (CUDA) the binary from the disk cache or built. */
static int finish_fn(tj_fn *f, const tj_compile_request *req, tj_build_source *from, tj_rt_error *err)
{
    if (run_guarded(f, build_where_contract, req, err))
        return 1;
    *from = TJ_BUILT;
    if (f->jit->cpu && !load_native(f)) {
        *from = TJ_FROM_DISK;
        return 0;
    }
    if (f->jit->kind != TJ_DEVICE_CUDA) {
        tj_jit_cache_count_compile(f->jit->cache);
        return f->jit->cpu ? run_guarded(f, build_native, req, err) : 0;
    }
    if (!load_cached(f)) {
        *from = TJ_FROM_DISK;
        return 0;
    }
    return build_binary(f, req, err);
}

static void add_fn(tj_jit *j, tj_fn *f)
{
    f->refs = 1; /* the caller's */
    pthread_mutex_lock(&j->lock);
    f->next = j->fns;
    j->fns = f;
    pthread_mutex_unlock(&j->lock);
    tj_jit_cache_put(j->cache, &f->key, f);
}

/* A new tj_fn for the request, or the cached one with the same kernel key;
 * the event handler hears of the tuning and the compile. */
static tj_fn *compile_fn(tj_jit *j, const tj_compile_request *req, tj_rt_error *err)
{
    double t0 = now_ms();
    tj_jit_stats before;
    tj_jit_get_stats(j, &before);
    tj_fn *f = calloc(1, sizeof *f);
    tj_ctx *c = f ? tj_ctx_new() : NULL;
    if (!c) {
        free(f);
        set_error(err, "%s", "out of memory");
        return NULL;
    }
    f->jit = j;
    f->ctx = c;
    pthread_mutex_init(&f->check_lock, NULL);
    if (run_guarded(f, build_ir, req, err)) {
        fn_free(f);
        return NULL;
    }
    tj_build_source from = TJ_FROM_MEMORY;
    tj_fn *same = tj_jit_cache_get(j->cache, &f->key);
    if (same) {
        fn_free(f);
        f = same;
    } else if (finish_fn(f, req, &from, err)) {
        fn_free(f);
        return NULL;
    } else {
        add_fn(j, f);
    }
    tj_jit_stats after;
    tj_jit_get_stats(j, &after);
    if (after.tunings > before.tunings)
        report(j, f, req, TJ_EVENT_TUNE, from, now_ms() - t0);
    report(j, f, req, TJ_EVENT_COMPILE, from, now_ms() - t0);
    return f;
}

/* The memory cache answers a request it has seen; otherwise compile_fn. */
tj_fn *tj_jit_compile(tj_jit *j, const tj_compile_request *req, tj_rt_error *err)
{
    if (!j || !req) {
        tj_rt_fail(err, "tj_jit_compile: NULL %s", j ? "request" : "jit");
        return NULL;
    }
    if (!tj_array_ok(req->source, req->len) || !req->kernel || !tj_array_ok(req->params, req->nparams) ||
        !tj_array_ok(req->args, req->nargs)) {
        tj_rt_fail(err, "tj_jit_compile: the request has a NULL source, kernel, params or args with a count");
        return NULL;
    }
    tj_jit_request seen;
    tj_fn *f = tj_jit_request_find(j->cache, req, &seen);
    if (!f && (f = compile_fn(j, req, err)))
        tj_jit_request_remember(j->cache, &seen, req, f);
    return f;
}

/* The newest diagnostic since `before`, into err. */
static void take_diag(tj_ctx *c, uint32_t before, tj_rt_error *err)
{
    uint32_t n = tj_diag_count(c);
    set_error(err, "%s", n > before ? tj_diag_get(c, n - 1)->msg : "launch failed");
}

/* ---- the contract: a function runs only where it is valid ----------------------------- */

/* The specialization facts of f must hold for these arguments. */
static int check_facts(const tj_kernel *k, const tj_arg *args, tj_rt_error *err)
{
    for (uint32_t i = 0; k->facts && i < k->nparams; i++) {
        const char *broken = args[i].is_tensor ? tj_facts_broken(&k->facts[i], &args[i].tensor) : NULL;
        if (broken) {
            if (err)
                snprintf(err->msg, sizeof err->msg,
                         "argument '%s' breaks a specialization kernel '%s' was compiled for: %s; compile it for "
                         "these arguments, or launch through a dispatching entry (tj_dispatch, tilejit.Kernel)",
                         k->params[i].name, k->name, broken);
            return 1;
        }
    }
    return 0;
}

/* Binds the dim names of f's parameters to the arguments' sizes (which
 * tj_check_args found consistent). */
static uint32_t bind_dims(const tj_kernel *k, const tj_arg *args, uint32_t nargs, tj_binding *dims)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < k->nparams && i < nargs; i++)
        for (int d = 0; args[i].is_tensor && d < k->params[i].rank; d++)
            if (k->params[i].dim_names[d])
                dims[n++] = (tj_binding){k->params[i].dim_names[d], args[i].tensor.shape[d]};
    return n;
}

static const tj_binding *find_binding(const tj_binding *b, uint32_t n, const char *name, size_t len)
{
    for (uint32_t i = 0; i < n; i++)
        if (b[i].name && strlen(b[i].name) == len && !strncmp(b[i].name, name, len))
            return &b[i];
    return NULL;
}

/* "BLOCK=256, N=1000": the values of the names in a where clause, from
 * the configuration or else the dims. */
static void clause_values(const char *clause, const tj_kernel *k, const tj_binding *dims, uint32_t ndims, char *buf,
                          size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (const char *s = clause; *s && len < size;) {
        size_t n = 0;
        while ((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' && s[n] <= 'z') || s[n] == '_' ||
               (n && s[n] >= '0' && s[n] <= '9'))
            n++;
        const tj_binding *b = n ? find_binding(k->config, k->nconfig, s, n) : NULL;
        if (n && !b)
            b = find_binding(dims, ndims, s, n);
        if (b && !strstr(buf, b->name)) {
            int w = snprintf(buf + len, size - len, "%s%s=%lld", len ? ", " : "", b->name, (long long)b->value);
            len = w < 0 ? size : len + (size_t)w;
        }
        s += n ? n : 1;
    }
}

/* The where clauses that chose f's configuration must hold for the dims
 * of these arguments. err NULL: a probe, which allocates nothing. */
static int check_where(tj_fn *f, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    const where_contract *w = &f->where;
    uint32_t ndims = bind_dims(f->tile, args, nargs, w->dims), before = tj_diag_count(f->ctx);
    const char *clause = NULL;
    int ok = tj_config_satisfies(f->ctx, w->program, w->kernel, f->tile->config, f->tile->nconfig, w->dims, ndims,
                                 err ? &clause : NULL);
    if (ok == 1)
        return 0;
    if (ok < 0) {
        take_diag(f->ctx, before, err);
    } else if (err) {
        char values[256];
        clause_values(clause, f->tile, w->dims, ndims, values, sizeof values);
        snprintf(err->msg, sizeof err->msg,
                 "kernel '%s' was compiled for other shapes: its where clause '%s' does not hold for these "
                 "arguments (%s); compile it for them, or launch through a dispatching entry "
                 "(tj_dispatch, tilejit.Kernel)",
                 f->tile->name, clause, values);
    }
    return 1;
}

static int launch_cuda(tj_fn *f, const tj_arg *args, uint32_t nargs, void *stream, const int64_t grid[3],
                       tj_rt_error *err)
{
    if (check_facts(f->spec, args, err))
        return 1;
    tj_cuda_launch_dims d = {.block = {f->nthreads, 1, 1}, .shared_bytes = f->smem_bytes, .stream = stream};
    for (int i = 0; i < 3; i++) {
        if (grid[i] > (i ? 65535 : 0x7fffffff)) {
            set_error(err, "%s", "grid too large for the device");
            return 1;
        }
        d.grid[i] = (uint32_t)grid[i];
    }
    return tj_cuda_launch_kernel_maps(&f->function, &d, f->spec, f->maps, f->nmaps, args, nargs, err);
}

/* Arguments f has not seen: the checks of its Tile IR (dtypes, ranks,
 * specialized dims), the grid, and its where clauses. */
static int check_new_shapes(tj_fn *f, const tj_arg *args, uint32_t nargs, int64_t grid[3], tj_rt_error *err)
{
    uint32_t before = tj_diag_count(f->ctx);
    if (tj_check_args(f->tile, args, nargs) || tj_eval_grid(f->tile, args, nargs, grid)) {
        take_diag(f->ctx, before, err);
        return 1;
    }
    return check_where(f, args, nargs, err);
}

/* Checks the arguments and evaluates the grid, unless they have the shapes
 * of the last ones that passed. The checks report into f's context, which
 * launches on several threads share: hence the lock. */
static int prepare_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, int64_t grid[3], tj_rt_error *err)
{
    pthread_mutex_lock(&f->check_lock);
    int rc = 0;
    if (tj_memo_hit(&f->memo, args, nargs)) {
        memcpy(grid, f->memo_grid, sizeof f->memo_grid);
    } else if (!(rc = check_new_shapes(f, args, nargs, grid, err))) {
        tj_memo_store(&f->memo, args, nargs);
        memcpy(f->memo_grid, grid, sizeof f->memo_grid);
    }
    pthread_mutex_unlock(&f->check_lock);
    return rc;
}

int tj_fn_check(tj_fn *f, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    if (!f || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_fn_check: NULL %s", f ? "args with nargs > 0" : "function");
    int64_t grid[3];
    return prepare_launch(f, args, nargs, grid, err) ||
           ((f->jit->kind == TJ_DEVICE_CUDA || f->native) && check_facts(f->spec, args, err));
}

int tj_fn_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err)
{
    if (!f || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_fn_launch: NULL %s", f ? "args with nargs > 0" : "function");
    int64_t grid[3];
    if (prepare_launch(f, args, nargs, grid, err))
        return 1;
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
        return 0; /* an empty grid runs nothing */
    if (f->jit->kind == TJ_DEVICE_CUDA)
        return launch_cuda(f, args, nargs, stream, grid, err);
    if (f->native)
        return check_facts(f->spec, args, err) ||
               tj_cpu_run(f->native, args, nargs, grid, err ? err->msg : NULL, err ? sizeof err->msg : 0);
    pthread_mutex_lock(&f->check_lock);
    uint32_t before = tj_diag_count(f->ctx);
    int rc = tj_interp_run(f->tile, args, nargs);
    if (rc)
        take_diag(f->ctx, before, err);
    pthread_mutex_unlock(&f->check_lock);
    return rc;
}

tj_tensor tj_tensor_contiguous(void *data, tj_dtype dtype, int rank, const int64_t *shape)
{
    tj_tensor t = {.data = data, .dtype = dtype, .rank = rank};
    if (rank < 0 || rank > TJ_MAX_RANK || !tj_array_ok(shape, (uint64_t)rank)) {
        t.dtype = TJ_DT_INVALID; /* refused by every launch */
        return t;
    }
    int64_t stride = 1;
    for (int d = rank; d-- > 0;) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        stride *= shape[d];
    }
    return t;
}
