/* The built-in function table, call dispatch (dtype casts, fn helpers,
 * built-ins) with arity and keyword checks, and the small built-ins:
 * program_id, num_programs, arange, zeros, full, cdiv. */
#include <stdio.h>
#include <string.h>

#include "frontend/builtins.h"

static fe_val bi_program_id(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
static fe_val bi_arange(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
static fe_val bi_full(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
static fe_val bi_cdiv(fe_builder *lw, const fe_expr *call, const fe_builtin *b);
static fe_val bi_range(fe_builder *lw, const fe_expr *call, const fe_builtin *b);

#define MATH(name, op) {name, 1, 1, {0}, fe_bi_math, TJ_OP_##op, 0}
#define REDUCE(name, op) {name, 1, 2, {"axis"}, fe_bi_reduce, TJ_OP_##op, 0}

static const fe_builtin builtins[] = {
    {"program_id", 1, 1, {0}, bi_program_id, TJ_OP_PROGRAM_ID, 0},
    {"num_programs", 1, 1, {0}, bi_program_id, TJ_OP_NUM_PROGRAMS, 0},
    {"arange", 1, 2, {0}, bi_arange, TJ_OP_ARANGE, 0},
    {"zeros", 1, 1, {0}, bi_full, TJ_OP_BROADCAST, 0},
    {"full", 2, 2, {0}, bi_full, TJ_OP_BROADCAST, 0},
    {"cdiv", 2, 2, {0}, bi_cdiv, TJ_OP_DIV, 1},
    {"range", 0, 255, {0}, bi_range, TJ_OP_INVALID, 0},
    {"load", 1, 1, {"mask", "other"}, fe_bi_load, TJ_OP_LOAD, 0},
    {"store", 2, 2, {"mask", "distinct"}, fe_bi_store, TJ_OP_STORE, 0},
    {"load_acquire", 1, 1, {"mask", "other"}, fe_bi_load, TJ_OP_LOAD_ACQUIRE, 0},
    {"store_release", 2, 2, {"mask"}, fe_bi_store, TJ_OP_STORE_RELEASE, 0},
    {"load_relaxed", 1, 1, {"mask", "other"}, fe_bi_load, TJ_OP_LOAD_RELAXED, 0},
    {"store_relaxed", 2, 2, {"mask"}, fe_bi_store, TJ_OP_STORE_RELAXED, 0},
    {"atomic_add", 2, 2, {"mask"}, fe_bi_atomic, TJ_OP_ATOMIC_ADD, 0},
    {"atomic_max", 2, 2, {"mask"}, fe_bi_atomic, TJ_OP_ATOMIC_MAX, 0},
    {"atomic_min", 2, 2, {"mask"}, fe_bi_atomic, TJ_OP_ATOMIC_MIN, 0},
    MATH("exp", EXP), MATH("exp2", EXP2), MATH("log", LOG), MATH("log2", LOG2),
    MATH("sqrt", SQRT), MATH("rsqrt", RSQRT), MATH("sin", SIN), MATH("cos", COS),
    MATH("tanh", TANH), MATH("sigmoid", SIGMOID), MATH("erf", ERF), MATH("floor", FLOOR),
    MATH("ceil", CEIL),
    {"abs", 1, 1, {0}, fe_bi_abs, TJ_OP_ABS, 0},
    {"bitcast", 2, 2, {0}, fe_bi_bitcast, TJ_OP_BITCAST, 0},
    {"maximum", 2, 2, {0}, fe_bi_minmax, TJ_OP_MAX, 1},
    {"minimum", 2, 2, {0}, fe_bi_minmax, TJ_OP_MIN, 1},
    {"where", 3, 3, {0}, fe_bi_where, TJ_OP_SELECT, 0},
    {"fma", 3, 3, {0}, fe_bi_fma, TJ_OP_FMA, 0},
    REDUCE("sum", REDUCE_SUM), REDUCE("prod", REDUCE_PROD), REDUCE("max", REDUCE_MAX),
    REDUCE("min", REDUCE_MIN), REDUCE("argmax", ARGMAX), REDUCE("argmin", ARGMIN),
    {"cumsum", 1, 2, {"axis"}, fe_bi_cumulative, TJ_OP_CUMSUM, 0},
    {"cumprod", 1, 2, {"axis"}, fe_bi_cumulative, TJ_OP_CUMPROD, 0},
    {"scan", 1, 255, {"axis", "combine"}, fe_bi_scan, TJ_OP_SCAN, 0},
    {"sort", 1, 2, {"axis", "descending"}, fe_bi_sort, TJ_OP_SORT, 0},
    {"counting_sort", 2, 2, {0}, fe_bi_counting_sort, TJ_OP_COUNTING_SORT, 0},
    {"trans", 1, 1, {0}, fe_bi_trans, TJ_OP_PERMUTE, 0},
    {"permute", 2, 2, {0}, fe_bi_permute, TJ_OP_PERMUTE, 0},
    {"gather", 2, 2, {0}, fe_bi_gather, TJ_OP_GATHER, 0},
    {"reshape", 2, 2, {0}, fe_bi_reshape, TJ_OP_RESHAPE, 0},
    {"broadcast", 2, 2, {0}, fe_bi_broadcast, TJ_OP_BROADCAST, 0},
    {"dot", 2, 3, {"precision"}, fe_bi_dot, TJ_OP_DOT, 0},
};

const fe_builtin *fe_builtin_find(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, name))
            return &builtins[i];
    return NULL;
}

/* ---- argument helpers ---------------------------------------------------------- */

const fe_expr *fe_call_kw(const fe_expr *call, const char *name)
{
    for (uint32_t i = 0; i < call->nkw; i++)
        if (!strcmp(call->kw[i].name, name))
            return call->kw[i].value;
    return NULL;
}

fe_val fe_arg(fe_builder *lw, const fe_expr *call, uint32_t i)
{
    if (i >= call->nitems)
        return fe_error_val();
    fe_val v = fe_build_expr(lw, call->items[i]);
    lw->loc = call->loc;
    return v;
}

fe_val fe_tile_arg(fe_builder *lw, const fe_expr *call, uint32_t i)
{
    fe_val v = fe_arg(lw, call, i);
    return i < call->nitems ? fe_to_value(lw, v, call->items[i]->loc) : v;
}

int fe_axis(fe_builder *lw, const fe_expr *e, tj_type t, const char *fn, int *axis)
{
    int64_t a;
    int rank = fe_info(lw, t)->rank;
    if (!fe_require_const(lw, e, "an axis", &a))
        return 0;
    if (a < -rank || a >= rank) {
        fe_err(lw, e->loc, "%s: axis %lld is out of range for %s", fn, (long long)a, fe_type_name(lw, t));
        return 0;
    }
    *axis = (int)(a < 0 ? a + rank : a);
    return 1;
}

/* ---- dispatch -------------------------------------------------------------------- */

static int check_call(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    if (call->nitems < b->min_args || call->nitems > b->max_args) {
        if (b->min_args == b->max_args)
            fe_err(lw, call->loc, "%s() takes %d argument%s, got %u", b->name, b->min_args, b->min_args == 1 ? "" : "s",
                   call->nitems);
        else
            fe_err(lw, call->loc, "%s() takes %d to %d arguments, got %u", b->name, b->min_args, b->max_args, call->nitems);
        return 0;
    }
    for (uint32_t i = 0; i < call->nkw; i++) {
        int known = 0;
        char list[64] = "";
        for (int k = 0; k < 3 && b->kw[k]; k++) {
            known |= !strcmp(b->kw[k], call->kw[i].name);
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", b->kw[k]);
        }
        if (!known) {
            fe_err(lw, call->kw[i].loc, "%s() has no keyword argument '%s' (%s%s)", b->name, call->kw[i].name,
                   list[0] ? "it takes " : "it takes none", list);
            return 0;
        }
    }
    return 1;
}

/* `f32(x)`: a conversion; a float literal may be truncated. */
static fe_val cast_call(fe_builder *lw, const fe_expr *call, tj_dtype dt)
{
    if (call->nitems != 1 || call->nkw)
        return fe_err(lw, call->loc, "%s() takes 1 argument (the value to convert)", tj_dtype_name(dt));
    fe_val v = fe_arg(lw, call, 0);
    if (v.kind == V_ERROR)
        return v;
    return fe_cast(lw, v, dt, 1, call->items[0]->loc);
}

static fe_val fn_call(fe_builder *lw, const fe_expr *call, const fe_fn *fn)
{
    if (call->nkw)
        return fe_err(lw, call->kw[0].loc, "fn helpers take no keyword arguments");
    fe_val *args = tj_alloc(lw->c, sizeof *args * (call->nitems ? call->nitems : 1));
    for (uint32_t i = 0; i < call->nitems; i++)
        args[i] = fe_arg(lw, call, i);
    return fe_inline_fn(lw, fn, call, args, call->nitems);
}

fe_val fe_build_call(fe_builder *lw, const fe_expr *call)
{
    tj_dtype dt = tj_dtype_from_name(call->name, strlen(call->name));
    if (dt)
        return cast_call(lw, call, dt);
    const fe_builtin *b = fe_builtin_find(call->name);
    if (lw->in_grid && !(b && b->grid_ok))
        return fe_err(lw, call->loc, "a grid expression may only use integer arithmetic, cdiv, minimum, maximum and casts; '%s' is not allowed",
                      call->name);
    if (b)
        return check_call(lw, call, b) ? b->build(lw, call, b) : fe_error_val();
    const fe_fn *fn = fe_find_fn(lw->prog, call->name);
    if (fn)
        return fn_call(lw, call, fn);
    if (fe_find_local(lw, call->name) >= 0)
        return fe_err(lw, call->loc, "'%s' is a value, not a function", call->name);
    return fe_err(lw, call->loc, "unknown function '%s'", call->name);
}

/* ---- the small built-ins -------------------------------------------------------------- */

static fe_val bi_program_id(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    int64_t axis;
    if (!fe_require_const(lw, call->items[0], "the axis", &axis))
        return fe_error_val();
    if (axis < 0 || axis > 2)
        return fe_err(lw, call->items[0]->loc, "%s: axis must be 0, 1 or 2, got %lld", b->name, (long long)axis);
    tj_type i32 = tj_type_scalar(lw->c, TJ_DT_I32);
    tj_ref r = fe_emit(lw, b->op, i32, NULL, 0);
    lw->k->insts[r].imm = axis;
    return fe_value(r, i32);
}

/* arange(N) or arange(START, STOP): compile-time bounds, i32 values. */
static fe_val bi_arange(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    int64_t lo = 0, hi;
    if (call->nitems == 2 && !fe_require_const(lw, call->items[0], "arange's start", &lo))
        return fe_error_val();
    if (!fe_require_const(lw, call->items[call->nitems - 1], "arange's size", &hi))
        return fe_error_val();
    if (hi <= lo)
        return fe_err(lw, call->loc, "arange: the stop (%lld) must be greater than the start (%lld)", (long long)hi,
                      (long long)lo);
    if (lo < INT32_MIN || hi - 1 > INT32_MAX)
        return fe_err(lw, call->loc, "arange: the values %lld to %lld do not fit i32", (long long)lo, (long long)(hi - 1));
    int64_t n = hi - lo; /* both fit i32: no overflow */
    tj_type t = fe_tile_type64(lw, TJ_DT_I32, 1, &n, call->loc);
    if (!t)
        return fe_error_val();
    fe_val r = fe_emit_val(lw, b->op, t, NULL, 0);
    return lo ? fe_binop(lw, T_PLUS, r, (fe_val){.kind = V_INT, .i = lo}, call->loc) : r;
}

/* A type argument: `f32[BM, BN]` or a bare dtype (a scalar). */
static tj_type type_arg(fe_builder *lw, const fe_expr *e, const char *fn)
{
    if (e->kind == E_NAME && tj_dtype_from_name(e->name, strlen(e->name)))
        return tj_type_scalar(lw->c, tj_dtype_from_name(e->name, strlen(e->name)));
    if (e->kind != E_TYPE) {
        fe_err(lw, e->loc, "%s: expected a tile type such as f32[BM, BN]", fn);
        return TJ_TYPE_NONE;
    }
    int64_t shape[TJ_MAX_RANK];
    if (e->nitems > TJ_MAX_RANK) {
        fe_err(lw, e->loc, "a tile has at most %d dims", TJ_MAX_RANK);
        return TJ_TYPE_NONE;
    }
    for (uint32_t i = 0; i < e->nitems; i++)
        if (!fe_require_const(lw, e->items[i], "a tile extent", &shape[i]))
            return TJ_TYPE_NONE;
    return fe_tile_type64(lw, e->dtype, (int)e->nitems, shape, e->loc);
}

/* zeros(TYPE) and full(TYPE, VALUE): a scalar broadcast to the type. */
static fe_val bi_full(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    tj_type t = type_arg(lw, call->items[0], b->name);
    fe_val v = call->nitems == 2 ? fe_arg(lw, call, 1) : (fe_val){.kind = V_INT};
    if (!t || v.kind == V_ERROR)
        return fe_error_val();
    if (v.kind == V_VALUE && !tj_type_is_scalar(lw->c, v.type))
        return fe_err(lw, call->items[1]->loc, "full: the value must be a scalar, got %s", fe_type_name(lw, v.type));
    return fe_convert(lw, v, t, call->nitems == 2 ? call->items[1]->loc : call->loc);
}

/* cdiv(a, b) = (a + b - 1) / b on integers. */
static fe_val bi_cdiv(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    (void)b;
    fe_val x = fe_arg(lw, call, 0), y = fe_arg(lw, call, 1);
    fe_val args[2] = {x, y};
    if (fe_any_error(args, 2))
        return fe_error_val();
    for (int i = 0; i < 2; i++)
        if (args[i].kind == V_FLOAT || (args[i].kind != V_INT && !tj_dtype_is_int(fe_val_dtype(lw, args[i]))))
            return fe_err(lw, call->items[i]->loc, "cdiv needs integer operands, got %s", fe_val_desc(lw, args[i]));
    if (x.kind == V_INT && y.kind == V_INT)
        return (fe_val){.kind = V_INT, .i = fe_cdiv(x.i, y.i)};
    fe_val num = y.kind == V_INT ? fe_binop(lw, T_PLUS, x, (fe_val){.kind = V_INT, .i = fe_fold_int(T_MINUS, y.i, 1)}, call->loc)
                                 : fe_binop(lw, T_MINUS, fe_binop(lw, T_PLUS, x, y, call->loc), (fe_val){.kind = V_INT, .i = 1}, call->loc);
    return fe_binop(lw, T_SLASH, num, y, call->loc);
}

static fe_val bi_range(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    (void)b;
    return fe_err(lw, call->loc, "range() can only be used in a for statement: for i in range(...)");
}
