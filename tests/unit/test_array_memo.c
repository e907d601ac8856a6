/* The plan memo (array/memo.c): a repeated graph takes its plan, tiles and
 * kernels from the memo and compiles nothing; everything that makes the
 * emitted text differ (a shape, a dtype, a constant, a view's strides,
 * broadcasting) misses it, and every evaluation gives the right values. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tilejit/array.h"

enum { M = 6, N = 6 };

static tj_graph *g;
static tj_rt_error err;
static float x[M * N], y[M * N], z[M * N], out[M * N];

static void setup(void)
{
    g = tj_graph_new(TJ_DEVICE_CPU, 0, &err);
    cr_assert(g, "%s", err.msg);
    for (int i = 0; i < M * N; i++) {
        x[i] = (float)((i * 37) % 23 - 11) / 11.0f;
        y[i] = (float)((i * 13) % 17 - 8) / 8.0f;
        z[i] = (float)(i % 5) - 2.0f;
    }
}

static void teardown(void) { tj_graph_free(g); }

TestSuite(array_memo, .init = setup, .fini = teardown);

static tj_graph_stats stats(void)
{
    tj_graph_stats s;
    tj_graph_get_stats(g, &s);
    return s;
}

static tj_array wrap(float *data, int rank, const int64_t *shape)
{
    tj_tensor t = tj_tensor_contiguous(data, TJ_DT_F32, rank, shape);
    tj_array a = tj_array_wrap(g, &t);
    cr_assert(a, "%s", tj_graph_error(g));
    return a;
}

/* How the graph below varies from x * y + z * 0.5 over f32[M, N]. */
typedef struct variant {
    int rows;       /* of x, y, z (the shape) */
    int f64;        /* x as f64 (the dtype) */
    double c;       /* the constant */
    int transposed; /* x read as x.T (a view's strides) */
    int broadcast;  /* y as its first row, f32[N] (broadcasting) */
} variant;

static const variant base = {M, 0, 0.5, 0, 0};

/* Builds and evaluates v's graph into out; 1 when the memo gave its plan. */
static int run(variant v)
{
    tj_graph_stats before = stats();
    tj_array ax = wrap(x, 2, (int64_t[]){v.rows, N}), az = wrap(z, 2, (int64_t[]){v.rows, N});
    tj_array ay = v.broadcast ? wrap(y, 1, (int64_t[]){N}) : wrap(y, 2, (int64_t[]){v.rows, N});
    tj_array xs = v.transposed ? tj_array_transpose(g, ax, (int[]){1, 0}) : ax;
    tj_array xd = v.f64 ? tj_array_astype(g, xs, TJ_DT_F64) : xs;
    tj_array c = tj_array_scalar(g, TJ_DT_F32, v.c, 1);
    tj_array xy = tj_array_binary(g, TJ_AOP_MULTIPLY, xd, ay), zc = tj_array_binary(g, TJ_AOP_MULTIPLY, az, c);
    tj_array r = tj_array_binary(g, TJ_AOP_ADD, xy, zc);
    cr_assert(r, "build: %s", tj_graph_error(g));
    tj_array f = v.f64 ? tj_array_astype(g, r, TJ_DT_F32) : r;
    cr_assert_eq(tj_array_eval(g, &f, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_array_read(g, f, out, sizeof out, &err), 0, "%s", err.msg);
    for (int i = 0; i < v.rows; i++)
        for (int j = 0; j < N; j++) {
            double xv = v.transposed ? x[j * N + i] : x[i * N + j], yv = v.broadcast ? y[j] : y[i * N + j];
            double want = xv * yv + z[i * N + j] * v.c;
            cr_assert(fabs(out[i * N + j] - want) < 1e-5, "[%d, %d]: %g, want %g", i, j, out[i * N + j], want);
        }
    tj_array made[] = {ax, ay, az, xs, xd, c, xy, zc, r, f};
    for (unsigned i = 0; i < sizeof made / sizeof *made; i++) {
        unsigned j = 0;
        while (j < i && made[j] != made[i])
            j++;
        if (j == i) /* not released already (xs, xd, f may be what they were made from) */
            tj_array_release(g, made[i]);
    }
    return stats().plans_reused - before.plans_reused == 1;
}

Test(array_memo, an_identical_graph_hits_and_compiles_nothing)
{
    cr_assert_not(run(base), "a first evaluation has nothing to reuse");
    float first[M * N];
    memcpy(first, out, sizeof out);
    tj_graph_stats before = stats();
    cr_assert(run(base), "the same graph again: the memo's plan");
    tj_graph_stats after = stats();
    cr_assert_eq(after.kernels_compiled, before.kernels_compiled);
    cr_assert_eq(after.cache_hits - before.cache_hits, 1);
    cr_assert_eq(after.kernels_launched - before.kernels_launched, 1);
    cr_assert_eq(after.kernels_emitted, before.kernels_emitted, "a hit emits no kernel text");
    cr_assert_eq(memcmp(first, out, sizeof out), 0, "the same bits");
}

Test(array_memo, what_changes_the_kernel_text_misses)
{
    cr_assert_not(run(base));
    variant shape = base, dtype = base, constant = base, view = base, bcast = base;
    shape.rows = M - 2;
    dtype.f64 = 1;
    constant.c = 0.25;
    view.transposed = 1;
    bcast.broadcast = 1;
    const variant vs[] = {shape, dtype, constant, view, bcast};
    const char *what[] = {"a shape", "a dtype", "a constant", "a view's strides", "broadcasting"};
    for (int i = 0; i < 5; i++)
        cr_assert_not(run(vs[i]), "%s changed: the memo must miss", what[i]);
    for (int i = 0; i < 5; i++)
        cr_assert(run(vs[i]), "%s's graph again: a hit", what[i]);
    cr_assert(run(base));
}

Test(array_memo, a_shared_leaf_is_not_two_leaves)
{
    /* x * x + z * c and x * y + z * c differ only in which leaf is read */
    cr_assert_not(run(base));
    tj_array ax = wrap(x, 2, (int64_t[]){M, N}), az = wrap(z, 2, (int64_t[]){M, N});
    tj_array c = tj_array_scalar(g, TJ_DT_F32, 0.5, 1);
    tj_array r = tj_array_binary(g, TJ_AOP_ADD, tj_array_binary(g, TJ_AOP_MULTIPLY, ax, ax),
                                 tj_array_binary(g, TJ_AOP_MULTIPLY, az, c));
    uint64_t reused = stats().plans_reused;
    cr_assert_eq(tj_array_eval(g, &r, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(stats().plans_reused, reused, "x * x is not x * y");
    cr_assert_eq(tj_array_read(g, r, out, sizeof out, &err), 0, "%s", err.msg);
    for (int i = 0; i < M * N; i++)
        cr_assert(fabs(out[i] - (x[i] * x[i] + z[i] * 0.5)) < 1e-5, "[%d]", i);
}

/* The ops with kernels of their own (other.c: gathers, scans, sorts,
 * concatenation) and the copies they make of non-contiguous operands are
 * replayed from the memo too: the second evaluation emits no kernel text,
 * compiles nothing and gives the same values. Over x.T (a copy first):
 * concatenate([take(x.T, idx, axis=1), cumsum(x.T, axis=1), sort(x.T * 2, axis=1)], axis=0). */
static int32_t idx[3] = {4, 0, -1}; /* -1 counts from the end, as NumPy's */

static int run_others(float *got)
{
    tj_graph_stats before = stats();
    tj_array ax = wrap(x, 2, (int64_t[]){M, N});
    tj_tensor ti = tj_tensor_contiguous(idx, TJ_DT_I32, 1, (int64_t[]){3});
    tj_array ai = tj_array_wrap(g, &ti);
    tj_array xt = tj_array_transpose(g, ax, (int[]){1, 0});
    tj_array two = tj_array_scalar(g, TJ_DT_F32, 2.0, 1);
    tj_array parts[3] = {tj_array_take(g, xt, ai, 1), tj_array_cumsum(g, xt, 1),
                         tj_array_sort(g, tj_array_binary(g, TJ_AOP_MULTIPLY, xt, two), 1)};
    tj_array r = tj_array_concatenate(g, parts, 3, 1);
    cr_assert(r, "build: %s", tj_graph_error(g));
    cr_assert_eq(tj_array_eval(g, &r, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_array_read(g, r, got, sizeof(float) * M * (3 + 2 * N), &err), 0, "%s", err.msg);
    tj_array made[] = {ax, ai, xt, two, parts[0], parts[1], parts[2], r};
    for (unsigned i = 0; i < sizeof made / sizeof *made; i++)
        tj_array_release(g, made[i]);
    return stats().plans_reused - before.plans_reused == 1;
}

static void check_others(const float *got)
{
    const int w = 3 + 2 * N;
    for (int i = 0; i < M; i++) { /* row i of x.T: column i of x */
        float col[N], sorted[N], sum = 0;
        for (int j = 0; j < N; j++)
            col[j] = sorted[j] = x[j * N + i];
        for (int j = 0; j < 3; j++) {
            int k = idx[j] < 0 ? idx[j] + N : idx[j];
            cr_assert_eq(got[i * w + j], col[k], "take [%d, %d]", i, j);
        }
        for (int j = 0; j < N; j++) {
            sum += col[j];
            cr_assert(fabsf(got[i * w + 3 + j] - sum) < 1e-5f, "cumsum [%d, %d]: %g, want %g", i, j,
                      got[i * w + 3 + j], sum);
        }
        for (int a = 1; a < N; a++) /* insertion sort of the column, times two */
            for (int b = a; b > 0 && sorted[b - 1] > sorted[b]; b--) {
                float t = sorted[b];
                sorted[b] = sorted[b - 1];
                sorted[b - 1] = t;
            }
        for (int j = 0; j < N; j++)
            cr_assert_eq(got[i * w + 3 + N + j], 2 * sorted[j], "sort [%d, %d]", i, j);
    }
}

Test(array_memo, gathers_scans_sorts_and_concatenation_replay_without_emitting)
{
    float first[M * (3 + 2 * N)], second[M * (3 + 2 * N)];
    cr_assert_not(run_others(first), "a first evaluation has nothing to reuse");
    check_others(first);
    tj_graph_stats before = stats();
    cr_assert_gt(before.kernels_emitted, 0);
    cr_assert(run_others(second), "the same graph again: the memo's plan");
    tj_graph_stats after = stats();
    cr_assert_eq(after.kernels_emitted, before.kernels_emitted, "a replay emits no kernel text (%llu written)",
                 (unsigned long long)(after.kernels_emitted - before.kernels_emitted));
    cr_assert_eq(after.kernels_compiled, before.kernels_compiled);
    cr_assert_eq(after.kernels_launched - before.kernels_launched, before.kernels_launched,
                 "the same launches as the first evaluation");
    cr_assert_eq(memcmp(first, second, sizeof first), 0, "the same bits");
}
