/* Reductions: sum prod max min mean argmax argmin over any axes. A node
 * reduces one run of adjacent axes and keeps them (size 1): other axis
 * sets become a chain of such nodes, keepdims=False a reshape after. */
#include <stdio.h>

#include "array/array_internal.h"

static int normalize_axes(tj_graph *g, const char *name, int rank, const int *axes, int naxes, uint32_t *mask)
{
    *mask = 0;
    if (naxes == 0) {
        *mask = rank ? (1u << rank) - 1 : 0;
        return 0;
    }
    if (naxes < 0 || !axes) {
        tj_graph_fail(g, "%s: %d axes", name, naxes);
        return 1;
    }
    for (int i = 0; i < naxes; i++) {
        int a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank) {
            tj_graph_fail(g, "%s: axis %d is out of bounds for an array of rank %d", name, axes[i], rank);
            return 1;
        }
        if (*mask & (1u << a)) {
            tj_graph_fail(g, "%s: axis %d repeated", name, axes[i]);
            return 1;
        }
        *mask |= 1u << a;
    }
    return 0;
}

/* One node reducing the adjacent axes of mask (keepdims). */
static tj_array reduce_run(tj_graph *g, tj_aop op, tj_array a, uint32_t mask, tj_dtype dt)
{
    const tj_anode *x = tj_anode_at(g, a);
    int64_t shape[TJ_MAX_RANK];
    int rank = x->rank;
    for (int i = 0; i < rank; i++)
        shape[i] = mask & (1u << i) ? 1 : x->shape[i];
    tj_array r = tj_graph_add(g, op, dt, rank, shape, &a, 1);
    if (r)
        tj_anode_at(g, r)->axes = mask;
    return r;
}

/* The last run of adjacent axes in mask. */
static uint32_t last_run(uint32_t mask)
{
    int hi = 31;
    while (!(mask & (1u << hi)))
        hi--;
    uint32_t run = 0;
    for (int i = hi; i >= 0 && (mask & (1u << i)); i--)
        run |= 1u << i;
    return run;
}

static tj_array squeeze_axes(tj_graph *g, tj_array r, uint32_t mask)
{
    const tj_anode *n = tj_anode_at(g, r);
    int64_t shape[TJ_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < n->rank; i++)
        if (!(mask & (1u << i)))
            shape[rank++] = n->shape[i];
    return tj_array_reshape(g, r, rank, shape);
}

static int64_t count_of(const tj_anode *x, uint32_t mask)
{
    int64_t c = 1;
    for (int i = 0; i < x->rank; i++)
        if (mask & (1u << i))
            c *= x->shape[i];
    return c;
}

static tj_array reduce_chain(tj_graph *g, tj_aop op, tj_array a, uint32_t mask)
{
    tj_dtype dt = tj_reduce_result_dtype(op, tj_anode_at(g, a)->dtype);
    tj_array r = a;
    while (mask && r) {
        uint32_t run = last_run(mask);
        tj_array next = reduce_run(g, op, r, run, dt);
        if (r != a)
            tj_array_release(g, r);
        r = next;
        mask &= ~run;
    }
    return r;
}

static tj_array mean_chain(tj_graph *g, tj_array a, uint32_t mask)
{
    const tj_anode *x = tj_anode_at(g, a);
    tj_dtype dt = tj_reduce_result_dtype(TJ_AOP_MEAN, x->dtype);
    if (mask == last_run(mask))
        return reduce_run(g, TJ_AOP_MEAN, a, mask, dt);
    double count = (double)count_of(x, mask);
    tj_array f = tj_array_astype(g, a, tj_reduce_acc_dtype(TJ_AOP_MEAN, x->dtype));
    tj_array s = reduce_chain(g, TJ_AOP_SUM, f, mask);
    tj_array c = tj_array_scalar(g, TJ_DT_F64, 1.0 / count, 1);
    tj_array m = tj_array_binary(g, TJ_AOP_MULTIPLY, s, c);
    tj_array r = tj_array_astype(g, m, dt);
    tj_array tmp[4] = {f, s, c, m};
    for (int i = 0; i < 4; i++)
        tj_array_release(g, tmp[i]);
    return r;
}

static int has_no_identity(tj_aop op) { return op != TJ_AOP_SUM && op != TJ_AOP_PROD && op != TJ_AOP_MEAN; }

tj_array tj_array_reduce(tj_graph *g, tj_aop op, tj_array a, const int *axes, int naxes, int keepdims)
{
    if (!g || !tj_array_valid(g, a))
        return g && !g->error[0] ? tj_graph_fail(g, "reduce: not an array of this graph: %u", a) : TJ_ARRAY_NONE;
    if (tj_aop_kind_of(op) != TJ_AK_REDUCE)
        return tj_graph_fail(g, "tj_array_reduce: %s is not a reduction", tj_aop_name(op) ? tj_aop_name(op) : "?");
    const char *name = tj_aop_name(op);
    const tj_anode *x = tj_anode_at(g, a);
    uint32_t mask;
    if (normalize_axes(g, name, x->rank, axes, naxes, &mask))
        return TJ_ARRAY_NONE;
    if (has_no_identity(op) && count_of(x, mask) == 0) {
        char s[96];
        tj_shape_str(x->dtype, x->rank, x->shape, s, sizeof s);
        return tj_graph_fail(g, "%s: zero-size array %s to a reduction which has no identity", name, s);
    }
    int rank = x->rank;
    int64_t shape[TJ_MAX_RANK];
    for (int i = 0; i < rank; i++)
        shape[i] = x->shape[i];
    if (op == TJ_AOP_ARGMAX || op == TJ_AOP_ARGMIN) {
        if (naxes > 1)
            return tj_graph_fail(g, "%s: one axis or every axis, not %d", name, naxes);
        if (naxes == 0 && rank != 1) { /* the index into the flattened array */
            int64_t flat = tj_shape_numel(rank, shape);
            tj_array f = tj_array_reshape(g, a, 1, &flat);
            tj_array r = tj_array_reduce(g, op, f, NULL, 0, 0);
            tj_array_release(g, f);
            if (!keepdims)
                return r;
            for (int i = 0; i < rank; i++)
                shape[i] = 1;
            tj_array k = tj_array_reshape(g, r, rank, shape);
            tj_array_release(g, r);
            return k;
        }
    }
    if (count_of(x, mask) == 1 || !mask) { /* nothing to reduce: the values, in the result dtype */
        if (op == TJ_AOP_ARGMAX || op == TJ_AOP_ARGMIN) {
            for (int i = 0; i < rank; i++)
                shape[i] = mask & (1u << i) ? 1 : shape[i];
            tj_array z = tj_array_full(g, TJ_DT_I64, rank, shape, 0);
            if (keepdims || !z)
                return z;
            tj_array s = squeeze_axes(g, z, mask);
            tj_array_release(g, z);
            return s;
        }
        tj_array v = tj_array_astype(g, a, tj_reduce_result_dtype(op, x->dtype));
        if (keepdims || !v)
            return v;
        tj_array s = squeeze_axes(g, v, mask);
        tj_array_release(g, v);
        return s;
    }
    tj_array r = op == TJ_AOP_MEAN ? mean_chain(g, a, mask) : reduce_chain(g, op, a, mask);
    if (keepdims || !r)
        return r;
    tj_array s = squeeze_axes(g, r, mask);
    tj_array_release(g, r);
    return s;
}
