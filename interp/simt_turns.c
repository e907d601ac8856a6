/* Named barriers in the SIMT interpreter: bar_sync and bar_arrive
 * (docs/simt.md, "wgmma"; the warpgroups' turns of lower/wgmma_turns.c).
 *
 * In lockstep a bar_sync cannot wait for threads that, on a GPU, would
 * arrive later: every thread is at the same instruction. What the
 * interpreter can check is the protocol's arithmetic, which a GPU punishes
 * with a hang: whole warps arrive (the same barrier, count and predicate
 * in all 32 lanes), barriers 1 to 15 (0 is `barrier`'s), counts of whole
 * warps up to the program's threads, every arrival of a phase with the
 * phase's count, each warp once a phase (a second arrival of a warp is
 * its next turn's, come before the others completed this one: in lockstep
 * the sign of a lost hand-over), and no phase left part-full when the
 * program ends (its waiters would wait forever, or a later phase would
 * start part-full). */
#include <inttypes.h>
#include <string.h>

#include "interp/simt.h"

enum { WARP = 32 };

/* Operand a of r, a scalar in every thread (NULL: an absent predicate). */
static const tj_rval *operand(const tj_simt *s, tj_ref r, uint32_t a)
{
    const tj_inst *in = &s->st.k->insts[r];
    return in->args[a] ? &s->st.vals[in->args[a]] : NULL;
}

static uint64_t at(const tj_rval *v, uint32_t t) { return v ? v->data[t].u : 1; }

/* Whether lane 0's id, count and predicate are every lane's of warp w. */
static int warp_agrees(const tj_simt *s, const tj_rval *const v[3], uint32_t w)
{
    for (uint32_t t = w * WARP + 1; t < (w + 1) * WARP && t < s->nthreads; t++)
        for (int a = 0; a < 3; a++)
            if (at(v[a], t) != at(v[a], w * WARP))
                return 0;
    return 1;
}

/* Warp w's 32 arrivals at barrier id with `count`. */
static int arrive(tj_simt *s, tj_ref r, uint32_t w, uint64_t id, uint64_t count)
{
    uint32_t t = w * WARP;
    if (id < 1 || id >= TJ_SIMT_NAMED_BARRIERS)
        return tj_simt_fail(s, r, t, "named barrier %" PRIu64 ": they are 1 to %d (0 is barrier's)", id,
                            TJ_SIMT_NAMED_BARRIERS - 1);
    if (count < WARP || count % WARP || count > s->nthreads)
        return tj_simt_fail(s, r, t, "a count of %" PRIu64 " threads: whole warps, at most the program's %u", count,
                            s->nthreads);
    if (s->bar_arrived[id] && s->bar_count[id] != count)
        return tj_simt_fail(s, r, t, "named barrier %" PRIu64 " counts to %" PRIu64 " where its phase counts to %u",
                            id, count, s->bar_count[id]);
    if (s->bar_warps[id] >> w & 1)
        return tj_simt_fail(s, r, t, "warp %u arrives twice in one phase of named barrier %" PRIu64, w, id);
    s->bar_count[id] = (uint32_t)count;
    s->bar_warps[id] |= 1u << w;
    s->bar_arrived[id] += WARP;
    if (s->bar_arrived[id] == count) { /* the phase completes; its waiters go on */
        s->bar_arrived[id] = 0;
        s->bar_warps[id] = 0;
    }
    return 0;
}

int tj_simt_named_barrier(tj_simt *s, tj_ref r)
{
    const tj_rval *v[3] = {operand(s, r, 0), operand(s, r, 1), operand(s, r, 2)};
    if (!v[0] || !v[1] || s->nthreads % WARP)
        return tj_simt_fail(s, r, -1, "a named barrier needs its id and count and whole warps");
    for (uint32_t w = 0; w < s->nthreads / WARP; w++) {
        if (!warp_agrees(s, v, w))
            return tj_simt_fail(s, r, w * WARP, "the lanes of warp %u disagree on the barrier, count or predicate",
                                w);
        if (at(v[2], w * WARP) && arrive(s, r, w, at(v[0], w * WARP), at(v[1], w * WARP)))
            return -1;
    }
    return 0;
}

int tj_simt_named_end(tj_simt *s)
{
    for (uint32_t id = 1; id < TJ_SIMT_NAMED_BARRIERS; id++) {
        if (!s->bar_arrived[id])
            continue;
        tj_error(s->st.ctx, "simt: kernel '%s', program (%lld, %lld, %lld): it ends with named barrier %u at %u of "
                 "its %u arrivals (on a GPU its waiters would wait forever)", s->st.k->name,
                 (long long)s->st.pid[0], (long long)s->st.pid[1], (long long)s->st.pid[2], id,
                 s->bar_arrived[id], s->bar_count[id]);
        return -1;
    }
    return 0;
}

void tj_simt_named_reset(tj_simt *s)
{
    memset(s->bar_arrived, 0, sizeof s->bar_arrived);
    memset(s->bar_count, 0, sizeof s->bar_count);
    memset(s->bar_warps, 0, sizeof s->bar_warps);
}
