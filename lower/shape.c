/* Shape ops: arange (each register's coordinate), and broadcast, reshape
 * and permute as transfers: free when the layouts line up (the layout
 * assignment tries to make them so), else through shared memory. */
#include "lower/lower.h"

int lw_shape_weights(const lw *w, tj_ref r, int64_t *wts)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r), *si = lw_src_type(w, in->args[0]);
    int64_t strides[TJ_MAX_RANK];
    tj_shape_strides(si->rank, si->shape, strides);
    switch (in->op) {
    case TJ_OP_BROADCAST: /* aligned on the right; size-1 and missing axes repeat */
        for (int d = 0; d < ti->rank; d++) {
            int sa = d - (ti->rank - si->rank);
            wts[d] = sa >= 0 && si->shape[sa] != 1 ? strides[sa] : 0;
        }
        return si->rank > ti->rank;
    case TJ_OP_RESHAPE: /* the row-major order is kept */
        tj_shape_strides(ti->rank, ti->shape, wts);
        return 0;
    case TJ_OP_PERMUTE:
        for (int i = 0; i < ti->rank; i++) {
            if ((uint32_t)i >= in->nlist || in->list[i] < 0 || in->list[i] >= si->rank)
                return 1;
            wts[i] = strides[in->list[i]];
        }
        return 0;
    default: return 1;
    }
}

tj_ref *lw_shape_regs(lw *w, tj_ref r, const tj_layout *l)
{
    const tj_inst *in = &w->src->insts[r];
    tj_ref *regs = lw_new_regs(w, l->nregs);
    if (in->op == TJ_OP_ARANGE) {
        for (uint32_t i = 0; i < l->nregs; i++)
            regs[i] = lw_tile_coord(w, l, i, 0);
        return regs;
    }
    lw_val *src = lw_val_of(w, in->args[0]);
    if (!src->regs)
        return lw_fail(w, "internal error: shape op on a value without registers");
    if (lw_src_type(w, in->args[0])->rank == 0) { /* a splat */
        for (uint32_t i = 0; i < l->nregs; i++)
            regs[i] = src->regs[0];
        return regs;
    }
    int64_t wts[TJ_MAX_RANK];
    if (lw_shape_weights(w, r, wts))
        return lw_fail(w, "internal error: malformed %s", tj_op_get(in->op)->name);
    return lw_transfer(w, src, l, wts);
}

int lw_lower_shape(lw *w, tj_ref r)
{
    const tj_layout *l = lw_layout_of(w, r);
    tj_ref *regs = l ? lw_shape_regs(w, r, l) : NULL;
    if (!regs)
        return 1;
    lw_set_regs(w, r, l, regs);
    return 0;
}
