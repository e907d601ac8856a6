/* Kernel parameters in the ABI of docs/simt.md, and the ops that read
 * them: param, dim, stride, tensor_ptr.
 *
 * Parameter i is named p<i> (a scalar), or p<i>_ptr, p<i>_size<a>,
 * p<i>_stride<a> (a tensor), whatever its source name, so that every name
 * is a valid PTX identifier; the source name follows as a comment. */
#include "codegen/ptx/ptx.h"

int px_write_params(ptx_emitter *e, tj_buf *out)
{
    const tj_kernel *k = e->k;
    const char *sep = "";
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tj_param *p = &k->params[i];
        const char *name = px_is_identifier(p->name) ? p->name : ""; /* a comment: keep it inert */
        if (p->rank == 0) {
            tj_buf_printf(out, "%s\t.param .%s p%u /* %s */", sep, px_mem_type(p->dtype), i, name);
        } else {
            tj_buf_printf(out, "%s\t.param .u64 p%u_ptr /* %s */", sep, i, name);
            for (int a = 0; a < p->rank; a++)
                tj_buf_printf(out, ",\n\t.param .s32 p%u_size%d", i, a);
            for (int a = 0; a < p->rank; a++)
                tj_buf_printf(out, ",\n\t.param .s64 p%u_stride%d", i, a);
        }
        sep = ",\n";
    }
    if (k->nparams)
        tj_buf_append(out, "\n", 1);
    px_write_tensor_map_params(e, out);
    return 0;
}

static int expect_result(ptx_emitter *e, tj_ref r, tj_dtype want)
{
    return simt_expect_scalar(&e->walk, r, want) || px_define(e, r, px_inst(e, r)->type) ? -1 : 0;
}

static int emit_param(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    const tj_param *p;
    int tensor = simt_param(&e->walk, r, &p);
    if (tensor)
        return tensor < 0 ? -1 : 0;
    if (expect_result(e, r, p->dtype))
        return -1;
    ptx_reg d = px_val(e, r, 0);
    if (p->dtype == TJ_DT_BOOL) {
        ptx_reg t = px_tmp(e, PX_B32);
        px_ins(e, "ld.param.u8 %s, [p%lld]", RN(t), (long long)in->imm);
        px_ins(e, "setp.ne.u32 %s, %s, 0", RN(d), RN(t));
    } else {
        px_ins(e, "ld.param.%s %s, [p%lld]", px_mem_type(p->dtype), RN(d), (long long)in->imm);
    }
    return 0;
}

int px_emit_param_op(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->op == TJ_OP_PARAM)
        return emit_param(e, r);
    int rank, p = simt_tensor_param(&e->walk, r, &rank);
    if (p < 0)
        return -1;
    switch (in->op) {
    case TJ_OP_TENSOR_PTR:
        if (expect_result(e, r, TJ_DT_U64))
            return -1;
        px_ins(e, "ld.param.u64 %s, [p%d_ptr]", RN(px_val(e, r, 0)), p);
        return 0;
    case TJ_OP_DIM:
        if (expect_result(e, r, TJ_DT_I32))
            return -1;
        px_ins(e, "ld.param.s32 %s, [p%d_size%lld]", RN(px_val(e, r, 0)), p, (long long)in->imm);
        return 0;
    default:
        if (expect_result(e, r, TJ_DT_I64))
            return -1;
        px_ins(e, "ld.param.s64 %s, [p%d_stride%lld]", RN(px_val(e, r, 0)), p, (long long)in->imm);
        return 0;
    }
}
