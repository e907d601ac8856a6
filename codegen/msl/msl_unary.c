/* Elementwise unary ops: neg, not, abs and the float math functions.
 * f32 uses the precise:: functions (the generated source does not depend
 * on the fast-math compile option for them); f16/bf16 compute in f32 with
 * the fast:: ones, whose error is far below their rounding, as the PTX
 * generator uses the hardware approximations there. */
#include "codegen/msl/msl.h"

/* The metal:: function of a math op and whether it has fast:: and
 * precise:: variants; NULL for ops spelled otherwise. */
static const char *math_name(tj_op op, int *variants)
{
    *variants = 1;
    switch (op) {
    case TJ_OP_EXP: return "exp";
    case TJ_OP_EXP2: return "exp2";
    case TJ_OP_LOG: return "log";
    case TJ_OP_LOG2: return "log2";
    case TJ_OP_SQRT: return "sqrt";
    case TJ_OP_RSQRT: return "rsqrt";
    case TJ_OP_SIN: return "sin";
    case TJ_OP_COS: return "cos";
    case TJ_OP_TANH: return "tanh";
    case TJ_OP_FLOOR: *variants = 0; return "floor";
    case TJ_OP_CEIL: *variants = 0; return "ceil";
    default: return NULL;
    }
}

/* op(x) on a float expression x (the compute form). */
static msl_str float_math(msl_emitter *e, tj_op op, int fast, const char *x)
{
    const char *ns = fast ? "fast::" : "precise::";
    int variants;
    const char *name = math_name(op, &variants);
    if (name)
        return ms_fmt("metal::%s%s(%s)", variants ? ns : "", name, x);
    if (op == TJ_OP_SIGMOID)
        return ms_fmt("1.0f / (1.0f + metal::%sexp(-(%s)))", ns, x);
    ms_need(e, MH_ERF);
    return ms_fmt("tj_erf(%s)", x);
}

/* neg and abs only touch the sign bit (NaN payloads are kept). */
static msl_str sign_op(tj_op op, tj_dtype dt, const char *x)
{
    int neg = op == TJ_OP_NEG;
    if (dt == TJ_DT_BF16)
        return ms_fmt("ushort(%s %s)", x, neg ? "^ 0x8000u" : "& 0x7FFFu");
    if (dt == TJ_DT_F16)
        return ms_fmt("metal::as_type<half>(ushort(metal::as_type<ushort>(%s) %s))", x, neg ? "^ 0x8000u" : "& 0x7FFFu");
    return neg ? ms_fmt("-%s", x) : ms_fmt("metal::fabs(%s)", x);
}

static int float_unary(msl_emitter *e, tj_ref r, tj_dtype dt, const char *x, msl_str *v)
{
    tj_op op = ms_inst(e, r)->op;
    if (op == TJ_OP_NEG || op == TJ_OP_ABS) {
        *v = sign_op(op, dt, x);
        return 0;
    }
    if (op == TJ_OP_NOT)
        return ms_fail(e, r, "'not' is not defined on %s", tj_dtype_name(dt));
    msl_str m = float_math(e, op, ms_is_half(dt), ms_widen(e, dt, x).s);
    *v = ms_narrow(e, dt, m.s);
    return 0;
}

/* Integers wrap: neg and abs of the most negative value give itself. */
static int int_unary(msl_emitter *e, tj_ref r, tj_dtype dt, const char *x, msl_str *v)
{
    const char *t = ms_type(dt), *u = ms_wrap_type(dt);
    switch (ms_inst(e, r)->op) {
    case TJ_OP_NEG: *v = ms_fmt("%s(0 - %s(%s))", t, u, x); return 0;
    case TJ_OP_NOT: *v = ms_fmt("%s(~%s)", t, x); return 0;
    case TJ_OP_POPC: *v = ms_fmt("%s(metal::popcount(%s))", t, x); return 0;
    case TJ_OP_ABS:
        *v = tj_dtype_is_signed(dt) ? ms_fmt("%s(%s < 0 ? 0 - %s(%s) : %s(%s))", t, x, u, x, u, x) : ms_fmt("%s", x);
        return 0;
    default:
        return ms_fail(e, r, "'%s' takes floats, not %s", tj_op_get(ms_inst(e, r)->op)->name, tj_dtype_name(dt));
    }
}

int ms_emit_unary(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    int w = ms_elem_type(e, in->type, &dt);
    if (w <= 0)
        return ms_fail(e, r, "the operand must be a scalar or a vector");
    if (ms_operand_check(e, r, 0, (uint32_t)w, dt) || ms_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        msl_str x = ms_arg(e, r, 0, (uint32_t)i), v;
        int rc;
        if (dt == TJ_DT_BOOL)
            rc = in->op == TJ_OP_NOT ? (v = ms_fmt("!%s", x.s), 0)
                                     : ms_fail(e, r, "'%s' is not defined on bool", tj_op_get(in->op)->name);
        else if (tj_dtype_is_float(dt))
            rc = float_unary(e, r, dt, x.s, &v);
        else
            rc = int_unary(e, r, dt, x.s, &v);
        if (rc)
            return -1;
        ms_line(e, "%s %s = %s;", ms_type(dt), ms_var(e, r, (uint32_t)i).s, v.s);
    }
    return 0;
}
