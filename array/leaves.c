/* Leaves: arrays over the caller's memory, copies, placeholders,
 * constants and ranges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

static int check_shape(tj_graph *g, const char *what, tj_dtype dt, int rank, const int64_t *shape)
{
    if (!g)
        return 1;
    if (dt <= TJ_DT_INVALID || dt >= TJ_DT_COUNT) {
        tj_graph_fail(g, "%s: unknown dtype %d", what, (int)dt);
        return 1;
    }
    if (rank < 0 || rank > TJ_MAX_RANK || (rank > 0 && !shape)) {
        tj_graph_fail(g, "%s: rank %d (0 to %d, with a shape)", what, rank, TJ_MAX_RANK);
        return 1;
    }
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0 || shape[i] > INT32_MAX) {
            tj_graph_fail(g, "%s: extent %lld of axis %d out of range (0 to 2^31-1)", what, (long long)shape[i], i);
            return 1;
        }
    return 0;
}

static tj_array wrap_tensor(tj_graph *g, const char *what, const tj_tensor *t, tj_abuf *buf)
{
    tj_array a = tj_graph_add(g, TJ_AOP_INPUT, t->dtype, t->rank, t->shape, NULL, 0);
    if (!a) {
        tj_abuf_unref(g, buf);
        return a;
    }
    tj_anode *n = tj_anode_at(g, a);
    n->has_data = 1;
    n->buf = buf;
    (void)what;
    return a;
}

tj_array tj_array_wrap(tj_graph *g, const tj_tensor *t)
{
    if (!g)
        return TJ_ARRAY_NONE;
    if (!t)
        return tj_graph_fail(g, "tj_array_wrap: NULL tensor");
    if (check_shape(g, "tj_array_wrap", t->dtype, t->rank, t->shape))
        return TJ_ARRAY_NONE;
    if (!t->data && tj_shape_numel(t->rank, t->shape) > 0)
        return tj_graph_fail(g, "tj_array_wrap: NULL data for %lld elements",
                             (long long)tj_shape_numel(t->rank, t->shape));
    tj_abuf *buf = tj_abuf_borrow(t->data);
    if (!buf)
        return tj_graph_fail(g, "tj_array_wrap: out of memory");
    tj_array a = wrap_tensor(g, "tj_array_wrap", t, buf);
    if (a)
        memcpy(tj_anode_at(g, a)->strides, t->strides, sizeof t->strides);
    return a;
}

tj_array tj_array_copy(tj_graph *g, const tj_tensor *t)
{
    if (!g)
        return TJ_ARRAY_NONE;
    if (!t)
        return tj_graph_fail(g, "tj_array_copy: NULL tensor");
    if (check_shape(g, "tj_array_copy", t->dtype, t->rank, t->shape))
        return TJ_ARRAY_NONE;
    int64_t n = tj_shape_numel(t->rank, t->shape);
    if (!t->data && n > 0)
        return tj_graph_fail(g, "tj_array_copy: NULL data for %lld elements", (long long)n);
    size_t bytes = (size_t)n * (size_t)tj_dtype_size(t->dtype);
    tj_rt_error err;
    tj_abuf *buf = tj_abuf_new(g, bytes, &err);
    if (!buf)
        return tj_graph_fail(g, "tj_array_copy: %s", err.msg);
    char *host = g->device == TJ_DEVICE_CUDA ? malloc(bytes ? bytes : 1) : buf->data;
    if (!host) {
        tj_abuf_unref(g, buf);
        return tj_graph_fail(g, "tj_array_copy: out of memory");
    }
    if (n > 0)
        tj_gather_host(t, host);
    int bad = host != buf->data && tj_graph_to_device(g, buf->data, host, bytes, &err);
    if (host != buf->data)
        free(host);
    if (bad) {
        tj_abuf_unref(g, buf);
        return tj_graph_fail(g, "tj_array_copy: %s", err.msg);
    }
    tj_array a = wrap_tensor(g, "tj_array_copy", t, buf);
    if (a)
        tj_contiguous_strides(t->rank, t->shape, tj_anode_at(g, a)->strides);
    return a;
}

tj_array tj_array_input(tj_graph *g, tj_dtype dt, int rank, const int64_t *shape)
{
    if (check_shape(g, "tj_array_input", dt, rank, shape))
        return TJ_ARRAY_NONE;
    return tj_graph_add(g, TJ_AOP_INPUT, dt, rank, shape, NULL, 0);
}

tj_array tj_array_full(tj_graph *g, tj_dtype dt, int rank, const int64_t *shape, double value)
{
    if (check_shape(g, "full", dt, rank, shape))
        return TJ_ARRAY_NONE;
    tj_array a = tj_graph_add(g, TJ_AOP_FULL, dt, rank, shape, NULL, 0);
    if (a)
        tj_anode_at(g, a)->value = dt == TJ_DT_BOOL ? (value != 0) : value;
    return a;
}

tj_array tj_array_scalar(tj_graph *g, tj_dtype dt, double value, int weak)
{
    tj_array a = tj_array_full(g, dt, 0, NULL, value);
    if (a)
        tj_anode_at(g, a)->weak = weak != 0;
    return a;
}

tj_array tj_array_scalar_like(tj_graph *g, tj_array like, double value)
{
    if (!tj_array_valid(g, like))
        return TJ_ARRAY_NONE;
    return tj_array_scalar(g, tj_anode_at(g, like)->dtype, value, 0);
}

tj_array tj_array_arange(tj_graph *g, tj_dtype dt, double start, double step, int64_t n)
{
    if (check_shape(g, "arange", dt, 1, &n))
        return TJ_ARRAY_NONE;
    if (!isfinite(start) || !isfinite(step))
        return tj_graph_fail(g, "arange: start %g and step %g must be finite", start, step);
    tj_array a = tj_graph_add(g, TJ_AOP_ARANGE, dt, 1, &n, NULL, 0);
    if (a) {
        tj_anode_at(g, a)->value = start;
        tj_anode_at(g, a)->step_value = step;
    }
    return a;
}
