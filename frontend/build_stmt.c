/* Statements: assignment and tuple destructuring, call statements, and
 * `for` loops, whose loop-carried values are the names assigned in the
 * body that are bound before the loop (if.c does `if`). */
#include <string.h>

#include "frontend/build.h"

/* Names the outermost inlined call: that is where the user can cut the
 * expansion (helpers calling helpers multiply the work). */
static void report_work_limit(fe_builder *lw, tj_loc loc)
{
    if (!lw->ninlining) {
        fe_err(lw, loc, "kernel '%s' is too large: building it visits more than %d expressions and statements",
               lw->kd->name, FE_MAX_WORK);
        return;
    }
    const fe_fn *inner = lw->inlining[lw->ninlining - 1];
    fe_err(lw, lw->calls[0]->loc,
           "inlining '%s' here visits more than %d expressions and statements (the limit; reached %u calls deep, in '%s'): "
           "fn helpers are inlined at every call, so calls nested in helpers multiply",
           lw->inlining[0]->name, FE_MAX_WORK, lw->ninlining, inner->name);
}

int fe_build_enter(fe_builder *lw, tj_loc loc)
{
    if (lw->too_deep)
        return 0;
    if (++lw->work > FE_MAX_WORK) {
        report_work_limit(lw, loc);
        lw->too_deep = 1;
        return 0;
    }
    if (lw->depth >= FE_MAX_LOWER_DEPTH) {
        fe_err(lw, loc, "the program nests too deeply to compile (fn calls included)");
        lw->too_deep = 1;
        return 0;
    }
    if (lw->k->ninsts > FE_MAX_INSTS) {
        fe_err(lw, loc, "kernel '%s' is too large: more than %d instructions (fn helpers are inlined at every call)",
               lw->kd->name, FE_MAX_INSTS);
        lw->too_deep = 1;
        return 0;
    }
    lw->depth++;
    return 1;
}

void fe_build_leave(fe_builder *lw) { lw->depth--; }

static void assign(fe_builder *lw, const fe_stmt *s, fe_val v)
{
    if (!s->tuple) {
        if (v.kind == V_VOID)
            v = fe_err(lw, s->value->loc, "this call returns no value");
        fe_assign(lw, &s->targets[0], v);
        return;
    }
    if (v.kind != V_ERROR && v.kind != V_TUPLE)
        v = fe_err(lw, s->value->loc, "cannot destructure %s into %u names", fe_val_desc(lw, v), s->ntargets);
    else if (v.kind == V_TUPLE && v.n != s->ntargets)
        v = fe_err(lw, s->loc, "tuple arity mismatch: %u names on the left, but the value has %u elements",
                   s->ntargets, v.n);
    for (uint32_t i = 0; i < s->ntargets; i++)
        fe_assign(lw, &s->targets[i], v.kind == V_TUPLE ? v.elems[i] : fe_error_val());
}

static void build_stmt(fe_builder *lw, const fe_stmt *s)
{
    lw->loc = s->loc;
    switch (s->kind) {
    case S_ASSIGN:
        assign(lw, s, fe_build_expr(lw, s->value));
        break;
    case S_EXPR:
        if (s->value->kind != E_CALL)
            fe_err(lw, fe_expr_start(s->value), "this expression has no effect (only calls can stand alone)");
        else
            (void)fe_build_expr(lw, s->value);
        break;
    case S_FOR:
        fe_build_for(lw, s);
        break;
    case S_WHILE:
        fe_build_while(lw, s);
        break;
    case S_IF:
        fe_build_if(lw, s);
        break;
    case S_RETURN:
        fe_err(lw, s->loc, lw->ninlining ? "return must be the last statement of a fn"
                                         : "return is only allowed at the end of a fn helper");
        break;
    }
}

void fe_build_block(fe_builder *lw, const fe_block *b)
{
    for (uint32_t i = 0; i < b->n; i++) {
        if (!fe_build_enter(lw, b->stmts[i]->loc))
            return;
        build_stmt(lw, b->stmts[i]);
        fe_build_leave(lw);
    }
}

/* ---- values that flow out of a region ------------------------------------------ */

int fe_region_value(fe_builder *lw, const char *name, fe_val *v, tj_loc loc, const char *where)
{
    if (v->kind == V_ERROR)
        return 0;
    if (fe_is_literal(*v))
        *v = fe_to_value(lw, *v, loc);
    if (v->kind == V_VALUE)
        return 1;
    if (v->kind != V_ERROR)
        fe_err(lw, loc, "'%s' holds %s, which cannot change %s", name, fe_val_desc(lw, *v), where);
    return 0;
}

tj_ref fe_yield_value(fe_builder *lw, const char *name, fe_val v, tj_type want, tj_loc loc, const char *where)
{
    if (v.kind == V_ERROR)
        return TJ_NONE;
    if (fe_is_literal(v)) {
        v = fe_convert(lw, v, want, loc);
        return v.kind == V_VALUE ? v.ref : TJ_NONE;
    }
    if (v.kind == V_VALUE && v.type == want)
        return v.ref;
    if (v.kind == V_VALUE)
        fe_err(lw, loc, "'%s' is %s before %s but %s at its end; it must keep its type (convert it explicitly)",
               name, fe_type_name(lw, want), where, fe_type_name(lw, v.type));
    else
        fe_err(lw, loc, "'%s' holds %s, which cannot change %s", name, fe_val_desc(lw, v), where);
    return TJ_NONE;
}

/* ---- for ------------------------------------------------------------------------ */

/* start, stop, step: integer scalars of one type (literals: i32). */
static int range_bounds(fe_builder *lw, const fe_stmt *s, fe_val b[3])
{
    const fe_expr *src[3] = {NULL, s->range[0], NULL};
    for (uint32_t i = 0; s->nrange > 1 && i < s->nrange; i++)
        src[i] = s->range[i];
    for (int i = 0; i < 3; i++)
        b[i] = src[i] ? fe_build_expr(lw, src[i]) : (fe_val){.kind = V_INT, .i = i == 2};
    lw->loc = s->loc;
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == V_ERROR)
            return 0;
        if (b[i].kind == V_INT || (b[i].kind == V_VALUE && tj_type_is_scalar(lw->c, b[i].type) &&
                                   tj_dtype_is_int(fe_val_dtype(lw, b[i]))))
            continue;
        fe_err(lw, src[i] ? src[i]->loc : s->loc, "range bounds must be integer scalars, got %s", fe_val_desc(lw, b[i]));
        return 0;
    }
    return fe_unify(lw, b, 3, 0, s->loc);
}

typedef struct carried {
    uint32_t slot; /* in lw->vars */
    const char *name;
    tj_type type;
    tj_ref init;
} carried;

/* Names assigned in the body and bound before the loop. */
static uint32_t find_carried(fe_builder *lw, const fe_stmt *s, carried **out)
{
    fe_names assigned;
    fe_assigned_names(lw->c, &s->body, &assigned);
    const char **names = assigned.list;
    carried *cs = tj_alloc(lw->c, sizeof *cs * (assigned.n ? assigned.n : 1));
    uint32_t n = 0;
    for (uint32_t i = 0; i < assigned.n; i++) {
        int slot = fe_find_local(lw, names[i]);
        if (slot < 0 || (s->var.name && !strcmp(s->var.name, names[i])))
            continue;
        fe_val *v = &lw->vars[slot].val;
        if (!fe_region_value(lw, names[i], v, s->loc, "inside a loop"))
            continue;
        cs[n++] = (carried){(uint32_t)slot, names[i], v->type, v->ref};
    }
    *out = cs;
    return n;
}

tj_ref fe_emit_arg(fe_builder *lw, uint32_t index, tj_type t)
{
    tj_ref r = fe_emit(lw, TJ_OP_ARG, t, NULL, 0);
    lw->k->insts[r].imm = index;
    return r;
}

tj_ref fe_emit_proj(fe_builder *lw, tj_ref tuple, uint32_t index, tj_type t)
{
    tj_ref r = fe_emit(lw, TJ_OP_PROJ, t, &tuple, 1);
    lw->k->insts[r].imm = index;
    return r;
}

static void build_loop_body(fe_builder *lw, const fe_stmt *s, tj_ref loop, tj_type iv_type, carried *cs, uint32_t n)
{
    tj_block_id body = tj_block_new(lw->k, loop);
    lw->k->insts[loop].region[0] = body;
    tj_block_id outer = lw->block;
    lw->block = body;
    tj_ref iv = fe_emit_arg(lw, 0, iv_type);
    tj_ref *args = tj_alloc(lw->c, sizeof *args * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++) {
        args[i] = fe_emit_arg(lw, i + 1, cs[i].type);
        lw->vars[cs[i].slot].val = fe_value(args[i], cs[i].type);
    }
    uint32_t frame = fe_push_frame(lw);
    if (s->var.name)
        fe_bind(lw, s->var.name, fe_value(iv, iv_type));
    fe_build_block(lw, &s->body);
    lw->block = body;
    lw->loc = s->loc;
    tj_ref *yields = tj_alloc(lw->c, sizeof *yields * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++) {
        yields[i] = fe_yield_value(lw, cs[i].name, lw->vars[cs[i].slot].val, cs[i].type, s->loc, "the loop");
        if (!yields[i])
            yields[i] = args[i]; /* an error was reported; keep the IR well formed */
    }
    fe_emit(lw, TJ_OP_YIELD, TJ_TYPE_NONE, yields, n);
    fe_pop_frame(lw, frame);
    lw->block = outer;
}

void fe_build_for(fe_builder *lw, const fe_stmt *s)
{
    fe_val b[3];
    int ok = range_bounds(lw, s, b);
    carried *cs;
    uint32_t n = find_carried(lw, s, &cs);
    if (!ok) {
        /* still build the body, for its own errors; nothing flows out */
        uint32_t frame = fe_push_frame(lw);
        if (s->var.name)
            fe_bind(lw, s->var.name, fe_error_val());
        fe_build_block(lw, &s->body);
        fe_pop_frame(lw, frame);
        for (uint32_t i = 0; i < n; i++)
            lw->vars[cs[i].slot].val = fe_error_val();
        return;
    }
    tj_ref *args = tj_alloc(lw->c, sizeof *args * (n + 3));
    tj_type *types = tj_alloc(lw->c, sizeof *types * (n ? n : 1));
    for (int i = 0; i < 3; i++)
        args[i] = b[i].ref;
    for (uint32_t i = 0; i < n; i++) {
        args[i + 3] = cs[i].init;
        types[i] = cs[i].type;
    }
    lw->loc = s->loc;
    tj_ref loop = fe_emit(lw, TJ_OP_FOR, tj_type_tuple(lw->c, n, types), args, n + 3);
    build_loop_body(lw, s, loop, b[0].type, cs, n);
    lw->loc = s->loc;
    for (uint32_t i = 0; i < n; i++)
        lw->vars[cs[i].slot].val = fe_value(fe_emit_proj(lw, loop, i, cs[i].type), cs[i].type);
}

/* ---- while ------------------------------------------------------------------------ */

/* The loop's condition as a bool scalar (a literal becomes a constant);
 * TJ_NONE after reporting. */
static tj_ref while_condition(fe_builder *lw, const fe_stmt *s)
{
    fe_val c = fe_build_expr(lw, s->value);
    tj_type want = tj_type_scalar(lw->c, TJ_DT_BOOL);
    lw->loc = s->loc;
    if (c.kind == V_ERROR)
        return TJ_NONE;
    if (fe_is_literal(c))
        c = fe_convert(lw, c, want, s->value->loc);
    if (c.kind == V_VALUE && c.type == want)
        return c.ref;
    if (c.kind != V_ERROR)
        fe_err(lw, s->value->loc, "a while condition must be a bool scalar, got %s", fe_val_desc(lw, c));
    return TJ_NONE;
}

/* The body, then the condition on the values it leaves, yielded with them. */
static void build_while_body(fe_builder *lw, const fe_stmt *s, tj_ref loop, carried *cs, uint32_t n, int cond_ok)
{
    tj_block_id body = tj_block_new(lw->k, loop);
    lw->k->insts[loop].region[0] = body;
    tj_block_id outer = lw->block;
    lw->block = body;
    tj_ref *args = tj_alloc(lw->c, sizeof *args * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++) {
        args[i] = fe_emit_arg(lw, i, cs[i].type);
        lw->vars[cs[i].slot].val = fe_value(args[i], cs[i].type);
    }
    uint32_t frame = fe_push_frame(lw);
    fe_build_block(lw, &s->body);
    lw->block = body;
    tj_ref *yields = tj_alloc(lw->c, sizeof *yields * (n + 1));
    yields[0] = cond_ok ? while_condition(lw, s) : TJ_NONE; /* a bad one is reported once */
    if (!yields[0])
        yields[0] = fe_const_int(lw, TJ_DT_BOOL, 0); /* reported; keep the IR well formed */
    for (uint32_t i = 0; i < n; i++) {
        yields[i + 1] = fe_yield_value(lw, cs[i].name, lw->vars[cs[i].slot].val, cs[i].type, s->loc, "the loop");
        if (!yields[i + 1])
            yields[i + 1] = args[i];
    }
    fe_emit(lw, TJ_OP_YIELD, TJ_TYPE_NONE, yields, n + 1);
    fe_pop_frame(lw, frame);
    lw->block = outer;
}

void fe_build_while(fe_builder *lw, const fe_stmt *s)
{
    tj_ref cond = while_condition(lw, s);
    int cond_ok = cond != TJ_NONE;
    carried *cs;
    uint32_t n = find_carried(lw, s, &cs);
    if (!cond_ok)
        cond = fe_const_int(lw, TJ_DT_BOOL, 0); /* reported; the body still builds for its own errors */
    tj_ref *args = tj_alloc(lw->c, sizeof *args * (n + 1));
    tj_type *types = tj_alloc(lw->c, sizeof *types * (n ? n : 1));
    args[0] = cond;
    for (uint32_t i = 0; i < n; i++) {
        args[i + 1] = cs[i].init;
        types[i] = cs[i].type;
    }
    lw->loc = s->loc;
    tj_ref loop = fe_emit(lw, TJ_OP_WHILE, tj_type_tuple(lw->c, n, types), args, n + 1);
    build_while_body(lw, s, loop, cs, n, cond_ok);
    lw->loc = s->loc;
    for (uint32_t i = 0; i < n; i++)
        lw->vars[cs[i].slot].val = fe_value(fe_emit_proj(lw, loop, i, cs[i].type), cs[i].type);
}
