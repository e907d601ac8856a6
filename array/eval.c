/* Evaluation: the plan's groups in order (on CUDA on the null stream,
 * without waiting: reads and frees synchronize with it); each fused group is tiled,
 * emitted, found in the graph's kernel cache (by its text) or compiled
 * through tj_dispatch (which keeps one function per shape signature), and
 * launched over freshly allocated outputs. A subgraph of a structure
 * evaluated before takes that evaluation's plan, tiles and kernels from
 * the plan memo (memo.c) instead of the passes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array_internal.h"
#include "tilejit/cache.h"

void tj_graph_kernels_free(tj_graph *g)
{
    tj_tier_finish(g); /* no compile still running on a dispatch */
    for (uint32_t i = 0; i < g->nkernels; i++) {
        tj_tier_free(&g->kernels[i]);
        tj_dispatch_free(g->kernels[i].dispatch);
        free(g->kernels[i].source);
    }
    free(g->kernels);
    g->kernels = NULL;
    g->nkernels = g->kcap = 0;
}

static void on_event(void *ud, const tj_event *e)
{
    tj_graph *g = ud;
    if (e->kind == TJ_EVENT_COMPILE) { /* also from tj_graph_compile_ahead's threads */
        pthread_mutex_lock(&g->stats_lock);
        g->stats.kernels_compiled++;
        g->stats.compile_ms += e->ms;
        pthread_mutex_unlock(&g->stats_lock);
    }
}

void tj_graph_watch_compiles(tj_graph *g) { tj_jit_set_event_handler(g->jit, on_event, g); }

/* A lookup that found k: a cache hit unless `ahead` made k or makes the lookup. */
static tj_kernel_entry *found(tj_graph *g, tj_kernel_entry *k, int ahead)
{
    if (!ahead && !k->ahead)
        g->stats.cache_hits++;
    k->ahead = ahead && k->ahead;
    return k;
}

tj_kernel_entry *tj_graph_kernel(tj_graph *g, const tj_buf *src, int ahead, int quick, int *made, tj_rt_error *err)
{
    uint64_t h = tj_hash64(src->data, src->len, 0);
    *made = 0;
    g->stats.kernels_emitted++; /* every text emitted is looked up here */
    for (uint32_t i = 0; i < g->nkernels; i++)
        if (g->kernels[i].hash == h && g->kernels[i].quick == quick && strcmp(g->kernels[i].source, src->data) == 0)
            return found(g, &g->kernels[i], ahead);
    if (g->nkernels == g->kcap) {
        uint32_t cap = g->kcap ? g->kcap * 2 : 16;
        tj_kernel_entry *k = realloc(g->kernels, cap * sizeof *k);
        if (!k) {
            tj_rt_fail(err, "eval: out of memory");
            return NULL;
        }
        g->kernels = k;
        g->kcap = cap;
    }
    tj_dispatch *d = tj_dispatch_new(g->jit, &(tj_compile_request){.file = "<array group>", .source = src->data,
                                                                   .len = src->len, .kernel = "fused",
                                                                   .reason = "array group", .quick = quick},
                                   err);
    char *copy = d ? malloc(src->len + 1) : NULL;
    if (copy)
        memcpy(copy, src->data, src->len + 1);
    if (!copy) {
        if (d) {
            tj_dispatch_free(d);
            tj_rt_fail(err, "eval: out of memory");
        }
        return NULL;
    }
    g->kernels[g->nkernels] = (tj_kernel_entry){h, copy, d, ahead, quick, NULL};
    *made = 1;
    return &g->kernels[g->nkernels++];
}

/* Times every configuration of d for these arguments' signature and keeps
 * the fastest (tj_dispatch_tune: the disk cache on CUDA). */
static int tune(tj_graph *g, tj_dispatch *d, const tj_arg *args, uint32_t n, tj_rt_error *err)
{
    tj_tune_report report;
    memset(&report, 0, sizeof report);
    int bad = tj_dispatch_tune(d, args, n, NULL, NULL, &report, err);
    tj_tune_report_free(&report);
    if (!bad)
        g->stats.tunings++;
    return bad;
}

static int launch_dispatch(tj_graph *g, tj_dispatch *d, const tj_tensor *t, uint32_t n, tj_rt_error *err)
{
    tj_arg args[TJ_GROUP_MAX_INPUTS + 1];
    if (n > TJ_GROUP_MAX_INPUTS + 1)
        return tj_rt_fail(err, "eval: %u arguments", n);
    memset(args, 0, sizeof(tj_arg) * n);
    for (uint32_t i = 0; i < n; i++) {
        args[i].is_tensor = 1;
        args[i].tensor = t[i];
    }
    if (g->tuning && tune(g, d, args, n, err))
        return 1;
    if (tj_dispatch_launch(d, args, n, NULL, err))
        return 1;
    g->stats.kernels_launched++;
    return 0;
}

/* A view or other.c step's kernels (eval.c's run_step sets the record or
 * the replay): entry `at` recorded in launch order; the one the replay
 * launches next, or NULL where nothing is replayed (emit it). */
static void step_record(tj_graph *g, uint32_t at)
{
    tj_step_kernels *r = g->step_record;
    if (r && r->n < TJ_STEP_KERNELS)
        r->entry[r->n++] = (int32_t)at;
    else if (r)
        r->overflow = 1;
}

static tj_kernel_entry *step_replayed(tj_graph *g)
{
    const tj_step_kernels *r = g->step_replay;
    if (!r || g->step_at >= r->n)
        return NULL;
    return found(g, &g->kernels[r->entry[g->step_at++]], 0);
}

/* Source src's kernel over tensors t; a group's (grp, its arguments ga)
 * new to the cache may start as its fast tier (tier.c). */
static int launch_source(tj_graph *g, const tj_group *grp, const tj_group_args *ga, const tj_buf *src,
                         const tj_tensor *t, uint32_t n, int32_t *entry, tj_rt_error *err)
{
    int made;
    tj_kernel_entry *e = tj_graph_kernel(g, src, 0, 0, &made, err);
    if (!e)
        return 1;
    uint32_t at = (uint32_t)(e - g->kernels);
    *entry = (int32_t)at;
    step_record(g, at);
    if (made && grp && tj_tier_applies(g, grp) && tj_tier_start(g, at, grp, ga, err))
        return 1;
    return launch_dispatch(g, tj_tier_pick(g, &g->kernels[at]), t, n, err);
}

int tj_graph_launch(tj_graph *g, tj_kernel_writer write, const void *ctx, const tj_tensor *t, uint32_t n,
                    tj_rt_error *err)
{
    tj_kernel_entry *e = step_replayed(g);
    if (e)
        return launch_dispatch(g, tj_tier_pick(g, e), t, n, err);
    tj_buf src = {0};
    write(ctx, &src);
    int32_t entry;
    int bad = launch_source(g, NULL, NULL, &src, t, n, &entry, err);
    tj_buf_free(&src);
    return bad;
}

/* Where operand o of a group's kernel (its inputs, then its root) starts,
 * as tiling takes it. */
static void *operand_data(const tj_graph *g, const tj_group *grp, uint32_t o)
{
    const tj_anode *x = &g->nodes[o < grp->ninputs ? grp->inputs[o] : grp->root];
    return x->buf ? (char *)x->buf->data + x->offset * tj_dtype_size(x->dtype) : NULL;
}

/* The memo's record of a launched group (rec->kernel: its entry, or -1):
 * -2 where its arguments are not its operands' data in order. */
static void record(const tj_graph *g, const tj_group *grp, const tj_group_args *args, int32_t entry,
                   tj_plan_memo_group *rec)
{
    rec->grp = *grp;
    rec->args = *args;
    rec->kernel = entry;
    if (entry >= 0 && args->nargs != grp->ninputs + 1)
        rec->kernel = -2;
    for (uint32_t o = 0; o < args->nargs && entry >= 0; o++) {
        if (rec->args.t[o].data != operand_data(g, grp, o))
            rec->kernel = -2;
        rec->args.t[o].data = NULL;
    }
}

/* Tiles, emits and launches group grp; rec (or NULL) records it. */
static int launch_group(tj_graph *g, tj_group *grp, tj_plan_memo_group *rec, tj_rt_error *err)
{
    tj_group_args *args = calloc(1, sizeof *args);
    tj_buf src = {0};
    int32_t entry = -1;
    int bad = !args ? tj_rt_fail(err, "eval: out of memory") : 0;
    if (!bad && !g->nodes[grp->root].has_data) /* else: the caller placed the output */
        bad = tj_anode_alloc(g, grp->root, err);
    if (!bad)
        bad = tj_tile(g, grp, args, err);
    const tj_anode *root = &g->nodes[grp->root];
    int empty = tj_shape_numel(root->rank, root->shape) == 0;
    tj_kernel_entry *replayed = bad || empty ? NULL : step_replayed(g); /* a copy a replayed step makes */
    if (replayed)
        bad = launch_dispatch(g, tj_tier_pick(g, replayed), args->t, args->nargs, err);
    if (!bad && !empty && !replayed)
        bad = tj_emit_group(g, grp, args, &src, err);
    if (!bad && !empty && !replayed)
        bad = launch_source(g, grp, args, &src, args->t, args->nargs, &entry, err);
    if (!bad && rec)
        record(g, grp, args, entry, rec);
    g->stats.groups++;
    tj_buf_free(&src);
    free(args);
    return bad;
}

/* A memoized group's launch: its recorded arguments over this
 * evaluation's data, its kernel from the cache (no tiling, no emission). */
static int launch_memo(tj_graph *g, const tj_group *grp, const tj_plan_memo_group *mg, tj_rt_error *err)
{
    g->stats.groups++;
    if (!g->nodes[grp->root].has_data && tj_anode_alloc(g, grp->root, err))
        return 1;
    if (mg->kernel < 0)
        return 0; /* empty: nothing to launch */
    tj_tensor t[TJ_GROUP_MAX_INPUTS + 1];
    uint32_t n = mg->args.nargs;
    memcpy(t, mg->args.t, sizeof *t * n);
    for (uint32_t o = 0; o < n; o++)
        t[o].data = operand_data(g, grp, o);
    tj_kernel_entry *e = found(g, &g->kernels[mg->kernel], 0);
    return launch_dispatch(g, tj_tier_pick(g, e), t, n, err);
}

/* Fills a constant or a range on the host and copies it over. */
static int fill_host(tj_graph *g, tj_array a, tj_rt_error *err)
{
    if (tj_anode_alloc(g, a, err))
        return 1;
    const tj_anode *n = &g->nodes[a];
    int64_t count = tj_shape_numel(n->rank, n->shape);
    int size = tj_dtype_size(n->dtype);
    char *host = malloc((size_t)(count ? count : 1) * (size_t)size);
    if (!host)
        return tj_rt_fail(err, "eval: out of memory");
    for (int64_t i = 0; i < count; i++) {
        double v = n->op == TJ_AOP_ARANGE ? n->value + n->step_value * (double)i : n->value;
        tj_store_scalar(host + i * size, n->dtype, v);
    }
    int bad = tj_graph_to_device(g, n->buf->data, host, (size_t)count * (size_t)size, err);
    free(host);
    return bad;
}

tj_array tj_graph_copy(tj_graph *g, tj_array src, tj_dtype dt, const tj_anode *place, tj_rt_error *err)
{
    tj_array c = tj_array_astype(g, src, dt);
    if (!c) {
        tj_rt_fail(err, "eval: %s", g->error);
        return TJ_ARRAY_NONE;
    }
    tj_anode *n = &g->nodes[c];
    if (place) { /* into the caller's memory */
        n->buf = place->buf;
        n->buf->refs++;
        n->offset = place->offset;
        memcpy(n->strides, place->strides, sizeof n->strides);
        n->has_data = 1;
    }
    tj_group *grp = calloc(1, sizeof *grp);
    if (!grp) {
        tj_rt_fail(err, "eval: out of memory");
        tj_array_release(g, c);
        return TJ_ARRAY_NONE;
    }
    grp->kind = TJ_GROUP_ELEMWISE;
    grp->root = c;
    grp->members[0] = c;
    grp->nmembers = 1;
    grp->inputs[0] = src;
    grp->ninputs = 1;
    int bad = launch_group(g, grp, NULL, err);
    free(grp);
    if (bad) {
        tj_array_release(g, c);
        return TJ_ARRAY_NONE;
    }
    g->nodes[c].has_data = 1;
    tj_anode_settle(g, c);
    return c;
}

/* A reshape over data the strides cannot describe: its input copied to
 * contiguous memory by an elementwise kernel first. */
static int copy_then_view(tj_graph *g, tj_array v, tj_rt_error *err)
{
    tj_array src = g->nodes[v].in[0];
    tj_array c = tj_graph_copy(g, src, g->nodes[src].dtype, NULL, err);
    if (!c)
        return 1;
    /* the view reads the copy instead */
    g->nodes[v].in[0] = c;
    g->nodes[c].users++;
    g->nodes[src].users--;
    tj_array_release(g, c);
    if (tj_view_resolve(g, v))
        return tj_rt_fail(err, "eval: reshape of a contiguous copy failed");
    return 0;
}

/* A view or other.c step (its kernels: copies, gathers), recording the
 * kernels it launches into rec or launching mg's without emitting them
 * (either may be NULL). The memo's key fixes every shape, dtype and
 * stride such a step reads, so a replay launches the same kernels in the
 * same order. */
static int run_kernels_step(tj_graph *g, tj_group *grp, const tj_plan_memo_group *mg, tj_plan_memo_group *rec,
                            tj_rt_error *err)
{
    g->step_record = rec ? &rec->step : NULL;
    g->step_replay = mg && !mg->step.overflow ? &mg->step : NULL;
    g->step_at = 0;
    int bad = grp->kind == TJ_GROUP_VIEW ? tj_view_resolve(g, grp->root) && copy_then_view(g, grp->root, err)
                                          : tj_eval_other(g, grp, err);
    g->step_record = NULL;
    g->step_replay = NULL;
    return bad;
}

/* One step of a plan: from the memo's record mg, or recording into rec
 * (either may be NULL). */
static int run_step(tj_graph *g, tj_group *grp, const tj_plan_memo_group *mg, tj_plan_memo_group *rec, tj_rt_error *err)
{
    tj_array r = grp->root;
    for (uint32_t i = 0; i < grp->ninputs; i++)
        if (!g->nodes[grp->inputs[i]].has_data) {
            char s[96];
            const tj_anode *x = &g->nodes[grp->inputs[i]];
            tj_shape_str(x->dtype, x->rank, x->shape, s, sizeof s);
            return tj_rt_fail(err, "eval: %s reads a placeholder %s with no data (tj_array_input)",
                              tj_aop_name(g->nodes[r].op), s);
        }
    if (rec) {
        rec->grp = *grp;
        rec->kernel = -1;
    }
    switch (grp->kind) {
    case TJ_GROUP_VIEW:
        return run_kernels_step(g, grp, mg, rec, err);
    case TJ_GROUP_HOST:
        if (fill_host(g, r, err))
            return 1;
        break;
    case TJ_GROUP_OTHER:
        if (run_kernels_step(g, grp, mg, rec, err))
            return 1;
        break;
    default:
        if (mg ? launch_memo(g, grp, mg, err) : launch_group(g, grp, rec, err))
            return 1;
    }
    g->nodes[r].has_data = 1;
    tj_anode_settle(g, r);
    return 0;
}

static int check_roots(const tj_graph *g, const tj_array *arrays, uint32_t n, tj_rt_error *err)
{
    if (!g)
        return tj_rt_fail(err, "tj_array_eval: NULL graph");
    if (!tj_array_ok(arrays, n))
        return tj_rt_fail(err, "tj_array_eval: NULL arrays");
    for (uint32_t i = 0; i < n; i++)
        if (!tj_array_valid(g, arrays[i]))
            return tj_rt_fail(err, "tj_array_eval: arrays[%u] (%u) is not an array of this graph%s%s", i,
                              arrays[i], g->error[0] ? "; the graph's first error: " : "", g->error);
        else if (g->nodes[arrays[i]].op == TJ_AOP_INPUT && !g->nodes[arrays[i]].has_data)
            return tj_rt_fail(err, "tj_array_eval: arrays[%u] is a placeholder with no data (tj_array_input)", i);
    return 0;
}

/* The plan of the roots made by the passes and run; recorded into the
 * memo under key (or NULL) when every step could be. */
static int run_plan(tj_graph *g, const tj_array *arrays, uint32_t n, const tj_plan_memo_key *key, tj_rt_error *err)
{
    tj_plan plan;
    if (tj_fuse(g, arrays, n, &plan, err))
        return 1;
    if (!g->tuning)
        tj_graph_compile_ahead(g, &plan);
    tj_plan_memo_group *rec = key ? calloc(plan.ngroups ? plan.ngroups : 1, sizeof *rec) : NULL;
    int bad = 0, keep = rec && plan.ngroups; /* an evaluated root's empty plan: nothing to skip */
    for (uint32_t i = 0; i < plan.ngroups && !bad; i++) {
        bad = run_step(g, &plan.groups[i], NULL, rec ? &rec[i] : NULL, err);
        keep = keep && rec[i].kernel != -2;
    }
    if (!bad && keep)
        tj_plan_memo_store(g, key, rec, plan.ngroups);
    else
        free(rec);
    tj_plan_free(&plan);
    return bad;
}

static int run_memo(tj_graph *g, const tj_plan_memo_entry *e, const tj_plan_memo_key *key, tj_rt_error *err)
{
    tj_group *grp = malloc(sizeof *grp);
    if (!grp)
        return tj_rt_fail(err, "eval: out of memory");
    g->stats.plans_reused++;
    int bad = 0;
    for (uint32_t i = 0; i < tj_plan_memo_groups(e) && !bad; i++) {
        const tj_plan_memo_group *mg;
        tj_plan_memo_group_at(e, i, key, grp, &mg);
        bad = run_step(g, grp, mg, NULL, err);
    }
    free(grp);
    return bad;
}

int tj_array_eval(tj_graph *g, const tj_array *arrays, uint32_t n, tj_rt_error *err)
{
    if (check_roots(g, arrays, n, err))
        return 1;
    g->stats.evals++;
    tj_plan_memo_key key;
    int keyed = !g->tuning && !tj_plan_memo_key_make(g, arrays, n, &key); /* else: the passes, unrecorded */
    const tj_plan_memo_entry *hit = keyed ? tj_plan_memo_find(g, &key) : NULL;
    int bad = hit ? run_memo(g, hit, &key, err) : run_plan(g, arrays, n, keyed ? &key : NULL, err);
    if (keyed)
        tj_plan_memo_key_free(&key);
    return bad;
}

int tj_array_tune(tj_graph *g, const tj_array *arrays, uint32_t n, tj_rt_error *err)
{
    if (!g)
        return tj_rt_fail(err, "tj_array_tune: NULL graph");
    g->tuning = 1;
    int bad = tj_array_eval(g, arrays, n, err);
    g->tuning = 0;
    return bad;
}

int tj_array_tensor(const tj_graph *g, tj_array a, tj_tensor *out, tj_rt_error *err)
{
    if (!g || !out)
        return tj_rt_fail(err, "tj_array_tensor: NULL %s", g ? "out" : "graph");
    if (!tj_array_valid(g, a))
        return tj_rt_fail(err, "tj_array_tensor: not an array of this graph: %u", a);
    const tj_anode *n = &g->nodes[a];
    if (!n->has_data)
        return tj_rt_fail(err, "tj_array_tensor: %s is not evaluated (tj_array_eval)", tj_aop_name(n->op));
    *out = tj_anode_tensor(n);
    return 0;
}

int tj_array_read(tj_graph *g, tj_array a, void *dst, size_t bytes, tj_rt_error *err)
{
    tj_tensor t;
    if (tj_array_tensor(g, a, &t, err))
        return 1;
    size_t need = (size_t)tj_shape_numel(t.rank, t.shape) * (size_t)tj_dtype_size(t.dtype);
    if (!dst && need)
        return tj_rt_fail(err, "tj_array_read: NULL destination");
    if (bytes < need)
        return tj_rt_fail(err, "tj_array_read: %zu bytes, the array needs %zu", bytes, need);
    return tj_read_strided(g, &t, dst, err);
}
