/* The native cpu back end on loads, stores, masks, gathers and atomics: the kernels of the lowering's
 * catalogue (lower_kernels.h), natively against the interpreter. */
#include <criterion/criterion.h>

#include "cpu_check.h"
#include "lower_kernels.h"

Test(cpu_memory, elementwise_partial_tiles)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=1000";
    cr_assert(cc_check_tj(EW, "ew", &o));
    o.facts = 0;
    cr_assert(cc_check_tj(EW, "ew", &o));
}

Test(cpu_memory, elementwise_vector_accesses)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=4096";
    cr_assert(cc_check_tj(EW, "ew", &o));
}

Test(cpu_memory, vector_add)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=3000";
    cr_assert(cc_check_tj(ADD, "add", &o));
    o.shapes = "N=8192";
    cr_assert(cc_check_tj(ADD, "add", &o));
    o.defines = "BLOCK=64"; /* fewer elements than threads: replicas store once */
    o.shapes = "N=200";
    cr_assert(cc_check_tj(ADD, "add", &o));
}

Test(cpu_memory, masks_and_other)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=1024";
    o.scalars = "n=900";
    cr_assert(cc_check_tj(MASKED, "masked", &o));
    o.shapes = "N=333";
    cr_assert(cc_check_tj(MASKED, "masked", &o));
}

Test(cpu_memory, gather_rows)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "V=50,D=16,N=70";
    o.int_range = "idx=-3:53"; /* some out of range: they read 0 */
    cr_assert(cc_check_tj(EMBED, "embed", &o));
    o.shapes = "V=50,D=20,N=64";
    cr_assert(cc_check_tj(EMBED, "embed", &o));
}

Test(cpu_memory, scatter_last_wins_and_atomics)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "V=10,D=16,N=32"; /* one program: duplicates resolve in row-major order */
    o.int_range = "idx=-1:11";
    o.lo = 0;
    o.hi = 4;
    o.rtol = 1e-5;
    cr_assert(cc_check_tj(SCATTER, "scat", &o));
    o.shapes = "V=40,D=8,N=20";
    cr_assert(cc_check_tj(SCATTER, "scat", &o));
}

Test(cpu_memory, masked_scatter_with_duplicates)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "V=4,D=8,N=16"; /* 16 rows into 4: every target repeats; the mask decides who is last */
    o.int_range = "idx=0:4";
    cr_assert(cc_check_tj(MSCATTER, "mscat", &o));
    o.seed = 7;
    cr_assert(cc_check_tj(MSCATTER, "mscat", &o));
}

Test(cpu_memory, two_gathers_bool_i8_scalars_atomics)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=6,N=40,V=12";
    o.int_range = "I=-1:7,J=-1:11,C8=-100:100";
    cr_assert(cc_check_tj(MISC, "misc", &o));
    o.facts = 0;
    cr_assert(cc_check_tj(MISC, "misc", &o));
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

Test(cpu_memory, specialized_without_bounds_checks)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "N=4096";
    cr_assert(cc_check_ir(SPEC_IR, &o));
}
