/* Attention: softmax(q @ k * s [+ mask], axis=-1) @ v, as tj_array_softmax
 * builds it, fused into one flash-attention kernel: each program takes BM query
 * rows and runs over the keys in blocks of BN with a running maximum and
 * sum (the online softmax), so the [M, N] scores never reach memory. The
 * pattern must be whole: its inner nodes read by nothing else. */
#include <stdio.h>
#include <string.h>

#include "array/array_internal.h"

typedef struct chain {
    tj_array pv, div, e, sum, sub, z, max, qk;
    tj_array mul, add, mask; /* qk * s, z = that + mask; 0 where absent */
    double scale;
} chain;

static const tj_anode *node(const tj_graph *g, tj_array a) { return &g->nodes[a]; }

static int is_op(const tj_graph *g, tj_array a, tj_aop op) { return node(g, a)->op == op; }

static int last_axis(const tj_graph *g, tj_array r)
{
    const tj_anode *x = node(g, r);
    return x->rank >= 1 && x->axes == (1u << (x->rank - 1));
}

static int scalar_const(const tj_graph *g, tj_array a, double *v)
{
    const tj_anode *x = node(g, a);
    if (x->op != TJ_AOP_FULL || x->has_data || tj_shape_numel(x->rank, x->shape) != 1)
        return 0;
    *v = x->value;
    return 1;
}

/* t = qk * s, s * qk, or qk itself. */
static int scaled(const tj_graph *g, tj_array t, chain *c)
{
    c->scale = 1.0;
    if (is_op(g, t, TJ_AOP_MATMUL)) {
        c->qk = t;
        return 1;
    }
    const tj_anode *x = node(g, t);
    if (x->op != TJ_AOP_MULTIPLY)
        return 0;
    for (int i = 0; i < 2; i++)
        if (is_op(g, x->in[i], TJ_AOP_MATMUL) && scalar_const(g, x->in[1 - i], &c->scale)) {
            c->qk = x->in[i];
            c->mul = t;
            return 1;
        }
    return 0;
}

/* z = scaled scores, or scaled scores + an additive mask within their shape. */
static int scores(const tj_graph *g, tj_array z, chain *c)
{
    c->z = z;
    const tj_anode *x = node(g, z);
    if (x->op != TJ_AOP_ADD)
        return scaled(g, z, c);
    for (int i = 0; i < 2; i++) {
        const tj_anode *m = node(g, x->in[1 - i]);
        int fits = m->rank <= x->rank;
        for (int k = 0; fits && k < m->rank; k++)
            fits = m->shape[k] == 1 || m->shape[k] == x->shape[k + x->rank - m->rank];
        if (fits && m->dtype == x->dtype && scaled(g, x->in[i], c)) {
            c->add = z;
            c->mask = x->in[1 - i];
            return 1;
        }
    }
    return 0;
}

static int match_chain(const tj_graph *g, tj_array pv, chain *c)
{
    memset(c, 0, sizeof *c);
    c->pv = pv;
    const tj_anode *m = node(g, pv);
    if (m->op != TJ_AOP_MATMUL || !is_op(g, m->in[0], TJ_AOP_DIVIDE))
        return 0;
    c->div = m->in[0];
    const tj_anode *d = node(g, c->div);
    c->e = d->in[0];
    c->sum = d->in[1];
    if (!is_op(g, c->e, TJ_AOP_EXP) || !is_op(g, c->sum, TJ_AOP_SUM) || node(g, c->sum)->in[0] != c->e ||
        !last_axis(g, c->sum))
        return 0;
    c->sub = node(g, c->e)->in[0];
    if (!is_op(g, c->sub, TJ_AOP_SUBTRACT))
        return 0;
    tj_array z = node(g, c->sub)->in[0];
    c->max = node(g, c->sub)->in[1];
    if (!is_op(g, c->max, TJ_AOP_MAX) || node(g, c->max)->in[0] != z || !last_axis(g, c->max))
        return 0;
    return scores(g, z, c);
}

/* Every inner node pending, not a root, read only inside the chain. */
static int whole(const chain *c, const uint8_t *needed, const uint8_t *root, const uint32_t *nusers)
{
    tj_array inner[9] = {c->div, c->e, c->sum, c->sub, c->max, c->z};
    uint32_t uses[9] = {1, 2, 1, 1, 1, 2}, n = 6;
    if (c->mul && c->mul != c->z) { /* z = mul + mask */
        inner[n] = c->mul;
        uses[n++] = 1;
    }
    if (c->qk != c->z) {
        inner[n] = c->qk;
        uses[n++] = 1;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!needed[inner[i]] || root[inner[i]] || nusers[inner[i]] != uses[i])
            return 0;
    return 1;
}

/* Operands the kernel handles: 16-bit or f32, heads up to 256 wide. */
static int fits(const tj_graph *g, const chain *c)
{
    const tj_anode *qk = node(g, c->qk), *q = node(g, qk->in[0]), *v = node(g, node(g, c->pv)->in[1]);
    tj_dtype dt = node(g, c->pv)->dtype;
    if (dt != TJ_DT_F32 && dt != TJ_DT_F16 && dt != TJ_DT_BF16)
        return 0;
    if (node(g, c->div)->dtype != dt || qk->dtype != dt || q->dtype != dt || v->dtype != dt ||
        node(g, qk->in[1])->dtype != dt)
        return 0;
    return q->shape[q->rank - 1] <= 256 && v->shape[v->rank - 1] <= 256 && qk->rank == node(g, c->pv)->rank;
}

int tj_match_attention(const tj_graph *g, tj_array a, const uint8_t *needed, const uint8_t *root,
                       const uint32_t *nusers, tj_group *grp)
/* q, k and v are its inputs: the caller materializes them */
{
    chain c;
    if (!match_chain(g, a, &c) || !whole(&c, needed, root, nusers) || !fits(g, &c))
        return 0;
    const tj_anode *qk = node(g, c.qk);
    tj_array in[4] = {qk->in[0], qk->in[1], node(g, a)->in[1], c.mask};
    memset(grp, 0, sizeof *grp);
    grp->kind = TJ_GROUP_ATTENTION;
    grp->root = a;
    grp->core = c.qk;
    grp->scale = c.scale;
    tj_array members[] = {c.qk, c.mul, c.add, c.max, c.sub, c.e, c.sum, c.div, c.pv};
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
        if (members[i])
            grp->members[grp->nmembers++] = members[i];
    for (int i = 0; i < 3 + (c.mask != 0); i++)
        grp->inputs[grp->ninputs++] = in[i];
    return 1;
}

static int64_t pow2ceil(int64_t x)
{
    int64_t p = 1;
    while (p < x)
        p *= 2;
    return p;
}

/* x's strides over [batch..., rows, cols] (rb batch axes), aligned on the
 * right, 0 where it broadcasts. */
static void operand_strides(const tj_graph *g, tj_array a, int rb, int64_t *batch, int64_t *two)
{
    const tj_anode *x = node(g, a);
    int64_t own[TJ_MAX_RANK], st[TJ_MAX_RANK + 2];
    tj_node_strides(g, a, own);
    int r = rb + 2;
    for (int i = 0; i < r; i++) {
        int k = i - (r - x->rank);
        st[i] = k >= 0 && x->shape[k] != 1 ? own[k] : 0;
    }
    for (int i = 0; i < rb; i++)
        batch[i] = st[i];
    two[0] = st[rb];
    two[1] = st[rb + 1];
}

int tj_tile_attention(const tj_graph *g, tj_group *grp, tj_group_args *args, tj_rt_error *err)
{
    const tj_anode *y = node(g, grp->root);
    int rb = y->rank - 2;
    if (rb > TJ_MAX_RANK - 2)
        return tj_rt_fail(err, "tiling: attention with %d batch axes", rb);
    int nops = (int)grp->ninputs + 1; /* q, k, v, [mask,] the output */
    tj_array ops[5] = {grp->inputs[0], grp->inputs[1], grp->inputs[2], grp->inputs[3], grp->root};
    ops[nops - 1] = grp->root;
    int64_t batch[5][TJ_MAX_RANK], two[5][2];
    for (int o = 0; o < nops; o++)
        operand_strides(g, ops[o], rb, batch[o], two[o]);
    /* the batch axes stay as they are (no merging: four arrays rarely agree) */
    grp->nbatch = rb;
    grp->space_rank = rb + 2;
    for (int i = 0; i < rb; i++)
        grp->space[i] = y->shape[i];
    const tj_anode *q = node(g, grp->inputs[0]), *k = node(g, grp->inputs[1]);
    int64_t M = y->shape[rb], E = y->shape[rb + 1], D = q->shape[q->rank - 1], N = k->shape[k->rank - 1];
    grp->space[rb] = M;
    grp->space[rb + 1] = E;
    grp->k_extent = N;
    grp->bd = pow2ceil(D);
    grp->be = pow2ceil(E);
    grp->bm = grp->bd > 128 || grp->be > 128 ? 32 : 64;
    grp->bn = 64;
    /* f32 runs its products on FMAs with whole tiles in registers: 8 warps
     * at 64 x 64 hold 83 registers a thread, 4 151 (ptxas 13; 255 and a
     * spill before the block's q was pinned), 2 programs an SM by shared
     * memory either way; 16-bit ones on mma */
    grp->warps = y->dtype == TJ_DT_F32 ? tj_warps_for_tile(grp->bm * (grp->bn > grp->be ? grp->bn : grp->be)) : 4;
    /* its divisions, acc / li, run once an output after the loop over the keys */
    grp->no_calls = 1;
    snprintf(grp->why, sizeof grp->why, "flash: %lld queries, %lld keys, head %lld -> %lld", (long long)M,
             (long long)N, (long long)D, (long long)E);
    int64_t rows[5] = {M, D, N, M, M}, cols[5] = {D, N, E, N, E};
    rows[nops - 1] = M;
    cols[nops - 1] = E;
    for (int o = 0; o < nops; o++) {
        tj_tensor *t = &args->t[o];
        const tj_anode *x = node(g, ops[o]);
        memset(t, 0, sizeof *t);
        t->data = x->buf ? (char *)x->buf->data + x->offset * tj_dtype_size(x->dtype) : NULL;
        t->dtype = x->dtype;
        t->rank = rb + 2;
        for (int i = 0; i < rb; i++) {
            t->shape[i] = y->shape[i];
            t->strides[i] = batch[o][i];
        }
        t->shape[rb] = rows[o];
        t->shape[rb + 1] = cols[o];
        t->strides[rb] = two[o][0];
        t->strides[rb + 1] = two[o][1];
    }
    args->nargs = (uint32_t)nops;
    return 0;
}

/* The kernel takes the softmax in base 2, as examples/attention.tj does:
 * exp(x) = exp2(x * log2(e)), so the scores are multiplied by s * log2(e)
 * (by log2(e) after the mask is added, where there is one) and p and alpha
 * are exp2s; exp would multiply by log2(e) again and, without fastmath,
 * correct that product's rounding (about 7 instructions an element on CUDA).
 * The weights, li and acc / li are those of base e. */
static const double LOG2E = 1.4426950408889634;

int tj_emit_attention(const tj_graph *g, const tj_group *grp, const tj_group_args *args, tj_buf *o)
{
    (void)args;
    const char *dt = tj_dtype_name(node(g, grp->root)->dtype);
    int f32 = node(g, grp->root)->dtype == TJ_DT_F32;
    char bd[96] = "", bi[96] = "", q[96] = "1";
    for (int i = 0; i < grp->nbatch; i++) {
        snprintf(bd + strlen(bd), sizeof bd - strlen(bd), "B%d, ", i);
        snprintf(bi + strlen(bi), sizeof bi - strlen(bi), "b%d, ", i);
        snprintf(q + (i ? strlen(q) : 0), sizeof q - (i ? strlen(q) : 0), "%sB%d", i ? " * " : "", i);
    }
    int masked = grp->ninputs == 4;
    tj_buf_printf(o, "kernel fused(XQ: %s[%sM, D], XK: %s[%sD, N], XV: %s[%sN, E], ", dt, bd, dt, bd, dt, bd);
    if (masked)
        tj_buf_printf(o, "XM: %s[%sM, N], ", dt, bd);
    tj_buf_printf(o, "Y: %s[%sM, E])\n", dt, bd);
    tj_buf_printf(o, "    grid (1, cdiv(M, BM), %s)\n", q);
    tj_buf_printf(o, "    tune BM in [%lld, %lld], BN in [%lld, %lld], warps in [%d, %d]\n", (long long)grp->bm,
                  (long long)(grp->bm == 64 ? 128 : 64), (long long)grp->bn, (long long)(grp->bn * 2), grp->warps,
                  grp->warps == 4 ? 8 : 4);
    tj_buf_printf(o, "    const BD = %lld\n    const BE = %lld", (long long)grp->bd, (long long)grp->be);
    tj_emit_consts(o, grp);
    tj_buf_printf(o, "\n{\n    m = program_id(1) * BM\n");
    tj_emit_batch_indices(o, grp->nbatch);
    const char *prec = f32 ? ", precision = \"ieee\"" : "";
    tj_buf_printf(o, "    tq = load(XQ[%sm:m+BM, 0:BD])\n", bi);
    tj_buf_printf(o, "    mi = full(f32[BM, 1], -inf)\n    li = zeros(f32[BM, 1])\n    acc = zeros(f32[BM, BE])\n");
    tj_buf_printf(o, "    for j in range(0, N, BN) {\n");
    tj_buf_printf(o, "        s = dot(tq, load(XK[%s0:BD, j:j+BN])%s) * ", bi, prec);
    tj_emit_literal(o, TJ_DT_F32, masked ? grp->scale : grp->scale * LOG2E);
    if (masked) { /* z = qk * s + mask, as the graph rounds it, then in base 2 */
        tj_buf_printf(o, "\n        s = f32(%s(s) + load(XM[%sm:m+BM, j:j+BN])) * ", dt, bi);
        tj_emit_literal(o, TJ_DT_F32, LOG2E);
    }
    tj_buf_printf(o, "\n        s = where(arange(BN)[None, :] + j < N, s, -inf)\n"
                     "        mn = maximum(mi, max(s, 1)[:, None])\n"
                     "        p = exp2(s - mn)\n"
                     "        alpha = exp2(mi - mn)\n"
                     "        li = li * alpha + sum(p, 1)[:, None]\n");
    tj_buf_printf(o, "        acc = acc * alpha + dot(%s(p), load(XV[%sj:j+BN, 0:BE])%s)\n", dt, bi, prec);
    tj_buf_printf(o, "        mi = mn\n    }\n    store(Y[%sm:m+BM, 0:BE], %s(acc / li))\n}\n", bi, dt);
    return 0;
}
