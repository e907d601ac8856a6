/* Reductions and argmax/argmin along each axis and to a scalar, against
 * plain loops; float accumulation in f32 (also for f16), NaN rules, ties. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tj_test_util.h"

__extension__ typedef _Float16 ref_half;

/* out = op(x, axis) for x: dt[R, C] in memory. The result is stored as a
 * rank-1 tensor (axis -1: one element). */
static void run_reduce(tj_op op, tj_dtype dt, int64_t axis, const void *x, int R, int C, void *out)
{
    tt_kb kb;
    tt_begin(&kb, "red", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    int32_t axes[2] = {R, C};
    tj_ref t = tt_param(&kb, "x", dt, "R, C");
    tj_ref v = tt_load(&kb, tt_view(&kb, tj_type_view(kb.c, dt, 2, axes), t, 2, axes, zero, zero), TJ_NONE, TJ_NONE);
    tj_dtype rdt = op == TJ_OP_ARGMAX || op == TJ_OP_ARGMIN ? TJ_DT_I32 : dt;
    int n = axis == 0 ? C : axis == 1 ? R : 1;
    tj_type rt = axis < 0 ? tt_scalar(&kb, rdt) : tt_tile(&kb, rdt, 1, n);
    tj_ref red = tt_opi(&kb, op, rt, axis, 1, v);
    tj_ref o = tt_param(&kb, "out", rdt, "K");
    int32_t idx = TJ_VIEW_INDEX;
    tj_ref ov = axis < 0 ? tt_view(&kb, tj_type_view(kb.c, rdt, 0, NULL), o, 1, &idx, zero) : tt_slice1(&kb, o, zero, n);
    tt_store(&kb, ov, red, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor((void *)x, dt, 2, R, C), tt_tensor(out, rdt, 1, n)};
    cr_assert_eq(tt_run(&kb, args, 2), 0);
    tt_free(&kb);
}

Test(reduce, i32_every_axis)
{
    enum { R = 3, C = 5 };
    int32_t x[R * C], out[C];
    for (int i = 0; i < R * C; i++)
        x[i] = (i * 37) % 11 - 5;
    tj_op ops[] = {TJ_OP_REDUCE_SUM, TJ_OP_REDUCE_PROD, TJ_OP_REDUCE_MAX, TJ_OP_REDUCE_MIN};
    for (int o = 0; o < 4; o++)
        for (int axis = -1; axis <= 1; axis++) {
            run_reduce(ops[o], TJ_DT_I32, axis, x, R, C, out);
            int n = axis == 0 ? C : axis == 1 ? R : 1, len = axis == 0 ? R : axis == 1 ? C : R * C;
            for (int k = 0; k < n; k++) {
                int32_t acc = 0;
                for (int j = 0; j < len; j++) {
                    int32_t v = axis == 0 ? x[j * C + k] : axis == 1 ? x[k * C + j] : x[j];
                    if (j == 0)
                        acc = v;
                    else if (ops[o] == TJ_OP_REDUCE_SUM)
                        acc += v;
                    else if (ops[o] == TJ_OP_REDUCE_PROD)
                        acc = (int32_t)((uint32_t)acc * (uint32_t)v); /* wraps */
                    else if (ops[o] == TJ_OP_REDUCE_MAX)
                        acc = v > acc ? v : acc;
                    else
                        acc = v < acc ? v : acc;
                }
                cr_assert_eq(out[k], acc, "%s axis %d [%d]", tj_op_get(ops[o])->name, axis, k);
            }
        }
}

Test(reduce, integer_sums_wrap)
{
    int8_t x[4] = {100, 100, 27, 1};
    int8_t out[1];
    run_reduce(TJ_OP_REDUCE_SUM, TJ_DT_I8, -1, x, 1, 4, out);
    cr_assert_eq(out[0], (int8_t)(100 + 100 + 27 + 1 - 256));
    uint16_t u[3] = {60000, 60000, 1}, uo[1];
    run_reduce(TJ_OP_REDUCE_SUM, TJ_DT_U16, -1, u, 1, 3, uo);
    cr_assert_eq(uo[0], (uint16_t)(120001 % 65536));
}

Test(reduce, f32_accumulates_in_float_in_order)
{
    float x[5] = {0x1p24f, 1, 1, 1, 1}, out[1];
    run_reduce(TJ_OP_REDUCE_SUM, TJ_DT_F32, -1, x, 1, 5, out);
    cr_assert_eq(out[0], 0x1p24f, "each +1 is lost in f32 (a double sum would give 2^24 + 4)");
    float y[6] = {1, 2, 3, 4, 5, 6}, o2[3];
    run_reduce(TJ_OP_REDUCE_PROD, TJ_DT_F32, 1, y, 3, 2, o2);
    cr_assert(o2[0] == 2 && o2[1] == 12 && o2[2] == 30);
}

Test(reduce, f16_accumulates_in_f32)
{
    enum { N = 4096 };
    static ref_half x[N];
    for (int i = 0; i < N; i++)
        x[i] = (ref_half)1.0f;
    ref_half out[1];
    run_reduce(TJ_OP_REDUCE_SUM, TJ_DT_F16, -1, x, 1, N, out);
    cr_assert_eq((float)out[0], 4096.0f, "an f16 accumulator would stop at 2048");
    uint16_t b[3] = {tj_f32_to_bf16(256), tj_f32_to_bf16(1), tj_f32_to_bf16(1)}, bo[1];
    run_reduce(TJ_OP_REDUCE_SUM, TJ_DT_BF16, -1, b, 1, 3, bo);
    cr_assert_eq(tj_bf16_to_f32(bo[0]), 258.0f, "bf16: 256 + 1 + 1 summed in f32, then rounded");
}

Test(reduce, max_min_propagate_nan)
{
    float x[6] = {1, NAN, 3, -INFINITY, -1, 2}, out[3];
    run_reduce(TJ_OP_REDUCE_MAX, TJ_DT_F32, 1, x, 3, 2, out);
    cr_assert(isnan(out[0]) && out[1] == 3 && out[2] == 2);
    run_reduce(TJ_OP_REDUCE_MIN, TJ_DT_F32, 1, x, 3, 2, out);
    cr_assert(isnan(out[0]) && out[1] == -INFINITY && out[2] == -1);
    double d[3] = {NAN, 1, 2}, dout[1];
    run_reduce(TJ_OP_REDUCE_MIN, TJ_DT_F64, -1, d, 1, 3, dout);
    cr_assert(isnan(dout[0]), "a NaN first is not forgotten");
}

Test(reduce, argmax_argmin_ties_and_nan)
{
    float x[8] = {1, 5, 5, -2, -2, 0, 5, -2};
    int32_t out[2];
    run_reduce(TJ_OP_ARGMAX, TJ_DT_F32, -1, x, 1, 8, out);
    cr_assert_eq(out[0], 1, "first of the tied maxima");
    run_reduce(TJ_OP_ARGMIN, TJ_DT_F32, -1, x, 1, 8, out);
    cr_assert_eq(out[0], 3, "first of the tied minima");
    float y[8] = {1, 7, NAN, 9, NAN, -3, 2, 2};
    run_reduce(TJ_OP_ARGMAX, TJ_DT_F32, -1, y, 1, 8, out);
    cr_assert_eq(out[0], 2, "NaN counts as the maximum");
    run_reduce(TJ_OP_ARGMIN, TJ_DT_F32, -1, y, 1, 8, out);
    cr_assert_eq(out[0], 5, "NaN is not a minimum");
    float z[4] = {NAN, NAN, NAN, NAN};
    run_reduce(TJ_OP_ARGMIN, TJ_DT_F32, -1, z, 1, 4, out);
    cr_assert_eq(out[0], 0);
    float w[4] = {-0.0f, 0.0f, 0.0f, -0.0f};
    run_reduce(TJ_OP_ARGMAX, TJ_DT_F32, -1, w, 1, 4, out);
    cr_assert_eq(out[0], 0, "-0 and +0 tie");
}

Test(reduce, argmax_along_axes)
{
    enum { R = 3, C = 4 };
    int16_t x[R * C] = {3, 9, 9, 1, -5, -5, -7, 0, 2, 2, 2, 2};
    int32_t out[C];
    run_reduce(TJ_OP_ARGMAX, TJ_DT_I16, 1, x, R, C, out);
    cr_assert(out[0] == 1 && out[1] == 3 && out[2] == 0);
    run_reduce(TJ_OP_ARGMIN, TJ_DT_I16, 0, x, R, C, out);
    cr_assert(out[0] == 1 && out[1] == 1 && out[2] == 1 && out[3] == 1);
    run_reduce(TJ_OP_ARGMIN, TJ_DT_I16, -1, x, R, C, out);
    cr_assert_eq(out[0], 6, "axis -1 indexes the flattened tile");
    uint32_t u[4] = {1, 0x80000000u, 7, 0x80000001u};
    run_reduce(TJ_OP_ARGMAX, TJ_DT_U32, -1, u, 1, 4, out);
    cr_assert_eq(out[0], 3, "unsigned order");
}
