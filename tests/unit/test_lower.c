/* The lowering Tile IR -> SIMT IR, checked differentially: every kernel
 * runs in the reference interpreter and, lowered, in the SIMT interpreter,
 * with 1, 4 and 8 warps, on random data with partial tiles. */
#include <criterion/criterion.h>

#include "lower_check.h"
#include "lower_kernels.h"

/* ---- elementwise and memory ------------------------------------------------ */

Test(lower, elementwise_partial_tiles)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=1000";
    cr_assert(lc_check_tj(EW, "ew", &o));
    o.facts = 0;
    cr_assert(lc_check_tj(EW, "ew", &o));
}

Test(lower, elementwise_vector_accesses)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=4096";
    cr_assert(lc_check_tj(EW, "ew", &o));
}

Test(lower, vector_add)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=3000";
    cr_assert(lc_check_tj(ADD, "add", &o));
    o.shapes = "N=8192";
    cr_assert(lc_check_tj(ADD, "add", &o));
    o.defines = "BLOCK=64"; /* fewer elements than threads: replicas store once */
    o.shapes = "N=200";
    cr_assert(lc_check_tj(ADD, "add", &o));
}

Test(lower, masks_and_other)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=1024";
    o.scalars = "n=900";
    cr_assert(lc_check_tj(MASKED, "masked", &o));
    o.shapes = "N=333";
    cr_assert(lc_check_tj(MASKED, "masked", &o));
}

Test(lower, gather_rows)
{
    lc_opts o = lc_defaults();
    o.shapes = "V=50,D=16,N=70";
    o.int_range = "idx=-3:53"; /* some out of range: they read 0 */
    cr_assert(lc_check_tj(EMBED, "embed", &o));
    o.shapes = "V=50,D=20,N=64";
    cr_assert(lc_check_tj(EMBED, "embed", &o));
}

Test(lower, scatter_last_wins_and_atomics)
{
    lc_opts o = lc_defaults();
    o.shapes = "V=10,D=16,N=32"; /* one program: duplicates resolve in row-major order */
    o.int_range = "idx=-1:11";
    o.lo = 0;
    o.hi = 4;
    o.rtol = 1e-5;
    cr_assert(lc_check_tj(SCATTER, "scat", &o));
    o.shapes = "V=40,D=8,N=20";
    cr_assert(lc_check_tj(SCATTER, "scat", &o));
}

Test(lower, masked_scatter_with_duplicates)
{
    lc_opts o = lc_defaults();
    o.shapes = "V=4,D=8,N=16"; /* 16 rows into 4: every target repeats; the mask decides who is last */
    o.int_range = "idx=0:4";
    cr_assert(lc_check_tj(MSCATTER, "mscat", &o));
    o.seed = 7;
    cr_assert(lc_check_tj(MSCATTER, "mscat", &o));
}

/* ---- reductions ------------------------------------------------------------------ */

Test(lower, softmax)
{
    lc_opts o = lc_defaults();
    o.defines = "BLOCK=256";
    o.shapes = "M=5,N=200";
    cr_assert(lc_check_tj(SOFTMAX, "softmax", &o));
    o.defines = "BLOCK=1024";
    o.shapes = "M=3,N=1024";
    cr_assert(lc_check_tj(SOFTMAX, "softmax", &o));
}

Test(lower, reductions_along_rows)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=37,N=64";
    o.rtol = 1e-4;
    o.atol = 1e-4;
    cr_assert(lc_check_tj(ROWS, "rows", &o));
    o.shapes = "M=16,N=50";
    o.specials = 1;
    cr_assert(lc_check_tj(ROWS, "rows", &o));
}

Test(lower, reductions_along_columns)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=64,N=32";
    cr_assert(lc_check_tj(COLS, "cols", &o));
    o.shapes = "M=50,N=20";
    o.specials = 1;
    cr_assert(lc_check_tj(COLS, "cols", &o));
}

Test(lower, reductions_to_scalars)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=8,N=16";
    o.ilo = -5; /* many ties: the first index wins */
    o.ihi = 5;
    cr_assert(lc_check_tj(WHOLE, "whole", &o));
    o.shapes = "M=5,N=11";
    cr_assert(lc_check_tj(WHOLE, "whole", &o));
}

/* Tiles every warp holds whole (32 elements, 4 x 8; 16 and 2 x 4 with
 * replica lanes too) at 1, 4 and 8 warps: reductions and scans in each
 * warp's copy, the owners within a warp counting once. */
Test(lower, reductions_and_scans_of_tiles_a_warp_holds)
{
    lc_opts o = lc_defaults();
    o.ilo = -5; /* ties: argmax and argmin keep the first */
    o.ihi = 5;
    o.shapes = "N=32,M=4,K=8";
    cr_assert(lc_check_tj(WARP_TILES, "small", &o));
    o.shapes = "N=27,M=3,K=7"; /* masked tails */
    cr_assert(lc_check_tj(WARP_TILES, "small", &o));
    o.defines = "BN=16,BM=2,BK=4";
    o.shapes = "N=16,M=2,K=4";
    cr_assert(lc_check_tj(WARP_TILES, "small", &o));
    o.specials = 1;
    o.defines = "BN=8,BM=1,BK=8";
    o.shapes = "N=5,M=1,K=8";
    cr_assert(lc_check_tj(WARP_TILES, "small", &o));
}

/* ---- scans and sort ----------------------------------------------------------------- */

Test(lower, scan_with_combine_region)
{
    lc_opts o = lc_defaults();
    o.lo = 0.5;
    o.hi = 1.0;
    o.rtol = 1e-3;
    o.shapes = "R=3,L=1000";
    cr_assert(lc_check_tj(RECURRENCE, "recurrence", &o));
    o.defines = "BL=100";
    o.shapes = "R=2,L=100";
    cr_assert(lc_check_tj(RECURRENCE, "recurrence", &o));
}

Test(lower, cumsum_across_warps)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=64,N=16";
    cr_assert(lc_check_tj(CUMSUM2, "cum", &o));
    o.defines = "BM=48,BN=12"; /* extents that are not powers of two */
    o.shapes = "M=48,N=12";
    cr_assert(lc_check_tj(CUMSUM2, "cum", &o));
}

Test(lower, sort_stable_with_values)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=3,N=64";
    o.specials = 1; /* NaN, inf, -0 and ties */
    cr_assert(lc_check_tj(SORT, "sorter", &o));
    o.defines = "BN=50";
    o.shapes = "M=2,N=50";
    cr_assert(lc_check_tj(SORT, "sorter", &o));
}

Test(lower, sort_rows_in_registers_lanes_and_warps)
{
    lc_opts o = lc_defaults();
    o.defines = "BLOCK=1024";
    o.shapes = "M=3,N=1000";
    o.specials = 1;
    cr_assert(lc_check_tj(SORTROWS, "sort_rows", &o));
    o.defines = "BLOCK=256";
    o.shapes = "M=2,N=256";
    o.int_range = "I=0:1000";
    cr_assert(lc_check_tj(SORTROWS, "sort_rows", &o));
}

/* A sort along its last axis takes the layout whose register bits are the
 * line's lowest (lower/assign_layouts.c, sort_layout). 256 u32 keys on one
 * warp, 8 consecutive a thread: the stages at distances 1, 2 and 4 stay in
 * registers, those at 8 .. 128 (5 + 4 + 3 + 2 + 1 = 15 stages) cross lanes,
 * two shfl_xor a register (key and position): 15 x 8 x 2 = 240. The load's
 * layout (4 consecutive, then runs 128 apart) puts distances 4 .. 64 on
 * lanes: 20 stages, 320. */
Test(lower, sort_keeps_the_low_position_bits_in_registers)
{
    static const char *const SRC = "kernel s(X: u32[N], Y: u32[N]) grid (1)\n"
                                   "    tune warps in [1]\n"
                                   "{\n"
                                   "    store(Y[0:256], sort(load(X[0:256])))\n"
                                   "}\n";
    lc_opts o = lc_defaults();
    o.defines = "warps=1";
    o.shapes = "N=256";
    o.int_range = "X=0:50"; /* equal keys: the positions break the ties */
    cr_assert(lc_check_tj(SRC, "s", &o));
    tj_ctx *c = tj_ctx_new();
    tj_binding defs[1], dims[1];
    uint32_t nd = lc_bindings(c, "warps=1", defs, 1), ns = lc_bindings(c, "N=256", dims, 1);
    tj_program *p = tj_parse_program(c, "s.tj", SRC, strlen(SRC));
    tj_kernel *k = p ? tj_build_kernel(c, p, 0, defs, nd, dims, ns) : NULL;
    tj_pipeline_options po = {.verify = 1};
    tj_kernel *simt = k ? tj_compile_simt(k, &po) : NULL;
    cr_assert(simt, "%s", tj_diag_render(c));
    cr_expect_eq(lc_count_op(simt, TJ_OP_SHFL_XOR), 240, "%d shfl_xor", lc_count_op(simt, TJ_OP_SHFL_XOR));
    tj_ctx_free(c);
}

Test(lower, sort_along_each_axis)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=16,N=32";
    o.ilo = -10;
    o.ihi = 10;
    cr_assert(lc_check_tj(SORT2D, "sort2", &o));
}

/* ---- dot and loops ---------------------------------------------------------------------- */

Test(lower, matmul_bf16_loop)
{
    lc_opts o = lc_defaults();
    o.defines = "BM=64,BN=64,BK=32,stages=2";
    o.shapes = "M=70,N=64,K=80";
    o.warps[0] = 4;
    o.warps[1] = 8;
    o.warps[2] = 0;
    cr_assert(lc_check_tj(MATMUL, "matmul", &o));
}

/* Copy rings (lower/ring.c): 2, 3 and 4 slots, partial tiles on every axis
 * (zero-filled copies), a row stride that is not a multiple of 16 bytes (no
 * ring: K = 84), and an operand with `other = 1.0` (registers) beside one
 * in a ring. */
Test(lower, matmul_copy_rings)
{
    static const char *const defines[] = {"BM=64,BN=64,BK=32,stages=3", "BM=32,BN=64,BK=16,stages=4"};
    static const char *const shapes[] = {"M=70,N=72,K=88", "M=64,N=64,K=84"};
    lc_opts o = lc_defaults();
    o.warps[0] = 4;
    o.warps[1] = 0;
    for (int d = 0; d < 2; d++) {
        for (int s = 0; s < 2; s++) {
            o.defines = defines[d];
            o.shapes = shapes[s];
            cr_assert(lc_check_tj(MATMUL, "matmul", &o), "%s %s", defines[d], shapes[s]);
        }
    }
    o.defines = "stages=3";
    o.shapes = "M=40,N=64,K=72";
    cr_assert(lc_check_tj(MM_OTHER, "mm_other", &o));
    static const char *const nested[] = {"stages=2", "stages=3", "stages=4"};
    static const char *const ks[] = {"M=40,N=64,K=160", "M=32,N=32,K=24", "M=32,N=64,K=8"}; /* K <= 16: no iteration */
    for (int d = 0; d < 3; d++) {
        o.defines = nested[d];
        o.shapes = ks[d];
        cr_assert(lc_check_tj(MM_NESTED, "mm_nested", &o), "%s %s", nested[d], ks[d]);
    }
}

/* Found by the differential fuzzer (tests/fuzz/fuzz_lower.c): a row-broadcast
 * accumulator was taken for a splat where each thread's registers lie in one
 * row, and filled every fragment with the lane's own row value. */
Test(lower, dot_broadcast_accumulators)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=40";
    o.rtol = o.atol = 2e-2; /* tf32, bf16 products */
    cr_assert(lc_check_tj(DOT_ACC, "dot_acc", &o));
}

Test(lower, matmul_f32_partial_tiles)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=20,K=19";
    cr_assert(lc_check_tj(MM32, "mm", &o));      /* the matrix atom */
    cr_assert(lc_check_tj(MM32_IEEE, "mm", &o)); /* FMAs */
    o.shapes = "M=40,N=48,K=40";
    cr_assert(lc_check_tj(MMT, "mmt", &o)); /* b = trans(x): role bt */
}

/* The FMA product from ring slots (whole tiles) or staged tiles (partial
 * ones), by vector loads, in the register block (4 x 8 a thread at 4
 * warps, 4 x 4 at 8). The interpreter rounds each product and sum apart
 * (no FMA), hence the tolerance; test_array_tier checks that two
 * lowerings give the same bits. */
Test(lower, matmul_f32_fma_block)
{
    lc_opts o = lc_defaults();
    o.warps[0] = 4;
    o.warps[1] = 8;
    o.warps[2] = 0;
    o.shapes = "M=128,N=128,K=80";
    cr_assert(lc_check_tj(MM_FMA_BLOCK, "mm", &o));
    o.shapes = "M=70,N=72,K=40";
    cr_assert(lc_check_tj(MM_FMA_BLOCK, "mm", &o));
}

Test(lower, attention)
{
    lc_opts o = lc_defaults();
    o.shapes = "B=1,H=2,S=70,D=16";
    o.scalars = "scale=0.25";
    o.warps[0] = 4;
    o.warps[1] = 0;
    static const char *const defines[] = {"BM=64,BN=32,stages=1", "BM=64,BN=32,stages=2", "BM=32,BN=16,stages=3"};
    for (int d = 0; d < 3; d++) { /* stages > 1: K and V in copy rings */
        o.defines = defines[d];
        cr_assert(lc_check_tj(ATTENTION, "attention", &o), "%s", defines[d]);
    }
}

/* Pinned operands of FMA products (lower/dot.c, lw_mma_pin_loop): the
 * query block staged once before the loop; p in a region of its own with
 * copy rings (stages 2, 3: no barrier before its stores), both products in
 * regions without (stages 1); a layout conversion of the accumulator
 * beside the regions (BE = 16); a single product alternating between two
 * regions (a matmul without rings); a fixed b. Partial tiles of queries and
 * keys. tests/lit/lower/pin_fma.tj checks where the barriers go. */
Test(lower, fma_pinned_operands)
{
    static const char *const defines[] = {"BM=64,BN=64,BD=64,BE=64,stages=2", "BM=64,BN=64,BD=64,BE=64,stages=1",
                                          "BM=32,BN=32,BD=16,BE=16,stages=3", "BM=32,BN=32,BD=16,BE=16,stages=1"};
    lc_opts o = lc_defaults();
    o.warps[1] = 0;
    for (int d = 0; d < 4; d++) {
        o.defines = defines[d];
        o.warps[0] = d < 2 ? 8 : 4;
        o.shapes = d < 2 ? "M=70,N=100,D=64,E=64" : "M=40,N=72,D=16,E=16";
        cr_assert(lc_check_tj(ATTENTION_F32, "att", &o), "%s", defines[d]);
    }
    o.warps[0] = 4;
    o.defines = "stages=1";
    o.shapes = "M=70,N=72,K=40";
    cr_assert(lc_check_tj(MM_FMA_BLOCK, "mm", &o));
    static const char *const stages[] = {"stages=1", "stages=2"};
    for (int d = 0; d < 2; d++) {
        o.defines = stages[d];
        o.shapes = "S=5,M=40,K=16,N=32";
        cr_assert(lc_check_tj(FIXED_B, "fixed_b", &o), "%s", stages[d]);
    }
}

Test(lower, prefetch_in_nested_loops)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=5,N=70";
    o.atol = 1e-4;
    cr_assert(lc_check_tj(NESTLOAD, "nestload", &o));
}

Test(lower, loops_and_branches)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=100";
    o.scalars = "flag=2";
    cr_assert(lc_check_tj(BRANCH, "branch", &o));
}

/* ---- shapes ----------------------------------------------------------------------------------- */

Test(lower, broadcast_reshape_permute)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=16,N=32";
    o.atol = 1e-4;
    cr_assert(lc_check_tj(SHAPES, "shapes", &o));
}

/* ---- more dtypes and access kinds --------------------------------------------------------------- */

Test(lower, two_gathers_bool_i8_scalars_atomics)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=6,N=40,V=12";
    o.int_range = "I=-1:7,J=-1:11,C8=-100:100";
    cr_assert(lc_check_tj(MISC, "misc", &o));
    o.facts = 0;
    cr_assert(lc_check_tj(MISC, "misc", &o));
}

Test(lower, batched_dot_and_permute)
{
    lc_opts o = lc_defaults();
    o.shapes = "Bt=2,M=16,K=8,N=32";
    cr_assert(lc_check_tj(BDOT, "bdot", &o));
    o.shapes = "Bt=1,M=10,K=5,N=30";
    cr_assert(lc_check_tj(BDOT, "bdot", &o));
}

Test(lower, nested_loops_with_branches)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=150";
    o.scalars = "n=3";
    cr_assert(lc_check_tj(NEST, "nest", &o));
}

/* Scans and sorts along the first axis, arg reductions of the flattened
 * tile (axis -1), written as IR. */
static const char *const FLAT_IR =
    "kernel @flat(X: f32[M, N], C: f32[M, N], S: f32[M, N], A: i32[2]) {\n"
    "grid:\n"
    "  %0 = const 1 : i32\n"
    "  yield %0\n"
    "body:\n"
    "  %1 = param {index = 0} : tensor<f32, 2>\n"
    "  %2 = const 0 : i32\n"
    "  %3 = view %1, %2, %2 {axes = [40, 24]} : view<f32[40, 24]>\n"
    "  %4 = load %3, _, _ : f32[40, 24]\n"
    "  %5 = cumsum %4 {axis = 0} : f32[40, 24]\n"
    "  %6 = param {index = 1} : tensor<f32, 2>\n"
    "  %7 = view %6, %2, %2 {axes = [40, 24]} : view<f32[40, 24]>\n"
    "  store %7, %5, _\n"
    "  %8 = sort %4 {axis = 0, descending = true} : f32[40, 24]\n"
    "  %9 = param {index = 2} : tensor<f32, 2>\n"
    "  %10 = view %9, %2, %2 {axes = [40, 24]} : view<f32[40, 24]>\n"
    "  store %10, %8, _\n"
    "  %11 = argmin %4 {axis = -1} : i32\n"
    "  %12 = param {index = 3} : tensor<i32, 1>\n"
    "  %13 = view %12, %2 {axes = [index]} : view<i32[]>\n"
    "  store %13, %11, _\n"
    "  yield\n"
    "}\n";

Test(lower, first_axis_scan_sort_flat_argmin)
{
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=24";
    o.specials = 1;
    o.atol = 1e-4;
    cr_assert(lc_check_ir(FLAT_IR, &o));
}

/* A kernel specialized on N: the bounds checks are gone, so out-of-range
 * programs would fault; in range the results must still agree. */
static const char *const SPEC_IR =
    "kernel @add(x: f32[N], y: f32[N], out: f32[N]) spec(N = 4096) {\n"
    "grid:\n"
    "  %0 = param {index = 0} : tensor<f32, 1>\n"
    "  %1 = dim %0 {axis = 0} : i32\n"
    "  %2 = const 1023 : i32\n"
    "  %3 = add %1, %2 : i32\n"
    "  %4 = const 1024 : i32\n"
    "  %5 = div %3, %4 : i32\n"
    "  yield %5\n"
    "body:\n"
    "  %6 = program_id {axis = 0} : i32\n"
    "  %7 = const 1024 : i32\n"
    "  %8 = mul %6, %7 : i32\n"
    "  %9 = param {index = 0} : tensor<f32, 1>\n"
    "  %10 = view %9, %8 {axes = [1024]} : view<f32[1024]>\n"
    "  %11 = load %10, _, _ : f32[1024]\n"
    "  %12 = param {index = 1} : tensor<f32, 1>\n"
    "  %13 = view %12, %8 {axes = [1024]} : view<f32[1024]>\n"
    "  %14 = load %13, _, _ : f32[1024]\n"
    "  %15 = add %11, %14 : f32[1024]\n"
    "  %16 = param {index = 2} : tensor<f32, 1>\n"
    "  %17 = view %16, %8 {axes = [1024]} : view<f32[1024]>\n"
    "  store %17, %15, _\n"
    "  yield\n"
    "}\n";

Test(lower, specialized_without_bounds_checks)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=4096";
    cr_assert(lc_check_ir(SPEC_IR, &o));
}
