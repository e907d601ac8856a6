/* linalg ops as array ops. A structured op (generic, map, reduce, fill,
 * and matmul with explicit maps) runs its body once over the whole
 * iteration space: each operand is viewed as an array of the loops' shape
 * (its indexing map, a projected permutation, says how: transpose, insert
 * unit axes, broadcast), the body's scalar ops become array ops on those,
 * and a loop marked "reduction" is a reduction of the array the body
 * combines into its output (OUT = combine(OUT, f(inputs)), combine one of
 * add, mul, max, min). Matmuls without maps are the array front end's
 * matmul, which reaches tensor cores. */
#include <stdlib.h>
#include <string.h>

#include "mlir/mlir_internal.h"

#define MAX_OPERANDS 8

typedef struct lmap {
    int nres;
    int res[TJ_MAX_RANK]; /* a loop, TJ_MEXPR_ZERO or TJ_MEXPR_OTHER */
} lmap;

typedef struct structured {
    uint32_t op;
    int nloops;
    int reduction[TJ_MAX_RANK];
    uint32_t nins, nouts;
    uint32_t ins[MAX_OPERANDS], outs[MAX_OPERANDS]; /* value ids */
    lmap in_maps[MAX_OPERANDS], out_maps[MAX_OPERANDS];
} structured;

static const tj_mvalue *value(mbuild *b, uint32_t id) { return tj_mlir_value(b->m, id); }
static int rank_of(const tj_mvalue *v) { return v->kind == TJ_MT_TENSOR ? v->rank : 0; }

static lmap identity_map(int rank)
{
    lmap m = {rank, {0}};
    for (int d = 0; d < rank; d++)
        m.res[d] = d;
    return m;
}

/* ---- the iteration space -------------------------------------------------------- */

static int loop_extents(mbuild *b, const structured *s, int64_t *loops)
{
    for (int d = 0; d < s->nloops; d++)
        loops[d] = -1;
    for (uint32_t i = 0; i < s->nins + s->nouts; i++) {
        int is_in = i < s->nins;
        const lmap *map = is_in ? &s->in_maps[i] : &s->out_maps[i - s->nins];
        const tj_mvalue *v = value(b, is_in ? s->ins[i] : s->outs[i - s->nins]);
        if (map->nres != rank_of(v))
            return tj_mlir_fail(b, s->op, "operand %u: an indexing map of %d results for a rank-%d operand", i,
                                map->nres, rank_of(v));
        for (int k = 0; k < map->nres; k++) {
            int d = map->res[k];
            if (d == TJ_MEXPR_OTHER || d >= s->nloops)
                return tj_mlir_fail(b, s->op, "operand %u: an indexing map result that is neither a loop "
                                              "index nor 0 (only projected permutations are imported)", i);
            if (d == TJ_MEXPR_ZERO ? v->shape[k] != 1 : loops[d] >= 0 && loops[d] != v->shape[k])
                return tj_mlir_fail(b, s->op, "operand %u: dimension %d of extent %lld disagrees with the loop",
                                    i, k, (long long)v->shape[k]);
            if (d >= 0)
                loops[d] = v->shape[k];
        }
    }
    for (int d = 0; d < s->nloops; d++)
        if (loops[d] < 0)
            return tj_mlir_fail(b, s->op, "loop d%d indexes no operand", d);
    return 0;
}

/* An operand as an array of the loops' shape. */
static tj_array view_in_loops(mbuild *b, tj_array a, const tj_mvalue *v, const lmap *map)
{
    tj_graph *g = b->g;
    int kept[TJ_MAX_RANK], nkept = 0, used[TJ_MAX_RANK] = {0};
    int64_t kept_shape[TJ_MAX_RANK];
    for (int k = 0; k < map->nres; k++)
        if (map->res[k] >= 0) {
            if (used[map->res[k]]++)
                return TJ_ARRAY_NONE; /* a loop indexed twice: a diagonal */
            kept_shape[nkept] = v->shape[k];
            kept[nkept++] = map->res[k];
        }
    if (nkept != map->nres)
        a = tj_array_reshape(g, a, nkept, kept_shape);
    int perm[TJ_MAX_RANK], identity = 1;
    for (int j = 0; j < nkept; j++) { /* the kept axes in loop order */
        perm[j] = 0;
        for (int k = 0; k < nkept; k++)
            perm[j] += kept[k] < kept[j];
    }
    int order[TJ_MAX_RANK];
    for (int j = 0; j < nkept; j++)
        order[perm[j]] = j;
    for (int j = 0; j < nkept; j++)
        identity &= order[j] == j;
    if (!identity)
        a = tj_array_transpose(g, a, order);
    int64_t shape[TJ_MAX_RANK];
    for (int d = 0; d < b->nloops; d++)
        shape[d] = used[d] ? b->loops[d] : 1;
    if (nkept != b->nloops)
        a = tj_array_reshape(g, a, b->nloops, shape);
    return tj_array_broadcast_to(g, a, b->nloops, b->loops);
}

/* ---- the body ------------------------------------------------------------------------ */

/* taint[v]: bit j set when v depends on the body argument of output j. */
static void find_taint(mbuild *b, uint32_t op, uint32_t first_out_arg, uint32_t nouts, uint8_t *taint)
{
    const tj_mprog *p = &b->m->prog;
    const tj_mop *o = &p->ops[op];
    for (uint32_t j = 0; j < nouts && first_out_arg + j < o->nargs; j++)
        taint[p->uses[o->args + first_out_arg + j]] = (uint8_t)(1u << j);
    for (uint32_t i = op + 1; i < o->body_end; i++) {
        const tj_mop *x = &p->ops[i];
        uint8_t t = 0;
        for (uint32_t k = 0; k < x->noperands; k++)
            if (p->uses[x->operands + k] < p->nvalues)
                t |= taint[p->uses[x->operands + k]];
        for (uint32_t r = 0; r < x->nresults; r++)
            taint[x->results + r] = t;
    }
}

static uint32_t defining_op(mbuild *b, uint32_t op, uint32_t id)
{
    const tj_mop *o = &b->m->prog.ops[op];
    for (uint32_t i = op + 1; i < o->body_end; i++) {
        const tj_mop *x = &b->m->prog.ops[i];
        if (id >= x->results && id < x->results + x->nresults)
            return i;
    }
    return UINT32_MAX;
}

static uint32_t body_yield(mbuild *b, uint32_t op)
{
    const tj_mop *o = &b->m->prog.ops[op];
    uint32_t last = UINT32_MAX;
    for (uint32_t i = op + 1; i < o->body_end; i = b->m->prog.ops[i].body_end)
        last = i;
    return last != UINT32_MAX && !strcmp(tj_mlir_op_name(b->m, last), "linalg.yield") ? last : UINT32_MAX;
}

/* The reduction an output's combine op stands for. */
static tj_aop reduction_of(tj_aop combine, tj_dtype dt)
{
    switch (combine) {
    case TJ_AOP_ADD: return TJ_AOP_SUM;
    case TJ_AOP_MULTIPLY: return TJ_AOP_PROD;
    case TJ_AOP_MAXIMUM: return TJ_AOP_MAX;
    case TJ_AOP_MINIMUM: return TJ_AOP_MIN;
    case TJ_AOP_BITWISE_OR: return dt == TJ_DT_BOOL ? TJ_AOP_MAX : TJ_AOP_INVALID;
    case TJ_AOP_BITWISE_AND: return dt == TJ_DT_BOOL ? TJ_AOP_MIN : TJ_AOP_INVALID;
    default: return TJ_AOP_INVALID;
    }
}

static int set_output(mbuild *b, uint32_t op, uint32_t j, tj_array r)
{
    if (tj_mlir_check(b, op, r) == TJ_ARRAY_NONE)
        return 1;
    uint32_t id = b->m->prog.ops[op].results + j;
    tj_array_info info;
    tj_array_get_info(b->g, r, &info);
    if (info.dtype != value(b, id)->dtype) /* NumPy widens integer sums */
        r = tj_mlir_check(b, op, tj_array_astype(b->g, r, value(b, id)->dtype));
    tj_mlir_set(b, id, r);
    return r == TJ_ARRAY_NONE;
}

/* perm for transposing an array over `loops` (the selected loops in
 * increasing order) into the order of the output map. 0, or 1 when the
 * map does not name exactly those loops. */
static int output_order(const structured *s, const lmap *map, int reductions, int *perm)
{
    int rank_among[TJ_MAX_RANK], n = 0;
    for (int d = 0; d < s->nloops; d++)
        rank_among[d] = reductions && s->reduction[d] ? -1 : n++;
    if (map->nres != n)
        return 1;
    int seen[TJ_MAX_RANK] = {0};
    for (int k = 0; k < n; k++) {
        int d = map->res[k];
        if (d < 0 || rank_among[d] < 0 || seen[d]++)
            return 1;
        perm[k] = rank_among[d];
    }
    return 0;
}

static tj_array reorder(mbuild *b, tj_array a, const int *perm, int n)
{
    for (int k = 0; k < n; k++)
        if (perm[k] != k)
            return tj_array_transpose(b->g, a, perm);
    return a;
}

static int parallel_output(mbuild *b, const structured *s, uint32_t j, uint32_t y)
{
    int perm[TJ_MAX_RANK];
    if (output_order(s, &s->out_maps[j], 0, perm))
        return tj_mlir_fail(b, s->op, "output %u: its indexing map is not a permutation of the loops", j);
    tj_array r = tj_array_broadcast_to(b->g, tj_mlir_get(b, s->op, y), b->nloops, b->loops);
    if (set_output(b, s->op, j, reorder(b, r, perm, s->nloops)))
        return 1;
    /* A yield of a uniform operand (a fill, generalized) stays uniform. */
    const tj_mop *o = &b->m->prog.ops[s->op];
    uint32_t result = o->results + j, from = y;
    for (uint32_t i = 0; i < o->nargs; i++)
        if (b->m->prog.uses[o->args + i] == y)
            from = i < s->nins ? s->ins[i] : s->outs[i - s->nins];
    tj_mlir_copy_uniform(b, result, from);
    return 0;
}

static int reduced_output(mbuild *b, const structured *s, uint32_t j, uint32_t y, uint32_t out_arg,
                          const uint8_t *taint)
{
    const char *shape_msg = "a reduction body other than OUT = combine(OUT, f(inputs)) with combine one of "
                            "add, mul, maximumf, minimumf, max and min (signed), or and and on i1";
    uint32_t def = defining_op(b, s->op, y);
    const mop_info *info = def == UINT32_MAX ? NULL : tj_mlir_op_info(tj_mlir_op_name(b->m, def));
    if (!info || info->kind != MK_BINARY)
        return tj_mlir_fail(b, s->op, "output %u: %s", j, shape_msg);
    uint32_t x0 = tj_mlir_operand(b->m, def, 0), x1 = tj_mlir_operand(b->m, def, 1);
    uint32_t v = x0 == out_arg ? x1 : x1 == out_arg ? x0 : UINT32_MAX;
    tj_dtype dt = value(b, s->outs[j])->dtype;
    tj_aop red = reduction_of(info->aop, dt);
    if (v == UINT32_MAX || taint[v] || red == TJ_AOP_INVALID)
        return tj_mlir_fail(b, s->op, "output %u: %s", j, shape_msg);
    int axes[TJ_MAX_RANK], naxes = 0, perm[TJ_MAX_RANK];
    for (int d = 0; d < s->nloops; d++)
        if (s->reduction[d])
            axes[naxes++] = d;
    if (output_order(s, &s->out_maps[j], 1, perm))
        return tj_mlir_fail(b, s->op, "output %u: its indexing map is not a permutation of the parallel loops", j);
    tj_graph *g = b->g;
    tj_array full = tj_array_broadcast_to(g, tj_mlir_get(b, s->op, v), b->nloops, b->loops);
    tj_array r = reorder(b, tj_array_reduce(g, red, full, axes, naxes, 0), perm, s->nloops - naxes);
    tj_array_info got;
    if (!tj_array_get_info(g, r, &got) && got.dtype != dt) /* NumPy widens integer sums */
        r = tj_array_astype(g, r, dt);
    tj_array init = tj_mlir_get(b, s->op, s->outs[j]);
    if (!tj_mlir_is_identity(b, s->outs[j], info->aop))
        r = tj_array_binary(g, info->aop, init, r);
    return set_output(b, s->op, j, r);
}

/* ---- contractions: a generic that is a matmul ------------------------------------------- */

/* The loops an operand's map names, as a bit set; -1 when it has a 0. */
static int loop_set(const lmap *m)
{
    int set = 0;
    for (int k = 0; k < m->nres; k++) {
        if (m->res[k] < 0)
            return -1;
        set |= 1 << m->res[k];
    }
    return set;
}

/* The operand (an array over the loops its map names) transposed to the
 * loops of `order` and reshaped to `shape`. */
static tj_array arrange(mbuild *b, tj_array a, const lmap *m, const int *order, int n, int rank,
                        const int64_t *shape)
{
    int perm[TJ_MAX_RANK];
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m->nres; k++)
            if (m->res[k] == order[i])
                perm[i] = k;
    return tj_array_reshape(b->g, reorder(b, a, perm, n), rank, shape);
}

/* The body is OUT + IN0 * IN1 (either order), on block arguments. */
static int is_multiply_add(mbuild *b, const structured *s, uint32_t y, uint32_t out_arg, const uint32_t *args)
{
    uint32_t add = defining_op(b, s->op, y);
    if (add == UINT32_MAX || strcmp(tj_mlir_op_name(b->m, add), "arith.addf"))
        return 0;
    uint32_t x0 = tj_mlir_operand(b->m, add, 0), x1 = tj_mlir_operand(b->m, add, 1);
    uint32_t mul = defining_op(b, s->op, x0 == out_arg ? x1 : x1 == out_arg ? x0 : UINT32_MAX);
    if (mul == UINT32_MAX || strcmp(tj_mlir_op_name(b->m, mul), "arith.mulf"))
        return 0;
    uint32_t m0 = tj_mlir_operand(b->m, mul, 0), m1 = tj_mlir_operand(b->m, mul, 1);
    return (m0 == args[0] && m1 == args[1]) || (m0 == args[1] && m1 == args[0]);
}

/* C + A B for a generic whose loops split into batch (in A, B and C), M (A
 * and C), N (B and C) and one K (A and B): A and B are arranged as
 * [batch..., M, K] and [batch..., K, N] for the array matmul (tensor cores
 * on a GPU), the product put back in C's order. 1 when it is one and was
 * built (or failed: b->failed), 0 when it is not a contraction. */
static int try_contraction(mbuild *b, const structured *s, uint32_t y)
{
    const tj_mop *o = &b->m->prog.ops[s->op];
    const uint32_t *args = &b->m->prog.uses[o->args];
    if (s->nins != 2 || s->nouts != 1 || o->nargs != 3 || !is_multiply_add(b, s, y, args[2], args))
        return 0;
    int sa = loop_set(&s->in_maps[0]), sb = loop_set(&s->in_maps[1]), sc = loop_set(&s->out_maps[0]), red = 0;
    for (int d = 0; d < s->nloops; d++)
        red |= s->reduction[d] << d;
    int all = (1 << s->nloops) - 1;
    /* each map names distinct loops; one reduction loop, in A and B, not C;
     * C names every parallel loop, each also in A or B */
    if (sa < 0 || sb < 0 || sc < 0 || __builtin_popcount(sa) != s->in_maps[0].nres ||
        __builtin_popcount(sb) != s->in_maps[1].nres || __builtin_popcount(sc) != s->out_maps[0].nres ||
        __builtin_popcount(red) != 1 || !(sa & red) || !(sb & red) || sc != (all & ~red) || (sc & ~(sa | sb)))
        return 0;
    int batch[TJ_MAX_RANK], nbatch = 0, ms[TJ_MAX_RANK], nm = 0, ns[TJ_MAX_RANK], nn = 0, k = __builtin_ctz(red);
    int64_t mext = 1, next = 1, bshape[TJ_MAX_RANK];
    for (int d = 0; d < s->nloops; d++) {
        if ((sa & sb & sc) >> d & 1)
            bshape[nbatch] = b->loops[d], batch[nbatch++] = d;
        else if ((sa & sc & ~sb) >> d & 1)
            mext *= b->loops[d], ms[nm++] = d;
        else if ((sb & sc & ~sa) >> d & 1)
            next *= b->loops[d], ns[nn++] = d;
    }
    int order[TJ_MAX_RANK], n = 0;
    int64_t shape[TJ_MAX_RANK];
    tj_graph *g = b->g;
    tj_dtype dt = value(b, s->outs[0])->dtype;
    tj_array a = tj_mlir_get(b, s->op, s->ins[0]), bb = tj_mlir_get(b, s->op, s->ins[1]);
    if (!a || !bb)
        return 1;
    /* A: [batch..., M..., K] -> [batch..., prod M, K] */
    memcpy(order, batch, sizeof batch);
    memcpy(shape, bshape, sizeof bshape);
    n = nbatch;
    memcpy(order + n, ms, nm * sizeof *ms);
    order[n + nm] = k;
    shape[n] = mext;
    shape[n + 1] = b->loops[k];
    a = arrange(b, a, &s->in_maps[0], order, nbatch + nm + 1, nbatch + 2, shape);
    /* B: [batch..., K, N...] -> [batch..., K, prod N] */
    order[n] = k;
    memcpy(order + n + 1, ns, nn * sizeof *ns);
    shape[n] = b->loops[k];
    shape[n + 1] = next;
    bb = arrange(b, bb, &s->in_maps[1], order, nbatch + nn + 1, nbatch + 2, shape);
    if (value(b, s->ins[0])->dtype != dt)
        a = tj_array_astype(g, a, dt);
    if (value(b, s->ins[1])->dtype != dt)
        bb = tj_array_astype(g, bb, dt);
    tj_array r = tj_array_matmul(g, a, bb);
    /* [batch..., prod M, prod N] -> [batch..., M..., N...] -> C's order */
    int loops_order[TJ_MAX_RANK], nl = 0;
    for (int i = 0; i < nbatch; i++)
        shape[nl] = b->loops[batch[i]], loops_order[nl++] = batch[i];
    for (int i = 0; i < nm; i++)
        shape[nl] = b->loops[ms[i]], loops_order[nl++] = ms[i];
    for (int i = 0; i < nn; i++)
        shape[nl] = b->loops[ns[i]], loops_order[nl++] = ns[i];
    r = tj_array_reshape(g, r, nl, shape);
    int perm[TJ_MAX_RANK];
    for (int i = 0; i < nl; i++)
        for (int q = 0; q < nl; q++)
            if (loops_order[q] == s->out_maps[0].res[i])
                perm[i] = q;
    r = reorder(b, r, perm, nl);
    if (!tj_mlir_is_identity(b, s->outs[0], TJ_AOP_ADD))
        r = tj_array_binary(g, TJ_AOP_ADD, tj_mlir_get(b, s->op, s->outs[0]), r);
    set_output(b, s->op, 0, r);
    return 1;
}

static int build_structured(mbuild *b, const structured *s, int body_has_outs)
{
    const tj_mop *o = &b->m->prog.ops[s->op];
    mbuild outer = *b;
    int64_t loops[TJ_MAX_RANK];
    if (loop_extents(b, s, loops))
        return 1;
    b->in_body = 1;
    b->nloops = s->nloops;
    memcpy(b->loops, loops, sizeof loops);
    uint32_t nargs = s->nins + (body_has_outs ? s->nouts : 0);
    if (o->nargs != nargs)
        return tj_mlir_fail(b, s->op, "a body of %u arguments, expected %u", o->nargs, nargs);
    for (uint32_t i = 0; i < nargs; i++) {
        int is_in = i < s->nins;
        uint32_t id = is_in ? s->ins[i] : s->outs[i - s->nins];
        tj_array a = tj_mlir_get(b, s->op, id);
        tj_array view = a ? view_in_loops(b, a, value(b, id), is_in ? &s->in_maps[i] : &s->out_maps[i - s->nins])
                          : TJ_ARRAY_NONE;
        if (!view && !b->failed && *tj_graph_error(b->g))
            tj_mlir_check(b, s->op, view);
        if (!view)
            return b->failed || tj_mlir_fail(b, s->op, "operand %u: a loop indexed twice (a diagonal)", i);
        tj_mlir_set(b, b->m->prog.uses[o->args + i], view);
    }
    uint8_t *taint = calloc(b->m->prog.nvalues ? b->m->prog.nvalues : 1, 1);
    uint32_t yield = body_yield(b, s->op);
    int failed = !taint || tj_mlir_build_ops(b, s->op + 1, o->body_end);
    if (!failed && (yield == UINT32_MAX || b->m->prog.ops[yield].noperands != s->nouts))
        failed = tj_mlir_fail(b, s->op, "the body does not end in linalg.yield of %u values", s->nouts);
    int reduces = 0;
    for (int d = 0; d < s->nloops; d++)
        reduces |= s->reduction[d];
    if (!failed)
        find_taint(b, s->op, s->nins, body_has_outs ? s->nouts : 0, taint);
    if (!failed && reduces && try_contraction(b, s, tj_mlir_operand(b->m, yield, 0)))
        failed = b->failed;
    else
        for (uint32_t j = 0; !failed && j < s->nouts; j++) {
            uint32_t y = tj_mlir_operand(b->m, yield, j);
            failed = reduces ? reduced_output(b, s, j, y, b->m->prog.uses[o->args + s->nins + j], taint)
                             : parallel_output(b, s, j, y);
        }
    free(taint);
    b->in_body = outer.in_body;
    b->nloops = outer.nloops;
    memcpy(b->loops, outer.loops, sizeof b->loops);
    return failed || b->failed;
}

/* ---- reading the ops' operands and attributes ---------------------------------------- */

static int read_maps(mbuild *b, uint32_t op, const tj_mattr *a, lmap *maps, uint32_t n, int *nloops)
{
    if (!a || a->kind != TJ_MA_MAPS || a->count != n)
        return tj_mlir_fail(b, op, "expected %u affine maps in 'indexing_maps'", n);
    const int64_t *p = b->m->prog.ints + a->first;
    for (uint32_t i = 0; i < n; i++) {
        int ndims = (int)*p++, nres = (int)*p++;
        if (ndims > TJ_MAX_RANK || nres > TJ_MAX_RANK || (i && ndims != *nloops))
            return tj_mlir_fail(b, op, "indexing map %u: %d loops and %d results (at most %d)", i, ndims, nres,
                                TJ_MAX_RANK);
        *nloops = ndims;
        maps[i].nres = nres;
        for (int k = 0; k < nres; k++)
            maps[i].res[k] = (int)*p++;
    }
    return 0;
}

static int read_iterators(mbuild *b, uint32_t op, structured *s)
{
    const tj_mattr *a = tj_mlir_attr(b->m, op, "iterator_types");
    if (!a || a->kind != TJ_MA_STRINGS || (int)a->count != s->nloops)
        return tj_mlir_fail(b, op, "expected %d 'iterator_types'", s->nloops);
    for (int d = 0; d < s->nloops; d++) {
        const char *t = tj_mprog_str(&b->m->prog, (uint32_t)b->m->prog.ints[a->first + d]);
        s->reduction[d] = strstr(t, "reduction") != NULL;
        if (!s->reduction[d] && !strstr(t, "parallel"))
            return tj_mlir_fail(b, op, "iterator type '%s'", t);
    }
    return 0;
}

/* ins and outs: from operandSegmentSizes, else all but the last `nouts`. */
static int split_operands(mbuild *b, uint32_t op, structured *s, uint32_t default_outs)
{
    const tj_mop *o = &b->m->prog.ops[op];
    const tj_mattr *seg = tj_mlir_attr(b->m, op, "operandSegmentSizes");
    if (seg && seg->kind == TJ_MA_INTS && seg->count == 2) {
        s->nins = (uint32_t)b->m->prog.ints[seg->first];
        s->nouts = (uint32_t)b->m->prog.ints[seg->first + 1];
    } else {
        s->nouts = default_outs;
        s->nins = o->noperands - default_outs;
    }
    if (s->nins + s->nouts != o->noperands || s->nins > MAX_OPERANDS || s->nouts > MAX_OPERANDS)
        return tj_mlir_fail(b, op, "%u inputs and %u outputs (at most %d of each)", s->nins, s->nouts,
                            MAX_OPERANDS);
    for (uint32_t i = 0; i < o->noperands; i++)
        *(i < s->nins ? &s->ins[i] : &s->outs[i - s->nins]) = tj_mlir_operand(b->m, op, i);
    s->op = op;
    return 0;
}

static int build_generic(mbuild *b, uint32_t op)
{
    structured s = {0};
    lmap maps[2 * MAX_OPERANDS];
    if (split_operands(b, op, &s, 1) ||
        read_maps(b, op, tj_mlir_attr(b->m, op, "indexing_maps"), maps, s.nins + s.nouts, &s.nloops) ||
        read_iterators(b, op, &s))
        return 1;
    memcpy(s.in_maps, maps, s.nins * sizeof *maps);
    memcpy(s.out_maps, maps + s.nins, s.nouts * sizeof *maps);
    return build_structured(b, &s, 1);
}

/* An op of one output whose loops are the output's dims (map, fill):
 * every operand over all of them, scalars over none. */
static int over_output(mbuild *b, uint32_t op, structured *s)
{
    if (split_operands(b, op, s, 1))
        return 1;
    s->nloops = rank_of(value(b, s->outs[0]));
    for (uint32_t i = 0; i < s->nins; i++)
        s->in_maps[i] = identity_map(rank_of(value(b, s->ins[i])) ? s->nloops : 0);
    s->out_maps[0] = identity_map(s->nloops);
    return 0;
}

/* linalg.map: the body takes the inputs' elements (and, since MLIR 22,
 * the init's). */
static int build_map(mbuild *b, uint32_t op)
{
    structured s = {0};
    return over_output(b, op, &s) || build_structured(b, &s, b->m->prog.ops[op].nargs == s.nins + s.nouts);
}

/* linalg.reduce: the inputs over every loop, the inits over those not in
 * `dimensions`. */
static int build_reduce(mbuild *b, uint32_t op)
{
    structured s = {0};
    const tj_mop *o = &b->m->prog.ops[op];
    const tj_mattr *dims = tj_mlir_attr(b->m, op, "dimensions");
    if (split_operands(b, op, &s, o->noperands / 2))
        return 1;
    if (!dims || dims->kind != TJ_MA_INTS)
        return tj_mlir_fail(b, op, "no 'dimensions'");
    s.nloops = rank_of(value(b, s.ins[0]));
    for (uint32_t k = 0; k < dims->count; k++) {
        int64_t d = b->m->prog.ints[dims->first + k];
        if (d < 0 || d >= s.nloops)
            return tj_mlir_fail(b, op, "dimension %lld out of range", (long long)d);
        s.reduction[d] = 1;
    }
    lmap out = {0};
    for (int d = 0; d < s.nloops; d++)
        if (!s.reduction[d])
            out.res[out.nres++] = d;
    for (uint32_t i = 0; i < s.nins; i++)
        s.in_maps[i] = identity_map(s.nloops);
    for (uint32_t j = 0; j < s.nouts; j++)
        s.out_maps[j] = out;
    return build_structured(b, &s, 1);
}

/* linalg.fill: its body (a cast, where the value's type differs) over
 * the output's shape. */
static int build_fill(mbuild *b, uint32_t op)
{
    structured s = {0};
    int failed = over_output(b, op, &s) || build_structured(b, &s, 1);
    if (!failed)
        tj_mlir_copy_uniform(b, b->m->prog.ops[op].results, s.ins[0]);
    return failed;
}

/* matmul, batch_matmul, matvec, vecmat, dot: C + A B with A and B cast to
 * C's element type (as the body does) on the array front end's matmul
 * (NumPy's, whose 1-D operands are these ops' vectors); with explicit
 * indexing maps (transposed operands), the structured path. */
static int build_matmul(mbuild *b, uint32_t op)
{
    structured s = {0};
    const tj_mattr *maps = tj_mlir_attr(b->m, op, "indexing_maps");
    if (split_operands(b, op, &s, 1))
        return 1;
    if (s.nins != 2 || s.nouts != 1)
        return tj_mlir_fail(b, op, "expected 2 inputs and 1 output");
    if (tj_mlir_attr(b->m, op, "cast"))
        return tj_mlir_fail(b, op, "a 'cast' attribute (unsigned extension) is not imported");
    if (maps) {
        lmap all[3];
        if (read_maps(b, op, maps, all, 3, &s.nloops))
            return 1;
        s.in_maps[0] = all[0];
        s.in_maps[1] = all[1];
        s.out_maps[0] = all[2];
        s.reduction[s.nloops - 1] = 1; /* (batch,) m, n, k */
        return build_structured(b, &s, 1);
    }
    tj_graph *g = b->g;
    tj_dtype dt = value(b, s.outs[0])->dtype;
    tj_array x = tj_mlir_get(b, op, s.ins[0]), y = tj_mlir_get(b, op, s.ins[1]);
    tj_array c = tj_mlir_get(b, op, s.outs[0]);
    if (!x || !y || !c)
        return 1;
    if (value(b, s.ins[0])->dtype != dt)
        x = tj_array_astype(g, x, dt);
    if (value(b, s.ins[1])->dtype != dt)
        y = tj_array_astype(g, y, dt);
    tj_array r = tj_array_matmul(g, x, y);
    if (!tj_mlir_is_identity(b, s.outs[0], TJ_AOP_ADD))
        r = tj_array_binary(g, TJ_AOP_ADD, c, r);
    return set_output(b, op, 0, r);
}

static int build_transpose(mbuild *b, uint32_t op)
{
    const tj_mattr *perm = tj_mlir_attr(b->m, op, "permutation");
    tj_array x = tj_mlir_get(b, op, tj_mlir_operand(b->m, op, 0));
    if (!x)
        return 1;
    if (!perm || perm->kind != TJ_MA_INTS || perm->count > TJ_MAX_RANK)
        return tj_mlir_fail(b, op, "no 'permutation'");
    int p[TJ_MAX_RANK];
    for (uint32_t k = 0; k < perm->count; k++)
        p[k] = (int)b->m->prog.ints[perm->first + k];
    return set_output(b, op, 0, tj_array_transpose(b->g, x, p));
}

/* linalg.broadcast: `dimensions` are the output's axes the input lacks. */
static int build_broadcast(mbuild *b, uint32_t op)
{
    const tj_mattr *dims = tj_mlir_attr(b->m, op, "dimensions");
    tj_array x = tj_mlir_get(b, op, tj_mlir_operand(b->m, op, 0));
    const tj_mvalue *out = value(b, tj_mlir_operand(b->m, op, 1));
    if (!x)
        return 1;
    if (!dims || dims->kind != TJ_MA_INTS)
        return tj_mlir_fail(b, op, "no 'dimensions'");
    int64_t shape[TJ_MAX_RANK];
    memcpy(shape, out->shape, sizeof shape);
    for (uint32_t k = 0; k < dims->count; k++) {
        int64_t d = b->m->prog.ints[dims->first + k];
        if (d < 0 || d >= out->rank)
            return tj_mlir_fail(b, op, "dimension %lld out of range", (long long)d);
        shape[d] = 1;
    }
    x = tj_array_reshape(b->g, x, out->rank, shape);
    return set_output(b, op, 0, tj_array_broadcast_to(b->g, x, out->rank, out->shape));
}

int tj_mlir_build_linalg(mbuild *b, uint32_t op, const mop_info *info)
{
    switch (info->kind) {
    case MK_GENERIC: return build_generic(b, op);
    case MK_MAP: return build_map(b, op);
    case MK_REDUCE: return build_reduce(b, op);
    case MK_FILL: return build_fill(b, op);
    case MK_MATMUL: return build_matmul(b, op);
    case MK_TRANSPOSE: return build_transpose(b, op);
    case MK_BROADCAST: return build_broadcast(b, op);
    default: return tj_mlir_fail(b, op, "not a linalg op");
    }
}
