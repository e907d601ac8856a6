/* The native cpu back end on dot (matrix products) and attention: the kernels of the lowering's
 * catalogue (lower_kernels.h), natively against the interpreter. */
#include <criterion/criterion.h>

#include "cpu_check.h"
#include "lower_kernels.h"

Test(cpu_dot, matmul_bf16_loop)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.defines = "BM=64,BN=64,BK=32,stages=2";
    o.shapes = "M=70,N=64,K=80";
    o.warps[0] = 4;
    o.warps[1] = 8;
    o.warps[2] = 0;
    cr_assert(cc_check_tj(MATMUL, "matmul", &o));
}

/* Copy rings (lower/ring.c): 2, 3 and 4 slots, partial tiles on every axis
 * (zero-filled copies), a row stride that is not a multiple of 16 bytes (no
 * ring: K = 84), and an operand with `other = 1.0` (registers) beside one
 * in a ring. */

Test(cpu_dot, matmul_copy_rings)
{
    CC_REQUIRE_LLVM();
    static const char *const defines[] = {"BM=64,BN=64,BK=32,stages=3", "BM=32,BN=64,BK=16,stages=4"};
    static const char *const shapes[] = {"M=70,N=72,K=88", "M=64,N=64,K=84"};
    lc_opts o = lc_defaults();
    o.warps[0] = 4;
    o.warps[1] = 0;
    for (int d = 0; d < 2; d++) {
        for (int s = 0; s < 2; s++) {
            o.defines = defines[d];
            o.shapes = shapes[s];
            cr_assert(cc_check_tj(MATMUL, "matmul", &o), "%s %s", defines[d], shapes[s]);
        }
    }
    o.defines = "stages=3";
    o.shapes = "M=40,N=64,K=72";
    cr_assert(cc_check_tj(MM_OTHER, "mm_other", &o));
    static const char *const nested[] = {"stages=2", "stages=3", "stages=4"};
    static const char *const ks[] = {"M=40,N=64,K=160", "M=32,N=32,K=24", "M=32,N=64,K=8"}; /* K <= 16: no iteration */
    for (int d = 0; d < 3; d++) {
        o.defines = nested[d];
        o.shapes = ks[d];
        cr_assert(cc_check_tj(MM_NESTED, "mm_nested", &o), "%s %s", nested[d], ks[d]);
    }
}

/* Found by the differential fuzzer (tests/fuzz/fuzz_lower.c): a row-broadcast
 * accumulator was taken for a splat where each thread's registers lie in one
 * row, and filled every fragment with the lane's own row value. */

Test(cpu_dot, dot_broadcast_accumulators)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=40";
    o.rtol = o.atol = 2e-2; /* tf32, bf16 products */
    cr_assert(cc_check_tj(DOT_ACC, "dot_acc", &o));
}

Test(cpu_dot, matmul_f32_partial_tiles)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=20,K=19";
    cr_assert(cc_check_tj(MM32, "mm", &o));      /* the matrix atom */
    cr_assert(cc_check_tj(MM32_IEEE, "mm", &o)); /* FMAs */
    o.shapes = "M=40,N=48,K=40";
    cr_assert(cc_check_tj(MMT, "mmt", &o)); /* b = trans(x): role bt */
}

Test(cpu_dot, attention)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "B=1,H=2,S=70,D=16";
    o.scalars = "scale=0.25";
    o.warps[0] = 4;
    o.warps[1] = 0;
    static const char *const defines[] = {"BM=64,BN=32,stages=1", "BM=64,BN=32,stages=2", "BM=32,BN=16,stages=3"};
    for (int d = 0; d < 3; d++) { /* stages > 1: K and V in copy rings */
        o.defines = defines[d];
        cr_assert(cc_check_tj(ATTENTION, "attention", &o), "%s", defines[d]);
    }
}

Test(cpu_dot, batched_dot_and_permute)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "Bt=2,M=16,K=8,N=32";
    cr_assert(cc_check_tj(BDOT, "bdot", &o));
    o.shapes = "Bt=1,M=10,K=5,N=30";
    cr_assert(cc_check_tj(BDOT, "bdot", &o));
}
