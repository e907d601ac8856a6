/* Moving values between layouts: free transfers (the registers already
 * hold the right elements), rematerialization of cheap values, and
 * conversions through shared memory; plus the shared-memory allocator and
 * barrier placement that every op using shared memory goes through.
 *
 * Shared memory is scoped per operation: an op calls lw_smem_begin, takes
 * buffers with lw_smem_alloc, and lw_smem_end; buffers of different ops
 * never live at the same time, so every op allocates from the same offset
 * (0, or above the regions a loop pins for its products: lw_mma_pin_loop)
 * and the kernel needs the largest total. A barrier separates one op's
 * reads from the next op's writes (emitted lazily, only when reads
 * happened). */
#include <string.h>

#include "lower/lower.h"

enum { SMEM_ALIGN = 16 };

struct lw_conv {
    lw_conv *next;
    tj_ref src;
    const tj_layout *lay;
    tj_block_id block;
    tj_ref *regs;
};

void lw_barrier(lw *w)
{
    lw_emit(w, TJ_OP_BARRIER, TJ_TYPE_NONE, NULL, 0);
    w->smem_dirty = 0;
    lw_hazard_clear(w);
}

void lw_smem_begin(lw *w)
{
    if (w->smem_dirty)
        lw_barrier(w);
    w->smem_top = w->smem_pinned;
}

uint32_t lw_smem_alloc(lw *w, uint64_t bytes)
{
    uint32_t off = w->smem_top;
    uint64_t top = (uint64_t)off + (bytes + SMEM_ALIGN - 1) / SMEM_ALIGN * SMEM_ALIGN;
    if (top > w->smem_limit) {
        w->smem_overflow = 1;
        lw_fail(w, "needs %llu bytes of shared memory, more than the %u a program can have",
                (unsigned long long)top, w->smem_limit);
        return 0;
    }
    w->smem_top = (uint32_t)top;
    return off;
}

void lw_smem_end(lw *w)
{
    if (w->smem_top > w->smem_bytes)
        w->smem_bytes = w->smem_top;
    w->smem_dirty = 1;
}

int lw_smem_size(tj_dtype dt) { return dt == TJ_DT_BOOL ? 1 : tj_dtype_size(dt); }

tj_ref lw_smem_addr(lw *w, uint32_t base, tj_ref index, int elem_size)
{
    const tj_inst *in = &w->dst->insts[index];
    int64_t c;
    if (in->op == TJ_OP_ADD && lw_is_const(w, in->args[1], &c)) /* x + c: a shared base, a constant apart */
        return lw_add_imm(w, lw_smem_addr(w, base, in->args[0], elem_size), c * elem_size);
    tj_ref i = lw_cast(w, index, TJ_DT_U32);
    return lw_add_imm(w, lw_mul_imm(w, i, elem_size), base);
}

/* bool lives in shared memory as a u8 0/1 */
void lw_smem_store(lw *w, tj_ref addr, tj_ref v)
{
    if (lw_dt(w, v) == TJ_DT_BOOL)
        v = lw_cast(w, v, TJ_DT_U8);
    tj_ref args[2] = {addr, v};
    lw_emit(w, TJ_OP_ST_SHARED, TJ_TYPE_NONE, args, 2);
}

tj_ref lw_smem_load(lw *w, tj_ref addr, tj_dtype dt)
{
    if (dt == TJ_DT_BOOL)
        return lw_op2(w, TJ_OP_NE, lw_smem_load(w, addr, TJ_DT_U8), lw_const_int(w, TJ_DT_U8, 0));
    return lw_emit(w, TJ_OP_LD_SHARED, lw_sty(w, dt), &addr, 1);
}

/* ---- transfers -------------------------------------------------------------- */

static uint64_t numel_of(const tj_layout *l)
{
    uint64_t n = 1;
    for (int d = 0; d < l->rank; d++)
        n *= (uint64_t)l->shape[d];
    return n;
}

struct lw_xfer {
    lw_xfer *next;
    const tj_layout *src, *dst;
    int64_t wts[TJ_MAX_RANK];
    const uint32_t *map; /* NULL: not free */
};

const uint32_t *lw_transfer_map(lw *w, const tj_layout *src, const tj_layout *dst, const int64_t *wts)
{
    size_t nw = sizeof *wts * (size_t)dst->rank;
    for (lw_xfer *x = w->xfer; x; x = x->next)
        if (tj_layout_equal(x->src, src) && tj_layout_equal(x->dst, dst) && !memcmp(x->wts, wts, nw))
            return x->map;
    lw_xfer *x = tj_alloc(w->c, sizeof *x);
    uint32_t *map = tj_alloc(w->c, sizeof *map * (dst->nregs ? dst->nregs : 1));
    *x = (lw_xfer){w->xfer, src, dst, {0}, tj_layout_transfer_map(w->c, src, dst, wts, map) ? map : NULL};
    memcpy(x->wts, wts, nw);
    w->xfer = x;
    return x->map;
}

tj_ref *lw_transfer(lw *w, const lw_val *v, const tj_layout *dst, const int64_t *wts)
{
    tj_ref *regs = lw_new_regs(w, dst->nregs);
    const uint32_t *map = lw_transfer_map(w, v->lay, dst, wts);
    if (map) {
        for (uint32_t r = 0; r < dst->nregs; r++)
            regs[r] = v->regs[map[r]];
        return regs;
    }
    const tj_layout *src = v->lay;
    tj_dtype dt = lw_dt(w, v->regs[0]);
    int size = lw_smem_size(dt);
    int64_t strides[TJ_MAX_RANK];
    tj_shape_strides(src->rank, src->shape, strides);
    lw_smem_begin(w);
    uint32_t base = lw_smem_alloc(w, numel_of(src) * (uint64_t)size);
    for (uint32_t s = 0; s < src->nregs; s++) /* replicas write the same value */
        lw_smem_store(w, lw_smem_addr(w, base, lw_flat(w, src, s, strides), size), v->regs[s]);
    lw_barrier(w);
    for (uint32_t r = 0; r < dst->nregs; r++)
        regs[r] = lw_smem_load(w, lw_smem_addr(w, base, lw_flat(w, dst, r, wts), size), dt);
    lw_smem_end(w);
    return regs;
}

void lw_refresh_replicas(lw *w, const tj_layout *l, tj_ref *regs, int only_axis)
{
    int32_t idx[TJ_MAX_RANK];
    if (only_axis >= 0 ? !tj_layout_axis_wraps(l, only_axis) : !tj_layout_has_replicas(l))
        return;
    tj_dtype dt = lw_dt(w, regs[0]);
    int size = lw_smem_size(dt);
    int64_t strides[TJ_MAX_RANK];
    tj_shape_strides(l->rank, l->shape, strides);
    uint64_t n = numel_of(l);
    lw_smem_begin(w);
    uint32_t base = lw_smem_alloc(w, (n + 1) * (uint64_t)size);
    tj_ref dummy = lw_const_int(w, TJ_DT_U32, base + n * (uint64_t)size);
    tj_ref *addr = lw_new_regs(w, l->nregs);
    for (uint32_t r = 0; r < l->nregs; r++) {
        tj_layout_reg_index(l, r, idx);
        tj_ref own = only_axis >= 0 ? lw_raw_ok(w, l, only_axis, idx[only_axis]) : lw_owner(w, l, r);
        addr[r] = lw_smem_addr(w, base, lw_flat(w, l, r, strides), size);
        /* replicas write to a scratch slot: only owners reach the element */
        lw_smem_store(w, own ? lw_select(w, own, addr[r], dummy) : addr[r], regs[r]);
    }
    lw_barrier(w);
    for (uint32_t r = 0; r < l->nregs; r++)
        regs[r] = lw_smem_load(w, addr[r], dt);
    lw_smem_end(w);
}

/* ---- rematerialization: values cheap to compute again in another layout ---- */

static int remat_ok(const lw *w, tj_ref r, int depth)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    if (ti->kind == TJ_TK_TILE && ti->rank == 0)
        return 1;
    if (depth > 6)
        return 0;
    if (in->op == TJ_OP_ARANGE)
        return 1;
    if (in->op == TJ_OP_BROADCAST || in->op == TJ_OP_RESHAPE)
        return remat_ok(w, in->args[0], depth + 1);
    if (!(tj_op_get(in->op)->flags & TJ_OPF_ELEM))
        return 0;
    for (uint32_t a = 0; a < in->nargs; a++)
        if (!remat_ok(w, in->args[a], depth + 1))
            return 0;
    return 1;
}

int lw_is_soft(const lw *w, tj_ref r)
{
    const tj_type_info *ti = lw_src_type(w, r);
    return ti->kind == TJ_TK_TILE && ti->rank > 0 && remat_ok(w, r, 0);
}

/* A layout for the operand (shape `s`, rank `rank`) of broadcast or
 * reshape r from which r reads in layout l without moving data: l refitted
 * (same rank), sliced at the axis r adds, or with the axis r drops. */
static const tj_layout *operand_layout(lw *w, const tj_layout *l, int rank, const int32_t *s)
{
    if (rank == l->rank)
        return tj_layout_refit(w->c, l, rank, s);
    for (int a = 0; rank + 1 == l->rank && a < l->rank; a++)
        if (l->shape[a] == 1)
            return tj_layout_slice(w->c, l, a);
    for (int a = 0; rank == l->rank + 1 && a < rank; a++)
        if (s[a] == 1)
            return tj_layout_insert_axis(w->c, l, a);
    return NULL;
}

/* Broadcast or reshape r read in layout l through its operand: the operand
 * is taken (lw_regs_in: recomputed when cheap, else converted) in the layout
 * from which r reads in l without moving data. An index mask broadcast into
 * a dot's result layout then costs no shared memory, and a bias row
 * broadcast into it moves its BN values, not the BM x BN of the broadcast
 * tile (a register each for every row a thread holds). NULL with *none set
 * where no such layout exists (r's operand a scalar, or no free read). */
static tj_ref *shape_via_operand(lw *w, tj_ref r, const tj_layout *l, int *none)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *si = lw_src_type(w, in->args[0]);
    int64_t wts[TJ_MAX_RANK];
    const tj_layout *from = si->rank ? operand_layout(w, l, si->rank, si->shape) : NULL;
    const uint32_t *map = from && !lw_shape_weights(w, r, wts) ? lw_transfer_map(w, lw_intern(w, from), l, wts) : NULL;
    *none = !map;
    tj_ref *src = map ? lw_regs_in(w, in->args[0], lw_intern(w, from)) : NULL;
    if (!src)
        return NULL;
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        regs[i] = src[map[i]];
    return regs;
}

static tj_ref *remat_shape(lw *w, tj_ref r, const tj_layout *l)
{
    int none;
    tj_ref *regs = shape_via_operand(w, r, l, &none);
    return none ? lw_shape_regs(w, r, l) : regs;
}

static tj_ref *remat(lw *w, tj_ref r, const tj_layout *l)
{
    const tj_inst *in = &w->src->insts[r];
    if (in->op == TJ_OP_ARANGE || (in->op == TJ_OP_BROADCAST && lw_src_type(w, in->args[0])->rank == 0))
        return lw_shape_regs(w, r, l);
    if (in->op == TJ_OP_BROADCAST || in->op == TJ_OP_RESHAPE)
        return remat_shape(w, r, l);
    return lw_elem_regs(w, r, l);
}

static int block_visible(const lw *w, tj_block_id b)
{
    for (tj_block_id x = w->cur; x;) {
        if (x == b)
            return 1;
        tj_ref owner = w->dst->blocks[x].owner;
        x = owner ? w->dst->insts[owner].block : 0;
    }
    return 0;
}

/* v's registers in l, recomputed or moved: a broadcast or reshape moves its
 * operand where it can (never more elements than v). */
static tj_ref *convert(lw *w, tj_ref v, const lw_val *val, const tj_layout *l)
{
    tj_op op = w->src->insts[v].op;
    if (lw_src_type(w, v)->rank > 0 && remat_ok(w, v, 0))
        return remat(w, v, l);
    int none = 1;
    tj_ref *regs = op == TJ_OP_BROADCAST || op == TJ_OP_RESHAPE ? shape_via_operand(w, v, l, &none) : NULL;
    if (!none)
        return regs;
    int64_t strides[TJ_MAX_RANK];
    tj_shape_strides(l->rank, l->shape, strides);
    return lw_transfer(w, val, l, strides);
}

tj_ref *lw_regs_in(lw *w, tj_ref v, const tj_layout *l)
{
    lw_val *val = lw_val_of(w, v);
    if (!val->regs)
        return lw_fail(w, "internal error: %%%u has no registers", v);
    if (tj_layout_equal(val->lay, l) || l->rank == 0) /* every thread holds a scalar */
        return val->regs;
    for (lw_conv *cv = w->conv; cv; cv = cv->next)
        if (cv->src == v && tj_layout_equal(cv->lay, l) && block_visible(w, cv->block))
            return cv->regs;
    tj_ref *regs = convert(w, v, val, l);
    if (!regs)
        return NULL;
    lw_conv *cv = tj_alloc(w->c, sizeof *cv);
    *cv = (lw_conv){w->conv, v, l, w->cur, regs};
    w->conv = cv;
    return regs;
}
