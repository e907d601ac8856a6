/* cast with the rules of docs/ir.md: float -> int truncates toward zero and
 * saturates, NaN gives 0 (PTX cvt.rzi does both for 32- and 64-bit
 * results; narrower ones are clamped after); int -> int wraps; -> bool is
 * != 0; -> f16/bf16 rounds to nearest even in one step. bitcast moves the
 * bits unchanged. */
#include "codegen/ptx/ptx.h"

/* The cvt type of an integer in its register form. */
static const char *int_cvt_type(tj_dtype dt)
{
    if (dt == TJ_DT_I64 || dt == TJ_DT_U64)
        return dt == TJ_DT_I64 ? "s64" : "u64";
    return tj_dtype_is_signed(dt) ? "s32" : "u32";
}

static void int_to_int(ptx_emitter *e, tj_dtype to, tj_dtype from, ptx_reg d, ptx_reg v)
{
    if (d.cls == v.cls)
        px_mov(e, d, v);
    else if (d.cls == PX_B64) /* the source is extended by its own signedness */
        px_ins(e, "cvt.%s.%s %s, %s", int_cvt_type(to), int_cvt_type(from), RN(d), RN(v));
    else
        px_ins(e, "cvt.u32.u64 %s, %s", RN(d), RN(v));
    px_wrap_small(e, to, d);
}

/* Saturating float -> integer: cvt.rzi clamps to 32 or 64 bits, and 8-
 * and 16-bit results are clamped further. NaN is selected to 0: cvt gives
 * the most negative integer for it where the result or source is 64-bit
 * (seen on sm_90). */
static void float_to_int(ptx_emitter *e, tj_dtype to, ptx_reg d, ptx_reg f)
{
    const char *ft = px_cls_type(f.cls);
    ptx_reg nan = px_tmp(e, PX_PRED);
    px_ins(e, "cvt.rzi.%s.%s %s, %s", int_cvt_type(to), ft, RN(d), RN(f));
    px_ins(e, "setp.nan.%s %s, %s, %s", ft, RN(nan), RN(f), RN(f));
    px_ins(e, "selp.%s %s, 0, %s, %s", px_cls_type(d.cls), RN(d), RN(d), RN(nan));
    static const struct { tj_dtype dt; const char *lo, *hi; } clamp[] = {
        {TJ_DT_I8, "-128", "127"}, {TJ_DT_I16, "-32768", "32767"}, {TJ_DT_U8, NULL, "255"}, {TJ_DT_U16, NULL, "65535"},
    };
    for (size_t i = 0; i < sizeof clamp / sizeof *clamp; i++)
        if (clamp[i].dt == to) {
            const char *it = clamp[i].lo ? "s32" : "u32";
            if (clamp[i].lo)
                px_ins(e, "max.%s %s, %s, %s", it, RN(d), RN(d), clamp[i].lo);
            px_ins(e, "min.%s %s, %s, %s", it, RN(d), RN(d), clamp[i].hi);
        }
}

/* Sets the lowest mantissa bit of f when `inexact` holds: rounding toward
 * zero and then forcing the sticky bit ("round to odd") keeps the
 * information a second, nearest-even rounding to bf16 needs to be exact. */
static void round_to_odd(ptx_emitter *e, ptx_reg f, ptx_reg inexact)
{
    ptx_reg bits = px_tmp(e, PX_B32);
    px_ins(e, "mov.b32 %s, %s", RN(bits), RN(f));
    px_ins(e, "@%s or.b32 %s, %s, 1", RN(inexact), RN(bits), RN(bits));
    px_ins(e, "mov.b32 %s, %s", RN(f), RN(bits));
}

static void int_to_float(ptx_emitter *e, tj_dtype to, tj_dtype from, ptx_reg d, ptx_reg v)
{
    const char *it = int_cvt_type(from);
    if (to == TJ_DT_F32 || to == TJ_DT_F64) {
        px_ins(e, "cvt.rn.%s.%s %s, %s", px_cls_type(d.cls), it, RN(d), RN(v));
    } else if (to == TJ_DT_F16) { /* exact in f32 below 2^24; above, inf either way */
        ptx_reg f = px_tmp(e, PX_F32);
        px_ins(e, "cvt.rn.f32.%s %s, %s", it, RN(f), RN(v));
        px_ins(e, "cvt.rn.f16.f32 %s, %s", RN(d), RN(f));
    } else {
        ptx_reg f = px_tmp(e, PX_F32), back = px_tmp(e, v.cls), ne = px_tmp(e, PX_PRED);
        px_ins(e, "cvt.rz.f32.%s %s, %s", it, RN(f), RN(v));
        px_ins(e, "cvt.rzi.%s.f32 %s, %s", it, RN(back), RN(f));
        px_ins(e, "setp.ne.%s %s, %s, %s", it, RN(ne), RN(back), RN(v));
        round_to_odd(e, f, ne);
        px_ins(e, "cvt.rn.bf16.f32 %s, %s", RN(d), RN(f));
    }
}

/* Between float types; v is in its compute form (f16/bf16 widened). */
static void float_to_float(ptx_emitter *e, tj_dtype to, ptx_reg d, ptx_reg v)
{
    if (to == TJ_DT_F32) {
        if (v.cls == PX_F64)
            px_ins(e, "cvt.rn.f32.f64 %s, %s", RN(d), RN(v));
        else
            px_mov(e, d, v);
    } else if (to == TJ_DT_F64) {
        px_ins(e, "cvt.f64.f32 %s, %s", RN(d), RN(v));
    } else if (v.cls == PX_F32) {
        px_ins(e, "cvt.rn.%s.f32 %s, %s", to == TJ_DT_F16 ? "f16" : "bf16", RN(d), RN(v));
    } else if (to == TJ_DT_F16) {
        px_ins(e, "cvt.rn.f16.f64 %s, %s", RN(d), RN(v));
    } else { /* f64 -> bf16 in one rounding, through round-to-odd f32 */
        ptx_reg f = px_tmp(e, PX_F32), back = px_tmp(e, PX_F64), ne = px_tmp(e, PX_PRED);
        px_ins(e, "cvt.rz.f32.f64 %s, %s", RN(f), RN(v));
        px_ins(e, "cvt.f64.f32 %s, %s", RN(back), RN(f));
        px_ins(e, "setp.neu.f64 %s, %s, %s", RN(ne), RN(back), RN(v));
        round_to_odd(e, f, ne);
        px_ins(e, "cvt.rn.bf16.f32 %s, %s", RN(d), RN(f));
    }
}

static void cast_component(ptx_emitter *e, tj_dtype to, tj_dtype from, ptx_reg d, ptx_reg v)
{
    if (to == from)
        px_mov(e, d, v);
    else if (to == TJ_DT_BOOL)
        px_to_bool(e, from, d, v);
    else if (from == TJ_DT_BOOL)
        px_from_bool(e, to, d, v);
    else if (tj_dtype_is_float(from) && tj_dtype_is_float(to))
        float_to_float(e, to, d, px_widen(e, from, v));
    else if (tj_dtype_is_float(from))
        float_to_int(e, to, d, px_widen(e, from, v));
    else if (tj_dtype_is_float(to))
        int_to_float(e, to, from, d, v);
    else
        int_to_int(e, to, from, d, v);
}

/* bitcast: registers hold f16/bf16 as their b16 bits and 8- and 16-bit
 * integers wrapped in b32, so only those change register size. */
static void bitcast_component(ptx_emitter *e, tj_dtype to, ptx_reg d, ptx_reg v)
{
    if (d.cls == PX_B16 && v.cls == PX_B32)
        px_ins(e, "cvt.u16.u32 %s, %s", RN(d), RN(v));
    else if (d.cls == PX_B32 && v.cls == PX_B16)
        px_ins(e, "cvt.u32.u16 %s, %s", RN(d), RN(v));
    else if (d.cls != v.cls || d.idx != v.idx)
        px_ins(e, "mov.b%d %s, %s", d.cls == PX_B16 ? 16 : d.cls == PX_B64 || d.cls == PX_F64 ? 64 : 32, RN(d), RN(v));
    px_wrap_small(e, to, d);
}

int px_emit_cast(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype to, from;
    int w = px_elem_type(e, in->type, &to);
    if (w <= 0 || px_operand_check(e, r, 0, (uint32_t)w, TJ_DT_INVALID))
        return w <= 0 ? px_fail(e, r, "cast takes a scalar or a vector") : -1;
    px_elem_type(e, px_inst(e, in->args[0])->type, &from);
    if (px_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        ptx_reg d = px_val(e, r, (uint32_t)i), v = px_operand(e, r, 0, (uint32_t)i);
        if (in->op == TJ_OP_BITCAST)
            bitcast_component(e, to, d, v);
        else
            cast_component(e, to, from, d, v);
    }
    return 0;
}
