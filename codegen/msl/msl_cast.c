/* cast with the rules of docs/ir.md: float -> int truncates toward zero and
 * saturates, NaN gives 0 (explicit: out-of-range conversions are
 * undefined in MSL and C++); int -> int wraps; -> bool is != 0 (NaN
 * counts as non-zero); -> f16/bf16 rounds to nearest even in one step.
 * bitcast is as_type: every dtype's variable type has its memory width
 * (bf16 is its ushort bits), so the bits are read unchanged. */
#include <stdio.h>

#include "codegen/msl/msl.h"

/* Saturating float -> integer through tj_f2s/tj_f2u, whose bounds are the
 * type's as floats: 2^(bits-1) (signed) or 2^bits (unsigned) are exact. */
static msl_str float_to_int(msl_emitter *e, tj_dtype to, const char *f)
{
    int bits = tj_dtype_bits(to);
    ms_need(e, MH_F2I);
    if (tj_dtype_is_signed(to))
        return ms_fmt("%s(tj_f2s(%s, %d))", ms_type(to), f, bits);
    return ms_fmt("%s(tj_f2u(%s, %d))", ms_type(to), f, bits);
}

/* Integers to floats: f32 and f16 through float (exact below 2^24, and
 * f16 overflows long before that); bf16 rounds the integer itself, as a
 * float would round a second time. */
static msl_str int_to_float(msl_emitter *e, tj_dtype to, tj_dtype from, const char *x)
{
    if (to == TJ_DT_F32)
        return ms_fmt("float(%s)", x);
    if (to == TJ_DT_F16)
        return ms_fmt("half(float(%s))", x);
    if (tj_dtype_bits(from) <= 16)
        return ms_narrow(e, to, ms_fmt("float(%s)", x).s);
    ms_need(e, MH_INT_BF16);
    if (tj_dtype_is_signed(from))
        return ms_fmt("tj_u2bf(ulong(%s < 0 ? 0 - ulong(%s) : ulong(%s)), %s < 0)", x, x, x, x);
    return ms_fmt("tj_u2bf(ulong(%s), false)", x);
}

static msl_str to_bool(msl_emitter *e, tj_dtype from, const char *x)
{
    if (from == TJ_DT_BF16)
        return ms_fmt("(%s & 0x7FFFu) != 0u", x);
    if (tj_dtype_is_float(from))
        return ms_fmt("%s != 0.0f", ms_widen(e, from, x).s);
    return ms_fmt("%s != 0", x);
}

static msl_str from_bool(tj_dtype to, const char *x)
{
    if (to == TJ_DT_BF16)
        return ms_fmt("ushort(%s ? 0x3F80u : 0u)", x);
    if (to == TJ_DT_F16)
        return ms_fmt("%s ? 1.0h : 0.0h", x);
    if (to == TJ_DT_F32)
        return ms_fmt("%s ? 1.0f : 0.0f", x);
    return ms_fmt("%s(%s ? 1 : 0)", ms_type(to), x);
}

static msl_str cast_component(msl_emitter *e, tj_dtype to, tj_dtype from, const char *x)
{
    if (to == from)
        return ms_fmt("%s", x);
    if (to == TJ_DT_BOOL)
        return to_bool(e, from, x);
    if (from == TJ_DT_BOOL)
        return from_bool(to, x);
    if (tj_dtype_is_float(from) && tj_dtype_is_float(to))
        return ms_narrow(e, to, ms_widen(e, from, x).s); /* the f32 step is exact */
    if (tj_dtype_is_float(from))
        return float_to_int(e, to, ms_widen(e, from, x).s);
    if (tj_dtype_is_float(to))
        return int_to_float(e, to, from, x);
    return ms_fmt("%s(%s)", ms_type(to), x);
}

int ms_emit_cast(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype to, from;
    int w = ms_elem_type(e, in->type, &to);
    if (w <= 0)
        return ms_fail(e, r, "cast takes a scalar or a vector");
    if (ms_operand_check(e, r, 0, (uint32_t)w, TJ_DT_INVALID))
        return -1;
    ms_elem_type(e, ms_inst(e, in->args[0])->type, &from);
    if (ms_check_dtype(e, r, from) || ms_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        msl_str x = ms_arg(e, r, 0, (uint32_t)i);
        msl_str v = in->op == TJ_OP_BITCAST ? ms_fmt("as_type<%s>(%s)", ms_type(to), x.s)
                                            : cast_component(e, to, from, x.s);
        ms_line(e, "%s %s = %s;", ms_type(to), ms_var(e, r, (uint32_t)i).s, v.s);
    }
    return 0;
}
