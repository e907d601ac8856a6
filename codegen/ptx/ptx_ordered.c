/* Ordered global memory: ld_acquire as ld.acquire.gpu, st_release as
 * st.release.gpu (PTX ISA memory consistency model: device scope, so a
 * program of another CTA that acquires a value released here sees every
 * write ordered before the release); ld_relaxed and st_relaxed as
 * ld/st.relaxed.gpu (strong accesses: never torn, seen by other CTAs, no
 * fence). One 4- or 8-byte element each; the predicate guards the access,
 * and a load whose predicate is off leaves the default (or 0). */
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

static int emit_ordered_load(ptx_emitter *e, tj_ref r)
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
    px_ins(e, "%sld.%s.gpu.global.b%d %s, [%s]", guard_of(e, r, 1).s, in->op == TJ_OP_LD_ACQUIRE ? "acquire" : "relaxed",
           8 * tj_dtype_size(dt), RN(d), RN(addr));
    return 0;
}

static int emit_ordered_store(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    ptx_reg addr;
    if (!in->args[1])
        return px_fail(e, r, "%s needs a value", tj_op_get(in->op)->name);
    if (ordered_value(e, r, px_inst(e, in->args[1])->type, &dt) || address_of(e, r, 2, &addr) ||
        px_operand_check(e, r, 1, 1, dt))
        return -1;
    e->defined[r] = 1;
    px_ins(e, "%sst.%s.gpu.global.b%d [%s], %s", guard_of(e, r, 2).s, in->op == TJ_OP_ST_RELEASE ? "release" : "relaxed",
           8 * tj_dtype_size(dt), RN(addr), RN(px_val(e, in->args[1], 0)));
    return 0;
}

int px_emit_ordered(ptx_emitter *e, tj_ref r)
{
    if (px_inst(e, r)->nargs != 3)
        return px_fail(e, r, "%s takes 3 operands", tj_op_get(px_inst(e, r)->op)->name);
    tj_op op = px_inst(e, r)->op;
    return op == TJ_OP_LD_ACQUIRE || op == TJ_OP_LD_RELAXED ? emit_ordered_load(e, r) : emit_ordered_store(e, r);
}
