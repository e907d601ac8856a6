/* The .tj lexer: source text -> an array of tokens (arena memory).
 *
 * Newlines separate statements, so the lexer emits them as tokens, but only
 * at bracket depth 0: inside ( ) and [ ] a line break is just white space.
 * Braces reset that depth, which keeps one unclosed parenthesis from
 * swallowing the rest of the file.
 */
#ifndef TJ_FRONTEND_LEXER_H
#define TJ_FRONTEND_LEXER_H

#include "tilejit/ir.h"

typedef enum fe_tok_kind {
    T_EOF,
    T_NEWLINE,
    T_IDENT,
    T_INT,
    T_FLOAT,
    T_STRING,
    /* keywords */
    T_KERNEL, T_FN, T_GRID, T_CONST, T_TUNE, T_WHERE, T_IN, T_FOR, T_IF,
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

/* Tokenizes `text` (registered as source `file`); the array always ends
 * with T_EOF. Reports bad characters, malformed or out-of-range numbers and
 * unterminated strings, and keeps going. Returns the number of errors. */
uint32_t fe_lex(tj_ctx *c, uint32_t file, const char *text, size_t len,
                fe_token **out, uint32_t *ntokens);

/* How a token kind is spelled in messages: "'('", "identifier", ... */
const char *fe_tok_name(fe_tok_kind k);

#endif
