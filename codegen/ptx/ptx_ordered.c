/* Ordered global memory: ld_acquire as ld.acquire.gpu, st_release as
 * st.release.gpu (PTX ISA memory consistency model: device scope, so a
 * program of another CTA that acquires a value released here sees every
 * write ordered before the release). One 4- or 8-byte element each; the
 * predicate guards the access, and a load whose predicate is off leaves
 * the default (or 0). */
#include <stdio.h>

#include "codegen/ptx/ptx.h"

typedef struct guard_text {
    char s[40];
} guard_text;

/* "@%p3 " before a predicated access, "" before an unconditional one. */
static guard_text guard_of(const ptx_emitter *e, tj_ref r, uint32_t pred_at)
{
    guard_text g = {{0}};
    tj_ref p = px_inst(e, r)->args[pred_at];
    if (p)
        snprintf(g.s, sizeof g.s, "@%s ", RN(px_val(e, p, 0)));
    return g;
}

static int ordered_value(ptx_emitter *e, tj_ref r, tj_type t, tj_dtype *dt)
{
    if (px_elem_type(e, t, dt) != 1 || (tj_dtype_size(*dt) != 4 && tj_dtype_size(*dt) != 8) ||
        (!tj_dtype_is_int(*dt) && !tj_dtype_is_float(*dt)))
        return px_fail(e, r, "%s takes one 4- or 8-byte number", tj_op_get(px_inst(e, r)->op)->name);
    return 0;
}

static int address_of(ptx_emitter *e, tj_ref r, uint32_t pred_at, ptx_reg *addr)
{
    const tj_inst *in = px_inst(e, r);
    if (px_operand_check(e, r, 0, 1, TJ_DT_U64) ||
        (in->args[pred_at] && px_operand_check(e, r, pred_at, 1, TJ_DT_BOOL)))
        return e->failed ? -1 : px_fail(e, r, "takes an address and a predicate");
    *addr = px_val(e, in->args[0], 0);
    return 0;
}

static int emit_acquire(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    ptx_reg addr;
    if (ordered_value(e, r, in->type, &dt) || address_of(e, r, 1, &addr) ||
        (in->args[2] && px_operand_check(e, r, 2, 1, dt)) || px_define(e, r, in->type))
        return -1;
    ptx_reg d = px_val(e, r, 0);
    if (in->args[2])
        px_mov(e, d, px_operand(e, r, 2, 0));
    else
        px_zero(e, d);
    px_ins(e, "%sld.acquire.gpu.global.b%d %s, [%s]", guard_of(e, r, 1).s, 8 * tj_dtype_size(dt), RN(d), RN(addr));
    return 0;
}

static int emit_release(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    ptx_reg addr;
    if (!in->args[1])
        return px_fail(e, r, "st_release needs a value");
    if (ordered_value(e, r, px_inst(e, in->args[1])->type, &dt) || address_of(e, r, 2, &addr) ||
        px_operand_check(e, r, 1, 1, dt))
        return -1;
    e->defined[r] = 1;
    px_ins(e, "%sst.release.gpu.global.b%d [%s], %s", guard_of(e, r, 2).s, 8 * tj_dtype_size(dt), RN(addr),
           RN(px_val(e, in->args[1], 0)));
    return 0;
}

int px_emit_ordered(ptx_emitter *e, tj_ref r)
{
    if (px_inst(e, r)->nargs != 3)
        return px_fail(e, r, "%s takes 3 operands", tj_op_get(px_inst(e, r)->op)->name);
    return px_inst(e, r)->op == TJ_OP_LD_ACQUIRE ? emit_acquire(e, r) : emit_release(e, r);
}
