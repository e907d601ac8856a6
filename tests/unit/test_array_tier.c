/* The array front end's fast tier (array/tier.c) computes the same bits
 * as the optimized kernel: an f32 matmul group's kernel, as emit.c writes
 * it, lowered at 4 warps over 64 x 64 tiles (the cost model's) and at 16
 * over 32 x 64 (the fast tier's) and run on the SIMT interpreter, gives
 * the same bytes, over ragged edges
 * (masked rows, columns and K) and whole tiles; so does gelu(x*y+z)'s
 * elementwise kernel at 8 warps and 16. And the two kernels a CUDA graph
 * makes for elementwise chains of every dtype (against the stand-in driver,
 * fake_libcuda.c: the compiles are real, the launches do nothing; the host
 * given 4 cores, so that the elementwise tier applies on any build
 * machine) give the same bytes on the SIMT interpreter. */
#define _GNU_SOURCE /* mkdtemp, setenv, sched_setaffinity */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdlib.h>

#include "array/array_internal.h"
#include "lower_check.h"

/* The tanh gelu of v1 and its store, as the array front end emits it after
 * either producer of v1 (a product plus x2, or x0 * x1 + x2). */
#define GELU_OF_V1                                                                                                     \
    "    v2 = f32(f32(0.5) * v1)\n"                                                                                    \
    "    v3 = f32(f32(0.044714999999999998) * v1)\n"                                                                   \
    "    v4 = f32(v3 * v1)\n"                                                                                          \
    "    v5 = f32(v4 * v1)\n"                                                                                          \
    "    v6 = f32(v1 + v5)\n"                                                                                          \
    "    v7 = f32(f32(0.79788456080286541) * v6)\n"                                                                    \
    "    v8 = f32(tanh(v7))\n"                                                                                         \
    "    v9 = f32(f32(1) + v8)\n"                                                                                      \
    "    v10 = f32(v2 * v9)\n"                                                                                         \
    "    store(Y[m:m+BM, n:n+BN], v10)\n"                                                                              \
    "}\n"

/* ln -> matmul -> bias -> gelu's matmul kernel (tanh form), as the array
 * front end emits it (tests/lit/array/emit.tja prints the same shape) */
static const char matmul_gelu[] = "kernel fused(X0: f32[M, K], X1: f32[K, N], X2: f32[M, N], Y: f32[M, N])\n"
                                  "    grid (cdiv(N, BN), cdiv(M, BM), 1)\n"
                                  "    tune BM in [64, 32, 128], BN in [64, 32, 128], BK in [32, 16, 64], "
                                  "warps in [4, 8], stages in [2, 3]\n"
                                  "    const unroll = 8\n"
                                  "{\n"
                                  "    m = program_id(1) * BM\n"
                                  "    n = program_id(0) * BN\n"
                                  "    acc = zeros(f32[BM, BN])\n"
                                  "    for k in range(0, K, BK) {\n"
                                  "        x0 = load(X0[m:m+BM, k:k+BK])\n"
                                  "        x1 = load(X1[k:k+BK, n:n+BN])\n"
                                  "        acc = dot(x0, x1, acc, precision = \"ieee\")\n"
                                  "    }\n"
                                  "    v0 = f32(acc)\n"
                                  "    x2 = load(X2[m:m+BM, n:n+BN])\n"
                                  "    v1 = f32(v0 + x2)\n"
                                  GELU_OF_V1;

/* gelu(x*y+z) over f32[67108864], as the array front end emits it */
static const char elementwise_gelu[] = "kernel fused(X0: f32[M, N], X1: f32[M, N], X2: f32[M, N], Y: f32[M, N])\n"
                                       "    grid (cdiv(N, BN), cdiv(M, BM), 1)\n"
                                       "    tune BM in [1, 2], BN in [1024, 512, 2048], warps in [8, 4, 16]\n"
                                       "{\n"
                                       "    m = program_id(1) * BM\n"
                                       "    n = program_id(0) * BN\n"
                                       "    x0 = load(X0[m:m+BM, n:n+BN])\n"
                                       "    x1 = load(X1[m:m+BM, n:n+BN])\n"
                                       "    x2 = load(X2[m:m+BM, n:n+BN])\n"
                                       "    v0 = f32(x0 * x1)\n"
                                       "    v1 = f32(v0 + x2)\n"
                                       GELU_OF_V1;

/* softmax(q @ k^T * s) @ v's flash-attention kernel (f32), as array/attention.c emits it */
static const char flash_attention[] =
    "kernel fused(XQ: f32[B0, B1, M, D], XK: f32[B0, B1, D, N], XV: f32[B0, B1, N, E], Y: f32[B0, B1, M, E])\n"
    "    grid (1, cdiv(M, BM), B0 * B1)\n"
    "    tune BM in [64, 16, 128], BN in [64, 128], warps in [8, 4]\n"
    "    const BD = 64\n"
    "    const BE = 64\n"
    "    const unroll = 8\n"
    "{\n"
    "    m = program_id(1) * BM\n"
    "    q = program_id(2)\n"
    "    b1 = q % B1\n"
    "    q = q / B1\n"
    "    b0 = q\n"
    "    tq = load(XQ[b0, b1, m:m+BM, 0:BD])\n"
    "    mi = full(f32[BM, 1], -inf)\n"
    "    li = zeros(f32[BM, 1])\n"
    "    acc = zeros(f32[BM, BE])\n"
    "    for j in range(0, N, BN) {\n"
    "        s = dot(tq, load(XK[b0, b1, 0:BD, j:j+BN]), precision = \"ieee\") * f32(0.18033688011112042)\n"
    "        s = where(arange(BN)[None, :] + j < N, s, -inf)\n"
    "        mn = maximum(mi, max(s, 1)[:, None])\n"
    "        p = exp2(s - mn)\n"
    "        alpha = exp2(mi - mn)\n"
    "        li = li * alpha + sum(p, 1)[:, None]\n"
    "        acc = acc * alpha + dot(f32(p), load(XV[b0, b1, j:j+BN, 0:BE]), precision = \"ieee\")\n"
    "        mi = mn\n"
    "    }\n"
    "    store(Y[b0, b1, m:m+BM, 0:BE], f32(acc / li))\n"
    "}\n";

typedef struct kernel_case {
    const char *source, *config, *fast_config; /* the tile parameters but warps: the model's, the fast tier's */
} kernel_case;

/* the fast tier: 16 warps over half the rows, 4 accumulators a thread, its dot's k loop not unrolled
 * (array/tier.c's variant) */
static const kernel_case matmul = {matmul_gelu, "BM=64,BN=64,BK=32,stages=2", "BM=32,BN=64,BK=32,stages=2,unroll=1"};
/* the fast tier: one element a thread (array/tier.c's variant) */
static const kernel_case elementwise = {elementwise_gelu, "BM=1,BN=1024", "BM=1,BN=512"};

/* the fast tier: 32 query rows a program at 16 warps, the same key blocks, the dots not unrolled */
static const kernel_case attention = {flash_attention, "BM=64,BN=64", "BM=32,BN=64,unroll=1"};

/* Y of the kernel at these shapes, lowered at `warps`, on the SIMT
 * interpreter over the same random arguments (seed 1), into out. */
static void run_at(const kernel_case *kc, int fast, const char *shapes, int warps, float *out, size_t cap)
{
    lc_opts o = lc_defaults();
    o.shapes = shapes;
    lc_run run = {.c = tj_ctx_new()};
    tj_program *prog = tj_parse_program(run.c, "tier.tj", kc->source, strlen(kc->source));
    int ki = prog ? tj_program_find_kernel(prog, "fused") : -1;
    cr_assert(ki >= 0, "%s", tj_diag_render(run.c));
    run.nparams = tj_kernel_params(prog, ki, &run.params);
    cr_assert(lc_make_args(&run, &o));
    tj_binding defs[LC_MAX_BIND + 1], dims[LC_MAX_BIND], *config;
    uint32_t ndefs = lc_bindings(run.c, fast ? kc->fast_config : kc->config, defs, LC_MAX_BIND), nconfig;
    uint32_t ndims = lc_bindings(run.c, shapes, dims, LC_MAX_BIND);
    defs[ndefs] = (tj_binding){"warps", warps};
    cr_assert_eq(tj_select_config(run.c, prog, ki, defs, ndefs + 1, dims, ndims, &config, &nconfig), 0, "%s",
                 tj_diag_render(run.c));
    tj_kernel *k = tj_build_kernel(run.c, prog, ki, config, nconfig, dims, ndims);
    cr_assert(k && !tj_verify(k), "%s", tj_diag_render(run.c));
    lc_reset(&run);
    cr_assert(lc_lower_and_run(&run, k, warps, &o, shapes), "%s", tj_diag_render(run.c));
    uint32_t y = run.nparams - 1;
    cr_assert_leq(run.bytes[y], cap);
    memcpy(out, run.simt[y].tensor.data, run.bytes[y]);
    lc_free(&run);
    tj_ctx_free(run.c);
}

/* The kernel at `warps` (the cost model's) and at `fast_warps` with the fast tier's tile. */
static void same_bits(const kernel_case *kc, const char *shapes, int warps, int fast_warps, size_t n)
{
    static float best[128 * 128], fast[128 * 128];
    memset(best, 0, sizeof best);
    memset(fast, 0xff, sizeof fast);
    run_at(kc, 0, shapes, warps, best, sizeof best);
    run_at(kc, 1, shapes, fast_warps, fast, sizeof fast);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(memcmp(&best[i], &fast[i], sizeof(float)), 0, "%s: Y[%zu] is %.9g at %d warps, %.9g at %d",
                     shapes, i, best[i], warps, fast[i], fast_warps);
        nonzero += best[i] != 0;
    }
    cr_assert_gt(nonzero, n / 2, "%s: the kernel wrote mostly zeros", shapes);
}

Test(array_tier, an_f32_matmul_gives_the_same_bits_at_4_warps_and_16_over_half_the_rows)
{
    same_bits(&matmul, "M=70,N=72,K=40", 4, 16, 70 * 72);
}

Test(array_tier, the_same_bits_over_whole_tiles) { same_bits(&matmul, "M=64,N=128,K=64", 4, 16, 64 * 128); }

/* a ragged last tile (masked columns) and two rows: 1024 at 8 warps, 512 at 16 */
Test(array_tier, an_elementwise_chain_gives_the_same_bits_at_8_and_16_warps)
{
    same_bits(&elementwise, "M=2,N=3000", 8, 16, 2 * 3000);
}

/* ragged queries and keys (the key mask), two heads; 16 rows at 16 warps (2 a thread) fail */
Test(array_tier, f32_flash_attention_gives_the_same_bits_over_32_query_rows_at_16_warps)
{
    same_bits(&attention, "B0=1,B1=2,M=70,D=64,N=100,E=64", 8, 16, 2 * 70 * 64);
}

/* ---- the kernels a graph makes ---- */

/* Y (the last parameter) of `source` at its first configuration (the tune
 * lists' first values: the cost model's, or the fast tier's) on the SIMT
 * interpreter over random arguments (seed 1, the same for the same
 * parameters; Y starts as `fill` bytes, so that two runs that leave an
 * element unwritten differ there), into out; its bytes. */
static size_t run_first_config(const char *source, const char *shapes, int fill, unsigned char *out, size_t cap)
{
    lc_opts o = lc_defaults();
    o.shapes = shapes;
    lc_run run = {.c = tj_ctx_new()};
    tj_program *prog = tj_parse_program(run.c, "emitted.tj", source, strlen(source));
    int ki = prog ? tj_program_find_kernel(prog, "fused") : -1;
    cr_assert(ki >= 0, "%s", tj_diag_render(run.c));
    run.nparams = tj_kernel_params(prog, ki, &run.params);
    cr_assert(lc_make_args(&run, &o));
    tj_binding dims[LC_MAX_BIND], *config;
    uint32_t ndims = lc_bindings(run.c, shapes, dims, LC_MAX_BIND), nconfig;
    cr_assert_eq(tj_select_config(run.c, prog, ki, NULL, 0, dims, ndims, &config, &nconfig), 0, "%s",
                 tj_diag_render(run.c));
    int warps = 0;
    for (uint32_t i = 0; i < nconfig; i++)
        if (!strcmp(config[i].name, "warps"))
            warps = (int)config[i].value;
    cr_assert_gt(warps, 0, "no warps in the configuration of\n%s", source);
    tj_kernel *k = tj_build_kernel(run.c, prog, ki, config, nconfig, dims, ndims);
    cr_assert(k && !tj_verify(k), "%s", tj_diag_render(run.c));
    lc_reset(&run);
    uint32_t y = run.nparams - 1;
    memset(run.simt[y].tensor.data, fill, run.bytes[y]);
    cr_assert(lc_lower_and_run(&run, k, warps, &o, shapes), "%s", tj_diag_render(run.c));
    size_t bytes = run.bytes[y];
    cr_assert_leq(bytes, cap);
    memcpy(out, run.simt[y].tensor.data, bytes);
    lc_free(&run);
    tj_ctx_free(run.c);
    return bytes;
}

static tj_graph *cuda_graph(void)
{
    char dir[] = "/tmp/tj-tier-XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("TILEJIT_CACHE_DIR", dir, 1); /* cold: nothing on disk */
    tj_rt_error err = {{0}};
    tj_graph *g = tj_graph_new(TJ_DEVICE_CUDA, 0, &err);
    cr_assert(g, "%s", err.msg);
    cr_assert_eq(tj_graph_set_host_cores(g, 4, &err), 0, "%s", err.msg);
    return g;
}

static tj_array input(tj_graph *g, tj_dtype dt, int rank, const int64_t *shape)
{
    static double zeros[64 * 64];
    tj_tensor t = tj_tensor_contiguous(zeros, dt, rank, shape);
    tj_array a = tj_array_copy(g, &t);
    cr_assert(a, "%s", tj_graph_error(g));
    return a;
}

/* The chain y's group evaluated on a fresh graph: it starts as its fast
 * tier, and the two kernels (the graph's entries: the variant, quick, and
 * the optimized one) write the same bytes over `shapes` (its dims). */
static void both_tiers_agree(tj_graph *g, tj_array y, const char *what, const char *shapes)
{
    tj_rt_error err = {{0}};
    cr_assert(y, "%s: %s", what, tj_graph_error(g));
    cr_assert_eq(tj_array_eval(g, &y, 1, &err), 0, "%s: %s", what, err.msg);
    cr_assert_eq(tj_graph_finish_compiles(g, &err), 0, "%s: %s", what, err.msg);
    tj_graph_stats st;
    tj_graph_get_stats(g, &st);
    cr_assert_eq(st.kernels_fast, 1, "%s: not tiered", what);
    cr_assert_eq(g->nkernels, 2, "%s: %u kernels", what, g->nkernels);
    static unsigned char bytes[2][64 * 64 * 8];
    size_t n[2];
    for (int i = 0; i < 2; i++)
        n[i] = run_first_config(g->kernels[i].source, shapes, 0x5a + i, bytes[i], sizeof bytes[i]);
    cr_assert(g->kernels[0].quick != g->kernels[1].quick, "%s: not one variant and one optimized kernel", what);
    cr_assert(strcmp(g->kernels[0].source, g->kernels[1].source), "%s: the two tiers are one text", what);
    cr_assert_eq(n[0], n[1]);
    for (size_t i = 0; i < n[0]; i++)
        cr_assert_eq(bytes[0][i], bytes[1][i], "%s: byte %zu of Y differs between the tiers (%s at %d, %s at %d)\n%s\n%s",
                     what, i, g->kernels[0].quick ? "fast" : "optimized", bytes[0][i],
                     g->kernels[1].quick ? "fast" : "optimized", bytes[1][i], g->kernels[0].source,
                     g->kernels[1].source);
    tj_graph_free(g);
}

static const int64_t mn[] = {64, 64};

Test(array_tier, f16_sigmoid_of_a_product_and_sum)
{
    tj_graph *g = cuda_graph();
    tj_array x = input(g, TJ_DT_F16, 2, mn), y = input(g, TJ_DT_F16, 2, mn), z = input(g, TJ_DT_F16, 2, mn);
    tj_array r = tj_array_unary(g, TJ_AOP_SIGMOID,
                                tj_array_binary(g, TJ_AOP_ADD, tj_array_binary(g, TJ_AOP_MULTIPLY, x, y), z));
    both_tiers_agree(g, r, "f16 sigmoid(x * y + z)", "M=64,N=64");
}

Test(array_tier, bf16_gelu_and_a_select)
{
    tj_graph *g = cuda_graph();
    tj_array x = input(g, TJ_DT_BF16, 2, mn), y = input(g, TJ_DT_BF16, 2, mn);
    tj_array r = tj_array_ternary(g, TJ_AOP_WHERE, tj_array_binary(g, TJ_AOP_GREATER, x, y),
                                  tj_array_unary(g, TJ_AOP_GELU, x), tj_array_binary(g, TJ_AOP_SUBTRACT, x, y));
    both_tiers_agree(g, r, "bf16 where(x > y, gelu(x), x - y)", "M=64,N=64");
}

Test(array_tier, f64_division_and_log1p)
{
    tj_graph *g = cuda_graph();
    tj_array x = input(g, TJ_DT_F64, 2, mn), y = input(g, TJ_DT_F64, 2, mn);
    tj_array den = tj_array_binary(g, TJ_AOP_ADD, tj_array_unary(g, TJ_AOP_SQUARE, y), tj_array_scalar(g, TJ_DT_F64, 1, 1));
    tj_array r = tj_array_binary(g, TJ_AOP_DIVIDE, tj_array_unary(g, TJ_AOP_LOG1P, tj_array_unary(g, TJ_AOP_ABS, x)), den);
    both_tiers_agree(g, r, "f64 log1p(|x|) / (y^2 + 1)", "M=64,N=64");
}

Test(array_tier, i32_products_maxima_and_bits)
{
    tj_graph *g = cuda_graph();
    tj_array x = input(g, TJ_DT_I32, 2, mn), y = input(g, TJ_DT_I32, 2, mn), z = input(g, TJ_DT_I32, 2, mn);
    tj_array r = tj_array_binary(g, TJ_AOP_ADD, tj_array_binary(g, TJ_AOP_MAXIMUM, tj_array_binary(g, TJ_AOP_MULTIPLY, x, y), z),
                                 tj_array_binary(g, TJ_AOP_BITWISE_AND, x, y));
    both_tiers_agree(g, r, "i32 maximum(x * y, z) + (x & y)", "M=64,N=64");
}

/* f16 in, f32 out (two element sizes in one kernel), a square root and
 * sin. (A row broadcast over the rows takes 16 warps in the cost model,
 * whose double is past the tier's 16: not tiered.) */
Test(array_tier, mixed_dtypes_a_square_root_and_sin)
{
    tj_graph *g = cuda_graph();
    tj_array x = input(g, TJ_DT_F16, 2, mn), w = input(g, TJ_DT_F32, 2, mn);
    tj_array r = tj_array_binary(g, TJ_AOP_MULTIPLY, tj_array_astype(g, x, TJ_DT_F32), w);
    tj_array root = tj_array_unary(g, TJ_AOP_SQRT, tj_array_unary(g, TJ_AOP_ABS, r));
    r = tj_array_unary(g, TJ_AOP_SIN, tj_array_binary(g, TJ_AOP_ADD, r, root));
    both_tiers_agree(g, r, "f32 sin(x * w + sqrt(|x * w|)), x f16", "M=64,N=64");
}

/* Fewer than 4 cores: compiled once, untiered */
Test(array_tier, few_cores_leave_elementwise_chains_untiered)
{
    tj_graph *g = cuda_graph();
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_graph_set_host_cores(g, 2, &err), 0, "%s", err.msg);
    cr_assert_neq(tj_graph_set_host_cores(g, -1, &err), 0, "a negative count was taken");
    tj_array x = input(g, TJ_DT_F32, 2, mn);
    tj_array r = tj_array_unary(g, TJ_AOP_TANH, tj_array_binary(g, TJ_AOP_MULTIPLY, x, x));
    cr_assert_eq(tj_array_eval(g, &r, 1, &err), 0, "%s", err.msg);
    tj_graph_stats st;
    tj_graph_get_stats(g, &st);
    cr_assert_eq(st.kernels_fast, 0);
    cr_assert_eq(st.kernels_compiled, 1);
    tj_graph_free(g);
}

/* By default the graph counts the cores the process may run on, not those
 * online: pinned to one, the chain is not tiered (on a host of 4 or more
 * this fails where the online count is taken). */
Test(array_tier, the_default_counts_the_cores_of_the_process_affinity)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &set))
        cpu++;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    cr_assert_eq(sched_setaffinity(0, sizeof set, &set), 0); /* this test's own process (Criterion forks one) */
    tj_graph *g = cuda_graph();
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_graph_set_host_cores(g, 0, &err), 0, "%s", err.msg);
    tj_array x = input(g, TJ_DT_F32, 2, mn);
    tj_array r = tj_array_unary(g, TJ_AOP_TANH, tj_array_binary(g, TJ_AOP_MULTIPLY, x, x));
    cr_assert_eq(tj_array_eval(g, &r, 1, &err), 0, "%s", err.msg);
    tj_graph_stats st;
    tj_graph_get_stats(g, &st);
    cr_assert_eq(st.kernels_fast, 0, "tiered on one core");
    tj_graph_free(g);
}

/* softmax(q @ k^T * s [+ mask]) @ v over two heads: one flash-attention
 * kernel, tiered, whose two kernels write the same bytes */
static void attention_tiers_agree(int masked)
{
    tj_graph *g = cuda_graph();
    const int64_t qkv[] = {2, 64, 64};
    tj_array q = input(g, TJ_DT_F32, 3, qkv), k = input(g, TJ_DT_F32, 3, qkv), v = input(g, TJ_DT_F32, 3, qkv);
    tj_array s = tj_array_binary(g, TJ_AOP_MULTIPLY, tj_array_matmul(g, q, tj_array_swapaxes(g, k, 1, 2)),
                                 tj_array_scalar(g, TJ_DT_F32, 0.125, 1));
    if (masked)
        s = tj_array_binary(g, TJ_AOP_ADD, s, input(g, TJ_DT_F32, 2, mn));
    tj_array y = tj_array_matmul(g, tj_array_softmax(g, s, -1), v);
    both_tiers_agree(g, y, masked ? "f32 attention with a mask" : "f32 attention", "B0=2,M=64,D=64,N=64,E=64");
}

Test(array_tier, f32_attention) { attention_tiers_agree(0); }
Test(array_tier, f32_attention_with_a_mask) { attention_tiers_agree(1); }
