/* Warpgroup tensor cores in the SIMT interpreter (docs/simt.md, "wgmma"):
 * wgmma reads its operands from shared memory through matrix descriptors
 * decoded as the PTX ISA defines them ("Matrix Descriptor Format",
 * "Shared Memory Matrix Layout"), so a lowering's descriptor and swizzle
 * encoding is checked here, not only on a GPU.
 *
 * Descriptor: start address bits 0-13, LBO 16-29, SBO 32-45 (each bytes >>
 * 4), base offset 49-51 (0 here), swizzle mode 62-63 (1: 128 bytes, 2: 64,
 * 3: 32; 0, the unswizzled interleaved layout, is not modelled). With S the
 * swizzle bytes, E = S / size elements a row, element (row, k) of a
 * K-major operand is at start + (row / 8) SBO + (row % 8) S + k size,
 * element (k, x) of an mn-major one at start + (x / E) LBO + (k / 8) SBO +
 * (k % 8) S + (x % E) size, and the 16-byte chunk bits of that address are
 * XORed with bits 7 and up (Swizzle<log2(S / 16), 4, 3>).
 *
 * The products are computed when issued (lockstep), but their shared
 * memory is theirs until a wgmma_wait retires their group: a write to a
 * byte a group in flight reads (st_shared, mma_store, a cp_async issued to
 * it) is reported, and so is a wgmma reading a byte the generic proxy wrote
 * (a store, a landed copy) with no fence_proxy_async since: the two
 * mistakes a GPU punishes only sometimes. An a operand from registers (a
 * fragment per warp, rows 16 wl .. 16 wl + 15 of the block) is the group's
 * as well: reading it elsewhere or defining it again (the next iteration's
 * pack) before the wait is reported, which the PTX ISA leaves undefined;
 * so is reading the accumulators (the projections of a wgmma's result)
 * before the wait, by anything but the next wgmma of the chain or the
 * loop's yield that carries them (a lowering that waits too late, e.g. a
 * deferred group's first use, lower/wgmma.c).
 *
 * Each op of the family takes a predicate, the same in the threads of a
 * warpgroup: a warpgroup where it is off does not multiply (its results
 * are its c operands), and a trailing warp short of a warpgroup (a
 * producer warp, lower/ring.c) must have it off. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "interp/simt.h"

enum { GROUP = 128, WARP = 32, ROWS = 64, MAX_N = 256, MAX_K = 16 };

typedef struct wg_desc {
    uint64_t start, lbo, sbo;
    uint32_t swizzle;
} wg_desc;

int tj_simt_wgmma_desc(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *a = &s->st.vals[in->args[0]], *f = &s->st.vals[in->args[1]];
    tj_rval *d = &s->st.vals[r];
    if (!a->data || a->n != s->nthreads || !f->data || f->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "the address and the fields must be scalars");
    for (uint32_t t = 0; t < s->nthreads; t++)
        d->data[t].u = f->data[t].u | (((uint64_t)(uint32_t)a->data[t].u >> 4) & 0x3fff);
    return 0;
}

static int decode(const tj_simt *s, tj_ref r, uint32_t t, uint64_t v, wg_desc *d)
{
    static const uint32_t bytes[4] = {0, 128, 64, 32};
    d->start = (v & 0x3fff) << 4;
    d->lbo = ((v >> 16) & 0x3fff) << 4;
    d->sbo = ((v >> 32) & 0x3fff) << 4;
    d->swizzle = bytes[v >> 62];
    if (!d->swizzle)
        return tj_simt_fail(s, r, t, "descriptor %#" PRIx64 ": the unswizzled layout is not modelled", v);
    if ((v >> 49) & 7)
        return tj_simt_fail(s, r, t, "descriptor %#" PRIx64 ": a base offset is not modelled", v);
    return 0;
}

static uint64_t swizzled(uint64_t a, uint32_t swizzle) { return a ^ (((a >> 7) & (swizzle / 16 - 1)) << 4); }

/* Byte address of element (row, col) of operand d: row along M or N and
 * col along K (K-major), or row along K and col along M or N (mn-major). */
static uint64_t element_addr(const wg_desc *d, int mn_major, uint32_t size, uint32_t row, uint32_t col)
{
    if (!mn_major)
        return swizzled(d->start + row / 8 * d->sbo + row % 8 * d->swizzle + (uint64_t)col * size, d->swizzle);
    uint32_t e = d->swizzle / size;
    return swizzled(d->start + col / e * d->lbo + row / 8 * d->sbo + row % 8 * d->swizzle + (uint64_t)(col % e) * size,
                    d->swizzle);
}

/* The warpgroup's descriptor (operand a), the same in its 128 threads. */
static int group_desc(tj_simt *s, tj_ref r, uint32_t a, uint32_t t0, wg_desc *d)
{
    const tj_rval *v = &s->st.vals[s->st.k->insts[r].args[a]];
    if (!v->data || v->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "descriptors must be scalars");
    for (uint32_t t = t0 + 1; t < t0 + GROUP; t++)
        if (v->data[t].u != v->data[t0].u)
            return tj_simt_fail(s, r, t, "the descriptor differs between threads of warpgroup %u", t0 / GROUP);
    return decode(s, r, t0, v->data[t0].u, d);
}

/* ---- what groups in flight read ---------------------------------------------- */

static int grow(tj_simt *s, tj_ref r, uint32_t **a, uint32_t *cap, uint32_t need)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    uint32_t *g = realloc(*a, sizeof *g * n);
    if (!g)
        return tj_simt_fail(s, r, -1, "out of memory for wgmma groups in flight");
    *a = g;
    *cap = n;
    return 0;
}

/* Bytes [at, at + n) read by the open group, thread t0's warpgroup. */
static int record_read(tj_simt *s, tj_ref r, uint32_t t0, uint64_t at, uint32_t n)
{
    if (at + n > s->st.k->smem_bytes)
        return tj_simt_shared_range(s, r, t0, at, n);
    for (uint32_t b = 0; b < n; b++)
        if (s->smem_generic[at + b])
            return tj_simt_fail(s, r, t0,
                                "reads shared byte %" PRIu64 ", written by the generic proxy with no "
                                "fence_proxy_async since",
                                at + b);
    if (grow(s, r, &s->wg_bytes, &s->wg_bytes_cap, s->nwg_bytes + n))
        return -1;
    for (uint32_t b = 0; b < n; b++) {
        s->wg_bytes[s->nwg_bytes++] = (uint32_t)(at + b);
        s->smem_wg_reads[at + b]++;
    }
    return 0;
}

int tj_simt_wgmma_unread(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t n)
{
    for (uint32_t b = 0; b < n && off + b < s->st.k->smem_bytes; b++)
        if (s->smem_wg_reads[off + b])
            return tj_simt_fail(s, r, t, "writes shared byte %" PRIu64 ", which a wgmma group in flight reads",
                                off + b);
    return tj_simt_tma_unread(s, r, t, off, n);
}

int tj_simt_wgmma_guard(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t n)
{
    if (tj_simt_wgmma_unread(s, r, t, off, n))
        return -1;
    for (uint32_t b = 0; b < n && off + b < s->st.k->smem_bytes; b++)
        s->smem_generic[off + b] = 1;
    s->generic_any = 1;
    return 0;
}

void tj_simt_fence_proxy_async(tj_simt *s)
{
    if (s->generic_any)
        memset(s->smem_generic, 0, s->st.k->smem_bytes);
    s->generic_any = 0;
}

/* ---- predicates ----------------------------------------------------------------- */

/* Whether the warpgroup from thread t0 (the threads below nthreads: a
 * trailing producer warp is a warpgroup of its own) executes r, whose
 * predicate is operand a (absent: every thread); it must be the same in
 * all of the warpgroup's threads (-1 after reporting). */
static int group_on(tj_simt *s, tj_ref r, uint32_t a, uint32_t t0)
{
    const tj_inst *in = &s->st.k->insts[r];
    if (a >= in->nargs) /* SIMT text in the form before the predicate */
        return tj_simt_fail(s, r, -1, "'%s' takes a predicate operand (`_`: every thread)", tj_op_get(in->op)->name);
    tj_ref p = in->args[a];
    const tj_rval *v = p ? &s->st.vals[p] : NULL;
    uint32_t end = t0 + GROUP < s->nthreads ? t0 + GROUP : s->nthreads;
    if (!v)
        return 1;
    if (!v->data || v->n != s->nthreads || v->dt != TJ_DT_BOOL)
        return tj_simt_fail(s, r, -1, "the predicate must be a bool scalar");
    for (uint32_t t = t0 + 1; t < end; t++)
        if ((v->data[t].u != 0) != (v->data[t0].u != 0))
            return tj_simt_fail(s, r, t, "the predicate differs between threads of warpgroup %u", t0 / GROUP);
    return v->data[t0].u != 0;
}

/* Whether any warpgroup executes r (predicate operand a): the groups in
 * flight are tracked for the program, every warpgroup issuing alike. */
static int any_group_on(tj_simt *s, tj_ref r, uint32_t a)
{
    int any = 0;
    for (uint32_t t0 = 0; t0 < s->nthreads; t0 += GROUP) {
        int on = group_on(s, r, a, t0);
        if (on < 0)
            return -1;
        any |= on;
    }
    return any;
}

int tj_simt_wgmma_fence(tj_simt *s, tj_ref r)
{
    return any_group_on(s, r, 0) < 0 ? -1 : 0; /* in lockstep, register writes are done when issued */
}

int tj_simt_wgmma_commit(tj_simt *s, tj_ref r)
{
    int on = any_group_on(s, r, 0);
    if (on <= 0)
        return on;
    if (grow(s, r, &s->wg_group_end, &s->wg_group_cap, s->nwg_groups + 1) ||
        grow(s, r, &s->wg_group_aend, &s->wg_group_acap, s->nwg_groups + 1))
        return -1;
    s->wg_group_aend[s->nwg_groups] = s->nwg_aregs;
    s->wg_group_end[s->nwg_groups++] = s->nwg_bytes;
    return 0;
}

/* ---- register a operands in flight ------------------------------------------- */

/* What group r holds until its wait: v, its register a operand, or r
 * itself (its accumulators: the projections of its result tuple). */
static int record_held(tj_simt *s, tj_ref r, tj_ref v)
{
    if (grow(s, r, &s->wg_aregs, &s->wg_aregs_cap, s->nwg_aregs + 1))
        return -1;
    s->wg_aregs[s->nwg_aregs++] = v;
    return 0;
}

/* Whether r reads the accumulators of wgmma g: a projection of g's result
 * read by anything but the next wgmma of a chain or a loop's yield (which
 * carries them into the next iteration, where they stay the group's). */
static tj_ref reads_accumulators(const tj_simt *s, tj_ref r, tj_ref g)
{
    const tj_kernel *k = s->st.k;
    const tj_inst *in = &k->insts[r];
    if (in->op == TJ_OP_WGMMA || in->op == TJ_OP_PROJ || in->op == TJ_OP_YIELD)
        return TJ_NONE;
    for (uint32_t a = 0; a < in->nargs; a++) {
        const tj_inst *x = &k->insts[in->args[a]];
        if (x->op == TJ_OP_PROJ && x->nargs == 1 && x->args[0] == g)
            return in->args[a];
    }
    return TJ_NONE;
}

int tj_simt_wgmma_registers_free(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    for (uint32_t i = 0; i < s->nwg_aregs; i++) {
        tj_ref a = s->wg_aregs[i], acc;
        if (s->st.k->insts[a].op == TJ_OP_WGMMA) {
            if ((acc = reads_accumulators(s, r, a)))
                return tj_simt_fail(s, r, -1, "reads %%%u, accumulators of a wgmma whose group is in flight "
                                              "(no wgmma_wait retired it)", acc);
            continue;
        }
        if (a == r)
            return tj_simt_fail(s, r, -1, "redefines %%%u, the a operand of a wgmma whose group is in flight "
                                          "(no wgmma_wait retired it)", a);
        for (uint32_t k = 0; in->op != TJ_OP_WGMMA && k < in->nargs; k++)
            if (in->args[k] == a)
                return tj_simt_fail(s, r, -1, "reads %%%u, the a operand of a wgmma whose group is in flight "
                                              "(no wgmma_wait retired it)", a);
    }
    return 0;
}

/* Retires the oldest committed groups until at most `pending` remain. */
int tj_simt_wgmma_wait(tj_simt *s, tj_ref r)
{
    int64_t pending = s->st.k->insts[r].imm;
    int on = any_group_on(s, r, 0);
    if (on <= 0)
        return on;
    if (pending < 0 || s->nwg_groups <= (uint64_t)pending)
        return 0;
    uint32_t retire = s->nwg_groups - (uint32_t)pending, end = s->wg_group_end[retire - 1];
    uint32_t aend = s->wg_group_aend[retire - 1];
    for (uint32_t i = 0; i < end; i++)
        s->smem_wg_reads[s->wg_bytes[i]]--;
    if (end) /* nothing to move: the array may still be NULL (memmove wants a pointer) */
        memmove(s->wg_bytes, s->wg_bytes + end, sizeof *s->wg_bytes * (s->nwg_bytes - end));
    s->nwg_bytes -= end;
    if (aend)
        memmove(s->wg_aregs, s->wg_aregs + aend, sizeof *s->wg_aregs * (s->nwg_aregs - aend));
    s->nwg_aregs -= aend;
    for (uint32_t g = retire; g < s->nwg_groups; g++) {
        s->wg_group_end[g - retire] = s->wg_group_end[g] - end;
        s->wg_group_aend[g - retire] = s->wg_group_aend[g] - aend;
    }
    s->nwg_groups -= retire;
    return 0;
}

void tj_simt_wgmma_reset(tj_simt *s)
{
    uint32_t n = s->st.k->smem_bytes;
    if (s->nwg_bytes && s->smem_wg_reads)
        memset(s->smem_wg_reads, 0, sizeof *s->smem_wg_reads * n);
    if (s->smem_generic)
        memset(s->smem_generic, 0, n);
    s->nwg_bytes = s->nwg_groups = s->nwg_aregs = 0;
    s->generic_any = 0;
}

void tj_simt_wgmma_free(tj_simt *s)
{
    free(s->wg_bytes);
    free(s->wg_group_end);
    free(s->wg_aregs);
    free(s->wg_group_aend);
    s->wg_bytes = s->wg_group_end = s->wg_group_aend = NULL;
    s->wg_aregs = NULL;
}

/* ---- the product ---------------------------------------------------------------- */

/* A K-major step must stay within one swizzle row. */
static int check_k_span(const tj_simt *s, tj_ref r, uint32_t t0, const wg_desc *d, uint32_t k, uint32_t size)
{
    if ((d->start % d->swizzle) + k * size <= d->swizzle)
        return 0;
    return tj_simt_fail(s, r, t0, "a K-major step of %u bytes from %" PRIu64 " crosses a %u-byte swizzle row",
                        k * size, d->start, d->swizzle);
}

/* Whether wgmma r takes a from registers (an a fragment of the matrix
 * atom in each warp) rather than through a descriptor. */
static int a_in_registers(const tj_simt *s, tj_ref r)
{
    return tj_type_is_fragment(s->st.ctx, s->st.k->insts[s->st.k->insts[r].args[0]].type);
}

/* A[64, k] of warpgroup t0 from its warps' a fragments: warp wl holds rows
 * 16 wl .. 16 wl + 15 in the a lane layout of the matrix atom (the PTX
 * ISA's register fragment of wgmma's A is exactly that per warp). */
static int a_from_registers(tj_simt *s, tj_ref r, uint32_t t0, uint32_t k, float *am)
{
    const tj_rval *a = &s->st.vals[s->st.k->insts[r].args[0]];
    uint32_t per = 16 * k / WARP;
    if (!a->data || a->n != s->nthreads * per)
        return tj_simt_fail(s, r, -1, "operand 1 is not an a fragment");
    for (uint32_t l = 0; l < GROUP; l++)
        for (uint32_t e = 0; e < per; e++) {
            uint32_t row, col;
            tj_simt_fragment_element(TJ_MMA_A, a->dt, l % WARP, e, &row, &col);
            am[(16 * (l / WARP) + row) * k + col] = (float)a->data[(t0 + l) * per + e].f;
        }
    return 0;
}

/* A[64, k] of the warpgroup from shared memory. */
static int a_from_shared(tj_simt *s, tj_ref r, uint32_t t0, uint32_t k, float *am)
{
    tj_dtype dt = (tj_dtype)s->st.k->insts[r].imm;
    uint32_t size = (uint32_t)tj_dtype_size(dt);
    wg_desc a;
    if (group_desc(s, r, 0, t0, &a) || check_k_span(s, r, t0, &a, k, size))
        return -1;
    tj_slot v;
    for (uint32_t i = 0; i < ROWS; i++)
        for (uint32_t kk = 0; kk < k; kk++) {
            uint64_t at = element_addr(&a, 0, size, i, kk);
            if (tj_simt_shared_peek(s, r, t0, at, dt, &v) || record_read(s, r, t0, at, size))
                return -1;
            am[i * k + kk] = (float)v.f;
        }
    return 0;
}

/* A[64, k] and B[k, n] of the warpgroup: a from registers or shared
 * memory, b from shared memory. */
static int read_operands(tj_simt *s, tj_ref r, uint32_t t0, uint32_t k, uint32_t n, float *am, float *bm)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_dtype dt = (tj_dtype)in->imm;
    uint32_t size = (uint32_t)tj_dtype_size(dt);
    wg_desc b;
    if ((a_in_registers(s, r) ? a_from_registers(s, r, t0, k, am) : a_from_shared(s, r, t0, k, am)) ||
        group_desc(s, r, 1, t0, &b) || (!(in->flags & TJ_WGMMA_B_MN) && check_k_span(s, r, t0, &b, k, size)))
        return -1;
    tj_slot v;
    int bmn = (in->flags & TJ_WGMMA_B_MN) != 0;
    for (uint32_t kk = 0; kk < k; kk++)
        for (uint32_t j = 0; j < n; j++) {
            uint64_t at = bmn ? element_addr(&b, 1, size, kk, j) : element_addr(&b, 0, size, j, kk);
            if (tj_simt_shared_peek(s, r, t0, at, dt, &v) || record_read(s, r, t0, at, size))
                return -1;
            bm[kk * n + j] = (float)v.f;
        }
    return 0;
}

/* Thread t0 + 32 wl + l holds, in fragment j slot e, element (16 wl + row,
 * 8 j + col) of D, (row, col) its c-fragment position. */
static void element_of(uint32_t lane_in_group, uint32_t j, uint32_t e, uint32_t *row, uint32_t *col)
{
    uint32_t fr, fc;
    tj_simt_fragment_element(TJ_MMA_C, TJ_DT_F32, lane_in_group % WARP, e, &fr, &fc);
    *row = 16 * (lane_in_group / WARP) + fr;
    *col = 8 * j + fc;
}

/* The c fragments of wgmma r: its operands after the predicate, less the
 * zero flag's operand where it has one. */
static uint32_t c_count(const tj_inst *in)
{
    uint32_t fixed = 3 + ((in->flags & TJ_WGMMA_ZERO) != 0);
    return in->nargs >= fixed ? in->nargs - fixed : 0;
}

/* D = A * B + C for warpgroup t0 (am, bm, cm: scratch of ROWS x MAX_K,
 * MAX_K x MAX_N and ROWS x MAX_N floats); D = A * B where the zero
 * operand holds (the same in the warpgroup's threads). */
static int group_product(tj_simt *s, tj_ref r, uint32_t t0, float *am, float *bm, float *cm)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *d = &s->st.vals[r];
    uint32_t nc = c_count(in), n = 8 * nc, k = (uint32_t)tj_mma_k((tj_dtype)in->imm);
    int zero = in->flags & TJ_WGMMA_ZERO ? group_on(s, r, 3 + nc, t0) : 0;
    if (zero < 0 || read_operands(s, r, t0, k, n, am, bm))
        return -1;
    for (uint32_t j = 0; j < nc; j++) {
        const tj_rval *c = &s->st.vals[in->args[3 + j]];
        if (!c->data || c->n != s->nthreads * 4)
            return tj_simt_fail(s, r, -1, "operand %u is not a c fragment", 4 + j);
        for (uint32_t l = 0; l < GROUP; l++)
            for (uint32_t e = 0; e < 4; e++) {
                uint32_t row, col;
                element_of(l, j, e, &row, &col);
                cm[row * n + col] = zero ? 0.0f : (float)c->data[(t0 + l) * 4 + e].f;
            }
    }
    for (uint32_t i = 0; i < ROWS; i++)
        for (uint32_t j = 0; j < n; j++) {
            float acc = cm[i * n + j];
            for (uint32_t kk = 0; kk < k; kk++)
                acc += am[i * k + kk] * bm[kk * n + j];
            cm[i * n + j] = acc;
        }
    for (uint32_t j = 0; j < nc; j++)
        for (uint32_t l = 0; l < GROUP; l++)
            for (uint32_t e = 0; e < 4; e++) {
                uint32_t row, col;
                element_of(l, j, e, &row, &col);
                d->elems[j].data[(t0 + l) * 4 + e].f = cm[row * n + col];
            }
    return 0;
}

/* A warpgroup whose predicate is off: its results are its c operands. */
static int skip_group(tj_simt *s, tj_ref r, uint32_t t0)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *d = &s->st.vals[r];
    uint32_t end = t0 + GROUP < s->nthreads ? t0 + GROUP : s->nthreads;
    for (uint32_t j = 0; j < c_count(in); j++) {
        const tj_rval *c = &s->st.vals[in->args[3 + j]];
        if (!c->data || c->n != s->nthreads * 4)
            return tj_simt_fail(s, r, -1, "operand %u is not a c fragment", 4 + j);
        memcpy(d->elems[j].data + t0 * 4, c->data + t0 * 4, sizeof *c->data * 4 * (end - t0));
    }
    return 0;
}

/* Each warpgroup where the predicate holds multiplies; a trailing warp
 * short of a warpgroup (a producer warp) must have it off. */
int tj_simt_wgmma(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *d = &s->st.vals[r];
    uint32_t nc = c_count(in);
    if (!tj_mma_k((tj_dtype)in->imm) || !d->elems || nc < 1 || nc > MAX_N / 8 || d->ti->nelems != nc)
        return tj_simt_fail(s, r, -1, "malformed wgmma");
    float *scratch = malloc(sizeof *scratch * (ROWS * MAX_K + MAX_K * MAX_N + ROWS * MAX_N));
    if (!scratch)
        return tj_simt_fail(s, r, -1, "out of memory");
    int rc = a_in_registers(s, r) ? record_held(s, r, in->args[0]) : 0;
    if (!rc)
        rc = record_held(s, r, r);
    for (uint32_t t0 = 0; t0 < s->nthreads && !rc; t0 += GROUP) {
        int on = group_on(s, r, 2, t0);
        if (on > 0 && t0 + GROUP > s->nthreads)
            rc = tj_simt_fail(s, r, t0, "wgmma needs whole warpgroups of 128 threads: threads %u .. %u are not one",
                              t0, s->nthreads - 1);
        else if (on > 0)
            rc = group_product(s, r, t0, scratch, scratch + ROWS * MAX_K, scratch + ROWS * MAX_K + MAX_K * MAX_N);
        else
            rc = on < 0 ? -1 : skip_group(s, r, t0);
    }
    free(scratch);
    return rc;
}
