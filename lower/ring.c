/* Copy rings: operands of a dot that the prefetch pass loads `d = stages -
 * 1` iterations ahead go from global to shared memory by asynchronous
 * copies (cp_async), into a ring of S = d + 1 slots, instead of through
 * registers (docs/simt.md, "Copy rings"). The loop carries nothing for
 * them: iteration n reads slot n % S, written by the copies issued d
 * iterations earlier.
 *
 *     before the loop:  for j < d: copy tile j -> slot j; commit
 *     iteration n:      wait until at most d - 1 groups are in flight
 *                       barrier
 *                       the dot loads its first fragments from slot n % S
 *                       copy tile n + d -> slot (n + d) % S; commit
 *                       the dot's products (and the rest of its loads)
 *     after the loop:   wait for every group
 *
 * At the wait of iteration n, tiles 0 .. n + d - 1 have been committed in
 * that order, so at most d - 1 in flight means tile n has landed; the
 * barrier makes every thread's copies of it visible, and it is also the
 * point every warp passes after reading slot (n - 1) % S = (n + d) % S in
 * iteration n - 1, so the copies that overwrite it come after. One barrier
 * per iteration for every ring of the loop, none for staging, and no
 * registers hold tiles in flight. The copies go after the first fragment
 * loads (lw_ring_issue) so that their address arithmetic runs while those
 * loads are in flight, not in front of them. The copies of the last d
 * iterations read past the loop's range: the prefetch pass bounds-checks
 * the moving axes, so those past the tensor's end read nothing (a copy of
 * 0 bytes).
 *
 * A dot on wgmma (lower/wgmma.c) reads its slots asynchronously: the slots
 * hold its swizzled tiles (lw_copy_async with the tile), a
 * fence_proxy_async between the wait and the barrier hands the copies'
 * bytes to the tensor cores, and where its group stays in flight into the
 * next iteration the cp_async ring has S = d + 2 slots: the copies of
 * iteration n go to the slot of tile n - 2, whose group every thread
 * waited for before the barrier of iteration n.
 *
 * A dot on FMAs (lower/dot.c, lw_fma_ring_plan) reads its slots as it
 * reads staged operands, one element a k step, so the slots of its a are
 * rows of k padded by 16 bytes, of its b rows of n.
 *
 * Where every ring of a loop feeds wgmma and its loads fit TMA boxes
 * (lower/tma.c), thread 0 copies the tiles by tma_load instead. Slot s has
 * two mbarriers: "full", which the copies of its tile complete, and
 * "empty", on which every warp arrives once per dot of the loop when its
 * wgmma_wait retired the group that read the slot (the consumer release):
 *
 *     before the loop:  init full (count 1) and empty (count warps x dots); fence; barrier
 *                       for j < d, tile j in range: expect_tx(full j); tma tile j
 *     iteration n:      wait for parity (n / S) % 2 of full[n % S]
 *                       the dot's products on slot n % S; commit
 *                       tile t = n + d in range, thread 0: wait for parity (t / S + 1) % 2
 *                       of empty[t % S]; expect_tx(full[t % S]); tma tile t
 *                       wgmma_wait {p}; lane 0 of each warp, n >= p: arrive on empty[(n - p) % S]
 *     after the loop:   barrier; invalidate the mbarriers
 *
 * where the group stays in flight (p = 1: a carried accumulator, both
 * operands in the loop's rings) the refill comes after the arrival, so
 * that tile n + d goes into the slot of tile n - 1 that the wait just
 * retired, and S = d + 1 slots keep a group in flight:
 *
 *     iteration n:      wait for full[n % S]; the products on slot n % S; commit
 *                       wgmma_wait {1}; lane 0 of each warp, n >= 1: arrive on empty[(n - 1) % S]
 *                       tile t = n + d in range, thread 0: wait for the release of tile
 *                       t - S = n - 1; expect_tx(full[t % S]); tma tile t
 *
 * Thread 0 then waits for the other warps' retirement of group n - 1 while
 * its own group n runs.
 *
 * No barrier of all warps is left in the loop: a warp waits only for the
 * tile it multiplies, and thread 0 only for the release of the tile its
 * copies overwrite, tile t - S, whose phase of empty is (t - S) / S (a
 * fresh mbarrier counts as having completed the phase of parity 1, so the
 * first S tiles pass). Neither wait can see a later phase than the one it
 * means: the next phase of full[s] needs thread 0's copies of tile n + S,
 * issued after every warp released tile n, and the next of empty[s] needs
 * tile t, issued after this wait. The barrier after the loop comes after
 * every warp's last wait and arrival, so the invalidation follows them.
 * Tiles past the loop's range are not copied (each tile issued is awaited
 * in its iteration). */
#include <string.h>

#include "lower/lower.h"
#include "passes/pass_util.h"

struct lw_ring {
    tj_ref loop, dot;   /* Tile IR */
    int operand;        /* 0: a, 1: b (the x of b = trans(x)) */
    uint32_t first;     /* carried values first .. first + depth - 1 are its slots */
    uint32_t depth;     /* d: tiles in flight */
    tj_ref ahead;       /* the load of tile n + d, in the body */
    int64_t ld;         /* elements between rows of a slot (the dot's staging) */
    uint32_t slot_bytes;
    uint32_t base;      /* shared offset of slot 0, while the loop is lowered */
    int wg;             /* the dot runs on wgmma: slots hold `tile` (lower/wgmma_smem.c) */
    lw_wg_tile tile;
    uint32_t nslots;    /* depth + 1, or depth + 2 when the dot's wgmma group stays in
                           flight into the next iteration (it still reads its slot) and
                           the copies are cp_async, or the loop's warpgroups take turns
                           (turn_slots) */
    int keeps_group;    /* the dot's wgmma group stays in flight into the next iteration */
    int tma;            /* the loop's rings land by TMA (lower/tma.c) */
    uint32_t bars;      /* tma: shared offset of slot 0's "full" mbarrier, while the loop is lowered;
                           the S "empty" ones follow the S full ones */
};

enum { MAX_RINGS = 64 };

/* ---- finding rings ---------------------------------------------------------- */

static uint32_t *use_counts(const tj_kernel *k)
{
    uint32_t *n = tj_alloc(k->ctx, sizeof *n * (k->ninsts + 1));
    for (tj_ref r = 1; r < k->ninsts; r++)
        for (uint32_t a = 0; k->insts[r].block && a < k->insts[r].nargs; a++)
            if (k->insts[r].args[a] < k->ninsts)
                n[k->insts[r].args[a]]++;
    return n;
}

/* Carried index of v when it is a carried argument of body, else -1. */
static int64_t carried_index(const tj_kernel *k, tj_ref v, tj_block_id body)
{
    const tj_inst *in = &k->insts[v];
    return in->op == TJ_OP_ARG && in->block == body && in->imm > 0 ? in->imm - 1 : -1;
}

/* Whether the loop's results first .. first + depth - 1 are unused. */
static int results_unused(const tj_kernel *k, tj_ref loop, uint32_t first, uint32_t depth)
{
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        if (in->block && in->op == TJ_OP_PROJ && in->args[0] == loop && in->imm >= first &&
            in->imm < (int64_t)(first + depth))
            return 0;
    }
    return 1;
}

/* Load r of a ring of dot plan p: copyable, of the staged tile's shape. */
static int fits_slot(lw *w, tj_ref r, const lw_mma *p, int64_t rows, int64_t cols, const uint32_t *uses)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    return in->op == TJ_OP_LOAD && uses[r] == 1 && ti->rank == 2 && ti->dtype == p->in && ti->shape[0] == rows &&
           ti->shape[1] == cols && lw_async_copy_bytes(w, r) > 0;
}

/* The ring of operand o of dot d in loop (plan p), when its value is slot
 * 0 of a chain of carried values the prefetch pass made: slot j + 1 yields
 * into slot j, the load of the body into the last, loads before the loop
 * start them. */
static int find_ring(lw *w, tj_ref loop, tj_ref d, int o, const lw_mma *p, const uint32_t *uses, lw_ring *out)
{
    const tj_kernel *k = w->src;
    const tj_inst *li = &k->insts[loop];
    tj_block_id body = li->region[0];
    const tj_block *blk = &k->blocks[body];
    tj_ref y = blk->insts[blk->ninsts - 1], v = k->insts[d].args[o];
    int bt = o == 1 && p->bt;
    if (bt) {
        if (uses[v] != 1)
            return 0;
        v = k->insts[v].args[0];
    }
    int64_t first = carried_index(k, v, body);
    uint32_t ncarried = li->nargs - 3;
    if (first < 0 || uses[v] != 1 || k->insts[y].op != TJ_OP_YIELD || k->insts[y].nargs != ncarried)
        return 0;
    int64_t rows = o == 0 ? p->m : bt ? p->n : p->k, cols = o == 0 || bt ? p->k : p->n;
    uint32_t depth = 0;
    tj_ref next = TJ_NONE;
    for (uint32_t at = (uint32_t)first; at < ncarried; at++) {
        tj_ref init = li->args[3 + at];
        if (k->insts[init].block != li->block || !fits_slot(w, init, p, rows, cols, uses))
            return 0;
        depth++;
        next = k->insts[y].args[at];
        if (carried_index(k, next, body) != (int64_t)at + 1)
            break;
        if (uses[next] != 1)
            return 0;
    }
    if (!next || k->insts[next].block != body || !fits_slot(w, next, p, rows, cols, uses) ||
        depth > TJ_CP_ASYNC_MAX_PENDING || !results_unused(k, loop, (uint32_t)first, depth))
        return 0;
    int64_t ld = o == 0 ? p->lda : p->ldb;
    *out = (lw_ring){loop, d, o, (uint32_t)first, depth, next, ld,
                     (uint32_t)((rows * ld * p->size + 15) / 16 * 16), 0, p->wg, o == 0 ? p->wa : p->wb, depth + 1,
                     0, 0, 0};
    if (p->wg)
        out->slot_bytes = out->tile.bytes;
    return 1;
}

/* Whether wgmma dot d carries its accumulators through the loop as
 * fragments (lw_mma_carried): its group then stays in flight into the next
 * iteration (lower/wgmma.c), reading its slots while the next copies go. */
static int pipelined(lw *w, tj_ref loop, tj_ref d)
{
    uint32_t ncarried = w->src->insts[loop].nargs - 3;
    lw_mma p;
    for (uint32_t k = 0; k < ncarried; k++)
        if (lw_mma_carried(w, loop, k, &p) == d)
            return p.wg;
    return 0;
}

/* Whether the rings [start, nrings) of a loop can all land by TMA: on
 * wgmma, with slots alike, every load of theirs fitting its boxes, each
 * ring one tensor map of the kernel's few. */
static int tma_loop(lw *w, uint32_t start)
{
    const tj_kernel *k = w->src;
    if (!w->wgmma || w->no_tma || start == w->nrings || w->nrings > TJ_MAX_TENSOR_MAPS)
        return 0;
    for (uint32_t i = start; i < w->nrings; i++) {
        const lw_ring *g = &w->rings[i];
        if (!g->wg || g->nslots != w->rings[start].nslots || !lw_tma_fits(w, g->ahead, &g->tile))
            return 0;
        for (uint32_t j = 0; j < g->depth; j++)
            if (!lw_tma_fits(w, k->insts[g->loop].args[3 + g->first + j], &g->tile))
                return 0;
    }
    return 1;
}

/* The dots the loop's rings feed: each releases a slot once per warp. */
static uint32_t ring_dots(const lw *w, tj_ref loop)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->nrings; i++) {
        int seen = w->rings[i].loop != loop;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = w->rings[j].loop == loop && w->rings[j].dot == w->rings[i].dot;
        n += !seen;
    }
    return n;
}

/* Shared memory of the rings [start, nrings) (each wgmma ring's slots 1024-aligned). */
static uint64_t ring_bytes(const lw *w, uint32_t start)
{
    uint64_t bytes = 0;
    for (uint32_t i = start; i < w->nrings; i++)
        bytes += (uint64_t)w->rings[i].nslots * w->rings[i].slot_bytes + (w->rings[i].wg ? 1024 : 0);
    return bytes;
}

/* The wgmma dots of a carried accumulator with both operands in rings
 * [start, nrings) keep their group in flight into the next iteration.
 * With `late` (TMA rings of one dot) the slot a group still reads is
 * refilled only after its release (lw_ring_refills_late), so S = d + 1
 * slots do. Otherwise (cp_async, whose only release is the barrier at the
 * top of an iteration, or TMA rings of several dots, whose refill goes
 * before the later dots' releases) the group's slot needs one more, taken
 * only where it costs no program an SM could hold by shared memory
 * (measured: the group in flight did not pay for halving them,
 * bench/NOTES.md). */
static void keep_groups(lw *w, tj_ref loop, uint32_t start, int late)
{
    uint64_t bytes = ring_bytes(w, start);
    for (uint32_t i = start; i + 1 < w->nrings; i++) {
        lw_ring *a = &w->rings[i], *b = &w->rings[i + 1];
        if (a->dot != b->dot || !a->wg || !pipelined(w, loop, a->dot))
            continue;
        uint64_t more = a->slot_bytes + b->slot_bytes;
        int extra = !late && bytes + more <= w->smem_limit && w->smem_limit / bytes == w->smem_limit / (bytes + more);
        if (!late && !extra)
            continue;
        a->keeps_group = b->keeps_group = 1;
        a->nslots += (uint32_t)extra;
        b->nslots += (uint32_t)extra;
        bytes += extra ? more : 0;
    }
}

enum { ROOM_KEPT = 64 * 1024 }; /* beside the rings: the loop's pinned operands and staging */

/* TMA rings of several dots whose warpgroups take turns (lower/wgmma_turns.c):
 * the refill of tile n + d waits for every warp's release of tile n + d - S,
 * at the last dot's wait of that iteration. With S = d + 1 that is tile
 * n - 1, which the warpgroup a turn behind releases only at the end of its
 * iteration n - 1: thread 0, in the warpgroup ahead, would wait for it there
 * and pull the two back in phase. One slot more (S = d + 2: the release of
 * tile n - 2) where shared memory leaves ROOM_KEPT beside the rings. */
static void turn_slots(lw *w, tj_ref loop, uint32_t start)
{
    int asked = w->wgmma_turns || tj_config_value(w->src, TJ_PARAM_TURNS, 0) == 1;
    if (!asked || start == w->nrings || !w->rings[start].tma || ring_dots(w, loop) < 2)
        return;
    uint64_t more = 0;
    for (uint32_t i = start; i < w->nrings; i++)
        more += w->rings[i].slot_bytes;
    if (ring_bytes(w, start) + more + ROOM_KEPT > w->smem_limit)
        return;
    for (uint32_t i = start; i < w->nrings; i++)
        w->rings[i].nslots++;
}

/* Loops with a constant positive step (iteration numbers by a shift or a
 * multiplication, not a division). */
static void ring_loop(lw *w, tj_ref loop, const uint32_t *uses)
{
    const tj_kernel *k = w->src;
    tj_block_id body = tj_region_of(k, loop, 0);
    const tj_block *blk = body ? &k->blocks[body] : NULL;
    uint32_t start = w->nrings;
    tj_cval step;
    if (!blk || blk->ninsts < 2 || !tj_const_value(k, k->insts[loop].args[2], &step) || step.i <= 0 ||
        step.i > INT32_MAX)
        return;
    for (uint32_t i = 0; i < blk->ninsts && w->nrings < MAX_RINGS; i++) {
        tj_ref d = blk->insts[i];
        lw_mma p;
        if (k->insts[d].op != TJ_OP_DOT || !(lw_mma_plan(w, d, &p) || lw_fma_ring_plan(w, d, &p)) || p.batch != 1)
            continue;
        for (int o = 0; o < 2; o++) {
            lw_ring *g = &w->rings[w->nrings];
            if (w->nrings < MAX_RINGS && find_ring(w, loop, d, o, &p, uses, g))
                w->nrings++;
        }
    }
    /* one wait serves the loop's rings when they run equally far ahead */
    uint64_t bytes = ring_bytes(w, start);
    for (uint32_t i = start; i < w->nrings; i++)
        if (w->rings[i].depth != w->rings[start].depth || bytes > w->smem_limit)
            w->nrings = start;
    int late = tma_loop(w, start) && ring_dots(w, loop) == 1;
    keep_groups(w, loop, start, late);
    int tma = late || tma_loop(w, start); /* slots alike after the extra ones */
    for (uint32_t i = start; i < w->nrings; i++)
        w->rings[i].tma = tma;
    turn_slots(w, loop, start);
}

void lw_ring_plan(lw *w)
{
    const tj_kernel *k = w->src;
    w->ring_of = tj_alloc(w->c, sizeof *w->ring_of * (k->ninsts + 1));
    w->rings = tj_alloc(w->c, sizeof *w->rings * MAX_RINGS);
    if (w->target != TJ_LOWER_CUDA || w->no_rings)
        return;
    uint32_t *uses = use_counts(k);
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && k->insts[r].op == TJ_OP_FOR)
            ring_loop(w, r, uses);
    for (uint32_t i = 0; i < w->nrings; i++) {
        const lw_ring *g = &w->rings[i];
        const tj_inst *li = &k->insts[g->loop];
        for (uint32_t j = 0; j < g->depth; j++)
            w->ring_of[li->args[3 + g->first + j]] = i + 1;
        w->ring_of[g->ahead] = i + 1;
        if (g->operand == 1 && k->insts[k->insts[g->dot].args[1]].op == TJ_OP_PERMUTE)
            w->ring_of[k->insts[g->dot].args[1]] = i + 1; /* b = trans(slot 0): the dot reads the slot */
    }
}

/* ---- lowering ------------------------------------------------------------------ */

int lw_ring_slot(const lw *w, tj_ref loop, uint32_t k)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].loop == loop && k >= w->rings[i].first && k < w->rings[i].first + w->rings[i].depth)
            return 1;
    return 0;
}

int lw_ring_keeps_group(const lw *w, tj_ref dot)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].dot == dot && w->rings[i].keeps_group)
            return 1;
    return 0;
}

int lw_ring_refills_late(const lw *w, tj_ref dot)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].dot == dot && w->rings[i].keeps_group && w->rings[i].tma &&
            w->rings[i].nslots == w->rings[i].depth + 1)
            return 1;
    return 0;
}

int lw_ring_any_late(const lw *w)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (lw_ring_refills_late(w, w->rings[i].dot))
            return 1;
    return 0;
}

int lw_ring_feeds(const lw *w, tj_ref dot)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].dot == dot)
            return 1;
    return 0;
}

int lw_ring_holds(const lw *w, tj_ref dot, int operand)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].dot == dot && w->rings[i].operand == operand)
            return 1;
    return 0;
}

static void commit(lw *w) { lw_emit(w, TJ_OP_CP_ASYNC_COMMIT, TJ_TYPE_NONE, NULL, 0); }

static void wait_for(lw *w, int64_t pending)
{
    tj_ref r = lw_emit(w, TJ_OP_CP_ASYNC_WAIT, TJ_TYPE_NONE, NULL, 0);
    w->dst->insts[r].imm = pending;
}

static int64_t depth_of(const lw *w, tj_ref loop)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].loop == loop)
            return w->rings[i].depth;
    return 0;
}

/* Whether a ring of the loop feeds wgmma (async-proxy reads). */
static int feeds_wgmma(const lw *w, tj_ref loop)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].loop == loop && w->rings[i].wg)
            return 1;
    return 0;
}

static const lw_wg_tile *tile_of(const lw_ring *g) { return g->wg ? &g->tile : NULL; }

/* ---- TMA (lower/tma.c) ---- */

static const lw_ring *first_ring(const lw *w, tj_ref loop)
{
    for (uint32_t i = 0; i < w->nrings; i++)
        if (w->rings[i].loop == loop)
            return &w->rings[i];
    return NULL;
}

static int by_tma(const lw *w, tj_ref loop)
{
    const lw_ring *g = first_ring(w, loop);
    return g && g->tma;
}

int lw_ring_barrier(const lw *w, tj_ref loop) { return depth_of(w, loop) > 0 && !by_tma(w, loop); }

int lw_ring_tma(const lw *w, tj_ref loop) { return by_tma(w, loop); }

enum { MBAR_BYTES = 8 };

/* The full (empty = 0) or empty (empty = 1) mbarrier of slot s (u32) of the
 * loop's rings. */
static tj_ref slot_bar(lw *w, const lw_ring *g, tj_ref s, int empty)
{
    uint32_t at = g->bars + (empty ? g->nslots * MBAR_BYTES : 0);
    return lw_add_imm(w, lw_mul_imm(w, lw_cast(w, s, TJ_DT_U32), MBAR_BYTES), at);
}

static tj_ref const_bar(lw *w, const lw_ring *g, uint32_t s, int empty)
{
    return lw_const_int(w, TJ_DT_U32, g->bars + ((empty ? g->nslots : 0) + s) * MBAR_BYTES);
}

/* Tile `ahead` iterations past the one at `from` is in the loop's range
 * (from + ahead * step < hi, in i64: the step is a positive constant). */
static tj_ref in_range(lw *w, tj_ref from, int64_t ahead, tj_ref step, tj_ref hi)
{
    tj_ref at = lw_op2(w, TJ_OP_ADD, lw_cast(w, from, TJ_DT_I64), lw_mul_imm(w, lw_cast(w, step, TJ_DT_I64), ahead));
    return lw_op2(w, TJ_OP_LT, at, lw_cast(w, hi, TJ_DT_I64));
}

/* Thread 0, where the tile is in range: the wait for the slot's release
 * (where `empty` is not TJ_NONE: the phase of that parity of it), one
 * arrival expecting every ring's bytes on the slot's full mbarrier, then
 * the boxes of each ring's load, all their operands computed first (one
 * run for the PTX generator's branch). */
static void tma_tile(lw *w, tj_ref loop, tj_ref bar, tj_ref empty, tj_ref parity, tj_ref slot_shift_of, int64_t j,
                     tj_ref pred)
{
    lw_tma_box boxes[2 * LW_TMA_MAX_BOXES];
    int n = 0;
    uint32_t bytes = 0;
    const tj_inst *li = &w->src->insts[loop];
    for (uint32_t i = 0; i < w->nrings && !w->err; i++) {
        const lw_ring *g = &w->rings[i];
        if (g->loop != loop)
            continue;
        if (n > LW_TMA_MAX_BOXES) {
            lw_error(w, "internal error: a loop's TMA rings take more than %d boxes a tile", LW_TMA_MAX_BOXES);
            return;
        }
        tj_ref load = j < 0 ? g->ahead : li->args[3 + g->first + (uint32_t)j];
        tj_ref shift = slot_shift_of ? lw_mul_imm(w, slot_shift_of, g->slot_bytes)
                                     : lw_const_int(w, TJ_DT_U32, j * g->slot_bytes);
        int got = lw_tma_boxes(w, load, &g->tile, g->base, shift, boxes + n);
        if (got < 0)
            return;
        n += got;
        bytes += lw_tma_tile_bytes(&g->tile);
    }
    tj_ref tx = lw_const_int(w, TJ_DT_U32, bytes);
    if (empty)
        lw_mbarrier(w, TJ_OP_MBAR_WAIT, empty, parity, pred);
    lw_mbarrier(w, TJ_OP_MBAR_EXPECT_TX, bar, tx, pred);
    lw_tma_issue(w, boxes, n, bar, pred);
}

/* Before the loop: the slots' mbarriers, then tiles 0 .. d - 1 (into
 * fresh slots: no release to wait for). */
static void tma_begin(lw *w, tj_ref loop)
{
    const tj_inst *li = &w->src->insts[loop];
    const lw_ring *g = first_ring(w, loop);
    tj_ref who = lw_tma_thread(w), one = lw_const_int(w, TJ_DT_U32, 1);
    tj_ref releases = lw_const_int(w, TJ_DT_U32, (int64_t)w->nwarps * ring_dots(w, loop));
    for (uint32_t s = 0; s < g->nslots; s++) {
        lw_mbarrier(w, TJ_OP_MBAR_INIT, const_bar(w, g, s, 0), one, who);
        lw_mbarrier(w, TJ_OP_MBAR_INIT, const_bar(w, g, s, 1), releases, who);
    }
    lw_emit(w, TJ_OP_FENCE_PROXY_ASYNC, TJ_TYPE_NONE, NULL, 0); /* the inits, to the copies' async proxy */
    lw_barrier(w);
    tj_ref lo = w->vals[li->args[0]].regs[0], hi = w->vals[li->args[1]].regs[0], step = w->vals[li->args[2]].regs[0];
    for (int64_t j = 0; j < (int64_t)g->depth; j++)
        tma_tile(w, loop, const_bar(w, g, (uint32_t)j, 0), TJ_NONE, TJ_NONE, TJ_NONE, j,
                 lw_and(w, who, in_range(w, lo, j, step, hi)));
}

/* Slot s (u32) of ring g as a byte shift from its base. */
static tj_ref slot_shift(lw *w, const lw_ring *g, tj_ref s)
{
    return lw_mul_imm(w, lw_cast(w, s, TJ_DT_U32), g->slot_bytes);
}

void lw_ring_begin(lw *w, tj_ref loop)
{
    int64_t d = depth_of(w, loop);
    if (!d)
        return;
    w->rings_any = 1;
    if (w->smem_dirty) /* reads from before the loop may pend where the rings go */
        lw_barrier(w);
    uint32_t top = w->smem_pinned;
    for (uint32_t i = 0; i < w->nrings; i++) {
        lw_ring *g = &w->rings[i];
        if (g->loop != loop)
            continue;
        if (g->wg) /* swizzled tiles start at 1024-byte boundaries */
            top = (top + 1023) / 1024 * 1024;
        g->base = top;
        top += g->nslots * g->slot_bytes;
    }
    uint32_t bars = (top + MBAR_BYTES - 1) / MBAR_BYTES * MBAR_BYTES;
    if (by_tma(w, loop)) /* full and empty of each slot */
        top = bars + 2 * first_ring(w, loop)->nslots * MBAR_BYTES;
    for (uint32_t i = 0; i < w->nrings; i++)
        w->rings[i].bars = w->rings[i].loop == loop ? bars : w->rings[i].bars;
    if (top > w->smem_limit) {
        w->smem_overflow = 1;
        lw_error(w, "copy rings need %u bytes of shared memory, more than the %u a program can have", top,
                 w->smem_limit);
        return;
    }
    w->smem_pinned = top;
    if (top > w->smem_bytes)
        w->smem_bytes = top;
    if (by_tma(w, loop)) {
        tma_begin(w, loop);
        return;
    }
    const tj_inst *li = &w->src->insts[loop];
    for (int64_t j = 0; j < d; j++) {
        for (uint32_t i = 0; i < w->nrings; i++) {
            const lw_ring *g = &w->rings[i];
            if (g->loop == loop)
                lw_copy_async(w, li->args[3 + g->first + (uint32_t)j], g->base,
                              lw_const_int(w, TJ_DT_U32, j * g->slot_bytes), g->ld, tile_of(g));
        }
        commit(w);
    }
}

void lw_ring_end(lw *w, tj_ref loop)
{
    if (by_tma(w, loop)) { /* every copy was awaited in its iteration */
        const lw_ring *g = first_ring(w, loop);
        lw_barrier(w); /* after every warp's last wait and release */
        for (uint32_t s = 0; s < 2 * g->nslots; s++)
            lw_mbarrier(w, TJ_OP_MBAR_INVAL, const_bar(w, g, s, 0), TJ_NONE, lw_tma_thread(w));
        w->smem_dirty = 1; /* others' writes to these bytes wait for a barrier */
    } else if (depth_of(w, loop)) {
        wait_for(w, 0); /* the copies past the end must land before the memory is reused */
    }
}

/* Iteration n of the loop being lowered (u32): iv >= lo and the step is a
 * positive constant (ring_loop). */
static tj_ref iteration(lw *w)
{
    const lw_scope *s = w->loop;
    tj_cval step = {0};
    tj_const_value(w->src, w->src->insts[s->src_loop].args[2], &step);
    tj_ref past = lw_cast(w, lw_op2(w, TJ_OP_SUB, s->iv, s->lo), TJ_DT_U32);
    return lw_op2(w, TJ_OP_DIV, past, lw_const_int(w, TJ_DT_U32, step.i));
}

/* Where tile n + shift of iteration n is among the S slots (-S < shift <
 * S): its slot (n + shift) % S and phase (n + shift) / S, both from the one
 * division of n by S (q, s = n - q S) and a wrap: every slot and phase of
 * an iteration shares that division, where each `%` and `/` of another
 * dividend is a multiply-high sequence of its own. Tile n - 1 of
 * iteration 0 has slot S - 1 and phase 2^32 - 1 (only used predicated
 * off). */
typedef struct ring_pos {
    tj_ref slot, phase; /* u32 */
} ring_pos;

static ring_pos position(lw *w, uint32_t nslots, int64_t shift)
{
    tj_ref n = iteration(w), S = lw_const_int(w, TJ_DT_U32, nslots);
    tj_ref q = lw_op2(w, TJ_OP_DIV, n, S), s = lw_op2(w, TJ_OP_SUB, n, lw_mul_imm(w, q, nslots));
    if (shift == 0)
        return (ring_pos){s, q};
    tj_ref wraps = shift > 0 ? lw_op2(w, TJ_OP_GE, s, lw_const_int(w, TJ_DT_U32, nslots - shift))
                             : lw_op2(w, TJ_OP_LT, s, lw_const_int(w, TJ_DT_U32, -shift));
    int64_t across = shift > 0 ? -(int64_t)nslots : nslots, step = shift > 0 ? 1 : -1;
    return (ring_pos){lw_select(w, wraps, lw_add_imm(w, s, shift + across), lw_add_imm(w, s, shift)),
                      lw_select(w, wraps, lw_add_imm(w, q, step), q)};
}

static tj_ref slot_of(lw *w, int64_t shift, uint32_t nslots) { return position(w, nslots, shift).slot; }

/* The parity of a phase, plus `after`. */
static tj_ref parity(lw *w, tj_ref phase, int64_t after)
{
    return lw_op2(w, TJ_OP_AND, lw_add_imm(w, phase, after), lw_const_int(w, TJ_DT_U32, 1));
}

/* The top of iteration n: tile n awaited and published to every thread
 * (by TMA: to the warp that waited, the only one that reads it through
 * its own wgmma); the copies of tile n + d are pending (lw_ring_issue). */
static void ready(lw *w)
{
    if (by_tma(w, w->loop->src_loop)) {
        const lw_ring *g = first_ring(w, w->loop->src_loop);
        ring_pos at = position(w, g->nslots, 0);
        lw_mbarrier(w, TJ_OP_MBAR_WAIT, slot_bar(w, g, at.slot, 0), parity(w, at.phase, 0), TJ_NONE);
        w->loop->rings_ready = 1;
        w->loop->copies_pending = 1;
        return;
    }
    wait_for(w, depth_of(w, w->loop->src_loop) - 1);
    if (feeds_wgmma(w, w->loop->src_loop)) /* the copies' bytes, to wgmma's async proxy */
        lw_emit(w, TJ_OP_FENCE_PROXY_ASYNC, TJ_TYPE_NONE, NULL, 0);
    lw_barrier(w);
    w->loop->rings_ready = 1;
    w->loop->copies_pending = 1;
}

void lw_ring_issue(lw *w)
{
    if (!w->loop || !w->loop->copies_pending)
        return;
    tj_ref loop = w->loop->src_loop;
    int64_t d = depth_of(w, loop);
    if (by_tma(w, loop)) { /* into the slot of tile n + d - S, once every warp released it */
        const lw_ring *g = first_ring(w, loop);
        ring_pos t = position(w, g->nslots, d);
        tj_ref released = parity(w, t.phase, 1), s = t.slot; /* tile n + d - S's phase of empty */
        tj_ref who = w->producer ? lw_producer_thread(w) : lw_tma_thread(w);
        w->producing = w->producer; /* the producer warp's part (lower/producer.c) */
        tma_tile(w, loop, slot_bar(w, g, s, 0), slot_bar(w, g, s, 1), released, s, -1,
                 lw_and(w, who, in_range(w, w->loop->iv, d, w->loop->step, w->loop->hi)));
        w->producing = 0;
        w->loop->copies_pending = 0;
        return;
    }
    for (uint32_t i = 0; i < w->nrings; i++) {
        const lw_ring *g = &w->rings[i];
        if (g->loop == loop)
            lw_copy_async(w, g->ahead, g->base, slot_shift(w, g, slot_of(w, d, g->nslots)), g->ld, tile_of(g));
    }
    commit(w);
    w->loop->copies_pending = 0;
}

void lw_ring_release(lw *w, tj_ref dot, int64_t pending)
{
    const lw_ring *g = NULL;
    for (uint32_t i = 0; i < w->nrings && !g; i++)
        g = w->rings[i].dot == dot ? &w->rings[i] : NULL;
    if (!g || !g->tma || !w->loop || w->loop->src_loop != g->loop)
        return;
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref lane0 = lw_op2(w, TJ_OP_EQ, lw_lane(w), lw_const_int(w, TJ_DT_I32, 0));
    w->hoisting = was;
    tj_ref n = iteration(w), pred = lane0;
    if (pending) /* iteration n retired group n - pending, none before the first */
        pred = lw_and(w, lane0, lw_op2(w, TJ_OP_GE, n, lw_const_int(w, TJ_DT_U32, pending)));
    lw_mbarrier(w, TJ_OP_MBAR_ARRIVE, slot_bar(w, g, slot_of(w, -pending, g->nslots), 1), TJ_NONE, pred);
}

int lw_ring_operand(lw *w, tj_ref dot, int operand, uint32_t *buf, tj_ref *shift)
{
    for (uint32_t i = 0; i < w->nrings; i++) {
        const lw_ring *g = &w->rings[i];
        if (g->dot != dot || g->operand != operand)
            continue;
        if (!w->loop || w->loop->src_loop != g->loop) {
            lw_error(w, "internal error: a ring's dot outside its loop");
            return 0; /* w->err says why */
        }
        if (!w->loop->rings_ready)
            ready(w);
        tj_ref slot = slot_of(w, 0, g->nslots);
        *buf = g->base;
        *shift = slot_shift(w, g, slot);
        return 1;
    }
    return 0;
}
