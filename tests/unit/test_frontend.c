/* The .tj front end, part 1: lexer, parser, program queries, configuration
 * selection (test_frontend_lower.c has the lowering). */
#include <criterion/criterion.h>
#include <string.h>

#include "frontend/lexer.h"
#include "tilejit/tilejit.h"

static tj_ctx *ctx;

static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }

TestSuite(frontend, .init = setup, .fini = teardown);

static tj_program *parse(const char *text)
{
    return tj_parse_program(ctx, "t.tj", text, strlen(text));
}

/* The kinds of every token of `text`, up to and including T_EOF. */
static int lex_kinds(const char *text, fe_tok_kind *kinds, int max)
{
    fe_lexer lx;
    uint32_t file = tj_source_add(ctx, "t.tj", text, strlen(text));
    fe_lexer_init(&lx, ctx, file, tj_source_text(ctx, file, NULL), strlen(text));
    int n = 0;
    while (n < max) {
        fe_token t = fe_lex_next(&lx);
        kinds[n++] = t.kind;
        if (t.kind == T_EOF)
            break;
    }
    return n;
}

static fe_token lex_one(const char *text)
{
    fe_lexer lx;
    uint32_t file = tj_source_add(ctx, "t.tj", text, strlen(text));
    fe_lexer_init(&lx, ctx, file, tj_source_text(ctx, file, NULL), strlen(text));
    return fe_lex_next(&lx);
}

static const char *const add_kernel =
    "# vector add\n"
    "kernel add(x: f32[N], y: f32[N], out: f32[N])\n"
    "    grid (cdiv(N, BLOCK))\n"
    "    const BLOCK = 1024\n"
    "{\n"
    "    i = program_id(0) * BLOCK\n"
    "    store(out[i:i+BLOCK], load(x[i:i+BLOCK]) + load(y[i:i+BLOCK]))\n"
    "}\n";

/* ---- lexer ------------------------------------------------------------------- */

Test(frontend, lexer_tokens_and_newlines)
{
    fe_tok_kind k[32];
    int n = lex_kinds("a = b ** -c  # comment\n\n\n  (x,\n y)[0:4] <= != && -> }", k, 32);
    fe_tok_kind want[] = {T_IDENT, T_ASSIGN, T_IDENT, T_POW, T_MINUS, T_IDENT, T_NEWLINE, T_LPAREN, T_IDENT,
                          T_COMMA, T_NEWLINE, T_IDENT, T_RPAREN, T_LBRACKET, T_INT, T_COLON, T_INT, T_RBRACKET,
                          T_LE, T_NE, T_ANDAND, T_ARROW, T_RBRACE, T_EOF};
    cr_assert_eq(n, (int)(sizeof want / sizeof *want));
    for (int i = 0; i < n; i++)
        cr_assert_eq(k[i], want[i], "token %d: %s, expected %s", i, fe_tok_name(k[i]), fe_tok_name(want[i]));
    cr_assert_eq(tj_error_count(ctx), 0);
}

Test(frontend, lexer_numbers_and_words)
{
    cr_assert_eq(lex_one("0x1F").ival, 31);
    cr_assert_eq(lex_one("9223372036854775807").ival, INT64_MAX);
    cr_assert_float_eq(lex_one("1.5e-3").fval, 1.5e-3, 1e-18);
    cr_assert_float_eq(lex_one(".25").fval, 0.25, 0);
    cr_assert_eq(lex_one("1.").kind, T_FLOAT);
    cr_assert_eq(lex_one("inf").kind, T_INF);
    cr_assert_eq(lex_one("where").kind, T_IDENT); /* header words are names */
    cr_assert_eq(lex_one("kernel").kind, T_KERNEL);
    cr_assert_str_eq(lex_one("\"ieee\"").text, "ieee");
    cr_assert_eq(tj_error_count(ctx), 0);
}

Test(frontend, lexer_errors_become_error_tokens)
{
    const char *bad[] = {"9223372036854775808", "1e999", "12abc", "\"open", "$", "\x01\x02\x03", "0x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint32_t before = tj_error_count(ctx);
        cr_assert_eq(lex_one(bad[i]).kind, T_ERROR, "input %zu", i);
        cr_assert_eq(tj_error_count(ctx), before + 1, "input %zu", i);
    }
    cr_assert(strstr(tj_diag_get(ctx, 0)->msg, "too large"));
    cr_assert(strstr(tj_diag_get(ctx, 4)->msg, "unexpected character '$'"));
    cr_assert(strstr(tj_diag_get(ctx, 5)->msg, "byte 0x01"));
}

/* ---- parser -------------------------------------------------------------------- */

Test(frontend, parses_and_answers_queries)
{
    tj_program *p = parse(add_kernel);
    cr_assert(p, "%s", tj_diag_render(ctx));
    cr_assert_eq(tj_program_kernel_count(p), 1);
    cr_assert_str_eq(tj_program_kernel_name(p, 0), "add");
    cr_assert_eq(tj_program_find_kernel(p, "add"), 0);
    cr_assert_eq(tj_program_find_kernel(p, "nope"), -1);
    cr_assert_null(tj_program_kernel_name(p, 1));

    const tj_param *params;
    cr_assert_eq(tj_kernel_params(p, 0, &params), 3);
    cr_assert_str_eq(params[2].name, "out");
    cr_assert_eq(params[2].dtype, TJ_DT_F32);
    cr_assert_eq(params[2].rank, 1);
    cr_assert_str_eq(params[2].dim_names[0], "N");

    const tj_tile_param *tiles;
    cr_assert_eq(tj_kernel_tile_params(p, 0, &tiles), 1);
    cr_assert_str_eq(tiles[0].name, "BLOCK");
    cr_assert_eq(tiles[0].tunable, 0);
    cr_assert_eq(tiles[0].nvalues, 1);
    cr_assert_eq(tiles[0].values[0], 1024);
}

Test(frontend, header_clauses_in_any_order_and_literal_dims)
{
    tj_program *p = parse("kernel k(X: bf16[M, 128], n: i64)\n"
                          "  tune B in [64, -1], warps in [4]\n  where B > 0\n  grid (M, n,\n 1)\n  const C = 3\n{ }\n"
                          "fn f(a: f32) -> (f32, f32) { return (a, a) }\n");
    cr_assert(p, "%s", tj_diag_render(ctx));
    const tj_param *params;
    cr_assert_eq(tj_kernel_params(p, 0, &params), 2);
    cr_assert_null(params[0].dim_names[1]);
    cr_assert_eq(params[0].dim_sizes[1], 128);
    cr_assert_eq(params[1].rank, 0);
    cr_assert_eq(params[1].dtype, TJ_DT_I64);
    const tj_tile_param *tiles;
    cr_assert_eq(tj_kernel_tile_params(p, 0, &tiles), 3);
    cr_assert_str_eq(tiles[1].name, "warps"); /* declared: a tile parameter like the others */
    cr_assert_eq(tiles[0].values[1], -1);
    cr_assert_str_eq(tiles[2].name, "C");
}

Test(frontend, syntax_errors_recover_per_statement)
{
    cr_assert_null(parse("kernel k(X: f32[N])\n  grid (1)\n{\n  a = (1 +\n  b = 2 +* 3\n  c = [1, 2\n  d = 1\n  e = +\n}\n"));
    /* inside ( ) and [ ] line breaks are white space: each unclosed bracket
     * is reported where the next line stops making sense, and parsing
     * resumes at the following line */
    cr_assert_eq(tj_error_count(ctx), 3, "%s", tj_diag_render(ctx));
    cr_assert_eq(tj_diag_get(ctx, 2)->line, 8);
    const tj_diag *d = tj_diag_get(ctx, 0);
    cr_assert_eq(d->line, 5);
    cr_assert_eq(d->col, 5);
    cr_assert_str_eq(d->msg, "expected ')', found '='");
    d = tj_diag_get(ctx, 1);
    cr_assert_eq(d->line, 7);
    cr_assert_eq(d->col, 3);
    cr_assert_str_eq(d->msg, "expected ']' to close the list, found 'd'");
}

Test(frontend, empty_file_and_fn_only_file)
{
    cr_assert_null(parse(""));
    cr_assert_null(parse("# nothing\nfn f(a: f32) -> f32 { return a }\n"));
    cr_assert_eq(tj_error_count(ctx), 2);
    cr_assert_str_eq(tj_diag_get(ctx, 0)->msg, "no kernel in file");
    cr_assert_eq(tj_diag_get(ctx, 0)->line, 0);
}

Test(frontend, deep_nesting_is_an_error_not_a_crash)
{
    enum { N = 5000 };
    char *text = malloc(3 * N + 64);
    strcpy(text, "kernel k() grid (1) { x = ");
    char *q = text + strlen(text);
    for (int i = 0; i < N; i++)
        *q++ = '(';
    *q++ = '1';
    for (int i = 0; i < N; i++)
        *q++ = ')';
    strcpy(q, " }\n");
    cr_assert_null(parse(text));
    cr_assert(strstr(tj_diag_render(ctx), "nesting is too deep"));
    free(text);
}

Test(frontend, long_operator_chain_is_not_nesting)
{
    enum { N = 20000 };
    char *text = malloc(4 * N + 64);
    strcpy(text, "kernel k() grid (1) { x = 1");
    char *q = text + strlen(text);
    for (int i = 0; i < N; i++) {
        memcpy(q, " + 1", 4);
        q += 4;
    }
    strcpy(q, " }\n");
    cr_assert(parse(text), "%s", tj_diag_render(ctx));
    free(text);
}

Test(frontend, error_count_is_capped)
{
    char text[8192] = "kernel k() grid (1) {\n";
    for (int i = 0; i < 200; i++)
        strcat(text, " = 1\n");
    strcat(text, "}\n");
    cr_assert_null(parse(text));
    cr_assert_leq(tj_error_count(ctx), 51);
    cr_assert(strstr(tj_diag_render(ctx), "too many errors"));
}

Test(frontend, garbage_never_crashes)
{
    /* xorshift: deterministic garbage mixed with pieces of real syntax */
    static const char *const pieces[] = {"kernel", "k(", "X: f32[N]", ")", "grid (1)", "{", "}", "for", "in range(",
                                         "if", "else", "=", "load(X[0:4])", "\n", "fn", "->", "(", "[", ",", "**"};
    uint64_t s = 88172645463325252ull;
    char text[512];
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = 0;
        while (n < sizeof text - 16) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            if (s % 5 == 0)
                break;
            if (s % 3 == 0) {
                const char *piece = pieces[(s >> 8) % (sizeof pieces / sizeof *pieces)];
                size_t len = strlen(piece);
                memcpy(text + n, piece, len);
                n += len;
            } else {
                text[n++] = (char)(s >> 24);
            }
        }
        tj_ctx *c = tj_ctx_new();
        tj_program *p = tj_parse_program(c, "g.tj", text, n);
        if (p)
            tj_check_program(c, p);
        (void)tj_diag_render(c);
        tj_ctx_free(c);
    }
}

/* ---- configurations ---------------------------------------------------------- */

static const char *const tuned =
    "kernel t(X: f32[N])\n"
    "  grid (1)\n"
    "  tune A in [64, 256, 128], B in [1, 2]\n"
    "  const C = 7\n"
    "  where A * B >= 128, A >= N || A == 128\n"
    "{ }\n";

static int64_t value_of(const tj_binding *b, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(b[i].name, name))
            return b[i].value;
    cr_assert_fail("no binding %s", name);
    return 0;
}

Test(frontend, select_config_first_combination)
{
    tj_program *p = parse(tuned);
    cr_assert(p);
    tj_binding *cfg;
    uint32_t n;
    /* no dims: the clause naming N is skipped */
    cr_assert_eq(tj_select_config(ctx, p, 0, NULL, 0, NULL, 0, &cfg, &n), 0, "%s", tj_diag_render(ctx));
    cr_assert_eq(n, 5); /* A, B, C, warps, stages */
    cr_assert_str_eq(cfg[0].name, "A");
    cr_assert_eq(value_of(cfg, n, "A"), 64);
    cr_assert_eq(value_of(cfg, n, "B"), 2);
    cr_assert_eq(value_of(cfg, n, "C"), 7);
    cr_assert_eq(value_of(cfg, n, "warps"), 4);
    cr_assert_eq(value_of(cfg, n, "stages"), 2);

    tj_binding dims[] = {{"N", 200}};
    cr_assert_eq(tj_select_config(ctx, p, 0, NULL, 0, dims, 1, &cfg, &n), 0);
    cr_assert_eq(value_of(cfg, n, "A"), 256);
    cr_assert_eq(value_of(cfg, n, "B"), 1);

    tj_binding given[] = {{"B", 1}, {"stages", 3}};
    dims[0].value = 1000;
    cr_assert_eq(tj_select_config(ctx, p, 0, given, 2, dims, 1, &cfg, &n), 0);
    cr_assert_eq(value_of(cfg, n, "A"), 128);
    cr_assert_eq(value_of(cfg, n, "stages"), 3);
}

Test(frontend, select_config_errors)
{
    tj_program *p = parse(tuned);
    tj_binding *cfg;
    uint32_t n;
    tj_binding dims[] = {{"N", 1000}};
    tj_binding given[] = {{"A", 64}};
    cr_assert_neq(tj_select_config(ctx, p, 0, given, 1, dims, 1, &cfg, &n), 0);
    cr_assert(strstr(tj_diag_render(ctx), "satisfies 'where A >= N || A == 128' with N = 1000"), "%s", tj_diag_render(ctx));
    tj_diag_clear(ctx);
    tj_binding unknown[] = {{"Z", 1}};
    cr_assert_neq(tj_select_config(ctx, p, 0, unknown, 1, NULL, 0, &cfg, &n), 0);
    cr_assert(strstr(tj_diag_render(ctx), "has no tile parameter 'Z'"));
    tj_diag_clear(ctx);
    tj_binding other[] = {{"M", 1}}; /* dims given, but not N: an error */
    cr_assert_neq(tj_select_config(ctx, p, 0, NULL, 0, other, 1, &cfg, &n), 0);
    cr_assert(strstr(tj_diag_render(ctx), "needs dim 'N'"));
    cr_assert_neq(tj_select_config(ctx, p, 7, NULL, 0, NULL, 0, &cfg, &n), 0);
}

Test(frontend, bindings_parse_and_malformed_ones_are_reported)
{
    tj_ctx *c = tj_ctx_new();
    tj_binding b[3];
    cr_assert_eq(tj_bindings_parse(c, "BM=128,warps=8", b, 3), 2);
    cr_expect_str_eq(b[0].name, "BM");
    cr_expect_eq(b[0].value, 128);
    cr_expect_str_eq(b[1].name, "warps");
    cr_expect_eq(b[1].value, 8);
    cr_expect_eq(tj_bindings_parse(c, "", b, 3), 0);
    cr_expect_eq(tj_bindings_parse(c, NULL, b, 3), 0);
    cr_expect_eq(tj_error_count(c), 0);
    cr_expect_eq(tj_bindings_parse(c, "N=-5", b, 3), 1);
    cr_expect_eq(b[0].value, -5);
    const char *bad[] = {"N", "=3", "N=", "N=3x", "N=99999999999999999999", "A=1,B=2,C=3,D=4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t before = tj_error_count(c);
        cr_expect_eq(tj_bindings_parse(c, bad[i], b, 3), -1, "'%s'", bad[i]);
        cr_expect_gt(tj_error_count(c), before, "'%s' said nothing", bad[i]);
    }
    cr_expect_eq(tj_bindings_parse(NULL, "N=1", b, 3), -1);
    cr_expect_eq(tj_bindings_parse(c, "N=1", NULL, 3), -1);
    tj_ctx_free(c);
}
