/* dot lowered for sm_90a's wgmma (lower/wgmma.c), checked differentially:
 * the SIMT interpreter decodes wgmma's shared-memory descriptors and
 * swizzles as the PTX ISA defines them (interp/simt_wgmma.c), so the
 * lowering's encoding, the permuted a rows and the fragment layout of the
 * accumulators are checked against the reference interpreter without a
 * GPU. 4 and 8 warps (one and two warpgroups), copy rings (by TMA and
 * mbarriers, and by cp.async) and staged operands, bf16, f16, tf32 and b =
 * trans(x), partial tiles. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "lower_check.h"
#include "lower_kernels.h"
#include "ptxas_util.h"
#include "source_file.h"

static lc_opts wg_opts(const char *defines, const char *shapes) { return lc_wgmma_opts(defines, shapes); }

/* One and two warpgroups; 128-byte (BK = 64) and 64-byte (BK = 32)
 * swizzles on a; b 64 to 256 columns (one to four swizzle blocks); rings
 * of 2 and 3 tiles; a partial last tile on every axis. By TMA every
 * group stays in flight across iterations (wait_group 1; a slot refilled
 * after its release); by cp.async only 128 x 256 x 64 at stages 3, which
 * takes the slot more (with both operands in rings: N = 256 whole).
 * Rows of 144 and 176 elements are 16-element multiples: the rings land
 * by TMA (and by cp.async where it is turned off); rows of 136 are not:
 * cp.async. */
Test(lower_wgmma, matmul_rings)
{
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3", "BM=128,BN=64,BK=32,stages=2",
                                          "BM=128,BN=256,BK=64,stages=2", "BM=128,BN=256,BK=64,stages=3"};
    static const char *const shapes[] = {"M=200,N=144,K=176", "M=200,N=144,K=176", "M=200,N=144,K=176",
                                         "M=200,N=256,K=160"};
    for (int d = 0; d < 4; d++)
        for (int no_tma = 0; no_tma < 2; no_tma++) {
            lc_opts o = wg_opts(defines[d], shapes[d]);
            o.no_tma = no_tma;
            cr_assert(lc_check_tj(MATMUL, "matmul", &o), "%s%s", defines[d], no_tma ? " without TMA" : "");
        }
    for (int d = 0; d < 3; d++) {
        lc_opts o = wg_opts(defines[d], "M=200,N=136,K=160");
        cr_assert(lc_check_tj(MATMUL, "matmul", &o), "%s", defines[d]);
    }
}

/* M a multiple of 16 (whole 8-row blocks): a's granules come two a box
 * through the 3-D tensor map, g and g + 4 (one warpgroup, one or two
 * 64-row blocks) or g and g + 8 (two); the last tile is partial, so some
 * boxes bring one granule and zeros. */
Test(lower_wgmma, matmul_granule_pairs)
{
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3", "BM=128,BN=64,BK=32,stages=2",
                                          "BM=64,BN=128,BK=64,stages=4"};
    for (int d = 0; d < 3; d++) {
        lc_opts o = wg_opts(defines[d], "M=208,N=144,K=176");
        cr_assert(lc_check_tj(MATMUL, "matmul", &o), "%s", defines[d]);
    }
}

/* A long loop (K = 1040: 17 iterations) takes each slot's full and empty
 * mbarriers through several phases: 3 slots, the group in flight into the
 * next iteration, whose release is a slot behind and comes before the
 * refill of its slot (128 x 128 and 128 x 256 at stages 3). */
Test(lower_wgmma, tma_phases_wrap)
{
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3", "BM=128,BN=256,BK=64,stages=3"};
    static const char *const shapes[] = {"M=136,N=144,K=1040", "M=136,N=256,K=1040"};
    for (int d = 0; d < 2; d++) {
        lc_opts o = wg_opts(defines[d], shapes[d]);
        o.warps[0] = 8;
        o.warps[1] = 0;
        cr_assert(lc_check_tj(MATMUL, "matmul", &o), "%s", defines[d]);
    }
}

/* Deep rings (stages 6 and 8: 5 and 7 tiles in flight), by TMA and by
 * cp_async, one and two warpgroups, through more than two rounds of their
 * slots (K = 1040: 17 iterations); by TMA each group stays in flight with
 * S = d + 1 slots (its refill after the release). */
Test(lower_wgmma, deep_rings)
{
    static const char *const defines[] = {"BM=64,BN=64,BK=64,stages=8", "BM=128,BN=128,BK=64,stages=6",
                                          "BM=128,BN=64,BK=64,stages=8"};
    static const int warps[] = {4, 8, 8};
    for (int d = 0; d < 3; d++)
        for (int no_tma = 0; no_tma < 2; no_tma++) {
            lc_opts o = wg_opts(defines[d], "M=136,N=144,K=1040");
            o.warps[0] = warps[d];
            o.warps[1] = 0;
            o.no_tma = no_tma;
            cr_assert(lc_check_tj(MATMUL, "matmul", &o), "%s%s", defines[d], no_tma ? " without TMA" : "");
        }
}

/* K = 0: the loop runs no iteration, so no TMA tile is in range and none
 * is issued (each awaited tile is one the loop reads): zeros out. */
Test(lower_wgmma, empty_k_issues_no_copy)
{
    lc_opts o = wg_opts("BM=128,BN=128,BK=64,stages=3", "M=130,N=144,K=0");
    o.warps[1] = 0;
    cr_assert(lc_check_tj(MATMUL, "matmul", &o));
}

/* Four warpgroups (16 warps): a's granules rotated over 5 bits. */
Test(lower_wgmma, four_warpgroups)
{
    lc_opts o = wg_opts("BM=256,BN=128,BK=64,stages=3", "M=260,N=136,K=160");
    o.warps[0] = 16;
    o.warps[1] = 0;
    cr_assert(lc_check_tj(MATMUL, "matmul", &o));
}

/* stages = 1: no ring, both operands staged with st_shared every
 * iteration; warps 4 with BM = 128: two 64-row blocks per warpgroup. */
Test(lower_wgmma, matmul_staged)
{
    lc_opts o = wg_opts("BM=128,BN=64,BK=64,stages=1", "M=130,N=64,K=128");
    cr_assert(lc_check_tj(MATMUL, "matmul", &o));
}

/* tf32 and f16 with b = trans(x): K-major b (the only form tf32 has). */
Test(lower_wgmma, transposed_b)
{
    static const char *const src = MMT_SRC("BM = 128, BN = 32, BK = 32");
    lc_opts o = wg_opts(NULL, "M=140,N=40,K=96");
    cr_assert(lc_check_tj(src, "mmt", &o));
}

/* Flash attention on wgmma: S = Q K^T with Q staged once before the loop
 * and K from its ring (or staged), O += P V with P as the a operand from
 * registers (the accumulator layout of S is that of wgmma's register a
 * fragments of the same rows) and V from its ring; the rescaled
 * accumulator is the second product's c. One warpgroup with one and two
 * 64-row blocks, two warpgroups; head dims 16 (32-byte swizzles), 64
 * (128-byte) and 256 (four 128-byte column blocks, m64n256 for P V); a
 * partial last key block. */
Test(lower_wgmma, attention)
{
    static const char *const defines[] = {"BM=64,BN=32,stages=1", "BM=64,BN=64,stages=2", "BM=128,BN=32,stages=3",
                                          "BM=128,BN=64,stages=2"};
    static const int warps[] = {4, 4, 4, 8};
    for (int d = 0; d < 4; d++)
        for (int dim = 16; dim <= 256; dim *= 4) {
            char shapes[64];
            snprintf(shapes, sizeof shapes, "B=1,H=2,S=%d,D=%d", dim == 16 ? 70 : dim == 64 ? 136 : 100, dim);
            lc_opts o = wg_opts(defines[d], shapes);
            o.scalars = "scale=0.25";
            o.warps[0] = warps[d];
            o.warps[1] = 0;
            cr_assert(lc_check_tj(ATTENTION, "attention", &o), "%s %s", defines[d], shapes);
        }
}

/* File `rel` of the source tree (malloc'ed). */
static char *read_source(const char *rel)
{
    char *text = tu_source_file(rel);
    cr_assert(text, "cannot read %s", rel);
    return text;
}

/* examples/NAME.tj, the benchmarked kernel itself (malloc'ed). */
static char *read_example(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "examples/%s.tj", name);
    return read_source(rel);
}

/* Causal attention (examples/attention_causal.tj): a loop bound that
 * differs per program (block skipping), the heaviest blocks first, the
 * diagonal block masked in registers on the accumulator layout; wgmma and
 * mma.sync. */
Test(lower_wgmma, causal_attention)
{
    char *src = read_example("attention_causal");
    static const char *const defines[] = {"BM=64,BN=32,stages=2", "BM=128,BN=64,stages=2", "BM=128,BN=32,stages=3"};
    static const int warps[] = {4, 8, 4};
    for (int d = 0; d < 3; d++)
        for (int wgmma = 0; wgmma < 2; wgmma++) {
            lc_opts o = wg_opts(defines[d], "B=1,H=2,S=200,D=64");
            o.wgmma = wgmma;
            o.scalars = "scale=0.125";
            o.warps[0] = warps[d];
            o.warps[1] = 0;
            cr_assert(lc_check_tj(src, "attention_causal", &o), "%s%s", defines[d], wgmma ? "" : " (mma.sync)");
        }
    free(src);
}

/* Grouped-query attention (examples/attention_gqa.tj): four query heads
 * on two key/value heads, the head dims of the benchmark's rows and below. */
Test(lower_wgmma, grouped_query_attention)
{
    char *src = read_example("attention_gqa");
    static const char *const defines[] = {"BM=64,BN=64,stages=2", "BM=128,BN=64,stages=3"};
    static const char *const shapes[] = {"B=1,H=4,G=2,S=100,D=64", "B=2,H=4,G=2,S=136,D=128"};
    static const int warps[] = {4, 8};
    for (int d = 0; d < 2; d++) {
        lc_opts o = wg_opts(defines[d], shapes[d]);
        o.scalars = "scale=0.125";
        o.warps[0] = warps[d];
        o.warps[1] = 0;
        cr_assert(lc_check_tj(src, "attention_gqa", &o), "%s %s", defines[d], shapes[d]);
    }
    free(src);
}

/* MATMUL lowered for one configuration, as the JIT does for contiguous
 * tensors of those shapes (vector accesses: copy rings). */
static tj_kernel *lower_with(tj_ctx *c, const char *src, const char *name, const char *defines, const char *shapes,
                             const tj_pipeline_options *po)
{
    tj_kernel *simt = lc_lower_tj(c, src, name, defines, shapes, po);
    cr_assert(simt, "%s", tj_diag_render(c));
    return simt;
}

static tj_kernel *lower_kernel(tj_ctx *c, const char *src, const char *name, const char *defines, const char *shapes,
                               int wgmma, int no_tma)
{
    tj_pipeline_options po = {.lower.wgmma = wgmma, .lower.no_tma = no_tma, .verify = 1};
    return lower_with(c, src, name, defines, shapes, &po);
}

static tj_kernel *lower_config_tma(tj_ctx *c, const char *defines, const char *shapes, int wgmma, int no_tma)
{
    return lower_kernel(c, MATMUL, "matmul", defines, shapes, wgmma, no_tma);
}

static tj_kernel *lower_config(tj_ctx *c, const char *defines, const char *shapes, int wgmma)
{
    return lower_config_tma(c, defines, shapes, wgmma, 0);
}

/* The rings land by TMA, with a full and an empty mbarrier per slot, unless turned off
 * (then by cp.async). Rows that are no 16-element multiples (facts of the
 * specialization) take neither: no vector copies, so b is staged. */
Test(lower_wgmma, tma_where_it_applies)
{
    tj_ctx *c = tj_ctx_new();
    const char *defines = "BM=128,BN=128,BK=64,warps=8,stages=3";
    tj_kernel *tma = lower_config(c, defines, "M=256,N=256,K=256", 1);
    tj_kernel *odd = lower_config(c, defines, "M=256,N=136,K=256", 1);
    tj_kernel *off = lower_config_tma(c, defines, "M=256,N=256,K=256", 1, 1);
    tj_kernel *rows = lower_config(c, defines, "M=200,N=256,K=256", 1);
    tj_kernel *wide = lower_config(c, "BM=256,BN=128,BK=64,warps=16,stages=3", "M=256,N=256,K=256", 1);
    /* per tile: a's 16 granules of 8 rows two a box (granules g and g + 8, side by side in the
     * warpgroups' order), b's 2 column blocks; tiles 0, 1 before the loop, one in it */
    cr_expect_eq(lc_count_op(tma, TJ_OP_TMA_LOAD), 3 * (8 + 2));
    /* one granule a box: M not known to be whole 8-row blocks; four warpgroups (g, g + 16:
     * beyond TMA's element stride of 8) */
    cr_expect_eq(lc_count_op(rows, TJ_OP_TMA_LOAD), 3 * (16 + 2));
    cr_expect_eq(lc_count_op(wide, TJ_OP_TMA_LOAD), 3 * (32 + 2));
    cr_expect_eq(lc_count_op(tma, TJ_OP_MBAR_INIT), 2 * 3); /* full and empty of each slot */
    cr_expect_eq(lc_count_op(tma, TJ_OP_MBAR_WAIT), 2);     /* every warp for full, thread 0 for empty */
    cr_expect_eq(lc_count_op(tma, TJ_OP_MBAR_ARRIVE), 1);   /* each warp's release */
    cr_expect_eq(lc_count_op(tma, TJ_OP_BARRIER), 2);       /* after the inits, after the loop: none in it */
    cr_expect_eq(lc_count_op(tma, TJ_OP_CP_ASYNC), 0);
    cr_expect_eq(lc_count_op(odd, TJ_OP_TMA_LOAD), 3 * 8); /* b's rows are no vectors: staged, no ring */
    cr_expect_gt(lc_count_op(odd, TJ_OP_ST_SHARED), 0);
    cr_expect_eq(lc_count_op(off, TJ_OP_TMA_LOAD), 0);
    cr_expect_gt(lc_count_op(off, TJ_OP_CP_ASYNC), 0);
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS];
    cr_assert_eq(tj_tensor_maps(tma, maps), 2);
    cr_expect(maps[0].param == 0 && maps[0].cols == 64 && maps[0].rows == 8 && maps[0].swizzle == 128 &&
              maps[0].pair == 8);
    cr_expect(maps[1].param == 1 && maps[1].cols == 64 && maps[1].rows == 64 && maps[1].swizzle == 128);
    tj_ctx_free(c);
}

/* The lowering says what it did: the SIMT kernel holds wgmma (and no
 * mma.sync atom) exactly when asked to. */
Test(lower_wgmma, chosen_only_when_asked)
{
    tj_ctx *c = tj_ctx_new();
    const char *defines = "BM=128,BN=128,BK=64,warps=8,stages=3", *shapes = "M=256,N=256,K=256";
    tj_kernel *wg = lower_config(c, defines, shapes, 1), *sync = lower_config(c, defines, shapes, 0);
    cr_expect_eq(lc_count_op(wg, TJ_OP_WGMMA), 4 * 2 / 2); /* 4 k steps, 1 block per warpgroup (2 in all) */
    cr_expect_eq(lc_count_op(wg, TJ_OP_MMA), 0);
    cr_expect_eq(lc_count_op(wg, TJ_OP_FENCE_PROXY_ASYNC), 1);
    cr_expect_eq(lc_count_op(sync, TJ_OP_WGMMA), 0);
    cr_expect_gt(lc_count_op(sync, TJ_OP_MMA), 0);
    tj_ctx_free(c);
}

/* simt's PTX for sm_90a assembles, and ptxas keeps the wgmma pipeline (no
 * "wgmma ... serialized" warning: registers of the accumulators touched
 * between fence and wait would cause one). */
static void expect_assembles(const char *ptxas, tj_ctx *c, const tj_kernel *simt, const char *what)
{
    tj_buf ptx = {0}, log = {0};
    cr_assert_eq(tj_emit_ptx(simt, "sm_90a", &ptx), 0, "%s", tj_diag_render(c));
    cr_expect_eq(pa_assemble(ptxas, ptx.data, ptx.len, "sm_90a", &log), 0, "%s:\n%s", what, log.data ? log.data : "");
    cr_expect(!log.data || !strstr(log.data, "wgmma"), "%s:\n%s", what, log.data);
    tj_buf_free(&ptx);
    tj_buf_free(&log);
}

/* Every configuration the benchmarks try on sm_90a assembles, and ptxas
 * keeps the wgmma pipeline: no "wgmma ... serialized" warning (registers
 * of the accumulators touched between fence and wait would cause one). */
Test(lower_wgmma, ptxas_takes_the_pipeline)
{
    static char path[1024];
    const char *ptxas = pa_find_ptxas(path, sizeof path);
    if (!ptxas)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    static const char *const configs[] = {"BM=128,BN=128,BK=64,warps=8,stages=3", "BM=128,BN=256,BK=64,warps=8,stages=3",
                                          "BM=128,BN=128,BK=32,warps=4,stages=4", "BM=256,BN=128,BK=64,warps=8,stages=4",
                                          "BM=64,BN=128,BK=32,warps=4,stages=4", "BM=256,BN=128,BK=64,warps=16,stages=3"};
    for (unsigned i = 0; i < sizeof configs / sizeof *configs; i++) {
        tj_ctx *c = tj_ctx_new();
        tj_kernel *simt = lower_config(c, configs[i], "M=4096,N=4096,K=4096", 1);
        cr_expect_gt(lc_count_op(simt, TJ_OP_WGMMA), 0, "%s", configs[i]);
        cr_expect_gt(lc_count_op(simt, TJ_OP_TMA_LOAD), 0, "%s", configs[i]);
        expect_assembles(ptxas, c, simt, configs[i]);
        tj_buf ptx80 = {0};
        cr_expect_eq(tj_emit_ptx(simt, "sm_80", &ptx80), -1, "wgmma must not emit for sm_80");
        tj_buf_free(&ptx80);
        simt = lower_config_tma(c, configs[i], "M=4096,N=4096,K=4096", 1, 1); /* the cp.async rings */
        expect_assembles(ptxas, c, simt, configs[i]);
        tj_ctx_free(c);
    }
    tj_ctx *c = tj_ctx_new(); /* 512 threads have 128 registers each: no m64n256 wgmma */
    tj_kernel *big = lower_config(c, "BM=256,BN=256,BK=64,warps=16,stages=2", "M=4096,N=4096,K=4096", 1);
    cr_expect_eq(lc_count_op(big, TJ_OP_WGMMA), 0);
    tj_ctx_free(c);
}

/* ATTENTION in f32: S = Q K^T on wgmma as tf32 (b = trans(K), K-major),
 * P V on mma.sync (wgmma takes an a from registers in 16 bits only), P
 * from registers there: the two paths share the accumulator layout. */
Test(lower_wgmma, attention_f32_mixes_the_paths)
{
    char *src = strdup(ATTENTION);
    for (char *t = strstr(src, "bf16"); t; t = strstr(t, "bf16")) /* same length: " f32" */
        memcpy(t, " f32", 4);
    lc_opts o = wg_opts("BM=128,BN=64,stages=2", "B=1,H=2,S=136,D=64");
    o.scalars = "scale=0.125";
    o.warps[0] = 8;
    o.warps[1] = 0;
    cr_assert(lc_check_tj(src, "attention", &o));
    tj_ctx *c = tj_ctx_new();
    tj_kernel *simt = lower_kernel(c, src, "attention", "BM=128,BN=64,warps=8,stages=2", "B=1,H=2,S=136,D=64", 1, 0);
    cr_expect_gt(lc_count_op(simt, TJ_OP_WGMMA), 0);
    cr_expect_gt(lc_count_op(simt, TJ_OP_MMA), 0);
    tj_ctx_free(c);
    free(src);
}

static tj_ref find_op(const tj_kernel *k, tj_op op, int nth);

/* bench/gpu/kernels.tj.in with its dtype placeholder as f32 (malloc'ed). */
static char *read_bench_kernels(void)
{
    char *src = tu_source_file_f32("bench/gpu/kernels.tj.in");
    cr_assert(src, "cannot read bench/gpu/kernels.tj.in");
    return src;
}

/* Attention over packed rows (bench/gpu/kernels.tj.in, attention_rows):
 * rank-2 views, so K's and V's rings land by TMA; key blocks past a head's
 * S read the next head's rows, masked; the last query block's rows past S
 * are not stored. One and two warpgroups. */
/* An attention over packed rows [R, D] (S rows a head) at `defines` and
 * `warps`: against the interpreter, and its rings by TMA (no cp.async where
 * every ring is one). */
static void check_rows_by_tma(const char *src, const char *kernel, const char *defines, int warps,
                              const char *extra, int only_tma)
{
    lc_opts o = wg_opts(defines, "R=400,D=64");
    o.scalars = "scale=0.125,S=200";
    o.warps[0] = warps;
    o.warps[1] = 0;
    cr_assert(lc_check_tj(src, kernel, &o), "%s", defines);
    tj_ctx *c = tj_ctx_new();
    char cfg[96];
    snprintf(cfg, sizeof cfg, "%s,warps=%d%s", defines, warps, extra);
    tj_kernel *simt = lower_kernel(c, src, kernel, cfg, "R=400,D=64", 1, 0);
    cr_expect_gt(lc_count_op(simt, TJ_OP_TMA_LOAD), 0, "%s", cfg);
    if (only_tma)
        cr_expect_eq(lc_count_op(simt, TJ_OP_CP_ASYNC), 0, "%s", cfg);
    tj_ctx_free(c);
}

Test(lower_wgmma, attention_over_rows_by_tma)
{
    char *src = read_bench_kernels();
    check_rows_by_tma(src, "attention_rows", "BM=64,BN=64,stages=3", 4, ",fastmath=1", 1);
    check_rows_by_tma(src, "attention_rows", "BM=128,BN=64,stages=2", 8, ",fastmath=1", 1);
    check_rows_by_tma(src, "attention_rows_ahead", "BM=128,BN=64,stages=2", 8, "", 1);
    check_rows_by_tma(src, "attention_rows_ahead", "BM=128,BN=64,stages=3,turns=1", 8, "", 1);
    free(src);
}

/* The hand-pipelined attention (kernels.tj.in attention_pipelined): the
 * next block's S = Q K^T is issued before this block's softmax and its
 * group stays in flight until P V's wait retires it (one wgmma_wait an
 * iteration where both operands come from rings; staged K, stages = 1,
 * waits where it is issued). The interpreter checks that no slot it reads
 * is refilled and none of its registers is read before that wait. */
Test(lower_wgmma, pipelined_attention_overlaps_the_softmax)
{
    char *src = read_bench_kernels();
    static const char *const defines[] = {"BM=64,BN=64,stages=2", "BM=128,BN=64,stages=3", "BM=128,BN=32,stages=1"};
    static const int warps[] = {4, 8, 8}, waits[] = {1, 1, 2};
    for (int d = 0; d < 3; d++) {
        lc_opts o = wg_opts(defines[d], "B=1,H=2,S=200,D=64");
        o.scalars = "scale=0.125";
        o.warps[0] = warps[d];
        o.warps[1] = 0;
        cr_assert(lc_check_tj(src, "attention_pipelined", &o), "%s", defines[d]);
        tj_ctx *c = tj_ctx_new();
        char cfg[96];
        snprintf(cfg, sizeof cfg, "%s,warps=%d,fastmath=1", defines[d], warps[d]);
        tj_kernel *simt = lower_kernel(c, src, "attention_pipelined", cfg, "B=1,H=2,S=200,D=64", 1, 0);
        tj_ref loop = find_op(simt, TJ_OP_FOR, 0);
        int in_loop = 0;
        for (tj_ref r = 1; r < simt->ninsts; r++)
            in_loop += simt->insts[r].op == TJ_OP_WGMMA_WAIT && simt->insts[r].block == simt->insts[loop].region[0];
        cr_expect_eq(in_loop, waits[d], "%s", cfg);
        tj_ctx_free(c);
    }
    free(src);
}

/* The pipelined S over packed rows: its group in flight with TMA rings,
 * whose slot release waits for the wait that retires it. */
static const char *const PIPELINED_ROWS =
    "kernel prows(Q: bf16[R, D], K: bf16[R, D], V: bf16[R, D], O: bf16[R, D], scale: f32, S: i32)\n"
    "    grid (cdiv(S, BM), R / S)\n"
    "    tune BM in [64, 128], BN in [64], warps in [4, 8], stages in [2, 3]\n"
    "{\n"
    "    q0 = program_id(0) * BM\n"
    "    head = program_id(1) * S\n"
    "    q = load(Q[head + q0:head + q0 + BM, 0:D])\n"
    "    m_i = full(f32[BM], -inf)\n"
    "    l_i = zeros(f32[BM])\n"
    "    acc = zeros(f32[BM, D])\n"
    "    s = dot(q, trans(load(K[head:head + BN, 0:D])))\n"
    "    for j in range(0, S, BN) {\n"
    "        n = head + j + BN\n"
    "        s_next = dot(q, trans(load(K[n:n + BN, 0:D])))\n"
    "        x = where((j + arange(BN))[None, :] < S, s * scale, -inf)\n"
    "        m_new = maximum(m_i, max(x, axis = 1))\n"
    "        p = exp(x - m_new[:, None])\n"
    "        alpha = exp(m_i - m_new)\n"
    "        l_i = l_i * alpha + sum(p, axis = 1)\n"
    "        acc = acc * alpha[:, None] + dot(bf16(p), load(V[head + j:head + j + BN, 0:D]))\n"
    "        m_i = m_new\n"
    "        s = s_next\n"
    "    }\n"
    "    store(O[head + q0:head + q0 + BM, 0:D], bf16(acc / l_i[:, None]), mask = (q0 + arange(BM))[:, None] < S)\n"
    "}\n";

Test(lower_wgmma, pipelined_attention_with_tma_rings)
{
    check_rows_by_tma(PIPELINED_ROWS, "prows", "BM=64,BN=64,stages=2", 4, "", 0);
    check_rows_by_tma(PIPELINED_ROWS, "prows", "BM=128,BN=64,stages=3", 8, "", 0);
}

/* Whether instruction r is a wgmma whose a operand is a fragment (the
 * register form). */
static int is_register_a(const tj_kernel *k, tj_ref r)
{
    return k->insts[r].block && k->insts[r].op == TJ_OP_WGMMA &&
           tj_type_is_fragment(k->ctx, k->insts[k->insts[r].args[0]].type);
}

static int count_register_a(const tj_kernel *k)
{
    int n = 0;
    for (tj_ref r = 1; r < k->ninsts; r++)
        n += is_register_a(k, r);
    return n;
}

static tj_ref first_register_a(const tj_kernel *k)
{
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (is_register_a(k, r))
            return r;
    return TJ_NONE;
}

/* The attention configurations the benchmarks try, at their shape: both
 * products on wgmma (P's from registers, one per k step of 16 keys and
 * 64-row block of a warpgroup), no mma.sync atom in the loop, and ptxas
 * assembles them with no serialization of the pipeline: examples/
 * attention.tj and attention_causal.tj, and bench/gpu/kernels.tj.in's
 * packed rows (TMA rings), hand-pipelined kernel (a group in flight over
 * the softmax), attention_fa3 (FlashAttention-3's order) and
 * attention_ahead (both products under the softmax). */
Test(lower_wgmma, attention_configs_assemble)
{
    static char path[1024];
    const char *ptxas = pa_find_ptxas(path, sizeof path);
    static const char *const configs[] = {"BM=64,BN=64,warps=4,stages=2", "BM=128,BN=64,warps=8,stages=3",
                                          "BM=128,BN=32,warps=8,stages=3", "BM=128,BN=128,warps=8,stages=2"};
    static const int register_a[] = {4, 4, 2, 8};
    char *bench = read_bench_kernels(), *causal = read_example("attention_causal");
    const char *srcs[6] = {ATTENTION, causal, bench, bench, bench, bench};
    static const char *const names[6] = {"attention", "attention_causal", "attention_rows", "attention_pipelined",
                                         "attention_fa3", "attention_ahead"};
    static const char *const shapes[6] = {"B=4,H=32,S=4096,D=128", "B=4,H=32,S=4096,D=128", "R=524288,D=128",
                                          "B=4,H=32,S=4096,D=128", "B=4,H=32,S=4096,D=128", "B=4,H=32,S=4096,D=128"};
    for (unsigned i = 0; i < sizeof configs / sizeof *configs; i++)
        for (int v = 0; v < 6; v++) {
            tj_ctx *c = tj_ctx_new();
            char cfg[96];
            snprintf(cfg, sizeof cfg, "%s%s", configs[i], v >= 2 ? ",fastmath=1" : "");
            tj_kernel *simt = lower_kernel(c, srcs[v], names[v], cfg, shapes[v], 1, 0);
            cr_expect_eq(count_register_a(simt), register_a[i], "%s %s", names[v], cfg);
            /* a first S before the loop (pipelined, FlashAttention-3's order) stays on mma.sync */
            cr_expect_eq(lc_count_op(simt, TJ_OP_MMA) > 0, v >= 3, "%s %s", names[v], cfg);
            cr_expect_eq(lc_count_op(simt, TJ_OP_TMA_LOAD) > 0, v == 2, "%s %s: TMA only for rank-2 views", names[v], cfg);
            if (ptxas)
                expect_assembles(ptxas, c, simt, cfg);
            tj_ctx_free(c);
        }
    free(bench);
    free(causal);
    if (!ptxas)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit): lowered, not assembled");
}

/* ---- what is refused, and why ---------------------------------------------------- */

static tj_ref find_op(const tj_kernel *k, tj_op op, int nth) { return lc_nth_op(k, op, nth); }

/* Runs simt (MATMUL, M = N = K = 256) with every element of A and B the
 * bf16 bits x; its diagnostics, C in *c_out where it is not NULL. */
static const char *run_filled(tj_ctx *c, const tj_kernel *simt, uint16_t x, const uint16_t **c_out)
{
    static uint16_t a[256 * 256], b[256 * 256], out[256 * 256];
    for (int i = 0; i < 256 * 256; i++) {
        a[i] = b[i] = x;
        out[i] = 0;
    }
    if (c_out)
        *c_out = out;
    void *data[3] = {a, b, out};
    tj_arg args[3];
    for (int i = 0; i < 3; i++)
        args[i] = (tj_arg){.is_tensor = 1,
                           .tensor = {.dtype = TJ_DT_BF16, .rank = 2, .shape = {256, 256}, .strides = {256, 1},
                                      .data = data[i]}};
    tj_diag_clear(c);
    return tj_simt_run(simt, args, 3) ? tj_diag_render(c) : "";
}

/* On zero inputs: the diagnostics. */
static const char *run_simt(tj_ctx *c, const tj_kernel *simt) { return run_filled(c, simt, 0, NULL); }

/* Removes instruction r from its block. */
static void remove_inst(tj_kernel *k, tj_ref r) { lc_remove_inst(k, r); }

/* The interpreter catches a broken descriptor, a missing proxy fence and a
 * slot overwritten while the group that reads it is in flight: each a
 * one-instruction change of a correct kernel (cp.async rings, then TMA). */
Test(lower_wgmma, interpreter_catches_broken_pipelines)
{
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=128,BK=64,warps=8,stages=3", *shapes = "M=256,N=256,K=256";
    cr_assert_str_eq(run_simt(c, lower_config_tma(c, cfg, shapes, 1, 1)), "");

    tj_kernel *k = lower_config_tma(c, cfg, shapes, 1, 1);
    tj_ref fields = k->insts[find_op(k, TJ_OP_WGMMA_DESC, 0)].args[1];
    k->insts[fields].imm &= (int64_t)~(3ull << 62); /* swizzle mode 0 */
    cr_expect(strstr(run_simt(c, k), "the unswizzled layout is not modelled"), "%s", tj_diag_render(c));

    k = lower_config_tma(c, cfg, shapes, 1, 1);
    remove_inst(k, find_op(k, TJ_OP_FENCE_PROXY_ASYNC, 0));
    cr_expect(strstr(run_simt(c, k), "with no fence_proxy_async since"), "%s", tj_diag_render(c));

    /* three slots: by cp_async only a wait per iteration is safe, by TMA
     * one group in flight, whose slot the refill after its release skips */
    for (int no_tma = 0; no_tma < 2; no_tma++) {
        k = lower_config_tma(c, cfg, shapes, 1, no_tma);
        tj_ref wait = find_op(k, TJ_OP_WGMMA_WAIT, 0);
        cr_assert_eq(k->insts[wait].imm, no_tma ? 0 : 1);
        k->insts[wait].imm++;
        cr_expect(strstr(run_simt(c, k), "which a wgmma group in flight reads"), "%s", tj_diag_render(c));
    }
    tj_ctx_free(c);
}

/* TMA rings: the copies must be awaited, on the right phase, before wgmma
 * reads them. */
Test(lower_wgmma, interpreter_catches_broken_tma_rings)
{
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=128,BK=64,warps=8,stages=3", *shapes = "M=256,N=256,K=256";
    cr_assert_str_eq(run_simt(c, lower_config(c, cfg, shapes, 1)), "");

    tj_kernel *k = lower_config(c, cfg, shapes, 1);
    remove_inst(k, find_op(k, TJ_OP_MBAR_WAIT, 0));
    cr_expect(strstr(run_simt(c, k), "which no thread has written"), "%s", tj_diag_render(c));

    k = lower_config(c, cfg, shapes, 1); /* the other parity: a wait that never returns */
    tj_ref wait = find_op(k, TJ_OP_MBAR_WAIT, 0);
    tj_ref one = TJ_NONE;
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && k->insts[r].op == TJ_OP_CONST && k->insts[r].type == k->insts[k->insts[wait].args[1]].type &&
            k->insts[r].imm == 1)
            one = r;
    tj_ref args[3] = {k->insts[wait].args[1], one};
    tj_ref flipped = tj_inst_new(k, TJ_OP_XOR, k->insts[args[0]].type, args, 2);
    const tj_block *blk = &k->blocks[k->insts[wait].block];
    uint32_t at = 0;
    while (blk->insts[at] != wait)
        at++;
    tj_block_insert(k, k->insts[wait].block, at, flipped);
    k->insts[wait].args[1] = flipped;
    cr_expect(strstr(run_simt(c, k), "which nothing in flight completes"), "%s", tj_diag_render(c));

    tj_ctx_free(c);
}

Test(lower_wgmma, refused_where_it_does_not_exist)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = lower_config(c, "BM=128,BN=128,BK=64,warps=8,stages=3", "M=256,N=256,K=256", 1);
    tj_buf ptx = {0};
    tj_diag_clear(c);
    cr_expect_eq(tj_emit_ptx(k, "sm_90", &ptx), -1);
    cr_expect(strstr(tj_diag_render(c), "'mbar_init' needs sm_90a"), "%s", tj_diag_render(c));
    k = lower_config_tma(c, "BM=128,BN=128,BK=64,warps=8,stages=3", "M=256,N=256,K=256", 1, 1);
    tj_diag_clear(c);
    cr_expect_eq(tj_emit_ptx(k, "sm_80", &ptx), -1);
    cr_expect(strstr(tj_diag_render(c), "'fence_proxy_async' needs sm_90 or later"), "%s", tj_diag_render(c));
    tj_diag_clear(c);
    cr_expect_eq(tj_emit_ptx(k, "sm_100a", &ptx), -1); /* Blackwell has tcgen05, not wgmma */
    cr_expect(strstr(tj_diag_render(c), "needs sm_90a"), "%s", tj_diag_render(c));
    tj_buf_free(&ptx);

    tj_ref w = find_op(k, TJ_OP_WGMMA, 0);
    k->insts[w].imm = TJ_DT_F32; /* tf32 has no mn-major b */
    tj_diag_clear(c);
    cr_expect_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(c), "tf32 operands must both be K-major"), "%s", tj_diag_render(c));
    k->insts[w].imm = TJ_DT_I8;
    tj_diag_clear(c);
    cr_expect_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(c), "in = i8: wgmma takes bf16, f16 or f32 (tf32) inputs"), "%s",
              tj_diag_render(c));
    k->insts[w].imm = TJ_DT_BF16;
    tj_ref pred = k->insts[w].args[2];
    k->insts[w].args[2] = k->insts[w].args[0]; /* a descriptor where the predicate goes */
    tj_diag_clear(c);
    cr_expect_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(c), "the predicate is u64, not bool"), "%s", tj_diag_render(c));
    k->insts[w].args[2] = pred;
    k->insts[w].args[3] = k->insts[w].args[0]; /* a descriptor where a c fragment goes */
    tj_diag_clear(c);
    cr_expect_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(c), "operand 4 is u64, not a c fragment"), "%s", tj_diag_render(c));
    tj_ctx_free(c);
}

/* The register form of a has no transpose: a = mn is refused, naming it. */
Test(lower_wgmma, register_a_is_k_major)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = lower_kernel(c, ATTENTION, "attention", "BM=128,BN=64,warps=8,stages=2", "B=1,H=2,S=256,D=64", 1, 0);
    tj_ref w = first_register_a(k);
    cr_assert(w, "no wgmma with a from registers");
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(c));
    k->insts[w].flags |= TJ_WGMMA_A_MN;
    tj_diag_clear(c);
    cr_expect_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(c), "a from registers is K-major (a = k)"), "%s", tj_diag_render(c));
    tj_ctx_free(c);
}

/* Runs simt (ATTENTION, B = 1, H = 2, S = 256, D = 64) on zero inputs; its
 * diagnostics. */
static const char *run_attention(tj_ctx *c, const tj_kernel *simt)
{
    static uint16_t q[4][2 * 256 * 64];
    tj_arg args[5];
    for (int i = 0; i < 4; i++)
        args[i] = (tj_arg){.is_tensor = 1,
                           .tensor = {.dtype = TJ_DT_BF16, .rank = 4, .shape = {1, 2, 256, 64},
                                      .strides = {2 * 256 * 64, 256 * 64, 64, 1}, .data = q[i]}};
    args[4] = (tj_arg){.scalar.f = 0.125};
    tj_diag_clear(c);
    return tj_simt_run(simt, args, 5) ? tj_diag_render(c) : "";
}

/* P's a fragments are wgmma's until the wait retires its group: the
 * interpreter reports a read of them in between (undefined in the PTX
 * ISA), here an mma_unpack inserted right after the product. */
Test(lower_wgmma, interpreter_catches_register_a_read_in_flight)
{
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=64,warps=8,stages=2", *shapes = "B=1,H=2,S=256,D=64";
    cr_assert_str_eq(run_attention(c, lower_kernel(c, ATTENTION, "attention", cfg, shapes, 1, 0)), "");
    tj_kernel *k = lower_kernel(c, ATTENTION, "attention", cfg, shapes, 1, 0);
    tj_ref w = first_register_a(k);
    cr_assert(w, "no wgmma with a from registers");
    int32_t eight = 8;
    tj_ref a = k->insts[w].args[0];
    tj_ref read = tj_inst_new(k, TJ_OP_MMA_UNPACK, tj_type_tile(c, TJ_DT_BF16, 1, &eight), &a, 1);
    const tj_block *blk = &k->blocks[k->insts[w].block];
    uint32_t at = 0;
    while (blk->insts[at] != w)
        at++;
    tj_block_insert(k, k->insts[w].block, at + 1, read);
    cr_expect(strstr(run_attention(c, k), "reads %"), "%s", tj_diag_render(c));
    cr_expect(strstr(tj_diag_render(c), "the a operand of a wgmma whose group is in flight"), "%s",
              tj_diag_render(c));
    tj_ctx_free(c);
}

/* The examples in FlashAttention-3's order (bench/gpu/kernels.tj.in
 * attention_fa3, attention_causal_fa3, attention_gqa_fa3: the first key
 * block's softmax before the loop, S(j + 1) and P(j) V(j) back to back, P
 * carried in bf16, the last block's P V after the loop) on wgmma against
 * the reference: one and two warpgroups, partial key blocks; the causal
 * loop bound per program; G < H heads; attention_ahead (S(j + 1) and P(j -
 * 1) V(j - 1) under the softmax of S(j)), one key block (no iteration)
 * too. The sizes of tests/gpu/lower.c's cases. */
Test(lower_wgmma, attention_in_flashattention3_order)
{
    static const struct {
        const char *file, *defines, *shapes, *scale;
        int warps;
    } cases[] = {
        {"attention_fa3", "BM=64,BN=64,stages=2", "B=1,H=2,S=200,D=64", "scale=0.125", 4},
        {"attention_fa3", "BM=128,BN=64,stages=3,fastmath=1", "B=2,H=2,S=200,D=128", "scale=0.0884", 8},
        {"attention_fa3", "BM=128,BN=128,stages=2", "B=1,H=2,S=300,D=128", "scale=0.0884", 8},
        {"attention_fa3", "BM=128,BN=128,stages=2,turns=1", "B=1,H=2,S=300,D=128", "scale=0.0884", 8},
        {"attention_causal_fa3", "BM=128,BN=64,stages=2", "B=1,H=2,S=300,D=128", "scale=0.0884", 8},
        {"attention_causal_fa3", "BM=64,BN=32,stages=3", "B=1,H=2,S=200,D=64", "scale=0.125", 4},
        {"attention_gqa_fa3", "BM=128,BN=64,stages=2", "B=1,H=4,G=2,S=200,D=128", "scale=0.0884", 8},
        {"attention_ahead", "BM=128,BN=64,stages=2", "B=1,H=2,S=200,D=128", "scale=0.0884", 8},
        {"attention_ahead", "BM=64,BN=32,stages=3", "B=1,H=2,S=70,D=64", "scale=0.125", 4},
        {"attention_ahead", "BM=64,BN=64,stages=2", "B=1,H=2,S=40,D=64", "scale=0.125", 4},
        {"attention_causal_ahead", "BM=128,BN=64,stages=2", "B=1,H=2,S=300,D=128", "scale=0.0884", 8},
        {"attention_causal_ahead", "BM=64,BN=32,stages=3", "B=1,H=2,S=200,D=64", "scale=0.125", 4},
    };
    char *src = read_bench_kernels();
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++) {
        lc_opts o = wg_opts(cases[i].defines, cases[i].shapes);
        o.scalars = cases[i].scale;
        o.warps[0] = cases[i].warps;
        o.warps[1] = 0;
        cr_expect(lc_check_tj(src, cases[i].file, &o), "%s %s", cases[i].file, cases[i].defines);
    }
    free(src);
}

/* A group is waited for where its result is first read (lower/wgmma.c):
 * in attention_fa3's order (FlashAttention-3's) the loop issues S(j + 1), then P(j)
 * V(j), then waits {pending = 1} before the softmax reads S(j + 1) and {0}
 * at the yield; the sequential order waits where each group is read, right
 * after it. The interpreter reports the accumulators of a group read
 * before its wait: here the first wait made one group too lenient. */
static tj_block_id loop_body(const tj_kernel *k) { return k->insts[find_op(k, TJ_OP_FOR, 0)].region[0]; }

/* Where the nth op of kind op is in the loop's body (-1: nowhere). */
static int64_t in_body(const tj_kernel *k, tj_op op, int nth)
{
    const tj_block *b = &k->blocks[loop_body(k)];
    for (uint32_t i = 0; i < b->ninsts; i++)
        if (k->insts[b->insts[i]].op == op && nth-- == 0)
            return i;
    return -1;
}

static tj_ref body_op(const tj_kernel *k, tj_op op, int nth)
{
    int64_t i = in_body(k, op, nth);
    return i < 0 ? TJ_NONE : k->blocks[loop_body(k)].insts[i];
}

Test(lower_wgmma, groups_waited_for_at_their_first_use)
{
    tj_ctx *c = tj_ctx_new();
    char *src = read_bench_kernels();
    const char *cfg = "BM=128,BN=64,warps=8,stages=2", *shapes = "B=1,H=2,S=256,D=64";
    tj_kernel *k = lower_kernel(c, src, "attention_fa3", cfg, shapes, 1, 0);
    cr_assert(body_op(k, TJ_OP_WGMMA_WAIT, 1) && !body_op(k, TJ_OP_WGMMA_WAIT, 2), "two waits an iteration");
    cr_expect_eq(k->insts[body_op(k, TJ_OP_WGMMA_WAIT, 0)].imm, 1);
    cr_expect_eq(k->insts[body_op(k, TJ_OP_WGMMA_WAIT, 1)].imm, 0);
    cr_expect_gt(in_body(k, TJ_OP_WGMMA_WAIT, 0), in_body(k, TJ_OP_WGMMA_COMMIT, 1),
                 "S(j + 1)'s wait after both groups of the iteration are issued");
    cr_assert_str_eq(run_attention(c, k), "");
    k->insts[body_op(k, TJ_OP_WGMMA_WAIT, 0)].imm = 2;
    cr_expect(strstr(run_attention(c, k), "accumulators of a wgmma whose group is in flight"), "%s",
              tj_diag_render(c));

    k = lower_kernel(c, ATTENTION, "attention", cfg, shapes, 1, 0);
    cr_expect_eq(k->insts[body_op(k, TJ_OP_WGMMA_WAIT, 0)].imm, 0);
    cr_expect_lt(in_body(k, TJ_OP_WGMMA_WAIT, 0), in_body(k, TJ_OP_WGMMA_FENCE, 1), "S's wait before P V is issued");
    free(src);
    tj_ctx_free(c);
}

/* Two warpgroups take turns issuing attention's products where asked
 * (tj_lower_options.wgmma_turns or `turns = 1`, lower/wgmma_turns.c), a
 * turn an iteration: a bar_sync before the body's first group and a
 * bar_arrive after its last (attention_fa3: S(j + 1) and P(j) V(j) back
 * to back); none unasked, with one warpgroup or in a matmul's
 * loop of one product. The interpreter finds every phase of the named
 * barriers complete at the program's end, and reports a protocol that
 * loses a hand-over or waits for one the first turn never gets (on a GPU:
 * a hang). */
static tj_kernel *attention_in_turns(tj_ctx *c, const char *src, const char *name, const char *cfg)
{
    tj_pipeline_options po = {.lower.wgmma = 1, .lower.wgmma_turns = 1, .verify = 1};
    return lower_with(c, src, name, cfg, "B=1,H=2,S=256,D=64", &po);
}

static int turn_ops(const tj_kernel *k) { return lc_count_op(k, TJ_OP_BAR_SYNC) + lc_count_op(k, TJ_OP_BAR_ARRIVE); }

Test(lower_wgmma, warpgroups_take_turns)
{
    tj_ctx *c = tj_ctx_new();
    char *src = read_bench_kernels();
    const char *cfg = "BM=128,BN=64,warps=8,stages=2", *fa3 = "attention_fa3";
    tj_kernel *k = attention_in_turns(c, src, fa3, cfg);
    cr_expect_eq(lc_count_op(k, TJ_OP_BAR_SYNC), 1);
    cr_expect_eq(lc_count_op(k, TJ_OP_BAR_ARRIVE), 1);
    cr_expect_lt(in_body(k, TJ_OP_BAR_SYNC, 0), in_body(k, TJ_OP_WGMMA_FENCE, 0),
                 "the turn begins before the first group of the iteration");
    cr_expect_gt(in_body(k, TJ_OP_BAR_ARRIVE, 0), in_body(k, TJ_OP_WGMMA_COMMIT, 1), "and ends after its last");
    cr_assert_str_eq(run_attention(c, k), "");
    k = attention_in_turns(c, ATTENTION, "attention", cfg); /* S, softmax, P V: one turn around all three */
    cr_expect_eq(turn_ops(k), 2);
    cr_assert_str_eq(run_attention(c, k), "");

    cr_expect_eq(turn_ops(lower_kernel(c, src, fa3, cfg, "B=1,H=2,S=256,D=64", 1, 0)), 0, "unasked");
    cr_expect_eq(turn_ops(attention_in_turns(c, src, fa3, "BM=64,BN=64,warps=4,stages=2")), 0, "one warpgroup");
    tj_pipeline_options po = {.lower.wgmma = 1, .lower.wgmma_turns = 1, .verify = 1};
    k = lower_with(c, MATMUL, "matmul", "BM=128,BN=128,BK=64,warps=8,stages=3", "M=256,N=256,K=256", &po);
    cr_expect_eq(turn_ops(k), 0, "one product a loop");

    k = attention_in_turns(c, src, fa3, cfg);
    remove_inst(k, find_op(k, TJ_OP_BAR_ARRIVE, 0));
    cr_expect(strstr(run_attention(c, k), "arrives twice in one phase of named barrier 2"), "%s",
              tj_diag_render(c));

    k = attention_in_turns(c, src, fa3, cfg); /* the first turn waits like the others */
    k->insts[find_op(k, TJ_OP_BAR_SYNC, 0)].args[2] = TJ_NONE;
    cr_expect(strstr(run_attention(c, k), "ends with named barrier 1 at 128 of its 256"), "%s",
              tj_diag_render(c));
    free(src);
    tj_ctx_free(c);
}

/* `turns = 1` asks for the turns in the kernel's text (bench/gpu/kernels.tj.in
 * attention_rows_fa3, TMA rings): correct in the interpreter with and without;
 * with them the rings take one slot more (3 for stages = 2: a full and an
 * empty mbarrier each), so a refill waits for the release of the tile two
 * iterations back, not for the warpgroup a turn behind (lower/ring.c). */
Test(lower_wgmma, turns_as_a_tile_parameter)
{
    char *src = read_bench_kernels();
    for (int t = 0; t < 2; t++) {
        char defines[64], cfg[96];
        snprintf(defines, sizeof defines, "BM=128,BN=64,stages=2,turns=%d", t);
        check_rows_by_tma(src, "attention_rows_fa3", defines, 8, "", 1);
        tj_ctx *c = tj_ctx_new();
        snprintf(cfg, sizeof cfg, "%s,warps=8", defines);
        tj_kernel *k = lower_kernel(c, src, "attention_rows_fa3", cfg, "R=400,D=64", 1, 0);
        cr_expect_eq(turn_ops(k), 2 * t, "%s", cfg);
        cr_expect_eq(lc_count_op(k, TJ_OP_MBAR_INIT), 2 * (2 + t), "%s", cfg);
        tj_ctx_free(c);
    }
    free(src);
}

/* ---- a producer warp (lower/producer.c) ---------------------------------------- */

/* examples/matmul.tj's matmul with a producer warp: one and two warpgroups
 * of consumers, rings of 2 to 8 slots through several rounds (K = 1040),
 * partial tiles, a loop of no iteration; the interpreter runs warp P in
 * lockstep with the consumers, its stores masked off. */
Test(lower_wgmma, producer_matmul)
{
    char *src = read_example("matmul");
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3,producer=1",
                                          "BM=128,BN=64,BK=32,stages=2,producer=1",
                                          "BM=64,BN=64,BK=64,stages=8,producer=1",
                                          "BM=128,BN=256,BK=64,stages=4,producer=1"};
    static const char *const shapes[] = {"M=200,N=144,K=1040", "M=208,N=144,K=176", "M=136,N=144,K=1040",
                                         "M=200,N=256,K=160"};
    for (int d = 0; d < 4; d++) {
        lc_opts o = wg_opts(defines[d], shapes[d]);
        cr_assert(lc_check_tj(src, "matmul", &o), "%s", defines[d]);
    }
    lc_opts o = wg_opts("BM=128,BN=128,BK=64,stages=3,producer=1", "M=130,N=144,K=0");
    cr_assert(lc_check_tj(src, "matmul", &o), "K = 0");
    free(src);
}

/* examples/matmul.tj's matmul at M = N = K = 256 for cfg. */
static tj_kernel *lower_example(tj_ctx *c, const char *cfg)
{
    char *src = read_example("matmul");
    tj_kernel *k = lower_kernel(c, src, "matmul", cfg, "M=256,N=256,K=256", 1, 0);
    free(src);
    return k;
}

/* Runs simt (matmul, M = N = K = 256) on ones: every element of C is 256,
 * else the diagnostics or "wrong". */
static const char *run_ones(tj_ctx *c, const tj_kernel *simt)
{
    const uint16_t *out;
    const char *diags = run_filled(c, simt, 0x3f80 /* bf16 1.0 */, &out);
    if (*diags)
        return diags;
    return lc_all_u16(out, 256 * 256, 0x4380 /* bf16 256.0 */) ? "" : "wrong";
}

/* The producer warp: 32 threads more; the consumers' products, their
 * fences, commits and waits under tid < 32 P; the loop's copies in it.
 * Asked where it cannot apply (copy rings by cp_async, which the warp
 * cannot be kept from; mma.sync), it is not there. */
Test(lower_wgmma, producer_warp_shape)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = lower_example(c, "BM=128,BN=128,BK=64,warps=8,stages=3,producer=1");
    cr_assert_eq(k->nthreads, 288);
    tj_ref consumers = TJ_NONE;
    int wgmma_ops = 0, producer_copies = 0;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        if (!in->block)
            continue;
        tj_ref pred = in->op == TJ_OP_WGMMA ? in->args[2]
                      : in->op == TJ_OP_WGMMA_FENCE || in->op == TJ_OP_WGMMA_COMMIT || in->op == TJ_OP_WGMMA_WAIT
                          ? in->args[0]
                          : TJ_NONE;
        if (in->op == TJ_OP_WGMMA || in->op == TJ_OP_WGMMA_FENCE || in->op == TJ_OP_WGMMA_COMMIT ||
            in->op == TJ_OP_WGMMA_WAIT) {
            cr_assert(pred, "a wgmma op without a predicate");
            consumers = consumers ? consumers : pred;
            cr_expect_eq(pred, consumers);
            wgmma_ops++;
        }
        if (in->op == TJ_OP_TMA_LOAD && k->blocks[in->block].owner && k->insts[k->blocks[in->block].owner].op == TJ_OP_FOR)
            producer_copies++;
    }
    cr_expect_gt(wgmma_ops, 0);
    cr_expect_eq(producer_copies, 8 + 2);
    const tj_inst *lt = &k->insts[consumers];
    cr_expect(lt->op == TJ_OP_LT && k->insts[lt->args[0]].op == TJ_OP_TID &&
              k->insts[lt->args[1]].op == TJ_OP_CONST && k->insts[lt->args[1]].imm == 256);
    char *src = read_example("matmul");
    const char *cfg = "BM=128,BN=128,BK=64,warps=8,stages=3,producer=1", *shapes = "M=256,N=256,K=256";
    tj_kernel *cp = lower_kernel(c, src, "matmul", cfg, shapes, 1, 1); /* cp_async: lowered again without it */
    cr_expect_eq(cp->nthreads, 256);
    cr_expect_gt(lc_count_op(cp, TJ_OP_CP_ASYNC), 0);
    cr_expect_eq(lower_kernel(c, src, "matmul", cfg, shapes, 0, 0)->nthreads, 256); /* mma.sync */
    free(src);
    tj_ctx_free(c);
}

/* Each mask matters: with the producer's store, its wgmma or its release
 * unmasked, the interpreter gives a wrong C, refuses the lone warp's
 * wgmma, or finds the empty mbarrier over-arrived. */
Test(lower_wgmma, producer_masks_are_needed)
{
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=128,BK=64,warps=8,stages=3,producer=1";
    cr_assert_str_eq(run_ones(c, lower_example(c, cfg)), "");

    tj_kernel *k = lower_example(c, cfg);
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && k->insts[r].op == TJ_OP_ST_GLOBAL)
            k->insts[r].args[2] = TJ_NONE; /* C is whole tiles: every store of a consumer is its owner's */
    cr_expect_str_eq(run_ones(c, k), "wrong");

    k = lower_example(c, cfg);
    k->insts[find_op(k, TJ_OP_WGMMA, 0)].args[2] = TJ_NONE;
    cr_expect(strstr(run_ones(c, k), "wgmma needs whole warpgroups"), "%s", tj_diag_render(c));

    k = lower_example(c, cfg);
    tj_ref arrive = find_op(k, TJ_OP_MBAR_ARRIVE, 0);
    tj_ref masked = k->insts[arrive].args[1]; /* consumers & (lane 0 & n >= 1) */
    cr_assert_eq(k->insts[masked].op, TJ_OP_AND);
    k->insts[arrive].args[1] = k->insts[masked].args[1];
    cr_expect_neq(strcmp(run_ones(c, k), ""), 0, "an unmasked release passed");
    tj_ctx_free(c);
}

/* The benchmark's producer configurations assemble (288 threads: the
 * accumulators' registers fit) and ptxas keeps the wgmma pipeline: the
 * consumers' group is branched around, not predicated op by op. */
Test(lower_wgmma, producer_assembles)
{
    static char path[1024];
    const char *ptxas = pa_find_ptxas(path, sizeof path);
    if (!ptxas)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    static const char *const configs[] = {"BM=128,BN=256,BK=64,warps=8,stages=4,producer=1",
                                          "BM=128,BN=256,BK=64,warps=8,stages=3,producer=1",
                                          "BM=256,BN=128,BK=64,warps=8,stages=4,producer=1",
                                          "BM=128,BN=128,BK=64,warps=4,stages=4,producer=1"};
    char *src = read_example("matmul");
    for (unsigned i = 0; i < sizeof configs / sizeof *configs; i++) {
        tj_ctx *c = tj_ctx_new();
        tj_kernel *simt = lower_kernel(c, src, "matmul", configs[i], "M=4096,N=4096,K=4096", 1, 0);
        cr_expect_eq(simt->nthreads % 128, 32, "%s", configs[i]);
        expect_assembles(ptxas, c, simt, configs[i]);
        tj_ctx_free(c);
    }
    free(src);
}

/* ---- TMA stores (lower/tma_store.c) ----------------------------------------------- */

/* MATMUL declaring `const tma_store = 1` (malloc'ed): the TMA path is
 * taken where a kernel asks for it (examples/matmul.tj's matmul and
 * matmul_bias_gelu do, since the H100 run of bench/RESULTS.md). */
static char *tma_matmul(void)
{
    const char *tune = strstr(MATMUL, "stages in [2, 3, 4]\n") + strlen("stages in [2, 3, 4]\n");
    size_t n = strlen(MATMUL) + 64;
    char *src = malloc(n);
    snprintf(src, n, "%.*s    const tma_store = 1\n%s", (int)(tune - MATMUL), MATMUL, tune);
    return src;
}

static char *with_f32_c(void)
{
    char *src = tma_matmul();
    char *c = strstr(src, "C: bf16[M, N]"), *v = strstr(src, "bf16(acc)");
    memcpy(c, "C:  f32[M, N]", 13); /* same lengths */
    memcpy(v, "(acc)    ", 9);
    return src;
}

/* With tma_store = 1, C goes registers -> shared memory -> the copy
 * engine where it applies: one box a 128-byte column block (a tensor map
 * of 64 x 128 boxes), thread 0 issuing, a bulk group committed and its
 * reads awaited; no thread stores C itself. Not where tma_store is
 * undeclared or 0, without TMA, on mma.sync, with a producer warp, nor
 * where the tile would need more shared memory than the kernel's rings
 * took (an f32 C of 128 KiB over rings of 48 KiB). */
Test(lower_wgmma, tma_stores_where_they_apply)
{
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=256,BK=64,warps=8,stages=3", *shapes = "M=256,N=512,K=256";
    char *tsrc = tma_matmul();
    tj_kernel *k = lower_kernel(c, tsrc, "matmul", cfg, shapes, 1, 0);
    cr_expect_eq(lc_count_op(k, TJ_OP_TMA_STORE), 4);
    cr_expect_eq(lc_count_op(k, TJ_OP_TMA_STORE_COMMIT), 1);
    cr_expect_eq(lc_count_op(k, TJ_OP_TMA_STORE_WAIT), 1);
    cr_expect_eq(lc_count_op(k, TJ_OP_ST_GLOBAL), 0);
    cr_expect_eq(lc_count_op(k, TJ_OP_ST_SHARED), 128 * 256 / 256 / 2); /* two bf16 a store */
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS];
    cr_assert_eq(tj_tensor_maps(k, maps), 3);
    cr_expect(maps[2].param == 2 && maps[2].cols == 64 && maps[2].rows == 128 && maps[2].swizzle == 128 &&
              maps[2].pair == 0);
    tj_kernel *plain = lower_config(c, cfg, shapes, 1); /* tma_store undeclared: 0 */
    cr_expect_eq(lc_count_op(plain, TJ_OP_TMA_STORE), 0);
    cr_expect_eq(plain->smem_bytes, k->smem_bytes);
    tj_kernel *off = lower_kernel(c, tsrc, "matmul", cfg, shapes, 1, 1);
    tj_kernel *sync = lower_kernel(c, tsrc, "matmul", cfg, shapes, 0, 0);
    cr_expect_eq(lc_count_op(off, TJ_OP_TMA_STORE) + lc_count_op(sync, TJ_OP_TMA_STORE), 0);
    cr_expect_gt(lc_count_op(off, TJ_OP_ST_GLOBAL), 0);
    free(tsrc);

    char *src = read_example("matmul");
    tj_pipeline_options po = {.lower.wgmma = 1, .verify = 1};
    tj_kernel *on = lower_with(c, src, "matmul", "BM=128,BN=256,BK=64,warps=8,stages=3,tma_store=1", shapes, &po);
    tj_kernel *no = lower_with(c, src, "matmul", "BM=128,BN=256,BK=64,warps=8,stages=3,tma_store=0", shapes, &po);
    tj_kernel *prod =
        lower_with(c, src, "matmul", "BM=128,BN=256,BK=64,warps=8,stages=3,producer=1,tma_store=1", shapes, &po);
    tj_kernel *dflt = lower_with(c, src, "matmul", "BM=128,BN=256,BK=64,warps=8,stages=3", shapes, &po);
    cr_expect_eq(lc_count_op(on, TJ_OP_TMA_STORE), 4);
    cr_expect_eq(lc_count_op(no, TJ_OP_TMA_STORE), 0);
    cr_expect_eq(lc_count_op(dflt, TJ_OP_TMA_STORE), 4); /* the example declares 1 */
    cr_expect_eq(no->smem_bytes, on->smem_bytes);
    cr_expect_eq(prod->nthreads, 9 * 32);
    cr_expect_eq(lc_count_op(prod, TJ_OP_TMA_STORE), 0);
    free(src);

    char *wide = with_f32_c();
    tj_kernel *f32 = lower_kernel(c, wide, "matmul", "BM=128,BN=256,BK=32,warps=8,stages=2", shapes, 1, 0);
    cr_expect_eq(lc_count_op(f32, TJ_OP_TMA_STORE), 0);
    cr_expect_gt(lc_count_op(f32, TJ_OP_TMA_LOAD), 0);
    tj_kernel *deep = lower_kernel(c, wide, "matmul", "BM=128,BN=128,BK=64,warps=8,stages=4", shapes, 1, 0);
    cr_expect_eq(lc_count_op(deep, TJ_OP_TMA_STORE), 4); /* 128 x 128 f32 in 4 x 32 KiB of ring */
    free(wide);
    tj_ctx_free(c);
}

/* Against the reference interpreter: the stored tiles, partial ones
 * clipped by the copy engine (M = 200, N = 144: the last tiles cut on both
 * axes), bf16 and f16 with the fused bias + gelu epilogue and f32 C, one
 * and two warpgroups, with tma_store 1 and 0 (the same results). */
Test(lower_wgmma, tma_stores_match_the_reference)
{
    char *src = read_example("matmul");
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3,tma_store=1",
                                          "BM=128,BN=64,BK=32,stages=2,tma_store=1",
                                          "BM=128,BN=128,BK=64,stages=3,tma_store=0",
                                          "BM=64,BN=64,BK=32,stages=2"}; /* the example's first: tma_store 1 */
    for (int d = 0; d < 4; d++)
        for (int kernel = 0; kernel < 2; kernel++) {
            lc_opts o = wg_opts(defines[d], "M=200,N=144,K=176");
            const char *name = kernel ? "matmul_bias_gelu" : "matmul";
            cr_assert(lc_check_tj(src, name, &o), "%s %s", name, defines[d]);
        }
    char *f16 = strdup(src);
    for (char *t = strstr(f16, "bf16"); t; t = strstr(t, "bf16")) /* same length: " f16" */
        memcpy(t, " f16", 4);
    lc_opts o = wg_opts("BM=128,BN=256,BK=64,stages=3,tma_store=1", "M=136,N=272,K=128");
    cr_assert(lc_check_tj(f16, "matmul_bias_gelu", &o));
    free(f16);
    free(src);
    char *wide = with_f32_c();
    lc_opts w32 = wg_opts("BM=128,BN=128,BK=64,stages=4", "M=136,N=144,K=128");
    cr_assert(lc_check_tj(wide, "matmul", &w32));
    free(wide);
}

/* The interpreter catches a staging not fenced to the async proxy, a store
 * whose reads are not awaited, and a staging not held back until the
 * products stop reading the ring's slots: each a one-instruction change of
 * a correct kernel. */
Test(lower_wgmma, interpreter_catches_broken_tma_stores)
{
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=128,BK=64,warps=8,stages=3", *shapes = "M=256,N=256,K=256";
    char *src = tma_matmul();
    tj_kernel *k = lower_kernel(c, src, "matmul", cfg, shapes, 1, 0);
    cr_assert_gt(lc_count_op(k, TJ_OP_TMA_STORE), 0);
    cr_assert_str_eq(run_simt(c, k), "");
    remove_inst(k, find_op(k, TJ_OP_FENCE_PROXY_ASYNC, 1));
    cr_expect(strstr(run_simt(c, k), "with no fence_proxy_async since"), "%s", tj_diag_render(c));

    k = lower_kernel(c, src, "matmul", cfg, shapes, 1, 0);
    remove_inst(k, find_op(k, TJ_OP_TMA_STORE_WAIT, 0));
    cr_expect(strstr(run_simt(c, k), "no tma_store_wait retired"), "%s", tj_diag_render(c));

    k = lower_kernel(c, src, "matmul", cfg, shapes, 1, 0); /* the last group left in flight over the staging */
    tj_ref wait = find_op(k, TJ_OP_WGMMA_WAIT, 1);
    cr_assert_eq(k->insts[wait].imm, 0);
    k->insts[wait].imm = 1;
    cr_expect(strstr(run_simt(c, k), "which a wgmma group in flight reads"), "%s", tj_diag_render(c));
    free(src);
    tj_ctx_free(c);
}

/* ptxas takes the TMA-store kernels of the benchmarks' configurations
 * (bf16 and f32 C), with the wgmma pipeline kept. */
Test(lower_wgmma, tma_stores_assemble)
{
    static char path[1024];
    const char *ptxas = pa_find_ptxas(path, sizeof path);
    if (!ptxas)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    static const char *const configs[] = {"BM=128,BN=256,BK=64,warps=8,stages=4",
                                          "BM=128,BN=128,BK=64,warps=8,stages=3",
                                          "BM=256,BN=128,BK=64,warps=8,stages=4",
                                          "BM=64,BN=256,BK=64,warps=4,stages=2"};
    const char *shapes = "M=4096,N=4096,K=4096";
    char *src = tma_matmul(), *wide = with_f32_c();
    for (unsigned i = 0; i < sizeof configs / sizeof *configs; i++) {
        tj_ctx *c = tj_ctx_new();
        tj_kernel *k = lower_kernel(c, src, "matmul", configs[i], shapes, 1, 0);
        cr_expect_gt(lc_count_op(k, TJ_OP_TMA_STORE), 0, "%s", configs[i]);
        expect_assembles(ptxas, c, k, configs[i]);
        tj_ctx_free(c);
    }
    tj_ctx *c = tj_ctx_new();
    tj_kernel *f32 = lower_kernel(c, wide, "matmul", "BM=128,BN=128,BK=64,warps=8,stages=4", shapes, 1, 0);
    cr_expect_gt(lc_count_op(f32, TJ_OP_TMA_STORE), 0);
    expect_assembles(ptxas, c, f32, "f32 C");
    tj_ctx_free(c);
    free(src);
    free(wide);
}
