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
    o.signed_zeros = 1;
    o.ilo = -100, o.ihi = 100;
    cr_assert(cc_check_tj(SORTS, "sorts", &o));
    o.specials = 0;
    o.ilo = 0, o.ihi = 3; /* small integers: most bytes shared, ties everywhere (stability) */
    o.lo = -2, o.hi = 2;
    cr_assert(cc_check_tj(SORTS, "sorts", &o));
}

/* Keys alone, which a host with AVX2 sorts with the network
 * (llvm_sort_net.c) and brings back from their order keys: -0 and +0 (one
 * key) and NaNs must come out in the line's order, ascending and
 * descending, for lines from shorter than the network's smallest (64) to
 * longer than its register blocks, masked rows, and lines along axis 0. */
static const char *const KEYS = "kernel keys(x: f32[M, N], h: bf16[M, N], i: i32[M, N], u: u8[M, N],\n"
                                "             ox: f32[M, N], od: f32[M, N], oh: bf16[M, N], oi: i32[M, N],\n"
                                "             ou: u8[M, N], oc: f32[M, N])\n"
                                "    grid (cdiv(M, 4))\n"
                                "    tune B in [8, 64, 100, 1024, 2048, 8192]\n"
                                "{\n"
                                "    r = program_id(0) * 4\n"
                                "    for q in range(0, 4) {\n"
                                "        store(ox[r + q, 0:B], sort(load(x[r + q, 0:B], other = inf)))\n"
                                "        store(od[r + q, 0:B], sort(load(x[r + q, 0:B], other = -inf), descending = true))\n"
                                "        store(oh[r + q, 0:B], sort(load(h[r + q, 0:B], other = bf16(inf)), descending = true))\n"
                                "        store(oi[r + q, 0:B], sort(load(i[r + q, 0:B], other = 2147483647)))\n"
                                "        store(ou[r + q, 0:B], sort(load(u[r + q, 0:B], other = u8(255)), descending = true))\n"
                                "    }\n"
                                "    store(oc[r:r+4, 0:B], sort(load(x[r:r+4, 0:B], other = nan), 0))\n"
                                "}\n";

Test(cpu_sort, keys_alone_keep_the_order_of_zeros_and_nans)
{
    CC_REQUIRE_LLVM();
    static const char *const cases[][2] = {
        {"B=8", "M=8,N=7"},         {"B=64", "M=8,N=64"},     {"B=100", "M=4,N=99"},
        {"B=1024", "M=8,N=1000"},   {"B=2048", "M=4,N=2048"}, {"B=8192", "M=4,N=8000"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lc_opts o = lc_defaults();
        o.defines = cases[c][0];
        o.shapes = cases[c][1];
        o.specials = 1; /* NaN, inf, -0, ties of +0 and -0 */
        o.signed_zeros = 1;
        o.ilo = -3, o.ihi = 3;
        o.seed = (unsigned)c + 7;
        cr_assert(cc_check_tj(KEYS, "keys", &o), "%s %s", cases[c][0], cases[c][1]);
    }
}
