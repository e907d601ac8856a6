/* Runs of predicated issues (sm_90a): consecutive instructions of one
 * block under one predicate go inside one branch on it instead of being
 * predicated one by one. Two families make runs:
 * - mbar_wait, mbar_expect_tx and tma_load: the issuing thread's wait for
 *   a slot's release, then the tile (lower/tma.c); and tma_store, its
 *   commit and wait (lower/tma_store.c). ptxas moves each
 *   copy's operands to uniform registers and votes on its predicate, so
 *   every warp would step through the whole run to issue nothing.
 * - wgmma_fence, wgmma, wgmma_commit and wgmma_wait: the consumer warps'
 *   products where a producer warp runs (lower/ring.c). Their .aligned
 *   forms must be executed alike by every thread of a warp; under a
 *   predicate each, ptxas serializes the warpgroup's wgmma pipeline.
 * The projections of a wgmma (its result registers, no code) do not end
 * a run. */
#include "codegen/ptx/ptx.h"

enum { WARP = 32 };

static tj_ref issue_pred(const tj_kernel *k, tj_ref r)
{
    const tj_inst *in = &k->insts[r];
    switch (in->op) {
    case TJ_OP_MBAR_EXPECT_TX:
    case TJ_OP_MBAR_WAIT: return in->nargs == 3 ? in->args[2] : TJ_NONE;
    case TJ_OP_TMA_LOAD: return in->nargs == 6 ? in->args[5] : TJ_NONE;
    case TJ_OP_TMA_STORE: return in->nargs == 5 ? in->args[4] : TJ_NONE;
    case TJ_OP_TMA_STORE_COMMIT:
    case TJ_OP_TMA_STORE_WAIT: return in->nargs == 1 ? in->args[0] : TJ_NONE;
    case TJ_OP_WGMMA_FENCE:
    case TJ_OP_WGMMA_COMMIT:
    case TJ_OP_WGMMA_WAIT: return in->nargs == 1 ? in->args[0] : TJ_NONE;
    case TJ_OP_WGMMA: return in->nargs >= 3 ? in->args[2] : TJ_NONE;
    default: return TJ_NONE;
    }
}

static int transparent(const tj_kernel *k, tj_ref r)
{
    const tj_inst *in = &k->insts[r];
    return in->op == TJ_OP_PROJ && in->nargs == 1 && k->insts[in->args[0]].op == TJ_OP_WGMMA;
}

/* The predicate of the issue next to index i of block b in direction dir
 * (TJ_NONE at the block's end), past projections of a wgmma. */
static tj_ref neighbour_pred(const tj_kernel *k, const tj_block *b, uint32_t i, int dir)
{
    for (int64_t j = (int64_t)i + dir; j >= 0 && j < (int64_t)b->ninsts; j += dir)
        if (!transparent(k, b->insts[j]))
            return issue_pred(k, b->insts[j]);
    return TJ_NONE;
}

/* Whether pred is the same in the 32 threads of every warp: tid < C with
 * C whole warps (the consumers of a producer warp, lower/producer.c). Its
 * branch is then `bra.uni`: ptxas knows the warp stays converged, so the
 * code after it keeps the uniform datapath (values in uniform registers;
 * without it each later tma_load's operands are moved to uniform registers
 * one thread at a time). */
static int warp_uniform(const tj_kernel *k, tj_ref pred)
{
    const tj_inst *p = &k->insts[pred], *c = p->nargs == 2 ? &k->insts[p->args[1]] : NULL;
    return p->op == TJ_OP_LT && c && k->insts[p->args[0]].op == TJ_OP_TID && c->op == TJ_OP_CONST &&
           c->imm >= 0 && c->imm % WARP == 0;
}

int px_emit_in_run(ptx_emitter *e, tj_ref r, int (*emit)(ptx_emitter *, tj_ref))
{
    const tj_kernel *k = e->k;
    tj_ref pred = issue_pred(k, r);
    int first = 1, last = 1;
    if (pred) {
        const tj_block *b = &k->blocks[k->insts[r].block];
        uint32_t i = 0;
        while (i < b->ninsts && b->insts[i] != r)
            i++;
        first = neighbour_pred(k, b, i, -1) != pred;
        last = neighbour_pred(k, b, i, 1) != pred;
    }
    if (pred && first) {
        e->run_skip = px_new_label(e);
        px_ins(e, "@!%s bra%s $L%u", RN(px_val(e, pred, 0)), warp_uniform(k, pred) ? ".uni" : "", e->run_skip);
    }
    int rc = emit(e, r);
    if (pred && last)
        px_label(e, e->run_skip);
    return rc;
}
