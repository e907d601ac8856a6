/* The IR text parser's internals: the lexer (parse_lex.c), the parser state
 * and its token, number, type and value-number helpers (parse_base.c), shared
 * with the instruction parser (parse_inst.c) and the kernel parser (parse.c). */
#ifndef TJ_PARSE_INTERNAL_H
#define TJ_PARSE_INTERNAL_H

#include <setjmp.h>
#include <string.h>

#include "tilejit/ir.h"

typedef enum tj_tok_kind {
    TJ_TOK_EOF,
    TJ_TOK_IDENT,  /* [A-Za-z_][A-Za-z0-9_]*: ops, dtypes, keywords, names */
    TJ_TOK_VALUE,  /* %123 */
    TJ_TOK_NUMBER, /* -12, 0.5, 1e-05, -inf */
    TJ_TOK_PUNCT,  /* one of ( ) [ ] { } < > , : = ^ @ ? */
} tj_tok_kind;

typedef struct tj_tok {
    tj_tok_kind kind;
    const char *s; /* the token's text in the registered source */
    uint32_t len;
    uint32_t line, col;
} tj_tok;

/* Splits text (of source `file`) into tokens ending with one TJ_TOK_EOF;
 * `#` comments and white space are skipped. Returns the token count, or 0
 * after reporting a bad character or a malformed number. */
uint32_t tj_lex_ir(tj_ctx *c, uint32_t file, const char *text, size_t len, tj_tok **out);

/* ---- the parser --------------------------------------------------------------- */

typedef struct parser {
    tj_ctx *c;
    uint32_t file;
    const tj_tok *toks;
    uint32_t pos;
    jmp_buf fail;
    int depth;      /* region nesting */
    int type_depth; /* tuple type nesting */
    tj_kernel *k;
    /* value numbers of the current kernel -> refs: open addressing, key
     * number + 1 (0: empty) */
    uint32_t *keys;
    tj_ref *refs;
    uint32_t mapcap, mapcount;
} parser;

static inline const tj_tok *peek(const parser *p) { return &p->toks[p->pos]; }

/* The token after the current one (EOF stays EOF). */
static inline const tj_tok *peek2(const parser *p)
{
    return peek(p)->kind == TJ_TOK_EOF ? peek(p) : &p->toks[p->pos + 1];
}

static inline const tj_tok *next(parser *p)
{
    const tj_tok *t = peek(p);
    if (t->kind != TJ_TOK_EOF)
        p->pos++;
    return t;
}

static inline tj_loc tok_loc(const parser *p, const tj_tok *t) { return (tj_loc){p->file, t->line, t->col}; }

static inline int is_punct(const tj_tok *t, char ch) { return t->kind == TJ_TOK_PUNCT && t->s[0] == ch; }

static inline int is_word(const tj_tok *t, const char *w)
{
    return t->kind == TJ_TOK_IDENT && strlen(w) == t->len && !memcmp(t->s, w, t->len);
}

static inline int accept_punct(parser *p, char ch)
{
    if (!is_punct(peek(p), ch))
        return 0;
    next(p);
    return 1;
}

/* Reports an error at token t and unwinds to tj_parse_ir. */
_Noreturn void tjp_fail(parser *p, const tj_tok *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "expected WHAT, found 'TOKEN'" at the current token. */
_Noreturn void tjp_fail_expected(parser *p, const char *what);
void tjp_expect(parser *p, char punct);
void tjp_expect_word(parser *p, const char *w);
/* An identifier, copied into the arena. */
const char *tjp_expect_ident(parser *p, const char *what);
/* Counts one more level of *depth; an error beyond TJ_MAX_NESTING. */
void tjp_enter(parser *p, int *depth, const char *what);

/* An integer literal as sign and magnitude, before its type is known. */
typedef struct tjp_literal {
    int negative;
    uint64_t mag;
} tjp_literal;
tjp_literal tjp_integer_tok(parser *p, const tj_tok *t);
int64_t tjp_literal_i64(parser *p, const tj_tok *t, tjp_literal v);
int64_t tjp_i64(parser *p);
int64_t tjp_int_in(parser *p, int64_t lo, int64_t hi, const char *what);

tj_dtype tjp_dtype(parser *p);
tj_type tjp_type(parser *p);

/* Value numbers of the current kernel: %N defined by t as r, and uses. */
void tjp_define(parser *p, const tj_tok *t, tj_ref r);
tj_ref tjp_use(parser *p, const tj_tok *t);

/* Instructions up to the closing `}` or the `body:` label (parse_inst.c). */
void tjp_block_body(parser *p, tj_block_id b);

#endif
