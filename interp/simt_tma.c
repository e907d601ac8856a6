/* mbarriers and TMA copies in the SIMT interpreter (docs/simt.md, "TMA").
 *
 * An mbarrier counts the arrivals and transaction bytes of its current
 * phase: mbar_init starts phase 0 of `count` arrivals, mbar_expect_tx is
 * one arrival that expects bytes more, mbar_arrive one arrival (a warp's
 * release of a ring slot), a tma_load completes its box's bytes, and the
 * phase completes when both reach zero. A tma_load reads
 * its box when issued (the checks then name the right instruction) and
 * completes its bytes at once, but its bytes land in shared memory only
 * when an mbar_wait sees its phase completed: until then a read of its
 * destination sees what was there before (or is reported as a read of
 * bytes nobody wrote), as on a GPU only sometimes. A wait whose phase has
 * not completed could never return in lockstep (every thread is at it):
 * it is reported as the deadlock it is (a predicated wait: the threads
 * it names agree on the mbarrier and the phase). So are copies into bytes
 * a wgmma group in flight reads, arrivals beyond the count, an
 * invalidation with a phase or copies in flight, and a program that ends
 * with copies in flight. TMA writes through the async proxy: its bytes need no
 * fence_proxy_async before wgmma reads them. A box with `pair` is two
 * blocks of `rows` rows, the second pair blocks below the first, landing
 * one after the other (a 3-D tensor map's box with element stride pair
 * along the blocks: runtime/tensor_map.c).
 *
 * A tma_store (docs/simt.md, "TMA stores") reads its box of shared memory
 * when issued, which must have been written in this program and, by the
 * generic proxy, fenced since (fence_proxy_async), and writes the
 * elements inside the tensor then; its bytes stay its own until a
 * tma_store_wait of its thread retires its bulk group: a write to them
 * before (a store, a copy landing) is reported, and so is a program that
 * ends with a store not retired. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "interp/simt.h"

enum { MBAR_BYTES = 8, SMEM_ALIGN = 128, MAX_COUNT = (1 << 20) - 1 };

typedef struct tma_bar {
    uint32_t off, count, pending;
    int64_t tx;
    uint64_t phase; /* completed phases */
} tma_bar;

typedef struct tma_copy {
    uint32_t bar, dst, bytes;
    uint64_t phase; /* of its barrier when issued */
    unsigned char *image; /* its bytes as they land, swizzled */
} tma_copy;

/* A tma_store whose shared bytes the copy engine may still read. */
typedef struct tma_out {
    uint32_t thread, src, bytes;
    uint32_t group; /* the thread's bulk group (1, 2, ...), 0: still open */
} tma_out;

struct tj_simt_tma {
    tma_bar *bars;
    uint32_t nbars, bar_cap;
    tma_copy *copies;
    uint32_t ncopies, copy_cap;
    tma_out *outs;
    uint32_t nouts, out_cap;
    uint32_t *groups; /* per thread: its bulk groups committed in this program */
};

static int grow(tj_simt *s, tj_ref r, void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? 2 * *cap : 16;
    void *q = realloc(*p, size * n);
    if (!q)
        return tj_simt_fail(s, r, -1, "out of memory for mbarriers and TMA copies");
    *p = q;
    *cap = n;
    return 0;
}

static struct tj_simt_tma *state(tj_simt *s, tj_ref r)
{
    if (!s->tma && !(s->tma = calloc(1, sizeof *s->tma)))
        tj_simt_fail(s, r, -1, "out of memory for mbarriers");
    return s->tma;
}

/* Operand a of r, a scalar of dtype dt in every thread; NULL (absent
 * predicate) is fine when `optional`. */
static int scalar(const tj_simt *s, tj_ref r, uint32_t a, tj_dtype dt, int optional, const tj_rval **out)
{
    const tj_inst *in = &s->st.k->insts[r];
    *out = a < in->nargs && in->args[a] ? &s->st.vals[in->args[a]] : NULL;
    if (!*out && optional)
        return 0;
    if (!*out || !(*out)->data || (*out)->n != s->nthreads || (*out)->dt != dt)
        return tj_simt_fail(s, r, -1, "operand %u must be a %s scalar", a, tj_dtype_name(dt));
    return 0;
}

static int on(const tj_rval *pred, uint32_t t) { return !pred || pred->data[t].u; }

/* The live mbarrier at shared offset off, or NULL after reporting. */
static tma_bar *find_bar(tj_simt *s, tj_ref r, uint32_t t, uint64_t off)
{
    for (uint32_t i = 0; s->tma && i < s->tma->nbars; i++)
        if (s->tma->bars[i].off == off)
            return &s->tma->bars[i];
    return tj_simt_fail(s, r, t, "shared byte %" PRIu64 " holds no initialized mbarrier", off), NULL;
}

static void complete(tma_bar *b)
{
    if (b->pending == 0 && b->tx == 0) {
        b->phase++;
        b->pending = b->count;
    }
}

static int init_bar(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint64_t count)
{
    struct tj_simt_tma *m = state(s, r);
    if (!m || tj_simt_shared_range(s, r, t, off, MBAR_BYTES))
        return -1;
    if (count < 1 || count > MAX_COUNT)
        return tj_simt_fail(s, r, t, "an mbarrier counts 1 to %d arrivals, not %" PRIu64, MAX_COUNT, count);
    for (uint32_t i = 0; i < m->nbars; i++)
        if (m->bars[i].off < off + MBAR_BYTES && off < m->bars[i].off + MBAR_BYTES)
            return tj_simt_fail(s, r, t, "initializes shared byte %" PRIu64 ", inside a live mbarrier (not invalidated)",
                                off);
    if (grow(s, r, (void **)&m->bars, &m->bar_cap, m->nbars + 1, sizeof *m->bars))
        return -1;
    m->bars[m->nbars++] = (tma_bar){(uint32_t)off, (uint32_t)count, (uint32_t)count, 0, 0};
    memset(s->smem_set + off, 1, MBAR_BYTES);
    return 0;
}

static int inval_bar(tj_simt *s, tj_ref r, uint32_t t, uint64_t off)
{
    tma_bar *b = find_bar(s, r, t, off);
    if (!b)
        return -1;
    if (b->pending != b->count || b->tx)
        return tj_simt_fail(s, r, t, "invalidates the mbarrier at %" PRIu64 " in the middle of a phase", off);
    for (uint32_t i = 0; i < s->tma->ncopies; i++)
        if (s->tma->copies[i].bar == off)
            return tj_simt_fail(s, r, t, "invalidates the mbarrier at %" PRIu64 " with copies not yet awaited", off);
    *b = s->tma->bars[--s->tma->nbars];
    return 0;
}

/* One arrival, expecting `bytes` more (mbar_expect_tx; 0: mbar_arrive). */
static int arrive(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint64_t bytes)
{
    tma_bar *b = find_bar(s, r, t, off);
    if (!b)
        return -1;
    if (!b->pending)
        return tj_simt_fail(s, r, t, "arrives at the mbarrier at %" PRIu64 " more often than its count", off);
    b->tx += (int64_t)bytes;
    b->pending--;
    complete(b);
    return 0;
}

int tj_simt_mbarrier(tj_simt *s, tj_ref r)
{
    tj_op op = s->st.k->insts[r].op;
    const tj_rval *addr, *n = NULL, *pred = NULL;
    int counted = op != TJ_OP_MBAR_INVAL && op != TJ_OP_MBAR_ARRIVE;
    if (scalar(s, r, 0, TJ_DT_U32, 0, &addr) || (counted && scalar(s, r, 1, TJ_DT_U32, 0, &n)) ||
        scalar(s, r, counted ? 2 : 1, TJ_DT_BOOL, 1, &pred))
        return -1;
    if (op == TJ_OP_MBAR_WAIT)
        return tj_simt_mbar_wait(s, r, addr, n, pred);
    for (uint32_t t = 0; t < s->nthreads; t++) {
        uint64_t off = addr->data[t].u;
        if (!on(pred, t))
            continue;
        if (off % MBAR_BYTES)
            return tj_simt_fail(s, r, t, "an mbarrier at shared byte %" PRIu64 " is not 8-byte aligned", off);
        int rc = op == TJ_OP_MBAR_INIT    ? init_bar(s, r, t, off, n->data[t].u)
                 : op == TJ_OP_MBAR_INVAL ? inval_bar(s, r, t, off)
                                          : arrive(s, r, t, off, n ? n->data[t].u : 0);
        if (rc)
            return -1;
    }
    return 0;
}

/* The copies of completed phases of the mbarrier at off land. */
static void land(tj_simt *s, uint32_t off, uint64_t phase)
{
    struct tj_simt_tma *m = s->tma;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < m->ncopies; i++) {
        tma_copy *c = &m->copies[i];
        if (c->bar == off && c->phase < phase) {
            memcpy(s->smem + c->dst, c->image, c->bytes);
            memset(s->smem_set + c->dst, 1, c->bytes);
            free(c->image);
        } else {
            m->copies[keep++] = *c;
        }
    }
    m->ncopies = keep;
}

int tj_simt_mbar_wait(tj_simt *s, tj_ref r, const tj_rval *addr, const tj_rval *parity, const tj_rval *pred)
{
    uint32_t first = 0;
    while (first < s->nthreads && !on(pred, first))
        first++;
    if (first == s->nthreads) /* no thread waits */
        return 0;
    for (uint32_t t = first + 1; t < s->nthreads; t++)
        if (on(pred, t) && (addr->data[t].u != addr->data[first].u || parity->data[t].u != parity->data[first].u))
            return tj_simt_fail(s, r, t, "threads wait for different mbarriers or phases");
    uint64_t off = addr->data[first].u, p = parity->data[first].u;
    tma_bar *b = find_bar(s, r, first, off);
    if (!b)
        return -1;
    if (p > 1)
        return tj_simt_fail(s, r, -1, "a phase parity is 0 or 1, not %" PRIu64, p);
    if ((b->phase & 1) == p)
        return tj_simt_fail(s, r, -1,
                            "waits for the phase of parity %" PRIu64 " of the mbarrier at %" PRIu64
                            ", which nothing in flight completes (%u arrivals and %" PRId64 " bytes missing)",
                            p, off, b->pending, b->tx);
    land(s, b->off, b->phase);
    return 0;
}

/* ---- tma_load ---- */

/* The box of copy c at column c0, row c1 of tensor t, swizzled into image
 * (rows of S bytes at dst: the 16-byte chunk bits of each address XORed
 * with bits 7 and up, as the tensor map's swizzle mode writes them). */
static int read_box(tj_simt *s, tj_ref r, uint32_t th, const tj_tensor *t, int64_t c0, int64_t c1, uint32_t cols,
                    uint32_t rows, uint32_t S, uint32_t dst, unsigned char *image)
{
    int size = tj_dtype_size(t->dtype);
    for (uint32_t i = 0; i < rows; i++) {
        int64_t row = c1 + i;
        for (uint32_t j = 0; j < cols; j++) {
            int64_t col = c0 + j;
            uint32_t at = dst + i * S + j * (uint32_t)size;
            at ^= ((at >> 7) & (S / 16 - 1)) << 4;
            unsigned char *to = image + (at - dst);
            if (row < 0 || row >= t->shape[0] || col < 0 || col >= t->shape[1]) {
                memset(to, 0, (size_t)size);
                continue;
            }
            uint64_t addr = (uint64_t)(uintptr_t)t->data + (uint64_t)((row * t->strides[0] + col) * size);
            const unsigned char *from = tj_simt_global_bytes(s, r, th, addr, (uint32_t)size);
            if (!from)
                return -1;
            memcpy(to, from, (size_t)size);
        }
    }
    return 0;
}

/* What a tensor map needs of its tensor (cuTensorMapEncodeTiled). */
static int map_fits(tj_simt *s, tj_ref r, const tj_tensor *t)
{
    int size = tj_dtype_size(t->dtype);
    if ((uintptr_t)t->data % 16 || t->strides[1] != 1 || (t->strides[0] * size) % 16 || t->shape[0] < 1 ||
        t->shape[1] < 1)
        return tj_simt_fail(s, r, -1,
                            "a tensor map needs a non-empty tensor at a 16-byte aligned address, unit inner "
                            "stride and rows 16-byte aligned (sizes %" PRId64 " x %" PRId64 ", strides %" PRId64
                            ", %" PRId64 ")", t->shape[0], t->shape[1], t->strides[0], t->strides[1]);
    return 0;
}

static int issue(tj_simt *s, tj_ref r, uint32_t t, const tj_tensor *ten, uint64_t dst, uint64_t bar, int64_t c0,
                 int64_t c1)
{
    const tj_inst *in = &s->st.k->insts[r];
    uint32_t cols = (uint32_t)(in->imm & 0xffff), rows = (uint32_t)(in->imm >> 16 & 0xffff), S = in->flags;
    uint32_t pair = (uint32_t)(in->imm >> 32 & 0xff), blocks = pair ? 2 : 1, bytes = blocks * rows * S;
    if (pair && (c1 % rows || ten->shape[0] % rows))
        return tj_simt_fail(s, r, t, "a box of two blocks of %u rows starts at row %" PRId64 " of a tensor of %" PRId64
                            " rows: its 3-D tensor map needs both multiples of %u", rows, c1, ten->shape[0], rows);
    tma_bar *b = find_bar(s, r, t, bar);
    if (!b || tj_simt_shared_range(s, r, t, dst, bytes) || tj_simt_wgmma_unread(s, r, t, dst, bytes))
        return -1;
    if (dst % SMEM_ALIGN)
        return tj_simt_fail(s, r, t, "a TMA destination at shared byte %" PRIu64 " is not %d-byte aligned", dst,
                            SMEM_ALIGN);
    for (uint32_t i = 0; i < s->tma->nbars; i++)
        if (s->tma->bars[i].off < dst + bytes && dst < s->tma->bars[i].off + MBAR_BYTES)
            return tj_simt_fail(s, r, t, "copies over the live mbarrier at %u", s->tma->bars[i].off);
    struct tj_simt_tma *m = s->tma;
    if (grow(s, r, (void **)&m->copies, &m->copy_cap, m->ncopies + 1, sizeof *m->copies))
        return -1;
    unsigned char *image = malloc(bytes);
    if (!image)
        return tj_simt_fail(s, r, t, "out of memory for a TMA copy");
    for (uint32_t h = 0; h < blocks; h++) /* a pair's second block: pair blocks further down */
        if (read_box(s, r, t, ten, c0, c1 + (int64_t)h * pair * rows, cols, rows, S, (uint32_t)dst + h * rows * S,
                     image + h * rows * S)) {
            free(image);
            return -1;
        }
    m->copies[m->ncopies++] = (tma_copy){b->off, (uint32_t)dst, bytes, b->phase, image};
    b->tx -= bytes; /* complete_tx: the bytes have arrived (they land at the wait) */
    complete(b);
    return 0;
}

/* The tensor parameter operand 0 of tma_load or tma_store r names (NULL
 * after reporting). */
static const tj_tensor *map_tensor(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_inst *p = in->nargs >= 1 && in->args[0] ? &s->st.k->insts[in->args[0]] : NULL;
    if (!p || p->op != TJ_OP_PARAM || p->imm < 0 || (uint64_t)p->imm >= s->st.k->nparams ||
        !s->st.args[p->imm].is_tensor || s->st.args[p->imm].tensor.rank != 2)
        return tj_simt_fail(s, r, -1, "operand 0 must be a rank-2 tensor parameter"), NULL;
    return &s->st.args[p->imm].tensor;
}

int tj_simt_tma_load(tj_simt *s, tj_ref r)
{
    const tj_tensor *t = map_tensor(s, r);
    const tj_rval *dst, *bar, *c0, *c1, *pred;
    if (!t || scalar(s, r, 1, TJ_DT_U32, 0, &dst) || scalar(s, r, 2, TJ_DT_U32, 0, &bar) ||
        scalar(s, r, 3, TJ_DT_I32, 0, &c0) || scalar(s, r, 4, TJ_DT_I32, 0, &c1) ||
        scalar(s, r, 5, TJ_DT_BOOL, 1, &pred) || !state(s, r))
        return -1;
    for (uint32_t th = 0; th < s->nthreads; th++)
        if (on(pred, th) && (map_fits(s, r, t) || issue(s, r, th, t, dst->data[th].u, bar->data[th].u,
                                                         c0->data[th].i, c1->data[th].i)))
            return -1;
    return 0;
}

/* ---- tma_store and its bulk groups ---- */

/* The box of store r at shared src, rows of S bytes swizzled as read_box
 * writes them, to column c0, row c1 of tensor t: the elements inside it. */
static int write_box(tj_simt *s, tj_ref r, uint32_t th, const tj_tensor *t, int64_t c0, int64_t c1, uint32_t cols,
                     uint32_t rows, uint32_t S, uint32_t src)
{
    int size = tj_dtype_size(t->dtype);
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t j = 0; j < cols; j++) {
            int64_t row = c1 + i, col = c0 + j;
            if (row < 0 || row >= t->shape[0] || col < 0 || col >= t->shape[1])
                continue; /* clipped */
            uint32_t at = src + i * S + j * (uint32_t)size;
            at ^= ((at >> 7) & (S / 16 - 1)) << 4;
            uint64_t addr = (uint64_t)(uintptr_t)t->data + (uint64_t)((row * t->strides[0] + col) * size);
            unsigned char *to = tj_simt_global_bytes(s, r, th, addr, (uint32_t)size);
            if (!to)
                return -1;
            memcpy(to, s->smem + at, (size_t)size);
        }
    return 0;
}

/* Shared bytes [src, src + bytes) as a store's source: written in this
 * program, and by the generic proxy only with a fence_proxy_async since
 * (the copy engine reads through the async proxy). */
static int store_source(tj_simt *s, tj_ref r, uint32_t t, uint64_t src, uint32_t bytes)
{
    if (src % SMEM_ALIGN)
        return tj_simt_fail(s, r, t, "a TMA source at shared byte %" PRIu64 " is not %d-byte aligned", src,
                            SMEM_ALIGN);
    if (tj_simt_shared_range(s, r, t, src, bytes))
        return -1;
    for (uint64_t b = src; b < src + bytes; b++) {
        if (!s->smem_set[b])
            return tj_simt_fail(s, r, t, "stores shared byte %" PRIu64 ", which no thread has written in this "
                                "program", b);
        if (s->smem_generic[b])
            return tj_simt_fail(s, r, t, "stores shared byte %" PRIu64 ", written by the generic proxy with no "
                                "fence_proxy_async since", b);
    }
    return 0;
}

static int issue_store(tj_simt *s, tj_ref r, uint32_t t, const tj_tensor *ten, uint64_t src, int64_t c0, int64_t c1)
{
    const tj_inst *in = &s->st.k->insts[r];
    uint32_t cols = (uint32_t)(in->imm & 0xffff), rows = (uint32_t)(in->imm >> 16 & 0xffff), S = in->flags;
    struct tj_simt_tma *m = s->tma;
    if (store_source(s, r, t, src, rows * S) ||
        write_box(s, r, t, ten, c0, c1, cols, rows, S, (uint32_t)src) ||
        grow(s, r, (void **)&m->outs, &m->out_cap, m->nouts + 1, sizeof *m->outs))
        return -1;
    m->outs[m->nouts++] = (tma_out){t, (uint32_t)src, rows * S, 0};
    return 0;
}

/* The global writes happen at the issue (programs run one after another,
 * and the lowering stores by TMA only tensors nothing else in the program
 * accesses); the shared bytes stay the store's until a wait retires its
 * group: a write to them before is reported (tj_simt_tma_unread). */
int tj_simt_tma_store(tj_simt *s, tj_ref r)
{
    const tj_tensor *t = map_tensor(s, r);
    const tj_rval *src, *c0, *c1, *pred;
    if (!t || scalar(s, r, 1, TJ_DT_U32, 0, &src) || scalar(s, r, 2, TJ_DT_I32, 0, &c0) ||
        scalar(s, r, 3, TJ_DT_I32, 0, &c1) || scalar(s, r, 4, TJ_DT_BOOL, 1, &pred) || !state(s, r))
        return -1;
    for (uint32_t th = 0; th < s->nthreads; th++)
        if (on(pred, th) && (map_fits(s, r, t) || issue_store(s, r, th, t, src->data[th].u, c0->data[th].i,
                                                              c1->data[th].i)))
            return -1;
    s->st.writes++;
    return 0;
}

static uint32_t *thread_groups(tj_simt *s, tj_ref r)
{
    struct tj_simt_tma *m = state(s, r);
    if (m && !m->groups && !(m->groups = calloc(s->nthreads, sizeof *m->groups)))
        tj_simt_fail(s, r, -1, "out of memory for bulk groups");
    return m ? m->groups : NULL;
}

/* tma_store_commit: each thread's open stores become its next group;
 * tma_store_wait {pending = N}: all but the thread's N newest groups are
 * retired. */
int tj_simt_tma_store_group(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *pred;
    uint32_t *groups = thread_groups(s, r);
    if (!groups || scalar(s, r, 0, TJ_DT_BOOL, 1, &pred))
        return -1;
    struct tj_simt_tma *m = s->tma;
    int commit = in->op == TJ_OP_TMA_STORE_COMMIT;
    for (uint32_t t = 0; t < s->nthreads; t++)
        groups[t] += commit && on(pred, t);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < m->nouts; i++) {
        tma_out *o = &m->outs[i];
        if (commit && on(pred, o->thread) && !o->group)
            o->group = groups[o->thread];
        int retired = !commit && on(pred, o->thread) && o->group &&
                      (int64_t)o->group <= (int64_t)groups[o->thread] - in->imm;
        if (!retired)
            m->outs[keep++] = *o;
    }
    m->nouts = keep;
    return 0;
}

int tj_simt_tma_unread(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t n)
{
    for (uint32_t i = 0; s->tma && i < s->tma->nouts; i++) {
        const tma_out *o = &s->tma->outs[i];
        if (o->src < off + n && off < (uint64_t)o->src + o->bytes)
            return tj_simt_fail(s, r, t, "writes shared byte %" PRIu64 ", which a TMA store of thread %u still "
                                "reads (no tma_store_wait retired its group)", off > o->src ? off : o->src,
                                o->thread);
    }
    return 0;
}

int tj_simt_tma_end(tj_simt *s)
{
    if (!s->tma || (!s->tma->ncopies && !s->tma->nouts))
        return 0;
    if (s->tma->ncopies)
        tj_error(s->st.ctx, "simt: kernel '%s', program (%lld, %lld, %lld): it ends with %u TMA copies not awaited",
                 s->st.k->name, (long long)s->st.pid[0], (long long)s->st.pid[1], (long long)s->st.pid[2],
                 s->tma->ncopies);
    else
        tj_error(s->st.ctx, "simt: kernel '%s', program (%lld, %lld, %lld): it ends with %u TMA stores whose bulk "
                 "group no tma_store_wait retired", s->st.k->name, (long long)s->st.pid[0], (long long)s->st.pid[1],
                 (long long)s->st.pid[2], s->tma->nouts);
    return -1;
}

void tj_simt_tma_reset(tj_simt *s)
{
    if (!s->tma)
        return;
    for (uint32_t i = 0; i < s->tma->ncopies; i++)
        free(s->tma->copies[i].image);
    s->tma->ncopies = s->tma->nbars = s->tma->nouts = 0;
    if (s->tma->groups)
        memset(s->tma->groups, 0, sizeof *s->tma->groups * s->nthreads);
}

void tj_simt_tma_free(tj_simt *s)
{
    tj_simt_tma_reset(s);
    if (s->tma) {
        free(s->tma->bars);
        free(s->tma->copies);
        free(s->tma->outs);
        free(s->tma->groups);
        free(s->tma);
    }
    s->tma = NULL;
}
