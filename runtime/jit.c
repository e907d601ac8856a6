/* tj_jit: compile once (front end -> passes -> lowering -> PTX -> module),
 * launch many times. Compiled functions are cached (runtime/cache_jit.c):
 * in memory under the request's key and the kernel's, on disk (CUDA) under
 * the kernel's. */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_jit.h"
#include "tilejit/tilejit.h"
#include "tilejit/jit.h"

/* The last arguments that passed the checks, and their grid: a launch with
 * the same shapes, strides and scalars (data pointers may differ) skips the
 * checks and the grid evaluation, which cost more than the launch itself. */
enum { MEMO_ARGS = 16 };
typedef struct launch_memo {
    int valid;
    uint32_t nargs;
    tj_arg args[MEMO_ARGS];
    int64_t grid[3];
} launch_memo;

struct tj_fn {
    tj_jit *jit;
    launch_memo memo; /* guarded by check_lock */
    tj_ctx *ctx; /* owns the IR and the PTX text */
    pthread_mutex_t check_lock; /* argument checks report into ctx */
    tj_kernel *tile, *simt;
    tj_kernel *spec; /* specialized Tile IR: launch checks and the ABI (CUDA) */
    const char *ptx;
    uint32_t nthreads, smem_bytes;
    tj_cache_key key; /* the kernel's */
    int refs;         /* callers' and the memory cache's holds (jit->lock) */
    tj_cuda_module *module;
    tj_cuda_function function;
    tj_fn *next;
};

struct tj_jit {
    tj_device_kind kind;
    tj_cuda *cuda;
    tj_cuda_props props;
    pthread_mutex_t lock; /* guards fns and their refs */
    tj_fn *fns;
    tj_jit_cache *cache;
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

tj_jit *tj_jit_open(tj_device_kind kind, int ordinal, tj_rt_error *err)
{
    tj_jit *j = calloc(1, sizeof *j);
    if (!j) {
        set_error(err, "%s", "out of memory");
        return NULL;
    }
    j->kind = kind;
    pthread_mutex_init(&j->lock, NULL);
    if (kind == TJ_DEVICE_CUDA) {
        j->cuda = tj_cuda_open(ordinal, err);
        if (!j->cuda || tj_cuda_device_props(j->cuda, ordinal, &j->props, err)) {
            tj_jit_close(j);
            return NULL;
        }
    }
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
    pthread_mutex_destroy(&j->lock);
    free(j);
}

tj_device_kind tj_jit_device(const tj_jit *j) { return j->kind; }
tj_cuda *tj_jit_cuda(const tj_jit *j) { return j->cuda; }
int tj_source_params(const char *source, size_t len, const char *kernel, int *dtypes, int *ranks, int max,
                     tj_rt_error *err)
{
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

const tj_kernel *tj_fn_tile_ir(const tj_fn *f) { return f->tile; }
const tj_kernel *tj_fn_simt_ir(const tj_fn *f) { return f->simt; }
const char *tj_fn_ptx(const tj_fn *f) { return f->ptx; }
const tj_cuda_function *tj_fn_cuda_function(const tj_fn *f) { return f->module ? &f->function : NULL; }
uint32_t tj_fn_threads(const tj_fn *f) { return f->nthreads; }
uint32_t tj_fn_smem_bytes(const tj_fn *f) { return f->smem_bytes; }
void tj_jit_set_tune_mode(tj_jit *j, tj_tune_mode mode) { tj_jit_cache_set_tune_mode(j->cache, mode); }
void tj_jit_get_stats(tj_jit *j, tj_jit_stats *out) { tj_jit_cache_stats(j->cache, out); }
tj_cache *tj_jit_disk_cache(tj_jit *j) { return tj_jit_cache_disk(j->cache); }

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
    if (f->jit->kind == TJ_DEVICE_CUDA && !(f->spec = tj_jit_specialize(f->tile, req->args, req->nargs)))
        return 1;
    tj_jit_kernel_key(f->jit->cache, f->spec, tj_jit_cache_arch(f->jit->cache, req), &f->key);
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

/* Runs a compile step with the context's out-of-memory guard set; its
 * diagnostics go to err. */
static int run_guarded(tj_fn *f, int (*step)(tj_fn *, const tj_compile_request *), const tj_compile_request *req,
                       tj_rt_error *err)
{
    jmp_buf guard;
    jmp_buf *volatile outer = tj_ctx_swap_guard(f->ctx, &guard);
    volatile int rc = 1;
    if (!setjmp(guard))
        rc = step(f, req);
    else
        tj_error(f->ctx, "out of memory");
    tj_ctx_swap_guard(f->ctx, outer);
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
    if (tj_jit_cache_finish(f->jit->cache, &f->key, f->simt, f->ptx, tj_jit_cache_arch(f->jit->cache, req), &bin,
                            err))
        return 1;
    int rc = load_module(f, &bin, err);
    tj_jit_binary_free(&bin);
    return rc;
}

/* A new tj_fn for the request, or the cached one with the same kernel key. */
static tj_fn *compile_fn(tj_jit *j, const tj_compile_request *req, tj_rt_error *err)
{
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
    tj_fn *same = tj_jit_cache_get(j->cache, &f->key);
    if (same) {
        fn_free(f);
        return same;
    }
    if (j->kind == TJ_DEVICE_CUDA && load_cached(f) && build_binary(f, req, err)) {
        fn_free(f);
        return NULL;
    }
    if (j->kind == TJ_DEVICE_CPU)
        tj_jit_cache_count_compile(j->cache);
    f->refs = 1; /* the caller's */
    pthread_mutex_lock(&j->lock);
    f->next = j->fns;
    j->fns = f;
    pthread_mutex_unlock(&j->lock);
    tj_jit_cache_put(j->cache, &f->key, f);
    return f;
}

/* The memory cache answers a request it has seen; otherwise compile_fn. */
tj_fn *tj_jit_compile(tj_jit *j, const tj_compile_request *req, tj_rt_error *err)
{
    tj_jit_request seen;
    tj_fn *f = tj_jit_request_find(j->cache, req, &seen);
    if (!f && (f = compile_fn(j, req, err)))
        tj_jit_request_remember(j->cache, &seen, req, f);
    return f;
}

/* The specialization facts of f must hold for these arguments. */
static int check_facts(const tj_kernel *k, const tj_arg *args, tj_rt_error *err)
{
    for (uint32_t i = 0; k->facts && i < k->nparams; i++) {
        const tj_facts *fa = &k->facts[i];
        const tj_tensor *t = &args[i].tensor;
        if (!args[i].is_tensor)
            continue;
        int ok = !fa->aligned16 || ((uintptr_t)t->data & 15) == 0;
        ok &= !fa->unit_stride || t->rank == 0 || t->strides[t->rank - 1] == 1;
        for (int d = 0; d < t->rank; d++) {
            ok &= !fa->dim_div16[d] || t->shape[d] % 16 == 0;
            ok &= !fa->stride_div16[d] || t->strides[d] % 16 == 0;
        }
        if (!ok) {
            set_error(err, "argument '%s' breaks a specialization this kernel was compiled for "
                           "(alignment, unit stride, or a dim or stride divisible by 16): compile it again for these arguments",
                      k->params[i].name);
            return 1;
        }
    }
    return 0;
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
    return tj_cuda_launch_kernel(&f->function, &d, f->spec, args, nargs, err);
}

/* The newest diagnostic since `before`, into err. */
static void take_diag(tj_ctx *c, uint32_t before, tj_rt_error *err)
{
    uint32_t n = tj_diag_count(c);
    set_error(err, "%s", n > before ? tj_diag_get(c, n - 1)->msg : "launch failed");
}

static int same_launch_shape(const tj_arg *a, const tj_arg *b)
{
    if (a->is_tensor != b->is_tensor)
        return 0;
    if (!a->is_tensor)
        return a->scalar.i == b->scalar.i; /* the same 8 bytes, float or int */
    const tj_tensor *x = &a->tensor, *y = &b->tensor;
    size_t n = sizeof(int64_t) * (size_t)(x->rank > 0 && x->rank <= TJ_MAX_RANK ? x->rank : 0);
    return x->dtype == y->dtype && x->rank == y->rank && !x->data == !y->data && !memcmp(x->shape, y->shape, n) &&
           !memcmp(x->strides, y->strides, n);
}

static int memo_hit(const launch_memo *m, const tj_arg *args, uint32_t nargs)
{
    if (!m->valid || m->nargs != nargs)
        return 0;
    for (uint32_t i = 0; i < nargs; i++)
        if (!same_launch_shape(&m->args[i], &args[i]))
            return 0;
    return 1;
}

static void memo_store(launch_memo *m, const tj_arg *args, uint32_t nargs, const int64_t grid[3])
{
    m->valid = nargs <= MEMO_ARGS;
    if (!m->valid)
        return;
    m->nargs = nargs;
    memcpy(m->args, args, sizeof *args * nargs);
    memcpy(m->grid, grid, sizeof m->grid);
}

/* Checks the arguments and evaluates the grid. These report into f's
 * context, which launches on several threads share: hence the lock. */
static int prepare_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, int64_t grid[3], tj_rt_error *err)
{
    pthread_mutex_lock(&f->check_lock);
    int rc = 0;
    if (memo_hit(&f->memo, args, nargs)) {
        memcpy(grid, f->memo.grid, sizeof f->memo.grid);
    } else {
        uint32_t before = tj_diag_count(f->ctx);
        rc = tj_check_args(f->tile, args, nargs) || tj_eval_grid(f->tile, args, nargs, grid);
        if (rc)
            take_diag(f->ctx, before, err);
        else
            memo_store(&f->memo, args, nargs, grid);
    }
    pthread_mutex_unlock(&f->check_lock);
    return rc;
}

int tj_fn_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err)
{
    int64_t grid[3];
    if (prepare_launch(f, args, nargs, grid, err))
        return 1;
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
        return 0; /* an empty grid runs nothing */
    if (f->jit->kind == TJ_DEVICE_CUDA)
        return launch_cuda(f, args, nargs, stream, grid, err);
    pthread_mutex_lock(&f->check_lock);
    uint32_t before = tj_diag_count(f->ctx);
    int rc = tj_interp_run(f->tile, args, nargs);
    if (rc)
        take_diag(f->ctx, before, err);
    pthread_mutex_unlock(&f->check_lock);
    return rc;
}
