/* Constants and the elementwise binary ops (arithmetic, bitwise, shifts,
 * max/min, compare, select, fma) for every dtype. Vectors go component by
 * component. f16/bf16 compute in f32 (docs/ir.md); small integers compute
 * in 32 bits and wrap back. */
#include "codegen/ptx/ptx.h"

int px_emit_const(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    if (px_elem_type(e, in->type, &dt) != 1)
        return px_fail(e, r, "a constant must be a scalar");
    if (px_define(e, r, in->type))
        return -1;
    ptx_reg d = px_val(e, r, 0);
    switch (dt) {
    case TJ_DT_BOOL: px_ins(e, "mov.pred %s, %d", RN(d), in->imm != 0); break;
    case TJ_DT_F16: px_ins(e, "mov.b16 %s, 0x%04X", RN(d), tj_f64_to_f16(in->fimm)); break;
    case TJ_DT_BF16: px_ins(e, "mov.b16 %s, 0x%04X", RN(d), tj_f64_to_bf16(in->fimm)); break;
    case TJ_DT_F32: px_ins(e, "mov.f32 %s, %s", RN(d), px_f32_imm((float)in->fimm).s); break;
    case TJ_DT_F64: px_ins(e, "mov.f64 %s, %s", RN(d), px_f64_imm(in->fimm).s); break;
    case TJ_DT_I64: case TJ_DT_U64:
        px_ins(e, "mov.b64 %s, 0x%016llX", RN(d), (unsigned long long)in->imm);
        break;
    default:
        px_ins(e, "mov.b32 %s, 0x%08X", RN(d), (unsigned)(uint32_t)in->imm);
        px_wrap_small(e, dt, d);
        break;
    }
    return 0;
}

/* ---- integers ------------------------------------------------------------ */

/* Whether SIMT value v is a constant divisor that needs no guard (not 0,
 * not -1 when signed): *imm its value. An immediate divisor lets ptxas
 * divide by multiplying and shifting; a register, even one holding a
 * constant through the guard's selp, costs a full division. */
static int plain_divisor(const ptx_emitter *e, tj_ref v, int sign, long long *imm)
{
    const tj_inst *in = px_inst(e, v);
    if (in->op != TJ_OP_CONST || in->imm == 0 || (sign && in->imm == -1))
        return 0;
    *imm = (long long)in->imm;
    return 1;
}

/* k when v = 2^k, else -1. */
static int exact_log2(unsigned long long v)
{
    int k = 0;
    if (!v || (v & (v - 1)))
        return -1;
    while (!(v & 1)) {
        v >>= 1;
        k++;
    }
    return k;
}

/* a / 2^k and a % 2^k with shifts and masks (ptxas leaves a division by an
 * immediate a division). Signed: the quotient truncates toward zero, so a
 * negative a gets 2^k - 1 added first; the remainder is a - quotient * 2^k. */
static void divide_by_power_of_two(ptx_emitter *e, tj_op op, int sign, int k, ptx_reg d, ptx_reg a)
{
    int bits = d.cls == PX_B64 ? 64 : 32;
    const char *b = px_cls_type(d.cls), *s = bits == 64 ? "s64" : "s32", *u = bits == 64 ? "u64" : "u32";
    unsigned long long mask = (1ull << k) - 1;
    if (!sign) {
        if (op == TJ_OP_DIV)
            px_ins(e, "shr.%s %s, %s, %d", u, RN(d), RN(a), k);
        else
            px_ins(e, "and.%s %s, %s, %llu", b, RN(d), RN(a), mask);
        return;
    }
    ptx_reg t = px_tmp(e, d.cls);
    px_ins(e, "shr.%s %s, %s, %d", s, RN(t), RN(a), bits - 1);
    px_ins(e, "shr.%s %s, %s, %d", u, RN(t), RN(t), bits - k);
    px_ins(e, "add.%s %s, %s, %s", s, RN(t), RN(t), RN(a));
    if (op == TJ_OP_DIV) {
        px_ins(e, "shr.%s %s, %s, %d", s, RN(d), RN(t), k);
        return;
    }
    px_ins(e, "and.%s %s, %s, %llu", b, RN(t), RN(t), ~mask & (bits == 64 ? ~0ull : 0xFFFFFFFFull));
    px_ins(e, "sub.%s %s, %s, %s", s, RN(d), RN(a), RN(t));
}

/* Unsigned 32-bit a / c and a % c for a constant c > 1 that is not a power
 * of two, by the round-up multiplier m = 2^32 + m' = floor(2^(32 + l) / c)
 * + 1, l = ceil(log2 c) (Hacker's Delight 10-8): t = mulhi(a, m'),
 * q = (t + (a - t) / 2) >> (l - 1); exact for every 32-bit a. */
static void divide_by_constant_u32(ptx_emitter *e, tj_op op, unsigned long long c, ptx_reg d, ptx_reg a)
{
    int l = 0;
    while ((1ull << l) < c)
        l++;
    unsigned long long m = (1ull << (32 + l)) / c + 1 - (1ull << 32);
    ptx_reg t = px_tmp(e, PX_B32), x = px_tmp(e, PX_B32), q = op == TJ_OP_DIV ? d : px_tmp(e, PX_B32);
    px_ins(e, "mul.hi.u32 %s, %s, %llu", RN(t), RN(a), m);
    px_ins(e, "sub.u32 %s, %s, %s", RN(x), RN(a), RN(t));
    px_ins(e, "shr.u32 %s, %s, 1", RN(x), RN(x));
    px_ins(e, "add.u32 %s, %s, %s", RN(x), RN(x), RN(t));
    px_ins(e, "shr.u32 %s, %s, %d", RN(q), RN(x), l - 1);
    if (op == TJ_OP_REM) {
        px_ins(e, "mul.lo.u32 %s, %s, %llu", RN(x), RN(q), c);
        px_ins(e, "sub.u32 %s, %s, %s", RN(d), RN(a), RN(x));
    }
}

/* d = a / b or a % b with the rules of docs/ir.md: a zero divisor gives 0,
 * INT_MIN / -1 wraps. The divisor is replaced by 1 in both cases, where
 * PTX leaves the result unspecified; a % 1 is the 0 both need. */
static void int_divide(ptx_emitter *e, tj_ref r, tj_dtype dt, ptx_reg d, ptx_reg a, ptx_reg b)
{
    tj_op op = px_inst(e, r)->op;
    const char *it = px_int_type(dt), *bt = px_cls_type(d.cls);
    int sign = tj_dtype_is_signed(dt);
    long long imm;
    if (plain_divisor(e, px_inst(e, r)->args[1], sign, &imm)) {
        const char *name = op == TJ_OP_DIV ? "div" : "rem";
        int k = imm > 1 ? exact_log2((unsigned long long)imm) : -1;
        if (k > 0 && (d.cls == PX_B32 || d.cls == PX_B64))
            divide_by_power_of_two(e, op, sign, k, d, a);
        else if (!sign && d.cls == PX_B32 && imm > 1 && imm <= 0xFFFFFFFFll)
            divide_by_constant_u32(e, op, (unsigned long long)imm, d, a);
        else if (sign)
            px_ins(e, "%s.%s %s, %s, %lld", name, it, RN(d), RN(a), imm);
        else
            px_ins(e, "%s.%s %s, %s, %llu", name, it, RN(d), RN(a), (unsigned long long)imm);
        return;
    }
    ptx_reg zero = px_tmp(e, PX_PRED), bad = zero, minus1 = zero, safe = px_tmp(e, d.cls);
    px_ins(e, "setp.eq.%s %s, %s, 0", it, RN(zero), RN(b));
    if (sign) {
        minus1 = px_tmp(e, PX_PRED);
        bad = px_tmp(e, PX_PRED);
        px_ins(e, "setp.eq.%s %s, %s, -1", it, RN(minus1), RN(b));
        px_ins(e, "or.pred %s, %s, %s", RN(bad), RN(zero), RN(minus1));
    }
    px_ins(e, "selp.%s %s, 1, %s, %s", bt, RN(safe), RN(b), RN(bad));
    px_ins(e, "%s.%s %s, %s, %s", op == TJ_OP_DIV ? "div" : "rem", it, RN(d), RN(a), RN(safe));
    if (op == TJ_OP_REM)
        return;
    if (sign) {
        ptx_reg neg = px_tmp(e, d.cls);
        px_ins(e, "sub.%s %s, 0, %s", it, RN(neg), RN(a));
        px_ins(e, "selp.%s %s, %s, %s, %s", bt, RN(d), RN(neg), RN(d), RN(minus1));
    }
    px_ins(e, "selp.%s %s, 0, %s, %s", bt, RN(d), RN(d), RN(zero));
}

/* Shift amounts outside [0, bits) give 0 (or the sign for shr): PTX clamps
 * a u32 amount to the width, so 64-bit amounts are clamped to 64 first. */
static void int_shift(ptx_emitter *e, tj_op op, tj_dtype dt, ptx_reg d, ptx_reg a, ptx_reg b)
{
    ptx_reg amount = b;
    if (b.cls == PX_B64) {
        ptx_reg t = px_tmp(e, PX_B64);
        amount = px_tmp(e, PX_B32);
        px_ins(e, "min.u64 %s, %s, 64", RN(t), RN(b));
        px_ins(e, "cvt.u32.u64 %s, %s", RN(amount), RN(t));
    }
    const char *bits = px_cls_type(d.cls);
    if (op == TJ_OP_SHL)
        px_ins(e, "shl.%s %s, %s, %s", bits, RN(d), RN(a), RN(amount));
    else
        px_ins(e, "shr.%s %s, %s, %s", px_int_type(dt), RN(d), RN(a), RN(amount));
}

/* Integer power by squaring (a loop per thread). A negative exponent gives
 * 0, except for bases 1 and -1: running the loop on the exponent's parity
 * gives those two, and the rest is selected to 0. */
static void int_pow(ptx_emitter *e, tj_dtype dt, ptx_reg d, ptx_reg a, ptx_reg b)
{
    const char *it = px_int_type(dt), *bt = px_cls_type(d.cls);
    const char *ut = d.cls == PX_B64 ? "u64" : "u32";
    int sign = tj_dtype_is_signed(dt);
    ptx_reg base = px_tmp(e, d.cls), x = px_tmp(e, d.cls), bit = px_tmp(e, d.cls);
    ptx_reg neg = px_tmp(e, PX_PRED), p = px_tmp(e, PX_PRED);
    px_ins(e, "mov.%s %s, 1", bt, RN(d));
    px_mov(e, base, a);
    px_mov(e, x, b);
    if (sign) {
        px_ins(e, "setp.lt.%s %s, %s, 0", it, RN(neg), RN(b));
        px_ins(e, "and.%s %s, %s, 1", bt, RN(bit), RN(b));
        px_ins(e, "selp.%s %s, %s, %s, %s", bt, RN(x), RN(bit), RN(b), RN(neg));
    }
    uint32_t top = px_new_label(e), done = px_new_label(e);
    px_label(e, top);
    px_ins(e, "setp.eq.%s %s, %s, 0", ut, RN(p), RN(x));
    px_ins(e, "@%s bra $L%u", RN(p), done);
    px_ins(e, "and.%s %s, %s, 1", bt, RN(bit), RN(x));
    px_ins(e, "setp.ne.%s %s, %s, 0", ut, RN(p), RN(bit));
    px_ins(e, "@%s mul.lo.%s %s, %s, %s", RN(p), it, RN(d), RN(d), RN(base));
    px_ins(e, "mul.lo.%s %s, %s, %s", it, RN(base), RN(base), RN(base));
    px_ins(e, "shr.%s %s, %s, 1", ut, RN(x), RN(x));
    px_ins(e, "bra $L%u", top);
    px_label(e, done);
    if (sign) {
        ptx_reg one = px_tmp(e, PX_PRED), m1 = px_tmp(e, PX_PRED);
        px_ins(e, "setp.ne.%s %s, %s, 1", it, RN(one), RN(a));
        px_ins(e, "setp.ne.%s %s, %s, -1", it, RN(m1), RN(a));
        px_ins(e, "and.pred %s, %s, %s", RN(neg), RN(neg), RN(one));
        px_ins(e, "and.pred %s, %s, %s", RN(neg), RN(neg), RN(m1));
        px_ins(e, "selp.%s %s, 0, %s, %s", bt, RN(d), RN(d), RN(neg));
    }
}

static int int_binary(ptx_emitter *e, tj_ref r, tj_dtype dt, ptx_reg d, ptx_reg a, ptx_reg b)
{
    tj_op op = px_inst(e, r)->op;
    const char *it = px_int_type(dt), *bits = px_cls_type(d.cls);
    switch (op) {
    case TJ_OP_ADD: px_ins(e, "add.%s %s, %s, %s", it, RN(d), RN(a), RN(b)); break;
    case TJ_OP_SUB: px_ins(e, "sub.%s %s, %s, %s", it, RN(d), RN(a), RN(b)); break;
    case TJ_OP_MUL: px_ins(e, "mul.lo.%s %s, %s, %s", it, RN(d), RN(a), RN(b)); break;
    case TJ_OP_MAX: px_ins(e, "max.%s %s, %s, %s", it, RN(d), RN(a), RN(b)); break;
    case TJ_OP_MIN: px_ins(e, "min.%s %s, %s, %s", it, RN(d), RN(a), RN(b)); break;
    case TJ_OP_AND: px_ins(e, "and.%s %s, %s, %s", bits, RN(d), RN(a), RN(b)); break;
    case TJ_OP_OR: px_ins(e, "or.%s %s, %s, %s", bits, RN(d), RN(a), RN(b)); break;
    case TJ_OP_XOR: px_ins(e, "xor.%s %s, %s, %s", bits, RN(d), RN(a), RN(b)); break;
    case TJ_OP_DIV: case TJ_OP_REM: int_divide(e, r, dt, d, a, b); break;
    case TJ_OP_SHL: case TJ_OP_SHR: int_shift(e, op, dt, d, a, b); break;
    case TJ_OP_POW: int_pow(e, dt, d, a, b); break;
    default: return px_fail(e, r, "not an integer op");
    }
    px_wrap_small(e, dt, d);
    return 0;
}

/* ---- floats and bool --------------------------------------------------------- */

/* max/min that return NaN when either operand is NaN: f32 has the .NaN
 * form (sm_80); f64 selects a NaN after the plain one. */
static void float_minmax(ptx_emitter *e, tj_op op, ptx_reg d, ptx_reg a, ptx_reg b)
{
    const char *name = op == TJ_OP_MAX ? "max" : "min";
    if (d.cls == PX_F32) {
        px_ins(e, "%s.NaN.f32 %s, %s, %s", name, RN(d), RN(a), RN(b));
        return;
    }
    ptx_reg nan = px_tmp(e, PX_PRED);
    px_ins(e, "%s.f64 %s, %s, %s", name, RN(d), RN(a), RN(b));
    px_ins(e, "setp.nan.f64 %s, %s, %s", RN(nan), RN(a), RN(b));
    px_ins(e, "selp.f64 %s, 0d7FF8000000000000, %s, %s", RN(d), RN(d), RN(nan));
}

/* d = a / b in f32, correctly rounded, without div.rn.f32's slow-path
 * subroutine (e->no_calls): in f64, where no f32 quotient is subnormal or
 * out of range. The reciprocal's approximation, refined by three Newton
 * steps (enough from 8 good bits), and the quotient corrected once by its
 * residual leave
 * it within an ulp of f64; an f32 quotient that is not itself a midpoint
 * between two floats lies at least 2^-49 (relative) from one, so rounding
 * that to f32 rounds the exact quotient. Zero, infinite and NaN operands
 * take the plain product a * (1/b), which is their IEEE quotient. */
void px_div_rn_f32_in_f64(ptx_emitter *e, ptx_reg d, ptx_reg a, ptx_reg b)
{
    ptx_reg x = px_tmp(e, PX_F64), nb = px_tmp(e, PX_F64), r0 = px_tmp(e, PX_F64), r = px_tmp(e, PX_F64);
    ptx_reg t = px_tmp(e, PX_F64), q = px_tmp(e, PX_F64), plain = px_tmp(e, PX_F64);
    ptx_reg fa = px_tmp(e, PX_PRED), fb = px_tmp(e, PX_PRED);
    px_ins(e, "cvt.f64.f32 %s, %s", RN(x), RN(a));
    px_ins(e, "cvt.f64.f32 %s, %s", RN(nb), RN(b));
    px_ins(e, "rcp.approx.ftz.f64 %s, %s", RN(r0), RN(nb));
    px_ins(e, "neg.f64 %s, %s", RN(nb), RN(nb));
    px_ins(e, "fma.rn.f64 %s, %s, %s, 0d3FF0000000000000", RN(t), RN(nb), RN(r0));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(r0), RN(t), RN(r0));
    px_ins(e, "fma.rn.f64 %s, %s, %s, 0d3FF0000000000000", RN(t), RN(nb), RN(r));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(r), RN(t), RN(r));
    px_ins(e, "fma.rn.f64 %s, %s, %s, 0d3FF0000000000000", RN(t), RN(nb), RN(r));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(r), RN(r), RN(t), RN(r));
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(q), RN(x), RN(r));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(t), RN(nb), RN(q), RN(x));
    px_ins(e, "fma.rn.f64 %s, %s, %s, %s", RN(q), RN(t), RN(r), RN(q));
    px_ins(e, "mul.rn.f64 %s, %s, %s", RN(plain), RN(x), RN(r0));
    px_ins(e, "testp.finite.f32 %s, %s", RN(fa), RN(a));
    px_ins(e, "setp.ne.and.f32 %s, %s, 0f00000000, %s", RN(fa), RN(a), RN(fa));
    px_ins(e, "testp.finite.f32 %s, %s", RN(fb), RN(b));
    px_ins(e, "setp.ne.and.f32 %s, %s, 0f00000000, %s", RN(fb), RN(b), RN(fb));
    px_ins(e, "and.pred %s, %s, %s", RN(fa), RN(fa), RN(fb));
    px_ins(e, "selp.f64 %s, %s, %s, %s", RN(q), RN(q), RN(plain), RN(fa));
    px_ins(e, "cvt.rn.f32.f64 %s, %s", RN(d), RN(q));
}

static int float_binary(ptx_emitter *e, tj_ref r, tj_dtype dt, ptx_reg d, ptx_reg a, ptx_reg b)
{
    tj_op op = px_inst(e, r)->op;
    ptx_reg wa = px_widen(e, dt, a), wb = px_widen(e, dt, b), cd = px_compute_dst(e, dt, d);
    const char *ft = px_cls_type(cd.cls);
    switch (op) {
    case TJ_OP_ADD: px_ins(e, "add.rn.%s %s, %s, %s", ft, RN(cd), RN(wa), RN(wb)); break;
    case TJ_OP_SUB: px_ins(e, "sub.rn.%s %s, %s, %s", ft, RN(cd), RN(wa), RN(wb)); break;
    case TJ_OP_MUL: px_ins(e, "mul.rn.%s %s, %s, %s", ft, RN(cd), RN(wa), RN(wb)); break;
    case TJ_OP_DIV:
        /* fastmath: 2 ulp (div.full), as Triton's f32 `/` */
        if (cd.cls == PX_F32 && e->fastmath)
            px_ins(e, "div.full.f32 %s, %s, %s", RN(cd), RN(wa), RN(wb));
        else if (cd.cls == PX_F32 && e->no_calls)
            px_div_rn_f32_in_f64(e, cd, wa, wb);
        else
            px_ins(e, "div.rn.%s %s, %s, %s", ft, RN(cd), RN(wa), RN(wb));
        break;
    case TJ_OP_REM: px_fmod(e, cd, wa, wb); break;
    case TJ_OP_POW: px_pow(e, cd, wa, wb); break;
    case TJ_OP_MAX: case TJ_OP_MIN: float_minmax(e, op, cd, wa, wb); break;
    default: return px_fail(e, r, "'%s' is not defined on %s", tj_op_get(op)->name, tj_dtype_name(dt));
    }
    px_narrow(e, dt, d, cd);
    return 0;
}

static int bool_binary(ptx_emitter *e, tj_ref r, ptx_reg d, ptx_reg a, ptx_reg b)
{
    tj_op op = px_inst(e, r)->op;
    const char *name = op == TJ_OP_AND || op == TJ_OP_MIN ? "and"
                       : op == TJ_OP_OR || op == TJ_OP_MAX ? "or"
                       : op == TJ_OP_XOR                   ? "xor"
                                                           : NULL;
    if (!name)
        return px_fail(e, r, "'%s' is not defined on bool", tj_op_get(op)->name);
    px_ins(e, "%s.pred %s, %s, %s", name, RN(d), RN(a), RN(b));
    return 0;
}

int px_emit_binary(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    int w = px_elem_type(e, in->type, &dt);
    if (w <= 0)
        return px_fail(e, r, "operands must be scalars or vectors");
    if (px_operand_check(e, r, 0, (uint32_t)w, dt) || px_operand_check(e, r, 1, (uint32_t)w, dt))
        return -1;
    if (px_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        ptx_reg d = px_val(e, r, (uint32_t)i), a = px_operand(e, r, 0, (uint32_t)i), b = px_operand(e, r, 1, (uint32_t)i);
        int rc = dt == TJ_DT_BOOL           ? bool_binary(e, r, d, a, b)
                 : tj_dtype_is_float(dt) ? float_binary(e, r, dt, d, a, b)
                                         : int_binary(e, r, dt, d, a, b);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- compare, select, fma ------------------------------------------------------ */

static void bool_compare(ptx_emitter *e, tj_op op, ptx_reg d, ptx_reg a, ptx_reg b)
{
    ptx_reg t = px_tmp(e, PX_PRED);
    switch (op) {
    case TJ_OP_EQ: px_ins(e, "xor.pred %s, %s, %s", RN(t), RN(a), RN(b)); px_ins(e, "not.pred %s, %s", RN(d), RN(t)); break;
    case TJ_OP_NE: px_ins(e, "xor.pred %s, %s, %s", RN(d), RN(a), RN(b)); break;
    case TJ_OP_LT: px_ins(e, "not.pred %s, %s", RN(t), RN(a)); px_ins(e, "and.pred %s, %s, %s", RN(d), RN(t), RN(b)); break;
    case TJ_OP_LE: px_ins(e, "not.pred %s, %s", RN(t), RN(a)); px_ins(e, "or.pred %s, %s, %s", RN(d), RN(t), RN(b)); break;
    case TJ_OP_GT: px_ins(e, "not.pred %s, %s", RN(t), RN(b)); px_ins(e, "and.pred %s, %s, %s", RN(d), RN(a), RN(t)); break;
    default: px_ins(e, "not.pred %s, %s", RN(t), RN(b)); px_ins(e, "or.pred %s, %s, %s", RN(d), RN(a), RN(t)); break;
    }
}

int px_emit_compare(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt, rdt;
    int w = px_elem_type(e, in->type, &rdt);
    if (w <= 0 || rdt != TJ_DT_BOOL || in->nargs != 2)
        return px_fail(e, r, "a comparison gives bool scalars or vectors");
    if (px_operand_check(e, r, 0, (uint32_t)w, TJ_DT_INVALID))
        return -1;
    px_elem_type(e, px_inst(e, in->args[0])->type, &dt);
    if (px_operand_check(e, r, 1, (uint32_t)w, dt))
        return -1;
    if (px_define(e, r, in->type))
        return -1;
    /* Floats: != is true on NaN (unordered), the others false. */
    static const char *const int_cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    static const char *const float_cmp[] = {"eq", "neu", "lt", "le", "gt", "ge"};
    int which = (int)(in->op - TJ_OP_EQ);
    for (int i = 0; i < w; i++) {
        ptx_reg d = px_val(e, r, (uint32_t)i), a = px_operand(e, r, 0, (uint32_t)i), b = px_operand(e, r, 1, (uint32_t)i);
        if (dt == TJ_DT_BOOL) {
            bool_compare(e, in->op, d, a, b);
        } else if (tj_dtype_is_float(dt)) {
            ptx_reg wa = px_widen(e, dt, a), wb = px_widen(e, dt, b);
            px_ins(e, "setp.%s.%s %s, %s, %s", float_cmp[which], px_cls_type(wa.cls), RN(d), RN(wa), RN(wb));
        } else {
            px_ins(e, "setp.%s.%s %s, %s, %s", int_cmp[which], px_int_type(dt), RN(d), RN(a), RN(b));
        }
    }
    return 0;
}

int px_emit_select_op(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    int w = px_elem_type(e, in->type, &dt);
    if (w <= 0 || in->nargs != 3)
        return px_fail(e, r, "select takes a condition and two scalars or vectors");
    if (px_operand_check(e, r, 0, (uint32_t)w, TJ_DT_BOOL) || px_operand_check(e, r, 1, (uint32_t)w, dt) ||
        px_operand_check(e, r, 2, (uint32_t)w, dt))
        return -1;
    if (px_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++)
        px_select(e, px_val(e, r, (uint32_t)i), px_operand(e, r, 0, (uint32_t)i), px_operand(e, r, 1, (uint32_t)i),
                  px_operand(e, r, 2, (uint32_t)i));
    return 0;
}

int px_emit_fma(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    int w = px_elem_type(e, in->type, &dt);
    if (w <= 0 || in->nargs != 3 || !tj_dtype_is_float(dt))
        return px_fail(e, r, "fma takes three float scalars or vectors");
    for (uint32_t a = 0; a < 3; a++)
        if (px_operand_check(e, r, a, (uint32_t)w, dt))
            return -1;
    if (px_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++) {
        ptx_reg d = px_val(e, r, (uint32_t)i), cd = px_compute_dst(e, dt, d);
        ptx_reg a = px_widen(e, dt, px_operand(e, r, 0, (uint32_t)i)), b = px_widen(e, dt, px_operand(e, r, 1, (uint32_t)i));
        ptx_reg c = px_widen(e, dt, px_operand(e, r, 2, (uint32_t)i));
        px_ins(e, "fma.rn.%s %s, %s, %s, %s", px_cls_type(cd.cls), RN(cd), RN(a), RN(b), RN(c));
        px_narrow(e, dt, d, cd);
    }
    return 0;
}
