/* take, take_along_axis, scatter_add, cumsum, sort, argsort and
 * concatenate: their shapes and dtypes (other.c evaluates them). */
#include <stdio.h>
#include <string.h>

#include "array/array_internal.h"

static int valid_all(tj_graph *g, const char *name, const tj_array *in, uint32_t n)
{
    if (!g)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (!tj_array_valid(g, in[i])) {
            if (!g->error[0])
                tj_graph_fail(g, "%s: not an array of this graph: %u", name, in[i]);
            return 0;
        }
    return 1;
}

static int axis_of(tj_graph *g, const char *name, int axis, int rank)
{
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        tj_graph_fail(g, "%s: axis %d is out of bounds for an array of rank %d", name, axis, rank);
        return -1;
    }
    return a;
}

static int integer_indices(tj_graph *g, const char *name, tj_array idx)
{
    const tj_anode *i = tj_anode_at(g, idx);
    if (tj_dtype_is_int(i->dtype))
        return 0;
    tj_graph_fail(g, "%s: indices must be integers, not %s", name, tj_dtype_name(i->dtype));
    return 1;
}

static tj_array with_axis(tj_graph *g, tj_aop op, tj_dtype dt, int rank, const int64_t *shape, const tj_array *in,
                          uint32_t n, int axis)
{
    tj_array r = tj_graph_add(g, op, dt, rank, shape, in, n);
    if (r)
        tj_anode_at(g, r)->axis = axis;
    return r;
}

static tj_array flattened(tj_graph *g, tj_array a)
{
    const tj_anode *x = tj_anode_at(g, a);
    int64_t n = tj_shape_numel(x->rank, x->shape);
    return tj_array_reshape(g, a, 1, &n);
}

/* r, after giving up the hold on the temporary tmp that r was built on. */
static tj_array release_after(tj_graph *g, tj_array tmp, tj_array r)
{
    tj_array_release(g, tmp);
    return r;
}

tj_array tj_array_take(tj_graph *g, tj_array a, tj_array indices, int axis)
{
    tj_array in[2] = {a, indices};
    if (!valid_all(g, "take", in, 2) || integer_indices(g, "take", indices))
        return TJ_ARRAY_NONE;
    if (axis == TJ_AXIS_FLAT) {
        tj_array f = flattened(g, a);
        return release_after(g, f, f ? tj_array_take(g, f, indices, 0) : TJ_ARRAY_NONE);
    }
    const tj_anode *x = tj_anode_at(g, a), *i = tj_anode_at(g, indices);
    int ax = axis_of(g, "take", axis, x->rank);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    if (x->rank - 1 + i->rank > TJ_MAX_RANK)
        return tj_graph_fail(g, "take: the result would have rank %d (at most %d)", x->rank - 1 + i->rank, TJ_MAX_RANK);
    if (x->shape[ax] == 0 && tj_shape_numel(i->rank, i->shape) > 0)
        return tj_graph_fail(g, "take: cannot take from an empty axis %d", ax);
    int64_t shape[TJ_MAX_RANK];
    int r = 0;
    for (int k = 0; k < ax; k++)
        shape[r++] = x->shape[k];
    for (int k = 0; k < i->rank; k++)
        shape[r++] = i->shape[k];
    for (int k = ax + 1; k < x->rank; k++)
        shape[r++] = x->shape[k];
    return with_axis(g, TJ_AOP_TAKE, x->dtype, r, shape, in, 2, ax);
}

tj_array tj_array_take_along_axis(tj_graph *g, tj_array a, tj_array indices, int axis)
{
    tj_array in[2] = {a, indices};
    if (!valid_all(g, "take_along_axis", in, 2) || integer_indices(g, "take_along_axis", indices))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a), *i = tj_anode_at(g, indices);
    if (x->rank != i->rank)
        return tj_graph_fail(g, "take_along_axis: indices of rank %d for an array of rank %d", i->rank, x->rank);
    int ax = axis_of(g, "take_along_axis", axis, x->rank);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    int64_t shape[TJ_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        int64_t d = x->shape[k], e = i->shape[k];
        if (k == ax)
            shape[k] = e;
        else if (d == e || d == 1 || e == 1)
            shape[k] = d == 1 ? e : d;
        else {
            char sa[96], si[96];
            tj_shape_str(x->dtype, x->rank, x->shape, sa, sizeof sa);
            tj_shape_str(i->dtype, i->rank, i->shape, si, sizeof si);
            return tj_graph_fail(g, "take_along_axis: shapes %s and %s do not broadcast (axis %d aside)", sa, si, ax);
        }
    }
    if (x->shape[ax] == 0 && shape[ax] > 0)
        return tj_graph_fail(g, "take_along_axis: cannot take from an empty axis %d", ax);
    return with_axis(g, TJ_AOP_TAKE_ALONG, x->dtype, x->rank, shape, in, 2, ax);
}

tj_array tj_array_scatter_add(tj_graph *g, tj_array a, tj_array indices, tj_array values, int axis)
{
    tj_array in[3] = {a, indices, values};
    if (!valid_all(g, "scatter_add", in, 3) || integer_indices(g, "scatter_add", indices))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a), *i = tj_anode_at(g, indices), *v = tj_anode_at(g, values);
    int ax = axis_of(g, "scatter_add", axis, x->rank);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    if (i->rank != 1)
        return tj_graph_fail(g, "scatter_add: indices must be 1-D, not rank %d", i->rank);
    if (x->dtype == TJ_DT_BOOL || x->dtype == TJ_DT_I8 || x->dtype == TJ_DT_U8 || x->dtype == TJ_DT_I16 ||
        x->dtype == TJ_DT_U16)
        return tj_graph_fail(g, "scatter_add: %s has no atomic add (i32, i64, u32, u64, f16, bf16, f32, f64)",
                             tj_dtype_name(x->dtype));
    int ok = v->rank == x->rank;
    for (int k = 0; ok && k < x->rank; k++)
        ok = v->shape[k] == (k == ax ? i->shape[0] : x->shape[k]);
    if (!ok) {
        char sa[96], sv[96];
        tj_shape_str(x->dtype, x->rank, x->shape, sa, sizeof sa);
        tj_shape_str(v->dtype, v->rank, v->shape, sv, sizeof sv);
        return tj_graph_fail(g, "scatter_add: values %s must have the shape of %s with axis %d as long as the %lld "
                             "indices", sv, sa, ax, (long long)i->shape[0]);
    }
    if (x->shape[ax] == 0 && i->shape[0] > 0)
        return tj_graph_fail(g, "scatter_add: cannot add into an empty axis %d", ax);
    return with_axis(g, TJ_AOP_SCATTER_ADD, x->dtype, x->rank, x->shape, in, 3, ax);
}

tj_array tj_array_cumsum(tj_graph *g, tj_array a, int axis)
{
    if (!valid_all(g, "cumsum", &a, 1))
        return TJ_ARRAY_NONE;
    if (axis == TJ_AXIS_FLAT) {
        tj_array f = flattened(g, a);
        return release_after(g, f, f ? tj_array_cumsum(g, f, 0) : TJ_ARRAY_NONE);
    }
    const tj_anode *x = tj_anode_at(g, a);
    int ax = axis_of(g, "cumsum", axis, x->rank);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    tj_dtype dt = tj_reduce_result_dtype(TJ_AOP_SUM, x->dtype);
    return with_axis(g, TJ_AOP_CUMSUM, dt, x->rank, x->shape, &a, 1, ax);
}

/* The key dtypes lib's sort takes (narrower integers widen exactly). */
static int sortable(tj_dtype dt) { return dt != TJ_DT_F64 && dt != TJ_DT_U64; }

static tj_array sort_op(tj_graph *g, tj_aop op, tj_array a, int axis)
{
    const char *name = tj_aop_name(op);
    if (!valid_all(g, name, &a, 1))
        return TJ_ARRAY_NONE;
    if (axis == TJ_AXIS_FLAT) {
        tj_array f = flattened(g, a);
        return release_after(g, f, f ? sort_op(g, op, f, 0) : TJ_ARRAY_NONE);
    }
    const tj_anode *x = tj_anode_at(g, a);
    int ax = axis_of(g, name, axis, x->rank);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    if (!sortable(x->dtype))
        return tj_graph_fail(g, "%s: %s keys are not supported (f32, f16, bf16, integers up to 32 bits, i64)", name,
                             tj_dtype_name(x->dtype));
    return with_axis(g, op, op == TJ_AOP_SORT ? x->dtype : TJ_DT_I64, x->rank, x->shape, &a, 1, ax);
}

tj_array tj_array_sort(tj_graph *g, tj_array a, int axis) { return sort_op(g, TJ_AOP_SORT, a, axis); }
tj_array tj_array_argsort(tj_graph *g, tj_array a, int axis) { return sort_op(g, TJ_AOP_ARGSORT, a, axis); }

tj_array tj_array_concatenate(tj_graph *g, const tj_array *arrays, uint32_t n, int axis)
{
    if (!g)
        return TJ_ARRAY_NONE;
    if (n == 0 || !arrays)
        return tj_graph_fail(g, "concatenate: need at least one array");
    if (!valid_all(g, "concatenate", arrays, n))
        return TJ_ARRAY_NONE;
    const tj_anode *first = tj_anode_at(g, arrays[0]);
    if (first->rank == 0)
        return tj_graph_fail(g, "concatenate: zero-dimensional arrays cannot be concatenated");
    int ax = axis_of(g, "concatenate", axis, first->rank);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    int64_t shape[TJ_MAX_RANK];
    memcpy(shape, first->shape, sizeof shape);
    shape[ax] = 0;
    tj_dtype dt = first->dtype;
    for (uint32_t i = 0; i < n; i++) {
        const tj_anode *x = tj_anode_at(g, arrays[i]);
        int ok = x->rank == first->rank;
        for (int k = 0; ok && k < x->rank; k++)
            ok = k == ax || x->shape[k] == first->shape[k];
        if (!ok) {
            char s0[96], si[96];
            tj_shape_str(first->dtype, first->rank, first->shape, s0, sizeof s0);
            tj_shape_str(x->dtype, x->rank, x->shape, si, sizeof si);
            return tj_graph_fail(g, "concatenate: array %u is %s, array 0 is %s (all but axis %d must match)", i, si,
                                 s0, ax);
        }
        shape[ax] += x->shape[ax];
        dt = tj_promote(dt, x->dtype);
    }
    return with_axis(g, TJ_AOP_CONCATENATE, dt, first->rank, shape, arrays, n, ax);
}
