/* Asynchronous copies (cp_async) in the SIMT interpreter.
 *
 * A copy reads its global bytes when it is issued (the bounds and
 * alignment checks then name the right instruction) but lands in shared
 * memory only when a cp_async_wait retires its group: until then a read of
 * its destination sees what was there before, or is reported as a read of
 * bytes nobody wrote. So a lowering that reads a ring slot before waiting
 * for it computes wrong results or fails here, as it would on a GPU only
 * sometimes. Threads run in lockstep with uniform control flow, so they
 * commit and wait together: one queue serves the program. A wait lands
 * only the waiting thread's copies, so landed bytes belong to their thread
 * until a barrier publishes them; another thread's read before that is
 * reported (simt_mem.c). */
#include <stdlib.h>
#include <string.h>

#include "interp/simt.h"

enum { COPY_MAX_BYTES = 16 };

typedef struct tj_simt_copy {
    uint32_t dst, bytes, thread;
    unsigned char data[COPY_MAX_BYTES];
} tj_simt_copy;

static int scalar_u(const tj_simt *s, tj_ref r, uint32_t a, tj_dtype dt, const tj_rval **out)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *v = a < in->nargs && in->args[a] ? &s->st.vals[in->args[a]] : NULL;
    if (!v || !v->data || v->n != s->nthreads || v->dt != dt)
        return tj_simt_fail(s, r, -1, "operand %u must be a %s scalar", a, tj_dtype_name(dt));
    *out = v;
    return 0;
}

static tj_simt_copy *new_copy(tj_simt *s, tj_ref r)
{
    if (s->ncopies == s->copy_cap) {
        uint32_t cap = s->copy_cap ? 2 * s->copy_cap : 1024;
        tj_simt_copy *grown = realloc(s->copies, sizeof *grown * cap);
        if (!grown)
            return tj_simt_fail(s, r, -1, "out of memory for copies in flight"), NULL;
        s->copies = grown;
        s->copy_cap = cap;
    }
    return &s->copies[s->ncopies++];
}

int tj_simt_cp_async(tj_simt *s, tj_ref r)
{
    const tj_rval *dst = NULL, *src = NULL, *count = NULL; /* set when scalar_u succeeds; -O3 cannot tell */
    uint32_t bytes = (uint32_t)s->st.k->insts[r].imm;
    if (scalar_u(s, r, 0, TJ_DT_U32, &dst) || scalar_u(s, r, 1, TJ_DT_U64, &src) ||
        scalar_u(s, r, 2, TJ_DT_U32, &count))
        return -1;
    if (bytes != 4 && bytes != 8 && bytes != 16)
        return tj_simt_fail(s, r, -1, "copies 4, 8 or 16 bytes, not %u", bytes);
    for (uint32_t t = 0; t < s->nthreads; t++) {
        uint32_t n = (uint32_t)count->data[t].u;
        if (n > bytes)
            return tj_simt_fail(s, r, t, "copies %u of %u bytes", n, bytes);
        if (tj_simt_shared_range(s, r, t, dst->data[t].u, bytes) ||
            tj_simt_wgmma_guard(s, r, t, dst->data[t].u, bytes)) /* it may land at any time */
            return -1;
        const unsigned char *from = n ? tj_simt_global_bytes(s, r, t, src->data[t].u, n) : NULL;
        if (n && (!from || src->data[t].u % bytes))
            return from ? tj_simt_fail(s, r, t, "global address 0x%llx is not aligned to %u bytes",
                                       (unsigned long long)src->data[t].u, bytes)
                        : -1;
        tj_simt_copy *c = new_copy(s, r);
        if (!c)
            return -1;
        *c = (tj_simt_copy){.dst = (uint32_t)dst->data[t].u, .bytes = bytes, .thread = t};
        if (n)
            memcpy(c->data, from, n); /* the rest stays zero */
    }
    return 0;
}

int tj_simt_cp_async_commit(tj_simt *s, tj_ref r)
{
    if (s->ngroups == s->group_cap) {
        uint32_t cap = s->group_cap ? 2 * s->group_cap : 16;
        uint32_t *grown = realloc(s->group_end, sizeof *grown * cap);
        if (!grown)
            return tj_simt_fail(s, r, -1, "out of memory for copy groups");
        s->group_end = grown;
        s->group_cap = cap;
    }
    s->group_end[s->ngroups++] = s->ncopies;
    return 0;
}

/* The oldest group's copies land in shared memory. */
static void land_oldest(tj_simt *s)
{
    uint32_t end = s->group_end[0];
    for (uint32_t i = s->first_copy; i < end; i++) {
        const tj_simt_copy *c = &s->copies[i];
        memcpy(s->smem + c->dst, c->data, c->bytes);
        memset(s->smem_set + c->dst, 1, c->bytes);
        memset(s->smem_generic + c->dst, 1, c->bytes); /* the generic proxy's, until a fence */
        s->generic_any = 1;
        for (uint32_t b = 0; b < c->bytes; b++)
            s->smem_landed[c->dst + b] = (uint16_t)(c->thread + 1);
        s->landed_any = 1;
    }
    s->first_copy = end;
    memmove(s->group_end, s->group_end + 1, sizeof *s->group_end * --s->ngroups);
    if (s->first_copy * 2 < s->ncopies)
        return;
    /* compact: most of the array has landed */
    uint32_t keep = s->ncopies - s->first_copy;
    memmove(s->copies, s->copies + s->first_copy, sizeof *s->copies * keep);
    for (uint32_t g = 0; g < s->ngroups; g++)
        s->group_end[g] -= s->first_copy;
    s->ncopies = keep;
    s->first_copy = 0;
}

int tj_simt_cp_async_wait(tj_simt *s, tj_ref r)
{
    int64_t pending = s->st.k->insts[r].imm;
    if (pending < 0)
        return tj_simt_fail(s, r, -1, "pending = %lld is negative", (long long)pending);
    while (s->ngroups > (uint64_t)pending)
        land_oldest(s);
    return 0;
}

void tj_simt_copies_reset(tj_simt *s)
{
    s->first_copy = s->ncopies = s->ngroups = 0;
}

void tj_simt_barrier(tj_simt *s)
{
    s->epoch++; /* a new interval for the race checks (simt_mem.c) */
    if (s->landed_any)
        memset(s->smem_landed, 0, sizeof *s->smem_landed * s->st.k->smem_bytes);
    s->landed_any = 0;
}

void tj_simt_copies_free(tj_simt *s)
{
    free(s->copies);
    free(s->group_end);
    s->copies = NULL;
    s->group_end = NULL;
}
