/* dot with FMAs, where the matrix atom does not apply (lower/mma.c). Each
 * thread accumulates its own output registers in a SIMT loop over k.
 * Accumulation runs in the result's dtype (f16/bf16 and tf32 inputs in f32,
 * i8 in i32), k in order, as the interpreter does.
 *
 * f32 products in a blocked layout without replicas (lw_fma_layout gives
 * them one: runs of 4 rows and 4 columns a thread) take the SGEMM inner
 * loop: a staged k-major (transposed, rows padded by 16 bytes) and b
 * row-major, so per k a thread loads each of its runs of rows of a and of
 * columns of b as one vector and issues rows x columns FMAs. Other products
 * stage both operands row-major and load every element they need as a
 * scalar once per k. */
#include "lower/lower.h"

enum { MAX_UNROLL = 8, MAX_UNROLLED_FMAS = 512, FMA_RUN = 4, FMA_UNROLLED_FMAS = 128 };

typedef struct dot_shape {
    int rank, batched;
    int64_t batch, m, k, n;
} dot_shape;

/* Stages a tile in shared memory, element at coord at index
 * sum(coord * wts), in a buffer of numel elements; returns the buffer. */
static uint32_t stage_at(lw *w, const lw_val *v, uint64_t numel, const int64_t *wts)
{
    tj_dtype dt = lw_dt(w, v->regs[0]);
    int size = lw_smem_size(dt);
    uint32_t buf = lw_smem_alloc(w, numel * (uint64_t)size);
    for (uint32_t i = 0; i < v->lay->nregs; i++) /* replicas write the same */
        lw_smem_store(w, lw_smem_addr(w, buf, lw_flat(w, v->lay, i, wts), size), v->regs[i]);
    return buf;
}

/* Stages a tile in shared memory, row-major. */
static uint32_t stage(lw *w, const lw_val *v, uint64_t numel)
{
    int64_t strides[TJ_MAX_RANK];
    tj_shape_strides(v->lay->rank, v->lay->shape, strides);
    return stage_at(w, v, numel, strides);
}

/* An operand element at index base + k * step of a staged buffer. */
static tj_ref operand(lw *w, uint32_t buf, tj_dtype dt, tj_ref base, tj_ref k, int64_t step, tj_dtype acc)
{
    tj_ref at = lw_op2(w, TJ_OP_ADD, base, lw_mul_imm(w, k, step));
    return lw_cast(w, lw_smem_load(w, lw_smem_addr(w, buf, at, lw_smem_size(dt)), dt), acc);
}

static tj_ref multiply_add(lw *w, tj_ref a, tj_ref b, tj_ref c)
{
    if (tj_dtype_is_float(lw_dt(w, c))) {
        tj_ref args[3] = {a, b, c};
        return lw_emit(w, TJ_OP_FMA, w->dst->insts[c].type, args, 3);
    }
    return lw_op2(w, TJ_OP_ADD, c, lw_op2(w, TJ_OP_MUL, a, b));
}

/* The scalar path: per register, its row of a and column of b at k = 0,
 * and which register first needs the same row (column): loaded once per k. */
static tj_ref *scalar_product(lw *w, const dot_shape *d, const tj_layout *l, const lw_val *a, const lw_val *b,
                              const tj_ref *init)
{
    tj_dtype acc_dt = lw_dt(w, init[0]), adt = lw_dt(w, a->regs[0]), bdt = lw_dt(w, b->regs[0]);
    uint32_t abuf = stage(w, a, (uint64_t)(d->batch * d->m * d->k));
    uint32_t bbuf = stage(w, b, (uint64_t)(d->batch * d->k * d->n));
    lw_barrier(w);
    tj_ref *arow = lw_new_regs(w, l->nregs), *bcol = lw_new_regs(w, l->nregs);
    uint32_t *afirst = tj_alloc(w->c, sizeof *afirst * l->nregs), *bfirst = tj_alloc(w->c, sizeof *bfirst * l->nregs);
    int fb = d->batched ? l->frame_axis[0] : -1, fm = l->frame_axis[d->rank - 2], fn = l->frame_axis[d->rank - 1];
    uint32_t nb = fb >= 0 ? (uint32_t)l->fregs[fb] : 1;
    uint32_t *aseen = tj_alloc(w->c, sizeof *aseen * nb * (uint32_t)l->fregs[fm]);
    uint32_t *bseen = tj_alloc(w->c, sizeof *bseen * nb * (uint32_t)l->fregs[fn]);
    for (uint32_t i = 0; i < l->nregs; i++) {
        int32_t idx[TJ_MAX_RANK];
        tj_layout_reg_index(l, i, idx);
        uint32_t ib = fb >= 0 ? (uint32_t)idx[fb] : 0;
        uint32_t ka = ib * (uint32_t)l->fregs[fm] + (uint32_t)idx[fm], kb = ib * (uint32_t)l->fregs[fn] + (uint32_t)idx[fn];
        afirst[i] = aseen[ka] ? aseen[ka] - 1 : i;
        bfirst[i] = bseen[kb] ? bseen[kb] - 1 : i;
        aseen[ka] = afirst[i] + 1;
        bseen[kb] = bfirst[i] + 1;
        tj_ref bb = d->batched ? lw_tile_coord(w, l, i, 0) : lw_const_int(w, TJ_DT_I32, 0);
        if (afirst[i] == i)
            arow[i] = lw_mul_imm(w, lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, bb, d->m), lw_tile_coord(w, l, i, d->rank - 2)), d->k);
        if (bfirst[i] == i)
            bcol[i] = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, bb, d->k * d->n), lw_tile_coord(w, l, i, d->rank - 1));
    }
    int unroll = MAX_UNROLL;
    while (unroll > 1 && (d->k % unroll || (uint64_t)unroll * l->nregs > MAX_UNROLLED_FMAS))
        unroll /= 2;
    lw_loop lp;
    tj_ref zero = lw_const_int(w, TJ_DT_I32, 0);
    lw_loop_begin(w, &lp, zero, lw_const_int(w, TJ_DT_I32, d->k), lw_const_int(w, TJ_DT_I32, unroll), init, l->nregs);
    tj_ref *cur = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        cur[i] = lp.args[i];
    for (int u = 0; u < unroll; u++) {
        tj_ref k = lw_add_imm(w, lp.iv, u);
        tj_ref *av = lw_new_regs(w, l->nregs), *bv = lw_new_regs(w, l->nregs);
        for (uint32_t i = 0; i < l->nregs; i++) {
            av[i] = afirst[i] < i ? av[afirst[i]] : operand(w, abuf, adt, arow[i], k, 1, acc_dt);
            bv[i] = bfirst[i] < i ? bv[bfirst[i]] : operand(w, bbuf, bdt, bcol[i], k, d->n, acc_dt);
            cur[i] = multiply_add(w, av[i], bv[i], cur[i]);
        }
    }
    return lw_loop_end(w, &lp, cur);
}

/* ---- the register-blocked f32 path ---- */

/* Elements a vector load takes along axis `a` of blocked layout l: its
 * registers along a come in runs of espt consecutive elements, each
 * starting at a multiple of espt (a power of two). */
static uint32_t run_width(const tj_layout *l, int a) { return (uint32_t)(l->espt[a] < FMA_RUN ? l->espt[a] : FMA_RUN); }

static int blocked_applies(const lw *w, const dot_shape *d, const tj_layout *l, const lw_val *a, const lw_val *b,
                           tj_dtype acc_dt)
{
    return d->rank == 2 && d->n % FMA_RUN == 0 && acc_dt == TJ_DT_F32 && lw_dt(w, a->regs[0]) == TJ_DT_F32 &&
           lw_dt(w, b->regs[0]) == TJ_DT_F32 && l->kind == TJ_LAYOUT_BLOCKED && !tj_layout_has_replicas(l) &&
           (l->espt[0] > 1 || l->espt[1] > 1);
}

/* Per run of the thread's registers along axis `a`: the tile coordinate of
 * its first element (hoisted). */
static tj_ref *run_starts(lw *w, const tj_layout *l, int a, uint32_t width)
{
    uint32_t nruns = (uint32_t)l->fregs[a] / width;
    tj_ref *start = lw_new_regs(w, nruns);
    for (uint32_t j = 0; j < nruns; j++)
        start[j] = lw_coord(w, l, a, (int32_t)(j * width));
    return start;
}

/* The thread's elements of row `row` (i32, an element index) of a staged
 * buffer: one vector load per run, run j's elements at out[j * width ..]. */
static void load_runs(lw *w, uint32_t buf, tj_ref row, int64_t shift, const tj_ref *start, uint32_t nruns,
                      uint32_t width, tj_ref *out)
{
    for (uint32_t j = 0; j < nruns; j++) {
        tj_ref index = lw_add_imm(w, lw_op2(w, TJ_OP_ADD, row, start[j]), shift);
        lw_smem_load_f32s(w, lw_smem_addr(w, buf, index, 4), width, out + j * width);
    }
}

static tj_ref *blocked_product(lw *w, const dot_shape *d, const tj_layout *l, const lw_val *a, const lw_val *b,
                               const tj_ref *init)
{
    uint32_t wm = run_width(l, 0), wn = run_width(l, 1);
    uint32_t nm = (uint32_t)l->fregs[0] / wm, nn = (uint32_t)l->fregs[1] / wn;
    int64_t lda = (d->m + FMA_RUN - 1) / FMA_RUN * FMA_RUN + FMA_RUN; /* 16-byte rows, shifted a bank group */
    int64_t at_wts[2] = {1, lda};
    uint32_t abuf = stage_at(w, a, (uint64_t)(d->k * lda), at_wts);
    uint32_t bbuf = lw_smem_alloc(w, (uint64_t)(d->k * d->n) * 4);
    lw_mma_store_tile(w, b->lay, b->regs, bbuf, d->n);
    lw_barrier(w);
    tj_ref *mstart = run_starts(w, l, 0, wm), *nstart = run_starts(w, l, 1, wn);
    int unroll = MAX_UNROLL;
    while (unroll > 1 && (d->k % unroll || (uint64_t)unroll * l->nregs > FMA_UNROLLED_FMAS))
        unroll /= 2;
    lw_loop lp;
    lw_loop_begin(w, &lp, lw_const_int(w, TJ_DT_I32, 0), lw_const_int(w, TJ_DT_I32, d->k),
                  lw_const_int(w, TJ_DT_I32, unroll), init, l->nregs);
    tj_ref *cur = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        cur[i] = lp.args[i];
    tj_ref arow = lw_mul_imm(w, lp.iv, lda), brow = lw_mul_imm(w, lp.iv, d->n);
    tj_ref *av = lw_new_regs(w, (uint32_t)l->fregs[0]), *bv = lw_new_regs(w, (uint32_t)l->fregs[1]);
    for (int u = 0; u < unroll; u++) {
        load_runs(w, abuf, arow, u * lda, mstart, nm, wm, av);
        load_runs(w, bbuf, brow, u * d->n, nstart, nn, wn, bv);
        for (uint32_t i = 0; i < l->nregs; i++) {
            int32_t idx[TJ_MAX_RANK];
            tj_layout_reg_index(l, i, idx);
            cur[i] = multiply_add(w, av[idx[0]], bv[idx[1]], cur[i]);
        }
    }
    return lw_loop_end(w, &lp, cur);
}

/* Runs of 4 rows and 4 columns a thread, tpw_n lanes along n (8 or more:
 * a quarter warp reads 128 contiguous bytes of b and one run of a, a
 * broadcast), wpc_n warps along n and the others along m; NULL when the
 * tile is too small for it (replicas). */
static const tj_layout *fma_blocks(lw *w, const int32_t *shape, int32_t tpw_n, int32_t wpc_n)
{
    int32_t spt[2] = {FMA_RUN, FMA_RUN}, tpw[2] = {TJ_WARP_SIZE / tpw_n, tpw_n}, wpc[2] = {w->nwarps / wpc_n, wpc_n};
    int8_t order[2] = {1, 0};
    if (wpc[0] < 1 || shape[0] % (spt[0] * tpw[0] * wpc[0]) || shape[1] % (spt[1] * tpw[1] * wpc[1]))
        return NULL;
    const tj_layout *l = tj_layout_blocked(w->c, 2, shape, spt, tpw, wpc, order);
    return l && !tj_layout_has_replicas(l) ? l : NULL;
}

const tj_layout *lw_fma_layout(lw *w, tj_ref dot)
{
    const tj_inst *in = &w->src->insts[dot];
    const tj_type_info *ri = lw_src_type(w, dot);
    lw_mma plan;
    if (ri->rank != 2 || ri->dtype != TJ_DT_F32 || lw_src_type(w, in->args[0])->dtype != TJ_DT_F32 ||
        lw_src_type(w, in->args[1])->dtype != TJ_DT_F32 || lw_mma_plan(w, dot, &plan))
        return NULL;
    /* whole rows in a warp first (row reductions of the result, as in
     * attention, stay in the warp), with the fewest lanes along n */
    for (int32_t tpw_n = 8; tpw_n <= TJ_WARP_SIZE; tpw_n *= 2) {
        const tj_layout *l = fma_blocks(w, ri->shape, tpw_n, 1);
        if (l)
            return l;
    }
    for (int32_t wpc_n = 2; wpc_n <= w->nwarps; wpc_n *= 2) {
        const tj_layout *l = fma_blocks(w, ri->shape, 8, wpc_n);
        if (l)
            return l;
    }
    return NULL;
}

int lw_lower_dot(lw *w, tj_ref r)
{
    lw_mma plan;
    if (lw_mma_plan(w, r, &plan))
        return lw_lower_mma(w, r, &plan);
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *l = lw_layout_of(w, r);
    const tj_type_info *ai = lw_src_type(w, in->args[0]), *ri = lw_src_type(w, r);
    const lw_val *a = lw_val_of(w, in->args[0]), *b = lw_val_of(w, in->args[1]);
    dot_shape d = {.rank = ri->rank, .batched = ri->rank == 3};
    if (!l || !a->regs || !b->regs || (d.rank != 2 && d.rank != 3))
        return lw_error(w, "internal error: malformed dot");
    d.batch = d.batched ? ri->shape[0] : 1;
    d.m = ri->shape[d.rank - 2];
    d.n = ri->shape[d.rank - 1];
    d.k = ai->shape[d.rank - 1];
    tj_dtype acc_dt = ri->dtype;
    tj_ref *acc = in->nargs > 2 && in->args[2] ? lw_regs_in(w, in->args[2], l) : NULL;
    if (in->nargs > 2 && in->args[2] && !acc)
        return 1;
    tj_ref *init = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        init[i] = acc ? acc[i] : lw_const_int(w, acc_dt, 0);
    lw_smem_begin(w);
    tj_ref *out = blocked_applies(w, &d, l, a, b, acc_dt) ? blocked_product(w, &d, l, a, b, init)
                                                          : scalar_product(w, &d, l, a, b, init);
    lw_smem_end(w);
    lw_set_regs(w, r, l, out);
    return 0;
}
