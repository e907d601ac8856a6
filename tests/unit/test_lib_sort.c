/* tilejit lib's sorts (tilejit/lib.h) on the cpu, native code and the
 * reference interpreter: stable order checked element by element. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/lib.h"

/* NumPy's order of f32 keys: NaN last, -0.0 == 0.0 */
static int f32_less(float a, float b) { return isnan(a) ? 0 : isnan(b) ? 1 : a < b; }

/* flags: 0 (the single-pass radix sort) or TJ_LIB_MULTI_PHASE (three kernels a pass) */
static void check_argsort_f32(tj_device_kind kind, int64_t rows, int64_t n, uint32_t flags)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(kind, 0, &err);
    tj_lib *l = tj_lib_open(j, &err);
    cr_assert(l, "%s", err.msg);
    size_t total = (size_t)(rows * n);
    float *x = malloc(sizeof *x * total), *y = malloc(sizeof *y * total);
    int64_t *idx = malloc(sizeof *idx * total);
    const float special[] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY};
    for (size_t i = 0; i < total; i++)
        x[i] = i % 11 == 0 ? special[(i / 11) % 5] : (float)((int)((i * 2654435761u) % 9) - 4);
    int64_t shape[] = {rows, n};
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, shape), ty = tj_tensor_contiguous(y, TJ_DT_F32, 2, shape);
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I64, 2, shape);
    cr_assert_eq(tj_lib_argsort(l, &tx, &ti, -1, flags, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_lib_sort(l, &tx, &ty, -1, flags, NULL, &err), 0, "%s", err.msg);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        const int64_t *ir = idx + r * n;
        for (int64_t i = 0; i < n; i++) {
            cr_assert(ir[i] >= 0 && ir[i] < n, "row %lld: index %lld out of range", (long long)r, (long long)ir[i]);
            cr_assert_eq(memcmp(&y[r * n + i], &xr[ir[i]], 4), 0, "sort and argsort disagree at %lld", (long long)i);
            if (i == 0)
                continue;
            float a = xr[ir[i - 1]], b = xr[ir[i]];
            int ordered = f32_less(a, b) || (!f32_less(b, a) && ir[i - 1] < ir[i]);
            cr_assert(ordered, "n %lld row %lld: %g (at %lld) before %g (at %lld)", (long long)n, (long long)r, a,
                      (long long)ir[i - 1], b, (long long)ir[i]);
        }
    }
    free(x);
    free(y);
    free(idx);
    tj_lib_close(l);
    tj_jit_close(j);
}

Test(lib_sort, rows_native) { check_argsort_f32(TJ_DEVICE_CPU, 5, 1000, 0); }
Test(lib_sort, radix_native) { check_argsort_f32(TJ_DEVICE_CPU, 2, 4500, 0); }
Test(lib_sort, radix_native_multi_phase) { check_argsort_f32(TJ_DEVICE_CPU, 2, 4500, TJ_LIB_MULTI_PHASE); }
/* 147 tiles of 2048 on the native cpu's concurrent programs: look-backs
 * that meet aggregates and wait on tiles not yet published */
Test(lib_sort, radix_native_many_tiles) { check_argsort_f32(TJ_DEVICE_CPU, 3, 100001, 0); }
/* one line: sort carries the bit patterns as the payload (NaN and -0.0 kept) */
Test(lib_sort, radix_native_one_line) { check_argsort_f32(TJ_DEVICE_CPU, 1, 100001, 0); }
Test(lib_sort, radix_native_one_line_multi_phase) { check_argsort_f32(TJ_DEVICE_CPU, 1, 30000, TJ_LIB_MULTI_PHASE); }
Test(lib_sort, rows_interp) { check_argsort_f32(TJ_DEVICE_INTERP, 2, 300, 0); }
Test(lib_sort, radix_interp) { check_argsort_f32(TJ_DEVICE_INTERP, 1, 4500, 0); }
Test(lib_sort, radix_interp_multi_phase) { check_argsort_f32(TJ_DEVICE_INTERP, 1, 4500, TJ_LIB_MULTI_PHASE); }

/* A sort into its own input: the first pass reads the input, the last
 * writes the output (a one-line f32 sort's payload is the keys' bits), so
 * no pass may read what an earlier one wrote there. */
static void check_sort_in_place(uint32_t flags)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    tj_lib *l = tj_lib_open(j, &err);
    cr_assert(l, "%s", err.msg);
    int64_t n = 20000;
    float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)((int)((i * 2654435761u) % 1001) - 500) * 0.25f;
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 1, &n), ty = tj_tensor_contiguous(y, TJ_DT_F32, 1, &n);
    cr_assert_eq(tj_lib_sort(l, &tx, &ty, -1, flags, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_lib_sort(l, &tx, &tx, -1, flags, NULL, &err), 0, "%s", err.msg);
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(memcmp(&x[i], &y[i], 4), 0, "in place, element %lld: %g, out of place %g", (long long)i, x[i],
                     y[i]);
        cr_assert(i == 0 || !f32_less(y[i], y[i - 1]), "element %lld out of order", (long long)i);
    }
    free(x);
    free(y);
    tj_lib_close(l);
    tj_jit_close(j);
}

Test(lib_sort, radix_native_in_place) { check_sort_in_place(0); }
Test(lib_sort, radix_native_in_place_multi_phase) { check_sort_in_place(TJ_LIB_MULTI_PHASE); }

Test(lib_sort, errors)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    tj_lib *l = tj_lib_open(j, &err);
    double x[4] = {0};
    int32_t idx[4];
    int64_t n = 4;
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F64, 1, &n), ti = tj_tensor_contiguous(idx, TJ_DT_I32, 1, &n);
    cr_assert_neq(tj_lib_argsort(l, &tx, &ti, 0, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "keys of dtype f64 are not supported"), "%s", err.msg);
    tx.dtype = TJ_DT_F32;
    cr_assert_neq(tj_lib_argsort(l, &tx, &ti, 0, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "the indices must be i64, not i32"), "%s", err.msg);
    cr_assert_neq(tj_lib_argsort(l, &tx, &ti, 0, 1u << 5, NULL, &err), 0);
    cr_assert(strstr(err.msg, "unknown flags"), "%s", err.msg);
    tj_lib_close(l);
    tj_jit_close(j);
}
