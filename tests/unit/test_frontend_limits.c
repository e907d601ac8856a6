/* The .tj front end, part 3: hostile input (issue 10). Every compile is
 * bounded by the size of its input, names are checked with hashes, the
 * back end's limits on warps, stages and fastmath are the front end's,
 * and line ends and byte order marks of other editors are accepted.
 * Large inputs are generated here, not committed. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "frontend/ast.h"
#include "lower/layout.h"
#include "tilejit/passes.h"
#include "tilejit/tilejit.h"

static tj_ctx *ctx;

static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }

TestSuite(limits, .init = setup, .fini = teardown);

static tj_program *parse(const char *text) { return tj_parse_program(ctx, "t.tj", text, strlen(text)); }

static int diag_has(const char *needle) { return strstr(tj_diag_render(ctx), needle) != NULL; }

/* `n` helpers hI(x) = hJ(hJ(hJ(x))) and an identity h<n>: 3^n inlined
 * calls that emit nothing, called once by a kernel. */
static char *tripling_helpers(int n)
{
    char *text = malloc((size_t)n * 80 + 256), *q = text;
    for (int i = 0; i < n; i++)
        q += sprintf(q, "fn h%d(x: f32) -> f32 { return h%d(h%d(h%d(x))) }\n", i, i + 1, i + 1, i + 1);
    sprintf(q, "fn h%d(x: f32) -> f32 { return x }\n"
               "kernel k(X: f32[N]) grid (1) {\n  x = load(X[0:16])\n  store(X[0:16], h0(x))\n}\n", n);
    return text;
}

static int check(const char *text)
{
    tj_program *p = parse(text);
    return p ? tj_check_program(ctx, p) : 1;
}

/* The hang guard is far above the time the bounded work takes (well under
 * a second); before the work was bounded these took 3^17 and 3^40 calls. */
Test(limits, inlining_that_emits_nothing_is_bounded, .timeout = 120)
{
    for (int n = 17; n <= 40; n += 23) {
        char *text = tripling_helpers(n);
        cr_assert_neq(check(text), 0);
        char want[200];
        snprintf(want, sizeof want, "t.tj:%d:18: error: inlining 'h0' here visits more than %d expressions", n + 4,
                 FE_MAX_WORK);
        cr_assert(diag_has(want), "expected '%s' in:\n%s", want, tj_diag_render(ctx));
        free(text);
        tj_diag_clear(ctx);
    }
}

Test(limits, inlining_below_the_work_limit_compiles)
{
    char *text = tripling_helpers(8); /* 3^8 calls */
    cr_assert_eq(check(text), 0, "%s", tj_diag_render(ctx));
    free(text);
}

/* 150000 one-line fns and a duplicate of the first at the end; checking
 * each name against every earlier one took minutes. */
Test(limits, many_fns_are_checked_by_hash, .timeout = 120)
{
    enum { N = 150000 };
    char *text = malloc((size_t)N * 48 + 256), *q = text;
    for (int i = 0; i < N; i++)
        q += sprintf(q, "fn g%d(x: f32) -> f32 { return x }\n", i);
    sprintf(q, "fn g0(x: f32) -> f32 { return x }\n"
               "kernel k(X: f32[N]) grid (1) { store(X[0:4], g%d(load(X[0:4]))) }\n", N - 1);
    cr_assert_null(parse(text));
    char want[64];
    snprintf(want, sizeof want, "t.tj:%d:4: error: duplicate fn 'g0'", N + 1);
    cr_assert(diag_has(want), "%s", tj_diag_render(ctx));
    cr_assert_eq(tj_error_count(ctx), 1);
    free(text);
}

/* ---- warps, stages, fastmath -------------------------------------------------- */

static const char *const one_kernel = "kernel k(X: f32[N]) grid (1) { store(X[0:32], load(X[0:32]) + 1.0) }\n";

/* Whether the front end builds kernel k with warps = v, and whether the
 * lowering takes what it would build. */
static void warps_accepted(int64_t v, int *front, int *lowering)
{
    tj_program *p = parse(one_kernel);
    cr_assert(p);
    tj_binding cfg[] = {{"warps", v}, {"stages", 2}};
    *front = tj_build_kernel(ctx, p, 0, cfg, 2, NULL, 0) != NULL;
    cfg[0].value = 4;
    tj_kernel *k = tj_build_kernel(ctx, p, 0, cfg, 2, NULL, 0);
    k->config[0].value = v; /* what the front end would have let through */
    *lowering = tj_lower_simt(k, NULL) != NULL;
    tj_diag_clear(ctx);
}

Test(limits, the_front_end_takes_the_warps_the_lowering_takes)
{
    cr_assert_eq(FE_MAX_WARPS, TJ_MAX_WARPS);
    cr_assert_eq(FE_MAX_STAGES, TJ_MAX_STAGES);
    for (int64_t v = -2; v <= 2 * TJ_MAX_WARPS + 1; v++) {
        int front, lowering;
        warps_accepted(v, &front, &lowering);
        cr_assert_eq(front, lowering, "warps = %lld: front end %d, lowering %d", (long long)v, front, lowering);
    }
}

Test(limits, declared_warps_stages_and_fastmath_are_checked_where_written)
{
    cr_assert_null(parse("kernel k(X: f32[N]) grid (1)\n"
                         "  tune warps in [4, 3], stages in [0, 8, 9]\n"
                         "  const fastmath = -1\n{ }\n"));
    cr_assert(diag_has("t.tj:2:21: error: warps = 3 is not supported: warps must be a power of two from 1 to 32"));
    cr_assert(diag_has("t.tj:2:36: error: stages = 0 is not supported: stages must be from 1 to 8"));
    cr_assert(diag_has("t.tj:2:42: error: stages = 9 is not supported"));
    cr_assert(diag_has("t.tj:3:20: error: fastmath = -1 is not supported: fastmath must be 0 or 1"));
    cr_assert_eq(tj_error_count(ctx), 4);
}

Test(limits, declared_vec_is_checked_where_written)
{
    cr_assert_eq(FE_MAX_VEC, TJ_MAX_VEC);
    cr_assert_eq(FE_MAX_OCCUPANCY, TJ_MAX_OCCUPANCY);
    cr_assert_null(parse("kernel k(X: f32[N]) grid (1)\n"
                         "  tune vec in [1, 64, 3, 0, 128]\n{ }\n"));
    cr_assert(diag_has("t.tj:2:23: error: vec = 3 is not supported: vec must be a power of two from 1 to 64"));
    cr_assert(diag_has("t.tj:2:26: error: vec = 0 is not supported"));
    cr_assert(diag_has("t.tj:2:29: error: vec = 128 is not supported"));
    cr_assert_eq(tj_error_count(ctx), 3);
}

Test(limits, given_stages_are_checked_at_the_kernel)
{
    tj_program *p = parse(one_kernel);
    tj_binding cfg[] = {{"stages", 9}};
    cr_assert_null(tj_build_kernel(ctx, p, 0, cfg, 1, NULL, 0));
    cr_assert(diag_has("t.tj:1:8: error: kernel 'k' is given stages = 9, which is not supported"), "%s",
              tj_diag_render(ctx));
}

/* ---- arange bounds (UBSan: hi - lo overflowed) --------------------------------- */

Test(limits, arange_bounds_near_int64_max)
{
    const char *text = "kernel k(X: i32[N]) grid (1) {\n"
                       "  a = arange(-2, 9223372036854775807)\n"
                       "  b = arange(9223372036854775807, -9223372036854775807 - 1)\n"
                       "  c = arange(2147483640, 2147483650)\n}\n";
    cr_assert_neq(check(text), 0);
    cr_assert(diag_has("t.tj:2:7: error: arange: the values -2 to 9223372036854775806 do not fit i32"), "%s",
              tj_diag_render(ctx));
    cr_assert(diag_has("t.tj:3:7: error: arange: the stop (-9223372036854775808) must be greater than the start"));
    cr_assert(diag_has("t.tj:4:7: error: arange: the values 2147483640 to 2147483649 do not fit i32"));
}

/* ---- chains, line ends, byte order marks ---------------------------------------- */

/* `x = 1 + 1 + ...` (n terms) and `y = q` on the next line. */
static char *flat_chain(int n)
{
    char *text = malloc((size_t)n * 4 + 128), *q = text;
    q += sprintf(q, "kernel k(X: i32[N]) grid (1) {\n  x = 1");
    for (int i = 1; i < n; i++)
        q += sprintf(q, " + 1");
    sprintf(q, "\n  store(X[0:4], x - q)\n}\n");
    return text;
}

Test(limits, a_long_flat_chain_is_not_nesting)
{
    char *text = flat_chain(100000);
    cr_assert_neq(check(text), 0);
    cr_assert(diag_has("t.tj:3:21: error: unknown name 'q'"), "%s", tj_diag_render(ctx));
    cr_assert_eq(tj_error_count(ctx), 1);
    free(text);
}

Test(limits, a_long_chain_folds_in_where_clauses_and_extents)
{
    char *text = malloc(40 * 1000 + 256), *q = text;
    q += sprintf(q, "kernel k(X: i32[N]) grid (1) where N");
    for (int i = 0; i < 1000; i++)
        q += sprintf(q, " - N");
    q += sprintf(q, " < 0 {\n  a = arange(1");
    for (int i = 1; i < 16; i++)
        q += sprintf(q, " + 1");
    sprintf(q, ")\n  store(X[0:16], a)\n}\n");
    cr_assert_eq(check(text), 0, "%s", tj_diag_render(ctx));
    free(text);
}

static void expect_error_on_line_5(const char *text, size_t len)
{
    tj_program *p = tj_parse_program(ctx, "t.tj", text, len);
    cr_assert(p, "%s", tj_diag_render(ctx));
    cr_assert_neq(tj_check_program(ctx, p), 0);
    cr_assert(diag_has("t.tj:5:9: error: unknown name 'q'\n      y = q\n          ^\n"), "%s", tj_diag_render(ctx));
}

Test(limits, cr_line_ends)
{
    static const char cr[] = "# a comment first\rkernel k(X: f32[N])\r  grid (1)\r{\r    y = q\r}\r";
    expect_error_on_line_5(cr, strlen(cr));
}

Test(limits, crlf_line_ends)
{
    static const char crlf[] = "# a comment first\r\nkernel k(X: f32[N])\r\n  grid (1)\r\n{\r\n    y = q\r\n}\r\n";
    expect_error_on_line_5(crlf, strlen(crlf));
}

Test(limits, a_byte_order_mark_is_skipped)
{
    static const char bom[] = "\xef\xbb\xbf# a comment first\nkernel k(X: f32[N])\n  grid (1)\n{\n    y = q\n}\n";
    expect_error_on_line_5(bom, strlen(bom));
}

/* 2^31 + 1 bytes of zero pages that are never touched: the size is
 * refused before the text is read. */
Test(limits, a_source_over_2_gib_is_refused)
{
    size_t len = (size_t)FE_MAX_SOURCE + 1;
    char *text = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq(text, MAP_FAILED);
    cr_assert_null(tj_parse_program(ctx, "big.tj", text, len));
    cr_assert(diag_has("big.tj: error: the file is larger than 2147483648 bytes"), "%s", tj_diag_render(ctx));
    munmap(text, len);
}

/* ---- back-end errors about the kernel name its place ----------------------------- */

Test(limits, an_f64_parameter_on_metal_is_reported_where_it_is_used)
{
    tj_program *p = parse("kernel k(X: f32[N], s: f64) grid (1) {\n"
                          "  store(X[0:32], f32(load(X[0:32]) * s))\n}\n");
    tj_binding cfg[] = {{"warps", 1}};
    tj_kernel *k = tj_build_kernel(ctx, p, 0, cfg, 1, NULL, 0);
    tj_lower_options opt = {.target = TJ_LOWER_METAL};
    tj_kernel *simt = k ? tj_lower_simt(k, &opt) : NULL;
    cr_assert(simt, "%s", tj_diag_render(ctx));
    tj_buf out = {0};
    cr_assert_neq(tj_emit_msl(simt, &out), 0);
    tj_buf_free(&out);
    cr_assert(diag_has("t.tj:2:38: error: msl: parameter 's' is f64, which does not exist in Metal"), "%s",
              tj_diag_render(ctx));
}
