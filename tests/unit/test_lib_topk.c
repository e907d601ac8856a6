/* tilejit lib's topk (tilejit/lib.h) on the cpu, native code and the
 * reference interpreter, against a stable sort of the indices by key. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib_test_util.h"

/* ---- values as the reference orders them: NaN above everything, -0.0 == +0.0 ---- */

static double half_value(uint16_t b, int bf16)
{
    if (bf16) {
        uint32_t w = (uint32_t)b << 16;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    int e = (b >> 10) & 31, m = b & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return b >> 15 ? -v : v;
}

static double value_at(const void *x, tj_dtype dt, int64_t i)
{
    switch (dt) {
    case TJ_DT_F32: return ((const float *)x)[i];
    case TJ_DT_I32: return ((const int32_t *)x)[i];
    default: return half_value(((const uint16_t *)x)[i], dt == TJ_DT_BF16);
    }
}

typedef struct ranked {
    double v;
    int64_t i;
} ranked;

static int larger_first(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    int na = isnan(a->v), nb = isnan(b->v);
    if (na != nb)
        return nb - na;
    if (!na && a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* x: rows x n (row-major), the top k of each row checked bit for bit */
static void check_rows(tj_lib *l, const void *x, tj_dtype dt, int64_t rows, int64_t n, int64_t k)
{
    size_t es = (size_t)tj_dtype_size(dt);
    void *v = malloc(es * (size_t)(rows * k + 1));
    int64_t *idx = malloc(8 * (size_t)(rows * k + 1));
    ranked *r = malloc(sizeof *r * (size_t)(n + 1));
    memset(v, 0xab, es * (size_t)(rows * k));
    tj_tensor tx = tj_tensor_contiguous((void *)x, dt, 2, (int64_t[]){rows, n});
    tj_tensor tv = tj_tensor_contiguous(v, dt, 2, (int64_t[]){rows, k});
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I64, 2, (int64_t[]){rows, k});
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_topk(l, &tx, k, &tv, &ti, -1, 0, NULL, &err), 0, "%s", err.msg);
    for (int64_t row = 0; row < rows; row++) {
        for (int64_t i = 0; i < n; i++)
            r[i] = (ranked){value_at(x, dt, row * n + i), i};
        qsort(r, (size_t)n, sizeof *r, larger_first);
        for (int64_t j = 0; j < k; j++) {
            cr_assert_eq(idx[row * k + j], r[j].i, "%s %lld x %lld, k %lld: row %lld slot %lld has index %lld, expected %lld",
                         tj_dtype_name(dt), (long long)rows, (long long)n, (long long)k, (long long)row, (long long)j,
                         (long long)idx[row * k + j], (long long)r[j].i);
            cr_assert(!memcmp((char *)v + es * (size_t)(row * k + j), (const char *)x + es * (size_t)(row * n + r[j].i), es),
                      "%s: row %lld slot %lld: the value is not x's bit for bit", tj_dtype_name(dt), (long long)row,
                      (long long)j);
        }
    }
    free(v);
    free(idx);
    free(r);
}

/* rows of values with many ties, and NaN, infinities and -0.0 among them */
static void *special_values(tj_dtype dt, int64_t count, unsigned seed)
{
    size_t es = (size_t)tj_dtype_size(dt);
    char *x = malloc(es * (size_t)(count + 1));
    for (int64_t i = 0; i < count; i++) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        float f = (float)((int)(h % 41) - 20) / 4; /* ties */
        f = i % 7 == 3 ? NAN : i % 11 == 5 ? INFINITY : i % 13 == 6 ? -INFINITY : i % 9 == 2 ? -0.0f : f;
        if (dt == TJ_DT_F32) {
            memcpy(x + 4 * i, &f, 4);
        } else if (dt == TJ_DT_I32) {
            int32_t w = i % 17 == 1 ? INT32_MIN : i % 19 == 4 ? INT32_MAX : (int32_t)(h % 9) - 4;
            memcpy(x + 4 * i, &w, 4);
        } else if (dt == TJ_DT_BF16) {
            uint32_t w;
            memcpy(&w, &f, 4);
            uint16_t b = (uint16_t)(w >> 16);
            memcpy(x + 2 * i, &b, 2);
        } else { /* f16 patterns: the same classes of values */
            uint16_t b = i % 7 == 3 ? 0x7e00 : i % 11 == 5 ? 0x7c00 : i % 13 == 6 ? 0xfc00 : i % 9 == 2 ? 0x8000
                                                                                             : (uint16_t)((h % 41) * 64 + (h & 0x8000));
            memcpy(x + 2 * i, &b, 2);
        }
    }
    return x;
}

static void shapes(tj_device_kind kind)
{
    tj_jit *j;
    tj_lib *l = open_lib(kind, &j);
    tj_dtype dts[] = {TJ_DT_F32, TJ_DT_F16, TJ_DT_BF16, TJ_DT_I32};
    int64_t cases[][3] = {{5, 1000, 64}, {3, 37, 5}, {2, 1, 1},    {4, 64, 64},      {9, 300, 1},
                          {1, 2049, 100}, {3, 8, 0}, {0, 10, 3}, {2, 20001, 300}, {1, 16385, 16384}};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            int64_t rows = cases[c][0], n = cases[c][1], k = cases[c][2];
            void *x = special_values(dts[d], rows * n, (unsigned)c);
            check_rows(l, x, dts[d], rows, n, k);
            free(x);
        }
    tj_lib_close(l);
    tj_jit_close(j);
}

Test(lib_topk, rows_native) { shapes(TJ_DEVICE_CPU); }
Test(lib_topk, rows_interp) { shapes(TJ_DEVICE_INTERP); }

/* topk along axis 0 of a [n, c] array: the axis strided */
Test(lib_topk, axis_0)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    int64_t n = 301, c = 7, k = 10;
    float *x = special_values(TJ_DT_F32, n * c, 3), *t = malloc(sizeof *t * (size_t)(n * c)), v[70];
    int64_t idx[70];
    for (int64_t i = 0; i < n; i++)
        for (int64_t q = 0; q < c; q++)
            t[q * n + i] = x[i * c + q];
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, (int64_t[]){n, c});
    tj_tensor tv = tj_tensor_contiguous(v, TJ_DT_F32, 2, (int64_t[]){k, c});
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I64, 2, (int64_t[]){k, c});
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_topk(l, &tx, k, &tv, &ti, 0, 0, NULL, &err), 0, "%s", err.msg);
    float vt[70];
    int64_t it[70];
    tj_tensor ttx = tj_tensor_contiguous(t, TJ_DT_F32, 2, (int64_t[]){c, n});
    tj_tensor ttv = tj_tensor_contiguous(vt, TJ_DT_F32, 2, (int64_t[]){c, k});
    tj_tensor tti = tj_tensor_contiguous(it, TJ_DT_I64, 2, (int64_t[]){c, k});
    cr_assert_eq(tj_lib_topk(l, &ttx, k, &ttv, &tti, 1, 0, NULL, &err), 0, "%s", err.msg);
    check_rows(l, t, TJ_DT_F32, c, n, k);
    for (int64_t jj = 0; jj < k; jj++)
        for (int64_t q = 0; q < c; q++) {
            cr_assert_eq(idx[jj * c + q], it[q * k + jj], "axis 0: slot %lld of column %lld", (long long)jj, (long long)q);
            cr_assert(!memcmp(&v[jj * c + q], &vt[q * k + jj], 4));
        }
    free(x);
    free(t);
    tj_lib_close(l);
    tj_jit_close(j);
}

static void expect_error(tj_lib *l, const tj_tensor *x, int64_t k, const tj_tensor *v, const tj_tensor *i, int axis,
                         const char *needle)
{
    tj_rt_error err = {{0}};
    cr_assert_neq(tj_lib_topk(l, x, k, v, i, axis, 0, NULL, &err), 0, "expected an error about '%s'", needle);
    cr_assert(strstr(err.msg, needle), "error '%s' does not say '%s'", err.msg, needle);
}

Test(lib_topk, errors)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    static float x[20000], v[20000];
    static int64_t idx[20000];
    static uint8_t bytes[64];
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, (int64_t[]){4, 10});
    tj_tensor tv = tj_tensor_contiguous(v, TJ_DT_F32, 2, (int64_t[]){4, 3});
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I64, 2, (int64_t[]){4, 3});
    expect_error(l, &tx, 11, &tv, &ti, -1, "k = 11 is outside [0, 10]");
    expect_error(l, &tx, -1, &tv, &ti, -1, "k = -1 is outside");
    expect_error(l, &tx, 4, &tv, &ti, -1, "axis 1 of length k = 4");
    expect_error(l, &tx, 3, &tv, &ti, 2, "axis 2 is out of range");
    tj_tensor i32 = tj_tensor_contiguous(idx, TJ_DT_I32, 2, (int64_t[]){4, 3});
    expect_error(l, &tx, 3, &tv, &i32, -1, "indices must be i64");
    tj_tensor vi = tj_tensor_contiguous(v, TJ_DT_I32, 2, (int64_t[]){4, 3});
    expect_error(l, &tx, 3, &vi, &ti, -1, "values output is i32, the input f32");
    tj_tensor tb = tj_tensor_contiguous(bytes, TJ_DT_U8, 2, (int64_t[]){4, 10});
    expect_error(l, &tb, 3, &tv, &ti, -1, "dtype u8 are not supported");
    tj_tensor longrow = tj_tensor_contiguous(x, TJ_DT_F32, 1, (int64_t[]){20000});
    tj_tensor v1 = tj_tensor_contiguous(v, TJ_DT_F32, 1, (int64_t[]){16385});
    tj_tensor i1 = tj_tensor_contiguous(idx, TJ_DT_I64, 1, (int64_t[]){16385});
    expect_error(l, &longrow, 16385, &v1, &i1, 0, "k = 16385 is more than the 16384");
    expect_error(l, NULL, 3, &tv, &ti, -1, "NULL");
    tj_lib_close(l);
    tj_jit_close(j);
}
