/* The IR text lexer: the whole text is tokenized up front so the parser can
 * look ahead freely. */
#include <string.h>

#include "ir/ctx_internal.h"
#include "ir/parse_internal.h"

typedef struct lexer {
    tj_ctx *c;
    uint32_t file;
    const char *s, *end;
    uint32_t line, col;
    tj_tok *toks;
    uint32_t ntoks, cap;
} lexer;

static int is_ident_start(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static int is_ident_char(char ch) { return is_ident_start(ch) || is_digit(ch); }

static void advance(lexer *x, size_t n)
{
    for (size_t i = 0; i < n && x->s < x->end; i++, x->s++) {
        if (*x->s == '\n')
            x->line++, x->col = 1;
        else
            x->col++;
    }
}

static size_t span(const lexer *x, const char *p, int (*pred)(char))
{
    const char *q = p;
    while (q < x->end && pred(*q))
        q++;
    return (size_t)(q - p);
}

static int starts_with(const lexer *x, const char *p, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(x->end - p) >= n && !memcmp(p, word, n);
}

/* Length of the number at x->s: -?digits(.digits*)?([eE][+-]?digits)?, or
 * -inf; 0 when there is none. */
static size_t number_length(const lexer *x)
{
    const char *p = x->s;
    if (p < x->end && *p == '-')
        p++;
    if (starts_with(x, p, "inf"))
        return p == x->s ? 0 : 4;
    size_t digits = span(x, p, is_digit);
    if (!digits)
        return 0;
    p += digits;
    if (p < x->end && *p == '.')
        p += 1 + span(x, p + 1, is_digit);
    if (p < x->end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        if (q < x->end && (*q == '+' || *q == '-'))
            q++;
        size_t exp = span(x, q, is_digit);
        if (exp)
            p = q + exp;
    }
    return (size_t)(p - x->s);
}

static void push(lexer *x, tj_tok_kind kind, size_t len)
{
    x->toks = tj_grow(x->c, x->toks, &x->cap, x->ntoks + 1, sizeof *x->toks);
    x->toks[x->ntoks++] = (tj_tok){kind, x->s, (uint32_t)len, x->line, x->col};
    advance(x, len);
}

static int lex_error(lexer *x, const char *what)
{
    unsigned char ch = (unsigned char)*x->s;
    if (ch >= 32 && ch < 127)
        tj_diag_report(x->c, TJ_SEV_ERROR, x->file, x->line, x->col, "%s '%c'", what, ch);
    else
        tj_diag_report(x->c, TJ_SEV_ERROR, x->file, x->line, x->col, "%s (byte 0x%02x)", what, ch);
    return -1;
}

/* Lexes one token (or skips space or a comment); -1 after an error. */
static int lex_one(lexer *x)
{
    char ch = *x->s;
    if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
        advance(x, 1);
        return 0;
    }
    if (ch == '#') {
        const char *eol = memchr(x->s, '\n', (size_t)(x->end - x->s));
        advance(x, eol ? (size_t)(eol - x->s) : (size_t)(x->end - x->s));
        return 0;
    }
    if (is_ident_start(ch)) {
        push(x, TJ_TOK_IDENT, span(x, x->s, is_ident_char));
        return 0;
    }
    if (ch == '%') {
        size_t digits = span(x, x->s + 1, is_digit);
        if (!digits)
            return lex_error(x, "expected a value number after");
        push(x, TJ_TOK_VALUE, 1 + digits);
        return 0;
    }
    size_t n = number_length(x);
    if (n) {
        const char *after = x->s + n;
        if (after < x->end && (is_ident_char(*after) || *after == '.')) {
            advance(x, n);
            return lex_error(x, "malformed number: unexpected");
        }
        push(x, TJ_TOK_NUMBER, n);
        return 0;
    }
    if (strchr("()[]{}<>,:=^@?", ch) && ch) {
        push(x, TJ_TOK_PUNCT, 1);
        return 0;
    }
    return lex_error(x, "unexpected character");
}

uint32_t tj_lex_ir(tj_ctx *c, uint32_t file, const char *text, size_t len, tj_tok **out)
{
    lexer x = {c, file, text, text + len, 1, 1, NULL, 0, 0};
    while (x.s < x.end)
        if (lex_one(&x) < 0)
            return 0;
    push(&x, TJ_TOK_EOF, 0);
    *out = x.toks;
    return x.ntoks;
}
