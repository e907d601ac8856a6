/* Elementwise built-ins: exp ... ceil, abs, bitcast, maximum, minimum, where, fma. */
#include <string.h>

#include "frontend/builtins.h"

/* Float math; integer and bool inputs are converted to f32 first. */
/* Integer and bool operands (and literals) of float math become f32. */
static fe_val to_float(fe_builder *lw, fe_val v, tj_loc loc)
{
    if (!fe_is_literal(v) && !(v.kind == V_VALUE && !tj_dtype_is_float(fe_val_dtype(lw, v))))
        return v;
    return fe_cast(lw, v, TJ_DT_F32, 0, loc);
}

fe_val fe_bi_math(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val x = to_float(lw, fe_arg(lw, call, 0), call->loc);
    x = fe_to_value(lw, x, call->items[0]->loc);
    if (x.kind != V_VALUE)
        return x;
    return fe_emit_val(lw, b->op, x.type, &x.ref, 1);
}

fe_val fe_bi_abs(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val x = fe_tile_arg(lw, call, 0);
    if (x.kind != V_VALUE)
        return x;
    if (fe_val_dtype(lw, x) == TJ_DT_BOOL)
        return fe_err(lw, call->items[0]->loc, "abs needs a numeric operand, got %s", fe_type_name(lw, x.type));
    return fe_emit_val(lw, b->op, x.type, &x.ref, 1);
}

/* bitcast(x, DTYPE): x's bits read as DTYPE, of x's width (docs/language.md).
 * x must be typed: a literal has no width until it meets one. */
fe_val fe_bi_bitcast(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    const fe_expr *te = call->items[1];
    tj_dtype to = te->kind == E_NAME ? tj_dtype_from_name(te->name, strlen(te->name)) : TJ_DT_INVALID;
    fe_val x = fe_arg(lw, call, 0);
    if (x.kind == V_ERROR)
        return x;
    if (!to)
        return fe_err(lw, te->loc, "bitcast: the second argument is a dtype name such as u32");
    if (x.kind != V_VALUE)
        return fe_err(lw, call->items[0]->loc, "bitcast needs a typed value (a literal has no width: write %s(...) "
                      "first), got %s", tj_dtype_name(to), fe_val_desc(lw, x));
    tj_dtype from = fe_val_dtype(lw, x);
    if (from == TJ_DT_BOOL || to == TJ_DT_BOOL)
        return fe_err(lw, call->loc, "bitcast takes numbers, not bool (its bits differ between targets)");
    if (tj_dtype_size(from) != tj_dtype_size(to))
        return fe_err(lw, call->loc, "bitcast reads a number's bits as a number of the same width: %s is %d bytes, "
                      "%s %d", tj_dtype_name(from), tj_dtype_size(from), tj_dtype_name(to), tj_dtype_size(to));
    return fe_emit_val(lw, b->op, tj_type_with_dtype(lw->c, x.type, to), &x.ref, 1);
}

/* maximum(a, b), minimum(a, b): promoted and broadcast like `+`. */
fe_val fe_bi_minmax(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val args[2] = {fe_arg(lw, call, 0), fe_arg(lw, call, 1)};
    if (fe_any_error(args, 2) || !fe_unify(lw, args, 2, 1, call->loc))
        return fe_error_val();
    tj_ref refs[2] = {args[0].ref, args[1].ref};
    return fe_emit_val(lw, b->op, args[0].type, refs, 2);
}

/* where(c, a, b): c is bool; a and b promoted; all three broadcast. */
fe_val fe_bi_where(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val c = fe_arg(lw, call, 0);
    fe_val ab[2] = {fe_arg(lw, call, 1), fe_arg(lw, call, 2)};
    if (c.kind == V_ERROR || fe_any_error(ab, 2))
        return fe_error_val();
    if (c.kind != V_VALUE || fe_val_dtype(lw, c) != TJ_DT_BOOL)
        return fe_err(lw, call->items[0]->loc, "where: the condition must be bool, got %s", fe_val_desc(lw, c));
    if (!fe_unify(lw, ab, 2, 1, call->loc))
        return fe_error_val();
    const tj_type_info *ci = fe_info(lw, c.type), *ai = fe_info(lw, ab[0].type);
    int rank;
    int32_t shape[TJ_MAX_RANK];
    if (!fe_broadcast_shapes(ci->rank, ci->shape, ai->rank, ai->shape, &rank, shape))
        return fe_err(lw, call->loc, "where: the condition %s and the values %s do not broadcast",
                      fe_type_name(lw, c.type), fe_type_name(lw, ab[0].type));
    tj_type t = fe_tile_type(lw, ai->dtype, rank, shape, call->loc);
    if (!t)
        return fe_error_val();
    c = fe_broadcast_to(lw, c, rank, shape, call->loc);
    ab[0] = fe_broadcast_to(lw, ab[0], rank, shape, call->loc);
    ab[1] = fe_broadcast_to(lw, ab[1], rank, shape, call->loc);
    tj_ref refs[3] = {c.ref, ab[0].ref, ab[1].ref};
    return fe_emit_val(lw, b->op, t, refs, 3);
}

/* fma(a, b, c) = a * b + c, fused; on floats (integers become f32). */
fe_val fe_bi_fma(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val args[3];
    int any_float = 0;
    for (uint32_t i = 0; i < 3; i++) {
        args[i] = fe_arg(lw, call, i);
        any_float |= args[i].kind == V_FLOAT || tj_dtype_is_float(fe_val_dtype(lw, args[i]));
    }
    for (uint32_t i = 0; i < 3 && !any_float; i++)
        args[i] = to_float(lw, args[i], call->loc);
    if (fe_any_error(args, 3) || !fe_unify(lw, args, 3, 1, call->loc))
        return fe_error_val();
    tj_ref refs[3] = {args[0].ref, args[1].ref, args[2].ref};
    return fe_emit_val(lw, b->op, args[0].type, refs, 3);
}
