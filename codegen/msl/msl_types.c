/* Dtype spellings in MSL, literals, and the float compute form of f16 and
 * bf16 (docs/ir.md: they compute in f32 and round back). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/msl/msl.h"

const char *ms_type(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL: return "bool";
    case TJ_DT_I8: return "char";
    case TJ_DT_I16: return "short";
    case TJ_DT_I32: return "int";
    case TJ_DT_I64: return "long";
    case TJ_DT_U8: return "uchar";
    case TJ_DT_U16: return "ushort";
    case TJ_DT_U32: return "uint";
    case TJ_DT_U64: return "ulong";
    case TJ_DT_F16: return "half";
    case TJ_DT_BF16: return "ushort"; /* the bits; see docs/metal.md */
    default: return "float";
    }
}

const char *ms_mem_type(tj_dtype dt) { return dt == TJ_DT_BOOL ? "uchar" : ms_type(dt); }

const char *ms_wrap_type(tj_dtype dt) { return tj_dtype_size(dt) == 8 ? "ulong" : "uint"; }

int ms_is_half(tj_dtype dt) { return dt == TJ_DT_F16 || dt == TJ_DT_BF16; }

int ms_check_dtype(msl_emitter *e, tj_ref r, tj_dtype dt)
{
    if (dt == TJ_DT_F64)
        return ms_fail(e, r, "f64 does not exist in Metal (MSL has no double type)");
    return 0;
}

msl_str ms_widen(msl_emitter *e, tj_dtype dt, const char *x)
{
    if (dt == TJ_DT_F16)
        return ms_fmt("float(%s)", x);
    if (dt == TJ_DT_BF16) {
        ms_need(e, MH_BF16);
        return ms_fmt("tj_bf2f(%s)", x);
    }
    return ms_fmt("%s", x);
}

msl_str ms_narrow(msl_emitter *e, tj_dtype dt, const char *x)
{
    if (dt == TJ_DT_F16)
        return ms_fmt("half(%s)", x);
    if (dt == TJ_DT_BF16) {
        ms_need(e, MH_BF16);
        return ms_fmt("tj_f2bf(%s)", x);
    }
    return ms_fmt("%s", x);
}

/* A finite, normal float printed so it reads back exactly, with a suffix;
 * zero, subnormals, infinities and NaN as bit patterns (a compiler might
 * flush subnormal literals; MSL spells no infinity literal). */
static msl_str float_literal(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if (f == 0 && !(bits >> 31))
        return ms_fmt("0.0f");
    if (!isnormal(f))
        return ms_fmt("metal::as_type<float>(0x%08Xu)", bits);
    msl_str s = ms_fmt("%.9g", (double)f);
    if (!strpbrk(s.s, ".e"))
        strcat(s.s, ".0");
    strcat(s.s, "f");
    return s;
}

static msl_str half_literal(uint16_t bits)
{
    float f = tj_f16_to_f32(bits);
    if ((bits & 0x7c00) == 0 || (bits & 0x7c00) == 0x7c00) /* zero, subnormal, inf, NaN */
        return ms_fmt("metal::as_type<half>(ushort(0x%04X))", bits);
    msl_str s = ms_fmt("%.6g", (double)f);
    if (!strpbrk(s.s, ".e"))
        strcat(s.s, ".0");
    strcat(s.s, "h");
    return s;
}

msl_str ms_literal(tj_dtype dt, int64_t i, double f)
{
    switch (dt) {
    case TJ_DT_BOOL: return ms_fmt("%s", i ? "true" : "false");
    case TJ_DT_F16: return half_literal(tj_f64_to_f16(f));
    case TJ_DT_BF16: return ms_fmt("ushort(0x%04X)", tj_f64_to_bf16(f));
    case TJ_DT_F32: case TJ_DT_F64: return float_literal((float)f);
    case TJ_DT_I8: return ms_fmt("char(%d)", (int8_t)i);
    case TJ_DT_I16: return ms_fmt("short(%d)", (int16_t)i);
    case TJ_DT_U8: return ms_fmt("uchar(%u)", (uint8_t)i);
    case TJ_DT_U16: return ms_fmt("ushort(%u)", (uint16_t)i);
    case TJ_DT_I32:
        return (int32_t)i == INT32_MIN ? ms_fmt("int(0x80000000u)") : ms_fmt("%d", (int32_t)i);
    case TJ_DT_U32: return ms_fmt("%uu", (uint32_t)i);
    case TJ_DT_I64:
        return i == INT64_MIN ? ms_fmt("long(0x8000000000000000ul)") : ms_fmt("%lldl", (long long)i);
    default: return ms_fmt("%lluul", (unsigned long long)(uint64_t)i);
    }
}

msl_str ms_zero(tj_dtype dt) { return ms_literal(dt, 0, 0.0); }
