/* The native cpu back end on for, if, and shape ops in loops: the kernels of the lowering's
 * catalogue (lower_kernels.h), natively against the interpreter. */
#include <criterion/criterion.h>

#include "cpu_check.h"
#include "lower_kernels.h"

Test(cpu_control, prefetch_in_nested_loops)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=5,N=70";
    o.atol = 1e-4;
    cr_assert(cc_check_tj(NESTLOAD, "nestload", &o));
}

Test(cpu_control, loops_and_branches)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=100";
    o.scalars = "flag=2";
    cr_assert(cc_check_tj(BRANCH, "branch", &o));
}

Test(cpu_control, nested_loops_with_branches)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=150";
    o.scalars = "n=3";
    cr_assert(cc_check_tj(NEST, "nest", &o));
}


Test(cpu_control, broadcast_reshape_permute)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=16,N=32";
    o.atol = 1e-4;
    cr_assert(cc_check_tj(SHAPES, "shapes", &o));
}
