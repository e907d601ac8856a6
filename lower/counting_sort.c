/* counting_sort: the stable order of a 1-D tile by its low bits, ranked as
 * CUB's BlockRadixRankMatch ranks radix digits. The buckets go to shared
 * memory; warp w takes the w-th contiguous chunk of the tile and walks it
 * 32 elements a step: lanes holding one bucket find each other with a
 * ballot per bucket bit, each counts the peers below it, and the highest
 * peer adds their number to the warp's counter of that bucket (two
 * barriers a step keep the read before the write: the warp's own on CUDA,
 * the program's on Metal). The counters, made
 * exclusive over warps and the totals scanned over buckets, give every
 * element its place; its position is written there, and the results are
 * read back in their layouts. No atomics: Metal and PTX lower it alike,
 * except where only the counts are read on CUDA: each thread adds its
 * elements to the bucket counters with red.shared (no ranks, no warp
 * steps, no scan). */
#include "lower/lower.h"

typedef struct csort {
    lw *w;
    int64_t n, nb, chunk; /* elements, buckets, elements per warp (a multiple of 32) */
    int bits;
    uint32_t dbuf, rbuf, obuf, hist, total, scan[2]; /* shared buffers */
    tj_dtype pos_dt;    /* ranks and positions in rbuf and obuf: u16 when they fit (Metal's 32 KiB) */
    int want_order;     /* the order is used (else only the counts: no ranks kept, no placement) */
} csort;

static tj_ref i32(lw *w, int64_t v) { return lw_const_int(w, TJ_DT_I32, v); }
/* The slot past a buffer's `count` that this thread writes where it has
 * nothing to write (stores take no predicate; one slot each: no race). */
static tj_ref spare(lw *w, int64_t count) { return lw_add_imm(w, lw_tid(w), count); }
static tj_ref u32(lw *w, int64_t v) { return lw_const_int(w, TJ_DT_U32, v); }
static tj_ref word(csort *s, uint32_t buf, tj_ref i) { return lw_smem_addr(s->w, buf, i, 4); }
/* the buckets are bytes, ranks and positions pos_dt */
static tj_ref digit_at(csort *s, tj_ref i) { return lw_smem_addr(s->w, s->dbuf, i, 1); }
static tj_ref pos_at(csort *s, uint32_t buf, tj_ref i) { return lw_smem_addr(s->w, buf, i, lw_smem_size(s->pos_dt)); }
static void store_pos(csort *s, uint32_t buf, tj_ref i, tj_ref v)
{
    lw_smem_store(s->w, pos_at(s, buf, i), lw_cast(s->w, v, s->pos_dt));
}
static tj_ref load_pos(csort *s, uint32_t buf, tj_ref i)
{
    return lw_cast(s->w, lw_smem_load(s->w, pos_at(s, buf, i), s->pos_dt), TJ_DT_I32);
}

static tj_ref popc(lw *w, tj_ref x) { return lw_emit(w, TJ_OP_POPC, lw_sty(w, TJ_DT_U32), &x, 1); }
static tj_ref ballot(lw *w, tj_ref p) { return lw_emit(w, TJ_OP_BALLOT, lw_sty(w, TJ_DT_U32), &p, 1); }

/* x where `valid` holds (TJ_NONE: always), else `other` */
static tj_ref if_valid(lw *w, tj_ref valid, tj_ref x, tj_ref other)
{
    return valid ? lw_select(w, valid, x, other) : x;
}

/* Element j * 32 + lane of this warp's chunk, whether it exists (TJ_NONE
 * when the warps' chunks cover the tile exactly: every element does), and
 * its index made safe to address with (0 when it does not). */
static tj_ref element(csort *s, tj_ref j, tj_ref *valid, tj_ref *safe)
{
    lw *w = s->w;
    tj_ref e = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, lw_warp(w), s->chunk),
                      lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, j, 32), lw_lane(w)));
    *valid = s->chunk * w->nwarps == s->n ? TJ_NONE : lw_op2(w, TJ_OP_LT, e, i32(w, s->n));
    *safe = if_valid(w, *valid, e, i32(w, 0));
    return e;
}

/* Between the reads and the writes of the warp's own counters: on CUDA the
 * warp's barrier (only the warp touches them, so its other warps run on);
 * on Metal the program's (the emulator's race check knows threadgroup
 * barriers only). */
static void warp_sync(lw *w)
{
    if (w->target == TJ_LOWER_CUDA)
        lw_emit(w, TJ_OP_WARP_BARRIER, TJ_TYPE_NONE, NULL, 0);
    else
        lw_barrier(w);
}

/* One step: the element's rank among the earlier ones of its bucket in
 * this warp goes to rbuf, and the warp's counter of the bucket grows. */
static void rank_step(csort *s, tj_ref j)
{
    lw *w = s->w;
    tj_ref valid, safe;
    element(s, j, &valid, &safe);
    tj_ref d = lw_cast(w, lw_smem_load(w, digit_at(s, safe), TJ_DT_U8), TJ_DT_U32);
    /* a ballot per bucket bit, each lane keeping the lanes that agree with
     * its own bit; lanes past the end (their d is element 0's) drop out
     * through the first ballot (none where every element exists). One match.any in place of the bit ballots
     * was slower on the H200 (bench/NOTES.md). */
    tj_ref peers = valid ? ballot(w, valid) : u32(w, 0xffffffff);
    for (int b = 0; b < s->bits; b++) {
        tj_ref set = lw_op2(w, TJ_OP_NE, lw_op2(w, TJ_OP_AND, d, u32(w, (int64_t)1 << b)), u32(w, 0));
        tj_ref vote = ballot(w, set);
        peers = lw_op2(w, TJ_OP_AND, peers, lw_select(w, set, vote, lw_op1(w, TJ_OP_NOT, vote)));
    }
    tj_ref lane_bit = lw_op2(w, TJ_OP_SHL, u32(w, 1), lw_cast(w, lw_lane(w), TJ_DT_U32));
    tj_ref below_mask = lw_op2(w, TJ_OP_SUB, lane_bit, u32(w, 1));
    tj_ref below = lw_cast(w, popc(w, lw_op2(w, TJ_OP_AND, peers, below_mask)), TJ_DT_I32);
    tj_ref upto = lw_op2(w, TJ_OP_OR, lw_op2(w, TJ_OP_SHL, below_mask, u32(w, 1)), u32(w, 1));
    tj_ref highest = lw_op2(w, TJ_OP_EQ, lw_op2(w, TJ_OP_AND, peers, lw_op1(w, TJ_OP_NOT, upto)), u32(w, 0));
    tj_ref slot = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, lw_warp(w), s->nb), lw_cast(w, d, TJ_DT_I32));
    tj_ref base = lw_smem_load(w, word(s, s->hist, slot), TJ_DT_I32);
    warp_sync(w); /* every peer has read the counter */
    lw_smem_store(w, word(s, s->hist, if_valid(w, lw_and(w, valid, highest), slot, spare(w, w->nwarps * s->nb))),
                  lw_add_imm(w, lw_op2(w, TJ_OP_ADD, base, below), 1));
    if (s->want_order)
        store_pos(s, s->rbuf, if_valid(w, valid, safe, spare(w, s->n)), lw_op2(w, TJ_OP_ADD, base, below));
    warp_sync(w);
}

/* A loop over the steps of a warp's chunk, `fn` its body, and the
 * program's barrier after it. */
static void steps(csort *s, void (*fn)(csort *, tj_ref))
{
    lw *w = s->w;
    lw_loop lp;
    lw_loop_begin(w, &lp, i32(w, 0), i32(w, s->chunk / 32), i32(w, 1), NULL, 0);
    fn(s, lp.iv);
    /* no step reads what another step wrote through a program's barrier:
     * the rank steps order their warp's counters themselves, the
     * placement writes only obuf, which no step reads */
    w->smem_dirty = 0;
    lw_loop_end(w, &lp, NULL);
    lw_barrier(w);
}

/* Bucket b's slot for this thread's k-th turn, or its spare slot. */
static tj_ref bucket_of(csort *s, uint32_t k, tj_ref *valid)
{
    lw *w = s->w;
    tj_ref b = lw_add_imm(w, lw_tid(w), (int64_t)k * w->nthreads);
    *valid = (int64_t)(k + 1) * w->nthreads <= s->nb ? TJ_NONE : lw_op2(w, TJ_OP_LT, b, i32(w, s->nb));
    return if_valid(w, *valid, b, spare(w, s->nb));
}

/* Warp wi's counter of bucket b (this thread's spare slot where b is not a
 * bucket). */
static tj_ref warp_counter(csort *s, tj_ref b, tj_ref valid, int wi)
{
    lw *w = s->w;
    tj_ref slot = lw_add_imm(w, b, (int64_t)wi * s->nb);
    return word(s, s->hist, if_valid(w, valid, slot, spare(w, w->nwarps * s->nb)));
}

/* The warps' counters made exclusive (each warp's start within its
 * bucket), the totals to `total`, then, where the order is used, scanned
 * over buckets (Hillis and Steele, double-buffered) and each bucket's
 * start (inclusive sum less total) added to its warps' counters, so that
 * a placement step reads one word for an element's start. */
static void bucket_starts(csort *s)
{
    lw *w = s->w;
    tj_ref valid;
    for (uint32_t k = 0; (int64_t)k * w->nthreads < s->nb; k++) {
        tj_ref b = bucket_of(s, k, &valid), run = i32(w, 0);
        for (int wi = 0; wi < w->nwarps; wi++) {
            tj_ref at = warp_counter(s, b, valid, wi);
            tj_ref h = lw_smem_load(w, at, TJ_DT_I32);
            lw_smem_store(w, at, run);
            run = lw_op2(w, TJ_OP_ADD, run, h);
        }
        lw_smem_store(w, word(s, s->total, b), run);
    }
    lw_barrier(w);
    if (!s->want_order) /* the scan places elements only */
        return;
    uint32_t from = s->total;
    for (int64_t d = 1, out = 0; d < s->nb; d *= 2, out = !out) {
        for (uint32_t k = 0; (int64_t)k * w->nthreads < s->nb; k++) {
            tj_ref b = bucket_of(s, k, &valid), far = lw_and(w, valid, lw_op2(w, TJ_OP_GE, b, i32(w, d)));
            tj_ref left = lw_smem_load(w, word(s, from, lw_select(w, far, lw_add_imm(w, b, -d), b)), TJ_DT_I32);
            tj_ref sum = lw_op2(w, TJ_OP_ADD, lw_smem_load(w, word(s, from, b), TJ_DT_I32),
                                lw_select(w, far, left, i32(w, 0)));
            lw_smem_store(w, word(s, s->scan[out], b), sum);
        }
        lw_barrier(w);
        from = s->scan[out];
    }
    for (uint32_t k = 0; (int64_t)k * w->nthreads < s->nb; k++) {
        tj_ref b = bucket_of(s, k, &valid);
        tj_ref start = lw_op2(w, TJ_OP_SUB, lw_smem_load(w, word(s, from, b), TJ_DT_I32),
                              lw_smem_load(w, word(s, s->total, b), TJ_DT_I32));
        for (int wi = 0; wi < w->nwarps; wi++) {
            tj_ref at = warp_counter(s, b, valid, wi);
            lw_smem_store(w, at, lw_op2(w, TJ_OP_ADD, lw_smem_load(w, at, TJ_DT_I32), start));
        }
    }
    lw_barrier(w);
}

/* One step of the placement: position e goes to its place in the order. */
static void place_step(csort *s, tj_ref j)
{
    lw *w = s->w;
    tj_ref valid, safe, e = element(s, j, &valid, &safe);
    tj_ref d = lw_cast(w, lw_smem_load(w, digit_at(s, safe), TJ_DT_U8), TJ_DT_I32);
    tj_ref start = lw_smem_load(w, word(s, s->hist, lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, lw_warp(w), s->nb), d)),
                                TJ_DT_I32); /* the bucket's start and the earlier warps' counts */
    tj_ref place = lw_op2(w, TJ_OP_ADD, start, load_pos(s, s->rbuf, safe));
    store_pos(s, s->obuf, if_valid(w, valid, place, spare(w, s->n)), e);
}

/* Whether the source kernel reads element k of r's results (dce has run:
 * a projection still in a block is used; one dce removed keeps its slot in
 * insts, with no block). */
static int projected(const lw *w, tj_ref r, int64_t k)
{
    for (tj_ref i = 1; i < w->src->ninsts; i++) {
        const tj_inst *in = &w->src->insts[i];
        if (in->block && in->op == TJ_OP_PROJ && in->args[0] == r && in->imm == k)
            return 1;
    }
    return 0;
}

static tj_ref *result(csort *s, tj_ref r, uint32_t k, lw_val *v, uint32_t buf, tj_dtype dt)
{
    lw *w = s->w;
    const tj_layout *l = w->lay[r].nelems == 2 ? w->lay[r].elems[k] : NULL;
    if (!l)
        return lw_fail(w, "internal error: no layout for the results of counting_sort");
    tj_ref *regs = lw_new_regs(w, l->nregs);
    for (uint32_t i = 0; i < l->nregs; i++)
        regs[i] = lw_cast(w, lw_smem_load(w, lw_smem_addr(w, buf, lw_tile_coord(w, l, i, 0), lw_smem_size(dt)), dt),
                          TJ_DT_I32);
    v->elems[k] = (lw_val){.lay = l, .regs = regs};
    return regs;
}

/* The shared buffers (each with a spare slot per thread); ranks and the
 * order only when the order is used. */
static int alloc_buffers(csort *s)
{
    lw *w = s->w;
    uint64_t n = (uint64_t)s->n, nb = (uint64_t)s->nb, t = w->nthreads;
    s->pos_dt = s->n <= 65536 ? TJ_DT_U16 : TJ_DT_I32;
    uint64_t psize = (uint64_t)lw_smem_size(s->pos_dt);
    s->dbuf = lw_smem_alloc(w, n);
    s->rbuf = s->want_order ? lw_smem_alloc(w, psize * (n + t)) : 0;
    s->obuf = s->want_order ? lw_smem_alloc(w, psize * (n + t)) : 0;
    s->hist = lw_smem_alloc(w, 4 * (nb * (uint64_t)w->nwarps + t));
    s->total = lw_smem_alloc(w, 4 * (nb + t));
    s->scan[0] = lw_smem_alloc(w, 4 * (nb + t));
    s->scan[1] = lw_smem_alloc(w, 4 * (nb + t));
    return w->err;
}

/* The warps' counters to zero, and this thread's spare one (bucket_starts
 * reads it). */
static void zero_counters(csort *s)
{
    lw *w = s->w;
    int64_t count = s->nb * w->nwarps;
    lw_smem_store(w, word(s, s->hist, spare(w, count)), i32(w, 0));
    for (uint32_t k = 0; (int64_t)k * w->nthreads < count; k++) {
        tj_ref c = lw_add_imm(w, lw_tid(w), (int64_t)k * w->nthreads);
        tj_ref valid = (int64_t)(k + 1) * w->nthreads <= count ? TJ_NONE : lw_op2(w, TJ_OP_LT, c, i32(w, count));
        lw_smem_store(w, word(s, s->hist, if_valid(w, valid, c, spare(w, count))), i32(w, 0));
    }
}

/* Register i's bucket: its low bits. */
static tj_ref bucket_reg(csort *s, const lw_val *dv, uint32_t i)
{
    return lw_op2(s->w, TJ_OP_AND, lw_cast(s->w, dv->regs[i], TJ_DT_U32), u32(s->w, s->nb - 1));
}

/* Only the counts, on CUDA: the counters zeroed, every owned element
 * added to its bucket's by red_add_shared (no ranks, warp steps or scan),
 * a barrier. */
static int count_by_atomics(csort *s, const lw_val *dv)
{
    lw *w = s->w;
    s->total = lw_smem_alloc(w, 4 * ((uint64_t)s->nb + (uint64_t)w->nthreads));
    if (w->err)
        return 1;
    tj_ref valid;
    for (uint32_t k = 0; (int64_t)k * w->nthreads < s->nb; k++)
        lw_smem_store(w, word(s, s->total, bucket_of(s, k, &valid)), i32(w, 0));
    lw_barrier(w);
    for (uint32_t i = 0; i < dv->lay->nregs; i++) {
        tj_ref own = lw_owner(w, dv->lay, i); /* replicas add nothing */
        tj_ref args[2] = {word(s, s->total, bucket_reg(s, dv, i)),
                          if_valid(w, own, u32(w, 1), u32(w, 0))};
        lw_emit(w, TJ_OP_RED_ADD_SHARED, TJ_TYPE_NONE, args, 2);
    }
    lw_barrier(w);
    return 0;
}

/* The ranking (the module comment): the counters by warp steps, the
 * buckets' starts, and where the order is used the placement. */
static int count_by_ranks(csort *s, const lw_val *dv)
{
    lw *w = s->w;
    if (alloc_buffers(s))
        return 1;
    for (uint32_t i = 0; i < dv->lay->nregs; i++) /* replicas write the same */
        lw_smem_store(w, digit_at(s, lw_tile_coord(w, dv->lay, i, 0)), lw_cast(w, bucket_reg(s, dv, i), TJ_DT_U8));
    zero_counters(s);
    lw_barrier(w);
    steps(s, rank_step); /* then every warp's counters are final */
    bucket_starts(s);
    if (s->want_order)
        steps(s, place_step);
    return 0;
}

int lw_lower_counting_sort(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_val *dv = lw_val_of(w, in->args[0]);
    const tj_type_info *ri = lw_src_type(w, r);
    if (!dv->lay || dv->lay->rank != 1 || ri->kind != TJ_TK_TUPLE || ri->nelems != 2)
        return lw_error(w, "counting_sort takes a 1-D tile");
    csort s = {.w = w, .n = lw_src_type(w, in->args[0])->shape[0], .want_order = projected(w, r, 0)};
    s.nb = tj_type_get(w->c, ri->elems[1])->shape[0];
    while (((int64_t)1 << s.bits) < s.nb)
        s.bits++;
    s.chunk = (s.n + 32 * w->nwarps - 1) / (32 * w->nwarps) * 32;
    lw_smem_begin(w);
    int atomics = !s.want_order && w->target == TJ_LOWER_CUDA;
    if (atomics ? count_by_atomics(&s, dv) : count_by_ranks(&s, dv))
        return 1;
    lw_val *v = lw_val_of(w, r);
    v->nelems = 2;
    v->elems = tj_alloc(w->c, sizeof *v->elems * 2);
    if ((s.want_order && !result(&s, r, 0, v, s.obuf, s.pos_dt)) || !result(&s, r, 1, v, s.total, TJ_DT_I32))
        return 1;
    lw_smem_end(w);
    return 0;
}
