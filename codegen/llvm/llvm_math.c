/* f32 exp, exp2, tanh, sigmoid and erf as straight-line IR (no calls, no
 * branches), so loops over tiles vectorize with them. Accurate to a few
 * ulp (exp: 2^n times a degree-6 polynomial on |r| <= ln2/2; erf: two
 * polynomial fits, 1e-7 absolute;
 * tanh: a series below 0.25, 1 - 2/(e^2x + 1) above). NaN propagates. */
#include <string.h>

#include "codegen/llvm/llvm.h"

static LLVMValueRef cf(lg *g, double v) { return LLVMConstReal(g->f32, v); }

enum { MAX_COEFFS = 16, HORNER_LOW = 4 };

/* c[0] + c[1] x + ... + c[n-1] x^(n-1) by Estrin's scheme: pairs
 * c[2i] + c[2i+1] x, then pairs of those with x^2, then x^4, ... */
static LLVMValueRef estrin(lg *g, LLVMValueRef x, const double *c, int n)
{
    LLVMValueRef t[MAX_COEFFS], power = x;
    for (int i = 0; i < n; i++)
        t[i] = cf(g, c[i]);
    while (n > 1) {
        int half = (n + 1) / 2;
        for (int i = 0; i < half; i++) {
            LLVMValueRef args[3] = {2 * i + 1 < n ? t[2 * i + 1] : NULL, power, t[2 * i]};
            t[i] = args[0] ? lg_intrinsic(g, "llvm.fma", args, 3) : t[2 * i];
        }
        n = half;
        if (n > 1)
            power = LLVMBuildFMul(g->b, power, power, "");
    }
    return t[0];
}

/* c[0] + x * (c[1] + x * (...)): Horner's rule, except that past
 * 2 * HORNER_LOW coefficients the high ones go by Estrin's scheme (a
 * dependency chain of log2 n FMAs, not n: erf's degree 14 was 14 FMAs
 * deep, its loop bound by their latency) and only the low ones, whose
 * rounding the result keeps, by Horner's. */
static LLVMValueRef horner(lg *g, LLVMValueRef x, const double *c, int n)
{
    int low = n > 2 * HORNER_LOW ? HORNER_LOW : n - 1;
    LLVMValueRef p = low == n - 1 ? cf(g, c[n - 1]) : estrin(g, x, c + low, n - low);
    for (int i = low - 1; i >= 0; i--) {
        LLVMValueRef args[3] = {p, x, cf(g, c[i])};
        p = lg_intrinsic(g, "llvm.fma", args, 3);
    }
    return p;
}

/* 1.5 * 2^23: t + SHIFTER rounds t (|t| < 2^22) to the nearest integer n,
 * which the sum's low mantissa bits then hold: its bits are
 * SHIFTER_BITS + n, and shifted into the exponent field they are n << 23
 * (SHIFTER_BITS << 23 is 0 in 32 bits). No vroundps, no conversion. */
#define SHIFTER 12582912.0
enum { SHIFTER_BITS = 0x4B400000, ONE_BITS = 0x3F800000 };

/* n = rint(t) as a float, from shifted = t + SHIFTER; *k: the sum's bits. */
static LLVMValueRef nearest(lg *g, LLVMValueRef shifted, LLVMValueRef *k)
{
    *k = LLVMBuildBitCast(g->b, shifted, g->i32, "");
    return LLVMBuildFSub(g->b, shifted, cf(g, SHIFTER), "");
}

static LLVMValueRef clamp_i32(lg *g, LLVMValueRef k, int32_t lo, int32_t hi)
{
    LLVMValueRef a[2] = {k, lg_i32(g, lo)};
    LLVMValueRef b[2] = {lg_intrinsic(g, "llvm.smax", a, 2), lg_i32(g, hi)};
    return lg_intrinsic(g, "llvm.smin", b, 2);
}

/* 2^n * e^r for integral n in [-151, 129] (k = SHIFTER_BITS + n, its
 * float n) and |r| <= ln2/2, rounded once, so the results between FLT_MIN
 * and 0 come out subnormal. e^r is 1 + r + r^2 Q(r), Q of degree 4 fitted
 * (Remez) to e^r's relative error on [-ln2/2, ln2/2]: 3.1e-9, a twentieth
 * of an ulp, where the Taylor polynomial needed degree 7 (one FMA more in
 * the chain). With AVX-512, llvm.ldexp is one vscalefps, its exponent the
 * integer k - SHIFTER_BITS (no float conversion; for a NaN n some integer,
 * which a NaN p keeps NaN); elsewhere LLVM would expand it (or call
 * ldexpf), so n = n1 + n2 with n1 clamped to [-125, 127]: n1 goes into
 * e^r's exponent field by an integer add (e^r in [2^-0.5, 2^0.5] keeps it
 * a normal float), 2^n2 (n2 in [-26, 2]) is a normal float that one
 * product applies (1.0 unless the result is subnormal or past FLT_MAX).
 * Two halves through the exponent field took a vroundps and two
 * conversions more. */
static LLVMValueRef scale_exp(lg *g, LLVMValueRef k, LLVMValueRef r)
{
    static const double c[] = {1.0, 1.0, 0.49999993451708435, 0.1666652068983302, 0.04166838736126115,
                               0.008368709824171195, 0.0013814613260779772};
    LLVMValueRef p = horner(g, r, c, 7);
    if (g->vector_bits >= 512) {
        LLVMValueRef pn[2] = {p, LLVMBuildSub(g->b, k, lg_i32(g, SHIFTER_BITS), "")};
        LLVMTypeRef over[2] = {g->f32, g->i32};
        unsigned id = LLVMLookupIntrinsicID("llvm.ldexp", strlen("llvm.ldexp"));
        return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->lc, id, over, 2), LLVMGetIntrinsicDeclaration(g->mod, id, over, 2),
                              pn, 2, "");
    }
    LLVMValueRef k1 = clamp_i32(g, k, SHIFTER_BITS - 125, SHIFTER_BITS + 127);
    LLVMValueRef pbits = LLVMBuildBitCast(g->b, p, g->i32, "");
    LLVMValueRef p1 = LLVMBuildAdd(g->b, pbits, LLVMBuildShl(g->b, k1, lg_i32(g, 23), ""), "");
    LLVMValueRef two_n2 = LLVMBuildAdd(g->b, LLVMBuildShl(g->b, LLVMBuildSub(g->b, k, k1, ""), lg_i32(g, 23), ""),
                                       lg_i32(g, ONE_BITS), "");
    return LLVMBuildFMul(g->b, LLVMBuildBitCast(g->b, p1, g->f32, ""), LLVMBuildBitCast(g->b, two_n2, g->f32, ""), "");
}

/* The scaling through the exponent field (hosts without AVX-512) turns a
 * NaN into a number: put it back. With AVX-512 every step keeps it. */
static LLVMValueRef keep_nan(lg *g, LLVMValueRef x, LLVMValueRef v)
{
    if (g->vector_bits >= 512)
        return v;
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, ""), x, v, "");
}

/* min(x, hi) that keeps a NaN x (minnum would make it hi): a select,
 * which x86 does as one vminps(hi, x), whose second operand is the
 * result when either is NaN. */
static LLVMValueRef at_most(lg *g, LLVMValueRef x, double hi)
{
    LLVMValueRef h = cf(g, hi);
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, x, h, ""), h, x, "");
}

/* Below lo the result is 0 (e^-104 and 2^-151 round to 0), and the lane
 * computes from 0 instead: scaling to an underflowing result is a
 * microcode assist on Intel cores (about 150 cycles a vector, without
 * FTZ), and softmax's -inf padding and attention's masked scores are all
 * such lanes (softmax BLOCK=4096 on an Ice Lake: 530 us, the interpreter
 * 770). Lanes whose result is subnormal still take the assist, as they
 * must to round it. */
static LLVMValueRef under(lg *g, LLVMValueRef x, double lo)
{
    return LLVMBuildFCmp(g->b, LLVMRealUGE, x, cf(g, lo), ""); /* not under: x >= lo or NaN */
}

static LLVMValueRef zero_under(lg *g, LLVMValueRef u, LLVMValueRef v)
{
    return LLVMBuildSelect(g->b, u, v, cf(g, 0.0), "");
}

/* The argument the scaling can take: at most hi, where the result is inf
 * already (a NaN stays NaN), 0 in the lanes under the range (u), which
 * replaces a lower clamp. */
static LLVMValueRef in_range(lg *g, LLVMValueRef x, LLVMValueRef u, double hi)
{
    return zero_under(g, u, at_most(g, x, hi));
}

static LLVMValueRef expf_ir(lg *g, LLVMValueRef x)
{
    LLVMValueRef u = under(g, x, -104.0);
    LLVMValueRef c = in_range(g, x, u, 89.0);
    LLVMValueRef t[3] = {c, cf(g, 1.4426950408889634), cf(g, SHIFTER)}, k;
    LLVMValueRef n = nearest(g, lg_intrinsic(g, "llvm.fma", t, 3), &k); /* rint(c * log2(e)) */
    LLVMValueRef a[3] = {n, cf(g, -0.693145751953125), c}; /* ln2 in two parts: n * hi is exact */
    LLVMValueRef r = lg_intrinsic(g, "llvm.fma", a, 3);
    LLVMValueRef b[3] = {n, cf(g, -1.428606765330187e-06), r};
    r = lg_intrinsic(g, "llvm.fma", b, 3);
    return keep_nan(g, x, zero_under(g, u, scale_exp(g, k, r)));
}

static LLVMValueRef exp2f_ir(lg *g, LLVMValueRef x)
{
    LLVMValueRef u = under(g, x, -151.0);
    LLVMValueRef c = in_range(g, x, u, 129.0);
    LLVMValueRef k, n = nearest(g, LLVMBuildFAdd(g->b, c, cf(g, SHIFTER), ""), &k);
    LLVMValueRef r = LLVMBuildFMul(g->b, LLVMBuildFSub(g->b, c, n, ""), cf(g, 0.6931471805599453), "");
    return keep_nan(g, x, zero_under(g, u, scale_exp(g, k, r)));
}

static LLVMValueRef tanhf_ir(lg *g, LLVMValueRef x)
{
    static const double c[] = {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925};
    LLVMValueRef ax = lg_intrinsic(g, "llvm.fabs", &x, 1);
    LLVMValueRef x2 = LLVMBuildFMul(g->b, x, x, "");
    LLVMValueRef small = LLVMBuildFMul(g->b, x, horner(g, x2, c, 6), "");
    LLVMValueRef e = expf_ir(g, LLVMBuildFMul(g->b, ax, cf(g, 2.0), ""));
    LLVMValueRef big = LLVMBuildFSub(g->b, cf(g, 1.0), LLVMBuildFDiv(g->b, cf(g, 2.0), LLVMBuildFAdd(g->b, e, cf(g, 1.0), ""), ""), "");
    LLVMValueRef sb[2] = {big, x};
    big = lg_intrinsic(g, "llvm.copysign", sb, 2); /* NaN: exp keeps it, and every step after */
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, ax, cf(g, 0.25), ""), small, big, "");
}

/* erf without exp or division: below 1, x * P(x^2) (a least-squares fit of
 * erf(x)/x in x^2, degree 5); from 1 on, a Chebyshev fit of degree 14 in
 * t = (2|x| - 5) / 3 over [1, 4], |x| clamped to 4 (erf is 1 in f32 from
 * 3.92 on). Simulated in f32 with one rounding per FMA over [-6, 6]: 9.8e-8
 * absolute, 1.7e-7 relative (the f32 rounding of the coefficients), by
 * Horner's rule; the high coefficients by Estrin's scheme (horner) gave
 * the same greatest error, 1.1e-7 absolute and 2.3 ulp, as Horner's alone
 * over 2^20 points of [-5.5, 4.5] against libm's double erf. */
static LLVMValueRef erff_ir(lg *g, LLVMValueRef x)
{
    static const double below[] = {1.12837911, -0.376123488, 0.112803645, -0.026716385, 0.00492327753, -0.000565410592};
    static const double above[] = {0.999593019,   0.00326727703, -0.0122527992,  0.0281872228,  -0.0436519347,
                                   0.0463910513,  -0.0318658948, 0.00957427826,  0.0066309697,  -0.0104034729,
                                   0.00467666192, 0.00153621717, -0.00203951774, 9.70308975e-05, 0.000259857072};
    LLVMValueRef ax = lg_intrinsic(g, "llvm.fabs", &x, 1);
    LLVMValueRef x2 = LLVMBuildFMul(g->b, x, x, "");
    LLVMValueRef small = LLVMBuildFMul(g->b, x, horner(g, x2, below, 6), "");
    /* |x| clamped to 4 keeping NaN, so a NaN goes through the polynomial
     * and the select below (ax < 1 is false) as NaN: no compare and blend
     * at the end, 2 of gelu's ~38 operations a vector */
    LLVMValueRef a = at_most(g, ax, 4.0);
    LLVMValueRef t[3] = {a, cf(g, 2.0 / 3), cf(g, -5.0 / 3)};
    LLVMValueRef big = horner(g, lg_intrinsic(g, "llvm.fma", t, 3), above, 15);
    LLVMValueRef sb[2] = {big, x};
    big = lg_intrinsic(g, "llvm.copysign", sb, 2);
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, ax, cf(g, 1.0), ""), small, big, "");
}

LLVMValueRef lg_math_f32(lg *g, tj_op op, LLVMValueRef x)
{
    switch (op) {
    case TJ_OP_EXP: return expf_ir(g, x);
    case TJ_OP_EXP2: return exp2f_ir(g, x);
    case TJ_OP_TANH: return tanhf_ir(g, x);
    case TJ_OP_ERF: return erff_ir(g, x);
    case TJ_OP_SIGMOID: {
        LLVMValueRef one = cf(g, 1.0);
        return LLVMBuildFDiv(g->b, one, LLVMBuildFAdd(g->b, one, expf_ir(g, LLVMBuildFNeg(g->b, x, "")), ""), "");
    }
    default: return NULL;
    }
}
