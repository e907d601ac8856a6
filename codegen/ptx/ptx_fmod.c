/* fmod(x, y) of f32 and f64, exact, as musl computes it: the mantissas'
 * long division, one bit per step, on integer registers (per-thread loop;
 * up to ~280 steps for f32 and ~2100 for f64 when the exponents are far
 * apart). */
#include "codegen/ptx/ptx.h"

typedef struct fmod_format {
    ptx_cls icls;
    const char *b, *u, *s;       /* b32 u32 s32 / b64 u64 s64 */
    const char *abs_mask, *inf, *sign_mask, *mant_mask, *implicit, *nan;
    int mbits, lead;             /* mantissa bits; leading zeros above the implicit bit */
} fmod_format;

static const fmod_format fmt32 = {PX_B32, "b32", "u32", "s32", "0x7FFFFFFF", "0x7F800000", "0x80000000",
                                  "0x007FFFFF", "0x00800000", "0x7FFFFFFF", 23, 8};
static const fmod_format fmt64 = {PX_B64, "b64", "u64", "s64", "0x7FFFFFFFFFFFFFFF", "0x7FF0000000000000",
                                  "0x8000000000000000", "0x000FFFFFFFFFFFFF", "0x0010000000000000",
                                  "0x7FF8000000000000", 52, 11};

/* Splits |v| (bits) into an exponent (s32) and a mantissa with the
 * implicit bit at position mbits; subnormals are normalized with clz. */
static void unpack(ptx_emitter *e, const fmod_format *F, ptx_reg mant, ptx_reg ex, ptx_reg bits)
{
    ptx_reg t = px_tmp(e, F->icls), lz = px_tmp(e, PX_B32), sub = px_tmp(e, PX_PRED);
    px_ins(e, "shr.%s %s, %s, %d", F->u, RN(t), RN(bits), F->mbits);
    if (F->icls == PX_B64)
        px_ins(e, "cvt.u32.u64 %s, %s", RN(ex), RN(t));
    else
        px_mov(e, ex, t);
    px_ins(e, "and.%s %s, %s, %s", F->b, RN(mant), RN(bits), F->mant_mask);
    px_ins(e, "setp.eq.s32 %s, %s, 0", RN(sub), RN(ex));
    /* subnormal: shift the leading 1 up to the implicit position, exponent 1 - shift */
    px_ins(e, "clz.%s %s, %s", F->b, RN(lz), RN(mant));
    px_ins(e, "sub.s32 %s, %s, %d", RN(lz), RN(lz), F->lead);
    px_ins(e, "@%s shl.%s %s, %s, %s", RN(sub), F->b, RN(mant), RN(mant), RN(lz));
    px_ins(e, "@%s sub.s32 %s, 1, %s", RN(sub), RN(ex), RN(lz));
    px_ins(e, "@!%s or.%s %s, %s, %s", RN(sub), F->b, RN(mant), RN(mant), F->implicit);
}

void px_fmod(ptx_emitter *e, ptx_reg d, ptx_reg a, ptx_reg b)
{
    const fmod_format *F = d.cls == PX_F32 ? &fmt32 : &fmt64;
    ptx_cls ic = F->icls;
    ptx_reg ux = px_tmp(e, ic), uy = px_tmp(e, ic), sx = px_tmp(e, ic), mx = px_tmp(e, ic), my = px_tmp(e, ic);
    ptx_reg diff = px_tmp(e, ic), ex = px_tmp(e, PX_B32), ey = px_tmp(e, PX_B32), lz = px_tmp(e, PX_B32);
    ptx_reg p = px_tmp(e, PX_PRED), q = px_tmp(e, PX_PRED);
    uint32_t end = px_new_label(e), loop = px_new_label(e), tail = px_new_label(e), zero = px_new_label(e);
    px_ins(e, "mov.%s %s, %s", F->b, RN(ux), RN(a));
    px_ins(e, "mov.%s %s, %s", F->b, RN(uy), RN(b));
    px_ins(e, "and.%s %s, %s, %s", F->b, RN(sx), RN(ux), F->sign_mask);
    px_ins(e, "and.%s %s, %s, %s", F->b, RN(ux), RN(ux), F->abs_mask);
    px_ins(e, "and.%s %s, %s, %s", F->b, RN(uy), RN(uy), F->abs_mask);
    /* y == 0, y NaN, x inf or NaN: NaN */
    px_ins(e, "mov.%s %s, %s", F->b, RN(diff), F->nan);
    px_ins(e, "setp.eq.%s %s, %s, 0", F->u, RN(p), RN(uy));
    px_ins(e, "setp.gt.or.%s %s, %s, %s, %s", F->u, RN(p), RN(uy), F->inf, RN(p));
    px_ins(e, "setp.ge.or.%s %s, %s, %s, %s", F->u, RN(p), RN(ux), F->inf, RN(p));
    px_ins(e, "@%s bra $L%u", RN(p), end);
    /* |x| < |y|: x; |x| == |y|: +-0 */
    px_ins(e, "or.%s %s, %s, %s", F->b, RN(diff), RN(ux), RN(sx));
    px_ins(e, "setp.lt.%s %s, %s, %s", F->u, RN(p), RN(ux), RN(uy));
    px_ins(e, "@%s bra $L%u", RN(p), end);
    px_ins(e, "setp.eq.%s %s, %s, %s", F->u, RN(p), RN(ux), RN(uy));
    px_ins(e, "@%s bra $L%u", RN(p), zero);
    unpack(e, F, mx, ex, ux);
    unpack(e, F, my, ey, uy);
    /* for (; ex > ey; ex--) { if (mx >= my) mx -= my; mx <<= 1; } */
    px_label(e, loop);
    px_ins(e, "setp.le.s32 %s, %s, %s", RN(p), RN(ex), RN(ey));
    px_ins(e, "@%s bra $L%u", RN(p), tail);
    px_ins(e, "setp.ge.%s %s, %s, %s", F->u, RN(q), RN(mx), RN(my));
    px_ins(e, "@%s sub.%s %s, %s, %s", RN(q), F->s, RN(mx), RN(mx), RN(my));
    px_ins(e, "shl.%s %s, %s, 1", F->b, RN(mx), RN(mx));
    px_ins(e, "sub.s32 %s, %s, 1", RN(ex), RN(ex));
    px_ins(e, "bra $L%u", loop);
    px_label(e, tail);
    px_ins(e, "setp.ge.%s %s, %s, %s", F->u, RN(q), RN(mx), RN(my));
    px_ins(e, "@%s sub.%s %s, %s, %s", RN(q), F->s, RN(mx), RN(mx), RN(my));
    px_ins(e, "setp.eq.%s %s, %s, 0", F->u, RN(p), RN(mx));
    px_ins(e, "@%s bra $L%u", RN(p), zero);
    /* normalize the remainder and rebuild the number (subnormal if ex < 1) */
    px_ins(e, "clz.%s %s, %s", F->b, RN(lz), RN(mx));
    px_ins(e, "sub.s32 %s, %s, %d", RN(lz), RN(lz), F->lead);
    px_ins(e, "shl.%s %s, %s, %s", F->b, RN(mx), RN(mx), RN(lz));
    px_ins(e, "sub.s32 %s, %s, %s", RN(ex), RN(ex), RN(lz));
    px_ins(e, "setp.gt.s32 %s, %s, 0", RN(p), RN(ex));
    px_ins(e, "@%s xor.%s %s, %s, %s", RN(p), F->b, RN(mx), RN(mx), F->implicit);
    {
        ptx_reg shifted = px_tmp(e, ic), e64 = px_tmp(e, ic), amount = px_tmp(e, PX_B32);
        if (ic == PX_B64)
            px_ins(e, "cvt.u64.u32 %s, %s", RN(e64), RN(ex));
        else
            px_mov(e, e64, ex);
        px_ins(e, "shl.%s %s, %s, %d", F->b, RN(e64), RN(e64), F->mbits);
        px_ins(e, "or.%s %s, %s, %s", F->b, RN(shifted), RN(mx), RN(e64));
        px_ins(e, "sub.s32 %s, 1, %s", RN(amount), RN(ex));
        px_ins(e, "@!%s shr.%s %s, %s, %s", RN(p), F->u, RN(shifted), RN(mx), RN(amount));
        px_ins(e, "or.%s %s, %s, %s", F->b, RN(diff), RN(shifted), RN(sx));
    }
    px_ins(e, "bra $L%u", end);
    px_label(e, zero);
    px_mov(e, diff, sx);
    px_label(e, end);
    px_ins(e, "mov.%s %s, %s", F->b, RN(d), RN(diff));
}
