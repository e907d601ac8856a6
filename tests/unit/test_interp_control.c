/* for (carried values, step 0, negative steps, swaps), if (merges, no
 * else), scalar parameters, the grid, and the limits that make a run an
 * error instead of a hang or a crash. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tj_test_util.h"

static tj_type i32s(tt_kb *kb) { return tt_scalar(kb, TJ_DT_I32); }

/* Stores a scalar into element `at` of a rank-1 tensor. */
static void store_at(tt_kb *kb, tj_ref t, int at, tj_ref v)
{
    int32_t idx = TJ_VIEW_INDEX;
    tj_dtype dt = tj_type_get(kb->c, tt_type(kb, v))->dtype;
    tt_store(kb, tt_view(kb, tj_type_view(kb->c, dt, 0, NULL), t, 1, &idx, tt_ci(kb, TJ_DT_I32, at)), v, TJ_NONE);
}

/* for i in range(lo, hi, step) carrying (sum of i, count, last i). */
static void run_range(int32_t lo, int32_t hi, int32_t step, int32_t out[3])
{
    tt_kb kb;
    tt_begin(&kb, "range", 1, 0, 0);
    tj_ref plo = tt_param(&kb, "lo", TJ_DT_I32, NULL), phi = tt_param(&kb, "hi", TJ_DT_I32, NULL);
    tj_ref pst = tt_param(&kb, "step", TJ_DT_I32, NULL), to = tt_param(&kb, "out", TJ_DT_I32, "3");
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0), minus = tt_ci(&kb, TJ_DT_I32, -777);
    tj_ref loop = tt_for(&kb, plo, phi, pst, 3, zero, zero, minus);
    tj_ref i = tt_barg(&kb, 0), s = tt_barg(&kb, 1), n = tt_barg(&kb, 2);
    tt_yield(&kb, 3, tt_bin(&kb, TJ_OP_ADD, s, i), tt_bin(&kb, TJ_OP_ADD, n, tt_ci(&kb, TJ_DT_I32, 1)), i);
    for (int k = 0; k < 3; k++)
        store_at(&kb, to, k, tt_proj(&kb, loop, (uint32_t)k));
    tt_end(&kb);
    tj_arg args[] = {tt_int(lo), tt_int(hi), tt_int(step), tt_tensor(out, TJ_DT_I32, 1, 3)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
}

Test(control, for_ranges_like_python)
{
    int32_t cases[][3] = {{0, 10, 1}, {0, 10, 3}, {10, 0, -3}, {5, 5, 1}, {5, 0, 1}, {0, 5, -1},
                          {0, 10, 0}, {-7, 7, 2}, {3, -4, -1}, {INT32_MIN, INT32_MIN + 5, 2},
                          {INT32_MAX - 3, INT32_MAX, 1}, {0, 5, 100}, {-2147483647, 2147483647, 1073741824}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int32_t lo = cases[c][0], hi = cases[c][1], step = cases[c][2], out[3];
        run_range(lo, hi, step, out);
        uint32_t sum = 0;
        int32_t n = 0, last = -777;
        for (int64_t i = lo; step && (step > 0 ? i < hi : i > hi); i += step) {
            sum += (uint32_t)i;
            n++;
            last = (int32_t)i;
        }
        cr_assert(out[0] == (int32_t)sum && out[1] == n && out[2] == last,
                  "range(%d, %d, %d): got %d %d %d, want %d %d %d", lo, hi, step, out[0], out[1], out[2],
                  (int32_t)sum, n, last);
    }
}

/* Carried values that swap and feed each other: (a, b) -> (b, a + b), and
 * (x, y) -> (y, x), need the yields copied before any argument changes. */
Test(control, carried_values_swap)
{
    int64_t out[4];
    tt_kb kb;
    tt_begin(&kb, "fib", 1, 0, 0);
    tj_ref to = tt_param(&kb, "out", TJ_DT_I64, "4");
    tj_type t2 = tt_tile(&kb, TJ_DT_I64, 1, 2);
    tj_ref one = tt_ci(&kb, TJ_DT_I64, 1), zero = tt_ci(&kb, TJ_DT_I64, 0);
    tj_ref x0 = tt_splat(&kb, tt_ci(&kb, TJ_DT_I64, 10), t2), y0 = tt_splat(&kb, tt_ci(&kb, TJ_DT_I64, 20), t2);
    tj_ref loop = tt_for(&kb, tt_ci(&kb, TJ_DT_I32, 0), tt_ci(&kb, TJ_DT_I32, 90), tt_ci(&kb, TJ_DT_I32, 1), 4, zero,
                         one, x0, y0);
    tj_ref a = tt_barg(&kb, 1), b = tt_barg(&kb, 2), x = tt_barg(&kb, 3), y = tt_barg(&kb, 4);
    tt_yield(&kb, 4, b, tt_bin(&kb, TJ_OP_ADD, a, b), y, x);
    store_at(&kb, to, 0, tt_proj(&kb, loop, 0));
    store_at(&kb, to, 1, tt_proj(&kb, loop, 1));
    tj_ref x2 = tt_proj(&kb, loop, 2), y2 = tt_proj(&kb, loop, 3);
    store_at(&kb, to, 2, tt_opi(&kb, TJ_OP_REDUCE_SUM, tt_scalar(&kb, TJ_DT_I64), -1, 1, x2));
    store_at(&kb, to, 3, tt_opi(&kb, TJ_OP_REDUCE_SUM, tt_scalar(&kb, TJ_DT_I64), -1, 1, y2));
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(out, TJ_DT_I64, 1, 4)};
    cr_assert_eq(tt_run(&kb, args, 1), 0);
    tt_free(&kb);
    int64_t fa = 0, fb = 1;
    for (int i = 0; i < 90; i++) {
        int64_t t = fa + fb;
        fa = fb;
        fb = t;
    }
    cr_assert(out[0] == fa && out[1] == fb, "fib: %lld %lld", (long long)out[0], (long long)out[1]);
    cr_assert(out[2] == 20 && out[3] == 40, "an even number of swaps: %lld %lld", (long long)out[2], (long long)out[3]);
}

/* acc over i in [0, 4), j in [0, 3): (i + j) even ? acc + i * j : acc - 1,
 * with the if inside the inner loop merging one value. */
Test(control, nested_loops_and_if_merge)
{
    int32_t out[1];
    tt_kb kb;
    tt_begin(&kb, "nest", 1, 0, 0);
    tj_ref to = tt_param(&kb, "out", TJ_DT_I32, "1");
    tj_ref c0 = tt_ci(&kb, TJ_DT_I32, 0), c1 = tt_ci(&kb, TJ_DT_I32, 1), c2 = tt_ci(&kb, TJ_DT_I32, 2);
    tj_ref outer = tt_for(&kb, c0, tt_ci(&kb, TJ_DT_I32, 4), c1, 1, c0);
    tj_ref i = tt_barg(&kb, 0), acc_o = tt_barg(&kb, 1);
    tj_ref inner = tt_for(&kb, c0, tt_ci(&kb, TJ_DT_I32, 3), c1, 1, acc_o);
    tj_ref j = tt_barg(&kb, 0), acc = tt_barg(&kb, 1);
    tj_ref even = tt_bin(&kb, TJ_OP_EQ, tt_bin(&kb, TJ_OP_REM, tt_bin(&kb, TJ_OP_ADD, i, j), c2), c0);
    tj_type t1[1] = {i32s(&kb)};
    tj_ref br = tt_if(&kb, even, 1, t1);
    tt_yield(&kb, 1, tt_bin(&kb, TJ_OP_ADD, acc, tt_bin(&kb, TJ_OP_MUL, i, j)));
    tt_else(&kb);
    tt_yield(&kb, 1, tt_bin(&kb, TJ_OP_SUB, acc, c1));
    tt_yield(&kb, 1, tt_proj(&kb, br, 0));
    tt_yield(&kb, 1, tt_proj(&kb, inner, 0));
    store_at(&kb, to, 0, tt_proj(&kb, outer, 0));
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(out, TJ_DT_I32, 1, 1)};
    cr_assert_eq(tt_run(&kb, args, 1), 0);
    tt_free(&kb);
    int32_t want = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            want = (a + b) % 2 == 0 ? want + a * b : want - 1;
    cr_assert_eq(out[0], want);
}

/* Program p stores tile a or tile b (if merge of tiles), and only the even
 * programs store a marker (if without else or results). */
Test(control, if_tiles_and_if_without_else)
{
    enum { P = 5, W = 4 };
    float out[P * W];
    int32_t mark[P] = {0};
    tt_kb kb;
    tt_begin(&kb, "branch", P, 0, 0);
    tj_ref to = tt_param(&kb, "out", TJ_DT_F32, "P, W"), tm = tt_param(&kb, "mark", TJ_DT_I32, "P");
    tj_ref p = tt_opi(&kb, TJ_OP_PROGRAM_ID, i32s(&kb), 0, 0), c0 = tt_ci(&kb, TJ_DT_I32, 0);
    tj_type tw = tt_tile(&kb, TJ_DT_F32, 1, W);
    tj_ref even = tt_bin(&kb, TJ_OP_EQ, tt_bin(&kb, TJ_OP_REM, p, tt_ci(&kb, TJ_DT_I32, 2)), c0);
    tj_ref a = tt_cast(&kb, tt_op(&kb, TJ_OP_ARANGE, tt_tile(&kb, TJ_DT_I32, 1, W), 0), TJ_DT_F32);
    tj_ref br = tt_if(&kb, even, 1, &tw);
    tt_yield(&kb, 1, a);
    tt_else(&kb);
    tt_yield(&kb, 1, tt_un(&kb, TJ_OP_NEG, tt_splat(&kb, tt_cast(&kb, p, TJ_DT_F32), tw)));
    int32_t axes[2] = {TJ_VIEW_INDEX, W}, w = W;
    tt_store(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_F32, 1, &w), to, 2, axes, p, c0), tt_proj(&kb, br, 0), TJ_NONE);
    tt_if(&kb, even, 0, NULL);
    int32_t idx = TJ_VIEW_INDEX;
    tt_store(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_I32, 0, NULL), tm, 1, &idx, p), tt_ci(&kb, TJ_DT_I32, 1), TJ_NONE);
    tt_yield(&kb, 0);
    tt_else(&kb); /* the IR always has both blocks; an empty else */
    tt_yield(&kb, 0);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(out, TJ_DT_F32, 2, P, W), tt_tensor(mark, TJ_DT_I32, 1, P)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
    for (int q = 0; q < P; q++) {
        for (int e = 0; e < W; e++)
            cr_assert_eq(out[q * W + e], q % 2 == 0 ? (float)e : -(float)q);
        cr_assert_eq(mark[q], q % 2 == 0);
    }
}

/* y = x * scale + bias with f32, f16 and i8 scalar parameters. */
Test(control, scalar_parameters)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    uint16_t h[1];
    int8_t i8[1];
    tt_kb kb;
    tt_begin(&kb, "scale", 1, 0, 0);
    tj_ref tx = tt_param(&kb, "x", TJ_DT_F32, "4"), ty = tt_param(&kb, "y", TJ_DT_F32, "4");
    tj_ref scale = tt_param(&kb, "scale", TJ_DT_F32, NULL), hs = tt_param(&kb, "hs", TJ_DT_F16, NULL);
    tj_ref bias = tt_param(&kb, "bias", TJ_DT_I8, NULL);
    tj_ref th = tt_param(&kb, "h", TJ_DT_F16, "1"), ti = tt_param(&kb, "i", TJ_DT_I8, "1");
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_type t4 = tt_tile(&kb, TJ_DT_F32, 1, 4);
    tj_ref v = tt_load(&kb, tt_slice1(&kb, tx, zero, 4), TJ_NONE, TJ_NONE);
    tj_ref r = tt_bin(&kb, TJ_OP_ADD, tt_bin(&kb, TJ_OP_MUL, v, tt_splat(&kb, scale, t4)),
                      tt_splat(&kb, tt_cast(&kb, bias, TJ_DT_F32), t4));
    tt_store(&kb, tt_slice1(&kb, ty, zero, 4), r, TJ_NONE);
    store_at(&kb, th, 0, hs);
    store_at(&kb, ti, 0, bias);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(x, TJ_DT_F32, 1, 4), tt_tensor(y, TJ_DT_F32, 1, 4), tt_float(0.1), tt_float(0.1),
                     tt_int(-3), tt_tensor(h, TJ_DT_F16, 1, 1), tt_tensor(i8, TJ_DT_I8, 1, 1)};
    cr_assert_eq(tt_run(&kb, args, 7), 0);
    tt_free(&kb);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(y[k], x[k] * 0.1f + -3.0f, "scale is rounded to f32 first");
    cr_assert_eq(h[0], tj_f64_to_f16(0.1));
    cr_assert_eq(i8[0], -3);
}

/* grid (cdiv(N, 32), mul) from a dim: an empty grid runs nothing;
 * negative and huge grids are errors. */
static tj_kernel *grid_kernel(tt_kb *kb, int64_t mul)
{
    tt_begin(kb, "grid", 1, 0, 0);
    tt_param(kb, "x", TJ_DT_F32, "N");
    tt_end(kb);
    tj_block_id g = kb->k->grid;
    kb->k->blocks[g].ninsts = 0; /* replace the constant grid */
    kb->stack[0] = g;
    tj_ref n = tt_opi(kb, TJ_OP_DIM, i32s(kb), 0, 1, tt_param_ref(kb, 0));
    tj_ref q = tt_bin(kb, TJ_OP_DIV, tt_bin(kb, TJ_OP_ADD, n, tt_ci(kb, TJ_DT_I32, 31)), tt_ci(kb, TJ_DT_I32, 32));
    tj_ref m = tt_ci(kb, TJ_DT_I32, mul);
    tt_op(kb, TJ_OP_YIELD, TJ_TYPE_NONE, 2, q, m);
    return kb->k;
}

Test(control, grid_from_dims_and_limits)
{
    float x[100];
    tt_kb kb;
    tj_kernel *k = grid_kernel(&kb, 3);
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(kb.c));
    int64_t grid[3];
    tj_arg args[] = {tt_tensor(x, TJ_DT_F32, 1, 100)};
    cr_assert_eq(tj_eval_grid(k, args, 1, grid), 0);
    cr_assert(grid[0] == 4 && grid[1] == 3 && grid[2] == 1);
    cr_assert_eq(tj_interp_run(k, args, 1), 0);
    tj_arg empty[] = {tt_tensor(NULL, TJ_DT_F32, 1, 0)};
    cr_assert_eq(tj_eval_grid(k, empty, 1, grid), 0, "an empty launch");
    cr_assert(grid[0] == 0 && grid[1] == 3);
    cr_assert_eq(tj_interp_run(k, empty, 1), 0, "runs nothing");
    tt_free(&kb);

    k = grid_kernel(&kb, -2);
    cr_assert_neq(tj_eval_grid(k, args, 1, grid), 0);
    cr_assert(strstr(tj_diag_render(kb.c), "grid axis 1 is -2; it must not be negative"), "%s", tj_diag_render(kb.c));
    tt_free(&kb);

    k = grid_kernel(&kb, 1 << 30);
    tj_diag_clear(kb.c);
    cr_assert_neq(tj_eval_grid(k, args, 1, grid), 0);
    cr_assert(strstr(tj_diag_render(kb.c), "more than 2^31 programs"), "%s", tj_diag_render(kb.c));
    tt_free(&kb);
}

/* Regions nested deeper than the interpreter's limit: an error, not a
 * stack overflow. */
Test(control, nesting_limit)
{
    tt_kb kb;
    tt_begin(&kb, "deep", 1, 0, 0);
    tj_ref t = tt_ci(&kb, TJ_DT_BOOL, 1);
    tj_block_id b = kb.k->body;
    for (int d = 0; d < 1000; d++) {
        tj_ref r = tj_emit(kb.k, b, TJ_OP_IF, tj_type_tuple(kb.c, 0, NULL), &t, 1);
        tj_block_id inner = tj_block_new(kb.k, r);
        kb.k->insts[r].region[0] = inner;
        tj_emit(kb.k, b, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
        b = inner;
    }
    tj_emit(kb.k, b, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    cr_assert_neq(tj_interp_run(kb.k, NULL, 0), 0);
    cr_assert(strstr(tj_diag_render(kb.c), "nested more than"), "%s", tj_diag_render(kb.c));
    tt_free(&kb);
}

/* IR the verifier would refuse is reported, never a crash: an operand of
 * the wrong kind, a missing operand, a for whose body lacks its arguments. */
Test(control, unverified_ir_is_refused)
{
    float x[4];
    tj_arg args[] = {tt_tensor(x, TJ_DT_F32, 1, 4)};
    for (int variant = 0; variant < 3; variant++) {
        tt_kb kb;
        tt_begin(&kb, "bad", 1, 0, 0);
        tj_ref t = tt_param(&kb, "x", TJ_DT_F32, "4"), zero = tt_ci(&kb, TJ_DT_I32, 0);
        tj_ref v = tt_slice1(&kb, t, zero, 4);
        tj_type t4 = tt_tile(&kb, TJ_DT_F32, 1, 4);
        if (variant == 0)
            tt_op(&kb, TJ_OP_ADD, t4, 2, v, v); /* views are not tiles */
        else if (variant == 1)
            tt_op(&kb, TJ_OP_ADD, t4, 2, tt_load(&kb, v, TJ_NONE, TJ_NONE), TJ_NONE);
        else
            tj_emit(kb.k, kb.k->body, TJ_OP_FOR, tj_type_tuple(kb.c, 0, NULL), (tj_ref[]){zero, zero, zero}, 3);
        tt_end(&kb);
        cr_assert_neq(tj_interp_run(kb.k, args, 1), 0, "variant %d", variant);
        cr_assert(strstr(tj_diag_render(kb.c), "internal error: interpreter"), "%s", tj_diag_render(kb.c));
        tt_free(&kb);
    }
}
