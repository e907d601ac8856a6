/* Tiered compiles (CUDA): a new kernel whose result does not depend on its
 * warps first runs as a variant at more warps than the cost model's, which
 * compiles faster (a fifth to a quarter of the time for a matmul at 4x, a fifth less
 * for gelu's elementwise chain at 2x), while the model's (or the tuner's)
 * configuration compiles on a thread of its own; the launches take it once
 * it is ready.
 *
 * Why: a cold compile is almost all ptxas (nvJitLink), whose time grows with
 * the straight-line code a thread runs; an f32 matmul of 64 x 64 at 4 warps
 * holds 32 accumulators a thread and its epilogue runs on each (ptxas: 260
 * ms for ln -> matmul -> bias -> gelu's, 107 ms at 8 warps, 40% less again
 * at 16; bench/NOTES.md).
 * The variant is also a quick compile (ptxas -O1, tj_compile_request.quick):
 * the same results in code that runs only until the optimized kernel is
 * in; for gelu's variant 10% less of nvJitLink on the build machine (12.9
 * -> 11.7 ms), for a matmul's within the noise.
 *
 * Which kernels: f32 matmul groups. Their dot runs on FMAs, every output
 * accumulating over k in order whatever thread holds it (lower/dot.c), and
 * the prologue and epilogue are elementwise, so both tiers compute the
 * same bits (tests/unit/test_array_tier.c checks this on the SIMT
 * interpreter). And elementwise groups of two or more elements a thread:
 * every element is the same straight-line code whoever computes it (the
 * PTX's mul.rn/add.rn are never contracted into FMAs), and at 4 elements
 * a thread it is most of ptxas's time (gelu(x*y+z)'s tile of 1024: 17.5
 * ms of nvJitLink at 8 warps, 14 at 16; 512 at 16 warps, one a thread,
 * 12; ~6 of each are any compile's floor; bench/NOTES.md). And the f32
 * flash-attention kernel of heads of 64, whose variant takes 32 query rows
 * a program at 16 warps instead of 64 at 8 over the same key blocks: each
 * row is reduced by the same lanes in the same order (attention_tiers). Other reductions split across threads
 * by the layout (softmax, layer norm) and the matrix atom's products (f16,
 * bf16) are not tiered. Neither is a tuning, nor the cpu.
 *
 * The variant is another kernel text (its `warps` list starts at its
 * own), so it has an entry of its own in the graph's cache; the
 * background compile uses the arguments of the first launch. While it
 * runs, every launch of the kernel takes the variant; once it is done the
 * next launch joins the thread and takes the optimized kernel. A compile
 * that failed leaves the variant in place for good; its message reaches no
 * launch (the variant runs), so the join counts it in the graph's stats and
 * keeps it (tj_graph_compile_error), and tj_graph_finish_compiles returns
 * it. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/array_internal.h"

/* A variant's text lists its own warps first (emit.c's tune_list), past
 * the lists' usual ends (8 warps for matmuls) too. A matmul's keeps 8
 * accumulators a thread or more. */
enum { MATMUL_MAX_WARPS = 16, MATMUL_MIN_FAST_ELEMS = 8, ELEM_MAX_WARPS = 16, ELEM_MIN_THREAD_ELEMS = 2,
       ELEM_MIN_CPUS = 4, ATTENTION_FAST_ROWS = 32, ATTENTION_FAST_WARPS = 16, FAST_UNROLL = 1 };
enum { GRID_Y_MAX = 65535 }; /* CUDA's: the rows' programs run along grid y */

/* The cores this process may run on: its CPU affinity (a container or
 * taskset may allow fewer than are online), else the online count. */
static int process_cores(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (!sched_getaffinity(0, sizeof set, &set)) /* fails past CPU_SETSIZE (1024) cpus */
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The elementwise tier saves a fifth of one compile and takes a second
 * core for a whole one: where cores are few it costs more than it saves
 * (on the 2-core build machine at load ~5, three alternating runs: a cold
 * gelu took 81-136 ms tiered against 25-81 untiered, its two compiles
 * sharing the cores). A matmul's fast tier halves its compile and stays. */
int tj_tier_spare_cores(const tj_graph *g)
{
    int cores = g->host_cores ? g->host_cores : process_cores();
    return cores >= ELEM_MIN_CPUS;
}

int tj_graph_set_host_cores(tj_graph *g, int cores, tj_rt_error *err)
{
    if (!g || cores < 0)
        return tj_rt_fail(err, "tj_graph_set_host_cores: NULL graph or a negative count (%d)", cores);
    g->host_cores = cores;
    return 0;
}

struct tj_tier {
    tj_dispatch *fast; /* the variant's (another entry of the graph's cache) */
    tj_dispatch *best; /* the optimized kernel's (this entry's) */
    tj_arg argv[TJ_GROUP_MAX_INPUTS + 1];
    uint32_t nargs;
    pthread_t thread;
    int running; /* a thread to join */
    atomic_int done;
    int ok;              /* written by the thread before done */
    tj_rt_error failure; /* likewise, where it failed */
};

/* A matmul variant's warps: the most, up to 16, that leave a thread 8
 * accumulators or more (a 64 x 64 tile at 4 warps: 16, 8 a thread; at 8
 * warps ptxas took 1.6-1.9x the time: bench/NOTES.md). */
static int matmul_fast_warps(const tj_group *grp)
{
    int warps = grp->warps;
    while (warps * 2 <= MATMUL_MAX_WARPS && grp->bm * grp->bn / ((int64_t)warps * 2 * 32) >= MATMUL_MIN_FAST_ELEMS)
        warps *= 2;
    return warps;
}

/* An f32 flash-attention kernel at the cost model's tile for heads of 64
 * (64 x 64 at 8 warps, key blocks of 64): the configuration whose variant
 * test_array_tier checks, 32 query rows a program at 16 warps over the
 * same key blocks. A row's maxima and sums run over the same lanes in the
 * same order in both: a [BM, 64] tile's row is 16 lanes of 4 elements
 * while a thread holds 4 or more of the tile (16 rows at 16 warps, 2 a
 * thread, would split it otherwise: the test fails there). */
static int attention_tiers(const tj_graph *g, const tj_group *grp)
{
    int64_t m = grp->space[grp->space_rank - 2];
    return g->nodes[grp->root].dtype == TJ_DT_F32 && grp->warps == 8 && grp->bm == 64 && grp->bn == 64 &&
           grp->bd == 64 && grp->be == 64 && (m + ATTENTION_FAST_ROWS - 1) / ATTENTION_FAST_ROWS <= GRID_Y_MAX;
}

int tj_tier_applies(const tj_graph *g, const tj_group *grp)
{
    if (g->device != TJ_DEVICE_CUDA || g->tuning)
        return 0;
    if (grp->kind == TJ_GROUP_ATTENTION)
        return attention_tiers(g, grp);
    int64_t per_thread = grp->bm * grp->bn / ((int64_t)grp->warps * 32);
    if (grp->kind == TJ_GROUP_ELEMWISE)
        return grp->warps * 2 <= ELEM_MAX_WARPS && per_thread >= ELEM_MIN_THREAD_ELEMS && tj_tier_spare_cores(g);
    return grp->kind == TJ_GROUP_MATMUL && g->nodes[grp->core].dtype == TJ_DT_F32 && matmul_fast_warps(grp) > grp->warps;
}

static void *compile_best(void *p)
{
    tj_tier *t = p;
    tj_fn *f = tj_dispatch_fn(t->best, t->argv, t->nargs, &t->failure);
    t->ok = f != NULL;
    if (f)
        tj_fn_release(f);
    atomic_store(&t->done, 1);
    return NULL;
}

/* The arguments of a compile: memory still to allocate (compile_ahead.c)
 * as a placeholder aligned as the device's allocations, never read. */
void tj_compile_args(const tj_group_args *args, tj_arg *argv)
{
    memset(argv, 0, sizeof(tj_arg) * args->nargs);
    for (uint32_t i = 0; i < args->nargs; i++) {
        argv[i].is_tensor = 1;
        argv[i].tensor = args->t[i];
        if (!argv[i].tensor.data)
            argv[i].tensor.data = (void *)(uintptr_t)256;
    }
}

/* Halves fast's rows (while its rows' programs still fit grid y), then
 * its columns, down to `per_thread` elements a thread or extents of `min`. */
static void cut_tile(tj_group *fast, int64_t m, int64_t per_thread, int64_t min)
{
    while (fast->bm * fast->bn > (int64_t)fast->warps * 32 * per_thread) {
        if (fast->bm > min && (m + fast->bm / 2 - 1) / (fast->bm / 2) <= GRID_Y_MAX)
            fast->bm /= 2;
        else if (fast->bn > min)
            fast->bn /= 2;
        else
            break;
    }
}

/* The variant's kernel: an attention's with 32 query rows a program at
 * 16 warps (0.4-0.5x of the optimized kernel's nvJitLink time); a
 * matmul's source at matmul_fast_warps with its tile cut to 4
 * accumulators a thread (tiles of 16 or more: a 32 x 64 tile at 16 warps,
 * which nvJitLink assembles in another 20-30% less than 64 x 64); an
 * elementwise group's at twice its warps with its tile cut to one element
 * a thread, in another ~12% less than two (gelu: a 512-element tile at 16
 * warps against 1024). Each output is computed as before, whichever
 * program holds it. The dots of a matmul's and an attention's variant run
 * their k loops a step at a time (`const unroll = 1`, not the tile's whole k): the same
 * sums in the same order, in 18-23% fewer of nvJitLink's instructions
 * (bench/NOTES.md, twelfth session). */
static tj_dispatch *variant(tj_graph *g, const tj_group *grp, const tj_group_args *args, tj_rt_error *err)
{
    tj_group fast = *grp;
    int64_t m = grp->space_rank >= 2 ? grp->space[grp->space_rank - 2] : 1;
    if (grp->kind == TJ_GROUP_ATTENTION) { /* half the query rows on twice the warps */
        fast.warps = ATTENTION_FAST_WARPS;
        fast.bm = ATTENTION_FAST_ROWS;
        fast.unroll = FAST_UNROLL;
    } else {
        int matmul = grp->kind == TJ_GROUP_MATMUL;
        fast.warps = matmul ? matmul_fast_warps(grp) : grp->warps * 2;
        cut_tile(&fast, m, matmul ? 4 : 1, matmul ? 16 : 1);
        fast.unroll = matmul ? FAST_UNROLL : 0;
    }
    fast.no_calls = 1; /* its divisions in f64: it runs only until the optimized kernel is in */
    tj_buf src = {0};
    int made;
    tj_kernel_entry *e = tj_emit_group(g, &fast, args, &src, err) ? NULL : tj_graph_kernel(g, &src, 1, 1, &made, err);
    tj_buf_free(&src);
    return e ? e->dispatch : NULL;
}

int tj_tier_start(tj_graph *g, uint32_t at, const tj_group *grp, const tj_group_args *args,
                  tj_rt_error *err)
{
    tj_rt_error ignored = {{0}};
    tj_dispatch *fast = variant(g, grp, args, &ignored); /* may move g->kernels */
    if (!fast) /* the optimized kernel runs untiered: a fast tier is only a head start */
        return 0;
    tj_tier *t = calloc(1, sizeof *t);
    if (!t)
        return tj_rt_fail(err, "eval: out of memory");
    tj_kernel_entry *e = &g->kernels[at];
    t->fast = fast;
    t->best = e->dispatch;
    t->nargs = args->nargs;
    tj_compile_args(args, t->argv);
    atomic_init(&t->done, 0);
    t->running = pthread_create(&t->thread, NULL, compile_best, t) == 0;
    if (!t->running) { /* no thread: compile the optimized kernel at the launch, as untiered */
        free(t);
        return 0;
    }
    e->tier = t;
    g->stats.kernels_fast++;
    return 0;
}

/* Joins e's compile: 0 when the optimized kernel is taken, 1 when it
 * failed (counted, and its message kept in g). */
static int join(tj_graph *g, tj_kernel_entry *e)
{
    tj_tier *t = e->tier;
    pthread_join(t->thread, NULL);
    t->running = 0;
    if (!t->ok) {
        g->stats.compiles_failed++;
        snprintf(g->compile_error, sizeof g->compile_error, "the optimized kernel of a fast-tier group "
                 "failed to compile (its fast tier stays): %s", t->failure.msg[0] ? t->failure.msg : "no message");
        return 1;
    }
    g->stats.kernels_swapped++;
    free(t);
    e->tier = NULL;
    return 0;
}

tj_dispatch *tj_tier_pick(tj_graph *g, tj_kernel_entry *e)
{
    tj_tier *t = e->tier;
    if (!t || g->tuning) /* a tuning times the optimized kernel's configurations */
        return e->dispatch;
    if (t->running && atomic_load(&t->done))
        join(g, e);
    return e->tier ? e->tier->fast : e->dispatch;
}

uint32_t tj_tier_finish(tj_graph *g)
{
    uint32_t failed = 0;
    for (uint32_t i = 0; i < g->nkernels; i++)
        if (g->kernels[i].tier && g->kernels[i].tier->running)
            failed += (uint32_t)join(g, &g->kernels[i]);
    return failed;
}

void tj_tier_free(tj_kernel_entry *e)
{
    free(e->tier); /* joined by tj_tier_finish */
    e->tier = NULL;
}

int tj_graph_finish_compiles(tj_graph *g, tj_rt_error *err)
{
    if (!g)
        return tj_rt_fail(err, "tj_graph_finish_compiles: NULL graph");
    uint32_t failed = tj_tier_finish(g);
    return failed ? tj_rt_fail(err, "tj_graph_finish_compiles: %u background compile%s failed; the last: %s",
                               failed, failed == 1 ? "" : "s", g->compile_error)
                  : 0;
}

const char *tj_graph_compile_error(const tj_graph *g) { return g ? g->compile_error : ""; }
