/* gather(x, idx): y[i] = x[idx[i]] through shared memory. Every thread
 * stores the elements of x it holds at their coordinates (replicas store
 * the same value), a barrier, then each reads, for every register of the
 * result (idx's layout and shape), the element its index names. The index is
 * clamped to n - 1 taken as unsigned, so a bad one reads inside the
 * buffer (the interpreter reports it: docs/ir.md); the next user of the
 * buffer waits at lw_smem_begin's barrier. */
#include "lower/lower.h"

/* min(idx as unsigned, n - 1): the element's slot, u32 */
static tj_ref clamped(lw *w, tj_ref idx, int64_t n)
{
    tj_dtype ut = lw_smem_size(lw_dt(w, idx)) == 8 ? TJ_DT_U64 : TJ_DT_U32;
    tj_ref i = lw_op2(w, TJ_OP_MIN, lw_cast(w, idx, ut), lw_const_int(w, ut, n - 1));
    return lw_cast(w, i, TJ_DT_U32);
}

int lw_lower_gather(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_val *x = lw_val_of(w, in->args[0]);
    const tj_layout *l = lw_layout_of(w, r);
    if (!l || !x->lay || !x->regs || l->rank != 1 || x->lay->rank != 1)
        return lw_error(w, "internal error: gather takes 1-D tiles");
    tj_ref *idx = lw_regs_in(w, in->args[1], l);
    if (!idx)
        return 1;
    int64_t n = lw_src_type(w, in->args[0])->shape[0];
    tj_dtype dt = lw_dt(w, x->regs[0]);
    int size = lw_smem_size(dt);
    lw_smem_begin(w);
    uint32_t buf = lw_smem_alloc(w, (uint64_t)n * (uint64_t)size);
    if (w->err)
        return 1;
    for (uint32_t s = 0; s < x->lay->nregs; s++)
        lw_smem_store(w, lw_smem_addr(w, buf, lw_tile_coord(w, x->lay, s, 0), size), x->regs[s]);
    lw_barrier(w);
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        regs[i] = lw_smem_load(w, lw_smem_addr(w, buf, clamped(w, idx[i], n), size), dt);
    lw_smem_end(w);
    lw_set_regs(w, r, l, regs);
    return 0;
}
