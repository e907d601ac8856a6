/* dot on the warpgroup tensor cores of sm_90a (wgmma.mma_async; docs/simt.md,
 * "wgmma").
 *
 * The warps form warpgroups of four; warpgroup wg computes the 64-row
 * blocks b = wg + groups * mi (mi < tm) of the product, all n columns, as
 * m64nNk16 (k8 for tf32) products whose operands wgmma reads from shared
 * memory through descriptors (lower/wgmma_smem.c). The accumulators are the
 * c fragments of the matrix atom's register layout with every warp on the
 * rows (lower/mma_regs.c, wm = warps, wn = 1): warp w holds rows 8 w + 8 W
 * i0 (+ g) of the tile, W warps. wgmma gives warp wl of a warpgroup rows 16
 * wl + 8 h (+ g) of its block, so a's 8-row granules are stored in that
 * order (the permutation of lower/wgmma_smem.c) and the accumulator layout
 * stays the blocked one: epilogues, reductions and stores work on it in
 * registers as on the mma.sync path.
 *
 * The products of one dot are one group: wgmma_fence, the wgmmas of every k
 * step chained on the same fragments, wgmma_commit, then the ring's copies
 * of a later tile (issued while the products run), then wgmma_wait {0}, so
 * the shared memory they read is free again at the next barrier (the copy
 * ring's protocol, lower/ring.c, stays as it is). Operands not in a ring
 * are staged with st_shared; writes of the generic proxy (st_shared,
 * cp_async) are made visible to wgmma's async proxy by fence_proxy_async
 * before the barrier that publishes them.
 *
 * Attention's products (lw_mma_plan's LW_WG_A_*): an a fixed across the
 * loop (Q) is staged once before it into a region the loop pins; a 16-bit
 * a computed in the loop (P) in the accumulator layout of the same rows
 * goes from registers: wgmma's register a fragment of warp wl is rows 16
 * wl .. 16 wl + 15 of its block in the matrix atom's a lane layout, so
 * the a fragments of lw_mma_a_from_registers (the mma.sync path's) are
 * the operands as they are, and the rows of the result are the rows the
 * warp supplied. `x + dot(p, v, 0)` (the rescaled accumulator) takes x as
 * its c fragments. */
#include <string.h>

#include "lower/lower.h"
#include "lower/wgmma_turns.h"
#include "passes/pass_util.h"

enum {
    GROUP_WARPS = 4,
    BLOCK_ROWS = 64,
    MAX_N = 256,
    MAX_ACC_REGS = 128,
    SM_REGS = 65536,     /* 32-bit registers of an SM, shared by a program's threads */
    THREAD_REGS = 255,   /* the most one thread may have */
    OTHER_REGS = 32,     /* beside the accumulators: descriptors, addresses, the loop */
    FRAG_REGS = 4,       /* of a c fragment (f32[16, 8] in a warp) */
    SM_SMEM = 228 * 1024, /* shared memory of an SM (sm_90) */
    PROGRAM_SMEM = 1024, /* what the driver reserves of it per program */
    EPILOGUE_REGS = 64,  /* beside the accumulators for a second program's share */
};

/* Two programs an SM where the shared memory leaves room for them and a
 * thread's share of the registers then (128 at 256 threads) holds the
 * accumulators and EPILOGUE_REGS more: the code generator tells ptxas
 * (.minnctapersm), which would otherwise take what the second program
 * needs (a fused bias + gelu epilogue at 128 x 128 / 8 warps took 160),
 * and so one program's epilogue runs under the other's products. 0 where
 * not (one program, or a share above what a thread can have anyway). */
uint32_t lw_wgmma_programs(const lw *w)
{
    uint32_t threads = w->nthreads + (w->producer ? TJ_WARP_SIZE : 0);
    uint32_t share = SM_REGS / (2 * threads) / 8 * 8;
    if (!w->wgmma_acc || 2 * ((uint64_t)w->smem_bytes + PROGRAM_SMEM) > SM_SMEM || share > THREAD_REGS)
        return 0;
    return w->wgmma_acc + EPILOGUE_REGS <= share ? 2 : 0;
}

/* The largest of 128, 64, 32 bytes dividing a row of `bytes`, or 0. */
static int swizzle_for(int64_t bytes)
{
    for (int s = 128; s >= 32; s /= 2)
        if (bytes % s == 0)
            return s;
    return 0;
}

static int tile_of(lw_wg_tile *t, int64_t rows, int64_t cols, int mn_major, int size)
{
    *t = (lw_wg_tile){rows, cols, mn_major, swizzle_for(cols * size), size, 0, 0, 0};
    uint64_t bytes = (uint64_t)(rows * cols * size);
    t->bytes = (uint32_t)((bytes + 1023) / 1024 * 1024);
    return t->swizzle && rows % 8 == 0 && bytes <= UINT32_MAX / 2;
}

int lw_wgmma_plan(const lw *w, lw_mma *p)
{
    int groups = w->nwarps / GROUP_WARPS;
    if (!w->wgmma || w->target != TJ_LOWER_CUDA || p->batch != 1 || w->nwarps % GROUP_WARPS || groups < 1)
        return 0;
    if (p->m % (BLOCK_ROWS * groups) || p->n % 8 || p->n > MAX_N || (p->in == TJ_DT_F32 && !p->bt))
        return 0; /* tf32 operands must be K-major: b only as trans(x) */
    /* a wgmma names all of a block's accumulators at once: they and the
     * loop's other values must fit the registers a thread can have (512
     * threads: 128), or ptxas refuses the instruction */
    int64_t acc = p->m * p->n / (32 * w->nwarps), budget = SM_REGS / (32 * w->nwarps);
    if (acc > MAX_ACC_REGS || acc + OTHER_REGS > (budget < THREAD_REGS ? budget : THREAD_REGS))
        return 0;
    if (!tile_of(&p->wa, p->m, p->k, 0, p->size))
        return 0;
    int ok = p->bt ? tile_of(&p->wb, p->n, p->k, 0, p->size) : tile_of(&p->wb, p->k, p->n, 1, p->size);
    if (!ok || p->wa.bytes + p->wb.bytes > w->smem_limit)
        return 0;
    p->wa.permute_rows = 1;
    p->wa.lg_groups = tj_log2_floor(groups);
    p->wg = 1;
    p->regs = 1;
    p->wm = w->nwarps;
    p->wn = 1;
    p->tm = p->m / (16 * w->nwarps);
    p->tn = p->n / 8;
    return 1;
}

/* ---- the product ---------------------------------------------------------------- */

static void emit0(lw *w, tj_op op, int64_t imm)
{
    tj_ref r = lw_emit(w, op, TJ_TYPE_NONE, NULL, 0);
    w->dst->insts[r].imm = imm;
}

void lw_wgmma_sync(lw *w, tj_op op, int64_t pending)
{
    tj_ref every = TJ_NONE; /* lw_emit narrows it to the consumers where there is a producer */
    tj_ref r = lw_emit(w, op, TJ_TYPE_NONE, &every, 1);
    w->dst->insts[r].imm = pending;
}

/* The descriptor of tile t at buf + shift + offset (u32 bytes). */
static tj_ref descriptor(lw *w, const lw_wg_tile *t, uint32_t buf, tj_ref shift, tj_ref offset)
{
    tj_ref addr = lw_shifted(w, lw_add_imm(w, offset, buf), shift);
    tj_ref args[2] = {addr, lw_const_int(w, TJ_DT_U64, (int64_t)lw_wg_desc_fields(t))};
    return lw_emit(w, TJ_OP_WGMMA_DESC, lw_sty(w, TJ_DT_U64), args, 2);
}

/* desc moved `bytes` further (no carry out of the 14-bit address field:
 * shared memory is below 256 KiB). */
static tj_ref desc_plus(lw *w, tj_ref desc, int64_t bytes) { return lw_add_imm(w, desc, bytes >> 4); }

/* Where k step k0 starts in tile t (bytes). */
static int64_t k_step_offset(const lw_wg_tile *t, int64_t k0)
{
    if (t->mn_major)
        return k0 * t->swizzle;
    int64_t e = t->swizzle / t->size;
    return k0 / e * t->rows * t->swizzle + k0 % e * t->size;
}

/* One wgmma: c[0 .. tn) of block mi updated in place (the fragments are
 * projected back out of the result tuple); where `zero` (a bool, TJ_NONE:
 * none) holds, c is not added (the first k step of a reset accumulator). */
static void product(lw *w, const lw_mma *p, tj_ref a, tj_ref b, tj_ref *c, tj_ref zero)
{
    uint32_t n = (uint32_t)p->tn;
    tj_ref *args = lw_new_regs(w, n + 4);
    tj_type ct = tj_type_fragment(w->c, TJ_MMA_C, TJ_DT_F32);
    tj_type *elems = tj_alloc(w->c, sizeof *elems * n);
    args[0] = a;
    args[1] = b;
    args[2] = TJ_NONE; /* every warpgroup; lw_emit narrows it to the consumers */
    for (uint32_t j = 0; j < n; j++) {
        args[3 + j] = c[j];
        elems[j] = ct;
    }
    args[3 + n] = zero;
    tj_ref d = lw_emit(w, TJ_OP_WGMMA, tj_type_tuple(w->c, n, elems), args, n + 3 + (zero != TJ_NONE));
    w->dst->insts[d].imm = p->in;
    w->dst->insts[d].flags = (p->bt ? 0 : TJ_WGMMA_B_MN) | (zero ? TJ_WGMMA_ZERO : 0);
    for (uint32_t j = 0; j < n; j++) {
        c[j] = lw_emit(w, TJ_OP_PROJ, ct, &d, 1);
        w->dst->insts[c[j]].imm = j;
    }
}

/* The c fragments of accumulator acc (TJ_NONE: zeros): filled for a
 * splat, else packed from the registers of the result layout l. */
static tj_ref *accumulators(lw *w, const lw_mma *p, const tj_layout *l, tj_ref acc)
{
    if (!acc || lw_is_splat(w, acc)) {
        tj_ref zero = lw_const_float(w, TJ_DT_F32, 0), *regs = acc ? lw_regs_in(w, acc, l) : &zero;
        return regs ? lw_mma_to_fragments(w, p, l, regs, 1) : NULL;
    }
    tj_ref *regs = lw_regs_in(w, acc, l);
    return regs ? lw_mma_pack_c(w, p, regs) : NULL;
}

/* ---- an a fixed across the loop: staged once, before it ------------------------ */

enum { TILE_ALIGN = 1024 };

void lw_wgmma_pin_fixed(lw *w, tj_ref loop)
{
    tj_block_id body = tj_region_of(w->src, loop, 0);
    const tj_block *blk = body ? &w->src->blocks[body] : NULL;
    lw_mma p;
    for (uint32_t i = 0; blk && !w->no_pins && i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (w->src->insts[r].op != TJ_OP_DOT || !lw_mma_plan(w, r, &p) || !p.wg || p.wg_a != LW_WG_A_FIXED)
            continue;
        uint64_t at = ((uint64_t)w->smem_pinned + TILE_ALIGN - 1) / TILE_ALIGN * TILE_ALIGN, top = at + p.wa.bytes;
        if (top > w->smem_limit)
            continue; /* staged in every iteration instead */
        w->dot_region[r] = (uint32_t)at + 1;
        w->smem_pinned = (uint32_t)top;
        w->pinned_any = 1;
        if (w->smem_pinned > w->smem_bytes)
            w->smem_bytes = w->smem_pinned;
    }
}

/* a (Tile IR value v) into its pinned region buf before the loop: after a
 * barrier (earlier reads of those bytes), fenced for wgmma's async proxy
 * and published by a barrier. Plain barriers: the loop's own state of
 * shared memory and of hazards is not changed by code before it. */
static int stage_fixed(lw *w, const lw_mma *p, tj_ref v, uint32_t buf)
{
    const lw_val *x = lw_val_of(w, v);
    if (!x->regs)
        return lw_error(w, "internal error: a wgmma operand without registers");
    tj_block_id here = lw_before_loop(w);
    emit0(w, TJ_OP_BARRIER, 0);
    lw_wg_store(w, &p->wa, x->lay, x->regs, buf);
    emit0(w, TJ_OP_FENCE_PROXY_ASYNC, 0);
    emit0(w, TJ_OP_BARRIER, 0);
    lw_back_in_loop(w, here);
    return w->err;
}

/* Operand `o` (0: a, 1: b) of dot r: its ring slot, or staged here. */
static int operand(lw *w, const lw_mma *p, tj_ref r, int o, uint32_t *buf, tj_ref *shift, int *staged)
{
    *shift = TJ_NONE;
    if (lw_ring_operand(w, r, o, buf, shift))
        return 0;
    if (w->err)
        return 1;
    const lw_wg_tile *t = o == 0 ? &p->wa : &p->wb;
    tj_ref v = w->src->insts[r].args[o];
    if (o == 1 && p->bt)
        v = w->src->insts[v].args[0];
    const lw_val *x = lw_val_of(w, v);
    if (!x->regs)
        return lw_error(w, "internal error: a wgmma operand without registers");
    if (!*staged)
        lw_smem_begin(w);
    *staged = 1;
    *buf = lw_wg_alloc(w, t->bytes);
    lw_wg_store(w, t, x->lay, x->regs, *buf);
    return w->err;
}

/* ---- groups left in flight until their results are used ------------------------ */

/* A wgmma dot at the top level of a loop's body (not carried, its operands
 * in rings or pinned) is not waited for where it is issued: its group stays
 * in flight until the first instruction that reads its result, or the
 * body's yield, and the wait there (wgmma_wait {N}, N the groups issued
 * after it) lets the younger ones run on. So the code between a dot and
 * its first use runs under its products: in FlashAttention-3's order,
 * S(j + 1) = Q K(j + 1)^T and O += P(j) V(j) issued back to back, the
 * softmax of S(j + 1) (after a wait {1}) runs while P(j) V(j) does. The
 * accumulators come out of the fragments only after the wait. */
enum { MAX_IN_FLIGHT = 4 };

typedef struct lw_wg_group {
    tj_ref dot;
    tj_ref alias; /* the add folded into the dot (`x + dot(..)`, lower/mma.c), or TJ_NONE */
    const tj_layout *lay;
    tj_ref *c;
    lw_mma plan;
} lw_wg_group;

struct lw_wg_defer {
    lw_wg_group g[MAX_IN_FLIGHT]; /* oldest first */
    uint32_t n;
};

/* Whether dot r (not carried, its operands not staged) may leave its group
 * in flight: it sits at the top level of the innermost loop's body. */
static int deferrable(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    return w->loop && in->block == w->loop->src_body && (!w->wg_defer || w->wg_defer->n < MAX_IN_FLIGHT);
}

static void defer(lw *w, tj_ref r, const tj_layout *l, tj_ref *c, const lw_mma *p)
{
    const tj_block *blk = &w->src->blocks[w->src->insts[r].block];
    tj_ref alias = TJ_NONE;
    for (uint32_t i = 0; i < blk->ninsts; i++)
        if (w->same_as[blk->insts[i]] == r)
            alias = blk->insts[i];
    if (!w->wg_defer)
        w->wg_defer = tj_alloc(w->c, sizeof *w->wg_defer);
    w->wg_defer->g[w->wg_defer->n++] = (lw_wg_group){r, alias, l, c, *p};
}

/* After a wait that retired the oldest `count` deferred groups: their ring
 * slots released (TMA rings), their accumulators into registers. */
static void finish_deferred(lw *w, uint32_t count)
{
    struct lw_wg_defer *q = w->wg_defer;
    if (!q || !count)
        return;
    for (uint32_t i = 0; i < count; i++) {
        lw_wg_group *d = &q->g[i];
        lw_ring_release(w, d->dot, 0); /* first: the slots are free once the wait returns */
        lw_set_regs(w, d->dot, d->lay, lw_mma_unpack_c(w, &d->plan, d->lay, d->c));
        if (d->alias)
            w->vals[d->alias] = w->vals[d->dot];
    }
    memmove(q->g, q->g + count, sizeof *q->g * (q->n - count));
    q->n -= count;
}

/* Whether instruction in reads group d's value (the dot's or its folded add's). */
static int reads_group(const tj_inst *in, const lw_wg_group *d)
{
    int reads = 0;
    for (uint32_t a = 0; a < in->nargs; a++)
        reads |= in->args[a] == d->dot || (d->alias && in->args[a] == d->alias);
    return reads;
}

/* Whether block b (nested in the body) reads group d's value; *deep where
 * it holds a dot or a loop, whose waits must not meet the body's groups. */
static int block_reads(const lw *w, tj_block_id b, const lw_wg_group *d, int *deep)
{
    const tj_block *blk = &w->src->blocks[b];
    int reads = 0;
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        const tj_inst *in = &w->src->insts[blk->insts[i]];
        *deep |= in->op == TJ_OP_DOT || in->op == TJ_OP_FOR || in->op == TJ_OP_WHILE;
        reads |= reads_group(in, d);
        for (int g = 0; g < 2; g++)
            if (in->region[g])
                reads |= block_reads(w, in->region[g], d, deep);
    }
    return reads;
}

/* The groups body instruction r needs retired: 1 + the youngest deferred
 * one it (or a region of it) reads, all where it is the yield or has a
 * region with a dot or a loop, else 0. The add folded into a dot reads
 * nothing: it stands for the dot's value. */
static uint32_t groups_needed(const lw *w, tj_ref r)
{
    const struct lw_wg_defer *q = w->wg_defer;
    const tj_inst *in = &w->src->insts[r];
    int deep = in->op == TJ_OP_YIELD;
    uint32_t need = 0;
    for (uint32_t i = 0; i < q->n; i++) {
        int reads = r != q->g[i].alias && reads_group(in, &q->g[i]);
        for (int g = 0; g < 2; g++)
            if (in->region[g])
                reads |= block_reads(w, in->region[g], &q->g[i], &deep);
        if (reads)
            need = i + 1;
    }
    return deep ? q->n : need;
}

int lw_wgmma_await(lw *w, tj_ref r)
{
    struct lw_wg_defer *q = w->wg_defer;
    if (!q || !q->n || !w->loop || w->src->insts[r].block != w->loop->src_body)
        return 0;
    uint32_t need = groups_needed(w, r);
    if (!need)
        return 0;
    lw_wgmma_sync(w, TJ_OP_WGMMA_WAIT, (int64_t)(q->n - need));
    finish_deferred(w, need);
    return w->err;
}

/* a's descriptor at buf + shift for warpgroup wg's first block (rows 64 wg). */
static tj_ref a_descriptor(lw *w, const lw_mma *p, uint32_t buf, tj_ref shift)
{
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref group = lw_op2(w, TJ_OP_SHR, lw_warp(w), lw_const_int(w, TJ_DT_I32, 2));
    tj_ref arow = lw_cast(w, lw_mul_imm(w, group, BLOCK_ROWS * p->wa.swizzle), TJ_DT_U32);
    w->hoisting = was;
    return descriptor(w, &p->wa, buf, shift, arow);
}

/* The descriptors of every k step and block first (a from adesc, or
 * aregs[step * tm + block] from registers), then wgmma_fence, per k step
 * and block one wgmma chained on c, wgmma_commit: the group is one run of
 * instructions of one predicate, which the PTX generator branches around
 * in a producer warp (lower/ring.c). `zero` (TJ_NONE: none): where it
 * holds, each block's first k step does not add its c (lw_acc_reset). */
static void issue_group(lw *w, const lw_mma *p, tj_ref adesc, const tj_ref *aregs, tj_ref bdesc, tj_ref *c,
                        tj_ref zero)
{
    int64_t groups = w->nwarps / GROUP_WARPS, steps = p->k / p->katom;
    tj_ref *as = lw_new_regs(w, (uint32_t)(steps * p->tm)), *bs = lw_new_regs(w, (uint32_t)steps);
    for (int64_t s = 0; s < steps; s++) {
        bs[s] = desc_plus(w, bdesc, k_step_offset(&p->wb, s * p->katom));
        for (int64_t mi = 0; mi < p->tm; mi++) {
            int64_t rows = BLOCK_ROWS * groups * mi * p->wa.swizzle;
            as[s * p->tm + mi] =
                aregs ? aregs[s * p->tm + mi] : desc_plus(w, adesc, rows + k_step_offset(&p->wa, s * p->katom));
        }
    }
    lw_wgmma_sync(w, TJ_OP_WGMMA_FENCE, 0);
    for (int64_t s = 0; s < steps; s++)
        for (int64_t mi = 0; mi < p->tm; mi++)
            product(w, p, as[s * p->tm + mi], bs[s], c + mi * p->tn, s == 0 ? zero : TJ_NONE);
    lw_wgmma_sync(w, TJ_OP_WGMMA_COMMIT, 0);
}

/* Operand a of dot r: the a fragments of every k step and block (from
 * registers: *regs), its pinned region staged before the loop, or as
 * operand() takes it (a P in another layout than the accumulators': staged
 * in every iteration). */
static int operand_a(lw *w, const lw_mma *p, tj_ref r, tj_ref **regs, uint32_t *buf, tj_ref *shift, int *staged)
{
    tj_ref a = w->src->insts[r].args[0];
    *regs = p->wg_a == LW_WG_A_REGS ? lw_mma_a_from_registers(w, p, a) : NULL;
    *shift = TJ_NONE;
    if (*regs)
        return 0;
    if (p->wg_a == LW_WG_A_FIXED && w->dot_region[r]) {
        *buf = w->dot_region[r] - 1;
        return stage_fixed(w, p, a, *buf);
    }
    return operand(w, p, r, 0, buf, shift, staged);
}

int lw_lower_wgmma(lw *w, tj_ref r, const lw_mma *p, tj_ref addend)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *l = lw_layout_of(w, r);
    tj_ref acc = addend ? addend : in->nargs > 2 ? in->args[2] : TJ_NONE, zero = TJ_NONE;
    if (!tj_layout_equal(l, lw_mma_result_layout(w, p)))
        return lw_error(w, "internal error: a wgmma dot with its result in another layout");
    if (acc && w->acc_reset[acc]) { /* where(c, 0, x): x's fragments, c as the zero operand */
        zero = w->vals[w->acc_reset[acc]].regs[0];
        acc = w->src->insts[acc].args[2];
    }
    const lw_val *av = acc ? lw_val_of(w, acc) : NULL;
    int carried = av && av->frags; /* by the enclosing loop (lw_mma_carried) */
    uint32_t nfrags = (uint32_t)(p->tm * p->tn);
    w->wgmma_acc += nfrags * FRAG_REGS;
    tj_ref *c = carried ? lw_new_regs(w, nfrags) : accumulators(w, p, l, acc);
    if (!c)
        return 1;
    if (carried)
        memcpy(c, av->frags, sizeof *c * nfrags);
    uint32_t abuf = 0, bbuf = 0;
    tj_ref ashift, bshift, *aregs;
    int staged = 0;
    if (operand_a(w, p, r, &aregs, &abuf, &ashift, &staged) || operand(w, p, r, 1, &bbuf, &bshift, &staged))
        return 1;
    if (staged) {
        emit0(w, TJ_OP_FENCE_PROXY_ASYNC, 0);
        lw_barrier(w);
    }
    tj_ref adesc = aregs ? TJ_NONE : a_descriptor(w, p, abuf, ashift);
    tj_ref bdesc = descriptor(w, &p->wb, bbuf, bshift, lw_const_int(w, TJ_DT_U32, 0));
    lw_wgmma_take_turn(w, r); /* warpgroups in turns where the loop's dots take them (wgmma_turns.c) */
    issue_group(w, p, adesc, aregs, bdesc, c, zero);
    lw_wgmma_pass_turn(w, r);
    /* carried, its ring keeping the group: it stays in flight into the
     * next iteration, the last one is waited for after the loop
     * (lw_mma_fragments_out) */
    int64_t pending = carried && !staged && lw_ring_keeps_group(w, r) ? 1 : 0;
    /* by TMA the refill goes into the slot the wait below releases */
    int refill_late = pending && lw_ring_refills_late(w, r);
    if (!refill_late)
        lw_ring_issue(w); /* a later tile's copies go while the products run */
    if (!carried && !staged && deferrable(w, r)) {
        defer(w, r, l, c, p); /* waited for at its first use (lw_wgmma_await) */
        return 0;
    }
    lw_wgmma_sync(w, TJ_OP_WGMMA_WAIT, pending); /* retires the deferred groups too: they are older */
    finish_deferred(w, w->wg_defer ? w->wg_defer->n : 0);
    lw_ring_release(w, r, pending); /* the slots of the group it retired (TMA rings) */
    if (refill_late)
        lw_ring_issue(w); /* this group's products still run */
    if (staged)
        lw_smem_end(w);
    if (carried) {
        w->vals[r] = (lw_val){.lay = l, .frags = c, .nfrags = nfrags};
        return 0;
    }
    lw_set_regs(w, r, l, lw_mma_unpack_c(w, p, l, c));
    return 0;
}

/* ---- an epilogue inside the loop --------------------------------------------------- */

/* Whether Tile IR value d is read in block b or the regions below it. */
static int read_in(const tj_kernel *k, tj_ref d, tj_block_id b, int depth)
{
    const tj_block *blk = &k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts && depth <= TJ_PASS_MAX_DEPTH; i++) {
        const tj_inst *in = &k->insts[blk->insts[i]];
        for (uint32_t a = 0; a < in->nargs; a++)
            if (in->args[a] == d)
                return 1;
        for (int g = 0; g < 2; g++)
            if (in->region[g] && read_in(k, d, in->region[g], depth + 1))
                return 1;
    }
    return 0;
}

/* The carried wgmma dots of the innermost loop that region b reads (at
 * most one pass over the loop's carried values each call). */
static void epilogue_dots(lw *w, tj_block_id b, int begin)
{
    const tj_kernel *k = w->src;
    if (!w->loop || k->blocks[b].owner == TJ_NONE ||
        k->insts[k->blocks[b].owner].block != w->loop->src_body)
        return;
    uint32_t ncarried = k->insts[w->loop->src_loop].nargs - 3;
    int waited = 0;
    for (uint32_t c = 0; c < ncarried; c++) {
        lw_mma p;
        tj_ref d = lw_mma_carried(w, w->loop->src_loop, c, &p);
        lw_val *v = d ? &w->vals[d] : NULL;
        if (!v || !p.wg || !v->frags || !read_in(k, d, b, 0))
            continue;
        if (!begin) {
            v->regs = NULL;
            continue;
        }
        if (!waited) { /* every group, this iteration's too: the registers are read */
            /* in every thread, a producer warp's too (it has no group in
             * flight), as the PTX after a loop of wgmma: ptxas then sees no
             * path on which the epilogue reads accumulators in flight */
            int was = w->producing;
            w->producing = 1;
            lw_wgmma_sync(w, TJ_OP_WGMMA_WAIT, 0);
            w->producing = was;
        }
        waited = 1;
        v->regs = lw_mma_unpack_c(w, &p, v->lay, v->frags);
    }
}

void lw_wgmma_epilogue_begin(lw *w, tj_block_id b) { epilogue_dots(w, b, 1); }

void lw_wgmma_epilogue_end(lw *w, tj_block_id b) { epilogue_dots(w, b, 0); }
