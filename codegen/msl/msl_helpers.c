/* The MSL helper functions a kernel may need, written before it once each.
 * They carry the semantics of docs/ir.md that MSL leaves undefined or
 * lacks: bf16 conversions with one rounding, division by zero, wrapping
 * powers, saturating float -> integer conversion, NaN-propagating max and
 * min, erf (the PTX generator's polynomials, ptx_math.c), loop trip
 * counts free of overflow. Every float literal has its suffix. */
#include <string.h>

#include "codegen/msl/msl.h"

static const char bf16_text[] =
    "inline float tj_bf2f(ushort b) { return metal::as_type<float>(uint(b) << 16); }\n"
    "inline ushort tj_f2bf(float f) // to nearest even; NaN stays a quiet NaN\n"
    "{\n"
    "    uint u = metal::as_type<uint>(f);\n"
    "    if ((u & 0x7FFFFFFFu) > 0x7F800000u)\n"
    "        return ushort((u >> 16) | 0x40u);\n"
    "    return ushort((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n\n";

static const char int_bf16_text[] =
    "inline ushort tj_u2bf(ulong m, bool neg) // (neg ? -m : m) to bf16 in one rounding\n"
    "{\n"
    "    ushort s = neg ? ushort(0x8000u) : ushort(0u);\n"
    "    if (m < 256ul)\n"
    "        return ushort(s | tj_f2bf(float(m)));\n"
    "    int e = int(metal::as_type<uint>(float(m)) >> 23) - 127; // may be one too big\n"
    "    if (e > 63 || (m >> uint(e)) == 0ul)\n"
    "        e -= 1;\n"
    "    uint sh = uint(e - 7);\n"
    "    ulong keep = m >> sh, rest = m & ((1ul << sh) - 1ul), tie = 1ul << (sh - 1u);\n"
    "    uint bits = (uint(e + 127) << 7) | uint(keep & 0x7Ful);\n"
    "    if (rest > tie || (rest == tie && (keep & 1ul) != 0ul))\n"
    "        bits += 1u;\n"
    "    return ushort(s | bits);\n"
    "}\n\n";

static const char fminmax_text[] =
    "inline float tj_fmax(float x, float y) // NaN if either is; max(-0, +0) = +0\n"
    "{\n"
    "    if (x != x || y != y)\n"
    "        return x != x ? x : y;\n"
    "    return x > y || (x == y && !metal::signbit(x)) ? x : y;\n"
    "}\n"
    "inline float tj_fmin(float x, float y)\n"
    "{\n"
    "    if (x != x || y != y)\n"
    "        return x != x ? x : y;\n"
    "    return x < y || (x == y && metal::signbit(x)) ? x : y;\n"
    "}\n\n";

static const char div_text[] =
    "// Division by zero gives 0; the most negative value / -1 wraps.\n"
    "inline int tj_div(int a, int b) { return b == 0 ? 0 : b == -1 ? int(0u - uint(a)) : a / b; }\n"
    "inline int tj_rem(int a, int b) { return b == 0 || b == -1 ? 0 : a % b; }\n"
    "inline long tj_div(long a, long b) { return b == 0l ? 0l : b == -1l ? long(0ul - ulong(a)) : a / b; }\n"
    "inline long tj_rem(long a, long b) { return b == 0l || b == -1l ? 0l : a % b; }\n"
    "inline uint tj_div(uint a, uint b) { return b == 0u ? 0u : a / b; }\n"
    "inline uint tj_rem(uint a, uint b) { return b == 0u ? 0u : a % b; }\n"
    "inline ulong tj_div(ulong a, ulong b) { return b == 0ul ? 0ul : a / b; }\n"
    "inline ulong tj_rem(ulong a, ulong b) { return b == 0ul ? 0ul : a % b; }\n\n";

static const char ipow_text[] =
    "inline ulong tj_upow(ulong base, ulong e) // repeated product, wrapping\n"
    "{\n"
    "    ulong p = 1ul;\n"
    "    for (; e != 0ul; e >>= 1, base *= base)\n"
    "        if ((e & 1ul) != 0ul)\n"
    "            p *= base;\n"
    "    return p;\n"
    "}\n"
    "// A negative exponent gives 0, except for the bases 1 and -1.\n"
    "inline int tj_ipow(int a, int b)\n"
    "{\n"
    "    if (b < 0)\n"
    "        return a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;\n"
    "    return int(uint(tj_upow(ulong(uint(a)), ulong(b))));\n"
    "}\n"
    "inline long tj_ipow(long a, long b)\n"
    "{\n"
    "    if (b < 0l)\n"
    "        return a == 1l ? 1l : a == -1l ? ((b & 1l) != 0l ? -1l : 1l) : 0l;\n"
    "    return long(tj_upow(ulong(a), ulong(b)));\n"
    "}\n"
    "inline uint tj_ipow(uint a, uint b) { return uint(tj_upow(ulong(a), ulong(b))); }\n"
    "inline ulong tj_ipow(ulong a, ulong b) { return tj_upow(a, b); }\n\n";

static const char erf_text[] =
    "inline float tj_erf(float x) // |x| < 0.75: x*P(x*x); else 1 - t*exp(-x*x + Q(t)), t = 1/(1 + |x|/2)\n"
    "{\n"
    "    if (x != x)\n"
    "        return x;\n"
    "    float ax = metal::fabs(x);\n"
    "    if (ax < 0.75f) {\n"
    "        float z = x * x, p = -0.000675647985f;\n"
    "        p = metal::fma(p, z, 0.00511533208f);\n"
    "        p = metal::fma(p, z, -0.0268351138f);\n"
    "        p = metal::fma(p, z, 0.112833865f);\n"
    "        p = metal::fma(p, z, -0.3761262f);\n"
    "        p = metal::fma(p, z, 1.12837911f);\n"
    "        return x * p;\n"
    "    }\n"
    "    float a = metal::min(ax, 6.0f), t = 1.0f / metal::fma(a, 0.5f, 1.0f), q = 0.301449776f;\n"
    "    q = metal::fma(q, t, -1.40303159f);\n"
    "    q = metal::fma(q, t, 2.60071826f);\n"
    "    q = metal::fma(q, t, -2.33359909f);\n"
    "    q = metal::fma(q, t, 1.07669663f);\n"
    "    q = metal::fma(q, t, -0.525550544f);\n"
    "    q = metal::fma(q, t, 0.188773945f);\n"
    "    q = metal::fma(q, t, 0.35873872f);\n"
    "    q = metal::fma(q, t, 1.0014627f);\n"
    "    q = metal::fma(q, t, -1.26557052f);\n"
    "    float r = 1.0f - metal::precise::exp(metal::fma(-a, a, q)) * t;\n"
    "    return metal::copysign(r, x);\n"
    "}\n\n";

static const char trip_text[] =
    "// Iterations of range(lo, hi, step), free of overflow; step 0 runs none.\n"
    "inline ulong tj_trip_s(long lo, long hi, long step)\n"
    "{\n"
    "    if (step > 0l && hi > lo)\n"
    "        return (ulong(hi) - ulong(lo) - 1ul) / ulong(step) + 1ul;\n"
    "    if (step < 0l && lo > hi)\n"
    "        return (ulong(lo) - ulong(hi) - 1ul) / (0ul - ulong(step)) + 1ul;\n"
    "    return 0ul;\n"
    "}\n"
    "inline ulong tj_trip_u(ulong lo, ulong hi, ulong step)\n"
    "{\n"
    "    return step != 0ul && hi > lo ? (hi - lo - 1ul) / step + 1ul : 0ul;\n"
    "}\n\n";

static const char f2i_text[] =
    "// float -> integer of `bits` bits: toward zero, saturating, NaN gives 0.\n"
    "inline long tj_f2s(float f, int bits)\n"
    "{\n"
    "    ulong top = 1ul << uint(bits - 1);\n"
    "    float lim = float(top);\n"
    "    if (f != f)\n"
    "        return 0l;\n"
    "    if (f >= lim)\n"
    "        return long(top - 1ul);\n"
    "    if (f <= -lim)\n"
    "        return long(0ul - top);\n"
    "    return long(f);\n"
    "}\n"
    "inline ulong tj_f2u(float f, int bits)\n"
    "{\n"
    "    float lim = bits == 64 ? 18446744073709551616.0f : float(1ul << uint(bits));\n"
    "    if (!(f > -1.0f))\n"
    "        return 0ul;\n"
    "    if (f >= lim)\n"
    "        return bits == 64 ? ~0ul : (1ul << uint(bits)) - 1ul;\n"
    "    return f <= 0.0f ? 0ul : ulong(f);\n"
    "}\n\n";

void ms_write_helpers(const msl_emitter *e, tj_buf *out)
{
    static const char *const texts[MH_COUNT] = {
        [MH_BF16] = bf16_text, [MH_INT_BF16] = int_bf16_text, [MH_FMINMAX] = fminmax_text,
        [MH_DIV] = div_text,   [MH_IPOW] = ipow_text,         [MH_ERF] = erf_text,
        [MH_TRIP] = trip_text, [MH_F2I] = f2i_text,
    };
    uint32_t need = e->helpers;
    if (need & (1u << MH_INT_BF16))
        need |= 1u << MH_BF16; /* tj_u2bf uses tj_f2bf */
    for (int h = 0; h < MH_COUNT; h++)
        if (need & (1u << h))
            tj_buf_append(out, texts[h], strlen(texts[h]));
}
