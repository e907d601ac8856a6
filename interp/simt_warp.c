/* Warp shuffles, pack and extract in the SIMT interpreter.
 *
 * Shuffles read other lanes of the same 32-lane warp, as PTX shfl.sync
 * does with a full warp: xor reads lane ^ mask; up reads lane - delta,
 * lanes below delta keep their own value; idx reads the lane given by the
 * low 5 bits of its operand (shfl.sync.idx with clamp 31). Ballots gather
 * a predicate of every lane of the warp into a u32. */
#include "interp/simt.h"

int tj_simt_shuffle(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    const tj_rval *v = in->nargs ? &s->st.vals[in->args[0]] : NULL;
    const tj_rval *lane = in->op == TJ_OP_SHFL_IDX && in->nargs == 2 ? &s->st.vals[in->args[1]] : NULL;
    if (!v || !v->data || v->n != rv->n || v->dt != rv->dt)
        return tj_simt_fail(s, r, -1, "the operand must have the result's type");
    if (in->op == TJ_OP_SHFL_IDX && (!lane || !lane->data || lane->n != s->nthreads || !tj_dtype_is_int(lane->dt)))
        return tj_simt_fail(s, r, -1, "the source lane must be an integer scalar");
    if (in->op != TJ_OP_SHFL_IDX && (in->imm < 0 || in->imm > 31))
        return tj_simt_fail(s, r, -1, "lane offset %lld out of range (0 to 31)", (long long)in->imm);
    uint32_t w = tj_simt_width(s, r), k = (uint32_t)in->imm;
    for (uint32_t t = 0; t < s->nthreads; t++) {
        uint32_t me = t % 32, src;
        switch (in->op) {
        case TJ_OP_SHFL_XOR: src = me ^ k; break;
        case TJ_OP_SHFL_UP: src = me >= k ? me - k : me; break;
        default: src = (uint32_t)(lane->data[t].u & 31); break;
        }
        uint32_t from = t - me + src;
        if (from >= s->nthreads)
            return tj_simt_fail(s, r, t, "reads lane %u of a warp that has only %u threads", src,
                                s->nthreads - (t - me));
        for (uint32_t e = 0; e < w; e++)
            rv->data[t * w + e] = v->data[from * w + e];
    }
    return 0;
}

/* ballot: every lane of a warp gets the mask of the lanes whose predicate
 * holds (vote.sync.ballot with a full warp). */
int tj_simt_ballot(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    const tj_rval *p = in->nargs == 1 ? &s->st.vals[in->args[0]] : NULL;
    if (!p || !p->data || p->n != s->nthreads || p->dt != TJ_DT_BOOL || rv->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "the predicate must be a bool scalar");
    for (uint32_t w = 0; w < s->nthreads; w += 32) {
        uint64_t mask = 0;
        for (uint32_t l = 0; l < 32 && w + l < s->nthreads; l++)
            mask |= (uint64_t)(p->data[w + l].u != 0) << l;
        for (uint32_t l = 0; l < 32 && w + l < s->nthreads; l++)
            rv->data[w + l].u = mask;
    }
    return 0;
}

/* elect: lane 0 of each warp (in lockstep every lane is active) */
int tj_simt_elect(tj_simt *s, tj_ref r)
{
    tj_rval *rv = &s->st.vals[r];
    if (!rv->data || rv->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "elect gives a bool scalar");
    for (uint32_t t = 0; t < s->nthreads; t++)
        rv->data[t].u = t % 32 == 0;
    return 0;
}

int tj_simt_pack(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    uint32_t w = tj_simt_width(s, r);
    if (in->nargs != w)
        return tj_simt_fail(s, r, -1, "packs %u values into a vector of %u", in->nargs, w);
    for (uint32_t a = 0; a < w; a++) {
        const tj_rval *x = &s->st.vals[in->args[a]];
        if (!x->data || x->n != s->nthreads || x->dt != rv->dt)
            return tj_simt_fail(s, r, -1, "operand %u must be a %s scalar", a, tj_dtype_name(rv->dt));
        for (uint32_t t = 0; t < s->nthreads; t++)
            rv->data[t * w + a] = x->data[t];
    }
    return 0;
}

int tj_simt_extract(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    const tj_rval *v = in->nargs == 1 ? &s->st.vals[in->args[0]] : NULL;
    uint32_t w = v && v->data ? v->n / s->nthreads : 0;
    if (!v || !v->data || v->dt != rv->dt || rv->n != s->nthreads || in->imm < 0 || in->imm >= w)
        return tj_simt_fail(s, r, -1, "extracts an element of a vector of the result's dtype");
    for (uint32_t t = 0; t < s->nthreads; t++)
        rv->data[t] = v->data[t * w + (uint32_t)in->imm];
    return 0;
}
