/* Storage planning for a run and the values that never change during it.
 *
 * The blocks are walked twice with the same code: once to add up the bytes
 * every instruction needs (result, tuple elements, work space), once to
 * hand out pointers into a single allocation. The run's buffers are taken
 * from the heap, not the context arena, because the arena would keep every
 * run's buffers until the context dies (a timing loop runs a kernel many
 * times in one context). */
#include <stdlib.h>

#include "interp/interp.h"

void *tj_plan_take(tj_plan *p, size_t bytes)
{
    void *q = p->base ? p->base + p->used : NULL;
    p->used += (bytes + 15) & ~(size_t)15;
    return q;
}

int tj_interp_bad_ir(const tj_interp *st, tj_ref r, const char *what)
{
    const tj_inst *in = tj_in(st, r);
    tj_error_at(st->ctx, in->loc, "internal error: interpreter: '%s' (instruction %u): %s",
                tj_op_get(in->op)->name, r, what);
    return -1;
}

/* Sets rv's type fields for type t. */
static const tj_type_info *describe(const tj_ctx *c, tj_rval *rv, tj_type t)
{
    const tj_type_info *ti = tj_type_get(c, t);
    rv->ti = ti;
    rv->dt = ti->dtype;
    rv->n = ti->kind == TJ_TK_TILE || ti->kind == TJ_TK_VIEW ? (uint32_t)tj_type_numel(c, t) : 0;
    return ti;
}

/* Sets up rv for type t with storage of its own. */
static void take_value(tj_plan *p, const tj_ctx *c, tj_rval *rv, tj_type t)
{
    const tj_type_info *ti = describe(c, rv, t);
    if (ti->kind == TJ_TK_TILE)
        rv->data = tj_plan_take(p, sizeof(tj_slot) * rv->n);
    else if (ti->kind == TJ_TK_VIEW)
        rv->off = tj_plan_take(p, sizeof(int64_t) * rv->n);
    else if (ti->kind == TJ_TK_TUPLE) {
        rv->elems = tj_plan_take(p, sizeof(tj_rval) * ti->nelems);
        tj_rval dummy;
        for (uint32_t e = 0; e < ti->nelems; e++)
            take_value(p, c, p->base ? &rv->elems[e] : &dummy, ti->elems[e]);
    }
}

/* Loop-carried scratch values: the body's yields are copied here, then
 * swapped with the block arguments (see exec.c). */
static void take_for_work(tj_plan *p, tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    uint32_t nc = in->nargs - (in->op == TJ_OP_WHILE ? 1 : 3);
    tj_rval *scratch = tj_plan_take(p, sizeof(tj_rval) * nc), dummy;
    for (uint32_t i = 0; i < nc; i++)
        take_value(p, st->k->ctx, p->base ? &scratch[i] : &dummy, tj_in(st, in->args[in->nargs - nc + i])->type);
    st->vals[r].work = scratch;
}

static void take_inst(tj_plan *p, tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = &st->vals[r];
    const tj_ctx *c = st->k->ctx;
    int aliases = in->op == TJ_OP_PROJ || in->op == TJ_OP_RESHAPE || in->op == TJ_OP_FOR || in->op == TJ_OP_WHILE ||
                  in->op == TJ_OP_IF; /* results point at other values' storage (exec.c) */
    if (!aliases)
        take_value(p, c, rv, in->type);
    else if (describe(c, rv, in->type)->kind == TJ_TK_TUPLE) {
        rv->elems = tj_plan_take(p, sizeof(tj_rval) * rv->ti->nelems);
        for (uint32_t e = 0; p->base && e < rv->ti->nelems; e++)
            describe(c, &rv->elems[e], rv->ti->elems[e]);
    }
    size_t work = 0;
    switch (in->op) {
    case TJ_OP_FOR:
    case TJ_OP_WHILE: take_for_work(p, st, r); return;
    case TJ_OP_SORT: work = tj_sort_work_size(st, r); break;
    case TJ_OP_DOT: work = tj_dot_work_size(st, r); break;
    case TJ_OP_VIEW: work = tj_view_work_size(st, r); break;
    default: return;
    }
    rv->work = tj_plan_take(p, work);
}

/* Values fixed for the whole run: computed once, never written again. */
static int set_constant(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = &st->vals[r];
    switch (in->op) {
    case TJ_OP_CONST:
        rv->data[0] = tj_dtype_is_float(rv->dt) ? tj_slot_from_double(rv->dt, in->fimm)
                                                : tj_slot_from_int(rv->dt, in->imm);
        break;
    case TJ_OP_ARANGE:
        for (uint32_t i = 0; i < rv->n; i++)
            rv->data[i].i = i;
        break;
    case TJ_OP_PARAM: {
        const tj_arg *a = &st->args[in->imm];
        if (rv->ti->kind == TJ_TK_TENSOR)
            rv->tensor = &a->tensor;
        else
            rv->data[0] = tj_dtype_is_float(rv->dt) ? tj_slot_from_double(rv->dt, a->scalar.f)
                                                    : tj_slot_from_int(rv->dt, a->scalar.i);
        break;
    }
    case TJ_OP_DIM: {
        const tj_tensor *t = tj_opnd(st, r, 0)->tensor;
        if (!t || in->imm < 0 || in->imm >= t->rank)
            return tj_interp_bad_ir(st, r, "not an axis of a tensor parameter");
        rv->data[0].i = t->shape[in->imm];
        break;
    }
    default: break;
    }
    return 0;
}

static int check_param(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    const tj_type_info *ti = tj_type_get(st->k->ctx, in->type);
    if (in->imm < 0 || in->imm >= st->k->nparams)
        return tj_interp_bad_ir(st, r, "no such parameter");
    const tj_arg *a = &st->args[in->imm];
    int tensor = ti->kind == TJ_TK_TENSOR;
    if (tensor != !!a->is_tensor || ti->dtype != (tensor ? a->tensor.dtype : st->k->params[in->imm].dtype) ||
        (tensor && ti->rank != a->tensor.rank))
        return tj_interp_bad_ir(st, r, "type differs from the kernel's parameter");
    return 0;
}

/* What each operand must be. The verifier checks types in full; this
 * much, checked once per run, keeps every op handler memory-safe on its
 * own (a handler then only compares element counts). */
static tj_type_kind operand_kind(tj_op op, uint32_t a)
{
    switch (op) {
    case TJ_OP_DIM: return TJ_TK_TENSOR;
    case TJ_OP_VIEW: return a ? TJ_TK_TILE : TJ_TK_TENSOR;
    case TJ_OP_LOAD:
    case TJ_OP_STORE:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_LOAD_RELAXED:
    case TJ_OP_STORE_RELAXED:
    case TJ_OP_ATOMIC_ADD:
    case TJ_OP_ATOMIC_MAX:
    case TJ_OP_ATOMIC_MIN: return a ? TJ_TK_TILE : TJ_TK_VIEW;
    case TJ_OP_PROJ: return TJ_TK_TUPLE;
    default: return TJ_TK_TILE; /* yields too: grid sizes and region results */
    }
}

static int operand_optional(tj_op op, uint32_t a)
{
    switch (op) {
    case TJ_OP_LOAD:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_LOAD_RELAXED: return a >= 1; /* mask, other */
    case TJ_OP_STORE:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_STORE_RELAXED:
    case TJ_OP_ATOMIC_ADD:
    case TJ_OP_ATOMIC_MAX:
    case TJ_OP_ATOMIC_MIN:
    case TJ_OP_DOT: return a == 2; /* mask; accumulator */
    default: return 0;
    }
}

/* A region that starts with n block arguments. */
static int has_args(const tj_kernel *k, tj_block_id b, uint32_t n)
{
    if (!b || b >= k->nblocks || k->blocks[b].ninsts <= n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (k->insts[k->blocks[b].insts[i]].op != TJ_OP_ARG)
            return 0;
    return 1;
}

static int check_structure(tj_interp *st, tj_ref r)
{
    const tj_kernel *k = st->k;
    const tj_inst *in = tj_in(st, r);
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_ref x = in->args[a];
        tj_type_kind want = operand_kind(in->op, a);
        if (!x && operand_optional(in->op, a))
            continue;
        if (!x || x >= k->ninsts || x == r)
            return tj_interp_bad_ir(st, r, "an operand is missing or does not exist");
        if (tj_type_get(k->ctx, k->insts[x].type)->kind != want)
            return tj_interp_bad_ir(st, r, "an operand is of the wrong kind");
    }
    for (int i = 0; i < 2; i++)
        if (in->region[i] >= k->nblocks)
            return tj_interp_bad_ir(st, r, "region does not exist");
    if (in->op == TJ_OP_FOR && (in->nargs < 3 || !has_args(k, in->region[0], in->nargs - 2)))
        return tj_interp_bad_ir(st, r, "body must start with the induction variable and carried values");
    if (in->op == TJ_OP_WHILE && (in->nargs < 1 || !has_args(k, in->region[0], in->nargs - 1)))
        return tj_interp_bad_ir(st, r, "body must start with the carried values");
    if (in->op == TJ_OP_SCAN && !has_args(k, in->region[0], 2 * in->nargs))
        return tj_interp_bad_ir(st, r, "combine region must start with 2n arguments");
    return 0;
}

static int walk_block(tj_plan *p, tj_interp *st, tj_block_id b, int depth);

static int walk_inst(tj_plan *p, tj_interp *st, tj_ref r, int depth)
{
    const tj_inst *in = tj_in(st, r);
    if (!p->base && (check_structure(st, r) || (in->op == TJ_OP_PARAM && check_param(st, r))))
        return -1;
    take_inst(p, st, r);
    if (p->base && set_constant(st, r))
        return -1;
    int nregions = in->op == TJ_OP_IF ? 2 : in->op == TJ_OP_FOR || in->op == TJ_OP_WHILE ||
                   in->op == TJ_OP_SCAN;
    for (int i = 0; i < nregions; i++)
        if (in->region[i] && walk_block(p, st, in->region[i], depth + 1))
            return -1;
    return 0;
}

static int walk_block(tj_plan *p, tj_interp *st, tj_block_id b, int depth)
{
    if (depth > TJ_INTERP_MAX_DEPTH) {
        tj_error(st->ctx, "kernel '%s': regions nested more than %d deep", st->k->name,
                 TJ_INTERP_MAX_DEPTH);
        return -1;
    }
    const tj_block *blk = tj_block_at(st->k, b);
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        if (!blk->insts[i] || blk->insts[i] >= st->k->ninsts) {
            tj_error(st->ctx, "internal error: interpreter: kernel '%s': block %u lists no instruction",
                     st->k->name, b);
            return -1;
        }
        if (walk_inst(p, st, blk->insts[i], depth))
            return -1;
    }
    return 0;
}

static int walk_all(tj_plan *p, tj_interp *st, const tj_block_id *roots, int nroots)
{
    for (int i = 0; i < nroots; i++) {
        if (roots[i] >= st->k->nblocks) {
            tj_error(st->ctx, "internal error: interpreter: kernel '%s' has no block %u", st->k->name, roots[i]);
            return -1;
        }
        if (walk_block(p, st, roots[i], 0))
            return -1;
    }
    return 0;
}

int tj_interp_prepare(tj_interp *st, const tj_kernel *k, const tj_arg *args,
                      const tj_block_id *roots, int nroots)
{
    *st = (tj_interp){.k = k, .ctx = k->ctx, .args = args, .nprog = {1, 1, 1}};
    st->vals = calloc(k->ninsts, sizeof *st->vals);
    tj_plan p = {0};
    if (!st->vals || walk_all(&p, st, roots, nroots))
        goto fail;
    p.base = st->storage = calloc(1, p.used ? p.used : 1);
    if (!st->storage) {
        tj_error(st->ctx, "kernel '%s': out of memory: the interpreter needs %zu bytes for its tiles",
                 k->name, p.used);
        goto fail;
    }
    p.used = 0;
    if (walk_all(&p, st, roots, nroots))
        goto fail;
    return 0;
fail:
    if (!st->vals)
        tj_error(st->ctx, "kernel '%s': out of memory", k->name);
    tj_interp_release(st);
    return -1;
}

void tj_interp_release(tj_interp *st)
{
    free(st->vals);
    free(st->storage);
    st->vals = NULL;
    st->storage = NULL;
}
