/* `where` clauses for the autotuner: whether one whole configuration
 * satisfies them, with the front end's own compile-time evaluator
 * (fe_const_eval) and the same names tj_select_config resolves. */
#include <string.h>

#include "frontend/ast.h"
#include "frontend/consteval.h"
#include "tilejit/frontend.h"

typedef struct where_env {
    tj_ctx *c;
    const fe_kernel *kd;
    const tj_binding *config, *dims;
    uint32_t nconfig, ndims;
    int unbound; /* the clause names a dim and no dims were given */
} where_env;

static int lookup(const tj_binding *b, uint32_t n, const char *name, int64_t *out)
{
    for (uint32_t i = 0; i < n; i++)
        if (b[i].name && !strcmp(b[i].name, name)) {
            *out = b[i].value;
            return 1;
        }
    return 0;
}

/* Tile parameters from the configuration (warps and stages default when
 * the kernel does not declare them), then dim names. */
static fe_const_status resolve(void *ud, const fe_expr *name, int64_t *out)
{
    where_env *w = ud;
    uint32_t param;
    int axis;
    if (lookup(w->config, w->nconfig, name->name, out) || lookup(fe_default_tiles, FE_NDEFAULT_TILES, name->name, out))
        return FE_CONST_OK;
    if (fe_find_dim(w->kd, name->name, &param, &axis)) {
        if (lookup(w->dims, w->ndims, name->name, out))
            return FE_CONST_OK;
        if (!w->dims) {
            w->unbound = 1;
            *out = 1;
            return FE_CONST_OK;
        }
        tj_error_at(w->c, name->loc, "the where clause needs dim '%s', which is not bound", name->name);
        return FE_CONST_ERR;
    }
    tj_error_at(w->c, name->loc, "a where clause may only use tile parameters and dim names, not '%s'", name->name);
    return FE_CONST_ERR;
}

typedef struct where_job {
    const tj_program *p;
    int kernel;
    where_env env;
    const char **failed;
    int result;
} where_job;

static int check_clauses(void *arg)
{
    where_job *j = arg;
    const fe_kernel *kd = j->env.kd;
    j->result = 1;
    for (uint32_t i = 0; i < kd->nwhere; i++) {
        fe_const_env env = {resolve, &j->env, NULL};
        int64_t v = 0;
        j->env.unbound = 0;
        fe_const_status s = fe_const_eval(&env, kd->where[i], &v);
        if (s != FE_CONST_OK) {
            if (s == FE_CONST_NOT)
                tj_error_at(j->env.c, fe_expr_start(kd->where[i]), "a where clause must be a compile-time condition");
            j->result = -1;
            return 0;
        }
        if (!v && !j->env.unbound) {
            if (j->failed)
                *j->failed = fe_expr_text(j->p, kd->where[i]);
            j->result = 0;
            return 0;
        }
    }
    return 0;
}

int tj_config_satisfies(tj_ctx *c, const tj_program *p, int kernel, const tj_binding *config, uint32_t nconfig,
                        const tj_binding *dims, uint32_t ndims, const char **failed)
{
    if (!c)
        return -1;
    if (!tj_array_ok(config, nconfig) || !tj_array_ok(dims, ndims)) {
        tj_error(c, "tj_config_satisfies: NULL config or dims with a count");
        return -1;
    }
    if (failed)
        *failed = NULL;
    if (!p || kernel < 0 || (uint32_t)kernel >= p->nkernels) {
        tj_error(c, "no kernel number %d in the program", kernel);
        return -1;
    }
    where_job job = {p, kernel, {c, &p->kernels[kernel], config, dims, nconfig, ndims, 0}, failed, -1};
    return tj_guarded(c, check_clauses, &job) ? -1 : job.result;
}
