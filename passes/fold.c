/* Constant folding of elementwise ops, bit for bit as the interpreter
 * computes them (docs/ir.md): integers wrap, division by zero gives 0,
 * f32 arithmetic in float, f16/bf16 in f32 rounded back to nearest even.
 *
 * Only results that are exact on every target are folded. Transcendental
 * functions (exp, log, sin, pow on floats, ...) are left alone: folding
 * them would bake the host libm's answer into a kernel whose device may
 * round differently. */
#include <math.h>

#include "passes/fold.h"
#include "tilejit/ir.h"

/* uint64 -> int64 two's complement, without implementation-defined casts. */
static int64_t u2i(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1;
}

int64_t tj_fold_wrap(tj_dtype dt, uint64_t v)
{
    int bits = tj_dtype_bits(dt);
    if (bits <= 0 || bits >= 64)
        return u2i(v);
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    v &= mask;
    if (tj_dtype_is_signed(dt) && (v >> (bits - 1)) & 1)
        v |= ~mask;
    return u2i(v);
}

int64_t tj_fold_all_ones(tj_dtype dt) { return tj_fold_wrap(dt, UINT64_MAX); }

double tj_fold_round(tj_dtype dt, double v)
{
    switch (dt) {
    case TJ_DT_F32: return (float)v;
    case TJ_DT_F16: return tj_f16_to_f32(tj_f64_to_f16(v));
    case TJ_DT_BF16: return tj_bf16_to_f32(tj_f64_to_bf16(v));
    default: return v;
    }
}

/* ---- integers and bool ----------------------------------------------------- */

/* Repeated product, wrapping; a negative exponent gives 0 except for the
 * bases 1 and -1. */
static int64_t int_pow(tj_dtype dt, int64_t a, int64_t b)
{
    if (tj_dtype_is_signed(dt) && b < 0) {
        if (a == 1)
            return 1;
        return a == -1 ? (b % 2 ? -1 : 1) : 0;
    }
    uint64_t r = 1, base = (uint64_t)a;
    for (uint64_t e = (uint64_t)b; e; e >>= 1, base *= base)
        if (e & 1)
            r *= base;
    return tj_fold_wrap(dt, r);
}

/* Shifts: an amount outside [0, bits) gives 0, or all sign bits for an
 * arithmetic right shift of a negative value. */
static int64_t int_shift(tj_dtype dt, int left, int64_t a, int64_t b)
{
    int sgn = tj_dtype_is_signed(dt);
    uint64_t bits = (uint64_t)tj_dtype_bits(dt);
    if ((sgn && b < 0) || (uint64_t)b >= bits)
        return !left && sgn && a < 0 ? -1 : 0;
    if (left)
        return tj_fold_wrap(dt, (uint64_t)a << b);
    if (sgn && a < 0)
        return ~(~a >> b); /* arithmetic shift without relying on >> of negatives */
    return tj_fold_wrap(dt, (uint64_t)a >> b);
}

static int int_less(tj_dtype dt, int64_t a, int64_t b)
{
    return tj_dtype_is_signed(dt) ? a < b : (uint64_t)a < (uint64_t)b;
}

static int fold_int_compare(tj_op op, tj_dtype dt, int64_t a, int64_t b, int64_t *r)
{
    switch (op) {
    case TJ_OP_EQ: *r = a == b; return 1;
    case TJ_OP_NE: *r = a != b; return 1;
    case TJ_OP_LT: *r = int_less(dt, a, b); return 1;
    case TJ_OP_LE: *r = !int_less(dt, b, a); return 1;
    case TJ_OP_GT: *r = int_less(dt, b, a); return 1;
    case TJ_OP_GE: *r = !int_less(dt, a, b); return 1;
    case TJ_OP_MAX: *r = int_less(dt, a, b) ? b : a; return 1;
    case TJ_OP_MIN: *r = int_less(dt, b, a) ? b : a; return 1;
    case TJ_OP_AND: *r = a & b; return 1;
    case TJ_OP_OR: *r = a | b; return 1;
    case TJ_OP_XOR: *r = a ^ b; return 1;
    default: return 0;
    }
}

/* C division truncating toward zero; by zero: 0; INT_MIN / -1 wraps. */
static int64_t int_divrem(tj_dtype dt, int rem, int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (!tj_dtype_is_signed(dt))
        return tj_fold_wrap(dt, rem ? (uint64_t)a % (uint64_t)b : (uint64_t)a / (uint64_t)b);
    if (b == -1)
        return rem ? 0 : tj_fold_wrap(dt, 0 - (uint64_t)a);
    return rem ? a % b : a / b;
}

static int fold_int_binary(tj_op op, tj_dtype dt, int64_t a, int64_t b, int64_t *r)
{
    if (fold_int_compare(op, dt, a, b, r))
        return 1;
    if (dt == TJ_DT_BOOL)
        return 0; /* arithmetic on bool is left to the interpreter */
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case TJ_OP_ADD: *r = tj_fold_wrap(dt, ua + ub); return 1;
    case TJ_OP_SUB: *r = tj_fold_wrap(dt, ua - ub); return 1;
    case TJ_OP_MUL: *r = tj_fold_wrap(dt, ua * ub); return 1;
    case TJ_OP_DIV: *r = int_divrem(dt, 0, a, b); return 1;
    case TJ_OP_REM: *r = int_divrem(dt, 1, a, b); return 1;
    case TJ_OP_POW: *r = int_pow(dt, a, b); return 1;
    case TJ_OP_SHL: *r = int_shift(dt, 1, a, b); return 1;
    case TJ_OP_SHR: *r = int_shift(dt, 0, a, b); return 1;
    default: return 0;
    }
}

static int fold_int_unary(tj_op op, tj_dtype dt, int64_t a, int64_t *r)
{
    if (op == TJ_OP_NOT) {
        *r = dt == TJ_DT_BOOL ? !a : tj_fold_wrap(dt, ~(uint64_t)a);
        return 1;
    }
    if (dt == TJ_DT_BOOL)
        return 0;
    switch (op) {
    case TJ_OP_NEG: *r = tj_fold_wrap(dt, 0 - (uint64_t)a); return 1;
    case TJ_OP_ABS:
        *r = tj_dtype_is_signed(dt) && a < 0 ? tj_fold_wrap(dt, 0 - (uint64_t)a) : a;
        return 1;
    default: return 0;
    }
}

/* ---- floats ----------------------------------------------------------------- */

/* a OP b in the precision the interpreter uses for dt: double for f64,
 * float otherwise (f16/bf16 rounded back afterwards). */
static int float_arith(tj_op op, tj_dtype dt, double a, double b, double *r)
{
    int wide = dt == TJ_DT_F64;
    float fa = (float)a, fb = (float)b;
    switch (op) {
    case TJ_OP_ADD: *r = wide ? a + b : (double)(fa + fb); break;
    case TJ_OP_SUB: *r = wide ? a - b : (double)(fa - fb); break;
    case TJ_OP_MUL: *r = wide ? a * b : (double)(fa * fb); break;
    case TJ_OP_DIV: *r = wide ? a / b : (double)(fa / fb); break;
    case TJ_OP_REM: *r = wide ? fmod(a, b) : (double)fmodf(fa, fb); break;
    default: return 0;
    }
    *r = tj_fold_round(dt, *r);
    return 1;
}

/* max/min: NaN when either is NaN. Which zero max(-0.0, +0.0) gives is not
 * pinned down, so that case is not folded. */
static int float_minmax(tj_op op, double a, double b, double *r)
{
    if (isnan(a) || isnan(b)) {
        *r = isnan(a) ? a : b;
        return 1;
    }
    if (a == b && signbit(a) != signbit(b))
        return 0;
    *r = (op == TJ_OP_MAX) == (a > b) ? a : b;
    return 1;
}

static int fold_float_binary(tj_op op, tj_dtype dt, double a, double b, tj_cval *res)
{
    switch (op) {
    case TJ_OP_EQ: res->i = a == b; return 1;
    case TJ_OP_NE: res->i = a != b; return 1;
    case TJ_OP_LT: res->i = a < b; return 1;
    case TJ_OP_LE: res->i = a <= b; return 1;
    case TJ_OP_GT: res->i = a > b; return 1;
    case TJ_OP_GE: res->i = a >= b; return 1;
    case TJ_OP_MAX:
    case TJ_OP_MIN: return float_minmax(op, a, b, &res->f);
    default: return float_arith(op, dt, a, b, &res->f);
    }
}

static int fold_float_unary(tj_op op, tj_dtype dt, double a, double *r)
{
    int wide = dt == TJ_DT_F64;
    switch (op) {
    case TJ_OP_NEG: *r = -a; return 1;
    case TJ_OP_ABS: *r = fabs(a); return 1;
    case TJ_OP_FLOOR: *r = floor(a); return 1;
    case TJ_OP_CEIL: *r = ceil(a); return 1;
    case TJ_OP_SQRT: /* correctly rounded by IEEE 754, like the device's */
        *r = tj_fold_round(dt, wide ? sqrt(a) : (double)sqrtf((float)a));
        return 1;
    default: return 0;
    }
}

static int fold_fma(tj_dtype dt, const tj_cval *a, double *r)
{
    if (dt == TJ_DT_F64)
        *r = fma(a[0].f, a[1].f, a[2].f);
    else if (dt == TJ_DT_F32)
        *r = fmaf((float)a[0].f, (float)a[1].f, (float)a[2].f);
    else
        return 0; /* f16/bf16: one rounding or two is the target's choice */
    return 1;
}

/* ---- casts -------------------------------------------------------------------- */

/* Float -> integer: truncates toward zero, saturates, NaN gives 0. */
static int64_t float_to_int(tj_dtype dt, double x)
{
    int bits = tj_dtype_bits(dt);
    if (isnan(x))
        return 0;
    x = trunc(x);
    if (!tj_dtype_is_signed(dt)) {
        if (x <= 0)
            return 0;
        return x >= ldexp(1, bits) ? tj_fold_all_ones(dt) : u2i((uint64_t)x);
    }
    double lim = ldexp(1, bits - 1);
    if (x <= -lim)
        return tj_fold_wrap(dt, (uint64_t)1 << (bits - 1)); /* the minimum */
    if (x >= lim)
        return INT64_MAX >> (64 - bits);
    return (int64_t)x;
}

/* v as a double; returns whether that is exact. */
static int int_to_double(int sgn, int64_t v, double *d)
{
    if (sgn) {
        *d = (double)v;
        return *d < 0x1p63 && (int64_t)*d == v;
    }
    *d = (double)(uint64_t)v;
    return *d < 0x1p64 && (uint64_t)*d == (uint64_t)v;
}

/* Integer (or bool) -> float, rounded once. A bf16 result from an integer
 * that a double does not hold exactly would be rounded twice, so it is not
 * folded (an f16 one overflows to infinity either way). */
static int int_to_float(tj_dtype in, tj_dtype out, int64_t v, double *r)
{
    int sgn = tj_dtype_is_signed(in);
    if (out == TJ_DT_F32) {
        *r = sgn ? (float)v : (float)(uint64_t)v;
        return 1;
    }
    double d;
    if (!int_to_double(sgn, v, &d) && out == TJ_DT_BF16)
        return 0;
    *r = tj_fold_round(out, d);
    return 1;
}

static int fold_cast(tj_dtype in, tj_dtype out, tj_cval a, tj_cval *res)
{
    int fin = tj_dtype_is_float(in);
    if (out == TJ_DT_BOOL)
        res->i = fin ? a.f != 0 : a.i != 0;
    else if (!tj_dtype_is_float(out))
        res->i = fin ? float_to_int(out, a.f) : tj_fold_wrap(out, (uint64_t)a.i);
    else if (!fin)
        return int_to_float(in, out, a.i, &res->f);
    else
        res->f = tj_fold_round(out, a.f);
    return 1;
}

/* ---- dispatch -------------------------------------------------------------- */

int tj_fold_elementwise(tj_op op, tj_dtype in, tj_dtype out, const tj_cval *a, tj_cval *res)
{
    *res = (tj_cval){0};
    if (op == TJ_OP_SELECT) {
        *res = a[0].i ? a[1] : a[2];
        return 1;
    }
    if (op == TJ_OP_CAST)
        return fold_cast(in, out, a[0], res);
    if (op == TJ_OP_BITCAST)
        return 0; /* constants hold values, not bits (f16 as a double): left to run */
    const tj_op_info *info = tj_op_get(op);
    if (!(info->flags & TJ_OPF_ELEM))
        return 0;
    if (tj_dtype_is_float(in)) {
        if (op == TJ_OP_FMA)
            return fold_fma(in, a, &res->f);
        if (info->nargs == 2)
            return fold_float_binary(op, in, a[0].f, a[1].f, res);
        return info->nargs == 1 && fold_float_unary(op, in, a[0].f, &res->f);
    }
    if (!tj_dtype_is_int(in) && in != TJ_DT_BOOL)
        return 0;
    if (info->nargs == 2)
        return fold_int_binary(op, in, a[0].i, a[1].i, &res->i);
    return info->nargs == 1 && fold_int_unary(op, in, a[0].i, &res->i);
}
