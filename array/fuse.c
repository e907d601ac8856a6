/* Fusion: the groups that evaluate a set of roots, each one kernel.
 *
 * Roots, nodes the planner marks (force_root: a copy) and nodes read by
 * something that is not fused (views, gathers, matmul operands) are
 * materialized. A node the caller still holds is not: fused into its
 * consumers now, it is computed again if it is evaluated later. Every other
 * node joins the group of its consumers when all of them are in one group
 * and the group's kind accepts it: elementwise ops anywhere; reductions
 * (as a reduce group: a prologue before them, an epilogue after) when they
 * share the group's space and axes; a matmul (as a matmul group: bias,
 * activation, residual, scale after it) when the group is elementwise and
 * has its shape. Constants are inlined into every group that reads them.
 * A reduce group whose epilogue mixes reduced values back into full rows
 * needs the whole row in one tile; past TJ_ROW_MAX its reductions become
 * groups of their own. docs/arrays.md. */
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

enum { TJ_ROW_MAX = 8192 };

typedef struct fuse_state {
    tj_graph *g;
    uint32_t n;          /* g->nnodes */
    tj_array *topo;      /* what the roots need, producers first */
    uint32_t ntopo;
    uint32_t *pos;       /* 1 + place in topo */
    uint8_t *needed;     /* pending and reachable from a root */
    uint8_t *root;       /* must be materialized */
    int32_t *group_of;   /* group index + 1, 0: none yet */
    uint32_t **users;    /* pending consumers of each node */
    uint32_t *nusers;
    uint8_t *side;       /* collect's: the side of each member */
    uint8_t *leafy;      /* mark_leafy's */
} fuse_state;

static int pending(const tj_graph *g, tj_array a) { return !g->nodes[a].has_data; }

static int add_user(fuse_state *s, tj_array p, tj_array c)
{
    uint32_t k = s->nusers[p];
    if ((k & (k - 1)) == 0 || k == 0) {
        uint32_t *u = realloc(s->users[p], (k ? 2 * k : 2) * sizeof *u);
        if (!u)
            return 1;
        s->users[p] = u;
    }
    s->users[p][s->nusers[p]++] = c;
    return 0;
}

static int is_barrier_consumer(tj_aop op)
{
    tj_aop_kind k = tj_aop_kind_of(op);
    return !(tj_aop_is_elementwise(op) || k == TJ_AK_REDUCE || op == TJ_AOP_MATMUL);
}

/* Marks what the roots need, the consumers of each node, and the nodes
 * that must be materialized. */
static int mark(fuse_state *s, const tj_array *roots, uint32_t nroots)
{
    tj_graph *g = s->g;
    for (uint32_t i = 0; i < nroots; i++)
        if (pending(g, roots[i])) {
            s->needed[roots[i]] = 1;
            s->root[roots[i]] = 1;
        }
    int k = tj_graph_topo(g, roots, nroots, &s->topo, s->pos);
    if (k < 0)
        return 1;
    s->ntopo = (uint32_t)k;
    for (uint32_t t = s->ntopo; t-- > 0;) {
        tj_array a = s->topo[t];
        if (!s->needed[a])
            continue;
        tj_anode *x = &g->nodes[a];
        if (x->force_root)
            s->root[a] = 1;
        for (uint32_t i = 0; i < x->nin; i++) {
            tj_array in = tj_anode_input(x, i);
            if (!pending(g, in))
                continue;
            s->needed[in] = 1;
            if (add_user(s, in, a))
                return 1;
            if (is_barrier_consumer(x->op))
                s->root[in] = 1;
        }
    }
    for (uint32_t t = 0; t < s->ntopo; t++) {
        tj_array a = s->topo[t];
        if (s->needed[a] && g->nodes[a].op != TJ_AOP_FULL && !tj_aop_is_elementwise(g->nodes[a].op) &&
            tj_aop_kind_of(g->nodes[a].op) != TJ_AK_REDUCE && g->nodes[a].op != TJ_AOP_MATMUL)
            s->root[a] = 1; /* views, leaves to fill, gathers: steps of their own */
    }
    return 0;
}

/* Whether shape (rank r) broadcasts into space (rank rs) without growing. */
static int fits_space(int r, const int64_t *shape, int rs, const int64_t *space)
{
    if (r > rs)
        return 0;
    for (int i = 0; i < r; i++) {
        int64_t d = shape[i], t = space[i + rs - r];
        if (d != t && d != 1)
            return 0;
    }
    return 1;
}

static int all_users_in(const fuse_state *s, const uint8_t *member, tj_array p)
{
    if (!s->nusers[p])
        return 0;
    for (uint32_t i = 0; i < s->nusers[p]; i++)
        if (!member[s->users[p][i]])
            return 0;
    return 1;
}

static int is_inline_const(const tj_graph *g, tj_array a)
{
    return g->nodes[a].op == TJ_AOP_FULL && !g->nodes[a].has_data;
}

/* The side of a matmul group p would be on (tj_group.side), from its
 * users: -1 when they disagree (read by both operands, or by an operand
 * and the epilogue). */
static int side_of(const fuse_state *s, const tj_group *grp, const uint8_t *side, tj_array p)
{
    int sd = -2;
    for (uint32_t i = 0; i < s->nusers[p]; i++) {
        tj_array u = s->users[p][i];
        int us = side[u];
        if (grp->kind == TJ_GROUP_MATMUL && u == grp->core) {
            const tj_anode *m = &s->g->nodes[u];
            if (m->in[0] == m->in[1])
                return -1;
            us = p == m->in[0] ? 1 : 2;
        }
        if (sd != -2 && sd != us)
            return -1;
        sd = us;
    }
    return sd < 0 ? 0 : sd;
}

/* An operand prologue: elementwise, within its operand's shape, and made
 * only of elementwise ops over arrays materialized anyway (so it never takes
 * the tail of a row group, such as a layer norm's, away from its
 * reductions). */
static int prologue_ok(const fuse_state *s, const tj_group *grp, tj_array p, int side)
{
    const tj_anode *x = &s->g->nodes[p], *opnd = &s->g->nodes[s->g->nodes[grp->core].in[side - 1]];
    return s->leafy[p] && fits_space(x->rank, x->shape, opnd->rank, opnd->shape);
}

/* leafy[a]: a is elementwise and so is everything pending below it, down to
 * materialized arrays. */
static void mark_leafy(fuse_state *s)
{
    for (uint32_t t = 0; t < s->ntopo; t++) {
        tj_array a = s->topo[t];
        const tj_anode *x = &s->g->nodes[a];
        int ok = s->needed[a] && tj_aop_is_elementwise(x->op);
        for (uint32_t i = 0; ok && i < x->nin; i++) {
            tj_array in = tj_anode_input(x, i);
            ok = !s->needed[in] || s->root[in] || s->leafy[in] || is_inline_const(s->g, in);
        }
        s->leafy[a] = (uint8_t)ok;
    }
}

/* Whether p may join grp; updates the group's kind and core. */
static int accepts(const fuse_state *s, tj_group *grp, tj_array p, const uint8_t *excluded)
{
    const tj_graph *g = s->g;
    const tj_anode *x = &g->nodes[p], *root = &g->nodes[grp->root];
    if (excluded[p])
        return 0;
    if (tj_aop_is_elementwise(x->op))
        return 1;
    if (tj_aop_kind_of(x->op) == TJ_AK_REDUCE) {
        if (grp->kind == TJ_GROUP_MATMUL)
            return 0;
        const tj_anode *in = &g->nodes[x->in[0]];
        if (grp->core) {
            const tj_anode *c = &g->nodes[grp->core], *cin = &g->nodes[c->in[0]];
            if (c->axes != x->axes || cin->rank != in->rank ||
                memcmp(cin->shape, in->shape, sizeof(int64_t) * (size_t)in->rank) != 0)
                return 0;
            return 1;
        }
        if (!fits_space(root->rank, root->shape, in->rank, in->shape))
            return 0;
        grp->kind = TJ_GROUP_REDUCE;
        grp->core = p;
        return 1;
    }
    if (x->op == TJ_AOP_MATMUL) {
        if (grp->kind != TJ_GROUP_ELEMWISE || x->rank != root->rank ||
            memcmp(x->shape, root->shape, sizeof(int64_t) * (size_t)x->rank) != 0)
            return 0;
        grp->kind = TJ_GROUP_MATMUL;
        grp->core = p;
        return 1;
    }
    return 0;
}

/* An input of the group in the space of `side` (one array read in two
 * spaces of a matmul group is two inputs). */
static int add_input(tj_group *grp, tj_array a, int side)
{
    for (uint32_t i = 0; i < grp->ninputs; i++)
        if (grp->inputs[i] == a && grp->input_side[i] == side)
            return 0;
    if (grp->ninputs == TJ_GROUP_MAX_INPUTS)
        return 1;
    grp->input_side[grp->ninputs] = (uint8_t)side;
    grp->inputs[grp->ninputs++] = a;
    return 0;
}


int tj_group_reduced_level(const tj_graph *g, const tj_group *grp, tj_array a)
{
    if (grp->kind != TJ_GROUP_REDUCE)
        return 0;
    const tj_anode *x = &g->nodes[a], *core = &g->nodes[grp->core];
    int rs = core->rank;
    for (int i = 0; i < x->rank; i++) {
        int axis = i + rs - x->rank;
        if ((core->axes & (1u << axis)) && x->shape[i] != 1)
            return 0;
    }
    return 1;
}

static void kind_of_root(const tj_graph *g, tj_group *grp)
{
    const tj_anode *x = &g->nodes[grp->root];
    if (tj_aop_kind_of(x->op) == TJ_AK_REDUCE) {
        grp->kind = TJ_GROUP_REDUCE;
        grp->core = grp->root;
    } else if (x->op == TJ_AOP_MATMUL) {
        grp->kind = TJ_GROUP_MATMUL;
        grp->core = grp->root;
    } else if (tj_aop_is_elementwise(x->op))
        grp->kind = TJ_GROUP_ELEMWISE;
    else if (tj_aop_kind_of(x->op) == TJ_AK_VIEW)
        grp->kind = TJ_GROUP_VIEW;
    else if (tj_aop_kind_of(x->op) == TJ_AK_LEAF)
        grp->kind = TJ_GROUP_HOST;
    else
        grp->kind = TJ_GROUP_OTHER;
}

static int fusable_kind(tj_group_kind k) { return k <= TJ_GROUP_MATMUL; }

/* The members: from the root down, each node whose consumers are all
 * members and which the group accepts (below a matmul: on one side). */
static void collect(fuse_state *s, tj_group *grp, uint8_t *member, uint8_t *side, const uint8_t *excluded)
{
    tj_array stack[TJ_GROUP_MAX_NODES];
    uint32_t n = 0;
    stack[n++] = grp->root;
    member[grp->root] = 1;
    side[grp->root] = 0;
    if (!fusable_kind(grp->kind)) {
        grp->members[0] = grp->root;
        grp->nmembers = 1;
        return;
    }
    for (uint32_t t = s->pos[grp->root] - 1; t-- > 0 && n < TJ_GROUP_MAX_NODES;) {
        tj_array a = s->topo[t];
        if (!s->needed[a] || s->root[a] || s->group_of[a] || is_inline_const(s->g, a))
            continue;
        if (!all_users_in(s, member, a))
            continue;
        int sd = side_of(s, grp, side, a);
        if (sd < 0 || (sd > 0 && !prologue_ok(s, grp, a, sd)) || (sd == 0 && !accepts(s, grp, a, excluded)))
            continue;
        member[a] = 1;
        side[a] = (uint8_t)sd;
        stack[n++] = a;
    }
    grp->nmembers = n;
    for (uint32_t i = 0; i < n; i++) { /* ascending: dependency order */
        grp->members[i] = stack[n - 1 - i];
        grp->side[i] = side[grp->members[i]];
    }
}

/* Whether a member depends on a reduction inside the group. */
static void mark_dep_reduce(const tj_graph *g, const tj_group *grp, const uint8_t *member, uint8_t *dep)
{
    for (uint32_t i = 0; i < grp->nmembers; i++) {
        tj_array a = grp->members[i];
        const tj_anode *x = &g->nodes[a];
        dep[a] = tj_aop_kind_of(x->op) == TJ_AK_REDUCE;
        for (uint32_t j = 0; j < x->nin; j++) {
            tj_array in = tj_anode_input(x, j);
            if (member[in] && dep[in])
                dep[a] = 1;
        }
    }
}

static int64_t reduced_extent(const tj_graph *g, const tj_group *grp)
{
    const tj_anode *c = &g->nodes[grp->core], *in = &g->nodes[c->in[0]];
    int64_t n = 1;
    for (int i = 0; i < in->rank; i++)
        if (c->axes & (1u << i))
            n *= in->shape[i];
    return n;
}

/* A reduce group needs whole rows when a full-level member reads a value
 * computed from a reduction. Past TJ_ROW_MAX those values are excluded
 * (they become groups of their own); returns 1 when it excluded any. */
static int check_rows(fuse_state *s, tj_group *grp, const uint8_t *member, uint8_t *excluded, uint8_t *dep)
{
    if (grp->kind != TJ_GROUP_REDUCE)
        return 0;
    mark_dep_reduce(s->g, grp, member, dep);
    int changed = 0;
    grp->row = 0;
    for (uint32_t i = 0; i < grp->nmembers; i++) {
        tj_array a = grp->members[i];
        const tj_anode *x = &s->g->nodes[a];
        if (tj_aop_kind_of(x->op) == TJ_AK_REDUCE || tj_group_reduced_level(s->g, grp, a))
            continue;
        for (uint32_t j = 0; j < x->nin; j++) {
            tj_array in = tj_anode_input(x, j);
            if (!member[in] || !dep[in])
                continue;
            grp->row = 1;
            if (reduced_extent(s->g, grp) > TJ_ROW_MAX && tj_group_reduced_level(s->g, grp, in)) {
                excluded[in] = 1;
                changed = 1;
            }
        }
    }
    return changed;
}

static int build_group(fuse_state *s, tj_array r, tj_group *grp, uint8_t *member, uint8_t *excluded, uint8_t *dep)
{
    for (int attempt = 0;; attempt++) {
        memset(grp, 0, sizeof *grp);
        grp->root = r;
        kind_of_root(s->g, grp);
        collect(s, grp, member, s->side, excluded);
        int again = check_rows(s, grp, member, excluded, dep);
        if (!again || attempt > TJ_GROUP_MAX_NODES)
            break;
        for (uint32_t i = 0; i < grp->nmembers; i++)
            member[grp->members[i]] = 0;
    }
    const tj_graph *g = s->g;
    for (uint32_t i = 0; i < grp->nmembers; i++) {
        const tj_anode *x = &g->nodes[grp->members[i]];
        int is_core = grp->kind == TJ_GROUP_MATMUL && grp->members[i] == grp->core;
        for (uint32_t j = 0; j < x->nin; j++) {
            tj_array in = tj_anode_input(x, j);
            int sd = is_core ? (int)j + 1 : grp->side[i];
            if (!member[in] && !is_inline_const(g, in) && add_input(grp, in, sd))
                return 1;
        }
    }
    for (uint32_t i = 0; i < grp->nmembers; i++)
        member[grp->members[i]] = 0;
    return 0;
}

static int plan_push(tj_plan *plan, const tj_group *grp)
{
    tj_group *gs = tj_heap_grow(plan->groups, &plan->cap, plan->ngroups + 1, sizeof *gs);
    if (!gs)
        return 1;
    plan->groups = gs;
    plan->groups[plan->ngroups++] = *grp;
    return 0;
}

void tj_plan_free(tj_plan *plan)
{
    free(plan->groups);
    memset(plan, 0, sizeof *plan);
}

static void state_free(fuse_state *s)
{
    if (s->users)
        for (uint32_t i = 0; i < s->n; i++)
            free(s->users[i]);
    free(s->users);
    free(s->nusers);
    free(s->needed);
    free(s->root);
    free(s->group_of);
    free(s->topo);
    free(s->pos);
    free(s->side);
    free(s->leafy);
}

static int make_groups(fuse_state *s, tj_plan *plan, tj_rt_error *err)
{
    uint8_t *member = calloc(s->n, 1), *excluded = calloc(s->n, 1), *dep = calloc(s->n, 1);
    tj_group *grp = malloc(sizeof *grp);
    int bad = !member || !excluded || !dep || !grp;
    /* from the last node down: consumers are grouped before producers */
    for (uint32_t t = s->ntopo; !bad && t-- > 0;) {
        tj_array a = s->topo[t];
        if (!s->needed[a] || s->group_of[a] || (is_inline_const(s->g, a) && !s->root[a]) ||
            s->g->nodes[a].op == TJ_AOP_INPUT) /* a placeholder: eval refuses it */
            continue;
        if (s->g->nodes[a].op == TJ_AOP_MATMUL && tj_match_attention(s->g, a, s->needed, s->root, s->nusers, grp)) {
            for (uint32_t i = 0; i < grp->ninputs; i++)
                s->root[grp->inputs[i]] = s->needed[grp->inputs[i]]; /* q, k, v: materialized */
        } else if (build_group(s, a, grp, member, excluded, dep)) {
            tj_rt_fail(err, "fusion: a group of %s reads more than %d arrays", tj_aop_name(s->g->nodes[a].op),
                       TJ_GROUP_MAX_INPUTS);
            bad = 1;
            break;
        }
        for (uint32_t i = 0; i < grp->nmembers; i++)
            s->group_of[grp->members[i]] = (int32_t)plan->ngroups + 1;
        if (plan_push(plan, grp))
            bad = 1;
    }
    free(member);
    free(excluded);
    free(dep);
    free(grp);
    if (bad && !err->msg[0])
        tj_rt_fail(err, "fusion: out of memory");
    return bad;
}

int tj_fuse(tj_graph *g, const tj_array *roots, uint32_t n, tj_plan *plan, tj_rt_error *err)
{
    memset(plan, 0, sizeof *plan);
    err->msg[0] = 0;
    fuse_state s = {.g = g, .n = g->nnodes};
    s.needed = calloc(s.n, 1);
    s.root = calloc(s.n, 1);
    s.group_of = calloc(s.n, sizeof *s.group_of);
    s.users = calloc(s.n, sizeof *s.users);
    s.nusers = calloc(s.n, sizeof *s.nusers);
    s.pos = calloc(s.n, sizeof *s.pos);
    s.side = calloc(s.n, 1);
    s.leafy = calloc(s.n, 1);
    int bad = !s.needed || !s.root || !s.group_of || !s.users || !s.nusers || !s.pos || !s.side || !s.leafy ||
              mark(&s, roots, n);
    if (bad)
        tj_rt_fail(err, "fusion: out of memory");
    else {
        mark_leafy(&s);
        bad = make_groups(&s, plan, err);
    }
    state_free(&s);
    if (bad) {
        tj_plan_free(plan);
        return 1;
    }
    /* made from the last root down; run from the first up */
    for (uint32_t i = 0, j = plan->ngroups ? plan->ngroups - 1 : 0; i < j; i++, j--) {
        tj_group t = plan->groups[i];
        plan->groups[i] = plan->groups[j];
        plan->groups[j] = t;
    }
    return 0;
}
