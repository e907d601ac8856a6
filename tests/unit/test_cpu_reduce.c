/* The native cpu back end on reductions and argmax/argmin: the kernels of the lowering's
 * catalogue (lower_kernels.h), natively against the interpreter. */
#include <criterion/criterion.h>

#include "cpu_check.h"
#include "lower_kernels.h"

Test(cpu_reduce, softmax)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.defines = "BLOCK=256";
    o.shapes = "M=5,N=200";
    cr_assert(cc_check_tj(SOFTMAX, "softmax", &o));
    o.defines = "BLOCK=1024";
    o.shapes = "M=3,N=1024";
    cr_assert(cc_check_tj(SOFTMAX, "softmax", &o));
}

Test(cpu_reduce, reductions_along_rows)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=37,N=64";
    o.rtol = 1e-4;
    o.atol = 1e-4;
    cr_assert(cc_check_tj(ROWS, "rows", &o));
    o.shapes = "M=16,N=50";
    o.specials = 1;
    cr_assert(cc_check_tj(ROWS, "rows", &o));
}

Test(cpu_reduce, reductions_along_columns)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=64,N=32";
    cr_assert(cc_check_tj(COLS, "cols", &o));
    o.shapes = "M=50,N=20";
    o.specials = 1;
    cr_assert(cc_check_tj(COLS, "cols", &o));
}

Test(cpu_reduce, reductions_to_scalars)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=8,N=16";
    o.ilo = -5; /* many ties: the first index wins */
    o.ihi = 5;
    cr_assert(cc_check_tj(WHOLE, "whole", &o));
    o.shapes = "M=5,N=11";
    cr_assert(cc_check_tj(WHOLE, "whole", &o));
}
