/* Compiling a CUDA plan's kernels ahead of its launches, on worker threads
 * (array/compile_ahead.c), against the stand-in driver (fake_libcuda.c:
 * nothing computes, the compiles are real): each kernel compiles once, ahead,
 * the launches find it (no second compile), the first
 * evaluation counts no cache hit and a repeated one a hit per kernel. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilejit/array.h"

static tj_graph *g;
static tj_rt_error err;

static void setup(void)
{
    char dir[] = "/tmp/tj-ahead-XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("TILEJIT_CACHE_DIR", dir, 1); /* cold: nothing on disk */
    g = tj_graph_new(TJ_DEVICE_CUDA, 0, &err);
    cr_assert(g, "%s", err.msg);
}

static void teardown(void) { tj_graph_free(g); }

TestSuite(array_ahead, .init = setup, .fini = teardown);

static tj_array input(int rank, const int64_t *shape)
{
    static float zeros[64 * 64];
    tj_tensor t = tj_tensor_contiguous(zeros, TJ_DT_F32, rank, shape);
    tj_array a = tj_array_copy(g, &t);
    cr_assert(a, "%s", tj_graph_error(g));
    return a;
}

static tj_graph_stats stats(void)
{
    tj_graph_stats s;
    tj_graph_get_stats(g, &s);
    return s;
}

/* x + relu(layer_norm(x) @ w1 + b1) @ w2: three kernels (the row kernel
 * of the layer norm, two matmuls with their epilogues) */
static tj_array block(tj_array x, tj_array w1, tj_array b1, tj_array w2)
{
    tj_array h = tj_array_matmul(g, tj_array_layer_norm(g, x, 0, 0, 1e-5), w1);
    h = tj_array_unary(g, TJ_AOP_RELU, tj_array_binary(g, TJ_AOP_ADD, h, b1));
    tj_array y = tj_array_binary(g, TJ_AOP_ADD, x, tj_array_matmul(g, h, w2));
    cr_assert(y, "%s", tj_graph_error(g));
    return y;
}

Test(array_ahead, a_plans_kernels_compile_once_and_launch_from_the_cache)
{
    tj_array x = input(2, (int64_t[]){32, 64}), w1 = input(2, (int64_t[]){64, 64});
    tj_array b1 = input(1, (int64_t[]){64}), w2 = input(2, (int64_t[]){64, 64});
    tj_array y = block(x, w1, b1, w2);
    tj_graph_stats before = stats();
    cr_assert_eq(tj_array_eval(g, &y, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_graph_finish_compiles(g, &err), 0, "%s", err.msg);
    tj_graph_stats cold = stats();
    cr_assert_eq(cold.kernels_launched - before.kernels_launched, 3);
    /* the layer norm; each f32 matmul (32 x 64 tiles at 4 warps, 16
     * accumulators a thread) twice: its fast tier ahead, its optimized
     * kernel in the background */
    cr_assert_eq(cold.kernels_compiled - before.kernels_compiled, 5, "compiled %llu",
                 (unsigned long long)(cold.kernels_compiled - before.kernels_compiled));
    cr_assert_eq(cold.kernels_fast - before.kernels_fast, 2);
    cr_assert_eq(cold.kernels_swapped - before.kernels_swapped, 2);
    cr_assert_eq(cold.cache_hits, before.cache_hits);
    cr_assert_eq(cold.kernels_ahead - before.kernels_ahead, 3);
    tj_array again = block(x, w1, b1, w2);
    cr_assert_eq(tj_array_eval(g, &again, 1, &err), 0, "%s", err.msg);
    tj_graph_stats warm = stats();
    cr_assert_eq(warm.kernels_compiled, cold.kernels_compiled);
    cr_assert_eq(warm.cache_hits - cold.cache_hits, 3);
    cr_assert_eq(warm.kernels_launched - cold.kernels_launched, 3);
    cr_assert_eq(warm.kernels_ahead, cold.kernels_ahead);
    cr_assert_eq(warm.kernels_fast, cold.kernels_fast);
}

/* A single f32 matmul: its first launch runs the fast tier (the kernel at
 * twice the warps) while the optimized kernel compiles on a thread; once
 * it is done a launch takes it, and nothing compiles again. */
Test(array_ahead, an_f32_matmul_starts_as_its_fast_tier_and_swaps)
{
    tj_array a = input(2, (int64_t[]){64, 64}), b = input(2, (int64_t[]){64, 64});
    tj_array y = tj_array_matmul(g, a, b);
    cr_assert_eq(tj_array_eval(g, &y, 1, &err), 0, "%s", err.msg);
    tj_graph_stats first = stats();
    cr_assert_eq(first.kernels_fast, 1);
    cr_assert_eq(first.kernels_launched, 1);
    cr_assert_eq(first.kernels_swapped, 0); /* taken at a launch, or by tj_graph_finish_compiles */
    cr_assert_eq(tj_graph_finish_compiles(g, &err), 0, "%s", err.msg);
    tj_graph_stats done = stats();
    cr_assert_eq(done.kernels_compiled, 2);
    cr_assert_eq(done.kernels_swapped, 1);
    tj_array again = tj_array_matmul(g, a, b);
    cr_assert_eq(tj_array_eval(g, &again, 1, &err), 0, "%s", err.msg);
    tj_graph_stats warm = stats();
    cr_assert_eq(warm.kernels_compiled, 2);
    cr_assert_eq(warm.cache_hits, 1);
    cr_assert_eq(warm.kernels_fast, 1);
    cr_assert_eq(warm.kernels_swapped, 1);
}

/* The optimized kernel's compile fails in the background (the stand-in
 * driver refuses loads off the main thread): the evaluations keep running
 * the fast tier, and the failure is counted, kept and returned by the wait
 * rather than dropped. */
Test(array_ahead, a_failed_background_compile_is_reported)
{
    setenv("TJ_FAKE_CUDA_FAIL_WORKER_LOADS", "1", 1);
    tj_array a = input(2, (int64_t[]){64, 64}), b = input(2, (int64_t[]){64, 64});
    tj_array y = tj_array_matmul(g, a, b);
    cr_assert_eq(tj_array_eval(g, &y, 1, &err), 0, "the fast tier ran: %s", err.msg);
    cr_assert_eq(stats().kernels_fast, 1);
    cr_assert_str_empty(tj_graph_compile_error(g));
    tj_rt_error wait = {{0}};
    cr_assert_eq(tj_graph_finish_compiles(g, &wait), 1, "the wait reports the failed compile");
    cr_assert(strstr(wait.msg, "1 background compile failed"), "%s", wait.msg);
    cr_assert(strstr(wait.msg, "cuModuleLoadDataEx"), "the driver's message is kept: %s", wait.msg);
    tj_graph_stats failed = stats();
    cr_assert_eq(failed.compiles_failed, 1);
    cr_assert_eq(failed.kernels_swapped, 0);
    cr_assert(strstr(tj_graph_compile_error(g), "cuModuleLoadDataEx"), "%s", tj_graph_compile_error(g));
    /* later evaluations take the fast tier, compile nothing, and report nothing new */
    tj_array again = tj_array_matmul(g, a, b);
    cr_assert_eq(tj_array_eval(g, &again, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_graph_finish_compiles(g, &err), 0, "nothing left running: %s", err.msg);
    tj_graph_stats warm = stats();
    cr_assert_eq(warm.kernels_compiled, failed.kernels_compiled);
    cr_assert_eq(warm.compiles_failed, 1);
    cr_assert_eq(warm.kernels_launched, 2);
    unsetenv("TJ_FAKE_CUDA_FAIL_WORKER_LOADS");
}

/* An elementwise chain of 4 elements a thread (64 x 64: a 16 x 64 tile at
 * 8 warps) first runs at 16 warps, 1 a thread, then swaps, where the host
 * has 4 or more cores (array/tier.c; on fewer it compiles once, untiered:
 * both are set here, whatever this machine has); one of a single element a
 * thread is never tiered. */
static void elementwise_chain(int cores)
{
    cr_assert_eq(tj_graph_set_host_cores(g, cores, &err), 0, "%s", err.msg);
    int tiered = cores >= 4;
    tj_array x = input(2, (int64_t[]){64, 64}), small = input(1, (int64_t[]){100});
    tj_array y = tj_array_unary(g, TJ_AOP_TANH, tj_array_binary(g, TJ_AOP_MULTIPLY, x, x));
    cr_assert_eq(tj_array_eval(g, &y, 1, &err), 0, "%s", err.msg);
    tj_graph_stats first = stats();
    cr_assert_eq(first.kernels_fast, tiered);
    cr_assert_eq(tj_graph_finish_compiles(g, &err), 0, "%s", err.msg);
    tj_graph_stats done = stats();
    cr_assert_eq(done.kernels_compiled, 1 + tiered);
    cr_assert_eq(done.kernels_swapped, tiered);
    tj_array again = tj_array_unary(g, TJ_AOP_TANH, tj_array_binary(g, TJ_AOP_MULTIPLY, x, x));
    tj_array s = tj_array_unary(g, TJ_AOP_EXP, small);
    cr_assert_eq(tj_array_eval(g, &again, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_array_eval(g, &s, 1, &err), 0, "%s", err.msg);
    tj_graph_stats warm = stats();
    cr_assert_eq(warm.kernels_compiled, 2 + tiered, "the small kernel compiled once, untiered");
    cr_assert_eq(warm.kernels_fast, tiered);
    cr_assert_eq(warm.cache_hits, 1);
}

Test(array_ahead, an_elementwise_chain_starts_as_its_fast_tier_and_swaps) { elementwise_chain(4); }
Test(array_ahead, an_elementwise_chain_on_two_cores_compiles_once) { elementwise_chain(2); }

/* Kernels whose bits depend on the warps are not tiered (a softmax's row
 * reductions), nor f32 matmuls whose threads hold few outputs (16 x 16: 2
 * a thread at 4 warps; the tier is for 16 and more). */
Test(array_ahead, reductions_and_small_matmuls_are_not_tiered)
{
    tj_array x = input(2, (int64_t[]){64, 64}), y = input(2, (int64_t[]){16, 16});
    tj_array s = tj_array_softmax(g, x, -1);
    tj_array m = tj_array_matmul(g, y, y);
    cr_assert(s && m, "%s", tj_graph_error(g));
    cr_assert_eq(tj_array_eval(g, &s, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_array_eval(g, &m, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(tj_graph_finish_compiles(g, &err), 0, "%s", err.msg);
    cr_assert_eq(stats().kernels_fast, 0);
}

/* A plan of one kernel compiles at its launch (nothing to overlap), and
 * counts the same way (8 x 16: one element a thread, not tiered). */
Test(array_ahead, a_single_kernel_counts_as_before)
{
    tj_array x = input(2, (int64_t[]){8, 16});
    tj_array y = tj_array_unary(g, TJ_AOP_TANH, tj_array_binary(g, TJ_AOP_MULTIPLY, x, x));
    cr_assert_eq(tj_array_eval(g, &y, 1, &err), 0, "%s", err.msg);
    tj_graph_stats cold = stats();
    cr_assert_eq(cold.kernels_compiled, 1);
    cr_assert_eq(cold.cache_hits, 0);
    cr_assert_eq(cold.kernels_ahead, 0);
    tj_array again = tj_array_unary(g, TJ_AOP_TANH, tj_array_binary(g, TJ_AOP_MULTIPLY, x, x));
    cr_assert_eq(tj_array_eval(g, &again, 1, &err), 0, "%s", err.msg);
    tj_graph_stats warm = stats();
    cr_assert_eq(warm.kernels_compiled, 1);
    cr_assert_eq(warm.cache_hits, 1);
}
