/* Constants and the elementwise binary ops (arithmetic, bitwise, shifts,
 * max/min, compare, select, fma) with the semantics of docs/ir.md. Vectors
 * go component by component. Integer arithmetic is done in the unsigned
 * type of its width (uint or ulong) so that wrapping is defined in MSL and
 * C++ alike, and narrowed back by a constructor cast; f16/bf16 compute in
 * float and round back. */
#include <string.h>

#include "codegen/msl/msl.h"

int ms_emit_const(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    if (ms_elem_type(e, in->type, &dt) != 1)
        return ms_fail(e, r, "a constant must be a scalar");
    if (ms_define(e, r, in->type))
        return -1;
    ms_line(e, "%s v%u = %s;", ms_type(dt), r, ms_literal(dt, in->imm, in->fimm).s);
    return 0;
}

/* ---- integers ------------------------------------------------------------ */

/* The integer type of the helpers (tj_div, tj_ipow) a dtype computes in:
 * int, uint, long or ulong. */
static const char *int_compute_type(tj_dtype dt)
{
    int sign = tj_dtype_is_signed(dt);
    if (tj_dtype_size(dt) == 8)
        return sign ? "long" : "ulong";
    return sign ? "int" : "uint";
}

static msl_str int_binary(msl_emitter *e, tj_op op, tj_dtype dt, const char *x, const char *y)
{
    const char *t = ms_type(dt), *u = ms_wrap_type(dt), *ct = int_compute_type(dt);
    int wide = tj_dtype_size(dt) == 8, sign = tj_dtype_is_signed(dt);
    const char *bits = wide ? "64ul" : "32u";
    int plain = !strcmp(t, u); /* uint and ulong wrap as they are */
    switch (op) {
    case TJ_OP_ADD: return plain ? ms_fmt("%s + %s", x, y) : ms_fmt("%s(%s(%s) + %s(%s))", t, u, x, u, y);
    case TJ_OP_SUB: return plain ? ms_fmt("%s - %s", x, y) : ms_fmt("%s(%s(%s) - %s(%s))", t, u, x, u, y);
    case TJ_OP_MUL: return plain ? ms_fmt("%s * %s", x, y) : ms_fmt("%s(%s(%s) * %s(%s))", t, u, x, u, y);
    case TJ_OP_AND: return ms_fmt("%s(%s & %s)", t, x, y);
    case TJ_OP_OR: return ms_fmt("%s(%s | %s)", t, x, y);
    case TJ_OP_XOR: return ms_fmt("%s(%s ^ %s)", t, x, y);
    case TJ_OP_MAX: return ms_fmt("(%s > %s ? %s : %s)", x, y, x, y);
    case TJ_OP_MIN: return ms_fmt("(%s < %s ? %s : %s)", x, y, x, y);
    case TJ_OP_DIV: case TJ_OP_REM:
        ms_need(e, MH_DIV);
        return ms_fmt("%s(tj_%s(%s(%s), %s(%s)))", t, op == TJ_OP_DIV ? "div" : "rem", ct, x, ct, y);
    case TJ_OP_POW:
        ms_need(e, MH_IPOW);
        return ms_fmt("%s(tj_ipow(%s(%s), %s(%s)))", t, ct, x, ct, y);
    case TJ_OP_SHL: /* amounts outside [0, bits) give 0; narrow types drop the rest */
        return ms_fmt("%s(%s(%s) < %s ? %s(%s) << %s(%s) : 0)", t, u, y, bits, u, x, u, y);
    default: /* shr: arithmetic on signed types; out-of-range amounts give 0 or the sign */
        if (sign)
            return ms_fmt("%s(%s(%s) < %s ? %s(%s) >> %s(%s) : (%s < 0 ? -1 : 0))", t, u, y, bits, ct, x, u, y, x);
        return ms_fmt("%s(%s(%s) < %s ? %s(%s) >> %s(%s) : 0)", t, u, y, bits, u, x, u, y);
    }
}

/* ---- floats and bool --------------------------------------------------------- */

static msl_str float_binary(msl_emitter *e, tj_op op, tj_dtype dt, const char *x, const char *y)
{
    msl_str a = ms_widen(e, dt, x), b = ms_widen(e, dt, y), v;
    switch (op) {
    case TJ_OP_ADD: v = ms_fmt("%s + %s", a.s, b.s); break;
    case TJ_OP_SUB: v = ms_fmt("%s - %s", a.s, b.s); break;
    case TJ_OP_MUL: v = ms_fmt("%s * %s", a.s, b.s); break;
    case TJ_OP_DIV: v = ms_fmt("%s / %s", a.s, b.s); break;
    case TJ_OP_REM: v = ms_fmt("metal::precise::fmod(%s, %s)", a.s, b.s); break;
    case TJ_OP_POW: v = ms_fmt("metal::precise::pow(%s, %s)", a.s, b.s); break;
    default:
        ms_need(e, MH_FMINMAX);
        v = ms_fmt("tj_f%s(%s, %s)", op == TJ_OP_MAX ? "max" : "min", a.s, b.s);
        break;
    }
    return ms_is_half(dt) ? ms_narrow(e, dt, v.s) : v;
}

static int is_float_op(tj_op op)
{
    return op == TJ_OP_ADD || op == TJ_OP_SUB || op == TJ_OP_MUL || op == TJ_OP_DIV || op == TJ_OP_REM ||
           op == TJ_OP_POW || op == TJ_OP_MAX || op == TJ_OP_MIN;
}

/* max is or, min is and on bool (the interpreter's 0/1 order). */
static const char *bool_op(tj_op op)
{
    switch (op) {
    case TJ_OP_AND: case TJ_OP_MIN: return "&&";
    case TJ_OP_OR: case TJ_OP_MAX: return "||";
    case TJ_OP_XOR: return "!=";
    default: return NULL;
    }
}

msl_str ms_binary_expr(msl_emitter *e, tj_op op, tj_dtype dt, const char *x, const char *y)
{
    if (dt == TJ_DT_BOOL)
        return ms_fmt("%s %s %s", x, bool_op(op), y);
    return tj_dtype_is_float(dt) ? float_binary(e, op, dt, x, y) : int_binary(e, op, dt, x, y);
}

int ms_emit_binary(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    int w = ms_elem_type(e, in->type, &dt);
    if (w <= 0)
        return ms_fail(e, r, "operands must be scalars or vectors");
    if (ms_operand_check(e, r, 0, (uint32_t)w, dt) || ms_operand_check(e, r, 1, (uint32_t)w, dt))
        return -1;
    if (dt == TJ_DT_BOOL && !bool_op(in->op))
        return ms_fail(e, r, "'%s' is not defined on bool", tj_op_get(in->op)->name);
    if (tj_dtype_is_float(dt) && !is_float_op(in->op))
        return ms_fail(e, r, "'%s' is not defined on %s", tj_op_get(in->op)->name, tj_dtype_name(dt));
    if (ms_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        msl_str x = ms_arg(e, r, 0, (uint32_t)i), y = ms_arg(e, r, 1, (uint32_t)i);
        ms_line(e, "%s %s = %s;", ms_type(dt), ms_var(e, r, (uint32_t)i).s,
                ms_binary_expr(e, in->op, dt, x.s, y.s).s);
    }
    return 0;
}

/* ---- compare, select, fma ------------------------------------------------------ */

int ms_emit_compare(msl_emitter *e, tj_ref r)
{
    static const char *const cmp[] = {"==", "!=", "<", "<=", ">", ">="};
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt, rdt;
    int w = ms_elem_type(e, in->type, &rdt);
    if (w <= 0 || rdt != TJ_DT_BOOL || in->nargs != 2)
        return ms_fail(e, r, "a comparison gives bool scalars or vectors");
    if (ms_operand_check(e, r, 0, (uint32_t)w, TJ_DT_INVALID))
        return -1;
    ms_elem_type(e, ms_inst(e, in->args[0])->type, &dt);
    if (ms_operand_check(e, r, 1, (uint32_t)w, dt) || ms_check_dtype(e, r, dt) || ms_define(e, r, in->type))
        return -1;
    /* floats: != is true on NaN (unordered), the others false, as in C */
    const char *op = cmp[in->op - TJ_OP_EQ];
    for (int i = 0; i < w; i++) {
        msl_str x = ms_arg(e, r, 0, (uint32_t)i), y = ms_arg(e, r, 1, (uint32_t)i);
        if (dt == TJ_DT_BF16)
            x = ms_widen(e, dt, x.s), y = ms_widen(e, dt, y.s);
        ms_line(e, "bool %s = %s %s %s;", ms_var(e, r, (uint32_t)i).s, x.s, op, y.s);
    }
    return 0;
}

int ms_emit_select_op(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    int w = ms_elem_type(e, in->type, &dt);
    if (w <= 0 || in->nargs != 3)
        return ms_fail(e, r, "select takes a condition and two scalars or vectors");
    if (ms_operand_check(e, r, 0, (uint32_t)w, TJ_DT_BOOL) || ms_operand_check(e, r, 1, (uint32_t)w, dt) ||
        ms_operand_check(e, r, 2, (uint32_t)w, dt) || ms_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++)
        ms_line(e, "%s %s = %s ? %s : %s;", ms_type(dt), ms_var(e, r, (uint32_t)i).s,
                ms_arg(e, r, 0, (uint32_t)i).s, ms_arg(e, r, 1, (uint32_t)i).s, ms_arg(e, r, 2, (uint32_t)i).s);
    return 0;
}

/* Floats: fused in f32 (f16/bf16 rounded once after). Integers: the
 * wrapped a * b + c. */
int ms_emit_fma(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    int w = ms_elem_type(e, in->type, &dt);
    if (w <= 0 || in->nargs != 3 || dt == TJ_DT_BOOL)
        return ms_fail(e, r, "fma takes three numeric scalars or vectors");
    for (uint32_t a = 0; a < 3; a++)
        if (ms_operand_check(e, r, a, (uint32_t)w, dt))
            return -1;
    if (ms_define(e, r, in->type))
        return -1;
    const char *t = ms_type(dt), *u = ms_wrap_type(dt);
    for (int i = 0; i < w; i++) {
        msl_str x = ms_arg(e, r, 0, (uint32_t)i), y = ms_arg(e, r, 1, (uint32_t)i), z = ms_arg(e, r, 2, (uint32_t)i);
        msl_str v;
        if (tj_dtype_is_float(dt)) {
            msl_str f = ms_fmt("metal::fma(%s, %s, %s)", ms_widen(e, dt, x.s).s, ms_widen(e, dt, y.s).s,
                               ms_widen(e, dt, z.s).s);
            v = ms_narrow(e, dt, f.s);
        } else {
            v = ms_fmt("%s(%s(%s) * %s(%s) + %s(%s))", t, u, x.s, u, y.s, u, z.s);
        }
        ms_line(e, "%s %s = %s;", t, ms_var(e, r, (uint32_t)i).s, v.s);
    }
    return 0;
}
