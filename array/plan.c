/* The passes' output as text, for tests and tools (tj-array, lit):
 *
 *   group 0 reduce root=%3 members=[%2, %3] inputs=[%0, %1]
 *     space=[4, 1000] batch=0 tile=[4, 1024] loop (along contiguous rows of 1000, looped), 8 warps
 *   kernel fused(...)                                  (stage emit)
 *
 * Values are numbered as tj_graph_print numbers them. */
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

static void list(tj_buf *o, const char *name, const tj_array *a, uint32_t n, const uint32_t *num)
{
    tj_buf_printf(o, " %s=[", name);
    for (uint32_t i = 0; i < n; i++)
        tj_buf_printf(o, "%s%%%u", i ? ", " : "", num[a[i]] - 1);
    tj_buf_printf(o, "]");
}

static void tile_line(tj_buf *o, const tj_group *grp)
{
    tj_buf_printf(o, "  space=[");
    for (int i = 0; i < grp->space_rank; i++)
        tj_buf_printf(o, "%s%lld", i ? ", " : "", (long long)grp->space[i]);
    tj_buf_printf(o, "] batch=%d tile=[%lld, %lld", grp->nbatch, (long long)grp->bm, (long long)grp->bn);
    if (grp->kind == TJ_GROUP_ATTENTION)
        tj_buf_printf(o, "] head=[%lld, %lld] keys=%lld", (long long)grp->bd, (long long)grp->be,
                      (long long)grp->k_extent);
    else if (grp->kind == TJ_GROUP_MATMUL)
        tj_buf_printf(o, ", %lld] k=%lld", (long long)grp->bk, (long long)grp->k_extent);
    else
        tj_buf_printf(o, "]");
    if (grp->kind == TJ_GROUP_REDUCE)
        tj_buf_printf(o, " %s", grp->row ? "row" : "loop");
    tj_buf_printf(o, " (%s), %d warps\n", grp->why, grp->warps);
}

static int plan_group(tj_graph *g, tj_group *grp, uint32_t i, int stage, const uint32_t *num, tj_buf *out,
                      tj_rt_error *err)
{
    tj_buf_printf(out, "group %u %s root=%%%u", i, tj_group_kind_name(grp->kind), num[grp->root] - 1);
    list(out, "members", grp->members, grp->nmembers, num);
    list(out, "inputs", grp->inputs, grp->ninputs, num);
    for (int side = 1; side <= 2 && grp->kind == TJ_GROUP_MATMUL; side++) { /* the operand prologues */
        tj_array on[TJ_GROUP_MAX_NODES];
        uint32_t k = 0;
        for (uint32_t m = 0; m < grp->nmembers; m++)
            if (grp->side[m] == side)
                on[k++] = grp->members[m];
        if (k)
            list(out, side == 1 ? "a" : "b", on, k, num);
    }
    tj_buf_printf(out, "\n");
    if (stage == 0 || !tj_group_is_kernel(grp->kind))
        return 0;
    tj_group_args *args = calloc(1, sizeof *args);
    if (!args)
        return tj_rt_fail(err, "tj_graph_plan: out of memory");
    int bad = tj_tile(g, grp, args, err);
    if (!bad)
        tile_line(out, grp);
    if (!bad && stage == 2)
        bad = tj_emit_group(g, grp, args, out, err);
    free(args);
    return bad;
}

int tj_graph_plan(tj_graph *g, const tj_array *roots, uint32_t n, const char *stage, tj_buf *out, tj_rt_error *err)
{
    int st = !stage ? -1 : !strcmp(stage, "fuse") ? 0 : !strcmp(stage, "tile") ? 1 : !strcmp(stage, "emit") ? 2 : -1;
    if (!g || !out || st < 0 || !tj_array_ok(roots, n))
        return tj_rt_fail(err, "tj_graph_plan: a graph, roots, an output and a stage (fuse, tile, emit)");
    for (uint32_t i = 0; i < n; i++)
        if (!tj_array_valid(g, roots[i]))
            return tj_rt_fail(err, "tj_graph_plan: roots[%u] (%u) is not an array of this graph", i, roots[i]);
    tj_plan plan;
    if (tj_fuse(g, roots, n, &plan, err))
        return 1;
    uint32_t *num = malloc(sizeof *num * g->nnodes);
    int bad = !num || tj_graph_number(g, roots, n, num) < 0 ? tj_rt_fail(err, "tj_graph_plan: out of memory") : 0;
    for (uint32_t i = 0; i < plan.ngroups && !bad; i++)
        bad = plan_group(g, &plan.groups[i], i, st, num, out, err);
    free(num);
    tj_plan_free(&plan);
    return bad;
}
