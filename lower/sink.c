/* The last step of the lowering: elementwise arithmetic moves down its
 * block to just before its first use, so that a tile's epilogue runs one
 * element's chain after another instead of one op over every register
 * after another (docs/simt.md, "Lowering").
 *
 * The lowering emits an elementwise op for all of a thread's registers at
 * once, so each intermediate of `gelu(acc + bias)` is live for all 128
 * accumulators of a 128 x 256 wgmma tile; ptxas did not undo that order
 * (255 registers and spills, where the plain product takes 183). Moved,
 * each element's values die at its store.
 *
 * Only pure elementwise ops and packs move, and only past each other,
 * past plain memory accesses (the stores and loads of an epilogue) and
 * the instructions the lowering marked passable (lw_sink_through: a TMA
 * store's barrier before its staging and, in a loop's epilogue, thread 0's
 * wait for the previous copies before it, lower/tma_store.c, which would
 * otherwise hold the whole chain above them): every
 * other op (other barriers, mbarrier and TMA ops, the wgmma family, named
 * barriers, atomics, regions, constants: the hoisted values at the body's
 * start stay in order) is a wall, so the runs and fences the lowering
 * placed are kept as they are. A use inside a nested region
 * counts at the instruction that owns the region; a value with no use in
 * its block stops at the next wall. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

static int movable(const tj_kernel *k, tj_ref r)
{
    tj_op op = k->insts[r].op;
    uint32_t f = tj_op_get(op)->flags;
    return ((f & TJ_OPF_PURE) && (f & TJ_OPF_ELEM)) || op == TJ_OP_PACK || op == TJ_OP_EXTRACT;
}

static int marked(const lw *w, tj_ref r)
{
    for (uint32_t i = 0; i < w->nsink_through; i++)
        if (w->sink_through[i] == r)
            return 1;
    return 0;
}

static int passable(const lw *w, tj_ref r)
{
    tj_op op = w->dst->insts[r].op;
    return movable(w->dst, r) || op == TJ_OP_ST_GLOBAL || op == TJ_OP_LD_GLOBAL || op == TJ_OP_LD_SHARED ||
           op == TJ_OP_ST_SHARED || marked(w, r);
}

void lw_sink_through(lw *w, tj_ref inst)
{
    if (w->nsink_through < LW_MAX_SINK_THROUGH) /* else it stays a wall: only the schedule differs */
        w->sink_through[w->nsink_through++] = inst;
}

/* dest[x] = min(dest[x], at) for every operand x of r and of the
 * instructions of r's regions that is placed in this block (pos). */
static void note_uses(const tj_kernel *k, tj_ref r, uint32_t at, const uint32_t *pos, uint32_t *dest)
{
    const tj_inst *in = &k->insts[r];
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_ref x = in->args[a];
        if (x && pos[x] != UINT32_MAX && at < dest[x])
            dest[x] = at;
    }
    for (int g = 0; g < 2; g++) {
        const tj_block *b = in->region[g] ? &k->blocks[in->region[g]] : NULL;
        for (uint32_t i = 0; b && i < b->ninsts; i++)
            note_uses(k, b->insts[i], at, pos, dest);
    }
}

typedef struct sink_key {
    uint32_t before; /* the position it goes just before (n: the end) */
    uint32_t wall;   /* 0: moved there, 1: the instruction at `before` itself */
    uint32_t pos;    /* its position now: ties keep the order */
} sink_key;

static int key_cmp(const void *pa, const void *pb)
{
    const sink_key *a = pa, *b = pb;
    if (a->before != b->before)
        return a->before < b->before ? -1 : 1;
    if (a->wall != b->wall)
        return a->wall < b->wall ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static void sink_block(const lw *w, tj_block_id bid, uint32_t *pos, uint32_t *dest, sink_key *keys)
{
    tj_kernel *k = w->dst;
    tj_block *b = &k->blocks[bid];
    uint32_t n = b->ninsts;
    for (uint32_t i = 0; i < n; i++) {
        pos[b->insts[i]] = i;
        dest[b->insts[i]] = n;
    }
    /* from the end, so that every user of an op has its place first: the
     * op goes before the earliest of those, never past the next wall */
    uint32_t wall = n;
    for (uint32_t i = n; i-- > 0;) {
        tj_ref r = b->insts[i];
        if (movable(k, r)) {
            keys[i] = (sink_key){dest[r] < wall ? dest[r] : wall, 0, i};
        } else {
            keys[i] = (sink_key){i, 1, i};
            if (!passable(w, r))
                wall = i;
        }
        note_uses(k, r, keys[i].before, pos, dest);
    }
    for (uint32_t i = 0; i < n; i++)
        pos[b->insts[i]] = UINT32_MAX;
    /* an op's `before` is at most each of its users' (and the users of a
     * tie come later in the block), so every value is still defined
     * before its uses */
    qsort(keys, n, sizeof *keys, key_cmp);
    tj_ref *order = tj_alloc(k->ctx, sizeof *order * (n + 1));
    for (uint32_t i = 0; i < n; i++)
        order[i] = b->insts[keys[i].pos];
    memcpy(b->insts, order, sizeof *order * n);
}

void lw_sink_elementwise(lw *w)
{
    tj_kernel *k = w->dst;
    uint32_t *pos = tj_alloc(w->c, sizeof *pos * (k->ninsts + 1));
    uint32_t *dest = tj_alloc(w->c, sizeof *dest * (k->ninsts + 1));
    uint32_t most = 0;
    for (uint32_t b = 1; b < k->nblocks; b++)
        most = k->blocks[b].ninsts > most ? k->blocks[b].ninsts : most;
    sink_key *keys = tj_alloc(w->c, sizeof *keys * (most + 1));
    memset(pos, 0xff, sizeof *pos * (k->ninsts + 1));
    for (uint32_t b = 1; b < k->nblocks; b++)
        if (b != k->grid)
            sink_block(w, b, pos, dest, keys);
}
