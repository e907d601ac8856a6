/* Dtype spellings in PTX, the f32 compute form of f16/bf16, the wrapping
 * of small integers, and the bool conversions every op family shares. */
#include <stdio.h>
#include <string.h>

#include "codegen/ptx/ptx.h"

ptx_cls px_dtype_cls(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL: return PX_PRED;
    case TJ_DT_I64: case TJ_DT_U64: return PX_B64;
    case TJ_DT_F16: case TJ_DT_BF16: return PX_B16;
    case TJ_DT_F32: return PX_F32;
    case TJ_DT_F64: return PX_F64;
    default: return PX_B32;
    }
}

const char *px_mem_type(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL: case TJ_DT_U8: return "u8";
    case TJ_DT_I8: return "s8";
    case TJ_DT_I16: return "s16";
    case TJ_DT_U16: return "u16";
    case TJ_DT_I32: return "s32";
    case TJ_DT_U32: return "u32";
    case TJ_DT_I64: return "s64";
    case TJ_DT_U64: return "u64";
    case TJ_DT_F16: case TJ_DT_BF16: return "b16";
    case TJ_DT_F32: return "f32";
    default: return "f64";
    }
}

const char *px_cls_type(ptx_cls cls)
{
    static const char *const names[PX_NCLS] = {"pred", "b16", "b32", "b64", "f32", "f64"};
    return names[cls];
}

const char *px_int_type(tj_dtype dt)
{
    if (dt == TJ_DT_I64)
        return "s64";
    if (dt == TJ_DT_U64)
        return "u64";
    return tj_dtype_is_signed(dt) ? "s32" : "u32";
}

int px_is_small_int(tj_dtype dt)
{
    return dt == TJ_DT_I8 || dt == TJ_DT_I16 || dt == TJ_DT_U8 || dt == TJ_DT_U16;
}

static int is_half(tj_dtype dt) { return dt == TJ_DT_F16 || dt == TJ_DT_BF16; }

ptx_reg px_widen(ptx_emitter *e, tj_dtype dt, ptx_reg v)
{
    if (!is_half(dt))
        return v;
    ptx_reg f = px_tmp(e, PX_F32);
    if (dt == TJ_DT_F16) {
        px_ins(e, "cvt.f32.f16 %s, %s", RN(f), RN(v));
    } else if (e->sm >= 90) {
        px_ins(e, "cvt.f32.bf16 %s, %s", RN(f), RN(v));
    } else { /* bf16 is the high half of an f32 */
        ptx_reg z = px_tmp(e, PX_B16);
        px_ins(e, "mov.b16 %s, 0", RN(z));
        px_ins(e, "mov.b32 %s, {%s, %s}", RN(f), RN(z), RN(v));
    }
    return f;
}

ptx_reg px_compute_dst(ptx_emitter *e, tj_dtype dt, ptx_reg d)
{
    return is_half(dt) ? px_tmp(e, PX_F32) : d;
}

void px_wrap_small(ptx_emitter *e, tj_dtype dt, ptx_reg d)
{
    switch (dt) {
    case TJ_DT_I8: px_ins(e, "bfe.s32 %s, %s, 0, 8", RN(d), RN(d)); break;
    case TJ_DT_I16: px_ins(e, "bfe.s32 %s, %s, 0, 16", RN(d), RN(d)); break;
    case TJ_DT_U8: px_ins(e, "and.b32 %s, %s, 255", RN(d), RN(d)); break;
    case TJ_DT_U16: px_ins(e, "and.b32 %s, %s, 65535", RN(d), RN(d)); break;
    default: break;
    }
}

void px_narrow(ptx_emitter *e, tj_dtype dt, ptx_reg d, ptx_reg computed)
{
    if (dt == TJ_DT_F16)
        px_ins(e, "cvt.rn.f16.f32 %s, %s", RN(d), RN(computed));
    else if (dt == TJ_DT_BF16)
        px_ins(e, "cvt.rn.bf16.f32 %s, %s", RN(d), RN(computed));
    else {
        px_mov(e, d, computed);
        px_wrap_small(e, dt, d);
    }
}

ptx_rname px_f32_imm(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    ptx_rname n;
    snprintf(n.s, sizeof n.s, "0f%08X", bits);
    return n;
}

ptx_rname px_f64_imm(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    ptx_rname n;
    snprintf(n.s, sizeof n.s, "0d%016llX", (unsigned long long)bits);
    return n;
}

void px_select(ptx_emitter *e, ptx_reg d, ptx_reg c, ptx_reg a, ptx_reg b)
{
    if (d.cls != PX_PRED) {
        px_ins(e, "selp.%s %s, %s, %s, %s", px_cls_type(d.cls), RN(d), RN(a), RN(b), RN(c));
        return;
    }
    ptx_reg t = px_tmp(e, PX_PRED), f = px_tmp(e, PX_PRED);
    px_ins(e, "and.pred %s, %s, %s", RN(t), RN(c), RN(a));
    px_ins(e, "not.pred %s, %s", RN(f), RN(c));
    px_ins(e, "and.pred %s, %s, %s", RN(f), RN(f), RN(b));
    px_ins(e, "or.pred %s, %s, %s", RN(d), RN(t), RN(f));
}

void px_from_bool(ptx_emitter *e, tj_dtype dt, ptx_reg d, ptx_reg c)
{
    switch (dt) {
    case TJ_DT_BOOL: px_mov(e, d, c); break;
    case TJ_DT_F16: px_ins(e, "selp.b16 %s, 0x3C00, 0x0000, %s", RN(d), RN(c)); break;
    case TJ_DT_BF16: px_ins(e, "selp.b16 %s, 0x3F80, 0x0000, %s", RN(d), RN(c)); break;
    case TJ_DT_F32: px_ins(e, "selp.f32 %s, 0f3F800000, 0f00000000, %s", RN(d), RN(c)); break;
    case TJ_DT_F64:
        px_ins(e, "selp.f64 %s, 0d3FF0000000000000, 0d0000000000000000, %s", RN(d), RN(c));
        break;
    default: px_ins(e, "selp.%s %s, 1, 0, %s", px_cls_type(d.cls), RN(d), RN(c)); break;
    }
}

void px_to_bool(ptx_emitter *e, tj_dtype dt, ptx_reg p, ptx_reg v)
{
    switch (dt) {
    case TJ_DT_BOOL: px_mov(e, p, v); break;
    case TJ_DT_F16: case TJ_DT_BF16: { /* any bit but the sign: NaN counts */
        ptx_reg t = px_tmp(e, PX_B16);
        px_ins(e, "and.b16 %s, %s, 0x7FFF", RN(t), RN(v));
        px_ins(e, "setp.ne.b16 %s, %s, 0", RN(p), RN(t));
        break;
    }
    case TJ_DT_F32: px_ins(e, "setp.neu.f32 %s, %s, 0f00000000", RN(p), RN(v)); break;
    case TJ_DT_F64: px_ins(e, "setp.neu.f64 %s, %s, 0d0000000000000000", RN(p), RN(v)); break;
    default: px_ins(e, "setp.ne.%s %s, %s, 0", px_cls_type(v.cls), RN(p), RN(v)); break;
    }
}
