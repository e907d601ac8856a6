/* A producer warp for the TMA rings of wgmma (sm_90a; docs/simt.md, "A
 * producer warp"): where a kernel asks (`producer = 1`) and its rings fit,
 * the program gets a warp more, warp P (P = the kernel's warps), that only
 * issues the rings' copies, so that no consumer warp carries the
 * producer's waits and copies between its products.
 *
 * The lowering stays one instruction stream run by every thread. The
 * layouts see P warps: the thread index the lowering computes with is tid
 * & (32 P - 1), so warp P is a replica of warp 0 (w->nthreads stays 32 P;
 * only the program's thread count grows). What warp P must not do is
 * masked where it is emitted (lw_emit): every store, atomic, mbarrier op,
 * TMA copy, named barrier and wgmma op gets `tid < 32 P` (the consumers)
 * in its predicate, except the producer's own part of a loop (lower/ring.c,
 * emitted under w->producing), predicated on warp P's elected lane. It
 * joins every barrier of the program. A store to shared memory (or a copy
 * into it) cannot be masked: a kernel that emits one is refused here
 * (producer_unfit) and lowered again without the warp.
 *
 * The loop body is then the consumers' part (wait for the tile, the
 * products, the release of the tile the wait retired), each a run of one
 * predicate that the PTX generator branches around, and the producer's
 * (wait for the release of the slot, expect_tx, the boxes). On a GPU warp
 * P steps through the loop doing only its part, running ahead until a
 * release stops it; in the SIMT interpreter's lockstep the consumers' part
 * of iteration n comes first, so the release the producer waits for is
 * already there. */
#include "lower/lower.h"

/* Ops whose values warp P would not share with warp 0: a while's
 * condition and the old values of atomics come from loads and owners the
 * replica does not have (control flow would diverge), and ordered accesses
 * order what only the consumers do. */
static int refuses_producer(const tj_kernel *k)
{
    for (tj_ref r = 1; r < k->ninsts; r++) {
        if (!k->insts[r].block)
            continue;
        switch (k->insts[r].op) {
        case TJ_OP_WHILE: case TJ_OP_ATOMIC_ADD: case TJ_OP_ATOMIC_MAX: case TJ_OP_ATOMIC_MIN:
        case TJ_OP_LOAD_ACQUIRE: case TJ_OP_STORE_RELEASE: case TJ_OP_LOAD_RELAXED: case TJ_OP_STORE_RELAXED:
            return 1;
        default: break;
        }
    }
    return 0;
}

void lw_producer_plan(lw *w)
{
    if (w->no_producer || !w->wgmma || w->target != TJ_LOWER_CUDA ||
        tj_config_value(w->src, TJ_PARAM_PRODUCER, 0) != 1 || !lw_ring_any_late(w) || refuses_producer(w->src) ||
        w->nthreads + TJ_WARP_SIZE > TJ_MAX_WARPS * TJ_WARP_SIZE)
        return;
    for (int part = 0; part <= 2; part++) /* lw_tid, lane, warp: they must see the replica */
        if (lw_memo_get(w, LW_MEMO_TID, NULL, part, 0)) {
            lw_error(w, "internal error: thread indices computed before the producer warp was planned");
            return;
        }
    w->producer = 1;
}

/* raw tid `op` 32 P (hoisted, memoized) */
static tj_ref versus_producer(lw *w, tj_op op)
{
    tj_ref p = lw_memo_get(w, LW_MEMO_TID, NULL, LW_TID_VS_PRODUCER, op);
    if (!p) {
        int was = w->hoisting;
        w->hoisting = 1;
        p = lw_op2(w, op, lw_raw_tid(w), lw_const_int(w, TJ_DT_I32, w->nthreads));
        w->hoisting = was;
        lw_memo_put(w, LW_MEMO_TID, NULL, LW_TID_VS_PRODUCER, op, p);
    }
    return p;
}

tj_ref lw_consumers(lw *w) { return versus_producer(w, TJ_OP_LT); }

/* Warp P's elected lane (elect, at the top of the body where the warp is
 * converged: its lane 0), not tid == 32 P: ptxas knows then that one thread
 * runs the copies and takes their operands into uniform registers as they
 * are, where for a compare it moves each one thread at a time (a loop per
 * copy, measured 4-24% slower than thread 0's issue, bench/NOTES.md). */
tj_ref lw_producer_thread(lw *w)
{
    tj_ref p = lw_memo_get(w, LW_MEMO_TID, NULL, LW_TID_PRODUCER, 0);
    if (!p) {
        int was = w->hoisting;
        w->hoisting = 1;
        tj_ref one = lw_emit(w, TJ_OP_ELECT, lw_sty(w, TJ_DT_BOOL), NULL, 0);
        p = lw_and(w, versus_producer(w, TJ_OP_GE), one);
        w->hoisting = was;
        lw_memo_put(w, LW_MEMO_TID, NULL, LW_TID_PRODUCER, 0, p);
    }
    return p;
}

/* The index of op's predicate operand, -1: none to narrow, -2: op writes
 * shared memory and cannot be masked. */
static int pred_operand(tj_op op, uint32_t n)
{
    switch (op) {
    case TJ_OP_ST_GLOBAL: case TJ_OP_ATOM_ADD: case TJ_OP_ATOM_MAX: case TJ_OP_ATOM_MIN: case TJ_OP_ST_RELEASE:
    case TJ_OP_ST_RELAXED: case TJ_OP_BAR_SYNC: case TJ_OP_BAR_ARRIVE: case TJ_OP_WGMMA:
        return 2;
    case TJ_OP_MBAR_INIT: case TJ_OP_MBAR_EXPECT_TX: case TJ_OP_MBAR_WAIT: case TJ_OP_MBAR_ARRIVE:
    case TJ_OP_MBAR_INVAL: case TJ_OP_TMA_LOAD: case TJ_OP_TMA_STORE:
        return (int)n - 1;
    case TJ_OP_WGMMA_FENCE: case TJ_OP_WGMMA_COMMIT: case TJ_OP_WGMMA_WAIT: case TJ_OP_TMA_STORE_COMMIT:
    case TJ_OP_TMA_STORE_WAIT:
        return 0;
    case TJ_OP_ST_SHARED: case TJ_OP_MMA_STORE: case TJ_OP_CP_ASYNC: return -2;
    default: return -1;
    }
}

const tj_ref *lw_producer_mask(lw *w, tj_op op, const tj_ref *args, uint32_t n)
{
    int at = pred_operand(op, n);
    if (at == -1 || w->producing || w->err)
        return args;
    if (at == -2) {
        w->producer_unfit = 1;
        lw_error(w, "a producer warp cannot be kept from '%s'", tj_op_get(op)->name);
        return args;
    }
    if ((uint32_t)at >= n) { /* the op lacks the operand it is masked by: never run it unmasked */
        w->producer_unfit = 1;
        lw_error(w, "internal error: '%s' has no predicate operand to mask a producer warp with", tj_op_get(op)->name);
        return args;
    }
    tj_ref *masked = lw_new_regs(w, n);
    for (uint32_t i = 0; i < n; i++)
        masked[i] = args[i];
    masked[at] = lw_and(w, lw_consumers(w), args[at]);
    return masked;
}
