/* The native cpu back end's sorts against the interpreter: keys of every
 * width (32-bit keys for dtypes of 32 bits or fewer, 64-bit ones above),
 * NaN, infinities and -0 among floats, negative and small integers (whose
 * high bytes every key shares: passes skipped), ascending and descending,
 * with values carried along, rows shorter than the tile. */
#include <criterion/criterion.h>

#include "cpu_check.h"

static const char *const SORTS = "kernel sorts(a: f16[M, N], b: bf16[M, N], c: i8[M, N], d: u16[M, N], e: f64[M, N],\n"
                                 "             f: i64[M, N], g: f32[M, N], v: i32[M, N],\n"
                                 "             oa: f16[M, N], ob: bf16[M, N], oc: i8[M, N], od: u16[M, N],\n"
                                 "             oe: f64[M, N], of: i64[M, N], og: f32[M, N], ov: i32[M, N])\n"
                                 "    grid (M)\n"
                                 "    const B = 128\n"
                                 "{\n"
                                 "    r = program_id(0)\n"
                                 "    store(oa[r, 0:B], sort(load(a[r, 0:B], other = f16(inf))))\n"
                                 "    store(ob[r, 0:B], sort(load(b[r, 0:B], other = bf16(inf)), descending = true))\n"
                                 "    store(oc[r, 0:B], sort(load(c[r, 0:B], other = i8(127))))\n"
                                 "    store(od[r, 0:B], sort(load(d[r, 0:B]), descending = true))\n"
                                 "    store(oe[r, 0:B], sort(load(e[r, 0:B], other = inf)))\n"
                                 "    store(of[r, 0:B], sort(load(f[r, 0:B]), descending = true))\n"
                                 "    (k, w) = sort(load(g[r, 0:B], other = inf), load(v[r, 0:B]))\n"
                                 "    store(og[r, 0:B], k)\n"
                                 "    store(ov[r, 0:B], w)\n"
                                 "}\n";

Test(cpu_sort, every_key_width_and_the_special_values)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=5,N=100";
    o.specials = 1; /* NaN, inf, -0 */
    o.ilo = -100, o.ihi = 100;
    cr_assert(cc_check_tj(SORTS, "sorts", &o));
    o.specials = 0;
    o.ilo = 0, o.ihi = 3; /* small integers: most bytes shared, ties everywhere (stability) */
    o.lo = -2, o.hi = 2;
    cr_assert(cc_check_tj(SORTS, "sorts", &o));
}
