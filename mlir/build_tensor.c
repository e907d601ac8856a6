/* tensor ops as array ops: empty (zeros; its contents are undefined in
 * MLIR), extract_slice (a strided slice, reshaped where rank-reducing),
 * insert_slice (the destination cut around the slice and concatenated
 * back, axis by axis), expand_shape and collapse_shape (row-major
 * reshapes), cast (between equal static shapes), concat. Offsets, sizes
 * and strides must be static. */
#include <string.h>

#include "mlir/mlir_internal.h"

static const tj_mvalue *result_type(mbuild *b, uint32_t op)
{
    return tj_mlir_value(b->m, b->m->prog.ops[op].results);
}

static int set_result(mbuild *b, uint32_t op, tj_array a)
{
    if (tj_mlir_check(b, op, a) == TJ_ARRAY_NONE)
        return 1;
    tj_mlir_set(b, b->m->prog.ops[op].results, a);
    return 0;
}

typedef struct slice_spec {
    int rank;
    int64_t offsets[TJ_MAX_RANK], sizes[TJ_MAX_RANK], strides[TJ_MAX_RANK];
} slice_spec;

/* static_offsets, static_sizes, static_strides, for a source of `rank`
 * dims, with no dynamic entries (the op's operands would be longer). */
static int read_slice(mbuild *b, uint32_t op, uint32_t nfixed, int rank, slice_spec *out)
{
    static const char *const names[] = {"static_offsets", "static_sizes", "static_strides"};
    int64_t *dst[] = {out->offsets, out->sizes, out->strides};
    if (b->m->prog.ops[op].noperands != nfixed)
        return tj_mlir_fail(b, op, "dynamic offsets, sizes or strides are not imported");
    out->rank = rank;
    for (int k = 0; k < 3; k++) {
        const tj_mattr *a = tj_mlir_attr(b->m, op, names[k]);
        if (!a || a->kind != TJ_MA_INTS || (int)a->count != rank)
            return tj_mlir_fail(b, op, "expected %d entries in '%s'", rank, names[k]);
        for (int d = 0; d < rank; d++)
            if ((dst[k][d] = b->m->prog.ints[a->first + d]) == INT64_MIN)
                return tj_mlir_fail(b, op, "a dynamic entry in '%s' is not imported", names[k]);
    }
    return 0;
}

static int build_extract_slice(mbuild *b, uint32_t op)
{
    uint32_t src_id = tj_mlir_operand(b->m, op, 0);
    const tj_mvalue *src = tj_mlir_value(b->m, src_id), *res = result_type(b, op);
    slice_spec s;
    tj_array x = tj_mlir_get(b, op, src_id);
    if (!x || read_slice(b, op, 1, src->rank, &s))
        return 1;
    int64_t stop[TJ_MAX_RANK];
    for (int d = 0; d < s.rank; d++) {
        if (s.strides[d] <= 0)
            return tj_mlir_fail(b, op, "stride %lld along dimension %d", (long long)s.strides[d], d);
        stop[d] = s.sizes[d] ? s.offsets[d] + (s.sizes[d] - 1) * s.strides[d] + 1 : s.offsets[d];
    }
    tj_array r = tj_array_slice(b->g, x, s.offsets, stop, s.strides);
    if (r && res->rank != s.rank) /* rank-reducing: the unit dims dropped */
        r = tj_array_reshape(b->g, r, res->rank, res->shape);
    return set_result(b, op, r);
}

/* dest with src put at s.offsets, axes from `axis` on (the earlier ones
 * already cut to the slice). */
static tj_array insert_from(mbuild *b, tj_array dest, tj_array src, const slice_spec *s, int axis)
{
    if (axis == s->rank)
        return src;
    tj_graph *g = b->g;
    tj_array_info info;
    if (tj_array_get_info(g, dest, &info))
        return TJ_ARRAY_NONE;
    int64_t start[TJ_MAX_RANK] = {0}, stop[TJ_MAX_RANK], step[TJ_MAX_RANK];
    for (int d = 0; d < s->rank; d++) {
        stop[d] = info.shape[d];
        step[d] = 1;
    }
    int64_t lo = s->offsets[axis], hi = lo + s->sizes[axis];
    tj_array parts[3];
    uint32_t n = 0;
    if (lo > 0) {
        stop[axis] = lo;
        parts[n++] = tj_array_slice(g, dest, start, stop, step);
    }
    start[axis] = lo;
    stop[axis] = hi;
    parts[n++] = insert_from(b, tj_array_slice(g, dest, start, stop, step), src, s, axis + 1);
    if (hi < info.shape[axis]) {
        start[axis] = hi;
        stop[axis] = info.shape[axis];
        parts[n++] = tj_array_slice(g, dest, start, stop, step);
    }
    return n == 1 ? parts[0] : tj_array_concatenate(g, parts, n, axis);
}

static int build_insert_slice(mbuild *b, uint32_t op)
{
    uint32_t src_id = tj_mlir_operand(b->m, op, 0), dest_id = tj_mlir_operand(b->m, op, 1);
    const tj_mvalue *dest_t = tj_mlir_value(b->m, dest_id);
    slice_spec s;
    tj_array src = tj_mlir_get(b, op, src_id), dest = tj_mlir_get(b, op, dest_id);
    if (!src || !dest || read_slice(b, op, 2, dest_t->rank, &s))
        return 1;
    for (int d = 0; d < s.rank; d++)
        if (s.strides[d] != 1)
            return tj_mlir_fail(b, op, "stride %lld along dimension %d (only unit strides are imported)",
                                (long long)s.strides[d], d);
    src = tj_array_reshape(b->g, src, s.rank, s.sizes); /* a rank-reduced source gets its unit dims back */
    return set_result(b, op, src ? insert_from(b, dest, src, &s, 0) : TJ_ARRAY_NONE);
}

int tj_mlir_build_tensor(mbuild *b, uint32_t op, const mop_info *info)
{
    const tj_mvalue *res = result_type(b, op);
    switch (info->kind) {
    case MK_EMPTY:
        if (b->m->prog.ops[op].noperands)
            return tj_mlir_fail(b, op, "dynamic sizes are not imported");
        return set_result(b, op, tj_array_full(b->g, res->dtype, res->rank, res->shape, 0));
    case MK_EXTRACT_SLICE: return build_extract_slice(b, op);
    case MK_INSERT_SLICE: return build_insert_slice(b, op);
    case MK_RESHAPE: {
        tj_array x = tj_mlir_get(b, op, tj_mlir_operand(b->m, op, 0));
        if (!x)
            return 1;
        if (b->m->prog.ops[op].noperands != 1)
            return tj_mlir_fail(b, op, "a dynamic output shape is not imported");
        return set_result(b, op, tj_array_reshape(b->g, x, res->rank, res->shape));
    }
    case MK_TENSOR_CAST: {
        uint32_t id = tj_mlir_operand(b->m, op, 0);
        const tj_mvalue *src = tj_mlir_value(b->m, id);
        if (src->rank != res->rank || memcmp(src->shape, res->shape, sizeof src->shape[0] * (size_t)res->rank))
            return tj_mlir_fail(b, op, "a cast between different shapes");
        tj_array x = tj_mlir_get(b, op, id);
        return !x || set_result(b, op, x);
    }
    case MK_CONCAT: {
        const tj_mattr *dim = tj_mlir_attr(b->m, op, "dim");
        uint32_t n = b->m->prog.ops[op].noperands;
        tj_array parts[16];
        if (!dim || dim->kind != TJ_MA_INT || n > 16)
            return tj_mlir_fail(b, op, "expected a 'dim' and at most 16 operands");
        for (uint32_t i = 0; i < n; i++)
            if (!(parts[i] = tj_mlir_get(b, op, tj_mlir_operand(b->m, op, i))))
                return 1;
        return set_result(b, op, tj_array_concatenate(b->g, parts, n, (int)dim->i));
    }
    default: return tj_mlir_fail(b, op, "not a tensor op");
    }
}
