/* Views: reshape, transpose, swapaxes, expand_dims, squeeze,
 * broadcast_to, slicing. Over data they are strides (resolved at once);
 * over a value still to compute they wait for it (eval.c); over a
 * constant they are a constant of the new shape. */
#include <string.h>

#include "array/array_internal.h"

static int input_ok(tj_graph *g, tj_array a, const char *name)
{
    if (!g)
        return 0;
    if (!tj_array_valid(g, a)) {
        if (!g->error[0])
            tj_graph_fail(g, "%s: not an array of this graph: %u", name, a);
        return 0;
    }
    return 1;
}

/* NumPy's attempt_nocopy_reshape: strides for the new shape over the same
 * memory, when the old axes it merges or splits are contiguous. */
static int nocopy_strides(const tj_anode *in, int rank, const int64_t *shape, int64_t *strides)
{
    int64_t od[TJ_MAX_RANK], os[TJ_MAX_RANK];
    int on = 0;
    for (int i = 0; i < in->rank; i++)
        if (in->shape[i] != 1) {
            od[on] = in->shape[i];
            os[on++] = in->strides[i];
        }
    for (int i = 0; i < rank; i++)
        strides[i] = 0;
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < rank && oi < on) {
        int64_t np = shape[ni], op = od[oi];
        while (np != op) {
            if (np < op) {
                if (nj >= rank)
                    return 1;
                np *= shape[nj++];
            } else {
                if (oj >= on)
                    return 1;
                op *= od[oj++];
            }
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (os[ok] != od[ok + 1] * os[ok + 1])
                return 1;
        strides[nj - 1] = os[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--)
            strides[nk - 1] = strides[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    return 0;
}

/* The strides (and offset) of view n over its input's, 1 when a reshape
 * cannot say it by strides. */
static int view_strides(const tj_anode *n, const tj_anode *in, const int64_t *in_strides, int64_t *strides,
                        int64_t *offset)
{
    tj_anode tmp = *in;
    memcpy(tmp.strides, in_strides, sizeof tmp.strides);
    switch (n->op) {
    case TJ_AOP_RESHAPE:
        if (tj_shape_numel(n->rank, n->shape) == 0)
            tj_contiguous_strides(n->rank, n->shape, strides);
        else if (nocopy_strides(&tmp, n->rank, n->shape, strides))
            return 1;
        return 0;
    case TJ_AOP_TRANSPOSE:
        for (int i = 0; i < n->rank; i++)
            strides[i] = in_strides[n->perm[i]];
        return 0;
    case TJ_AOP_BROADCAST_TO:
        for (int i = 0; i < n->rank; i++) {
            int j = i - (n->rank - in->rank);
            strides[i] = j >= 0 && in->shape[j] != 1 ? in_strides[j] : 0;
        }
        return 0;
    case TJ_AOP_SLICE:
        for (int i = 0; i < n->rank; i++) {
            if (n->shape[i] > 0)
                *offset += n->start[i] * in_strides[i];
            strides[i] = in_strides[i] * n->step[i];
        }
        return 0;
    default:
        return 1;
    }
}

void tj_node_strides(const tj_graph *g, tj_array a, int64_t *strides)
{
    const tj_anode *x = &g->nodes[a];
    int64_t offset = 0, in[TJ_MAX_RANK];
    if (x->has_data) {
        memcpy(strides, x->strides, sizeof(int64_t) * TJ_MAX_RANK);
        return;
    }
    if (tj_aop_kind_of(x->op) == TJ_AK_VIEW && x->nin == 1) {
        tj_node_strides(g, x->in[0], in);
        if (view_strides(x, &g->nodes[x->in[0]], in, strides, &offset) == 0)
            return;
    }
    tj_contiguous_strides(x->rank, x->shape, strides);
}

int tj_view_resolve(tj_graph *g, tj_array a)
{
    tj_anode *n = tj_anode_at(g, a);
    const tj_anode *in = tj_anode_at(g, n->in[0]);
    int64_t strides[TJ_MAX_RANK] = {0}, offset = in->offset;
    if (view_strides(n, in, in->strides, strides, &offset))
        return 1;
    n->buf = in->buf;
    n->buf->refs++;
    n->offset = offset;
    memcpy(n->strides, strides, sizeof strides);
    n->has_data = 1;
    tj_anode_settle(g, a);
    return 0;
}

/* The view node, resolved now over data, folded over a constant. */
static tj_array make_view(tj_graph *g, tj_aop op, tj_array a, int rank, const int64_t *shape, tj_anode *attrs)
{
    const tj_anode *in = tj_anode_at(g, a);
    if (in->op == TJ_AOP_FULL && !in->has_data) {
        tj_array c = tj_array_full(g, in->dtype, rank, shape, in->value);
        if (c)
            tj_anode_at(g, c)->weak = tj_anode_at(g, a)->weak && rank == 0;
        return c;
    }
    tj_dtype dt = in->dtype;
    tj_array v = tj_graph_add(g, op, dt, rank, shape, &a, 1);
    if (!v)
        return v;
    tj_anode *n = tj_anode_at(g, v);
    if (attrs) {
        memcpy(n->perm, attrs->perm, sizeof n->perm);
        memcpy(n->start, attrs->start, sizeof n->start);
        memcpy(n->stop, attrs->stop, sizeof n->stop);
        memcpy(n->step, attrs->step, sizeof n->step);
    }
    if (tj_anode_at(g, a)->has_data)
        tj_view_resolve(g, v); /* a reshape that needs a copy waits for eval */
    return v;
}

tj_array tj_array_reshape(tj_graph *g, tj_array a, int rank, const int64_t *shape)
{
    if (!input_ok(g, a, "reshape"))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a);
    if (rank < 0 || rank > TJ_MAX_RANK || (rank && !shape))
        return tj_graph_fail(g, "reshape: rank %d (0 to %d)", rank, TJ_MAX_RANK);
    int64_t out[TJ_MAX_RANK], known = 1, total = tj_shape_numel(x->rank, x->shape);
    int unknown = -1;
    for (int i = 0; i < rank; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (unknown >= 0)
                return tj_graph_fail(g, "reshape: can only specify one unknown dimension");
            unknown = i;
        } else if (shape[i] < 0)
            return tj_graph_fail(g, "reshape: negative extent %lld", (long long)shape[i]);
        else
            known *= shape[i];
    }
    if (unknown >= 0)
        out[unknown] = known ? total / known : 0;
    char from[96], to[96];
    if (tj_shape_numel(rank, out) != total || (unknown >= 0 && known && total % known)) {
        tj_shape_str(x->dtype, x->rank, x->shape, from, sizeof from);
        tj_shape_str(x->dtype, rank, shape, to, sizeof to);
        return tj_graph_fail(g, "reshape: cannot reshape %s (%lld elements) into %s", from, (long long)total, to);
    }
    int same = rank == x->rank;
    for (int i = 0; same && i < rank; i++)
        same = out[i] == x->shape[i];
    if (same) {
        tj_array_retain(g, a);
        return a;
    }
    return make_view(g, TJ_AOP_RESHAPE, a, rank, out, NULL);
}

tj_array tj_array_transpose(tj_graph *g, tj_array a, const int *perm)
{
    if (!input_ok(g, a, "transpose"))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a);
    tj_anode attrs;
    memset(&attrs, 0, sizeof attrs);
    int64_t shape[TJ_MAX_RANK];
    uint32_t seen = 0;
    for (int i = 0; i < x->rank; i++) {
        int p = perm ? perm[i] : x->rank - 1 - i;
        if (p < 0)
            p += x->rank;
        if (p < 0 || p >= x->rank || (seen & (1u << p)))
            return tj_graph_fail(g, "transpose: axes don't match array (rank %d)", x->rank);
        seen |= 1u << p;
        attrs.perm[i] = p;
        shape[i] = x->shape[p];
    }
    int identity = 1;
    for (int i = 0; i < x->rank; i++)
        identity &= attrs.perm[i] == i;
    if (identity) {
        tj_array_retain(g, a);
        return a;
    }
    return make_view(g, TJ_AOP_TRANSPOSE, a, x->rank, shape, &attrs);
}

static int norm_axis(tj_graph *g, const char *name, int axis, int rank)
{
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        tj_graph_fail(g, "%s: axis %d is out of bounds for an array of rank %d", name, axis, rank);
        return -1;
    }
    return a;
}

tj_array tj_array_swapaxes(tj_graph *g, tj_array a, int axis1, int axis2)
{
    if (!input_ok(g, a, "swapaxes"))
        return TJ_ARRAY_NONE;
    int rank = tj_anode_at(g, a)->rank;
    int a1 = norm_axis(g, "swapaxes", axis1, rank), a2 = a1 < 0 ? -1 : norm_axis(g, "swapaxes", axis2, rank);
    if (a1 < 0 || a2 < 0)
        return TJ_ARRAY_NONE;
    int perm[TJ_MAX_RANK];
    for (int i = 0; i < rank; i++)
        perm[i] = i;
    perm[a1] = a2;
    perm[a2] = a1;
    return tj_array_transpose(g, a, perm);
}

tj_array tj_array_expand_dims(tj_graph *g, tj_array a, int axis)
{
    if (!input_ok(g, a, "expand_dims"))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a);
    if (x->rank == TJ_MAX_RANK)
        return tj_graph_fail(g, "expand_dims: rank %d is the most", TJ_MAX_RANK);
    int ax = norm_axis(g, "expand_dims", axis, x->rank + 1);
    if (ax < 0)
        return TJ_ARRAY_NONE;
    int64_t shape[TJ_MAX_RANK];
    for (int i = 0, j = 0; i <= x->rank; i++)
        shape[i] = i == ax ? 1 : x->shape[j++];
    return tj_array_reshape(g, a, x->rank + 1, shape);
}

tj_array tj_array_squeeze(tj_graph *g, tj_array a, int axis)
{
    if (!input_ok(g, a, "squeeze"))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a);
    int ax = axis == -100 ? -1 : norm_axis(g, "squeeze", axis, x->rank);
    if (axis != -100 && ax < 0)
        return TJ_ARRAY_NONE;
    if (ax >= 0 && x->shape[ax] != 1)
        return tj_graph_fail(g, "squeeze: cannot select an axis to squeeze out which has size %lld",
                             (long long)x->shape[ax]);
    int64_t shape[TJ_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!(x->shape[i] == 1 && (ax < 0 || ax == i)))
            shape[rank++] = x->shape[i];
    return tj_array_reshape(g, a, rank, shape);
}

tj_array tj_array_broadcast_to(tj_graph *g, tj_array a, int rank, const int64_t *shape)
{
    if (!input_ok(g, a, "broadcast_to"))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a);
    int ok = rank >= x->rank && rank <= TJ_MAX_RANK && (shape || !rank);
    for (int i = 0; ok && i < x->rank; i++) {
        int64_t d = x->shape[i], t = shape[i + rank - x->rank];
        ok = d == t || d == 1;
    }
    for (int i = 0; ok && i < rank; i++)
        ok = shape[i] >= 0;
    if (!ok) {
        char from[96], to[96];
        tj_shape_str(x->dtype, x->rank, x->shape, from, sizeof from);
        tj_shape_str(x->dtype, rank > 0 && rank <= TJ_MAX_RANK ? rank : 0, shape, to, sizeof to);
        return tj_graph_fail(g, "broadcast_to: cannot broadcast %s to %s", from, to);
    }
    int same = rank == x->rank;
    for (int i = 0; same && i < rank; i++)
        same = shape[i] == x->shape[i];
    if (same) {
        tj_array_retain(g, a);
        return a;
    }
    return make_view(g, TJ_AOP_BROADCAST_TO, a, rank, shape, NULL);
}

tj_array tj_array_slice(tj_graph *g, tj_array a, const int64_t *start, const int64_t *stop, const int64_t *step)
{
    if (!input_ok(g, a, "slice"))
        return TJ_ARRAY_NONE;
    const tj_anode *x = tj_anode_at(g, a);
    if (x->rank && (!start || !stop || !step))
        return tj_graph_fail(g, "slice: NULL start, stop or step");
    tj_anode attrs;
    memset(&attrs, 0, sizeof attrs);
    int64_t shape[TJ_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        int64_t d = x->shape[i], s = step[i], b = start[i], e = stop[i];
        if (s == 0)
            return tj_graph_fail(g, "slice: step 0 on axis %d", i);
        int64_t n = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / -s : 0);
        if (n > 0 && (b < 0 || b >= d || b + (n - 1) * s < 0 || b + (n - 1) * s >= d))
            return tj_graph_fail(g, "slice: %lld:%lld:%lld out of range for axis %d of extent %lld", (long long)b,
                                 (long long)e, (long long)s, i, (long long)d);
        shape[i] = n;
        attrs.start[i] = b;
        attrs.stop[i] = e;
        attrs.step[i] = s;
    }
    return make_view(g, TJ_AOP_SLICE, a, x->rank, shape, &attrs);
}
