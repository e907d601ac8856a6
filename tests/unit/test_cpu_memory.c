/* The native cpu back end where loads are read in their readers' loops
 * (load fusion) and prefetched one loop iteration ahead: every kernel runs
 * natively and in the interpreter on the same arguments and must agree.
 * The kernels write the tensor they read between (or before) the readers,
 * so a load read later than the program says gives a different answer. */
#include <criterion/criterion.h>

#include "cpu_check.h"

/* x is read by x * 2 (whose store rewrites X) and then by sum(x): the
 * second reader must see the row as loaded, not as rewritten. */
static const char *const REREAD = "kernel reread(X: f32[M, N], S: f32[M])\n"
                                  "    grid (M)\n"
                                  "    const B = 128\n"
                                  "{\n"
                                  "    r = program_id(0)\n"
                                  "    x = load(X[r, 0:B], mask = arange(B) < N)\n"
                                  "    store(X[r, 0:B], x * 2.0, mask = arange(B) < N)\n"
                                  "    store(S[r:r+1], reshape(sum(x), [1]))\n"
                                  "}\n";

/* y = x + 1 is fused into its store, which comes after X is zeroed: x is
 * read where y's store runs, so it must not be fused past that write. */
static const char *const SINK = "kernel sink(X: f32[M, N], Y: f32[M, N])\n"
                                "    grid (M)\n"
                                "    const B = 128\n"
                                "{\n"
                                "    r = program_id(0)\n"
                                "    x = load(X[r, 0:B], mask = arange(B) < N)\n"
                                "    y = x + 1.0\n"
                                "    store(X[r, 0:B], zeros(f32[B]), mask = arange(B) < N)\n"
                                "    store(Y[r, 0:B], y, mask = arange(B) < N)\n"
                                "}\n";

/* Two readers and nothing written in between: fused, read twice. */
static const char *const TWICE = "kernel twice(X: f32[M, N], Y: f32[M, N])\n"
                                 "    grid (M)\n"
                                 "    const B = 256\n"
                                 "{\n"
                                 "    r = program_id(0)\n"
                                 "    x = load(X[r, 0:B], mask = arange(B) < N, other = -inf)\n"
                                 "    m = max(x)\n"
                                 "    d = where(arange(B) < N, x - m, 0.0)\n"
                                 "    store(Y[r, 0:B], d * x, mask = arange(B) < N)\n"
                                 "}\n";

Test(cpu_memory, a_reader_after_a_store_sees_the_row_as_loaded)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.shapes = "M=9,N=100";
    cr_assert(cc_check_tj(REREAD, "reread", &o));
    cr_assert(cc_check_tj(SINK, "sink", &o));
    o.shapes = "M=7,N=250";
    cr_assert(cc_check_tj(TWICE, "twice", &o));
}

/* Loads in loops whose views move by the induction variable (times a
 * loop-invariant factor, through casts, added to invariant starts) or by
 * nothing; loops that count down and a nested loop; the last iterations
 * prefetch past the tensor's end, which must change nothing. */
static const char *const MOVING = "kernel moving(X: f32[M, N], R: f32[M], C: f32[N], D: f32[M])\n"
                                  "    grid (cdiv(M, BM))\n"
                                  "    const BM = 8, BN = 32\n"
                                  "{\n"
                                  "    m = program_id(0) * BM\n"
                                  "    acc = zeros(f32[BM])\n"
                                  "    for n in range(0, N, BN) {\n"
                                  "        acc = acc + sum(load(X[m:m+BM, n:n+BN], other = 0.0), axis = 1)\n"
                                  "    }\n"
                                  "    store(R[m:m+BM], acc)\n"
                                  "    down = zeros(f32[BM])\n"
                                  "    for j in range(cdiv(N, BN) - 1, -1, -1) {\n"
                                  "        down = down + sum(load(X[m:m+BM, j*BN:j*BN+BN], other = 0.0), axis = 1)\n"
                                  "        for k in range(0, 2, 1) {\n"
                                  "            down = down + load(X[m:m+BM, i32(i64(k) * 3) + 1]) * 0.0\n"
                                  "        }\n"
                                  "    }\n"
                                  "    store(D[m:m+BM], down)\n"
                                  "    col = zeros(f32[BN])\n"
                                  "    for i in range(0, M, BM) {\n"
                                  "        col = col + sum(load(X[i:i+BM, 0:BN], other = 0.0), axis = 0)\n"
                                  "    }\n"
                                  "    if program_id(0) == 0 {\n"
                                  "        store(C[0:BN], col)\n"
                                  "    }\n"
                                  "}\n";

/* The kernel natively and in the interpreter at each of two shapes. */
static int same_at(const char *src, const char *kernel, const char *shapes, const char *other_shapes)
{
    lc_opts o = lc_defaults();
    o.shapes = shapes;
    int ok = cc_check_tj(src, kernel, &o);
    o.shapes = other_shapes;
    return ok && cc_check_tj(src, kernel, &o);
}

Test(cpu_memory, loads_of_moving_views_in_loops)
{
    CC_REQUIRE_LLVM();
    cr_assert(same_at(MOVING, "moving", "M=37,N=100", "M=16,N=64"));
}

/* Views whose rows (their outer coordinates: a slice of rows, a row index)
 * lie partly or wholly outside the tensor: the checked walk skips such a
 * row as a whole. Loads give `other` there, stores and atomics write
 * nothing, and the rows inside are read and written as usual; also a
 * column (the inner slice on axis 0, an index on axis 1). */
static const char *const OUTSIDE = "kernel outside(X: f32[M, N], Y: f32[M, N], S: f32[N], C: f32[M])\n"
                                   "    grid (cdiv(M, BM) + 1)\n"
                                   "    const BM = 8, BN = 64\n"
                                   "{\n"
                                   "    m = program_id(0) * BM\n"
                                   "    x = load(X[m:m+BM, 0:BN], other = 7.0)\n"
                                   "    store(Y[m:m+BM, 0:BN], x + 1.0)\n"
                                   "    atomic_add(S[0:BN], sum(x, axis = 0))\n"
                                   "    r = load(X[m + BM - 1, 0:BN], other = -2.0)\n"
                                   "    store(Y[m + BM, 0:BN], r * 3.0)\n"
                                   "    c = load(X[m:m+BM, N - 1], other = 5.0)\n"
                                   "    store(C[m:m+BM], c + sum(r))\n"
                                   "}\n";

Test(cpu_memory, rows_outside_the_tensor_touch_no_memory)
{
    CC_REQUIRE_LLVM();
    cr_assert(same_at(OUTSIDE, "outside", "M=21,N=50", "M=16,N=64"));
}

/* Readers of fused rows (reductions, elementwise ops) run a copy without
 * the rows' bounds checks where every row they read lies inside its
 * tensor: at N = 64 every program but the last (its row is past M) takes
 * it, at N = 50 none does. The copy keeps the rows' masks (y's depends on
 * x), and a reduction's and an elementwise op's result is the same buffer
 * on both copies. */
static const char *const INSIDE = "kernel inside(X: f32[M, N], Y: f32[M, N], Z: f32[M, N], S: f32[M])\n"
                                  "    grid (M + 1)\n"
                                  "    const B = 64\n"
                                  "{\n"
                                  "    r = program_id(0)\n"
                                  "    x = load(X[r, 0:B], other = -3.0)\n"
                                  "    y = load(Y[r, 0:B], mask = x > 0.0, other = 1.0)\n"
                                  "    m = max(x)\n"
                                  "    e = exp(x - m) * y\n"
                                  "    s = sum(e * y)\n"
                                  "    store(Z[r, 0:B], e / s)\n"
                                  "    store(S[r:r+1], reshape(s + max(e), [1]))\n"
                                  "}\n";

Test(cpu_memory, rows_wholly_inside_skip_their_checks)
{
    CC_REQUIRE_LLVM();
    cr_assert(same_at(INSIDE, "inside", "M=9,N=64", "M=7,N=50"));
}

/* A reader of one fused row not read before (or of rows earlier readers
 * read) is emitted once: it reads each row from the tensor where the row
 * lies inside, else from a checked copy made once for all the row's
 * readers. A reader of several new rows (x * y + x) and f16 rows (their
 * memory form is not their value form) keep the two copies. At N = 50
 * every row is copied, at N = 64 only the last program's (past M). */
static const char *const SHARED = "kernel shared(X: f32[M, N], Y: f32[M, N], H: f16[M, N], S: f32[M], T: f16[M])\n"
                                  "    grid (M + 1)\n"
                                  "    const B = 64\n"
                                  "{\n"
                                  "    r = program_id(0)\n"
                                  "    x = load(X[r, 0:B], other = 2.0)\n"
                                  "    y = load(Y[r, 0:B], mask = x > 0.0, other = -1.0)\n"
                                  "    h = load(H[r, 0:B], other = 0.5)\n"
                                  "    p = sum(x * y + x)\n"
                                  "    q = max(y * p) + min(x)\n"
                                  "    store(S[r:r+1], reshape(p + q, [1]))\n"
                                  "    store(T[r:r+1], reshape(sum(h * h), [1]))\n"
                                  "}\n";

Test(cpu_memory, a_row_is_copied_once_for_its_readers)
{
    CC_REQUIRE_LLVM();
    cr_assert(same_at(SHARED, "shared", "M=9,N=64", "M=7,N=50"));
}

/* Stores of rows without a mask run over the part of the row inside its
 * dim alone (llvm_mem.c walk_row): rows starting before 0 and ending past
 * N, rows wholly left or right of the tensor, 1-D and 2-D views; every
 * other element of Y keeps its value. */
static const char *const CLIPPED = "kernel clipped(X: f32[M, N], Y: f32[M, N], Z: f32[M, N], W: f32[N])\n"
                                   "    grid (cdiv(M, BM), 3)\n"
                                   "    const BM = 4, BN = 64\n"
                                   "{\n"
                                   "    m = program_id(0) * BM\n"
                                   "    c = program_id(1) * 40 - 50\n"
                                   "    x = load(X[m:m+BM, c:c+BN], other = 1.0)\n"
                                   "    store(Y[m:m+BM, c:c+BN], x * 2.0 + 1.0)\n"
                                   "    d = c + 7\n"
                                   "    store(Z[m, d:d+BN], sum(x, axis = 0))\n"
                                   "    store(W[d:d+BN], load(X[0, d:d+BN], other = 2.0) * 0.5)\n"
                                   "}\n";

Test(cpu_memory, unmasked_stores_write_the_part_of_each_row_inside)
{
    CC_REQUIRE_LLVM();
    cr_assert(same_at(CLIPPED, "clipped", "M=10,N=50", "M=3,N=9"));
}

/* A clipped load gives `other` to the elements of a row outside its dim
 * (llvm_mem.c fill_other): rows of 8 vectors or fewer whole, longer ones
 * before a negative start element by element, the tail as whole vectors
 * from the aligned element at the row's end and the rest of it one by one
 * (168 f32 in 16-lane vectors: 160 + 8), for an other that is a scalar
 * parameter, a constant, none, in f32, f64, bf16 (whose value form is
 * f32) and i32, in 2-D tiles and a fused row; row sums observe every padded
 * element. Starts -20, 60 and 140 against N = 200 (rows of 168), -20, 10
 * and 40 against N = 50 (rows of 40). */
#define FILLS_SRC(BN, STEP)                                                                                        \
    "kernel fills(X: f32[M, N], D: f64[M, N], H: bf16[M, N], I: i32[M, N],\n"                                     \
    "              S: f32[M], T: f64[M], U: f32[M], K: i32[M], V: f32[M], s: f32)\n"                              \
    "    grid (cdiv(M, BM))\n"                                                                                  \
    "    const BM = 2, BN = " BN "\n"                                                                           \
    "{\n"                                                                                                       \
    "    m = program_id(0) * BM\n"                                                                              \
    "    c = program_id(0) % 3 * " STEP " - 20\n"                                                               \
    "    store(S[m:m+BM], sum(load(X[m:m+BM, c:c+BN], other = s), axis = 1))\n"                                 \
    "    store(T[m:m+BM], sum(load(D[m:m+BM, c:c+BN], other = -1.5), axis = 1))\n"                              \
    "    store(U[m:m+BM], sum(f32(load(H[m:m+BM, c:c+BN], other = bf16(s))), axis = 1))\n"                      \
    "    store(K[m:m+BM], sum(load(I[m:m+BM, c:c+BN]), axis = 1))\n"                                            \
    "    r = load(X[m, c:c+BN], other = s)\n"                                                                   \
    "    store(V[m:m+1], reshape(max(r) + sum(r * 0.5), [1]))\n"                                                \
    "}\n"

Test(cpu_memory, clipped_loads_fill_other_outside_the_row)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    o.scalars = "s=3.25";
    o.shapes = "M=9,N=200"; /* the last program's second row is outside M */
    cr_assert(cc_check_tj(FILLS_SRC("168", "80"), "fills", &o));
    o.shapes = "M=9,N=50";
    cr_assert(cc_check_tj(FILLS_SRC("40", "30"), "fills", &o));
}

/* Rows copied as they are (lg_copy_span: whole vectors, then the last
 * vector's worth again ending at the row's end, element by element under
 * a vector) between tiles and tensors, clipped at both ends: starts -16, 8
 * and 32 of rows of 64 against N from 1 to 100, so that the part inside
 * is empty, shorter than a vector, exactly one or two, between them and
 * longer, for f32, f64 and i32 (16 and 8 lanes with AVX-512, 8 and 4
 * without). Each load has two readers (a tile in a buffer) and each store
 * takes a tile in a buffer (x itself, and its cumsum). */
static const char *const SPANS = "kernel spans(X: f32[M, N], D: f64[M, N], I: i32[M, N], Y: f32[M, N], Z: f32[M, N],\n"
                                 "              E: f64[M, N], J: i32[M, N])\n"
                                 "    grid (M, 3)\n"
                                 "{\n"
                                 "    r = program_id(0)\n"
                                 "    c = program_id(1) * 24 - 16\n"
                                 "    x = load(X[r, c:c+64], other = 1.0)\n"
                                 "    store(Y[r, c:c+64], cumsum(x, axis = 0))\n"
                                 "    store(Z[r, c:c+64], x)\n"
                                 "    d = load(D[r, c:c+64], other = 2.0)\n"
                                 "    store(E[r, c:c+64], cumsum(d, axis = 0) + d)\n"
                                 "    i = load(I[r, c:c+64], other = 3)\n"
                                 "    store(J[r, c:c+64], cumsum(i, axis = 0) * i)\n"
                                 "}\n";

Test(cpu_memory, rows_copied_as_they_are_at_every_length)
{
    CC_REQUIRE_LLVM();
    lc_opts o = lc_defaults();
    const char *shapes[] = {"M=2,N=1", "M=2,N=5", "M=2,N=16", "M=2,N=17", "M=2,N=24", "M=2,N=33",
                            "M=2,N=40", "M=2,N=48", "M=2,N=57", "M=3,N=100"};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        o.shapes = shapes[k];
        cr_assert(cc_check_tj(SPANS, "spans", &o), "%s", shapes[k]);
    }
}
