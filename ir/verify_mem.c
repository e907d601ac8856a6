/* The verifier's rules for memory: view, load, store and the atomics. */
#include <inttypes.h>

#include "ir/verify_internal.h"

/* The shape a view's axes give, built up axis by axis. */
typedef struct view_shape {
    int32_t shape[TJ_MAX_RANK];
    int rank;
    tj_type gather; /* the first gather operand's type */
} view_shape;

static int push_extent(V *v, tj_ref r, view_shape *s, int32_t extent)
{
    if (s->rank == TJ_MAX_RANK) {
        tj_verify_fail(v, r, "the view has more than %d axes", TJ_MAX_RANK);
        return 0;
    }
    s->shape[s->rank++] = extent;
    return 1;
}

/* Axis `axis` of the view, taken by operand axis + 1. */
static int view_axis(V *v, tj_ref r, uint32_t axis, view_shape *s)
{
    int32_t e = inst(v, r)->list[axis];
    tj_type t = arg_type(v, r, axis + 1);
    if (e != TJ_VIEW_GATHER) {
        if (e != TJ_VIEW_INDEX && e <= 0) {
            tj_verify_fail(v, r, "axis %u: extent %" PRId32 " is not positive", axis, e);
            return 0;
        }
        if (!is_int_scalar(v, t)) {
            tj_verify_fail(v, r, "axis %u: the %s is %s, not an integer scalar", axis,
                           e == TJ_VIEW_INDEX ? "index" : "start", TS(t));
            return 0;
        }
        return e == TJ_VIEW_INDEX || push_extent(v, r, s, e);
    }
    const tj_type_info *g = info(v, t);
    if (g->kind != TJ_TK_TILE || g->rank == 0 || !tj_dtype_is_int(g->dtype)) {
        tj_verify_fail(v, r, "axis %u: gather indices are %s, not an integer tile", axis, TS(t));
        return 0;
    }
    if (s->gather) {
        if (same_shape(g, info(v, s->gather)))
            return 1;
        tj_verify_fail(v, r, "gather indices differ in shape: %s vs %s", TS(s->gather), TS(t));
        return 0;
    }
    s->gather = t;
    for (int d = 0; d < g->rank; d++)
        if (!push_extent(v, r, s, g->shape[d]))
            return 0;
    return 1;
}

static void check_view(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    const tj_type_info *t = info(v, arg_type(v, r, 0));
    if (t->kind != TJ_TK_TENSOR) {
        tj_verify_fail(v, r, "operand 1 is %s, not a tensor", TS(arg_type(v, r, 0)));
        return;
    }
    if (in->nargs != 1 + (uint32_t)t->rank || in->nlist != (uint32_t)t->rank) {
        tj_verify_fail(v, r, "a view of a rank-%d tensor takes %d axis operands and axes, not %u and %u",
                       t->rank, t->rank, in->nargs - 1, in->nlist);
        return;
    }
    view_shape s = {.rank = 0};
    for (uint32_t a = 0; a < in->nlist; a++)
        if (!view_axis(v, r, a, &s))
            return;
    tj_type expected = tj_type_view(v->c, t->dtype, s.rank, s.shape);
    if (expected == TJ_TYPE_NONE)
        tj_verify_fail(v, r, "the view is too large");
    else
        tj_verify_result(v, r, expected);
}

/* The tile type a view reads and writes. */
static tj_type view_tile(V *v, tj_type view)
{
    const tj_type_info *i = info(v, view);
    return tj_type_tile(v->c, i->dtype, i->rank, i->shape);
}

static int check_mask(V *v, tj_ref r, uint32_t a, tj_type tile)
{
    tj_type mask = arg_type(v, r, a), want = tj_type_with_dtype(v->c, tile, TJ_DT_BOOL);
    if (!mask || mask == want)
        return 1;
    tj_verify_fail(v, r, "mask is %s, expected %s", TS(mask), TS(want));
    return 0;
}

static void check_load(V *v, tj_ref r, tj_type tile)
{
    tj_type other = arg_type(v, r, 2);
    if (!check_mask(v, r, 1, tile))
        return;
    if (other && other != tile && other != tj_type_scalar(v->c, dtype_of(v, tile)))
        tj_verify_fail(v, r, "other is %s, expected %s or %s", TS(other), TS(tile),
                       tj_dtype_name(dtype_of(v, tile)));
    else
        tj_verify_result(v, r, tile);
}

/* store and atomics: view, value, mask */
static void check_update(V *v, tj_ref r, tj_type tile)
{
    tj_type value = arg_type(v, r, 1);
    tj_op op = inst(v, r)->op;
    if (value != tile) {
        tj_verify_fail(v, r, "value is %s, expected %s", TS(value), TS(tile));
        return;
    }
    if (!check_mask(v, r, 2, tile))
        return;
    tj_dtype dt = dtype_of(v, tile);
    if (inst(v, r)->flags & ~(uint32_t)(op == TJ_OP_STORE ? TJ_STORE_DISTINCT : 0))
        tj_verify_fail(v, r, "unknown flags 0x%x", inst(v, r)->flags);
    else if (op == TJ_OP_STORE || op == TJ_OP_STORE_RELEASE || op == TJ_OP_STORE_RELAXED)
        tj_verify_result(v, r, TJ_TYPE_NONE);
    else if (!tj_dtype_is_int(dt) && !tj_dtype_is_float(dt))
        tj_verify_fail(v, r, "atomics take numbers, not %s", tj_dtype_name(dt));
    else
        tj_verify_result(v, r, tile);
}

/* What ld.acquire / st.release (and .relaxed) and LLVM's ordered accesses take. */
static int ordered_dtype(tj_dtype dt)
{
    return (tj_dtype_is_int(dt) || tj_dtype_is_float(dt)) && (tj_dtype_size(dt) == 4 || tj_dtype_size(dt) == 8);
}

void tj_verify_memory_op(V *v, tj_ref r)
{
    if (inst(v, r)->op == TJ_OP_VIEW) {
        check_view(v, r);
        return;
    }
    tj_type view = arg_type(v, r, 0);
    if (!is_kind(v, view, TJ_TK_VIEW)) {
        tj_verify_fail(v, r, "operand 1 is %s, not a view", TS(view));
        return;
    }
    tj_op op = inst(v, r)->op;
    int ordered = op == TJ_OP_LOAD_ACQUIRE || op == TJ_OP_STORE_RELEASE || op == TJ_OP_LOAD_RELAXED ||
                  op == TJ_OP_STORE_RELAXED;
    if (ordered && !ordered_dtype(dtype_of(v, view_tile(v, view))))
        tj_verify_fail(v, r, "ordered accesses take 4- or 8-byte numbers, not %s",
                       tj_dtype_name(dtype_of(v, view_tile(v, view))));
    else if (op == TJ_OP_LOAD || op == TJ_OP_LOAD_ACQUIRE || op == TJ_OP_LOAD_RELAXED)
        check_load(v, r, view_tile(v, view));
    else
        check_update(v, r, view_tile(v, view));
}
