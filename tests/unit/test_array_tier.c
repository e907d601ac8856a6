/* The array front end's fast tier (array/tier.c) computes the same bits
 * as the optimized kernel: an f32 matmul group's kernel, as emit.c writes
 * it, lowered at 4 warps (the cost model's) and at 8 (the fast tier's)
 * and run on the SIMT interpreter, gives the same bytes, over ragged edges
 * (masked rows, columns and K) and whole tiles; so does gelu(x*y+z)'s
 * elementwise kernel at 8 warps and 16. */
#include <criterion/criterion.h>

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

typedef struct kernel_case {
    const char *source, *config, *fast_config; /* the tile parameters but warps: the model's, the fast tier's */
} kernel_case;

static const kernel_case matmul = {matmul_gelu, "BM=64,BN=64,BK=32,stages=2", "BM=64,BN=64,BK=32,stages=2"};
/* the fast tier: one element a thread (array/tier.c's variant) */
static const kernel_case elementwise = {elementwise_gelu, "BM=1,BN=1024", "BM=1,BN=512"};

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

/* The kernel at `warps` (the cost model's) and at twice them with the fast tier's tile. */
static void same_bits(const kernel_case *kc, const char *shapes, int warps, size_t n)
{
    static float best[128 * 128], fast[128 * 128];
    memset(best, 0, sizeof best);
    memset(fast, 0xff, sizeof fast);
    run_at(kc, 0, shapes, warps, best, sizeof best);
    run_at(kc, 1, shapes, warps * 2, fast, sizeof fast);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(memcmp(&best[i], &fast[i], sizeof(float)), 0, "%s: Y[%zu] is %.9g at %d warps, %.9g at %d",
                     shapes, i, best[i], warps, fast[i], warps * 2);
        nonzero += best[i] != 0;
    }
    cr_assert_gt(nonzero, n / 2, "%s: the kernel wrote mostly zeros", shapes);
}

Test(array_tier, an_f32_matmul_gives_the_same_bits_at_4_and_8_warps)
{
    same_bits(&matmul, "M=70,N=72,K=40", 4, 70 * 72);
}

Test(array_tier, the_same_bits_over_whole_tiles) { same_bits(&matmul, "M=64,N=128,K=64", 4, 64 * 128); }

/* a ragged last tile (masked columns) and two rows: 1024 at 8 warps, 512 at 16 */
Test(array_tier, an_elementwise_chain_gives_the_same_bits_at_8_and_16_warps)
{
    same_bits(&elementwise, "M=2,N=3000", 8, 2 * 3000);
}
