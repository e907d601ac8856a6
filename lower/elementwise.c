/* Elementwise ops: the same op once per register, on operands read in the
 * result's layout. Scalars are one register held by every thread. */
#include "lower/lower.h"

static tj_ref elem_op(lw *w, const tj_inst *in, tj_dtype dt, const tj_ref *ops)
{
    if (in->op == TJ_OP_CAST)
        return lw_cast(w, ops[0], dt);
    if (in->op == TJ_OP_SELECT)
        return lw_select(w, ops[0], ops[1], ops[2]);
    tj_ref r = lw_emit(w, in->op, lw_sty(w, dt), ops, in->nargs);
    w->dst->insts[r].imm = in->imm;
    return r;
}

tj_ref *lw_elem_regs(lw *w, tj_ref r, const tj_layout *l)
{
    const tj_inst *in = &w->src->insts[r];
    tj_dtype dt = lw_src_type(w, r)->dtype;
    tj_ref *opnd[3];
    if (in->nargs > 3)
        return lw_fail(w, "internal error: elementwise op with %u operands", in->nargs);
    for (uint32_t a = 0; a < in->nargs; a++)
        if (!(opnd[a] = lw_regs_in(w, in->args[a], l)))
            return NULL;
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++) {
        tj_ref ops[3];
        for (uint32_t a = 0; a < in->nargs; a++)
            ops[a] = opnd[a][i];
        regs[i] = elem_op(w, in, dt, ops);
    }
    return regs;
}

int lw_lower_elementwise(lw *w, tj_ref r)
{
    const tj_layout *l = lw_layout_of(w, r);
    tj_ref *regs = l ? lw_elem_regs(w, r, l) : NULL;
    if (!regs)
        return 1;
    lw_set_regs(w, r, l, regs);
    return 0;
}
