/* The graph: an arena of nodes named by index, their lifetimes, the op
 * table and the errors of the build calls. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

typedef struct aop_row {
    const char *name;
    tj_aop_kind kind;
    int nin;
} aop_row;

static const aop_row aop_table[TJ_AOP_COUNT] = {
    [TJ_AOP_INVALID] = {NULL, TJ_AK_LEAF, 0},
#define AOP(e, s, kind, nin) [TJ_AOP_##e] = {s, TJ_AK_##kind, nin},
#include "tilejit/array_ops.def"
};

const char *tj_aop_name(tj_aop op) { return op > 0 && op < TJ_AOP_COUNT ? aop_table[op].name : NULL; }
tj_aop_kind tj_aop_kind_of(tj_aop op) { return op > 0 && op < TJ_AOP_COUNT ? aop_table[op].kind : TJ_AK_LEAF; }
int tj_aop_nin(tj_aop op) { return op > 0 && op < TJ_AOP_COUNT ? aop_table[op].nin : 0; }

tj_aop tj_aop_from_name(const char *s, size_t len)
{
    if (!s)
        return TJ_AOP_INVALID;
    for (int op = 1; op < TJ_AOP_COUNT; op++)
        if (strlen(aop_table[op].name) == len && memcmp(aop_table[op].name, s, len) == 0)
            return (tj_aop)op;
    return TJ_AOP_INVALID;
}

int tj_aop_is_elementwise(tj_aop op)
{
    tj_aop_kind k = tj_aop_kind_of(op);
    return k >= TJ_AK_UNARY && k <= TJ_AK_CLIP;
}

tj_graph *tj_graph_new(tj_device_kind device, int ordinal, tj_rt_error *err)
{
    if (device != TJ_DEVICE_CPU && device != TJ_DEVICE_CUDA && device != TJ_DEVICE_INTERP) {
        tj_rt_fail(err, "tj_graph_new: unknown device %d", (int)device);
        return NULL;
    }
    tj_graph *g = calloc(1, sizeof *g);
    if (!g) {
        tj_rt_fail(err, "tj_graph_new: out of memory");
        return NULL;
    }
    g->device = device;
    g->ordinal = ordinal;
    g->jit = tj_jit_open(device, ordinal, err);
    if (!g->jit) {
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->stats_lock, NULL);
    tj_graph_watch_compiles(g);
    return g;
}

void tj_graph_kernels_free(tj_graph *g); /* eval.c */

void tj_graph_free(tj_graph *g)
{
    if (!g)
        return;
    for (uint32_t i = 1; i < g->nnodes; i++) {
        tj_anode *n = &g->nodes[i];
        if (n->buf && !n->dead)
            tj_abuf_unref(g, n->buf);
        free(n->more_in);
    }
    tj_graph_kernels_free(g);
    tj_plan_memo_free(g);
    tj_lib_close(g->lib);
    tj_graph_pool_free(g);
    tj_jit_close(g->jit);
    pthread_mutex_destroy(&g->stats_lock);
    free(g->nodes);
    free(g->free);
    free(g);
}

tj_device_kind tj_graph_device(const tj_graph *g) { return g ? g->device : TJ_DEVICE_CPU; }
const char *tj_graph_error(const tj_graph *g) { return g ? g->error : "tj_graph_error: NULL graph"; }
void tj_graph_clear_error(tj_graph *g)
{
    if (g)
        g->error[0] = 0;
}

tj_array tj_graph_fail(tj_graph *g, const char *fmt, ...)
{
    if (g->error[0])
        return TJ_ARRAY_NONE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->error, sizeof g->error, fmt, ap);
    va_end(ap);
    return TJ_ARRAY_NONE;
}

int tj_array_valid(const tj_graph *g, tj_array a) { return g && a > 0 && a < g->nnodes && !g->nodes[a].dead; }

tj_array tj_anode_input(const tj_anode *n, uint32_t i) { return n->more_in ? n->more_in[i] : n->in[i]; }

int64_t tj_shape_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    return n;
}

void tj_contiguous_strides(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

void tj_shape_str(tj_dtype dt, int rank, const int64_t *shape, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "%s[", tj_dtype_name(dt));
    for (int i = 0; i < rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

static int grow(tj_graph *g)
{
    if (g->nfree || g->nnodes < g->cap)
        return 0;
    uint32_t cap = g->cap ? g->cap * 2 : 256;
    tj_anode *nodes = realloc(g->nodes, cap * sizeof *nodes);
    if (!nodes)
        return 1;
    g->nodes = nodes;
    g->cap = cap;
    if (g->nnodes == 0) {
        memset(&g->nodes[0], 0, sizeof g->nodes[0]);
        g->nodes[0].dead = 1;
        g->nnodes = 1;
    }
    return 0;
}

tj_array tj_graph_add(tj_graph *g, tj_aop op, tj_dtype dt, int rank, const int64_t *shape, const tj_array *in,
                      uint32_t nin)
{
    if (grow(g))
        return tj_graph_fail(g, "%s: out of memory", tj_aop_name(op));
    tj_array a = g->nfree ? g->free[--g->nfree] : g->nnodes++; /* a dead node's slot first */
    tj_anode *n = &g->nodes[a];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dtype = dt;
    n->rank = rank;
    for (int i = 0; i < rank; i++)
        n->shape[i] = shape[i];
    if (nin > TJ_ANODE_MAX_IN) {
        n->more_in = malloc(nin * sizeof *n->more_in);
        if (!n->more_in)
            return tj_graph_fail(g, "%s: out of memory", tj_aop_name(op));
        memcpy(n->more_in, in, nin * sizeof *in);
    } else if (nin)
        memcpy(n->in, in, nin * sizeof *in);
    n->nin = nin;
    n->holds = 1;
    for (uint32_t i = 0; i < nin; i++)
        g->nodes[in[i]].users++;
    g->stats.nodes++;
    return a;
}

int tj_array_get_info(const tj_graph *g, tj_array a, tj_array_info *out)
{
    if (!tj_array_valid(g, a) || !out)
        return 1;
    const tj_anode *n = tj_anode_at(g, a);
    memset(out, 0, sizeof *out);
    out->op = n->op;
    out->dtype = n->dtype;
    out->rank = n->rank;
    memcpy(out->shape, n->shape, sizeof out->shape);
    out->evaluated = n->has_data;
    return 0;
}

static int grow_free(tj_graph *g)
{
    uint32_t cap = g->free_cap ? g->free_cap * 2 : 256;
    tj_array *f = realloc(g->free, cap * sizeof *f);
    if (!f)
        return 1; /* the slot stays dead, unused */
    g->free = f;
    g->free_cap = cap;
    return 0;
}

/* A node nobody holds or needs: its buffer goes, and, unevaluated, its
 * edges (which may free its inputs in turn). */
static void maybe_free(tj_graph *g, tj_array a)
{
    tj_anode *n = tj_anode_at(g, a);
    if (n->dead || n->holds > 0 || n->users > 0)
        return;
    n->dead = 1;
    if (n->buf) {
        tj_abuf_unref(g, n->buf);
        n->buf = NULL;
    }
    uint32_t nin = n->nin;
    n->nin = 0;
    for (uint32_t i = 0; i < nin; i++) {
        tj_array in = tj_anode_input(&g->nodes[a], i);
        g->nodes[in].users--;
        maybe_free(g, in);
    }
    free(g->nodes[a].more_in);
    g->nodes[a].more_in = NULL;
    if (g->nfree < g->free_cap || grow_free(g) == 0)
        g->free[g->nfree++] = a;
}

void tj_anode_settle(tj_graph *g, tj_array a)
{
    tj_anode *n = tj_anode_at(g, a);
    uint32_t nin = n->nin;
    n->nin = 0;
    for (uint32_t i = 0; i < nin; i++) {
        tj_array in = tj_anode_input(n, i);
        g->nodes[in].users--;
        maybe_free(g, in);
    }
    free(n->more_in);
    n->more_in = NULL;
}

void tj_array_retain(tj_graph *g, tj_array a)
{
    if (tj_array_valid(g, a))
        g->nodes[a].holds++;
}

void tj_array_release(tj_graph *g, tj_array a)
{
    if (!tj_array_valid(g, a) || g->nodes[a].holds <= 0)
        return;
    g->nodes[a].holds--;
    maybe_free(g, a);
}

void tj_array_release_n(tj_graph *g, const tj_array *a, uint32_t n)
{
    for (uint32_t i = 0; a && i < n; i++)
        tj_array_release(g, a[i]);
}

void tj_graph_get_stats(const tj_graph *g, tj_graph_stats *out)
{
    if (g && out)
        *out = g->stats;
}

int tj_graph_topo(const tj_graph *g, const tj_array *roots, uint32_t n, tj_array **order, uint32_t *pos)
{
    memset(pos, 0, sizeof *pos * g->nnodes);
    tj_array *out = malloc(sizeof *out * (g->nnodes ? g->nnodes : 1));
    tj_array *stack = malloc(sizeof *stack * (g->nnodes ? g->nnodes : 1));
    uint32_t *next = calloc(g->nnodes ? g->nnodes : 1, sizeof *next);
    if (!out || !stack || !next) {
        free(out);
        free(stack);
        free(next);
        return -1;
    }
    uint32_t k = 0, sp = 0;
    /* pos[a]: 0 unseen, UINT32_MAX on the stack, else 1 + its place */
    for (uint32_t r = 0; r < n; r++) {
        if (pos[roots[r]])
            continue;
        stack[sp++] = roots[r];
        pos[roots[r]] = UINT32_MAX;
        while (sp) {
            tj_array a = stack[sp - 1];
            const tj_anode *x = &g->nodes[a];
            uint32_t nin = x->has_data ? 0 : x->nin;
            if (next[a] < nin) {
                tj_array in = tj_anode_input(x, next[a]++);
                if (!pos[in]) {
                    pos[in] = UINT32_MAX;
                    stack[sp++] = in;
                }
                continue;
            }
            sp--;
            out[k] = a;
            pos[a] = ++k;
        }
    }
    free(stack);
    free(next);
    *order = out;
    return (int)k;
}
