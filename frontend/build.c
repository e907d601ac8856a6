/* Building a kernel: configuration, grid block, body block; and the small
 * value, error and emission helpers every building file uses. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/build.h"

/* ---- values and errors ----------------------------------------------------- */

fe_val fe_value(tj_ref ref, tj_type type) { return (fe_val){.kind = V_VALUE, .ref = ref, .type = type}; }

fe_val fe_error_val(void) { return (fe_val){.kind = V_ERROR}; }

fe_val fe_err(fe_builder *lw, tj_loc loc, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tj_error_at(lw->c, loc, "%s", msg);
    return fe_error_val();
}

int fe_any_error(const fe_val *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i].kind == V_ERROR)
            return 1;
    return 0;
}

tj_ref fe_emit(fe_builder *lw, tj_op op, tj_type type, const tj_ref *args, uint32_t nargs)
{
    tj_ref r = tj_emit(lw->k, lw->block, op, type, args, nargs);
    lw->k->insts[r].loc = lw->loc;
    return r;
}

fe_val fe_emit_val(fe_builder *lw, tj_op op, tj_type type, const tj_ref *args, uint32_t nargs)
{
    return fe_value(fe_emit(lw, op, type, args, nargs), type);
}

tj_ref fe_const_int(fe_builder *lw, tj_dtype dt, int64_t v)
{
    tj_ref r = tj_emit_const_int(lw->k, lw->block, tj_type_scalar(lw->c, dt), v);
    lw->k->insts[r].loc = lw->loc;
    return r;
}

tj_ref fe_const_float(fe_builder *lw, tj_dtype dt, double v)
{
    if (dt == TJ_DT_F32)
        v = (double)(float)v; /* one spelling per f32 constant */
    tj_ref r = tj_emit_const_float(lw->k, lw->block, tj_type_scalar(lw->c, dt), v);
    lw->k->insts[r].loc = lw->loc;
    return r;
}

const tj_type_info *fe_info(const fe_builder *lw, tj_type t) { return tj_type_get(lw->c, t); }

const char *fe_type_name(fe_builder *lw, tj_type t)
{
    char buf[256];
    tj_type_str(lw->c, t, buf, sizeof buf);
    return tj_strdup(lw->c, buf);
}

const char *fe_val_desc(fe_builder *lw, fe_val v)
{
    char buf[64];
    switch (v.kind) {
    case V_VALUE: return fe_type_name(lw, v.type);
    case V_INT: return "an integer literal";
    case V_FLOAT: return "a float literal";
    case V_TENSOR:
        snprintf(buf, sizeof buf, "tensor '%s'", lw->kd->params[v.param].name);
        return tj_strdup(lw->c, buf);
    case V_VIEW: return "a view";
    case V_VOID: return "no value";
    case V_TUPLE:
        snprintf(buf, sizeof buf, "a tuple of %u values", v.n);
        return tj_strdup(lw->c, buf);
    default: return "an invalid value";
    }
}

/* ---- configuration ----------------------------------------------------------- */

/* A value bound from outside (-D, the API) that the back end cannot take;
 * declared values were checked by the parser. */
static int check_given_value(fe_builder *lw, const tj_binding *b)
{
    char why[160];
    if (fe_check_tile_value(b->name, b->value, why, sizeof why))
        return 1;
    fe_err(lw, lw->kd->loc, "kernel '%s' is given %s = %lld, which is not supported: %s", lw->kd->name, b->name,
           (long long)b->value, why);
    return 0;
}

/* kernel->config: every declared tile parameter, then warps and stages
 * with their defaults when the kernel does not declare them. */
static int bind_config(fe_builder *lw, const tj_binding *config, uint32_t n)
{
    const fe_kernel *kd = lw->kd;
    tj_kernel *k = lw->k;
    int ok = 1;
    k->config = tj_alloc(lw->c, sizeof *k->config * (kd->ntiles + FE_NDEFAULT_TILES));
    for (uint32_t i = 0; i < kd->ntiles; i++) {
        const tj_binding *given = fe_find_binding(config, n, kd->tiles[i].name);
        k->config[k->nconfig++] = (tj_binding){kd->tiles[i].name, given ? given->value : 0};
        if (!given) {
            fe_err(lw, kd->tile_locs[i], "tile parameter '%s' is not bound (e.g. -D %s=%lld)", kd->tiles[i].name,
                   kd->tiles[i].name, (long long)kd->tiles[i].values[0]);
            ok = 0;
        }
    }
    for (int i = 0; i < FE_NDEFAULT_TILES; i++) {
        const tj_binding *d = &fe_default_tiles[i], *given = fe_find_binding(config, n, d->name);
        if (!fe_find_tile(kd, d->name))
            k->config[k->nconfig++] = given ? *given : *d;
    }
    for (uint32_t i = 0; i < k->nconfig; i++)
        ok &= check_given_value(lw, &k->config[i]);
    for (uint32_t i = 0; i < n; i++) {
        if (!config[i].name || !fe_find_binding(k->config, k->nconfig, config[i].name)) {
            fe_err(lw, kd->loc, "kernel '%s' has no tile parameter '%s'", kd->name,
                   config[i].name ? config[i].name : "(null)");
            ok = 0;
        }
    }
    return ok;
}

/* ---- grid and body ------------------------------------------------------------ */

static tj_ref grid_dim(fe_builder *lw, const fe_expr *e)
{
    fe_val v = fe_build_expr(lw, e);
    lw->loc = e->loc;
    if (v.kind == V_ERROR)
        return fe_const_int(lw, TJ_DT_I32, 1);
    tj_dtype dt = fe_val_dtype(lw, v);
    if (v.kind != V_INT && !(v.kind == V_VALUE && tj_type_is_scalar(lw->c, v.type) && tj_dtype_is_int(dt))) {
        fe_err(lw, e->loc, "a grid dimension must be an integer scalar, not %s", fe_val_desc(lw, v));
        return fe_const_int(lw, TJ_DT_I32, 1);
    }
    v = fe_cast(lw, v, TJ_DT_I32, 0, e->loc);
    return v.kind == V_VALUE ? v.ref : fe_const_int(lw, TJ_DT_I32, 1);
}

static void build_grid(fe_builder *lw)
{
    tj_kernel *k = lw->k;
    k->grid = tj_block_new(k, TJ_NONE);
    lw->block = k->grid;
    lw->in_grid = 1;
    tj_ref dims[3];
    for (uint32_t i = 0; i < lw->kd->ngrid; i++)
        dims[i] = grid_dim(lw, lw->kd->grid[i]);
    lw->loc = lw->kd->grid_loc;
    fe_emit(lw, TJ_OP_YIELD, TJ_TYPE_NONE, dims, lw->kd->ngrid);
    lw->in_grid = 0;
}

static void build_body(fe_builder *lw)
{
    tj_kernel *k = lw->k;
    k->body = tj_block_new(k, TJ_NONE);
    lw->block = k->body;
    fe_build_block(lw, &lw->kd->body);
    lw->block = k->body;
    lw->loc = lw->kd->loc;
    fe_emit(lw, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
}

static uint32_t count_dim_names(const fe_kernel *kd)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < kd->nparams; i++)
        for (int d = 0; d < kd->params[i].rank; d++)
            n += kd->params[i].dim_names[d] != NULL;
    return n;
}

typedef struct build_job {
    tj_ctx *c;
    const tj_program *p;
    int kernel;
    const tj_binding *config, *dims;
    uint32_t nconfig, ndims;
    tj_kernel *result;
} build_job;

static int build_kernel(void *arg)
{
    build_job *job = arg;
    tj_ctx *c = job->c;
    if (!job->p || job->kernel < 0 || (uint32_t)job->kernel >= job->p->nkernels) {
        tj_error(c, "no kernel number %d in the program", job->kernel);
        return 0;
    }
    uint32_t errors = tj_error_count(c);
    const fe_kernel *kd = &job->p->kernels[job->kernel];
    fe_builder lw = {.c = c, .prog = job->p, .kd = kd, .dims = job->dims, .ndims = job->ndims};
    tj_kernel *k = lw.k = tj_kernel_new(c, kd->name);
    k->loc = kd->loc;
    k->params = tj_alloc(c, sizeof *k->params * (kd->nparams ? kd->nparams : 1));
    memcpy(k->params, kd->params, sizeof *k->params * kd->nparams);
    k->nparams = kd->nparams;
    lw.spec_cap = count_dim_names(kd);
    k->spec = tj_alloc(c, sizeof *k->spec * (lw.spec_cap ? lw.spec_cap : 1));
    lw.unbound = tj_alloc(c, sizeof *lw.unbound * (lw.spec_cap ? lw.spec_cap : 1));
    if (!bind_config(&lw, job->config, job->nconfig))
        return 0;
    build_grid(&lw);
    build_body(&lw);
    if (tj_error_count(c) == errors)
        job->result = k;
    return 0;
}

tj_kernel *tj_build_kernel(tj_ctx *c, const tj_program *p, int kernel, const tj_binding *config,
                           uint32_t nconfig, const tj_binding *dims, uint32_t ndims)
{
    if (!c)
        return NULL;
    if (!tj_array_ok(config, nconfig) || !tj_array_ok(dims, ndims)) {
        tj_error(c, "tj_build_kernel: NULL config or dims with a count");
        return NULL;
    }
    build_job job = {c, p, kernel, config, dims, nconfig, ndims, NULL};
    return tj_guarded(c, build_kernel, &job) ? NULL : job.result;
}
