/* GPU test of the lowering: the kernels of tests/unit/test_lower.c compiled
 * through the JIT (front end, passes, specialize, lower-simt, PTX) and run on
 * the device, each compared with the reference interpreter on the same
 * random arguments; then the memory bandwidth a few memory-bound kernels
 * reach (reported, not checked). Exits 77 with the reason without a device.
 * `gpu_lower TEXT` runs only the cases whose defines or kernel name hold
 * TEXT (one case under compute-sanitizer: `gpu_lower producer=1`,
 * `gpu_lower persistent`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/jit.h"
#include "tilejit/tilejit.h"

#include "../unit/lower_check.h"
#include "../unit/lower_kernels.h"
#include "../unit/source_file.h"

typedef struct gpu_case {
    const char *src, *kernel, *defines, *shapes, *scalars, *int_range;
    int specials;
    double rtol, atol, lo, hi;
    int min_warps; /* 0: from 1 warp (large tiles: whole warpgroups only) */
} gpu_case;

static const gpu_case cases[] = {
    {EW, "ew", "", "N=1000", "", NULL, 0, 0, 0, 0, 0, 0},
    {EW, "ew", "", "N=4096", "", NULL, 0, 0, 0, 0, 0, 0},
    {ADD, "add", "", "N=3000", "", NULL, 0, 0, 0, 0, 0, 0},
    {ADD, "add", "BLOCK=64", "N=200", "", NULL, 0, 0, 0, 0, 0, 0},
    {MASKED, "masked", "", "N=1024", "n=900", NULL, 0, 0, 0, 0, 0, 0},
    {EMBED, "embed", "", "V=50,D=16,N=70", "", "idx=-3:53", 0, 0, 0, 0, 0, 0},
    {SCATTER, "scat", "", "V=10,D=16,N=32", "", "idx=-1:11", 0, 1e-5, 1e-5, 0, 4, 0},
    {SOFTMAX, "softmax", "BLOCK=256", "M=5,N=200", "", NULL, 0, 0, 0, 0, 0, 0},
    {SOFTMAX, "softmax", "BLOCK=1024", "M=3,N=1024", "", NULL, 0, 0, 0, 0, 0, 0},
    {ROWS, "rows", "", "M=37,N=64", "", NULL, 0, 1e-4, 1e-4, 0, 0, 0},
    {COLS, "cols", "", "M=50,N=20", "", NULL, 1, 0, 0, 0, 0, 0},
    {WHOLE, "whole", "", "M=5,N=11", "", NULL, 0, 0, 0, 0, 0, 0},
    {RECURRENCE, "recurrence", "", "R=3,L=1000", "", NULL, 0, 1e-3, 1e-5, 0.5, 1.0, 0},
    {CUMSUM2, "cum", "", "M=64,N=16", "", NULL, 0, 0, 0, 0, 0, 0},
    {SORT, "sorter", "", "M=3,N=64", "", NULL, 1, 0, 0, 0, 0, 0},
    {SORT2D, "sort2", "", "M=16,N=32", "", NULL, 0, 0, 0, 0, 0, 0},
    {SORTROWS, "sort_rows", "BLOCK=1024", "M=3,N=1000", "", NULL, 1, 0, 0, 0, 0, 0},
    {MATMUL, "matmul", "BM=64,BN=64,BK=32,stages=2", "M=70,N=64,K=80", "", NULL, 0, 0, 0, 0, 0, 0},
    /* wgmma on sm_90a (lower/wgmma.c): two warpgroups at 8 warps, two 64-row
     * blocks per warpgroup at 4; 128- and 64-byte swizzles; staged (stages = 1) */
    {MATMUL, "matmul", "BM=128,BN=128,BK=64,stages=3", "M=200,N=136,K=160", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    {MATMUL, "matmul", "BM=128,BN=256,BK=32,stages=4", "M=130,N=264,K=96", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    {MATMUL, "matmul", "BM=128,BN=64,BK=64,stages=1", "M=130,N=64,K=128", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    /* a group in flight across iterations (wait_group 1): 3 slots of 48 KiB
     * by TMA, the slot refilled after its release */
    {MATMUL, "matmul", "BM=128,BN=256,BK=64,stages=3", "M=200,N=256,K=160", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    /* rings by TMA (lower/tma.c; rows of 16-element multiples, partial
     * tiles zero-filled by the copy engine): 128- and 64-byte swizzles, 2 to 4 slots */
    {MATMUL, "matmul", "BM=128,BN=128,BK=64,stages=3", "M=200,N=144,K=176", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    {MATMUL, "matmul", "BM=128,BN=128,BK=32,stages=4", "M=260,N=144,K=208", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    {MATMUL, "matmul", "BM=128,BN=256,BK=64,stages=2", "M=130,N=272,K=80", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    /* deep TMA rings (stages 6 and 8), each group in flight with S = d + 1
     * slots, through more than two rounds of them (17 iterations) */
    {MATMUL, "matmul", "BM=64,BN=64,BK=64,stages=8", "M=136,N=144,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    {MATMUL, "matmul", "BM=128,BN=128,BK=64,stages=6", "M=200,N=144,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4},
    /* f32 dot rounds its inputs to tf32 on the GPU (10-bit mantissas) */
    {MM32, "mm", "", "M=40,N=20,K=19", "", NULL, 0, 1e-2, 2e-2, 0, 0, 0},
    {MM32_IEEE, "mm", "", "M=40,N=20,K=19", "", NULL, 0, 0, 0, 0, 0, 0},
    {MMT, "mmt", "", "M=40,N=48,K=40", "", NULL, 0, 1e-2, 2e-2, 0, 0, 0},
    {NESTLOAD, "nestload", "", "M=5,N=70", "", NULL, 0, 1e-4, 1e-4, 0, 0, 0},
    {ATTENTION, "attention", "BM=64,BN=32,stages=1", "B=1,H=2,S=70,D=16", "scale=0.25", NULL, 0, 0, 0, 0, 0, 0},
    /* attention on wgmma: Q staged once, P as the register a operand, K and V
     * in rings; one and two warpgroups, head dims 64 and 128, partial blocks */
    {ATTENTION, "attention", "BM=64,BN=64,stages=2", "B=1,H=2,S=136,D=64", "scale=0.125", NULL, 0, 2e-2, 2e-2, 0, 0, 4},
    {ATTENTION, "attention", "BM=128,BN=64,stages=3", "B=2,H=2,S=200,D=128", "scale=0.0884", NULL, 0, 2e-2, 2e-2, 0, 0, 4},
    {ATTENTION, "attention", "BM=128,BN=128,stages=2", "B=1,H=2,S=300,D=128", "scale=0.0884", NULL, 0, 2e-2, 2e-2, 0, 0, 8},
    {BRANCH, "branch", "", "N=100", "flag=2", NULL, 0, 0, 0, 0, 0, 0},
    {SHAPES, "shapes", "", "M=16,N=32", "", NULL, 0, 0, 1e-4, 0, 0, 0},
    {MISC, "misc", "", "M=6,N=40,V=12", "", "I=-1:7,J=-1:11,C8=-100:100", 0, 0, 0, 0, 0, 0},
    {BDOT, "bdot", "", "Bt=2,M=16,K=8,N=32", "", NULL, 0, 1e-2, 2e-2, 0, 0, 0},
    {NEST, "nest", "", "N=150", "n=3", NULL, 0, 0, 0, 0, 0, 0},
};

/* Cases whose source is a file of the tree (TJ_SOURCE_DIR), read at the run
 * ("{T}" as f32). Split-K (examples/matmul.tj): the parts on wgmma with TMA
 * rings, K not a multiple of the split (17 steps for 3; 3 for 4: one run
 * empty), partial tiles; then their sum in order; and the sum in the last
 * arriver (bench/gpu/kernels.tj.in), its flags and counts starting at zero
 * and compared after the run (zero again). */
static const struct {
    const char *file;
    gpu_case g;
} file_cases[] = {
    {"examples/matmul.tj",
     {NULL, "matmul_splitk", "BM=64,BN=256,BK=64,stages=4", "M=72,N=272,K=1040,S=3", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4}},
    {"examples/matmul.tj",
     {NULL, "matmul_splitk", "BM=128,BN=128,BK=64,stages=3", "M=200,N=144,K=176,S=4", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4}},
    {"examples/matmul.tj", {NULL, "matmul_splitk_sum", "BM=8,BN=256", "M=37,N=300,S=3", "", NULL, 0, 0, 0, 0, 0, 0}},
    /* a producer warp (docs/simt.md, "A producer warp"): warp P issues the
     * TMA copies, running ahead of the consumers until a release stops it;
     * rings of 3, 4 and 8 slots through several rounds, partial tiles */
    {"examples/matmul.tj",
     {NULL, "matmul", "BM=128,BN=128,BK=64,stages=3,producer=1", "M=200,N=144,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0,
      4}},
    {"examples/matmul.tj",
     {NULL, "matmul", "BM=128,BN=256,BK=64,stages=4,producer=1", "M=200,N=256,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0,
      8}},
    {"examples/matmul.tj",
     {NULL, "matmul", "BM=64,BN=64,BK=64,stages=8,producer=1", "M=136,N=144,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0, 4}},
    /* C by TMA stores (docs/simt.md, "TMA stores"): the tile staged in the
     * ring's shared memory, thread 0's boxes clipped at the last row and
     * column tiles; the fused epilogue through the same staging */
    {"examples/matmul.tj",
     {NULL, "matmul", "BM=128,BN=128,BK=64,stages=3,tma_store=1", "M=200,N=144,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0,
      4}},
    {"examples/matmul.tj",
     {NULL, "matmul", "BM=128,BN=256,BK=64,stages=4,tma_store=1", "M=200,N=272,K=176", "", NULL, 0, 1e-2, 1e-2, 0, 0,
      8}},
    {"examples/matmul.tj",
     {NULL, "matmul_bias_gelu", "BM=128,BN=128,BK=64,stages=3,tma_store=1", "M=200,N=144,K=176", "", NULL, 0, 2e-2,
      2e-2, 0, 0, 4}},
    /* the example's first configuration (what a call without -D runs), one
     * warpgroup's 64 x 64 tile through a 64-column box: not in the H100 run
     * that made tma_store = 1 the example's (bench/RESULTS.md) */
    {"examples/matmul.tj",
     {NULL, "matmul", "BM=64,BN=64,BK=32,stages=2,tma_store=1", "M=136,N=272,K=1040", "", NULL, 0, 1e-2, 1e-2, 0, 0,
      4}},
    /* persistent (docs/simt.md, "A persistent matmul"): fewer programs
     * than tiles, the ring and the producer warp running on across tiles,
     * the epilogue under an `if` in the loop; `gpu_lower persistent` runs
     * them alone */
    {"examples/matmul.tj",
     {NULL, "matmul_persistent", "BM=128,BN=128,BK=64,stages=3", "M=200,N=272,K=1040", "programs=3", NULL, 0, 1e-2,
      1e-2, 0, 0, 4}},
    {"examples/matmul.tj",
     {NULL, "matmul_persistent", "BM=128,BN=256,BK=64,stages=4,producer=1", "M=264,N=528,K=320", "programs=5", NULL,
      0, 1e-2, 1e-2, 0, 0, 8}},
    {"examples/matmul.tj",
     {NULL, "matmul_persistent_bias_gelu", "BM=128,BN=128,BK=64,stages=3,producer=1", "M=200,N=272,K=176",
      "programs=4", NULL, 0, 2e-2, 2e-2, 0, 0, 4}},
    /* C by TMA stores in flight into the next tile (tma_store = 1; not
     * yet run on a GPU): `gpu_lower tma_store=1` runs them with the
     * one-tile ones */
    {"examples/matmul.tj",
     {NULL, "matmul_persistent", "BM=128,BN=128,BK=64,stages=3,tma_store=1", "M=264,N=272,K=176", "programs=2",
      NULL, 0, 1e-2, 1e-2, 0, 0, 4}},
    {"examples/matmul.tj",
     {NULL, "matmul_persistent_bias_gelu", "BM=128,BN=256,BK=64,stages=3,tma_store=1", "M=264,N=528,K=176",
      "programs=3", NULL, 0, 2e-2, 2e-2, 0, 0, 8}},
    /* attention in FlashAttention-3's order (bench/gpu/kernels.tj.in
     * attention_fa3, _causal_fa3, _gqa_fa3): the first key block's softmax
     * before the loop, then S(j + 1) and P(j) V(j) issued back to back, each
     * group waited for where first read (S(j + 1) with P V in flight,
     * lower/wgmma.c), P carried in bf16, the last block's P V after the
     * loop; one and two warpgroups, partial key blocks, the warpgroups'
     * turns (`turns`); the causal kernel's loop bound per program, G < H
     * heads; one block further ahead (attention_ahead: both products under
     * the softmax, waited for at the yield), S < 2 BN too; over packed rows
     * by TMA rings with and without the turns (at 128 x 64 with a slot more
     * for them, lower/ring.c turn_slots) */
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_fa3", "BM=64,BN=64,stages=2", "B=1,H=2,S=200,D=64", "scale=0.125", NULL, 0, 2e-2, 2e-2, 0, 0,
      4}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_fa3", "BM=128,BN=64,stages=3,fastmath=1", "B=2,H=2,S=200,D=128", "scale=0.0884", NULL, 0,
      2e-2, 2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_fa3", "BM=128,BN=128,stages=2,turns=1", "B=1,H=2,S=300,D=128", "scale=0.0884", NULL, 0, 2e-2,
      2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_causal_fa3", "BM=128,BN=64,stages=2", "B=1,H=2,S=300,D=128", "scale=0.0884", NULL, 0, 2e-2,
      2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_causal_fa3", "BM=64,BN=32,stages=3", "B=1,H=2,S=200,D=64", "scale=0.125", NULL, 0, 2e-2, 2e-2,
      0, 0, 4}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_gqa_fa3", "BM=128,BN=64,stages=2", "B=1,H=4,G=2,S=200,D=128", "scale=0.0884", NULL, 0, 2e-2,
      2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_ahead", "BM=128,BN=64,stages=2,fastmath=1", "B=1,H=2,S=300,D=128", "scale=0.0884", NULL, 0,
      2e-2, 2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_ahead", "BM=64,BN=32,stages=3", "B=1,H=2,S=70,D=64", "scale=0.125", NULL, 0, 2e-2, 2e-2, 0,
      0, 4}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_causal_ahead", "BM=128,BN=64,stages=2,fastmath=1", "B=1,H=2,S=300,D=128", "scale=0.0884",
      NULL, 0, 2e-2, 2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_rows_ahead", "BM=128,BN=64,stages=3,turns=1", "R=600,D=128", "scale=0.0884,S=300", NULL, 0,
      2e-2, 2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_rows_ahead", "BM=128,BN=64,stages=2", "R=600,D=128", "scale=0.0884,S=300", NULL, 0, 2e-2,
      2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_rows_fa3", "BM=128,BN=64,stages=2,turns=0", "R=400,D=64", "scale=0.125,S=200", NULL, 0, 2e-2,
      2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_rows_fa3", "BM=128,BN=64,stages=2,turns=1", "R=600,D=128", "scale=0.0884,S=300", NULL, 0,
      2e-2, 2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "attention_rows_fa3", "BM=128,BN=128,stages=2,turns=1", "R=600,D=128", "scale=0.0884,S=300", NULL, 0,
      2e-2, 2e-2, 0, 0, 8}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "matmul_splitk_last", "BM=64,BN=256,BK=64,stages=4", "M=72,N=272,K=1040,S=3,G=8", "", "F=0:1,T=0:1", 0,
      1e-2, 1e-2, 0, 0, 4}},
    {"bench/gpu/kernels.tj.in",
     {NULL, "matmul_splitk_last", "BM=128,BN=128,BK=64,stages=3", "M=200,N=144,K=176,S=4,G=4", "", "F=0:1,T=0:1", 0,
      1e-2, 1e-2, 0, 0, 4}},
};

static lc_opts opts_of(const gpu_case *g)
{
    lc_opts o = lc_defaults();
    o.defines = g->defines;
    o.shapes = g->shapes;
    o.scalars = g->scalars;
    o.int_range = g->int_range;
    o.specials = g->specials;
    if (g->rtol)
        o.rtol = g->rtol;
    if (g->atol)
        o.atol = g->atol;
    if (g->hi > g->lo) {
        o.lo = g->lo;
        o.hi = g->hi;
    }
    return o;
}

/* Device copies of the arguments (tensors), pristine contents. */
static int to_device(tj_cuda *cu, lc_run *run, tj_arg *dargs, tj_rt_error *err)
{
    for (uint32_t p = 0; p < run->nparams; p++) {
        dargs[p] = run->simt[p];
        if (!run->params[p].rank)
            continue;
        dargs[p].tensor.data = tj_cuda_malloc(cu, run->bytes[p], err);
        if (!dargs[p].tensor.data || tj_cuda_memcpy_htod(cu, dargs[p].tensor.data, run->pristine[p], run->bytes[p], err))
            return 1;
    }
    return 0;
}

static void free_device(tj_cuda *cu, lc_run *run, tj_arg *dargs)
{
    for (uint32_t p = 0; p < run->nparams; p++)
        if (run->params[p].rank)
            tj_cuda_free(cu, dargs[p].tensor.data, NULL);
}

static int run_case(tj_jit *j, const gpu_case *g, int warps)
{
    lc_opts o = opts_of(g);
    lc_run run = {.c = tj_ctx_new()};
    tj_binding defs[LC_MAX_BIND + 1], dims[LC_MAX_BIND], *config;
    uint32_t nconfig;
    tj_rt_error err = {{0}};
    tj_arg dargs[LC_MAX_ARGS];
    tj_cuda *cu = tj_jit_cuda(j);
    tj_program *prog = tj_parse_program(run.c, "test.tj", g->src, strlen(g->src));
    int ki = prog ? tj_program_find_kernel(prog, g->kernel) : -1, ok = 0;
    if (ki < 0)
        goto done;
    run.nparams = tj_kernel_params(prog, ki, &run.params);
    lc_make_args(&run, &o);
    lc_reset(&run);
    uint32_t ndefs = lc_bindings(run.c, o.defines, defs, LC_MAX_BIND);
    uint32_t ndims = lc_bindings(run.c, o.shapes, dims, LC_MAX_BIND);
    defs[ndefs++] = (tj_binding){"warps", warps};
    tj_kernel *k = tj_select_config(run.c, prog, ki, defs, ndefs, dims, ndims, &config, &nconfig)
                       ? NULL
                       : tj_build_kernel(run.c, prog, ki, config, nconfig, dims, ndims);
    if (!k || tj_interp_run(k, run.ref, run.nparams)) {
        printf("%s", tj_diag_render(run.c));
        goto done;
    }
    if (to_device(cu, &run, dargs, &err))
        goto fail;
    tj_compile_request req = {.file = "test.tj", .source = g->src, .len = strlen(g->src), .kernel = g->kernel,
                              .params = defs, .nparams = ndefs, .args = dargs, .nargs = run.nparams};
    tj_fn *f = tj_jit_compile(j, &req, &err);
    if (!f || tj_fn_launch(f, dargs, run.nparams, NULL, &err) || tj_cuda_synchronize(cu, &err))
        goto fail;
    for (uint32_t p = 0; p < run.nparams; p++)
        if (run.params[p].rank && tj_cuda_memcpy_dtoh(cu, run.simt[p].tensor.data, dargs[p].tensor.data,
                                                      run.bytes[p], &err))
            goto fail;
    char what[128];
    snprintf(what, sizeof what, "%s warps=%d (gpu)", g->kernel, warps);
    ok = lc_compare(&run, &o, what);
    goto release;
fail:
    printf("%s\n", err.msg);
release:
    free_device(cu, &run, dargs);
done:
    lc_free(&run);
    tj_ctx_free(run.c);
    return ok;
}

/* ---- bandwidth of memory-bound kernels ---- */

static const char *const COPY_SCALE = "kernel scale(x: f32[N], y: f32[N])\n"
                                      "    grid (cdiv(N, BLOCK))\n"
                                      "    const BLOCK = 2048\n"
                                      "{\n"
                                      "    i = program_id(0) * BLOCK\n"
                                      "    store(y[i:i+BLOCK], load(x[i:i+BLOCK]) * 2.0)\n"
                                      "}\n";

static void bandwidth(tj_jit *j, const char *src, const char *kernel, const char *defines, int rank,
                      const int64_t *shape, double bytes_per_elem)
{
    tj_cuda *cu = tj_jit_cuda(j);
    tj_rt_error err = {{0}};
    tj_ctx *c = tj_ctx_new();
    tj_binding defs[8];
    uint32_t ndefs = lc_bindings(c, defines, defs, 8);
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)shape[d];
    tj_arg args[2];
    for (int a = 0; a < 2; a++) {
        args[a] = (tj_arg){.is_tensor = 1, .tensor = {.dtype = TJ_DT_F32, .rank = rank}};
        for (int d = rank - 1, s = 1; d >= 0; d--) {
            args[a].tensor.shape[d] = shape[d];
            args[a].tensor.strides[d] = s;
            s *= (int)shape[d];
        }
        args[a].tensor.data = tj_cuda_malloc(cu, n * 4, &err);
        if (args[a].tensor.data)
            tj_cuda_memset(cu, args[a].tensor.data, 0, n * 4, &err);
    }
    tj_compile_request req = {.source = src, .len = strlen(src), .kernel = kernel, .params = defs,
                              .nparams = ndefs, .args = args, .nargs = 2};
    tj_fn *f = args[0].tensor.data && args[1].tensor.data ? tj_jit_compile(j, &req, &err) : NULL;
    void *e0 = tj_cuda_event_create(cu, &err), *e1 = tj_cuda_event_create(cu, &err);
    float ms = 0;
    int iters = 20, bad = !f;
    for (int i = 0; !bad && i < 3; i++)
        bad = tj_fn_launch(f, args, 2, NULL, &err);
    bad = bad || tj_cuda_event_record(cu, e0, NULL, &err);
    for (int i = 0; !bad && i < iters; i++)
        bad = tj_fn_launch(f, args, 2, NULL, &err);
    bad = bad || tj_cuda_event_record(cu, e1, NULL, &err) || tj_cuda_event_synchronize(cu, e1, &err) ||
          tj_cuda_event_elapsed(cu, e0, e1, &ms, &err);
    if (bad)
        printf("bandwidth %s: %s\n", kernel, err.msg);
    else
        printf("bandwidth %s %s: %.3f ms, %.2f TB/s (smem %u B, %u threads)\n", kernel, defines, ms / iters,
               bytes_per_elem * (double)n / (ms / iters * 1e-3) / 1e12, tj_fn_smem_bytes(f), tj_fn_threads(f));
    tj_cuda_event_destroy(cu, e0, NULL);
    tj_cuda_event_destroy(cu, e1, NULL);
    for (int a = 0; a < 2; a++)
        tj_cuda_free(cu, args[a].tensor.data, NULL);
    tj_ctx_free(c);
}

/* g with each warps from its least to 8, where `only` (argv[1]: none
 * runs every case and the bandwidths) is in its defines or its kernel's
 * name; the number of failures. */
static int run_warps(tj_jit *j, const gpu_case *g, const char *only)
{
    int failed = 0;
    if (only && !strstr(g->defines, only) && !strstr(g->kernel, only))
        return 0;
    for (int warps = g->min_warps ? g->min_warps : 1; warps <= 8; warps *= 2) {
        int ok = g->src && run_case(j, g, warps);
        printf("%s %s %s warps=%d\n", ok ? "PASS" : "FAIL", g->kernel, g->shapes, warps);
        failed += !ok;
    }
    return failed;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CUDA, 0, &err);
    if (!j) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        failed += run_warps(j, &cases[i], only);
    for (size_t i = 0; i < sizeof file_cases / sizeof file_cases[0]; i++) {
        gpu_case g = file_cases[i].g;
        char *text = tu_source_file_f32(file_cases[i].file);
        g.src = text;
        failed += run_warps(j, &g, only);
        free(text);
    }
    int64_t vec[] = {1 << 26}, sq[] = {8192, 8192}, wide[] = {65536, 1024};
    if (!only) {
        bandwidth(j, COPY_SCALE, "scale", "warps=4", 1, vec, 8);
        bandwidth(j, SOFTMAX, "softmax", "BLOCK=8192,warps=16", 2, sq, 8);
        bandwidth(j, SOFTMAX, "softmax", "BLOCK=1024,warps=4", 2, wide, 8);
    }
    tj_jit_close(j);
    printf("%d failures\n", failed);
    return failed ? 1 : 0;
}
