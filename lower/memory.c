/* Memory ops: load, store and atomics through views (slices, indices,
 * gathers), per register, with the address base + sum(coord * stride) *
 * size and a predicate from bounds, mask and ownership (replicas neither
 * store nor update). Runs of contiguous registers become one vector access
 * when facts and the specialize pass's VIEW flags prove it safe. Scatters
 * with repeated indices store only the last element in row-major order.
 * load_acquire and store_release access one element per instruction, by
 * its owner only (replicas take the owner's value, so a flag read this way
 * is the same in every thread), with a barrier after the acquires (the
 * broadcast's own, when there are replicas) and before the releases: with
 * bar.sync's cumulativity, every thread's accesses are ordered with them,
 * not only the accessing thread's. load_relaxed and store_relaxed are
 * accessed the same way, one element by its owner, without those barriers
 * (they order nothing); a relaxed load's replicas still take the owner's
 * value. */
#include "passes/facts.h"
#include "lower/lower.h"
#include "passes/pass_util.h"

enum { AX_INDEX, AX_EXTENT, AX_GATHER };

typedef struct mem_axis {
    int kind;
    tj_ref src;        /* the view's operand (Tile IR) */
    tj_ref start;      /* INDEX and EXTENT: index or slice start, in the coordinate type */
    int vaxis;         /* EXTENT: the tile axis */
    int wide;          /* coordinates computed in i64 (64-bit and u32 operands) */
    int checked;       /* needs a bounds check */
    tj_ref *gather;    /* GATHER: the index of every register */
    tj_ref dim, stride;
    int wraps;         /* EXTENT: tile coordinates need the modulo */
    tj_ref tstart;     /* EXTENT: start + this thread's part of the coordinate */
    tj_ref *ext_off, *ext_ok; /* EXTENT: per register index of the tile axis */
} mem_axis;

typedef struct mem_access {
    const tj_inst *view;
    uint32_t param;
    int trank;
    tj_dtype dt, memdt; /* element dtype; bool lives in memory as u8 */
    int size;
    const tj_layout *l;
    mem_axis ax[TJ_MAX_RANK];
    int gpos, grank;    /* the gather axes of the tile */
    tj_ref ptr, uoff, upred;
    tj_ref taddr; /* this thread's address of its first element (u64) */
} mem_access;

static int is_wide(tj_dtype dt) { return dt == TJ_DT_I64 || dt == TJ_DT_U64 || dt == TJ_DT_U32; }

static tj_ref to_coord(lw *w, tj_ref v, int wide) { return lw_cast(w, v, wide ? TJ_DT_I64 : TJ_DT_I32); }

/* 0 <= coord < dim, as one unsigned comparison (dim is cast already) */
static tj_ref in_range(lw *w, tj_ref coord, tj_ref dim, int wide)
{
    return lw_op2(w, TJ_OP_LT, lw_cast(w, coord, wide ? TJ_DT_U64 : TJ_DT_U32), dim);
}

static tj_ref times_stride(lw *w, tj_ref v, tj_ref stride)
{
    return lw_op2(w, TJ_OP_MUL, lw_cast(w, v, TJ_DT_I64), stride);
}

/* The gather indices read in the access layout. */
static tj_ref *gather_regs(lw *w, mem_access *m, tj_ref src, int wide)
{
    const tj_type_info *gi = lw_src_type(w, src);
    int64_t gs[TJ_MAX_RANK], wts[TJ_MAX_RANK] = {0};
    tj_shape_strides(gi->rank, gi->shape, gs);
    for (int d = 0; d < gi->rank; d++)
        wts[m->gpos + d] = gs[d];
    tj_ref *regs = lw_transfer(w, lw_val_of(w, src), m->l, wts);
    for (uint32_t r = 0; regs && r < m->l->nregs; r++)
        regs[r] = to_coord(w, regs[r], wide);
    return regs;
}

static int setup_axis(lw *w, mem_access *m, int a, int *vaxis)
{
    mem_axis *x = &m->ax[a];
    int32_t kind = m->view->list[a];
    x->src = m->view->args[a + 1];
    x->wide = is_wide(lw_src_type(w, x->src)->dtype);
    x->checked = !(m->view->flags & (1u << a));
    x->dim = lw_cast(w, lw_tensor_dim(w, m->param, a), x->wide ? TJ_DT_U64 : TJ_DT_U32);
    x->stride = lw_tensor_stride(w, m->param, a);
    if (kind == TJ_VIEW_GATHER) {
        x->kind = AX_GATHER;
        x->checked = 1;
        if (m->gpos < 0) {
            m->gpos = *vaxis;
            m->grank = lw_src_type(w, x->src)->rank;
            *vaxis += m->grank;
        }
        return (x->gather = gather_regs(w, m, x->src, x->wide)) == NULL;
    }
    x->start = to_coord(w, lw_val_of(w, x->src)->regs[0], x->wide);
    x->kind = kind == TJ_VIEW_INDEX ? AX_INDEX : AX_EXTENT;
    tj_ref first = x->start; /* the coordinate of this thread's first element */
    if (x->kind == AX_EXTENT) {
        x->vaxis = (*vaxis)++;
        int fa = m->l->frame_axis[x->vaxis];
        x->ext_off = lw_new_regs(w, (uint32_t)m->l->fregs[fa]);
        x->ext_ok = lw_new_regs(w, (uint32_t)m->l->fregs[fa]);
        x->wraps = tj_layout_axis_wraps(m->l, fa);
        if (!x->wraps) /* coordinate = start + tbase + roff(i): tbase goes with the thread */
            first = x->tstart = lw_op2(w, TJ_OP_ADD, x->start, to_coord(w, lw_tbase(w, m->l, fa), x->wide));
    }
    m->uoff = lw_op2(w, TJ_OP_ADD, m->uoff, times_stride(w, first, x->stride));
    if (x->kind == AX_INDEX && x->checked)
        m->upred = lw_and(w, m->upred, in_range(w, x->start, x->dim, x->wide));
    return 0;
}

static int setup(lw *w, mem_access *m, tj_ref view, const tj_layout *l)
{
    const tj_inst *vi = &w->src->insts[view];
    *m = (mem_access){.view = vi, .l = l, .gpos = -1};
    if (vi->op != TJ_OP_VIEW || !tj_param_index(w->src, vi->args[0], &m->param) || vi->nlist > TJ_MAX_RANK)
        return lw_error(w, "internal error: memory access through something that is not a view");
    m->trank = (int)vi->nlist;
    m->dt = lw_src_type(w, view)->dtype;
    m->memdt = m->dt == TJ_DT_BOOL ? TJ_DT_U8 : m->dt;
    m->size = tj_dtype_size(m->memdt);
    m->ptr = lw_tensor_ptr(w, m->param);
    m->uoff = lw_const_int(w, TJ_DT_I64, 0);
    int vaxis = 0;
    for (int a = 0; a < m->trank; a++)
        if (setup_axis(w, m, a, &vaxis))
            return 1;
    m->taddr = lw_op2(w, TJ_OP_ADD, m->ptr, lw_cast(w, lw_mul_imm(w, m->uoff, m->size), TJ_DT_U64));
    return 0;
}

/* Offset term (from the thread's first element) and bounds test of slice
 * axis x for register index i. */
static void extent_terms(lw *w, mem_axis *x, const tj_layout *l, int32_t i)
{
    if (x->ext_off[i])
        return;
    int fa = l->frame_axis[x->vaxis];
    tj_ref c = x->wraps ? lw_coord(w, l, fa, i) : TJ_NONE;
    int32_t off = tj_layout_roff(l, fa, i);
    x->ext_off[i] = c ? times_stride(w, c, x->stride)
                      : lw_op2(w, TJ_OP_MUL, lw_const_int(w, TJ_DT_I64, off), x->stride);
    if (x->checked) {
        tj_ref coord = c ? lw_op2(w, TJ_OP_ADD, x->start, to_coord(w, c, x->wide)) : lw_add_imm(w, x->tstart, off);
        x->ext_ok[i] = in_range(w, coord, x->dim, x->wide);
    }
}

/* Address (u64) and bounds predicate (TJ_NONE: none) of register r. */
static tj_ref reg_address(lw *w, mem_access *m, uint32_t r, tj_ref *pred)
{
    int32_t idx[TJ_MAX_RANK];
    tj_layout_reg_index(m->l, r, idx);
    tj_ref off = lw_const_int(w, TJ_DT_I64, 0), ok = m->upred;
    for (int a = 0; a < m->trank; a++) {
        mem_axis *x = &m->ax[a];
        if (x->kind == AX_EXTENT) {
            int32_t i = idx[m->l->frame_axis[x->vaxis]];
            extent_terms(w, x, m->l, i);
            off = lw_op2(w, TJ_OP_ADD, off, x->ext_off[i]);
            ok = lw_and(w, ok, x->ext_ok[i]);
        } else if (x->kind == AX_GATHER) {
            off = lw_op2(w, TJ_OP_ADD, off, times_stride(w, x->gather[r], x->stride));
            ok = lw_and(w, ok, in_range(w, x->gather[r], x->dim, x->wide));
        }
    }
    *pred = ok;
    return lw_op2(w, TJ_OP_ADD, m->taddr, lw_cast(w, lw_mul_imm(w, off, m->size), TJ_DT_U64));
}

/* Elements per vector access of `view` in layout l (1: scalar accesses):
 * its last axis a slice along the tile's last axis, and facts proving
 * every vector aligned. */
static int vector_width(lw *w, const tj_inst *view, uint32_t param, int size, const tj_layout *l, int masked_store)
{
    int last = (int)view->nlist - 1;
    const tj_facts *f = w->src->facts ? &w->src->facts[param] : NULL;
    if (!f || !f->unit_stride || !f->aligned16 || masked_store || last < 0 || view->list[last] <= 0 ||
        (size != 2 && size != 4 && size != 8) || l->root->kind != TJ_LAYOUT_BLOCKED)
        return 1;
    for (int a = 0; a < last; a++)
        if (!f->stride_div16[a])
            return 1;
    int fa = l->frame_axis[l->rank - 1];
    if (tj_layout_axis_wraps(l, fa))
        return 1;
    int checked = !(view->flags & (1u << last));
    int64_t vw = l->root->espt[fa], d = w->div[view->args[last + 1]];
    if (vw > 16 / size)
        vw = 16 / size;
    while (vw > 1 && d % vw) /* d == 0: the start is 0 */
        vw /= 2;
    int64_t chunk = (int64_t)1 << ((view->flags & TJ_VIEW_CHUNK_MASK) >> TJ_VIEW_CHUNK_SHIFT);
    while (checked && vw > chunk)
        vw /= 2;
    return (int)vw;
}

static int access_width(lw *w, const mem_access *m, int masked_store)
{
    return vector_width(w, m->view, m->param, m->size, m->l, masked_store);
}

/* The registers of a vector group headed by r (r itself when vw = 1);
 * 0 when r is inside another register's group. */
static int group_of(const mem_access *m, uint32_t r, int vw, uint32_t *regs)
{
    int32_t idx[TJ_MAX_RANK];
    int fa = m->l->frame_axis[m->l->rank > 0 ? m->l->rank - 1 : 0];
    tj_layout_reg_index(m->l, r, idx);
    if (vw > 1 && idx[fa] % vw)
        return 0;
    for (int j = 0; j < vw; j++) {
        regs[j] = tj_layout_reg_of(m->l, idx);
        idx[fa]++;
    }
    return 1;
}

static tj_type vec_type(lw *w, tj_dtype dt, int vw)
{
    int32_t n = vw;
    return vw > 1 ? tj_type_tile(w->c, dt, 1, &n) : lw_sty(w, dt);
}

/* ---- load ---------------------------------------------------------------------- */

static int lower_load(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *l = lw_layout_of(w, r);
    mem_access m;
    if (setup(w, &m, in->args[0], l))
        return 1;
    tj_ref *mask = in->args[1] ? lw_regs_in(w, in->args[1], l) : NULL;
    int tile_other = in->args[2] && lw_src_type(w, in->args[2])->rank > 0;
    tj_ref *other = tile_other ? lw_regs_in(w, in->args[2], l) : NULL;
    tj_ref uni_other = in->args[2] && !tile_other ? lw_val_of(w, in->args[2])->regs[0] : TJ_NONE;
    if ((in->args[1] && !mask) || (tile_other && !other))
        return 1;
    lw_hazard_access(w, m.param, r);
    int acquire = in->op == TJ_OP_LOAD_ACQUIRE, relaxed = in->op == TJ_OP_LOAD_RELAXED;
    int vw = acquire || relaxed ? 1 : access_width(w, &m, 0);
    tj_ref *regs = lw_new_regs(w, l->nregs);
    uint32_t group[16];
    for (uint32_t r0 = 0; r0 < l->nregs; r0++) {
        if (!group_of(&m, r0, vw, group))
            continue;
        tj_ref pred, addr = reg_address(w, &m, r0, &pred);
        int select_after = vw > 1 && (mask || other);
        tj_ref dflt = other ? other[r0] : uni_other;
        if (acquire || relaxed)
            pred = lw_and(w, lw_owner(w, l, r0), pred);
        tj_ref args[3] = {addr, select_after ? pred : lw_and(w, pred, mask ? mask[r0] : TJ_NONE),
                          select_after || !dflt ? TJ_NONE : lw_cast(w, dflt, m.memdt)};
        tj_op ld = acquire ? TJ_OP_LD_ACQUIRE : relaxed ? TJ_OP_LD_RELAXED : TJ_OP_LD_GLOBAL;
        tj_ref v = lw_emit(w, ld, vec_type(w, m.memdt, vw), args, 3);
        for (int j = 0; j < vw; j++) {
            tj_ref x = v;
            if (vw > 1) {
                x = lw_emit(w, TJ_OP_EXTRACT, lw_sty(w, m.memdt), &v, 1);
                w->dst->insts[x].imm = j;
            }
            if (m.dt == TJ_DT_BOOL)
                x = lw_op2(w, TJ_OP_NE, x, lw_const_int(w, TJ_DT_U8, 0));
            if (select_after) {
                tj_ref d = other ? other[group[j]] : uni_other ? uni_other : lw_const_int(w, m.dt, 0);
                x = lw_select(w, lw_and(w, pred, mask ? mask[group[j]] : TJ_NONE), x, d);
            }
            regs[group[j]] = x;
        }
    }
    if ((acquire || relaxed) && tj_layout_has_replicas(l))
        lw_refresh_replicas(w, l, regs, -1); /* its barrier follows every owner's access */
    else if (acquire)
        lw_barrier(w);
    lw_set_regs(w, r, l, regs);
    return 0;
}

/* ---- load into shared memory: asynchronous copies (lower/ring.c) ---- */

/* The bytes of one copy of load r, when it can go to shared memory as
 * cp_async copies: a view without gathers, no mask, out-of-range elements
 * 0 (the copies zero-fill), 4, 8 or 16 aligned bytes per vector; else 0. */
int lw_async_copy_bytes(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_inst *view = in->op == TJ_OP_LOAD ? &w->src->insts[in->args[0]] : NULL;
    uint32_t param;
    if (!view || view->op != TJ_OP_VIEW || in->args[1] || view->nlist > TJ_MAX_RANK ||
        (in->args[2] && !tj_is_const_float(w->src, in->args[2], 0.0, 0)) ||
        !tj_param_index(w->src, view->args[0], &param))
        return 0;
    for (uint32_t a = 0; a < view->nlist; a++)
        if (view->list[a] == TJ_VIEW_GATHER)
            return 0;
    tj_dtype dt = lw_src_type(w, r)->dtype;
    int size = dt == TJ_DT_BOOL ? 0 : tj_dtype_size(dt);
    int bytes = size * vector_width(w, view, param, size, lw_layout_of(w, r), 0);
    return bytes == 4 || bytes == 8 || bytes == 16 ? bytes : 0;
}

/* Load r (lw_async_copy_bytes > 0) copied into the row-major buffer at
 * buf + shift whose rows are ld elements apart: one cp_async per vector of
 * its layout, 0 bytes for vectors out of range. */
/* Where register r0's vector goes in a copy's destination (u32 bytes). */
static tj_ref copy_place(lw *w, const tj_layout *l, uint32_t r0, uint32_t buf, int64_t ld, const lw_wg_tile *wg,
                         int size)
{
    if (!wg)
        return lw_smem_addr(w, buf, lw_padded_index(w, l, r0, ld), size);
    int was = w->hoisting;
    w->hoisting = 1; /* it depends on the thread only */
    tj_ref off = lw_wg_offset(w, wg, lw_tile_coord(w, l, r0, 0), lw_tile_coord(w, l, r0, 1));
    w->hoisting = was;
    return lw_add_imm(w, off, buf);
}

int lw_copy_async(lw *w, tj_ref r, uint32_t buf, tj_ref shift, int64_t ld, const lw_wg_tile *wg)
{
    const tj_layout *l = lw_layout_of(w, r);
    mem_access m;
    if (setup(w, &m, w->src->insts[r].args[0], l))
        return 1;
    int vw = access_width(w, &m, 0), bytes = vw * m.size;
    uint32_t group[16];
    for (uint32_t r0 = 0; r0 < l->nregs; r0++) {
        if (!group_of(&m, r0, vw, group))
            continue;
        tj_ref pred, src = reg_address(w, &m, r0, &pred);
        tj_ref dst = lw_shifted(w, copy_place(w, l, r0, buf, ld, wg, m.size), shift);
        tj_ref full = lw_const_int(w, TJ_DT_U32, bytes);
        tj_ref args[3] = {dst, src, pred ? lw_select(w, pred, full, lw_const_int(w, TJ_DT_U32, 0)) : full};
        tj_ref c = lw_emit(w, TJ_OP_CP_ASYNC, TJ_TYPE_NONE, args, 3);
        w->dst->insts[c].imm = bytes;
    }
    return 0;
}

/* ---- scatter: a later element (row-major) to the same place wins ---- */

static uint64_t numel(const tj_layout *l, int from, int to)
{
    uint64_t n = 1;
    for (int d = from; d < to; d++)
        n *= (uint64_t)l->shape[d];
    return n;
}

/* Per register: whether a later element of the tile stores to the same
 * place (same gather indices and other coordinates, mask set). */
static tj_ref *later_duplicates(lw *w, mem_access *m, const tj_ref *mask)
{
    const tj_layout *l = m->l;
    uint64_t g = numel(l, m->gpos, m->gpos + m->grank), inner = numel(l, m->gpos + m->grank, l->rank);
    int64_t vs[TJ_MAX_RANK], gw[TJ_MAX_RANK] = {0}, rest[TJ_MAX_RANK];
    tj_shape_strides(l->rank, l->shape, vs);
    for (int d = 0; d < l->rank; d++) {
        int in_gather = d >= m->gpos && d < m->gpos + m->grank;
        gw[d] = in_gather ? vs[d] / (int64_t)inner : 0;
        rest[d] = in_gather ? 0 : vs[d];
    }
    lw_smem_begin(w);
    uint32_t gbuf[TJ_MAX_RANK] = {0}, mbuf = 0;
    for (int a = 0; a < m->trank; a++)
        if (m->ax[a].kind == AX_GATHER)
            gbuf[a] = lw_smem_alloc(w, g * 8);
    if (mask)
        mbuf = lw_smem_alloc(w, numel(l, 0, l->rank));
    tj_ref *pos = lw_new_regs(w, l->nregs), *init = lw_new_regs(w, l->nregs), *g64[TJ_MAX_RANK] = {0};
    for (int a = 0; a < m->trank; a++)
        if (m->ax[a].kind == AX_GATHER)
            g64[a] = lw_new_regs(w, l->nregs);
    for (uint32_t r = 0; r < l->nregs; r++) {
        pos[r] = lw_flat(w, l, r, gw);
        for (int a = 0; a < m->trank; a++)
            if (g64[a]) {
                g64[a][r] = lw_cast(w, m->ax[a].gather[r], TJ_DT_I64);
                lw_smem_store(w, lw_smem_addr(w, gbuf[a], pos[r], 8), g64[a][r]);
            }
        if (mask)
            lw_smem_store(w, lw_smem_addr(w, mbuf, lw_flat(w, l, r, vs), 1), mask[r]);
        init[r] = lw_const_int(w, TJ_DT_BOOL, 0);
    }
    lw_barrier(w);
    lw_loop lp;
    tj_ref zero = lw_const_int(w, TJ_DT_I32, 0), one = lw_const_int(w, TJ_DT_I32, 1);
    lw_loop_begin(w, &lp, zero, lw_const_int(w, TJ_DT_I32, (int64_t)g), one, init, l->nregs);
    tj_ref gj[TJ_MAX_RANK] = {0};
    for (int a = 0; a < m->trank; a++)
        if (m->ax[a].kind == AX_GATHER)
            gj[a] = lw_smem_load(w, lw_smem_addr(w, gbuf[a], lp.iv, 8), TJ_DT_I64);
    tj_ref *next = lw_new_regs(w, l->nregs);
    for (uint32_t r = 0; r < l->nregs; r++) {
        tj_ref hit = lw_op2(w, TJ_OP_LT, pos[r], lp.iv);
        for (int a = 0; a < m->trank; a++)
            if (gj[a])
                hit = lw_and(w, hit, lw_op2(w, TJ_OP_EQ, gj[a], g64[a][r]));
        if (mask) {
            tj_ref at = lw_op2(w, TJ_OP_ADD, lw_flat(w, l, r, rest), lw_mul_imm(w, lp.iv, (int64_t)inner));
            hit = lw_and(w, hit, lw_smem_load(w, lw_smem_addr(w, mbuf, at, 1), TJ_DT_BOOL));
        }
        next[r] = lw_or(w, lp.args[r], hit);
    }
    tj_ref *dup = lw_loop_end(w, &lp, next);
    lw_smem_end(w);
    return dup;
}

/* ---- store and atomics ------------------------------------------------------------ */

static int lower_store(lw *w, tj_ref r)
{
    if (lw_tma_store_fits(w, r)) /* sm_90a: through shared memory by the copy engine */
        return lw_lower_tma_store(w, r);
    const tj_inst *in = &w->src->insts[r];
    const lw_val *val = lw_val_of(w, in->args[1]);
    const tj_layout *l = val->lay;
    mem_access m;
    if (!l || setup(w, &m, in->args[0], l))
        return 1;
    tj_ref *mask = in->args[2] ? lw_regs_in(w, in->args[2], l) : NULL;
    if (in->args[2] && !mask)
        return 1;
    tj_ref *dup = m.gpos >= 0 && !(in->flags & TJ_STORE_DISTINCT) ? later_duplicates(w, &m, mask) : NULL;
    int release = in->op == TJ_OP_STORE_RELEASE, relaxed = in->op == TJ_OP_STORE_RELAXED;
    int vw = dup || release || relaxed ? 1 : access_width(w, &m, mask != NULL);
    if (release)
        lw_barrier(w);
    lw_hazard_access(w, m.param, r);
    uint32_t group[16];
    for (uint32_t r0 = 0; r0 < l->nregs; r0++) {
        if (!group_of(&m, r0, vw, group))
            continue;
        tj_ref pred, addr = reg_address(w, &m, r0, &pred);
        pred = lw_and(w, lw_owner(w, l, r0), pred);
        pred = lw_and(w, pred, mask ? mask[r0] : TJ_NONE);
        pred = lw_and(w, pred, dup ? lw_not(w, dup[r0]) : TJ_NONE);
        tj_ref parts[16], v;
        for (int j = 0; j < vw; j++)
            parts[j] = lw_cast(w, val->regs[group[j]], m.memdt);
        v = vw > 1 ? lw_emit(w, TJ_OP_PACK, vec_type(w, m.memdt, vw), parts, (uint32_t)vw) : parts[0];
        tj_ref args[3] = {addr, v, pred};
        lw_emit(w, release ? TJ_OP_ST_RELEASE : relaxed ? TJ_OP_ST_RELAXED : TJ_OP_ST_GLOBAL, TJ_TYPE_NONE, args, 3);
    }
    return 0;
}

static int lower_atomic(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *l = lw_layout_of(w, r);
    static const tj_op simt_op[] = {[TJ_OP_ATOMIC_ADD] = TJ_OP_ATOM_ADD, [TJ_OP_ATOMIC_MAX] = TJ_OP_ATOM_MAX,
                                    [TJ_OP_ATOMIC_MIN] = TJ_OP_ATOM_MIN};
    mem_access m;
    if (setup(w, &m, in->args[0], l))
        return 1;
    if (m.dt == TJ_DT_BOOL)
        return lw_error(w, "atomics on bool tensors are not supported");
    tj_ref *val = lw_regs_in(w, in->args[1], l);
    tj_ref *mask = in->args[2] ? lw_regs_in(w, in->args[2], l) : NULL;
    if (!val || (in->args[2] && !mask))
        return 1;
    lw_hazard_access(w, m.param, r);
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++) {
        tj_ref pred, addr = reg_address(w, &m, i, &pred);
        pred = lw_and(w, lw_and(w, lw_owner(w, l, i), pred), mask ? mask[i] : TJ_NONE);
        tj_ref args[3] = {addr, val[i], pred};
        regs[i] = lw_emit(w, simt_op[in->op], lw_sty(w, m.dt), args, 3);
    }
    lw_refresh_replicas(w, l, regs, -1); /* replicas did not update: give them the owner's old value */
    lw_set_regs(w, r, l, regs);
    return 0;
}

int lw_lower_memory(lw *w, tj_ref r)
{
    switch (w->src->insts[r].op) {
    case TJ_OP_LOAD:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_LOAD_RELAXED: return lower_load(w, r);
    case TJ_OP_STORE:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_STORE_RELAXED: return lower_store(w, r);
    default: return lower_atomic(w, r);
    }
}
