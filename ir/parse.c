/* The Tile IR parser: the inverse of ir/print.c (docs/ir.md, "Text form").
 *
 * The parser checks syntax and the representation (numbers in range, known
 * ops, types that exist); everything the verifier checks (operand types,
 * scoping) is left to tj_verify. The first error is reported with its
 * location and unwinds to tj_parse_ir. */
#include <setjmp.h>
#include <string.h>

#include "ir/ctx_internal.h"
#include "ir/parse_internal.h"
#include "ir/text.h"

/* ---- kernels ---------------------------------------------------------------------- */

static const char *parse_name_or_blank(parser *p, const char *what)
{
    const char *s = tjp_expect_ident(p, what);
    return strcmp(s, "_") ? s : NULL;
}

static void parse_param_dims(parser *p, tj_param *pm)
{
    const tj_tok *open = peek(p);
    tjp_expect(p, '[');
    while (!accept_punct(p, ']')) {
        if (pm->rank && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ']'");
        if (pm->rank == TJ_MAX_RANK)
            tjp_fail(p, peek(p), "more than %d dimensions", TJ_MAX_RANK);
        int d = pm->rank++;
        pm->dim_sizes[d] = -1;
        if (accept_punct(p, '?'))
            continue;
        if (peek(p)->kind == TJ_TOK_IDENT)
            pm->dim_names[d] = tjp_expect_ident(p, "a dim name");
        else
            pm->dim_sizes[d] = tjp_int_in(p, 0, INT64_MAX, "dim");
    }
    if (!pm->rank)
        tjp_fail(p, open, "a tensor parameter has at least one dim (write a scalar as 'n: i32')");
}

static void parse_params(parser *p)
{
    tj_kernel *k = p->k;
    uint32_t cap = 0;
    tjp_expect(p, '(');
    while (!accept_punct(p, ')')) {
        if (k->nparams && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ')'");
        k->params = tj_grow(p->c, k->params, &cap, k->nparams + 1, sizeof *k->params);
        tj_param *pm = &k->params[k->nparams++];
        pm->name = parse_name_or_blank(p, "a parameter name");
        tjp_expect(p, ':');
        pm->dtype = tjp_dtype(p);
        if (is_punct(peek(p), '['))
            parse_param_dims(p, pm);
    }
}

/* `(NAME = INT, ...)` after `config` or `spec`. */
static tj_binding *parse_bindings(parser *p, uint32_t *n)
{
    tj_binding *b = NULL;
    uint32_t cap = 0;
    tjp_expect(p, '(');
    while (!accept_punct(p, ')')) {
        if (*n && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ')'");
        b = tj_grow(p->c, b, &cap, *n + 1, sizeof *b);
        b[*n].name = parse_name_or_blank(p, "a name");
        tjp_expect(p, '=');
        b[*n].value = tjp_i64(p);
        ++*n;
    }
    return b;
}

/* `(threads = N, smem = BYTES[, programs = P])` after `simt`: a SIMT
 * kernel (docs/simt.md). */
static void parse_simt(parser *p, tj_kernel *k)
{
    tjp_expect(p, '(');
    tjp_expect_word(p, "threads");
    tjp_expect(p, '=');
    k->nthreads = (uint32_t)tjp_int_in(p, 0, UINT32_MAX, "threads");
    tjp_expect(p, ',');
    tjp_expect_word(p, "smem");
    tjp_expect(p, '=');
    k->smem_bytes = (uint32_t)tjp_int_in(p, 0, UINT32_MAX, "smem");
    if (accept_punct(p, ',')) {
        tjp_expect_word(p, "programs");
        tjp_expect(p, '=');
        k->programs = (uint32_t)tjp_int_in(p, 0, 32, "programs");
    }
    tjp_expect(p, ')');
    k->level = TJ_LEVEL_SIMT;
}

/* `= [axis, ...]` of a per-axis fact. */
static void parse_fact_axes(parser *p, uint8_t *flags, int rank)
{
    tjp_expect(p, '=');
    tjp_expect(p, '[');
    for (int n = 0; !accept_punct(p, ']'); n++) {
        if (n && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ']'");
        flags[tjp_int_in(p, 0, rank - 1, "axis")] = 1;
    }
}

/* `{unit_stride, aligned16, dim_div16 = [..], stride_div16 = [..]}` */
static void parse_fact(parser *p, tj_facts *f, int rank)
{
    tjp_expect(p, '{');
    for (int n = 0; !accept_punct(p, '}'); n++) {
        if (n && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or '}'");
        const tj_tok *t = peek(p);
        if (is_word(t, "unit_stride"))
            f->unit_stride = 1;
        else if (is_word(t, "aligned16"))
            f->aligned16 = 1;
        else if (!is_word(t, "dim_div16") && !is_word(t, "stride_div16"))
            tjp_fail_expected(p, "'unit_stride', 'aligned16', 'dim_div16' or 'stride_div16'");
        next(p);
        if (is_word(t, "dim_div16"))
            parse_fact_axes(p, f->dim_div16, rank);
        else if (is_word(t, "stride_div16"))
            parse_fact_axes(p, f->stride_div16, rank);
    }
}

/* `(X = {...}, n = {}, ...)` after `facts`: one entry per parameter, in order. */
static void parse_facts(parser *p, tj_kernel *k)
{
    k->facts = tj_alloc(p->c, sizeof *k->facts * (k->nparams ? k->nparams : 1));
    tjp_expect(p, '(');
    for (uint32_t i = 0; i < k->nparams; i++) {
        if (i)
            tjp_expect(p, ',');
        const tj_tok *at = peek(p);
        const char *name = parse_name_or_blank(p, "a parameter name");
        const char *want = k->params[i].name;
        if (!name != !want || (name && strcmp(name, want)))
            tjp_fail(p, at, "facts: expected parameter '%s' here", want ? want : "_");
        tjp_expect(p, '=');
        parse_fact(p, &k->facts[i], k->params[i].rank);
    }
    tjp_expect(p, ')');
}

static tj_kernel *parse_kernel(parser *p)
{
    tjp_expect_word(p, "kernel");
    tjp_expect(p, '@');
    tj_kernel *k = p->k = tj_kernel_new(p->c, tjp_expect_ident(p, "a kernel name"));
    p->keys = NULL; /* value numbers are per kernel */
    p->refs = NULL;
    p->mapcap = p->mapcount = 0;
    parse_params(p);
    if (is_word(peek(p), "simt")) {
        next(p);
        parse_simt(p, k);
    }
    if (is_word(peek(p), "config")) {
        next(p);
        k->config = parse_bindings(p, &k->nconfig);
    }
    if (is_word(peek(p), "spec")) {
        next(p);
        k->spec = parse_bindings(p, &k->nspec);
    }
    if (is_word(peek(p), "facts")) {
        next(p);
        parse_facts(p, k);
    }
    tjp_expect(p, '{');
    k->grid = tj_block_new(k, TJ_NONE);
    k->body = tj_block_new(k, TJ_NONE);
    tjp_expect_word(p, "grid");
    tjp_expect(p, ':');
    tjp_block_body(p, k->grid);
    tjp_expect_word(p, "body");
    tjp_expect(p, ':');
    tjp_block_body(p, k->body);
    tjp_expect(p, '}');
    return k;
}

static int parse_kernels(parser *p, tj_kernel **out, int max)
{
    int n = 0;
    while (peek(p)->kind != TJ_TOK_EOF) {
        if (!is_word(peek(p), "kernel"))
            tjp_fail_expected(p, "'kernel'");
        if (n >= max)
            tjp_fail(p, peek(p), "more than %d kernel%s in one text", max, max == 1 ? "" : "s");
        out[n++] = parse_kernel(p);
    }
    return n;
}

typedef struct parse_job {
    parser p;
    tj_kernel **out;
    int max, n;
} parse_job;

/* Syntax errors unwind to p.fail here; out of memory unwinds further, to
 * tj_guarded, which reports it. */
static int run_parse(void *arg)
{
    parse_job *j = arg;
    if (setjmp(j->p.fail))
        return -1;
    size_t len;
    const char *text = tj_source_text(j->p.c, j->p.file, &len);
    tj_tok *toks = NULL;
    if (!tj_lex_ir(j->p.c, j->p.file, text, len, &toks))
        return -1;
    j->p.toks = toks;
    j->n = parse_kernels(&j->p, j->out, j->max);
    return 0;
}

int tj_parse_ir(tj_ctx *c, const char *file, const char *text, size_t len,
                tj_kernel **out, int max)
{
    if (!c)
        return -1;
    if (!tj_array_ok(text, len) || (max > 0 && !out)) {
        tj_error(c, "tj_parse_ir: %s is NULL", text ? "out" : "text");
        return -1;
    }
    if (len > UINT32_MAX) {
        tj_diag_report(c, TJ_SEV_ERROR, 0, 0, 0, "%s: IR text larger than 4 GiB", file ? file : "<input>");
        return -1;
    }
    parse_job j = {.p = {.c = c, .file = tj_source_add(c, file, text ? text : "", text ? len : 0)},
                   .out = out, .max = max < 0 ? 0 : max};
    return tj_guarded(c, run_parse, &j) ? -1 : j.n;
}
