/* The native cpu back end's transposes against the interpreter: 2-D tiles
 * whose dims the vector width divides go block by block through shuffles
 * in registers (codegen/llvm/llvm_shape.c), for 32- and 64-bit lanes and
 * bf16 (held as f32), several blocks each way; other shapes, ranks and
 * narrow types take the strided copy. */
#include <criterion/criterion.h>

#include "cpu_check.h"

static const char *const TRANS = "kernel trans2(a: f32[M, N], b: i32[N, M], c: f64[M, N], d: bf16[M, N], e: u8[M, N],\n"
                                 "               oa: f32[N, M], ob: i32[M, N], oc: f64[N, M], od: bf16[N, M], oe: u8[N, M],\n"
                                 "               of: f32[N, M])\n"
                                 "    grid (1)\n"
                                 "{\n"
                                 "    store(oa[0:N, 0:M], trans(load(a[0:M, 0:N])) * 2.0)\n"
                                 "    store(ob[0:M, 0:N], trans(load(b[0:N, 0:M])) + 1)\n"
                                 "    store(oc[0:N, 0:M], trans(load(c[0:M, 0:N])))\n"
                                 "    store(od[0:N, 0:M], trans(load(d[0:M, 0:N])))\n"
                                 "    store(oe[0:N, 0:M], trans(load(e[0:M, 0:N])))\n"
                                 "    store(of[0:N, 0:M], trans(trans(trans(load(a[0:M, 0:N])))))\n"
                                 "}\n";

static const char *const ODD = "kernel odd(a: f32[M, N], o: f32[N, M], x: f32[2, M, N], p: f32[N, 2, M])\n"
                               "    grid (1)\n"
                               "{\n"
                               "    store(o[0:N, 0:M], trans(load(a[0:M, 0:N])))\n"
                               "    store(p[0:N, 0:2, 0:M], permute(load(x[0:2, 0:M, 0:N]), [2, 0, 1]))\n"
                               "}\n";

Test(cpu_shape, transposes_by_blocks_and_strided)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.ilo = 0, o.ihi = 200;
    o.shapes = "M=32,N=64"; /* 2 x 4 blocks of 16 (f32), 4 x 8 of 8 (f64) */
    cr_assert(cc_check_tj(TRANS, "trans2", &o));
    o.shapes = "M=16,N=16"; /* one block */
    cr_assert(cc_check_tj(TRANS, "trans2", &o));
    o.shapes = "M=6,N=40"; /* not divided: the strided copy */
    cr_assert(cc_check_tj(ODD, "odd", &o));
}
