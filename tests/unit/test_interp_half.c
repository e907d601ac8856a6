/* f16 / bf16 conversions against independent references: the compiler's
 * _Float16 (libgcc's conversions) and the classic bf16 rounding bit trick. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "tilejit/interp.h"

__extension__ typedef _Float16 ref_half;

static uint16_t ref_f16_bits(double d)
{
    ref_half h = (ref_half)d;
    uint16_t b;
    memcpy(&b, &h, sizeof b);
    return b;
}

static float ref_f16_value(uint16_t b)
{
    ref_half h;
    memcpy(&h, &b, sizeof b);
    return (float)h;
}

/* bf16 round-to-nearest-even of a float that is not NaN. */
static uint16_t ref_bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A deterministic stream of float bit patterns covering every exponent. */
static uint32_t next_bits(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

static int is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static int is_nan_bf16(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }

Test(half, f16_known_values)
{
    cr_assert_eq(tj_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(tj_f32_to_f16(-2.0f), 0xc000);
    cr_assert_eq(tj_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(tj_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(tj_f32_to_f16(65520.0f), 0x7c00, "ties at the top round to inf");
    cr_assert_eq(tj_f32_to_f16(1e10f), 0x7c00);
    cr_assert_eq(tj_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(tj_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(tj_f32_to_f16(ldexpf(1, -24)), 0x0001, "smallest subnormal");
    cr_assert_eq(tj_f32_to_f16(ldexpf(1, -25)), 0x0000, "half of it: tie to even, 0");
    cr_assert_eq(tj_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
    cr_assert_eq(tj_f32_to_f16(ldexpf(3, -25)), 0x0002, "1.5 ulp: tie to even, 2");
    cr_assert_eq(tj_f32_to_f16(ldexpf(1, -14)), 0x0400, "smallest normal");
    cr_assert_eq(tj_f32_to_f16(ldexpf(1023, -24) + ldexpf(1, -25)), 0x0400, "subnormal carries to normal");
    cr_assert_eq(tj_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00, "tie to even (down)");
    cr_assert_eq(tj_f32_to_f16(1.0f + ldexpf(3, -11)), 0x3c02, "tie to even (up)");
    cr_assert(is_nan16(tj_f32_to_f16(NAN)));
    cr_assert(isnan(tj_f16_to_f32(0x7e00)));
    cr_assert_eq(tj_f16_to_f32(0x0001), ldexpf(1, -24));
    cr_assert_eq(tj_f16_to_f32(0x03ff), ldexpf(1023, -24));
    cr_assert_eq(tj_f16_to_f32(0xfbff), -65504.0f);
    cr_assert(signbit(tj_f16_to_f32(0x8000)) && tj_f16_to_f32(0x8000) == 0);
}

Test(half, f16_decode_every_pattern)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float got = tj_f16_to_f32((uint16_t)h), want = ref_f16_value((uint16_t)h);
        if (is_nan16((uint16_t)h)) {
            cr_assert(isnan(got), "0x%04x", h);
            continue;
        }
        cr_assert(memcmp(&got, &want, sizeof got) == 0, "0x%04x: %g vs %g", h, got, want);
        cr_assert_eq(tj_f32_to_f16(got), h, "round trip 0x%04x", h);
    }
}

Test(half, f16_encode_matches_reference)
{
    uint64_t s = 1;
    for (int i = 0; i < 2000000; i++) {
        float f = bits_float(next_bits(&s));
        if (isnan(f))
            continue;
        cr_assert_eq(tj_f32_to_f16(f), ref_f16_bits(f), "%a", (double)f);
    }
    /* every tie and neighbour around each f16 value */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double lo = tj_f16_to_f32((uint16_t)h), hi = tj_f16_to_f32((uint16_t)(h + 1));
        double mid = (lo + hi) / 2;
        double probes[] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY), -mid};
        for (int p = 0; p < 4; p++)
            cr_assert_eq(tj_f64_to_f16(probes[p]), ref_f16_bits(probes[p]), "%a", probes[p]);
    }
}

Test(half, f64_rounds_once)
{
    /* just above a tie: a detour through float would see the tie and round down */
    double d = 1.0 + ldexp(1, -11) + ldexp(1, -40);
    cr_assert_eq(tj_f64_to_f16(d), 0x3c01);
    cr_assert_eq(tj_f64_to_f16(d), ref_f16_bits(d));
    double b = 1.0 + ldexp(1, -8) + ldexp(1, -40);
    cr_assert_eq(tj_f64_to_bf16(b), 0x3f81);
    cr_assert_eq(tj_f64_to_bf16(1e300), 0x7f80);
    cr_assert_eq(tj_f64_to_bf16(-1e-300), 0x8000);
}

Test(half, bf16_known_values)
{
    cr_assert_eq(tj_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(tj_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80, "tie to even (down)");
    cr_assert_eq(tj_f32_to_bf16(1.0f + ldexpf(3, -8)), 0x3f82, "tie to even (up)");
    cr_assert_eq(tj_f32_to_bf16(3.3895314e38f), 0x7f7f);
    cr_assert_eq(tj_f32_to_bf16(FLT_MAX), 0x7f80, "rounds up to inf");
    cr_assert_eq(tj_f32_to_bf16(ldexpf(1, -133)), 0x0001, "smallest subnormal");
    cr_assert_eq(tj_f32_to_bf16(ldexpf(1, -134)), 0x0000);
    cr_assert(is_nan_bf16(tj_f32_to_bf16(NAN)));
    cr_assert(is_nan_bf16(tj_f32_to_bf16(-NAN)));
    cr_assert_eq(tj_bf16_to_f32(0xc040), -3.0f);
}

Test(half, bf16_every_pattern_and_random)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = tj_bf16_to_f32((uint16_t)h);
        if (is_nan_bf16((uint16_t)h))
            cr_assert(isnan(f));
        else
            cr_assert_eq(tj_f32_to_bf16(f), h, "round trip 0x%04x", h);
    }
    uint64_t s = 7;
    for (int i = 0; i < 2000000; i++) {
        float f = bits_float(next_bits(&s));
        if (!isnan(f))
            cr_assert_eq(tj_f32_to_bf16(f), ref_bf16_bits(f), "%a", (double)f);
    }
}
