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

/* ---- sorts ---- */

/* NumPy's order as an unsigned key (lib/kernels/sort.tj's key_*): NaN
 * last, -0.0 equal to 0.0; descending complements it. */
static uint64_t order_key(tj_dtype dt, const void *x, int64_t i, int desc)
{
    uint64_t k = 0;
    if (dt == TJ_DT_F32) {
        uint32_t b;
        memcpy(&b, (const char *)x + 4 * i, 4);
        b = b == 0x80000000u ? 0 : b;
        k = (b & 0x7fffffffu) > 0x7f800000u ? 0xffffffffu : b >> 31 ? ~b & 0xffffffffu : b | 0x80000000u;
    } else if (dt == TJ_DT_F16) {
        uint16_t b;
        memcpy(&b, (const char *)x + 2 * i, 2);
        b = b == 0x8000u ? 0 : b;
        k = (b & 0x7fffu) > 0x7c00u ? 0xffffu : b >> 15 ? (uint16_t)~b : b | 0x8000u;
    } else if (dt == TJ_DT_I64) {
        k = (uint64_t)((const int64_t *)x)[i] ^ (uint64_t)1 << 63;
    } else {
        k = (uint32_t)((const int32_t *)x)[i] ^ 0x80000000u;
    }
    int bits = dt == TJ_DT_F16 ? 16 : dt == TJ_DT_I64 ? 64 : 32;
    return desc ? ~k & (bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1) : k;
}

typedef struct keyed {
    uint64_t key;
    int64_t index;
} keyed;

static int by_key_then_index(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? -1 : 1) : (x->index > y->index) - (x->index < y->index);
}

/* Keys with NaN of two payloads (and a negative one), -0.0 and 0.0,
 * infinities and many equal values: one in 5 elements of 7 values. */
static void fill_keys(tj_dtype dt, void *x, int64_t n)
{
    static const uint32_t f32[] = {0x7fc00000u, 0x7fc00001u, 0xffc00000u, 0x80000000u, 0, 0x7f800000u, 0xff800000u};
    static const uint16_t f16[] = {0x7e00, 0x7e01, 0xfe00, 0x8000, 0, 0x7c00, 0xfc00};
    for (int64_t i = 0; i < n; i++) {
        int64_t r = (i * 7919 + 13) % 1009, special = (i * 31) % 5 == 0;
        if (dt == TJ_DT_F32) {
            float v = (float)(r - 500) * 0.25f;
            uint32_t b;
            memcpy(&b, &v, 4);
            ((uint32_t *)x)[i] = special ? f32[i % 7] : b;
        } else if (dt == TJ_DT_F16) { /* small integers and halves, exact in f16 */
            ((uint16_t *)x)[i] = special ? f16[i % 7] : (uint16_t)((r % 2 ? 0x8000 : 0) | (0x3c00 + (r % 300) * 4));
        } else if (dt == TJ_DT_I64) {
            ((int64_t *)x)[i] = special ? (int64_t)(i % 7) - 3 : (r - 500) * ((int64_t)1 << 40) + r;
        } else {
            ((int32_t *)x)[i] = special ? (int32_t)(i % 7) - 3 : (int32_t)(r - 500) * 1000003;
        }
    }
}

/* argsort and sort of `rows` lines of n keys along the last axis, against
 * a stable sort by (NumPy key, index): the indices exactly, the sorted
 * keys bit for bit. */
static void check_sorts(tj_lib *l, tj_dtype dt, int64_t rows, int64_t n, uint32_t flags)
{
    size_t size = (size_t)tj_dtype_size(dt), total = (size_t)(rows * n);
    char *x = malloc(size * total + 8), *y = malloc(size * total + 8);
    int64_t *idx = malloc(sizeof *idx * total + 8);
    keyed *want = malloc(sizeof *want * (size_t)(n + 1));
    fill_keys(dt, x, rows * n);
    int64_t shape[] = {rows, n};
    tj_tensor tx = tj_tensor_contiguous(x, dt, 2, shape), ty = tj_tensor_contiguous(y, dt, 2, shape);
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I64, 2, shape);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_argsort(l, &tx, &ti, -1, flags, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_lib_sort(l, &tx, &ty, -1, flags, NULL, &err), 0, "%s", err.msg);
    for (int64_t r = 0; r < rows; r++) {
        const char *line = x + size * (size_t)(r * n);
        for (int64_t i = 0; i < n; i++)
            want[i] = (keyed){order_key(dt, line, i, flags & TJ_LIB_DESCENDING), i};
        qsort(want, (size_t)n, sizeof *want, by_key_then_index);
        for (int64_t i = 0; i < n; i++) {
            cr_assert_eq(idx[r * n + i], want[i].index, "%s %lld x %lld (flags %u): idx[%lld, %lld] = %lld, expected %lld",
                         tj_dtype_name(dt), (long long)rows, (long long)n, flags, (long long)r, (long long)i,
                         (long long)idx[r * n + i], (long long)want[i].index);
            cr_assert(!memcmp(y + size * (size_t)(r * n + i), line + size * (size_t)want[i].index, size),
                      "%s %lld x %lld (flags %u): y[%lld, %lld] is not x[%lld] bit for bit", tj_dtype_name(dt),
                      (long long)rows, (long long)n, flags, (long long)r, (long long)i, (long long)want[i].index);
        }
    }
    free(x);
    free(y);
    free(idx);
    free(want);
}

/* Segments of 4096 (one radix tile): lines longer than that take the wide
 * sort (its [R, 4096] views: several rows), shorter ones are grouped. */
static void sorts_segments(tj_device_kind kind, int64_t long_n)
{
    tj_jit *j;
    tj_lib *l = open_segmented(kind, 4096, &j);
    static const tj_dtype dts[] = {TJ_DT_F32, TJ_DT_F16, TJ_DT_I64, TJ_DT_I32};
    for (int desc = 0; desc < 2; desc++) {
        uint32_t f = desc ? TJ_LIB_DESCENDING : 0;
        for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
            check_sorts(l, dts[d], 1, long_n, f);
        check_sorts(l, TJ_DT_F32, 1, 0, f);
        check_sorts(l, TJ_DT_F32, 1, 1, f);
        check_sorts(l, TJ_DT_F32, 1, 4097, f);
        check_sorts(l, TJ_DT_F32, 2, 3 * 4096, f); /* a multiple of the segment */
        check_sorts(l, TJ_DT_F32, 7, 1000, f);     /* rows, 4 a group */
        check_sorts(l, TJ_DT_I64, 5, 1500, f);     /* the radix sort, 2 a group */
    }
    close_lib(l, j);
}

Test(lib_segments, sorts_native) { sorts_segments(TJ_DEVICE_CPU, 5 * 4096 + 1234); }
Test(lib_segments, sorts_interp) { sorts_segments(TJ_DEVICE_INTERP, 2 * 4096 + 77); }

/* ---- top-k ---- */

/* topk of [P, N, Q] along axis 1 (Q == 1: the last axis) against a stable
 * descending sort: the values bit for bit, the indices exactly (ties by
 * the lower index, across segments too). */
static void check_topk(tj_lib *l, tj_dtype dt, int64_t p, int64_t n, int64_t q, int64_t k)
{
    size_t size = (size_t)tj_dtype_size(dt);
    char *x = malloc(size * (size_t)(p * n * q) + 8), *v = malloc(size * (size_t)(p * k * q) + 8);
    char *line = malloc(size * (size_t)n + 8);
    int64_t *idx = malloc(sizeof *idx * (size_t)(p * k * q) + 8);
    keyed *want = malloc(sizeof *want * (size_t)n);
    fill_keys(dt, x, p * n * q);
    int64_t xs[] = {p, n, q}, os[] = {p, k, q};
    tj_tensor tx = tj_tensor_contiguous(x, dt, 3, xs), tv = tj_tensor_contiguous(v, dt, 3, os);
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I64, 3, os);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_topk(l, &tx, k, &tv, &ti, 1, 0, NULL, &err), 0, "%s", err.msg);
    for (int64_t a = 0; a < p; a++)
        for (int64_t c = 0; c < q; c++) {
            for (int64_t i = 0; i < n; i++)
                memcpy(line + size * (size_t)i, x + size * (size_t)((a * n + i) * q + c), size);
            for (int64_t i = 0; i < n; i++)
                want[i] = (keyed){order_key(dt, line, i, 1), i};
            qsort(want, (size_t)n, sizeof *want, by_key_then_index);
            for (int64_t j = 0; j < k; j++) {
                size_t at = (size_t)((a * k + j) * q + c);
                cr_assert_eq(idx[at], want[j].index, "%s [%lld, %lld, %lld] k %lld: idx[%lld, %lld, %lld] = %lld, "
                             "expected %lld", tj_dtype_name(dt), (long long)p, (long long)n, (long long)q,
                             (long long)k, (long long)a, (long long)j, (long long)c, (long long)idx[at],
                             (long long)want[j].index);
                cr_assert(!memcmp(v + size * at, line + size * (size_t)want[j].index, size),
                          "%s k %lld: value %lld of line (%lld, %lld) is not x's bit for bit", tj_dtype_name(dt),
                          (long long)k, (long long)j, (long long)a, (long long)c);
            }
        }
    free(x);
    free(v);
    free(line);
    free(idx);
    free(want);
}

/* Segments of 4096: 6 of a line of 5 * 4096 + 321, the last shorter than
 * k = 500 (it gives all it has); k = 1; batched lines; an inner axis. */
static void topk_segments(tj_device_kind kind, int64_t n)
{
    tj_jit *j;
    tj_lib *l = open_segmented(kind, 4096, &j);
    check_topk(l, TJ_DT_F32, 1, n, 1, 500);
    check_topk(l, TJ_DT_F32, 1, n, 1, 1);
    check_topk(l, TJ_DT_F16, 3, n, 1, 64);
    check_topk(l, TJ_DT_I32, 2, n, 3, 40);
    check_topk(l, TJ_DT_F32, 1, 4097, 1, 4097 / 3); /* two segments, the second of 1 element */
    close_lib(l, j);
}

Test(lib_segments, topk_native) { topk_segments(TJ_DEVICE_CPU, 5 * 4096 + 321); }
Test(lib_segments, topk_interp) { topk_segments(TJ_DEVICE_INTERP, 2 * 4096 + 321); }

/* What the segments cannot do is an error naming the op and the sizes. */
Test(lib_segments, errors)
{
    tj_jit *j;
    tj_lib *l = open_segmented(TJ_DEVICE_INTERP, 4096, &j);
    enum { N = 3 * 4096 };
    static float x[2 * N], v[2 * 2000];
    static int64_t idx[2 * N];
    tj_rt_error err = {{0}};
    int64_t xs[] = {N, 2}, ks[] = {1, 2000};
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, xs), ti = tj_tensor_contiguous(idx, TJ_DT_I64, 2, xs);
    cr_assert_neq(tj_lib_argsort(l, &tx, &ti, 0, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "tj_lib_argsort: lines of 12288 elements along axis 0, 2 interleaved after it, are "
                              "more than one launch sorts (4096 elements)"), "%s", err.msg);
    int64_t one = 2 * N;
    tj_tensor t1 = tj_tensor_contiguous(x, TJ_DT_F32, 1, &one), tv = tj_tensor_contiguous(v, TJ_DT_F32, 1, ks + 1);
    tj_tensor tk = tj_tensor_contiguous(idx, TJ_DT_I64, 1, ks + 1);
    cr_assert_neq(tj_lib_topk(l, &t1, 2000, &tv, &tk, 0, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "tj_lib_topk: k = 2000 from each of the 6 segments of 4096 elements (a line of 24576) "
                              "is more than one segment holds"), "%s", err.msg);
    /* a line of 2^32: refused from its shape, before anything is read (the data is a stand-in) */
    int64_t huge = (int64_t)1 << 32;
    tj_tensor th = tj_tensor_contiguous(x, TJ_DT_F32, 1, &huge), tih = tj_tensor_contiguous(idx, TJ_DT_I64, 1, &huge);
    cr_assert_neq(tj_lib_argsort(l, &th, &tih, 0, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "tj_lib_argsort: a line of 4294967296 elements is more than the radix sort's 32-bit "
                              "places address (2^32 - 1)"), "%s", err.msg);
    close_lib(l, j);
}
