/* `if` statements. A condition known at compile time (tile parameters,
 * literals) builds only the branch it takes; otherwise an IF op whose
 * results are the merged names: those bound before the if and assigned in
 * a branch, and those bound at the end of both branches. */
#include <string.h>

#include "frontend/build.h"

typedef struct merge {
    const char *name;
    int slot;      /* in lw->vars; -1: a name new in both branches */
    fe_val before; /* the value before the if (slot >= 0) */
    fe_val v[2];   /* at the end of the then and else branches */
    tj_type type;  /* the merged type; TJ_TYPE_NONE: not an IF result */
    fe_val result; /* when not an IF result */
} merge;

/* The names a branch binds for the first time (its frame). */
typedef struct fresh {
    fe_binding *b;
    uint32_t n;
    fe_strmap index; /* name -> position in b */
} fresh;

static fresh take_frame(fe_builder *lw)
{
    fresh f = {NULL, lw->nvars - lw->frame_base, {0}};
    if (f.n) {
        f.b = tj_alloc(lw->c, sizeof *f.b * f.n);
        memcpy(f.b, lw->vars + lw->frame_base, sizeof *f.b * f.n);
    }
    for (uint32_t i = 0; i < f.n; i++)
        *fe_strmap_put(lw->c, &f.index, f.b[i].name) = (int32_t)i;
    return f;
}

static const fe_val *fresh_find(const fresh *f, const char *name)
{
    const int32_t *i = fe_strmap_find(&f->index, name);
    return i ? &f->b[*i].val : NULL;
}

/* Lowers one branch into block blk, recording the merged names' values
 * and restoring the values they had before the if. */
static fresh run_branch(fe_builder *lw, tj_block_id blk, const fe_block *body, merge *ms, uint32_t nm, int which)
{
    lw->block = blk;
    uint32_t frame = fe_push_frame(lw);
    if (body)
        fe_build_block(lw, body);
    for (uint32_t i = 0; i < nm; i++) {
        ms[i].v[which] = lw->vars[ms[i].slot].val;
        lw->vars[ms[i].slot].val = ms[i].before;
    }
    fresh f = take_frame(lw);
    fe_pop_frame(lw, frame);
    return f;
}

static int same_val(fe_val a, fe_val b)
{
    if (a.kind != b.kind)
        return 0;
    switch (a.kind) {
    case V_VALUE: case V_VIEW: return a.ref == b.ref;
    case V_INT: return a.i == b.i;
    case V_FLOAT: return !memcmp(&a.f, &b.f, sizeof a.f);
    case V_TENSOR: return a.param == b.param;
    case V_TUPLE: return a.elems == b.elems;
    default: return 1;
    }
}

/* Decides whether m becomes an IF result, and of which type. */
static void decide(fe_builder *lw, merge *m, tj_loc loc)
{
    fe_val a = m->v[0], b = m->v[1];
    m->type = TJ_TYPE_NONE;
    if (a.kind == V_ERROR || b.kind == V_ERROR) {
        m->result = fe_error_val();
        return;
    }
    if (same_val(a, b)) {
        m->result = a;
        return;
    }
    if (fe_is_literal(a) && fe_is_literal(b))
        m->type = tj_type_scalar(lw->c, a.kind == V_FLOAT || b.kind == V_FLOAT ? TJ_DT_F32 : TJ_DT_I32);
    else if (a.kind == V_VALUE && (fe_is_literal(b) || b.type == a.type))
        m->type = a.type;
    else if (b.kind == V_VALUE && fe_is_literal(a))
        m->type = b.type;
    else if (a.kind == V_VALUE && b.kind == V_VALUE)
        fe_err(lw, loc, "'%s' is %s in the then branch but %s in the else branch; it must have one type",
               m->name, fe_type_name(lw, a.type), fe_type_name(lw, b.type));
    else
        fe_err(lw, loc, "'%s' holds %s, which cannot differ between the branches of an if", m->name,
               fe_val_desc(lw, a.kind == V_VALUE || fe_is_literal(a) ? b : a));
    if (!m->type)
        m->result = fe_error_val();
}

static void emit_yields(fe_builder *lw, tj_block_id blk, merge *ms, uint32_t nm, int which, tj_loc loc)
{
    lw->block = blk;
    lw->loc = loc;
    tj_ref *refs = tj_alloc(lw->c, sizeof *refs * (nm ? nm : 1));
    uint32_t n = 0;
    for (uint32_t i = 0; i < nm; i++) {
        if (!ms[i].type)
            continue;
        refs[n] = fe_yield_value(lw, ms[i].name, ms[i].v[which], ms[i].type, loc, "the if");
        if (!refs[n]) /* reported; keep the IR well formed */
            refs[n] = fe_const_int(lw, TJ_DT_I32, 0);
        n++;
    }
    fe_emit(lw, TJ_OP_YIELD, TJ_TYPE_NONE, refs, n);
}

/* Names assigned in either branch that are bound before the if. */
static uint32_t outer_merges(fe_builder *lw, const fe_stmt *s, merge **out, uint32_t *cap)
{
    uint32_t n = 0;
    fe_names a, b;
    fe_assigned_names(lw->c, &s->body, &a);
    fe_assigned_names(lw->c, &s->orelse, &b);
    *cap = a.n + b.n + 1;
    merge *ms = tj_alloc(lw->c, sizeof *ms * *cap);
    for (uint32_t i = 0; i < a.n + b.n; i++) {
        const char *name = i < a.n ? a.list[i] : b.list[i - a.n];
        int slot = fe_find_local(lw, name);
        if (slot < 0 || (i >= a.n && fe_names_has(&a, name)))
            continue;
        ms[n++] = (merge){.name = name, .slot = slot, .before = lw->vars[slot].val};
    }
    *out = ms;
    return n;
}

static void bind_results(fe_builder *lw, tj_ref inst, merge *ms, uint32_t nm)
{
    uint32_t index = 0;
    for (uint32_t i = 0; i < nm; i++) {
        fe_val v = ms[i].result;
        if (ms[i].type)
            v = fe_value(fe_emit_proj(lw, inst, index++, ms[i].type), ms[i].type);
        if (ms[i].slot >= 0)
            lw->vars[ms[i].slot].val = v;
        else
            fe_bind(lw, ms[i].name, v);
    }
}

static void dynamic_if(fe_builder *lw, const fe_stmt *s, fe_val cond)
{
    merge *ms;
    uint32_t cap, nouter = outer_merges(lw, s, &ms, &cap), nm = nouter;
    tj_block_id outer = lw->block;
    lw->loc = s->loc;
    tj_ref inst = fe_emit(lw, TJ_OP_IF, TJ_TYPE_NONE, &cond.ref, 1);
    tj_block_id blk[2] = {tj_block_new(lw->k, inst), tj_block_new(lw->k, inst)};
    lw->k->insts[inst].region[0] = blk[0];
    lw->k->insts[inst].region[1] = blk[1];
    fresh f0 = run_branch(lw, blk[0], &s->body, ms, nouter, 0);
    fresh f1 = run_branch(lw, blk[1], s->has_else ? &s->orelse : NULL, ms, nouter, 1);
    for (uint32_t i = 0; i < f0.n && nm < cap; i++) {
        const fe_val *other = fresh_find(&f1, f0.b[i].name);
        if (other)
            ms[nm++] = (merge){.name = f0.b[i].name, .slot = -1, .v = {f0.b[i].val, *other}};
    }
    tj_type *types = tj_alloc(lw->c, sizeof *types * (nm ? nm : 1));
    uint32_t nt = 0;
    for (uint32_t i = 0; i < nm; i++) {
        decide(lw, &ms[i], s->loc);
        if (ms[i].type)
            types[nt++] = ms[i].type;
    }
    emit_yields(lw, blk[0], ms, nm, 0, s->loc);
    emit_yields(lw, blk[1], ms, nm, 1, s->loc);
    lw->k->insts[inst].type = tj_type_tuple(lw->c, nt, types);
    lw->block = outer;
    lw->loc = s->loc;
    bind_results(lw, inst, ms, nm);
}

/* Only the branch taken; the names it binds that both branches assign
 * stay visible after the if, as they would in a dynamic if. */
static void static_if(fe_builder *lw, const fe_stmt *s, int taken)
{
    const fe_block *b = taken ? &s->body : s->has_else ? &s->orelse : NULL;
    if (!b)
        return;
    fe_names a, e;
    fe_assigned_names(lw->c, &s->body, &a);
    fe_assigned_names(lw->c, &s->orelse, &e);
    uint32_t frame = fe_push_frame(lw);
    fe_build_block(lw, b);
    fresh f = take_frame(lw);
    fe_pop_frame(lw, frame);
    for (uint32_t i = 0; i < f.n; i++)
        if (fe_names_has(&a, f.b[i].name) && fe_names_has(&e, f.b[i].name))
            fe_bind(lw, f.b[i].name, f.b[i].val);
}

void fe_build_if(fe_builder *lw, const fe_stmt *s)
{
    int64_t c;
    if (fe_expr_is_condition(s->value) && fe_build_const(lw, s->value, 0, &c) == FE_CONST_OK) {
        static_if(lw, s, c != 0);
        return;
    }
    fe_val cond = fe_build_expr(lw, s->value);
    if (cond.kind != V_ERROR && (cond.kind != V_VALUE || !tj_type_is_scalar(lw->c, cond.type) ||
                                 fe_val_dtype(lw, cond) != TJ_DT_BOOL))
        cond = fe_err(lw, s->value->loc, "an if condition must be a bool scalar, got %s", fe_val_desc(lw, cond));
    if (cond.kind == V_ERROR) /* build the branches for their own errors */
        cond = fe_value(fe_const_int(lw, TJ_DT_BOOL, 0), tj_type_scalar(lw->c, TJ_DT_BOOL));
    dynamic_if(lw, s, cond);
}
