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
    return 0;
}

/* The parameter index of operand 0 of r, which must be a tensor param;
 * -1 after reporting. */
static int tensor_param(ptx_emitter *e, tj_ref r, int *rank)
{
    const tj_inst *in = px_inst(e, r);
    const tj_inst *p = in->nargs ? px_inst(e, in->args[0]) : NULL;
    if (!p || p->op != TJ_OP_PARAM || p->imm < 0 || p->imm >= (int64_t)e->k->nparams ||
        e->k->params[p->imm].rank == 0)
        return px_fail(e, r, "operand 0 must be a tensor parameter");
    *rank = e->k->params[p->imm].rank;
    if (in->op != TJ_OP_TENSOR_PTR && (in->imm < 0 || in->imm >= *rank))
        return px_fail(e, r, "axis %lld out of range for a rank-%d tensor", (long long)in->imm, *rank);
    return (int)p->imm;
}

static int expect_result(ptx_emitter *e, tj_ref r, tj_dtype want)
{
    tj_dtype dt;
    if (px_elem_type(e, px_inst(e, r)->type, &dt) != 1 || dt != want)
        return px_fail(e, r, "the result must be %s", tj_dtype_name(want));
    return px_define(e, r, px_inst(e, r)->type);
}

static int emit_param(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->imm < 0 || in->imm >= (int64_t)e->k->nparams)
        return px_fail(e, r, "parameter index %lld out of range", (long long)in->imm);
    const tj_param *p = &e->k->params[in->imm];
    const tj_type_info *ti = tj_type_get(e->c, in->type);
    if (ti->kind == TJ_TK_TENSOR) {
        if (p->rank == 0 || ti->rank != p->rank)
            return px_fail(e, r, "the type does not match parameter '%s'", p->name ? p->name : "");
        e->defined[r] = 1; /* a group of params, read by dim/stride/tensor_ptr */
        return 0;
    }
    if (p->rank != 0)
        return px_fail(e, r, "parameter '%s' is a tensor", p->name ? p->name : "");
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
    int rank, p = tensor_param(e, r, &rank);
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
