/* Slots: dtype classes, rounding to a dtype, conversions. */
#include "interp/interp.h"

tj_class tj_dtype_class(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16:
    case TJ_DT_BF16:
    case TJ_DT_F32: return TJ_CL_F32;
    case TJ_DT_F64: return TJ_CL_F64;
    default: return tj_dtype_is_signed(dt) ? TJ_CL_SINT : TJ_CL_UINT; /* bool: unsigned */
    }
}

/* Keeps the low `bits` bits of each slot, sign-extending when `sign`. */
static void wrap_slots(tj_slot *s, uint32_t n, int bits, int sign)
{
    uint64_t mask = ((uint64_t)1 << bits) - 1, top = (uint64_t)1 << (bits - 1);
    if (sign)
        for (uint32_t i = 0; i < n; i++)
            s[i].u = ((s[i].u & mask) ^ top) - top;
    else
        for (uint32_t i = 0; i < n; i++)
            s[i].u &= mask;
}

void tj_round_slots(tj_dtype dt, tj_slot *s, uint32_t n)
{
    switch (dt) {
    case TJ_DT_BOOL:
        for (uint32_t i = 0; i < n; i++)
            s[i].i = s[i].u != 0;
        break;
    case TJ_DT_I8:
    case TJ_DT_I16:
    case TJ_DT_I32: wrap_slots(s, n, tj_dtype_bits(dt), 1); break;
    case TJ_DT_U8:
    case TJ_DT_U16:
    case TJ_DT_U32: wrap_slots(s, n, tj_dtype_bits(dt), 0); break;
    case TJ_DT_F16:
        for (uint32_t i = 0; i < n; i++)
            s[i].f = tj_round_f16(s[i].f);
        break;
    case TJ_DT_BF16:
        for (uint32_t i = 0; i < n; i++)
            s[i].f = tj_round_bf16(s[i].f);
        break;
    default: break; /* i64, u64, f32 (computed in float), f64 */
    }
}

tj_slot tj_slot_from_int(tj_dtype dt, int64_t v)
{
    tj_slot s = {.i = v};
    tj_round_slots(dt, &s, 1);
    return s;
}

tj_slot tj_slot_from_double(tj_dtype dt, double v)
{
    tj_slot s = {.f = dt == TJ_DT_F32 ? (double)(float)v : v};
    tj_round_slots(dt, &s, 1);
    return s;
}

int64_t tj_slot_to_i64(tj_dtype dt, tj_slot s)
{
    if (tj_dtype_is_signed(dt) || s.u <= (uint64_t)INT64_MAX)
        return s.i;
    return INT64_MAX;
}
