/* Compiling a plan's kernels ahead of its launches, on worker threads.
 *
 * On CUDA a new kernel's cold compile is mostly ptxas (nvJitLink): 20-400
 * ms of one core each (bench/NOTES.md), and a graph's kernels need only
 * each other's shapes, not their data. So before the plan runs, each fused
 * group is tiled and emitted as it will be at its launch (inputs still to
 * compute count as contiguous: tj_node_strides) and every kernel new to the
 * graph's cache is compiled for that signature on a thread of its own; the
 * launches then find the functions in their dispatches. A plan with one new
 * kernel or none starts no thread (a warm evaluation pays a tiling, an
 * emission and a lookup more per group). Where a guess misses (a reshape that copies), the launch compiles
 * what it needs as before; a compile that fails here fails again at the
 * launch, which reports it. A plan of one kernel has nothing to overlap and
 * skips the pass; the cpu compiles at its launches, one at a time. */
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

enum { MAX_AHEAD = 16 };

typedef struct ahead_job {
    tj_dispatch *dispatch;
    tj_group_args args;
    tj_arg argv[TJ_GROUP_MAX_INPUTS + 1];
    pthread_t thread;
    int started, ready;
} ahead_job;

static void *compile_job(void *p)
{
    ahead_job *j = p;
    tj_rt_error err = {0};
    tj_fn *f = tj_dispatch_fn(j->dispatch, j->argv, j->args.nargs, &err);
    j->ready = f != NULL;
    if (f)
        tj_fn_release(f);
    return NULL;
}

/* Group grp's kernel and arguments into j when the graph's cache has no
 * kernel of its text yet; 0 when it has (or the group launches nothing). */
static int new_kernel(tj_graph *g, tj_group *grp, ahead_job *j)
{
    tj_rt_error err = {0};
    const tj_anode *root = &g->nodes[grp->root];
    if (!tj_group_is_kernel(grp->kind) || tj_shape_numel(root->rank, root->shape) == 0 ||
        tj_tile(g, grp, &j->args, &err))
        return 0;
    tj_buf src = {0};
    int made = 0;
    tj_kernel_entry *e = tj_emit_group(g, grp, &j->args, &src, &err) ? NULL : tj_graph_kernel(g, &src, 1, 0, &made, &err);
    tj_buf_free(&src);
    if (!made)
        return 0;
    uint32_t at = (uint32_t)(e - g->kernels);
    /* a tiered kernel: its fast variant is what the launch takes first */
    if (tj_tier_applies(g, grp) && tj_tier_start(g, at, grp, &j->args, &err))
        return 0;
    j->dispatch = tj_tier_pick(g, &g->kernels[at]);
    tj_compile_args(&j->args, j->argv);
    return 1;
}

void tj_graph_compile_ahead(tj_graph *g, tj_plan *plan)
{
    uint32_t kernels = 0;
    for (uint32_t i = 0; i < plan->ngroups; i++)
        kernels += tj_group_is_kernel(plan->groups[i].kind);
    if (g->device != TJ_DEVICE_CUDA || kernels < 2)
        return;
    uint32_t cap = kernels < MAX_AHEAD ? kernels : MAX_AHEAD;
    ahead_job *jobs = calloc(cap, sizeof *jobs);
    if (!jobs)
        return; /* the launches compile */
    uint32_t n = 0;
    for (uint32_t i = 0; i < plan->ngroups && n < cap; i++)
        n += (uint32_t)new_kernel(g, &plan->groups[i], &jobs[n]);
    if (n > 1)
        for (uint32_t i = 0; i < n; i++)
            jobs[i].started = pthread_create(&jobs[i].thread, NULL, compile_job, &jobs[i]) == 0;
    for (uint32_t i = 0; i < n; i++)
        if (jobs[i].started) {
            pthread_join(jobs[i].thread, NULL);
            g->stats.kernels_ahead += (uint64_t)jobs[i].ready;
        }
    free(jobs);
}
