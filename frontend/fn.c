/* fn helpers, inlined at each call in a scope of their own (they see their
 * parameters and the kernel's tile parameters), and scan, whose combine
 * region is an fn inlined on scalars. */
#include <stdio.h>
#include <string.h>

#include "frontend/builtins.h"

/* v converted to a declared type (`f32` accepts any shape of f32 elements;
 * `f32[BM]` that shape): literals convert, typed values must match. */
static fe_val conform(fe_builder *lw, fe_val v, const fe_expr *type, tj_loc loc, const char *what)
{
    if (v.kind == V_ERROR)
        return v;
    int64_t shape[TJ_MAX_RANK];
    int rank = (int)type->nitems;
    if (rank > TJ_MAX_RANK)
        return fe_err(lw, type->loc, "a tile has at most %d dims", TJ_MAX_RANK);
    for (int d = 0; d < rank; d++)
        if (!fe_require_const(lw, type->items[d], "a tile extent", &shape[d]))
            return fe_error_val();
    tj_type want = rank ? fe_tile_type64(lw, type->dtype, rank, shape, type->loc) : TJ_TYPE_NONE;
    if (rank && !want)
        return fe_error_val();
    if (fe_is_literal(v))
        return want ? fe_convert(lw, v, want, loc) : fe_cast(lw, v, type->dtype, 0, loc);
    if (v.kind != V_VALUE || fe_val_dtype(lw, v) != type->dtype || (want && v.type != want))
        return fe_err(lw, loc, "%s must be %s, got %s", what, fe_expr_text(lw->prog, type), fe_val_desc(lw, v));
    return v;
}

static fe_val conform_result(fe_builder *lw, const fe_fn *fn, fe_val v, tj_loc loc)
{
    char what[160];
    snprintf(what, sizeof what, "the result of '%s'", fn->name);
    if (!fn->ret || v.kind == V_ERROR)
        return v;
    if (fn->ret->kind == E_TYPE)
        return conform(lw, v, fn->ret, loc, what);
    if (v.kind != V_TUPLE || v.n != fn->ret->nitems)
        return fe_err(lw, loc, "%s must be a tuple of %u values, got %s", what, fn->ret->nitems, fe_val_desc(lw, v));
    fe_val t = {.kind = V_TUPLE, .n = v.n, .elems = tj_alloc(lw->c, sizeof *t.elems * v.n)};
    for (uint32_t i = 0; i < v.n; i++) {
        snprintf(what, sizeof what, "element %u of the result of '%s'", i, fn->name);
        t.elems[i] = conform(lw, v.elems[i], fn->ret->items[i], loc, what);
    }
    return t;
}

static int enter_fn(fe_builder *lw, const fe_fn *fn, const fe_expr *call)
{
    for (uint32_t i = 0; i < lw->ninlining; i++)
        if (lw->inlining[i] == fn) {
            fe_err(lw, call->loc, "recursive call to '%s': fn helpers are inlined, so they cannot recurse", fn->name);
            return 0;
        }
    if (lw->ninlining == FE_MAX_INLINE) {
        fe_err(lw, call->loc, "fn calls nest more than %d deep", FE_MAX_INLINE);
        return 0;
    }
    lw->calls[lw->ninlining] = call;
    lw->inlining[lw->ninlining++] = fn;
    return 1;
}

/* The body: every statement but a final `return`, then its value. */
static fe_val run_body(fe_builder *lw, const fe_fn *fn)
{
    const fe_block *b = &fn->body;
    const fe_stmt *last = b->n ? b->stmts[b->n - 1] : NULL;
    int returns = last && last->kind == S_RETURN;
    fe_block init = {b->stmts, returns ? b->n - 1 : b->n, b->open};
    fe_build_block(lw, &init);
    if (!returns) {
        int misplaced = 0; /* a return elsewhere was reported already */
        for (uint32_t i = 0; i < b->n; i++)
            misplaced |= b->stmts[i]->kind == S_RETURN;
        if (fn->ret && !misplaced)
            return fe_err(lw, fn->loc, "fn '%s' must end with a return statement", fn->name);
        return misplaced ? fe_error_val() : (fe_val){.kind = V_VOID};
    }
    lw->loc = last->loc;
    return conform_result(lw, fn, fe_build_expr(lw, last->value), last->loc);
}

/* An fn whose body reported errors is not inlined again: its parameters
 * are typed, so every later copy would say the same, once a call (helpers
 * calling helpers three times over repeat an error 3^depth times). */
static int failed_before(const fe_builder *lw, const fe_fn *fn)
{
    for (uint32_t i = 0; i < lw->nfailed; i++)
        if (lw->failed[i] == fn)
            return 1;
    return 0;
}

static void mark_failed(fe_builder *lw, const fe_fn *fn)
{
    const fe_fn **grown = tj_grow(lw->c, lw->failed, &lw->failed_cap, lw->nfailed + 1, sizeof *lw->failed);
    if (grown) {
        lw->failed = grown;
        lw->failed[lw->nfailed++] = fn;
    }
}

fe_val fe_inline_fn(fe_builder *lw, const fe_fn *fn, const fe_expr *call, fe_val *args, uint32_t nargs)
{
    if (nargs != fn->nparams)
        return fe_err(lw, call->loc, "%s() takes %u argument%s, got %u", fn->name, fn->nparams,
                      fn->nparams == 1 ? "" : "s", nargs);
    if (failed_before(lw, fn) || !enter_fn(lw, fn, call))
        return fe_error_val();
    for (uint32_t i = 0; i < nargs; i++) {
        char what[160];
        snprintf(what, sizeof what, "argument '%s' of '%s'", fn->params[i].name, fn->name);
        args[i] = conform(lw, args[i], fn->params[i].type, i < call->nitems ? call->items[i]->loc : call->loc, what);
    }
    uint32_t errors = tj_error_count(lw->c), scope = lw->scope_base, frame = fe_push_frame(lw);
    lw->scope_base = lw->nvars;
    for (uint32_t i = 0; i < nargs; i++)
        fe_bind(lw, fn->params[i].name, args[i]);
    fe_val result = run_body(lw, fn);
    fe_pop_frame(lw, frame);
    lw->scope_base = scope;
    lw->ninlining--;
    lw->loc = call->loc;
    if (tj_error_count(lw->c) > errors)
        mark_failed(lw, fn);
    return result;
}

/* ---- scan ------------------------------------------------------------------------ */

/* The operands: tiles broadcast to one shape (each keeps its dtype). */
static int scan_operands(fe_builder *lw, const fe_expr *call, fe_val *xs)
{
    int rank = 0;
    int32_t shape[TJ_MAX_RANK] = {0};
    for (uint32_t i = 0; i < call->nitems; i++) {
        xs[i] = fe_tile_arg(lw, call, i);
        if (xs[i].kind != V_VALUE)
            return 0;
        const tj_type_info *in = fe_info(lw, xs[i].type);
        if (!fe_broadcast_shapes(rank, shape, in->rank, in->shape, &rank, shape)) {
            fe_err(lw, call->items[i]->loc, "scan: operand %s does not broadcast with %s", fe_type_name(lw, xs[i].type),
                   fe_type_name(lw, xs[0].type));
            return 0;
        }
    }
    if (rank == 0) {
        fe_err(lw, call->loc, "scan needs tiles, not scalars");
        return 0;
    }
    for (uint32_t i = 0; i < call->nitems; i++)
        if ((xs[i] = fe_broadcast_to(lw, xs[i], rank, shape, call->loc)).kind != V_VALUE)
            return 0;
    return 1;
}

static const fe_fn *combine_fn(fe_builder *lw, const fe_expr *call)
{
    const fe_expr *e = fe_call_kw(call, "combine");
    const fe_fn *fn = e && e->kind == E_NAME ? fe_find_fn(lw->prog, e->name) : NULL;
    uint32_t n = call->nitems;
    if (!fn)
        fe_err(lw, e ? e->loc : call->loc, "scan: combine = FN must name a fn helper taking %u scalars and returning %u", 2 * n, n);
    else if (fn->nparams != 2 * n)
        fe_err(lw, e->loc, "scan: combine function '%s' must take %u scalars (the left values, then the right ones), not %u",
               fn->name, 2 * n, fn->nparams);
    return fn && fn->nparams == 2 * n ? fn : NULL;
}

/* Yields the combine function's n results as scalars of the operands' dtypes. */
static void yield_combined(fe_builder *lw, const fe_expr *call, const fe_fn *fn, fe_val r, const tj_type *types, uint32_t n)
{
    tj_ref *refs = tj_alloc(lw->c, sizeof *refs * n);
    fe_val single = r;
    if (n == 1 && r.kind != V_TUPLE && r.kind != V_ERROR)
        r = (fe_val){.kind = V_TUPLE, .n = 1, .elems = &single};
    if (r.kind != V_ERROR && (r.kind != V_TUPLE || r.n != n))
        fe_err(lw, call->loc, "scan: '%s' must return %u scalars, got %s", fn->name, n, fe_val_desc(lw, r));
    for (uint32_t i = 0; i < n; i++) {
        fe_val v = r.kind == V_TUPLE && r.n == n ? r.elems[i] : fe_error_val();
        if (fe_is_literal(v))
            v = fe_cast(lw, v, fe_info(lw, types[i])->dtype, 0, call->loc);
        if ((v.kind == V_VALUE && v.type != types[i]) || (v.kind != V_VALUE && v.kind != V_ERROR))
            v = fe_err(lw, call->loc, "scan: result %u of '%s' is %s, expected %s", i, fn->name,
                       fe_val_desc(lw, v), fe_type_name(lw, types[i]));
        refs[i] = v.kind == V_VALUE ? v.ref : fe_const_int(lw, fe_info(lw, types[i])->dtype, 0);
    }
    fe_emit(lw, TJ_OP_YIELD, TJ_TYPE_NONE, refs, n);
}

static void check_pure_region(fe_builder *lw, tj_block_id blk, const fe_expr *call)
{
    const tj_block *b = tj_block_at(lw->k, blk);
    for (uint32_t i = 0; i < b->ninsts; i++)
        if (tj_op_get(tj_inst_at(lw->k, b->insts[i])->op)->flags & (TJ_OPF_MEM | TJ_OPF_REGION)) {
            fe_err(lw, call->loc, "scan: the combine function may only compute on scalars (no memory access or control flow)");
            return;
        }
}

static void build_region(fe_builder *lw, const fe_expr *call, const fe_fn *fn, tj_ref scan, const tj_type *types, uint32_t n)
{
    tj_block_id blk = tj_block_new(lw->k, scan), outer = lw->block;
    lw->k->insts[scan].region[0] = blk;
    lw->block = blk;
    fe_val *args = tj_alloc(lw->c, sizeof *args * 2 * n);
    for (uint32_t i = 0; i < 2 * n; i++) {
        tj_type t = types[i % n];
        args[i] = fe_value(fe_emit_arg(lw, i, t), t);
    }
    fe_val r = fe_inline_fn(lw, fn, call, args, 2 * n);
    lw->block = blk;
    lw->loc = call->loc;
    yield_combined(lw, call, fn, r, types, n);
    check_pure_region(lw, blk, call);
    lw->block = outer;
}

fe_val fe_bi_scan(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    uint32_t n = call->nitems;
    fe_val *xs = tj_alloc(lw->c, sizeof *xs * n);
    const fe_fn *fn = combine_fn(lw, call);
    if (!scan_operands(lw, call, xs) || !fn)
        return fe_error_val();
    int axis = 0;
    const fe_expr *ax = fe_call_kw(call, "axis");
    if (ax && !fe_axis(lw, ax, xs[0].type, "scan", &axis))
        return fe_error_val();
    tj_ref *refs = tj_alloc(lw->c, sizeof *refs * n);
    tj_type *tiles = tj_alloc(lw->c, sizeof *tiles * n), *scalars = tj_alloc(lw->c, sizeof *scalars * n);
    for (uint32_t i = 0; i < n; i++) {
        refs[i] = xs[i].ref;
        tiles[i] = xs[i].type;
        scalars[i] = tj_type_scalar(lw->c, fe_val_dtype(lw, xs[i]));
    }
    lw->loc = call->loc;
    tj_ref r = fe_emit(lw, b->op, tj_type_tuple(lw->c, n, tiles), refs, n);
    lw->k->insts[r].imm = axis;
    build_region(lw, call, fn, r, scalars, n);
    fe_val out = {.kind = V_TUPLE, .n = n, .elems = tj_alloc(lw->c, sizeof *out.elems * n)};
    for (uint32_t i = 0; i < n; i++)
        out.elems[i] = fe_value(fe_emit_proj(lw, r, i, tiles[i]), tiles[i]);
    return n == 1 ? out.elems[0] : out;
}
