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
