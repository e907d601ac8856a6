/* sort: a bitonic network in shared memory over every line along the axis
 * (axis -1: the flattened tile), keys with their positions, so that ties
 * are broken by position and the result equals a stable sort; values are
 * fetched by position at the end. A line of n elements is padded to N, the
 * next power of two, with entries that sort last. NaN sorts above +inf and
 * -0 equals +0, as in the interpreter. The network runs as SIMT loops over
 * its stages; in every stage each thread compare-exchanges a fixed number
 * of pairs (pairs past the end go to a scratch pair). */
#include "lower/lower.h"

typedef struct sorter {
    lw *w;
    tj_dtype kdt;        /* key dtype in shared memory */
    int ksize, descending;
    int64_t n, big_n, rows;
    uint32_t keys, idx, vals, scratch; /* buffers; scratch: two (key, position) slots */
} sorter;

static int log2_of(int64_t v)
{
    int n = 0;
    while (v > 1) {
        v >>= 1;
        n++;
    }
    return n;
}

static tj_ref i32(lw *w, int64_t v) { return lw_const_int(w, TJ_DT_I32, v); }

/* key a before key b in ascending order: NaN above everything, -0 == +0 */
static tj_ref key_less(lw *w, tj_ref a, tj_ref b)
{
    tj_ref lt = lw_op2(w, TJ_OP_LT, a, b);
    if (!tj_dtype_is_float(lw_dt(w, a)))
        return lt;
    tj_ref na = lw_op2(w, TJ_OP_NE, a, a), nb = lw_op2(w, TJ_OP_NE, b, b);
    return lw_or(w, lt, lw_and(w, lw_not(w, na), nb));
}

static tj_ref key_equal(lw *w, tj_ref a, tj_ref b)
{
    tj_ref eq = lw_op2(w, TJ_OP_EQ, a, b);
    if (!tj_dtype_is_float(lw_dt(w, a)))
        return eq;
    return lw_or(w, eq, lw_and(w, lw_op2(w, TJ_OP_NE, a, a), lw_op2(w, TJ_OP_NE, b, b)));
}

tj_ref lw_sort_before(lw *w, int descending, int64_t pad_from, tj_ref ka, tj_ref ia, tj_ref kb, tj_ref ib)
{
    tj_ref first = lw_op2(w, TJ_OP_LT, ia, ib);
    tj_ref less = descending ? key_less(w, kb, ka) : key_less(w, ka, kb);
    tj_ref strict = lw_or(w, less, lw_and(w, key_equal(w, ka, kb), first));
    if (!pad_from)
        return strict;
    tj_ref pa = lw_op2(w, TJ_OP_GE, ia, i32(w, pad_from)), pb = lw_op2(w, TJ_OP_GE, ib, i32(w, pad_from));
    return lw_select(w, pa, lw_and(w, pb, first), lw_or(w, pb, strict));
}

static tj_ref before(sorter *s, tj_ref ka, tj_ref ia, tj_ref kb, tj_ref ib)
{
    return lw_sort_before(s->w, s->descending, s->big_n > s->n ? s->n : 0, ka, ia, kb, ib);
}

static tj_ref key_addr(sorter *s, tj_ref slot) { return lw_smem_addr(s->w, s->keys, slot, s->ksize); }
static tj_ref idx_addr(sorter *s, tj_ref slot) { return lw_smem_addr(s->w, s->idx, slot, 4); }

/* Work item i = tid + k * nthreads of `count` items; items past the end
 * are redirected (*valid false, TJ_NONE when every item is real). */
static tj_ref work_item(lw *w, uint32_t k, int64_t count, tj_ref *valid)
{
    tj_ref i = lw_add_imm(w, lw_tid(w), (int64_t)k * w->nthreads);
    *valid = (int64_t)(k + 1) * w->nthreads <= count ? TJ_NONE : lw_op2(w, TJ_OP_LT, i, i32(w, count));
    return i;
}

/* Padding entries: positions n .. N-1 of every line, and the scratch pair. */
static void write_padding(sorter *s)
{
    lw *w = s->w;
    int64_t pad = s->big_n - s->n, count = s->rows * pad;
    tj_ref zero = lw_const_int(w, s->kdt, 0), scratch = i32(w, s->rows * s->big_n);
    for (uint32_t k = 0; pad && (int64_t)k * w->nthreads < count; k++) {
        tj_ref valid, i = work_item(w, k, count, &valid);
        tj_ref p = lw_add_imm(w, lw_op2(w, TJ_OP_REM, i, i32(w, pad)), s->n);
        tj_ref slot = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, lw_op2(w, TJ_OP_DIV, i, i32(w, pad)), s->big_n), p);
        if (valid)
            slot = lw_select(w, valid, slot, scratch);
        lw_smem_store(w, key_addr(s, slot), zero);
        lw_smem_store(w, idx_addr(s, slot), p);
    }
    for (int j = 0; j < 2; j++) {
        tj_ref slot = i32(w, s->rows * s->big_n + j);
        lw_smem_store(w, key_addr(s, slot), zero);
        lw_smem_store(w, idx_addr(s, slot), i32(w, s->big_n));
    }
}

/* One stage: compare-exchange (lo, lo + j) in direction (lo & k) == 0. */
static void stage(sorter *s, tj_ref j, tj_ref k)
{
    lw *w = s->w;
    int64_t half = s->big_n / 2, pairs = s->rows * half;
    tj_ref jm = lw_op2(w, TJ_OP_SUB, j, i32(w, 1)), scratch = i32(w, s->rows * s->big_n);
    for (uint32_t t = 0; (int64_t)t * w->nthreads < pairs; t++) {
        tj_ref valid, i = work_item(w, t, pairs, &valid);
        tj_ref row = lw_op2(w, TJ_OP_SHR, i, i32(w, log2_of(half)));
        tj_ref q = lw_op2(w, TJ_OP_AND, i, i32(w, half - 1));
        tj_ref low = lw_op2(w, TJ_OP_AND, q, jm);
        tj_ref lo = lw_op2(w, TJ_OP_ADD, low, lw_op2(w, TJ_OP_SHL, lw_op2(w, TJ_OP_SUB, q, low), i32(w, 1)));
        tj_ref asc = lw_op2(w, TJ_OP_EQ, lw_op2(w, TJ_OP_AND, lo, k), i32(w, 0));
        tj_ref a = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, row, s->big_n), lo), b;
        if (valid)
            a = lw_select(w, valid, a, scratch);
        b = valid ? lw_select(w, valid, lw_op2(w, TJ_OP_ADD, a, j), lw_add_imm(w, scratch, 1))
                  : lw_op2(w, TJ_OP_ADD, a, j);
        tj_ref ka = lw_smem_load(w, key_addr(s, a), s->kdt), ia = lw_smem_load(w, idx_addr(s, a), TJ_DT_I32);
        tj_ref kb = lw_smem_load(w, key_addr(s, b), s->kdt), ib = lw_smem_load(w, idx_addr(s, b), TJ_DT_I32);
        tj_ref swap = lw_select(w, asc, before(s, kb, ib, ka, ia), before(s, ka, ia, kb, ib));
        lw_smem_store(w, key_addr(s, a), lw_select(w, swap, kb, ka));
        lw_smem_store(w, idx_addr(s, a), lw_select(w, swap, ib, ia));
        lw_smem_store(w, key_addr(s, b), lw_select(w, swap, ka, kb));
        lw_smem_store(w, idx_addr(s, b), lw_select(w, swap, ia, ib));
    }
    lw_barrier(w);
}

/* for p in 1..log2(N): for q in 0..p-1: stage(j = 2^(p-1-q), k = 2^p) */
static void network(sorter *s)
{
    lw *w = s->w;
    lw_loop outer, inner;
    lw_loop_begin(w, &outer, i32(w, 1), i32(w, log2_of(s->big_n) + 1), i32(w, 1), NULL, 0);
    lw_loop_begin(w, &inner, i32(w, 0), outer.iv, i32(w, 1), NULL, 0);
    tj_ref shift = lw_op2(w, TJ_OP_SUB, lw_add_imm(w, outer.iv, -1), inner.iv);
    stage(s, lw_op2(w, TJ_OP_SHL, i32(w, 1), shift), lw_op2(w, TJ_OP_SHL, i32(w, 1), outer.iv));
    w->smem_dirty = 0; /* the stage ended with a barrier */
    lw_loop_end(w, &inner, NULL);
    lw_loop_end(w, &outer, NULL);
}

static void set_results(lw *w, tj_ref r, const tj_layout *l, tj_ref *keys, tj_ref *vals)
{
    if (!vals) {
        lw_set_regs(w, r, l, keys);
        return;
    }
    lw_val *v = lw_val_of(w, r);
    v->nelems = 2;
    v->elems = tj_alloc(w->c, sizeof *v->elems * 2);
    v->elems[0] = (lw_val){.lay = l, .regs = keys};
    v->elems[1] = (lw_val){.lay = l, .regs = vals};
}

/* The network in registers (lower/sort_regs.c) when the layout allows;
 * values then follow their positions through shared memory. */
static int sort_registers(sorter *s, tj_ref r, int axis, const lw_val *kv, const tj_ref *vals, const int64_t *rowst)
{
    lw *w = s->w;
    const tj_layout *l = kv->lay;
    tj_ref *key = lw_new_regs(w, l->nregs), *pos = lw_new_regs(w, l->nregs), *line = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++) {
        key[i] = lw_cast(w, kv->regs[i], s->kdt);
        pos[i] = lw_tile_coord(w, l, i, axis);
        line[i] = lw_mul_imm(w, lw_flat(w, l, i, rowst), s->n);
    }
    if (!lw_sort_in_registers(w, l, axis, s->descending, key, pos, line))
        return 0;
    tj_ref *out_vals = vals ? lw_new_regs(w, l->nregs) : NULL;
    if (vals) {
        tj_dtype vdt = lw_dt(w, vals[0]);
        int vsize = lw_smem_size(vdt);
        lw_smem_begin(w);
        uint32_t buf = lw_smem_alloc(w, (uint64_t)s->n * (uint64_t)s->rows * (uint64_t)vsize);
        for (uint32_t i = 0; i < l->nregs; i++)
            lw_smem_store(w, lw_smem_addr(w, buf, lw_op2(w, TJ_OP_ADD, line[i], lw_tile_coord(w, l, i, axis)), vsize),
                          vals[i]);
        lw_barrier(w);
        for (uint32_t i = 0; i < l->nregs; i++)
            out_vals[i] = lw_smem_load(w, lw_smem_addr(w, buf, lw_op2(w, TJ_OP_ADD, line[i], pos[i]), vsize), vdt);
        lw_smem_end(w);
    }
    for (uint32_t i = 0; s->kdt != lw_src_type(w, w->src->insts[r].args[0])->dtype && i < l->nregs; i++)
        key[i] = lw_op2(w, TJ_OP_NE, key[i], lw_const_int(w, TJ_DT_U8, 0)); /* bool keys */
    set_results(w, r, l, key, out_vals);
    return 1;
}

int lw_lower_sort(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_lay *assigned = &w->lay[r]; /* assign_layouts' sort layout */
    const tj_layout *l = assigned->nelems ? assigned->elems[0] : assigned->one;
    const tj_type_info *ki = lw_src_type(w, in->args[0]);
    int axis = (int)in->imm, has_vals = in->nargs > 1 && in->args[1];
    if (!l || axis < -1 || axis >= ki->rank)
        return lw_error(w, "sort axis %d out of range", axis);
    tj_ref *kregs = lw_regs_in(w, in->args[0], l);
    if (!kregs)
        return 1;
    const lw_val keys_in = {.lay = l, .regs = kregs}, *kv = &keys_in;
    tj_ref *vals = has_vals ? lw_regs_in(w, in->args[1], l) : NULL;
    if (has_vals && !vals)
        return 1;
    sorter s = {.w = w, .descending = (in->flags & TJ_SORT_DESCENDING) != 0};
    s.kdt = ki->dtype == TJ_DT_BOOL ? TJ_DT_U8 : ki->dtype;
    s.ksize = tj_dtype_size(s.kdt);
    int64_t numel = (int64_t)tj_type_numel(w->c, w->src->insts[in->args[0]].type);
    s.n = axis < 0 ? numel : ki->shape[axis];
    s.rows = numel / s.n;
    for (s.big_n = 1; s.big_n < s.n;)
        s.big_n *= 2;
    int64_t strides[TJ_MAX_RANK], rowst[TJ_MAX_RANK];
    tj_shape_strides(l->rank, l->shape, strides);
    for (int d = 0; d < l->rank; d++) /* the line's index: every axis but the sorted one */
        rowst[d] = axis < 0 || d == axis ? 0 : d < axis ? strides[d] / s.n : strides[d];
    tj_dtype vdt = has_vals ? lw_dt(w, vals[0]) : TJ_DT_I32;
    int vsize = lw_smem_size(vdt);
    if ((axis >= 0 || l->rank == 1) && sort_registers(&s, r, axis < 0 ? 0 : axis, kv, vals, rowst))
        return 0;
    lw_smem_begin(w);
    uint64_t slots = (uint64_t)s.rows * (uint64_t)s.big_n + 2;
    s.keys = lw_smem_alloc(w, slots * (uint64_t)s.ksize);
    s.idx = lw_smem_alloc(w, slots * 4);
    s.vals = has_vals ? lw_smem_alloc(w, (uint64_t)numel * (uint64_t)vsize) : 0;
    tj_ref *slot = lw_new_regs(w, l->nregs), *line = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++) { /* replicas write the same */
        tj_ref pos = axis < 0 ? lw_flat(w, l, i, strides) : lw_tile_coord(w, l, i, axis);
        line[i] = lw_mul_imm(w, lw_flat(w, l, i, rowst), s.n);
        slot[i] = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, lw_flat(w, l, i, rowst), s.big_n), pos);
        lw_smem_store(w, key_addr(&s, slot[i]), lw_cast(w, kv->regs[i], s.kdt));
        lw_smem_store(w, idx_addr(&s, slot[i]), pos);
        if (has_vals)
            lw_smem_store(w, lw_smem_addr(w, s.vals, lw_op2(w, TJ_OP_ADD, line[i], pos), vsize), vals[i]);
    }
    write_padding(&s);
    lw_barrier(w);
    if (s.big_n > 1)
        network(&s);
    tj_ref *keys = lw_new_regs(w, l->nregs), *out_vals = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++) {
        keys[i] = lw_smem_load(w, key_addr(&s, slot[i]), s.kdt);
        if (ki->dtype == TJ_DT_BOOL)
            keys[i] = lw_op2(w, TJ_OP_NE, keys[i], lw_const_int(w, TJ_DT_U8, 0));
        if (has_vals) {
            tj_ref from = lw_op2(w, TJ_OP_ADD, line[i], lw_smem_load(w, idx_addr(&s, slot[i]), TJ_DT_I32));
            out_vals[i] = lw_smem_load(w, lw_smem_addr(w, s.vals, from, vsize), vdt);
        }
    }
    lw_smem_end(w);
    set_results(w, r, l, keys, has_vals ? out_vals : NULL);
    return 0;
}
