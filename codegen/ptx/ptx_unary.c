/* Elementwise unary ops: neg, not, abs, and the float math functions
 * (their instruction sequences are in ptx_math.c and ptx_math64.c). */
#include "codegen/ptx/ptx.h"

static int is_half(tj_dtype dt) { return dt == TJ_DT_F16 || dt == TJ_DT_BF16; }

static int int_unary(ptx_emitter *e, tj_ref r, tj_dtype dt, ptx_reg d, ptx_reg a)
{
    const char *it = px_int_type(dt), *bits = px_cls_type(d.cls);
    switch (px_inst(e, r)->op) {
    case TJ_OP_NEG: px_ins(e, "sub.%s %s, 0, %s", it, RN(d), RN(a)); break;
    case TJ_OP_NOT: px_ins(e, "not.%s %s, %s", bits, RN(d), RN(a)); break;
    case TJ_OP_POPC: px_ins(e, "popc.b32 %s, %s", RN(d), RN(a)); break;
    case TJ_OP_ABS:
        if (tj_dtype_is_signed(dt)) { /* max(a, -a): |INT_MIN| wraps to INT_MIN */
            ptx_reg n = px_tmp(e, d.cls);
            px_ins(e, "sub.%s %s, 0, %s", it, RN(n), RN(a));
            px_ins(e, "max.%s %s, %s, %s", it, RN(d), RN(a), RN(n));
        } else {
            px_mov(e, d, a);
        }
        break;
    default: return px_fail(e, r, "'%s' is not defined on %s", tj_op_get(px_inst(e, r)->op)->name, tj_dtype_name(dt));
    }
    px_wrap_small(e, dt, d);
    return 0;
}

/* neg and abs of floats only touch the sign bit (NaN payloads kept). */
static int float_sign_op(ptx_emitter *e, tj_op op, tj_dtype dt, ptx_reg d, ptx_reg a)
{
    if (is_half(dt))
        px_ins(e, "%s.b16 %s, %s, %s", op == TJ_OP_NEG ? "xor" : "and", RN(d), RN(a),
               op == TJ_OP_NEG ? "0x8000" : "0x7FFF");
    else
        px_ins(e, "%s.%s %s, %s", op == TJ_OP_NEG ? "neg" : "abs", px_cls_type(d.cls), RN(d), RN(a));
    return 0;
}

static int float_unary(ptx_emitter *e, tj_ref r, tj_dtype dt, ptx_reg d, ptx_reg a)
{
    tj_op op = px_inst(e, r)->op;
    if (op == TJ_OP_NEG || op == TJ_OP_ABS)
        return float_sign_op(e, op, dt, d, a);
    if (op == TJ_OP_NOT)
        return px_fail(e, r, "'not' is not defined on %s", tj_dtype_name(dt));
    ptx_reg wa = px_widen(e, dt, a), cd = px_compute_dst(e, dt, d);
    int rc = px_math(e, op, is_half(dt) || (e->fastmath && dt == TJ_DT_F32), cd, wa);
    if (rc)
        return px_fail(e, r, "'%s' has no PTX sequence for %s", tj_op_get(op)->name, tj_dtype_name(dt));
    px_narrow(e, dt, d, cd);
    return 0;
}

int px_emit_unary(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    int w = px_elem_type(e, in->type, &dt);
    if (w <= 0)
        return px_fail(e, r, "the operand must be a scalar or a vector");
    if (px_operand_check(e, r, 0, (uint32_t)w, dt) || px_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        ptx_reg d = px_val(e, r, (uint32_t)i), a = px_operand(e, r, 0, (uint32_t)i);
        int rc;
        if (dt == TJ_DT_BOOL) {
            rc = in->op == TJ_OP_NOT ? (px_ins(e, "not.pred %s, %s", RN(d), RN(a)), 0)
                                     : px_fail(e, r, "'%s' is not defined on bool", tj_op_get(in->op)->name);
        } else if (tj_dtype_is_float(dt)) {
            rc = float_unary(e, r, dt, d, a);
        } else if (in->op == TJ_OP_NEG || in->op == TJ_OP_NOT || in->op == TJ_OP_ABS || in->op == TJ_OP_POPC) {
            rc = int_unary(e, r, dt, d, a);
        } else {
            rc = px_fail(e, r, "'%s' takes floats, not %s", tj_op_get(in->op)->name, tj_dtype_name(dt));
        }
        if (rc)
            return -1;
    }
    return 0;
}
