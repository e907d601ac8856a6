/* broadcast, reshape, permute, arange, program_id and num_programs. */
#include <criterion/criterion.h>
#include <string.h>

#include "tj_test_util.h"

/* A [rows, cols] view at the origin of a rank-2 tensor. */
static tj_ref view2(tt_kb *kb, tj_ref t, tj_ref zero, int rows, int cols)
{
    int32_t axes[2] = {rows, cols};
    tj_type vt = tj_type_view(kb->c, tj_type_get(kb->c, tt_type(kb, t))->dtype, 2, axes);
    return tt_view(kb, vt, t, 2, axes, zero, zero);
}

/* A rank-3 view at the origin. */
static tj_ref view3(tt_kb *kb, tj_ref t, tj_ref zero, const int32_t *shape)
{
    tj_type vt = tj_type_view(kb->c, tj_type_get(kb->c, tt_type(kb, t))->dtype, 3, shape);
    return tt_view(kb, vt, t, 3, shape, zero, zero, zero);
}

Test(shape, broadcast_numpy_rules)
{
    int32_t row[4] = {1, 2, 3, 4}, col[3] = {10, 20, 30}, out1[12], out2[12], out3[6];
    tt_kb kb;
    tt_begin(&kb, "bc", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref r = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "row", TJ_DT_I32, "4"), zero, 4), TJ_NONE, TJ_NONE);
    tj_ref c = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "col", TJ_DT_I32, "3"), zero, 3), TJ_NONE, TJ_NONE);
    tj_ref o1 = tt_param(&kb, "o1", TJ_DT_I32, "3, 4"), o2 = tt_param(&kb, "o2", TJ_DT_I32, "3, 4");
    tj_ref o3 = tt_param(&kb, "o3", TJ_DT_I32, "2, 3");
    tj_type t34 = tt_tile(&kb, TJ_DT_I32, 2, 3, 4);
    /* [4] -> [3, 4] (missing axis); [3] -> [3, 1] -> [3, 4] (size-1 axis); scalar -> [2, 3] */
    tt_store(&kb, view2(&kb, o1, zero, 3, 4), tt_op(&kb, TJ_OP_BROADCAST, t34, 1, r), TJ_NONE);
    tj_ref c31 = tt_op(&kb, TJ_OP_RESHAPE, tt_tile(&kb, TJ_DT_I32, 2, 3, 1), 1, c);
    tt_store(&kb, view2(&kb, o2, zero, 3, 4), tt_op(&kb, TJ_OP_BROADCAST, t34, 1, c31), TJ_NONE);
    tt_store(&kb, view2(&kb, o3, zero, 2, 3), tt_splat(&kb, tt_ci(&kb, TJ_DT_I32, 7), tt_tile(&kb, TJ_DT_I32, 2, 2, 3)),
             TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(row, TJ_DT_I32, 1, 4), tt_tensor(col, TJ_DT_I32, 1, 3), tt_tensor(out1, TJ_DT_I32, 2, 3, 4),
                     tt_tensor(out2, TJ_DT_I32, 2, 3, 4), tt_tensor(out3, TJ_DT_I32, 2, 2, 3)};
    cr_assert_eq(tt_run(&kb, args, 5), 0);
    tt_free(&kb);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            cr_assert_eq(out1[i * 4 + j], row[j]);
            cr_assert_eq(out2[i * 4 + j], col[i]);
        }
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out3[i], 7);
}

Test(shape, permute_and_reshape)
{
    enum { A = 2, B = 3, C = 4 };
    float in[A * B * C], perm[C * A * B], flat[A * B * C];
    for (int i = 0; i < A * B * C; i++)
        in[i] = (float)i;
    tt_kb kb;
    tt_begin(&kb, "perm", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    int32_t sx[3] = {A, B, C}, sp[3] = {C, A, B};
    tj_ref x = tt_load(&kb, view3(&kb, tt_param(&kb, "x", TJ_DT_F32, "2, 3, 4"), zero, sx), TJ_NONE, TJ_NONE);
    tj_ref p = tt_op(&kb, TJ_OP_PERMUTE, tt_tile(&kb, TJ_DT_F32, 3, C, A, B), 1, x);
    int32_t order[3] = {2, 0, 1};
    tj_inst_set_list(kb.k, p, order, 3);
    tt_store(&kb, view3(&kb, tt_param(&kb, "p", TJ_DT_F32, "4, 2, 3"), zero, sp), p, TJ_NONE);
    tj_ref r = tt_op(&kb, TJ_OP_RESHAPE, tt_tile(&kb, TJ_DT_F32, 2, 6, 4), 1, x);
    tt_store(&kb, view2(&kb, tt_param(&kb, "r", TJ_DT_F32, "6, 4"), zero, 6, 4), r, TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(in, TJ_DT_F32, 3, A, B, C), tt_tensor(perm, TJ_DT_F32, 3, C, A, B),
                     tt_tensor(flat, TJ_DT_F32, 2, 6, 4)};
    cr_assert_eq(tt_run(&kb, args, 3), 0);
    tt_free(&kb);
    for (int c = 0; c < C; c++)
        for (int a = 0; a < A; a++)
            for (int b = 0; b < B; b++)
                cr_assert_eq(perm[(c * A + a) * B + b], in[(a * B + b) * C + c]);
    cr_assert(memcmp(flat, in, sizeof in) == 0, "reshape keeps row-major order");
}

/* Each program (i, j) of a 5 x 3 grid stores arange(4) + 100 * i + 10 * j
 * and the grid size into out[j, i, :]. */
Test(shape, arange_and_program_ids)
{
    enum { GX = 5, GY = 3 };
    int32_t out[GY][GX][6];
    tt_kb kb;
    tt_begin(&kb, "ids", GX, GY, 0);
    tj_type i32 = tt_scalar(&kb, TJ_DT_I32), t4 = tt_tile(&kb, TJ_DT_I32, 1, 4);
    tj_ref o = tt_param(&kb, "out", TJ_DT_I32, "3, 5, 6");
    tj_ref i = tt_opi(&kb, TJ_OP_PROGRAM_ID, i32, 0, 0), j = tt_opi(&kb, TJ_OP_PROGRAM_ID, i32, 1, 0);
    tj_ref base = tt_bin(&kb, TJ_OP_ADD, tt_bin(&kb, TJ_OP_MUL, i, tt_ci(&kb, TJ_DT_I32, 100)),
                         tt_bin(&kb, TJ_OP_MUL, j, tt_ci(&kb, TJ_DT_I32, 10)));
    tj_ref v = tt_bin(&kb, TJ_OP_ADD, tt_op(&kb, TJ_OP_ARANGE, t4, 0), tt_splat(&kb, base, t4));
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    int32_t axes[3] = {TJ_VIEW_INDEX, TJ_VIEW_INDEX, 4}, axes1[3] = {TJ_VIEW_INDEX, TJ_VIEW_INDEX, TJ_VIEW_INDEX};
    int32_t four = 4;
    tt_store(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_I32, 1, &four), o, 3, axes, j, i, zero), v, TJ_NONE);
    tj_type v0 = tj_type_view(kb.c, TJ_DT_I32, 0, NULL);
    tt_store(&kb, tt_view(&kb, v0, o, 3, axes1, j, i, tt_ci(&kb, TJ_DT_I32, 4)),
             tt_opi(&kb, TJ_OP_NUM_PROGRAMS, i32, 0, 0), TJ_NONE);
    tt_store(&kb, tt_view(&kb, v0, o, 3, axes1, j, i, tt_ci(&kb, TJ_DT_I32, 5)),
             tt_opi(&kb, TJ_OP_NUM_PROGRAMS, i32, 1, 0), TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(out, TJ_DT_I32, 3, GY, GX, 6)};
    cr_assert_eq(tt_run(&kb, args, 1), 0);
    int64_t grid[3];
    cr_assert_eq(tj_eval_grid(kb.k, args, 1, grid), 0);
    cr_assert(grid[0] == GX && grid[1] == GY && grid[2] == 1);
    tt_free(&kb);
    for (int y = 0; y < GY; y++)
        for (int x = 0; x < GX; x++) {
            for (int e = 0; e < 4; e++)
                cr_assert_eq(out[y][x][e], e + 100 * x + 10 * y);
            cr_assert(out[y][x][4] == GX && out[y][x][5] == GY);
        }
}
