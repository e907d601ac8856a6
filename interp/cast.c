/* cast: float -> int truncates toward zero and saturates (NaN gives 0);
 * int -> int wraps; -> bool is != 0; -> f16/bf16 rounds to nearest even
 * in a single step from the exact value. */
#include <math.h>

#include "interp/interp.h"

static tj_slot float_to_int(double x, tj_dtype dt)
{
    tj_slot s = {.u = 0};
    if (x != x)
        return s;
    int bits = tj_dtype_bits(dt);
    double t = trunc(x);
    if (tj_dtype_is_signed(dt)) {
        double lim = ldexp(1.0, bits - 1);
        uint64_t max = ((uint64_t)1 << (bits - 1)) - 1;
        if (t >= lim)
            s.u = max;
        else if (t < -lim)
            s.u = ~max; /* the minimum, sign-extended */
        else
            s.i = (int64_t)t;
    } else {
        double lim = ldexp(1.0, bits);
        if (t >= lim)
            s.u = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        else if (t > 0)
            s.u = (uint64_t)t;
    }
    return s;
}

/* An integer as a double, rounded to odd: exact up to 2^53; beyond, any
 * dropped bit sets the lowest kept one. Rounding that double again to a
 * format of at most 51 bits (f16, bf16) then rounds the integer correctly,
 * where a plain conversion would round twice. */
static double int_to_double_odd(tj_slot v, int sign)
{
    int neg = sign && v.i < 0;
    uint64_t mag = neg ? 0 - v.u : v.u;
    int len = 0;
    for (uint64_t m = mag; m; m >>= 1)
        len++;
    if (len > 53) {
        uint64_t lost = ((uint64_t)1 << (len - 53)) - 1;
        mag = (mag & ~lost) | ((mag & lost) ? lost + 1 : 0);
    }
    double d = (double)mag;
    return neg ? -d : d;
}

static double int_to_float(tj_slot v, int sign, tj_dtype to)
{
    switch (to) {
    case TJ_DT_F32: return sign ? (float)v.i : (float)v.u;
    case TJ_DT_F64: return sign ? (double)v.i : (double)v.u;
    default: return int_to_double_odd(v, sign); /* f16, bf16: rounded by the caller */
    }
}

static void cast_slots(tj_dtype to, tj_dtype from, tj_slot *r, const tj_slot *a, uint32_t n)
{
    int from_float = tj_dtype_is_float(from), sign = tj_dtype_is_signed(from);
    if (to == TJ_DT_BOOL) {
        for (uint32_t i = 0; i < n; i++)
            r[i].i = from_float ? a[i].f != 0 : a[i].u != 0;
    } else if (from_float && tj_dtype_is_float(to)) {
        for (uint32_t i = 0; i < n; i++)
            r[i].f = to == TJ_DT_F32 ? (float)a[i].f : a[i].f;
    } else if (from_float) {
        for (uint32_t i = 0; i < n; i++)
            r[i] = float_to_int(a[i].f, to);
    } else if (tj_dtype_is_float(to)) {
        for (uint32_t i = 0; i < n; i++)
            r[i].f = int_to_float(a[i], sign, to);
    } else {
        for (uint32_t i = 0; i < n; i++)
            r[i] = a[i]; /* wrapped below */
    }
    tj_round_slots(to, r, n);
}

int tj_exec_cast(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0);
    if (a->n != rv->n)
        return tj_interp_bad_ir(st, r, "operand shape differs from the result's");
    cast_slots(rv->dt, a->dt, rv->data, a->data, rv->n);
    return 0;
}

/* bitcast: each element written in its dtype's memory form and read back as
 * the result's (the same width, checked by the verifier). Floats are held
 * as doubles here, so a signaling NaN operand comes back quiet. */
int tj_exec_bitcast(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0);
    if (a->n != rv->n || tj_dtype_size(a->dt) != tj_dtype_size(rv->dt))
        return tj_interp_bad_ir(st, r, "operand shape or width differs from the result's");
    for (uint32_t i = 0; i < rv->n; i++) {
        uint64_t bits = 0;
        tj_mem_write(a->dt, &bits, 0, a->data[i]);
        rv->data[i] = tj_mem_read(rv->dt, &bits, 0);
    }
    return 0;
}
