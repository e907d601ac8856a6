/* The .tj lexer: source text -> tokens, one at a time (fe_lex_next).
 *
 * Newlines separate statements, so the lexer emits them as tokens (one for
 * a run of blank lines); the parser ignores them inside ( ) and [ ].
 * The kernel header's `grid`, `const`, `tune` and `where` are names, not
 * keywords (`where` is also a built-in).
 */
#ifndef TJ_FRONTEND_LEXER_H
#define TJ_FRONTEND_LEXER_H

#include "tilejit/ir.h"

typedef enum fe_tok_kind {
    T_EOF,
    T_ERROR, /* something malformed, already reported */
    T_NEWLINE,
    T_IDENT,
    T_INT,
    T_FLOAT,
    T_STRING,
    /* keywords */
    T_KERNEL, T_FN, T_IN, T_FOR, T_WHILE, T_IF,
    T_ELSE, T_RETURN, T_TRUE, T_FALSE, T_NONE, T_INF, T_NAN,
    /* punctuation */
    T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET, T_LBRACE, T_RBRACE,
    T_COMMA, T_COLON, T_SEMI, T_ARROW, T_ASSIGN,
    T_PLUS_ASSIGN, T_MINUS_ASSIGN, T_STAR_ASSIGN, T_SLASH_ASSIGN,
    /* operators */
    T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT, T_POW,
    T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
    T_ANDAND, T_OROR, T_NOT, T_AMP, T_PIPE, T_CARET, T_SHL, T_SHR, T_TILDE,
    T_COUNT
} fe_tok_kind;

typedef struct fe_token {
    fe_tok_kind kind;
    tj_loc loc;
    uint32_t begin, end; /* byte offsets of the token's text */
    const char *text;    /* T_IDENT, T_STRING: NUL-terminated (arena) */
    int64_t ival;        /* T_INT */
    double fval;         /* T_FLOAT */
} fe_token;

typedef struct fe_lexer {
    tj_ctx *c;
    uint32_t file;
    const char *text;
    size_t len, pos;
    uint32_t line;
    size_t line_start;
    fe_tok_kind last;      /* the previous token's kind */
    uint32_t errors;       /* reported or not */
    uint32_t reported;
} fe_lexer;

/* Starts lexing `text`, registered as source `file`. */
void fe_lexer_init(fe_lexer *lx, tj_ctx *c, uint32_t file, const char *text, size_t len);
/* The next token; T_EOF at the end, again and again. Malformed input is
 * reported and becomes T_ERROR (bad characters, malformed or
 * out-of-range numbers, unterminated strings). */
fe_token fe_lex_next(fe_lexer *lx);

/* How a token kind is spelled in messages: "'('", "identifier", ... */
const char *fe_tok_name(fe_tok_kind k);

#endif
