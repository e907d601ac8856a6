/* tilejit lib's segmented paths (docs/library.md, "Arrays beyond 2^31
 * elements"): a library opened with a small tj_lib_options.segment cuts
 * every axis longer than it into segments, as the default cuts axes of
 * 2^31 elements and more, so these arrays of a few segments run the same
 * code that a GPU runs at 2^31 + 3. On the native cpu and the interpreter,
 * against loops. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/lib.h"

static tj_lib *open_segmented(tj_device_kind kind, int64_t segment, tj_jit **j)
{
    tj_rt_error err = {{0}};
    *j = tj_jit_open(kind, 0, &err);
    cr_assert(*j, "%s", err.msg);
    tj_lib *l = tj_lib_open_options(*j, &(tj_lib_options){.segment = segment}, &err);
    cr_assert(l, "%s", err.msg);
    return l;
}

static void close_lib(tj_lib *l, tj_jit *j)
{
    tj_lib_close(l);
    tj_jit_close(j);
}

/* ---- scans ---- */

/* i32 cumsums of P lines of n (segments of 8192: one tile), exact; in
 * place when `in_place` (a segment's carry is then read from what the
 * launch before it wrote over x). */
static void check_cumsum_lines(tj_lib *l, int64_t p, int64_t n, uint32_t flags, int in_place)
{
    size_t total = (size_t)(p * n) + 1;
    int32_t *x = malloc(sizeof *x * total), *y = malloc(sizeof *y * total), *x0 = malloc(sizeof *x0 * total);
    for (size_t i = 0; i < total; i++)
        x0[i] = x[i] = (int32_t)((i * 7919) % 13) - 6;
    int64_t shape[] = {p, n};
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_I32, 2, shape);
    tj_tensor ty = tj_tensor_contiguous(in_place ? x : y, TJ_DT_I32, 2, shape);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_cumsum(l, &tx, &ty, 1, flags, NULL, &err), 0, "%s", err.msg);
    const int32_t *out = in_place ? x : y;
    for (int64_t r = 0; r < p; r++) {
        int32_t acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc += x0[r * n + i];
            cr_assert_eq(out[r * n + i], acc, "%lld x %lld (flags %u): y[%lld, %lld] = %d, expected %d",
                         (long long)p, (long long)n, flags, (long long)r, (long long)i, out[r * n + i], acc);
        }
    }
    free(x);
    free(y);
    free(x0);
}

static void cumsum_segments(tj_device_kind kind)
{
    tj_jit *j;
    tj_lib *l = open_segmented(kind, 8192, &j);
    static const int64_t lines[][2] = {{1, 0}, {1, 1}, {1, 8192}, {1, 8193}, {1, 5 * 8192 + 3}, {3, 4 * 8192 - 1}};
    for (int flags = 0; flags < 2; flags++)
        for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
            check_cumsum_lines(l, lines[i][0], lines[i][1], flags ? TJ_LIB_MULTI_PHASE : 0, (int)i == 4);
    close_lib(l, j);
}

Test(lib_segments, cumsum_native) { cumsum_segments(TJ_DEVICE_CPU); }
Test(lib_segments, cumsum_interp) { cumsum_segments(TJ_DEVICE_INTERP); }

/* Combines whose order shows: "a + 0 * b" (a, broadcast: associative, not commutative; every
 * y[i] is x[0], so the first segment's element must reach the last
 * segment in front) and cummax of negative f32 (a zero from padding or a
 * lost carry would show), along a line of 4 segments and down columns of
 * 3 segments (the column kernels' tiles are 64 rows). */
static void combines_segments(tj_device_kind kind)
{
    tj_jit *j;
    tj_lib *l = open_segmented(kind, 8192, &j);
    enum { N = 3 * 8192 + 77, ROWS = 2 * 8192 + 5, Q = 3 };
    int32_t *a = malloc(sizeof *a * N), *b = malloc(sizeof *b * N);
    float *x = malloc(sizeof *x * ROWS * Q), *y = malloc(sizeof *y * ROWS * Q);
    for (int i = 0; i < N; i++)
        a[i] = i * 31 + 5;
    for (int i = 0; i < ROWS * Q; i++)
        x[i] = -3000.0f + (float)((i * 7919) % 997) + (float)(i / (8192 * Q)) * 100.0f;
    int64_t n = N, cs[] = {ROWS, Q};
    tj_tensor ta = tj_tensor_contiguous(a, TJ_DT_I32, 1, &n), tb = tj_tensor_contiguous(b, TJ_DT_I32, 1, &n);
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, cs), ty = tj_tensor_contiguous(y, TJ_DT_F32, 2, cs);
    for (int flags = 0; flags < 2; flags++) {
        tj_rt_error err = {{0}};
        uint32_t f = flags ? TJ_LIB_MULTI_PHASE : 0;
        cr_assert_eq(tj_lib_scan(l, &ta, &tb, 0, "a + 0 * b", f, NULL, &err), 0, "%s", err.msg);
        for (int i = 0; i < N; i++)
            cr_assert_eq(b[i], a[0], "scan a + 0 * b (flags %u): y[%d] = %d, expected %d", f, i, b[i], a[0]);
        cr_assert_eq(tj_lib_cummax(l, &tx, &ty, 0, f, NULL, &err), 0, "%s", err.msg);
        for (int c = 0; c < Q; c++) {
            float m = -INFINITY;
            for (int r = 0; r < ROWS; r++) {
                m = fmaxf(m, x[r * Q + c]);
                cr_assert_eq(y[r * Q + c], m, "cummax columns: y[%d, %d] = %g, expected %g", r, c, y[r * Q + c], m);
            }
        }
    }
    free(a);
    free(b);
    free(x);
    free(y);
    close_lib(l, j);
}

Test(lib_segments, combines_native) { combines_segments(TJ_DEVICE_CPU); }
Test(lib_segments, combines_interp) { combines_segments(TJ_DEVICE_INTERP); }

Test(lib_segments, segment_out_of_range_is_an_error)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    cr_assert_null(tj_lib_open_options(j, &(tj_lib_options){.segment = -1}, &err));
    cr_assert(strstr(err.msg, "tj_lib_open: segment = -1 is outside [0, 2147418112]"), "%s", err.msg);
    cr_assert_null(tj_lib_open_options(j, &(tj_lib_options){.segment = TJ_LIB_SEGMENT_MAX + 1}, &err));
    cr_assert(strstr(err.msg, "segment = 2147418113"), "%s", err.msg);
    tj_jit_close(j);
}
