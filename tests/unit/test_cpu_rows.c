/* The native cpu back end skips the rows of an edge program's tiles that
 * reach memory only through one clipped store (llvm_rows.c), against the
 * interpreter: a softmax-weighted product whose second program has 8 of
 * its 32 rows inside (elementwise ops, reductions along axis 1, their
 * broadcasts back, both products' left operands, a loop that carries the
 * row values), and the uses that must keep every row. Operands are padded
 * with 1.0, so a skipped row that something read would be wrong. */
#include <criterion/criterion.h>

#include "cpu_check.h"

static const char *const ROWS = "kernel rows(A: f32[M, K], B: f32[K, N], V: f32[N, D], O: f32[M, D])\n"
                                "    grid (cdiv(M, 32))\n"
                                "{\n"
                                "    m = program_id(0) * 32\n"
                                "    a = load(A[m:m+32, 0:16], other = 1.0)\n"
                                "    acc = zeros(f32[32, 16])\n"
                                "    l = zeros(f32[32])\n"
                                "    for j in range(0, 2) {\n"
                                "        s = dot(a, load(B[0:16, j*32:j*32+32], other = 1.0)) * 0.1\n"
                                "        p = exp(s - max(s, axis = 1)[:, None])\n"
                                "        l = l + sum(p, axis = 1)\n"
                                "        acc = acc * 0.5 + dot(p, load(V[j*32:j*32+32, 0:16], other = 1.0))\n"
                                "    }\n"
                                "    store(O[m:m+32, 0:16], acc / l[:, None])\n"
                                "}\n";

/* Every row is read: by a sum along axis 0 (S, 20 long: its store alone
 * would keep 20 rows), transposed (T's rows are
 * the tile's columns, clipped at L = 28, its columns the tile's rows, all
 * 32 inside), as a product's right operand (U), by a second store into a
 * taller tensor (E), by a store in a later iteration whose start moves
 * (F), broadcast along the columns of a tile (Z: s[j] in column j, 40
 * columns inside). Each product has operands of its own (CSE would make
 * them one). */
static const char *const NO_ROWS =
    "kernel norows(A: f32[M, K], B: f32[K, N], C: f32[M, N], S: f32[M], T: f32[L, N], U: f32[M, N],\n"
    "              E: f32[L, N], W: f32[M, N], F: f32[M, N], Z: f32[M, N])\n"
    "    grid (1)\n"
    "{\n"
    "    a = load(A[0:32, 0:16], other = 1.0)\n"
    "    b = load(B[0:16, 0:32], other = 1.0)\n"
    "    x = exp(dot(a, b) * 0.01)\n"
    "    store(C[0:32, 0:32], x)\n"
    "    store(S[0:32], sum(exp(dot(a, b * 6.0) * 0.01), axis = 0))\n"
    "    store(T[0:32, 0:32], trans(exp(dot(a, b * 2.0) * 0.01)))\n"
    "    u = exp(dot(a, b * 3.0) * 0.01)\n"
    "    store(U[0:32, 0:32], dot(load(A[0:32, 0:32], other = 1.0), u))\n"
    "    w = exp(dot(a, b * 4.0) * 0.01)\n"
    "    store(E[0:32, 0:32], w)\n"
    "    store(W[0:32, 0:32], w)\n"
    "    f = zeros(f32[32, 32])\n"
    "    for t in range(0, 3) {\n"
    "        store(F[(2 - t) * 8:(2 - t) * 8 + 32, 0:32], f)\n"
    "        f = f + exp(dot(a, b * 0.5) * 0.01)\n"
    "    }\n"
    "    s = sum(exp(dot(a, b * 5.0) * 0.01), axis = 1)\n"
    "    store(Z[0:32, 0:32], zeros(f32[32, 32]) + s)\n"
    "}\n";

Test(cpu_rows, only_the_stored_rows_are_computed)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=40,N=64,K=16,D=16";
    cr_assert(cc_check_tj(ROWS, "rows", &o));
    o.shapes = "M=20,N=40,K=10,L=28";
    cr_assert(cc_check_tj(NO_ROWS, "norows", &o));
}

/* A rank-1 tile's rows are its elements, and an atomic is a store: in the
 * loop, the sum runs over blocks of 64 up to S's part inside (N = 228:
 * 100 of the second program's 128), the copy of X's row (K wide, padded
 * with 1.0) gets `other` only that far: where K < N the padding between
 * K and N is summed and stored, so a fill that stopped short would be
 * wrong, and an atomic past N would write outside S. e * e, outside a
 * loop, runs whole. */
static const char *const SUMS = "kernel sums(X: f32[M, K], S: f32[N], T: f32[N])\n"
                                "    grid (cdiv(N, 128))\n"
                                "{\n"
                                "    n = program_id(0) * 128\n"
                                "    acc = zeros(f32[128])\n"
                                "    for m in range(0, M) {\n"
                                "        acc = acc + load(X[m, n:n+128], other = 1.0)\n"
                                "    }\n"
                                "    atomic_add(S[n:n+128], acc)\n"
                                "    e = exp(load(X[0, n:n+128], other = 1.0))\n"
                                "    store(T[n:n+128], e * e)\n"
                                "}\n";

Test(cpu_rows, a_sum_in_a_loop_stops_at_its_atomic)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    const char *shapes[] = {"M=40,N=228,K=228", "M=3,N=70,K=70", "M=9,N=256,K=256", "M=5,N=1,K=1",
                            "M=7,N=228,K=150", "M=4,N=200,K=20", "M=6,N=100,K=300"};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        o.shapes = shapes[i];
        cr_assert(cc_check_tj(SUMS, "sums", &o), "%s", shapes[i]);
    }
}
