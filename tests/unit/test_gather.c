/* gather(x, idx) (docs/language.md): the GPU lowering (shared memory) run
 * by the SIMT interpreter and the native cpu back end, each against the
 * reference interpreter on random tiles and random in-range indices: 1-,
 * 2-, 4- and 8-byte elements (f16, bf16, bool, u64 among them), index
 * dtypes of every width, sizes that are not a multiple of a warp, 1 to 8
 * warps, gathers chained in a loop (the buffer reused across iterations),
 * a table of 256 read at N indices, operands in the layouts of reductions.
 * An index outside the tile: the interpreter names it, the op's place and
 * n; the SIMT interpreter and the native cpu read x[min(idx, n - 1)] with
 * idx taken as unsigned. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "cpu_check.h"

static const char *const GATHER = "kernel g(X: %s[N], I: %s[N], J: %s[N], W: %s[256], Y: %s[N],\n"
                                  "         Z: %s[N], V: %s[N])\n"
                                  "    grid (1)\n"
                                  "{\n"
                                  "    x = load(X[0:N])\n"
                                  "    i = load(I[0:N])\n"
                                  "    store(Y[0:N], gather(x, i))\n"
                                  "    z = x\n"
                                  "    for r in range(3) {\n"
                                  "        z = gather(z, i)\n"
                                  "    }\n"
                                  "    store(Z[0:N], z)\n"
                                  "    store(V[0:N], gather(load(W[0:256]), load(J[0:N])))\n" /* a table */
                                  "}\n";

typedef struct gcase {
    const char *x, *idx;
} gcase;

static const gcase CASES[] = {{"f32", "i32"}, {"u64", "i32"}, {"f16", "i64"}, {"bf16", "u16"},
                              {"i8", "u64"},  {"bool", "i16"}, {"f64", "u8"}, {"i64", "u32"}};
static const int SIZES[] = {37, 200, 1000, 2048, 4096};

static void source(char *buf, size_t size, const gcase *g)
{
    snprintf(buf, size, GATHER, g->x, g->idx, g->idx, g->x, g->x, g->x, g->x);
}

static lc_opts options(int n, char *shapes, size_t ssize, char *range, size_t rsize)
{
    lc_opts o = lc_defaults();
    snprintf(shapes, ssize, "N=%d", n);
    snprintf(range, rsize, "I=0:%d,J=0:256", n);
    o.shapes = shapes;
    o.int_range = range;
    return o;
}

/* Every case and size through check (lc_check_tj: the SIMT interpreter;
 * cc_check_tj: the native cpu), against the reference interpreter. */
static void check_all(int (*check)(const char *, const char *, const lc_opts *), const char *who)
{
    char src[1024], shapes[32], range[32];
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++)
        for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++) {
            source(src, sizeof src, &CASES[c]);
            lc_opts o = options(SIZES[s], shapes, sizeof shapes, range, sizeof range);
            cr_assert(check(src, "g", &o), "%s: %s by %s, N=%d", who, CASES[c].x, CASES[c].idx, SIZES[s]);
        }
}

Test(gather, lowered_for_gpus) { check_all(lc_check_tj, "simt"); }

Test(gather, native_cpu)
{
    CC_REQUIRE_LLVM();
    check_all(cc_check_tj, "native");
}

/* x and idx in the layouts of reductions (slices of a 2-D layout), the
 * result in idx's */
static const char *const REDUCED = "kernel red(X: f32[8, N], I: i32[N], Y: f32[N], Z: f32[8])\n"
                                   "    grid (1)\n"
                                   "{\n"
                                   "    x = load(X[0:8, 0:N])\n"
                                   "    store(Y[0:N], gather(sum(x, 0), load(I[0:N])))\n"
                                   "    store(Z[0:8], gather(max(x, 1), argmax(x, 1) % 8))\n"
                                   "}\n";

Test(gather, reduced_layouts)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=200";
    o.int_range = "I=0:8";
    cr_assert(lc_check_tj(REDUCED, "red", &o));
    CC_REQUIRE_LLVM();
    cr_assert(cc_check_tj(REDUCED, "red", &o));
}

/* ---- indices outside the tile ---- */

static const char *const BAD = "kernel bad(X: f32[8], I: i32[8], Y: f32[8])\n"
                               "    grid (2)\n"
                               "{\n"
                               "    x = load(X[0:8])\n"
                               "    store(Y[0:8], gather(x, load(I[0:8])))\n"
                               "}\n";

static float bad_x[8] = {0, 1, 2, 3, 4, 5, 6, 7}, bad_y[8];
static int32_t bad_idx[8] = {1, 0, 3, -2, 9, 5, 8, 2};

static void bad_args(tj_arg *args)
{
    static int64_t n = 8;
    args[0] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(bad_x, TJ_DT_F32, 1, &n)};
    args[1] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(bad_idx, TJ_DT_I32, 1, &n)};
    args[2] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(bad_y, TJ_DT_F32, 1, &n)};
}

/* y as the GPUs and the native cpu compute it: the index clamped */
static void expect_clamped(const char *who)
{
    for (int i = 0; i < 8; i++) {
        uint64_t j = (uint64_t)(int64_t)bad_idx[i];
        cr_expect_eq(bad_y[i], bad_x[j < 7 ? j : 7], "%s: y[%d] = %g", who, i, bad_y[i]);
    }
}

Test(gather, outside_the_tile_is_reported_by_the_interpreter)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = CC_TILE_KERNEL(c, BAD, "");
    tj_arg args[3];
    bad_args(args);
    cr_assert_neq(tj_interp_run(k, args, 3), 0);
    const char *msg = tj_diag_render(c);
    cr_expect(strstr(msg, "test.tj:5:19: error: gather: index -2 (element 3 of the indices) is outside the tile of 8 "
                          "elements in program (0, 0, 0)"), "%s", msg);
    tj_ctx_free(c);
    /* through the JIT: the message (a launch error has no place) */
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    tj_fn *fn = tj_jit_compile(j, &(tj_compile_request){.file = "test.tj", .source = BAD, .len = strlen(BAD),
                                                        .kernel = "bad", .args = args, .nargs = 3},
                               &err);
    cr_assert(fn, "%s", err.msg);
    cr_assert_neq(tj_fn_launch(fn, args, 3, NULL, &err), 0);
    cr_expect(strstr(err.msg, "gather: index -2 (element 3 of the indices)"), "%s", err.msg);
    tj_jit_close(j);
}

Test(gather, outside_the_tile_is_clamped_on_gpus)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = CC_TILE_KERNEL(c, BAD, "");
    lc_run run = {.c = c, .nparams = 3};
    bad_args(run.simt);
    memset(bad_y, 0, sizeof bad_y);
    lc_opts o = lc_defaults();
    cr_assert(lc_lower_and_run(&run, k, 4, &o, "bad"), "%s", tj_diag_render(c));
    expect_clamped("simt");
    tj_ctx_free(c);
}

Test(gather, outside_the_tile_is_clamped_on_the_native_cpu)
{
    CC_REQUIRE_LLVM();
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = CC_TILE_KERNEL(c, BAD, "");
    tj_arg args[3];
    bad_args(args);
    memset(bad_y, 0, sizeof bad_y);
    cc_run_on(c, k, args, 3, 1);
    expect_clamped("native");
    tj_ctx_free(c);
}
