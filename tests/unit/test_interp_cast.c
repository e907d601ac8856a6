/* cast: float -> int truncation with saturation and NaN -> 0, int wrapping,
 * -> bool as != 0, and f16/bf16 rounding from every source type. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "tj_test_util.h"

__extension__ typedef _Float16 ref_half;

/* out[i] = cast<to>(in[i]) for n elements. */
static void run_cast(tj_dtype from, tj_dtype to, const void *in, void *out, int n)
{
    tt_kb kb;
    tt_begin(&kb, "cast", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref x = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "x", from, "N"), zero, n), TJ_NONE, TJ_NONE);
    tt_store(&kb, tt_slice1(&kb, tt_param(&kb, "y", to, "N"), zero, n), tt_cast(&kb, x, to), TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor((void *)in, from, 1, n), tt_tensor(out, to, 1, n)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
}

Test(cast, float_to_int_saturates)
{
    float in[] = {3.7f, -3.7f, NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 2147483520.0f, -2147483648.0f, -0.5f};
    int32_t want[] = {3, -3, 0, INT_MAX, INT_MIN, INT_MAX, INT_MIN, 2147483520, INT_MIN, 0};
    int32_t out[10];
    run_cast(TJ_DT_F32, TJ_DT_I32, in, out, 10);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(out[i], want[i], "%g -> %d", (double)in[i], out[i]);
    uint8_t u8[10], wu8[] = {3, 0, 0, 255, 0, 255, 0, 255, 0, 0};
    run_cast(TJ_DT_F32, TJ_DT_U8, in, u8, 10);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(u8[i], wu8[i], "%g -> u8 %d", (double)in[i], u8[i]);
    int8_t i8[10], wi8[] = {3, -3, 0, 127, -128, 127, -128, 127, -128, 0};
    run_cast(TJ_DT_F32, TJ_DT_I8, in, i8, 10);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(i8[i], wi8[i], "%g -> i8 %d", (double)in[i], i8[i]);
}

Test(cast, wide_float_to_int)
{
    double in[] = {1e19, -1e19, 9.2e18, 0x1p63, -0x1p63, 2e19, NAN, 18446744073709549568.0};
    int64_t out[8];
    run_cast(TJ_DT_F64, TJ_DT_I64, in, out, 8);
    cr_assert(out[0] == INT64_MAX && out[1] == INT64_MIN && out[2] == (int64_t)9.2e18);
    cr_assert(out[3] == INT64_MAX && out[4] == INT64_MIN && out[6] == 0);
    uint64_t u[8];
    run_cast(TJ_DT_F64, TJ_DT_U64, in, u, 8);
    cr_assert(u[0] == 10000000000000000000ull && u[1] == 0 && u[5] == UINT64_MAX && u[6] == 0);
    cr_assert(u[7] == 18446744073709549568ull);
    ref_half h[] = {(ref_half)65504.0f, (ref_half)-300.5f}; /* f16 sources too */
    int16_t s[2];
    run_cast(TJ_DT_F16, TJ_DT_I16, h, s, 2);
    cr_assert(s[0] == INT16_MAX && s[1] == -300);
}

Test(cast, int_to_int_wraps)
{
    int32_t in[] = {300, -129, -1, 65536 + 7, INT_MIN};
    int8_t i8[5];
    run_cast(TJ_DT_I32, TJ_DT_I8, in, i8, 5);
    cr_assert(i8[0] == 44 && i8[1] == 127 && i8[2] == -1 && i8[3] == 7 && i8[4] == 0);
    uint32_t u32[5];
    run_cast(TJ_DT_I32, TJ_DT_U32, in, u32, 5);
    cr_assert(u32[2] == 0xffffffffu && u32[4] == 0x80000000u);
    int64_t i64[5];
    run_cast(TJ_DT_I32, TJ_DT_I64, in, i64, 5);
    cr_assert(i64[2] == -1 && i64[4] == INT_MIN, "sign extension");
    uint64_t big[] = {0xffffffffffffffffull, 0x8000000000000000ull};
    int64_t sb[2];
    run_cast(TJ_DT_U64, TJ_DT_I64, big, sb, 2);
    cr_assert(sb[0] == -1 && sb[1] == INT64_MIN);
    uint16_t u16[2];
    run_cast(TJ_DT_U64, TJ_DT_U16, big, u16, 2);
    cr_assert(u16[0] == 0xffff && u16[1] == 0);
}

Test(cast, to_bool_is_nonzero)
{
    float f[] = {0.0f, -0.0f, NAN, 0.5f, -INFINITY};
    uint8_t b[5];
    run_cast(TJ_DT_F32, TJ_DT_BOOL, f, b, 5);
    cr_assert(b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 1 && b[4] == 1);
    int32_t i[] = {0, 256, -1, 2};
    run_cast(TJ_DT_I32, TJ_DT_BOOL, i, b, 4);
    cr_assert(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 1, "256 is true, not wrapped to 0");
    uint8_t t[] = {1, 0};
    float back[2];
    run_cast(TJ_DT_BOOL, TJ_DT_F32, t, back, 2);
    cr_assert(back[0] == 1.0f && back[1] == 0.0f);
    int32_t ib[2];
    run_cast(TJ_DT_BOOL, TJ_DT_I32, t, ib, 2);
    cr_assert(ib[0] == 1 && ib[1] == 0);
}

Test(cast, to_f16_rounds_to_nearest_even)
{
    float f[] = {65520.0f, 65519.0f, 1e-8f, 3e-8f, 1.0f + 0x1p-11f, -1e9f, NAN, 0.1f};
    ref_half h[8];
    run_cast(TJ_DT_F32, TJ_DT_F16, f, h, 8);
    cr_assert(isinf((float)h[0]) && (float)h[1] == 65504.0f);
    cr_assert((float)h[2] == 0.0f && (float)h[3] == 0x1p-24f, "underflow and subnormal");
    cr_assert((float)h[4] == 1.0f && isinf((float)h[5]) && (float)h[5] < 0 && isnan((float)h[6]));
    cr_assert((float)h[7] == (float)(ref_half)0.1f);
    /* f64 rounds once: just above a tie goes up */
    double d[] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40};
    ref_half hd[2];
    run_cast(TJ_DT_F64, TJ_DT_F16, d, hd, 2);
    cr_assert((float)hd[0] == 1.0f + 0x1p-10f);
    uint16_t bd[2];
    run_cast(TJ_DT_F64, TJ_DT_BF16, d, bd, 2);
    cr_assert_eq(bd[1], 0x3f81);
}

Test(cast, int_to_float_rounds_once)
{
    int32_t i[] = {16777217, 65519, 65520, -65536, 2049};
    float f[5];
    run_cast(TJ_DT_I32, TJ_DT_F32, i, f, 5);
    cr_assert(f[0] == 16777216.0f);
    ref_half h[5];
    run_cast(TJ_DT_I32, TJ_DT_F16, i, h, 5);
    cr_assert((float)h[1] == 65504.0f && isinf((float)h[2]) && isinf((float)h[3]) && (float)h[4] == 2048.0f);
    /* 2^60 + 2^52 + 1 is just above the bf16 tie between 2^60 and 2^60 + 2^53;
     * a plain conversion to double loses the 1 and ties down to even */
    int64_t big[] = {(int64_t)1 << 60 | (int64_t)1 << 52 | 1, -((int64_t)1 << 60 | (int64_t)1 << 52 | 1),
                     (int64_t)1 << 60 | (int64_t)1 << 52};
    uint16_t b[3];
    run_cast(TJ_DT_I64, TJ_DT_BF16, big, b, 3);
    cr_assert_eq(tj_bf16_to_f32(b[0]), 0x1p60f + 0x1p53f);
    cr_assert_eq(tj_bf16_to_f32(b[1]), -(0x1p60f + 0x1p53f));
    cr_assert_eq(tj_bf16_to_f32(b[2]), 0x1p60f, "an exact tie goes to even");
    uint64_t um[] = {UINT64_MAX};
    float uf[1];
    run_cast(TJ_DT_U64, TJ_DT_F32, um, uf, 1);
    cr_assert(uf[0] == 0x1p64f);
}

Test(cast, between_half_formats)
{
    ref_half h[] = {(ref_half)1.0f, (ref_half)65504.0f, (ref_half)0x1p-24f, (ref_half)(1.0f + 0x1p-10f)};
    uint16_t b[4];
    run_cast(TJ_DT_F16, TJ_DT_BF16, h, b, 4);
    cr_assert(b[0] == 0x3f80 && tj_bf16_to_f32(b[1]) == 65536.0f && tj_bf16_to_f32(b[2]) == 0x1p-24f);
    cr_assert(tj_bf16_to_f32(b[3]) == 1.0f, "1 + 2^-10 rounds down in bf16");
    uint16_t bb[] = {tj_f32_to_bf16(1e10f), tj_f32_to_bf16(1e-10f)};
    ref_half hh[2];
    run_cast(TJ_DT_BF16, TJ_DT_F16, bb, hh, 2);
    cr_assert(isinf((float)hh[0]) && (float)hh[1] == 0.0f);
}
