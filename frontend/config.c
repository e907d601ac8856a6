/* Program queries, tile parameters, and configuration selection: the first
 * combination of tile parameter values, in the order of the `tune` lists
 * (the first declared parameter varies slowest), that satisfies every
 * `where` clause. */
#include <stdio.h>
#include <string.h>

#include "frontend/ast.h"
#include "frontend/consteval.h"

/* At most this many configurations, and this much work (configurations
 * times the size of the where clauses) to choose one. */
enum { MAX_COMBINATIONS = 1 << 20, MAX_WHERE_WORK = 1 << 25 };

uint32_t tj_program_kernel_count(const tj_program *p) { return p ? p->nkernels : 0; }

const char *tj_program_kernel_name(const tj_program *p, uint32_t i)
{
    return p && i < p->nkernels ? p->kernels[i].name : NULL;
}

int tj_program_find_kernel(const tj_program *p, const char *name) { return p && name ? fe_find_kernel(p, name) : -1; }

static const fe_kernel *kernel_at(const tj_program *p, int i)
{
    return p && i >= 0 && (uint32_t)i < p->nkernels ? &p->kernels[i] : NULL;
}

uint32_t tj_kernel_tile_params(const tj_program *p, int kernel, const tj_tile_param **out)
{
    if (!out)
        return 0;
    const fe_kernel *kd = kernel_at(p, kernel);
    *out = kd ? kd->tiles : NULL;
    return kd ? kd->ntiles : 0;
}

uint32_t tj_kernel_params(const tj_program *p, int kernel, const tj_param **out)
{
    if (!out)
        return 0;
    const fe_kernel *kd = kernel_at(p, kernel);
    *out = kd ? kd->params : NULL;
    return kd ? kd->nparams : 0;
}

/* ---- the candidates ---------------------------------------------------------- */

/* One tile parameter and the values it may take. */
typedef struct choice {
    const char *name;
    const int64_t *values;
    uint32_t n, at;
} choice;

/* Declared tile parameters, then warps and stages when undeclared. */
static uint32_t make_choices(const fe_kernel *kd, const tj_binding *given, uint32_t ngiven, choice *cs)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < kd->ntiles; i++) {
        const tj_tile_param *t = &kd->tiles[i];
        const tj_binding *g = fe_find_binding(given, ngiven, t->name);
        cs[n++] = g ? (choice){t->name, &g->value, 1, 0} : (choice){t->name, t->values, t->nvalues, 0};
    }
    for (int i = 0; i < FE_NDEFAULT_TILES; i++) {
        const tj_binding *d = &fe_default_tiles[i], *g = fe_find_binding(given, ngiven, d->name);
        if (!fe_find_tile(kd, d->name))
            cs[n++] = (choice){d->name, g ? &g->value : &d->value, 1, 0};
    }
    return n;
}

static int check_given(tj_ctx *c, const fe_kernel *kd, const tj_binding *given, uint32_t n)
{
    int ok = 1;
    for (uint32_t i = 0; i < n; i++) {
        int known = given[i].name && (fe_find_tile(kd, given[i].name) || fe_find_binding(fe_default_tiles, FE_NDEFAULT_TILES, given[i].name));
        if (!known) {
            tj_error_at(c, kd->loc, "kernel '%s' has no tile parameter '%s'", kd->name, given[i].name ? given[i].name : "(null)");
            ok = 0;
        }
    }
    return ok;
}

/* ---- where clauses ---------------------------------------------------------------- */

typedef struct where_ctx {
    tj_ctx *c;
    const fe_kernel *kd;
    const choice *cs;
    uint32_t nc;
    const tj_binding *dims;
    uint32_t ndims;
    int report;       /* validation pass: report bad names */
    int unbound_dim;  /* the clause names a dim and no dims were given */
} where_ctx;

static fe_const_status resolve_where(void *ud, const fe_expr *name, int64_t *out)
{
    where_ctx *w = ud;
    uint32_t param;
    int axis;
    for (uint32_t i = 0; i < w->nc; i++)
        if (!strcmp(w->cs[i].name, name->name)) {
            *out = w->cs[i].values[w->cs[i].at];
            return FE_CONST_OK;
        }
    if (fe_find_dim(w->kd, name->name, &param, &axis)) {
        const tj_binding *b = fe_find_binding(w->dims, w->ndims, name->name);
        if (b) {
            *out = b->value;
            return FE_CONST_OK;
        }
        if (!w->dims) {
            w->unbound_dim = 1;
            *out = 0;
            return FE_CONST_OK;
        }
        if (w->report)
            tj_error_at(w->c, name->loc, "the where clause needs dim '%s', which is not bound (e.g. --shape %s=...)",
                        name->name, name->name);
        return FE_CONST_ERR;
    }
    if (w->report)
        tj_error_at(w->c, name->loc, "a where clause may only use tile parameters and dim names, not '%s'", name->name);
    return FE_CONST_ERR;
}

/* Checks every clause once; marks those to skip (unbound dims). */
static int validate_where(where_ctx *w, int *skip)
{
    int ok = 1;
    w->report = 1;
    for (uint32_t i = 0; i < w->kd->nwhere; i++) {
        const fe_expr *e = w->kd->where[i];
        fe_const_env env = {resolve_where, w, NULL};
        int64_t v;
        w->unbound_dim = 0;
        fe_const_status s = fe_const_eval(&env, e, &v);
        if (s == FE_CONST_NOT)
            tj_error_at(w->c, env.culprit->loc, "a where clause must be a compile-time condition over tile parameters and dims");
        else if (s == FE_CONST_OK && !fe_expr_is_condition(e))
            tj_error_at(w->c, fe_expr_start(e), "a where clause must be a condition, e.g. BLOCK >= N");
        ok &= s == FE_CONST_OK && fe_expr_is_condition(e);
        skip[i] = w->unbound_dim;
    }
    w->report = 0;
    return ok;
}

/* Evaluates every clause for the current combination; records which passed. */
static int combination_ok(where_ctx *w, const int *skip, int *passed)
{
    int ok = 1;
    for (uint32_t i = 0; i < w->kd->nwhere; i++) {
        if (skip[i])
            continue;
        fe_const_env env = {resolve_where, w, NULL};
        int64_t v = 0;
        fe_const_eval(&env, w->kd->where[i], &v);
        passed[i] |= v != 0;
        ok &= v != 0;
    }
    return ok;
}

static int next_combination(choice *cs, uint32_t n)
{
    for (uint32_t i = n; i-- > 0;) {
        if (++cs[i].at < cs[i].n)
            return 1;
        cs[i].at = 0;
    }
    return 0;
}

/* The clause that no combination satisfied, or a note that together they fail. */
static void report_unsatisfiable(where_ctx *w, const tj_program *p, const int *skip, const int *passed)
{
    for (uint32_t i = 0; i < w->kd->nwhere; i++) {
        if (skip[i] || passed[i])
            continue;
        char dims[256] = "";
        for (uint32_t d = 0; d < w->ndims; d++) {
            uint32_t param;
            int axis;
            const char *name = w->dims[d].name;
            if (name && fe_find_dim(w->kd, name, &param, &axis) && fe_expr_mentions(w->kd->where[i], name))
                snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s = %lld", dims[0] ? ", " : " with ", name,
                         (long long)w->dims[d].value);
        }
        tj_error_at(w->c, fe_expr_start(w->kd->where[i]), "no configuration of kernel '%s' satisfies 'where %s'%s", w->kd->name,
                    fe_expr_text(p, w->kd->where[i]), dims);
        return;
    }
    tj_error_at(w->c, w->kd->loc, "no configuration of kernel '%s' satisfies all of its where clauses together", w->kd->name);
}

static uint64_t count_combinations(const choice *cs, uint32_t n)
{
    uint64_t total = 1;
    for (uint32_t i = 0; i < n && total <= MAX_COMBINATIONS; i++)
        total *= cs[i].n;
    return total;
}

typedef struct select_job {
    tj_ctx *c;
    const tj_program *p;
    int kernel;
    const tj_binding *given, *dims;
    uint32_t ngiven, ndims;
    tj_binding **out;
    uint32_t *nout;
    int status;
} select_job;

static int select_config(void *arg)
{
    select_job *j = arg;
    const fe_kernel *kd = kernel_at(j->p, j->kernel);
    j->status = 1;
    if (!kd) {
        tj_error(j->c, "no kernel number %d in the program", j->kernel);
        return 0;
    }
    choice *cs = tj_alloc(j->c, sizeof *cs * (kd->ntiles + FE_NDEFAULT_TILES));
    uint32_t nc = make_choices(kd, j->given, j->ngiven, cs);
    where_ctx w = {j->c, kd, cs, nc, j->dims, j->ndims, 0, 0};
    int *skip = tj_alloc(j->c, sizeof(int) * (kd->nwhere + 1)), *passed = tj_alloc(j->c, sizeof(int) * (kd->nwhere + 1));
    if (!check_given(j->c, kd, j->given, j->ngiven) || !validate_where(&w, skip))
        return 0;
    uint64_t combos = count_combinations(cs, nc), clause_size = 1;
    for (uint32_t i = 0; i < kd->nwhere; i++)
        clause_size += kd->where[i]->size;
    if (combos > MAX_COMBINATIONS || combos * clause_size > MAX_WHERE_WORK) {
        tj_error_at(j->c, kd->loc, "kernel '%s' has too many tile configurations to search (%llu, with where clauses of %llu terms)",
                    kd->name, (unsigned long long)combos, (unsigned long long)clause_size - 1);
        return 0;
    }
    while (!combination_ok(&w, skip, passed))
        if (!next_combination(cs, nc)) {
            report_unsatisfiable(&w, j->p, skip, passed);
            return 0;
        }
    tj_binding *b = tj_alloc(j->c, sizeof *b * nc);
    for (uint32_t i = 0; i < nc; i++)
        b[i] = (tj_binding){cs[i].name, cs[i].values[cs[i].at]};
    *j->out = b;
    *j->nout = nc;
    j->status = 0;
    return 0;
}

int tj_select_config(tj_ctx *c, const tj_program *p, int kernel, const tj_binding *given, uint32_t ngiven,
                     const tj_binding *dims, uint32_t ndims, tj_binding **out, uint32_t *nout)
{
    if (!c)
        return 1;
    if (!out || !nout || !tj_array_ok(given, ngiven) || !tj_array_ok(dims, ndims)) {
        tj_error(c, "tj_select_config: NULL out, nout, or given or dims with a count");
        return 1;
    }
    select_job job = {c, p, kernel, given, dims, ngiven, ndims, out, nout, 1};
    *out = NULL;
    *nout = 0;
    return tj_guarded(c, select_config, &job) ? 1 : job.status;
}
