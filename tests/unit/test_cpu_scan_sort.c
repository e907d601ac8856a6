/* The native cpu back end on cumsum, scan with a combine region, sort: the kernels of the lowering's
 * catalogue (lower_kernels.h), natively against the interpreter. */
#include <criterion/criterion.h>

#include "cpu_check.h"
#include "lower_kernels.h"

Test(cpu_scan_sort, scan_with_combine_region)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.lo = 0.5;
    o.hi = 1.0;
    o.rtol = 1e-3;
    o.shapes = "R=3,L=1000";
    cr_assert(cc_check_tj(RECURRENCE, "recurrence", &o));
    o.defines = "BL=100";
    o.shapes = "R=2,L=100";
    cr_assert(cc_check_tj(RECURRENCE, "recurrence", &o));
}

Test(cpu_scan_sort, cumsum_across_warps)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=64,N=16";
    cr_assert(cc_check_tj(CUMSUM2, "cum", &o));
    o.defines = "BM=48,BN=12"; /* extents that are not powers of two */
    o.shapes = "M=48,N=12";
    cr_assert(cc_check_tj(CUMSUM2, "cum", &o));
}

Test(cpu_scan_sort, sort_stable_with_values)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=3,N=64";
    o.specials = 1; /* NaN, inf, -0 and ties */
    cr_assert(cc_check_tj(SORT, "sorter", &o));
    o.defines = "BN=50";
    o.shapes = "M=2,N=50";
    cr_assert(cc_check_tj(SORT, "sorter", &o));
}

Test(cpu_scan_sort, sort_rows_in_registers_lanes_and_warps)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.defines = "BLOCK=1024";
    o.shapes = "M=3,N=1000";
    o.specials = 1;
    cr_assert(cc_check_tj(SORTROWS, "sort_rows", &o));
    o.defines = "BLOCK=256";
    o.shapes = "M=2,N=256";
    o.int_range = "I=0:1000";
    cr_assert(cc_check_tj(SORTROWS, "sort_rows", &o));
}

Test(cpu_scan_sort, sort_along_each_axis)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=16,N=32";
    o.ilo = -10;
    o.ihi = 10;
    cr_assert(cc_check_tj(SORT2D, "sort2", &o));
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

Test(cpu_scan_sort, first_axis_scan_sort_flat_argmin)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=24";
    o.specials = 1;
    o.atol = 1e-4;
    cr_assert(cc_check_ir(FLAT_IR, &o));
}

