/* Layout assignment: a layout for every tile value of the body, chosen so
 * that most ops need no conversion (docs/simt.md, "Lowering", step 2).
 *
 *   - loads, aranges, atomics: the canonical layout of their shape
 *   - elementwise: the layout of the first operand that is not "soft"
 *     (splats, aranges and elementwise ops on them, which the lowering
 *     rematerializes in any layout), else of the first operand
 *   - reductions: the operand's layout sliced along the reduced axis
 *   - broadcast, reshape, permute: a layout derived from the operand's
 *     (its root refitted to the new shape, a slice, a permutation) when
 *     that makes the op free, else canonical
 *   - scans: the operand's layout; sort: its line's low bits in registers;
 *     dot: the accumulator's;
 *     gather: the indices'
 *   - for: a carried value keeps its init's layout, unless the init is soft
 *     and the body yields another layout (then that one)
 * A value whose producer and consumer disagree is converted by the lowering
 * (lw_regs_in): rematerialized when soft, else through shared memory. */
#include "lower/lower.h"

static int assign_block(lw *w, tj_block_id b);

static const tj_layout *one_of(const lw *w, tj_ref r) { return w->lay[r].one; }

static int set_one(lw *w, tj_ref r, const tj_layout *l)
{
    if (!l)
        return lw_error(w, "internal error: no layout for %%%u", r);
    if (l->nregs > TJ_LOWER_MAX_REGS) {
        char t[96];
        tj_type_str(w->c, w->src->insts[r].type, t, sizeof t);
        return lw_error(w, "a %s tile needs %u registers per thread with %d warps (at most %d): use smaller tiles "
                        "or more warps", t, l->nregs, w->nwarps, TJ_LOWER_MAX_REGS);
    }
    w->lay[r].one = lw_intern(w, l);
    return 0;
}

static void set_tuple(lw *w, tj_ref r, const tj_layout **elems, uint32_t n)
{
    w->lay[r].elems = elems;
    w->lay[r].nelems = n;
}

/* Whether value r (in its assigned layout) can be read in l for free. */
static int free_transfer(lw *w, tj_ref r, const tj_layout *src, const tj_layout *l)
{
    int64_t wts[TJ_MAX_RANK];
    if (!l || l->nregs > TJ_LOWER_MAX_REGS || lw_shape_weights(w, r, wts))
        return 0;
    return lw_transfer_map(w, src, l, wts) != NULL;
}

static const tj_layout *derived_layout(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r), *si = lw_src_type(w, in->args[0]);
    const tj_layout *src = one_of(w, in->args[0]);
    const tj_layout *cand[4] = {NULL, NULL, NULL, NULL};
    if (!src || si->rank == 0)
        return lw_canonical(w, in->type);
    if (in->op == TJ_OP_PERMUTE) {
        int32_t perm[TJ_MAX_RANK];
        for (uint32_t i = 0; i < in->nlist && i < TJ_MAX_RANK; i++)
            perm[i] = in->list[i];
        cand[0] = tj_layout_permute(w->c, src, perm);
    } else {
        cand[0] = tj_layout_refit(w->c, src, ti->rank, ti->shape);
        for (int a = 0; a < si->rank && ti->rank == si->rank - 1; a++)
            if (si->shape[a] == 1 && !cand[1])
                cand[1] = tj_layout_slice(w->c, src, a);
        for (int a = 0; a < ti->rank && ti->rank == si->rank + 1; a++)
            if (ti->shape[a] == 1 && !cand[2])
                cand[2] = tj_layout_insert_axis(w->c, src, a);
    }
    for (int i = 0; i < 4; i++)
        if (cand[i] && free_transfer(w, r, src, cand[i]))
            return cand[i];
    return lw_canonical(w, in->type);
}

/* A value computed from indices alone (aranges, splats, and shape and
 * elementwise ops of those): its layout follows from how it was built, not
 * from data, so an elementwise op with a data operand takes that one's. */
static int from_indices(const lw *w, tj_ref r, int depth)
{
    const tj_inst *in = &w->src->insts[r];
    if (lw_src_type(w, r)->rank == 0 || in->op == TJ_OP_ARANGE)
        return 1;
    if (depth > 6)
        return 0;
    int shape = in->op == TJ_OP_BROADCAST || in->op == TJ_OP_RESHAPE || in->op == TJ_OP_PERMUTE;
    if (!shape && !(tj_op_get(in->op)->flags & TJ_OPF_ELEM))
        return 0;
    for (uint32_t a = 0; a < in->nargs; a++)
        if (!from_indices(w, in->args[a], depth + 1))
            return 0;
    return 1;
}

/* A loop's carried value that starts as a splat: its layout is still being
 * decided by what the loop yields (assign_loop). */
static int undecided_carry(const lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    tj_ref loop = in->op == TJ_OP_ARG && in->imm > 0 ? w->src->blocks[in->block].owner : TJ_NONE;
    const tj_inst *l = loop ? &w->src->insts[loop] : NULL;
    return l && l->op == TJ_OP_FOR && 3 + (uint32_t)in->imm - 1 < l->nargs && lw_is_soft(w, l->args[2 + in->imm]);
}

/* How strongly an operand's layout should win, from 0 (soft: recomputed in
 * any layout) to 4 (a dot's result: its layout is the atoms' own). */
static int layout_weight(lw *w, tj_ref x)
{
    if (lw_is_soft(w, x))
        return 0;
    if (w->src->insts[x].op == TJ_OP_DOT)
        return 4;
    if (from_indices(w, x, 0))
        return 1;
    return undecided_carry(w, x) ? 2 : 3;
}

static const tj_layout *elementwise_layout(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *best = NULL;
    int weight = -1;
    for (uint32_t a = 0; a < in->nargs; a++) {
        const tj_layout *l = one_of(w, in->args[a]);
        int wt = l && l->rank > 0 ? layout_weight(w, in->args[a]) : -1;
        if (wt > weight) {
            best = l;
            weight = wt;
        }
    }
    return best ? best : lw_canonical(w, in->type);
}

static const tj_layout *reduced_layout(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *src = one_of(w, in->args[0]);
    if (in->imm < 0 || lw_src_type(w, r)->rank == 0 || !src)
        return lw_scalar_layout(w);
    return tj_layout_slice(w->c, src, (int)in->imm);
}

/* The layouts of n values yielded by block b (TJ_NONE where none). */
static tj_ref yielded(const lw *w, tj_block_id b, uint32_t k)
{
    const tj_block *blk = &w->src->blocks[b];
    const tj_inst *y = blk->ninsts ? &w->src->insts[blk->insts[blk->ninsts - 1]] : NULL;
    return y && y->op == TJ_OP_YIELD && k < y->nargs ? y->args[k] : TJ_NONE;
}

/* for and while: a carried value that starts soft takes the layout its
 * body yields. for: operands lo, hi, step, then the carried values; its
 * body's arguments the induction variable, then the carried values. while:
 * the condition, then the carried values, which its body's arguments
 * are; its yield passes the condition first. */
static int assign_loop(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    int is_for = in->op == TJ_OP_FOR;
    uint32_t first = is_for ? 3 : 1, iv = is_for ? 1 : 0, ylead = is_for ? 0 : 1;
    uint32_t n = in->nargs > first ? in->nargs - first : 0;
    const tj_block *body = &w->src->blocks[in->region[0]];
    const tj_layout **carried = tj_alloc(w->c, sizeof *carried * (n + 1));
    for (uint32_t k = 0; k < n; k++)
        carried[k] = one_of(w, in->args[first + k]);
    for (int round = 0; round < 3; round++) {
        if (body->ninsts && iv)
            w->lay[body->insts[0]].one = lw_scalar_layout(w);
        for (uint32_t k = 0; k < n && k + iv < body->ninsts; k++)
            w->lay[body->insts[k + iv]].one = carried[k];
        if (assign_block(w, in->region[0]))
            return 1;
        int changed = 0;
        for (uint32_t k = 0; k < n; k++) {
            tj_ref y = yielded(w, in->region[0], k + ylead);
            const tj_layout *yl = y ? one_of(w, y) : NULL;
            if (yl && carried[k] && !tj_layout_equal(yl, carried[k]) && lw_is_soft(w, in->args[first + k]) &&
                yl->rank > 0) {
                carried[k] = yl;
                changed = 1;
            }
        }
        if (!changed)
            break;
    }
    set_tuple(w, r, carried, n);
    return 0;
}

static int assign_if(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    uint32_t n = ti->kind == TJ_TK_TUPLE ? ti->nelems : 0;
    if (assign_block(w, in->region[0]) || assign_block(w, in->region[1]))
        return 1;
    const tj_layout **merged = tj_alloc(w->c, sizeof *merged * (n + 1));
    for (uint32_t k = 0; k < n; k++) {
        tj_ref t = yielded(w, in->region[0], k), e = yielded(w, in->region[1], k);
        merged[k] = t && (!lw_is_soft(w, t) || !e) ? one_of(w, t) : e ? one_of(w, e) : NULL;
        if (!merged[k])
            merged[k] = lw_canonical(w, ti->elems[k]);
    }
    set_tuple(w, r, merged, n);
    return 0;
}

/* A sort along the last axis: a thread's elements contiguous along the line
 * (as many as it holds), then lanes, then warps. A stage at distance 2^b
 * exchanges position bit b, and bit b takes part in log2(n) - b of the
 * network's stages, so the low bits, used most, get the cheapest home:
 * registers (lower/sort_regs.c), not shuffles. The operand is converted
 * into it once. Other sorts keep the operand's layout. */
static const tj_layout *sort_layout(lw *w, tj_ref r, const tj_layout *operand)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ki = lw_src_type(w, in->args[0]);
    int last = ki->rank - 1;
    if (ki->rank == 0 || !(in->imm == last || (in->imm < 0 && ki->rank == 1)))
        return operand;
    return lw_intern(w, tj_layout_canonical(w->c, ki->rank, ki->shape, w->nwarps, ki->shape[last]));
}

/* scan: every result takes the first operand's layout; sort: sort_layout */
static int assign_multi(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    const tj_layout *l = one_of(w, in->args[0]);
    if (in->op == TJ_OP_SORT && l)
        l = sort_layout(w, r, l);
    if (in->op == TJ_OP_SCAN && assign_block(w, in->region[0]))
        return 1;
    if (ti->kind != TJ_TK_TUPLE)
        return set_one(w, r, l);
    const tj_layout **elems = tj_alloc(w->c, sizeof *elems * (ti->nelems + 1));
    for (uint32_t k = 0; k < ti->nelems; k++)
        elems[k] = l;
    set_tuple(w, r, elems, ti->nelems);
    return 0;
}

static int assign_inst(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    w->loc = in->loc;
    switch (in->op) {
    case TJ_OP_FOR:
    case TJ_OP_WHILE: return assign_loop(w, r);
    case TJ_OP_IF: return assign_if(w, r);
    case TJ_OP_SCAN:
    case TJ_OP_SORT: return assign_multi(w, r);
    case TJ_OP_COUNTING_SORT: { /* read back from shared memory in any layout */
        const tj_layout **elems = tj_alloc(w->c, sizeof *elems * 2);
        for (uint32_t k = 0; k < 2; k++)
            elems[k] = lw_intern(w, lw_canonical(w, ti->elems[k]));
        set_tuple(w, r, elems, 2);
        return 0;
    }
    case TJ_OP_ARG: return 0; /* set by the block's owner */
    case TJ_OP_PROJ: {
        const lw_lay *t = &w->lay[in->args[0]];
        return in->imm >= 0 && (uint64_t)in->imm < t->nelems ? set_one(w, r, t->elems[in->imm])
                                                               : set_one(w, r, lw_canonical(w, in->type));
    }
    default: break;
    }
    if (ti->kind != TJ_TK_TILE)
        return 0;
    if (ti->rank == 0)
        return set_one(w, r, lw_scalar_layout(w));
    switch (in->op) {
    case TJ_OP_BROADCAST:
    case TJ_OP_RESHAPE:
    case TJ_OP_PERMUTE: return set_one(w, r, derived_layout(w, r));
    case TJ_OP_REDUCE_SUM:
    case TJ_OP_REDUCE_PROD:
    case TJ_OP_REDUCE_MAX:
    case TJ_OP_REDUCE_MIN:
    case TJ_OP_ARGMAX:
    case TJ_OP_ARGMIN: return set_one(w, r, reduced_layout(w, r));
    case TJ_OP_CUMSUM:
    case TJ_OP_CUMPROD: return set_one(w, r, one_of(w, in->args[0]));
    case TJ_OP_GATHER: return set_one(w, r, one_of(w, in->args[1])); /* each register reads at its index */
    case TJ_OP_DOT: {
        lw_mma plan;
        if (lw_mma_plan(w, r, &plan) && plan.regs) /* the fragments' own layout */
            return set_one(w, r, lw_mma_result_layout(w, &plan));
        if (in->nargs > 2 && in->args[2] && !lw_is_soft(w, in->args[2])) {
            /* a loop's accumulator that starts as zeros takes the FMA register block */
            const tj_layout *block = undecided_carry(w, in->args[2]) ? lw_fma_layout(w, r) : NULL;
            return set_one(w, r, block ? block : one_of(w, in->args[2]));
        }
        return set_one(w, r, lw_canonical(w, in->type));
    }
    default: break;
    }
    if (tj_op_get(in->op)->flags & TJ_OPF_ELEM)
        return set_one(w, r, elementwise_layout(w, r));
    return set_one(w, r, lw_canonical(w, in->type));
}

static int assign_block(lw *w, tj_block_id b)
{
    if (++w->depth > 200) {
        w->depth--;
        return lw_error(w, "regions nested too deeply");
    }
    const tj_block *blk = &w->src->blocks[b];
    int failed = 0;
    for (uint32_t i = 0; !failed && i < blk->ninsts; i++)
        failed = assign_inst(w, blk->insts[i]);
    w->depth--;
    return failed;
}

int lw_assign_layouts(lw *w)
{
    w->lay = tj_alloc(w->c, sizeof *w->lay * (w->src->ninsts + 1));
    return assign_block(w, w->src->body);
}
