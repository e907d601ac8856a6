/* sin and cos of f32 and f64 (f16/bf16 arrive as f32).
 *
 * x = j*pi/2 + r with |r| <= pi/4; sin x or cos x is then +-sin r or
 * +-cos r by j mod 4, from the cephes (f32) or fdlibm (f64) polynomials.
 * The reduction is Cody-Waite with pi/2 in three parts below a threshold
 * (105615 for f32, 2^20 for f64), and Payne-Hanek above it, in a
 * per-thread branch: the 2/pi bits that matter for the exponent of x are
 * read from a table, multiplied by the mantissa in integer arithmetic,
 * and the integer part mod 4 and the fraction of x*2/pi taken from the
 * product, so that every finite argument is reduced exactly enough. */
#include "codegen/ptx/ptx.h"

#define FT(r) px_cls_type((r).cls)

/* 2/pi in binary, 32 zero bits first (so a window may start before the
 * binary point), for the f32 and f64 reductions. */
static const uint32_t two_over_pi32[8] = {0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1,
                                          0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB};
static const uint64_t two_over_pi64[20] = {
    0x0000000000000000, 0xA2F9836E4E441529, 0xFC2757D1F534DDC0, 0xDB6295993C439041, 0xFE5163ABDEBBC561,
    0xB7246E3A424DD2E0, 0x06492EEA09D1921C, 0xFE1DEB1CB129A73E, 0xE88235F52EBB4484, 0xE99C7026B45F7E41,
    0x3991D639835339F4, 0x9C845F8BBDF9283B, 0x1FF897FFDE05980F, 0xEF2F118B5A0A6D1F, 0x6D367ECF27CB09B7,
    0x4F463F669E5FEA2D, 0x7527BAC7EBE5F17B, 0x3D0739F78A5292EA, 0x6BFB5FB11F8D5D08, 0x56033046FC7B6BAB,
};

void px_write_tables(const ptx_emitter *e, tj_buf *out)
{
    if (e->uses_2opi32) {
        tj_buf_printf(out, ".const .align 4 .b32 tj_2opi32[8] = {");
        for (int i = 0; i < 8; i++)
            tj_buf_printf(out, "%s0x%08X", i ? ", " : "", two_over_pi32[i]);
        tj_buf_printf(out, "};\n\n");
    }
    if (e->uses_2opi64) {
        tj_buf_printf(out, ".const .align 8 .b64 tj_2opi64[20] = {");
        for (int i = 0; i < 20; i++)
            tj_buf_printf(out, "%s0x%016llX", i ? ", " : "", (unsigned long long)two_over_pi64[i]);
        tj_buf_printf(out, "};\n\n");
    }
}

typedef struct trig_consts {
    double pio2[3]; /* pi/2 = pio2[0] + pio2[1] + pio2[2] */
    double threshold;
    const double *sin, *cos;
    int nsin, ncos;
} trig_consts;

static const double sin32[] = {-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4};
static const double cos32[] = {4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5};
static const double sin64[] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
                               2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10};
static const double cos64[] = {4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
                               -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11};
static const trig_consts trig32 = {{1.5707963705062866, -4.371138828673793e-08, -1.7151245100058819e-15},
                                   105615.0, sin32, cos32, 3, 3};
static const trig_consts trig64 = {{1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33},
                                   1048576.0, sin64, cos64, 6, 6};

/* The window of 32*n bits of a table starting `bit` bits in: w[0] most
 * significant. `words` of `bits` each are read from address base + index. */
static void table_window(ptx_emitter *e, ptx_cls cls, const char *table, ptx_reg bit, ptx_reg *w, int n)
{
    int bits = cls == PX_B32 ? 32 : 64, shift = bits == 32 ? 5 : 6;
    const char *b = px_cls_type(cls);
    ptx_reg idx = px_tmp(e, PX_B32), off = px_tmp(e, PX_B32), inv = px_tmp(e, PX_B32), addr = px_tmp(e, PX_B64);
    ptx_reg base = px_tmp(e, PX_B64), in[5], hi = px_tmp(e, cls), lo = px_tmp(e, cls);
    px_ins(e, "shr.u32 %s, %s, %d", RN(idx), RN(bit), shift);
    px_ins(e, "and.b32 %s, %s, %d", RN(off), RN(bit), bits - 1);
    px_ins(e, "sub.s32 %s, %d, %s", RN(inv), bits, RN(off));
    px_ins(e, "mov.u64 %s, %s", RN(base), table);
    px_ins(e, "mul.wide.u32 %s, %s, %d", RN(addr), RN(idx), bits / 8);
    px_ins(e, "add.u64 %s, %s, %s", RN(addr), RN(addr), RN(base));
    for (int i = 0; i <= n; i++) {
        in[i] = px_tmp(e, cls);
        px_ins(e, "ld.const.%s %s, [%s+%d]", b, RN(in[i]), RN(addr), i * bits / 8);
    }
    /* shifts by the width give 0 in PTX, so a window on a word boundary works */
    for (int i = 0; i < n; i++) {
        px_ins(e, "shl.%s %s, %s, %s", b, RN(hi), RN(in[i]), RN(off));
        px_ins(e, "shr.%s %s, %s, %s", b, RN(lo), RN(in[i + 1]), RN(inv));
        w[i] = px_tmp(e, cls);
        px_ins(e, "or.%s %s, %s, %s", b, RN(w[i]), RN(hi), RN(lo));
    }
}

/* Payne-Hanek for f32: |x| = m * 2^(ex-23); with T the 96 bits of 2/pi
 * from bit ex-25 on, m*T / 2^94 is |x|*2/pi mod 4 to 2^-70. r and q for
 * |x|, the fraction converted through f64. */
static void reduce_large32(ptx_emitter *e, ptx_reg ax, ptx_reg r, ptx_reg q)
{
    ptx_reg ix = px_tmp(e, PX_B32), ex = px_tmp(e, PX_B32), m = px_tmp(e, PX_B32), T[3];
    ptx_reg p[3], lo = px_tmp(e, PX_B64), hi = px_tmp(e, PX_B64), t = px_tmp(e, PX_B64), f = px_tmp(e, PX_B64);
    ptx_reg c = px_tmp(e, PX_B32), d = px_tmp(e, PX_F64);
    e->uses_2opi32 = 1;
    px_ins(e, "mov.b32 %s, %s", RN(ix), RN(ax));
    px_ins(e, "shr.u32 %s, %s, 23", RN(ex), RN(ix));
    px_ins(e, "and.b32 %s, %s, 0x007FFFFF", RN(m), RN(ix));
    px_ins(e, "or.b32 %s, %s, 0x00800000", RN(m), RN(m));
    px_ins(e, "sub.s32 %s, %s, 120", RN(ex), RN(ex)); /* first bit: (ex - 127) - 25 + 32 */
    table_window(e, PX_B32, "tj_2opi32", ex, T, 3);
    for (int i = 0; i < 3; i++) {
        p[i] = px_tmp(e, PX_B64);
        px_ins(e, "mul.wide.u32 %s, %s, %s", RN(p[i]), RN(m), RN(T[2 - i]));
    }
    px_ins(e, "shl.b64 %s, %s, 32", RN(t), RN(p[1]));
    px_ins(e, "add.cc.u64 %s, %s, %s", RN(lo), RN(p[0]), RN(t));
    px_ins(e, "shr.u64 %s, %s, 32", RN(t), RN(p[1]));
    px_ins(e, "addc.u64 %s, %s, %s", RN(hi), RN(p[2]), RN(t));
    /* quadrant: bits 94-95; fraction: bits 30-93, as a signed 64-bit number
     * (>= 1/2 rounds the quadrant up and leaves r negative) */
    px_ins(e, "shr.u64 %s, %s, 30", RN(t), RN(hi));
    px_ins(e, "cvt.u32.u64 %s, %s", RN(q), RN(t));
    px_ins(e, "shl.b64 %s, %s, 34", RN(f), RN(hi));
    px_ins(e, "shr.u64 %s, %s, 30", RN(t), RN(lo));
    px_ins(e, "or.b64 %s, %s, %s", RN(f), RN(f), RN(t));
    px_ins(e, "shr.u64 %s, %s, 63", RN(t), RN(f));
    px_ins(e, "cvt.u32.u64 %s, %s", RN(c), RN(t));
    px_ins(e, "add.s32 %s, %s, %s", RN(q), RN(q), RN(c));
    px_ins(e, "cvt.rn.f64.s64 %s, %s", RN(d), RN(f));
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(d), RN(d), px_f64_imm(1.5707963267948966 / 18446744073709551616.0).s);
    px_ins(e, "cvt.rn.f32.f64 %s, %s", RN(r), RN(d));
}

/* Payne-Hanek for f64: |x| = m * 2^(ex-52); T is 192 bits of 2/pi from bit
 * ex-54 on; R = m*T (4 limbs) / 2^190 is |x|*2/pi mod 4, and its 128
 * fraction bits give r in double-double precision before rounding. */
static void reduce_large64(ptx_emitter *e, ptx_reg ax, ptx_reg r, ptx_reg q)
{
    ptx_reg ix = px_tmp(e, PX_B64), t = px_tmp(e, PX_B64), ex = px_tmp(e, PX_B32), m = px_tmp(e, PX_B64), T[3];
    ptx_reg plo[3], phi[3], R0, R1 = px_tmp(e, PX_B64), R2 = px_tmp(e, PX_B64), fh = px_tmp(e, PX_B64);
    ptx_reg fl = px_tmp(e, PX_B64), dh = px_tmp(e, PX_F64), dl = px_tmp(e, PX_F64), lo = px_tmp(e, PX_F64);
    ptx_reg c = px_tmp(e, PX_B32);
    e->uses_2opi64 = 1;
    px_ins(e, "mov.b64 %s, %s", RN(ix), RN(ax));
    px_ins(e, "shr.u64 %s, %s, 52", RN(t), RN(ix));
    px_ins(e, "cvt.u32.u64 %s, %s", RN(ex), RN(t));
    px_ins(e, "and.b64 %s, %s, 0x000FFFFFFFFFFFFF", RN(m), RN(ix));
    px_ins(e, "or.b64 %s, %s, 0x0010000000000000", RN(m), RN(m));
    px_ins(e, "sub.s32 %s, %s, 1013", RN(ex), RN(ex)); /* first bit: (ex - 1023) - 54 + 64 */
    table_window(e, PX_B64, "tj_2opi64", ex, T, 3);
    for (int i = 0; i < 3; i++) {
        plo[i] = px_tmp(e, PX_B64);
        phi[i] = px_tmp(e, PX_B64);
        px_ins(e, "mul.lo.u64 %s, %s, %s", RN(plo[i]), RN(m), RN(T[2 - i]));
        px_ins(e, "mul.hi.u64 %s, %s, %s", RN(phi[i]), RN(m), RN(T[2 - i]));
    }
    R0 = plo[0];
    px_ins(e, "add.cc.u64 %s, %s, %s", RN(R1), RN(phi[0]), RN(plo[1]));
    px_ins(e, "addc.u64 %s, %s, %s", RN(R2), RN(phi[1]), RN(plo[2]));
    /* quadrant: bits 190-191 (R2's top two); fraction: bits 62-189 */
    px_ins(e, "shr.u64 %s, %s, 62", RN(t), RN(R2));
    px_ins(e, "cvt.u32.u64 %s, %s", RN(q), RN(t));
    px_ins(e, "shl.b64 %s, %s, 2", RN(fh), RN(R2));
    px_ins(e, "shr.u64 %s, %s, 62", RN(t), RN(R1));
    px_ins(e, "or.b64 %s, %s, %s", RN(fh), RN(fh), RN(t));
    px_ins(e, "shl.b64 %s, %s, 2", RN(fl), RN(R1));
    px_ins(e, "shr.u64 %s, %s, 62", RN(t), RN(R0));
    px_ins(e, "or.b64 %s, %s, %s", RN(fl), RN(fl), RN(t));
    px_ins(e, "shr.u64 %s, %s, 63", RN(t), RN(fh));
    px_ins(e, "cvt.u32.u64 %s, %s", RN(c), RN(t));
    px_ins(e, "add.s32 %s, %s, %s", RN(q), RN(q), RN(c));
    /* fraction * 2^64 = fh (signed) + fl * 2^-64; times pi/2 * 2^-64 */
    px_ins(e, "cvt.rn.f64.s64 %s, %s", RN(dh), RN(fh));
    px_ins(e, "cvt.rn.f64.u64 %s, %s", RN(dl), RN(fl));
    px_ins(e, "fma.rn.f64 %s, %s, 0d3BF0000000000000, %s", RN(dh), RN(dl), RN(dh));
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(lo), RN(dh), px_f64_imm(6.123233995736766e-17 / 18446744073709551616.0).s);
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(dh), px_f64_imm(1.5707963267948966 / 18446744073709551616.0).s,
           RN(lo));
}

/* r, q with x = q*pi/2 + r: Cody-Waite, then Payne-Hanek in a branch for
 * finite |x| at or above the threshold. */
static void reduce(ptx_emitter *e, const trig_consts *T, ptx_reg a, ptx_reg r, ptx_reg q)
{
    ptx_reg j = px_tmp(e, a.cls), nj = px_tmp(e, a.cls), ax = px_tmp(e, a.cls), big = px_tmp(e, PX_PRED);
    ptx_reg neg = px_tmp(e, PX_PRED), r2 = px_tmp(e, a.cls), q2 = px_tmp(e, PX_B32);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(j), RN(a), px_fimm(a.cls, 0.63661977236758134308).s);
    px_ins(e, "cvt.rni.%s.%s %s, %s", FT(a), FT(a), RN(j), RN(j));
    px_ins(e, "neg.%s %s, %s", FT(a), RN(nj), RN(j));
    for (int i = 0; i < 3; i++)
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(r), RN(nj), px_fimm(a.cls, T->pio2[i]).s, RN(i ? r : a));
    px_ins(e, "cvt.rzi.s32.%s %s, %s", FT(a), RN(q), RN(j));
    uint32_t join = px_new_label(e);
    px_ins(e, "abs.%s %s, %s", FT(a), RN(ax), RN(a));
    px_ins(e, "setp.ge.%s %s, %s, %s", FT(a), RN(big), RN(ax), px_fimm(a.cls, T->threshold).s);
    px_ins(e, "setp.lt.and.%s %s, %s, %s, %s", FT(a), RN(big), RN(ax), px_fimm(a.cls, 1.0 / 0.0).s, RN(big));
    px_ins(e, "@!%s bra $L%u", RN(big), join);
    if (a.cls == PX_F32)
        reduce_large32(e, ax, r2, q2);
    else
        reduce_large64(e, ax, r2, q2);
    /* x < 0: x = -(q*pi/2 + r) = (-q)*pi/2 + (-r) */
    px_ins(e, "setp.lt.%s %s, %s, %s", FT(a), RN(neg), RN(a), px_fimm(a.cls, 0.0).s);
    px_ins(e, "@%s neg.%s %s, %s", RN(neg), FT(a), RN(r2), RN(r2));
    px_ins(e, "@%s neg.s32 %s, %s", RN(neg), RN(q2), RN(q2));
    px_mov(e, r, r2);
    px_mov(e, q, q2);
    px_label(e, join);
}

void px_sincos(ptx_emitter *e, tj_op op, ptx_reg d, ptx_reg a)
{
    const trig_consts *T = a.cls == PX_F32 ? &trig32 : &trig64;
    ptx_reg r = px_tmp(e, a.cls), z = px_tmp(e, a.cls), p = px_tmp(e, a.cls), sv = px_tmp(e, a.cls);
    ptx_reg cv = px_tmp(e, a.cls), hz = px_tmp(e, a.cls), w = px_tmp(e, a.cls), c = px_tmp(e, a.cls);
    ptx_reg q = px_tmp(e, PX_B32), bit = px_tmp(e, PX_B32), odd = px_tmp(e, PX_PRED), neg = px_tmp(e, PX_PRED);
    reduce(e, T, a, r, q);
    if (op == TJ_OP_COS) /* cos(x) = sin(x + pi/2) */
        px_ins(e, "add.s32 %s, %s, 1", RN(q), RN(q));
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(z), RN(r), RN(r));
    /* sin(r) = r + r*z*S(z) */
    px_horner(e, p, z, T->sin, T->nsin);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(sv), RN(r), RN(z));
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(sv), RN(sv), RN(p), RN(r));
    /* cos(r) = w + (((1 - w) - z/2) + z*z*C(z)), w = 1 - z/2 (fdlibm) */
    px_horner(e, p, z, T->cos, T->ncos);
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(hz), RN(z), px_fimm(a.cls, 0.5).s);
    px_ins(e, "sub.rn.%s %s, %s, %s", FT(a), RN(w), px_fimm(a.cls, 1.0).s, RN(hz));
    px_ins(e, "sub.rn.%s %s, %s, %s", FT(a), RN(c), px_fimm(a.cls, 1.0).s, RN(w));
    px_ins(e, "sub.rn.%s %s, %s, %s", FT(a), RN(c), RN(c), RN(hz));
    px_ins(e, "mul.rn.%s %s, %s, %s", FT(a), RN(cv), RN(z), RN(z));
    px_ins(e, "fma.rn.%s %s, %s, %s, %s", FT(a), RN(c), RN(cv), RN(p), RN(c));
    px_ins(e, "add.rn.%s %s, %s, %s", FT(a), RN(cv), RN(w), RN(c));
    px_ins(e, "and.b32 %s, %s, 1", RN(bit), RN(q));
    px_ins(e, "setp.ne.u32 %s, %s, 0", RN(odd), RN(bit));
    px_ins(e, "and.b32 %s, %s, 2", RN(bit), RN(q));
    px_ins(e, "setp.ne.u32 %s, %s, 0", RN(neg), RN(bit));
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), RN(cv), RN(sv), RN(odd));
    px_ins(e, "neg.%s %s, %s", FT(a), RN(c), RN(d));
    px_ins(e, "selp.%s %s, %s, %s, %s", FT(a), RN(d), RN(c), RN(d), RN(neg));
}
