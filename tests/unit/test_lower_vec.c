/* The tile parameter `vec` (docs/language.md): how many consecutive
 * elements a thread owns along a tile's last axis in the GPU lowering's
 * canonical layout. Every value is checked against the reference
 * interpreter, its effect on the scan's code is counted, and a value the
 * lowering cannot take is an error, not a silent default. */
#include <criterion/criterion.h>

#include "lower_check.h"

static tj_ctx *ctx;
static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }
TestSuite(lower_vec, .init = setup, .fini = teardown);

/* a recurrence h = a h + b over rows of 512 steps: a scan whose in-thread
 * part runs over a thread's consecutive elements */
static const char *const SCAN =
    "fn step(a1: f32, b1: f32, a2: f32, b2: f32) -> (f32, f32) { return (a1 * a2, fma(a2, b1, b2)) }\n"
    "kernel rec(A: f32[R, L], B: f32[R, L], H: f32[R, L]) grid (R)\n"
    "    tune vec in [4], warps in [2]\n"
    "{\n"
    "    r = program_id(0)\n"
    "    (_, h) = scan(load(A[r, 0:512]), load(B[r, 0:512]), axis = 0, combine = step)\n"
    "    store(H[r, 0:512], h)\n"
    "}\n";

Test(lower_vec, every_value_matches_the_interpreter)
{
    static const char *const defines[] = {"vec=1", "vec=2", "vec=4", "vec=8", "vec=16", "vec=64"};
    for (size_t i = 0; i < sizeof defines / sizeof *defines; i++) {
        lc_opts o = lc_defaults();
        o.defines = defines[i];
        o.shapes = "R=3,L=500"; /* the last 12 steps of each row past the end */
        o.lo = 0.5, o.hi = 1.0;
        o.rtol = 1e-3;
        cr_assert(lc_check_tj(SCAN, "rec", &o), "%s", defines[i]);
    }
}

static tj_kernel *lower(const char *defines)
{
    tj_binding defs[4], dims[2];
    uint32_t nd = lc_bindings(ctx, defines, defs, 4), ns = lc_bindings(ctx, "R=3,L=512", dims, 2);
    tj_program *p = tj_parse_program(ctx, "k.tj", SCAN, strlen(SCAN));
    tj_kernel *k = p ? tj_build_kernel(ctx, p, 0, defs, nd, dims, ns) : NULL;
    cr_assert(k, "%s", tj_diag_render(ctx));
    return k;
}


/* 512 steps on 64 threads: 8 a thread. With vec 8 they are consecutive, one
 * chunk, so one lane scan of (a, b): 5 levels of two shfl_up (and the shift
 * that turns it exclusive). With vec 4 a thread holds two runs of 4, 256
 * steps apart: two chunks, each with its own lane scan. */
Test(lower_vec, consecutive_elements_take_one_lane_scan)
{
    tj_pipeline_options po = {.verify = 1};
    tj_kernel *one = tj_compile_simt(lower("warps=2,vec=8"), &po), *two = tj_compile_simt(lower("warps=2,vec=4"), &po);
    cr_assert(one && two, "%s", tj_diag_render(ctx));
    int shfl_one = lc_count_op(one, TJ_OP_SHFL_UP), shfl_two = lc_count_op(two, TJ_OP_SHFL_UP);
    cr_expect_eq(2 * shfl_one, shfl_two, "vec 8: %d shfl_up, vec 4: %d", shfl_one, shfl_two);
    cr_expect_eq(shfl_one, 2 * 5 + 2, "vec 8: %d shfl_up", shfl_one);
}

/* A kernel built with a vec the front end would refuse (set afterwards, as
 * an API user or another front end could): the lowering says why. */
Test(lower_vec, a_vec_the_lowering_cannot_take_is_an_error)
{
    static const int64_t bad[] = {0, -4, 3, 128};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tj_kernel *k = lower("warps=2,vec=4");
        for (uint32_t c = 0; c < k->nconfig; c++)
            if (!strcmp(k->config[c].name, TJ_PARAM_VEC))
                k->config[c].value = bad[i];
        cr_assert_null(tj_lower_simt(k, NULL), "vec = %lld was lowered", (long long)bad[i]);
        char want[96];
        snprintf(want, sizeof want, "vec = %lld: the lowering needs a power of two from 1 to 64", (long long)bad[i]);
        cr_assert(strstr(tj_diag_render(ctx), want), "%s", tj_diag_render(ctx));
        tj_diag_clear(ctx);
    }
}
