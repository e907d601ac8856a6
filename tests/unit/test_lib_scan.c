/* tilejit lib's scans (tilejit/lib.h) on the cpu, native code and the
 * reference interpreter, against a sequential loop. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib_source.h"
#include "lib_test_util.h"

static void close_lib(tj_lib *l, tj_jit *j)
{
    tj_lib_close(l);
    tj_jit_close(j);
}

/* cumsum of n i32 along a 1-D array on `stream`, checked exactly (flags:
 * 0, the single-pass look-back, or TJ_LIB_MULTI_PHASE) */
static void check_cumsum_1d(tj_lib *l, int64_t n, uint32_t flags, void *stream)
{
    int32_t *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        x[i] = (int32_t)((i * 7919) % 13) - 6;
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_I32, 1, &n), ty = tj_tensor_contiguous(y, TJ_DT_I32, 1, &n);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_cumsum(l, &tx, &ty, 0, flags, stream, &err), 0, "%s", err.msg);
    int32_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += x[i];
        cr_assert_eq(y[i], acc, "n %lld: y[%lld] = %d, expected %d", (long long)n, (long long)i, y[i], acc);
    }
    free(x);
    free(y);
}

static void cumsum_sizes(tj_device_kind kind, uint32_t flags)
{
    tj_jit *j;
    tj_lib *l = open_lib(kind, &j);
    int64_t sizes[] = {0, 1, 2, 2049, 8191, 8192, 8193, 3 * 8192 + 17}; /* around scan.tj's tiles of 8192 */
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        check_cumsum_1d(l, sizes[i], flags, NULL);
    close_lib(l, j);
}

Test(lib_scan, cumsum_1d_native) { cumsum_sizes(TJ_DEVICE_CPU, 0); }
Test(lib_scan, cumsum_1d_interp) { cumsum_sizes(TJ_DEVICE_INTERP, 0); }
Test(lib_scan, cumsum_1d_multi_phase_native) { cumsum_sizes(TJ_DEVICE_CPU, TJ_LIB_MULTI_PHASE); }
Test(lib_scan, cumsum_1d_multi_phase_interp) { cumsum_sizes(TJ_DEVICE_INTERP, TJ_LIB_MULTI_PHASE); }

/* Each stream has its own scratch, kept until close (a CUDA graph captured
 * on a new stream keeps using its address): many more streams than the 8 a
 * fixed table once held, sizes growing so that some outgrow their scratch
 * and others reuse it, and every result right (the cpu runs any stream
 * token in order). */
Test(lib_scan, many_streams)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    char streams[40];
    for (int round = 0; round < 2; round++)
        for (int s = 0; s < 40; s++)
            check_cumsum_1d(l, 8192 * (1 + (s + round) % 3) + s, s % 2 ? TJ_LIB_MULTI_PHASE : 0, &streams[s]);
    close_lib(l, j);
}

/* The look-back over several lines (tickets run across them: tile 0 of a
 * line starts its chain again) and many tiles, repeated so that the native
 * cpu's concurrent programs meet in different orders; f32 sums of small
 * integers are exact. */
static void lookback_lines(tj_device_kind kind, int repeats)
{
    tj_jit *j;
    tj_lib *l = open_lib(kind, &j);
    enum { P = 3, N = 9 * 8192 + 5 };
    float *x = malloc(sizeof *x * P * N), *y = malloc(sizeof *y * P * N);
    for (int64_t i = 0; i < (int64_t)P * N; i++)
        x[i] = (float)((i * 7919) % 5) - 2.0f;
    int64_t shape[] = {P, N};
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, shape), ty = tj_tensor_contiguous(y, TJ_DT_F32, 2, shape);
    for (int rep = 0; rep < repeats; rep++) {
        tj_rt_error err = {{0}};
        memset(y, 0, sizeof *y * P * N);
        cr_assert_eq(tj_lib_cumsum(l, &tx, &ty, 1, 0, NULL, &err), 0, "%s", err.msg);
        for (int p = 0; p < P; p++) {
            float acc = 0;
            for (int64_t i = 0; i < N; i++) {
                acc += x[p * N + i];
                cr_assert_eq(y[p * N + i], acc, "run %d: y[%d, %lld] = %g, expected %g", rep, p, (long long)i,
                             y[p * N + i], acc);
            }
        }
    }
    free(x);
    free(y);
    close_lib(l, j);
}

Test(lib_scan, lookback_lines_native) { lookback_lines(TJ_DEVICE_CPU, 20); }
Test(lib_scan, lookback_lines_interp) { lookback_lines(TJ_DEVICE_INTERP, 1); }

/* cummax and a custom combine along a line of 17 tiles through the
 * look-back (the columns test takes the multi-phase kernels): all values
 * negative, so zeros of padding taken into a maximum would show; i64
 * products of +-1, exact. */
static void lookback_combines(tj_device_kind kind)
{
    tj_jit *j;
    tj_lib *l = open_lib(kind, &j);
    enum { N = 16 * 8192 + 1001 };
    float *x = malloc(sizeof *x * N), *y = malloc(sizeof *y * N);
    int64_t *a = malloc(sizeof *a * N), *b = malloc(sizeof *b * N), n = N;
    for (int64_t i = 0; i < N; i++) {
        x[i] = -2000.0f + (float)((i * 7919) % 997) + (float)(i / 8192);
        a[i] = (i * 7919) % 5 ? 1 : -1;
    }
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 1, &n), ty = tj_tensor_contiguous(y, TJ_DT_F32, 1, &n);
    tj_tensor ta = tj_tensor_contiguous(a, TJ_DT_I64, 1, &n), tb = tj_tensor_contiguous(b, TJ_DT_I64, 1, &n);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_cummax(l, &tx, &ty, 0, 0, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_lib_scan(l, &ta, &tb, 0, "a * b", 0, NULL, &err), 0, "%s", err.msg);
    float m = -INFINITY;
    int64_t p = 1;
    for (int64_t i = 0; i < N; i++) {
        m = fmaxf(m, x[i]);
        p *= a[i];
        cr_assert_eq(y[i], m, "cummax y[%lld] = %g, expected %g", (long long)i, y[i], m);
        cr_assert_eq(b[i], p, "product y[%lld] = %lld, expected %lld", (long long)i, (long long)b[i], (long long)p);
    }
    free(x);
    free(y);
    free(a);
    free(b);
    close_lib(l, j);
}

Test(lib_scan, lookback_combines_native) { lookback_combines(TJ_DEVICE_CPU); }
Test(lib_scan, lookback_combines_interp) { lookback_combines(TJ_DEVICE_INTERP); }

/* The two look-back tests' shared shape: P lines of NT tiles of B i32 in
 * the interpreter, the ticket counter starting at K (tiles 0..K-1 of line 0
 * published by hand, never run). */
enum { LB_P = 2, LB_B = 16, LB_NT = 20, LB_N = LB_NT * LB_B, LB_K = 7, LB_G = LB_P * LB_NT + LB_K };

static void lookback_input(int32_t *x)
{
    for (int i = 0; i < LB_P * LB_N; i++)
        x[i] = 1 + (i * 7919) % 11; /* positive: a tile counted twice or missed shows */
}

static int32_t tile_sum(const int32_t *x, int t)
{
    int32_t sum = 0;
    for (int i = 0; i < LB_B; i++)
        sum += x[t * LB_B + i];
    return sum;
}

/* compiles `kernel` of the library's scan.tj at tiles of LB_B, windows of 2,
 * and launches it once in the interpreter */
static void launch_lookback_interp(const char *kernel, tj_arg *args, int nargs)
{
    char *src = ls_lib_source("scan", NULL, LS_SCAN_SUM("i32", "u32"));
    cr_assert(src);
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    tj_binding params[] = {{"B", LB_B}, {"W", 2}, {"warps", 1}};
    tj_fn *f = tj_jit_compile(j, &(tj_compile_request){.file = "scan.tj", .source = src, .len = strlen(src),
                                                       .kernel = kernel, .params = params, .nparams = 3,
                                                       .args = args, .nargs = nargs},
                              &err);
    cr_assert(f, "%s", err.msg);
    cr_assert_eq(tj_fn_launch(f, args, nargs, NULL, &err), 0, "%s", err.msg);
    tj_fn_release(f);
    tj_jit_close(j);
    free(src);
}

/* checks line p's running sums (line 0's first K tiles: no program ran
 * them, so they stay 0) and returns the line's total */
static int32_t check_lookback_line(const int32_t *x, const int32_t *y, int p)
{
    int32_t acc = 0;
    for (int i = 0; i < LB_N; i++) {
        acc += x[p * LB_N + i];
        int32_t want = p == 0 && i < LB_K * LB_B ? 0 : acc;
        cr_assert_eq(y[p * LB_N + i], want, "y[%d, %d] = %d, expected %d", p, i, y[p * LB_N + i], want);
    }
    return acc;
}

/* scan_lookback itself (tiles of 16, look-back windows of W = 2: the
 * library's are 8192 and 256) in the interpreter, where programs run in
 * ticket order, so that a look-back meets what a GPU's many running tiles
 * show it only when the state is set up so: the ticket counter starts at
 * K = 7 and tiles 1..6 of line 0 have published their aggregates only
 * (tile 0 its prefix), so ticket 7 absorbs windows of aggregates only
 * before it finds the prefix 7 tiles back; then the run goes on over line
 * 0's other tiles and line 1 (the tickets past the last line read and
 * write nothing: their line is out of bounds). i32 sums, exact. */
Test(lib_scan, lookback_published_aggregates_interp)
{
    int32_t x[LB_P * LB_N], y[LB_P * LB_N] = {0}, agg[LB_G] = {0}, inc[LB_G] = {0}, flags[LB_G + 1] = {0};
    lookback_input(x);
    for (int t = 0; t < LB_K; t++) {
        agg[t] = tile_sum(x, t);
        flags[t] = t ? 1 : 2;
        inc[t] = t ? -1000000 : agg[t]; /* a prefix that is not published is never read */
    }
    flags[LB_G] = LB_K;
    int64_t xs[] = {LB_P, LB_N}, gs[] = {LB_G}, one[] = {1};
    tj_arg args[] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_I32, 2, xs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_I32, 2, xs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(agg, TJ_DT_I32, 1, gs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(inc, TJ_DT_I32, 1, gs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(flags, TJ_DT_I32, 1, gs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(flags + LB_G, TJ_DT_I32, 1, one)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_I32, 1, (int64_t[]){LB_P})},
                     {.is_tensor = 0, .scalar.i = 0}};
    launch_lookback_interp("scan_lookback", args, 8);
    for (int p = 0; p < LB_P; p++)
        check_lookback_line(x, y, p);
}

/* The same set-up for scan_lookback_packed, the kernel of values of at most
 * 32 bits: tiles 1..6 of line 0 publish words 1 << 32 | aggregate, tile 0
 * 2 << 32 | its prefix; then the run goes on from ticket 7. */
Test(lib_scan, lookback_packed_published_aggregates_interp)
{
    int32_t x[LB_P * LB_N], y[LB_P * LB_N] = {0}, ticket[1] = {LB_K};
    uint64_t words[LB_G] = {0};
    lookback_input(x);
    for (int t = 0; t < LB_K; t++)
        words[t] = (uint64_t)(t ? 1 : 2) << 32 | (uint32_t)tile_sum(x, t);
    int64_t xs[] = {LB_P, LB_N}, gs[] = {LB_G}, one[] = {1};
    tj_arg args[] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_I32, 2, xs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_I32, 2, xs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(words, TJ_DT_U64, 1, gs)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(ticket, TJ_DT_I32, 1, one)},
                     {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_I32, 1, (int64_t[]){LB_P})},
                     {.is_tensor = 0, .scalar.i = 0}};
    launch_lookback_interp("scan_lookback_packed", args, 6);
    for (int p = 0; p < LB_P; p++) {
        int32_t acc = check_lookback_line(x, y, p);
        uint64_t last = words[p * LB_NT + LB_NT - 1];
        cr_assert_eq(last >> 32, 2, "line %d's last tile published its prefix", p);
        cr_assert_eq((int32_t)(uint32_t)last, acc, "line %d's last prefix %d, expected %d", p,
                     (int32_t)(uint32_t)last, acc);
    }
}

Test(lib_scan, columns_and_combines)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    enum { R = 131, C = 45 };
    static float x[R * C], y[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((i * 37) % 101) / 7.0f - 5.0f;
    int64_t shape[] = {R, C};
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 2, shape), ty = tj_tensor_contiguous(y, TJ_DT_F32, 2, shape);
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_lib_cummax(l, &tx, &ty, 0, 0, NULL, &err), 0, "%s", err.msg);
    for (int c = 0; c < C; c++) {
        float m = -INFINITY;
        for (int r = 0; r < R; r++) {
            m = fmaxf(m, x[r * C + c]);
            cr_assert_eq(y[r * C + c], m, "cummax [%d, %d]", r, c);
        }
    }
    cr_assert_eq(tj_lib_scan(l, &tx, &ty, -1, "a + b", 0, NULL, &err), 0, "%s", err.msg);
    for (int r = 0; r < R; r++) {
        float s = 0;
        for (int c = 0; c < C; c++) {
            s += x[r * C + c];
            cr_assert_float_eq(y[r * C + c], s, 1e-4f, "scan a + b along rows [%d, %d]", r, c);
        }
    }
    close_lib(l, j);
}

Test(lib_scan, errors)
{
    tj_jit *j;
    tj_lib *l = open_lib(TJ_DEVICE_CPU, &j);
    float x[8] = {0}, y[8];
    int32_t yi[8];
    int64_t n = 8;
    tj_tensor tx = tj_tensor_contiguous(x, TJ_DT_F32, 1, &n), ty = tj_tensor_contiguous(y, TJ_DT_F32, 1, &n);
    tj_tensor tyi = tj_tensor_contiguous(yi, TJ_DT_I32, 1, &n);
    tj_rt_error err = {{0}};
    cr_assert_neq(tj_lib_cumsum(l, &tx, &ty, 1, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "axis 1 is out of range"), "%s", err.msg);
    cr_assert_neq(tj_lib_cumsum(l, &tx, &tyi, 0, 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "the output is i32, the input f32"), "%s", err.msg);
    cr_assert_neq(tj_lib_scan(l, &tx, &ty, 0, "a +* b", 0, NULL, &err), 0);
    cr_assert(strstr(err.msg, "error"), "%s", err.msg);
    cr_assert_neq(tj_lib_cumsum(NULL, &tx, &ty, 0, 0, NULL, &err), 0);
    close_lib(l, j);
}
