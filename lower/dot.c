/* dot with FMAs, where the matrix atom does not apply (lower/mma.c): both operands are read from
 * shared memory, row-major, and every thread accumulates its own output
 * registers in a SIMT loop over k, loading each operand element it needs
 * once per k. Accumulation runs in the result's dtype (f16/bf16 and tf32
 * inputs in f32, i8 in i32), k in order, as the interpreter does.
 *
 * An operand that a copy ring feeds (lower/ring.c, lw_fma_ring_plan) is
 * read from its slot, rows padded by 16 bytes; the others are staged from
 * registers for the product. With both in rings the product stages
 * nothing: the ring's one wait and barrier an iteration replace the
 * stores and the two barriers around them, and no registers hold the
 * next tiles.
 *
 * In a loop, an operand fixed across it (attention's query block) is
 * staged once before it, into a region the loop pins (lw_fma_pin_fixed);
 * one staged every iteration goes into a region of the dot's own where
 * the loop pins one (lw_mma_pin_loop: no barrier before its stores). */
#include "lower/lower.h"
#include "passes/pass_util.h"

enum { MAX_UNROLLED_FMAS = 1024, VEC_ELEMS = 4 /* 16 bytes of 4-byte elements */ };

typedef struct dot_shape {
    int rank, batched;
    int64_t batch, m, k, n;
} dot_shape;

/* Where the products read an operand: element (i, kk) of a at i * outer +
 * kk * step of its buffer, (kk, j) of b at j * outer + kk * step; a ring
 * slot sits `shift` bytes past buf (TJ_NONE: a staged buffer). */
typedef struct fma_src {
    uint32_t buf;
    tj_ref shift;
    int64_t outer, step;
    tj_dtype dt;
} fma_src;

/* a's staged rows: padded by 16 bytes as a ring slot's are, so that the
 * rows a warp reads at once start at distinct banks */
static int64_t staged_lda(const dot_shape *d, tj_dtype dt)
{
    int size = lw_smem_size(dt);
    return d->k + (16 % size == 0 ? 16 / size : 0);
}

/* Operand o staged: row-major, its rows (all axes but the last, flattened)
 * ld elements apart (a's padded, b's n). */
static int64_t staged_rows(const dot_shape *d, int o) { return d->batch * (o == 0 ? d->m : d->k); }

static int64_t staged_ld(const dot_shape *d, int o, tj_dtype dt) { return o == 0 ? staged_lda(d, dt) : d->n; }

static uint64_t staged_bytes(const dot_shape *d, int o, tj_dtype dt)
{
    uint64_t bytes = (uint64_t)(staged_rows(d, o) * staged_ld(d, o, dt) * lw_smem_size(dt));
    return (bytes + 15) / 16 * 16; /* as lw_smem_alloc rounds */
}

/* Operand o (registers v) staged as vector stores where a thread's
 * elements are contiguous, at buf + shift (replicas write the same). */
static fma_src stage(lw *w, const dot_shape *d, const lw_val *v, int o, uint32_t buf, tj_ref shift)
{
    tj_dtype dt = lw_dt(w, v->regs[0]);
    int64_t ld = staged_ld(d, o, dt);
    lw_mma_store_tile_at(w, v->lay, v->regs, buf, shift, ld);
    return o == 0 ? (fma_src){buf, shift, ld, 1, dt} : (fma_src){buf, shift, 1, ld, dt};
}

static dot_shape shape_of(lw *w, tj_ref r)
{
    const tj_type_info *ri = lw_src_type(w, r), *ai = lw_src_type(w, w->src->insts[r].args[0]);
    dot_shape d = {.rank = ri->rank, .batched = ri->rank == 3, .batch = 1};
    if (d.rank != 2 && d.rank != 3)
        return d;
    d.batch = d.batched ? ri->shape[0] : 1;
    d.m = ri->shape[d.rank - 2];
    d.n = ri->shape[d.rank - 1];
    d.k = ai->shape[d.rank - 1];
    return d;
}

/* ---- pinned operands ---------------------------------------------------------- */

/* Dot r on FMAs at the top level of loop body `body`. */
static int fma_dot_in(lw *w, tj_ref r, tj_block_id body)
{
    const tj_inst *in = &w->src->insts[r];
    lw_mma p;
    if (in->op != TJ_OP_DOT || in->block != body || lw_mma_plan(w, r, &p))
        return 0;
    int rank = lw_src_type(w, r)->rank;
    return rank == 2 || rank == 3;
}

/* Operand o of such a dot is defined outside the loop (no ring holds it). */
static int fixed_in(lw *w, tj_ref r, int o, tj_block_id body)
{
    return !lw_ring_holds(w, r, o) && lw_defined_outside(w, w->src->insts[r].args[o], body);
}

void lw_fma_pin_fixed(lw *w, tj_ref loop)
{
    tj_block_id body = tj_region_of(w->src, loop, 0);
    const tj_block *blk = body ? &w->src->blocks[body] : NULL;
    for (uint32_t i = 0; blk && !w->no_pins && i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (!fma_dot_in(w, r, body))
            continue;
        dot_shape d = shape_of(w, r);
        for (int o = 0; o < 2; o++) {
            uint64_t top = (uint64_t)w->smem_pinned + staged_bytes(&d, o, lw_src_type(w, w->src->insts[r].args[o])->dtype);
            if (!fixed_in(w, r, o, body) || top > w->smem_limit / 2)
                continue; /* staged in every iteration instead */
            w->fixed_region[2 * r + (uint32_t)o] = w->smem_pinned + 1;
            w->smem_pinned = (uint32_t)top;
            w->pinned_any = 1;
            if (w->smem_pinned > w->smem_bytes)
                w->smem_bytes = w->smem_pinned;
        }
    }
}

uint64_t lw_fma_region_bytes(lw *w, tj_ref r, tj_block_id body)
{
    if (!fma_dot_in(w, r, body))
        return 0;
    dot_shape d = shape_of(w, r);
    uint64_t bytes = 0;
    for (int o = 0; o < 2; o++)
        if (!lw_ring_holds(w, r, o) && !w->fixed_region[2 * r + (uint32_t)o])
            bytes += staged_bytes(&d, o, lw_src_type(w, w->src->insts[r].args[o])->dtype);
    return bytes;
}

/* Operand o (registers v), fixed across the loop, into its pinned region
 * before the loop: after a barrier (earlier reads of those bytes), published
 * by one. Plain barriers: the loop's own state of shared memory is not
 * changed by code before it. */
static fma_src stage_fixed(lw *w, const dot_shape *d, const lw_val *v, int o, uint32_t buf)
{
    tj_block_id here = lw_before_loop(w);
    lw_emit(w, TJ_OP_BARRIER, TJ_TYPE_NONE, NULL, 0);
    fma_src s = stage(w, d, v, o, buf, TJ_NONE);
    lw_emit(w, TJ_OP_BARRIER, TJ_TYPE_NONE, NULL, 0);
    lw_back_in_loop(w, here);
    return s;
}

/* Operand o's slot when a ring feeds it (its plan: lw_fma_ring_plan). */
static int ring_src(lw *w, tj_ref r, int o, fma_src *s)
{
    lw_mma p;
    if (!lw_ring_feeds(w, r) || !lw_fma_ring_plan(w, r, &p) || !lw_ring_operand(w, r, o, &s->buf, &s->shift))
        return 0;
    s->dt = p.in;
    s->outer = o == 0 ? p.lda : 1;
    s->step = o == 0 ? 1 : p.ldb;
    return 1;
}

/* An operand element at index base + k * step of its buffer. */
static tj_ref operand(lw *w, const fma_src *s, tj_ref base, tj_ref k, tj_dtype acc)
{
    int size = lw_smem_size(s->dt);
    tj_ref at = lw_smem_addr(w, s->buf, lw_op2(w, TJ_OP_ADD, base, lw_mul_imm(w, k, s->step)), size);
    return lw_cast(w, lw_smem_load(w, lw_shifted(w, at, s->shift), s->dt), acc);
}

static tj_ref multiply_add(lw *w, tj_ref a, tj_ref b, tj_ref c)
{
    if (tj_dtype_is_float(lw_dt(w, c))) {
        tj_ref args[3] = {a, b, c};
        return lw_emit(w, TJ_OP_FMA, w->dst->insts[c].type, args, 3);
    }
    return lw_op2(w, TJ_OP_ADD, c, lw_op2(w, TJ_OP_MUL, a, b));
}

/* The operands not in rings: from their pinned regions where fixed across
 * the loop, the rest staged, in the dot's region of the loop where it has
 * one (no barrier before), else in a scope of shared memory (after a
 * barrier where reads may pend), before one barrier; returns whether it
 * opened a scope. */
static int stage_rest(lw *w, tj_ref r, const dot_shape *d, const lw_val *a, const lw_val *b, fma_src *as, fma_src *bs,
                      int aring, int bring)
{
    const lw_val *v[2] = {a, b};
    fma_src *src[2] = {as, bs};
    int staged[2] = {!aring, !bring}, scoped = 0;
    for (int o = 0; o < 2; o++) {
        uint32_t pin = w->fixed_region[2 * r + (uint32_t)o];
        if (staged[o] && pin && w->loop) {
            *src[o] = stage_fixed(w, d, v[o], o, pin - 1);
            staged[o] = 0;
        }
    }
    if (!staged[0] && !staged[1])
        return 0;
    tj_ref shift = TJ_NONE;
    if (w->dot_region[r]) {
        w->smem_top = w->dot_region[r] - 1;
        shift = lw_mma_region_shift(w, r);
    } else {
        lw_smem_begin(w);
        scoped = 1;
    }
    for (int o = 0; o < 2; o++) {
        if (!staged[o])
            continue;
        uint64_t bytes = staged_bytes(d, o, lw_dt(w, v[o]->regs[0]));
        *src[o] = stage(w, d, v[o], o, lw_smem_alloc(w, bytes), shift);
    }
    lw_barrier(w);
    return scoped;
}

/* Which registers load what, per register i: the first register of its
 * row of a (afirst[i] == i: it loads, at element arow[i] + k) and of its
 * column of b (bfirst, bcol). b's loads run as vectors of VEC_ELEMS
 * columns where a thread's columns are contiguous and 16-byte aligned
 * (bvec[i]: the run's width at its head, 0 inside one; bmember[head *
 * VEC_ELEMS + j]: its j-th register); a's by vectors of avec k steps. */
typedef struct fma_regs {
    uint32_t *afirst, *bfirst, *bvec, *bmember;
    tj_ref *arow, *bcol;
    int avec;
} fma_regs;

/* Whether the registers from head on, in order, hold a run of VEC_ELEMS
 * columns of b at a column offset that is a multiple of it (the thread's
 * base along n is a multiple of espt); fills the run's members. */
static int column_run(const tj_layout *l, const fma_regs *fr, uint32_t head, int fb, int fn, uint32_t *members)
{
    const tj_layout *root = l->root;
    int32_t h[TJ_MAX_RANK], idx[TJ_MAX_RANK];
    tj_layout_reg_index(l, head, h);
    int32_t off = tj_layout_roff(l, fn, h[fn]);
    if (root->kind != TJ_LAYOUT_BLOCKED || root->espt[fn] % VEC_ELEMS || off % VEC_ELEMS ||
        tj_layout_axis_wraps(l, fn))
        return 0;
    uint32_t n = 0;
    for (uint32_t i = head; i < l->nregs && n < VEC_ELEMS; i++) {
        if (fr->bfirst[i] != i)
            continue;
        tj_layout_reg_index(l, i, idx);
        if ((fb >= 0 && idx[fb] != h[fb]) || tj_layout_roff(l, fn, idx[fn]) != off + (int32_t)n)
            return 0;
        members[n++] = i;
    }
    return n == VEC_ELEMS;
}

static int fma_registers(lw *w, const tj_layout *l, const dot_shape *d, const fma_src *as, const fma_src *bs,
                         fma_regs *fr)
{
    uint32_t n = l->nregs;
    fr->arow = lw_new_regs(w, n);
    fr->bcol = lw_new_regs(w, n);
    fr->afirst = tj_alloc(w->c, sizeof *fr->afirst * n);
    fr->bfirst = tj_alloc(w->c, sizeof *fr->bfirst * n);
    fr->bvec = tj_alloc(w->c, sizeof *fr->bvec * n);
    fr->bmember = tj_alloc(w->c, sizeof *fr->bmember * n * VEC_ELEMS);
    int fb = d->batched ? l->frame_axis[0] : -1, fm = l->frame_axis[d->rank - 2], fn = l->frame_axis[d->rank - 1];
    uint32_t nb = fb >= 0 ? (uint32_t)l->fregs[fb] : 1;
    uint32_t *aseen = tj_alloc(w->c, sizeof *aseen * nb * (uint32_t)l->fregs[fm]);
    uint32_t *bseen = tj_alloc(w->c, sizeof *bseen * nb * (uint32_t)l->fregs[fn]);
    for (uint32_t i = 0; i < n; i++) {
        int32_t idx[TJ_MAX_RANK];
        tj_layout_reg_index(l, i, idx);
        uint32_t ib = fb >= 0 ? (uint32_t)idx[fb] : 0;
        uint32_t ka = ib * (uint32_t)l->fregs[fm] + (uint32_t)idx[fm], kb = ib * (uint32_t)l->fregs[fn] + (uint32_t)idx[fn];
        fr->afirst[i] = aseen[ka] ? aseen[ka] - 1 : i;
        fr->bfirst[i] = bseen[kb] ? bseen[kb] - 1 : i;
        aseen[ka] = fr->afirst[i] + 1;
        bseen[kb] = fr->bfirst[i] + 1;
        tj_ref bb = d->batched ? lw_tile_coord(w, l, i, 0) : lw_const_int(w, TJ_DT_I32, 0);
        if (fr->afirst[i] == i) /* rings feed unbatched dots only (lower/ring.c) */
            fr->arow[i] = lw_mul_imm(w, lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, bb, d->m), lw_tile_coord(w, l, i, d->rank - 2)),
                                     as->outer);
        if (fr->bfirst[i] == i)
            fr->bcol[i] = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, bb, d->k * d->n),
                                 lw_mul_imm(w, lw_tile_coord(w, l, i, d->rank - 1), bs->outer));
    }
    int bvec_ok = bs->outer == 1 && lw_smem_size(bs->dt) == 4 && (bs->step * 4) % 16 == 0 && (d->k * d->n) % VEC_ELEMS == 0;
    uint32_t inside = 0; /* registers of the current run still to pass */
    for (uint32_t i = 0; i < n; i++) {
        if (fr->bfirst[i] != i)
            continue;
        if (inside) {
            inside--;
            continue;
        }
        int run = bvec_ok && column_run(l, fr, i, fb, fn, fr->bmember + (size_t)i * VEC_ELEMS);
        fr->bvec[i] = run ? VEC_ELEMS : 1;
        inside = run ? VEC_ELEMS - 1 : 0;
    }
    return w->err;
}

/* `width` consecutive elements of an operand from index base + k * step, as
 * one vector load when width > 1 (16-byte aligned: fma_registers). */
static void load_run(lw *w, const fma_src *s, tj_ref base, tj_ref k, int width, tj_dtype acc, tj_ref *out)
{
    if (width == 1) {
        out[0] = operand(w, s, base, k, acc);
        return;
    }
    tj_ref at = lw_smem_addr(w, s->buf, lw_op2(w, TJ_OP_ADD, base, lw_mul_imm(w, k, s->step)), lw_smem_size(s->dt));
    tj_ref addr = lw_shifted(w, at, s->shift);
    int32_t n = width;
    tj_ref v = lw_emit(w, TJ_OP_LD_SHARED, tj_type_tile(w->c, s->dt, 1, &n), &addr, 1);
    for (int e = 0; e < width; e++) {
        tj_ref x = lw_emit(w, TJ_OP_EXTRACT, lw_sty(w, s->dt), &v, 1);
        w->dst->insts[x].imm = e;
        out[e] = lw_cast(w, x, acc);
    }
}

/* fr->avec k steps from k0: a's values of all of them (a vector a row
 * when avec > 1), then per step b's and the products, k in order. */
static void k_steps(lw *w, const tj_layout *l, const fma_src *as, const fma_src *bs, const fma_regs *fr, tj_ref k0,
                    tj_dtype acc, tj_ref *cur)
{
    uint32_t n = l->nregs;
    tj_ref *av = lw_new_regs(w, n * (uint32_t)fr->avec), *bv = lw_new_regs(w, n), run[VEC_ELEMS];
    for (uint32_t i = 0; i < n; i++) {
        if (fr->afirst[i] != i)
            continue;
        /* a vector along k reads the row's steps k0 .. k0 + avec - 1 (step 1) */
        load_run(w, as, lw_op2(w, TJ_OP_ADD, fr->arow[i], k0), lw_const_int(w, TJ_DT_I32, 0), fr->avec, acc, run);
        for (int e = 0; e < fr->avec; e++)
            av[(uint32_t)e * n + i] = run[e];
    }
    for (int e = 0; e < fr->avec; e++) {
        tj_ref k = lw_add_imm(w, k0, e);
        for (uint32_t i = 0; i < n; i++) {
            if (fr->bfirst[i] != i || !fr->bvec[i])
                continue;
            load_run(w, bs, fr->bcol[i], k, (int)fr->bvec[i], acc, run);
            for (uint32_t j = 0; j < fr->bvec[i]; j++)
                bv[fr->bvec[i] > 1 ? fr->bmember[(size_t)i * VEC_ELEMS + j] : i] = run[j];
        }
        for (uint32_t i = 0; i < n; i++)
            cur[i] = multiply_add(w, av[(uint32_t)e * n + fr->afirst[i]], bv[fr->bfirst[i]], cur[i]);
    }
}

/* The register block of an FMA product that accumulates into a loop's
 * carried value, on CUDA (4-byte elements, a tile the block covers
 * exactly): runs of VEC_ELEMS columns, lanes 4 rows x 8 runs, and the
 * warps split so that a thread's R x C outputs take the fewest loads: a
 * vector a row of a per 4 k steps and one per run of b a step, R + C per
 * 4 steps (ties: the fewer operand registers, 4 R + C). 128 x 128 at 8
 * warps: 8 x 8 (16 loads per 4 steps, where the canonical 16 x 4 takes
 * 20); 64 x 64 at 4: 4 x 8 (12, as 8 x 4, with 24 operand registers
 * instead of 36). Any layout sums each output over k in order, so the
 * bits do not change. NULL: the canonical layout. */
const tj_layout *lw_fma_layout(lw *w, tj_ref r)
{
    const tj_type_info *ti = lw_src_type(w, r);
    lw_mma atom;
    if (w->target != TJ_LOWER_CUDA || ti->rank != 2 || lw_smem_size(ti->dtype) != 4 || lw_mma_plan(w, r, &atom))
        return NULL;
    const int32_t spt[2] = {1, VEC_ELEMS}, tpw[2] = {4, 8};
    const int8_t order[2] = {1, 0};
    int32_t best[2] = {0, 0};
    int64_t best_cost = -1;
    for (int32_t wm = 1; wm <= w->nwarps; wm *= 2) {
        int32_t wn = w->nwarps / wm, cover_m = tpw[0] * wm, cover_n = VEC_ELEMS * tpw[1] * wn;
        if (ti->shape[0] % cover_m || ti->shape[1] % cover_n)
            continue;
        int64_t rows = ti->shape[0] / cover_m, cols = (int64_t)ti->shape[1] / cover_n * VEC_ELEMS;
        int64_t cost = (rows + cols) * 1024 + 4 * rows + cols;
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best[0] = wm;
            best[1] = wn;
        }
    }
    return best_cost < 0 ? NULL : lw_intern(w, tj_layout_blocked(w->c, 2, ti->shape, spt, tpw, best, order));
}

int lw_lower_dot(lw *w, tj_ref r)
{
    lw_mma plan;
    if (lw_mma_plan(w, r, &plan))
        return lw_lower_mma(w, r, &plan);
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *l = lw_layout_of(w, r);
    const tj_type_info *ri = lw_src_type(w, r);
    const lw_val *a = lw_val_of(w, in->args[0]), *b = lw_val_of(w, in->args[1]);
    dot_shape d = shape_of(w, r);
    fma_src as = {0}, bs = {0};
    int aring = ring_src(w, r, 0, &as), bring = ring_src(w, r, 1, &bs);
    if (w->err)
        return 1;
    if (!l || (!aring && !a->regs) || (!bring && !b->regs) || (d.rank != 2 && d.rank != 3))
        return lw_error(w, "internal error: malformed dot");
    tj_dtype acc_dt = ri->dtype;
    tj_ref *acc = in->nargs > 2 && in->args[2] ? lw_regs_in(w, in->args[2], l) : NULL;
    if (in->nargs > 2 && in->args[2] && !acc)
        return 1;
    tj_ref *init = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        init[i] = acc ? acc[i] : lw_const_int(w, acc_dt, 0);
    int scoped = stage_rest(w, r, &d, a, b, &as, &bs, aring, bring);
    lw_ring_issue(w); /* the next tiles' copies, while these products run */
    fma_regs fr;
    if (fma_registers(w, l, &d, &as, &bs, &fr))
        return 1;
    int64_t unroll = tj_config_value(w->src, TJ_PARAM_UNROLL, TJ_MAX_UNROLL);
    if (unroll < 1 || unroll > TJ_MAX_UNROLL) /* the front end checks its kernels; IR text may hold any */
        return lw_error(w, "unroll must be from 1 to %d, not %lld", TJ_MAX_UNROLL, (long long)unroll);
    while (unroll > 1 && (d.k % unroll || (uint64_t)unroll * l->nregs > MAX_UNROLLED_FMAS))
        unroll /= 2;
    if (unroll > d.k)
        unroll = d.k;
    /* a's rows by vectors along k where a run starts at a multiple of 4 */
    fr.avec = as.step == 1 && lw_smem_size(as.dt) == 4 && unroll % VEC_ELEMS == 0 && (as.outer * 4) % 16 == 0
                  ? VEC_ELEMS : 1;
    /* the k steps in runs of `unroll`, a loop over the runs unless one run is all */
    int looped = unroll < d.k;
    lw_loop lp;
    tj_ref zero = lw_const_int(w, TJ_DT_I32, 0);
    if (looped)
        lw_loop_begin(w, &lp, zero, lw_const_int(w, TJ_DT_I32, d.k), lw_const_int(w, TJ_DT_I32, unroll), init,
                      l->nregs);
    tj_ref *cur = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        cur[i] = looped ? lp.args[i] : init[i];
    for (int64_t g = 0; g < unroll; g += fr.avec)
        k_steps(w, l, &as, &bs, &fr, lw_add_imm(w, looped ? lp.iv : zero, g), acc_dt, cur);
    tj_ref *out = looped ? lw_loop_end(w, &lp, cur) : cur;
    if (scoped)
        lw_smem_end(w);
    lw_set_regs(w, r, l, out);
    return 0;
}
