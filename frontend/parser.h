/* Parser state shared by parser.c (declarations, statements) and
 * parse_expr.c (expressions). */
#ifndef TJ_FRONTEND_PARSER_H
#define TJ_FRONTEND_PARSER_H

#include "frontend/ast.h"

/* Tokens are lexed on demand, so diagnostics come out in source order.
 * The token array lives in the arena: growing it leaves the old copy in
 * place, so token pointers the parser holds stay valid. */
typedef struct fe_parser {
    tj_ctx *c;
    uint32_t file;
    fe_lexer lx;
    fe_token *toks;
    uint32_t ntoks, tcap, pos;
    uint32_t nest;       /* open ( and [: newlines inside them are skipped */
    uint32_t depth;      /* current nesting, limited by FE_MAX_DEPTH */
    uint32_t errors;
    int panic;           /* an error was reported: quiet until resynchronized */
    int fatal;           /* too deep or too many errors: stop parsing */
} fe_parser;

const fe_token *fe_peek(fe_parser *p);
const fe_token *fe_peek_at(fe_parser *p, uint32_t ahead);
/* The last token consumed. */
const fe_token *fe_prev(const fe_parser *p);
const fe_token *fe_next(fe_parser *p);
int fe_accept(fe_parser *p, fe_tok_kind k);
/* Consumes a token of kind k or reports "expected WHAT"; returns it or NULL. */
const fe_token *fe_expect(fe_parser *p, fe_tok_kind k, const char *what);
void fe_skip_newlines(fe_parser *p);
/* Reports "expected WHAT, found <t>". */
void fe_expected(fe_parser *p, const fe_token *t, const char *what);
/* Reports at token t unless already panicking; enters panic mode. */
void fe_syntax_error(fe_parser *p, const fe_token *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Reports an error that needs no resynchronization (a bad name). */
void fe_report(fe_parser *p, tj_loc loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Reports an error after which parsing stops (too deep, too many). */
void fe_fatal(fe_parser *p, const fe_token *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Around bracketed lists: fe_open after the opening token, fe_close
 * after the closing one (on every path). */
void fe_open(fe_parser *p);
void fe_close(fe_parser *p);
/* Enters one level of nesting; 0 (after an error) when that is too deep. */
int fe_enter(fe_parser *p, const fe_token *at);
void fe_leave(fe_parser *p);

fe_expr *fe_new_expr(fe_parser *p, fe_expr_kind kind, const fe_token *at);
/* `lhs OP rhs` with the operator token `at` (NULL when too deep). */
fe_expr *fe_new_binary(fe_parser *p, const fe_token *at, fe_tok_kind op, fe_expr *lhs, fe_expr *rhs);
/* An expression; NULL after a syntax error. */
fe_expr *fe_parse_expr(fe_parser *p);
/* `e` or `e1, e2, ...` (a tuple without parentheses). */
fe_expr *fe_parse_expr_list(fe_parser *p);
/* `f32` or `f32[E, ...]` starting at a dtype name. */
fe_expr *fe_parse_type(fe_parser *p);
/* A dtype name token -> its dtype, or an error naming the token. */
tj_dtype fe_parse_dtype(fe_parser *p, const fe_token *t);

/* Declarations (decl.c): a kernel or fn, appended to the program. */
void fe_parse_kernel(fe_parser *p, tj_program *prog);
void fe_parse_fn(fe_parser *p, tj_program *prog);
/* A `{ ... }` block of statements (parser.c). */
void fe_parse_body(fe_parser *p, fe_block *b);

#endif
