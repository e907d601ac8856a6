/* Shape built-ins (trans, permute, gather, reshape, broadcast) and dot. */
#include <string.h>

#include "frontend/builtins.h"

/* `[a, b, ...]` of compile-time integers; returns the count or -1. */
static int const_list(fe_builder *lw, const fe_expr *call, uint32_t i, int64_t *out)
{
    const fe_expr *e = call->items[i];
    if (e->kind != E_LIST) {
        fe_err(lw, e->loc, "%s: expected a list such as [0, 1]", call->name);
        return -1;
    }
    if (e->nitems > TJ_MAX_RANK) {
        fe_err(lw, e->loc, "%s: a tile has at most %d dims", call->name, TJ_MAX_RANK);
        return -1;
    }
    for (uint32_t k = 0; k < e->nitems; k++)
        if (!fe_require_const(lw, e->items[k], "a list entry", &out[k]))
            return -1;
    return (int)e->nitems;
}

static fe_val emit_permute(fe_builder *lw, fe_val x, const int32_t *perm, tj_loc loc)
{
    const tj_type_info *in = fe_info(lw, x.type);
    int32_t shape[TJ_MAX_RANK];
    for (int d = 0; d < in->rank; d++)
        shape[d] = in->shape[perm[d]];
    tj_type t = fe_tile_type(lw, in->dtype, in->rank, shape, loc);
    tj_ref r = fe_emit(lw, TJ_OP_PERMUTE, t, &x.ref, 1);
    tj_inst_set_list(lw->k, r, perm, (uint32_t)in->rank);
    return fe_value(r, t);
}

/* trans(x): swaps the last two axes. */
fe_val fe_bi_trans(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    (void)b;
    fe_val x = fe_tile_arg(lw, call, 0);
    if (x.kind != V_VALUE)
        return x;
    int rank = fe_info(lw, x.type)->rank;
    if (rank < 2)
        return fe_err(lw, call->loc, "trans needs a tile with at least 2 dims, got %s", fe_type_name(lw, x.type));
    int32_t perm[TJ_MAX_RANK];
    for (int d = 0; d < rank; d++)
        perm[d] = d;
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
    return emit_permute(lw, x, perm, call->loc);
}

fe_val fe_bi_permute(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    (void)b;
    fe_val x = fe_tile_arg(lw, call, 0);
    int64_t list[TJ_MAX_RANK];
    int n = const_list(lw, call, 1, list);
    if (x.kind != V_VALUE || n < 0)
        return fe_error_val();
    int rank = fe_info(lw, x.type)->rank;
    int32_t perm[TJ_MAX_RANK];
    unsigned seen = 0;
    for (int d = 0; d < n && n == rank; d++) {
        if (list[d] < 0 || list[d] >= rank || (seen & (1u << list[d])))
            break;
        seen |= 1u << list[d];
        perm[d] = (int32_t)list[d];
    }
    if (n != rank || seen != (1u << rank) - 1)
        return fe_err(lw, call->items[1]->loc, "permute: the list must be a permutation of 0..%d for %s", rank - 1,
                      fe_type_name(lw, x.type));
    return emit_permute(lw, x, perm, call->loc);
}

/* gather(x, idx): y[i] = x[idx[i]] on 1-D tiles (docs/language.md). */
fe_val fe_bi_gather(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val x = fe_tile_arg(lw, call, 0), idx = fe_tile_arg(lw, call, 1);
    if (x.kind != V_VALUE || idx.kind != V_VALUE)
        return fe_error_val();
    const tj_type_info *xi = fe_info(lw, x.type), *ii = fe_info(lw, idx.type);
    if (xi->rank != 1)
        return fe_err(lw, call->items[0]->loc, "gather takes a 1-D tile, not %s", fe_type_name(lw, x.type));
    if (!tj_dtype_is_int(ii->dtype) || ii->rank != 1)
        return fe_err(lw, call->items[1]->loc, "gather: the indices must be a 1-D integer tile, not %s",
                      fe_type_name(lw, idx.type));
    tj_type t = tj_type_tile(lw->c, xi->dtype, 1, ii->shape);
    tj_ref args[2] = {x.ref, idx.ref};
    return fe_value(fe_emit(lw, b->op, t, args, 2), t);
}

/* reshape(x, [..]): same element count, row-major; one entry may be -1. */
fe_val fe_bi_reshape(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val x = fe_tile_arg(lw, call, 0);
    int64_t shape[TJ_MAX_RANK];
    int n = const_list(lw, call, 1, shape);
    if (x.kind != V_VALUE || n < 0)
        return fe_error_val();
    const tj_type_info *in = fe_info(lw, x.type);
    uint64_t have = tj_type_numel(lw->c, x.type), known = 1;
    int infer = -1, bad = 0;
    for (int d = 0; d < n; d++) {
        if (shape[d] == -1 && infer < 0)
            infer = d;
        else if (shape[d] <= 0 || shape[d] > (int64_t)TJ_MAX_TILE_ELEMS || known > TJ_MAX_TILE_ELEMS)
            bad = 1;
        else
            known *= (uint64_t)shape[d];
    }
    if (!bad && infer >= 0 && have % known == 0)
        shape[infer] = (int64_t)(have / known);
    else if (infer >= 0 || known != have)
        bad = 1;
    if (bad)
        return fe_err(lw, call->items[1]->loc, "reshape: cannot reshape %s (%llu elements) to %s", fe_type_name(lw, x.type),
                      (unsigned long long)have, fe_expr_text(lw->prog, call->items[1]));
    tj_type t = fe_tile_type64(lw, in->dtype, n, shape, call->loc);
    if (!t)
        return fe_error_val();
    return t == x.type ? x : fe_emit_val(lw, b->op, t, &x.ref, 1);
}

fe_val fe_bi_broadcast(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    (void)b;
    fe_val x = fe_tile_arg(lw, call, 0);
    int64_t shape[TJ_MAX_RANK];
    int n = const_list(lw, call, 1, shape);
    if (x.kind != V_VALUE || n < 0)
        return fe_error_val();
    tj_type t = fe_tile_type64(lw, fe_val_dtype(lw, x), n, shape, call->items[1]->loc);
    if (!t)
        return fe_error_val();
    return fe_broadcast_to(lw, x, n, fe_info(lw, t)->shape, call->loc);
}

/* ---- dot ------------------------------------------------------------------------ */

static tj_dtype accumulator_dtype(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16: case TJ_DT_BF16: case TJ_DT_F32: return TJ_DT_F32;
    case TJ_DT_F64: return TJ_DT_F64;
    case TJ_DT_I8: return TJ_DT_I32;
    default: return TJ_DT_INVALID;
    }
}

/* [M, K] x [K, N] or batched [B, M, K] x [B, K, N]; returns the result's
 * type, TJ_TYPE_NONE after an error. */
static tj_type dot_type(fe_builder *lw, const fe_expr *call, fe_val a, fe_val b)
{
    const tj_type_info *ai = fe_info(lw, a.type), *bi = fe_info(lw, b.type);
    const char *an = fe_type_name(lw, a.type), *bn = fe_type_name(lw, b.type);
    int r = ai->rank;
    if ((r != 2 && r != 3) || bi->rank != r) {
        fe_err(lw, call->loc, "dot: operands must both be 2-D tiles (or 3-D, batched): %s x %s", an, bn);
        return TJ_TYPE_NONE;
    }
    if (ai->dtype != bi->dtype) {
        fe_err(lw, call->loc, "dot: operand dtypes differ: %s x %s (convert one of them)", an, bn);
        return TJ_TYPE_NONE;
    }
    tj_dtype acc = accumulator_dtype(ai->dtype);
    if (!acc) {
        fe_err(lw, call->loc, "dot: %s operands are not supported (use f16, bf16, f32, f64 or i8)", tj_dtype_name(ai->dtype));
        return TJ_TYPE_NONE;
    }
    if (ai->shape[r - 1] != bi->shape[r - 2]) {
        fe_err(lw, call->loc, "dot: inner dimensions differ: %s x %s", an, bn);
        return TJ_TYPE_NONE;
    }
    if (r == 3 && ai->shape[0] != bi->shape[0]) {
        fe_err(lw, call->loc, "dot: batch dimensions differ: %s x %s", an, bn);
        return TJ_TYPE_NONE;
    }
    int32_t shape[3] = {ai->shape[0], ai->shape[r - 2], bi->shape[r - 1]};
    return fe_tile_type(lw, acc, r, r == 3 ? shape : shape + 1, call->loc);
}

/* The accumulator: given (converted or checked), or zeros. */
static fe_val dot_acc(fe_builder *lw, const fe_expr *call, tj_type t)
{
    const tj_type_info *ti = fe_info(lw, t);
    if (call->nitems < 3)
        return fe_convert(lw, (fe_val){.kind = V_INT}, t, call->loc);
    fe_val acc = fe_arg(lw, call, 2);
    tj_loc loc = call->items[2]->loc;
    if (acc.kind == V_ERROR || fe_is_literal(acc))
        return acc.kind == V_ERROR ? acc : fe_convert(lw, acc, t, loc);
    acc = fe_to_value(lw, acc, loc);
    if (acc.kind != V_VALUE)
        return acc;
    const tj_type_info *ci = fe_info(lw, acc.type);
    int rank;
    int32_t shape[TJ_MAX_RANK];
    if (ci->dtype != ti->dtype)
        return fe_err(lw, loc, "dot: the accumulator must be %s for these operands, got %s", tj_dtype_name(ti->dtype),
                      fe_type_name(lw, acc.type));
    if (!fe_broadcast_shapes(ci->rank, ci->shape, ti->rank, ti->shape, &rank, shape) || rank != ti->rank ||
        memcmp(shape, ti->shape, sizeof(int32_t) * (size_t)rank))
        return fe_err(lw, loc, "dot: the accumulator %s does not fit the product %s", fe_type_name(lw, acc.type),
                      fe_type_name(lw, t));
    return fe_broadcast_to(lw, acc, ti->rank, ti->shape, loc);
}

static int precision_arg(fe_builder *lw, const fe_expr *call, int64_t *out)
{
    const fe_expr *e = fe_call_kw(call, "precision");
    *out = TJ_DOT_DEFAULT;
    if (!e)
        return 1;
    if (e->kind == E_STRING && !strcmp(e->name, "ieee"))
        *out = TJ_DOT_IEEE;
    else if (e->kind == E_STRING && !strcmp(e->name, "tf32"))
        *out = TJ_DOT_TF32;
    else
        fe_err(lw, e->loc, "dot: precision must be \"ieee\" or \"tf32\"");
    return *out != TJ_DOT_DEFAULT;
}

fe_val fe_bi_dot(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val a = fe_tile_arg(lw, call, 0), bv = fe_tile_arg(lw, call, 1);
    if (a.kind != V_VALUE || bv.kind != V_VALUE)
        return fe_error_val();
    int64_t precision;
    tj_type t = dot_type(lw, call, a, bv);
    if (!t || !precision_arg(lw, call, &precision))
        return fe_error_val();
    fe_val acc = dot_acc(lw, call, t);
    if (acc.kind != V_VALUE)
        return fe_error_val();
    lw->loc = call->loc;
    tj_ref args[3] = {a.ref, bv.ref, acc.ref};
    tj_ref r = fe_emit(lw, b->op, t, args, 3);
    lw->k->insts[r].imm = precision;
    return fe_value(r, t);
}
