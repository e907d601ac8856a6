/* Canonicalize: folds and simplifies until nothing changes, then removes
 * what became dead (as dce does).
 *
 * Each sweep walks the kernel in program order, rewriting operands through
 * the forwarding map before looking at an instruction, so a value replaced
 * earlier in the sweep is never seen again. Pure ops go to tj_simplify
 * (simplify.c); this file handles control flow: `if` on a constant
 * condition is inlined, `for` with no iteration is replaced by its initial
 * values, and `proj` of such a tuple, of a loop-invariant carried value or
 * of an `if` whose branches agree is the element itself. */
#include "passes/canon.h"

/* Enough for any kernel a front end writes: each sweep finishes the
 * rewrites it enables in program order. */
enum { MAX_SWEEPS = 32 };

static tj_inst *inst(const tj_canon *cx, tj_ref r) { return &cx->k->insts[r]; }

/* Records the elements of tuple r, which goes away: tuple[r][0] is their
 * count, the elements follow. */
static void set_tuple(tj_canon *cx, tj_ref r, const tj_ref *elems, uint32_t n)
{
    tj_ref *copy = tj_alloc(cx->k->ctx, sizeof(tj_ref) * ((size_t)n + 1));
    copy[0] = n;
    for (uint32_t i = 0; i < n; i++)
        copy[i + 1] = elems[i];
    cx->tuple = tj_grow(cx->k->ctx, cx->tuple, &cx->tuple_cap, r + 1, sizeof *cx->tuple);
    cx->tuple[r] = copy;
}

static const tj_inst *block_yield(const tj_canon *cx, tj_block_id b)
{
    const tj_block *blk = &cx->k->blocks[b];
    const tj_inst *y = blk->ninsts ? inst(cx, blk->insts[blk->ninsts - 1]) : NULL;
    return y && y->op == TJ_OP_YIELD ? y : NULL;
}

/* The block argument of b with index `index`, or TJ_NONE. */
static tj_ref block_arg(const tj_canon *cx, tj_block_id b, int64_t index)
{
    const tj_block *blk = &cx->k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts && inst(cx, blk->insts[i])->op == TJ_OP_ARG; i++)
        if (inst(cx, blk->insts[i])->imm == index)
            return blk->insts[i];
    return TJ_NONE;
}

/* ---- if ------------------------------------------------------------------------ */

/* Moves the taken branch's instructions (all but its yield) before the `if`
 * and records what it yields as the tuple of the `if`. */
static int inline_if(tj_canon *cx, tj_ref r)
{
    tj_cval cond;
    if (inst(cx, r)->nargs != 1 || !tj_const_value(cx->k, inst(cx, r)->args[0], &cond))
        return 0;
    tj_block_id taken = tj_region_of(cx->k, r, cond.i ? 0 : 1);
    const tj_inst *y = taken ? block_yield(cx, taken) : NULL;
    if (!y || inst(cx, cx->k->blocks[taken].insts[0])->op == TJ_OP_ARG)
        return 0; /* not the shape the verifier accepts: leave it */
    set_tuple(cx, r, y->args, y->nargs);
    tj_block *blk = &cx->k->blocks[taken];
    uint32_t n = blk->ninsts - 1;
    for (uint32_t i = 0; i < n; i++)
        tj_block_insert(cx->k, cx->at.block, cx->at.pos++, cx->k->blocks[taken].insts[i]);
    blk = &cx->k->blocks[taken];
    blk->insts[0] = blk->insts[n]; /* the branch keeps only its yield */
    blk->ninsts = 1;
    return 1;
}

/* ---- for ------------------------------------------------------------------------ */

/* Python's range(lo, hi, step) is empty: step 0, or lo already past hi. */
static int for_is_empty(const tj_canon *cx, const tj_inst *in)
{
    tj_cval lo, hi, step;
    if (in->nargs < 3 || !tj_const_value(cx->k, in->args[0], &lo) ||
        !tj_const_value(cx->k, in->args[1], &hi) || !tj_const_value(cx->k, in->args[2], &step))
        return 0;
    if (tj_dtype_is_float(tj_value_dtype(cx->k, in->args[0])))
        return 0;
    if (!tj_dtype_is_signed(tj_value_dtype(cx->k, in->args[0])))
        return step.i == 0 || (uint64_t)lo.i >= (uint64_t)hi.i;
    return step.i == 0 || (step.i > 0 && lo.i >= hi.i) || (step.i < 0 && lo.i <= hi.i);
}

static int remove_empty_for(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    if (!for_is_empty(cx, in))
        return 0;
    set_tuple(cx, r, in->args + 3, in->nargs - 3);
    return 1;
}

/* Whether carried value j of `for` r is the same on every iteration: the
 * body yields its own argument, or the initial value, back. */
static int carried_is_invariant(const tj_canon *cx, tj_ref r, uint32_t j, tj_ref *arg)
{
    const tj_inst *in = inst(cx, r);
    tj_block_id body = tj_region_of(cx->k, r, 0);
    const tj_inst *y = body ? block_yield(cx, body) : NULL;
    *arg = body ? block_arg(cx, body, (int64_t)j + 1) : TJ_NONE;
    if (!y || j >= y->nargs || !*arg || 3 + j >= in->nargs)
        return 0;
    tj_ref next = tj_fwd_resolve(&cx->fwd, y->args[j]);
    return next == *arg || next == tj_fwd_resolve(&cx->fwd, in->args[3 + j]);
}

/* Inside the body, an invariant carried argument is its initial value. */
static void forward_invariant_args(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    if (!tj_region_of(cx->k, r, 0) || in->nargs < 3)
        return;
    for (uint32_t j = 0; j + 3 < inst(cx, r)->nargs; j++) {
        tj_ref arg;
        if (carried_is_invariant(cx, r, j, &arg) && tj_fwd_resolve(&cx->fwd, arg) == arg) {
            tj_fwd_set(cx->k, &cx->fwd, arg, inst(cx, r)->args[3 + j]);
            cx->changed = 1;
        }
    }
}

/* ---- proj ------------------------------------------------------------------------ */

/* Whether value v is defined inside one of r's regions (at any depth). */
static int defined_inside(const tj_canon *cx, tj_ref v, tj_ref r)
{
    tj_block_id b = inst(cx, v)->block;
    for (int depth = 0; b && depth <= TJ_PASS_MAX_DEPTH; depth++) {
        tj_ref owner = cx->k->blocks[b].owner;
        if (!owner)
            return 0;
        if (owner == r)
            return 1;
        b = inst(cx, owner)->block;
    }
    return 1;
}

static tj_ref fold_proj(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    tj_ref t = in->args[0];
    uint64_t j = (uint64_t)in->imm;
    if (!t || in->imm < 0)
        return TJ_NONE;
    if (t < cx->tuple_cap && cx->tuple[t])
        return j < cx->tuple[t][0] ? tj_fwd_resolve(&cx->fwd, cx->tuple[t][j + 1]) : TJ_NONE;
    const tj_inst *ti = inst(cx, t);
    if (ti->op == TJ_OP_FOR && j + 3 < ti->nargs) {
        tj_ref arg;
        return carried_is_invariant(cx, t, (uint32_t)j, &arg) ? ti->args[3 + j] : TJ_NONE;
    }
    tj_block_id then = tj_region_of(cx->k, t, 0), other = tj_region_of(cx->k, t, 1);
    if (ti->op == TJ_OP_IF && then && other) {
        const tj_inst *a = block_yield(cx, then), *b = block_yield(cx, other);
        if (a && b && j < a->nargs && j < b->nargs && a->args[j] == b->args[j] &&
            !defined_inside(cx, a->args[j], t))
            return a->args[j];
    }
    return TJ_NONE;
}

/* ---- the walk ---------------------------------------------------------------------- */

static int canon_regions(tj_canon *cx, tj_ref r, int depth);

/* Simplifies r, which sits at cx->at; returns 1 when r goes away. */
static int canon_inst(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    unsigned flags = tj_op_get(in->op)->flags;
    tj_ref v = TJ_NONE;
    switch (in->op) {
    case TJ_OP_IF: return inline_if(cx, r);
    case TJ_OP_FOR: return remove_empty_for(cx, r);
    case TJ_OP_PROJ: v = in->nargs == 1 ? fold_proj(cx, r) : TJ_NONE; break;
    default:
        if ((flags & TJ_OPF_PURE) && !(flags & TJ_OPF_REGION))
            v = tj_simplify(cx, r);
        break;
    }
    if (v)
        tj_fwd_set(cx->k, &cx->fwd, r, v);
    return v != TJ_NONE;
}

static int canon_block(tj_canon *cx, tj_block_id b, int depth)
{
    for (uint32_t i = 0; i < cx->k->blocks[b].ninsts;) {
        tj_ref r = cx->k->blocks[b].insts[i];
        tj_fwd_apply(cx->k, &cx->fwd, r);
        if (canon_regions(cx, r, depth))
            return 1;
        cx->at = (tj_cursor){.block = b, .pos = i, .loc = inst(cx, r)->loc};
        int gone = canon_inst(cx, r);
        i = cx->at.pos; /* r moved past what was inserted before it */
        if (gone) {
            tj_block_remove(cx->k, b, i);
            tj_detach_regions(cx->k, r, 0);
            cx->changed = 1;
        } else {
            i++;
        }
    }
    return 0;
}

static int canon_regions(tj_canon *cx, tj_ref r, int depth)
{
    if (inst(cx, r)->op == TJ_OP_FOR)
        forward_invariant_args(cx, r);
    for (int g = 0; g < 2; g++) {
        tj_block_id region = tj_region_of(cx->k, r, g);
        if (!region)
            continue;
        if (!tj_pass_depth_ok(cx->k, r, depth + 1) || canon_block(cx, region, depth + 1))
            return 1;
    }
    return 0;
}

int tj_canonicalize_run(tj_kernel *k, int *changed)
{
    tj_canon cx = {.k = k};
    tj_fwd_init(k, &cx.fwd);
    tj_block_id tops[2] = {k->grid, k->body};
    int any = 0;
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        cx.changed = 0;
        for (int t = 0; t < 2; t++)
            if (tops[t] && canon_block(&cx, tops[t], 0))
                return 1;
        any |= cx.changed;
        if (!cx.changed)
            break;
    }
    int dead = 0;
    if (tj_dce_run(k, &dead))
        return 1;
    *changed = any || dead;
    return 0;
}

int tj_pass_canonicalize(tj_kernel *k) { return k ? tj_pass_guarded(k, tj_canonicalize_run, NULL) : 1; }
