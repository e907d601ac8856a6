/* The .tj parser: kernels, fn helpers, statements, and error recovery.
 * After an error the parser is quiet until it resynchronizes at the next
 * statement (end of line, `;` or `}`) or, at the top level, at the next
 * `kernel` or `fn`. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/parser.h"

/* ---- tokens ------------------------------------------------------------ */

/* Lexes until token i exists (or the end of file). */
static void fill(fe_parser *p, uint32_t i)
{
    while (p->ntoks <= i && !(p->ntoks && p->toks[p->ntoks - 1].kind == T_EOF)) {
        p->toks = tj_grow(p->c, p->toks, &p->tcap, p->ntoks + 1, sizeof *p->toks);
        p->toks[p->ntoks++] = fe_lex_next(&p->lx);
    }
}

/* The token `ahead` places after the current one; inside brackets line
 * breaks do not count. */
const fe_token *fe_peek_at(fe_parser *p, uint32_t ahead)
{
    for (uint32_t i = p->pos;; i++) {
        fill(p, i);
        if (i >= p->ntoks)
            return &p->toks[p->ntoks - 1];
        const fe_token *t = &p->toks[i];
        if (t->kind == T_EOF)
            return t;
        if (p->nest && t->kind == T_NEWLINE)
            continue;
        if (!ahead--)
            return t;
    }
}

const fe_token *fe_peek(fe_parser *p) { return fe_peek_at(p, 0); }

const fe_token *fe_prev(const fe_parser *p) { return &p->toks[p->pos ? p->pos - 1 : 0]; }

const fe_token *fe_next(fe_parser *p)
{
    const fe_token *t = fe_peek(p);
    if (t->kind != T_EOF)
        p->pos = (uint32_t)(t - p->toks) + 1;
    return t;
}

void fe_open(fe_parser *p) { p->nest++; }
void fe_close(fe_parser *p) { p->nest--; }

int fe_accept(fe_parser *p, fe_tok_kind k)
{
    if (fe_peek(p)->kind != k)
        return 0;
    fe_next(p);
    return 1;
}

void fe_skip_newlines(fe_parser *p)
{
    while (fe_peek(p)->kind == T_NEWLINE || fe_peek(p)->kind == T_SEMI)
        fe_next(p);
}

static void vreport(fe_parser *p, tj_loc loc, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    tj_error_at(p->c, loc, "%s", msg);
    if (++p->errors + p->lx.errors >= FE_MAX_ERRORS && !p->fatal) {
        tj_error_at(p->c, loc, "too many errors; stopping here");
        p->fatal = 1;
    }
}

void fe_report(fe_parser *p, tj_loc loc, const char *fmt, ...)
{
    if (p->fatal)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(p, loc, fmt, ap);
    va_end(ap);
}

void fe_syntax_error(fe_parser *p, const fe_token *t, const char *fmt, ...)
{
    int quiet = p->panic || p->fatal || t->kind == T_ERROR; /* the lexer said why */
    p->panic = 1;
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(p, t->loc, fmt, ap);
    va_end(ap);
}

void fe_fatal(fe_parser *p, const fe_token *t, const char *fmt, ...)
{
    if (p->fatal)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(p, t->loc, fmt, ap);
    va_end(ap);
    p->fatal = 1;
}

int fe_enter(fe_parser *p, const fe_token *at)
{
    if (p->fatal)
        return 0;
    if (++p->depth > FE_MAX_DEPTH) {
        fe_fatal(p, at, "nesting is too deep (the limit is %d levels)", FE_MAX_DEPTH);
        return 0;
    }
    return 1;
}

void fe_leave(fe_parser *p) { p->depth--; }

/* How a token is described in "expected X, found Y". */
static const char *describe(fe_parser *p, const fe_token *t, char *buf, size_t cap)
{
    const char *src = p->lx.text;
    if (t->kind == T_IDENT || t->kind == T_INT || t->kind == T_FLOAT) {
        int n = (int)(t->end - t->begin);
        snprintf(buf, cap, "'%.*s'", n > 40 ? 40 : n, src + t->begin);
        return buf;
    }
    if (t->kind == T_EOF || t->kind == T_NEWLINE || t->kind == T_STRING)
        return fe_tok_name(t->kind);
    snprintf(buf, cap, "'%s'", fe_tok_name(t->kind));
    return buf;
}

void fe_expected(fe_parser *p, const fe_token *t, const char *what)
{
    char buf[64];
    fe_syntax_error(p, t, "expected %s, found %s", what, describe(p, t, buf, sizeof buf));
}

const fe_token *fe_expect(fe_parser *p, fe_tok_kind k, const char *what)
{
    const fe_token *t = fe_peek(p);
    if (t->kind == k)
        return fe_next(p);
    fe_expected(p, t, what);
    return NULL;
}

/* Skips a statement after an error: to the end of the line, or up to a
 * `}` that closes the enclosing block; nested blocks are skipped whole. */
static void sync_statement(fe_parser *p)
{
    int depth = 0;
    for (;;) {
        fe_tok_kind k = fe_peek(p)->kind;
        if (k == T_EOF || (depth == 0 && k == T_RBRACE))
            break;
        fe_next(p);
        if (k == T_LBRACE)
            depth++;
        else if (k == T_RBRACE)
            depth--;
        else if (depth == 0 && (k == T_NEWLINE || k == T_SEMI))
            break;
    }
    p->panic = 0;
}

/* ---- statements ---------------------------------------------------------- */

static fe_stmt *parse_stmt(fe_parser *p);
static void parse_block(fe_parser *p, fe_block *b);

static void push_stmt(fe_parser *p, fe_block *b, fe_stmt *s, uint32_t *cap)
{
    b->stmts = tj_grow(p->c, b->stmts, cap, b->n + 1, sizeof *b->stmts);
    b->stmts[b->n++] = s;
}

static int at_statement_end(fe_parser *p)
{
    fe_tok_kind k = fe_peek(p)->kind;
    return k == T_NEWLINE || k == T_SEMI || k == T_RBRACE || k == T_EOF;
}

static void parse_block(fe_parser *p, fe_block *b)
{
    fe_skip_newlines(p);
    const fe_token *open = fe_expect(p, T_LBRACE, "'{'");
    if (!open || !fe_enter(p, open))
        return;
    b->open = open->loc;
    uint32_t cap = 0;
    while (!p->fatal) {
        fe_skip_newlines(p);
        const fe_token *t = fe_peek(p);
        if (fe_accept(p, T_RBRACE))
            break;
        if (t->kind == T_EOF) {
            fe_fatal(p, open, "unterminated block: this '{' is never closed");
            break;
        }
        fe_stmt *s = parse_stmt(p);
        if (s && !at_statement_end(p)) {
            char buf[64];
            fe_syntax_error(p, fe_peek(p), "expected the end of the statement, found %s",
                            describe(p, fe_peek(p), buf, sizeof buf));
        }
        if (s && !p->panic)
            push_stmt(p, b, s, &cap);
        if (p->panic)
            sync_statement(p);
    }
    fe_leave(p);
}

static fe_stmt *new_stmt(fe_parser *p, fe_stmt_kind kind, const fe_token *t)
{
    fe_stmt *s = tj_alloc(p->c, sizeof *s);
    s->kind = kind;
    s->loc = t->loc;
    return s;
}

static int parse_range_args(fe_parser *p, fe_stmt *s)
{
    while (fe_peek(p)->kind != T_RPAREN) {
        if (s->nrange == 3) {
            fe_syntax_error(p, fe_peek(p), "range takes at most 3 arguments (start, stop, step)");
            return 0;
        }
        if (!(s->range[s->nrange++] = fe_parse_expr(p)))
            return 0;
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, T_RPAREN, "')' after the range arguments") != NULL;
}

static fe_stmt *parse_for(fe_parser *p, const fe_token *kw)
{
    fe_stmt *s = new_stmt(p, S_FOR, kw);
    const fe_token *var = fe_expect(p, T_IDENT, "a loop variable");
    if (!var || !fe_expect(p, T_IN, "'in'"))
        return NULL;
    s->var = (fe_target){strcmp(var->text, "_") ? var->text : NULL, var->loc};
    const fe_token *r = fe_peek(p);
    if (r->kind != T_IDENT || strcmp(r->text, "range")) {
        fe_syntax_error(p, r, "expected range(...) after 'in'");
        return NULL;
    }
    fe_next(p);
    if (!fe_expect(p, T_LPAREN, "'(' after range"))
        return NULL;
    fe_open(p);
    int ok = parse_range_args(p, s);
    fe_close(p);
    if (!ok)
        return NULL;
    if (!s->nrange) {
        fe_syntax_error(p, r, "range needs at least a stop value");
        return NULL;
    }
    parse_block(p, &s->body);
    return p->panic ? NULL : s;
}

static fe_stmt *parse_while(fe_parser *p, const fe_token *kw)
{
    fe_stmt *s = new_stmt(p, S_WHILE, kw);
    if (!(s->value = fe_parse_expr(p)))
        return NULL;
    parse_block(p, &s->body);
    return p->panic ? NULL : s;
}

static fe_stmt *parse_if(fe_parser *p, const fe_token *kw)
{
    fe_stmt *s = new_stmt(p, S_IF, kw);
    if (!(s->value = fe_parse_expr(p)))
        return NULL;
    parse_block(p, &s->body);
    if (p->panic)
        return NULL;
    uint32_t save = p->pos;
    fe_skip_newlines(p);
    const fe_token *t = fe_peek(p);
    if (!fe_accept(p, T_ELSE)) {
        p->pos = save;
        return s;
    }
    s->has_else = 1;
    if (fe_peek(p)->kind == T_IF) {
        /* `else if` is an else block holding one if statement */
        fe_stmt *inner = parse_stmt(p);
        if (!inner)
            return NULL;
        uint32_t cap = 0;
        s->orelse.open = t->loc;
        push_stmt(p, &s->orelse, inner, &cap);
        return s;
    }
    parse_block(p, &s->orelse);
    return p->panic ? NULL : s;
}

/* Turns the left side of `=` into targets: names, `_`, or a tuple of them. */
static int to_targets(fe_parser *p, fe_stmt *s, fe_expr *lhs)
{
    fe_expr *one[1] = {lhs};
    fe_expr **items = one;
    uint32_t n = 1;
    if (lhs->kind == E_TUPLE) {
        items = lhs->items;
        n = lhs->nitems;
        s->tuple = 1;
    }
    s->targets = tj_alloc(p->c, sizeof *s->targets * n);
    s->ntargets = n;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i]->kind != E_NAME) {
            fe_token at = {.loc = items[i]->loc};
            fe_syntax_error(p, &at, "cannot assign to this expression (expected a name)");
            return 0;
        }
        s->targets[i] = (fe_target){strcmp(items[i]->name, "_") ? items[i]->name : NULL, items[i]->loc};
    }
    return 1;
}

static fe_tok_kind augmented_op(fe_tok_kind k)
{
    switch (k) {
    case T_PLUS_ASSIGN: return T_PLUS;
    case T_MINUS_ASSIGN: return T_MINUS;
    case T_STAR_ASSIGN: return T_STAR;
    case T_SLASH_ASSIGN: return T_SLASH;
    default: return T_EOF;
    }
}

static fe_stmt *parse_simple(fe_parser *p, const fe_token *first)
{
    fe_expr *lhs = fe_parse_expr_list(p);
    if (!lhs)
        return NULL;
    const fe_token *t = fe_peek(p);
    fe_tok_kind aug = augmented_op(t->kind);
    if (t->kind != T_ASSIGN && aug == T_EOF) {
        fe_stmt *s = new_stmt(p, S_EXPR, first);
        s->value = lhs;
        return s;
    }
    fe_next(p);
    fe_stmt *s = new_stmt(p, S_ASSIGN, first);
    if (!to_targets(p, s, lhs))
        return NULL;
    fe_expr *rhs = fe_parse_expr_list(p);
    if (!rhs)
        return NULL;
    if (aug != T_EOF) {
        if (s->tuple || !s->targets[0].name) {
            fe_syntax_error(p, t, "'%s' needs a single name on its left", fe_tok_name(t->kind));
            return NULL;
        }
        if (!(rhs = fe_new_binary(p, t, aug, lhs, rhs)))
            return NULL;
    }
    s->value = rhs;
    return s;
}

static fe_stmt *parse_stmt(fe_parser *p)
{
    const fe_token *t = fe_peek(p);
    switch (t->kind) {
    case T_FOR:
        fe_next(p);
        return parse_for(p, t);
    case T_WHILE:
        fe_next(p);
        return parse_while(p, t);
    case T_IF:
        fe_next(p);
        return parse_if(p, t);
    case T_RETURN: {
        fe_next(p);
        fe_stmt *s = new_stmt(p, S_RETURN, t);
        return (s->value = fe_parse_expr_list(p)) ? s : NULL;
    }
    case T_ELSE:
        fe_syntax_error(p, t, "'else' without a matching 'if'");
        return NULL;
    default:
        return parse_simple(p, t);
    }
}

/* ---- the file ------------------------------------------------------------ */

void fe_parse_body(fe_parser *p, fe_block *b) { parse_block(p, b); }

static void sync_top(fe_parser *p)
{
    int depth = 0;
    for (;;) {
        fe_tok_kind k = fe_peek(p)->kind;
        if (k == T_EOF || (depth <= 0 && (k == T_KERNEL || k == T_FN)))
            break;
        depth += k == T_LBRACE ? 1 : k == T_RBRACE ? -1 : 0;
        fe_next(p);
    }
    p->panic = 0;
}

typedef struct parse_job {
    tj_ctx *c;
    const char *file, *text;
    size_t len;
    tj_program *result;
} parse_job;

/* The source as the lexer and the diagnostics see it: CR and CRLF line
 * ends become LF (lines, columns and quoted lines know only LF), and a
 * UTF-8 byte order mark, which some editors write, is dropped. */
static char *normalize_source(tj_ctx *c, const char *text, size_t len, size_t *out_len)
{
    static const char bom[] = "\xef\xbb\xbf";
    size_t i = len >= 3 && !memcmp(text, bom, 3) ? 3 : 0, n = 0;
    char *out = tj_alloc(c, len + 1);
    for (; i < len; i++) {
        if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
            continue;
        out[n++] = text[i] == '\r' ? '\n' : text[i];
    }
    *out_len = n;
    return out;
}

static int parse_file(void *arg)
{
    parse_job *job = arg;
    tj_ctx *c = job->c;
    if (job->len > FE_MAX_SOURCE) {
        uint32_t file = tj_source_add(c, job->file, "", 0);
        tj_diag_report(c, TJ_SEV_ERROR, file, 0, 0, "the file is larger than %u bytes, the front end's limit",
                       FE_MAX_SOURCE);
        return 0;
    }
    tj_program *prog = tj_alloc(c, sizeof *prog);
    prog->ctx = c;
    size_t len;
    const char *text = normalize_source(c, job->text, job->len, &len);
    prog->file = tj_source_add(c, job->file, text, len);
    prog->text = tj_source_text(c, prog->file, NULL);
    fe_parser p = {.c = c, .file = prog->file};
    fe_lexer_init(&p.lx, c, prog->file, prog->text, len);
    while (!p.fatal) {
        fe_skip_newlines(&p);
        const fe_token *t = fe_peek(&p);
        if (t->kind == T_EOF)
            break;
        if (t->kind == T_KERNEL)
            fe_parse_kernel(&p, prog);
        else if (t->kind == T_FN)
            fe_parse_fn(&p, prog);
        else
            fe_syntax_error(&p, t, "expected 'kernel' or 'fn' at the top level");
        if (p.panic)
            sync_top(&p);
    }
    uint32_t errors = p.errors + p.lx.errors;
    if (!errors && !prog->nkernels)
        tj_diag_report(c, TJ_SEV_ERROR, prog->file, 0, 0, "no kernel in file");
    job->result = errors || !prog->nkernels ? NULL : prog;
    return 0;
}

tj_program *tj_parse_program(tj_ctx *c, const char *file, const char *text, size_t len)
{
    if (!c)
        return NULL;
    if (!tj_array_ok(text, len)) {
        tj_error(c, "tj_parse_program: NULL text of %zu bytes", len);
        return NULL;
    }
    parse_job job = {c, file, text ? text : "", text ? len : 0, NULL};
    return tj_guarded(c, parse_file, &job) ? NULL : job.result;
}
