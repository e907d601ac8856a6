/* The plan memo: an evaluation of a subgraph with the structure of one
 * evaluated before reuses that evaluation's groups, tiles and kernels, so a
 * warm call skips fusion, tiling and emission (about 30 us of the 39 a
 * warm gelu evaluation took, bench/NOTES.md).
 *
 * The key is the subgraph as the passes read it, nodes numbered by their
 * place in tj_graph_topo's order (node indices are reused slots and say
 * nothing): per pending node its op, dtypes, shape, inputs (as places),
 * attributes (axes, keepdims, axis, permutation, slice, constants' bits,
 * weak) and force_root; per node with data its op, dtype, shape and
 * strides (what tiling reads; the data pointer is taken at each launch and
 * the dispatch specializes on its alignment); then the roots' places.
 * Fusion reads nothing else of the graph (the consumer counts it derives
 * from the subgraph itself), tiling reads the strides, emission the tiled
 * groups. The value: each group of the plan with node indices replaced by
 * places, and for a fused kernel its tiled fields, its arguments without
 * their data and its entry in the kernel cache (entries never go before
 * the graph does). docs/arrays.md. */
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"
#include "tilejit/cache.h"

enum { TJ_MEMO_ENTRIES = 64 };

struct tj_plan_memo_entry {
    uint64_t hash;
    char *key;
    size_t len;
    tj_plan_memo_group *groups;
    uint32_t ngroups;
};

typedef struct tj_plan_memo {
    tj_plan_memo_entry entries[TJ_MEMO_ENTRIES];
    uint32_t n, next; /* entries used; the one a full memo replaces next */
} tj_plan_memo;

typedef struct key_writer {
    tj_buf *b;
    int failed; /* out of memory: a short key must never match */
} key_writer;

/* Room for n more bytes, made once a node rather than once a field (the
 * appends of a warm gelu's ~1500-byte key were 1 us of its evaluation). */
static void room(key_writer *w, size_t n)
{
    tj_buf *b = w->b;
    if (w->failed || b->len + n + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        w->failed = 1;
        return;
    }
    b->data = p;
    b->cap = cap;
}

/* Within the room made for it. */
static void put(key_writer *w, const void *p, size_t n)
{
    if (w->failed)
        return;
    memcpy(w->b->data + w->b->len, p, n);
    w->b->len += n;
}

static void put_i64s(key_writer *w, const int64_t *v, int n) { put(w, v, sizeof *v * (size_t)n); }

static void put_u32(key_writer *w, uint32_t v) { put(w, &v, sizeof v); }

/* The most put_node writes: its head, shape and strides or attributes
 * (perm, start, stop, step, two values, weak, nin) and its inputs. */
static size_t node_bytes(const tj_anode *x)
{
    size_t r = (size_t)x->rank;
    return sizeof(int32_t) * 5 + sizeof(int64_t) * r * 5 + sizeof(int32_t) * 4 + sizeof *x->perm * r +
           sizeof(double) * 2 + sizeof(uint32_t) * (2 + (size_t)x->nin);
}

static void put_node(key_writer *w, const tj_anode *x, const uint32_t *pos)
{
    room(w, node_bytes(x));
    int32_t head[5] = {(int32_t)x->op, (int32_t)x->dtype, x->rank, x->has_data, x->force_root};
    put(w, head, sizeof head);
    put_i64s(w, x->shape, x->rank);
    if (x->has_data) { /* a leaf of the subgraph */
        put_i64s(w, x->strides, x->rank);
        return;
    }
    int32_t attr[4] = {(int32_t)x->ctype, (int32_t)x->axes, x->keepdims, x->axis};
    put(w, attr, sizeof attr);
    put(w, x->perm, sizeof *x->perm * (size_t)x->rank);
    put_i64s(w, x->start, x->rank);
    put_i64s(w, x->stop, x->rank);
    put_i64s(w, x->step, x->rank);
    double vals[2] = {x->value, x->step_value};
    put(w, vals, sizeof vals); /* bits: -0.0 and NaNs print differently */
    put_u32(w, (uint32_t)x->weak);
    put_u32(w, x->nin);
    for (uint32_t i = 0; i < x->nin; i++)
        put_u32(w, pos[tj_anode_input(x, i)]);
}

void tj_plan_memo_key_free(tj_plan_memo_key *k)
{
    tj_buf_free(&k->text);
    free(k->order);
    free(k->pos);
    memset(k, 0, sizeof *k);
}

int tj_plan_memo_key_make(const tj_graph *g, const tj_array *roots, uint32_t n, tj_plan_memo_key *k)
{
    memset(k, 0, sizeof *k);
    k->pos = malloc(sizeof *k->pos * (g->nnodes ? g->nnodes : 1));
    int count = k->pos ? tj_graph_topo(g, roots, n, &k->order, k->pos) : -1;
    if (count < 0) {
        tj_plan_memo_key_free(k);
        return 1;
    }
    k->norder = (uint32_t)count;
    key_writer w = {&k->text, 0};
    room(&w, sizeof(uint32_t));
    put_u32(&w, k->norder);
    for (uint32_t i = 0; i < k->norder; i++)
        put_node(&w, &g->nodes[k->order[i]], k->pos);
    room(&w, sizeof(uint32_t) * (1 + (size_t)n));
    put_u32(&w, n);
    for (uint32_t i = 0; i < n; i++)
        put_u32(&w, k->pos[roots[i]]);
    if (w.failed) {
        tj_plan_memo_key_free(k);
        return 1;
    }
    k->hash = tj_hash64(k->text.data, k->text.len, 0);
    return 0;
}

const tj_plan_memo_entry *tj_plan_memo_find(const tj_graph *g, const tj_plan_memo_key *k)
{
    const tj_plan_memo *m = g->memo;
    for (uint32_t i = 0; m && i < m->n; i++) {
        const tj_plan_memo_entry *e = &m->entries[i];
        if (e->hash == k->hash && e->len == k->text.len && memcmp(e->key, k->text.data, e->len) == 0)
            return e;
    }
    return NULL;
}

/* Node index a as its place + 1 in k's order (0 stays 0); 1 when a is not in it. */
static int to_place(const tj_plan_memo_key *k, tj_array *a)
{
    if (!*a)
        return 0;
    uint32_t p = k->pos[*a];
    if (!p || p == UINT32_MAX)
        return 1;
    *a = p;
    return 0;
}

static tj_array from_place(const tj_plan_memo_key *k, tj_array p) { return p ? k->order[p - 1] : 0; }

/* The group's node indices through f (to_place or from_place). */
static int map_group(tj_group *grp, const tj_plan_memo_key *k, int to)
{
    int bad = 0;
    tj_array *ids[2] = {&grp->root, &grp->core};
    for (int i = 0; i < 2; i++)
        bad |= to ? to_place(k, ids[i]) : (*ids[i] = from_place(k, *ids[i]), 0);
    for (uint32_t i = 0; i < grp->nmembers; i++)
        bad |= to ? to_place(k, &grp->members[i]) : (grp->members[i] = from_place(k, grp->members[i]), 0);
    for (uint32_t i = 0; i < grp->ninputs; i++)
        bad |= to ? to_place(k, &grp->inputs[i]) : (grp->inputs[i] = from_place(k, grp->inputs[i]), 0);
    return bad;
}

void tj_plan_memo_store(tj_graph *g, const tj_plan_memo_key *k, tj_plan_memo_group *groups, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (map_group(&groups[i].grp, k, 1)) {
            free(groups);
            return; /* a group outside the subgraph: not memoized */
        }
    if (!g->memo)
        g->memo = calloc(1, sizeof *g->memo);
    char *key = g->memo ? malloc(k->text.len) : NULL;
    if (!key) {
        free(groups);
        return;
    }
    memcpy(key, k->text.data, k->text.len);
    tj_plan_memo *m = g->memo;
    uint32_t at = m->n < TJ_MEMO_ENTRIES ? m->n++ : m->next++ % TJ_MEMO_ENTRIES;
    tj_plan_memo_entry *e = &m->entries[at];
    free(e->key);
    free(e->groups);
    *e = (tj_plan_memo_entry){k->hash, key, k->text.len, groups, n};
}

uint32_t tj_plan_memo_groups(const tj_plan_memo_entry *e) { return e->ngroups; }

void tj_plan_memo_group_at(const tj_plan_memo_entry *e, uint32_t i, const tj_plan_memo_key *k, tj_group *grp,
                      const tj_plan_memo_group **mg)
{
    *mg = &e->groups[i];
    *grp = e->groups[i].grp;
    map_group(grp, k, 0);
}

void tj_plan_memo_free(tj_graph *g)
{
    if (!g->memo)
        return;
    for (uint32_t i = 0; i < g->memo->n; i++) {
        free(g->memo->entries[i].key);
        free(g->memo->entries[i].groups);
    }
    free(g->memo);
    g->memo = NULL;
}
