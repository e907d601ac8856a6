/* Emission, the expressions: each elementwise op of the table as a Tile
 * language expression over operands already in its compute dtype, and
 * typed literals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "array/array_internal.h"

typedef struct spelled {
    tj_aop op;
    const char *fmt; /* %1.. the operands, %4 the compute dtype */
} spelled;

/* Ops that are one expression in every dtype they accept. */
static const spelled direct[] = {
    {TJ_AOP_NEGATIVE, "-%1"},
    {TJ_AOP_POSITIVE, "%1"},
    {TJ_AOP_RECIPROCAL, "%4(1) / %1"},
    {TJ_AOP_RELU, "maximum(%1, %4(0))"},
    {TJ_AOP_EXP, "exp(%1)"},
    {TJ_AOP_EXP2, "exp2(%1)"},
    {TJ_AOP_EXPM1, "where(abs(%1) < %4(1e-5), %1 + %1 * %1 * %4(0.5), exp(%1) - %4(1))"},
    {TJ_AOP_LOG, "log(%1)"},
    {TJ_AOP_LOG2, "log2(%1)"},
    {TJ_AOP_LOG10, "log2(%1) * %4(0.301029995663981195)"},
    {TJ_AOP_LOG1P, "where(abs(%1) < %4(1e-4), %1 * (%4(1) - %1 * (%4(0.5) - %1 * %4(0.333333333333333333))), "
                   "log(%4(1) + %1))"},
    {TJ_AOP_SQRT, "sqrt(%1)"},
    {TJ_AOP_RSQRT, "rsqrt(%1)"},
    {TJ_AOP_SIN, "sin(%1)"},
    {TJ_AOP_COS, "cos(%1)"},
    {TJ_AOP_TAN, "sin(%1) / cos(%1)"},
    {TJ_AOP_TANH, "tanh(%1)"},
    {TJ_AOP_SIGMOID, "sigmoid(%1)"},
    {TJ_AOP_ERF, "erf(%1)"},
    {TJ_AOP_GELU, "%1 * (%4(1) + erf(%1 * %4(0.707106781186547524))) * %4(0.5)"},
    {TJ_AOP_LOGICAL_NOT, "!%1"},
    {TJ_AOP_ASTYPE, "%1"},
    {TJ_AOP_SUBTRACT, "%1 - %2"},
    {TJ_AOP_DIVIDE, "%1 / %2"},
    {TJ_AOP_POWER, "%1 ** %2"},
    {TJ_AOP_EQUAL, "%1 == %2"},
    {TJ_AOP_NOT_EQUAL, "%1 != %2"},
    {TJ_AOP_LESS, "%1 < %2"},
    {TJ_AOP_LESS_EQUAL, "%1 <= %2"},
    {TJ_AOP_GREATER, "%1 > %2"},
    {TJ_AOP_GREATER_EQUAL, "%1 >= %2"},
    {TJ_AOP_LOGICAL_AND, "%1 && %2"},
    {TJ_AOP_LOGICAL_OR, "%1 || %2"},
    {TJ_AOP_LOGICAL_XOR, "%1 != %2"},
    {TJ_AOP_BITWISE_AND, "%1 & %2"},
    {TJ_AOP_BITWISE_OR, "%1 | %2"},
    {TJ_AOP_BITWISE_XOR, "%1 ^ %2"},
    {TJ_AOP_WHERE, "where(%1, %2, %3)"},
    {TJ_AOP_CLIP, "minimum(maximum(%1, %2), %3)"},
};

/* Ops spelled by the kind of their compute dtype: float, signed,
 * unsigned, bool (NULL: as float). */
typedef struct by_kind {
    tj_aop op;
    const char *f, *s, *u, *b;
} by_kind;

static const by_kind kinds[] = {
    {TJ_AOP_ABS, "abs(%1)", "abs(%1)", "%1", "%1"},
    {TJ_AOP_SQUARE, "%1 * %1", "%1 * %1", "%1 * %1", "%1 && %1"},
    {TJ_AOP_SIGN, "where(%1 > %4(0), %4(1), where(%1 < %4(0), %4(-1), %1))",
     "where(%1 > %4(0), %4(1), where(%1 < %4(0), %4(-1), %4(0)))",
     "where(%1 > %4(0), %4(1), %4(0))", "%1"},
    {TJ_AOP_FLOOR, "floor(%1)", "%1", "%1", "%1"},
    {TJ_AOP_CEIL, "ceil(%1)", "%1", "%1", "%1"},
    {TJ_AOP_TRUNC, "where(%1 < %4(0), ceil(%1), floor(%1))", "%1", "%1", "%1"},
    {TJ_AOP_INVERT, NULL, "~%1", "~%1", "!%1"},
    {TJ_AOP_ISNAN, "%1 != %1", "%1 != %1", "%1 != %1", "%1 != %1"},
    {TJ_AOP_ISINF, "abs(%1) == %4(inf)", "%1 != %1", "%1 != %1", "%1 != %1"},
    {TJ_AOP_ISFINITE, "abs(%1) < %4(inf)", "%1 == %1", "%1 == %1", "%1 == %1"},
    {TJ_AOP_ADD, "%1 + %2", "%1 + %2", "%1 + %2", "%1 || %2"},
    {TJ_AOP_MULTIPLY, "%1 * %2", "%1 * %2", "%1 * %2", "%1 && %2"},
    /* NumPy's maximum and minimum propagate NaN */
    {TJ_AOP_MAXIMUM, "where(%1 != %1, %1, where(%2 != %2, %2, maximum(%1, %2)))",
     "maximum(%1, %2)", "maximum(%1, %2)", "%1 || %2"},
    {TJ_AOP_MINIMUM, "where(%1 != %1, %1, where(%2 != %2, %2, minimum(%1, %2)))",
     "minimum(%1, %2)", "minimum(%1, %2)", "%1 && %2"},
    /* NumPy's floor division and remainder round toward -inf; x // 0 and
     * x % 0 are 0 for integers (NumPy's result, without the trap) */
    {TJ_AOP_FLOOR_DIVIDE, "floor(%1 / %2)",
     "where(%2 == %4(0), %4(0), %1 / where(%2 == %4(0), %4(1), %2) - "
     "where((%1 %% where(%2 == %4(0), %4(1), %2) != %4(0)) && ((%1 < %4(0)) != (%2 < %4(0))), "
     "%4(1), %4(0)))",
     "where(%2 == %4(0), %4(0), %1 / where(%2 == %4(0), %4(1), %2))", NULL},
    {TJ_AOP_REMAINDER,
     "where((%1 %% %2 != %4(0)) && ((%1 %% %2 < %4(0)) != (%2 < %4(0))), %1 %% %2 + %2, "
     "%1 %% %2)",
     "where(%2 == %4(0), %4(0), where((%1 %% where(%2 == %4(0), %4(1), %2) != %4(0)) && "
     "((%1 %% where(%2 == %4(0), %4(1), %2) < %4(0)) != (%2 < %4(0))), "
     "%1 %% where(%2 == %4(0), %4(1), %2) + %2, %1 %% where(%2 == %4(0), %4(1), %2)))",
     "where(%2 == %4(0), %4(0), %1 %% where(%2 == %4(0), %4(1), %2))", NULL},
};

static const char *spelling(tj_aop op, tj_dtype ct)
{
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (direct[i].op == op)
            return direct[i].fmt;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i].op != op)
            continue;
        const char *f = tj_dtype_is_float(ct) ? kinds[i].f
                        : ct == TJ_DT_BOOL    ? kinds[i].b
                        : tj_dtype_is_signed(ct) ? kinds[i].s
                                                 : kinds[i].u;
        return f ? f : kinds[i].f;
    }
    return NULL;
}

int tj_emit_elementwise(tj_buf *out, tj_aop op, tj_dtype ct, const char *a, const char *b, const char *c)
{
    const char *fmt = spelling(op, ct);
    if (!fmt)
        return 1;
    const char *args[4] = {a ? a : "", b ? b : "", c ? c : "", tj_dtype_name(ct)};
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '%' && p[1] >= '1' && p[1] <= '4') {
            const char *s = args[p[1] - '1'];
            tj_buf_append(out, s, strlen(s));
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            tj_buf_append(out, "%", 1);
            p++;
        } else
            tj_buf_append(out, p, 1);
    }
    return 0;
}

void tj_emit_literal(tj_buf *out, tj_dtype dt, double v)
{
    const char *name = tj_dtype_name(dt);
    if (dt == TJ_DT_BOOL)
        tj_buf_printf(out, "%s", v != 0 ? "true" : "false");
    else if (tj_dtype_is_float(dt)) {
        if (isnan(v))
            tj_buf_printf(out, "%s(nan)", name);
        else if (isinf(v))
            tj_buf_printf(out, "%s(%sinf)", name, v < 0 ? "-" : "");
        else if (v == 0 && signbit(v)) /* "-0" would be the integer 0: x * -0.0 gave +0 for x > 0 */
            tj_buf_printf(out, "%s(-0.0)", name);
        else
            tj_buf_printf(out, "%s(%.17g)", name, v);
    } else if (v <= -9223372036854775807.0)
        tj_buf_printf(out, "(%s(-9223372036854775807) - %s(1))", name, name);
    else if (v >= 9223372036854775807.0) {
        if (tj_dtype_is_signed(dt))
            tj_buf_printf(out, "%s(9223372036854775807)", name);
        else
            tj_buf_printf(out, "~%s(0)", name);
    }
    else
        tj_buf_printf(out, "%s(%lld)", name, (long long)v);
}

/* The identity of a max (lowest) or min (highest) reduction in dt. */
void tj_emit_extreme(tj_buf *out, tj_dtype dt, int highest)
{
    if (tj_dtype_is_float(dt)) {
        tj_emit_literal(out, dt, highest ? INFINITY : -INFINITY);
        return;
    }
    int bits = dt == TJ_DT_BOOL ? 1 : tj_dtype_bits(dt);
    if (!tj_dtype_is_signed(dt)) {
        tj_emit_literal(out, dt, highest ? ldexp(1.0, bits) - 1 : 0); /* u64: ~u64(0) */
        return;
    }
    double lim = ldexp(1.0, bits - 1);
    tj_emit_literal(out, dt, highest ? lim - 1 : -lim); /* i64: the spelled-out extremes */
}
