/* The native cpu back end's scans against the interpreter: cumsum and
 * cumprod along contiguous lines run W lanes at a time (an in-register
 * scan plus the running total), with a scalar tail when the line is not a
 * multiple of the vector; other axes, f16, and short lines stay scalar.
 * Integers must agree exactly (wrapping), floats within the tolerance. */
#include <criterion/criterion.h>

#include "cpu_check.h"

static const char *const SCANS = "kernel scans(a: f32[M, N], b: i32[M, N], c: u8[M, N], d: f64[M, N], e: i64[M, N],\n"
                                 "             h: f16[M, N], oa: f32[M, N], ob: i32[M, N], oc: u8[M, N], od: f64[M, N],\n"
                                 "             oe: i64[M, N], oh: f16[M, N], of: f32[M, N], og: i32[M, N])\n"
                                 "    grid (cdiv(M, BM))\n"
                                 "    const BM = 4, B = 200\n"
                                 "{\n"
                                 "    m = program_id(0) * BM\n"
                                 "    store(oa[m:m+BM, 0:B], cumsum(load(a[m:m+BM, 0:B], other = 0.0), axis = 1))\n"
                                 "    store(ob[m:m+BM, 0:B], cumprod(load(b[m:m+BM, 0:B], other = 1), axis = 1))\n"
                                 "    store(oc[m:m+BM, 0:B], cumsum(load(c[m:m+BM, 0:B]), axis = 1))\n"
                                 "    store(od[m:m+BM, 0:B], cumprod(load(d[m:m+BM, 0:B], other = 1.0) * 0.1 + 1.0, axis = 1))\n"
                                 "    store(oe[m:m+BM, 0:B], cumsum(load(e[m:m+BM, 0:B]), axis = 1))\n"
                                 "    store(oh[m:m+BM, 0:B], cumsum(load(h[m:m+BM, 0:B]), axis = 1))\n"
                                 "    store(of[m:m+BM, 0:B], cumsum(load(a[m:m+BM, 0:B], other = 0.0), axis = 0))\n"
                                 "    store(og[m:m+BM, 0:B], reshape(cumsum(reshape(load(b[m:m+BM, 0:B]), [BM * B]), axis = 0), [BM, B]))\n"
                                 "}\n";

Test(cpu_scan, vectors_and_tails_of_every_width)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=9,N=190"; /* partial tiles: the loads' other values are scanned too */
    o.ilo = -3, o.ihi = 3;
    cr_assert(cc_check_tj(SCANS, "scans", &o));
    o.shapes = "M=8,N=200";
    o.specials = 1; /* NaN and inf run through the blocks' carries */
    cr_assert(cc_check_tj(SCANS, "scans", &o));
}
