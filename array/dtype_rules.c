/* NumPy 2's type promotion (NEP 50), the dtypes of math and reductions.
 * docs/arrays.md lists the rules. */
#include <math.h>

#include "array/array_internal.h"

static int is_unsigned(tj_dtype dt) { return tj_dtype_is_int(dt) && !tj_dtype_is_signed(dt); }

static tj_dtype signed_of_bits(int bits)
{
    return bits <= 8 ? TJ_DT_I8 : bits <= 16 ? TJ_DT_I16 : bits <= 32 ? TJ_DT_I32 : TJ_DT_I64;
}

/* The smallest float that holds every value of an integer dtype (NumPy's
 * safe cast): 8 bits f16, 16 bits f32, wider f64. bool: f16. */
tj_dtype tj_float_of(tj_dtype dt)
{
    if (tj_dtype_is_float(dt))
        return dt;
    int bits = dt == TJ_DT_BOOL ? 8 : tj_dtype_bits(dt);
    return bits <= 8 ? TJ_DT_F16 : bits <= 16 ? TJ_DT_F32 : TJ_DT_F64;
}

static tj_dtype promote_floats(tj_dtype a, tj_dtype b)
{
    if (a == b)
        return a;
    if ((a == TJ_DT_F16 && b == TJ_DT_BF16) || (a == TJ_DT_BF16 && b == TJ_DT_F16))
        return TJ_DT_F32;
    return tj_dtype_bits(a) >= tj_dtype_bits(b) ? a : b;
}

static tj_dtype promote_ints(tj_dtype a, tj_dtype b)
{
    if (tj_dtype_is_signed(a) == tj_dtype_is_signed(b))
        return tj_dtype_bits(a) >= tj_dtype_bits(b) ? a : b;
    tj_dtype s = tj_dtype_is_signed(a) ? a : b, u = tj_dtype_is_signed(a) ? b : a;
    if (tj_dtype_bits(s) > tj_dtype_bits(u))
        return s;
    if (tj_dtype_bits(u) == 64)
        return TJ_DT_F64; /* NumPy: no integer holds both u64 and i64 */
    return signed_of_bits(2 * tj_dtype_bits(u));
}

tj_dtype tj_promote(tj_dtype a, tj_dtype b)
{
    if (a == TJ_DT_BOOL)
        return b;
    if (b == TJ_DT_BOOL)
        return a;
    int fa = tj_dtype_is_float(a), fb = tj_dtype_is_float(b);
    if (fa && fb)
        return promote_floats(a, b);
    if (!fa && !fb)
        return promote_ints(a, b);
    tj_dtype f = fa ? a : b, i = fa ? b : a;
    tj_dtype need = tj_float_of(i);
    if (f == TJ_DT_BF16 && need == TJ_DT_F16)
        return TJ_DT_BF16;
    return promote_floats(f, need);
}

static int fits(tj_dtype dt, double v)
{
    if (!tj_dtype_is_int(dt))
        return 1;
    if (is_unsigned(dt))
        return v >= 0 && (tj_dtype_bits(dt) == 64 || v <= ldexp(1.0, tj_dtype_bits(dt)) - 1);
    double lim = ldexp(1.0, tj_dtype_bits(dt) - 1);
    return v >= -lim && v <= lim - 1;
}

/* A weak scalar takes the strong operand's dtype within its kind: a
 * Python int stays with ints and floats, a Python float with floats (an
 * integer or bool array makes it the default float, f64); a Python int
 * with a bool array is the default int (i64). */
static tj_dtype weak_with(tj_graph *g, const char *opname, const tj_anode *weak, tj_dtype strong)
{
    if (weak->dtype == TJ_DT_BOOL)
        return strong;
    if (tj_dtype_is_float(weak->dtype))
        return tj_dtype_is_float(strong) ? strong : TJ_DT_F64;
    if (strong == TJ_DT_BOOL)
        return TJ_DT_I64;
    if (!fits(strong, weak->value)) {
        tj_graph_fail(g, "%s: Python integer %.0f out of bounds for %s", opname, weak->value, tj_dtype_name(strong));
        return TJ_DT_INVALID;
    }
    return strong;
}

tj_dtype tj_promote_nodes(tj_graph *g, const char *opname, tj_array a, tj_array b)
{
    const tj_anode *na = tj_anode_at(g, a), *nb = tj_anode_at(g, b);
    if (na->weak && !nb->weak)
        return weak_with(g, opname, na, nb->dtype);
    if (nb->weak && !na->weak)
        return weak_with(g, opname, nb, na->dtype);
    return tj_promote(na->dtype, nb->dtype);
}

tj_dtype tj_reduce_acc_dtype(tj_aop op, tj_dtype dt)
{
    switch (op) {
    case TJ_AOP_SUM:
    case TJ_AOP_PROD:
        if (dt == TJ_DT_F16 || dt == TJ_DT_BF16)
            return TJ_DT_F32;
        return tj_reduce_result_dtype(op, dt);
    case TJ_AOP_MEAN:
        if (tj_dtype_is_float(dt))
            return dt == TJ_DT_F64 ? TJ_DT_F64 : TJ_DT_F32;
        return TJ_DT_F64;
    case TJ_AOP_MAX:
    case TJ_AOP_MIN:
    case TJ_AOP_ARGMAX:
    case TJ_AOP_ARGMIN:
        return dt == TJ_DT_BOOL ? TJ_DT_I32 : dt;
    default:
        return dt;
    }
}

tj_dtype tj_reduce_result_dtype(tj_aop op, tj_dtype dt)
{
    switch (op) {
    case TJ_AOP_SUM:
    case TJ_AOP_PROD: /* NumPy: integers add up in the platform's long */
        if (dt == TJ_DT_BOOL || (tj_dtype_is_signed(dt) && !tj_dtype_is_float(dt)))
            return TJ_DT_I64;
        if (is_unsigned(dt))
            return TJ_DT_U64;
        return dt;
    case TJ_AOP_MEAN:
        return tj_dtype_is_float(dt) ? dt : TJ_DT_F64;
    case TJ_AOP_ARGMAX:
    case TJ_AOP_ARGMIN:
        return TJ_DT_I64;
    default:
        return dt;
    }
}
