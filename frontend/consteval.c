/* Compile-time integer evaluation. */
#include <string.h>

#include "frontend/consteval.h"

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static int64_t int_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return wrap_sub(0, a); /* INT64_MIN / -1 wraps */
    return a / b;
}

static int64_t int_rem(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }

/* Repeated product; a negative exponent gives 0 except for bases 1, -1. */
static int64_t int_pow(int64_t a, int64_t b)
{
    if (b < 0)
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    int64_t r = 1;
    for (; b; b >>= 1, a = wrap_mul(a, a))
        if (b & 1)
            r = wrap_mul(r, a);
    return r;
}

static int64_t shift(fe_tok_kind op, int64_t a, int64_t b)
{
    if (b < 0 || b >= 64)
        return op == T_SHR && a < 0 ? -1 : 0;
    if (op == T_SHL)
        return (int64_t)((uint64_t)a << b);
    return a < 0 ? ~(~a >> b) : a >> b;
}

int64_t fe_fold_int(fe_tok_kind op, int64_t a, int64_t b)
{
    switch (op) {
    case T_PLUS: return wrap_add(a, b);
    case T_MINUS: return wrap_sub(a, b);
    case T_STAR: return wrap_mul(a, b);
    case T_SLASH: return int_div(a, b);
    case T_PERCENT: return int_rem(a, b);
    case T_POW: return int_pow(a, b);
    case T_AMP: return a & b;
    case T_PIPE: return a | b;
    case T_CARET: return a ^ b;
    case T_SHL: case T_SHR: return shift(op, a, b);
    case T_EQ: return a == b;
    case T_NE: return a != b;
    case T_LT: return a < b;
    case T_LE: return a <= b;
    case T_GT: return a > b;
    case T_GE: return a >= b;
    case T_ANDAND: return a && b;
    case T_OROR: return a || b;
    default: return 0;
    }
}

int64_t fe_cdiv(int64_t a, int64_t b) { return int_div(wrap_sub(wrap_add(a, b), 1), b); }

static fe_const_status not_const(fe_const_env *env, const fe_expr *e)
{
    if (!env->culprit)
        env->culprit = e;
    return FE_CONST_NOT;
}

/* cdiv(a, b), min(a, b), max(a, b) */
static fe_const_status eval_call(fe_const_env *env, const fe_expr *e, int64_t *out)
{
    int cdiv = !strcmp(e->name, "cdiv"), mn = !strcmp(e->name, "min"), mx = !strcmp(e->name, "max");
    if (!(cdiv || mn || mx) || e->nitems != 2 || e->nkw)
        return not_const(env, e);
    int64_t a, b;
    fe_const_status s = fe_const_eval(env, e->items[0], &a);
    if (s == FE_CONST_OK)
        s = fe_const_eval(env, e->items[1], &b);
    if (s != FE_CONST_OK)
        return s;
    *out = cdiv ? fe_cdiv(a, b) : mn ? (a < b ? a : b) : (a > b ? a : b);
    return FE_CONST_OK;
}

/* A chain of binary operators, from its first operand up to e. */
static fe_const_status eval_chain(fe_const_env *env, const fe_expr *e, int64_t *out)
{
    const fe_expr *x = fe_expr_chain_leaf(e);
    int64_t acc = 0, b;
    fe_const_status s = fe_const_eval(env, x, &acc);
    while (s == FE_CONST_OK && x != e) {
        x = x->up;
        if ((s = fe_const_eval(env, x->rhs, &b)) == FE_CONST_OK)
            acc = fe_fold_int(x->op, acc, b);
    }
    *out = acc;
    return s;
}

/* The recursion is bounded by the expression's height (the parser's limit). */
fe_const_status fe_const_eval(fe_const_env *env, const fe_expr *e, int64_t *out)
{
    int64_t a;
    fe_const_status s;
    switch (e->kind) {
    case E_INT:
    case E_BOOL:
        *out = e->ival;
        return FE_CONST_OK;
    case E_NAME:
        s = env->resolve(env->ud, e, out);
        return s == FE_CONST_NOT ? not_const(env, e) : s;
    case E_UNARY:
        if ((s = fe_const_eval(env, e->lhs, &a)) != FE_CONST_OK)
            return s;
        *out = e->op == T_MINUS ? wrap_sub(0, a) : e->op == T_NOT ? !a : ~a;
        return FE_CONST_OK;
    case E_BINARY:
        return eval_chain(env, e, out);
    case E_CALL:
        return eval_call(env, e, out);
    default:
        return not_const(env, e);
    }
}

int fe_expr_is_condition(const fe_expr *e)
{
    if (e->kind == E_BOOL)
        return 1;
    if (e->kind == E_UNARY)
        return e->op == T_NOT;
    if (e->kind != E_BINARY)
        return 0;
    switch (e->op) {
    case T_EQ: case T_NE: case T_LT: case T_LE: case T_GT: case T_GE: case T_ANDAND: case T_OROR:
        return 1;
    default:
        return 0;
    }
}
