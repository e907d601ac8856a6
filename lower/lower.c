/* The lowering Tile IR -> SIMT IR (docs/simt.md): the driver. It copies the
 * grid block, assigns layouts, then walks the body, keeping for every tile
 * value the array of per-thread SIMT registers; for, if and proj carry
 * every register of every carried tile. The op families live in
 * lower/elementwise.c, lower/shape.c, lower/memory.c, lower/reduce.c,
 * lower/scan.c, lower/sort.c and lower/dot.c. */
#include <string.h>

#include "passes/facts.h"
#include "lower/lower.h"
#include "tilejit/passes.h"

enum { MAX_NESTING = 200 };

lw_val *lw_val_of(lw *w, tj_ref r) { return &w->vals[r]; }

const tj_type_info *lw_src_type(const lw *w, tj_ref r) { return tj_type_get(w->c, w->src->insts[r].type); }

const tj_layout *lw_layout_of(lw *w, tj_ref r) { return w->lay[r].one; }

tj_ref *lw_new_regs(lw *w, uint32_t n) { return tj_alloc(w->c, sizeof(tj_ref) * (n ? n : 1)); }

void lw_set_regs(lw *w, tj_ref r, const tj_layout *l, tj_ref *regs)
{
    w->vals[r].lay = l;
    w->vals[r].regs = regs;
}

static void set_scalar(lw *w, tj_ref r, tj_ref v)
{
    tj_ref *regs = lw_new_regs(w, 1);
    regs[0] = v;
    lw_set_regs(w, r, lw_scalar_layout(w), regs);
}

/* A value that depends on nothing but the launch, emitted once. */
static tj_ref hoisted_leaf(lw *w, int kind, int64_t a, int64_t b, tj_op op, tj_type t, tj_ref arg)
{
    tj_ref v = lw_memo_get(w, kind, NULL, a, b);
    if (!v) {
        int was = w->hoisting;
        w->hoisting = 1;
        v = lw_emit(w, op, t, arg ? &arg : NULL, arg ? 1 : 0);
        w->dst->insts[v].imm = op == TJ_OP_PARAM ? a : b;
        w->hoisting = was;
        lw_memo_put(w, kind, NULL, a, b, v);
    }
    return v;
}

static tj_ref tensor_param(lw *w, uint32_t p)
{
    const tj_param *pp = &w->src->params[p];
    return hoisted_leaf(w, LW_MEMO_PARAM, p, 0, TJ_OP_PARAM, tj_type_tensor(w->c, pp->dtype, pp->rank), TJ_NONE);
}

tj_ref lw_tensor_ptr(lw *w, uint32_t p)
{
    return hoisted_leaf(w, LW_MEMO_PTR, p, 0, TJ_OP_TENSOR_PTR, lw_sty(w, TJ_DT_U64), tensor_param(w, p));
}

tj_ref lw_tensor_dim(lw *w, uint32_t p, int axis)
{
    int64_t v;
    if (tj_dim_const(w->src, p, axis, &v) && v >= 0 && v <= INT32_MAX)
        return lw_const_int(w, TJ_DT_I32, v);
    return hoisted_leaf(w, LW_MEMO_DIM, p, axis, TJ_OP_DIM, lw_sty(w, TJ_DT_I32), tensor_param(w, p));
}

tj_ref lw_tensor_stride(lw *w, uint32_t p, int axis)
{
    if (w->src->facts && w->src->facts[p].unit_stride && axis == w->src->params[p].rank - 1)
        return lw_const_int(w, TJ_DT_I64, 1);
    return hoisted_leaf(w, LW_MEMO_STRIDE, p, axis, TJ_OP_STRIDE, lw_sty(w, TJ_DT_I64), tensor_param(w, p));
}

static int lower_leaf(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    uint32_t p;
    switch (in->op) {
    case TJ_OP_PARAM: {
        tj_ref v = ti->kind == TJ_TK_TENSOR && in->imm >= 0 && (uint64_t)in->imm < w->src->nparams
                       ? tensor_param(w, (uint32_t)in->imm)
                       : hoisted_leaf(w, LW_MEMO_PARAM, in->imm, 0, TJ_OP_PARAM, in->type, TJ_NONE);
        if (ti->kind == TJ_TK_TENSOR)
            w->vals[r].simt = v;
        else
            set_scalar(w, r, v);
        return 0;
    }
    case TJ_OP_CONST:
        set_scalar(w, r, tj_dtype_is_float(ti->dtype) ? lw_const_float(w, ti->dtype, in->fimm)
                                                      : lw_const_int(w, ti->dtype, in->imm));
        return 0;
    case TJ_OP_PROGRAM_ID:
    case TJ_OP_NUM_PROGRAMS:
        set_scalar(w, r, hoisted_leaf(w, LW_MEMO_SCALAR, in->op, in->imm, in->op, in->type, TJ_NONE));
        return 0;
    case TJ_OP_DIM:
        if (!tj_param_index(w->src, in->args[0], &p))
            return lw_error(w, "dim of something that is not a tensor parameter");
        set_scalar(w, r, lw_tensor_dim(w, p, (int)in->imm));
        return 0;
    default: return lw_error(w, "internal error: not a leaf");
    }
}

/* ---- control flow ---------------------------------------------------------- */

/* Carried value of a loop that travels as c fragments (lower/mma.c). */
typedef struct lw_carry {
    tj_ref dot; /* TJ_NONE: it travels as registers */
    lw_mma plan;
    int ring;   /* a slot of a copy ring: it travels in shared memory (lower/ring.c) */
} lw_carry;

static uint32_t parts_of(const lw_carry *carry, const tj_layout **lays, uint32_t k)
{
    if (carry && carry[k].ring)
        return 0;
    return carry && carry[k].dot ? (uint32_t)(carry[k].plan.tm * carry[k].plan.tn) : lays[k]->nregs;
}

static tj_ref *parts_in(lw *w, tj_ref v, const tj_layout *l, const lw_carry *carry)
{
    if (carry && carry->ring)
        return lw_new_regs(w, 1);
    if (!carry || !carry->dot)
        return lw_regs_in(w, v, l);
    return w->vals[v].frags ? w->vals[v].frags : lw_mma_fragments_in(w, &carry->plan, v, l);
}

/* The flattened registers (or fragments, where `carry` says) of n values in
 * the given layouts. */
static tj_ref *flatten(lw *w, const tj_ref *vals, const tj_layout **lays, const lw_carry *carry, uint32_t n,
                       uint32_t *total)
{
    uint32_t count = 0;
    for (uint32_t k = 0; k < n; k++)
        count += parts_of(carry, lays, k);
    tj_ref *flat = lw_new_regs(w, count);
    count = 0;
    for (uint32_t k = 0; k < n; k++) {
        tj_ref *parts = parts_in(w, vals[k], lays[k], carry ? &carry[k] : NULL);
        if (!parts)
            return NULL;
        memcpy(flat + count, parts, sizeof(tj_ref) * parts_of(carry, lays, k));
        count += parts_of(carry, lays, k);
    }
    *total = count;
    return flat;
}

static tj_type tuple_of(lw *w, const tj_ref *regs, uint32_t n)
{
    tj_type *types = tj_alloc(w->c, sizeof *types * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++)
        types[i] = w->dst->insts[regs[i]].type;
    return tj_type_tuple(w->c, n, types);
}

/* Gives tuple value r its elements from the flattened registers (or
 * fragments) `flat`. */
static void set_tuple_regs(lw *w, tj_ref r, const tj_layout **lays, const lw_carry *carry, uint32_t n,
                           const tj_ref *flat)
{
    lw_val *v = &w->vals[r];
    v->elems = tj_alloc(w->c, sizeof *v->elems * (n ? n : 1));
    v->nelems = n;
    for (uint32_t k = 0, at = 0; k < n; k++) {
        uint32_t count = parts_of(carry, lays, k);
        tj_ref *parts = lw_new_regs(w, count);
        memcpy(parts, flat + at, sizeof(tj_ref) * count);
        at += count;
        if (carry && carry[k].ring)
            v->elems[k] = (lw_val){.lay = lays[k]};
        else if (carry && carry[k].dot)
            v->elems[k] = (lw_val){.lay = lays[k], .frags = parts, .nfrags = count};
        else
            v->elems[k] = (lw_val){.lay = lays[k], .regs = parts};
    }
}

/* The n elements of a tuple-valued SIMT instruction, taken apart. */
static tj_ref *projections(lw *w, tj_ref tuple, uint32_t n)
{
    tj_ref *out = lw_new_regs(w, n);
    for (uint32_t i = 0; i < n; i++) {
        tj_type t = tj_type_get(w->c, w->dst->insts[tuple].type)->elems[i];
        out[i] = lw_emit(w, TJ_OP_PROJ, t, &tuple, 1);
        w->dst->insts[out[i]].imm = i;
    }
    return out;
}

/* Entering or leaving a region: what was accessed across it is unknown. */
static void region_edge(lw *w)
{
    w->smem_dirty = 1;
    lw_hazard_unknown(w);
}

void lw_loop_begin(lw *w, lw_loop *lp, tj_ref lo, tj_ref hi, tj_ref step, const tj_ref *init, uint32_t n)
{
    tj_ref *args = lw_new_regs(w, n + 3);
    args[0] = lo;
    args[1] = hi;
    args[2] = step;
    for (uint32_t i = 0; i < n; i++)
        args[i + 3] = init[i];
    lp->inst = lw_emit(w, TJ_OP_FOR, tuple_of(w, init, n), args, n + 3);
    tj_block_id body = tj_block_new(w->dst, lp->inst);
    w->dst->insts[lp->inst].region[0] = body;
    lp->args = lw_new_regs(w, n);
    for (uint32_t i = 0; i <= n; i++) {
        tj_ref a = tj_emit(w->dst, body, TJ_OP_ARG, w->dst->insts[args[i ? i + 2 : 0]].type, NULL, 0);
        w->dst->insts[a].imm = i;
        if (i)
            lp->args[i - 1] = a;
        else
            lp->iv = a;
    }
    lp->n = n;
    lp->saved = w->cur;
    w->cur = body;
    region_edge(w); /* the previous iteration may still read */
}

tj_ref *lw_loop_end(lw *w, lw_loop *lp, const tj_ref *next)
{
    lw_emit(w, TJ_OP_YIELD, TJ_TYPE_NONE, next, lp->n);
    w->cur = lp->saved;
    region_edge(w);
    return projections(w, lp->inst, lp->n);
}

/* Lowers src block b into the current block and returns the registers of
 * the n values it yields, in layouts `lays`, flattened. */
static tj_ref *lower_yielding(lw *w, tj_block_id b, const tj_layout **lays, const lw_carry *carry, uint32_t n,
                              uint32_t *total)
{
    tj_ref y = TJ_NONE;
    *total = 0;
    if (lw_lower_block(w, b, &y) || w->err)
        return NULL;
    if (!n)
        return lw_new_regs(w, 1);
    if (!y || w->src->insts[y].nargs < n)
        return lw_fail(w, "internal error: a region yields too little");
    return flatten(w, w->src->insts[y].args, lays, carry, n, total);
}

/* Which carried values of for r travel as fragments. */
static lw_carry *carried_fragments(lw *w, tj_ref r, uint32_t n)
{
    lw_carry *carry = tj_alloc(w->c, sizeof *carry * (n ? n : 1));
    for (uint32_t k = 0; k < n; k++) {
        carry[k].ring = lw_ring_slot(w, r, k);
        carry[k].dot = carry[k].ring ? TJ_NONE : lw_mma_carried(w, r, k, &carry[k].plan);
        tj_ref cond = TJ_NONE, acc = carry[k].dot ? w->src->insts[carry[k].dot].args[2] : TJ_NONE;
        if (acc && lw_acc_reset(w->src, acc, &cond))
            w->acc_reset[acc] = cond;
    }
    return carry;
}

/* The loop's results that came out as fragments, back in registers. */
static void results_to_registers(lw *w, tj_ref r, const lw_carry *carry, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        lw_val *e = &w->vals[r].elems[k];
        if (!carry[k].dot || carry[k].ring)
            continue;
        e->regs = lw_mma_fragments_out(w, &carry[k].plan, e->frags, e->lay);
        e->frags = NULL;
        e->nfrags = 0;
    }
}

static int lower_for(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_lay *lay = &w->lay[r];
    uint32_t n = lay->nelems, total = 0, ytotal = 0;
    const tj_block *src_body = &w->src->blocks[in->region[0]];
    if (in->nargs != n + 3 || !in->region[0] || src_body->ninsts < n + 1)
        return lw_error(w, "internal error: malformed for");
    lw_carry *carry = carried_fragments(w, r, n);
    tj_ref *init = n ? flatten(w, in->args + 3, lay->elems, carry, n, &total) : lw_new_regs(w, 1);
    if (!init)
        return 1;
    uint32_t pinned = w->smem_pinned;
    lw_ring_begin(w, r);
    lw_mma_pin_loop(w, r);
    lw_tma_store_pin(w, r);
    if (w->err)
        return 1;
    lw_loop lp;
    lw_hazard_state before = lw_hazard_save(w);
    lw_loop_begin(w, &lp, w->vals[in->args[0]].regs[0], w->vals[in->args[1]].regs[0],
                  w->vals[in->args[2]].regs[0], init, total);
    lw_hazard_enter(w, &before, in->region[0], TJ_NONE); /* earlier iterations' accesses precede */
    set_scalar(w, src_body->insts[0], lp.iv);
    set_tuple_regs(w, r, lay->elems, carry, n, lp.args);
    for (uint32_t k = 0; k < n; k++)
        w->vals[src_body->insts[k + 1]] = w->vals[r].elems[k];
    lw_scope scope = {r, in->region[0], lp.inst, lp.saved, w->loop, lp.iv, w->vals[in->args[0]].regs[0],
                      w->vals[in->args[2]].regs[0], w->vals[in->args[1]].regs[0], 0, 0};
    w->loop = &scope;
    tj_ref *next = lower_yielding(w, in->region[0], lay->elems, carry, n, &ytotal);
    lw_ring_issue(w); /* no-op: the ring's dot issued them */
    w->loop = scope.up;
    w->smem_pinned = pinned;
    if (!next)
        return 1;
    set_tuple_regs(w, r, lay->elems, carry, n, lw_loop_end(w, &lp, next));
    lw_hazard_enter(w, &before, in->region[0], TJ_NONE); /* any iteration's accesses, or none */
    lw_tma_store_drain(w, r); /* before the ring's last barrier: the staging may be reused after it */
    lw_ring_end(w, r);
    results_to_registers(w, r, carry, n);
    return 0;
}

static int uniform_scalar(const lw *w, tj_ref x, uint8_t *visiting, int depth);

/* Carried value x (a block argument) of a while: uniform when its initial
 * value and every value yielded for it are. */
static int uniform_carried(const lw *w, const tj_inst *a, uint8_t *visiting, int depth)
{
    const tj_kernel *k = w->src;
    tj_ref owner = k->blocks[a->block].owner;
    const tj_inst *loop = owner ? &k->insts[owner] : NULL;
    if (!loop || loop->op != TJ_OP_WHILE || a->imm < 0 || (uint64_t)a->imm + 1 >= loop->nargs)
        return 0;
    const tj_block *body = &k->blocks[loop->region[0]];
    const tj_inst *y = body->ninsts ? &k->insts[body->insts[body->ninsts - 1]] : NULL;
    uint32_t at = 1 + (uint32_t)a->imm;
    return y && y->op == TJ_OP_YIELD && at < y->nargs && uniform_scalar(w, loop->args[at], visiting, depth + 1) &&
           uniform_scalar(w, y->args[at], visiting, depth + 1);
}

/* Whether scalar x is the same in every thread without a broadcast: made
 * by elementwise ops from constants, parameters, dims, program indices and
 * the results of ordered loads and atomics (their owner's values, given to
 * every replica) and of reductions to a scalar, or a while's carried value
 * that starts and stays so. A
 * plain load is not (each thread reads for itself, perhaps while another
 * program writes), nor is anything else this does not know. A carried
 * value met again while it is being decided counts as uniform: the values
 * around the cycle decide. */
static int uniform_scalar(const lw *w, tj_ref x, uint8_t *visiting, int depth)
{
    const tj_inst *in = &w->src->insts[x];
    if (depth > 64 || !tj_type_is_scalar(w->c, in->type))
        return 0;
    switch (in->op) {
    case TJ_OP_CONST: case TJ_OP_PARAM: case TJ_OP_DIM: case TJ_OP_PROGRAM_ID: case TJ_OP_NUM_PROGRAMS:
    case TJ_OP_LOAD_ACQUIRE: case TJ_OP_LOAD_RELAXED: case TJ_OP_ATOMIC_ADD: case TJ_OP_ATOMIC_MAX:
    case TJ_OP_ATOMIC_MIN:
        return 1;
    case TJ_OP_REDUCE_SUM: case TJ_OP_REDUCE_PROD: case TJ_OP_REDUCE_MAX: case TJ_OP_REDUCE_MIN:
        return in->imm < 0; /* over every axis: every thread combines the same partials alike (reduce.c) */
    case TJ_OP_ARG: {
        if (visiting[x])
            return 1;
        visiting[x] = 1;
        int u = uniform_carried(w, in, visiting, depth);
        visiting[x] = 0;
        return u;
    }
    default: break;
    }
    if (!(tj_op_get(in->op)->flags & TJ_OPF_ELEM))
        return 0;
    for (uint32_t a = 0; a < in->nargs; a++)
        if (!uniform_scalar(w, in->args[a], visiting, depth + 1))
            return 0;
    return 1;
}

/* A while loop's condition (src value `cond`), the same in every thread:
 * as it is when uniform_scalar proves it, else thread 0's (its operands
 * may come from loads another program is writing). */
static tj_ref uniform_condition(lw *w, tj_ref cond)
{
    tj_ref regs[1] = {w->vals[cond].regs[0]};
    uint8_t *visiting = tj_alloc(w->c, w->src->ninsts);
    memset(visiting, 0, w->src->ninsts);
    if (!uniform_scalar(w, cond, visiting, 0))
        lw_refresh_replicas(w, lw_scalar_layout(w), regs, -1);
    return regs[0];
}

/* while(cond, carried..): a SIMT while whose condition every thread takes
 * from thread 0, so control flow stays uniform. Carried values travel in
 * registers (no ring slots or fragments: those are for's). */
static int lower_while(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_lay *lay = &w->lay[r];
    uint32_t n = lay->nelems, total = 0, ytotal = 0;
    const tj_block *src_body = &w->src->blocks[in->region[0]];
    if (in->nargs != n + 1 || !in->region[0] || src_body->ninsts < n + 1)
        return lw_error(w, "internal error: malformed while");
    tj_ref *flat = n ? flatten(w, in->args + 1, lay->elems, NULL, n, &total) : lw_new_regs(w, 1);
    if (!flat)
        return 1;
    tj_ref *args = lw_new_regs(w, total + 1);
    args[0] = uniform_condition(w, in->args[0]);
    memcpy(args + 1, flat, sizeof(tj_ref) * total);
    tj_ref loop = lw_emit(w, TJ_OP_WHILE, tuple_of(w, flat, total), args, total + 1);
    tj_block_id saved = w->cur;
    w->cur = tj_block_new(w->dst, loop);
    w->dst->insts[loop].region[0] = w->cur;
    region_edge(w); /* the previous iteration may still read */
    for (uint32_t i = 0; i < total; i++) {
        args[i + 1] = tj_emit(w->dst, w->cur, TJ_OP_ARG, w->dst->insts[flat[i]].type, NULL, 0);
        w->dst->insts[args[i + 1]].imm = i;
    }
    set_tuple_regs(w, r, lay->elems, NULL, n, args + 1);
    for (uint32_t k = 0; k < n; k++)
        w->vals[src_body->insts[k]] = w->vals[r].elems[k];
    tj_ref y = TJ_NONE;
    if (lw_lower_block(w, in->region[0], &y) || w->err)
        return 1;
    if (!y || w->src->insts[y].nargs != n + 1)
        return lw_error(w, "internal error: a while body yields too little");
    tj_ref *next = n ? flatten(w, w->src->insts[y].args + 1, lay->elems, NULL, n, &ytotal) : lw_new_regs(w, 1);
    if (!next)
        return 1;
    tj_ref *yields = lw_new_regs(w, ytotal + 1);
    yields[0] = uniform_condition(w, w->src->insts[y].args[0]);
    memcpy(yields + 1, next, sizeof(tj_ref) * ytotal);
    lw_emit(w, TJ_OP_YIELD, TJ_TYPE_NONE, yields, ytotal + 1);
    w->cur = saved;
    region_edge(w);
    set_tuple_regs(w, r, lay->elems, NULL, n, projections(w, loop, total));
    return 0;
}

static int lower_if(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_lay *lay = &w->lay[r];
    uint32_t n = lay->nelems, total = 0;
    for (uint32_t k = 0; k < n; k++)
        total += lay->elems[k]->nregs;
    tj_type *types = tj_alloc(w->c, sizeof *types * (total + 1));
    for (uint32_t k = 0, at = 0; k < n; k++) {
        tj_dtype dt = tj_type_get(w->c, lw_src_type(w, r)->elems[k])->dtype;
        for (uint32_t i = 0; i < lay->elems[k]->nregs; i++)
            types[at++] = lw_sty(w, dt);
    }
    tj_ref cond = w->vals[in->args[0]].regs[0];
    tj_ref branch = lw_emit(w, TJ_OP_IF, tj_type_tuple(w->c, total, types), &cond, 1);
    tj_block_id saved = w->cur;
    lw_hazard_state before = lw_hazard_save(w);
    for (int g = 0; g < 2; g++) {
        uint32_t got = 0;
        w->cur = tj_block_new(w->dst, branch);
        w->dst->insts[branch].region[g] = w->cur;
        region_edge(w);
        lw_hazard_enter(w, &before, TJ_NONE, TJ_NONE);
        if (in->region[g])
            lw_wgmma_epilogue_begin(w, in->region[g]);
        tj_ref *flat = in->region[g] ? lower_yielding(w, in->region[g], lay->elems, NULL, n, &got) : NULL;
        if (in->region[g])
            lw_wgmma_epilogue_end(w, in->region[g]);
        if (!flat && (in->region[g] || n)) {
            w->cur = saved;
            return w->err ? 1 : lw_error(w, "internal error: if without else yields values");
        }
        lw_emit(w, TJ_OP_YIELD, TJ_TYPE_NONE, flat, got);
    }
    w->cur = saved;
    region_edge(w);
    lw_hazard_enter(w, &before, in->region[0], in->region[1]);
    set_tuple_regs(w, r, lay->elems, NULL, n, projections(w, branch, total));
    return 0;
}

int lw_inline_region(lw *w, tj_block_id b, const tj_ref *args, uint32_t nargs, tj_ref *out, uint32_t nout)
{
    const tj_block *blk = &w->src->blocks[b];
    tj_ref y = TJ_NONE;
    if (blk->ninsts < nargs)
        return lw_error(w, "internal error: region without its arguments");
    for (uint32_t i = 0; i < nargs; i++)
        set_scalar(w, blk->insts[i], args[i]);
    if (lw_lower_block(w, b, &y) || !y || w->src->insts[y].nargs < nout)
        return !w->err ? lw_error(w, "internal error: region yields too little") : 1;
    for (uint32_t k = 0; k < nout; k++)
        out[k] = w->vals[w->src->insts[y].args[k]].regs[0];
    return 0;
}

/* ---- instructions ---------------------------------------------------------------- */

static int lower_inst(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_op_info *info = tj_op_get(in->op);
    w->loc = in->loc;
    if (w->same_as[r]) { /* folded into an earlier instruction */
        w->vals[r] = w->vals[w->same_as[r]];
        return 0;
    }
    if (w->ring_of[r]) /* a load its ring copies, or the trans() of a slot (lower/ring.c) */
        return 0;
    if (w->acc_reset[r]) /* the zero operand of a wgmma dot (lw_mma_carried) */
        return 0;
    switch (in->op) {
    case TJ_OP_PARAM:
    case TJ_OP_CONST:
    case TJ_OP_PROGRAM_ID:
    case TJ_OP_NUM_PROGRAMS:
    case TJ_OP_DIM: return lower_leaf(w, r);
    case TJ_OP_FOR: return lower_for(w, r);
    case TJ_OP_IF: return lower_if(w, r);
    case TJ_OP_WHILE: return lower_while(w, r);
    case TJ_OP_PROJ:
        if (in->imm < 0 || (uint64_t)in->imm >= w->vals[in->args[0]].nelems)
            return lw_error(w, "internal error: proj out of range");
        w->vals[r] = w->vals[in->args[0]].elems[in->imm];
        return 0;
    case TJ_OP_VIEW: return 0; /* read by the memory ops that use it */
    case TJ_OP_ARANGE:
    case TJ_OP_BROADCAST:
    case TJ_OP_RESHAPE:
    case TJ_OP_PERMUTE: return lw_lower_shape(w, r);
    case TJ_OP_REDUCE_SUM:
    case TJ_OP_REDUCE_PROD:
    case TJ_OP_REDUCE_MAX:
    case TJ_OP_REDUCE_MIN:
    case TJ_OP_ARGMAX:
    case TJ_OP_ARGMIN: return lw_lower_reduce(w, r);
    case TJ_OP_CUMSUM:
    case TJ_OP_CUMPROD:
    case TJ_OP_SCAN: return lw_lower_scan(w, r);
    case TJ_OP_SORT: return lw_lower_sort(w, r);
    case TJ_OP_COUNTING_SORT: return lw_lower_counting_sort(w, r);
    case TJ_OP_GATHER: return lw_lower_gather(w, r);
    case TJ_OP_DOT: return lw_lower_dot(w, r);
    case TJ_OP_LOAD:
    case TJ_OP_STORE:
    case TJ_OP_ATOMIC_ADD:
    case TJ_OP_ATOMIC_MAX:
    case TJ_OP_ATOMIC_MIN:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_LOAD_RELAXED:
    case TJ_OP_STORE_RELAXED: return lw_lower_memory(w, r);
    default: break;
    }
    if (info->flags & TJ_OPF_ELEM)
        return lw_lower_elementwise(w, r);
    return lw_error(w, "cannot lower '%s' here", info->name);
}

int lw_lower_block(lw *w, tj_block_id b, tj_ref *yield)
{
    if (++w->depth > MAX_NESTING) {
        w->depth--;
        return lw_error(w, "regions nested too deeply");
    }
    const tj_block *blk = &w->src->blocks[b];
    int failed = 0;
    for (uint32_t i = 0; !failed && i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        tj_op op = w->src->insts[r].op;
        if (w->wg_defer && op != TJ_OP_ARG && lw_wgmma_await(w, r)) { /* groups it reads (lower/wgmma.c) */
            failed = 1;
            break;
        }
        if (op == TJ_OP_YIELD) {
            *yield = r;
            break;
        }
        if (op != TJ_OP_ARG)
            failed = lower_inst(w, r) || w->err;
    }
    w->depth--;
    return failed;
}

/* ---- the kernel ---------------------------------------------------------------- */

static int copy_grid(lw *w)
{
    const tj_kernel *k = w->src;
    tj_kernel *d = w->dst;
    tj_ref *map = tj_alloc(w->c, sizeof *map * (k->ninsts + 1));
    const tj_block *g = &k->blocks[k->grid];
    d->grid = tj_block_new(d, TJ_NONE);
    for (uint32_t i = 0; i < g->ninsts; i++) {
        const tj_inst *in = &k->insts[g->insts[i]];
        tj_ref args[8];
        if (in->region[0] || in->region[1] || in->nargs > 8)
            return lw_error(w, "the grid block may only compute scalars");
        for (uint32_t a = 0; a < in->nargs; a++)
            args[a] = in->args[a] ? map[in->args[a]] : TJ_NONE;
        tj_ref r = tj_emit(d, d->grid, in->op, in->type, args, in->nargs);
        tj_inst *o = &d->insts[r];
        o->imm = in->imm;
        o->fimm = in->fimm;
        o->flags = in->flags;
        o->loc = in->loc;
        if (in->nlist)
            tj_inst_set_list(d, r, in->list, in->nlist);
        map[g->insts[i]] = r;
    }
    return 0;
}

/* The canonical layout's elements a thread owns along the last axis: the
 * kernel's `vec` where it declares one (so that a scan over a thread's
 * consecutive elements, as the selective scan's steps, stays in the
 * thread), else 16 bytes of the narrowest dtype the kernel's tensors hold
 * (one vector access). */
static int pick_vec(lw *w)
{
    const tj_kernel *k = w->src;
    int64_t asked = tj_config_value(k, TJ_PARAM_VEC, INT64_MIN);
    if (asked != INT64_MIN) {
        if (asked < 1 || asked > TJ_MAX_VEC || (asked & (asked - 1)))
            return lw_error(w, "vec = %lld: the lowering needs a power of two from 1 to %d", (long long)asked,
                            TJ_MAX_VEC);
        w->vec = (int)asked;
        return 0;
    }
    int size = 4;
    for (uint32_t p = 0; p < k->nparams; p++)
        if (k->params[p].rank > 0 && tj_dtype_size(k->params[p].dtype) < size)
            size = tj_dtype_size(k->params[p].dtype);
    w->vec = 16 / (size ? size : 1);
    return 0;
}

static int pick_warps(lw *w, const tj_lower_options *opt)
{
    int64_t warps = opt && opt->warps ? opt->warps : tj_config_warps(w->src);
    if (warps < 1 || warps > TJ_MAX_WARPS || (warps & (warps - 1)))
        return lw_error(w, "warps = %lld: the lowering needs a power of two from 1 to %d", (long long)warps,
                        TJ_MAX_WARPS);
    w->nwarps = (int)warps;
    w->nthreads = (uint32_t)warps * TJ_WARP_SIZE;
    return 0;
}

static tj_kernel *new_simt_kernel(lw *w)
{
    const tj_kernel *k = w->src;
    tj_kernel *d = tj_kernel_new(w->c, k->name);
    d->level = TJ_LEVEL_SIMT;
    d->loc = k->loc;
    d->params = k->params;
    d->nparams = k->nparams;
    d->config = k->config;
    d->nconfig = k->nconfig;
    d->spec = k->spec;
    d->nspec = k->nspec;
    d->facts = k->facts;
    return d;
}

static tj_kernel *lower_kernel(lw *w, const tj_lower_options *opt)
{
    if (w->src->level != TJ_LEVEL_TILE || !w->src->body || !w->src->grid)
        return lw_fail(w, "not a Tile IR kernel");
    const tj_kernel *k = w->src;
    if (pick_warps(w, opt) || pick_vec(w))
        return NULL;
    w->target = opt ? opt->target : TJ_LOWER_CUDA;
    w->smem_limit = w->target == TJ_LOWER_METAL ? TJ_SMEM_LIMIT_METAL : TJ_SMEM_LIMIT_CUDA;
    w->wgmma = opt && opt->target == TJ_LOWER_CUDA && opt->wgmma;
    w->no_tma = opt && opt->no_tma;
    w->wgmma_turns = opt && opt->wgmma_turns;
    w->dst = new_simt_kernel(w);
    if (copy_grid(w))
        return NULL;
    w->dst->body = w->entry = w->cur = tj_block_new(w->dst, TJ_NONE);
    w->vals = tj_alloc(w->c, sizeof *w->vals * (k->ninsts + 1));
    w->same_as = tj_alloc(w->c, sizeof *w->same_as * (k->ninsts + 1));
    w->acc_reset = tj_alloc(w->c, sizeof *w->acc_reset * (k->ninsts + 1));
    w->store_region = tj_alloc(w->c, sizeof *w->store_region * (k->ninsts + 1));
    w->dot_region = tj_alloc(w->c, sizeof *w->dot_region * (k->ninsts + 1));
    w->dot_flip = tj_alloc(w->c, sizeof *w->dot_flip * (k->ninsts + 1));
    w->fixed_region = tj_alloc(w->c, sizeof *w->fixed_region * 2 * (k->ninsts + 1));
    w->div = tj_divisibility(k);
    if (lw_assign_layouts(w))
        return NULL;
    lw_hazard_plan(w);
    lw_ring_plan(w);
    lw_producer_plan(w);
    tj_ref y = TJ_NONE;
    if (lw_lower_block(w, k->body, &y) || w->err)
        return NULL;
    lw_emit(w, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    lw_sink_elementwise(w);
    w->dst->nthreads = w->nthreads + (w->producer ? TJ_WARP_SIZE : 0);
    w->dst->smem_bytes = w->smem_bytes;
    /* a declared occupancy is the kernel's word; else what wgmma leaves room for */
    int64_t occupancy = tj_config_value(w->src, TJ_PARAM_OCCUPANCY, 0);
    w->dst->programs = occupancy > 0 ? (uint32_t)occupancy : lw_wgmma_programs(w);
    return w->dst;
}

typedef struct lower_job {
    const tj_kernel *k;
    const tj_lower_options *opt;
    tj_kernel *result;
} lower_job;

static int run_lower(void *arg)
{
    lower_job *j = arg;
    const tj_kernel *k = j->k;
    lw w = {.c = k->ctx, .src = k};
    uint32_t ndiags = tj_diag_count(k->ctx);
    j->result = lower_kernel(&w, j->opt);
    if (!j->result && w.producer_unfit) { /* an op the producer warp cannot be kept from */
        tj_diag_truncate(k->ctx, ndiags);
        w = (lw){.c = k->ctx, .src = k, .no_producer = 1};
        j->result = lower_kernel(&w, j->opt);
    }
    if (!j->result && (w.pinned_any || w.rings_any) && w.smem_overflow) { /* the loops' regions took the room */
        tj_diag_truncate(k->ctx, ndiags);
        lw again = {.c = k->ctx, .src = k, .no_pins = 1, .no_rings = 1, .no_producer = 1};
        j->result = lower_kernel(&again, j->opt);
    }
    return 0;
}

tj_kernel *tj_lower_simt(const tj_kernel *k, const tj_lower_options *opt)
{
    if (!k)
        return NULL;
    if (opt && (unsigned)opt->target > TJ_LOWER_METAL) {
        tj_error(k->ctx, "tj_lower_simt: no lowering target %d", (int)opt->target);
        return NULL;
    }
    lower_job j = {k, opt, NULL};
    return tj_guarded(k->ctx, run_lower, &j) ? NULL : j.result;
}
