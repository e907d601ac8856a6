/* broadcast and permute: both are a strided read of the operand in the
 * result's row-major order; gather: a read at each index. (reshape only
 * renames storage: exec.c.) */
#include "interp/interp.h"

/* dst[i] = src[sum over axes of index * sstride] for i in row-major order
 * over `shape`. */
static void strided_copy(tj_slot *dst, const tj_slot *src, int rank, const int32_t *shape,
                         const int64_t *sstride)
{
    if (rank == 0) {
        dst[0] = src[0];
        return;
    }
    int32_t idx[TJ_MAX_RANK] = {0};
    int last = rank - 1;
    int64_t len = shape[last], step = sstride[last], off = 0;
    uint64_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= (uint64_t)shape[a];
    for (uint64_t i = 0; i < n; i += (uint64_t)len) {
        for (int64_t j = 0; j < len; j++)
            dst[i + (uint64_t)j] = src[off + j * step];
        for (int a = last - 1; a >= 0; a--) { /* the odometer over the outer axes */
            off += sstride[a];
            if (++idx[a] < shape[a])
                break;
            off -= sstride[a] * shape[a];
            idx[a] = 0;
        }
    }
}

/* Row-major strides of a shape. */
static void dense_strides(const tj_type_info *ti, int64_t *strides)
{
    int64_t s = 1;
    for (int a = ti->rank - 1; a >= 0; a--) {
        strides[a] = s;
        s *= ti->shape[a];
    }
}

/* NumPy rules: shapes aligned on the right; size-1 or missing axes repeat. */
int tj_exec_broadcast(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *x = tj_opnd(st, r, 0);
    const tj_type_info *rt = rv->ti, *xt = x->ti;
    int64_t xs[TJ_MAX_RANK], ss[TJ_MAX_RANK];
    int lead = rt->rank - xt->rank;
    if (lead < 0 || x->dt != rv->dt)
        return tj_interp_bad_ir(st, r, "operand does not broadcast to the result");
    dense_strides(xt, xs);
    for (int a = 0; a < rt->rank; a++) {
        int b = a - lead;
        if (b >= 0 && xt->shape[b] != 1 && xt->shape[b] != rt->shape[a])
            return tj_interp_bad_ir(st, r, "operand does not broadcast to the result");
        ss[a] = b < 0 || xt->shape[b] == 1 ? 0 : xs[b];
    }
    strided_copy(rv->data, x->data, rt->rank, rt->shape, ss);
    return 0;
}

/* Result axis i is operand axis perm[i]. */
int tj_exec_permute(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r), *x = tj_opnd(st, r, 0);
    const tj_type_info *rt = rv->ti, *xt = x->ti;
    int64_t xs[TJ_MAX_RANK], ss[TJ_MAX_RANK];
    unsigned seen = 0;
    if (in->nlist != (uint32_t)rt->rank || xt->rank != rt->rank)
        return tj_interp_bad_ir(st, r, "permutation does not match the rank");
    dense_strides(xt, xs);
    for (int a = 0; a < rt->rank; a++) {
        int32_t p = in->list[a];
        if (p < 0 || p >= xt->rank || (seen & (1u << p)) || xt->shape[p] != rt->shape[a])
            return tj_interp_bad_ir(st, r, "not a permutation of the operand's axes");
        seen |= 1u << p;
        ss[a] = xs[p];
    }
    strided_copy(rv->data, x->data, rt->rank, rt->shape, ss);
    return 0;
}

/* y[i] = x[idx[i]]; an index outside [0, n) is the kernel's error, reported
 * at the op (the GPUs and the native cpu clamp it instead: docs/ir.md). */
int tj_exec_gather(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *x = tj_opnd(st, r, 0), *idx = tj_opnd(st, r, 1);
    if (idx->n != rv->n || x->dt != rv->dt)
        return tj_interp_bad_ir(st, r, "operands do not fit the result");
    for (uint32_t i = 0; i < rv->n; i++) {
        int64_t j = tj_slot_to_i64(idx->dt, idx->data[i]);
        if (j < 0 || j >= (int64_t)x->n) {
            tj_error_at(st->ctx, tj_in(st, r)->loc, "gather: index %lld (element %u of the indices) is outside the "
                        "tile of %u elements in program (%lld, %lld, %lld)", (long long)j, i, x->n,
                        (long long)st->pid[0], (long long)st->pid[1], (long long)st->pid[2]);
            return -1;
        }
        rv->data[i] = x->data[j];
    }
    return 0;
}
