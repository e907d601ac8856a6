/* The native cpu back end's float max/min along lines against the
 * interpreter, where they are maxnum/minnum beside a NaN flag and a
 * second look for the sign of a zero result (codegen/llvm/llvm_reduce.c):
 * lines with NaN, lines whose extreme is a zero of either sign (the sign
 * must be the interpreter's: +0 above -0), infinities, in buffered 2-D
 * tiles, fused rows and whole tiles, for f32, f64 and bf16; argmax (the
 * first NaN, else the first maximum, -0 and +0 tied) and argmin. */
#include <criterion/criterion.h>

#include "cpu_check.h"

/* BN: lines of 8 run the scalar loop; lines of 128 the vectorized one
 * (16 f32 lanes with AVX-512, interleaved), its NaN flag and zero search. */
#define LINES_SRC(BN)                                                                                              \
    "kernel lines(x: f32[M, N], d: f64[M, N], h: bf16[M, N],\n"                                                   \
    "              a: f32[M], b: f32[M], c: f64[M], e: bf16[M], f: f32[M], i: i32[M], j: i32[M])\n"                \
    "    grid (cdiv(M, BM))\n"                                                                                    \
    "    const BM = 4, BN = " BN "\n"                                                                             \
    "{\n"                                                                                                         \
    "    m = program_id(0) * BM\n"                                                                                \
    "    t = load(x[m:m+BM, 0:BN], other = -inf)\n"                                                               \
    "    store(a[m:m+BM], max(t, axis = 1))\n"                                                                    \
    "    store(b[m:m+BM], min(-t, axis = 1))\n"                                                                   \
    "    store(c[m:m+BM], max(load(d[m:m+BM, 0:BN], other = -inf), axis = 1))\n"                                  \
    "    store(e[m:m+BM], min(load(h[m:m+BM, 0:BN], other = inf), axis = 1))\n"                                   \
    "    store(f[m:m+1], reshape(max(t), [1]))\n"                                                                 \
    "    store(i[m:m+BM], argmax(t, axis = 1))\n"                                                                 \
    "    store(j[m:m+BM], argmin(t, axis = 1))\n"                                                                 \
    "}\n"

#define ROWS_SRC(BN)                                                                                               \
    "kernel rows(x: f32[M, N], y: f32[M], z: f32[M])\n"                                                           \
    "    grid (M)\n"                                                                                              \
    "{\n"                                                                                                         \
    "    r = program_id(0)\n"                                                                                     \
    "    store(y[r:r+1], reshape(max(load(x[r, 0:" BN "], other = -inf)), [1]))\n"                                 \
    "    store(z[r:r+1], reshape(min(load(x[r, 0:" BN "], other = inf)), [1]))\n"                                  \
    "}\n"

/* Long lines all hold a NaN at specials' rate (1 in 16): these drop NaN and
 * inf (-1 instead), so most lines' extreme is a zero of one sign. */
static const char *const FINITE_ROWS = "kernel finite(x: f32[M, N], y: f32[M], z: f32[M])\n"
                                       "    grid (M)\n"
                                       "{\n"
                                       "    r = program_id(0)\n"
                                       "    t = load(x[r, 0:128], other = -inf)\n"
                                       "    u = where(t == t && t < inf, t, -1.0)\n"
                                       "    store(y[r:r+1], reshape(max(u), [1]))\n"
                                       "    store(z[r:r+1], reshape(min(-u), [1]))\n"
                                       "}\n";

static const char *const LINES = LINES_SRC("8"), *const ROWS = ROWS_SRC("8");
static const char *const LONG_LINES = LINES_SRC("128"), *const LONG_ROWS = ROWS_SRC("128");

/* Values in [-2, 0) with NaN, inf, -0 and ties (which give +0) sprinkled:
 * most lines without a NaN have a zero extreme of one sign or the other. */
static lc_opts zeros_and_nans(const char *shapes)
{
    lc_opts o = lc_defaults();
    o.shapes = shapes;
    o.lo = -2, o.hi = 0;
    o.specials = 1;
    o.signed_zeros = 1;
    return o;
}

Test(cpu_reduce, max_and_min_keep_nan_and_the_sign_of_zero)
{
    CC_REQUIRE_LLVM();
    for (unsigned seed = 1; seed <= 3; seed++) {
        lc_opts o = zeros_and_nans("M=64,N=8");
        o.seed = seed;
        cr_assert(cc_check_tj(LINES, "lines", &o), "seed %u", seed);
        cr_assert(cc_check_tj(ROWS, "rows", &o), "seed %u", seed);
    }
    lc_opts o = zeros_and_nans("M=37,N=7"); /* edge rows: padded with -inf / inf */
    cr_assert(cc_check_tj(LINES, "lines", &o));
    cr_assert(cc_check_tj(ROWS, "rows", &o));
    o = lc_defaults(); /* plain values, long lines */
    o.shapes = "M=30,N=8";
    cr_assert(cc_check_tj(LINES, "lines", &o));
}

/* The same lines 128 long: the vector loop's lanes, not only its scalar
 * remainder, see the NaNs, infinities and signed zeros (a NaN flag or a
 * +0/-0 search that lost a lane shows here), in whole lines (N = 128) and
 * lines padded with -inf / inf (N = 100, 37 rows: an edge program). */
Test(cpu_reduce, long_lines_take_the_vector_loop)
{
    CC_REQUIRE_LLVM();
    static const char *const shapes[] = {"M=64,N=128", "M=37,N=100"};
    for (unsigned s = 0; s < 2; s++)
        for (unsigned seed = 1; seed <= 3; seed++) {
            lc_opts o = zeros_and_nans(shapes[s]);
            o.seed = seed;
            cr_assert(cc_check_tj(LONG_LINES, "lines", &o), "%s seed %u", shapes[s], seed);
            cr_assert(cc_check_tj(LONG_ROWS, "rows", &o), "%s seed %u", shapes[s], seed);
            cr_assert(cc_check_tj(FINITE_ROWS, "finite", &o), "%s seed %u", shapes[s], seed);
        }
}

/* argmax and argmin over rows padded past the tensor (a float argmax over
 * -inf padding stops at the inside part's end rounded up to whole vectors:
 * llvm_reduce.c, arg_line_end; what that could get wrong): rows all -inf
 * (index 0), -inf with one NaN, values with ties, signed zeros and NaN, from
 * starts -5 (padding before the row too), 0, 90 (10 inside) and 100 (nothing
 * inside: index 0), against the interpreter; an argmax padded with 0 (the
 * padding can be the maximum) and argmin padded with +inf (all-NaN rows
 * pick the padding's first +inf). */
static const char *const ARGS = "kernel args(X: f32[M, N], I: i32[M], J: i32[M], K: i32[M], c: i32)\n"
                                "    grid (1)\n"
                                "    const BM = 4, BN = 128\n"
                                "{\n"
                                "    t = load(X[0:BM, c:c+BN], other = -inf)\n"
                                "    store(I[0:BM], argmax(t, axis = 1))\n"
                                "    store(J[0:BM], argmin(load(X[0:BM, c:c+BN], other = inf), axis = 1))\n"
                                "    store(K[0:BM], argmax(load(X[0:BM, c:c+BN], other = 0.0), axis = 1))\n"
                                "}\n";

Test(cpu_reduce, arg_extremes_of_padded_rows)
{
    CC_REQUIRE_LLVM();
    enum { M = 4, N = 100 };
    static float x[M * N];
    for (int j = 0; j < N; j++) {
        x[j] = -INFINITY;
        x[N + j] = j == 37 ? NAN : -INFINITY;
        x[2 * N + j] = (float)((j * 7) % 13) - 6.0f; /* ties: the first 6 wins */
        x[3 * N + j] = j >= 90 ? NAN : (j % 2 ? -0.0f : 0.0f);
    }
    static const int starts[] = {-5, 0, 90, 100};
    for (unsigned s = 0; s < 4; s++) {
        tj_ctx *c = tj_ctx_new();
        tj_kernel *k = CC_TILE_KERNEL(c, ARGS, "M=4,N=100");
        int32_t ii[2][M], jj[2][M], kk[2][M];
        int64_t sx[2] = {M, N}, si[1] = {M};
        for (int run = 0; run < 2; run++) {
            tj_arg args[5] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_F32, 2, sx)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(ii[run], TJ_DT_I32, 1, si)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(jj[run], TJ_DT_I32, 1, si)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(kk[run], TJ_DT_I32, 1, si)},
                              {.scalar.i = starts[s]}};
            cc_run_on(c, k, args, 5, run);
        }
        for (int m = 0; m < M; m++)
            cr_expect(ii[0][m] == ii[1][m] && jj[0][m] == jj[1][m] && kk[0][m] == kk[1][m],
                      "start %d, row %d: argmax %d native %d, argmin %d native %d, argmax over 0 %d native %d", starts[s], m,
                      ii[0][m], ii[1][m], jj[0][m], jj[1][m], kk[0][m], kk[1][m]);
        tj_ctx_free(c);
    }
}
