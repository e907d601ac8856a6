/* Expressions: literals (folded while both sides are literals), names,
 * unary and binary operators, tuples; calls and indexing go to
 * builtins.c and memory.c. */
#include <math.h>
#include <string.h>

#include "frontend/builtins.h"
#include "frontend/build.h"

static tj_op binary_op(fe_tok_kind k)
{
    switch (k) {
    case T_PLUS: return TJ_OP_ADD;
    case T_MINUS: return TJ_OP_SUB;
    case T_STAR: return TJ_OP_MUL;
    case T_SLASH: return TJ_OP_DIV;
    case T_PERCENT: return TJ_OP_REM;
    case T_POW: return TJ_OP_POW;
    case T_AMP: return TJ_OP_AND;
    case T_PIPE: return TJ_OP_OR;
    case T_CARET: return TJ_OP_XOR;
    case T_SHL: return TJ_OP_SHL;
    case T_SHR: return TJ_OP_SHR;
    case T_EQ: return TJ_OP_EQ;
    case T_NE: return TJ_OP_NE;
    case T_LT: return TJ_OP_LT;
    case T_LE: return TJ_OP_LE;
    case T_GT: return TJ_OP_GT;
    case T_GE: return TJ_OP_GE;
    case T_ANDAND: return TJ_OP_AND;
    case T_OROR: return TJ_OP_OR;
    default: return TJ_OP_INVALID;
    }
}

static int is_comparison(fe_tok_kind k) { return tj_op_get(binary_op(k))->flags & TJ_OPF_CMP; }
static int is_bitwise(fe_tok_kind k) { return k == T_AMP || k == T_PIPE || k == T_CARET; }
static int is_shift(fe_tok_kind k) { return k == T_SHL || k == T_SHR; }

static fe_val bool_const(fe_builder *lw, int v)
{
    return fe_value(fe_const_int(lw, TJ_DT_BOOL, v != 0), tj_type_scalar(lw->c, TJ_DT_BOOL));
}

/* ---- literal folding ---------------------------------------------------------- */

static fe_val fold_float(fe_builder *lw, fe_tok_kind op, double a, double b, tj_loc loc)
{
    fe_val r = {.kind = V_FLOAT};
    switch (op) {
    case T_PLUS: r.f = a + b; return r;
    case T_MINUS: r.f = a - b; return r;
    case T_STAR: r.f = a * b; return r;
    case T_SLASH: r.f = a / b; return r;
    case T_PERCENT: r.f = fmod(a, b); return r;
    case T_POW: r.f = pow(a, b); return r;
    case T_EQ: return bool_const(lw, a == b);
    case T_NE: return bool_const(lw, a != b);
    case T_LT: return bool_const(lw, a < b);
    case T_LE: return bool_const(lw, a <= b);
    case T_GT: return bool_const(lw, a > b);
    case T_GE: return bool_const(lw, a >= b);
    default: return fe_err(lw, loc, "operator '%s' needs integer operands, not float literals", fe_tok_name(op));
    }
}

static fe_val fold_literals(fe_builder *lw, fe_tok_kind op, fe_val a, fe_val b, tj_loc loc)
{
    if (a.kind == V_FLOAT || b.kind == V_FLOAT)
        return fold_float(lw, op, a.kind == V_FLOAT ? a.f : (double)a.i, b.kind == V_FLOAT ? b.f : (double)b.i, loc);
    int64_t v = fe_fold_int(op, a.i, b.i);
    return is_comparison(op) ? bool_const(lw, (int)v) : (fe_val){.kind = V_INT, .i = v};
}

/* ---- operators --------------------------------------------------------------------- */

/* Reports when an operator does not take operands of type t. */
static int check_operands(fe_builder *lw, fe_tok_kind op, tj_type t, tj_loc loc)
{
    tj_dtype dt = fe_info(lw, t)->dtype;
    const char *want = NULL;
    if (is_shift(op) && !tj_dtype_is_int(dt))
        want = "integer";
    else if (is_bitwise(op) && tj_dtype_is_float(dt))
        want = "integer or bool";
    if (want) {
        fe_err(lw, loc, "operator '%s' needs %s operands, got %s", fe_tok_name(op), want, fe_type_name(lw, t));
        return 0;
    }
    if (!is_comparison(op) && !is_bitwise(op) && dt == TJ_DT_BOOL) {
        fe_err(lw, loc, "operator '%s' is not defined on %s; convert with i32(x) first", fe_tok_name(op), fe_type_name(lw, t));
        return 0;
    }
    return 1;
}

/* `&&` and `||` take bool operands only. */
static fe_val logical(fe_builder *lw, fe_tok_kind op, fe_val a, fe_val b, tj_loc loc)
{
    fe_val args[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (fe_val_dtype(lw, args[i]) != TJ_DT_BOOL || args[i].kind != V_VALUE)
            return fe_err(lw, loc, "operator '%s' needs bool operands, got %s (compare with != 0 first)",
                          fe_tok_name(op), fe_val_desc(lw, args[i]));
    if (!fe_unify(lw, args, 2, 0, loc))
        return fe_error_val();
    tj_ref refs[2] = {args[0].ref, args[1].ref};
    return fe_emit_val(lw, binary_op(op), args[0].type, refs, 2);
}

fe_val fe_binop(fe_builder *lw, fe_tok_kind op, fe_val a, fe_val b, tj_loc loc)
{
    fe_val args[2] = {a, b};
    if (fe_any_error(args, 2))
        return fe_error_val();
    if (op == T_ANDAND || op == T_OROR)
        return logical(lw, op, a, b, loc);
    if (fe_is_literal(a) && fe_is_literal(b))
        return fold_literals(lw, op, a, b, loc);
    if (!fe_unify(lw, args, 2, 1, loc))
        return fe_error_val();
    if (!check_operands(lw, op, args[0].type, loc))
        return fe_error_val();
    tj_type t = args[0].type;
    if (is_comparison(op))
        t = tj_type_with_dtype(lw->c, t, TJ_DT_BOOL);
    tj_ref refs[2] = {args[0].ref, args[1].ref};
    return fe_emit_val(lw, binary_op(op), t, refs, 2);
}

static fe_val unary(fe_builder *lw, const fe_expr *e)
{
    fe_val a = fe_build_expr(lw, e->lhs);
    if (a.kind == V_ERROR)
        return a;
    if (e->op == T_MINUS && a.kind == V_INT)
        return (fe_val){.kind = V_INT, .i = fe_fold_int(T_MINUS, 0, a.i)};
    if (e->op == T_MINUS && a.kind == V_FLOAT)
        return (fe_val){.kind = V_FLOAT, .f = -a.f};
    if (e->op == T_TILDE && a.kind == V_INT)
        return (fe_val){.kind = V_INT, .i = ~a.i};
    if (fe_is_literal(a) && e->op == T_NOT)
        return fe_err(lw, e->loc, "operator '!' needs a bool operand, got %s (write x == 0)", fe_val_desc(lw, a));
    a = fe_to_value(lw, a, e->lhs->loc);
    if (a.kind != V_VALUE)
        return a;
    tj_dtype dt = fe_val_dtype(lw, a);
    if (e->op == T_MINUS && dt == TJ_DT_BOOL)
        return fe_err(lw, e->loc, "operator '-' needs a numeric operand, got %s", fe_type_name(lw, a.type));
    if (e->op == T_NOT && dt != TJ_DT_BOOL)
        return fe_err(lw, e->loc, "operator '!' needs a bool operand, got %s (write x == 0)", fe_type_name(lw, a.type));
    if (e->op == T_TILDE && !tj_dtype_is_int(dt))
        return fe_err(lw, e->loc, "operator '~' needs an integer operand, got %s", fe_type_name(lw, a.type));
    return fe_emit_val(lw, e->op == T_MINUS ? TJ_OP_NEG : TJ_OP_NOT, a.type, &a.ref, 1);
}

/* e and the binary operators below it on the left, in a loop: a chain
 * `a + b + c ...` of any length costs no stack. */
static fe_val binary_chain(fe_builder *lw, const fe_expr *e)
{
    const fe_expr *x = fe_expr_chain_leaf(e);
    fe_val acc = fe_build_expr(lw, x);
    while (x != e) {
        x = x->up;
        if (x != e && !fe_build_enter(lw, x->loc)) /* e was entered by fe_build_expr */
            return fe_error_val();
        fe_val b = fe_build_expr(lw, x->rhs);
        lw->loc = x->loc;
        acc = fe_binop(lw, x->op, acc, b, x->loc);
        if (x != e)
            fe_build_leave(lw);
    }
    return acc;
}

static fe_val tuple(fe_builder *lw, const fe_expr *e)
{
    fe_val t = {.kind = V_TUPLE, .n = e->nitems};
    t.elems = tj_alloc(lw->c, sizeof *t.elems * e->nitems);
    for (uint32_t i = 0; i < e->nitems; i++)
        t.elems[i] = fe_build_expr(lw, e->items[i]);
    return t;
}

static fe_val dispatch(fe_builder *lw, const fe_expr *e)
{
    switch (e->kind) {
    case E_INT: return (fe_val){.kind = V_INT, .i = e->ival};
    case E_FLOAT: return (fe_val){.kind = V_FLOAT, .f = e->fval};
    case E_BOOL: return bool_const(lw, (int)e->ival);
    case E_NAME: return fe_lookup(lw, e->name, e->loc);
    case E_UNARY: return unary(lw, e);
    case E_BINARY: return binary_chain(lw, e);
    case E_CALL: return fe_build_call(lw, e);
    case E_INDEX: return fe_build_index(lw, e);
    case E_TUPLE: return tuple(lw, e);
    case E_STRING: return fe_err(lw, e->loc, "a string is only allowed as an option, e.g. precision = \"ieee\"");
    case E_NONE: return fe_err(lw, e->loc, "None is only allowed in an index, e.g. x[:, None]");
    case E_SLICE: return fe_err(lw, e->loc, "a slice is only allowed in an index");
    case E_LIST: return fe_err(lw, e->loc, "a list is only allowed as an argument of permute, reshape or broadcast");
    case E_TYPE: return fe_err(lw, e->loc, "a type is only allowed as an argument of zeros or full");
    }
    return fe_error_val();
}

fe_val fe_build_expr(fe_builder *lw, const fe_expr *e)
{
    if (!fe_build_enter(lw, e->loc))
        return fe_error_val();
    tj_loc saved = lw->loc;
    lw->loc = e->loc;
    fe_val v = dispatch(lw, e);
    lw->loc = saved;
    fe_build_leave(lw);
    return v;
}

fe_val fe_build_int_scalar(fe_builder *lw, const fe_expr *e, const char *what)
{
    fe_val v = fe_build_expr(lw, e);
    if (v.kind == V_ERROR)
        return v;
    if (v.kind == V_INT)
        return fe_cast(lw, v, TJ_DT_I32, 0, e->loc);
    if (v.kind != V_VALUE || !tj_type_is_scalar(lw->c, v.type) || !tj_dtype_is_int(fe_val_dtype(lw, v)))
        return fe_err(lw, e->loc, "%s must be an integer scalar, got %s", what, fe_val_desc(lw, v));
    return v;
}

/* ---- compile-time constants -------------------------------------------------------- */

typedef struct const_ctx {
    fe_builder *lw;
    int allow_dims;
} const_ctx;

static fe_const_status resolve(void *ud, const fe_expr *name, int64_t *out)
{
    const_ctx *cc = ud;
    fe_builder *lw = cc->lw;
    int local = fe_find_local(lw, name->name);
    if (local >= 0) {
        fe_val v = lw->vars[local].val;
        *out = v.i;
        return v.kind == V_INT ? FE_CONST_OK : v.kind == V_ERROR ? FE_CONST_ERR : FE_CONST_NOT;
    }
    if (fe_tile_value(lw, name->name, out))
        return FE_CONST_OK;
    uint32_t param;
    int axis;
    if (!cc->allow_dims || lw->ninlining || !fe_find_dim(lw->kd, name->name, &param, &axis))
        return FE_CONST_NOT;
    return fe_dim_value(lw, name->name, name->loc, out) ? FE_CONST_OK : FE_CONST_ERR;
}

/* Also counts the work (evaluated without fe_build_enter). */
static fe_const_status eval_const(fe_builder *lw, const fe_expr *e, int allow_dims, int64_t *out, const fe_expr **culprit)
{
    lw->work += e->size;
    const_ctx cc = {lw, allow_dims};
    fe_const_env env = {resolve, &cc, NULL};
    fe_const_status s = fe_const_eval(&env, e, out);
    *culprit = env.culprit;
    return s;
}

fe_const_status fe_build_const(fe_builder *lw, const fe_expr *e, int allow_dims, int64_t *out)
{
    const fe_expr *culprit;
    return eval_const(lw, e, allow_dims, out, &culprit);
}

int fe_require_const(fe_builder *lw, const fe_expr *e, const char *what, int64_t *out)
{
    const fe_expr *culprit;
    fe_const_status s = eval_const(lw, e, 1, out, &culprit);
    if (s == FE_CONST_NOT && culprit->kind == E_NAME && !fe_name_known(lw, culprit->name))
        fe_lookup(lw, culprit->name, culprit->loc); /* says why the name is unknown */
    else if (s == FE_CONST_NOT)
        fe_err(lw, culprit->loc, "%s must be a compile-time constant", what);
    return s == FE_CONST_OK;
}
