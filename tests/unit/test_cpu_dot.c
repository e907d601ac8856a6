/* The native cpu back end's matrix products against the interpreter: the
 * register-blocked kernel (M a multiple of 4, N of two vectors; blocks of
 * 8 rows with AVX-512 where M allows, 12 rows take blocks of 4) for f32,
 * bf16 and f16 inputs into f32, f64, batched, with and without an
 * accumulator, inside a loop over k; and the loop nest where the block
 * does not divide the shape (M = 6, N = 24) or the product is integer. */
#include <criterion/criterion.h>

#include "cpu_check.h"

static const char *const FLOATS =
    "kernel floats(a: f32[M, K], b: f32[K, N], d: f64[M, K], f: f64[K, N], p: f32[B, M, K], q: f32[B, K, N],\n"
    "              o1: f32[M, N], o3: f64[M, N], o4: f32[B, M, N], o5: f32[M, N], o8: f32[M, N])\n"
    "    grid (1)\n"
    "    const BM = 8, BN = 32, BK = 16\n"
    "{\n"
    "    acc = zeros(f32[BM, BN])\n"
    "    for k in range(0, K, BK) {\n"
    "        acc = dot(load(a[0:BM, k:k+BK]), load(b[k:k+BK, 0:BN]), acc, precision = \"ieee\")\n"
    "    }\n"
    "    store(o1[0:BM, 0:BN], acc)\n"
    "    store(o3[0:BM, 0:BN], dot(load(d[0:BM, 0:BK]), load(f[0:BK, 0:BN]), load(o3[0:BM, 0:BN])))\n"
    "    store(o4[0:2, 0:BM, 0:BN], dot(load(p[0:2, 0:BM, 0:BK]), load(q[0:2, 0:BK, 0:BN]), precision = \"ieee\"))\n"
    "    store(o5[0:6, 0:24], dot(load(a[0:6, 0:BK]), load(b[0:BK, 0:24]), precision = \"ieee\"))\n"
    "    store(o8[0:12, 0:BN], dot(load(a[0:12, 0:BK]), load(b[0:BK, 0:BN]), load(o8[0:12, 0:BN]), precision = \"ieee\"))\n"
    "}\n";

static const char *const NARROW =
    "kernel narrow(h: bf16[M, K], e: bf16[K, N], s: f16[M, K], t: f16[K, N], i: i8[M, K], j: i8[K, N],\n"
    "              o2: f32[M, N], o6: i32[M, N], o7: f32[M, N])\n"
    "    grid (1)\n"
    "    const BM = 8, BN = 32, BK = 16\n"
    "{\n"
    "    store(o2[0:BM, 0:BN], dot(load(h[0:BM, 0:BK]), load(e[0:BK, 0:BN])))\n"
    "    store(o6[0:BM, 0:BN], dot(load(i[0:BM, 0:BK]), load(j[0:BK, 0:BN])))\n"
    "    store(o7[0:BM, 0:BN], dot(load(s[0:BM, 0:BK]), load(t[0:BK, 0:BN])))\n"
    "}\n";

/* A carried accumulator read only by the product is summed into in place:
 * o1 above; here one read again after the product (which must see the old
 * value), and two carried tiles swapped by the yield, one of them summed
 * into in place. */
static const char *const CARRIED =
    "kernel carried(a: f32[M, K], b: f32[K, N], o1: f32[M, N], o2: f32[M, N], o3: f32[M, N], o4: f32[M, N])\n"
    "    grid (1)\n"
    "    const BM = 8, BN = 32, BK = 16\n"
    "{\n"
    "    acc = zeros(f32[BM, BN])\n"
    "    for k in range(0, K, BK) {\n"
    "        acc = dot(load(a[0:BM, k:k+BK]), load(b[k:k+BK, 0:BN]), acc, precision = \"ieee\") - acc * 0.5\n"
    "    }\n"
    "    store(o1[0:BM, 0:BN], acc)\n"
    "    x = zeros(f32[BM, BN]) + 1.0\n"
    "    y = zeros(f32[BM, BN])\n"
    "    for k in range(0, K, BK) {\n"
    "        x, y = dot(load(a[0:BM, k:k+BK]), load(b[k:k+BK, 0:BN]), y, precision = \"ieee\"), x\n"
    "    }\n"
    "    store(o2[0:BM, 0:BN], x)\n"
    "    store(o3[0:BM, 0:BN], y)\n"
    /* z's one use is in an inner loop, which runs the product twice from
     * the same z: summing into z's buffer would add it twice */
    "    z = zeros(f32[BM, BN]) + 2.0\n"
    "    for k in range(0, K, BK) {\n"
    "        t = zeros(f32[BM, BN])\n"
    "        for j in range(0, 2) {\n"
    "            t = dot(load(a[0:BM, k:k+BK]), load(b[k:k+BK, 0:BN]), z, precision = \"ieee\")\n"
    "        }\n"
    "        z = t\n"
    "    }\n"
    "    store(o4[0:BM, 0:BN], z)\n"
    "}\n";

Test(cpu_dot, register_blocks_and_the_loop_nest)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=12,N=32,K=48,B=2";
    o.ilo = -5, o.ihi = 5;
    cr_assert(cc_check_tj(FLOATS, "floats", &o));
    cr_assert(cc_check_tj(NARROW, "narrow", &o));
    cr_assert(cc_check_tj(CARRIED, "carried", &o));
}
