/* Device-wide scans (tilejit/lib.h): cumsum, cummax and a user-given
 * combine, along any axis, from lib/kernels/scan.tj (docs/library.md).
 * Lines (Q == 1) take the single-pass look-back on the native cpu (whose
 * concurrent programs progress as the tickets order them) and the
 * interpreter (which runs them in ticket order), and on CUDA when
 * TILEJIT_LIB_LOOKBACK=1 asks for it (lookback_here); TJ_LIB_MULTI_PHASE,
 * columns (Q > 1) and CUDA otherwise, the multi-phase kernels, which are
 * also what Metal can run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lib_internal.h"

enum { TILE_LINES = 8192, TILE_COLS = 64 }; /* B in scan.tj's kernels */

static int scannable(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_I32: case TJ_DT_I64: case TJ_DT_U32: case TJ_DT_U64:
    case TJ_DT_F16: case TJ_DT_BF16: case TJ_DT_F32: case TJ_DT_F64: return 1;
    default: return 0;
    }
}

typedef struct scan_job {
    tj_lib *l;
    tj_tensor x, y; /* as [P, N, Q]: one segment of the axis (the whole axis when it fits one) */
    tj_tensor prev; /* [P, Q]: y's element before the segment, combined in front with `carry` */
    int carry;      /* the segment is not the axis' first */
    lib_lines ln;   /* of the segment */
    lib_subst subst[5];
    char aggregate[80];
    void *stream;
    tj_rt_error *err;
} scan_job;

/* The unsigned integer of dt's width: the bits a look-back word carries. */
static const char *unsigned_of(tj_dtype dt)
{
    int size = tj_dtype_size(dt);
    return size == 2 ? "u16" : size == 4 ? "u32" : "u64";
}

/* scan.tj's substitutions: $T, $COMBINE, $U, $AGGREGATE (the look-back's
 * aggregate of tile x of n elements) and $NEAREST (the combine of a window's
 * values v up to position last): for cumsum reductions (`sum`: the aggregate
 * is published before the in-tile scan, and a window takes one reduction, not
 * a scan and a reduction), otherwise from the scan (a combine has no
 * reduction of its own). */
static void set_kernels(scan_job *s, tj_dtype dt, const char *combine, int is_sum)
{
    if (is_sum)
        snprintf(s->aggregate, sizeof s->aggregate, "%s(sum(where(arange(B) < n, x, 0)))", tj_dtype_name(dt));
    else
        snprintf(s->aggregate, sizeof s->aggregate, "last_of(scan(x, axis = 0, combine = combine), n)");
    s->subst[0] = (lib_subst){"T", tj_dtype_name(dt)};
    s->subst[1] = (lib_subst){"COMBINE", combine};
    s->subst[2] = (lib_subst){"U", unsigned_of(dt)};
    s->subst[3] = (lib_subst){"AGGREGATE", s->aggregate};
    s->subst[4] = (lib_subst){"NEAREST", is_sum ? "sum(where(m <= last, v, 0))"
                                                : "sum(where(m == last, scan(v, axis = 0, combine = combine_nearest_first), 0))"};
}

static tj_dispatch *kernel(scan_job *s, const char *name)
{
    return lib_dispatch(s->l, "scan", name, s->subst, 5, s->err);
}

/* A [P, N, 1] view as [P, N], as the kernels of lines take it: with the unit
 * axis last they could not prove the line's stride 1, and their accesses
 * would not be vector accesses. (With one line, P == 1, its stride is never
 * stepped, and the facts count it a multiple of 16 whatever it is.) */
static tj_arg line_arg(const tj_tensor *t)
{
    tj_tensor v = *t;
    v.rank = 2;
    v.shape[2] = 0;
    v.strides[2] = 0;
    return lib_tensor_arg(&v);
}

/* Prev of the kernels of lines ([P]) or columns ([P, Q]). */
static tj_arg prev_arg(const scan_job *s)
{
    tj_tensor v = s->prev;
    if (s->ln.q == 1) {
        v.rank = 1;
        v.shape[1] = 0;
        v.strides[1] = 0;
    }
    return lib_tensor_arg(&v);
}

/* Lines along a contiguous-or-strided axis with nothing after it (Q == 1). */
static int scan_lines(scan_job *s)
{
    int64_t nt = (s->ln.n + TILE_LINES - 1) / TILE_LINES;
    void *a = lib_scratch_get(s->l, s->stream, (size_t)(s->ln.p * nt) * (size_t)tj_dtype_size(s->x.dtype), 0,
                              s->err);
    tj_dispatch *k1 = kernel(s, "scan_tiles"), *k2 = kernel(s, "scan_carry"), *k3 = kernel(s, "scan_apply");
    if (!a || !k1 || !k2 || !k3)
        return 1;
    tj_arg agg = lib_buffer_arg(a, s->x.dtype, 2, (int64_t[]){s->ln.p, nt});
    tj_arg args1[] = {line_arg(&s->x), agg},
           args3[] = {line_arg(&s->x), line_arg(&s->y), agg, prev_arg(s), lib_int_arg(s->carry)};
    return lib_launch(s->l, k1, args1, 2, s->stream, s->err) || lib_launch(s->l, k2, &agg, 1, s->stream, s->err) ||
           lib_launch(s->l, k3, args3, 5, s->stream, s->err);
}

/* Q == 1 in one launch, values of at most 32 bits: scan_lookback_packed
 * (scan.tj). Scratch, zeroed on the stream: the tiles' words F (flag and
 * value), then the ticket counter C. */
static int scan_lines_packed(scan_job *s, int64_t g)
{
    char *a = lib_scratch_get(s->l, s->stream, (size_t)g * 8 + 8, 1, s->err);
    tj_dispatch *k = kernel(s, "scan_lookback_packed");
    if (!a || !k)
        return 1;
    tj_arg args[] = {line_arg(&s->x), line_arg(&s->y), lib_buffer_arg(a, TJ_DT_U64, 1, &g),
                     lib_buffer_arg(a + (size_t)g * 8, TJ_DT_I32, 1, (int64_t[]){1}), prev_arg(s),
                     lib_int_arg(s->carry)};
    return lib_launch(s->l, k, args, 6, s->stream, s->err);
}

/* Q == 1 in one launch: scan_lookback_packed, or for 64-bit values
 * scan_lookback (scan.tj), whose scratch, zeroed on the stream, holds the
 * tiles' flags S, the ticket counter C, then their aggregates A and
 * inclusive prefixes I (8-byte aligned). */
static int scan_lines_lookback(scan_job *s)
{
    int64_t nt = (s->ln.n + TILE_LINES - 1) / TILE_LINES, g = s->ln.p * nt;
    if (g >= INT32_MAX)
        return tj_rt_fail(s->err, "tilejit lib scan: too many tiles (%lld)", (long long)g);
    size_t size = (size_t)tj_dtype_size(s->x.dtype), values = ((size_t)g * 4 + 4 + 7) / 8 * 8;
    if (size <= 4)
        return scan_lines_packed(s, g);
    char *a = lib_scratch_get(s->l, s->stream, values + 2 * (size_t)g * size, 1, s->err);
    tj_dispatch *k = kernel(s, "scan_lookback");
    if (!a || !k)
        return 1;
    tj_arg args[] = {line_arg(&s->x),
                     line_arg(&s->y),
                     lib_buffer_arg(a + values, s->x.dtype, 1, &g),
                     lib_buffer_arg(a + values + (size_t)g * size, s->x.dtype, 1, &g),
                     lib_buffer_arg(a, TJ_DT_I32, 1, &g),
                     lib_buffer_arg(a + (size_t)g * 4, TJ_DT_I32, 1, (int64_t[]){1}),
                     prev_arg(s),
                     lib_int_arg(s->carry)};
    return lib_launch(s->l, k, args, 8, s->stream, s->err);
}

/* Q > 1: tiles of rows by columns; the chains run down the columns. */
static int scan_cols(scan_job *s)
{
    int64_t nt = (s->ln.n + TILE_COLS - 1) / TILE_COLS;
    void *a = lib_scratch_get(s->l, s->stream,
                              (size_t)(s->ln.p * nt * s->ln.q) * (size_t)tj_dtype_size(s->x.dtype), 0, s->err);
    tj_dispatch *k1 = kernel(s, "scan_tiles_cols"), *k2 = kernel(s, "scan_carry_cols"),
                *k3 = kernel(s, "scan_apply_cols");
    if (!a || !k1 || !k2 || !k3)
        return 1;
    if (s->ln.p * nt > INT32_MAX)
        return tj_rt_fail(s->err, "tilejit lib scan: too many tiles (%lld)", (long long)(s->ln.p * nt));
    tj_arg agg = lib_buffer_arg(a, s->x.dtype, 2, (int64_t[]){s->ln.p * nt, s->ln.q});
    tj_arg args1[] = {lib_tensor_arg(&s->x), agg}, args2[] = {agg, lib_int_arg(nt)},
           args3[] = {lib_tensor_arg(&s->x), lib_tensor_arg(&s->y), agg, prev_arg(s), lib_int_arg(s->carry)};
    return lib_launch(s->l, k1, args1, 2, s->stream, s->err) || lib_launch(s->l, k2, args2, 2, s->stream, s->err) ||
           lib_launch(s->l, k3, args3, 5, s->stream, s->err);
}

/* On CUDA the look-back is correct (checked on the H200) but slower than the
 * multi-phase kernels (0.53 against 0.61 of copy on packed words,
 * bench/RESULTS.md): until it is faster, CUDA keeps them unless
 * TILEJIT_LIB_LOOKBACK=1 asks for the look-back (the benchmark does). */
static int lookback_here(const tj_lib *l)
{
    if (tj_jit_device(l->jit) != TJ_DEVICE_CUDA)
        return 1;
    const char *ask = getenv("TILEJIT_LIB_LOOKBACK");
    return ask && !strcmp(ask, "1");
}

/* The axis a segment at a time (lib_segment: what one launch indexes),
 * each after the one before on the stream, so that its carry (y's last
 * element before it, along every line) is there when it runs. */
static int scan_segments(scan_job *s, const tj_tensor *x, const tj_tensor *y, int multi)
{
    tj_tensor xl = lib_as_lines(x, &s->ln), yl = lib_as_lines(y, &s->ln);
    int64_t n = s->ln.n, step = lib_segment(s->l, s->ln.q > 1 ? TILE_COLS : TILE_LINES);
    for (int64_t at = 0; at < n; at += step) {
        int64_t len = n - at < step ? n - at : step;
        s->x = lib_segment_of(&xl, at, len);
        s->y = lib_segment_of(&yl, at, len);
        s->ln.n = len;
        s->carry = at > 0;
        tj_tensor prev = lib_segment_of(&yl, at > 0 ? at - 1 : 0, 1); /* [P, 1, Q] as [P, Q] */
        s->prev = (tj_tensor){.data = prev.data, .dtype = prev.dtype, .rank = 2, .shape = {prev.shape[0], prev.shape[2]},
                              .strides = {prev.strides[0], prev.strides[2]}};
        if (s->ln.q > 1 ? scan_cols(s) : multi ? scan_lines(s) : scan_lines_lookback(s))
            return 1;
    }
    return 0;
}

static int run_scan(tj_lib *l, const char *fn, const tj_tensor *x, const tj_tensor *y, int axis,
                    const char *combine, int is_sum, uint32_t flags, void *stream, tj_rt_error *err)
{
    if (!l || !x || !y || !combine)
        return tj_rt_fail(err, "%s: NULL library, tensor or combine", fn);
    if (flags & ~(uint32_t)TJ_LIB_MULTI_PHASE)
        return tj_rt_fail(err, "%s: unknown flags 0x%x", fn, flags & ~(uint32_t)TJ_LIB_MULTI_PHASE);
    if (!scannable(x->dtype))
        return tj_rt_fail(err, "%s: dtype %s is not supported (i32, i64, u32, u64, f16, bf16, f32, f64 are)", fn,
                          tj_dtype_name(x->dtype));
    if (y->dtype != x->dtype)
        return tj_rt_fail(err, "%s: the output is %s, the input %s", fn, tj_dtype_name(y->dtype),
                          tj_dtype_name(x->dtype));
    scan_job s = {.l = l, .stream = stream, .err = err};
    if (lib_same_shape(x, y, fn, err) || lib_lines_of(x, axis, fn, &s.ln, err))
        return 1;
    lib_lines yl;
    if (lib_lines_of(y, axis, fn, &yl, err))
        return 1;
    if (lib_numel(x) == 0)
        return 0;
    set_kernels(&s, x->dtype, combine, is_sum);
    pthread_mutex_lock(&l->lock);
    int rc = scan_segments(&s, x, y, flags & TJ_LIB_MULTI_PHASE || !lookback_here(l));
    pthread_mutex_unlock(&l->lock);
    return rc;
}

int lib_cumsum_1d(tj_lib *l, const tj_tensor *x, const tj_tensor *y, void *stream, tj_rt_error *err)
{
    scan_job s = {.l = l, .stream = stream, .err = err, .x = *x, .y = *y};
    s.ln = (lib_lines){1, x->shape[0], 1, 0};
    set_kernels(&s, x->dtype, "a + b", 1);
    if (!s.ln.n)
        return 0;
    return scan_segments(&s, x, y, !lookback_here(l));
}

int tj_lib_cumsum(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                  tj_rt_error *err)
{
    return run_scan(l, "tj_lib_cumsum", x, y, axis, "a + b", 1, flags, stream, err);
}

int tj_lib_cummax(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, uint32_t flags, void *stream,
                  tj_rt_error *err)
{
    return run_scan(l, "tj_lib_cummax", x, y, axis, "maximum(a, b)", 0, flags, stream, err);
}

int tj_lib_scan(tj_lib *l, const tj_tensor *x, const tj_tensor *y, int axis, const char *combine,
                uint32_t flags, void *stream, tj_rt_error *err)
{
    if (combine && (strchr(combine, '\n') || strchr(combine, '$')))
        return tj_rt_fail(err, "tj_lib_scan: the combine must be one expression on one line, without '$'");
    return run_scan(l, "tj_lib_scan", x, y, axis, combine, 0, flags, stream, err);
}
