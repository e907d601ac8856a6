/* Stable sorts and argsorts (tilejit/lib.h) from lib/kernels/sort.tj:
 * rows that fit one tile through the tile sort (docs/library.md). */
#include <stdio.h>
#include <string.h>

#include "lib/lib_internal.h"

enum { ROW_TILE_MAX = 4096 }; /* the largest B of sort_rows */

/* The unsigned dtype that carries a key's bits, and the fn that orders it. */
static int key_kind(tj_dtype dt, tj_dtype *bits, const char **fn)
{
    switch (dt) {
    case TJ_DT_F32: *bits = TJ_DT_U32; *fn = "key_f32"; return 0;
    case TJ_DT_F16: *bits = TJ_DT_U16; *fn = "key_f16"; return 0;
    case TJ_DT_BF16: *bits = TJ_DT_U16; *fn = "key_bf16"; return 0;
    case TJ_DT_I32: *bits = TJ_DT_U32; *fn = "key_i32"; return 0;
    case TJ_DT_U32: *bits = TJ_DT_U32; *fn = "key_u32"; return 0;
    case TJ_DT_I64: *bits = TJ_DT_U64; *fn = "key_i64"; return 0;
    default: return 1;
    }
}

typedef struct sort_job {
    tj_lib *l;
    const char *fn;
    tj_tensor x, y, idx; /* as [P, N, Q]; y or idx without data when not wanted */
    lib_lines ln;
    lib_subst subst[4];
    void *stream;
    tj_rt_error *err;
} sort_job;

/* [P, N, 1] as [P, N] rows */
static tj_arg rows_arg(const tj_tensor *t)
{
    tj_tensor r = {.data = t->data, .dtype = t->dtype, .rank = 2, .shape = {t->shape[0], t->shape[1]},
                   .strides = {t->strides[0], t->strides[1]}};
    return lib_tensor_arg(&r);
}

static int sort_rows(sort_job *s)
{
    int values = s->y.data != NULL;
    s->subst[3] = (lib_subst){"VALUES", values ? "1" : "0"};
    tj_dispatch *d = lib_dispatch(s->l, "sort", "sort_rows", s->subst, 4, s->err);
    if (!d)
        return 1;
    tj_tensor idx = s->idx;
    if (!idx.data) { /* sort: the columns go to scratch */
        void *buf = lib_scratch_get(s->l, s->stream, (size_t)(s->ln.p * s->ln.n) * 8, 0, s->err);
        if (!buf)
            return 1;
        idx = tj_tensor_contiguous(buf, TJ_DT_I64, 3, (int64_t[]){s->ln.p, s->ln.n, 1});
    }
    tj_arg args[] = {rows_arg(&s->x), rows_arg(values ? &s->y : &s->x), rows_arg(&idx)};
    return lib_launch(s->l, d, args, 3, s->stream, s->err);
}

static int run_sort(tj_lib *l, const char *fn, const tj_tensor *x, const tj_tensor *y, const tj_tensor *idx,
                    int axis, uint32_t flags, void *stream, tj_rt_error *err)
{
    const tj_tensor *out = y ? y : idx;
    if (!l || !x || !out)
        return tj_rt_fail(err, "%s: NULL library or tensor", fn);
    if (flags & ~(uint32_t)TJ_LIB_DESCENDING)
        return tj_rt_fail(err, "%s: unknown flags 0x%x", fn, flags);
    sort_job s = {.l = l, .fn = fn, .stream = stream, .err = err};
    const char *key_fn;
    tj_dtype bits;
    if (key_kind(x->dtype, &bits, &key_fn))
        return tj_rt_fail(err, "%s: keys of dtype %s are not supported (f32, f16, bf16, i32, u32, i64 are)", fn,
                          tj_dtype_name(x->dtype));
    if (y && y->dtype != x->dtype)
        return tj_rt_fail(err, "%s: the output is %s, the input %s", fn, tj_dtype_name(y->dtype),
                          tj_dtype_name(x->dtype));
    if (idx && idx->dtype != TJ_DT_I64)
        return tj_rt_fail(err, "%s: the indices must be i64, not %s", fn, tj_dtype_name(idx->dtype));
    lib_lines ol;
    if (lib_same_shape(x, out, fn, err) || lib_lines_of(x, axis, fn, &s.ln, err) ||
        lib_lines_of(out, axis, fn, &ol, err))
        return 1;
    if (lib_numel(x) == 0)
        return 0;
    if (s.ln.q != 1)
        return tj_rt_fail(err, "%s: sorting along axis %d, which is not the last non-unit one, is not supported "
                               "yet (move the axis last)", fn, s.ln.axis);
    s.x = lib_as_lines(x, &s.ln);
    s.x.dtype = bits;
    if (y) {
        s.y = lib_as_lines(y, &s.ln);
        s.y.dtype = bits;
    }
    if (idx)
        s.idx = lib_as_lines(idx, &s.ln);
    s.subst[0] = (lib_subst){"K", tj_dtype_name(bits)};
    s.subst[1] = (lib_subst){"KEY", key_fn};
    s.subst[2] = (lib_subst){"DESC", flags & TJ_LIB_DESCENDING ? "1" : "0"};
    if (s.ln.n > ROW_TILE_MAX || bits == TJ_DT_U64)
        return tj_rt_fail(err, "%s: rows of %lld %s keys are not supported yet (rows of 16- and 32-bit keys up to "
                               "%d are)", fn, (long long)s.ln.n, tj_dtype_name(x->dtype), ROW_TILE_MAX);
    pthread_mutex_lock(&l->lock);
    int rc = sort_rows(&s);
    pthread_mutex_unlock(&l->lock);
    return rc;
}

int tj_lib_sort(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                tj_rt_error *err)
{
    return run_sort(l, "tj_lib_sort", x, y, NULL, axis, flags, stream, err);
}

int tj_lib_argsort(tj_lib *l, const tj_tensor *x, const tj_tensor *idx, int axis, uint32_t flags, void *stream,
                   tj_rt_error *err)
{
    return run_sort(l, "tj_lib_argsort", x, NULL, idx, axis, flags, stream, err);
}
