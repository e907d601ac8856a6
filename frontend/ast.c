/* Small queries on the AST. */
#include <stdio.h>
#include <string.h>

#include "frontend/ast.h"

const tj_binding fe_default_tiles[FE_NDEFAULT_TILES] = {{TJ_PARAM_WARPS, TJ_DEFAULT_WARPS},
                                                         {TJ_PARAM_STAGES, TJ_DEFAULT_STAGES}};

int fe_check_tile_value(const char *name, int64_t v, char *why, size_t cap)
{
    const char *rule = NULL;
    char buf[96];
    if (!strcmp(name, TJ_PARAM_WARPS) && (v < 1 || v > FE_MAX_WARPS || (v & (v - 1)))) {
        snprintf(buf, sizeof buf, "a power of two from 1 to %d (of 32 threads: at most %d threads)", FE_MAX_WARPS,
                 32 * FE_MAX_WARPS);
        rule = buf;
    } else if (!strcmp(name, TJ_PARAM_STAGES) && (v < 1 || v > FE_MAX_STAGES)) {
        snprintf(buf, sizeof buf, "from 1 to %d (1 prefetches nothing)", FE_MAX_STAGES);
        rule = buf;
    } else if (!strcmp(name, TJ_PARAM_VEC) && (v < 1 || v > FE_MAX_VEC || (v & (v - 1)))) {
        snprintf(buf, sizeof buf, "a power of two from 1 to %d (elements a thread owns along the last axis)",
                 FE_MAX_VEC);
        rule = buf;
    } else if (!strcmp(name, TJ_PARAM_OCCUPANCY) && (v < 1 || v > FE_MAX_OCCUPANCY)) {
        snprintf(buf, sizeof buf, "from 1 to %d (programs an SM holds at once)", FE_MAX_OCCUPANCY);
        rule = buf;
    } else if (!strcmp(name, TJ_PARAM_UNROLL) && (v < 1 || v > TJ_MAX_UNROLL || (v & (v - 1)))) {
        snprintf(buf, sizeof buf, "a power of two from 1 to %d (k steps a dot's loop unrolls)", TJ_MAX_UNROLL);
        rule = buf;
    } else if ((!strcmp(name, TJ_PARAM_FASTMATH) || !strcmp(name, TJ_PARAM_PRODUCER) ||
                !strcmp(name, TJ_PARAM_TURNS) || !strcmp(name, TJ_PARAM_CALLS) ||
                !strcmp(name, TJ_PARAM_TMA_STORE)) &&
               v != 0 && v != 1) {
        rule = "0 or 1";
    }
    if (rule)
        snprintf(why, cap, "%s must be %s", name, rule);
    return !rule;
}

const fe_fn *fe_find_fn(const tj_program *p, const char *name)
{
    const int32_t *i = fe_strmap_find(&p->fn_index, name);
    return i ? &p->fns[*i] : NULL;
}

int fe_find_kernel(const tj_program *p, const char *name)
{
    const int32_t *i = fe_strmap_find(&p->kernel_index, name);
    return i ? *i : -1;
}

int fe_find_dim(const fe_kernel *kd, const char *name, uint32_t *param, int *axis)
{
    for (uint32_t i = 0; i < kd->nparams; i++)
        for (int d = 0; d < kd->params[i].rank; d++)
            if (kd->params[i].dim_names[d] && !strcmp(kd->params[i].dim_names[d], name)) {
                *param = i;
                *axis = d;
                return 1;
            }
    return 0;
}

const tj_tile_param *fe_find_tile(const fe_kernel *kd, const char *name)
{
    for (uint32_t i = 0; i < kd->ntiles; i++)
        if (!strcmp(kd->tiles[i].name, name))
            return &kd->tiles[i];
    return NULL;
}

const tj_binding *fe_find_binding(const tj_binding *b, uint32_t n, const char *name)
{
    for (uint32_t i = 0; b && i < n; i++)
        if (b[i].name && !strcmp(b[i].name, name))
            return &b[i];
    return NULL;
}

int fe_find_param(const fe_kernel *kd, const char *name, uint32_t *index)
{
    for (uint32_t i = 0; i < kd->nparams; i++)
        if (!strcmp(kd->params[i].name, name)) {
            *index = i;
            return 1;
        }
    return 0;
}

int fe_name_in(const char *name, const char *const *names, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

/* Blocks nest at most FE_MAX_DEPTH deep (the parser's limit). */
static void collect(tj_ctx *c, const fe_block *b, fe_names *s)
{
    for (uint32_t i = 0; i < b->n; i++) {
        const fe_stmt *st = b->stmts[i];
        if (st->kind == S_ASSIGN)
            for (uint32_t t = 0; t < st->ntargets; t++)
                fe_names_add(c, s, st->targets[t].name);
        if (st->kind == S_FOR || st->kind == S_WHILE || st->kind == S_IF)
            collect(c, &st->body, s);
        if (st->kind == S_IF)
            collect(c, &st->orelse, s);
    }
}

void fe_assigned_names(tj_ctx *c, const fe_block *b, fe_names *out)
{
    *out = (fe_names){0};
    collect(c, b, out);
}

const fe_expr *fe_expr_chain_leaf(const fe_expr *e)
{
    while (e->kind == E_BINARY)
        e = e->lhs;
    return e;
}

/* Both walk down left operands in a loop: only right operands recurse. */
int fe_expr_same(const fe_expr *a, const fe_expr *b)
{
    for (;; a = a->lhs, b = b->lhs) {
        if (!a || !b)
            return a == b;
        if (a->kind != b->kind || a->op != b->op || a->nitems != b->nitems || a->nkw)
            return 0;
        switch (a->kind) {
        case E_INT: case E_BOOL: return a->ival == b->ival;
        case E_FLOAT: return a->fval == b->fval;
        case E_NAME: return !strcmp(a->name, b->name);
        case E_UNARY: case E_BINARY: break;
        default: return 0; /* calls may differ (program_id is not an issue, but keep it simple) */
        }
        if (!fe_expr_same(a->rhs, b->rhs))
            return 0;
    }
}

int fe_expr_mentions(const fe_expr *e, const char *name)
{
    for (; e; e = e->lhs) {
        if ((e->kind == E_NAME || e->kind == E_CALL) && !strcmp(e->name, name))
            return 1;
        for (uint32_t i = 0; i < e->nitems; i++)
            if (fe_expr_mentions(e->items[i], name))
                return 1;
        for (uint32_t i = 0; i < e->nkw; i++)
            if (fe_expr_mentions(e->kw[i].value, name))
                return 1;
        if (fe_expr_mentions(e->rhs, name))
            return 1;
    }
    return 0;
}

tj_loc fe_expr_start(const fe_expr *e)
{
    while ((e->kind == E_BINARY || e->kind == E_INDEX || e->kind == E_SLICE) && e->lhs)
        e = e->lhs;
    return e->loc;
}

const char *fe_expr_text(const tj_program *p, const fe_expr *e)
{
    return tj_strndup(p->ctx, p->text + e->begin, e->end - e->begin);
}
