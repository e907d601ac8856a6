/* Where registers are: layouts interned per lowering, and the SIMT values
 * of a register's coordinates and owner test, hoisted to the prologue
 * (they depend only on the thread index). */
#include "lower/lower.h"

const tj_layout *lw_intern(lw *w, const tj_layout *l)
{
    if (!l)
        return NULL;
    for (uint32_t i = 0; i < w->ninterned; i++)
        if (tj_layout_equal(w->interned[i], l))
            return w->interned[i];
    w->interned = tj_grow(w->c, w->interned, &w->icap, w->ninterned + 1, sizeof *w->interned);
    return w->interned[w->ninterned++] = l;
}

const tj_layout *lw_canonical(lw *w, tj_type t)
{
    const tj_type_info *ti = tj_type_get(w->c, t);
    return lw_intern(w, tj_layout_canonical(w->c, ti->rank, ti->shape, w->nwarps, w->vec));
}

const tj_layout *lw_scalar_layout(lw *w)
{
    return lw_intern(w, tj_layout_canonical(w->c, 0, NULL, w->nwarps, w->vec));
}

tj_ref lw_id_bits(lw *w, tj_ref id, uint32_t bits)
{
    if (!bits)
        return lw_const_int(w, TJ_DT_I32, 0);
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref v = bits == TJ_WARP_SIZE - 1 && id == lw_lane(w) ? id : lw_op2(w, TJ_OP_AND, id, lw_const_int(w, TJ_DT_I32, bits));
    v = lw_op2(w, TJ_OP_SHR, v, lw_const_int(w, TJ_DT_I32, lw_low_bit(bits)));
    w->hoisting = was;
    return v;
}

/* The lane's part of the thread's coordinate along fa (BLOCKED roots; a
 * new root kind computes its own thread part here and in lw_tbase). */
static tj_ref lane_part(lw *w, const tj_layout *l, int fa)
{
    const tj_layout *root = l->root;
    tj_ref r = lw_memo_get(w, LW_MEMO_TBASE, root, fa, 1);
    if (r)
        return r;
    int was = w->hoisting;
    w->hoisting = 1;
    r = lw_mul_imm(w, lw_id_bits(w, lw_lane(w), tj_layout_lane_bits(l, fa)), root->espt[fa]);
    w->hoisting = was;
    lw_memo_put(w, LW_MEMO_TBASE, root, fa, 1, r);
    return r;
}

tj_ref lw_tbase(lw *w, const tj_layout *l, int fa)
{
    const tj_layout *root = l->root;
    tj_ref r = lw_memo_get(w, LW_MEMO_TBASE, root, fa, 0);
    if (r)
        return r;
    tj_ref lane = lane_part(w, l, fa);
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref warp = lw_mul_imm(w, lw_id_bits(w, lw_warp(w), tj_layout_warp_bits(l, fa)), root->espt[fa] * root->tpw[fa]);
    r = lw_op2(w, TJ_OP_ADD, lane, warp);
    w->hoisting = was;
    lw_memo_put(w, LW_MEMO_TBASE, root, fa, 0, r);
    return r;
}

static tj_ref raw_coord(lw *w, const tj_layout *l, int fa, int32_t i)
{
    return lw_add_imm(w, lw_tbase(w, l, fa), tj_layout_roff(l, fa, i));
}

tj_ref lw_coord(lw *w, const tj_layout *l, int fa, int32_t i)
{
    if (l->fshape[fa] == 1)
        return lw_const_int(w, TJ_DT_I32, 0);
    tj_ref r = lw_memo_get(w, LW_MEMO_COORD, l, fa, i);
    if (r)
        return r;
    int was = w->hoisting;
    w->hoisting = 1;
    r = raw_coord(w, l, fa, i);
    int32_t n = l->fshape[fa];
    if (lw_raw_ok_static(l, fa, i) != 1)
        r = (n & (n - 1)) == 0 ? lw_op2(w, TJ_OP_AND, r, lw_const_int(w, TJ_DT_I32, n - 1))
                               : lw_op2(w, TJ_OP_REM, r, lw_const_int(w, TJ_DT_I32, n));
    w->hoisting = was;
    lw_memo_put(w, LW_MEMO_COORD, l, fa, i, r);
    return r;
}

/* Whether register i's raw coordinate along fa is below the extent for a
 * thread part of at most tmax: 1 always, 0 never, -1 it depends. */
static int below_static(const tj_layout *l, int fa, int32_t i, int64_t tmax)
{
    int64_t off = tj_layout_roff(l, fa, i);
    if (off + tmax < l->fshape[fa])
        return 1;
    return off >= l->fshape[fa] ? 0 : -1;
}

int lw_raw_ok_static(const tj_layout *l, int fa, int32_t i) { return below_static(l, fa, i, tj_layout_tbase_max(l, fa)); }

int lw_lane_raw_ok_static(const tj_layout *l, int fa, int32_t i)
{
    return below_static(l, fa, i, (int64_t)l->root->espt[fa] * (l->root->tpw[fa] - 1));
}

/* lw_raw_ok, or with `lane_only` lw_lane_raw_ok */
static tj_ref raw_ok_of(lw *w, const tj_layout *l, int fa, int32_t i, int lane_only)
{
    int s = lane_only ? lw_lane_raw_ok_static(l, fa, i) : lw_raw_ok_static(l, fa, i);
    if (s >= 0)
        return s ? TJ_NONE : lw_const_int(w, TJ_DT_BOOL, 0);
    int memo = lane_only ? LW_MEMO_LANE_RAWOK : LW_MEMO_RAWOK;
    tj_ref r = lw_memo_get(w, memo, l, fa, i);
    if (!r) {
        tj_ref base = lane_only ? lane_part(w, l, fa) : lw_tbase(w, l, fa);
        int was = w->hoisting;
        w->hoisting = 1;
        r = lw_op2(w, TJ_OP_LT, lw_add_imm(w, base, tj_layout_roff(l, fa, i)), lw_const_int(w, TJ_DT_I32, l->fshape[fa]));
        w->hoisting = was;
        lw_memo_put(w, memo, l, fa, i, r);
    }
    return r;
}

tj_ref lw_raw_ok(lw *w, const tj_layout *l, int fa, int32_t i) { return raw_ok_of(w, l, fa, i, 0); }
tj_ref lw_lane_raw_ok(lw *w, const tj_layout *l, int fa, int32_t i) { return raw_ok_of(w, l, fa, i, 1); }

static tj_ref owner_of(lw *w, const tj_layout *l, uint32_t reg, int lane_only)
{
    int32_t idx[TJ_MAX_RANK];
    int memo = lane_only ? LW_MEMO_LANE_OWNER : LW_MEMO_OWNER;
    tj_ref r = lw_memo_get(w, memo, l, reg, 0);
    if (r)
        return r == (tj_ref)-1 ? TJ_NONE : r;
    tj_layout_reg_index(l, reg, idx);
    int was = w->hoisting;
    w->hoisting = 1;
    for (int fa = 0; fa < l->frank; fa++)
        r = lw_and(w, r, raw_ok_of(w, l, fa, idx[fa], lane_only));
    w->hoisting = was;
    lw_memo_put(w, memo, l, reg, 0, r ? r : (tj_ref)-1);
    return r;
}

tj_ref lw_owner(lw *w, const tj_layout *l, uint32_t reg) { return owner_of(w, l, reg, 0); }
tj_ref lw_lane_owner(lw *w, const tj_layout *l, uint32_t reg) { return owner_of(w, l, reg, 1); }

tj_ref lw_tile_coord(lw *w, const tj_layout *l, uint32_t reg, int d)
{
    int32_t idx[TJ_MAX_RANK];
    tj_layout_reg_index(l, reg, idx);
    int fa = l->frame_axis[d];
    return lw_coord(w, l, fa, idx[fa]);
}

/* sum(coord[d] * wts[d]) as thread part + constant, when no coordinate of
 * register reg wraps: registers then share the thread part (one value for
 * all of them) and differ by constants, which address arithmetic folds. */
static tj_ref flat_split(lw *w, const tj_layout *l, uint32_t reg, const int64_t *wts)
{
    int32_t idx[TJ_MAX_RANK];
    tj_layout_reg_index(l, reg, idx);
    int64_t off = 0;
    for (int d = 0; d < l->rank; d++) {
        int fa = l->frame_axis[d];
        if (wts[d] && l->fshape[fa] != 1 && lw_raw_ok_static(l, fa, idx[fa]) != 1)
            return TJ_NONE;
        if (l->fshape[fa] != 1)
            off += tj_layout_roff(l, fa, idx[fa]) * wts[d];
    }
    tj_ref sum = lw_const_int(w, TJ_DT_I32, 0);
    for (int d = 0; d < l->rank; d++)
        if (wts[d] && l->fshape[l->frame_axis[d]] != 1)
            sum = lw_op2(w, TJ_OP_ADD, sum, lw_mul_imm(w, lw_tbase(w, l, l->frame_axis[d]), wts[d]));
    return lw_add_imm(w, sum, off);
}

tj_ref lw_flat(lw *w, const tj_layout *l, uint32_t reg, const int64_t *wts)
{
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref sum = flat_split(w, l, reg, wts);
    if (!sum) {
        sum = lw_const_int(w, TJ_DT_I32, 0);
        for (int d = 0; d < l->rank; d++)
            if (wts[d])
                sum = lw_op2(w, TJ_OP_ADD, sum, lw_mul_imm(w, lw_tile_coord(w, l, reg, d), wts[d]));
    }
    w->hoisting = was;
    return sum;
}
