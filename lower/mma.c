/* dot through the matrix atom (docs/simt.md, "The matrix atom").
 *
 * The product [batch x] M x N is cut into 16 x 8 atoms; warps form a wm x wn
 * grid over the atoms, each warp owning a tm x tn block of them and holding
 * their accumulators as c fragments. Both operands are staged row-major in
 * shared memory (rows padded by 16 bytes so the atom's row loads hit
 * distinct banks); a warp loads the a fragments of its atom rows and the b
 * fragments of its atom columns once per k step and multiplies every pair.
 *
 * For CUDA the result stays in the registers of the fragment layout
 * (lower/mma_regs.c); for Metal, where fragments are opaque, accumulators and
 * results go through shared memory (lower/mma_smem.c). Operands that do not
 * change in a loop are loaded as fragments once, before it. */
#include <string.h>

#include "lower/lower.h"
#include "passes/pass_util.h"

enum {
    ROW_PAD_BYTES = 16,
    MAX_ATOMS_PER_WARP = 256,
    UNROLL_STEPS = 4,
    PRELOAD_REGS = 32, /* registers per thread an operand's fragments may hold across a loop */
};

/* ---- the plan ---------------------------------------------------------------- */

/* Rows of b's staged memory: k, or n when it holds x of b = trans(x). */
static int64_t b_rows(const lw_mma *p) { return p->bt ? p->n : p->k; }

uint64_t lw_mma_staging_bytes(const lw_mma *p)
{
    return (uint64_t)(p->batch * (p->m * p->lda + b_rows(p) * p->ldb) * p->size);
}

/* b = trans(x) of a 2-D x: x is staged as it is (contiguous rows, vector
 * stores) and the fragments read its transpose. */
static int b_is_transposed(const lw *w, tj_ref b, int rank)
{
    const tj_inst *in = &w->src->insts[b];
    return rank == 2 && in->op == TJ_OP_PERMUTE && in->nlist == 2 && in->list[0] == 1 && in->list[1] == 0;
}

/* Whether dot r accumulates into a loop's carried value (its acc operand a
 * loop argument, or `where(c, 0, x)` of one: lw_acc_reset): its result
 * then goes on to the next product mostly. */
static int accumulates(const lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    tj_ref acc = in->nargs > 2 ? in->args[2] : TJ_NONE, cond, reset = acc ? lw_acc_reset(w->src, acc, &cond) : TJ_NONE;
    acc = reset ? reset : acc;
    const tj_inst *a = acc ? &w->src->insts[acc] : NULL;
    tj_ref owner = a && a->op == TJ_OP_ARG && a->imm > 0 ? w->src->blocks[a->block].owner : TJ_NONE;
    return owner && w->src->insts[owner].op == TJ_OP_FOR;
}

/* Whether carried value `in` (an arg of a loop body) may be a slot of the
 * prefetch chain: the body yields a load or the next slot into it. Other
 * carried values (a P converted at the end of the previous iteration) are
 * computed in the loop. */
static int prefetch_slot(const lw *w, const tj_inst *in)
{
    const tj_block *blk = &w->src->blocks[in->block];
    const tj_inst *y = blk->ninsts ? &w->src->insts[blk->insts[blk->ninsts - 1]] : NULL;
    if (!y || y->op != TJ_OP_YIELD || (uint64_t)in->imm > y->nargs)
        return 1;
    tj_op next = w->src->insts[y->args[in->imm - 1]].op;
    return next == TJ_OP_LOAD || next == TJ_OP_ARG;
}

/* Whether operand v is loaded afresh each iteration (a load, a slot of the
 * prefetch chain, or trans() of one): wgmma then reads it from a ring slot
 * or stages it once per product. */
static int streamed(const lw *w, tj_ref v)
{
    const tj_inst *in = &w->src->insts[v];
    if (in->op == TJ_OP_PERMUTE)
        in = &w->src->insts[in->args[0]];
    return in->op == TJ_OP_LOAD || (in->op == TJ_OP_ARG && in->imm > 0 && prefetch_slot(w, in));
}

/* How wgmma would take dot r's a (LW_WG_A_*), -1: not at all. A product
 * that accumulates over operands loaded each iteration reads both from
 * shared memory. With b loaded each iteration, an a fixed across the loop
 * (attention's Q) is staged once before it, and a 16-bit a computed in the
 * loop (its P) goes from registers: both only for a dot at the top level
 * of a for's body. */
static int wgmma_a(const lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    tj_ref loop = w->src->blocks[in->block].owner;
    int in_for = loop && w->src->insts[loop].op == TJ_OP_FOR;
    if (!streamed(w, in->args[1]))
        return -1;
    if (in_for && lw_defined_outside(w, in->args[0], in->block))
        return LW_WG_A_FIXED;
    if (streamed(w, in->args[0]))
        return accumulates(w, r) ? LW_WG_A_STREAMED : -1;
    return in_for && tj_dtype_size(lw_src_type(w, in->args[0])->dtype) == 2 ? LW_WG_A_REGS : -1;
}

/* Whether dot r can use the atom, and how: 0 when it cannot (the FMA
 * lowering takes it). */
int lw_mma_plan(lw *w, tj_ref r, lw_mma *p)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ai = lw_src_type(w, in->args[0]), *bi = lw_src_type(w, in->args[1]);
    const tj_type_info *ri = lw_src_type(w, r);
    int rank = ri->rank;
    memset(p, 0, sizeof *p);
    if ((rank != 2 && rank != 3) || ai->dtype != bi->dtype || ri->dtype != TJ_DT_F32)
        return 0;
    if (!tj_mma_k(ai->dtype) || (ai->dtype == TJ_DT_F32 && in->imm == TJ_DOT_IEEE))
        return 0;
    p->in = ai->dtype;
    p->size = tj_dtype_size(p->in);
    p->katom = tj_mma_k(p->in);
    p->batch = rank == 3 ? ri->shape[0] : 1;
    p->m = ri->shape[rank - 2];
    p->n = ri->shape[rank - 1];
    p->k = ai->shape[rank - 1];
    if (p->m % TJ_MMA_M || p->n % TJ_MMA_N || p->k % p->katom)
        return 0;
    p->rows = p->batch * p->m / TJ_MMA_M;
    p->cols = p->n / TJ_MMA_N;
    p->bt = b_is_transposed(w, in->args[1], rank);
    p->lda = p->k + ROW_PAD_BYTES / p->size;
    p->ldb = (p->bt ? p->k : p->n) + ROW_PAD_BYTES / p->size;
    p->ldc = p->n + ROW_PAD_BYTES / 4;
    if (lw_mma_staging_bytes(p) > w->smem_limit) { /* no room for padding: bank conflicts, but it fits */
        p->lda = p->k;
        p->ldb = p->bt ? p->k : p->n;
        p->ldc = p->n;
    }
    p->wg_a = wgmma_a(w, r);
    if (p->wg_a >= 0 && lw_wgmma_plan(w, p))
        return 1;
    if (w->target == TJ_LOWER_CUDA && p->batch == 1 && lw_mma_regs_grid(w, p, accumulates(w, r))) {
        p->regs = 1;
        return p->tm * p->tn <= MAX_ATOMS_PER_WARP;
    }
    /* the warp grid: whole atom blocks per warp, a warp's rows in one batch,
     * the fewest shared-memory elements loaded per k step */
    int64_t best = -1;
    for (int wm = 1; wm <= w->nwarps; wm *= 2) {
        for (int wn = 1; wm * wn <= w->nwarps; wn *= 2) {
            if (p->rows % wm || p->cols % wn)
                continue;
            int64_t tm = p->rows / wm, tn = p->cols / wn;
            if (p->batch > 1 && (p->m / TJ_MMA_M) % tm)
                continue;
            /* more warps at work first, then less traffic */
            int64_t cost = (int64_t)(w->nwarps / (wm * wn)) * (1 << 20) + tm * TJ_MMA_M + tn * TJ_MMA_N;
            if (best < 0 || cost < best) {
                best = cost;
                p->wm = wm;
                p->wn = wn;
                p->tm = tm;
                p->tn = tn;
            }
        }
    }
    return best >= 0 && p->tm * p->tn <= MAX_ATOMS_PER_WARP;
}

/* The staging of a dot the FMA lowering takes (lower/dot.c) that copy
 * rings may feed (lower/ring.c): CUDA, 2-D, operands of one dtype, rows
 * padded by 16 bytes as the atom's are (a warp's rows of a at distinct
 * banks, slots 16-byte aligned for cp.async); 0 when it does not apply.
 * Not for b = trans(x): a thread's run of columns would be rows of x's
 * slot, and 16 lanes' runs fall on two banks' offsets (an 8-way conflict
 * per load), where x staged as b reads along its rows. */
int lw_fma_ring_plan(lw *w, tj_ref r, lw_mma *p)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ai = lw_src_type(w, in->args[0]), *bi = lw_src_type(w, in->args[1]);
    const tj_type_info *ri = lw_src_type(w, r);
    memset(p, 0, sizeof *p);
    if (w->target != TJ_LOWER_CUDA || ri->rank != 2 || ai->dtype != bi->dtype || ai->dtype == TJ_DT_BOOL)
        return 0;
    p->in = ai->dtype;
    p->size = tj_dtype_size(p->in);
    p->batch = 1;
    p->m = ri->shape[0];
    p->n = ri->shape[1];
    p->k = ai->shape[1];
    p->lda = p->k + ROW_PAD_BYTES / p->size;
    p->ldb = p->n + ROW_PAD_BYTES / p->size;
    return !b_is_transposed(w, in->args[1], 2) && p->size > 0 && ROW_PAD_BYTES % p->size == 0;
}

/* Register results: atom i of warp row wi starts at row 8 wi + 16 wm i,
 * atom j of warp column wj at column 8 wj + 8 wn j (lower/mma_regs.c). */
static lw_atoms locate_interleaved(lw *w, const lw_mma *p)
{
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref wi = lw_op2(w, TJ_OP_DIV, lw_warp(w), lw_const_int(w, TJ_DT_I32, p->wn));
    tj_ref wj = lw_op2(w, TJ_OP_REM, lw_warp(w), lw_const_int(w, TJ_DT_I32, p->wn));
    lw_atoms at = {lw_new_regs(w, (uint32_t)p->tm), lw_new_regs(w, (uint32_t)p->tn), NULL, NULL};
    for (int64_t i = 0; i < p->tm; i++)
        at.a[i] = lw_mul_imm(w, lw_add_imm(w, lw_mul_imm(w, wi, 8), 16 * p->wm * i), p->lda);
    for (int64_t j = 0; j < p->tn; j++)
        at.b[j] = lw_add_imm(w, lw_mul_imm(w, wj, 8), 8 * p->wn * j);
    w->hoisting = was;
    return at;
}

/* Opaque fragments: warp (wi, wj) owns the block of atom rows wi tm .. and
 * columns wj tn ..; warps past wm * wn repeat the work of warp (id mod wm *
 * wn): they store the same values to the same places. */
lw_atoms lw_mma_locate(lw *w, const lw_mma *p)
{
    if (p->regs)
        return locate_interleaved(w, p);
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref warp = lw_op2(w, TJ_OP_REM, lw_warp(w), lw_const_int(w, TJ_DT_I32, p->wm * p->wn));
    tj_ref row0 = lw_mul_imm(w, lw_op2(w, TJ_OP_DIV, warp, lw_const_int(w, TJ_DT_I32, p->wn)), p->tm);
    tj_ref col0 = lw_mul_imm(w, lw_op2(w, TJ_OP_REM, warp, lw_const_int(w, TJ_DT_I32, p->wn)), p->tn);
    /* a warp's atom rows lie in one batch: its b rows start at batch * k */
    tj_ref batch = lw_op2(w, TJ_OP_DIV, row0, lw_const_int(w, TJ_DT_I32, p->m / TJ_MMA_M));
    tj_ref brow = lw_mul_imm(w, batch, p->k * p->ldb);
    lw_atoms at = {lw_new_regs(w, (uint32_t)p->tm), lw_new_regs(w, (uint32_t)p->tn),
                     lw_new_regs(w, (uint32_t)(p->tm * p->tn)), lw_new_regs(w, (uint32_t)p->tm)};
    for (int64_t j = 0; j < p->tn; j++)
        at.b[j] = lw_op2(w, TJ_OP_ADD, brow, lw_mul_imm(w, lw_add_imm(w, col0, j), TJ_MMA_N));
    for (int64_t i = 0; i < p->tm; i++) {
        tj_ref row = at.row[i] = lw_mul_imm(w, lw_add_imm(w, row0, i), TJ_MMA_M);
        at.a[i] = lw_mul_imm(w, row, p->lda);
        for (int64_t j = 0; j < p->tn; j++)
            at.c[i * p->tn + j] = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, row, p->ldc),
                                         lw_mul_imm(w, lw_add_imm(w, col0, j), TJ_MMA_N));
    }
    w->hoisting = was;
    return at;
}

/* ---- fragments --------------------------------------------------------------- */

static tj_type fragment_type(lw *w, int role, tj_dtype in) { return tj_type_fragment(w->c, role, in); }

/* rows 8-15 of the fragment at row `half` (0: the next 8 rows) */
tj_ref lw_mma_load(lw *w, int role, tj_dtype in, tj_ref addr, int64_t ld, int64_t half)
{
    tj_ref args[3] = {addr, lw_const_int(w, TJ_DT_I32, ld), half && half != 8 ? lw_const_int(w, TJ_DT_I32, half) : TJ_NONE};
    tj_ref f = lw_emit(w, TJ_OP_MMA_LOAD, fragment_type(w, role, in), args, 3);
    w->dst->insts[f].imm = role;
    return f;
}

/* ---- the product ---------------------------------------------------------------- */

/* Where k steps find an operand's fragments: loaded from its staged buffer
 * at each step, or loaded once before the enclosing loop (`pre`, [step *
 * count + i]) when the operand does not change in the loop. */
typedef struct operand {
    uint32_t buf;
    tj_ref *pre;
    tj_ref shift; /* added to buf at run time (u32 bytes; TJ_NONE: 0) */
    int ring;     /* buf + shift is a slot of a copy ring (lower/ring.c) */
} operand;

/* Fragment i (atom row of a, atom column of b) of k step k0 from o's buffer. */
static tj_ref load_fragment(lw *w, const lw_mma *p, const lw_atoms *at, int role, const operand *o, tj_ref k0,
                            int64_t i)
{
    tj_ref index;
    if (role == TJ_MMA_A)
        index = lw_op2(w, TJ_OP_ADD, at->a[i], k0);
    else if (p->bt) /* element (k0, column) of b is element (column, k0) of x */
        index = lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, at->b[i], p->ldb), k0);
    else
        index = lw_op2(w, TJ_OP_ADD, at->b[i], lw_mul_imm(w, k0, p->ldb));
    tj_ref addr = lw_shifted(w, lw_smem_addr(w, o->buf, index, p->size), o->shift);
    if (role == TJ_MMA_A)
        return lw_mma_load(w, TJ_MMA_A, p->in, addr, p->lda, p->regs ? 8 * p->wm : 0);
    return lw_mma_load(w, p->bt ? TJ_MMA_BT : TJ_MMA_B, p->in, addr, p->ldb, 0);
}

static tj_ref fragment(lw *w, const lw_mma *p, const lw_atoms *at, int role, const operand *o, tj_ref k0,
                       int64_t step, int64_t i)
{
    int64_t count = role == TJ_MMA_A ? p->tm : p->tn;
    return o->pre ? o->pre[step * count + i] : load_fragment(w, p, at, role, o, k0, i);
}

/* One k step (elements k0 .. k0 + K, step number `step` when known): the
 * warp's a and b fragments, then every product accumulated into c. */
static void k_step(lw *w, const lw_mma *p, const lw_atoms *at, const operand *a_op, const operand *b_op, tj_ref k0,
                   int64_t step, tj_ref *c)
{
    tj_ref *a = lw_new_regs(w, (uint32_t)p->tm), *b = lw_new_regs(w, (uint32_t)p->tn);
    for (int64_t i = 0; i < p->tm; i++)
        a[i] = fragment(w, p, at, TJ_MMA_A, a_op, k0, step, i);
    for (int64_t j = 0; j < p->tn; j++)
        b[j] = fragment(w, p, at, TJ_MMA_B, b_op, k0, step, j);
    if (step >= 0) /* unrolled: a ring's copies go while these loads are in flight */
        lw_ring_issue(w);
    for (int64_t i = 0; i < p->tm; i++) {
        for (int64_t j = 0; j < p->tn; j++) {
            tj_ref args[3] = {a[i], b[j], c[i * p->tn + j]};
            c[i * p->tn + j] = lw_emit(w, TJ_OP_MMA, fragment_type(w, TJ_MMA_C, TJ_DT_F32), args, 3);
        }
    }
}

/* c += a * b over all of k: unrolled for a few steps (or when a fragment
 * was preloaded), else a SIMT loop carrying the fragments. */
static tj_ref *multiply(lw *w, const lw_mma *p, const lw_atoms *at, const operand *a, const operand *b, tj_ref *c)
{
    uint32_t n = (uint32_t)(p->tm * p->tn);
    int64_t steps = p->k / p->katom;
    if (steps <= UNROLL_STEPS || a->pre || b->pre) {
        for (int64_t s = 0; s < steps; s++)
            k_step(w, p, at, a, b, lw_const_int(w, TJ_DT_I32, s * p->katom), s, c);
        return c;
    }
    lw_ring_issue(w); /* not inside the loop over k */
    lw_loop lp;
    lw_loop_begin(w, &lp, lw_const_int(w, TJ_DT_I32, 0), lw_const_int(w, TJ_DT_I32, p->k),
                  lw_const_int(w, TJ_DT_I32, p->katom), c, n);
    tj_ref *cur = lw_new_regs(w, n);
    memcpy(cur, lp.args, sizeof *cur * n);
    k_step(w, p, at, a, b, lp.iv, -1, cur);
    return lw_loop_end(w, &lp, cur);
}

/* Operand v (a [batch,] rows x cols tile) staged with padded rows. */
static uint32_t stage_operand(lw *w, tj_ref v, int64_t rows, int64_t ld, int size, tj_ref shift)
{
    const lw_val *x = lw_val_of(w, v);
    uint32_t buf = lw_smem_alloc(w, (uint64_t)(rows * ld * size));
    lw_mma_store_tile_at(w, x->lay, x->regs, buf, shift, ld);
    return buf;
}

static uint32_t stage_role(lw *w, const lw_mma *p, tj_ref v, int role, tj_ref shift)
{
    if (role == TJ_MMA_A)
        return stage_operand(w, v, p->batch * p->m, p->lda, p->size, shift);
    if (p->bt)
        return stage_operand(w, w->src->insts[v].args[0], p->n, p->ldb, p->size, shift);
    return stage_operand(w, v, p->batch * p->k, p->ldb, p->size, shift);
}

int lw_defined_outside(const lw *w, tj_ref v, tj_block_id body)
{
    for (tj_block_id b = w->src->insts[v].block; b;) {
        if (b == body)
            return 0;
        tj_ref owner = w->src->blocks[b].owner;
        b = owner ? w->src->insts[owner].block : 0;
    }
    return 1;
}

/* The fragments of operand v for every k step, loaded before the enclosing
 * loop when v does not change in it (a query block against the keys of
 * every iteration): NULL when that does not apply or would hold more than
 * PRELOAD_REGS registers per thread. */
static tj_ref *preload(lw *w, const lw_mma *p, const lw_atoms *at, tj_ref v, int role)
{
    int64_t steps = p->k / p->katom, count = role == TJ_MMA_A ? p->tm : p->tn;
    int64_t regs = (role == TJ_MMA_A ? 4 : 2) * steps * count;
    lw_scope *s = w->loop;
    if (!s || regs > PRELOAD_REGS || !lw_defined_outside(w, v, s->src_body))
        return NULL;
    tj_block_id here = lw_before_loop(w);
    w->smem_dirty = 1;
    lw_smem_begin(w);
    operand staged = {stage_role(w, p, v, role, TJ_NONE), NULL, TJ_NONE, 0};
    lw_barrier(w);
    tj_ref *pre = lw_new_regs(w, (uint32_t)(steps * count));
    for (int64_t k = 0; k < steps; k++)
        for (int64_t i = 0; i < count; i++)
            pre[k * count + i] = load_fragment(w, p, at, role, &staged, lw_const_int(w, TJ_DT_I32, k * p->katom), i);
    lw_smem_end(w);
    lw_back_in_loop(w, here);
    w->smem_dirty = 1;
    return pre;
}

tj_block_id lw_before_loop(lw *w)
{
    tj_block_id here = w->cur;
    w->cur = w->loop->outer; /* after the SIMT for, which lw_back_in_loop moves behind this code */
    return here;
}

void lw_back_in_loop(lw *w, tj_block_id here)
{
    const lw_scope *s = w->loop;
    const tj_block *outer = &w->dst->blocks[s->outer];
    uint32_t at_loop = 0;
    while (outer->insts[at_loop] != s->dst_loop)
        at_loop++;
    tj_block_remove(w->dst, s->outer, at_loop);
    tj_block_insert(w->dst, s->outer, w->dst->blocks[s->outer].ninsts, s->dst_loop);
    w->cur = here;
}

/* (iteration number of the innermost loop) & 1, i32. */
static tj_ref iteration_parity(lw *w)
{
    const lw_scope *s = w->loop;
    tj_ref n = lw_op2(w, TJ_OP_DIV, lw_op2(w, TJ_OP_SUB, s->iv, s->lo), s->step);
    return lw_op2(w, TJ_OP_AND, lw_cast(w, n, TJ_DT_I32), lw_const_int(w, TJ_DT_I32, 1));
}

tj_ref lw_mma_region_shift(lw *w, tj_ref dot)
{
    if (!w->dot_flip[dot])
        return TJ_NONE;
    return lw_mul_imm(w, lw_cast(w, iteration_parity(w), TJ_DT_U32), w->dot_flip[dot]);
}

/* The operands that are neither preloaded nor in a ring, staged: in the
 * dot's own region of its loop when it has one (no barrier before: see
 * lw_mma_pin_loop), else in a scope of shared memory (returns 1) after a
 * barrier when reads may pend. */
static int stage_operands(lw *w, const lw_mma *p, tj_ref r, operand *a, operand *b)
{
    const tj_inst *in = &w->src->insts[r];
    tj_ref shift = TJ_NONE;
    int stage_a = !a->pre && !a->ring, stage_b = !b->pre && !b->ring, scoped = 0;
    if (!stage_a && !stage_b)
        return 0;
    if (w->dot_region[r]) {
        w->smem_top = w->dot_region[r] - 1; /* lw_smem_alloc from the region, which holds both operands */
        shift = lw_mma_region_shift(w, r);
    } else {
        lw_smem_begin(w);
        scoped = 1;
    }
    if (stage_a) {
        a->shift = shift;
        a->buf = stage_role(w, p, in->args[0], TJ_MMA_A, shift);
    }
    if (stage_b) {
        b->shift = shift;
        b->buf = stage_role(w, p, in->args[1], TJ_MMA_B, shift);
    }
    lw_barrier(w);
    return scoped;
}

/* The c fragments of the accumulator, from registers in layout l; a
 * splat (zeros) is filled without memory. */
static tj_ref *accumulators(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *regs, int splat)
{
    if (!p->regs || splat)
        return lw_mma_to_fragments(w, p, l, regs, splat);
    return lw_mma_pack_c(w, p, regs);
}

/* `x + dot(a, b, 0)`, the dot's only use, with x computed before it: the
 * add becomes the dot's accumulator (the atom sums in an unspecified order
 * anyway), and the add takes the dot's value. Saves the registers of two
 * results at once (FlashAttention's rescaled accumulator). */
static tj_ref folded_addend(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    if (in->nargs < 3 || !tj_is_const_float(w->src, in->args[2], 0.0, 0))
        return TJ_NONE;
    tj_ref use = TJ_NONE;
    for (tj_ref u = 1; u < w->src->ninsts; u++) {
        const tj_inst *ui = &w->src->insts[u];
        for (uint32_t a = 0; a < ui->nargs; a++) {
            if (ui->args[a] != r)
                continue;
            if (use)
                return TJ_NONE;
            use = u;
        }
    }
    const tj_inst *add = use ? &w->src->insts[use] : NULL;
    if (!add || add->op != TJ_OP_ADD || add->block != in->block || add->type != in->type || add->args[0] == add->args[1])
        return TJ_NONE;
    tj_ref x = add->args[0] == r ? add->args[1] : add->args[0];
    if (!w->vals[x].regs || !tj_layout_equal(lw_layout_of(w, use), lw_layout_of(w, r)))
        return TJ_NONE;
    w->same_as[use] = r;
    return x;
}

int lw_lower_mma(lw *w, tj_ref r, const lw_mma *p)
{
    tj_ref addend = p->regs ? folded_addend(w, r) : TJ_NONE;
    if (p->wg)
        return lw_lower_wgmma(w, r, p, addend);
    const tj_inst *in = &w->src->insts[r];
    const tj_layout *l = lw_layout_of(w, r);
    tj_ref acc = addend ? addend : in->nargs > 2 ? in->args[2] : TJ_NONE;
    const lw_val *av = acc ? lw_val_of(w, acc) : NULL;
    uint32_t n = (uint32_t)(p->tm * p->tn);
    if (p->regs && !tj_layout_equal(l, lw_mma_result_layout(w, p)))
        return lw_error(w, "internal error: a dot with register results in another layout");
    lw_atoms at = lw_mma_locate(w, p);
    tj_ref *a_regs = p->regs ? lw_mma_a_from_registers(w, p, in->args[0]) : NULL;
    operand a = {0, a_regs ? a_regs : preload(w, p, &at, in->args[0], TJ_MMA_A), TJ_NONE, 0};
    operand b = {0, preload(w, p, &at, in->args[1], TJ_MMA_B), TJ_NONE, 0};
    tj_ref *c;
    if (av && av->frags) { /* carried by the enclosing loop (lw_mma_carried) */
        c = lw_new_regs(w, n);
        memcpy(c, av->frags, sizeof *c * n);
    } else {
        tj_ref *regs = acc ? lw_regs_in(w, acc, l) : NULL;
        if (acc && !regs)
            return 1;
        if (!regs) {
            regs = lw_new_regs(w, l->nregs);
            for (uint32_t i = 0; i < l->nregs; i++)
                regs[i] = lw_const_float(w, TJ_DT_F32, 0);
        }
        c = accumulators(w, p, l, regs, !acc || lw_is_splat(w, acc));
    }
    a.ring = !a.pre && lw_ring_operand(w, r, 0, &a.buf, &a.shift);
    b.ring = !b.pre && lw_ring_operand(w, r, 1, &b.buf, &b.shift);
    if (w->err)
        return 1;
    int scoped = stage_operands(w, p, r, &a, &b);
    c = multiply(w, p, &at, &a, &b, c);
    if (scoped)
        lw_smem_end(w);
    if (av && av->frags) {
        w->vals[r] = (lw_val){.lay = l, .frags = c, .nfrags = n};
        return 0;
    }
    lw_set_regs(w, r, l, p->regs ? lw_mma_unpack_c(w, p, l, c) : lw_mma_from_fragments(w, p, l, c));
    return 0;
}


/* ---- one barrier a product in loops with several -------------------------------- */

/* Both operands' staging buffers, as lw_smem_alloc rounds them. */
static uint64_t region_bytes(const lw_mma *p)
{
    uint64_t a = (uint64_t)(p->batch * p->m * p->lda * p->size), b = lw_mma_staging_bytes(p) - a;
    return (a + 15) / 16 * 16 + (b + 15) / 16 * 16;
}

/* Dot r at the top level of the loop body, whose b operand (or the x of b =
 * trans(x)) comes from inside the loop: it stages b every iteration, so it
 * ends its staging with a barrier every iteration. */
static int stages_every_iteration(lw *w, tj_ref r, tj_block_id body, lw_mma *p)
{
    const tj_inst *in = &w->src->insts[r];
    if (in->op != TJ_OP_DOT || lw_ring_feeds(w, r) || !lw_mma_plan(w, r, p) || p->wg)
        return 0; /* wgmma operands are staged in scopes of their own (lower/wgmma.c) */
    tj_ref b = p->bt ? w->src->insts[in->args[1]].args[0] : in->args[1];
    return w->src->insts[b].block == body || w->src->insts[in->args[1]].block == body;
}

/* The bytes of dot r's region when it stages operands every iteration of
 * the loop of body (on the atom or on FMAs, lower/dot.c), else 0. */
static uint64_t staging_region(lw *w, tj_ref r, tj_block_id body)
{
    lw_mma p;
    return stages_every_iteration(w, r, body, &p) ? region_bytes(&p) : lw_fma_region_bytes(w, r, body);
}

/* With two or more such dots in a loop, each gets a staging region of its
 * own for the loop's duration, and none needs a barrier before it stages:
 * between a dot's reads of its region and its next writes to it, every
 * warp passes the staging barrier of another dot (the next one in this
 * iteration, or the first of the next). So it does with one such dot where
 * the loop's copy rings wait with a barrier every iteration
 * (lw_ring_barrier). A single such dot without gets two regions and
 * alternates between them by iteration: between its reads of one region
 * and its next writes to it lies its own staging barrier of the iteration
 * in between. Scoped operations allocate above the regions; a barrier
 * before the loop settles reads pending from before it. One barrier per
 * product and iteration instead of two. Operands fixed across the loop
 * were pinned first (wgmma's a, and an FMA dot's, lower/dot.c). */
void lw_mma_pin_loop(lw *w, tj_ref loop)
{
    lw_wgmma_pin_fixed(w, loop);
    lw_fma_pin_fixed(w, loop);
    uint32_t before = w->smem_pinned;
    tj_block_id body = tj_region_of(w->src, loop, 0);
    const tj_block *blk = body ? &w->src->blocks[body] : NULL;
    uint64_t top = before;
    uint32_t count = 0;
    for (uint32_t i = 0; blk && i < blk->ninsts; i++) {
        uint64_t bytes = staging_region(w, blk->insts[i], body);
        top += bytes;
        count += bytes > 0;
    }
    uint64_t flip = count == 1 && !lw_ring_barrier(w, loop) ? top - before : 0;
    if (w->no_pins || count == 0 || top + flip > w->smem_limit / 2)
        return;
    w->pinned_any = 1;
    if (w->smem_dirty)
        lw_barrier(w);
    top = before;
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        uint64_t bytes = staging_region(w, r, body);
        if (!bytes)
            continue;
        w->dot_region[r] = (uint32_t)top + 1;
        w->dot_flip[r] = (uint32_t)flip;
        top += bytes + flip;
    }
    w->smem_pinned = (uint32_t)top;
    if (w->smem_pinned > w->smem_bytes)
        w->smem_bytes = w->smem_pinned;
}
