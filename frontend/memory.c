/* Indexing: views of tensors (`X[i, a:a+S, idx]`), new axes on tiles
 * (`x[:, None]`), tuple elements; and load, store and the atomics. */
#include <string.h>

#include "frontend/builtins.h"
#include "frontend/build.h"

/* ---- slices ---------------------------------------------------------------------- */

/* A slice's extent: `a:a+S` with S constant, `C1:C2`, `:S`, or `:` (the
 * whole axis, whose size must then be known). */
static int slice_extent(fe_builder *lw, const fe_expr *s, const tj_param *prm, int axis, int64_t *ext)
{
    const fe_expr *start = s->lhs, *stop = s->rhs;
    int64_t lo = 0;
    const char *what = "slice extent";
    if (!stop && !start) {
        if (prm->dim_sizes[axis] > 0)
            *ext = prm->dim_sizes[axis];
        else if (!fe_dim_value(lw, prm->dim_names[axis], s->loc, ext))
            return 0;
    } else if (stop && stop->kind == E_BINARY && stop->op == T_PLUS && start && fe_expr_same(stop->lhs, start)) {
        if (!fe_require_const(lw, stop->rhs, what, ext))
            return 0;
    } else if (stop && (!start || fe_build_const(lw, start, 0, &lo) == FE_CONST_OK)) {
        if (!fe_require_const(lw, stop, what, ext))
            return 0;
        *ext -= lo;
    } else {
        fe_err(lw, s->loc, "slice extent must be a compile-time constant (write start:start+SIZE)");
        return 0;
    }
    if (*ext <= 0) {
        fe_err(lw, s->loc, "slice extent must be positive, got %lld", (long long)*ext);
        return 0;
    }
    return 1;
}

/* ---- views ----------------------------------------------------------------------- */

typedef struct view_build {
    tj_ref ops[TJ_MAX_RANK];
    int32_t axes[TJ_MAX_RANK];
    int64_t extents[TJ_MAX_RANK]; /* the view's shape, gathers left out */
    int nextents;
    int gather_pos; /* where the gather shape goes among extents; -1: none */
    fe_val gathers[TJ_MAX_RANK];
    int gather_axis[TJ_MAX_RANK];
    int ngathers;
} view_build;

static int view_axis(fe_builder *lw, view_build *vb, const fe_expr *item, const tj_param *prm, int d)
{
    if (item->kind == E_NONE) {
        fe_err(lw, item->loc, "None cannot index a tensor (use it on tiles: x[:, None])");
        return 0;
    }
    if (item->kind == E_SLICE) {
        int64_t ext;
        if (!slice_extent(lw, item, prm, d, &ext))
            return 0;
        fe_val start = item->lhs ? fe_build_int_scalar(lw, item->lhs, "a slice start")
                                 : fe_cast(lw, (fe_val){.kind = V_INT}, TJ_DT_I32, 0, item->loc);
        if (start.kind != V_VALUE)
            return 0;
        vb->ops[d] = start.ref;
        vb->axes[d] = (int32_t)(ext > INT32_MAX ? INT32_MAX : ext);
        vb->extents[vb->nextents++] = ext;
        return 1;
    }
    fe_val v = fe_build_expr(lw, item);
    if (v.kind == V_INT)
        v = fe_cast(lw, v, TJ_DT_I32, 0, item->loc);
    if (v.kind == V_ERROR)
        return 0;
    if (v.kind != V_VALUE || !tj_dtype_is_int(fe_val_dtype(lw, v))) {
        fe_err(lw, item->loc, "an index must be an integer scalar, an integer tile or a slice, got %s", fe_val_desc(lw, v));
        return 0;
    }
    vb->ops[d] = v.ref;
    if (tj_type_is_scalar(lw->c, v.type)) {
        vb->axes[d] = TJ_VIEW_INDEX;
        return 1;
    }
    vb->axes[d] = TJ_VIEW_GATHER;
    if (vb->gather_pos < 0)
        vb->gather_pos = vb->nextents;
    vb->gather_axis[vb->ngathers] = d;
    vb->gathers[vb->ngathers++] = v;
    return 1;
}

/* Several gather tiles broadcast to one shape. Returns its rank. */
static int unify_gathers(fe_builder *lw, view_build *vb, tj_loc loc, int32_t *shape)
{
    int rank = 0;
    for (int i = 0; i < vb->ngathers; i++) {
        const tj_type_info *in = fe_info(lw, vb->gathers[i].type);
        if (!fe_broadcast_shapes(rank, shape, in->rank, in->shape, &rank, shape)) {
            fe_err(lw, loc, "gather indices do not broadcast to one shape: %s and %s",
                   fe_type_name(lw, vb->gathers[0].type), fe_type_name(lw, vb->gathers[i].type));
            return -1;
        }
    }
    for (int i = 0; i < vb->ngathers; i++) {
        fe_val g = fe_broadcast_to(lw, vb->gathers[i], rank, shape, loc);
        if (g.kind != V_VALUE)
            return -1;
        vb->ops[vb->gather_axis[i]] = g.ref;
    }
    return rank;
}

static fe_val build_view(fe_builder *lw, const fe_expr *e, uint32_t param)
{
    const tj_param *prm = &lw->kd->params[param];
    if ((int)e->nitems != prm->rank)
        return fe_err(lw, e->loc, "tensor '%s' has %d dims but %u %s given; each dim needs an index or a slice",
                      prm->name, prm->rank, e->nitems, e->nitems == 1 ? "index is" : "indices are");
    view_build vb = {.gather_pos = -1};
    int ok = 1;
    for (int d = 0; d < prm->rank; d++)
        ok &= view_axis(lw, &vb, e->items[d], prm, d);
    if (!ok)
        return fe_error_val();
    lw->loc = e->loc;
    int32_t gshape[TJ_MAX_RANK] = {0};
    int grank = vb.ngathers ? unify_gathers(lw, &vb, e->loc, gshape) : 0;
    if (grank < 0)
        return fe_error_val();
    int64_t shape[2 * TJ_MAX_RANK];
    int rank = 0;
    for (int i = 0; i <= vb.nextents; i++) {
        for (int g = 0; i == vb.gather_pos && g < grank; g++)
            shape[rank++] = gshape[g];
        if (i < vb.nextents)
            shape[rank++] = vb.extents[i];
    }
    tj_type tile = fe_tile_type64(lw, prm->dtype, rank, shape, e->loc);
    if (!tile)
        return fe_error_val();
    const tj_type_info *ti = fe_info(lw, tile);
    tj_type vt = tj_type_view(lw->c, prm->dtype, ti->rank, ti->shape);
    tj_ref args[TJ_MAX_RANK + 1];
    args[0] = fe_emit_param(lw, param);
    memcpy(args + 1, vb.ops, sizeof(tj_ref) * (size_t)prm->rank);
    tj_ref r = fe_emit(lw, TJ_OP_VIEW, vt, args, (uint32_t)prm->rank + 1);
    tj_inst_set_list(lw->k, r, vb.axes, (uint32_t)prm->rank);
    return (fe_val){.kind = V_VIEW, .ref = r, .type = vt};
}

/* ---- indexing tiles and tuples ------------------------------------------------------ */

/* `x[:, None]`: only full slices and None; a reshape that adds axes. */
static fe_val tile_index(fe_builder *lw, const fe_expr *e, fe_val v)
{
    const tj_type_info *in = fe_info(lw, v.type);
    int32_t shape[TJ_MAX_RANK + 1];
    int rank = 0, src = 0;
    for (uint32_t i = 0; i < e->nitems; i++) {
        const fe_expr *it = e->items[i];
        int full = it->kind == E_SLICE && !it->lhs && !it->rhs;
        if (!full && it->kind != E_NONE)
            return fe_err(lw, it->loc, "a tile can only be indexed with ':' and None (to add an axis); load from a view to select elements");
        if (rank == TJ_MAX_RANK)
            return fe_err(lw, it->loc, "a tile has at most %d dims", TJ_MAX_RANK);
        if (full && src == in->rank)
            return fe_err(lw, it->loc, "too many ':' for %s", fe_type_name(lw, v.type));
        shape[rank++] = full ? in->shape[src++] : 1;
    }
    for (; src < in->rank; src++) {
        if (rank == TJ_MAX_RANK)
            return fe_err(lw, e->loc, "a tile has at most %d dims", TJ_MAX_RANK);
        shape[rank++] = in->shape[src];
    }
    tj_type t = fe_tile_type(lw, in->dtype, rank, shape, e->loc);
    if (!t)
        return fe_error_val();
    return t == v.type ? v : fe_emit_val(lw, TJ_OP_RESHAPE, t, &v.ref, 1);
}

static fe_val tuple_index(fe_builder *lw, const fe_expr *e, fe_val t)
{
    int64_t i;
    if (e->nitems != 1 || e->items[0]->kind == E_SLICE || e->items[0]->kind == E_NONE)
        return fe_err(lw, e->loc, "a tuple takes one constant index");
    if (!fe_require_const(lw, e->items[0], "a tuple index", &i))
        return fe_error_val();
    if (i < -(int64_t)t.n || i >= (int64_t)t.n)
        return fe_err(lw, e->items[0]->loc, "tuple index %lld is out of range for a tuple of %u values", (long long)i, t.n);
    return t.elems[i < 0 ? i + t.n : i];
}

fe_val fe_build_index(fe_builder *lw, const fe_expr *e)
{
    fe_val base = fe_build_expr(lw, e->lhs);
    lw->loc = e->loc;
    switch (base.kind) {
    case V_ERROR: return base;
    case V_TENSOR: return build_view(lw, e, base.param);
    case V_TUPLE: return tuple_index(lw, e, base);
    case V_VALUE: return tile_index(lw, e, base);
    default: return fe_err(lw, e->loc, "%s cannot be indexed", fe_val_desc(lw, base));
    }
}

/* ---- load, store, atomics -------------------------------------------------------------- */

static fe_val view_arg(fe_builder *lw, const fe_expr *call)
{
    fe_val v = fe_arg(lw, call, 0);
    if (v.kind != V_VIEW && v.kind != V_ERROR)
        return fe_err(lw, call->items[0]->loc, "%s: expected a view such as X[i, 0:BLOCK], got %s", call->name,
                      fe_val_desc(lw, v));
    return v;
}

static tj_type view_tile(fe_builder *lw, fe_val view)
{
    const tj_type_info *vi = fe_info(lw, view.type);
    return tj_type_tile(lw->c, vi->dtype, vi->rank, vi->shape);
}

/* mask = M: a bool scalar or tile, broadcast to the view's shape. */
static int mask_arg(fe_builder *lw, const fe_expr *call, tj_type tile, tj_ref *out)
{
    const fe_expr *m = fe_call_kw(call, "mask");
    *out = TJ_NONE;
    if (!m)
        return 1;
    fe_val v = fe_build_expr(lw, m);
    if (v.kind == V_ERROR)
        return 0;
    if (v.kind != V_VALUE || fe_val_dtype(lw, v) != TJ_DT_BOOL) {
        fe_err(lw, m->loc, "%s: mask must be bool, got %s", call->name, fe_val_desc(lw, v));
        return 0;
    }
    const tj_type_info *ti = fe_info(lw, tile);
    v = fe_broadcast_to(lw, v, ti->rank, ti->shape, m->loc);
    *out = v.ref;
    return v.kind == V_VALUE;
}

/* load_acquire, store_release, load_relaxed and store_relaxed access single
 * 4- or 8-byte numbers (ld/st .acquire, .release, .relaxed; LLVM's atomic
 * accesses). */
static fe_val ordered_view(fe_builder *lw, const fe_expr *call, fe_val view, tj_op op)
{
    if (view.kind != V_VIEW || (op != TJ_OP_LOAD_ACQUIRE && op != TJ_OP_STORE_RELEASE && op != TJ_OP_LOAD_RELAXED &&
                                op != TJ_OP_STORE_RELAXED))
        return view;
    tj_dtype dt = fe_val_dtype(lw, view);
    if ((tj_dtype_is_int(dt) || tj_dtype_is_float(dt)) && (tj_dtype_size(dt) == 4 || tj_dtype_size(dt) == 8))
        return view;
    return fe_err(lw, call->loc, "%s takes a tensor of 4- or 8-byte numbers (i32, u32, i64, u64, f32, f64), not %s",
                  call->name, tj_dtype_name(dt));
}

fe_val fe_bi_load(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val view = ordered_view(lw, call, view_arg(lw, call), b->op);
    if (view.kind == V_ERROR)
        return view;
    tj_type tile = view_tile(lw, view);
    tj_ref args[3] = {view.ref, TJ_NONE, TJ_NONE};
    if (!mask_arg(lw, call, tile, &args[1]))
        return fe_error_val();
    const fe_expr *o = fe_call_kw(call, "other");
    if (o) {
        fe_val other = fe_build_expr(lw, o);
        lw->loc = call->loc;
        if (other.kind == V_VALUE && !tj_type_is_scalar(lw->c, other.type))
            other = fe_convert(lw, other, tile, o->loc);
        else
            other = fe_cast(lw, other, fe_info(lw, tile)->dtype, 0, o->loc);
        if (other.kind != V_VALUE)
            return fe_error_val();
        args[2] = other.ref;
    }
    lw->loc = call->loc;
    return fe_emit_val(lw, b->op, tile, args, 3);
}

/* store and the atomics: (view, value, mask = M). */
static fe_val write_op(fe_builder *lw, const fe_expr *call, fe_val view, tj_op op, int returns_old, uint32_t flags)
{
    fe_val value = fe_arg(lw, call, 1);
    if (view.kind == V_ERROR || value.kind == V_ERROR)
        return fe_error_val();
    tj_type tile = view_tile(lw, view);
    lw->loc = call->loc;
    value = fe_convert(lw, value, tile, call->items[1]->loc);
    tj_ref args[3] = {view.ref, value.ref, TJ_NONE};
    if (value.kind != V_VALUE || !mask_arg(lw, call, tile, &args[2]))
        return fe_error_val();
    lw->loc = call->loc;
    tj_ref r = fe_emit(lw, op, returns_old ? tile : TJ_TYPE_NONE, args, 3);
    lw->k->insts[r].flags = flags;
    return returns_old ? fe_value(r, tile) : (fe_val){.kind = V_VOID};
}

/* store(view, value, mask = M, distinct = true): the caller promises that
 * the places are distinct (TJ_STORE_DISTINCT). */
fe_val fe_bi_store(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    const fe_expr *d = fe_call_kw(call, "distinct");
    int64_t distinct = 0;
    if (d && !fe_require_const(lw, d, "distinct", &distinct))
        return fe_error_val();
    if (distinct != 0 && distinct != 1)
        return fe_err(lw, d->loc, "store: distinct must be true or false");
    return write_op(lw, call, ordered_view(lw, call, view_arg(lw, call), b->op), b->op, 0,
                    distinct ? TJ_STORE_DISTINCT : 0);
}

fe_val fe_bi_atomic(fe_builder *lw, const fe_expr *call, const fe_builtin *b)
{
    fe_val view = view_arg(lw, call);
    if (view.kind == V_VIEW && fe_val_dtype(lw, view) == TJ_DT_BOOL)
        view = fe_err(lw, call->loc, "%s is not defined on bool tensors", call->name);
    return write_op(lw, call, view, b->op, 1, 0);
}
