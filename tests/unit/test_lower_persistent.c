/* The persistent matmuls of examples/matmul.tj (matmul_persistent and
 * matmul_persistent_bias_gelu): one loop over the k steps of a program's
 * tiles, the accumulator started over by where(kk == 0, 0.0, acc) and
 * stored under an `if` at a tile's last step. Checked differentially
 * against the reference interpreter on sm_90a's lowering (wgmma, TMA rings
 * running from one tile into the next, with and without a producer warp)
 * and on the mma.sync one; ptxas takes every benchmarked configuration
 * with the wgmma pipeline kept. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "lower_check.h"
#include "ptxas_util.h"
#include "source_file.h"

static char *matmul_source(void)
{
    char *text = tu_source_file("examples/matmul.tj");
    cr_assert(text, "cannot read examples/matmul.tj");
    return text;
}

static lc_opts opts(const char *defines, const char *shapes, const char *scalars, int wgmma)
{
    lc_opts o = lc_wgmma_opts(defines, shapes);
    o.wgmma = wgmma;
    o.scalars = scalars;
    return o;
}

/* Fewer programs than tiles (each walks several, the ring's phases
 * running on across them), more programs asked for than tiles (as many as
 * tiles run), programs = 0 (one runs), partial tiles on every axis, a K of
 * many steps, K below one step, rings of 2 to 4 slots, a producer warp. */
Test(lower_persistent, matmul_matches_the_reference)
{
    char *src = matmul_source();
    static const struct {
        const char *defines, *shapes, *scalars;
    } cases[] = {
        {"BM=128,BN=128,BK=64,stages=3", "M=200,N=272,K=176", "programs=3"},
        {"BM=128,BN=64,BK=32,stages=2", "M=264,N=144,K=160", "programs=4"},
        {"BM=128,BN=128,BK=64,stages=4", "M=136,N=144,K=1040", "programs=2"},
        {"BM=64,BN=64,BK=64,stages=3", "M=136,N=144,K=40", "programs=5"},
        {"BM=128,BN=128,BK=64,stages=3", "M=200,N=144,K=176", "programs=7"},
        {"BM=128,BN=128,BK=64,stages=3,producer=1", "M=200,N=272,K=176", "programs=3"},
        {"BM=128,BN=256,BK=64,stages=4,producer=1", "M=136,N=272,K=320", "programs=2"},
        {"BM=128,BN=128,BK=64,stages=2", "M=200,N=144,K=176", "programs=0"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int wgmma = 0; wgmma < 2; wgmma++) {
            lc_opts o = opts(cases[i].defines, cases[i].shapes, cases[i].scalars, wgmma);
            cr_assert(lc_check_tj(src, "matmul_persistent", &o), "%s %s %s%s", cases[i].defines, cases[i].shapes,
                      cases[i].scalars, wgmma ? " (wgmma)" : " (mma.sync)");
        }
    free(src);
}

/* f16 operands and C (bench/gpu/persistent_rows.py's kernels with bf16
 * replaced, as bench.py times f16). */
Test(lower_persistent, f16_matches_the_reference)
{
    char *src = matmul_source();
    for (char *t = strstr(src, "bf16"); t; t = strstr(t, "bf16")) /* same length: " f16" */
        memcpy(t, " f16", 4);
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3", "BM=128,BN=256,BK=64,stages=4,producer=1"};
    for (int d = 0; d < 2; d++) {
        lc_opts o = opts(defines[d], "M=200,N=272,K=176", "programs=3", 1);
        cr_assert(lc_check_tj(src, "matmul_persistent", &o), "%s", defines[d]);
        cr_assert(lc_check_tj(src, "matmul_persistent_bias_gelu", &o), "%s", defines[d]);
    }
    free(src);
}

Test(lower_persistent, bias_gelu_matches_the_reference)
{
    char *src = matmul_source();
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3", "BM=128,BN=128,BK=64,stages=3,producer=1"};
    for (int d = 0; d < 2; d++)
        for (int wgmma = 0; wgmma < 2; wgmma++) {
            lc_opts o = opts(defines[d], "M=200,N=272,K=176", "programs=3", wgmma);
            cr_assert(lc_check_tj(src, "matmul_persistent_bias_gelu", &o), "%s%s", defines[d],
                      wgmma ? " (wgmma)" : " (mma.sync)");
        }
    free(src);
}

static tj_kernel *lower(tj_ctx *c, const char *src, const char *name, const char *defines, const char *shapes)
{
    tj_pipeline_options po = {.lower.wgmma = 1, .verify = 1};
    tj_kernel *simt = lc_lower_tj(c, src, name, defines, shapes, &po);
    cr_assert(simt, "%s", tj_diag_render(c));
    return simt;
}

/* The wgmma whose first k step starts the tile over, the one loop with
 * its TMA ring (no mbarrier set up again per tile: one init a slot, before
 * the loop), and the epilogue's wait for every group inside the `if`. */
Test(lower_persistent, one_ring_across_the_tiles)
{
    char *src = matmul_source();
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = lower(c, src, "matmul_persistent", "BM=128,BN=256,BK=64,warps=8,stages=4", "M=4096,N=4096,K=4096");
    int zero = 0, ifs = 0;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        zero += in->block && in->op == TJ_OP_WGMMA && (in->flags & TJ_WGMMA_ZERO);
        ifs += in->block && in->op == TJ_OP_IF;
    }
    cr_expect_eq(zero, 1, "one wgmma a group (the first k step) takes the zero operand");
    cr_expect_eq(lc_count_op(k, TJ_OP_FOR), 1, "the k steps of every tile");
    cr_expect_eq(ifs, 1, "the epilogue");
    cr_expect_eq(lc_count_op(k, TJ_OP_BARRIER), 2, "after the mbarriers' init and after the loop: none in it");
    cr_expect_eq(lc_count_op(k, TJ_OP_MBAR_INIT), 8, "4 slots, a full and an empty mbarrier each, set up once");
    cr_expect_eq(lc_count_op(k, TJ_OP_WGMMA_WAIT), 3, "the loop's {1}, the epilogue's {0}, the last group's {0}");
    tj_ctx_free(c);
    free(src);
}

/* With tma_store = 1 each tile's C goes through a staging region of the
 * loop's own, thread 0's copies in flight into the next tile: several
 * tiles a program (the staging reused, after the wait for the previous
 * copies' reads), partial tiles clipped by the copy engine, bf16 and f16,
 * plain and bias + gelu. Where ring and staging do not fit (128 x 256 at
 * 4 stages) the threads store C. */
Test(lower_persistent, tma_stores_in_flight_match_the_reference)
{
    char *src = matmul_source();
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3,tma_store=1",
                                          "BM=128,BN=256,BK=64,stages=3,tma_store=1",
                                          "BM=128,BN=64,BK=32,stages=2,tma_store=1",
                                          "BM=128,BN=256,BK=64,stages=4,tma_store=1"};
    for (int d = 0; d < 4; d++)
        for (int kernel = 0; kernel < 2; kernel++) {
            lc_opts o = opts(defines[d], "M=264,N=272,K=176", "programs=2", 1);
            const char *name = kernel ? "matmul_persistent_bias_gelu" : "matmul_persistent";
            cr_assert(lc_check_tj(src, name, &o), "%s %s", name, defines[d]);
        }
    for (char *t = strstr(src, "bf16"); t; t = strstr(t, "bf16"))
        memcpy(t, " f16", 4);
    lc_opts o = opts("BM=128,BN=128,BK=64,stages=4,tma_store=1", "M=200,N=144,K=320", "programs=3", 1);
    cr_assert(lc_check_tj(src, "matmul_persistent", &o));
    free(src);
}

/* simt (matmul_persistent at M = N = K = 256, 2 programs) on ones: ""
 * where every element of C is 256, else the diagnostics or "wrong". */
static const char *run_ones(tj_ctx *c, const tj_kernel *simt)
{
    static uint16_t a[256 * 256], b[256 * 256], out[256 * 256];
    for (int i = 0; i < 256 * 256; i++) {
        a[i] = b[i] = 0x3f80; /* bf16 1.0 */
        out[i] = 0;
    }
    void *data[3] = {a, b, out};
    tj_arg args[4];
    for (int i = 0; i < 3; i++)
        args[i] = (tj_arg){.is_tensor = 1,
                           .tensor = {.dtype = TJ_DT_BF16, .rank = 2, .shape = {256, 256}, .strides = {256, 1},
                                      .data = data[i]}};
    args[3] = (tj_arg){.scalar.i = 2};
    tj_diag_clear(c);
    if (tj_simt_run(simt, args, 4))
        return tj_diag_render(c);
    return lc_all_u16(out, 256 * 256, 0x4380 /* bf16 256.0 */) ? "" : "wrong";
}

/* The interpreter catches the staging written while the previous tile's
 * copies still read it (the wait before the staging removed) and a
 * program that ends with its last copies unawaited (the drain removed):
 * each a one-instruction change of a correct kernel. Two programs of two
 * 128 x 128 tiles each, so the staging is reused. */
Test(lower_persistent, interpreter_catches_broken_stores_in_flight)
{
    char *src = matmul_source();
    tj_ctx *c = tj_ctx_new();
    const char *cfg = "BM=128,BN=128,BK=64,warps=8,stages=3,tma_store=1", *shapes = "M=256,N=256,K=256";
    tj_kernel *k = lower(c, src, "matmul_persistent", cfg, shapes);
    cr_assert_eq(lc_count_op(k, TJ_OP_TMA_STORE), 2, "two column blocks of 64");
    cr_assert_eq(lc_count_op(k, TJ_OP_TMA_STORE_WAIT), 2, "before the staging, after the loop");
    cr_assert_str_eq(run_ones(c, k), "");
    lc_remove_inst(k, lc_nth_op(k, TJ_OP_TMA_STORE_WAIT, 0));
    cr_expect(strstr(run_ones(c, k), "which a TMA store of thread 0 still reads"), "%s", tj_diag_render(c));
    k = lower(c, src, "matmul_persistent", cfg, shapes);
    lc_remove_inst(k, lc_nth_op(k, TJ_OP_TMA_STORE_WAIT, 1));
    cr_expect(strstr(run_ones(c, k), "no tma_store_wait retired"), "%s", tj_diag_render(c));
    k = lower(c, src, "matmul_persistent", "BM=128,BN=256,BK=64,warps=8,stages=4,tma_store=1", shapes);
    cr_expect_eq(lc_count_op(k, TJ_OP_TMA_STORE), 0, "ring and staging would pass the shared memory");
    tj_ctx_free(c);
    free(src);
}

/* K = 0 would give a tile no k step, so no store: the kernels' where
 * clause refuses it (here at the choice of a configuration; at launch,
 * runtime/jit.c checks it for the arguments). */
Test(lower_persistent, k_zero_is_refused)
{
    char *src = matmul_source();
    for (int kernel = 0; kernel < 2; kernel++) {
        tj_ctx *c = tj_ctx_new();
        tj_pipeline_options po = {.lower.wgmma = 1, .verify = 1};
        const char *name = kernel ? "matmul_persistent_bias_gelu" : "matmul_persistent";
        cr_expect_null(lc_lower_tj(c, src, name, "BM=128,BN=128,BK=64,stages=3", "M=130,N=144,K=0", &po), "%s", name);
        cr_expect(strstr(tj_diag_render(c), "satisfies 'where K > 0' with K = 0"), "%s: %s", name, tj_diag_render(c));
        tj_ctx_free(c);
    }
    free(src);
}

/* Every configuration bench/gpu/persistent_rows.py times assembles, ptxas
 * keeping the wgmma pipeline (no serialization warning). */
Test(lower_persistent, configs_assemble)
{
    static char path[1024];
    const char *ptxas = pa_find_ptxas(path, sizeof path);
    if (!ptxas)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    static const char *const configs[] = {
        "BM=128,BN=256,BK=64,warps=8,stages=4",   "BM=128,BN=256,BK=64,warps=8,stages=3",
        "BM=256,BN=128,BK=64,warps=8,stages=4",   "BM=128,BN=128,BK=64,warps=8,stages=3",
        "BM=128,BN=128,BK=64,warps=8,stages=4",   "BM=128,BN=256,BK=64,warps=8,stages=4,producer=1",
        "BM=128,BN=256,BK=64,warps=8,stages=3,producer=1", "BM=128,BN=128,BK=64,warps=8,stages=4,producer=1",
        "BM=128,BN=256,BK=64,warps=8,stages=3,tma_store=1", "BM=128,BN=128,BK=64,warps=8,stages=4,tma_store=1"};
    char *src = matmul_source();
    for (int kernel = 0; kernel < 2; kernel++)
        for (unsigned i = 0; i < sizeof configs / sizeof *configs; i++) {
            tj_ctx *c = tj_ctx_new();
            const char *name = kernel ? "matmul_persistent_bias_gelu" : "matmul_persistent";
            tj_kernel *simt = lower(c, src, name, configs[i], "M=4096,N=4096,K=4096");
            tj_buf ptx = {0}, log = {0};
            cr_assert_eq(tj_emit_ptx(simt, "sm_90a", &ptx), 0, "%s", tj_diag_render(c));
            cr_expect_eq(pa_assemble(ptxas, ptx.data, ptx.len, "sm_90a", &log), 0, "%s %s:\n%s", name, configs[i],
                         log.data ? log.data : "");
            cr_expect(!log.data || !strstr(log.data, "wgmma"), "%s %s:\n%s", name, configs[i], log.data);
            tj_buf_free(&ptx);
            tj_buf_free(&log);
            tj_ctx_free(c);
        }
    free(src);
}
