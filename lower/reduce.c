/* Reductions (sum, prod, max, min) and argmax/argmin: per thread over the
 * registers along the axis, then shfl_xor across the lanes that move along
 * it, then across warps through shared memory, unless the warps along it
 * hold replicas only (a tile no larger than a warp's run): then each warp
 * reduces its own copy, the owners within it counting, and every warp has
 * the result without a barrier. Replicas and padding count as the
 * identity. argmax/argmin carry (value, index) pairs and keep the
 * first index of the extreme, NaN counting as the maximum, whatever the
 * order the pairs meet in. f16/bf16 accumulate in f32, narrow integers in
 * 32 bits (exact: the result is cast back). */
#include <math.h>

#include "lower/lower.h"

tj_dtype lw_acc_dtype(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16:
    case TJ_DT_BF16: return TJ_DT_F32;
    case TJ_DT_BOOL:
    case TJ_DT_I8:
    case TJ_DT_I16: return TJ_DT_I32;
    case TJ_DT_U8:
    case TJ_DT_U16: return TJ_DT_U32;
    default: return dt;
    }
}

tj_ref lw_combine(lw *w, tj_op op, tj_ref a, tj_ref b)
{
    switch (op) {
    case TJ_OP_REDUCE_SUM:
    case TJ_OP_CUMSUM: return lw_op2(w, TJ_OP_ADD, a, b);
    case TJ_OP_REDUCE_PROD:
    case TJ_OP_CUMPROD: return lw_op2(w, TJ_OP_MUL, a, b);
    case TJ_OP_REDUCE_MAX: return lw_op2(w, TJ_OP_MAX, a, b);
    default: return lw_op2(w, TJ_OP_MIN, a, b);
    }
}

static int is_arg(tj_op op) { return op == TJ_OP_ARGMAX || op == TJ_OP_ARGMIN; }

static tj_ref identity(lw *w, tj_op op, tj_dtype dt)
{
    int max = op == TJ_OP_REDUCE_MAX || op == TJ_OP_ARGMAX;
    int bits = tj_dtype_bits(dt);
    if (op == TJ_OP_REDUCE_SUM || op == TJ_OP_REDUCE_PROD)
        return lw_const_int(w, dt, op == TJ_OP_REDUCE_PROD);
    if (tj_dtype_is_float(dt))
        return lw_const_float(w, dt, max ? -INFINITY : INFINITY);
    if (tj_dtype_is_signed(dt))
        return lw_const_int(w, dt, max ? (int64_t)((uint64_t)1 << (bits - 1)) : (int64_t)(((uint64_t)1 << (bits - 1)) - 1));
    return lw_const_int(w, dt, max ? 0 : -1); /* unsigned: wraps to all ones */
}

/* A partial result: a value, and for argmax/argmin its index. */
typedef struct racc {
    tj_ref v, i;
} racc;

/* Whether b beats a (argmax/argmin): see the file comment. */
static tj_ref beats(lw *w, tj_op op, racc a, racc b)
{
    tj_ref tie = lw_and(w, lw_op2(w, TJ_OP_EQ, b.v, a.v), lw_op2(w, TJ_OP_LT, b.i, a.i));
    tj_ref better = lw_or(w, lw_op2(w, op == TJ_OP_ARGMAX ? TJ_OP_GT : TJ_OP_LT, b.v, a.v), tie);
    if (!tj_dtype_is_float(lw_dt(w, a.v)))
        return better;
    tj_ref na = lw_op2(w, TJ_OP_NE, a.v, a.v), nb = lw_op2(w, TJ_OP_NE, b.v, b.v);
    tj_ref first = lw_op2(w, TJ_OP_LT, b.i, a.i);
    tj_ref nan_wins = op == TJ_OP_ARGMAX ? lw_and(w, nb, lw_or(w, lw_not(w, na), first)) /* NaN is the max */
                                          : lw_and(w, na, lw_or(w, lw_not(w, nb), first)); /* numbers beat NaN */
    return lw_or(w, nan_wins, better);
}

static racc combine(lw *w, tj_op op, racc a, racc b)
{
    if (!a.v)
        return b;
    if (!is_arg(op))
        return (racc){lw_combine(w, op, a.v, b.v), TJ_NONE};
    tj_ref c = beats(w, op, a, b);
    return (racc){lw_select(w, c, b.v, a.v), lw_select(w, c, b.i, a.i)};
}

/* The element of register `reg` as a partial result; `ok` (TJ_NONE:
 * always) says whether it counts. */
static racc element(lw *w, tj_op op, tj_ref x, tj_ref index, tj_ref ok)
{
    tj_dtype acc = lw_acc_dtype(lw_dt(w, x));
    racc e = {lw_cast(w, x, acc), index};
    if (ok) {
        e.v = lw_select(w, ok, e.v, identity(w, op, acc));
        if (is_arg(op))
            e.i = lw_select(w, ok, e.i, lw_const_int(w, TJ_DT_I32, INT32_MAX));
    }
    return e;
}

static racc lanes_combine(lw *w, tj_op op, racc a, uint32_t lane_bits)
{
    for (uint32_t b = 1; b < TJ_WARP_SIZE; b <<= 1)
        if (lane_bits & b) {
            racc o = {lw_shfl_xor(w, a.v, b), is_arg(op) ? lw_shfl_xor(w, a.i, b) : TJ_NONE};
            a = combine(w, op, a, o);
        }
    return a;
}

/* Combines the partial results of the warps along `warp_bits` through
 * shared memory: out[o] belongs to output element flat[o] (< numel). */
static void warps_combine(lw *w, tj_op op, racc *out, const tj_ref *flat, uint32_t nout, uint64_t numel,
                          uint32_t warp_bits)
{
    int nw = (int)(warp_bits >> lw_low_bit(warp_bits)) + 1; /* the bits are contiguous */
    tj_dtype dt = lw_dt(w, out[0].v);
    int size = lw_smem_size(dt);
    tj_ref wi = lw_id_bits(w, lw_warp(w), warp_bits);
    lw_smem_begin(w);
    uint32_t vbuf = lw_smem_alloc(w, numel * (uint64_t)nw * (uint64_t)size);
    uint32_t ibuf = is_arg(op) ? lw_smem_alloc(w, numel * (uint64_t)nw * 4) : 0;
    tj_ref *row = lw_new_regs(w, nout);
    for (uint32_t o = 0; o < nout; o++) { /* replicas write the same value */
        row[o] = lw_mul_imm(w, flat[o], nw);
        tj_ref slot = lw_op2(w, TJ_OP_ADD, row[o], wi);
        lw_smem_store(w, lw_smem_addr(w, vbuf, slot, size), out[o].v);
        if (is_arg(op))
            lw_smem_store(w, lw_smem_addr(w, ibuf, slot, 4), out[o].i);
    }
    lw_barrier(w);
    for (uint32_t o = 0; o < nout; o++) {
        racc acc = {TJ_NONE, TJ_NONE};
        for (int k = 0; k < nw; k++) {
            tj_ref slot = lw_add_imm(w, row[o], k);
            racc e = {lw_smem_load(w, lw_smem_addr(w, vbuf, slot, size), dt),
                      is_arg(op) ? lw_smem_load(w, lw_smem_addr(w, ibuf, slot, 4), TJ_DT_I32) : TJ_NONE};
            acc = combine(w, op, acc, e);
        }
        out[o] = acc;
    }
    lw_smem_end(w);
}

static tj_ref result_of(lw *w, tj_op op, racc a, tj_dtype dt) { return is_arg(op) ? a.i : lw_cast(w, a.v, dt); }

static uint64_t numel_of(const tj_layout *l)
{
    uint64_t n = 1;
    for (int d = 0; d < l->rank; d++)
        n *= (uint64_t)l->shape[d];
    return n;
}

static int reduce_axis(lw *w, tj_ref r, const lw_val *x, int axis)
{
    tj_op op = w->src->insts[r].op;
    const tj_layout *p = x->lay;
    int fa = p->frame_axis[axis];
    const tj_layout *out = lw_intern(w, tj_layout_slice(w->c, p, axis));
    racc *acc = tj_alloc(w->c, sizeof *acc * out->nregs);
    int32_t idx[TJ_MAX_RANK];
    int in_warp = tj_layout_warps_replicate(p, fa);
    for (uint32_t o = 0; o < out->nregs; o++) {
        tj_layout_reg_index(out, o, idx);
        for (int32_t i = 0; i < p->fregs[fa]; i++) {
            int ok = in_warp ? lw_lane_raw_ok_static(p, fa, i) : lw_raw_ok_static(p, fa, i);
            if (!ok)
                continue; /* padding in every thread */
            idx[fa] = i;
            tj_ref owns = ok > 0 ? TJ_NONE : in_warp ? lw_lane_raw_ok(w, p, fa, i) : lw_raw_ok(w, p, fa, i);
            racc e = element(w, op, x->regs[tj_layout_reg_of(p, idx)], is_arg(op) ? lw_coord(w, p, fa, i) : TJ_NONE,
                             owns);
            acc[o] = combine(w, op, acc[o], e);
        }
        acc[o] = lanes_combine(w, op, acc[o], tj_layout_lane_bits(p, fa));
    }
    uint32_t warp_bits = tj_layout_warp_bits(p, fa);
    if (warp_bits && !in_warp) {
        int64_t strides[TJ_MAX_RANK];
        tj_shape_strides(out->rank, out->shape, strides);
        tj_ref *flat = lw_new_regs(w, out->nregs);
        for (uint32_t o = 0; o < out->nregs; o++)
            flat[o] = lw_flat(w, out, o, strides);
        warps_combine(w, op, acc, flat, out->nregs, numel_of(out), warp_bits);
    }
    tj_ref *regs = lw_new_regs(w, out->nregs);
    for (uint32_t o = 0; o < out->nregs; o++)
        regs[o] = result_of(w, op, acc[o], lw_src_type(w, r)->dtype);
    lw_set_regs(w, r, out, regs);
    return 0;
}

static int reduce_all(lw *w, tj_ref r, const lw_val *x)
{
    tj_op op = w->src->insts[r].op;
    const tj_layout *p = x->lay;
    int64_t strides[TJ_MAX_RANK], c;
    tj_shape_strides(p->rank, p->shape, strides);
    racc acc = {TJ_NONE, TJ_NONE};
    int in_warp = tj_layout_warps_replicate_all(p);
    for (uint32_t i = 0; i < p->nregs; i++) {
        tj_ref ok = in_warp ? lw_lane_owner(w, p, i) : lw_owner(w, p, i);
        if (ok && lw_is_const(w, ok, &c) && !c)
            continue;
        acc = combine(w, op, acc, element(w, op, x->regs[i], is_arg(op) ? lw_flat(w, p, i, strides) : TJ_NONE, ok));
    }
    acc = lanes_combine(w, op, acc, TJ_WARP_SIZE - 1);
    if (w->nwarps > 1 && !in_warp) {
        tj_ref zero = lw_const_int(w, TJ_DT_I32, 0);
        warps_combine(w, op, &acc, &zero, 1, 1, (uint32_t)w->nwarps - 1);
    }
    tj_ref *regs = lw_new_regs(w, 1);
    regs[0] = result_of(w, op, acc, lw_src_type(w, r)->dtype);
    lw_set_regs(w, r, lw_scalar_layout(w), regs);
    return 0;
}

int lw_lower_reduce(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_val *x = lw_val_of(w, in->args[0]);
    const tj_type_info *xi = lw_src_type(w, in->args[0]);
    if (!x->regs || !x->lay)
        return lw_error(w, "internal error: reduction of a value without registers");
    if (in->imm < -1 || in->imm >= xi->rank)
        return lw_error(w, "reduction axis %lld out of range", (long long)in->imm);
    return in->imm < 0 || xi->rank == 0 ? reduce_all(w, r, x) : reduce_axis(w, r, x, (int)in->imm);
}
