/* exp and exp2 of f64 (PTX has no f64 approximations for them), and pow.
 *
 * exp: x = k*ln2 + r with |r| <= ln2/2 (ln2 in two parts), e^r by its
 * Taylor polynomial to degree 13 (error below 2^-60), times 2^k applied in
 * two steps so that 2^k itself never overflows and subnormal results
 * round once. */
#include "codegen/ptx/ptx.h"

static const double inv_factorial[] = {
    1.0, 1.0, 0.5, 1.6666666666666666e-01, 4.1666666666666664e-02, 8.3333333333333332e-03,
    1.3888888888888889e-03, 1.9841269841269841e-04, 2.4801587301587302e-05, 2.7557319223985893e-06,
    2.7557319223985888e-07, 2.5052108385441720e-08, 2.0876756987868100e-09, 1.6059043836821613e-10,
};

static ptx_rname d64(double v) { return px_f64_imm(v); }

/* The bits of 2^k for k (s32) in the normal range: (k + 1023) << 52. */
static void power_of_two(ptx_emitter *e, ptx_reg d, ptx_reg k)
{
    ptx_reg t = px_tmp(e, PX_B32), w = px_tmp(e, PX_B64);
    px_ins(e, "add.s32 %s, %s, 1023", RN(t), RN(k));
    px_ins(e, "cvt.u64.u32 %s, %s", RN(w), RN(t));
    px_ins(e, "shl.b64 %s, %s, 52", RN(w), RN(w));
    px_ins(e, "mov.b64 %s, %s", RN(d), RN(w));
}

/* d = e^r * 2^kf, |r| <= ~0.35, kf integral in [-1100, 1100]; x is the
 * original argument, whose NaN passes through. */
static void exp_finish(ptx_emitter *e, ptx_reg d, ptx_reg r, ptx_reg kf, ptx_reg x)
{
    ptx_reg p = px_tmp(e, PX_F64), s1 = px_tmp(e, PX_F64), s2 = px_tmp(e, PX_F64);
    ptx_reg k = px_tmp(e, PX_B32), k1 = px_tmp(e, PX_B32), k2 = px_tmp(e, PX_B32), nan = px_tmp(e, PX_PRED);
    int n = (int)(sizeof inv_factorial / sizeof *inv_factorial);
    px_ins(e, "mov.f64 %s, %s", RN(p), d64(inv_factorial[n - 1]).s);
    for (int i = n - 2; i >= 0; i--)
        px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(p), RN(p), RN(r), d64(inv_factorial[i]).s);
    px_ins(e, "cvt.rzi.s32.f64 %s, %s", RN(k), RN(kf));
    px_ins(e, "shr.s32 %s, %s, 1", RN(k1), RN(k));
    px_ins(e, "sub.s32 %s, %s, %s", RN(k2), RN(k), RN(k1));
    power_of_two(e, s1, k1);
    power_of_two(e, s2, k2);
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(d), RN(p), RN(s1));
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(d), RN(d), RN(s2));
    px_ins(e, "setp.nan.f64 %s, %s, %s", RN(nan), RN(x), RN(x));
    px_ins(e, "selp.f64 %s, %s, %s, %s", RN(d), RN(x), RN(d), RN(nan));
}

/* Clamps x to [lo, hi] (beyond, the result is 0 or inf anyway); a NaN
 * becomes a number here and is restored by exp_finish. */
static ptx_reg clamp(ptx_emitter *e, ptx_reg x, double lo, double hi)
{
    ptx_reg c = px_tmp(e, PX_F64);
    px_ins(e, "max.f64 %s, %s, %s", RN(c), RN(x), d64(lo).s);
    px_ins(e, "min.f64 %s, %s, %s", RN(c), RN(c), d64(hi).s);
    return c;
}

void px_exp_f64(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    ptx_reg x = clamp(e, a, -746.0, 710.0), kf = px_tmp(e, PX_F64), nk = px_tmp(e, PX_F64), r = px_tmp(e, PX_F64);
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(kf), RN(x), d64(1.4426950408889634).s);
    px_ins(e, "cvt.rni.f64.f64 %s, %s", RN(kf), RN(kf));
    px_ins(e, "neg.f64 %s, %s", RN(nk), RN(kf));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(nk), d64(0.6931471805599453).s, RN(x));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(nk), d64(2.3190468138462996e-17).s, RN(r));
    exp_finish(e, d, r, kf, a);
}

void px_exp2_f64(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    ptx_reg x = clamp(e, a, -1080.0, 1030.0), kf = px_tmp(e, PX_F64), f = px_tmp(e, PX_F64), r = px_tmp(e, PX_F64);
    px_ins(e, "cvt.rni.f64.f64 %s, %s", RN(kf), RN(x));
    px_ins(e, "sub.rn.f64 %s, %s, %s", RN(f), RN(x), RN(kf));
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(r), RN(f), d64(2.3190468138462996e-17).s);
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(f), d64(0.6931471805599453).s, RN(r));
    exp_finish(e, d, r, kf, a);
}

/* pow(x, y) = +-exp(y * log|x|) with C99's special cases: the sign is
 * negative for a negative x (or -0) and an odd integer y; a finite
 * negative x with a non-integer y is NaN; pow(1, y), pow(x, 0) and
 * pow(-1, +-inf) are 1. */
static void pow_f64(ptx_emitter *e, ptx_reg d, ptx_reg x, ptx_reg y)
{
    ptx_reg ax = px_tmp(e, PX_F64), l = px_tmp(e, PX_F64), yt = px_tmp(e, PX_F64), h = px_tmp(e, PX_F64);
    ptx_reg ht = px_tmp(e, PX_F64), n = px_tmp(e, PX_F64), bits = px_tmp(e, PX_B64);
    ptx_reg isint = px_tmp(e, PX_PRED), odd = px_tmp(e, PX_PRED), sign = px_tmp(e, PX_PRED);
    ptx_reg neg = px_tmp(e, PX_PRED), fin = px_tmp(e, PX_PRED), one = px_tmp(e, PX_PRED), t = px_tmp(e, PX_PRED);
    px_ins(e, "abs.f64 %s, %s", RN(ax), RN(x));
    px_log(e, TJ_OP_LOG, l, ax);
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(l), RN(y), RN(l));
    px_exp_f64(e, d, l);
    px_ins(e, "cvt.rzi.f64.f64 %s, %s", RN(yt), RN(y));
    px_ins(e, "setp.eq.f64 %s, %s, %s", RN(isint), RN(yt), RN(y));
    px_ins(e, "mul.rn.f64 %s, %s, 0d3FE0000000000000", RN(h), RN(y));
    px_ins(e, "cvt.rzi.f64.f64 %s, %s", RN(ht), RN(h));
    px_ins(e, "setp.neu.f64 %s, %s, %s", RN(odd), RN(ht), RN(h));
    px_ins(e, "and.pred %s, %s, %s", RN(odd), RN(odd), RN(isint));
    px_ins(e, "mov.b64 %s, %s", RN(bits), RN(x));
    px_ins(e, "setp.lt.s64 %s, %s, 0", RN(sign), RN(bits));
    px_ins(e, "and.pred %s, %s, %s", RN(sign), RN(sign), RN(odd));
    px_ins(e, "neg.f64 %s, %s", RN(n), RN(d));
    px_ins(e, "selp.f64 %s, %s, %s, %s", RN(d), RN(n), RN(d), RN(sign));
    px_ins(e, "setp.lt.f64 %s, %s, 0d0000000000000000", RN(neg), RN(x));
    px_ins(e, "setp.gt.f64 %s, %s, 0dFFF0000000000000", RN(fin), RN(x));
    px_ins(e, "and.pred %s, %s, %s", RN(neg), RN(neg), RN(fin));
    px_ins(e, "and.pred %s, %s, !%s", RN(neg), RN(neg), RN(isint));
    px_ins(e, "selp.f64 %s, 0d7FF8000000000000, %s, %s", RN(d), RN(d), RN(neg));
    px_ins(e, "setp.eq.f64 %s, %s, 0d3FF0000000000000", RN(one), RN(x));
    px_ins(e, "setp.eq.f64 %s, %s, 0d0000000000000000", RN(t), RN(y));
    px_ins(e, "or.pred %s, %s, %s", RN(one), RN(one), RN(t));
    px_ins(e, "abs.f64 %s, %s", RN(h), RN(y));
    px_ins(e, "setp.eq.f64 %s, %s, 0d7FF0000000000000", RN(t), RN(h));
    px_ins(e, "setp.eq.and.f64 %s, %s, 0d3FF0000000000000, %s", RN(t), RN(ax), RN(t));
    px_ins(e, "or.pred %s, %s, %s", RN(one), RN(one), RN(t));
    px_ins(e, "selp.f64 %s, 0d3FF0000000000000, %s, %s", RN(d), RN(d), RN(one));
}

void px_pow(ptx_emitter *e, ptx_reg d, ptx_reg a, ptx_reg b)
{
    if (d.cls == PX_F64) {
        pow_f64(e, d, a, b);
        return;
    }
    /* f32 through f64: the product y*log|x| needs the extra bits */
    ptx_reg x = px_tmp(e, PX_F64), y = px_tmp(e, PX_F64), r = px_tmp(e, PX_F64);
    px_ins(e, "cvt.f64.f32 %s, %s", RN(x), RN(a));
    px_ins(e, "cvt.f64.f32 %s, %s", RN(y), RN(b));
    pow_f64(e, r, x, y);
    px_ins(e, "cvt.rn.f32.f64 %s, %s", RN(d), RN(r));
}
