/* top-k (tilejit/lib.h) from lib/kernels/topk.tj: a threshold found by a
 * binary search over the keys' bits (the row in registers, or read again
 * every pass when longer than a tile), the winners compacted into slots,
 * then sorted (docs/library.md). */
#include <stdio.h>
#include <string.h>

#include "lib/lib_internal.h"

/* the largest BLOCK of topk_select (longer rows: topk_select_long) and KB of
 * topk_order; CUDA's grid y */
enum { ROW_TILE_MAX = 16384, K_MAX = 16384, GRID_Y_MAX = 65535 };
enum { SEGMENT_TILE = 4096 }; /* topk_select_long's BLOCK: a segment is a multiple of it */

typedef struct topk_kind {
    tj_dtype dtype, bits; /* the values, and the unsigned dtype carrying their bits */
    const char *key, *width;
} topk_kind;

static const topk_kind kinds[] = {
    {TJ_DT_F32, TJ_DT_U32, "key_f32", "32"},
    {TJ_DT_F16, TJ_DT_U16, "key_f16", "16"},
    {TJ_DT_BF16, TJ_DT_U16, "key_bf16", "16"},
    {TJ_DT_I32, TJ_DT_U32, "key_i32", "32"},
};

static const topk_kind *kind_of(tj_dtype dt)
{
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (kinds[i].dtype == dt)
            return &kinds[i];
    return NULL;
}

/* A [P, N, Q] view as the kernels' [A0, A1, N] rows: [1, P, N] when the
 * axis is last (Q == 1), else [P, Q, N] (the axis strided). `as` is the
 * dtype the kernel reads it as. */
static tj_tensor rows_view(const tj_tensor *lines, tj_dtype as)
{
    tj_tensor v = {.data = lines->data, .dtype = as, .rank = 3};
    int last = lines->shape[2] == 1;
    v.shape[0] = last ? 1 : lines->shape[0];
    v.shape[1] = last ? lines->shape[0] : lines->shape[2];
    v.shape[2] = lines->shape[1];
    v.strides[0] = last ? lines->shape[0] * lines->strides[0] : lines->strides[0];
    v.strides[1] = last ? lines->strides[0] : lines->strides[2];
    v.strides[2] = lines->strides[1];
    return v;
}

/* The output's shape must be x's with the axis k long. */
static int check_out(const tj_tensor *x, const tj_tensor *out, int axis, int64_t k, const char *what,
                     tj_rt_error *err)
{
    int same = x->rank == out->rank;
    for (int i = 0; same && i < x->rank; i++)
        same = out->shape[i] == (i == axis ? k : x->shape[i]);
    if (!same)
        return tj_rt_fail(err, "tj_lib_topk: the %s must have x's shape with axis %d of length k = %lld", what,
                          axis, (long long)k);
    return 0;
}

static int check_args(const tj_tensor *x, int64_t k, const tj_tensor *values, const tj_tensor *idx,
                      const lib_lines *ln, tj_rt_error *err)
{
    if (!kind_of(x->dtype))
        return tj_rt_fail(err, "tj_lib_topk: values of dtype %s are not supported (f32, f16, bf16, i32 are)",
                          tj_dtype_name(x->dtype));
    if (values->dtype != x->dtype)
        return tj_rt_fail(err, "tj_lib_topk: the values output is %s, the input %s", tj_dtype_name(values->dtype),
                          tj_dtype_name(x->dtype));
    if (idx->dtype != TJ_DT_I64)
        return tj_rt_fail(err, "tj_lib_topk: the indices must be i64, not %s", tj_dtype_name(idx->dtype));
    if (k < 0 || k > ln->n)
        return tj_rt_fail(err, "tj_lib_topk: k = %lld is outside [0, %lld] (the length of axis %d)", (long long)k,
                          (long long)ln->n, ln->axis);
    if (k > K_MAX)
        return tj_rt_fail(err, "tj_lib_topk: k = %lld is more than the %d one tile sorts", (long long)k, K_MAX);
    if (ln->q > 1 && ln->p > GRID_Y_MAX)
        return tj_rt_fail(err, "tj_lib_topk: %lld lines before axis %d are more than one launch covers (%d) when "
                               "the axis is not the last",
                          (long long)ln->p, ln->axis, GRID_Y_MAX);
    return check_out(x, values, ln->axis, k, "values", err) || check_out(x, idx, ln->axis, k, "indices", err);
}

static tj_dispatch *topk_kernel(tj_lib *l, const topk_kind *kind, const char *name, tj_rt_error *err)
{
    lib_subst subst[] = {{"K", tj_dtype_name(kind->bits)}, {"KEY", kind->key}, {"BITS", kind->width}};
    return lib_dispatch(l, "topk", name, subst, 3, err);
}

/* The top-k of [P, N, Q] lines xl into vl and il (lines of k), N at most
 * a segment. */
static int launch(tj_lib *l, const topk_kind *kind, const tj_tensor *xl, int64_t k, const tj_tensor *vl,
                  const tj_tensor *il, void *stream, tj_rt_error *err)
{
    tj_dispatch *sel = topk_kernel(l, kind, xl->shape[1] > ROW_TILE_MAX ? "topk_select_long" : "topk_select", err);
    tj_dispatch *order = sel ? topk_kernel(l, kind, "topk_order", err) : NULL;
    if (!order)
        return 1;
    tj_tensor xr = rows_view(xl, kind->bits), vr = rows_view(vl, kind->bits), ir = rows_view(il, TJ_DT_I64);
    int64_t kp = 1;
    while (kp < k)
        kp *= 2;
    int64_t a0 = xr.shape[0], a1 = xr.shape[1];
    if (a1 * kp > INT32_MAX)
        return tj_rt_fail(err, "tj_lib_topk: %lld lines of %lld slots are more than the slot buffer addresses",
                          (long long)a1, (long long)kp);
    void *slots = lib_scratch_get(l, stream, (size_t)(a0 * a1 * kp) * 4, 1, err);
    if (!slots)
        return 1;
    tj_arg sel_args[] = {lib_tensor_arg(&xr), lib_buffer_arg(slots, TJ_DT_I32, 2, (int64_t[]){a0, a1 * kp}),
                         lib_int_arg(k), lib_int_arg(kp)};
    tj_arg order_args[] = {lib_tensor_arg(&xr), lib_buffer_arg(slots, TJ_DT_I32, 3, (int64_t[]){a0, a1, kp}),
                           lib_tensor_arg(&vr), lib_tensor_arg(&ir)};
    return lib_launch(l, sel, sel_args, 4, stream, err) || lib_launch(l, order, order_args, 4, stream, err);
}

/* Lines longer than a segment: the top-k of each segment (its k largest,
 * largest first, ties by index) into candidates [P, M, Q] (values and
 * indices within the segment, k a segment in turn), the top-k of the
 * candidates (ties by position: by segment, then by index), and their
 * indices in the line (topk_candidate_indices). */
static int topk_segments(tj_lib *l, const topk_kind *kind, const tj_tensor *xl, int64_t k, const tj_tensor *vl,
                         const tj_tensor *il, void *stream, tj_rt_error *err)
{
    int64_t n = xl->shape[1], p = xl->shape[0], q = xl->shape[2], seg = lib_segment(l, SEGMENT_TILE);
    int64_t nseg = (n + seg - 1) / seg, tail = n - (nseg - 1) * seg, m = (nseg - 1) * k + (tail < k ? tail : k);
    if (m > seg)
        return tj_rt_fail(err, "tj_lib_topk: k = %lld from each of the %lld segments of %lld elements (a line of "
                               "%lld) is more than one segment holds; a smaller k or a larger segment",
                          (long long)k, (long long)nseg, (long long)seg, (long long)n);
    size_t size = (size_t)tj_dtype_size(xl->dtype), values = ((size_t)(p * m * q) * size + 7) / 8 * 8;
    char *buf = lib_scratch_owned(l, stream, LIB_SCRATCH_TOPK, values + (size_t)(p * (m + k) * q) * 8, 0, err);
    tj_dispatch *merge = buf ? topk_kernel(l, kind, "topk_candidate_indices", err) : NULL;
    if (!merge)
        return 1;
    tj_tensor cv = tj_tensor_contiguous(buf, xl->dtype, 3, (int64_t[]){p, m, q});
    tj_tensor ci = tj_tensor_contiguous(buf + values, TJ_DT_I64, 3, (int64_t[]){p, m, q});
    tj_tensor jt = tj_tensor_contiguous(buf + values + (size_t)(p * m * q) * 8, TJ_DT_I64, 3, (int64_t[]){p, k, q});
    for (int64_t s = 0; s < nseg; s++) {
        int64_t len = s < nseg - 1 ? seg : tail, ks = len < k ? len : k;
        tj_tensor xs = lib_segment_of(xl, s * seg, len), vs = lib_segment_of(&cv, s * k, ks),
                  is = lib_segment_of(&ci, s * k, ks);
        if (launch(l, kind, &xs, ks, &vs, &is, stream, err))
            return 1;
    }
    tj_tensor cr = rows_view(&ci, TJ_DT_I64), jr = rows_view(&jt, TJ_DT_I64), ir = rows_view(il, TJ_DT_I64);
    tj_arg args[] = {lib_tensor_arg(&cr), lib_tensor_arg(&jr), lib_tensor_arg(&ir), lib_int_arg(k), lib_int_arg(seg)};
    return launch(l, kind, &cv, k, vl, &jt, stream, err) || lib_launch(l, merge, args, 5, stream, err);
}

int tj_lib_topk(tj_lib *l, const tj_tensor *x, int64_t k, const tj_tensor *values, const tj_tensor *idx, int axis,
                uint32_t flags, void *stream, tj_rt_error *err)
{
    if (!l || !x || !values || !idx)
        return tj_rt_fail(err, "tj_lib_topk: NULL library or tensor");
    if (flags)
        return tj_rt_fail(err, "tj_lib_topk: unknown flags 0x%x", flags);
    lib_lines ln;
    if (lib_lines_of(x, axis, "tj_lib_topk", &ln, err) || check_args(x, k, values, idx, &ln, err))
        return 1;
    if (k == 0 || ln.p * ln.q == 0)
        return 0;
    lib_lines vl, il;
    if (lib_lines_of(values, ln.axis, "tj_lib_topk (values)", &vl, err) ||
        lib_lines_of(idx, ln.axis, "tj_lib_topk (indices)", &il, err))
        return 1;
    tj_tensor xt = lib_as_lines(x, &ln), vt = lib_as_lines(values, &vl), it = lib_as_lines(idx, &il);
    const topk_kind *kind = kind_of(x->dtype);
    pthread_mutex_lock(&l->lock);
    int rc = ln.n > lib_segment(l, SEGMENT_TILE) ? topk_segments(l, kind, &xt, k, &vt, &it, stream, err)
                                                     : launch(l, kind, &xt, k, &vt, &it, stream, err);
    pthread_mutex_unlock(&l->lock);
    return rc;
}
