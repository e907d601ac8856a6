/* tj_jit: compile once (front end -> passes -> lowering -> PTX -> module),
 * launch many times. */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"
#include "tilejit/jit.h"

struct tj_fn {
    tj_jit *jit;
    tj_ctx *ctx; /* owns the IR and the PTX text */
    pthread_mutex_t check_lock; /* argument checks report into ctx */
    tj_kernel *tile, *simt;
    const char *ptx;
    tj_cuda_module *module;
    tj_cuda_function function;
    tj_fn *next;
};

struct tj_jit {
    tj_device_kind kind;
    tj_cuda *cuda;
    tj_cuda_props props;
    pthread_mutex_t lock; /* guards fns */
    tj_fn *fns;
};

static void set_error(tj_rt_error *err, const char *fmt, const char *detail)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, fmt, detail);
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
const tj_kernel *tj_fn_tile_ir(const tj_fn *f) { return f->tile; }
const tj_kernel *tj_fn_simt_ir(const tj_fn *f) { return f->simt; }
const char *tj_fn_ptx(const tj_fn *f) { return f->ptx; }

/* Binds every dim name of the kernel's tensor parameters to the size the
 * example arguments have (mismatches are tj_check_args's to report). */
static uint32_t dims_from_args(tj_ctx *c, const tj_program *p, int kernel, const tj_arg *args,
                               uint32_t nargs, tj_binding **out)
{
    const tj_param *params;
    uint32_t np = tj_kernel_params(p, kernel, &params), n = 0;
    tj_binding *dims = tj_alloc(c, sizeof *dims * (np * TJ_MAX_RANK + 1));
    for (uint32_t i = 0; i < np && i < nargs; i++) {
        if (!args[i].is_tensor || args[i].tensor.rank != params[i].rank)
            continue;
        for (int d = 0; d < params[i].rank; d++)
            if (params[i].dim_names[d])
                dims[n++] = (tj_binding){params[i].dim_names[d], args[i].tensor.shape[d]};
    }
    *out = dims;
    return n;
}

static const char *default_arch(const tj_jit *j)
{
    if (j->props.cc_major == 9 && j->props.cc_minor == 0)
        return "sm_90a";
    return "sm_80";
}

/* Tile IR for the request, optimized and checked against the arguments. */
static tj_kernel *build_tile_ir(tj_ctx *c, const tj_compile_request *req)
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
    uint32_t ndims = dims_from_args(c, p, k, req->args, req->nargs, &dims), nconfig;
    if (tj_select_config(c, p, k, req->params, req->nparams, dims, ndims, &config, &nconfig))
        return NULL;
    tj_kernel *tile = tj_lower_kernel(c, p, k, config, nconfig, dims, ndims);
    if (!tile || tj_optimize(tile, 0) || tj_check_args(tile, req->args, req->nargs))
        return NULL;
    return tile;
}

/* Specialized SIMT IR and PTX for the CUDA device. */
static int build_ptx(tj_fn *f, const tj_compile_request *req)
{
    tj_kernel *k = tj_kernel_clone(f->tile);
    tj_facts_from_args(k, req->args, req->nargs);
    if (tj_pass_specialize(k) || tj_optimize(k, 0))
        return 1;
    f->simt = tj_lower_simt(k, &(tj_lower_options){0});
    if (!f->simt || tj_optimize(f->simt, 0))
        return 1;
    tj_buf ptx = {0};
    int rc = tj_emit_ptx(f->simt, req->arch ? req->arch : default_arch(f->jit), &ptx);
    f->ptx = tj_strndup(f->ctx, ptx.data ? ptx.data : "", ptx.len);
    tj_buf_free(&ptx);
    return rc;
}

static int load_module(tj_fn *f, tj_rt_error *err)
{
    f->module = tj_cuda_module_load_ptx(f->jit->cuda, f->ptx, f->simt->name, err);
    if (!f->module || tj_cuda_module_function(f->module, f->simt->name, &f->function, err))
        return 1;
    if (f->simt->smem_bytes > 48 * 1024)
        return tj_cuda_function_set_max_dynamic_shared(&f->function, (int)f->simt->smem_bytes, err);
    return 0;
}

static int compile_guarded(tj_fn *f, const tj_compile_request *req)
{
    f->tile = build_tile_ir(f->ctx, req);
    if (!f->tile)
        return 1;
    return f->jit->kind == TJ_DEVICE_CUDA ? build_ptx(f, req) : 0;
}

/* Runs the compilation with the context's out-of-memory guard set. */
static int compile_with_guard(tj_fn *f, const tj_compile_request *req)
{
    jmp_buf guard;
    jmp_buf *volatile outer = tj_ctx_swap_guard(f->ctx, &guard);
    volatile int rc = 1;
    if (!setjmp(guard))
        rc = compile_guarded(f, req);
    else
        tj_error(f->ctx, "out of memory");
    tj_ctx_swap_guard(f->ctx, outer);
    return rc;
}

tj_fn *tj_jit_compile(tj_jit *j, const tj_compile_request *req, tj_rt_error *err)
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
    int rc = compile_with_guard(f, req);
    if (rc || tj_error_count(c)) {
        set_error(err, "%s", tj_error_count(c) ? tj_diag_render(c) : "compilation failed");
        fn_free(f);
        return NULL;
    }
    if (j->kind == TJ_DEVICE_CUDA && load_module(f, err)) {
        fn_free(f);
        return NULL;
    }
    pthread_mutex_lock(&j->lock);
    f->next = j->fns;
    j->fns = f;
    pthread_mutex_unlock(&j->lock);
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
        for (int d = 0; d < t->rank; d++)
            ok &= !fa->dim_div16[d] || t->shape[d] % 16 == 0;
        if (!ok) {
            set_error(err, "argument '%s' breaks a specialization this kernel was compiled for "
                           "(alignment, unit stride or a dim divisible by 16): compile it again for these arguments",
                      k->params[i].name);
            return 1;
        }
    }
    return 0;
}

static int launch_cuda(tj_fn *f, const tj_arg *args, uint32_t nargs, void *stream, const int64_t grid[3],
                       tj_rt_error *err)
{
    if (check_facts(f->simt, args, err))
        return 1;
    tj_cuda_launch_dims d = {.block = {f->simt->nthreads, 1, 1}, .shared_bytes = f->simt->smem_bytes,
                             .stream = stream};
    for (int i = 0; i < 3; i++) {
        if (grid[i] > (i ? 65535 : 0x7fffffff)) {
            set_error(err, "%s", "grid too large for the device");
            return 1;
        }
        d.grid[i] = (uint32_t)grid[i];
    }
    return tj_cuda_launch_kernel(&f->function, &d, f->simt, args, nargs, err);
}

/* The newest diagnostic since `before`, into err. */
static void take_diag(tj_ctx *c, uint32_t before, tj_rt_error *err)
{
    uint32_t n = tj_diag_count(c);
    set_error(err, "%s", n > before ? tj_diag_get(c, n - 1)->msg : "launch failed");
}

/* Checks the arguments and evaluates the grid. These report into f's
 * context, which launches on several threads share: hence the lock. */
static int prepare_launch(tj_fn *f, const tj_arg *args, uint32_t nargs, int64_t grid[3], tj_rt_error *err)
{
    pthread_mutex_lock(&f->check_lock);
    uint32_t before = tj_diag_count(f->ctx);
    int rc = tj_check_args(f->tile, args, nargs) || tj_eval_grid(f->tile, args, nargs, grid);
    if (rc)
        take_diag(f->ctx, before, err);
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
