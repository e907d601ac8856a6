/* tj_check_args: every kind of mismatch is an error naming the parameter;
 * several problems are all reported; runs refuse bad arguments. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "tj_test_util.h"

static tt_kb kb;
static float buf[4096];

/* kernel(X: f32[N, 128], Y: f32[N], n: i32, u: u8) with an empty body. */
static void setup(void)
{
    tt_begin(&kb, "k", 1, 0, 0);
    tt_param(&kb, "X", TJ_DT_F32, "N, 128");
    tt_param(&kb, "Y", TJ_DT_F32, "N");
    tt_param(&kb, "n", TJ_DT_I32, NULL);
    tt_param(&kb, "u", TJ_DT_U8, NULL);
    tt_end(&kb);
}

static void teardown(void) { tt_free(&kb); }

static void good_args(tj_arg a[4])
{
    a[0] = tt_tensor(buf, TJ_DT_F32, 2, 16, 128);
    a[1] = tt_tensor(buf, TJ_DT_F32, 1, 16);
    a[2] = tt_int(7);
    a[3] = tt_int(255);
}

/* check_args fails and the diagnostics contain `msg`. */
static void expect_error(const tj_arg *a, uint32_t n, const char *msg)
{
    tj_diag_clear(kb.c);
    cr_assert_neq(tj_check_args(kb.k, a, n), 0, "expected: %s", msg);
    const char *text = tj_diag_render(kb.c);
    cr_assert(strstr(text, msg), "expected \"%s\" in:\n%s", msg, text);
}

TestSuite(args, .init = setup, .fini = teardown);

Test(args, good_arguments_pass)
{
    tj_arg a[4];
    good_args(a);
    cr_assert_eq(tj_check_args(kb.k, a, 4), 0, "%s", tj_diag_render(kb.c));
    cr_assert_eq(tj_interp_run(kb.k, a, 4), 0);
}

Test(args, count_kind_dtype_rank)
{
    tj_arg a[4];
    good_args(a);
    expect_error(a, 3, "kernel 'k' takes 4 arguments, 3 given");
    expect_error(NULL, 4, "takes 4 arguments, 0 given");
    a[1] = tt_int(3);
    expect_error(a, 4, "argument 'Y': expected a tensor f32[N], got a scalar");
    good_args(a);
    a[2] = a[1];
    expect_error(a, 4, "argument 'n': expected a scalar i32, got a tensor");
    good_args(a);
    a[0].tensor.dtype = TJ_DT_F16;
    expect_error(a, 4, "argument 'X': dtype is f16, expected f32[N, 128]");
    good_args(a);
    a[1] = tt_tensor(buf, TJ_DT_F32, 2, 16, 1);
    expect_error(a, 4, "argument 'Y': rank is 2, expected 1 (f32[N])");
}

Test(args, dims_literal_names_and_ranges)
{
    tj_arg a[4];
    good_args(a);
    a[0] = tt_tensor(buf, TJ_DT_F32, 2, 16, 64);
    expect_error(a, 4, "argument 'X': dim 1 is 64, expected 128");
    good_args(a);
    a[1] = tt_tensor(buf, TJ_DT_F32, 1, 8);
    expect_error(a, 4, "argument 'Y': dim N is 8 here but 16 in argument 'X'");
    good_args(a);
    a[0].tensor.shape[0] = -1;
    expect_error(a, 4, "argument 'X': dim 0 is -1; sizes must be in [0, 2^31)");
    good_args(a);
    a[1].tensor.shape[0] = (int64_t)1 << 31;
    expect_error(a, 4, "argument 'Y': dim 0 is 2147483648");
}

Test(args, same_name_twice_in_one_tensor)
{
    tt_kb sq;
    tt_begin(&sq, "sq", 1, 0, 0);
    tt_param(&sq, "A", TJ_DT_F32, "N, N");
    tt_end(&sq);
    tj_arg a[1] = {tt_tensor(buf, TJ_DT_F32, 2, 4, 5)};
    cr_assert_neq(tj_check_args(sq.k, a, 1), 0);
    cr_assert(strstr(tj_diag_render(sq.c), "argument 'A': dim N is 5 at axis 1 but 4 at axis 0"), "%s",
              tj_diag_render(sq.c));
    tt_free(&sq);
}

Test(args, scalars_must_fit)
{
    tj_arg a[4];
    good_args(a);
    a[2] = tt_int((int64_t)1 << 40);
    expect_error(a, 4, "argument 'n': 1099511627776 does not fit in i32");
    good_args(a);
    a[3] = tt_int(256);
    expect_error(a, 4, "argument 'u': 256 does not fit in u8");
    a[3] = tt_int(-1);
    expect_error(a, 4, "argument 'u': -1 does not fit in u8");
}

Test(args, memory_null_and_strides)
{
    tj_arg a[4];
    good_args(a);
    a[1].tensor.data = NULL;
    expect_error(a, 4, "argument 'Y': data is NULL");
    good_args(a);
    a[0] = tt_tensor(NULL, TJ_DT_F32, 2, 0, 128);
    a[1] = tt_tensor(NULL, TJ_DT_F32, 1, 0);
    tj_diag_clear(kb.c);
    cr_assert_eq(tj_check_args(kb.k, a, 4), 0, "empty tensors need no memory: %s", tj_diag_render(kb.c));
    good_args(a);
    a[0].tensor.strides[0] = (int64_t)1 << 58;
    expect_error(a, 4, "argument 'X': stride 288230376151711744 of dim 0 reaches beyond 2^60 bytes");
    good_args(a);
    a[1].tensor.strides[0] = INT64_MIN;
    expect_error(a, 4, "argument 'Y': stride");
}

Test(args, every_problem_is_reported)
{
    tj_arg a[4];
    good_args(a);
    a[0].tensor.dtype = TJ_DT_I32;
    a[2] = tt_int(INT64_MAX);
    a[3] = tt_int(-5);
    tj_diag_clear(kb.c);
    cr_assert_neq(tj_check_args(kb.k, a, 4), 0);
    cr_assert_eq(tj_error_count(kb.c), 3, "%s", tj_diag_render(kb.c));
    tj_diag_clear(kb.c);
    cr_assert_neq(tj_interp_run(kb.k, a, 4), 0, "runs check their arguments");
    int64_t grid[3];
    cr_assert_neq(tj_eval_grid(kb.k, a, 4, grid), 0);
}

Test(args, specialized_dims)
{
    kb.k->spec = tj_alloc(kb.c, sizeof *kb.k->spec);
    kb.k->spec[0] = (tj_binding){"N", 32};
    kb.k->nspec = 1;
    tj_arg a[4];
    good_args(a);
    expect_error(a, 4, "argument 'X': dim N is 16, but the kernel was specialized for N = 32");
    a[0] = tt_tensor(buf, TJ_DT_F32, 2, 32, 128);
    a[1] = tt_tensor(buf, TJ_DT_F32, 1, 32);
    tj_diag_clear(kb.c);
    cr_assert_eq(tj_check_args(kb.k, a, 4), 0, "%s", tj_diag_render(kb.c));
}

Test(args, empty_tensor_strides_are_still_checked)
{
    tj_arg a[4];
    good_args(a);
    a[0] = tt_tensor(NULL, TJ_DT_F32, 2, 0, 128);
    a[0].tensor.strides[1] = INT64_MIN;
    a[1] = tt_tensor(NULL, TJ_DT_F32, 1, 0);
    expect_error(a, 4, "argument 'X': stride -9223372036854775808 of dim 1");
}
