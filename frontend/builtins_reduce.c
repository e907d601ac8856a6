/* Reductions (sum prod max min argmax argmin), cumsum / cumprod, sort. */
#include <string.h>

#include "frontend/builtins.h"

/* The axis of (x, axis) / (x, axis = k); NULL when not given. */
static const fe_expr *axis_expr(fe_builder *lw, const fe_expr *call, int *dup)
{
    const fe_expr *kw = fe_call_kw(call, "axis");
    *dup = kw && call->nitems > 1;
    if (*dup)
        fe_err(lw, kw->loc, "%s: the axis is given twice", call->name);
    return kw ? kw : call->nitems > 1 ? call->items[1] : NULL;
}

/* sum/prod of bool count in i32 */
static fe_val widen_bool(fe_builder *lw, fe_val x, tj_op op, tj_loc loc)
{
    if ((op == TJ_OP_REDUCE_SUM || op == TJ_OP_REDUCE_PROD || op == TJ_OP_CUMSUM || op == TJ_OP_CUMPROD) &&
        fe_val_dtype(lw, x) == TJ_DT_BOOL)
        return fe_cast(lw, x, TJ_DT_I32, 0, loc);
    return x;
}

static int is_arg_reduction(tj_op op) { return op == TJ_OP_ARGMAX || op == TJ_OP_ARGMIN; }

/* max(a, b) with a non-constant b is almost surely meant elementwise. */
static int check_positional_axis(fe_builder *lw, const fe_expr *call, const fe_builtin *b, const fe_expr *ax)
{
    int64_t unused;
    if (ax != (call->nitems > 1 ? call->items[1] : NULL) || fe_build_const(lw, ax, 1, &unused) != FE_CONST_NOT)
        return 1;
    if (b->op == TJ_OP_REDUCE_MAX || b->op == TJ_OP_REDUCE_MIN) {
        const char *ew = b->op == TJ_OP_REDUCE_MAX ? "maximum" : "minimum";
        fe_err(lw, ax->loc, "%s(x, axis): the axis must be a compile-time integer; for the elementwise %s of two values write %s(a, b)",
               b->name, ew, ew);
        return 0;
    }
    return 1;
}

fe_val fe_bi_reduce(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    int dup;
    const fe_expr *ax = axis_expr(lw, call, &dup);
    if (dup || (ax && !check_positional_axis(lw, call, b, ax)))
        return fe_error_val();
    fe_val x = fe_tile_arg(lw, call, 0);
    if (x.kind != V_VALUE)
        return x;
    const tj_type_info *in = fe_info(lw, x.type);
    int axis = -1;
    if (ax && !fe_axis(lw, ax, x.type, b->name, &axis))
        return fe_error_val();
    tj_dtype dt = is_arg_reduction(b->op) ? TJ_DT_I32 : in->dtype;
    if (in->rank == 0) /* a scalar is its own reduction */
        return is_arg_reduction(b->op) ? fe_value(fe_const_int(lw, TJ_DT_I32, 0), tj_type_scalar(lw->c, TJ_DT_I32)) : x;
    x = widen_bool(lw, x, b->op, call->loc);
    if (!is_arg_reduction(b->op))
        dt = fe_val_dtype(lw, x);
    int32_t shape[TJ_MAX_RANK];
    int rank = 0;
    for (int d = 0; axis >= 0 && d < in->rank; d++)
        if (d != axis)
            shape[rank++] = in->shape[d];
    tj_type t = tj_type_tile(lw->c, dt, rank, shape);
    tj_ref r = fe_emit(lw, b->op, t, &x.ref, 1);
    lw->k->insts[r].imm = axis;
    return fe_value(r, t);
}

/* cumsum / cumprod (x, axis = k); the axis defaults to 0. */
fe_val fe_bi_cumulative(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    int dup;
    const fe_expr *ax = axis_expr(lw, call, &dup);
    fe_val x = fe_tile_arg(lw, call, 0);
    if (dup || x.kind != V_VALUE)
        return fe_error_val();
    const tj_type_info *in = fe_info(lw, x.type);
    int axis = 0;
    if (in->rank == 0)
        return fe_err(lw, call->items[0]->loc, "%s needs a tile, got the scalar %s", b->name, fe_type_name(lw, x.type));
    if (ax && !fe_axis(lw, ax, x.type, b->name, &axis))
        return fe_error_val();
    x = widen_bool(lw, x, b->op, call->loc);
    tj_ref r = fe_emit(lw, b->op, x.type, &x.ref, 1);
    lw->k->insts[r].imm = axis;
    return fe_value(r, x.type);
}

/* descending = true|false */
static int descending_arg(fe_builder *lw, const fe_expr *call, int *out)
{
    const fe_expr *e = fe_call_kw(call, "descending");
    int64_t v = 0;
    *out = 0;
    if (!e)
        return 1;
    if (!fe_require_const(lw, e, "descending", &v))
        return 0;
    if (v != 0 && v != 1) {
        fe_err(lw, e->loc, "sort: descending must be true or false");
        return 0;
    }
    *out = (int)v;
    return 1;
}

/* The second positional argument: an axis if constant, else the values. */
static int sort_operands(fe_builder *lw, const fe_expr *call, fe_val *keys, fe_val *values, const fe_expr **ax)
{
    int64_t unused;
    *ax = fe_call_kw(call, "axis");
    *keys = fe_tile_arg(lw, call, 0);
    *values = (fe_val){.kind = V_VOID};
    if (call->nitems == 2 && fe_build_const(lw, call->items[1], 0, &unused) == FE_CONST_OK) {
        if (*ax) {
            fe_err(lw, (*ax)->loc, "sort: the axis is given twice");
            return 0;
        }
        *ax = call->items[1];
    } else if (call->nitems == 2) {
        *values = fe_tile_arg(lw, call, 1);
        if (values->kind != V_VALUE)
            return 0;
    }
    return keys->kind == V_VALUE;
}

fe_val fe_bi_sort(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val keys, values;
    const fe_expr *ax;
    int descending;
    if (!sort_operands(lw, call, &keys, &values, &ax) || !descending_arg(lw, call, &descending))
        return fe_error_val();
    const tj_type_info *in = fe_info(lw, keys.type);
    if (in->rank == 0)
        return fe_err(lw, call->items[0]->loc, "sort needs a tile, got the scalar %s", fe_type_name(lw, keys.type));
    int axis = in->rank - 1;
    if (ax && !fe_axis(lw, ax, keys.type, "sort", &axis))
        return fe_error_val();
    int with_values = values.kind == V_VALUE;
    const tj_type_info *vi = with_values ? fe_info(lw, values.type) : NULL;
    if (vi && (vi->rank != in->rank || memcmp(vi->shape, in->shape, sizeof(int32_t) * (size_t)in->rank)))
        return fe_err(lw, call->items[1]->loc, "sort: the values %s must have the shape of the keys %s",
                      fe_type_name(lw, values.type), fe_type_name(lw, keys.type));
    tj_type types[2] = {keys.type, values.type};
    tj_ref args[2] = {keys.ref, values.ref};
    tj_type t = with_values ? tj_type_tuple(lw->c, 2, types) : keys.type;
    tj_ref r = fe_emit(lw, b->op, t, args, with_values ? 2 : 1);
    lw->k->insts[r].imm = axis;
    lw->k->insts[r].flags = descending ? TJ_SORT_DESCENDING : 0;
    if (!with_values)
        return fe_value(r, t);
    fe_val out = {.kind = V_TUPLE, .n = 2};
    out.elems = tj_alloc(lw->c, sizeof *out.elems * 2);
    for (uint32_t i = 0; i < 2; i++)
        out.elems[i] = fe_value(fe_emit_proj(lw, r, i, types[i]), types[i]);
    return out;
}

/* counting_sort(d, R): the stable order of a 1-D integer tile by its low
 * log2(R) bits, and the count of each bucket. */
fe_val fe_bi_counting_sort(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val d = fe_tile_arg(lw, call, 0);
    int64_t buckets;
    if (d.kind != V_VALUE || !fe_require_const(lw, call->items[1], "the bucket count", &buckets))
        return fe_error_val();
    const tj_type_info *di = fe_info(lw, d.type);
    if (di->rank != 1 || !tj_dtype_is_int(di->dtype))
        return fe_err(lw, call->items[0]->loc, "counting_sort sorts a 1-D integer tile, not %s",
                      fe_type_name(lw, d.type));
    if (buckets < 2 || buckets > 256 || (buckets & (buckets - 1)))
        return fe_err(lw, call->items[1]->loc, "counting_sort: the bucket count must be a power of two from 2 to "
                      "256, not %lld", (long long)buckets);
    int32_t r = (int32_t)buckets;
    tj_type types[2] = {tj_type_tile(lw->c, TJ_DT_I32, 1, di->shape), tj_type_tile(lw->c, TJ_DT_I32, 1, &r)};
    tj_ref s = fe_emit(lw, b->op, tj_type_tuple(lw->c, 2, types), &d.ref, 1);
    fe_val out = {.kind = V_TUPLE, .n = 2};
    out.elems = tj_alloc(lw->c, sizeof *out.elems * 2);
    for (uint32_t i = 0; i < 2; i++)
        out.elems[i] = fe_value(fe_emit_proj(lw, s, i, types[i]), types[i]);
    return out;
}
