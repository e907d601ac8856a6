/* The IR text form: printer and parser round trips, parse errors with
 * locations, and robustness against malformed text. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_ir_util.h"

/* A kernel `@k(X: f32[M, 64])` up to its body, which has `%10 = const 0 : i32`. */
#define HEAD_X "kernel @k(X: f32[M, 64]) {\ngrid:\n  %0 = const 1 : i32\n  yield %0\nbody:\n  %10 = const 0 : i32\n"

static tj_ctx *ctx;
static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }
TestSuite(ir_text, .init = setup, .fini = teardown);

static int parse(const char *text, tj_kernel **out, int max)
{
    return tj_parse_ir(ctx, "test.tjir", text, strlen(text), out, max);
}

static tj_kernel *parse_one(const char *text)
{
    tj_kernel *k = NULL;
    int n = parse(text, &k, 1);
    cr_assert_eq(n, 1, "parse failed:\n%s\n%s", tj_diag_render(ctx), text);
    return k;
}

/* print(parse(print(k))) == print(k); returns the text. */
static const char *check_stable(tj_kernel *k)
{
    const char *once = print_str(k);
    const char *twice = print_str(parse_one(once));
    cr_assert_str_eq(once, twice, "round trip differs:\n%s\n----\n%s", once, twice);
    return once;
}

static void assert_verifies(tj_kernel *k)
{
    cr_assert_eq(tj_verify(k), 0, "verify failed:\n%s\n%s", tj_diag_render(ctx), print_str(k));
}

/* ---- round trips -------------------------------------------------------------- */

Test(ir_text, every_op_round_trips)
{
    tj_kernel *k = build_all_ops(ctx);
    assert_verifies(k);
    int seen[TJ_OP_COUNT] = {0};
    for (tj_ref r = 1; r < k->ninsts; r++)
        seen[k->insts[r].op] = 1;
    for (int op = 1; op < TJ_OP_COUNT; op++)
        if (!(tj_op_get((tj_op)op)->flags & TJ_OPF_SIMT))
            cr_expect(seen[op], "build_all_ops does not use '%s'", tj_op_get((tj_op)op)->name);
    const char *text = check_stable(k);
    assert_verifies(parse_one(text));
    cr_expect(strstr(text, "kernel @all_ops(X: f32[M, 64], idx: i32[N], n: i32) config(BM = 32) spec(M = 128) {"));
    cr_expect(strstr(text, "{axes = [gather, 64]} : view<f32[32, 64]>"));
    cr_expect(strstr(text, "{perm = [1, 0]}"));
    cr_expect(strstr(text, "{axis = 0, descending = true} : f32[32]"));
    cr_expect(strstr(text, "{precision = ieee} : f32[32, 32]"));
    cr_expect(strstr(text, "const -inf : f32"));
    cr_expect(strstr(text, " : (f32[32], i32[32])"));
    cr_expect(strstr(text, "  ^(%"));
    cr_expect(strstr(text, "} else {"));
    cr_expect(strstr(text, ", _, _ : i32[32]"));
}

Test(ir_text, simt_kernel_round_trips)
{
    tj_kernel *k = build_simt_ops(ctx);
    assert_verifies(k);
    int seen[TJ_OP_COUNT] = {0};
    for (tj_ref r = 1; r < k->ninsts; r++)
        seen[k->insts[r].op] = 1;
    for (int op = 1; op < TJ_OP_COUNT; op++)
        if (tj_op_get((tj_op)op)->flags & TJ_OPF_SIMT)
            cr_expect(seen[op], "build_simt_ops does not use '%s'", tj_op_get((tj_op)op)->name);
    const char *text = check_stable(k);
    tj_kernel *back = parse_one(text);
    assert_verifies(back);
    cr_expect_eq(back->level, TJ_LEVEL_SIMT);
    cr_expect_eq(back->nthreads, 128);
    cr_expect_eq(back->smem_bytes, 512);
    cr_assert(back->facts);
    cr_expect(!memcmp(&back->facts[0], &k->facts[0], sizeof(tj_facts)));
    cr_expect(strstr(text, ") simt(threads = 128, smem = 512) facts(X = {unit_stride, aligned16, "
                           "dim_div16 = [1], stride_div16 = [0]}, idx = {unit_stride}, n = {}) {"), "%s", text);
    cr_expect(strstr(text, "= ld_global %"));
    cr_expect(strstr(text, "= shfl_xor %"));
}

Test(ir_text, view_flags_round_trip)
{
    tj_kernel *k = parse_one(HEAD_X "  %1 = param {index = 0} : tensor<f32, 2>\n"
                             "  %2 = view %1, %10, %10 {axes = [index, 64], inbounds = [0, 1], chunk = 4} : view<f32[64]>\n"
                             "  %3 = view %1, %10, %10 {axes = [index, 64], chunk = 16} : view<f32[64]>\n"
                             "  yield\n}\n");
    assert_verifies(k);
    const char *text = check_stable(k);
    cr_expect(strstr(text, "{axes = [index, 64], inbounds = [0, 1], chunk = 4}"), "%s", text);
    cr_expect(strstr(text, "{axes = [index, 64], chunk = 16}"), "%s", text);
    uint32_t flags = 0;
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == TJ_OP_VIEW && !flags)
            flags = k->insts[r].flags;
    cr_expect_eq(flags, 0x3u | (2u << TJ_VIEW_CHUNK_SHIFT));
}

Test(ir_text, every_dtype_and_extreme_integers)
{
    static const struct { tj_dtype dt; int64_t v; const char *text; } cases[] = {
        {TJ_DT_BOOL, 1, "const 1 : bool"},
        {TJ_DT_I8, -128, "const -128 : i8"},
        {TJ_DT_I16, 32767, "const 32767 : i16"},
        {TJ_DT_I32, INT32_MIN, "const -2147483648 : i32"},
        {TJ_DT_I64, INT64_MIN, "const -9223372036854775808 : i64"},
        {TJ_DT_U8, 255, "const 255 : u8"},
        {TJ_DT_U16, 65535, "const 65535 : u16"},
        {TJ_DT_U32, 4294967295, "const 4294967295 : u32"},
        {TJ_DT_U64, -1, "const 18446744073709551615 : u64"},
    };
    tj_kernel *k = skeleton(ctx, "consts");
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++)
        const_i(k, k->body, cases[i].dt, cases[i].v);
    tj_dtype floats[] = {TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32, TJ_DT_F64};
    for (unsigned i = 0; i < 4; i++)
        const_f(k, k->body, floats[i], 0.5);
    finish_body(k);
    assert_verifies(k);
    const char *text = check_stable(k);
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_expect(strstr(text, cases[i].text), "missing '%s' in\n%s", cases[i].text, text);
    cr_expect(strstr(text, "const 0.5 : bf16"));
    tj_kernel *back = parse_one(text);
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == TJ_OP_CONST)
            cr_expect_eq(back->insts[r].imm, k->insts[r].imm); /* same build order */
}

Test(ir_text, floats_read_back_exactly)
{
    static const double values[] = {0.1, 1.0 / 3.0, -2.5, 1e-310, 5e-324, 1.7976931348623157e308,
                                    123456789012345678.0, 0.1f, 3.0e38f, -0.0, INFINITY, -INFINITY};
    tj_kernel *k = skeleton(ctx, "floats");
    unsigned n = sizeof values / sizeof *values;
    for (unsigned i = 0; i < n; i++)
        const_f(k, k->body, TJ_DT_F64, values[i]);
    const_f(k, k->body, TJ_DT_F32, NAN);
    finish_body(k);
    const char *text = check_stable(k);
    cr_expect(strstr(text, "const 0.1 : f64"), "%s", text);
    cr_expect(strstr(text, "const -0 : f64"));
    cr_expect(strstr(text, "const inf : f64"));
    cr_expect(strstr(text, "const nan : f32"));
    tj_kernel *back = parse_one(text);
    unsigned i = 0;
    for (tj_ref r = 1; r < back->ninsts; r++) {
        const tj_inst *in = &back->insts[r];
        if (in->op != TJ_OP_CONST || !tj_dtype_is_float(tj_type_get(ctx, in->type)->dtype))
            continue;
        if (i < n)
            cr_expect(!memcmp(&in->fimm, &values[i], sizeof(double)), "value %u: %.17g != %.17g", i,
                      in->fimm, values[i]);
        else
            cr_expect(isnan(in->fimm));
        i++;
    }
    cr_expect_eq(i, n + 1);
}

Test(ir_text, renumbers_and_skips_comments)
{
    const char *text =
        "# a comment\n"
        "kernel @k(x: f32[N]) {  # trailing comment\n"
        "grid:\n"
        "  %7 = const 1 : i32\n"
        "  yield %7\n"
        "body:\n"
        "  %100 = const 2 : i32\n"
        "  %3 = const 0 : i32\n"
        "  for %3, %100, %100 {\n"
        "  ^(%9: i32):\n"
        "    yield\n"
        "  }\n"
        "  %5 = eq %3, %100 : bool\n"
        "  if %5 {\n"
        "    yield\n"
        "  }\n"
        "  yield\n"
        "}\n";
    tj_kernel *k = parse_one(text);
    assert_verifies(k);
    const char *expected =
        "kernel @k(x: f32[N]) {\n"
        "grid:\n"
        "  %0 = const 1 : i32\n"
        "  yield %0\n"
        "body:\n"
        "  %1 = const 2 : i32\n"
        "  %2 = const 0 : i32\n"
        "  for %2, %1, %1 {\n"
        "  ^(%3: i32):\n"
        "    yield\n"
        "  }\n"
        "  %4 = eq %2, %1 : bool\n"
        "  if %4 {\n"
        "    yield\n"
        "  } else {\n"
        "    yield\n"
        "  }\n"
        "  yield\n"
        "}\n";
    cr_assert_str_eq(print_str(k), expected);
}

Test(ir_text, several_kernels_and_the_limit)
{
    const char *two = "kernel @a() { grid: %0 = const 1 : i32 yield %0 body: yield }\n"
                      "kernel @b(s: f32) { grid: %0 = const 2 : i32 yield %0 body: yield }\n";
    tj_kernel *ks[2];
    cr_assert_eq(parse(two, ks, 2), 2);
    cr_expect_str_eq(ks[1]->name, "b");
    cr_expect_eq(ks[1]->nparams, 1);
    cr_assert_eq(parse(two, ks, 1), -1);
    cr_expect(strstr(tj_diag_render(ctx), "test.tjir:2:1: error: more than 1 kernel in one text"));
    cr_expect_eq(parse("  # nothing\n", ks, 2), 0);
}

/* ---- lit files ------------------------------------------------------------------- */

static int round_trip_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    tj_ctx *c = tj_ctx_new();
    tj_kernel *ks[64];
    int n = tj_parse_ir(c, path, text, len, ks, 64);
    for (int i = 0; i < n; i++) {
        tj_buf a = {0}, b = {0};
        tj_print_kernel(ks[i], &a);
        tj_kernel *back = NULL;
        cr_assert_eq(tj_parse_ir(c, "printed", a.data, a.len, &back, 1), 1, "%s: reparse failed:\n%s", path,
                     tj_diag_render(c));
        tj_print_kernel(back, &b);
        cr_expect_str_eq(a.data, b.data, "%s: kernel %d does not round trip", path, i);
        tj_buf_free(&a);
        tj_buf_free(&b);
    }
    tj_ctx_free(c);
    return n > 0;
}

static int walk_lit(const char *dir)
{
    int count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        size_t len = strlen(path);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            count += walk_lit(path);
        else if (len > 5 && !strcmp(path + len - 5, ".tjir"))
            count += round_trip_file(path); /* files that do not parse test errors */
    }
    closedir(d);
    return count;
}

Test(ir_text, lit_files_round_trip)
{
    const char *src = getenv("TJ_SOURCE_DIR");
    if (!src)
        cr_skip_test("TJ_SOURCE_DIR is not set");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/lit", src);
    cr_expect_gt(walk_lit(dir), 0, "no parsable .tjir file under %s", dir);
}

/* ---- errors ------------------------------------------------------------------------ */

static void expect_error(const char *text, const char *where_what)
{
    tj_diag_clear(ctx);
    tj_kernel *k = NULL;
    cr_expect_eq(parse(text, &k, 1), -1, "parsed: %s", text);
    const char *msg = tj_diag_render(ctx);
    cr_expect(strstr(msg, where_what), "expected '%s' in:\n%s", where_what, msg);
}

#define HEAD "kernel @k() {\ngrid:\n  %0 = const 1 : i32\n  yield %0\nbody:\n"

Test(ir_text, errors_have_locations)
{
    expect_error("kernel", "test.tjir:1:7: error: expected '@', found end of input");
    expect_error("kernel @k(x f32) {", "1:13: error: expected ':', found 'f32'");
    expect_error("kernel @k(x: f33) {", "1:14: error: expected an element type (f32, i32, bool, ...), found 'f33'");
    expect_error("kernel @k(x: f32[]) {", "1:17: error: a tensor parameter has at least one dim");
    expect_error(HEAD "  %1 = add %0, %9 : i32\n", "6:16: error: value %9 is used before its definition");
    expect_error(HEAD "  %0 = const 2 : i32\n", "6:3: error: value %0 is defined twice (first at 3:3)");
    expect_error(HEAD "  %1 = frob %0 : i32\n", "6:8: error: unknown op 'frob'");
    expect_error(HEAD "  %1 = const 1.5 : i32\n", "6:14: error: expected an integer, found '1.5'");
    expect_error(HEAD "  %1 = const 256 : u8\n", "6:14: error: constant 256 does not fit u8");
    expect_error(HEAD "  %1 = const -1 : u64\n", "constant -1 does not fit u64");
    expect_error(HEAD "  %1 = const 99999999999999999999 : i64\n", "integer '99999999999999999999' is too large");
    expect_error(HEAD "  %1 = const 1 : f32[1]\n", "6:18: error: a constant has a scalar type");
    expect_error(HEAD "  %1 = param : i32\n", "6:14: error: expected '{index = N}', found ':'");
    expect_error(HEAD "  %1 = arange : f32[4096, 4096]\n", "6:17: error: tile too large");
    expect_error(HEAD "  %1 = arange : i32[0]\n", "6:21: error: extent 0 is out of range");
    expect_error(HEAD "  %1 = arange : i32[1, 1, 1, 1, 1, 1, 1]\n", "error: more than 6 dimensions");
    expect_error(HEAD "  %1 = add %0, %0\n", "error: expected ':', found end of input");
    expect_error(HEAD "  add %0, %0 : i32\n", "6:14: error: a result type needs a result name");
    expect_error(HEAD "  %1 = add %0, %0 {axis = 1} : i32\n", "6:19: error: 'add' takes no attributes");
    expect_error(HEAD "  %1 = yield\n", "6:3: error: yield has no result");
    expect_error(HEAD "  %1 = dot %0, %0, %0 {precision = fast} : i32\n",
                 "error: expected 'ieee', 'tf32' or 'default', found 'fast'");
    expect_error(HEAD "  %1 = view %0 {axes = [index, 4, foo]} : i32\n",
                 "error: expected 'index', 'gather' or an extent, found 'foo'");
    expect_error(HEAD "  %1 = sort %0 {axis = 0, descending = maybe} : i32\n", "expected 'true' or 'false'");
    expect_error(HEAD "  yield\n", "error: expected an instruction or '}', found end of input");
    expect_error(HEAD "  yield\n}\njunk", "8:1: error: expected 'kernel', found 'junk'");
    expect_error(HEAD "  %1 = const 12abc : i32\n", "6:16: error: malformed number: unexpected 'a'");
    expect_error(HEAD "  \x01\n", "6:3: error: unexpected character (byte 0x01)");
    expect_error(HEAD "  % 1\n", "6:3: error: expected a value number after '%'");
    expect_error(HEAD "  %1 = add %4294967296, %0 : i32\n", "value number %4294967296 is too large");
}

Test(ir_text, error_is_rendered_with_the_line_and_a_caret)
{
    expect_error(HEAD "  %1 = mul %0, %5 : i32\n", "6:16");
    cr_expect(strstr(tj_diag_render(ctx), "  %1 = mul %0, %5 : i32\n                 ^\n"), "%s",
              tj_diag_render(ctx));
}

static char *repeat(const char *s, int n)
{
    size_t len = strlen(s);
    char *out = tj_alloc(ctx, len * (size_t)n + 1);
    for (int i = 0; i < n; i++)
        memcpy(out + len * (size_t)i, s, len);
    return out;
}

Test(ir_text, deep_nesting_is_an_error_not_a_crash)
{
    char *text = tj_alloc(ctx, 1 << 16);
    strcat(strcat(strcpy(text, HEAD), "  %1 = eq %0, %0 : bool\n"), repeat("if %1 {\n", 300));
    expect_error(text, "error: regions nested too deeply (more than 256 levels)");
    strcat(strcpy(text, HEAD "  %1 = arange : "), repeat("(", 5000));
    expect_error(text, "error: tuple types nested too deeply");
}

/* ---- robustness ------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Damages text: flips, deletes, duplicates or inserts bytes and cuts it. */
static size_t mutate(char *buf, const char *text, size_t len, uint64_t *seed)
{
    static const char alphabet[] = "%_{}()[]<>,:=^@?#-019.aefinx \n\x00\xff";
    memcpy(buf, text, len);
    int edits = 1 + (int)(next_random(seed) % 4);
    for (int e = 0; e < edits && len; e++) {
        size_t at = next_random(seed) % len;
        switch (next_random(seed) % 4) {
        case 0: buf[at] = alphabet[next_random(seed) % (sizeof alphabet - 1)]; break;
        case 1: memmove(buf + at, buf + at + 1, len - at - 1), len--; break;
        case 2: memmove(buf + at + 1, buf + at, len - at), len++; break;
        default: len = at; break;
        }
    }
    return len;
}

Test(ir_text, mutated_text_never_crashes)
{
    const char *text = print_str(build_all_ops(ctx));
    size_t len = strlen(text);
    char *buf = malloc(len + 64);
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int parsed = 0;
    for (int i = 0; i < 3000; i++) {
        tj_ctx *c = tj_ctx_new();
        size_t n = mutate(buf, text, len, &seed);
        tj_kernel *k = NULL;
        int rc = tj_parse_ir(c, "fuzz", buf, n, &k, 1);
        if (rc == 1) {
            parsed++;
            tj_verify(k); /* any verdict, no crash */
            tj_buf out = {0};
            tj_print_kernel(k, &out);
            tj_buf_free(&out);
        } else {
            cr_expect(rc == 0 || tj_error_count(c) > 0, "failed without a diagnostic");
        }
        tj_diag_render(c);
        tj_ctx_free(c);
    }
    free(buf);
    cr_expect_gt(parsed, 0);
}

Test(ir_text, printer_shows_broken_ir)
{
    tj_kernel *k = skeleton(ctx, "broken");
    tj_ref x = const_i(k, k->body, TJ_DT_I32, 1);
    tj_ref loop_args[3] = {x, x, x};
    tj_ref loop = tj_emit(k, k->body, TJ_OP_FOR, TJ_TYPE_NONE, loop_args, 3);
    tj_inst_at(k, loop)->region[0] = 77; /* no such block */
    tj_ref bad = op2(k, k->body, TJ_OP_ADD, scalar(ctx, TJ_DT_I32), x, 999);
    (void)bad;
    finish_body(k);
    const char *text = print_str(k);
    cr_expect(strstr(text, "# block 77 does not exist"), "%s", text);
    cr_expect(strstr(text, "= add %1, %!999 : i32"), "%s", text);
    cr_expect_neq(tj_verify(k), 0);
}
