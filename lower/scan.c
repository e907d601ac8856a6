/* Inclusive scans along an axis: cumsum, cumprod, and scan with a combine
 * region (inlined on scalars; it need not commute, so every combine keeps
 * the earlier value on the left). For each chunk of a thread's registers
 * along the axis: a scan in the thread, a Hillis-Steele scan of the chunk
 * totals with shfl_up across the lanes of the axis, the warp totals through
 * shared memory (unless the warps along the axis hold replicas only: then
 * each warp scans its own copy), and the totals of earlier chunks carried
 * forward. Padding and replicas along the axis come after every real
 * element in scan order, so they only spoil themselves; they are refreshed
 * from their owners at the end (not the replicas of a warp that scanned
 * its own copy). Axis -1 scans the flattened tile. */
#include "lower/lower.h"

enum { MAX_TUPLE = 16 };

typedef struct scan {
    lw *w;
    tj_op op;
    tj_block_id region;
    uint32_t n;            /* values scanned together */
    const tj_layout *l;
    int fa;                /* the frame axis scanned */
} scan;

/* A partial result: n values, present when `has` (TJ_NONE: always). */
typedef struct part {
    tj_ref v[MAX_TUPLE];
    tj_ref has;
    int absent; /* statically absent */
} part;

static int combine(scan *s, const tj_ref *left, const tj_ref *right, tj_ref *out)
{
    if (s->op != TJ_OP_SCAN) {
        out[0] = lw_combine(s->w, s->op, left[0], right[0]);
        return 0;
    }
    tj_ref args[2 * MAX_TUPLE];
    for (uint32_t k = 0; k < s->n; k++) {
        args[k] = left[k];
        args[s->n + k] = right[k];
    }
    return lw_inline_region(s->w, s->region, args, 2 * s->n, out, s->n);
}

/* a then b (a earlier), either possibly absent. */
static part join(scan *s, part a, part b)
{
    if (a.absent)
        return b;
    if (b.absent)
        return a;
    part r = {.has = TJ_NONE};
    if (combine(s, a.v, b.v, r.v))
        return (part){.absent = 1};
    lw *w = s->w;
    for (uint32_t k = 0; k < s->n; k++) {
        if (b.has)
            r.v[k] = lw_select(w, b.has, r.v[k], a.v[k]);
        if (a.has)
            r.v[k] = lw_select(w, a.has, r.v[k], b.v[k]);
    }
    r.has = a.has && b.has ? lw_or(w, a.has, b.has) : TJ_NONE;
    return r;
}

static part present(const tj_ref *v, uint32_t n, tj_ref has)
{
    part p = {.has = has};
    for (uint32_t k = 0; k < n; k++)
        p.v[k] = v[k];
    return p;
}

/* Inclusive scan of the chunk totals t across the lanes of the axis; sets
 * *excl to the lanes before this one, *chunk to the warp's whole total. */
static part lanes_scan(scan *s, part t, part *excl, part *chunk)
{
    lw *w = s->w;
    uint32_t bits = tj_layout_lane_bits(s->l, s->fa);
    int lb = lw_low_bit(bits), tpw = (int)(bits >> lb) + 1;
    tj_ref pos = lw_id_bits(w, lw_lane(w), bits);
    for (int d = 1; d < tpw; d *= 2) {
        part up = {.has = lw_op2(w, TJ_OP_GE, pos, lw_const_int(w, TJ_DT_I32, d))};
        for (uint32_t k = 0; k < s->n; k++)
            up.v[k] = lw_shfl_up(w, t.v[k], (uint32_t)d << lb);
        t = join(s, up, t);
    }
    *excl = (part){.absent = tpw == 1, .has = lw_op2(w, TJ_OP_GE, pos, lw_const_int(w, TJ_DT_I32, 1))};
    *chunk = t;
    if (tpw == 1)
        return t;
    tj_ref last = lw_op2(w, TJ_OP_OR, lw_lane(w), lw_const_int(w, TJ_DT_I32, bits));
    for (uint32_t k = 0; k < s->n; k++) {
        excl->v[k] = lw_shfl_up(w, t.v[k], 1u << lb);
        chunk->v[k] = lw_shfl_idx(w, t.v[k], last);
    }
    return t;
}

/* Partial results per line (the registers of the other axes) and chunk
 * (a thread's run of spt registers along the axis, `reps` per line). */
typedef struct chunks {
    uint32_t nrows;
    int spt, reps, nw;
    uint32_t *row_reg;               /* a register of each line */
    part *lane_ex, *warp_ex, *total; /* [row * reps + k] */
} chunks;

static uint32_t reg_at(const scan *s, int32_t *idx, int i)
{
    idx[s->fa] = i;
    return tj_layout_reg_of(s->l, idx);
}

/* 1. the scan in each thread's chunks, and across the lanes of the axis */
static void chunk_scans(scan *s, chunks *c, tj_ref **x, tj_ref **out)
{
    int32_t idx[TJ_MAX_RANK];
    for (uint32_t row = 0, r = 0; r < s->l->nregs; r++) {
        tj_layout_reg_index(s->l, r, idx);
        if (idx[s->fa])
            continue;
        c->row_reg[row] = r;
        for (int k = 0; k < c->reps; k++) {
            part acc = {.absent = 1};
            for (int e = 0; e < c->spt; e++) {
                uint32_t reg = reg_at(s, idx, k * c->spt + e);
                tj_ref v[MAX_TUPLE];
                for (uint32_t q = 0; q < s->n; q++)
                    v[q] = x[q][reg];
                acc = join(s, acc, present(v, s->n, TJ_NONE));
                for (uint32_t q = 0; q < s->n; q++)
                    out[q][reg] = acc.v[q];
            }
            lanes_scan(s, acc, &c->lane_ex[row * c->reps + k], &c->total[row * c->reps + k]);
        }
        row++;
    }
}

/* The flat index of a line (every axis but the scanned one) of register r. */
static tj_ref line_index(scan *s, uint32_t r)
{
    const tj_layout *l = s->l;
    int64_t strides[TJ_MAX_RANK];
    int axis = 0;
    tj_shape_strides(l->rank, l->shape, strides);
    for (int d = 0; d < l->rank; d++)
        if (l->frame_axis[d] == s->fa)
            axis = d;
    for (int d = 0; d < l->rank; d++)
        strides[d] = d == axis ? 0 : d < axis ? strides[d] / l->shape[axis] : strides[d];
    return lw_flat(s->w, l, r, strides);
}

/* 2. the warps' chunk totals through shared memory: for each chunk, the
 * run of the warps before this thread's and the total of all of them */
static void warp_scans(scan *s, chunks *c, tj_ref **x)
{
    lw *w = s->w;
    uint32_t warp_bits = tj_layout_warp_bits(s->l, s->fa);
    tj_ref wi = lw_id_bits(w, lw_warp(w), warp_bits);
    uint64_t lines = 1;
    for (int d = 0; d < s->l->rank; d++)
        lines *= (uint64_t)s->l->shape[d];
    lines /= (uint64_t)s->l->fshape[s->fa];
    lw_smem_begin(w);
    uint32_t buf[MAX_TUPLE];
    int size[MAX_TUPLE];
    for (uint32_t q = 0; q < s->n; q++) {
        size[q] = lw_smem_size(lw_dt(w, x[q][0]));
        buf[q] = lw_smem_alloc(w, lines * (uint64_t)c->reps * (uint64_t)c->nw * (uint64_t)size[q]);
    }
    tj_ref *slot0 = lw_new_regs(w, c->nrows);
    for (uint32_t row = 0; row < c->nrows; row++) {
        slot0[row] = lw_mul_imm(w, line_index(s, c->row_reg[row]), (int64_t)c->reps * c->nw);
        for (int k = 0; k < c->reps; k++) {
            tj_ref slot = lw_op2(w, TJ_OP_ADD, lw_add_imm(w, slot0[row], (int64_t)k * c->nw), wi);
            for (uint32_t q = 0; q < s->n; q++)
                lw_smem_store(w, lw_smem_addr(w, buf[q], slot, size[q]), c->total[row * c->reps + k].v[q]);
        }
    }
    lw_barrier(w);
    for (uint32_t row = 0; row < c->nrows; row++)
        for (int k = 0; k < c->reps; k++) {
            part run = {.absent = 1}, ex = {.absent = 1};
            for (int j = 0; j < c->nw; j++) {
                part val = {.has = TJ_NONE};
                tj_ref slot = lw_add_imm(w, slot0[row], (int64_t)k * c->nw + j);
                for (uint32_t q = 0; q < s->n; q++)
                    val.v[q] = lw_smem_load(w, lw_smem_addr(w, buf[q], slot, size[q]), lw_dt(w, x[q][0]));
                if (j == 1) /* ex: the run of the warps before this thread's */
                    ex = run;
                for (uint32_t q = 0; j > 1 && q < s->n; q++)
                    ex.v[q] = lw_select(w, lw_op2(w, TJ_OP_LT, lw_const_int(w, TJ_DT_I32, j - 1), wi), run.v[q],
                                        ex.v[q]);
                run = join(s, run, val);
            }
            ex.has = lw_op2(w, TJ_OP_GE, wi, lw_const_int(w, TJ_DT_I32, 1));
            c->warp_ex[row * c->reps + k] = ex;
            c->total[row * c->reps + k] = run;
        }
    lw_smem_end(w);
}

/* 3. every chunk's prefix: earlier chunks, earlier warps, earlier lanes */
static void apply_prefixes(scan *s, chunks *c, tj_ref **out)
{
    int32_t idx[TJ_MAX_RANK];
    for (uint32_t row = 0; row < c->nrows; row++) {
        part carry = {.absent = 1};
        tj_layout_reg_index(s->l, c->row_reg[row], idx);
        for (int k = 0; k < c->reps; k++) {
            uint32_t at = row * (uint32_t)c->reps + (uint32_t)k;
            part pre = join(s, join(s, carry, c->warp_ex[at]), c->lane_ex[at]);
            for (int e = 0; !pre.absent && e < c->spt; e++) {
                uint32_t reg = reg_at(s, idx, k * c->spt + e);
                tj_ref v[MAX_TUPLE];
                for (uint32_t q = 0; q < s->n; q++)
                    v[q] = out[q][reg];
                part r = join(s, pre, present(v, s->n, TJ_NONE));
                for (uint32_t q = 0; q < s->n; q++)
                    out[q][reg] = r.v[q];
            }
            carry = join(s, carry, c->total[at]);
        }
    }
}

static int scan_axis(scan *s, tj_ref **x, tj_ref **out)
{
    lw *w = s->w;
    const tj_layout *l = s->l;
    uint32_t warp_bits = tj_layout_warp_bits(l, s->fa);
    int in_warp = tj_layout_warps_replicate(l, s->fa);
    chunks c = {.spt = l->root->espt[s->fa], .nrows = l->nregs / (uint32_t)l->fregs[s->fa]};
    c.reps = l->fregs[s->fa] / c.spt;
    c.nw = warp_bits && !in_warp ? (int)(warp_bits >> lw_low_bit(warp_bits)) + 1 : 1;
    size_t nchunks = (size_t)c.nrows * (size_t)c.reps;
    c.row_reg = tj_alloc(w->c, sizeof *c.row_reg * c.nrows);
    c.lane_ex = tj_alloc(w->c, sizeof *c.lane_ex * nchunks);
    c.warp_ex = tj_alloc(w->c, sizeof *c.warp_ex * nchunks);
    c.total = tj_alloc(w->c, sizeof *c.total * nchunks);
    for (size_t i = 0; i < nchunks; i++)
        c.warp_ex[i] = (part){.absent = 1};
    chunk_scans(s, &c, x, out);
    if (c.nw > 1 && !w->err)
        warp_scans(s, &c, x);
    if (w->err)
        return 1;
    apply_prefixes(s, &c, out);
    int lanes_wrap = lw_lane_raw_ok_static(l, s->fa, l->fregs[s->fa] - 1) != 1;
    for (uint32_t q = 0; q < s->n && (!in_warp || lanes_wrap); q++)
        lw_refresh_replicas(w, l, out[q], s->fa);
    return w->err;
}

/* The flattened scan (axis -1): through a 1-D layout and back. */
static int scan_flat(scan *s, const tj_layout *l, tj_ref **x, tj_ref **out)
{
    lw *w = s->w;
    int32_t n = 1;
    int64_t one = 1, strides[TJ_MAX_RANK];
    for (int d = 0; d < l->rank; d++)
        n *= l->shape[d];
    tj_shape_strides(l->rank, l->shape, strides);
    const tj_layout *flat = lw_intern(w, tj_layout_canonical(w->c, 1, &n, w->nwarps, w->vec));
    tj_ref *x1[MAX_TUPLE], *o1[MAX_TUPLE];
    for (uint32_t c = 0; c < s->n; c++) {
        lw_val v = {.lay = l, .regs = x[c]};
        x1[c] = lw_transfer(w, &v, flat, &one);
        o1[c] = lw_new_regs(w, flat->nregs);
    }
    s->l = flat;
    s->fa = 0;
    if (scan_axis(s, x1, o1))
        return 1;
    for (uint32_t c = 0; c < s->n; c++) {
        lw_val v = {.lay = flat, .regs = o1[c]};
        tj_ref *back = lw_transfer(w, &v, l, strides);
        for (uint32_t r = 0; r < l->nregs; r++)
            out[c][r] = back[r];
    }
    return 0;
}

int lw_lower_scan(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    scan s = {.w = w, .op = in->op, .region = in->region[0], .n = in->op == TJ_OP_SCAN ? in->nargs : 1};
    const lw_val *x0 = lw_val_of(w, in->args[0]);
    const tj_layout *l = x0->lay;
    tj_ref *x[MAX_TUPLE], *out[MAX_TUPLE];
    if (!l || s.n < 1 || s.n > MAX_TUPLE)
        return lw_error(w, "scans take 1 to %d tiles", MAX_TUPLE);
    if (l->root->kind != TJ_LAYOUT_BLOCKED)
        return lw_error(w, "internal error: scan in a non-blocked layout");
    tj_dtype dt = lw_src_type(w, in->args[0])->dtype;
    for (uint32_t c = 0; c < s.n; c++) {
        if (!(x[c] = lw_regs_in(w, in->args[c], l)))
            return 1;
        out[c] = lw_new_regs(w, l->nregs);
    }
    if (s.op != TJ_OP_SCAN) { /* cumsum/cumprod: f16/bf16 in f32, narrow ints in 32 bits */
        tj_ref *wide = lw_new_regs(w, l->nregs);
        for (uint32_t i = 0; i < l->nregs; i++)
            wide[i] = lw_cast(w, x[0][i], lw_acc_dtype(dt));
        x[0] = wide;
    }
    int axis = (int)in->imm, failed;
    s.l = l;
    if (axis < 0 && l->rank > 1) {
        failed = scan_flat(&s, l, x, out);
    } else {
        s.fa = l->frame_axis[axis < 0 ? 0 : axis];
        failed = scan_axis(&s, x, out);
    }
    if (failed)
        return 1;
    if (s.op != TJ_OP_SCAN) {
        for (uint32_t i = 0; i < l->nregs; i++)
            out[0][i] = lw_cast(w, out[0][i], dt);
        lw_set_regs(w, r, l, out[0]);
        return 0;
    }
    lw_val *v = lw_val_of(w, r);
    v->nelems = s.n;
    v->elems = tj_alloc(w->c, sizeof *v->elems * s.n);
    for (uint32_t c = 0; c < s.n; c++)
        v->elems[c] = (lw_val){.lay = l, .regs = out[c]};
    return 0;
}
