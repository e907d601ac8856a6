/* dot through the matrix atom with its result in registers (CUDA target).
 *
 * The c fragment of PTX's m16n8 atoms is a blocked layout: lane l = 4g + q
 * holds rows g and g + 8, columns 2q and 2q + 1 of an atom. With warps
 * spread wm x wn (warp bits: columns low, rows high) and the atoms of a
 * warp interleaved with the other warps' (8-row and 8-column granules),
 *
 *     blocked<spt = [1, 2], tpw = [8, 4], wpc = [wm, wn], order = [1, 0]>
 *
 * holds exactly the c fragments of every warp's atoms: register (i0, i1) of
 * a thread is element (i0 % 2) * 2 + (i1 % 2) of atom (i0 / 2, i1 / 2). So
 * the dot's result takes that layout, elementwise ops, reductions and
 * stores work on it like on any blocked layout, and a fragment is made
 * from (mma_pack) or taken apart into (mma_unpack) registers in place, with
 * no shared memory. Atom k of warp row wi covers rows 8 wi + 16 wm k (+ g)
 * and, for its second half, 8 wm rows further (mma_load's `half`).
 *
 * A 16-bit a operand already in the c layout of the same warp rows (wn = 1,
 * as FlashAttention's P) is packed into a fragments from registers too. */
#include "lower/lower.h"

enum { LANES_ROWS = 8, LANES_COLS = 4, COLS_PER_LANE = 2 };

/* The warp grid for register results: every warp at work (wm * wn =
 * warps), whole 16-row atom pairs and 8-column granules per warp. A product
 * that only accumulates (`acc = dot(a, b, acc)` in a loop) takes the grid
 * that loads the fewest fragment bytes per k step; any other takes wn = 1
 * when it fits: a warp then holds whole rows, so row reductions stay in the
 * warp and the result can feed another dot's a from registers. */
int lw_mma_regs_grid(const lw *w, lw_mma *p, int accumulates)
{
    int64_t best = -1;
    for (int wn = 1; wn <= w->nwarps; wn *= 2) {
        int wm = w->nwarps / wn;
        if (p->m % (TJ_MMA_M * wm) || p->n % (TJ_MMA_N * wn))
            continue;
        int64_t tm = p->m / (TJ_MMA_M * wm), tn = p->n / (TJ_MMA_N * wn);
        int64_t bytes = (tm * TJ_MMA_M + tn * TJ_MMA_N) * p->katom * p->size;
        if (best >= 0 && (!accumulates || bytes >= best))
            continue;
        best = bytes;
        p->wm = wm;
        p->wn = wn;
        p->tm = tm;
        p->tn = tn;
    }
    return best >= 0;
}

static const tj_layout *fragment_layout(lw *w, int64_t rows, int64_t cols, int wm, int wn)
{
    int32_t shape[2] = {(int32_t)rows, (int32_t)cols}, spt[2] = {1, COLS_PER_LANE};
    int32_t tpw[2] = {LANES_ROWS, LANES_COLS}, wpc[2] = {wm, wn};
    int8_t order[2] = {1, 0};
    return lw_intern(w, tj_layout_blocked(w->c, 2, shape, spt, tpw, wpc, order));
}

const tj_layout *lw_mma_result_layout(lw *w, const lw_mma *p)
{
    return fragment_layout(w, p->m, p->n, p->wm, p->wn);
}

/* Register of element e (0..3: (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1))
 * of atom (i, j), in the layout of n columns per warp (2 tn registers a row). */
static uint32_t c_register(const lw_mma *p, int64_t i, int64_t j, int e)
{
    int64_t i0 = 2 * i + e / 2, i1 = 2 * j + e % 2;
    return (uint32_t)(i0 * 2 * p->tn + i1);
}

tj_ref *lw_mma_pack_c(lw *w, const lw_mma *p, const tj_ref *regs)
{
    int32_t four = 4;
    tj_type vec = tj_type_tile(w->c, TJ_DT_F32, 1, &four);
    tj_type ct = tj_type_fragment(w->c, TJ_MMA_C, TJ_DT_F32);
    tj_ref *c = lw_new_regs(w, (uint32_t)(p->tm * p->tn));
    for (int64_t i = 0; i < p->tm; i++) {
        for (int64_t j = 0; j < p->tn; j++) {
            tj_ref parts[4];
            for (int e = 0; e < 4; e++)
                parts[e] = regs[c_register(p, i, j, e)];
            tj_ref v = lw_emit(w, TJ_OP_PACK, vec, parts, 4);
            c[i * p->tn + j] = lw_emit(w, TJ_OP_MMA_PACK, ct, &v, 1);
            w->dst->insts[c[i * p->tn + j]].imm = TJ_MMA_C;
        }
    }
    return c;
}

tj_ref *lw_mma_unpack_c(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *c)
{
    int32_t four = 4;
    tj_type vec = tj_type_tile(w->c, TJ_DT_F32, 1, &four);
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (int64_t i = 0; i < p->tm; i++) {
        for (int64_t j = 0; j < p->tn; j++) {
            tj_ref v = lw_emit(w, TJ_OP_MMA_UNPACK, vec, &c[i * p->tn + j], 1);
            for (int e = 0; e < 4; e++) {
                tj_ref x = lw_emit(w, TJ_OP_EXTRACT, lw_sty(w, TJ_DT_F32), &v, 1);
                w->dst->insts[x].imm = e;
                regs[c_register(p, i, j, e)] = x;
            }
        }
    }
    return regs;
}

/* The a fragments of every k step (pre[step * tm + i]) packed from the
 * registers of a 16-bit operand in the c layout of this dot's warp rows;
 * NULL when the operand is laid out otherwise. Slot s of the a fragment of
 * atom i, k step kk is element (g + 8 (s / 2 % 2), 2q + s % 2 + 8 (s / 4)):
 * register (2 i + s / 2 % 2, 4 kk + 2 (s / 4) + s % 2). */
tj_ref *lw_mma_a_from_registers(lw *w, const lw_mma *p, tj_ref a)
{
    const lw_val *v = lw_val_of(w, a);
    if (p->in == TJ_DT_F32 || p->wn != 1 || !v->regs ||
        !tj_layout_equal(v->lay, fragment_layout(w, p->m, p->k, p->wm, 1)))
        return NULL;
    int64_t steps = p->k / p->katom, per_row = p->k / (LANES_COLS * COLS_PER_LANE) * 2;
    int32_t eight = 8;
    tj_type vec = tj_type_tile(w->c, p->in, 1, &eight), at = tj_type_fragment(w->c, TJ_MMA_A, p->in);
    tj_ref *pre = lw_new_regs(w, (uint32_t)(steps * p->tm));
    for (int64_t kk = 0; kk < steps; kk++) {
        for (int64_t i = 0; i < p->tm; i++) {
            tj_ref parts[8];
            for (int s = 0; s < 8; s++) {
                int64_t i0 = 2 * i + s / 2 % 2, i1 = 4 * kk + 2 * (s / 4) + s % 2;
                parts[s] = v->regs[i0 * per_row + i1];
            }
            tj_ref x = lw_emit(w, TJ_OP_PACK, vec, parts, 8);
            tj_ref f = pre[kk * p->tm + i] = lw_emit(w, TJ_OP_MMA_PACK, at, &x, 1);
            w->dst->insts[f].imm = TJ_MMA_A;
        }
    }
    return pre;
}
