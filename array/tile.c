/* Tiling: each group's index space, coalesced over the strides of its
 * arrays, and its tile sizes from a cost model (the emitted kernel lists
 * them first among its `tune` values, so a stored tuning winner, when the
 * tuner has one, replaces them; docs/arrays.md).
 *
 * The space is batch axes (indexed by program_id(2)), then M and N, tiled
 * [BM, BN]. Adjacent axes merge when every array steps through them as one
 * (stride[i] == stride[i+1] * extent[i+1]); size-1 axes drop. A reduce
 * group orders its kept axes first and its reduced axes last (those merge
 * among themselves: the last is N, the others become loops); a matmul
 * group merges only its batch axes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

enum {
    MAX_OPS = TJ_GROUP_MAX_INPUTS + 1,
    MAX_AXES = TJ_MAX_RANK + 2,
    TILE_ELEMS = 4096,
    THREAD_ELEMS = 16,
    VECTOR_BYTES = 16, /* the widest global access a thread makes */
    ELEMWISE_MIN_THREAD_ELEMS = 4,
};

typedef struct axes {
    int n, nops;
    int64_t ext[MAX_AXES];
    int cls[MAX_AXES]; /* 0: kept (batch, M), 1: reduced */
    int64_t st[MAX_OPS][MAX_AXES];
} axes;

const char *tj_group_kind_name(tj_group_kind k)
{
    static const char *names[] = {"elementwise", "reduce", "matmul", "attention", "view", "host", "other"};
    return k <= TJ_GROUP_OTHER ? names[k] : "?";
}

static int64_t pow2ceil(int64_t x)
{
    int64_t p = 1;
    while (p < x)
        p *= 2;
    return p;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Strides of node x over a space of rank rs (aligned on the right; 0 where
 * it broadcasts), from own (its strides, tj_node_strides). */
static void aligned_strides(const tj_anode *x, const int64_t *own, int rs, int64_t *out)
{
    for (int i = 0; i < rs; i++) {
        int j = i - (rs - x->rank);
        out[i] = j >= 0 && x->shape[j] != 1 ? own[j] : 0;
    }
}

static void drop_unit_axes(axes *ax)
{
    int k = 0;
    for (int i = 0; i < ax->n; i++) {
        if (ax->ext[i] == 1)
            continue;
        ax->ext[k] = ax->ext[i];
        ax->cls[k] = ax->cls[i];
        for (int o = 0; o < ax->nops; o++)
            ax->st[o][k] = ax->st[o][i];
        k++;
    }
    ax->n = k;
}

static void merge_axes(axes *ax)
{
    for (int i = 0; i + 1 < ax->n;) {
        int ok = ax->cls[i] == ax->cls[i + 1];
        for (int o = 0; ok && o < ax->nops; o++)
            ok = ax->st[o][i] == ax->st[o][i + 1] * ax->ext[i + 1];
        if (!ok) {
            i++;
            continue;
        }
        ax->ext[i] *= ax->ext[i + 1];
        for (int o = 0; o < ax->nops; o++)
            ax->st[o][i] = ax->st[o][i + 1];
        for (int j = i + 1; j + 1 < ax->n; j++) {
            ax->ext[j] = ax->ext[j + 1];
            ax->cls[j] = ax->cls[j + 1];
            for (int o = 0; o < ax->nops; o++)
                ax->st[o][j] = ax->st[o][j + 1];
        }
        ax->n--;
    }
}

/* A size-1 axis of class cls at position pos (strides 0). */
static void insert_unit(axes *ax, int pos, int cls)
{
    for (int j = ax->n; j > pos; j--) {
        ax->ext[j] = ax->ext[j - 1];
        ax->cls[j] = ax->cls[j - 1];
        for (int o = 0; o < ax->nops; o++)
            ax->st[o][j] = ax->st[o][j - 1];
    }
    ax->ext[pos] = 1;
    ax->cls[pos] = cls;
    for (int o = 0; o < ax->nops; o++)
        ax->st[o][pos] = 0;
    ax->n++;
}

/* Operands: the inputs, then the output. */
static tj_array operand(const tj_group *grp, int o)
{
    return (uint32_t)o < grp->ninputs ? grp->inputs[o] : grp->root;
}

static int noperands(const tj_group *grp) { return (int)grp->ninputs + 1; }

static void fill_tensor(const tj_anode *x, tj_tensor *t, const axes *ax, int o, int upto)
{
    memset(t, 0, sizeof *t);
    t->data = x->buf ? (char *)x->buf->data + x->offset * tj_dtype_size(x->dtype) : NULL;
    t->dtype = x->dtype;
    t->rank = upto;
    for (int i = 0; i < upto; i++) {
        t->shape[i] = ax->ext[i];
        t->strides[i] = ax->st[o][i];
    }
}

/* The space's axes in order: kept, then reduced (commutative reductions
 * take the reduced axes largest stride first, so a transposed input still
 * merges). */
static void order_axes(const tj_graph *g, const tj_group *grp, int rs, const int64_t *S, uint32_t red, axes *ax)
{
    int order[TJ_MAX_RANK], n = 0;
    for (int i = 0; i < rs; i++)
        if (!(red & (1u << i)))
            order[n++] = i;
    int first_red = n;
    for (int i = 0; i < rs; i++)
        if (red & (1u << i))
            order[n++] = i;
    int64_t st[MAX_OPS][TJ_MAX_RANK], own[TJ_MAX_RANK];
    for (int o = 0; o < ax->nops; o++) {
        tj_node_strides(g, operand(grp, o), own);
        aligned_strides(&g->nodes[operand(grp, o)], own, rs, st[o]);
    }
    for (int i = first_red + 1; i < n; i++) /* insertion sort by |stride of operand 0| */
        for (int j = i; j > first_red; j--) {
            int64_t a = llabs(st[0][order[j - 1]]), b = llabs(st[0][order[j]]);
            if (a >= b)
                break;
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    ax->n = rs;
    for (int i = 0; i < rs; i++) {
        ax->ext[i] = S[order[i]];
        ax->cls[i] = (red >> order[i]) & 1;
        for (int o = 0; o < ax->nops; o++)
            ax->st[o][i] = st[o][order[i]];
    }
}

/* Threads per program: at most THREAD_ELEMS elements of the tile a thread,
 * at least 4 warps. A thread's share is straight-line code, so a larger
 * one grows the PTX and ptxas's time faster than linearly (a softmax row
 * of 4096 at 4 warps, 32 a thread, assembled in twice the time of 8 warps)
 * and the registers (docs/arrays.md, bench/NOTES.md). */
static int warps_for(int64_t elems, int per_thread)
{
    int warps = 4;
    while (warps < 16 && elems > (int64_t)warps * 32 * per_thread)
        warps *= 2;
    return warps;
}

int tj_warps_for_tile(int64_t elems) { return warps_for(elems, THREAD_ELEMS); }

static void choose_elementwise(tj_group *grp)
{
    int64_t M = grp->space[grp->space_rank - 2], N = grp->space[grp->space_rank - 1];
    grp->bn = clamp64(pow2ceil(N), 1, 1024);
    grp->bm = clamp64(TILE_ELEMS / grp->bn, 1, pow2ceil(M));
    snprintf(grp->why, sizeof grp->why, "rows of %lld", (long long)N);
}

static void choose_reduce(tj_group *grp, int along)
{
    int64_t M = grp->space[grp->nbatch], N = grp->space[grp->space_rank - 1];
    if (grp->row) {
        grp->bn = pow2ceil(N);
        grp->bm = clamp64(TILE_ELEMS / grp->bn, 1, pow2ceil(M));
        snprintf(grp->why, sizeof grp->why, "whole rows of %lld in one tile", (long long)N);
    } else if (along) {
        grp->bn = clamp64(pow2ceil(N), 1, 2048);
        grp->bm = clamp64(TILE_ELEMS / grp->bn, 1, pow2ceil(M));
        snprintf(grp->why, sizeof grp->why, "along contiguous rows of %lld, looped", (long long)N);
    } else {
        grp->bn = clamp64(pow2ceil(N), 1, 16);
        grp->bm = clamp64(pow2ceil(M), 1, 256);
        snprintf(grp->why, sizeof grp->why, "across a strided axis of %lld, looped", (long long)N);
    }
}

/* 16-bit operands run on the matrix atom: large products take the
 * 128 x 128 x 32 tiles with a 3-slot copy ring the matmul sweeps found
 * fastest (bench/RESULTS.md); others (f32 FMA, integers) 64 x 64 x 32 at
 * 4 warps with 2 slots, the fastest FMA configuration at the MLP block's
 * shapes on the H200 (37.1-37.5 TFLOP/s, against 35.4-36.5 for 128 x 64 x
 * 16 and 128 x 128 x 16, 36.3-36.4 with 3 slots; bench/RESULTS.md, "The
 * f32 FMA matmul fed by copy rings"). */
static void choose_matmul(tj_group *grp, tj_dtype dt)
{
    int64_t M = grp->space[grp->nbatch], N = grp->space[grp->nbatch + 1];
    int half = dt == TJ_DT_F16 || dt == TJ_DT_BF16;
    int64_t top = half && M >= 128 && N >= 128 ? 128 : 64;
    grp->bm = clamp64(pow2ceil(M), 16, top);
    grp->bn = clamp64(pow2ceil(N), 16, top);
    grp->bk = clamp64(pow2ceil(grp->k_extent), 16, 32);
    grp->stages = top == 128 ? 3 : 2;
    grp->warps = 4;
    snprintf(grp->why, sizeof grp->why, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)grp->k_extent);
}

/* An elementwise thread's share: one 16-byte vector of its narrowest
 * operand (4 f32, 8 f16), at least 4. Nothing is shared across the tile,
 * so more threads cost no traffic, and ptxas assembles gelu(x*y+z) at
 * 1024 a tile in 27 ms at 4 a thread against 41 at 8 (bench/NOTES.md). */
static int elementwise_thread_elems(const tj_group_args *args, int nops)
{
    int narrowest = 8;
    for (int o = 0; o < nops; o++) {
        int size = tj_dtype_size(args->t[o].dtype);
        narrowest = size > 0 && size < narrowest ? size : narrowest;
    }
    int elems = VECTOR_BYTES / narrowest;
    return elems > ELEMWISE_MIN_THREAD_ELEMS ? elems : ELEMWISE_MIN_THREAD_ELEMS;
}

static int tile_elementwise(const tj_graph *g, tj_group *grp, tj_group_args *args, axes *ax)
{
    const tj_anode *root = &g->nodes[grp->root];
    order_axes(g, grp, root->rank, root->shape, 0, ax);
    drop_unit_axes(ax);
    merge_axes(ax);
    while (ax->n < 2)
        insert_unit(ax, 0, 0);
    grp->nbatch = ax->n - 2;
    grp->space_rank = ax->n;
    memcpy(grp->space, ax->ext, sizeof(int64_t) * (size_t)ax->n);
    for (int o = 0; o < ax->nops; o++)
        fill_tensor(&g->nodes[operand(grp, o)], &args->t[o], ax, o, ax->n);
    choose_elementwise(grp);
    grp->warps = warps_for(grp->bm * grp->bn, elementwise_thread_elems(args, ax->nops));
    return 0;
}

/* Whether the PTX of op may divide (math: a log divides). */
static int may_divide(tj_aop op)
{
    tj_aop_kind kind = tj_aop_kind_of(op);
    return kind == TJ_AK_DIVIDE || kind == TJ_AK_MATH || op == TJ_AOP_MEAN || op == TJ_AOP_RECIPROCAL ||
           op == TJ_AOP_POWER || op == TJ_AOP_REMAINDER || op == TJ_AOP_FLOOR_DIVIDE;
}

/* Whether a reduction group divides, and only at the reduced level (a
 * mean, as a layer norm's two): a few divisions a thread, where the f32
 * division in f64 (`const calls = 0`) costs nothing that counts and saves
 * ptxas its slow path's subroutine (54 M of nvJitLink's 214 M
 * instructions for the MLP's layer norm; bench/NOTES.md). A division at
 * every element keeps div.rn.f32. */
static int divides_per_row(const tj_graph *g, const tj_group *grp)
{
    int divides = 0;
    for (uint32_t i = 0; i < grp->nmembers; i++) {
        tj_array a = grp->members[i];
        if (!may_divide(g->nodes[a].op))
            continue;
        if (!tj_group_reduced_level(g, grp, a))
            return 0;
        divides = 1;
    }
    return divides;
}

static int tile_reduce(const tj_graph *g, tj_group *grp, tj_group_args *args, axes *ax, tj_rt_error *err)
{
    const tj_anode *core = &g->nodes[grp->core], *in = &g->nodes[core->in[0]];
    order_axes(g, grp, in->rank, in->shape, core->axes, ax);
    drop_unit_axes(ax);
    merge_axes(ax);
    int nkept = 0;
    while (nkept < ax->n && ax->cls[nkept] == 0)
        nkept++;
    if (nkept == 0) {
        insert_unit(ax, 0, 0);
        nkept = 1;
    }
    grp->nbatch = nkept - 1;
    grp->nred = ax->n - nkept;
    if (grp->nred < 1) { /* every reduced extent is 1 or merged away: keep one */
        insert_unit(ax, ax->n, 1);
        grp->nred = 1;
    }
    if (grp->row && grp->nred > 1)
        return tj_rt_fail(err, "tiling: %s over axes that do not merge into one (strides) with whole rows",
                          tj_aop_name(core->op));
    if (ax->n > TJ_MAX_RANK)
        return tj_rt_fail(err, "tiling: %s needs %d axes, more than %d", tj_aop_name(core->op), ax->n, TJ_MAX_RANK);
    grp->space_rank = ax->n;
    memcpy(grp->space, ax->ext, sizeof(int64_t) * (size_t)ax->n);
    int along = 1;
    for (int o = 0; o < ax->nops; o++) {
        tj_array a = operand(grp, o);
        int reduced = tj_group_reduced_level(g, grp, a);
        args->reduced[o] = reduced;
        fill_tensor(&g->nodes[a], &args->t[o], ax, o, reduced ? nkept : ax->n);
        if (!reduced && o < (int)grp->ninputs && along == 1)
            along = ax->st[o][ax->n - 1] == 1 ? 1 : 2;
    }
    choose_reduce(grp, along == 1);
    grp->warps = tj_warps_for_tile(grp->bm * grp->bn);
    grp->no_calls = divides_per_row(g, grp);
    return 0;
}

/* A matmul group's operand o (an input of side A, B or the epilogue, or
 * the output): its strides over its side's shape ([..., M, K], [..., K, N],
 * [..., M, N]), the batch part aligned to the output's batch axes (rb of
 * them) in batch, the last two in two. */
static void side_strides(const tj_graph *g, const tj_group *grp, int o, int rb, int64_t *batch, int64_t *two)
{
    const tj_anode *core = &g->nodes[grp->core];
    int side = (uint32_t)o < grp->ninputs ? grp->input_side[o] : 0;
    const tj_anode *space = side ? &g->nodes[core->in[side - 1]] : &g->nodes[grp->root];
    tj_array a = (uint32_t)o < grp->ninputs ? grp->inputs[o] : grp->root;
    int64_t own[TJ_MAX_RANK], st[TJ_MAX_RANK];
    tj_node_strides(g, a, own);
    aligned_strides(&g->nodes[a], own, space->rank, st);
    int sb = space->rank - 2;
    for (int i = 0; i < rb; i++) {
        int k = i - (rb - sb);
        batch[i] = k >= 0 ? st[k] : 0;
    }
    two[0] = st[sb];
    two[1] = st[sb + 1];
}

static int tile_matmul(const tj_graph *g, tj_group *grp, tj_group_args *args, axes *ax)
{
    const tj_anode *root = &g->nodes[grp->root], *core = &g->nodes[grp->core];
    int r = root->rank, rb = r - 2;
    int64_t two[MAX_OPS][2];
    axes bx = {.n = rb, .nops = ax->nops};
    for (int o = 0; o < ax->nops; o++) {
        int64_t batch[TJ_MAX_RANK];
        side_strides(g, grp, o, rb, batch, two[o]);
        for (int i = 0; i < rb; i++)
            bx.st[o][i] = batch[i];
    }
    for (int i = 0; i < rb; i++)
        bx.ext[i] = root->shape[i];
    drop_unit_axes(&bx);
    merge_axes(&bx);
    grp->nbatch = bx.n;
    grp->space_rank = bx.n + 2;
    memcpy(grp->space, bx.ext, sizeof(int64_t) * (size_t)bx.n);
    int64_t M = root->shape[r - 2], N = root->shape[r - 1];
    const tj_anode *A = &g->nodes[core->in[0]];
    grp->space[bx.n] = M;
    grp->space[bx.n + 1] = N;
    grp->k_extent = A->shape[A->rank - 1];
    for (int o = 0; o < ax->nops; o++) {
        const tj_anode *x = &g->nodes[(uint32_t)o < grp->ninputs ? grp->inputs[o] : grp->root];
        int side = (uint32_t)o < grp->ninputs ? grp->input_side[o] : 0;
        tj_tensor *t = &args->t[o];
        memset(t, 0, sizeof *t);
        t->data = x->buf ? (char *)x->buf->data + x->offset * tj_dtype_size(x->dtype) : NULL;
        t->dtype = x->dtype;
        t->rank = bx.n + 2;
        for (int i = 0; i < bx.n; i++) {
            t->shape[i] = bx.ext[i];
            t->strides[i] = bx.st[o][i];
        }
        t->shape[bx.n] = side == 2 ? grp->k_extent : M;
        t->shape[bx.n + 1] = side == 1 ? grp->k_extent : N;
        t->strides[bx.n] = two[o][0];
        t->strides[bx.n + 1] = two[o][1];
    }
    choose_matmul(grp, core->dtype);
    return 0;
}

int tj_tile(tj_graph *g, tj_group *grp, tj_group_args *args, tj_rt_error *err)
{
    memset(args, 0, sizeof *args);
    axes *ax = calloc(1, sizeof *ax);
    if (!ax)
        return tj_rt_fail(err, "tiling: out of memory");
    ax->nops = noperands(grp);
    int bad;
    switch (grp->kind) {
    case TJ_GROUP_ELEMWISE:
        bad = tile_elementwise(g, grp, args, ax);
        break;
    case TJ_GROUP_REDUCE:
        bad = tile_reduce(g, grp, args, ax, err);
        break;
    case TJ_GROUP_MATMUL:
        bad = tile_matmul(g, grp, args, ax);
        break;
    case TJ_GROUP_ATTENTION:
        bad = tj_tile_attention(g, grp, args, err);
        break;
    default:
        bad = tj_rt_fail(err, "tiling: a %s step has no tiles", tj_group_kind_name(grp->kind));
    }
    args->nargs = (uint32_t)grp->ninputs + 1;
    free(ax);
    return bad;
}
