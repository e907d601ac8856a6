/* TMA stores for the epilogues of wgmma kernels (sm_90a; docs/simt.md,
 * "TMA stores"): a tile stored to a tensor parameter goes registers ->
 * shared memory -> global by the copy engine, instead of every thread
 * storing its 4-byte pieces (two bf16 of a row) to global memory:
 *
 *     barrier (where shared memory was read since the last one: the
 *              ring's slots by the last wgmma group)
 *     every thread: st_shared of its registers, packed along the row,
 *                   into the tile laid out as tma_load writes it (column
 *                   blocks of `swizzle` bytes a row, 16-byte chunks XORed
 *                   with the row: no two lanes of a warp's store on one
 *                   bank); fence_proxy_async
 *     barrier
 *     thread 0:     tma_store of each column block, tma_store_commit,
 *                   tma_store_wait {0} (the shared bytes read)
 *
 * The copy engine drops the elements outside the tensor, so partial tiles
 * need no masks. The tile goes where the kernel's shared memory already
 * is (the ring's slots, free once the loop is done): the store applies
 * only where it fits there, so the shared memory and the programs an SM
 * holds stay what they were. It applies to a plain store (no mask) at the
 * top level of the body of a rows x cols slice that a tensor map can name
 * (lw_tma_view_fits: f16, bf16 or f32, what runtime/tensor_map.c encodes),
 * on sm_90a (w->wgmma) and TMA not turned off, without a producer warp
 * (whose replica registers must not reach shared memory), of a tensor the
 * program accesses nowhere else (lower/hazard.c tracks none: the copy
 * engine's writes are not ordered with the program's other accesses by a
 * barrier), where the kernel's `tma_store` is 1 (the default 0 keeps the
 * measured per-thread stores until a GPU run has checked and timed this
 * path: bench/NOTES.md); everything else keeps the store of lower/memory.c.
 *
 * In a loop's epilogue (a store under an `if` at the top level of the body
 * of a loop whose rings land by TMA: a persistent matmul) the ring's slots
 * never go idle, so the store gets a staging region of its own, pinned
 * above the rings before the loop (lw_tma_store_pin), and thread 0's copies
 * stay in flight into the next tile: it waits for their reads only before
 * the next staging (then a barrier) and after the loop (lw_tma_store_drain,
 * before the ring's last barrier). */
#include "lower/lower.h"
#include "passes/facts.h"
#include "passes/pass_util.h"

enum { ALIGN = 1024, MAX_ROWS = 256, MAX_VECTOR = 16 };

/* The largest of 128, 64 and 32 bytes dividing a row of the tile (0: none). */
static int swizzle_of(int64_t cols, int size)
{
    for (int s = 128; s >= 32; s /= 2)
        if ((cols * size) % s == 0)
            return s;
    return 0;
}

static uint32_t aligned(uint32_t off) { return (off + ALIGN - 1) / ALIGN * ALIGN; }

/* The staging tile of store r's value (rows x cols, K-major, unpermuted). */
static lw_wg_tile staging_tile(lw *w, tj_ref r)
{
    const tj_type_info *ti = lw_src_type(w, w->src->insts[r].args[1]);
    int size = tj_dtype_size(ti->dtype);
    int64_t rows = ti->shape[0], cols = ti->shape[1];
    return (lw_wg_tile){rows, cols, 0, swizzle_of(cols, size), size, 0, 0, (uint32_t)(rows * cols * size)};
}

static int map_dtype(tj_dtype dt) { return dt == TJ_DT_F16 || dt == TJ_DT_BF16 || dt == TJ_DT_F32; }

/* What store r needs wherever it is: the kernel's tma_store = 1 on sm_90a
 * with TMA, no producer warp, a plain store of a rank-2 slice a tensor map
 * can name, of a tensor the program accesses nowhere else. */
static int store_fits(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    if (!w->wgmma || w->target != TJ_LOWER_CUDA || w->no_tma || w->producer || in->op != TJ_OP_STORE ||
        in->args[2] || tj_config_value(w->src, TJ_PARAM_TMA_STORE, 0) != 1)
        return 0;
    const tj_type_info *ti = lw_src_type(w, in->args[1]);
    if (ti->rank != 2 || !map_dtype(ti->dtype))
        return 0;
    lw_wg_tile t = staging_tile(w, r);
    uint32_t param;
    return t.swizzle && t.rows <= MAX_ROWS && (t.rows * t.swizzle) % ALIGN == 0 &&
           lw_tma_view_fits(w, in->args[0], t.rows, t.cols, t.size) &&
           tj_param_index(w->src, w->src->insts[in->args[0]].args[0], &param) && !(w->gtracked && w->gtracked[param]);
}

int lw_tma_store_fits(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    if (in->op != TJ_OP_STORE || !store_fits(w, r))
        return 0;
    const lw_val *v = lw_val_of(w, in->args[1]);
    if (!v->lay || !v->regs || tj_layout_has_replicas(v->lay))
        return 0;
    if (w->store_region[r]) /* an epilogue of a loop: its own staging (lw_tma_store_pin) */
        return w->loop != NULL;
    lw_wg_tile t = staging_tile(w, r);
    return !w->loop && w->depth == 1 && aligned(w->smem_pinned) + t.bytes <= w->smem_bytes; /* within the kernel's shared memory */
}

/* The stores of the regions of the `if`s at the top level of loop's body
 * that would go by TMA (f: called with each; stops at a nonzero return). */
static int epilogue_stores(lw *w, tj_ref loop, int (*f)(lw *, tj_ref, void *), void *arg)
{
    const tj_kernel *k = w->src;
    tj_block_id body = tj_region_of(k, loop, 0);
    const tj_block *blk = body ? &k->blocks[body] : NULL;
    for (uint32_t i = 0; blk && i < blk->ninsts; i++) {
        const tj_inst *br = &k->insts[blk->insts[i]];
        for (int g = 0; br->op == TJ_OP_IF && g < 2; g++) {
            const tj_block *rb = br->region[g] ? &k->blocks[br->region[g]] : NULL;
            for (uint32_t j = 0; rb && j < rb->ninsts; j++)
                if (k->insts[rb->insts[j]].op == TJ_OP_STORE && store_fits(w, rb->insts[j]) && f(w, rb->insts[j], arg))
                    return 1;
        }
    }
    return 0;
}

/* A staging region for store r above the pinned bytes, where it fits and
 * its value's layout can be staged (no replicas). */
static int pin_one(lw *w, tj_ref r, void *arg)
{
    (void)arg;
    const tj_layout *l = lw_layout_of(w, w->src->insts[r].args[1]);
    lw_wg_tile t = staging_tile(w, r);
    uint64_t at = aligned(w->smem_pinned), top = at + t.bytes;
    if (!l || tj_layout_has_replicas(l) || top > w->smem_limit)
        return 0; /* stored by the threads instead */
    w->store_region[r] = (uint32_t)at + 1;
    w->smem_pinned = (uint32_t)top;
    w->pinned_any = 1;
    if (w->smem_pinned > w->smem_bytes)
        w->smem_bytes = w->smem_pinned;
    return 0;
}

void lw_tma_store_pin(lw *w, tj_ref loop)
{
    if (lw_ring_tma(w, loop) && !w->no_pins)
        epilogue_stores(w, loop, pin_one, NULL);
}

static int pinned(lw *w, tj_ref r, void *arg)
{
    (void)arg;
    return w->store_region[r] != 0;
}

void lw_tma_store_drain(lw *w, tj_ref loop)
{
    if (!epilogue_stores(w, loop, pinned, NULL))
        return;
    tj_ref who = lw_tma_thread(w);
    tj_ref wait = lw_emit(w, TJ_OP_TMA_STORE_WAIT, TJ_TYPE_NONE, &who, 1);
    w->dst->insts[wait].imm = 0;
}

/* Elements a shared store of layout l takes along its last axis: a run of
 * registers of consecutive columns, starting at a multiple of it, of at
 * most 16 bytes (so within one swizzled 16-byte chunk). */
static int vector_width(const tj_layout *l, int size)
{
    int fa = l->frame_axis[1];
    int vw = l->kind == TJ_LAYOUT_BLOCKED ? l->espt[fa] : 1;
    while (vw * size > MAX_VECTOR)
        vw /= 2;
    for (; vw > 1; vw /= 2) {
        int runs = 1;
        for (int32_t i = 0; i < l->fregs[fa] && runs; i++) {
            int32_t head = tj_layout_roff(l, fa, i - i % vw);
            runs = head % vw == 0 && tj_layout_roff(l, fa, i) == head + i % vw;
        }
        if (runs)
            break;
    }
    return vw;
}

/* Tile t's unswizzled offset of (row, col), and its chunk bits' pattern
 * (wgmma_smem.c: offset = unswizzled ^ pattern). */
static int64_t unswizzled(const lw_wg_tile *t, int64_t row, int64_t col)
{
    int64_t e = t->swizzle / t->size;
    return col / e * t->rows * t->swizzle + row * t->swizzle + col % e * t->size;
}

static int64_t pattern(const lw_wg_tile *t, int64_t off) { return (off >> 7 & (t->swizzle / 16 - 1)) << 4; }

/* Whether every register's offset in t is (u0 + k[i]) ^ p0 in every thread,
 * u0 and p0 the unswizzled offset and the pattern of the thread's register
 * 0, k[i] the same in every thread (the registers' rows 8 apart and their
 * columns a block's chunks apart: the accumulators'). The staging then
 * takes its addresses from a few bases of the thread (struct split), not
 * an offset a register, each live from the body's start. */
static int split_offsets(const lw *w, const tj_layout *l, const lw_wg_tile *t, int64_t *k)
{
    int32_t c0[TJ_MAX_RANK], c[TJ_MAX_RANK];
    for (uint32_t tid = 0; tid < w->nthreads; tid++) {
        tj_layout_coord(l, tid, 0, c0);
        int64_t u0 = unswizzled(t, c0[0], c0[1]);
        for (uint32_t i = 0; i < l->nregs; i++) {
            tj_layout_coord(l, tid, i, c);
            int64_t u = unswizzled(t, c[0], c[1]);
            if (tid == 0)
                k[i] = u - u0;
            if (u - u0 != k[i] || pattern(t, u) != pattern(t, u0))
                return 0;
        }
    }
    return 1;
}

/* Register offsets split as in split_offsets: (u0 + k[i]) ^ p0 with p0 in
 * the chunk bits [4, 7) only, so = ((u0 + low) ^ p0) + high for low = k[i]
 * % 128 and high the rest (a multiple of 128 leaves those bits alone):
 * one base a distinct `low` (8 for the accumulators' chunks), each store
 * at a constant from one, which ptxas folds into its address. */
typedef struct split {
    int64_t *k; /* NULL: no split, every offset of its own */
    tj_ref u0, p0;
    tj_ref base[128];
} split;

/* Where register i goes in tile t at buf (u32). */
static tj_ref place(lw *w, const lw_wg_tile *t, const tj_layout *l, uint32_t i, split *sp, uint32_t buf)
{
    if (sp->k) {
        int64_t low = sp->k[i] & 127;
        if (!sp->base[low])
            sp->base[low] = lw_add_imm(w, lw_cast(w, lw_op2(w, TJ_OP_XOR, lw_add_imm(w, sp->u0, low), sp->p0),
                                                  TJ_DT_U32), buf);
        return lw_add_imm(w, sp->base[low], sp->k[i] - low);
    }
    int was = w->hoisting;
    w->hoisting = 1; /* it depends on the thread only */
    tj_ref off = lw_wg_offset(w, t, lw_tile_coord(w, l, i, 0), lw_tile_coord(w, l, i, 1));
    w->hoisting = was;
    return lw_add_imm(w, off, buf);
}

/* Every register of the value into tile t at buf, vw at a time. */
static void stage(lw *w, const lw_wg_tile *t, const lw_val *v, tj_dtype dt, uint32_t buf)
{
    const tj_layout *l = v->lay;
    int fa = l->frame_axis[1], vw = vector_width(l, t->size);
    int32_t n = vw, idx[TJ_MAX_RANK];
    tj_type vt = vw > 1 ? tj_type_tile(w->c, dt, 1, &n) : lw_sty(w, dt);
    split sp = {tj_alloc(w->c, sizeof *sp.k * l->nregs), TJ_NONE, TJ_NONE, {0}};
    if (split_offsets(w, l, t, sp.k)) {
        sp.u0 = lw_wg_unswizzled(w, t, lw_tile_coord(w, l, 0, 0), lw_tile_coord(w, l, 0, 1));
        sp.p0 = lw_wg_chunk_xor(w, t, sp.u0);
    } else {
        sp.k = NULL;
    }
    for (uint32_t r0 = 0; r0 < l->nregs; r0++) {
        tj_layout_reg_index(l, r0, idx);
        if (idx[fa] % vw)
            continue;
        tj_ref parts[MAX_VECTOR / 2];
        for (int j = 0; j < vw; j++, idx[fa]++)
            parts[j] = lw_cast(w, v->regs[tj_layout_reg_of(l, idx)], dt);
        lw_smem_store(w, place(w, t, l, r0, &sp, buf),
                      vw > 1 ? lw_emit(w, TJ_OP_PACK, vt, parts, (uint32_t)vw) : parts[0]);
    }
}

/* Thread 0: one box a column block of the tile at buf to (row0, col0),
 * their operands computed first (one run of its predicate for the PTX
 * generator's branch), then the group's commit and, where `wait`, the wait
 * for its reads. */
static void issue(lw *w, const lw_wg_tile *t, tj_ref tensor, tj_ref row0, tj_ref col0, uint32_t buf, int wait)
{
    int64_t e = t->swizzle / t->size, blocks = t->cols / e;
    tj_ref who = lw_tma_thread(w), src[LW_TMA_MAX_BOXES], col[LW_TMA_MAX_BOXES];
    for (int64_t j = 0; j < blocks; j++) {
        src[j] = lw_const_int(w, TJ_DT_U32, buf + j * t->rows * t->swizzle);
        col[j] = lw_add_imm(w, col0, j * e);
    }
    for (int64_t j = 0; j < blocks; j++) {
        tj_ref args[5] = {tensor, src[j], col[j], row0, who};
        tj_ref s = lw_emit(w, TJ_OP_TMA_STORE, TJ_TYPE_NONE, args, 5);
        w->dst->insts[s].imm = e | t->rows << 16;
        w->dst->insts[s].flags = (uint32_t)t->swizzle;
    }
    lw_emit(w, TJ_OP_TMA_STORE_COMMIT, TJ_TYPE_NONE, &who, 1);
    if (!wait)
        return;
    tj_ref w0 = lw_emit(w, TJ_OP_TMA_STORE_WAIT, TJ_TYPE_NONE, &who, 1);
    w->dst->insts[w0].imm = 0;
}

/* A loop's epilogue store into its pinned staging at buf: thread 0 waits
 * for the reads of the previous tile's copies (none the first time), a
 * barrier tells every thread, the tile is staged, fenced and published,
 * and thread 0's boxes stay in flight into the next tile (their reads are
 * awaited there, or after the loop: lw_tma_store_drain). */
static int store_in_flight(lw *w, tj_ref r, const lw_wg_tile *t, tj_ref tensor, tj_ref row0, tj_ref col0)
{
    const tj_inst *in = &w->src->insts[r];
    uint32_t buf = w->store_region[r] - 1;
    tj_ref who = lw_tma_thread(w);
    tj_ref wait = lw_emit(w, TJ_OP_TMA_STORE_WAIT, TJ_TYPE_NONE, &who, 1);
    w->dst->insts[wait].imm = 0;
    lw_sink_through(w, wait); /* the value's chain may sink past both to its staging stores */
    lw_barrier(w);
    lw_sink_through(w, w->dst->ninsts - 1);
    stage(w, t, lw_val_of(w, in->args[1]), lw_src_type(w, in->args[1])->dtype, buf);
    lw_emit(w, TJ_OP_FENCE_PROXY_ASYNC, TJ_TYPE_NONE, NULL, 0);
    lw_barrier(w);
    issue(w, t, tensor, row0, col0, buf, 0);
    w->smem_dirty = 1; /* the copy engine reads the staging until the next wait */
    return 0;
}

int lw_lower_tma_store(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_inst *view = &w->src->insts[in->args[0]];
    lw_wg_tile t = staging_tile(w, r);
    if (t.cols / (t.swizzle / t.size) > LW_TMA_MAX_BOXES)
        return lw_error(w, "internal error: a TMA store of more than %d boxes", LW_TMA_MAX_BOXES);
    tj_ref tensor = lw_val_of(w, view->args[0])->simt;
    tj_ref row0 = lw_val_of(w, view->args[1])->regs[0], col0 = lw_val_of(w, view->args[2])->regs[0];
    if (!tensor || !row0 || !col0)
        return lw_error(w, "internal error: a TMA store without its tensor or start");
    uint32_t param;
    tj_param_index(w->src, view->args[0], &param);
    lw_hazard_access(w, param, r);
    if (w->store_region[r])
        return store_in_flight(w, r, &t, tensor, row0, col0);
    uint32_t before = w->dst->ninsts;
    lw_smem_begin(w); /* a barrier first where shared memory was read since the last one */
    if (w->dst->ninsts > before && w->dst->insts[w->dst->ninsts - 1].op == TJ_OP_BARRIER)
        lw_sink_through(w, w->dst->ninsts - 1); /* the value's chain may sink to its staging stores */
    uint32_t buf = aligned(w->smem_top);
    lw_smem_alloc(w, buf - w->smem_top + t.bytes);
    stage(w, &t, lw_val_of(w, in->args[1]), lw_src_type(w, in->args[1])->dtype, buf);
    lw_emit(w, TJ_OP_FENCE_PROXY_ASYNC, TJ_TYPE_NONE, NULL, 0); /* the stores, to the copy engine's async proxy */
    lw_barrier(w);
    issue(w, &t, tensor, row0, col0, buf, 1);
    lw_smem_end(w); /* thread 0 waited for the reads: the next writer's barrier follows them */
    return 0;
}
