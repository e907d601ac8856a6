/* The array front end's C API (tilejit/array.h): building checks shapes
 * and dtypes at once with messages naming the op; evaluation fuses and
 * matches loops in C; the kernel cache compiles a repeated graph once;
 * lifetimes (release, borrowed memory); text round trips; misuse. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/array.h"

static tj_graph *g;
static tj_rt_error err;

static void setup(void)
{
    g = tj_graph_new(TJ_DEVICE_CPU, 0, &err);
    cr_assert(g, "%s", err.msg);
}

static void teardown(void) { tj_graph_free(g); }

TestSuite(array, .init = setup, .fini = teardown);

static tj_array wrap_f32(float *data, int rank, const int64_t *shape)
{
    tj_tensor t = tj_tensor_contiguous(data, TJ_DT_F32, rank, shape);
    tj_array a = tj_array_wrap(g, &t);
    cr_assert(a, "%s", tj_graph_error(g));
    return a;
}

static void eval1(tj_array a)
{
    cr_assert(a, "build: %s", tj_graph_error(g));
    cr_assert_eq(tj_array_eval(g, &a, 1, &err), 0, "%s", err.msg);
}

static void fill(float *x, int n, float scale)
{
    for (int i = 0; i < n; i++)
        x[i] = scale * (float)((i * 37) % 23 - 11) / 11.0f;
}

static tj_graph_stats stats(void)
{
    tj_graph_stats s;
    tj_graph_get_stats(g, &s);
    return s;
}

Test(array, fused_reduction_matches_a_loop)
{
    enum { M = 7, N = 300 };
    static float x[M * N], y[N], out[M];
    fill(x, M * N, 1.0f);
    fill(y, N, 0.5f);
    tj_array ax = wrap_f32(x, 2, (int64_t[]){M, N}), ay = wrap_f32(y, 1, (int64_t[]){N});
    tj_array e = tj_array_unary(g, TJ_AOP_EXP, tj_array_binary(g, TJ_AOP_MULTIPLY, ax, ay));
    tj_array s = tj_array_reduce(g, TJ_AOP_SUM, e, (int[]){-1}, 1, 0);
    uint64_t before = stats().kernels_launched;
    eval1(s);
    cr_assert_eq(stats().kernels_launched - before, 1, "one kernel for multiply, exp and sum");
    tj_array_info info;
    cr_assert_eq(tj_array_get_info(g, s, &info), 0);
    cr_assert_eq(info.rank, 1);
    cr_assert_eq(info.shape[0], M);
    cr_assert_eq(tj_array_read(g, s, out, sizeof out, &err), 0, "%s", err.msg);
    for (int i = 0; i < M; i++) {
        double ref = 0;
        for (int j = 0; j < N; j++)
            ref += exp((double)x[i * N + j] * y[j]);
        cr_assert_float_eq(out[i], ref, 1e-4 * ref, "row %d: %g vs %g", i, out[i], ref);
    }
}

Test(array, softmax_is_one_kernel_and_rows_sum_to_one)
{
    enum { M = 5, N = 1000 };
    static float x[M * N], out[M * N];
    fill(x, M * N, 3.0f);
    tj_array a = wrap_f32(x, 2, (int64_t[]){M, N});
    tj_array s = tj_array_softmax(g, tj_array_binary(g, TJ_AOP_MULTIPLY, a, tj_array_scalar(g, TJ_DT_F64, 0.5, 1)), 1);
    uint64_t before = stats().kernels_launched;
    eval1(s);
    cr_assert_eq(stats().kernels_launched - before, 1);
    cr_assert_eq(tj_array_read(g, s, out, sizeof out, &err), 0, "%s", err.msg);
    for (int i = 0; i < M; i++) {
        double sum = 0;
        for (int j = 0; j < N; j++)
            sum += out[i * N + j];
        cr_assert_float_eq(sum, 1.0, 1e-5);
    }
}

Test(array, matmul_with_bias_and_relu_matches_a_loop)
{
    enum { M = 33, K = 20, N = 17 };
    static float a[M * K], b[K * N], bias[N], out[M * N];
    fill(a, M * K, 1.0f);
    fill(b, K * N, 0.7f);
    fill(bias, N, 0.3f);
    tj_array A = wrap_f32(a, 2, (int64_t[]){M, K}), B = wrap_f32(b, 2, (int64_t[]){K, N});
    tj_array C = wrap_f32(bias, 1, (int64_t[]){N});
    tj_array y = tj_array_unary(g, TJ_AOP_RELU, tj_array_binary(g, TJ_AOP_ADD, tj_array_matmul(g, A, B), C));
    uint64_t before = stats().kernels_launched;
    eval1(y);
    cr_assert_eq(stats().kernels_launched - before, 1, "the epilogue is fused");
    cr_assert_eq(tj_array_read(g, y, out, sizeof out, &err), 0, "%s", err.msg);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double r = bias[j];
            for (int k = 0; k < K; k++)
                r += (double)a[i * K + k] * b[k * N + j];
            r = r > 0 ? r : 0;
            cr_assert_float_eq(out[i * N + j], r, 1e-4, "[%d, %d]", i, j);
        }
}

Test(array, views_over_borrowed_memory_have_no_kernel)
{
    static float x[4 * 6];
    fill(x, 24, 1.0f);
    tj_array a = wrap_f32(x, 2, (int64_t[]){4, 6});
    tj_array t = tj_array_transpose(g, a, NULL);
    tj_array s = tj_array_slice(g, t, (int64_t[]){5, 0}, (int64_t[]){-1, 4}, (int64_t[]){-2, 2});
    tj_array_info info;
    cr_assert_eq(tj_array_get_info(g, s, &info), 0);
    cr_assert(info.evaluated, "a view of data is resolved when it is built");
    cr_assert_eq(info.shape[0], 3);
    cr_assert_eq(info.shape[1], 2);
    tj_tensor v;
    cr_assert_eq(tj_array_tensor(g, s, &v, &err), 0, "%s", err.msg);
    cr_assert_eq(v.data, &x[0 * 6 + 5]);
    cr_assert_eq(v.strides[0], -2);
    cr_assert_eq(v.strides[1], 12);
    float out[6];
    cr_assert_eq(tj_array_read(g, s, out, sizeof out, &err), 0, "%s", err.msg);
    cr_assert_eq(out[1], x[2 * 6 + 5], "x.T[5::-2, ::2][0, 1] is x[2, 5]");
}

Test(array, repeated_graph_compiles_nothing)
{
    static float x[64 * 64], out[64];
    fill(x, 64 * 64, 1.0f);
    for (int round = 0; round < 3; round++) {
        tj_array a = wrap_f32(x, 2, (int64_t[]){64, 64});
        tj_array r = tj_array_reduce(g, TJ_AOP_MAX, tj_array_unary(g, TJ_AOP_TANH, a), (int[]){0}, 1, 0);
        uint64_t compiled = stats().kernels_compiled;
        eval1(r);
        if (round > 0)
            cr_assert_eq(stats().kernels_compiled, compiled, "round %d compiled again", round);
        cr_assert_eq(tj_array_read(g, r, out, sizeof out, &err), 0, "%s", err.msg);
        tj_array_release(g, r);
        tj_array_release(g, a);
    }
    cr_assert_geq(stats().cache_hits, 2);
}

Test(array, build_errors_name_the_op_and_shapes)
{
    static float x[12], y[5];
    tj_array a = wrap_f32(x, 2, (int64_t[]){3, 4}), b = wrap_f32(y, 1, (int64_t[]){5});
    cr_assert_eq(tj_array_binary(g, TJ_AOP_ADD, a, b), TJ_ARRAY_NONE);
    cr_assert_str_eq(tj_graph_error(g), "add: operands could not be broadcast together with shapes f32[3, 4] f32[5]");
    /* a chain keeps the first message */
    cr_assert_eq(tj_array_unary(g, TJ_AOP_EXP, tj_array_matmul(g, a, a)), TJ_ARRAY_NONE);
    cr_assert(strstr(tj_graph_error(g), "add:"), "%s", tj_graph_error(g));
    tj_graph_clear_error(g);
    cr_assert_eq(tj_array_matmul(g, a, a), TJ_ARRAY_NONE);
    cr_assert_str_eq(tj_graph_error(g), "matmul: the contracted axes differ (shapes f32[3, 4] and f32[3, 4])");
    tj_graph_clear_error(g);
    cr_assert_eq(tj_array_reduce(g, TJ_AOP_SUM, a, (int[]){2}, 1, 0), TJ_ARRAY_NONE);
    cr_assert_str_eq(tj_graph_error(g), "sum: axis 2 is out of bounds for an array of rank 2");
    tj_graph_clear_error(g);
    cr_assert_eq(tj_array_reshape(g, a, 1, (int64_t[]){5}), TJ_ARRAY_NONE);
    cr_assert(strstr(tj_graph_error(g), "reshape: cannot reshape f32[3, 4] (12 elements) into f32[5]"), "%s",
              tj_graph_error(g));
    tj_graph_clear_error(g);
    cr_assert_eq(tj_array_binary(g, TJ_AOP_BITWISE_AND, a, a), TJ_ARRAY_NONE);
    cr_assert_str_eq(tj_graph_error(g), "bitwise_and: not supported for f32");
}

Test(array, misuse_is_refused)
{
    cr_assert_eq(tj_array_unary(NULL, TJ_AOP_EXP, 1), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_unary(g, TJ_AOP_EXP, 12345), TJ_ARRAY_NONE);
    cr_assert(strstr(tj_graph_error(g), "not an array of this graph"));
    tj_graph_clear_error(g);
    cr_assert_eq(tj_array_unary(g, TJ_AOP_ADD, 0), TJ_ARRAY_NONE);
    cr_assert_neq(tj_array_eval(g, (tj_array[]){999}, 1, &err), 0);
    cr_assert(strstr(err.msg, "not an array of this graph"), "%s", err.msg);
    cr_assert_neq(tj_array_eval(NULL, NULL, 0, &err), 0);
    tj_array p = tj_array_input(g, TJ_DT_F32, 1, (int64_t[]){4});
    tj_array e = tj_array_unary(g, TJ_AOP_EXP, p);
    cr_assert_neq(tj_array_eval(g, &e, 1, &err), 0);
    cr_assert(strstr(err.msg, "placeholder"), "%s", err.msg);
    float out[4];
    cr_assert_neq(tj_array_read(g, e, out, sizeof out, &err), 0);
    cr_assert(strstr(err.msg, "not evaluated"), "%s", err.msg);
    cr_assert_eq(tj_graph_new((tj_device_kind)7, 0, &err), NULL);
    tj_graph_free(NULL);
}

Test(array, release_frees_what_nothing_needs)
{
    static float x[8];
    fill(x, 8, 1.0f);
    tj_array a = wrap_f32(x, 1, (int64_t[]){8});
    tj_array b = tj_array_unary(g, TJ_AOP_EXP, a);
    tj_array c = tj_array_binary(g, TJ_AOP_ADD, b, b);
    tj_array_release(g, b); /* c still needs it */
    eval1(c);
    float out[8];
    cr_assert_eq(tj_array_read(g, c, out, sizeof out, &err), 0, "%s", err.msg);
    cr_assert_float_eq(out[3], 2 * expf(x[3]), 1e-5);
    tj_array_info info;
    cr_assert_neq(tj_array_get_info(g, b, &info), 0, "b died once c was evaluated");
    cr_assert_eq(tj_array_get_info(g, a, &info), 0, "a is still held");
}

Test(array, release_n_releases_each_in_order)
{
    static float x[8];
    fill(x, 8, 1.0f);
    tj_array a = wrap_f32(x, 1, (int64_t[]){8});
    tj_array b = tj_array_unary(g, TJ_AOP_EXP, a);
    tj_array c = tj_array_binary(g, TJ_AOP_ADD, b, b);
    tj_array d = tj_array_unary(g, TJ_AOP_NEGATIVE, c);
    tj_array_retain(g, c);
    tj_array dead[] = {b, c, 0, 9999}; /* 0 and an index past the arena are ignored, as by tj_array_release */
    tj_array_release_n(g, dead, 4);
    tj_array_release_n(g, NULL, 3);
    tj_array_info info;
    cr_assert_eq(tj_array_get_info(g, c, &info), 0, "c keeps its second hold");
    tj_array_release_n(g, &c, 1);
    eval1(d);
    float out[8];
    cr_assert_eq(tj_array_read(g, d, out, sizeof out, &err), 0, "%s", err.msg);
    cr_assert_float_eq(out[3], -2 * expf(x[3]), 1e-5);
    cr_assert_neq(tj_array_get_info(g, b, &info), 0, "b died once d was evaluated");
    cr_assert_neq(tj_array_get_info(g, c, &info), 0, "c too");
}

Test(array, text_round_trip_rebuilds_the_graph)
{
    static float x[6];
    fill(x, 6, 1.0f);
    tj_array a = wrap_f32(x, 2, (int64_t[]){2, 3});
    tj_array r = tj_array_reduce(g, TJ_AOP_SUM, tj_array_binary(g, TJ_AOP_MULTIPLY, a, a), (int[]){1}, 1, 1);
    tj_buf t1 = {0}, t2 = {0};
    cr_assert_eq(tj_graph_print(g, &r, 1, &t1, &err), 0, "%s", err.msg);
    tj_array in[1], out[1];
    cr_assert_eq(tj_graph_inputs(g, &r, 1, in, 1, &err), 1);
    cr_assert_eq(in[0], a);
    cr_assert_eq(tj_graph_parse(g, t1.data, t1.len, in, 1, out, 1, &err), 1, "%s", err.msg);
    cr_assert_eq(tj_graph_print(g, out, 1, &t2, &err), 0, "%s", err.msg);
    cr_assert_str_eq(t1.data, t2.data);
    eval1(out[0]);
    float v[2];
    cr_assert_eq(tj_array_read(g, out[0], v, sizeof v, &err), 0, "%s", err.msg);
    cr_assert_float_eq(v[1], x[3] * x[3] + x[4] * x[4] + x[5] * x[5], 1e-5);
    tj_buf_free(&t1);
    tj_buf_free(&t2);
    cr_assert_eq(tj_graph_parse(g, "%0 = exp f32[2] %7\n", 18, NULL, 0, out, 1, &err), -1);
    cr_assert(strstr(err.msg, "line 1"), "%s", err.msg);
}

/* Graph text read once into a program, built twice over other inputs (as
 * tnp.compile's replay does): each build is the graph the text says; a
 * build whose input does not match names the line; a malformed line fails
 * the read and names it. */
Test(array, a_program_builds_its_graph_again_without_the_text)
{
    static float x[6], y[6];
    fill(x, 6, 1.0f);
    fill(y, 6, 2.0f);
    tj_array a = wrap_f32(x, 2, (int64_t[]){2, 3}), b = wrap_f32(y, 2, (int64_t[]){2, 3});
    tj_array r = tj_array_binary(g, TJ_AOP_ADD, tj_array_unary(g, TJ_AOP_EXP, a), tj_array_scalar(g, TJ_DT_F64, 2, 1));
    tj_buf t1 = {0}, t2 = {0};
    cr_assert_eq(tj_graph_print(g, &r, 1, &t1, &err), 0, "%s", err.msg);
    tj_graph_program *p = tj_graph_program_parse(t1.data, t1.len, &err);
    cr_assert(p, "%s", err.msg);
    const float *data[] = {x, y};
    tj_array ins[] = {a, b};
    for (int i = 0; i < 2; i++) {
        tj_array out;
        cr_assert_eq(tj_graph_program_build(g, p, &ins[i], 1, &out, 1, &err), 1, "%s", err.msg);
        cr_assert_eq(tj_graph_print(g, &out, 1, &t2, &err), 0, "%s", err.msg);
        cr_assert_str_eq(t1.data, t2.data);
        tj_buf_free(&t2);
        t2 = (tj_buf){0};
        eval1(out);
        float v[6];
        cr_assert_eq(tj_array_read(g, out, v, sizeof v, &err), 0, "%s", err.msg);
        cr_assert_float_eq(v[4], expf(data[i][4]) + 2, 1e-5);
        tj_array_release(g, out);
    }
    tj_array other = wrap_f32(x, 1, (int64_t[]){6}), out;
    cr_assert_eq(tj_graph_program_build(g, p, &other, 1, &out, 1, &err), -1, "an input of another shape was taken");
    cr_assert(strstr(err.msg, "line 1: input 0 is f32[6], the text says f32[2, 3]"), "%s", err.msg);
    tj_graph_program_free(p);
    tj_buf_free(&t1);
    const char *bad = "%0 = input f32[2]\n%1 = exp f32[2] %0 axis=\n";
    cr_assert_null(tj_graph_program_parse(bad, strlen(bad), &err));
    cr_assert(strstr(err.msg, "line 2: unexpected text after the node"), "%s", err.msg);
}

/* The graph text entries take a NULL err (array.h): on bad text, a build
 * whose input does not match and a step that fails they return the failure
 * without writing through it. */
Test(array, graph_text_entries_fail_without_an_err)
{
    static float x[6];
    fill(x, 6, 1.0f);
    tj_array a = wrap_f32(x, 2, (int64_t[]){2, 3}), out;
    const char *bad = "%0 = exp f32[2] %7\n";
    cr_assert_eq(tj_graph_parse(g, bad, strlen(bad), NULL, 0, &out, 1, NULL), -1);
    cr_assert_null(tj_graph_program_parse(bad, strlen(bad), NULL));
    const char *text = "%0 = input f32[6]\n";
    cr_assert_eq(tj_graph_parse(g, text, strlen(text), &a, 1, &out, 1, NULL), -1, "an input of another shape");
    tj_graph_program *p = tj_graph_program_parse(text, strlen(text), NULL);
    cr_assert(p);
    cr_assert_eq(tj_graph_program_build(g, p, &a, 1, &out, 1, NULL), -1, "an input of another shape");
    tj_graph_program_free(p);
    tj_array flat = wrap_f32(x, 1, (int64_t[]){6});
    const char *mistyped = "%0 = input f32[6]\n%1 = exp f32[2] %0\n";
    p = tj_graph_program_parse(mistyped, strlen(mistyped), NULL);
    cr_assert(p);
    cr_assert_eq(tj_graph_program_build(g, p, &flat, 1, &out, 1, NULL), -1, "a step of another type");
    tj_graph_program_free(p);
}

Test(array, every_dtype_round_trips_through_astype)
{
    static const tj_dtype dts[] = {TJ_DT_BOOL, TJ_DT_I8, TJ_DT_I16, TJ_DT_I32, TJ_DT_I64, TJ_DT_U8, TJ_DT_U16,
                                   TJ_DT_U32, TJ_DT_U64, TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32, TJ_DT_F64};
    static float x[5] = {0, 1, 2, 3, 100};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        tj_array a = wrap_f32(x, 1, (int64_t[]){5});
        tj_array b = tj_array_astype(g, tj_array_astype(g, a, dts[i]), TJ_DT_F32);
        eval1(b);
        float out[5];
        cr_assert_eq(tj_array_read(g, b, out, sizeof out, &err), 0, "%s", err.msg);
        float want = dts[i] == TJ_DT_BOOL ? 1.0f : 100.0f;
        cr_assert_float_eq(out[4], want, 1e-6, "%s: %g", tj_dtype_name(dts[i]), out[4]);
        cr_assert_float_eq(out[2], dts[i] == TJ_DT_BOOL ? 1.0f : 2.0f, 1e-6, "%s", tj_dtype_name(dts[i]));
    }
}

Test(array, plan_text_names_the_groups)
{
    tj_array x = tj_array_input(g, TJ_DT_F32, 2, (int64_t[]){8, 64});
    tj_array y = tj_array_layer_norm(g, x, 0, 0, 1e-5);
    tj_buf b = {0};
    cr_assert_eq(tj_graph_plan(g, &y, 1, "tile", &b, &err), 0, "%s", err.msg);
    cr_assert(strstr(b.data, "group 0 reduce"), "%s", b.data);
    cr_assert(strstr(b.data, "row (whole rows of 64 in one tile)"), "%s", b.data);
    cr_assert(!strstr(b.data, "group 1"), "layer norm is one group: %s", b.data);
    tj_buf_free(&b);
    cr_assert_neq(tj_graph_plan(g, &y, 1, "lower", &b, &err), 0);
}

Test(array, dead_slots_are_reused_and_order_is_by_dependency)
{
    static float x[16];
    fill(x, 16, 1.0f);
    tj_array a = wrap_f32(x, 1, (int64_t[]){16});
    tj_array first = 0;
    for (int round = 0; round < 50; round++) { /* the arena stays as large as the live graph */
        tj_array e = tj_array_unary(g, TJ_AOP_EXP, a);
        tj_array s = tj_array_reduce(g, TJ_AOP_SUM, e, NULL, 0, 0);
        tj_array_release(g, e);
        eval1(s);
        if (!first)
            first = s;
        cr_assert_leq(s, first + 4, "round %d: node %u, the first was %u", round, s, first);
        tj_array_release(g, s);
    }
    /* a node in a reused slot may have a lower index than its input: the
     * passes order by dependency, not by index */
    tj_array low = tj_array_unary(g, TJ_AOP_NEGATIVE, a);
    tj_array high = tj_array_unary(g, TJ_AOP_EXP, a);
    tj_array_release(g, low);
    tj_array y = tj_array_binary(g, TJ_AOP_MULTIPLY, high, high);
    cr_assert_lt(y, high, "y took the freed lower slot");
    eval1(y);
    float out[16];
    cr_assert_eq(tj_array_read(g, y, out, sizeof out, &err), 0, "%s", err.msg);
    cr_assert_float_eq(out[5], expf(x[5]) * expf(x[5]), 1e-4);
}

Test(array, tune_times_the_configurations_and_keeps_a_winner)
{
    enum { M = 8, N = 256 };
    static float x[M * N], out[M];
    fill(x, M * N, 1.0f);
    tj_array a = wrap_f32(x, 2, (int64_t[]){M, N});
    tj_array s = tj_array_reduce(g, TJ_AOP_SUM, tj_array_unary(g, TJ_AOP_EXP, a), (int[]){1}, 1, 0);
    cr_assert_eq(tj_array_tune(g, &s, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(stats().tunings, 1);
    cr_assert_eq(tj_array_read(g, s, out, sizeof out, &err), 0, "%s", err.msg);
    double ref = 0;
    for (int j = 0; j < N; j++)
        ref += exp((double)x[j]);
    cr_assert_float_eq(out[0], ref, 1e-4 * ref);
    /* the same kernel and signature again: no tuning, the kept winner */
    tj_array s2 = tj_array_reduce(g, TJ_AOP_SUM, tj_array_unary(g, TJ_AOP_EXP, a), (int[]){1}, 1, 0);
    eval1(s2);
    cr_assert_eq(stats().tunings, 1);
    cr_assert_geq(stats().cache_hits, 1);
}
