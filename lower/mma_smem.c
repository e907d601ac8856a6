/* dot through the matrix atom: tiles and fragments through shared memory
 * (lower/mma.c has the plan and the product). Operands are stored as tiles
 * with padded rows; for Metal, where fragments are opaque, accumulators go in
 * through shared memory (mma_load {role = c}) and results come back out
 * (mma_store, then a read in the dot's layout), in rounds of rows when the
 * whole result would not fit; a loop that only accumulates through one dot
 * carries the fragments instead (lw_mma_carried). */
#include "lower/lower.h"
#include "passes/pass_util.h"

enum {
    MAX_VECTOR_BYTES = 16,
    READBACK_MIN_BYTES = 32 * 1024, /* the result may take this much shared memory, or the operands' */
    SCRATCH_BYTES = TJ_MMA_M * TJ_MMA_N * 4, /* per warp: where its atoms outside a readback round go */
};

/* ---- tiles to and from shared memory ----------------------------------------- */

/* Registers i .. i + n - 1 of layout l hold consecutive elements of the
 * last axis (same thread, no wrap): the largest such n <= max dividing
 * the run of contiguous registers. */
static uint32_t contiguous_run(const tj_layout *l, uint32_t i, uint32_t max)
{
    if (l->kind != TJ_LAYOUT_BLOCKED || l->rank == 0)
        return 1;
    int fa = l->frame_axis[l->rank - 1];
    if (fa != l->frank - 1 || tj_layout_axis_wraps(l, fa))
        return 1;
    int32_t idx[TJ_MAX_RANK];
    tj_layout_reg_index(l, i, idx);
    uint32_t spt = (uint32_t)l->espt[l->rank - 1], n = max;
    while (n > 1 && (spt % n || idx[fa] % n))
        n /= 2;
    return n;
}

tj_ref lw_padded_index(lw *w, const tj_layout *l, uint32_t i, int64_t ld)
{
    int64_t wts[TJ_MAX_RANK];
    int64_t s = ld;
    wts[l->rank - 1] = 1;
    for (int d = l->rank - 2; d >= 0; d--) {
        wts[d] = s;
        s *= l->shape[d];
    }
    return lw_flat(w, l, i, wts);
}

/* Stores a tile in a buffer of padded rows, as vectors where registers are
 * contiguous (replicas store the same values). */
tj_ref lw_shifted(lw *w, tj_ref addr, tj_ref shift) { return shift ? lw_op2(w, TJ_OP_ADD, addr, shift) : addr; }

void lw_mma_store_tile(lw *w, const tj_layout *l, const tj_ref *regs, uint32_t buf, int64_t ld)
{
    lw_mma_store_tile_at(w, l, regs, buf, TJ_NONE, ld);
}

void lw_mma_store_tile_at(lw *w, const tj_layout *l, const tj_ref *regs, uint32_t buf, tj_ref shift, int64_t ld)
{
    tj_dtype dt = lw_dt(w, regs[0]);
    int size = lw_smem_size(dt);
    for (uint32_t i = 0; i < l->nregs;) {
        uint32_t n = contiguous_run(l, i, (uint32_t)(MAX_VECTOR_BYTES / size));
        tj_ref addr = lw_shifted(w, lw_smem_addr(w, buf, lw_padded_index(w, l, i, ld), size), shift);
        if (n == 1 || dt == TJ_DT_BOOL) {
            lw_smem_store(w, addr, regs[i++]);
            continue;
        }
        int32_t width = (int32_t)n;
        lw_smem_store(w, addr, lw_emit(w, TJ_OP_PACK, tj_type_tile(w->c, dt, 1, &width), regs + i, n));
        i += n;
    }
}

/* n f32 values from consecutive shared addresses, as one vector access
 * when n > 1. */
static void load_run(lw *w, tj_ref addr, uint32_t n, tj_ref *out)
{
    if (n == 1) {
        out[0] = lw_smem_load(w, addr, TJ_DT_F32);
        return;
    }
    int32_t width = (int32_t)n;
    tj_ref v = lw_emit(w, TJ_OP_LD_SHARED, tj_type_tile(w->c, TJ_DT_F32, 1, &width), &addr, 1);
    for (uint32_t e = 0; e < n; e++) {
        out[e] = lw_emit(w, TJ_OP_EXTRACT, lw_sty(w, TJ_DT_F32), &v, 1);
        w->dst->insts[out[e]].imm = e;
    }
}

/* ---- fragments through shared memory ---------------------------------------- */

/* The c fragments of the warp's atoms from a padded f32 buffer of the
 * stacked [batch * m, n] accumulator. */
static tj_ref *load_accumulators(lw *w, const lw_mma *p, uint32_t buf)
{
    lw_atoms at = lw_mma_locate(w, p);
    uint32_t n = (uint32_t)(p->tm * p->tn);
    tj_ref *c = lw_new_regs(w, n);
    for (uint32_t i = 0; i < n; i++)
        c[i] = lw_mma_load(w, TJ_MMA_C, TJ_DT_F32, lw_smem_addr(w, buf, at.c[i], 4), p->ldc, 0);
    return c;
}

int lw_is_splat(const lw *w, tj_ref v)
{
    for (int depth = 0; depth < TJ_PASS_MAX_DEPTH; depth++) {
        const tj_inst *in = &w->src->insts[v];
        if (lw_src_type(w, v)->rank == 0)
            return 1;
        if (in->op != TJ_OP_BROADCAST && in->op != TJ_OP_RESHAPE)
            return 0;
        v = in->args[0];
    }
    return 0;
}

/* The accumulator value v (in layout l) as the warp's c fragments; a splat
 * is filled without memory. */
tj_ref *lw_mma_to_fragments(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *regs, int splat)
{
    uint32_t n = (uint32_t)(p->tm * p->tn);
    if (splat) {
        tj_ref x = lw_cast(w, regs[0], TJ_DT_F32), *c = lw_new_regs(w, n);
        for (uint32_t i = 0; i < n; i++)
            c[i] = lw_emit(w, TJ_OP_MMA_FILL, tj_type_fragment(w->c, TJ_MMA_C, TJ_DT_F32), &x, 1);
        return c;
    }
    lw_smem_begin(w);
    uint32_t buf = lw_smem_alloc(w, (uint64_t)(p->batch * p->m * p->ldc * 4));
    lw_mma_store_tile(w, l, regs, buf, p->ldc);
    lw_barrier(w);
    tj_ref *c = load_accumulators(w, p, buf);
    lw_smem_end(w);
    return c;
}

/* Rows of the stacked accumulator read back per round: all of them when
 * they fit the budget (the operands' staging or READBACK_MIN_BYTES, within
 * the target's limit); else, for a 2-D blocked layout that does not wrap
 * its rows, a multiple of 16 and of the layout's row period (the rows its
 * threads cover), so that every register's round is known statically. */
static int64_t rows_per_round(const lw *w, const lw_mma *p, const tj_layout *l)
{
    int64_t rows = p->batch * p->m, row_bytes = p->ldc * 4;
    uint64_t budget = lw_mma_staging_bytes(p) > READBACK_MIN_BYTES ? lw_mma_staging_bytes(p) : READBACK_MIN_BYTES;
    uint64_t scratch = (uint64_t)SCRATCH_BYTES * (uint64_t)w->nwarps;
    uint64_t room = w->smem_limit > w->smem_pinned + scratch ? w->smem_limit - w->smem_pinned - scratch : 0;
    if (budget > room) /* loops may hold regions below */
        budget = room;
    if ((uint64_t)(rows * row_bytes) <= budget || p->batch != 1 || l->kind != TJ_LAYOUT_BLOCKED || l->rank != 2 ||
        l->frame_axis[0] != 0 || tj_layout_axis_wraps(l, 0))
        return rows;
    int64_t period = (int64_t)l->espt[0] * l->tpw[0] * l->wpc[0], unit = period;
    while (unit % TJ_MMA_M)
        unit += period;
    int64_t per = (int64_t)budget / row_bytes / unit * unit;
    return per < unit ? unit : per < rows ? per : rows;
}

/* mma_store of every atom of the warp whose rows lie in [first, first +
 * rows); the others go to the warp's scratch slot (stores are
 * warp-collective: every warp stores every atom, somewhere). */
static void store_round(lw *w, const lw_mma *p, const lw_atoms *at, const tj_ref *c, uint32_t buf, int64_t first,
                        int64_t rows, uint32_t scratch)
{
    int whole = first == 0 && rows == p->batch * p->m;
    tj_ref ldc = lw_const_int(w, TJ_DT_I32, p->ldc);
    tj_ref mine = whole ? TJ_NONE : lw_smem_addr(w, scratch, lw_mul_imm(w, lw_warp(w), SCRATCH_BYTES / 4), 4);
    for (int64_t i = 0; i < p->tm; i++) {
        tj_ref in = TJ_NONE;
        if (!whole) {
            tj_ref r = at->row[i], lo = lw_const_int(w, TJ_DT_I32, first), hi = lw_const_int(w, TJ_DT_I32, first + rows);
            in = lw_and(w, lw_op2(w, TJ_OP_GE, r, lo), lw_op2(w, TJ_OP_LT, r, hi));
        }
        for (int64_t j = 0; j < p->tn; j++) {
            tj_ref at_c = lw_add_imm(w, at->c[i * p->tn + j], -first * p->ldc);
            tj_ref args[3] = {lw_smem_addr(w, buf, at_c, 4), ldc, c[i * p->tn + j]};
            if (in) {
                args[0] = lw_select(w, in, args[0], mine);
                args[1] = lw_select(w, in, ldc, lw_const_int(w, TJ_DT_I32, TJ_MMA_N));
            }
            lw_emit(w, TJ_OP_MMA_STORE, TJ_TYPE_NONE, args, 3);
        }
    }
}

/* Reads the registers of layout l whose rows lie in [first, first + rows)
 * (all of them in one round, else by their static round) into regs. */
static void load_round(lw *w, const tj_layout *l, uint32_t buf, int64_t ld, int64_t first, int64_t rows,
                       int whole, tj_ref *regs)
{
    for (uint32_t i = 0; i < l->nregs;) {
        uint32_t n = contiguous_run(l, i, MAX_VECTOR_BYTES / 4);
        int32_t idx[TJ_MAX_RANK];
        tj_layout_reg_index(l, i, idx);
        int64_t roff = tj_layout_roff(l, 0, idx[0]);
        if (!whole && (roff < first || roff >= first + rows)) {
            i += n;
            continue;
        }
        tj_ref addr = lw_smem_addr(w, buf, lw_add_imm(w, lw_padded_index(w, l, i, ld), -first * ld), 4);
        load_run(w, addr, n, regs + i);
        i += n;
    }
}

/* The warp's c fragments read back as registers of layout l, in rounds of
 * rows when the whole result would take too much shared memory. */
tj_ref *lw_mma_from_fragments(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *c)
{
    int64_t rows = p->batch * p->m, per = rows_per_round(w, p, l);
    lw_atoms at = lw_mma_locate(w, p);
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (int64_t first = 0; first < rows; first += per) {
        int64_t n = per < rows - first ? per : rows - first;
        lw_smem_begin(w);
        uint32_t buf = lw_smem_alloc(w, (uint64_t)(n * p->ldc * 4));
        uint32_t scratch = per < rows ? lw_smem_alloc(w, (uint64_t)SCRATCH_BYTES * (uint64_t)w->nwarps) : 0;
        store_round(w, p, &at, c, buf, first, n, scratch);
        lw_barrier(w);
        load_round(w, l, buf, p->ldc, first, n, per == rows, regs);
        lw_smem_end(w);
    }
    return regs;
}

/* ---- accumulators carried by loops ------------------------------------------------ */

tj_ref lw_acc_reset(const tj_kernel *k, tj_ref acc, tj_ref *cond)
{
    const tj_inst *sel = &k->insts[acc];
    if (sel->op != TJ_OP_SELECT || sel->nargs != 3 || tj_count_uses(k, acc) != 1 ||
        !tj_is_const_float(k, sel->args[1], 0.0, 0))
        return TJ_NONE;
    const tj_inst *b = &k->insts[sel->args[0]];
    if (b->op != TJ_OP_BROADCAST || b->nargs != 1 || k->insts[b->args[0]].type != tj_type_scalar(k->ctx, TJ_DT_BOOL))
        return TJ_NONE;
    *cond = b->args[0];
    return sel->args[2];
}

/* Whether every use of d but the yield y lies in a region of an `if` at
 * the top level of body (an epilogue, lw_wgmma_epilogue_begin). */
static int epilogue_uses(const tj_kernel *k, tj_ref d, tj_block_id body, tj_ref y)
{
    for (tj_ref u = 1; u < k->ninsts; u++) {
        const tj_inst *ui = &k->insts[u];
        int uses = 0;
        for (uint32_t a = 0; ui->block && a < ui->nargs; a++)
            uses += ui->args[a] == d;
        if (!uses || (u == y && uses == 1))
            continue;
        tj_ref top = u;
        for (int depth = 0; k->insts[top].block != body; depth++) {
            tj_ref owner = k->blocks[k->insts[top].block].owner;
            if (!owner || depth > TJ_PASS_MAX_DEPTH)
                return 0;
            top = owner;
        }
        if (top == u || k->insts[top].op != TJ_OP_IF)
            return 0;
    }
    return 1;
}

tj_ref lw_mma_carried(lw *w, tj_ref loop, uint32_t k, lw_mma *p)
{
    const tj_kernel *src = w->src;
    const tj_inst *in = &src->insts[loop];
    const tj_block *body = &src->blocks[in->region[0]];
    if (body->ninsts < k + 3)
        return TJ_NONE;
    tj_ref arg = body->insts[k + 1], y = body->insts[body->ninsts - 1];
    if (src->insts[y].op != TJ_OP_YIELD || src->insts[y].nargs <= k)
        return TJ_NONE;
    tj_ref d = src->insts[y].args[k];
    const tj_inst *dot = &src->insts[d];
    if (dot->op != TJ_OP_DOT || dot->block != in->region[0] || dot->nargs < 3)
        return TJ_NONE;
    tj_ref cond, reset = dot->args[2] == arg ? TJ_NONE : lw_acc_reset(src, dot->args[2], &cond);
    if ((dot->args[2] != arg && reset != arg) || tj_count_uses(src, arg) != 1)
        return TJ_NONE;
    int read = tj_count_uses(src, d) != 1;
    if ((read && !epilogue_uses(src, d, in->region[0], y)) || !lw_mma_plan(w, d, p) || (p->regs && !p->wg))
        return TJ_NONE; /* register results need no carrying: the loop carries the registers */
    if ((reset || read) && !p->wg)
        return TJ_NONE; /* the zero operand and the epilogue's wait are wgmma's */
    return d; /* wgmma: fragments carried in place keep a group in flight across iterations */
}

tj_ref *lw_mma_fragments_in(lw *w, const lw_mma *p, tj_ref v, const tj_layout *l)
{
    tj_ref *regs = lw_regs_in(w, v, l);
    if (regs && p->wg && !lw_is_splat(w, v)) /* the fragments are the layout's registers */
        return lw_mma_pack_c(w, p, regs);
    return regs ? lw_mma_to_fragments(w, p, l, regs, lw_is_splat(w, v)) : NULL;
}

tj_ref *lw_mma_fragments_out(lw *w, const lw_mma *p, const tj_ref *c, const tj_layout *l)
{
    if (!p->wg)
        return lw_mma_from_fragments(w, p, l, c);
    lw_wgmma_sync(w, TJ_OP_WGMMA_WAIT, 0); /* the loop's last group */
    return lw_mma_unpack_c(w, p, l, c);
}
