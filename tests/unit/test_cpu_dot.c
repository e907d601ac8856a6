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

/* The k loop stops where both operands are padding (loads past K with
 * other +0 or none: llvm_dot.c live_k), and a result cut short takes
 * + 0.0, what the skipped +0 products do to a -0 sum. K = 20 in steps of
 * 16 (4 of the second step's 16 live), K = 32 (none skipped), with NaN,
 * inf and signed zeros among the values, f32 and bf16 inputs, blocked (N a
 * multiple of two vectors) and looped (BN = 24). */
static const char *const KPAD = "kernel kpad(A: f32[M, K], B: f32[K, N], C: f32[M, N], H: bf16[M, K], G: bf16[K, N],\n"
                                "            Y: f32[M, N], Z: f32[M, N], W: f32[M, N])\n"
                                "    grid (cdiv(M, BM), cdiv(N, BN))\n"
                                "    const BM = 8, BN = 32, BK = 16\n"
                                "{\n"
                                "    m = program_id(0) * BM\n"
                                "    n = program_id(1) * BN\n"
                                "    acc = load(C[m:m+BM, n:n+BN])\n"
                                "    h = load(C[m:m+BM, n:n+BN])\n"
                                "    w = load(C[m:m+BM, n:n+24])\n"
                                "    for k in range(0, K, BK) {\n"
                                "        acc = dot(load(A[m:m+BM, k:k+BK]), load(B[k:k+BK, n:n+BN], other = 0.0), acc, precision = \"ieee\")\n"
                                "        h = dot(load(H[m:m+BM, k:k+BK]), load(G[k:k+BK, n:n+BN]), h)\n"
                                "        w = dot(load(A[m:m+BM, k:k+BK]), load(B[k:k+BK, n:n+24]), w, precision = \"ieee\")\n"
                                "    }\n"
                                "    store(Y[m:m+BM, n:n+BN], acc)\n"
                                "    store(Z[m:m+BM, n:n+BN], h)\n"
                                "    store(W[m:m+BM, n:n+24], w)\n"
                                "}\n";

Test(cpu_dot, k_past_the_tensor_is_skipped)
{
    CC_REQUIRE_LLVM();
    static const char *const shapes[] = {"M=16,N=64,K=20", "M=16,N=64,K=32", "M=12,N=40,K=5"};
    for (unsigned s = 0; s < 3; s++)
        for (int specials = 0; specials < 2; specials++) {
            lc_opts o = lc_defaults();
            o.shapes = shapes[s];
            o.specials = specials;
            o.signed_zeros = 1; /* zero results must have the interpreter's sign */
            cr_assert(cc_check_tj(KPAD, "kpad", &o), "%s, specials %d", shapes[s], specials);
        }
}

/* Sums that stay -0 through the live k (A = -0 times B = 1, C = -0): the
 * interpreter's end +0 where K leaves padding in both operands (+0 times
 * +0) and -0 where it does not (K = 32); E has rows past K (L = 32, -1
 * there), so its products there are +0 times -1 = -0 and its sums stay -0:
 * the loop must run on to E's extent, and its + 0.0 only where both end;
 * U's B is padded with -0 (+0 times -0 = -0 past K, sums stay -0): only a
 * +0 other is skipped (llvm_dot.c, k_inside). */
static const char *const KMIX = "kernel kmix(A: f32[M, K], B: f32[K, N], E: f32[L, N], C: f32[M, N], Y: f32[M, N], V: f32[M, N],\n"
                                "            U: f32[M, N])\n"
                                "    grid (1)\n"
                                "    const BM = 8, BN = 32, BK = 16\n"
                                "{\n"
                                "    acc = load(C[0:BM, 0:BN])\n"
                                "    v = load(C[0:BM, 0:BN])\n"
                                "    u = load(C[0:BM, 0:BN])\n"
                                "    for k in range(0, K, BK) {\n"
                                "        acc = dot(load(A[0:BM, k:k+BK]), load(B[k:k+BK, 0:BN]), acc, precision = \"ieee\")\n"
                                "        v = dot(load(A[0:BM, k:k+BK]), load(E[k:k+BK, 0:BN]), v, precision = \"ieee\")\n"
                                "        u = dot(load(A[0:BM, k:k+BK]), load(B[k:k+BK, 0:BN], other = -0.0), u, precision = \"ieee\")\n"
                                "    }\n"
                                "    store(Y[0:BM, 0:BN], acc)\n"
                                "    store(V[0:BM, 0:BN], v)\n"
                                "    store(U[0:BM, 0:BN], u)\n"
                                "}\n";

Test(cpu_dot, negative_zero_sums_meet_the_skipped_padding)
{
    CC_REQUIRE_LLVM();
    enum { M = 8, N = 32, L = 32 };
    for (int64_t k = 20; k <= 32; k += 12) {
        char shapes[64];
        snprintf(shapes, sizeof shapes, "M=%d,N=%d,K=%lld,L=%d", M, N, (long long)k, L);
        tj_ctx *c = tj_ctx_new();
        tj_kernel *kern = CC_TILE_KERNEL(c, KMIX, shapes);
        static float a[M * 32], b[32 * N], e[L * N], cc[M * N], y[2][M * N], v[2][M * N], u[2][M * N];
        for (int i = 0; i < M * 32; i++)
            a[i] = -0.0f;
        for (int i = 0; i < 32 * N; i++)
            b[i] = 1.0f;
        for (int i = 0; i < L * N; i++)
            e[i] = i / N < k ? 1.0f : -1.0f;
        for (int i = 0; i < M * N; i++)
            cc[i] = -0.0f;
        int64_t sa[2] = {M, k}, sb[2] = {k, N}, se[2] = {L, N}, sc[2] = {M, N};
        for (int run = 0; run < 2; run++) { /* the interpreter, then native */
            tj_arg args[7] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(a, TJ_DT_F32, 2, sa)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(b, TJ_DT_F32, 2, sb)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(e, TJ_DT_F32, 2, se)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(cc, TJ_DT_F32, 2, sc)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(y[run], TJ_DT_F32, 2, sc)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(v[run], TJ_DT_F32, 2, sc)},
                              {.is_tensor = 1, .tensor = tj_tensor_contiguous(u[run], TJ_DT_F32, 2, sc)}};
            cc_run_on(c, kern, args, 7, run);
        }
        for (int i = 0; i < M * N; i++) {
            cr_assert(y[0][i] == 0 && !!signbit(y[0][i]) == (k == 32) && v[0][i] == 0 && signbit(v[0][i]) &&
                          u[0][i] == 0 && signbit(u[0][i]),
                      "the interpreter: %g %g %g", y[0][i], v[0][i], u[0][i]);
            cr_assert(!memcmp(&y[0][i], &y[1][i], 4) && !memcmp(&v[0][i], &v[1][i], 4) && !memcmp(&u[0][i], &u[1][i], 4),
                      "%s: element %d: %g %g, %g %g, %g %g", shapes, i, y[0][i], y[1][i], v[0][i], v[1][i], u[0][i],
                      u[1][i]);
        }
        tj_ctx_free(c);
    }
}

/* Where a product reaches memory only through one clipped store (through
 * elementwise ops, accumulators and a for's yields), it computes only the
 * rows and columns inside the store's tensor (llvm_dot_read.c): an edge
 * tile of matmul BM = BN = 128 at M = 96, N = 80, and the programs past
 * 128 at M = 200, N = 170 (72 rows, 42 columns: blocks of 8 rows and two
 * vectors rounded up), blocked (BN = 128) and looped (BN = 24, an epilogue
 * between the product and the store). The operands' padding is 1.0, so
 * every skipped output would be wrong where something read it. */
static const char *const EDGE = "kernel edge(A: f32[M, K], B: f32[K, N], C: f32[M, N], D: f32[M, N])\n"
                                "    grid (cdiv(M, 128), cdiv(N, 128))\n"
                                "    const BK = 32\n"
                                "{\n"
                                "    m = program_id(0) * 128\n"
                                "    n = program_id(1) * 128\n"
                                "    acc = zeros(f32[128, 128])\n"
                                "    w = zeros(f32[128, 24])\n"
                                "    for k in range(0, K, BK) {\n"
                                "        a = load(A[m:m+128, k:k+BK], other = 1.0)\n"
                                "        acc = dot(a, load(B[k:k+BK, n:n+128], other = 1.0), acc, precision = \"ieee\")\n"
                                "        w = dot(a, load(B[k:k+BK, n:n+24], other = 1.0), w, precision = \"ieee\")\n"
                                "    }\n"
                                "    store(C[m:m+128, n:n+128], acc)\n"
                                "    store(D[m:m+128, n:n+24], w * 2.0 + 1.0)\n"
                                "}\n";

/* Where the skip must not apply: every element also reaches a column sum
 * (S), or a second store into a taller tensor (E's rows past M), or a
 * store in a later iteration whose start moves (F: the rows stored at
 * iteration t + 1 lie past those inside at t), or the product feeds
 * another product as an operand (G). Each product has operands of its
 * own (CSE would make them one). */
static const char *const NO_SKIP = "kernel noskip(A: f32[M, K], B: f32[K, N], C: f32[M, N], S: f32[N], E: f32[L, N],\n"
                                   "             F: f32[M, N], G: f32[M, N])\n"
                                   "    grid (1)\n"
                                   "    const BM = 32, BN = 64, BK = 16\n"
                                   "{\n"
                                   "    a = load(A[0:BM, 0:BK], other = 1.0)\n"
                                   "    b = load(B[0:BK, 0:BN], other = 1.0)\n"
                                   "    x = dot(a, b, precision = \"ieee\")\n"
                                   "    store(C[0:BM, 0:BN], x)\n"
                                   "    store(S[0:BN], sum(x, axis = 0))\n"
                                   "    y = dot(a, b * 2.0, precision = \"ieee\") + 1.0\n"
                                   "    store(E[0:BM, 0:BN], y)\n"
                                   "    store(C[0:BM, 0:BN], y)\n"
                                   "    f = zeros(f32[BM, BN])\n"
                                   "    for t in range(0, 3) {\n"
                                   "        store(F[(2 - t) * 8:(2 - t) * 8 + BM, 0:BN], f)\n"
                                   "        f = dot(a, b * 0.5, f, precision = \"ieee\")\n"
                                   "    }\n"
                                   "    z = dot(a, b * 3.0, precision = \"ieee\")\n"
                                   "    store(G[0:BM, 0:BN], dot(z, load(B[0:BN, 0:BN], other = 1.0), precision = \"ieee\"))\n"
                                   "}\n";

Test(cpu_dot, only_the_stored_part_is_computed)
{
    CC_REQUIRE_LLVM();
    static const char *const shapes[] = {"M=96,N=80,K=40", "M=200,N=170,K=64"};
    for (unsigned s = 0; s < 2; s++) {
        lc_opts o = lc_defaults();
        o.shapes = shapes[s];
        cr_assert(cc_check_tj(EDGE, "edge", &o), "%s", shapes[s]);
    }
    lc_opts o = lc_defaults();
    o.shapes = "M=20,N=20,K=10,L=28"; /* 24 and 32 of the 32 x 64 computed */
    cr_assert(cc_check_tj(NO_SKIP, "noskip", &o));
}
