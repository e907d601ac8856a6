/* Warpgroups taking turns at the tensor cores (FlashAttention-3's
 * ping-pong of two consumer warpgroups; docs/simt.md, "wgmma").
 *
 * In a loop whose body issues two or more wgmma dots with softmax-like
 * work between them (attention: S = Q K^T, the softmax of S, O += P V),
 * the warpgroups of a program otherwise run in phase: they issue their S
 * at the same time, wait for it together, run their softmaxes together on
 * the same schedulers and leave the tensor cores idle meanwhile. Taking
 * turns orders the issues: warpgroup g issues a dot's group only after
 * warpgroup g - 1 issued its group of the same dot, and warpgroup 0 its
 * next one only after the last warpgroup issued. The tensor cores run
 * groups in issue order, so warpgroup 0's S completes a product earlier
 * than warpgroup 1's, and one warpgroup's softmax runs while the other's
 * products do.
 *
 * Warpgroup g waits at named barrier 1 + g (bar_sync, 256 threads: its own
 * 128 and the 128 of the warpgroup handing it the turn) before the
 * group's wgmma_fence, and arrives at barrier 1 + (g + 1) % G (bar_arrive)
 * after its wgmma_commit, before the ring's copies (thread 0 may wait
 * there for a slot the other warpgroups release). The first turn of all,
 * warpgroup 0's in the first iteration, waits for nobody, and the last
 * hand-over, the last warpgroup's after the last iteration's last dot,
 * goes to nobody: both are predicated off, so every phase of every
 * barrier is complete when the loop ends (the SIMT interpreter checks
 * that). The barriers order only issues: results, shared memory and the
 * rings keep their own waits.
 *
 * Why it cannot deadlock: every warpgroup runs the same code (control flow
 * is uniform), so each meets the same sequence of turns and program
 * barriers; a warpgroup waiting for a turn waits for one the warpgroup
 * before it reaches without waiting on anything later than that turn, and
 * a program barrier that one warpgroup waits at, every other either passed
 * already (it is ahead, and was let through only once all arrived) or
 * reaches before its next turn. Loops whose wgmma dots sit in nested
 * regions take no turns (a dot under an `if` would make the first and
 * last turns depend on the branch).
 *
 * Only where tj_lower_options.wgmma_turns asks: on the H200 the turns
 * made attention slower (B4 H32 S4096 D128, 128 x 128 / 8 warps: 2.60 ->
 * 3.17 ms by TMA rings, 2.76 -> 3.13 by cp.async; bench/NOTES.md), so
 * the JIT does not ask. */
#include "lower/wgmma_turns.h"

enum { GROUP_WARPS = 4, GROUP_THREADS = 128, FIRST_BARRIER = 1 };

static int is_wgmma_dot(lw *w, tj_ref d)
{
    lw_mma p;
    return w->src->insts[d].op == TJ_OP_DOT && lw_mma_plan(w, d, &p) && p.wg;
}

/* Whether the innermost loop takes turns: asked for (tj_lower_options;
 * measured slower on the H200, bench/NOTES.md), two warpgroups or more, two
 * wgmma dots or more at the top level of its body and none deeper; its
 * first and last such dot. */
static int turns(lw *w, tj_ref *first, tj_ref *last)
{
    int groups = w->nwarps / GROUP_WARPS;
    *first = *last = TJ_NONE;
    if (!w->wgmma_turns || !w->loop || !w->wgmma || w->target != TJ_LOWER_CUDA || groups < 2 || w->nwarps % GROUP_WARPS)
        return 0;
    tj_block_id body = w->loop->src_body;
    int n = 0;
    for (tj_ref d = 1; d < w->src->ninsts; d++) {
        if (!w->src->insts[d].block || lw_defined_outside(w, d, body) || !is_wgmma_dot(w, d))
            continue;
        if (w->src->insts[d].block != body)
            return 0;
        if (!n++)
            *first = d;
        *last = d;
    }
    return n >= 2;
}

/* This thread's warpgroup (hoisted). */
static tj_ref group(lw *w)
{
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref g = lw_cast(w, lw_op2(w, TJ_OP_SHR, lw_warp(w), lw_const_int(w, TJ_DT_I32, 2)), TJ_DT_U32);
    w->hoisting = was;
    return g;
}

/* Named barrier of warpgroup (g + shift) % groups (hoisted). */
static tj_ref barrier_of(lw *w, int64_t shift)
{
    int groups = w->nwarps / GROUP_WARPS, was = w->hoisting;
    w->hoisting = 1;
    tj_ref g = lw_op2(w, TJ_OP_REM, lw_add_imm(w, group(w), shift), lw_const_int(w, TJ_DT_U32, groups));
    tj_ref id = lw_add_imm(w, g, FIRST_BARRIER);
    w->hoisting = was;
    return id;
}

/* Whether this thread is not in warpgroup g, or the iteration is not the
 * first (last: 0) or the last (last: 1). */
static tj_ref unless_edge(lw *w, int64_t g, int last)
{
    lw_scope *s = w->loop;
    tj_ref other = lw_op2(w, TJ_OP_NE, group(w), lw_const_int(w, TJ_DT_U32, g)), inner;
    if (last) { /* iv + step < hi, in i64: no overflow near the i32 limits */
        tj_ref next = lw_op2(w, TJ_OP_ADD, lw_cast(w, s->iv, TJ_DT_I64), lw_cast(w, s->step, TJ_DT_I64));
        inner = lw_op2(w, TJ_OP_LT, next, lw_cast(w, s->hi, TJ_DT_I64));
    } else {
        inner = lw_op2(w, TJ_OP_NE, s->iv, s->lo);
    }
    return lw_or(w, other, inner);
}

/* op at barrier id, where pred (TJ_NONE: every thread). */
static void named_barrier(lw *w, tj_op op, tj_ref id, tj_ref pred)
{
    tj_ref args[3] = {id, lw_const_int(w, TJ_DT_U32, 2 * GROUP_THREADS), pred ? pred : lw_const_int(w, TJ_DT_BOOL, 1)};
    lw_emit(w, op, TJ_TYPE_NONE, args, 3);
}

void lw_wgmma_take_turn(lw *w, tj_ref r)
{
    tj_ref first, last;
    if (turns(w, &first, &last))
        named_barrier(w, TJ_OP_BAR_SYNC, barrier_of(w, 0), r == first ? unless_edge(w, 0, 0) : TJ_NONE);
}

void lw_wgmma_pass_turn(lw *w, tj_ref r)
{
    tj_ref first, last;
    if (turns(w, &first, &last))
        named_barrier(w, TJ_OP_BAR_ARRIVE, barrier_of(w, 1),
                      r == last ? unless_edge(w, w->nwarps / GROUP_WARPS - 1, 1) : TJ_NONE);
}
