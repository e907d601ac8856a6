/* Compositions: softmax, log_softmax, logsumexp, layer_norm, rms_norm as
 * graphs of the primitive ops, which fusion turns into one row kernel
 * where the rows fit a tile. Temporaries are released as they are made:
 * the result holds what it needs. */
#include "array/array_internal.h"

enum { MAX_TEMPS = 16 };

typedef struct temps {
    tj_graph *g;
    tj_array t[MAX_TEMPS];
    int n;
} temps;

static tj_array keep(temps *ts, tj_array a)
{
    if (ts->n < MAX_TEMPS)
        ts->t[ts->n++] = a;
    return a;
}

static tj_array done(temps *ts, tj_array result)
{
    for (int i = 0; i < ts->n; i++)
        if (ts->t[i] != result)
            tj_array_release(ts->g, ts->t[i]);
    return result;
}

/* x as a float array (NumPy's math dtype for integers). */
static tj_array as_float(temps *ts, tj_array x)
{
    if (!tj_array_valid(ts->g, x))
        return x;
    tj_dtype dt = tj_anode_at(ts->g, x)->dtype;
    return tj_dtype_is_float(dt) ? x : keep(ts, tj_array_astype(ts->g, x, tj_float_of(dt)));
}

static tj_array weak(temps *ts, double v) { return keep(ts, tj_array_scalar(ts->g, TJ_DT_F64, v, 1)); }

tj_array tj_array_softmax(tj_graph *g, tj_array x, int axis)
{
    temps ts = {.g = g};
    tj_array f = as_float(&ts, x);
    tj_array m = keep(&ts, tj_array_reduce(g, TJ_AOP_MAX, f, &axis, 1, 1));
    tj_array e = keep(&ts, tj_array_unary(g, TJ_AOP_EXP, keep(&ts, tj_array_binary(g, TJ_AOP_SUBTRACT, f, m))));
    tj_array s = keep(&ts, tj_array_reduce(g, TJ_AOP_SUM, e, &axis, 1, 1));
    return done(&ts, tj_array_binary(g, TJ_AOP_DIVIDE, e, s));
}

tj_array tj_array_log_softmax(tj_graph *g, tj_array x, int axis)
{
    temps ts = {.g = g};
    tj_array f = as_float(&ts, x);
    tj_array m = keep(&ts, tj_array_reduce(g, TJ_AOP_MAX, f, &axis, 1, 1));
    tj_array d = keep(&ts, tj_array_binary(g, TJ_AOP_SUBTRACT, f, m));
    tj_array e = keep(&ts, tj_array_unary(g, TJ_AOP_EXP, d));
    tj_array s = keep(&ts, tj_array_reduce(g, TJ_AOP_SUM, e, &axis, 1, 1));
    return done(&ts, tj_array_binary(g, TJ_AOP_SUBTRACT, d, keep(&ts, tj_array_unary(g, TJ_AOP_LOG, s))));
}

tj_array tj_array_logsumexp(tj_graph *g, tj_array x, const int *axes, int naxes, int keepdims)
{
    temps ts = {.g = g};
    tj_array f = as_float(&ts, x);
    tj_array m = keep(&ts, tj_array_reduce(g, TJ_AOP_MAX, f, axes, naxes, 1));
    /* rows of -inf (or inf) would give nan in x - m: shift by 0 there */
    tj_array finite = keep(&ts, tj_array_unary(g, TJ_AOP_ISFINITE, m));
    tj_array shift = keep(&ts, tj_array_ternary(g, TJ_AOP_WHERE, finite, m, weak(&ts, 0.0)));
    tj_array e = keep(&ts, tj_array_unary(g, TJ_AOP_EXP, keep(&ts, tj_array_binary(g, TJ_AOP_SUBTRACT, f, shift))));
    tj_array s = keep(&ts, tj_array_reduce(g, TJ_AOP_SUM, e, axes, naxes, 1));
    tj_array r = keep(&ts, tj_array_binary(g, TJ_AOP_ADD, keep(&ts, tj_array_unary(g, TJ_AOP_LOG, s)), shift));
    if (keepdims || !r)
        return done(&ts, r);
    const tj_anode *n = tj_anode_at(g, f);
    int64_t shape[TJ_MAX_RANK];
    int rank = 0;
    uint32_t mask = 0;
    for (int i = 0; i < naxes; i++)
        mask |= 1u << (axes[i] < 0 ? axes[i] + n->rank : axes[i]);
    for (int i = 0; i < n->rank; i++)
        if (naxes && !(mask & (1u << i)))
            shape[rank++] = n->shape[i];
    return done(&ts, tj_array_reshape(g, r, rank, shape));
}

static tj_array affine(temps *ts, tj_array y, tj_array weight, tj_array bias)
{
    if (weight)
        y = keep(ts, tj_array_binary(ts->g, TJ_AOP_MULTIPLY, y, weight));
    if (bias)
        y = keep(ts, tj_array_binary(ts->g, TJ_AOP_ADD, y, bias));
    return y;
}

tj_array tj_array_layer_norm(tj_graph *g, tj_array x, tj_array weight, tj_array bias, double eps)
{
    temps ts = {.g = g};
    int last = -1;
    tj_array f = as_float(&ts, x);
    tj_array mean = keep(&ts, tj_array_reduce(g, TJ_AOP_MEAN, f, &last, 1, 1));
    tj_array d = keep(&ts, tj_array_binary(g, TJ_AOP_SUBTRACT, f, mean));
    tj_array var = keep(&ts, tj_array_reduce(g, TJ_AOP_MEAN, keep(&ts, tj_array_binary(g, TJ_AOP_MULTIPLY, d, d)),
                                             &last, 1, 1));
    tj_array r = keep(&ts, tj_array_unary(g, TJ_AOP_RSQRT, keep(&ts, tj_array_binary(g, TJ_AOP_ADD, var, weak(&ts, eps)))));
    return done(&ts, affine(&ts, keep(&ts, tj_array_binary(g, TJ_AOP_MULTIPLY, d, r)), weight, bias));
}

tj_array tj_array_rms_norm(tj_graph *g, tj_array x, tj_array weight, double eps)
{
    temps ts = {.g = g};
    int last = -1;
    tj_array f = as_float(&ts, x);
    tj_array ms = keep(&ts, tj_array_reduce(g, TJ_AOP_MEAN, keep(&ts, tj_array_binary(g, TJ_AOP_MULTIPLY, f, f)),
                                            &last, 1, 1));
    tj_array r = keep(&ts, tj_array_unary(g, TJ_AOP_RSQRT, keep(&ts, tj_array_binary(g, TJ_AOP_ADD, ms, weak(&ts, eps)))));
    return done(&ts, affine(&ts, keep(&ts, tj_array_binary(g, TJ_AOP_MULTIPLY, f, r)), weight, 0));
}
