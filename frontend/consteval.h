/* Compile-time integer evaluation of expressions: tile extents, axes,
 * `where` clauses; and the integer folding rules shared with the building
 * of literals (those of the IR: wrapping, C division, x / 0 == 0). */
#ifndef TJ_FRONTEND_CONSTEVAL_H
#define TJ_FRONTEND_CONSTEVAL_H

#include "frontend/ast.h"

typedef enum fe_const_status {
    FE_CONST_OK,  /* evaluated */
    FE_CONST_NOT, /* not a compile-time constant (nothing reported) */
    FE_CONST_ERR, /* an error was reported */
} fe_const_status;

typedef struct fe_const_env {
    /* Resolves a name to its value. */
    fe_const_status (*resolve)(void *ud, const fe_expr *name, int64_t *out);
    void *ud;
    const fe_expr *culprit; /* set to the first non-constant part */
} fe_const_env;

/* Booleans evaluate to 0 and 1. */
fe_const_status fe_const_eval(fe_const_env *env, const fe_expr *e, int64_t *out);

/* a OP b on int64 with the IR's semantics; OP is a binary operator token
 * (comparisons give 0 or 1). */
int64_t fe_fold_int(fe_tok_kind op, int64_t a, int64_t b);
/* cdiv(a, b) = (a + b - 1) / b, as built. */
int64_t fe_cdiv(int64_t a, int64_t b);

/* Whether e is written as a condition (comparison, &&, ||, !, true/false). */
int fe_expr_is_condition(const fe_expr *e);

#endif
