/* sort in registers: the bitonic network of lower/sort.c, but each stage
 * exchanges elements where they live. In a blocked layout without replicas
 * along the sorted axis, with a power-of-two line, the bits of an element's
 * position split into register bits (size_per_thread, repetitions), lane
 * bits and warp bits; a stage at distance j = 2^b pairs registers of one
 * thread (compare-exchange in place), lanes (shfl_xor) or warps (through
 * shared memory). Keys travel with their positions, which break ties, so
 * the result is the stable sort; stages are unrolled at compile time. */
#include "lower/lower.h"

typedef struct rsort {
    lw *w;
    const tj_layout *l;
    int fa, descending;
    int32_t n, spt, cover;     /* line length, elements per chunk, chunk coverage */
    uint32_t lane_bits, warp_bits;
    tj_ref *key, *pos;          /* per register */
} rsort;

static int nbits(uint32_t m)
{
    int n = 0;
    for (; m; m &= m - 1)
        n++;
    return n;
}

static int log2_of(int64_t v)
{
    int n = 0;
    while (v > 1) {
        v >>= 1;
        n++;
    }
    return n;
}

/* Where position bit b lives: 0 register, 1 lane, 2 warp. */
static int bit_home(const rsort *s, int b)
{
    int e = log2_of(s->spt), lanes = nbits(s->lane_bits), warps = nbits(s->warp_bits);
    if (b < e || b >= e + lanes + warps)
        return 0;
    return b < e + lanes ? 1 : 2;
}

/* The register index of the partner at distance j (register bits only). */
static int32_t partner_index(const rsort *s, int32_t i, int32_t j)
{
    if (j < s->spt)
        return i ^ j;
    return i ^ (int32_t)((int64_t)j / s->cover * s->spt); /* repetition bits */
}

/* Whether position bit `mask` of this register's element is clear: static
 * for register bits (the thread part has none), else from the thread part. */
static tj_ref bit_clear(rsort *s, int32_t i, int32_t mask)
{
    lw *w = s->w;
    if (bit_home(s, log2_of(mask)) == 0)
        return lw_const_int(w, TJ_DT_BOOL, !(tj_layout_roff(s->l, s->fa, i) & mask));
    tj_ref t = lw_op2(w, TJ_OP_AND, lw_tbase(w, s->l, s->fa), lw_const_int(w, TJ_DT_I32, mask));
    return lw_op2(w, TJ_OP_EQ, t, lw_const_int(w, TJ_DT_I32, 0));
}

static tj_ref before(rsort *s, tj_ref ka, tj_ref ia, tj_ref kb, tj_ref ib)
{
    return lw_sort_before(s->w, s->descending, 0, ka, ia, kb, ib);
}

/* Registers a (low position) and b of one thread, direction of register a. */
static void exchange_registers(rsort *s, uint32_t a, uint32_t b, int32_t k, int32_t ia)
{
    lw *w = s->w;
    tj_ref asc = bit_clear(s, ia, k);
    tj_ref swap = lw_select(w, asc, before(s, s->key[b], s->pos[b], s->key[a], s->pos[a]),
                            before(s, s->key[a], s->pos[a], s->key[b], s->pos[b]));
    tj_ref ka = s->key[a], pa = s->pos[a];
    s->key[a] = lw_select(w, swap, s->key[b], ka);
    s->pos[a] = lw_select(w, swap, s->pos[b], pa);
    s->key[b] = lw_select(w, swap, ka, s->key[b]);
    s->pos[b] = lw_select(w, swap, pa, s->pos[b]);
}

/* Register r against its partner's (kp, pp) held by another thread: keep
 * the first of the two when this element is the low one of an ascending
 * pair or the high one of a descending pair, else the second. */
static void keep_one(rsort *s, uint32_t r, int32_t i, int32_t j, int32_t k, tj_ref kp, tj_ref pp)
{
    lw *w = s->w;
    tj_ref want_first = lw_op2(w, TJ_OP_EQ, bit_clear(s, i, j), bit_clear(s, i, k));
    tj_ref mine_first = before(s, s->key[r], s->pos[r], kp, pp);
    tj_ref keep = lw_op2(w, TJ_OP_EQ, want_first, mine_first);
    s->key[r] = lw_select(w, keep, s->key[r], kp);
    s->pos[r] = lw_select(w, keep, s->pos[r], pp);
}

/* A stage across warps: every element to shared memory, the partner back. */
static void exchange_warps(rsort *s, int32_t j, int32_t k, const tj_ref *line)
{
    lw *w = s->w;
    const tj_layout *l = s->l;
    int32_t idx[TJ_MAX_RANK];
    tj_dtype kdt = lw_dt(w, s->key[0]);
    int ksize = lw_smem_size(kdt);
    uint64_t lines = 1;
    for (int d = 0; d < l->rank; d++)
        lines *= (uint64_t)l->shape[d];
    lines /= (uint64_t)s->n;
    lw_smem_begin(w);
    uint32_t kbuf = lw_smem_alloc(w, lines * (uint64_t)s->n * (uint64_t)ksize);
    uint32_t pbuf = lw_smem_alloc(w, lines * (uint64_t)s->n * 4);
    tj_ref *slot = lw_new_regs(w, l->nregs);
    for (uint32_t r = 0; r < l->nregs; r++) { /* slot = line * n + position */
        tj_layout_reg_index(l, r, idx);
        slot[r] = lw_op2(w, TJ_OP_ADD, line[r], lw_coord(w, l, s->fa, idx[s->fa]));
        lw_smem_store(w, lw_smem_addr(w, kbuf, slot[r], ksize), s->key[r]);
        lw_smem_store(w, lw_smem_addr(w, pbuf, slot[r], 4), s->pos[r]);
    }
    lw_barrier(w);
    tj_ref jv = lw_const_int(w, TJ_DT_I32, j);
    for (uint32_t r = 0; r < l->nregs; r++) {
        tj_layout_reg_index(l, r, idx);
        tj_ref other = lw_op2(w, TJ_OP_XOR, slot[r], jv); /* the line offset has no bit j */
        tj_ref kp = lw_smem_load(w, lw_smem_addr(w, kbuf, other, ksize), kdt);
        tj_ref pp = lw_smem_load(w, lw_smem_addr(w, pbuf, other, 4), TJ_DT_I32);
        keep_one(s, r, idx[s->fa], j, k, kp, pp);
    }
    lw_smem_end(w);
}

static void stage(rsort *s, int32_t j, int32_t k, const tj_ref *line)
{
    lw *w = s->w;
    const tj_layout *l = s->l;
    int32_t idx[TJ_MAX_RANK];
    int home = bit_home(s, log2_of(j));
    if (home == 2) {
        exchange_warps(s, j, k, line);
        return;
    }
    uint32_t lane_mask = home == 1 ? (uint32_t)j / (uint32_t)s->spt << lw_low_bit(s->lane_bits) : 0;
    tj_ref *kp = lw_new_regs(w, l->nregs), *pp = lw_new_regs(w, l->nregs);
    for (uint32_t r = 0; home == 1 && r < l->nregs; r++) { /* all shuffles first, then the choices */
        kp[r] = lw_shfl_xor(w, s->key[r], lane_mask);
        pp[r] = lw_shfl_xor(w, s->pos[r], lane_mask);
    }
    for (uint32_t r = 0; r < l->nregs; r++) {
        tj_layout_reg_index(l, r, idx);
        int32_t i = idx[s->fa];
        if (home == 1) {
            keep_one(s, r, i, j, k, kp[r], pp[r]);
            continue;
        }
        int32_t p = partner_index(s, i, j);
        if (p < i)
            continue; /* handled with its low partner */
        idx[s->fa] = p;
        exchange_registers(s, r, tj_layout_reg_of(l, idx), k, i);
    }
}

int lw_sort_in_registers(lw *w, const tj_layout *l, int axis, int descending, tj_ref *key, tj_ref *pos,
                         const tj_ref *line)
{
    const tj_layout *root = l->root;
    if (axis < 0 || root->kind != TJ_LAYOUT_BLOCKED)
        return 0;
    int fa = l->frame_axis[axis];
    int32_t n = l->shape[axis];
    rsort s = {.w = w, .l = l, .fa = fa, .descending = descending, .n = n, .spt = root->espt[fa],
               .cover = root->espt[fa] * root->tpw[fa] * root->wpc[fa], .lane_bits = tj_layout_lane_bits(l, fa),
               .warp_bits = tj_layout_warp_bits(l, fa), .key = key, .pos = pos};
    if ((n & (n - 1)) || tj_layout_axis_wraps(l, fa) || n % s.cover)
        return 0;
    for (int32_t k = 2; k <= n; k *= 2)
        for (int32_t j = k / 2; j >= 1; j /= 2)
            stage(&s, j, k, line);
    return 1;
}
