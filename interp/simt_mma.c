/* The matrix atom in the SIMT interpreter (docs/simt.md, "The matrix
 * atom"): one warp computes D[16, 8] = A[16, K] * B[K, 8] + C.
 *
 * A fragment holds numel / 32 elements per lane. Which lane holds which
 * element is not observable in SIMT IR; the interpreter uses the layout of
 * PTX's mma.m16n8k16 / m16n8k8 (PTX ISA, "Matrix Fragments for mma.m16n8k*"),
 * with g = lane / 4 and q = lane % 4; mma_pack and mma_unpack expose it (a
 * lane's elements in slot order). Shared memory accesses are checked as
 * ld_shared / st_shared are, plus the atom's rules: addr and ld the same in
 * every lane of a warp, addr and each row 16-byte aligned. */
#include <inttypes.h>
#include <string.h>

#include "interp/simt.h"

enum { WARP = 32, MAX_K = 16 };

void tj_simt_fragment_element(int role, tj_dtype dt, uint32_t l, uint32_t j, uint32_t *row, uint32_t *col)
{
    uint32_t g = l / 4, q = l % 4, wide = tj_dtype_size(dt) == 4;
    if (role == TJ_MMA_A && !wide) { /* a0..a3 = pairs: (g, 2q), (g+8, 2q), (g, 2q+8), (g+8, 2q+8) */
        *row = g + 8 * ((j / 2) & 1);
        *col = 2 * q + j % 2 + 8 * (j / 4);
    } else if (role == TJ_MMA_A) { /* tf32: (g, q), (g+8, q), (g, q+4), (g+8, q+4) */
        *row = g + 8 * (j & 1);
        *col = q + 4 * (j / 2);
    } else if (role == TJ_MMA_B && !wide) { /* b0, b1 = pairs: (2q, g), (2q+8, g) */
        *row = 2 * q + j % 2 + 8 * (j / 2);
        *col = g;
    } else if (role == TJ_MMA_B) { /* tf32: (q, g), (q+4, g) */
        *row = q + 4 * j;
        *col = g;
    } else { /* c: (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1) */
        *row = g + 8 * (j / 2);
        *col = 2 * q + j % 2;
    }
}

/* The warp's addr and ld (operands 0 and 1), equal in its 32 lanes, and
 * aligned for elements of `size` bytes. */
static int warp_place(tj_simt *s, tj_ref r, uint32_t warp, uint32_t size, uint64_t *addr, int64_t *ld)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *a = &s->st.vals[in->args[0]], *l = &s->st.vals[in->args[1]];
    if (!a->data || a->n != s->nthreads || !l->data || l->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "addr and ld must be scalars");
    uint32_t t0 = warp * WARP;
    *addr = (uint32_t)a->data[t0].u;
    *ld = l->data[t0].i;
    for (uint32_t t = t0 + 1; t < t0 + WARP; t++)
        if ((uint32_t)a->data[t].u != *addr || l->data[t].i != *ld)
            return tj_simt_fail(s, r, t, "addr and ld differ between lanes of warp %u", warp);
    if (*addr % 16 || *ld <= 0 || (*ld * size) % 16)
        return tj_simt_fail(s, r, t0,
                            "shared address %" PRIu64 " or row stride %" PRId64 " x %u bytes is not 16-byte aligned",
                            *addr, *ld, size);
    return 0;
}

/* Rows 8 and up start at row `half` (8 unless mma_load says otherwise). */
static uint64_t element_addr(uint64_t addr, int64_t ld, int64_t half, uint32_t size, uint32_t row, uint32_t col)
{
    uint64_t at = row < 8 ? row : (uint64_t)(half + (int64_t)row - 8);
    return addr + (at * (uint64_t)ld + col) * size;
}

/* mma_load's third operand for the warp: the row where rows 8-15 start. */
static int warp_half(tj_simt *s, tj_ref r, uint32_t warp, int64_t *half)
{
    const tj_inst *in = &s->st.k->insts[r];
    *half = 8;
    if (in->nargs < 3 || !in->args[2])
        return 0;
    const tj_rval *h = &s->st.vals[in->args[2]];
    uint32_t t0 = warp * WARP;
    if (!h->data || h->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "the row of the second half must be a scalar");
    *half = h->data[t0].i;
    for (uint32_t t = t0 + 1; t < t0 + WARP; t++)
        if (h->data[t].i != *half)
            return tj_simt_fail(s, r, t, "the row of the second half differs between lanes of warp %u", warp);
    return *half < 0 ? tj_simt_fail(s, r, t0, "the second half starts at row %" PRId64, *half) : 0;
}

int tj_simt_mma_load(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    uint32_t w = tj_simt_width(s, r), size = (uint32_t)tj_dtype_size(rv->dt);
    for (uint32_t warp = 0; warp < s->nthreads / WARP; warp++) {
        uint64_t addr;
        int64_t ld, half;
        if (warp_place(s, r, warp, size, &addr, &ld) || warp_half(s, r, warp, &half))
            return -1;
        for (uint32_t l = 0; l < WARP; l++) {
            uint32_t t = warp * WARP + l;
            for (uint32_t j = 0; j < w; j++) {
                uint32_t row, col;
                int bt = in->imm == TJ_MMA_BT; /* memory holds B^T: element (k, n) at (n, k) */
                tj_simt_fragment_element(bt ? TJ_MMA_B : (int)in->imm, rv->dt, l, j, &row, &col);
                uint64_t at = bt ? element_addr(addr, ld, half, size, col, row) : element_addr(addr, ld, half, size, row, col);
                if (tj_simt_shared_get(s, r, t, at, rv->dt, &rv->data[t * w + j]))
                    return -1;
            }
        }
    }
    return 0;
}

int tj_simt_mma_store(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *c = &s->st.vals[in->args[2]];
    uint32_t w = c->n / s->nthreads, size = (uint32_t)tj_dtype_size(c->dt);
    for (uint32_t warp = 0; warp < s->nthreads / WARP; warp++) {
        uint64_t addr;
        int64_t ld;
        if (warp_place(s, r, warp, size, &addr, &ld))
            return -1;
        for (uint32_t l = 0; l < WARP; l++) {
            uint32_t t = warp * WARP + l;
            for (uint32_t j = 0; j < w; j++) {
                uint32_t row, col;
                tj_simt_fragment_element(TJ_MMA_C, c->dt, l, j, &row, &col);
                if (tj_simt_shared_put(s, r, t, element_addr(addr, ld, 8, size, row, col), c->dt, c->data[t * w + j]))
                    return -1;
            }
        }
    }
    return 0;
}

/* Fragment v of one warp as a rows x cols matrix. */
static void gather(const tj_rval *v, int role, uint32_t warp, uint32_t nthreads, float *m, uint32_t cols)
{
    uint32_t w = v->n / nthreads;
    for (uint32_t l = 0; l < WARP; l++) {
        for (uint32_t j = 0; j < w; j++) {
            uint32_t row, col;
            tj_simt_fragment_element(role, v->dt, l, j, &row, &col);
            m[row * cols + col] = (float)v->data[(warp * WARP + l) * w + j].f;
        }
    }
}

int tj_simt_mma(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *a = &s->st.vals[in->args[0]], *b = &s->st.vals[in->args[1]], *c = &s->st.vals[in->args[2]];
    tj_rval *d = &s->st.vals[r];
    uint32_t k = (uint32_t)tj_mma_k(a->dt);
    if (!k || !a->data || !b->data || !c->data)
        return tj_simt_fail(s, r, -1, "operands must be a, b and c fragments");
    float am[TJ_MMA_M * MAX_K], bm[MAX_K * TJ_MMA_N], cm[TJ_MMA_M * TJ_MMA_N];
    for (uint32_t warp = 0; warp < s->nthreads / WARP; warp++) {
        gather(a, TJ_MMA_A, warp, s->nthreads, am, k);
        gather(b, TJ_MMA_B, warp, s->nthreads, bm, TJ_MMA_N);
        gather(c, TJ_MMA_C, warp, s->nthreads, cm, TJ_MMA_N);
        for (uint32_t i = 0; i < TJ_MMA_M; i++) {
            for (uint32_t j = 0; j < TJ_MMA_N; j++) {
                float acc = cm[i * TJ_MMA_N + j];
                for (uint32_t kk = 0; kk < k; kk++)
                    acc += am[i * k + kk] * bm[kk * TJ_MMA_N + j];
                cm[i * TJ_MMA_N + j] = acc;
            }
        }
        uint32_t w = d->n / s->nthreads;
        for (uint32_t l = 0; l < WARP; l++) {
            for (uint32_t j = 0; j < w; j++) {
                uint32_t row, col;
                tj_simt_fragment_element(TJ_MMA_C, d->dt, l, j, &row, &col);
                d->data[(warp * WARP + l) * w + j].f = cm[row * TJ_MMA_N + col];
            }
        }
    }
    return 0;
}

int tj_simt_mma_fill(tj_simt *s, tj_ref r)
{
    const tj_rval *x = &s->st.vals[s->st.k->insts[r].args[0]];
    tj_rval *d = &s->st.vals[r];
    uint32_t w = d->n / s->nthreads;
    if (!x->data || x->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "the value must be a scalar");
    for (uint32_t t = 0; t < s->nthreads; t++)
        for (uint32_t j = 0; j < w; j++)
            d->data[t * w + j] = x->data[t];
    return 0;
}

/* mma_pack and mma_unpack: a fragment's slots are the lane's elements. */
int tj_simt_mma_repack(tj_simt *s, tj_ref r)
{
    const tj_rval *x = &s->st.vals[s->st.k->insts[r].args[0]];
    tj_rval *d = &s->st.vals[r];
    if (!x->data || x->n != d->n || x->dt != d->dt)
        return tj_simt_fail(s, r, -1, "the operand must hold the fragment's elements");
    memcpy(d->data, x->data, sizeof *d->data * d->n);
    return 0;
}
