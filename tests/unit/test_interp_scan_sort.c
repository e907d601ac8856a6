/* cumsum, cumprod, scan with a combine region (the linear recurrence of
 * DSL.md), and stable sort with values, descending order and NaN. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tj_test_util.h"

static tj_ref load2(tt_kb *kb, tj_ref t, tj_dtype dt, int R, int C)
{
    int32_t axes[2] = {R, C};
    tj_ref zero = tt_ci(kb, TJ_DT_I32, 0);
    return tt_load(kb, tt_view(kb, tj_type_view(kb->c, dt, 2, axes), t, 2, axes, zero, zero), TJ_NONE, TJ_NONE);
}

static void store2(tt_kb *kb, tj_ref t, tj_dtype dt, int R, int C, tj_ref v)
{
    int32_t axes[2] = {R, C};
    tj_ref zero = tt_ci(kb, TJ_DT_I32, 0);
    tt_store(kb, tt_view(kb, tj_type_view(kb->c, dt, 2, axes), t, 2, axes, zero, zero), v, TJ_NONE);
}

/* out = op(x, axis) for cumsum/cumprod on dt[R, C]. */
static void run_cum(tj_op op, tj_dtype dt, int axis, const void *x, void *out, int R, int C)
{
    tt_kb kb;
    tt_begin(&kb, "cum", 1, 0, 0);
    tj_ref tx = tt_param(&kb, "x", dt, "R, C"), to = tt_param(&kb, "y", dt, "R, C");
    tj_ref v = load2(&kb, tx, dt, R, C);
    store2(&kb, to, dt, R, C, tt_opi(&kb, op, tt_type(&kb, v), axis, 1, v));
    tt_end(&kb);
    tj_arg args[] = {tt_tensor((void *)x, dt, 2, R, C), tt_tensor(out, dt, 2, R, C)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
}

Test(scan, cumsum_cumprod_each_axis)
{
    enum { R = 3, C = 4 };
    int32_t x[R * C], out[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = i % 5 - 1;
    for (int axis = 0; axis < 2; axis++) {
        run_cum(TJ_OP_CUMSUM, TJ_DT_I32, axis, x, out, R, C);
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                int32_t s = 0;
                for (int j = 0; j <= (axis ? c : r); j++)
                    s += axis ? x[r * C + j] : x[j * C + c];
                cr_assert_eq(out[r * C + c], s, "cumsum axis %d [%d, %d]", axis, r, c);
            }
    }
    float f[R * C], fo[R * C];
    for (int i = 0; i < R * C; i++)
        f[i] = 0.5f + (float)i;
    run_cum(TJ_OP_CUMPROD, TJ_DT_F32, 1, f, fo, R, C);
    for (int r = 0; r < R; r++) {
        float p = 1;
        for (int c = 0; c < C; c++) {
            p = c ? p * f[r * C + c] : f[r * C];
            cr_assert_eq(fo[r * C + c], p);
        }
    }
}

Test(scan, cumsum_f16_accumulates_in_f32)
{
    enum { N = 3000 };
    static uint16_t x[N], out[N];
    for (int i = 0; i < N; i++)
        x[i] = tj_f32_to_f16(1.0f);
    run_cum(TJ_OP_CUMSUM, TJ_DT_F16, 1, x, out, 1, N);
    cr_assert_eq(tj_f16_to_f32(out[2049]), 2050.0f, "2050 is an f16; an f16 accumulator sticks at 2048");
    cr_assert_eq(tj_f16_to_f32(out[2050]), tj_f16_to_f32(tj_f32_to_f16(2051.0f)));
}

/* h[t] = a[t] * h[t-1] + b[t] along the rows of [R, L], through
 * scan(a, b) with combine (a1, b1, a2, b2) -> (a1 * a2, a2 * b1 + b2). */
Test(scan, linear_recurrence_combine_region)
{
    enum { R = 3, L = 37 };
    float a[R * L], b[R * L], h[R * L], prod[R * L];
    for (int i = 0; i < R * L; i++) {
        a[i] = 0.9f + 0.01f * (float)(i % 7);
        b[i] = (float)(i % 5) - 2.0f;
    }
    tt_kb kb;
    tt_begin(&kb, "recurrence", 1, 0, 0);
    tj_ref ta = tt_param(&kb, "A", TJ_DT_F32, "R, L"), tb = tt_param(&kb, "B", TJ_DT_F32, "R, L");
    tj_ref th = tt_param(&kb, "H", TJ_DT_F32, "R, L"), tp = tt_param(&kb, "P", TJ_DT_F32, "R, L");
    tj_ref va = load2(&kb, ta, TJ_DT_F32, R, L), vb = load2(&kb, tb, TJ_DT_F32, R, L);
    tj_ref s = tt_scan(&kb, 1, 2, va, vb);
    tj_ref a1 = tt_barg(&kb, 0), b1 = tt_barg(&kb, 1), a2 = tt_barg(&kb, 2), b2 = tt_barg(&kb, 3);
    tj_ref na = tt_bin(&kb, TJ_OP_MUL, a1, a2);
    tj_ref nb = tt_bin(&kb, TJ_OP_ADD, tt_bin(&kb, TJ_OP_MUL, a2, b1), b2);
    tt_yield(&kb, 2, na, nb);
    store2(&kb, th, TJ_DT_F32, R, L, tt_proj(&kb, s, 1));
    store2(&kb, tp, TJ_DT_F32, R, L, tt_proj(&kb, s, 0));
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(a, TJ_DT_F32, 2, R, L), tt_tensor(b, TJ_DT_F32, 2, R, L),
                     tt_tensor(h, TJ_DT_F32, 2, R, L), tt_tensor(prod, TJ_DT_F32, 2, R, L)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    for (int r = 0; r < R; r++) {
        float hp = 0, ap = 1;
        for (int t = 0; t < L; t++) {
            hp = a[r * L + t] * hp + b[r * L + t];
            ap = t ? ap * a[r * L + t] : a[r * L];
            cr_assert_eq(h[r * L + t], hp, "h[%d, %d]", r, t);
            cr_assert_eq(prod[r * L + t], ap, "prod a[%d, %d]", r, t);
        }
    }
}

Test(scan, combine_along_axis_0_mixed_dtypes)
{
    /* running (max, count of maxima updates) down the columns: i32 and f32 */
    enum { R = 5, C = 2 };
    float x[R * C] = {1, 9, 3, 2, 2, 8, 7, 10, 0, 1}, mx[R * C];
    int32_t ones[R * C], cnt[R * C];
    for (int i = 0; i < R * C; i++)
        ones[i] = 1;
    tt_kb kb;
    tt_begin(&kb, "scan0", 1, 0, 0);
    tj_ref tx = tt_param(&kb, "x", TJ_DT_F32, "R, C"), tn = tt_param(&kb, "n", TJ_DT_I32, "R, C");
    tj_ref tm = tt_param(&kb, "m", TJ_DT_F32, "R, C"), tc = tt_param(&kb, "c", TJ_DT_I32, "R, C");
    tj_ref vx = load2(&kb, tx, TJ_DT_F32, R, C), vn = load2(&kb, tn, TJ_DT_I32, R, C);
    tj_ref s = tt_scan(&kb, 0, 2, vx, vn);
    tj_ref x1 = tt_barg(&kb, 0), n1 = tt_barg(&kb, 1), x2 = tt_barg(&kb, 2), n2 = tt_barg(&kb, 3);
    tt_yield(&kb, 2, tt_bin(&kb, TJ_OP_MAX, x1, x2), tt_bin(&kb, TJ_OP_ADD, n1, n2));
    store2(&kb, tm, TJ_DT_F32, R, C, tt_proj(&kb, s, 0));
    store2(&kb, tc, TJ_DT_I32, R, C, tt_proj(&kb, s, 1));
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(x, TJ_DT_F32, 2, R, C), tt_tensor(ones, TJ_DT_I32, 2, R, C),
                     tt_tensor(mx, TJ_DT_F32, 2, R, C), tt_tensor(cnt, TJ_DT_I32, 2, R, C)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    for (int c = 0; c < C; c++) {
        float m = x[c];
        for (int r = 0; r < R; r++) {
            m = x[r * C + c] > m ? x[r * C + c] : m;
            cr_assert(mx[r * C + c] == m && cnt[r * C + c] == r + 1, "[%d, %d]", r, c);
        }
    }
}

/* sort keys (and values = original positions) of dt[R, C] along axis. */
static void run_sort(tj_dtype dt, int axis, int descending, const void *keys, void *kout, int32_t *vout, int R, int C)
{
    tt_kb kb;
    tt_begin(&kb, "sort", 1, 0, 0);
    tj_ref tk = tt_param(&kb, "k", dt, "R, C"), tko = tt_param(&kb, "ko", dt, "R, C");
    tj_ref tvo = tt_param(&kb, "vo", TJ_DT_I32, "R, C");
    tj_ref k = load2(&kb, tk, dt, R, C);
    tj_type ti = tt_tile(&kb, TJ_DT_I32, 2, R, C);
    tj_ref pos = axis ? tt_op(&kb, TJ_OP_BROADCAST, ti, 1, tt_op(&kb, TJ_OP_ARANGE, tt_tile(&kb, TJ_DT_I32, 1, C), 0))
                      : tt_op(&kb, TJ_OP_BROADCAST, ti, 1,
                              tt_op(&kb, TJ_OP_RESHAPE, tt_tile(&kb, TJ_DT_I32, 2, R, 1), 1,
                                    tt_op(&kb, TJ_OP_ARANGE, tt_tile(&kb, TJ_DT_I32, 1, R), 0)));
    tj_type types[2] = {tt_type(&kb, k), ti};
    tj_ref s = tt_opi(&kb, TJ_OP_SORT, tj_type_tuple(kb.c, 2, types), axis, 2, k, pos);
    kb.k->insts[s].flags = descending ? TJ_SORT_DESCENDING : 0;
    store2(&kb, tko, dt, R, C, tt_proj(&kb, s, 0));
    store2(&kb, tvo, TJ_DT_I32, R, C, tt_proj(&kb, s, 1));
    tt_end(&kb);
    tj_arg args[] = {tt_tensor((void *)keys, dt, 2, R, C), tt_tensor(kout, dt, 2, R, C),
                     tt_tensor(vout, TJ_DT_I32, 2, R, C)};
    cr_assert_eq(tt_run(&kb, args, 3), 0);
    tt_free(&kb);
}

/* A reference stable sort: insertion sort by `before`. */
static int before_f(float a, float b, int desc)
{
    if (isnan(a) || isnan(b))
        return desc ? isnan(a) && !isnan(b) : !isnan(a) && isnan(b);
    return desc ? a > b : a < b;
}

static void check_sorted_f32(const float *keys, const float *kout, const int32_t *vout, int n, int desc)
{
    int32_t idx[64];
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && before_f(keys[i], keys[idx[j - 1]], desc)) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    for (int i = 0; i < n; i++) {
        cr_assert_eq(vout[i], idx[i], "position %d: value %d, expected %d", i, vout[i], idx[i]);
        cr_assert(memcmp(&kout[i], &keys[idx[i]], sizeof(float)) == 0 || (isnan(kout[i]) && isnan(keys[idx[i]])));
    }
}

Test(sort, stable_with_values_nan_and_zeros)
{
    float k[12] = {3, NAN, -1, 3, INFINITY, -0.0f, 0.0f, -INFINITY, 3, NAN, -1, 0.0f};
    float ko[12];
    int32_t vo[12];
    run_sort(TJ_DT_F32, 1, 0, k, ko, vo, 1, 12);
    check_sorted_f32(k, ko, vo, 12, 0);
    cr_assert(isnan(ko[10]) && isnan(ko[11]) && ko[9] == INFINITY, "NaN sorts above +inf");
    cr_assert(vo[3] == 5 && vo[4] == 6 && vo[5] == 11, "-0 and +0 keep their order");
    run_sort(TJ_DT_F32, 1, 1, k, ko, vo, 1, 12);
    check_sorted_f32(k, ko, vo, 12, 1);
    cr_assert(isnan(ko[0]) && vo[0] == 1 && vo[1] == 9, "descending: NaN first, equal keys in order");
    cr_assert(vo[3] == 0 && vo[4] == 3 && vo[5] == 8, "descending stays stable");
}

Test(sort, integers_along_each_axis)
{
    enum { R = 4, C = 3 };
    int8_t k[R * C] = {5, -3, 5, -128, 127, 0, 5, 0, -3, 1, 1, 1}, ko[R * C];
    int32_t vo[R * C];
    run_sort(TJ_DT_I8, 0, 0, k, ko, vo, R, C);
    int8_t want0[R * C] = {-128, -3, -3, 1, 0, 0, 5, 1, 1, 5, 127, 5};
    int32_t wv0[R * C] = {1, 0, 2, 3, 2, 1, 0, 3, 3, 2, 1, 0};
    for (int i = 0; i < R * C; i++)
        cr_assert(ko[i] == want0[i] && vo[i] == wv0[i], "axis 0 [%d]: %d/%d", i, ko[i], vo[i]);
    run_sort(TJ_DT_I8, 1, 1, k, ko, vo, R, C);
    int8_t want1[R * C] = {5, 5, -3, 127, 0, -128, 5, 0, -3, 1, 1, 1};
    int32_t wv1[R * C] = {0, 2, 1, 1, 2, 0, 0, 1, 2, 0, 1, 2};
    for (int i = 0; i < R * C; i++)
        cr_assert(ko[i] == want1[i] && vo[i] == wv1[i], "axis 1 desc [%d]: %d/%d", i, ko[i], vo[i]);
    uint32_t u[4] = {0x80000000u, 1, 0xffffffffu, 0}, uo[4];
    int32_t uv[4];
    run_sort(TJ_DT_U32, 1, 0, u, uo, uv, 1, 4);
    cr_assert(uo[0] == 0 && uo[1] == 1 && uo[2] == 0x80000000u && uo[3] == 0xffffffffu, "unsigned order");
}

Test(sort, long_rows_match_reference)
{
    enum { N = 61 };
    float k[N], ko[N];
    int32_t vo[N];
    for (int i = 0; i < N; i++)
        k[i] = (float)((i * 7919) % 13) - 6.0f; /* many duplicates */
    k[17] = NAN;
    run_sort(TJ_DT_F32, 1, 0, k, ko, vo, 1, N);
    check_sorted_f32(k, ko, vo, N, 0);
    run_sort(TJ_DT_F32, 1, 1, k, ko, vo, 1, N);
    check_sorted_f32(k, ko, vo, N, 1);
}

Test(sort, keys_alone)
{
    double k[5] = {2.5, -1, NAN, 0, -7}, ko[5];
    tt_kb kb;
    tt_begin(&kb, "sortk", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref x = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "k", TJ_DT_F64, "N"), zero, 5), TJ_NONE, TJ_NONE);
    tj_ref s = tt_opi(&kb, TJ_OP_SORT, tt_type(&kb, x), 0, 1, x);
    tt_store(&kb, tt_slice1(&kb, tt_param(&kb, "o", TJ_DT_F64, "N"), zero, 5), s, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(k, TJ_DT_F64, 1, 5), tt_tensor(ko, TJ_DT_F64, 1, 5)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
    cr_assert(ko[0] == -7 && ko[1] == -1 && ko[2] == 0 && ko[3] == 2.5 && isnan(ko[4]));
}
