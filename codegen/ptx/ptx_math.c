/* Float math functions as PTX instruction sequences, on f32 or f64
 * registers (f16/bf16 arrive widened to f32).
 *
 * f16/bf16 use the hardware approximations (ex2/lg2/tanh.approx), whose
 * error is below half an ulp of those formats. f32 and f64 use
 * sequences accurate to a few ulp, so results match the reference
 * interpreter's libm within test tolerances: exp via ex2.approx with the
 * rounding error of x*log2(e) fed back (f32) or a polynomial (f64); log as
 * musl's (k*ln2 + log1p of the reduced mantissa); sin and cos in
 * ptx_trig.c; tanh and erf with polynomials fitted
 * by Chebyshev interpolation (mpmath) plus exp for large arguments.
 * Coefficients are listed lowest degree first. */
#include "codegen/ptx/ptx.h"

#define FT(r) px_cls_type((r).cls)

ptx_rname px_fimm(ptx_cls cls, double v) { return cls == PX_F32 ? px_f32_imm((float)v) : px_f64_imm(v); }

void px_horner(ptx_emitter *e, ptx_reg d, ptx_reg x, const double *c, int n)
{
    px_ins(e, "mov.%s %s, %s", FT(d), RN(d), px_fimm(d.cls, c[n - 1]).s);
    for (int i = n - 2; i >= 0; i--)
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(d), RN(d), RN(d), RN(x), px_fimm(d.cls, c[i]).s);
}

static ptx_reg tmp(ptx_emitter *e, ptx_reg like) { return px_tmp(e, like.cls); }

/* ---- exp ------------------------------------------------------------------------ */

/* 2^a by the hardware's ex2. Under fastmath with .ftz, results below 2^-126
 * flushed to 0 (as nvcc's --use_fast_math): without it ptxas wraps every
 * ex2 in a compare and two multiplies that keep those results, three
 * instructions around the one that counts (the selective scan's loop: 192
 * of its 1180). */
static void ex2(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    px_ins(e, "ex2.approx%s.f32 %s, %s", e->fastmath ? ".ftz" : "", RN(d), RN(a));
}

/* t = x*log2(e) rounded; err = what the rounding and log2(e)'s own
 * rounding lost, so exp(x) = 2^t * 2^err ~ r + r*err*ln2 (into d; r
 * returned). The correction is NaN where r is infinite or x NaN. */
static ptx_reg exp_f32_corrected(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    ptx_reg t = tmp(e, a), nt = tmp(e, a), err = tmp(e, a), r = tmp(e, a), c = tmp(e, a);
    px_ins(e, "mul.rn.f32 %s, %s, 0f3FB8AA3B", RN(t), RN(a));
    px_ins(e, "neg.f32 %s, %s", RN(nt), RN(t));
    px_ins(e, "fma.rn.f32 %s, %s, 0f3FB8AA3B, %s", RN(err), RN(a), RN(nt));
    px_ins(e, "fma.rn.f32 %s, %s, 0f32A57060, %s", RN(err), RN(a), RN(err));
    ex2(e, r, t);
    px_ins(e, "mul.rn.f32 %s, %s, 0f3F317218", RN(c), RN(err));
    px_ins(e, "fma.rn.f32 %s, %s, %s, %s", RN(d), RN(r), RN(c), RN(r));
    return r;
}

/* Where the correction is NaN, r itself is the answer (infinite, or x's NaN). */
void px_exp_f32(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    ptx_reg r = exp_f32_corrected(e, d, a), nan = px_tmp(e, PX_PRED);
    px_ins(e, "setp.nan.f32 %s, %s, %s", RN(nan), RN(d), RN(d));
    px_ins(e, "selp.f32 %s, %s, %s, %s", RN(d), RN(r), RN(d), RN(nan));
}

static void exp_fast(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    ptx_reg t = tmp(e, a);
    px_ins(e, "mul.f32 %s, %s, 0f3FB8AA3B", RN(t), RN(a));
    ex2(e, d, t);
}

static void exp_any(ptx_emitter *e, int fast, ptx_reg d, ptx_reg a)
{
    if (d.cls == PX_F64)
        px_exp_f64(e, d, a);
    else if (fast)
        exp_fast(e, d, a);
    else
        px_exp_f32(e, d, a);
}

/* ---- log ------------------------------------------------------------------------ */

typedef struct log_consts {
    const char *bits, *ubits;        /* b32/b64, u32/u64 */
    const char *min_normal, *offset, *mant_mask, *base; /* integer immediates */
    double scale;                    /* for subnormals: 2^(sub_k) */
    int sub_k, mbits, bias;
    double ln2_hi, ln2_lo, log2e_hi, log2e_lo;
    const double *odd, *even;        /* R = z*odd(w) + w*even(w) */
    int nodd, neven;
    const char *inf, *ninf, *nan;
} log_consts;

static const double log_odd32[] = {0.66666662693, 0.28498786688}, log_even32[] = {0.40000972152, 0.24279078841};
static const double log_odd64[] = {6.666666666666735130e-01, 2.857142874366239149e-01, 1.818357216161805012e-01,
                                   1.479819860511658591e-01};
static const double log_even64[] = {3.999999999940941908e-01, 2.222219843214978396e-01, 1.531383769920937332e-01};

static const log_consts log32 = {
    "b32", "u32", "0x00800000", "0x004AFB0D", "0x007FFFFF", "0x3F3504F3", 33554432.0, 25, 23, 127,
    6.9313812256e-01, 9.0580006145e-06, 1.4426950216293335, 1.925963033500011e-08,
    log_odd32, log_even32, 2, 2, "0f7F800000", "0fFF800000", "0f7FFFFFFF"};
static const log_consts log64 = {
    "b64", "u64", "0x0010000000000000", "0x00095F6200000000", "0x000FFFFFFFFFFFFF", "0x3FE6A09E00000000",
    18014398509481984.0, 54, 52, 1023,
    6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.4426950408889634, 2.0355273740931033e-17,
    log_odd64, log_even64, 4, 3, "0d7FF0000000000000", "0dFFF0000000000000", "0d7FF8000000000000"};

/* Selects the results for x <= 0, NaN and +inf over the finite path's d. */
static void log_specials(ptx_emitter *e, const log_consts *L, ptx_reg d, ptx_reg a)
{
    ptx_reg pos = px_tmp(e, PX_PRED), zero = px_tmp(e, PX_PRED), inf = px_tmp(e, PX_PRED);
    ptx_rname z = px_fimm(a.cls, 0.0);
    px_ins(e, "setp.gt.%s %s, %s, %s", FT(a), RN(pos), RN(a), z.s);
    px_ins(e, "setp.eq.%s %s, %s, %s", FT(a), RN(zero), RN(a), z.s);
    px_ins(e, "setp.eq.%s %s, %s, %s", FT(a), RN(inf), RN(a), L->inf);
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), RN(d), L->nan, RN(pos));
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), L->ninf, RN(d), RN(zero));
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), L->inf, RN(d), RN(inf));
}

void px_log(ptx_emitter *e, tj_op op, ptx_reg d, ptx_reg a)
{
    const log_consts *L = a.cls == PX_F32 ? &log32 : &log64;
    ptx_cls icls = a.cls == PX_F32 ? PX_B32 : PX_B64;
    ptx_reg sub = px_tmp(e, PX_PRED), ix = px_tmp(e, icls), kadj = px_tmp(e, PX_B32), k = px_tmp(e, PX_B32);
    ptx_reg xs = tmp(e, a), f = tmp(e, a), s = tmp(e, a), z = tmp(e, a), w = tmp(e, a), t1 = tmp(e, a), t2 = tmp(e, a);
    ptx_reg hfsq = tmp(e, a), dk = tmp(e, a), v = tmp(e, a), kt = px_tmp(e, icls);
    /* x = 2^k * (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)); subnormals scaled up first */
    px_ins(e, "mov.%s %s, %s", L->bits, RN(ix), RN(a));
    px_ins(e, "setp.lt.%s %s, %s, %s", L->ubits, RN(sub), RN(ix), L->min_normal);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(xs), RN(a), px_fimm(a.cls, L->scale).s);
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(xs), RN(xs), RN(a), RN(sub));
    px_ins(e, "selp.s32 %s, %d, 0, %s", RN(kadj), -L->sub_k, RN(sub));
    px_ins(e, "mov.%s %s, %s", L->bits, RN(ix), RN(xs));
    px_ins(e, "add.%s %s, %s, %s", L->ubits, RN(ix), RN(ix), L->offset);
    px_ins(e, "shr.%s %s, %s, %d", L->ubits, RN(kt), RN(ix), L->mbits);
    if (icls == PX_B64)
        px_ins(e, "cvt.u32.u64 %s, %s", RN(k), RN(kt));
    else
        px_mov(e, k, kt);
    px_ins(e, "sub.s32 %s, %s, %d", RN(k), RN(k), L->bias);
    px_ins(e, "add.s32 %s, %s, %s", RN(k), RN(k), RN(kadj));
    px_ins(e, "and.%s %s, %s, %s", L->bits, RN(ix), RN(ix), L->mant_mask);
    px_ins(e, "add.%s %s, %s, %s", L->ubits, RN(ix), RN(ix), L->base);
    px_ins(e, "mov.%s %s, %s", L->bits, RN(f), RN(ix));
    px_ins(e, "sub.rn.%s %s, %s, %s", FT(a), RN(f), RN(f), px_fimm(a.cls, 1.0).s);
    /* log(1 + f) = f - hfsq + s*(hfsq + R), s = f / (2 + f) */
    px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(s), RN(f), px_fimm(a.cls, 2.0).s);
    if (a.cls == PX_F32 && e->no_calls)
        px_div_rn_f32_in_f64(e, s, f, s);
    else
        px_ins(e, "div.rn.%s %s, %s, %s", FT(a), RN(s), RN(f), RN(s));
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(z), RN(s), RN(s));
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(w), RN(z), RN(z));
    px_horner(e, t1, w, L->even, L->neven);
    px_horner(e, t2, w, L->odd, L->nodd);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(t1), RN(t1), RN(w));
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(t2), RN(t2), RN(z), RN(t1)); /* R */
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(hfsq), RN(f), RN(f));
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(hfsq), RN(hfsq), px_fimm(a.cls, 0.5).s);
    px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(t2), RN(hfsq), RN(t2));
    px_ins(e, "cvt.rn.%s.s32 %s, %s", FT(a), RN(dk), RN(k));
    if (op == TJ_OP_LOG) { /* s*(hfsq+R) + k*ln2_lo - hfsq + f + k*ln2_hi */
        px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(v), RN(dk), px_fimm(a.cls, L->ln2_lo).s);
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(v), RN(s), RN(t2), RN(v));
        px_ins(e, "sub.rn.%s %s, %s, %s", FT(a), RN(v), RN(v), RN(hfsq));
        px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(v), RN(v), RN(f));
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(d), RN(dk), px_fimm(a.cls, L->ln2_hi).s, RN(v));
    } else { /* k + log(1 + f) * log2(e), log2(e) split in two */
        px_ins(e, "neg.%s %s, %s", FT(a), RN(hfsq), RN(hfsq));
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(v), RN(s), RN(t2), RN(hfsq));
        px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(v), RN(v), RN(f));
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(dk), RN(v), px_fimm(a.cls, L->log2e_lo).s, RN(dk));
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(d), RN(v), px_fimm(a.cls, L->log2e_hi).s, RN(dk));
    }
    log_specials(e, L, d, a);
}

/* ---- tanh, sigmoid, erf ---------------------------------------------------------------- */

/* 1/a for a >= 1 (what tanh, sigmoid and erf divide by): f32 as
 * rcp.approx (1 ulp) and one Newton step r + r*(1 - a*r), within about
 * half an ulp, rather than rcp.rn.f32, which ptxas assembles as a
 * subroutine with a slow path and which cost 12-16 ms of gelu's 36-47 ms of
 * ptxas (bench/NOTES.md). The step is NaN only where r is exact (a
 * infinite: r = 0) or NaN itself. ftz (results flushed below 2^-126) where
 * the caller's result does not depend on such a reciprocal (tanh: 1 - 2r);
 * f64 keeps rcp.rn. */
static ptx_reg rcp_f32_newton(ptx_emitter *e, int ftz, ptx_reg nr, ptx_reg a)
{
    ptx_reg r = tmp(e, a), na = tmp(e, a), rest = tmp(e, a);
    px_ins(e, "rcp.approx%s.f32 %s, %s", ftz ? ".ftz" : "", RN(r), RN(a));
    px_ins(e, "neg.f32 %s, %s", RN(na), RN(a));
    px_ins(e, "fma.rn.f32 %s, %s, %s, 0f3F800000", RN(rest), RN(na), RN(r));
    px_ins(e, "fma.rn.f32 %s, %s, %s, %s", RN(nr), RN(r), RN(rest), RN(r));
    return r;
}

static void rcp_ge1(ptx_emitter *e, int ftz, ptx_reg d, ptx_reg a)
{
    if (a.cls != PX_F32) {
        px_ins(e, "rcp.rn.%s %s, %s", FT(a), RN(d), RN(a));
        return;
    }
    ptx_reg nr = tmp(e, a), nan = px_tmp(e, PX_PRED);
    ptx_reg r = rcp_f32_newton(e, ftz, nr, a);
    px_ins(e, "setp.nan.f32 %s, %s, %s", RN(nan), RN(nr), RN(nr));
    px_ins(e, "selp.f32 %s, %s, %s, %s", RN(d), RN(r), RN(nr), RN(nan));
}

static const double tanh32[] = {-0.3333333134651184, 0.13333113491535187, -0.05390942841768265,
                                0.021309388801455498, -0.00661022774875164};
static const double tanh64[] = {-0.3333333333333333, 0.13333333333332714, -0.053968253967434016,
                                0.021869488493666944, -0.008863234397814355, 0.003592110378689024,
                                -0.001455661830100716, 0.0005889360520074057, -0.0002346347410887237,
                                8.511313685577672e-05, -2.0602765376366344e-05};

/* |x| < 0.55: x + x*z*P(z), z = x*x; else copysign(1 - 2/(exp(2|x|) + 1), x). */
static void tanh_any(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    int f32 = a.cls == PX_F32;
    ptx_reg ax = tmp(e, a), z = tmp(e, a), p = tmp(e, a), small = tmp(e, a), big = tmp(e, a), ex = tmp(e, a);
    ptx_reg is_small = px_tmp(e, PX_PRED);
    px_ins(e, "abs.%s %s, %s", FT(a), RN(ax), RN(a));
    px_ins(e, "setp.lt.%s %s, %s, %s", FT(a), RN(is_small), RN(ax), px_fimm(a.cls, 0.55).s);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(z), RN(a), RN(a));
    px_horner(e, p, z, f32 ? tanh32 : tanh64, f32 ? 5 : 11);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(small), RN(a), RN(z));
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(small), RN(small), RN(p), RN(a));
    px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(big), RN(ax), RN(ax));
    exp_any(e, 0, ex, big);
    px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(ex), RN(ex), px_fimm(a.cls, 1.0).s);
    rcp_ge1(e, 1, ex, ex); /* 1 - 2r: an r below 2^-126 leaves 1 */
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(big), RN(ex), px_fimm(a.cls, -2.0).s, px_fimm(a.cls, 1.0).s);
    px_ins(e, "copysign.%s %s, %s, %s", FT(a), RN(big), RN(a), RN(big));
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), RN(small), RN(big), RN(is_small));
}

/* 1 / (1 + exp(-x)) */
static void sigmoid_any(ptx_emitter *e, int fast, ptx_reg d, ptx_reg a)
{
    ptx_reg n = tmp(e, a), ex = tmp(e, a);
    px_ins(e, "neg.%s %s, %s", FT(a), RN(n), RN(a));
    exp_any(e, fast, ex, n);
    px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(ex), RN(ex), px_fimm(a.cls, 1.0).s);
    if (fast)
        px_ins(e, "rcp.approx.f32 %s, %s", RN(d), RN(ex));
    else
        rcp_ge1(e, 0, d, ex); /* the result itself: subnormals kept */
}

static const double erf32[] = {1.1283791065216064, -0.3761261999607086, 0.11283386498689651,
                               -0.026835113763809204, 0.005115332081913948, -0.0006756479851901531};
static const double erf64[] = {1.1283791670955126, -0.37612638903183715, 0.11283791670952596,
                               -0.026866170644428485, 0.005223977615420539, -0.0008548326188759752,
                               0.00012055289567541706, -1.4924196305569617e-05, 1.643068417974155e-06,
                               -1.5940066854661717e-07, 1.1472499701094691e-08};
/* erfc(x) = t * exp(-x*x + P(t)), t = 1 / (1 + x/2), fitted on x in [0.75, 6] */
static const double erfc32[] = {-1.2655705213546753, 1.001462697982788, 0.3587387204170227, 0.18877394497394562,
                                -0.5255505442619324, 1.0766966342926025, -2.333599090576172, 2.6007182598114014,
                                -1.403031587600708, 0.3014497756958008};
static const double erfc64[] = {-1.2655116508210198, 0.9999800828482507, 0.37539218949597464, 0.07854168932086127,
                                -0.0452722265861361, -0.3979748074221406, 1.1191851460479187, -4.4520377616277225,
                                13.142730426699934, -29.544379806983734, 52.75327338804618, -72.29100165480462,
                                73.24990983103322, -53.40820913896807, 27.13420162420392, -9.080515084442974,
                                1.7856334728327685, -0.1539452667852428};

/* erfc(ax) for ax in [0.75, 6] (or NaN): t * exp(-ax*ax + P(t)), t = 1 /
 * (1 + ax/2) in [1/4, 1]. f32 leaves out the guards rcp_ge1 and
 * px_exp_f32 keep for infinite arguments (4 instructions an element of a
 * fused gelu): t and the exponent are finite, or NaN from ax's NaN, which
 * every step keeps. */
static void erfc_mid(ptx_emitter *e, ptx_reg ex, ptx_reg ax)
{
    int f32 = ax.cls == PX_F32;
    ptx_reg t = tmp(e, ax), s = tmp(e, ax), p = tmp(e, ax), y = tmp(e, ax), nx = tmp(e, ax);
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(ax), RN(s), RN(ax), px_fimm(ax.cls, 0.5).s, px_fimm(ax.cls, 1.0).s);
    if (f32)
        rcp_f32_newton(e, 1, t, s);
    else
        rcp_ge1(e, 1, t, s);
    px_horner(e, p, t, f32 ? erfc32 : erfc64, f32 ? 10 : 18);
    px_ins(e, "neg.%s %s, %s", FT(ax), RN(nx), RN(ax));
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(ax), RN(y), RN(nx), RN(ax), RN(p));
    if (f32)
        exp_f32_corrected(e, ex, y);
    else
        exp_any(e, 0, ex, y);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(ax), RN(ex), RN(ex), RN(t));
}

/* |x| < 0.75: x*P(x*x); else copysign(1 - erfc(min(|x|, 6)), x). f32's
 * min.NaN keeps x's NaN through erfc_mid to the result; f64's min gives 6
 * for NaN, which the last select undoes. */
static void erf_any(ptx_emitter *e, ptx_reg d, ptx_reg a)
{
    int f32 = a.cls == PX_F32;
    ptx_reg ax = tmp(e, a), z = tmp(e, a), p = tmp(e, a), small = tmp(e, a), ex = tmp(e, a);
    ptx_reg is_small = px_tmp(e, PX_PRED);
    px_ins(e, "abs.%s %s, %s", FT(a), RN(ax), RN(a));
    px_ins(e, "setp.lt.%s %s, %s, %s", FT(a), RN(is_small), RN(ax), px_fimm(a.cls, 0.75).s);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(z), RN(a), RN(a));
    px_horner(e, p, z, f32 ? erf32 : erf64, f32 ? 6 : 11);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(small), RN(a), RN(p));
    px_ins(e, "min%s.%s %s, %s, %s", f32 ? ".NaN" : "", FT(a), RN(ax), RN(ax), px_fimm(a.cls, 6.0).s);
    erfc_mid(e, ex, ax);
    px_ins(e, "sub.rn.%s %s, %s, %s", FT(a), RN(ex), px_fimm(a.cls, 1.0).s, RN(ex));
    px_ins(e, "copysign.%s %s, %s, %s", FT(a), RN(ex), RN(a), RN(ex));
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), RN(small), RN(ex), RN(is_small));
    if (!f32) {
        px_ins(e, "setp.nan.%s %s, %s, %s", FT(a), RN(is_small), RN(a), RN(a));
        px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), RN(a), RN(d), RN(is_small));
    }
}

/* ---- dispatch ------------------------------------------------------------------------ */

int px_math(ptx_emitter *e, tj_op op, int fast, ptx_reg d, ptx_reg a)
{
    int f32 = a.cls == PX_F32;
    switch (op) {
    case TJ_OP_EXP: exp_any(e, fast, d, a); return 0;
    case TJ_OP_EXP2:
        if (f32)
            ex2(e, d, a);
        else
            px_exp2_f64(e, d, a);
        return 0;
    case TJ_OP_LOG: case TJ_OP_LOG2:
        if (!fast) {
            px_log(e, op, d, a);
        } else if (op == TJ_OP_LOG2) {
            px_ins(e, "lg2.approx.f32 %s, %s", RN(d), RN(a));
        } else {
            ptx_reg t = tmp(e, a);
            px_ins(e, "lg2.approx.f32 %s, %s", RN(t), RN(a));
            px_ins(e, "mul.f32 %s, %s, 0f3F317218", RN(d), RN(t));
        }
        return 0;
    case TJ_OP_SQRT: px_ins(e, "sqrt.rn.%s %s, %s", FT(a), RN(d), RN(a)); return 0;
    case TJ_OP_RSQRT:
        if (f32) {
            px_ins(e, "rsqrt.approx.f32 %s, %s", RN(d), RN(a));
        } else {
            ptx_reg t = tmp(e, a);
            px_ins(e, "sqrt.rn.f64 %s, %s", RN(t), RN(a));
            px_ins(e, "rcp.rn.f64 %s, %s", RN(d), RN(t));
        }
        return 0;
    case TJ_OP_SIN: case TJ_OP_COS: px_sincos(e, op, d, a); return 0;
    case TJ_OP_TANH:
        if (fast)
            px_ins(e, "tanh.approx.f32 %s, %s", RN(d), RN(a));
        else
            tanh_any(e, d, a);
        return 0;
    case TJ_OP_SIGMOID: sigmoid_any(e, fast, d, a); return 0;
    case TJ_OP_ERF: erf_any(e, d, a); return 0;
    case TJ_OP_FLOOR: px_ins(e, "cvt.rmi.%s.%s %s, %s", FT(a), FT(a), RN(d), RN(a)); return 0;
    case TJ_OP_CEIL: px_ins(e, "cvt.rpi.%s.%s %s, %s", FT(a), FT(a), RN(d), RN(a)); return 0;
    default: return -1;
    }
}
