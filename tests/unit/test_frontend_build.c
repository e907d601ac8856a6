/* The .tj front end, part 2: lowering to Tile IR (the IR itself is checked
 * in detail by tests/lit/frontend; here: structure, locations,
 * specialization, verification, round trip, and errors). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"

static tj_ctx *ctx;

static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }

TestSuite(lower, .init = setup, .fini = teardown);

/* Parses, picks the first configuration and lowers kernel 0. */
static tj_kernel *lower(const char *text, const tj_binding *dims, uint32_t ndims)
{
    tj_program *p = tj_parse_program(ctx, "t.tj", text, strlen(text));
    cr_assert(p, "parse failed:\n%s", tj_diag_render(ctx));
    tj_binding *cfg;
    uint32_t n;
    cr_assert_eq(tj_select_config(ctx, p, 0, NULL, 0, dims, ndims, &cfg, &n), 0, "%s", tj_diag_render(ctx));
    return tj_build_kernel(ctx, p, 0, cfg, n, dims, ndims);
}

static tj_ref find_op(const tj_kernel *k, tj_op op)
{
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == op)
            return r;
    return TJ_NONE;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return s;
}

static const char *const add_kernel =
    "kernel add(x: f32[N], y: f32[N], out: f32[N])\n"
    "    grid (cdiv(N, BLOCK))\n"
    "    const BLOCK = 1024\n"
    "{\n"
    "    i = program_id(0) * BLOCK\n"
    "    store(out[i:i+BLOCK], load(x[i:i+BLOCK]) + load(y[i:i+BLOCK]))\n"
    "}\n";

Test(lower, kernel_structure_and_config)
{
    tj_kernel *k = lower(add_kernel, NULL, 0);
    cr_assert(k, "%s", tj_diag_render(ctx));
    cr_assert_str_eq(k->name, "add");
    cr_assert_eq(k->nparams, 3);
    cr_assert_eq(k->nconfig, 3);
    cr_assert_str_eq(k->config[0].name, "BLOCK");
    cr_assert_eq(k->config[0].value, 1024);
    cr_assert_str_eq(k->config[1].name, "warps");
    cr_assert_eq(k->config[1].value, 4);
    cr_assert_str_eq(k->config[2].name, "stages");
    cr_assert_eq(k->config[2].value, 2);
    cr_assert_eq(k->nspec, 0);
    const tj_block *g = tj_block_at(k, k->grid), *b = tj_block_at(k, k->body);
    cr_assert_eq(tj_inst_at(k, g->insts[g->ninsts - 1])->op, TJ_OP_YIELD);
    cr_assert_eq(tj_inst_at(k, g->insts[g->ninsts - 1])->nargs, 1);
    cr_assert_eq(tj_inst_at(k, b->insts[b->ninsts - 1])->nargs, 0);
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(ctx));
}

Test(lower, instructions_carry_source_locations)
{
    tj_kernel *k = lower(add_kernel, NULL, 0);
    tj_ref add = TJ_NONE;
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == TJ_OP_ADD && k->insts[r].block == k->body)
            add = r;
    cr_assert(add);
    cr_assert_eq(k->insts[add].loc.line, 6);
    cr_assert_eq(k->insts[add].loc.col, 46); /* the '+' */
    tj_ref pid = find_op(k, TJ_OP_PROGRAM_ID);
    cr_assert_eq(k->insts[pid].loc.line, 5);
    cr_assert_eq(k->insts[pid].loc.col, 9);
    cr_assert_str_eq(tj_source_name(ctx, k->insts[pid].loc.file), "t.tj");
}

Test(lower, dims_used_as_extents_are_specialized)
{
    const char *text = "kernel e(T: f32[V, D], out: f32[N, D])\n grid (N)\n{\n"
                       "  r = program_id(0)\n  store(out[r, 0:D], load(T[r, 0:D]) * f32(V))\n}\n";
    tj_binding dims[] = {{"N", 10}, {"D", 48}, {"unrelated", 3}};
    tj_kernel *k = lower(text, dims, 3);
    cr_assert(k, "%s", tj_diag_render(ctx));
    cr_assert_eq(k->nspec, 1);
    cr_assert_str_eq(k->spec[0].name, "D");
    cr_assert_eq(k->spec[0].value, 48);
    tj_ref dim = find_op(k, TJ_OP_DIM); /* N in the grid, V in the body: runtime values */
    cr_assert(dim);
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(ctx));

    tj_program *p = tj_parse_program(ctx, "t.tj", text, strlen(text));
    tj_binding *cfg;
    uint32_t n;
    tj_select_config(ctx, p, 0, NULL, 0, NULL, 0, &cfg, &n);
    cr_assert_null(tj_build_kernel(ctx, p, 0, cfg, n, dims, 1));
    cr_assert(strstr(tj_diag_render(ctx), "dim 'D' is used as a compile-time constant here"));
}

Test(lower, unbound_and_unknown_tile_parameters)
{
    tj_program *p = tj_parse_program(ctx, "t.tj", add_kernel, strlen(add_kernel));
    cr_assert_null(tj_build_kernel(ctx, p, 0, NULL, 0, NULL, 0));
    cr_assert(strstr(tj_diag_render(ctx), "tile parameter 'BLOCK' is not bound"));
    tj_diag_clear(ctx);
    tj_binding cfg[] = {{"BLOCK", 128}, {"BOGUS", 1}};
    cr_assert_null(tj_build_kernel(ctx, p, 0, cfg, 2, NULL, 0));
    cr_assert(strstr(tj_diag_render(ctx), "has no tile parameter 'BOGUS'"));
    tj_diag_clear(ctx);
    tj_binding ok[] = {{"BLOCK", 128}, {"warps", 8}};
    tj_kernel *k = tj_build_kernel(ctx, p, 0, ok, 2, NULL, 0);
    cr_assert(k);
    cr_assert_eq(k->config[1].value, 8);
    cr_assert_null(tj_build_kernel(ctx, p, 3, ok, 2, NULL, 0));
}

Test(lower, errors_return_null_with_locations)
{
    const char *text = "kernel k(X: f32[N])\n grid (1)\n{\n  x = load(X[0:16])\n  y = x + zz\n  w = dot(x, x)\n}\n";
    cr_assert_null(lower(text, NULL, 0));
    cr_assert_eq(tj_error_count(ctx), 2, "%s", tj_diag_render(ctx));
    const tj_diag *d = tj_diag_get(ctx, 0);
    cr_assert_eq(d->line, 5);
    cr_assert_eq(d->col, 11);
    cr_assert_str_eq(d->msg, "unknown name 'zz'");
    cr_assert(strstr(tj_diag_get(ctx, 1)->msg, "dot: operands must both be 2-D"));
}

Test(lower, check_program_reports_per_kernel)
{
    const char *text = "kernel good(X: f32[N]) grid (1) { store(X[0:4], 1.0) }\n"
                       "kernel bad(X: f32[N]) grid (1) { store(X[0:4], nope) }\n"
                       "kernel spec(X: f32[N]) grid (1) { store(X[0:N], 1.0) }\n";
    tj_program *p = tj_parse_program(ctx, "t.tj", text, strlen(text));
    cr_assert(p);
    cr_assert_neq(tj_check_program(ctx, p), 0);
    cr_assert_eq(tj_error_count(ctx), 1, "%s", tj_diag_render(ctx));
    cr_assert_eq(tj_check_program(ctx, NULL), 1);
}

/* Every example of DSL.md (examples/) lowers, verifies, and prints text
 * that parses back to the same text. */
Test(lower, examples_verify_and_round_trip)
{
    static const char *const files[] = {"add", "softmax", "matmul", "attention", "embed", "recurrence"};
    const char *src = getenv("TJ_SOURCE_DIR");
    cr_assert(src, "TJ_SOURCE_DIR is not set");
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof path, "%s/examples/%s.tj", src, files[i]);
        char *text = read_file(path, &len);
        tj_program *p = tj_parse_program(ctx, path, text, len);
        cr_assert(p, "%s", tj_diag_render(ctx));
        cr_assert_eq(tj_check_program(ctx, p), 0, "%s: %s", files[i], tj_diag_render(ctx));
        tj_binding dims[] = {{"D", 64}, {"N", 1000}};
        tj_binding *cfg;
        uint32_t n;
        cr_assert_eq(tj_select_config(ctx, p, 0, NULL, 0, dims, 2, &cfg, &n), 0);
        tj_kernel *k = tj_build_kernel(ctx, p, 0, cfg, n, dims, 2);
        cr_assert(k, "%s", tj_diag_render(ctx));
        tj_buf once = {0}, twice = {0};
        tj_print_kernel(k, &once);
        tj_kernel *back;
        cr_assert_eq(tj_parse_ir(ctx, "rt", once.data, once.len, &back, 1), 1, "%s\n%s", tj_diag_render(ctx), once.data);
        tj_print_kernel(back, &twice);
        cr_assert_str_eq(once.data, twice.data);
        tj_buf_free(&once);
        tj_buf_free(&twice);
        free(text);
    }
}

Test(lower, hostile_programs_fail_cleanly)
{
    static const char *const programs[] = {
        /* recursion through two helpers */
        "fn a(x: f32) -> f32 { return b(x) }\nfn b(x: f32) -> f32 { return a(x) }\n"
        "kernel k(X: f32[N]) grid (1) { store(X[0:4], a(1.0)) }\n",
        /* a tile far beyond the limit, built by broadcasting */
        "kernel k(X: f32[N]) grid (1) { a = arange(4096); b = a[:, None] + a[None, :] }\n",
        /* extents overflowing int32 */
        "kernel k(X: f32[N]) grid (1) { z = zeros(f32[2147483648]) }\n",
        /* too many configurations */
        "kernel k(X: f32[N]) grid (1) tune A in [1,2,3,4,5,6,7,8,9,10], B in [1,2,3,4,5,6,7,8,9,10],"
        " C in [1,2,3,4,5,6,7,8,9,10], D in [1,2,3,4,5,6,7,8,9,10], E in [1,2,3,4,5,6,7,8,9,10],"
        " F in [1,2,3,4,5,6,7,8,9,10], G in [1,2,3,4,5,6,7,8,9,10] where A > 100 { }\n",
        /* shift and division folding at the edges of int64 */
        "kernel k(X: i64[N]) grid (1) { store(X[0:2], (-9223372036854775807 - 1) / -1 + (1 << 64) + (7 % 0)) }\n",
    };
    for (size_t i = 0; i < sizeof programs / sizeof *programs; i++) {
        tj_ctx *c = tj_ctx_new();
        tj_program *p = tj_parse_program(c, "h.tj", programs[i], strlen(programs[i]));
        cr_assert(p, "program %zu: %s", i, tj_diag_render(c));
        int status = tj_check_program(c, p);
        cr_assert_eq(status, i == 4 ? 0 : 1, "program %zu: %s", i, tj_diag_render(c));
        tj_ctx_free(c);
    }
}

/* Text built by repeating a pattern with its index: helpers for the tests below. */
static char *repeat(const char *head, const char *pattern, int n, const char *tail)
{
    size_t cap = strlen(head) + (strlen(pattern) + 40) * (size_t)n + strlen(tail) + 1;
    char *s = malloc(cap), *q = s;
    q += sprintf(q, "%s", head);
    for (int i = 0; i < n; i++)
        q += sprintf(q, pattern, i, i + 1);
    sprintf(q, "%s", tail);
    return s;
}

static void expect_error(const char *text, const char *message)
{
    tj_ctx *c = tj_ctx_new();
    tj_program *p = tj_parse_program(c, "h.tj", text, strlen(text));
    if (p)
        cr_assert_neq(tj_check_program(c, p), 0);
    cr_assert(strstr(tj_diag_render(c), message), "expected '%s' in:\n%.2000s", message, tj_diag_render(c));
    tj_ctx_free(c);
}

Test(lower, exponential_inlining_is_bounded)
{
    /* h0 calls h1 twice, h1 calls h2 twice, ...: 2^40 copies */
    char *text = repeat("", "fn h%1$d(x: f32) -> f32 { return h%2$d(x) + h%2$d(x) }\n", 40,
                        "fn h40(x: f32) -> f32 { return x * 2.0 }\n"
                        "kernel k(X: f32[N]) grid (1) { store(X[0:4], h0(1.0)) }\n");
    expect_error(text, "h.tj:42:46: error: inlining 'h0' here visits more than 2097152 expressions and statements");
    free(text);
}

Test(lower, deep_helper_chains_are_bounded)
{
    /* 60 helpers, each nesting its call under 90 negations */
    char body[2048] = "";
    for (int i = 0; i < 90; i++)
        strcat(body, "-(");
    strcat(body, "h%2$d(x)");
    for (int i = 0; i < 90; i++)
        strcat(body, ")");
    char pattern[2400];
    snprintf(pattern, sizeof pattern, "fn h%%1$d(x: f32) -> f32 { return %s }\n", body);
    char *text = repeat("", pattern, 60, "fn h60(x: f32) -> f32 { return x }\n"
                                         "kernel k(X: f32[N]) grid (1) { store(X[0:4], h0(1.0)) }\n");
    expect_error(text, "nests too deeply");
    free(text);
}

Test(lower, too_many_parameters)
{
    char *text = repeat("kernel k(", "p%d: i32, ", 300, "q: i32) grid (1) { }\n");
    expect_error(text, "at most 256 parameters");
    free(text);
}
