/* MLIR import from C (tilejit/mlir.h): parsing, the functions and their
 * signatures, a call on the cpu against values computed here, diagnostics
 * at the op's location, argument checks, and repeated calls compiling
 * nothing new. Skips, saying why, where the MLIR reader is missing. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tilejit/mlir.h"

static const char module_text[] =
    "func.func @scaled_row_sums(%x: tensor<3x4xf32>, %s: f32) -> (tensor<3xf32>, tensor<4x3xf32>) {\n"
    "  %zero = arith.constant 0.0 : f32\n"
    "  %e = tensor.empty() : tensor<3xf32>\n"
    "  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>\n"
    "  %sum = linalg.reduce ins(%x : tensor<3x4xf32>) outs(%init : tensor<3xf32>) dimensions = [1]\n"
    "    (%v: f32, %acc: f32) {\n"
    "      %a = arith.addf %v, %acc : f32\n"
    "      linalg.yield %a : f32\n"
    "    }\n"
    "  %e2 = tensor.empty() : tensor<4x3xf32>\n"
    "  %sx = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>,\n"
    "                                         affine_map<(i, j) -> (j, i)>], iterator_types = [\"parallel\", \"parallel\"]}\n"
    "      ins(%x, %s : tensor<3x4xf32>, f32) outs(%e2 : tensor<4x3xf32>) {\n"
    "    ^bb0(%v: f32, %k: f32, %o: f32):\n"
    "      %m = arith.mulf %v, %k : f32\n"
    "      %i = linalg.index 0 : index\n"
    "      %c = arith.index_cast %i : index to i32\n"
    "      %f = arith.sitofp %c : i32 to f32\n"
    "      %r = arith.addf %m, %f : f32\n"
    "      linalg.yield %r : f32\n"
    "  } -> tensor<4x3xf32>\n"
    "  return %sum, %sx : tensor<3xf32>, tensor<4x3xf32>\n"
    "}\n";

static void skip_without_mlir(void)
{
    tj_rt_error err = {{0}};
    if (tj_mlir_available(&err)) {
        cr_assert(strstr(err.msg, "no MLIR"), "%s", err.msg);
        cr_skip_test("%s", err.msg);
    }
}

static tj_mlir_module *parse(tj_ctx *c, const char *text)
{
    tj_mlir_module *m = tj_mlir_parse(c, "t.mlir", text, strlen(text));
    return m;
}

Test(mlir, signature_and_a_call_against_host_values)
{
    skip_without_mlir();
    tj_ctx *c = tj_ctx_new();
    tj_mlir_module *m = parse(c, module_text);
    cr_assert(m, "%s", tj_diag_render(c));
    cr_assert_eq(tj_mlir_function_count(m), 1);
    cr_assert_str_eq(tj_mlir_function_name(m, 0), "scaled_row_sums");
    tj_mlir_value_info params[4], results[4];
    uint32_t np, nr;
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_mlir_function_signature(m, "scaled_row_sums", params, &np, results, &nr, 4, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(np, 2);
    cr_assert_eq(nr, 2);
    cr_assert_str_eq(params[0].name, "arg0");
    cr_assert(params[0].rank == 2 && params[0].shape[1] == 4 && params[1].rank == 0 && params[1].dtype == TJ_DT_F32);
    cr_assert(results[1].rank == 2 && results[1].shape[0] == 4 && results[1].shape[1] == 3);

    float x[12], s = 2.0f, sums[3], sx[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i - 5.5f;
    tj_tensor in[2] = {tj_tensor_contiguous(x, TJ_DT_F32, 2, (int64_t[]){3, 4}),
                       tj_tensor_contiguous(&s, TJ_DT_F32, 0, NULL)};
    tj_tensor out[2] = {tj_tensor_contiguous(sums, TJ_DT_F32, 1, (int64_t[]){3}),
                        tj_tensor_contiguous(sx, TJ_DT_F32, 2, (int64_t[]){4, 3})};
    tj_mlir_fn *f = tj_mlir_fn_new(m, NULL, TJ_DEVICE_CPU, 0, &err);
    cr_assert(f, "%s", err.msg);
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(tj_mlir_fn_call(f, in, 2, out, 2, &err), 0, "%s", err.msg);
        for (int i = 0; i < 3; i++) {
            float want = 0;
            for (int j = 0; j < 4; j++) {
                want += x[i * 4 + j];
                /* out[j][i] = x[i][j] * s + i (linalg.index 0 is the loop i) */
                cr_assert_float_eq(sx[j * 3 + i], x[i * 4 + j] * s + (float)i, 1e-6);
            }
            cr_assert_float_eq(sums[i], want, 1e-5);
        }
    }
    tj_graph_stats st;
    tj_graph_get_stats(tj_mlir_fn_graph(f), &st);
    cr_assert_eq(st.evals, 2);
    cr_assert_gt(st.kernels_compiled, 0);
    uint64_t compiled = st.kernels_compiled;
    cr_assert_eq(tj_mlir_fn_call(f, in, 2, out, 2, &err), 0, "%s", err.msg);
    tj_graph_get_stats(tj_mlir_fn_graph(f), &st);
    cr_assert_eq(st.kernels_compiled, compiled, "a repeated call compiled again");

    /* outputs of the wrong shape, and the wrong count */
    tj_tensor bad = tj_tensor_contiguous(sums, TJ_DT_F32, 1, (int64_t[]){4});
    tj_tensor bad_out[2] = {bad, out[1]};
    cr_assert_neq(tj_mlir_fn_call(f, in, 2, bad_out, 2, &err), 0);
    cr_assert(strstr(err.msg, "output 0 must be a f32 tensor of rank 1 with the result's shape"), "%s", err.msg);
    cr_assert_neq(tj_mlir_fn_call(f, in, 1, out, 2, &err), 0);
    cr_assert(strstr(err.msg, "takes 2 inputs"), "%s", err.msg);
    /* an input of the wrong shape: an error at the function */
    tj_tensor bad_in[2] = {tj_tensor_contiguous(x, TJ_DT_F32, 2, (int64_t[]){4, 3}), in[1]};
    cr_assert_neq(tj_mlir_fn_call(f, bad_in, 2, out, 2, &err), 0);
    cr_assert(strstr(err.msg, "t.mlir:1:1: error: 'func.func': argument 0 must be tensor<3x4xf32>"), "%s", err.msg);
    tj_mlir_fn_free(f);
    tj_mlir_module_free(m);
    tj_ctx_free(c);
}

Test(mlir, unsupported_ops_at_their_locations)
{
    skip_without_mlir();
    tj_ctx *c = tj_ctx_new();
    const char *text = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %0 = math.atan %a : tensor<4xf32>\n"
                       "  %1 = math.exp %0 : tensor<4xf32>\n"
                       "  %2 = \"mhlo.sine\"(%1) : (tensor<4xf32>) -> tensor<4xf32>\n"
                       "  return %2 : tensor<4xf32>\n"
                       "}\n";
    cr_assert_null(parse(c, text));
    cr_assert_eq(tj_error_count(c), 2, "%s", tj_diag_render(c));
    const tj_diag *d0 = tj_diag_get(c, 0), *d1 = tj_diag_get(c, 1);
    cr_assert(d0->line == 2 && d0->col == 8 && strstr(d0->msg, "'math.atan'"), "%s", tj_diag_render(c));
    cr_assert(d1->line == 4 && d1->col == 8 && strstr(d1->msg, "'mhlo.sine'"), "%s", tj_diag_render(c));
    tj_ctx_free(c);
}

Test(mlir, mlir_errors_keep_their_locations)
{
    skip_without_mlir();
    tj_ctx *c = tj_ctx_new();
    cr_assert_null(parse(c, "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<8xf32>\n}\n"));
    const tj_diag *d = tj_diag_get(c, 0);
    cr_assert(d && d->sev == TJ_SEV_ERROR && d->line == 2, "%s", tj_diag_render(c));
    tj_ctx_free(c);
}

Test(mlir, api_misuse)
{
    tj_rt_error err = {{0}};
    tj_ctx *c = tj_ctx_new();
    cr_assert_null(tj_mlir_parse(c, "x.mlir", NULL, 0));
    cr_assert(strstr(tj_diag_render(c), "tj_mlir_parse: NULL context or text"));
    cr_assert_null(tj_mlir_parse(NULL, "x.mlir", "", 0));
    cr_assert_eq(tj_mlir_function_count(NULL), 0);
    cr_assert_null(tj_mlir_function_name(NULL, 0));
    uint32_t n, r;
    cr_assert_neq(tj_mlir_function_signature(NULL, NULL, NULL, &n, NULL, &r, 0, &err), 0);
    cr_assert_null(tj_mlir_fn_new(NULL, NULL, TJ_DEVICE_CPU, 0, &err));
    cr_assert_neq(tj_mlir_fn_call(NULL, NULL, 0, NULL, 0, &err), 0);
    cr_assert_neq(tj_mlir_build(NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "tj_mlir_build: NULL module or graph"), "%s", err.msg);
    tj_mlir_module_free(NULL);
    tj_mlir_fn_free(NULL);
    cr_assert_null(tj_mlir_fn_graph(NULL));
    tj_ctx_free(c);
}
