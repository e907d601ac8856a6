/* Warpgroups taking turns at the tensor cores (FlashAttention-3's
 * ping-pong of two consumer warpgroups; docs/simt.md, "wgmma").
 *
 * In a loop whose body issues its wgmma dots back to back and then works
 * on their results (attention in FlashAttention-3's order: S(j + 1) =
 * Q K(j + 1)^T and O += P(j) V(j), then the softmax of S(j + 1), the
 * groups waited for where first read, lower/wgmma.c), the warpgroups of a
 * program otherwise run in phase: they issue together, wait together and
 * run their softmaxes together on the same schedulers while the tensor
 * cores idle. Taking turns orders the issues: warpgroup g issues the
 * body's products only after warpgroup g - 1 issued its, and warpgroup 0
 * its next iteration's only after the last warpgroup issued. A turn
 * covers every product of an iteration, so the tensor cores, which run
 * groups in issue order, finish warpgroup 0's products a whole turn of
 * products before warpgroup 1's, and warpgroup 0's softmax runs while
 * warpgroup 1's products do.
 *
 * Warpgroup g waits at named barrier 1 + g (bar_sync, 256 threads: its own
 * 128 and the 128 of the warpgroup handing it the turn) before the first
 * dot's wgmma_fence, and arrives at barrier 1 + (g + 1) % G (bar_arrive)
 * after the last dot's wgmma_commit, before the ring's copies (thread 0
 * may wait there for a slot the other warpgroups release). The first turn
 * of all, warpgroup 0's in the first iteration, waits for nobody, and the
 * last hand-over, the last warpgroup's in the last iteration, goes to
 * nobody: both are predicated off, so every phase of every barrier is
 * complete when the loop ends (the SIMT interpreter checks that). The
 * barriers order only issues: results, shared memory and the rings keep
 * their own waits.
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
 * Only where asked: the kernel's `turns = 1` (TJ_PARAM_TURNS) or
 * tj_lower_options.wgmma_turns. Where the body's softmax sits between its
 * products (S, softmax, P V) a turn would cover that softmax too and put
 * the warpgroups in single file; a turn a product, tried on the H200 for
 * that order, made attention slower (2.60 -> 3.17 ms, bench/NOTES.md). */
#include "lower/wgmma_turns.h"

enum { GROUP_WARPS = 4, GROUP_THREADS = 128, FIRST_BARRIER = 1 };

static int is_wgmma_dot(lw *w, tj_ref d)
{
    lw_mma p;
    return w->src->insts[d].op == TJ_OP_DOT && lw_mma_plan(w, d, &p) && p.wg;
}

/* Whether the innermost loop takes turns: asked for (`turns = 1` or
 * tj_lower_options), two warpgroups or more, two wgmma dots or more at the
 * top level of its body and none deeper; its first and last such dot. */
static int turns(lw *w, tj_ref *first, tj_ref *last)
{
    int groups = w->nwarps / GROUP_WARPS;
    *first = *last = TJ_NONE;
    int asked = w->wgmma_turns || tj_config_value(w->src, TJ_PARAM_TURNS, 0) == 1;
    if (!asked || !w->loop || !w->wgmma || w->target != TJ_LOWER_CUDA || groups < 2 || w->nwarps % GROUP_WARPS)
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
    if (turns(w, &first, &last) && r == first)
        named_barrier(w, TJ_OP_BAR_SYNC, barrier_of(w, 0), unless_edge(w, 0, 0));
}

void lw_wgmma_pass_turn(lw *w, tj_ref r)
{
    tj_ref first, last;
    if (turns(w, &first, &last) && r == last)
        named_barrier(w, TJ_OP_BAR_ARRIVE, barrier_of(w, 1), unless_edge(w, w->nwarps / GROUP_WARPS - 1, 1));
}
