/* The ops that are a kernel (or a library call) of their own: take,
 * take_along_axis, scatter_add (atomics), concatenate (copies into the
 * slices of one buffer), and cumsum, sort and argsort through lib/
 * (tilejit/lib.h). Their operands are made contiguous first (a copy
 * kernel where they are not), so each kernel sees [P, N, Q] arrays: the
 * axes before the op's axis, the axis, the axes after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

static int is_contiguous(const tj_anode *x)
{
    int64_t s[TJ_MAX_RANK];
    tj_contiguous_strides(x->rank, x->shape, s);
    for (int i = 0; i < x->rank; i++)
        if (x->shape[i] != 1 && x->strides[i] != s[i])
            return 0;
    return 1;
}

/* a, or a contiguous copy of it as dt (held either way: release it). */
static tj_array contiguous(tj_graph *g, tj_array a, tj_dtype dt, tj_rt_error *err)
{
    if (is_contiguous(&g->nodes[a]) && g->nodes[a].dtype == dt) {
        tj_array_retain(g, a);
        return a;
    }
    return tj_graph_copy(g, a, dt, NULL, err);
}

/* x as [P, N, Q] around axis (contiguous data). */
static tj_tensor pnq(const tj_anode *x, int axis)
{
    tj_tensor t = tj_anode_tensor(x);
    int64_t p = 1, q = 1;
    for (int i = 0; i < x->rank; i++)
        if (i < axis)
            p *= x->shape[i];
        else if (i > axis)
            q *= x->shape[i];
    int64_t n = x->rank ? x->shape[axis] : 1;
    t.rank = 3;
    t.shape[0] = p, t.shape[1] = n, t.shape[2] = q;
    t.strides[0] = n * q, t.strides[1] = q, t.strides[2] = 1;
    return t;
}

static tj_tensor flat(const tj_anode *x)
{
    tj_tensor t = tj_anode_tensor(x);
    t.rank = 1;
    t.shape[0] = tj_shape_numel(x->rank, x->shape);
    t.strides[0] = 1;
    return t;
}

/* A gather or scatter kernel's text: params names the three tensors,
 * index_load reads the indices, body does the rest. */
typedef struct gather_text {
    const char *params, *index_load, *body;
} gather_text;

static void write_gather(const void *ctx, tj_buf *o)
{
    const gather_text *k = ctx;
    tj_buf_printf(o, "kernel fused(%s)\n"
                     "    grid (cdiv(Q, BQ), cdiv(NI, BI), P)\n"
                     "    tune BI in [16, 8, 32], BQ in [64, 32, 128]\n"
                     "{\n"
                     "    q = program_id(0) * BQ\n"
                     "    i = program_id(1) * BI\n"
                     "    p = program_id(2)\n"
                     "    ix = %s\n"
                     "    j = i32(minimum(maximum(where(ix < 0, ix + NA, ix), 0), NA - 1))\n"
                     "%s}\n",
                  k->params, k->index_load, k->body);
}

/* A gather or scatter kernel over [BI, BQ] tiles of [P, NI, Q] with the
 * indices clamped into [0, NA) as j, run over t: params names the three
 * tensors (%s: the data's dtype, then the indices', then the data's again),
 * index_load reads the indices, body does the rest. The text is written
 * only where the plan memo does not replay the step. */
static int run_gather(tj_graph *g, const tj_tensor *t, tj_dtype data, tj_dtype index, const char *params,
                      const char *index_load, const char *body, tj_rt_error *err)
{
    char p[128];
    snprintf(p, sizeof p, params, tj_dtype_name(data), tj_dtype_name(index), tj_dtype_name(data));
    gather_text k = {p, index_load, body};
    return tj_graph_launch(g, write_gather, &k, t, 3, err);
}

static int eval_take(tj_graph *g, tj_array r, tj_rt_error *err)
{
    const tj_anode *x = &g->nodes[r];
    tj_array a = contiguous(g, x->in[0], g->nodes[x->in[0]].dtype, err);
    tj_array i = a ? contiguous(g, g->nodes[r].in[1], g->nodes[g->nodes[r].in[1]].dtype, err) : 0;
    int bad = !a || !i;
    x = &g->nodes[r];
    if (!bad) {
        tj_tensor t[3] = {pnq(&g->nodes[a], x->axis), flat(&g->nodes[i]), {0}};
        t[2] = t[0];
        t[2].data = tj_anode_tensor(x).data;
        t[2].shape[1] = t[1].shape[0];
        t[2].strides[0] = t[2].shape[1] * t[2].shape[2];
        bad = run_gather(g, t, x->dtype, t[1].dtype, "A: %s[P, NA, Q], I: %s[NI], Y: %s[P, NI, Q]",
                         "load(I[i:i+BI])", "    store(Y[p, i:i+BI, q:q+BQ], load(A[p, j, q:q+BQ]))\n", err);
    }
    tj_array_release(g, a);
    tj_array_release(g, i);
    return bad;
}

static int eval_take_along(tj_graph *g, tj_array r, tj_rt_error *err)
{
    const tj_anode *x = &g->nodes[r];
    tj_array a = contiguous(g, x->in[0], g->nodes[x->in[0]].dtype, err);
    tj_array b = a ? tj_array_broadcast_to(g, g->nodes[r].in[1], g->nodes[r].rank, g->nodes[r].shape) : 0;
    tj_array i = b ? contiguous(g, b, g->nodes[b].dtype, err) : 0;
    int bad = !a || !i;
    x = &g->nodes[r];
    if (!bad) {
        tj_tensor t[3] = {pnq(&g->nodes[a], x->axis), pnq(&g->nodes[i], x->axis), pnq(x, x->axis)};
        bad = run_gather(g, t, x->dtype, t[1].dtype, "A: %s[P, NA, Q], I: %s[P, NI, Q], Y: %s[P, NI, Q]",
                         "load(I[p, i:i+BI, q:q+BQ])",
                         "    qq = minimum(arange(BQ)[None, :] + q, Q - 1)\n"
                         "    store(Y[p, i:i+BI, q:q+BQ], load(A[p, j, qq]))\n", err);
    }
    tj_array_release(g, a);
    tj_array_release(g, b);
    tj_array_release(g, i);
    return bad;
}

static int eval_scatter_add(tj_graph *g, tj_array r, tj_rt_error *err)
{
    const tj_anode *x = &g->nodes[r];
    /* the output starts as a copy of a, then the values are added in */
    tj_array c = tj_graph_copy(g, x->in[0], x->dtype, &g->nodes[r], err);
    tj_array i = c ? contiguous(g, g->nodes[r].in[1], g->nodes[g->nodes[r].in[1]].dtype, err) : 0;
    tj_array v = i ? contiguous(g, g->nodes[r].in[2], g->nodes[r].dtype, err) : 0;
    int bad = !c || !i || !v;
    x = &g->nodes[r];
    if (!bad) {
        tj_tensor t[3] = {pnq(&g->nodes[v], x->axis), flat(&g->nodes[i]), pnq(x, x->axis)};
        if (tj_shape_numel(t[0].rank, t[0].shape))
            bad = run_gather(g, t, x->dtype, t[1].dtype, "V: %s[P, NI, Q], I: %s[NI], Y: %s[P, NA, Q]",
                             "load(I[i:i+BI])",
                             "    ok = broadcast((arange(BI) + i < NI)[:, None], [BI, BQ])\n"
                             "    atomic_add(Y[p, j, q:q+BQ], load(V[p, i:i+BI, q:q+BQ]), mask = ok)\n", err);
    }
    tj_array_release(g, c);
    tj_array_release(g, i);
    tj_array_release(g, v);
    return bad;
}

static int eval_concatenate(tj_graph *g, tj_array r, tj_rt_error *err)
{
    uint32_t n = g->nodes[r].nin;
    int64_t offset = 0;
    for (uint32_t k = 0; k < n; k++) {
        tj_anode part = g->nodes[r]; /* the slice of the output this input fills */
        tj_array in = tj_anode_input(&g->nodes[r], k);
        int ax = part.axis;
        part.offset = offset * part.strides[ax];
        offset += g->nodes[in].shape[ax];
        if (tj_shape_numel(g->nodes[in].rank, g->nodes[in].shape) == 0)
            continue;
        tj_array c = tj_graph_copy(g, in, part.dtype, &part, err);
        if (!c)
            return 1;
        tj_array_release(g, c);
    }
    return 0;
}

static tj_lib *lib_of(tj_graph *g, tj_rt_error *err)
{
    if (!g->lib)
        g->lib = tj_lib_open(g->jit, err);
    return g->lib;
}

/* The dtype lib's sort takes for keys of dt (exact widening). */
static tj_dtype sort_key_dtype(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL: case TJ_DT_I8: case TJ_DT_I16: return TJ_DT_I32;
    case TJ_DT_U8: case TJ_DT_U16: return TJ_DT_U32;
    default: return dt;
    }
}

static int eval_lib(tj_graph *g, tj_array r, tj_rt_error *err)
{
    tj_lib *l = lib_of(g, err);
    if (!l)
        return 1;
    const tj_anode *x = &g->nodes[r];
    tj_dtype in_dt = x->op == TJ_AOP_CUMSUM ? x->dtype : sort_key_dtype(g->nodes[x->in[0]].dtype);
    tj_array a = contiguous(g, x->in[0], in_dt, err);
    if (!a)
        return 1;
    x = &g->nodes[r];
    tj_tensor ta = tj_anode_tensor(&g->nodes[a]), out = tj_anode_tensor(x);
    int bad = 0;
    if (tj_shape_numel(x->rank, x->shape) == 0)
        bad = 0;
    else if (x->op == TJ_AOP_CUMSUM)
        bad = tj_lib_cumsum(l, &ta, &out, x->axis, 0, NULL, err);
    else if (x->op == TJ_AOP_ARGSORT)
        bad = tj_lib_argsort(l, &ta, &out, x->axis, 0, NULL, err);
    else if (in_dt == x->dtype)
        bad = tj_lib_sort(l, &ta, &out, x->axis, 0, NULL, err);
    else { /* sorted in the wider dtype, then narrowed back */
        tj_array s = tj_array_input(g, in_dt, x->rank, x->shape);
        bad = !s || tj_anode_alloc(g, s, err);
        if (!bad) {
            tj_tensor ts = tj_anode_tensor(&g->nodes[s]);
            g->nodes[s].has_data = 1;
            bad = tj_lib_sort(l, &ta, &ts, g->nodes[r].axis, 0, NULL, err);
            tj_array c = bad ? 0 : tj_graph_copy(g, s, g->nodes[r].dtype, &g->nodes[r], err);
            bad = bad || !c;
            tj_array_release(g, c);
        }
        tj_array_release(g, s);
    }
    tj_array_release(g, a);
    return bad;
}

int tj_eval_other(tj_graph *g, tj_group *grp, tj_rt_error *err)
{
    tj_array r = grp->root;
    if (tj_anode_alloc(g, r, err))
        return 1;
    switch (g->nodes[r].op) {
    case TJ_AOP_TAKE: return tj_shape_numel(g->nodes[r].rank, g->nodes[r].shape) ? eval_take(g, r, err) : 0;
    case TJ_AOP_TAKE_ALONG:
        return tj_shape_numel(g->nodes[r].rank, g->nodes[r].shape) ? eval_take_along(g, r, err) : 0;
    case TJ_AOP_SCATTER_ADD: return eval_scatter_add(g, r, err);
    case TJ_AOP_CONCATENATE: return eval_concatenate(g, r, err);
    case TJ_AOP_CUMSUM:
    case TJ_AOP_SORT:
    case TJ_AOP_ARGSORT: return eval_lib(g, r, err);
    default: return tj_rt_fail(err, "eval: %s has no evaluation", tj_aop_name(g->nodes[r].op));
    }
}
