/* Asynchronous copies global -> shared: cp_async as cp.async (every arch
 * the generator targets is sm_80 or later), with the byte count as
 * src-size so the rest of the copy is zero-filled (a copy of 0 bytes reads
 * nothing: the bounds check of a tile row past the tensor's end); 16-byte
 * copies bypass L1 (.cg), the smaller ones may only use .ca. */
#include "codegen/ptx/ptx.h"

static int emit_copy(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (px_scalar_operand(e, r, 0, TJ_DT_U32) || px_scalar_operand(e, r, 1, TJ_DT_U64) || px_scalar_operand(e, r, 2, TJ_DT_U32))
        return -1;
    if (in->imm != 4 && in->imm != 8 && in->imm != 16)
        return px_fail(e, r, "cp_async copies 4, 8 or 16 bytes, not %lld", (long long)in->imm);
    ptx_reg dst = px_tmp(e, PX_B32);
    px_ins(e, "add.u32 %s, %s, %s", RN(dst), RN(e->smem_base), RN(px_val(e, in->args[0], 0)));
    px_ins(e, "cp.async.%s.shared.global [%s], [%s], %lld, %s", in->imm == 16 ? "cg" : "ca", RN(dst),
           RN(px_val(e, in->args[1], 0)), (long long)in->imm, RN(px_val(e, in->args[2], 0)));
    return 0;
}

int px_emit_async(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    e->defined[r] = 1;
    switch (in->op) {
    case TJ_OP_CP_ASYNC: return emit_copy(e, r);
    case TJ_OP_CP_ASYNC_COMMIT: px_ins(e, "cp.async.commit_group"); return 0;
    case TJ_OP_CP_ASYNC_WAIT: px_ins(e, "cp.async.wait_group %lld", (long long)in->imm); return 0;
    default: return px_fail(e, r, "internal error: '%s' is not an asynchronous copy", tj_op_get(in->op)->name);
    }
}
