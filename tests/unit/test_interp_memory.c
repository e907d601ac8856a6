/* Views, loads, stores, gathers, scatters and atomics: bounds, masks,
 * `other`, strides (non-contiguous, negative, unaligned), duplicates. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tj_test_util.h"

static tj_type i32s(tt_kb *kb) { return tt_scalar(kb, TJ_DT_I32); }

/* out = x + y over N elements in programs of BLOCK: the last tile is partial. */
Test(memory, partial_tiles_touch_nothing_outside)
{
    enum { N = 100, BLOCK = 32, PROGRAMS = (N + BLOCK - 1) / BLOCK };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *out = malloc(sizeof(float) * (N + 4));
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 0.5f;
    }
    for (int i = 0; i < N + 4; i++)
        out[i] = -1;
    tt_kb kb;
    tt_begin(&kb, "add", PROGRAMS, 0, 0);
    tj_ref tx = tt_param(&kb, "x", TJ_DT_F32, "N"), ty = tt_param(&kb, "y", TJ_DT_F32, "N");
    tj_ref to = tt_param(&kb, "out", TJ_DT_F32, "N");
    tj_ref i = tt_bin(&kb, TJ_OP_MUL, tt_opi(&kb, TJ_OP_PROGRAM_ID, i32s(&kb), 0, 0), tt_ci(&kb, TJ_DT_I32, BLOCK));
    tj_ref s = tt_bin(&kb, TJ_OP_ADD, tt_load(&kb, tt_slice1(&kb, tx, i, BLOCK), TJ_NONE, TJ_NONE),
                      tt_load(&kb, tt_slice1(&kb, ty, i, BLOCK), TJ_NONE, TJ_NONE));
    tt_store(&kb, tt_slice1(&kb, to, i, BLOCK), s, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(x, TJ_DT_F32, 1, N), tt_tensor(y, TJ_DT_F32, 1, N), tt_tensor(out, TJ_DT_F32, 1, N)};
    cr_assert_eq(tt_run(&kb, args, 3), 0);
    tt_free(&kb);
    for (int k = 0; k < N; k++)
        cr_assert_eq(out[k], (float)k + 0.5f);
    for (int k = N; k < N + 4; k++)
        cr_assert_eq(out[k], -1.0f);
    free(x);
    free(y);
    free(out);
}

/* load(x[0:8], mask = arange < 5, other = ...) with a scalar and a tile other. */
Test(memory, mask_and_other)
{
    int32_t x[8] = {10, 11, 12, 13, 14, 15, 16, 17}, o1[8], o2[8], o3[8];
    tt_kb kb;
    tt_begin(&kb, "mask", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref tx = tt_param(&kb, "x", TJ_DT_I32, "8");
    tj_ref t1 = tt_param(&kb, "o1", TJ_DT_I32, "8"), t2 = tt_param(&kb, "o2", TJ_DT_I32, "8");
    tj_ref t3 = tt_param(&kb, "o3", TJ_DT_I32, "8");
    tj_type t8 = tt_tile(&kb, TJ_DT_I32, 1, 8);
    tj_ref ar = tt_op(&kb, TJ_OP_ARANGE, t8, 0);
    tj_ref mask = tt_bin(&kb, TJ_OP_LT, ar, tt_splat(&kb, tt_ci(&kb, TJ_DT_I32, 5), t8));
    tj_ref vx = tt_slice1(&kb, tx, zero, 8);
    tt_store(&kb, tt_slice1(&kb, t1, zero, 8), tt_load(&kb, vx, mask, tt_ci(&kb, TJ_DT_I32, -1)), TJ_NONE);
    tt_store(&kb, tt_slice1(&kb, t2, zero, 8), tt_load(&kb, vx, mask, tt_bin(&kb, TJ_OP_MUL, ar, ar)), TJ_NONE);
    tt_store(&kb, tt_slice1(&kb, t3, zero, 8), tt_load(&kb, vx, mask, TJ_NONE), TJ_NONE);
    /* a masked store: only the even positions of o3 become 0 */
    tj_ref even = tt_bin(&kb, TJ_OP_EQ, tt_bin(&kb, TJ_OP_REM, ar, tt_splat(&kb, tt_ci(&kb, TJ_DT_I32, 2), t8)),
                         tt_splat(&kb, zero, t8));
    tt_store(&kb, tt_slice1(&kb, t1, zero, 8), tt_splat(&kb, tt_ci(&kb, TJ_DT_I32, 0), t8), even);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(x, TJ_DT_I32, 1, 8), tt_tensor(o1, TJ_DT_I32, 1, 8), tt_tensor(o2, TJ_DT_I32, 1, 8),
                     tt_tensor(o3, TJ_DT_I32, 1, 8)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(o1[i], i % 2 == 0 ? 0 : i < 5 ? 10 + i : -1, "o1[%d] = %d", i, o1[i]);
        cr_assert_eq(o2[i], i < 5 ? 10 + i : i * i);
        cr_assert_eq(o3[i], i < 5 ? 10 + i : 0, "absent other is 0");
    }
}

/* Copies X[rows 0:R, cols 0:C] (any strides) into a contiguous out, from
 * row r0 and column c0 (out of bounds: `other` 7). */
static void copy2(const tj_tensor *src, int R, int C, int r0, int c0, float *out)
{
    tt_kb kb;
    tt_begin(&kb, "copy", 1, 0, 0);
    tj_ref tx = tt_param(&kb, "x", TJ_DT_F32, "M, N"), to = tt_param(&kb, "o", TJ_DT_F32, "R, C");
    int32_t axes[2] = {R, C};
    tj_type vt = tj_type_view(kb.c, TJ_DT_F32, 2, axes);
    tj_ref v = tt_view(&kb, vt, tx, 2, axes, tt_ci(&kb, TJ_DT_I32, r0), tt_ci(&kb, TJ_DT_I32, c0));
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tt_store(&kb, tt_view(&kb, vt, to, 2, axes, zero, zero), tt_load(&kb, v, TJ_NONE, tt_cf(&kb, TJ_DT_F32, 7)),
             TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {{.is_tensor = 1, .tensor = *src}, tt_tensor(out, TJ_DT_F32, 2, R, C)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
}

Test(memory, strides_transposed_negative_unaligned)
{
    float m[3 * 4], out[4 * 3];
    for (int i = 0; i < 12; i++)
        m[i] = (float)i;
    /* the transpose of a 3 x 4 row-major matrix: shape [4, 3], strides [1, 4] */
    tj_tensor t = {m, TJ_DT_F32, 2, {4, 3}, {1, 4}};
    copy2(&t, 4, 3, 0, 0, out);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(out[i * 3 + j], m[j * 4 + i]);
    /* rows reversed: data at the last row, row stride -4 */
    tj_tensor rev = {m + 8, TJ_DT_F32, 2, {3, 4}, {-4, 1}};
    copy2(&rev, 3, 4, 0, 0, out);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(out[i * 4 + j], m[(2 - i) * 4 + j]);
    /* a window hanging over the bottom-right corner: other there */
    tj_tensor plain = {m, TJ_DT_F32, 2, {3, 4}, {4, 1}};
    copy2(&plain, 3, 4, 1, 2, out);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(out[i * 4 + j], i + 1 < 3 && j + 2 < 4 ? m[(i + 1) * 4 + j + 2] : 7.0f);
    /* starting left of and above the tensor */
    copy2(&plain, 3, 4, -1, -3, out);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(out[i * 4 + j], i - 1 >= 0 && j - 3 >= 0 ? m[(i - 1) * 4 + j - 3] : 7.0f);
    /* float data at an odd address */
    unsigned char raw[sizeof m + 1];
    memcpy(raw + 1, m, sizeof m);
    tj_tensor odd = {raw + 1, TJ_DT_F32, 2, {3, 4}, {4, 1}};
    copy2(&odd, 3, 4, 0, 0, out);
    cr_assert(memcmp(out, m, sizeof m) == 0);
}

/* y[r, :] = x[r, 0:4] for r = program_id; index r out of range reads other. */
Test(memory, index_axis_out_of_range)
{
    float x[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4 * 4];
    tt_kb kb;
    tt_begin(&kb, "rows", 4, 0, 0);
    tj_ref tx = tt_param(&kb, "x", TJ_DT_F32, "2, 4"), ty = tt_param(&kb, "y", TJ_DT_F32, "4, 4");
    tj_ref r = tt_opi(&kb, TJ_OP_PROGRAM_ID, i32s(&kb), 0, 0), zero = tt_ci(&kb, TJ_DT_I32, 0);
    int32_t axes[2] = {TJ_VIEW_INDEX, 4}, four = 4;
    tj_type vt = tj_type_view(kb.c, TJ_DT_F32, 1, &four);
    tj_ref v = tt_load(&kb, tt_view(&kb, vt, tx, 2, axes, r, zero), TJ_NONE, tt_cf(&kb, TJ_DT_F32, -1));
    tt_store(&kb, tt_view(&kb, vt, ty, 2, axes, r, zero), v, TJ_NONE);
    /* and a store through an out-of-range index writes nothing */
    tt_store(&kb, tt_view(&kb, vt, tx, 2, axes, tt_bin(&kb, TJ_OP_ADD, r, tt_ci(&kb, TJ_DT_I32, 2)), zero), v, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(x, TJ_DT_F32, 2, 2, 4), tt_tensor(y, TJ_DT_F32, 2, 4, 4)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(y[i], i < 8 ? (float)(i + 1) : -1.0f);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(x[i], (float)(i + 1));
}

/* out[i, :] = T[rows[i], 0:D]; then scatter: S[rows[i], 0:D] = i (duplicates:
 * the last in row-major order wins; out-of-range rows are dropped). */
Test(memory, gather_and_scatter)
{
    enum { V = 5, D = 3, NR = 8 };
    float T[V * D], out[NR * D], S[V * D];
    for (int i = 0; i < V * D; i++) {
        T[i] = (float)i;
        S[i] = -1;
    }
    int32_t rows[NR] = {4, -1, 0, 5, 2, 2, 1000000, 4};
    tt_kb kb;
    tt_begin(&kb, "embed", 1, 0, 0);
    tj_ref tT = tt_param(&kb, "T", TJ_DT_F32, "V, D"), tr = tt_param(&kb, "rows", TJ_DT_I32, "N");
    tj_ref to = tt_param(&kb, "out", TJ_DT_F32, "N, D"), tS = tt_param(&kb, "S", TJ_DT_F32, "V, D");
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref idx = tt_load(&kb, tt_slice1(&kb, tr, zero, NR), TJ_NONE, TJ_NONE);
    int32_t gaxes[2] = {TJ_VIEW_GATHER, D}, shape[2] = {NR, D};
    tj_type vt = tj_type_view(kb.c, TJ_DT_F32, 2, shape);
    tj_ref g = tt_load(&kb, tt_view(&kb, vt, tT, 2, gaxes, idx, zero), TJ_NONE, TJ_NONE);
    tt_store(&kb, tt_view(&kb, vt, to, 2, shape, zero, zero), g, TJ_NONE);
    tj_type t2 = tt_tile(&kb, TJ_DT_I32, 2, NR, D);
    tj_ref pos = tt_op(&kb, TJ_OP_BROADCAST, t2, 1,
                       tt_op(&kb, TJ_OP_RESHAPE, tt_tile(&kb, TJ_DT_I32, 2, NR, 1), 1,
                             tt_op(&kb, TJ_OP_ARANGE, tt_tile(&kb, TJ_DT_I32, 1, NR), 0)));
    tt_store(&kb, tt_view(&kb, vt, tS, 2, gaxes, idx, zero), tt_cast(&kb, pos, TJ_DT_F32), TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(T, TJ_DT_F32, 2, V, D), tt_tensor(rows, TJ_DT_I32, 1, NR),
                     tt_tensor(out, TJ_DT_F32, 2, NR, D), tt_tensor(S, TJ_DT_F32, 2, V, D)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    for (int i = 0; i < NR; i++)
        for (int d = 0; d < D; d++) {
            int ok = rows[i] >= 0 && rows[i] < V;
            cr_assert_eq(out[i * D + d], ok ? T[rows[i] * D + d] : 0.0f, "out[%d, %d]", i, d);
        }
    float want[V] = {2, -1, 5, -1, 7}; /* row 2: positions 4 and 5, the last wins; row 4: 0 then 7 */
    for (int v = 0; v < V; v++)
        for (int d = 0; d < D; d++)
            cr_assert_eq(S[v * D + d], want[v], "S[%d, %d] = %g", v, d, S[v * D + d]);
}

/* Two gather axes share one shape: X[i, j] for tiles i, j picks elements. */
Test(memory, two_gather_axes)
{
    int16_t X[3 * 4], out[2 * 2];
    for (int i = 0; i < 12; i++)
        X[i] = (int16_t)(100 + i);
    int64_t I[4] = {0, 2, 1, 3}, J[4] = {3, 0, 4, 1};
    tt_kb kb;
    tt_begin(&kb, "pick", 1, 0, 0);
    tj_ref tX = tt_param(&kb, "X", TJ_DT_I16, "3, 4"), tI = tt_param(&kb, "I", TJ_DT_I64, "2, 2");
    tj_ref tJ = tt_param(&kb, "J", TJ_DT_I64, "2, 2"), to = tt_param(&kb, "o", TJ_DT_I16, "2, 2");
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    int32_t s22[2] = {2, 2}, gg[2] = {TJ_VIEW_GATHER, TJ_VIEW_GATHER};
    tj_ref vi = tt_load(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_I64, 2, s22), tI, 2, s22, zero, zero), TJ_NONE, TJ_NONE);
    tj_ref vj = tt_load(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_I64, 2, s22), tJ, 2, s22, zero, zero), TJ_NONE, TJ_NONE);
    tj_type vt = tj_type_view(kb.c, TJ_DT_I16, 2, s22);
    tj_ref g = tt_load(&kb, tt_view(&kb, vt, tX, 2, gg, vi, vj), TJ_NONE, tt_ci(&kb, TJ_DT_I16, -5));
    tt_store(&kb, tt_view(&kb, vt, to, 2, s22, zero, zero), g, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(X, TJ_DT_I16, 2, 3, 4), tt_tensor(I, TJ_DT_I64, 2, 2, 2), tt_tensor(J, TJ_DT_I64, 2, 2, 2),
                     tt_tensor(out, TJ_DT_I16, 2, 2, 2)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    cr_assert(out[0] == 103 && out[1] == 108 && out[2] == -5 && out[3] == -5, "%d %d %d %d", out[0], out[1], out[2],
              out[3]);
}

/* hist[idx[i]] += w[i] with duplicate and out-of-range indices; the old
 * values come back in order; masked-off and out-of-range lanes give 0. */
Test(memory, atomics_sequential_with_duplicates)
{
    enum { N = 8, B = 4 };
    int32_t idx[N] = {1, 3, 1, 1, -2, 0, 9, 3};
    int32_t hist[B] = {0, 100, 0, 5}, old[N];
    float fmaxv[B] = {0, 0, 0, 0}, fold[N];
    tt_kb kb;
    tt_begin(&kb, "hist", 1, 0, 0);
    tj_ref ti = tt_param(&kb, "idx", TJ_DT_I32, "N"), th = tt_param(&kb, "hist", TJ_DT_I32, "B");
    tj_ref told = tt_param(&kb, "old", TJ_DT_I32, "N"), tf = tt_param(&kb, "fm", TJ_DT_F32, "B");
    tj_ref tfo = tt_param(&kb, "fold", TJ_DT_F32, "N");
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref vi = tt_load(&kb, tt_slice1(&kb, ti, zero, N), TJ_NONE, TJ_NONE);
    int32_t g = TJ_VIEW_GATHER, n = N;
    tj_type t8 = tt_tile(&kb, TJ_DT_I32, 1, N);
    tj_ref ar = tt_op(&kb, TJ_OP_ARANGE, t8, 0);
    tj_ref mask = tt_bin(&kb, TJ_OP_NE, ar, tt_splat(&kb, tt_ci(&kb, TJ_DT_I32, 2), t8)); /* lane 2 off */
    tj_ref hv = tt_view(&kb, tj_type_view(kb.c, TJ_DT_I32, 1, &n), th, 1, &g, vi);
    tj_ref o = tt_op(&kb, TJ_OP_ATOMIC_ADD, t8, 3, hv, tt_splat(&kb, tt_ci(&kb, TJ_DT_I32, 1), t8), mask);
    tt_store(&kb, tt_slice1(&kb, told, zero, N), o, TJ_NONE);
    tj_ref fv = tt_view(&kb, tj_type_view(kb.c, TJ_DT_F32, 1, &n), tf, 1, &g, vi);
    tj_type f8 = tt_tile(&kb, TJ_DT_F32, 1, N);
    tj_ref fo = tt_op(&kb, TJ_OP_ATOMIC_MAX, f8, 3, fv, tt_cast(&kb, ar, TJ_DT_F32), TJ_NONE);
    tt_store(&kb, tt_slice1(&kb, tfo, zero, N), fo, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(idx, TJ_DT_I32, 1, N), tt_tensor(hist, TJ_DT_I32, 1, B), tt_tensor(old, TJ_DT_I32, 1, N),
                     tt_tensor(fmaxv, TJ_DT_F32, 1, B), tt_tensor(fold, TJ_DT_F32, 1, N)};
    cr_assert_eq(tt_run(&kb, args, 5), 0);
    tt_free(&kb);
    int32_t want_hist[B] = {1, 102, 0, 7}, want_old[N] = {100, 5, 0, 101, 0, 0, 0, 6};
    for (int i = 0; i < B; i++)
        cr_assert_eq(hist[i], want_hist[i], "hist[%d] = %d", i, hist[i]);
    for (int i = 0; i < N; i++)
        cr_assert_eq(old[i], want_old[i], "old[%d] = %d", i, old[i]);
    float want_f[B] = {5, 3, 0, 7}, want_fold[N] = {0, 0, 0, 2, 0, 0, 0, 1};
    for (int i = 0; i < B; i++)
        cr_assert_eq(fmaxv[i], want_f[i]);
    for (int i = 0; i < N; i++)
        cr_assert_eq(fold[i], want_fold[i], "fold[%d] = %g", i, fold[i]);
}

/* Narrow dtypes in memory: bool, u8, f16, bf16 and atomic_min on f16. */
Test(memory, narrow_dtypes_round_trip)
{
    uint8_t b[4] = {0, 1, 7, 0}, bo[4];
    uint16_t h[4] = {0x3c00, 0x8000, 0x7c00, 0x0001}, ho[4];
    tt_kb kb;
    tt_begin(&kb, "narrow", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref tb = tt_param(&kb, "b", TJ_DT_BOOL, "4"), tbo = tt_param(&kb, "bo", TJ_DT_BOOL, "4");
    tj_ref th = tt_param(&kb, "h", TJ_DT_F16, "4"), tho = tt_param(&kb, "ho", TJ_DT_F16, "4");
    tj_ref vb = tt_load(&kb, tt_slice1(&kb, tb, zero, 4), TJ_NONE, TJ_NONE);
    tt_store(&kb, tt_slice1(&kb, tbo, zero, 4), tt_un(&kb, TJ_OP_NOT, vb), TJ_NONE);
    tj_ref vh = tt_load(&kb, tt_slice1(&kb, th, zero, 4), TJ_NONE, TJ_NONE);
    tt_store(&kb, tt_slice1(&kb, tho, zero, 4), vh, TJ_NONE);
    tj_type h4 = tt_tile(&kb, TJ_DT_F16, 1, 4);
    tt_op(&kb, TJ_OP_ATOMIC_MIN, h4, 3, tt_slice1(&kb, th, zero, 4), tt_splat(&kb, tt_cf(&kb, TJ_DT_F16, 0.5), h4),
          TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(b, TJ_DT_BOOL, 1, 4), tt_tensor(bo, TJ_DT_BOOL, 1, 4), tt_tensor(h, TJ_DT_F16, 1, 4),
                     tt_tensor(ho, TJ_DT_F16, 1, 4)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    cr_assert(bo[0] == 1 && bo[1] == 0 && bo[2] == 0 && bo[3] == 1, "nonzero bytes are true");
    cr_assert(ho[0] == 0x3c00 && ho[1] == 0x8000 && ho[2] == 0x7c00 && ho[3] == 0x0001);
    cr_assert(h[0] == 0x3800 && h[1] == 0x8000 && h[2] == 0x3800 && h[3] == 0x0001);
}
