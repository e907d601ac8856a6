/* f16 and bf16 conversions with round-to-nearest-even.
 *
 * Both formats are encoded from a double by one routine, so a double
 * rounds to f16 or bf16 in a single step (f64 -> f32 -> f16 would round
 * twice and could be off by one ulp on ties). Floats convert through it
 * exactly, since every float is a double. */
#include <string.h>

#include "tilejit/ir.h"

typedef struct half_format {
    int mbits; /* stored mantissa bits */
    int ebits; /* exponent bits */
} half_format;

static const half_format f16_format = {10, 5};
static const half_format bf16_format = {7, 8};

static uint16_t encode_half(double x, half_format fmt)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    uint64_t mag = b & 0x7fffffffffffffffull;
    int bias = (1 << (fmt.ebits - 1)) - 1;
    uint32_t inf = ((1u << fmt.ebits) - 1) << fmt.mbits;
    if (mag > 0x7ff0000000000000ull) /* NaN: quiet, sign kept */
        return (uint16_t)(sign | inf | (1u << (fmt.mbits - 1)));
    if (mag >= (uint64_t)(1023 + bias + 1) << 52) /* >= 2^(emax+1), inf included */
        return (uint16_t)(sign | inf);
    int e = (int)(mag >> 52) - 1023;
    uint64_t m = (mag & ((1ull << 52) - 1)) | (e > -1023 ? 1ull << 52 : 0);
    /* Drop the bits below the target's ulp: more of them in its subnormal range. */
    int shift = 52 - fmt.mbits + (e < 1 - bias ? 1 - bias - e : 0);
    if (shift > 54) /* below half the smallest subnormal: rounds to zero */
        return sign;
    uint64_t r = m >> shift, rest = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rest > half || (rest == half && (r & 1)))
        r++; /* a carry out of the mantissa moves into the exponent: still right */
    uint32_t bits = e >= 1 - bias ? ((uint32_t)(e + bias - 1) << fmt.mbits) + (uint32_t)r : (uint32_t)r;
    return (uint16_t)(sign | (bits < inf ? bits : inf));
}

uint16_t tj_f64_to_f16(double d) { return encode_half(d, f16_format); }
uint16_t tj_f64_to_bf16(double d) { return encode_half(d, bf16_format); }
uint16_t tj_f32_to_f16(float f) { return encode_half(f, f16_format); }
uint16_t tj_f32_to_bf16(float f) { return encode_half(f, bf16_format); }

float tj_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man) { /* subnormal: normalize into the f32 range */
        int e = 113;
        while (!(man & 0x400)) {
            man <<= 1;
            e--;
        }
        bits = sign | ((uint32_t)e << 23) | ((man & 0x3ff) << 13);
    } else {
        bits = sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float tj_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double tj_round_f16(double d) { return tj_f16_to_f32(tj_f64_to_f16(d)); }
double tj_round_bf16(double d) { return tj_bf16_to_f32(tj_f64_to_bf16(d)); }
