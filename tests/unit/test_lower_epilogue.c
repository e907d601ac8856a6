/* The fused epilogue of a wgmma product (examples/matmul.tj's
 * matmul_bias_gelu): checked against the reference interpreter on the SIMT
 * interpreter at the configurations the benchmarks time, with partial
 * tiles; the bias row goes to the accumulators' layout as BN values, not
 * as the BM x BN broadcast tile (lower/convert.c); each element's chain
 * sits at its store (lower/sink.c); and a product whose shared memory
 * lets two programs share an SM asks ptxas for registers to match
 * (.minnctapersm 2; lower/wgmma.c, lw_wgmma_programs). */
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

Test(lower_epilogue, bias_gelu_matches_the_reference)
{
    static const char *const defines[] = {"BM=128,BN=128,BK=64,stages=3", "BM=128,BN=256,BK=64,stages=2",
                                          "BM=128,BN=64,BK=32,stages=2"};
    char *src = matmul_source();
    for (int d = 0; d < 3; d++) {
        lc_opts o = lc_defaults();
        o.wgmma = 1;
        o.defines = defines[d];
        o.shapes = "M=200,N=144,K=176";
        o.warps[0] = 4;
        o.warps[1] = 8;
        o.warps[2] = 0;
        o.rtol = o.atol = 2e-2; /* bf16 results */
        cr_assert(lc_check_tj(src, "matmul_bias_gelu", &o), "%s", defines[d]);
    }
    free(src);
}

/* matmul_bias_gelu lowered for sm_90a as the JIT does for contiguous
 * tensors of 4096^3. */
static tj_kernel *lower_fused(tj_ctx *c, const char *src, const char *kernel, const char *defines)
{
    tj_pipeline_options po = {.lower.wgmma = 1, .verify = 1};
    tj_kernel *simt = lc_lower_tj(c, src, kernel, defines, "M=4096,N=4096,K=4096", &po);
    cr_assert(simt, "%s", tj_diag_render(c));
    return simt;
}

/* At 128 x 256 / 8 warps a thread holds 2 rows x 64 columns: the bias row
 * moves through shared memory as 256 values (a store or few a thread) and
 * comes back as the 64 columns a thread holds; broadcast first, it was 128
 * stores and 128 loads a thread (and 128 KiB). With C by TMA stores
 * (lower/tma_store.c) its staging adds 64 stores of two bf16 a thread. */
Test(lower_epilogue, bias_row_moves_its_own_values)
{
    tj_ctx *c = tj_ctx_new();
    char *src = matmul_source();
    tj_kernel *k = lower_fused(c, src, "matmul_bias_gelu", "BM=128,BN=256,BK=64,warps=8,stages=4,tma_store=0");
    cr_expect_leq(lc_count_op(k, TJ_OP_ST_SHARED), 8);
    cr_expect_eq(lc_count_op(k, TJ_OP_LD_SHARED), 64);
    k = lower_fused(c, src, "matmul_bias_gelu", "BM=128,BN=256,BK=64,warps=8,stages=4,tma_store=1");
    cr_expect_leq(lc_count_op(k, TJ_OP_ST_SHARED), 8 + 64);
    cr_expect_eq(lc_count_op(k, TJ_OP_LD_SHARED), 64);
    free(src);
    tj_ctx_free(c);
}

/* The body's last erf comes after its first store of C (the first global
 * store; with TMA stores the first staging store, after the barrier that
 * waits for the products to stop reading the ring): each element's chain
 * was moved to its store instead of every op running over all 128
 * accumulators before the first store. */
Test(lower_epilogue, chains_sit_at_their_stores)
{
    tj_ctx *c = tj_ctx_new();
    char *src = matmul_source();
    static const char *const defines[] = {"BM=128,BN=256,BK=64,warps=8,stages=4,tma_store=0",
                                          "BM=128,BN=256,BK=64,warps=8,stages=4,tma_store=1"};
    for (int d = 0; d < 2; d++) {
        tj_kernel *k = lower_fused(c, src, "matmul_bias_gelu", defines[d]);
        const tj_block *b = &k->blocks[k->body];
        int64_t first_store = -1, last_erf = -1, staging = -1, barriers = lc_count_op(k, TJ_OP_BARRIER), seen = 0;
        for (uint32_t i = 0; i < b->ninsts; i++) {
            tj_op op = k->insts[b->insts[i]].op;
            seen += op == TJ_OP_BARRIER;
            if (op == TJ_OP_BARRIER && seen == barriers - 1) /* the TMA store's first */
                staging = i;
            if (first_store < 0 && (d ? op == TJ_OP_ST_SHARED && staging >= 0 : op == TJ_OP_ST_GLOBAL))
                first_store = i;
            if (op == TJ_OP_ERF)
                last_erf = i;
        }
        cr_expect_eq(lc_count_op(k, TJ_OP_ERF), 128);
        cr_expect_eq(lc_count_op(k, TJ_OP_TMA_STORE), d ? 4 : 0);
        cr_expect(first_store >= 0 && last_erf > first_store, "%s: first store at %lld, last erf at %lld",
                  defines[d], (long long)first_store, (long long)last_erf);
    }
    free(src);
    tj_ctx_free(c);
}

/* 128 x 128 x 64 / 8 warps / 3 stages: 96 KiB a program, 64 accumulators
 * a thread: two programs an SM, in the PTX too, and ptxas fits them
 * without a wgmma serialization. 4 stages (128 KiB) and 128 x 256 (128
 * accumulators) stay one. */
Test(lower_epilogue, two_programs_where_they_fit)
{
    tj_ctx *c = tj_ctx_new();
    char *src = matmul_source();
    static const char *const kernels[] = {"matmul", "matmul_bias_gelu"};
    for (int i = 0; i < 2; i++) {
        tj_kernel *two = lower_fused(c, src, kernels[i], "BM=128,BN=128,BK=64,warps=8,stages=3");
        tj_kernel *deep = lower_fused(c, src, kernels[i], "BM=128,BN=128,BK=64,warps=8,stages=4");
        tj_kernel *wide = lower_fused(c, src, kernels[i], "BM=128,BN=256,BK=64,warps=8,stages=2");
        cr_expect_eq(two->programs, 2, "%s", kernels[i]);
        cr_expect_eq(deep->programs, 0, "%s", kernels[i]);
        cr_expect_eq(wide->programs, 0, "%s", kernels[i]);
        tj_buf ptx = {0}, log = {0};
        cr_assert_eq(tj_emit_ptx(two, "sm_90a", &ptx), 0, "%s", tj_diag_render(c));
        cr_expect(strstr(ptx.data, "\n.minnctapersm 2\n"), "%s", kernels[i]);
        char path[1024];
        const char *ptxas = pa_find_ptxas(path, sizeof path);
        if (ptxas) {
            cr_expect_eq(pa_assemble(ptxas, ptx.data, ptx.len, "sm_90a", &log), 0, "%s:\n%s", kernels[i],
                         log.data ? log.data : "");
            cr_expect(!log.data || !strstr(log.data, "wgmma"), "%s:\n%s", kernels[i], log.data);
        }
        tj_buf_free(&ptx);
        tj_buf_free(&log);
    }
    free(src);
    tj_ctx_free(c);
}
