/* Top-level declarations: `kernel NAME(params) header { body }` and
 * `fn NAME(params) -> TYPE { body }`, with the checks on their names. */
#include <string.h>

#include "frontend/builtins.h"
#include "frontend/parser.h"

static void name_error(fe_parser *p, tj_loc loc, const char *fmt, const char *name)
{
    fe_report(p, loc, fmt, name);
}

/* A value of tile parameter `name`; warps, stages and fastmath are checked
 * here, where the value has a location. */
static int parse_tile_value(fe_parser *p, const char *name, int64_t *out)
{
    const fe_token *first = fe_peek(p);
    int neg = fe_accept(p, T_MINUS);
    const fe_token *t = fe_expect(p, T_INT, "an integer");
    if (!t)
        return 0;
    *out = neg ? -t->ival : t->ival;
    char why[160];
    if (!fe_check_tile_value(name, *out, why, sizeof why))
        fe_report(p, first->loc, "%s = %lld is not supported: %s", name, (long long)*out, why);
    return 1;
}

/* ---- kernel parameters -------------------------------------------------- */

static int parse_dims(fe_parser *p, tj_param *prm, fe_kparam *pl)
{
    while (fe_peek(p)->kind != T_RBRACKET) {
        const fe_token *t = fe_next(p);
        if (prm->rank == TJ_MAX_RANK) {
            fe_syntax_error(p, t, "a tensor has at most %d dims", TJ_MAX_RANK);
            return 0;
        }
        int r = prm->rank++;
        pl->dim_locs[r] = t->loc;
        prm->dim_sizes[r] = -1;
        if (t->kind == T_IDENT) {
            prm->dim_names[r] = t->text;
        } else if (t->kind == T_INT && t->ival > 0) {
            prm->dim_sizes[r] = t->ival;
        } else {
            fe_syntax_error(p, t, "expected a dim name or a positive integer");
            return 0;
        }
        if (!fe_accept(p, T_COMMA))
            break;
    }
    if (!fe_expect(p, T_RBRACKET, "']' or ',' in the dims"))
        return 0;
    if (!prm->rank) {
        fe_syntax_error(p, fe_prev(p), "a tensor parameter needs at least one dim");
        return 0;
    }
    return 1;
}

static int parse_kparam(fe_parser *p, tj_param *prm, fe_kparam *pl)
{
    const fe_token *name = fe_expect(p, T_IDENT, "a parameter name");
    if (!name || !fe_expect(p, T_COLON, "':' and a type after the parameter name"))
        return 0;
    pl->loc = name->loc;
    prm->name = name->text;
    if ((prm->dtype = fe_parse_dtype(p, fe_next(p))) == TJ_DT_INVALID)
        return 0;
    if (!fe_accept(p, T_LBRACKET))
        return 1;
    fe_open(p);
    int ok = parse_dims(p, prm, pl);
    fe_close(p);
    return ok;
}

static int parse_kparam_list(fe_parser *p, fe_kernel *k)
{
    uint32_t cap = 0, lcap = 0;
    while (fe_peek(p)->kind != T_RPAREN) {
        if (k->nparams == FE_MAX_PARAMS) {
            fe_syntax_error(p, fe_peek(p), "a kernel has at most %d parameters", FE_MAX_PARAMS);
            return 0;
        }
        k->params = tj_grow(p->c, k->params, &cap, k->nparams + 1, sizeof *k->params);
        k->plocs = tj_grow(p->c, k->plocs, &lcap, k->nparams + 1, sizeof *k->plocs);
        if (!parse_kparam(p, &k->params[k->nparams], &k->plocs[k->nparams]))
            return 0;
        k->nparams++;
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, T_RPAREN, "')' or ',' in the parameter list") != NULL;
}

static int parse_kparams(fe_parser *p, fe_kernel *k)
{
    if (!fe_expect(p, T_LPAREN, "'(' after the kernel name"))
        return 0;
    fe_open(p);
    int ok = parse_kparam_list(p, k);
    fe_close(p);
    return ok;
}

/* ---- header clauses ------------------------------------------------------- */

static int parse_grid_dims(fe_parser *p, fe_kernel *k);

static int parse_grid(fe_parser *p, fe_kernel *k, const fe_token *kw)
{
    if (k->ngrid) {
        fe_syntax_error(p, kw, "the kernel already has a grid");
        return 0;
    }
    k->grid_loc = kw->loc;
    if (!fe_expect(p, T_LPAREN, "'(' after grid"))
        return 0;
    fe_open(p);
    int ok = parse_grid_dims(p, k);
    fe_close(p);
    if (ok && !k->ngrid)
        fe_syntax_error(p, kw, "the grid needs at least one dimension");
    return ok && k->ngrid > 0;
}

static int parse_grid_dims(fe_parser *p, fe_kernel *k)
{
    k->grid = tj_alloc(p->c, sizeof *k->grid * 3);
    while (fe_peek(p)->kind != T_RPAREN) {
        if (k->ngrid == 3) {
            fe_syntax_error(p, fe_peek(p), "a grid has at most 3 dimensions");
            return 0;
        }
        if (!(k->grid[k->ngrid++] = fe_parse_expr(p)))
            return 0;
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, T_RPAREN, "')' or ',' in the grid") != NULL;
}

/* Capacities of a kernel's tile parameter arrays while parsing. */
typedef struct tile_caps {
    uint32_t tiles, locs;
} tile_caps;

static tj_tile_param *new_tile(fe_parser *p, fe_kernel *k, tile_caps *cap, const fe_token *name)
{
    if (k->ntiles == FE_MAX_PARAMS) {
        fe_syntax_error(p, name, "a kernel has at most %d tile parameters", FE_MAX_PARAMS);
        return NULL;
    }
    k->tiles = tj_grow(p->c, k->tiles, &cap->tiles, k->ntiles + 1, sizeof *k->tiles);
    k->tile_locs = tj_grow(p->c, k->tile_locs, &cap->locs, k->ntiles + 1, sizeof *k->tile_locs);
    k->tile_locs[k->ntiles] = name->loc;
    tj_tile_param *t = &k->tiles[k->ntiles++];
    t->name = name->text;
    return t;
}

/* `const A = 1, B = 2` */
static int parse_const(fe_parser *p, fe_kernel *k, tile_caps *cap)
{
    do {
        fe_skip_newlines(p);
        const fe_token *name = fe_expect(p, T_IDENT, "a tile parameter name");
        if (!name || !fe_expect(p, T_ASSIGN, "'=' after the name"))
            return 0;
        tj_tile_param *t = new_tile(p, k, cap, name);
        int64_t *v = tj_alloc(p->c, sizeof *v);
        if (!t || !parse_tile_value(p, t->name, v))
            return 0;
        t->values = v;
        t->nvalues = 1;
    } while (fe_accept(p, T_COMMA));
    return 1;
}

/* The values of a tune list, up to and including its `]`. */
static int parse_values(fe_parser *p, tj_tile_param *t)
{
    int64_t *vals = NULL;
    uint32_t vcap = 0;
    while (fe_peek(p)->kind != T_RBRACKET) {
        vals = tj_grow(p->c, vals, &vcap, t->nvalues + 1, sizeof *vals);
        t->values = vals;
        if (!parse_tile_value(p, t->name, &vals[t->nvalues++]))
            return 0;
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, T_RBRACKET, "']' or ',' in the list") != NULL;
}

/* `tune A in [1, 2], B in [3]` */
static int parse_tune(fe_parser *p, fe_kernel *k, tile_caps *cap)
{
    do {
        fe_skip_newlines(p);
        const fe_token *name = fe_expect(p, T_IDENT, "a tile parameter name");
        if (!name || !fe_expect(p, T_IN, "'in' after the name") || !fe_expect(p, T_LBRACKET, "'[' and a list of values"))
            return 0;
        tj_tile_param *t = new_tile(p, k, cap, name);
        if (!t)
            return 0;
        t->tunable = 1;
        fe_open(p);
        int ok = parse_values(p, t);
        fe_close(p);
        if (!ok)
            return 0;
        if (!t->nvalues) {
            fe_syntax_error(p, name, "the list of values of '%s' is empty", name->text);
            return 0;
        }
    } while (fe_accept(p, T_COMMA));
    return 1;
}

static int parse_where(fe_parser *p, fe_kernel *k, uint32_t *cap)
{
    do {
        fe_skip_newlines(p);
        fe_expr *e = fe_parse_expr(p);
        if (!e)
            return 0;
        k->where = tj_grow(p->c, k->where, cap, k->nwhere + 1, sizeof *k->where);
        k->where[k->nwhere++] = e;
    } while (fe_accept(p, T_COMMA));
    return 1;
}

static int is_word(const fe_token *t, const char *word) { return t->kind == T_IDENT && !strcmp(t->text, word); }

static int parse_header(fe_parser *p, fe_kernel *k)
{
    tile_caps tcap = {0, 0};
    uint32_t wcap = 0;
    for (;;) {
        fe_skip_newlines(p);
        const fe_token *t = fe_peek(p);
        int ok;
        if (t->kind == T_LBRACE)
            break;
        fe_next(p);
        if (is_word(t, "grid"))
            ok = parse_grid(p, k, t);
        else if (is_word(t, "const"))
            ok = parse_const(p, k, &tcap);
        else if (is_word(t, "tune"))
            ok = parse_tune(p, k, &tcap);
        else if (is_word(t, "where"))
            ok = parse_where(p, k, &wcap);
        else {
            fe_syntax_error(p, t, "expected grid, const, tune, where or '{' in the kernel header");
            ok = 0;
        }
        if (!ok)
            return 0;
    }
    if (!k->ngrid)
        fe_syntax_error(p, fe_peek(p), "kernel '%s' needs a grid clause, e.g. grid (cdiv(N, BLOCK))", k->name);
    return k->ngrid > 0;
}

/* ---- names ---------------------------------------------------------------- */

/* Whether `name` was in `seen` already (it is now). */
static int seen_before(fe_parser *p, fe_strmap *seen, const char *name)
{
    int32_t *v = fe_strmap_put(p->c, seen, name);
    int before = *v >= 0;
    *v = 0;
    return before;
}

/* Parameter, dim and tile parameter names: unique and not reserved (hash
 * sets keep this linear in the number of names). */
static void check_kernel_names(fe_parser *p, const fe_kernel *k)
{
    fe_strmap params = {0}, dims = {0}, tiles = {0};
    for (uint32_t i = 0; i < k->nparams; i++) {
        const char *name = k->params[i].name;
        if (tj_is_reserved_param(name))
            name_error(p, k->plocs[i].loc, "'%s' is reserved for a tile parameter", name);
        if (seen_before(p, &params, name))
            name_error(p, k->plocs[i].loc, "duplicate parameter '%s'", name);
    }
    for (uint32_t i = 0; i < k->nparams; i++)
        for (int d = 0; d < k->params[i].rank; d++) {
            const char *dn = k->params[i].dim_names[d];
            if (!dn)
                continue;
            if (tj_is_reserved_param(dn) || tj_dtype_from_name(dn, strlen(dn)))
                name_error(p, k->plocs[i].dim_locs[d], "'%s' cannot be a dim name", dn);
            if (fe_strmap_find(&params, dn))
                name_error(p, k->plocs[i].dim_locs[d], "dim '%s' has the name of a parameter", dn);
            seen_before(p, &dims, dn);
        }
    for (uint32_t i = 0; i < k->ntiles; i++) {
        const char *tn = k->tiles[i].name;
        if (seen_before(p, &tiles, tn))
            name_error(p, k->tile_locs[i], "duplicate tile parameter '%s'", tn);
        if (fe_strmap_find(&params, tn) || fe_strmap_find(&dims, tn))
            name_error(p, k->tile_locs[i], "tile parameter '%s' has the name of a parameter or dim", tn);
    }
}

void fe_parse_kernel(fe_parser *p, tj_program *prog)
{
    fe_next(p); /* kernel */
    const fe_token *name = fe_expect(p, T_IDENT, "a kernel name");
    if (!name)
        return;
    fe_kernel k = {.name = name->text, .loc = name->loc};
    if (!parse_kparams(p, &k) || !parse_header(p, &k))
        return;
    check_kernel_names(p, &k);
    fe_parse_body(p, &k.body);
    int32_t *first = fe_strmap_put(p->c, &prog->kernel_index, k.name);
    if (*first >= 0)
        name_error(p, k.loc, "duplicate kernel '%s'", k.name);
    else
        *first = (int32_t)prog->nkernels;
    prog->kernels = tj_grow(p->c, prog->kernels, &prog->kcap, prog->nkernels + 1, sizeof *prog->kernels);
    prog->kernels[prog->nkernels++] = k;
}

/* ---- fn helpers ------------------------------------------------------------- */

static fe_expr *parse_fn_type(fe_parser *p)
{
    if (fe_peek(p)->kind != T_IDENT) {
        fe_syntax_error(p, fe_peek(p), "expected a type such as f32 or f32[BM]");
        return NULL;
    }
    return fe_parse_type(p);
}

static int parse_fparam_list(fe_parser *p, fe_fn *f)
{
    uint32_t cap = 0;
    fe_strmap seen = {0};
    while (fe_peek(p)->kind != T_RPAREN) {
        const fe_token *name = fe_expect(p, T_IDENT, "a parameter name");
        if (!name || !fe_expect(p, T_COLON, "':' and a type after the parameter name"))
            return 0;
        if (f->nparams == FE_MAX_FN_PARAMS) {
            fe_syntax_error(p, name, "an fn helper has at most %d parameters", FE_MAX_FN_PARAMS);
            return 0;
        }
        fe_expr *type = parse_fn_type(p);
        if (!type)
            return 0;
        if (seen_before(p, &seen, name->text))
            name_error(p, name->loc, "duplicate parameter '%s'", name->text);
        f->params = tj_grow(p->c, f->params, &cap, f->nparams + 1, sizeof *f->params);
        f->params[f->nparams++] = (fe_fparam){name->text, name->loc, type};
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, T_RPAREN, "')' or ',' in the parameter list") != NULL;
}

static int parse_fparams(fe_parser *p, fe_fn *f)
{
    if (!fe_expect(p, T_LPAREN, "'(' after the fn name"))
        return 0;
    fe_open(p);
    int ok = parse_fparam_list(p, f);
    fe_close(p);
    return ok;
}

static int parse_ret_types(fe_parser *p, fe_expr *tup)
{
    uint32_t cap = 0;
    while (fe_peek(p)->kind != T_RPAREN) {
        fe_expr *t = parse_fn_type(p);
        if (!t)
            return 0;
        tup->items = tj_grow(p->c, tup->items, &cap, tup->nitems + 1, sizeof *tup->items);
        tup->items[tup->nitems++] = t;
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, T_RPAREN, "')' after the return types") != NULL;
}

/* `-> f32` or `-> (f32, f32)` */
static int parse_ret(fe_parser *p, fe_fn *f)
{
    const fe_token *open = fe_peek(p);
    if (!fe_accept(p, T_LPAREN))
        return (f->ret = parse_fn_type(p)) != NULL;
    f->ret = fe_new_expr(p, E_TUPLE, open);
    fe_open(p);
    int ok = parse_ret_types(p, f->ret);
    fe_close(p);
    return ok;
}

void fe_parse_fn(fe_parser *p, tj_program *prog)
{
    fe_next(p); /* fn */
    const fe_token *name = fe_expect(p, T_IDENT, "a fn name");
    if (!name)
        return;
    fe_fn f = {.name = name->text, .loc = name->loc};
    if (!parse_fparams(p, &f) || (fe_accept(p, T_ARROW) && !parse_ret(p, &f)))
        return;
    fe_parse_body(p, &f.body);
    int32_t *first = fe_strmap_put(p->c, &prog->fn_index, f.name);
    if (fe_builtin_find(f.name) || tj_dtype_from_name(f.name, strlen(f.name)))
        name_error(p, f.loc, "fn '%s' has the name of a built-in function", f.name);
    else if (*first >= 0)
        name_error(p, f.loc, "duplicate fn '%s'", f.name);
    if (*first < 0)
        *first = (int32_t)prog->nfns;
    prog->fns = tj_grow(p->c, prog->fns, &prog->fcap, prog->nfns + 1, sizeof *prog->fns);
    prog->fns[prog->nfns++] = f;
}
