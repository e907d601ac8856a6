/* The .tj kernels of the lowering tests (test_lower.c), shared with the GPU
 * test (tests/gpu/lower.c) that runs them on a device. */
#ifndef TJ_LOWER_KERNELS_H
#define TJ_LOWER_KERNELS_H

static const char *const EW = "kernel ew(x: f32[N], y: f32[N], z: f16[N], b: i32[N], o: f32[N])\n"
                              "    grid (cdiv(N, B))\n"
                              "    const B = 256\n"
                              "{\n"
                              "    i = program_id(0) * B\n"
                              "    a = load(x[i:i+B])\n"
                              "    c = load(y[i:i+B])\n"
                              "    h = f32(load(z[i:i+B]))\n"
                              "    k = load(b[i:i+B])\n"
                              "    r = where(a > c, exp(a) * sigmoid(c), maximum(a, c) + h) + f32(k % 7) + f32(k / 3)\n"
                              "    store(o[i:i+B], r)\n"
                              "    store(z[i:i+B], f16(tanh(a) + h))\n"
                              "    store(b[i:i+B], (k << 2) ^ (k >> 1) | i32(a > 0.0))\n"
                              "}\n";

static const char *const ADD = "kernel add(x: f32[N], y: f32[N], out: f32[N])\n"
                               "    grid (cdiv(N, BLOCK))\n"
                               "    const BLOCK = 1024\n"
                               "{\n"
                               "    i = program_id(0) * BLOCK\n"
                               "    store(out[i:i+BLOCK], load(x[i:i+BLOCK]) + load(y[i:i+BLOCK]))\n"
                               "}\n";

static const char *const MASKED = "kernel masked(x: f32[N], y: f32[N], other: f32[N], n: i32)\n"
                                  "    grid (cdiv(N, B))\n"
                                  "    const B = 128\n"
                                  "{\n"
                                  "    s = program_id(0) * B\n"
                                  "    m = (s + arange(B)) % 3 != 0 && s + arange(B) < n\n"
                                  "    v = load(x[s:s+B], mask = m, other = load(other[s:s+B]))\n"
                                  "    w = load(x[s:s+B], mask = m, other = 7.0)\n"
                                  "    store(y[s:s+B], v * 2.0 + w, mask = m)\n"
                                  "}\n";

static const char *const EMBED = "kernel embed(T: f32[V, D], idx: i32[N], out: f32[N, D])\n"
                                 "    grid (cdiv(N, BN))\n"
                                 "    const BN = 32\n"
                                 "{\n"
                                 "    i = program_id(0) * BN\n"
                                 "    rows = load(idx[i:i+BN])\n"
                                 "    store(out[i:i+BN, 0:D], load(T[rows, 0:D]))\n"
                                 "}\n";

static const char *const SCATTER = "kernel scat(T: f32[V, D], idx: i32[N], src: f32[N, D], acc: f32[V, D])\n"
                                   "    grid (cdiv(N, BN))\n"
                                   "    const BN = 32\n"
                                   "{\n"
                                   "    i = program_id(0) * BN\n"
                                   "    rows = load(idx[i:i+BN])\n"
                                   "    vals = load(src[i:i+BN, 0:D])\n"
                                   "    store(T[rows, 0:D], vals)\n"
                                   "    atomic_add(acc[rows, 0:D], vals)\n"
                                   "}\n";

static const char *const SOFTMAX = "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
                                   "    grid (M)\n"
                                   "    tune BLOCK in [256, 512, 1024, 2048, 4096, 8192], warps in [4, 8, 16]\n"
                                   "    where BLOCK >= N\n"
                                   "{\n"
                                   "    r = program_id(0)\n"
                                   "    x = load(X[r, 0:BLOCK], other = -inf)\n"
                                   "    e = exp(x - max(x))\n"
                                   "    store(Y[r, 0:BLOCK], e / sum(e))\n"
                                   "}\n";

static const char *const ROWS = "kernel rows(X: f32[M, N], S: f32[M], A: i32[M], C: f32[M, N], T: f32[1])\n"
                                "    grid (cdiv(M, BM))\n"
                                "    const BM = 16, BN = 64\n"
                                "{\n"
                                "    m = program_id(0) * BM\n"
                                "    x = load(X[m:m+BM, 0:BN], other = 0.5)\n"
                                "    store(S[m:m+BM], sum(x, axis = 1))\n"
                                "    store(A[m:m+BM], argmax(x, axis = 1))\n"
                                "    store(C[m:m+BM, 0:BN], cumsum(x, axis = 1))\n"
                                "    atomic_add(T[0:1], broadcast(sum(x), [1]))\n"
                                "}\n";

static const char *const COLS = "kernel cols(X: f32[M, N], S: f32[N], A: i32[N], P: f32[M], C: f32[M, N])\n"
                                "    grid (1)\n"
                                "    const BM = 64, BN = 32\n"
                                "{\n"
                                "    x = load(X[0:BM, 0:BN], other = 0.0)\n"
                                "    store(S[0:BN], max(x, axis = 0))\n"
                                "    store(A[0:BN], argmin(x, axis = 0))\n"
                                "    store(P[0:BM], prod(x * 0.1 + 1.0, axis = 1))\n"
                                "    store(C[0:BM, 0:BN], cumprod(x * 0.1 + 1.0, axis = 0))\n"
                                "}\n";

static const char *const WHOLE = "kernel whole(X: i32[M, N], R: i32[4])\n"
                                 "    grid (1)\n"
                                 "    const BM = 8, BN = 16\n"
                                 "{\n"
                                 "    x = load(X[0:BM, 0:BN], other = -1000)\n"
                                 "    r = where(arange(4) == 0, sum(x), where(arange(4) == 1, max(x), "
                                 "where(arange(4) == 2, argmax(x), argmin(x))))\n"
                                 "    store(R[0:4], r)\n"
                                 "}\n";

/* Tiles no larger than a warp's run, in programs of several warps: every
 * warp holds a replica of the whole tile (along an axis or all of them),
 * so the reductions and scans stay in each warp (lower/reduce.c). */
static const char *const WARP_TILES =
    "kernel small(X: i32[N], Y: f32[M, K], R: i32[8], C: i32[N], S: f32[M], T: f32[K], D: f32[M, K], E: f32[M, K])\n"
    "    grid (1)\n"
    "    const BN = 32, BM = 4, BK = 8\n"
    "{\n"
    "    x = load(X[0:BN], other = -1000)\n"
    "    r = where(arange(8) == 0, sum(x), where(arange(8) == 1, max(x), where(arange(8) == 2, argmax(x), "
    "where(arange(8) == 3, argmin(x), min(x)))))\n"
    "    store(R[0:8], r)\n"
    "    store(C[0:BN], cumsum(x, axis = 0))\n"
    "    y = load(Y[0:BM, 0:BK])\n"
    "    store(S[0:BM], sum(y, axis = 1) + max(y))\n"
    "    store(T[0:BK], max(y, axis = 0))\n"
    "    store(D[0:BM, 0:BK], cumsum(y, axis = 0))\n"
    "    store(E[0:BM, 0:BK], cumsum(y, axis = 1))\n"
    "}\n";

static const char *const RECURRENCE =
    "fn lin(a1: f32, b1: f32, a2: f32, b2: f32) -> (f32, f32) { return (a1 * a2, a2 * b1 + b2) }\n"
    "kernel recurrence(A: f32[R, L], Bv: f32[R, L], Hout: f32[R, L])\n"
    "    grid (R)\n"
    "    const BL = 1024\n"
    "{\n"
    "    r = program_id(0)\n"
    "    a = load(A[r, 0:BL], other = 1.0)\n"
    "    b = load(Bv[r, 0:BL])\n"
    "    (_, h) = scan(a, b, axis = 0, combine = lin)\n"
    "    store(Hout[r, 0:BL], h)\n"
    "}\n";

static const char *const CUMSUM2 = "kernel cum(X: i32[M, N], C0: i32[M, N], C1: i32[M, N])\n"
                                   "    grid (1)\n"
                                   "    const BM = 64, BN = 16\n"
                                   "{\n"
                                   "    x = load(X[0:BM, 0:BN])\n"
                                   "    store(C0[0:BM, 0:BN], cumsum(x, axis = 0))\n"
                                   "    store(C1[0:BM, 0:BN], cumsum(x, axis = 1))\n"
                                   "}\n";

static const char *const SORT = "kernel sorter(X: f32[M, N], V: i32[M, N], Y: f32[M, N], W: i32[M, N], Z: f32[M, N])\n"
                                "    grid (M)\n"
                                "    const BN = 64\n"
                                "{\n"
                                "    r = program_id(0)\n"
                                "    x = load(X[r, 0:BN])\n"
                                "    (k, v) = sort(x, load(V[r, 0:BN]), descending = true)\n"
                                "    store(Y[r, 0:BN], k)\n"
                                "    store(W[r, 0:BN], v)\n"
                                "    store(Z[r, 0:BN], sort(x))\n"
                                "}\n";

static const char *const SORT2D = "kernel sort2(X: i32[M, N], Y: i32[M, N], Z: i32[M, N])\n"
                                  "    grid (1)\n"
                                  "    const BM = 16, BN = 32\n"
                                  "{\n"
                                  "    x = load(X[0:BM, 0:BN])\n"
                                  "    store(Y[0:BM, 0:BN], sort(x, axis = 0))\n"
                                  "    store(Z[0:BM, 0:BN], sort(x, axis = 1, descending = true))\n"
                                  "}\n";

static const char *const MATMUL = "kernel matmul(A: bf16[M, K], B: bf16[K, N], C: bf16[M, N])\n"
                                  "    grid (cdiv(M, BM), cdiv(N, BN))\n"
                                  "    tune BM in [64, 128], BN in [64, 128, 256], BK in [32, 64], warps in [4, 8], "
                                  "stages in [2, 3, 4]\n"
                                  "{\n"
                                  "    m = program_id(0) * BM\n"
                                  "    n = program_id(1) * BN\n"
                                  "    acc = zeros(f32[BM, BN])\n"
                                  "    for k in range(0, K, BK) {\n"
                                  "        acc = dot(load(A[m:m+BM, k:k+BK]), load(B[k:k+BK, n:n+BN]), acc)\n"
                                  "    }\n"
                                  "    store(C[m:m+BM, n:n+BN], bf16(acc))\n"
                                  "}\n";

/* f32 matrix product with partial tiles; PRECISION: "" (the matrix atom, tf32
 * on NVIDIA) or ", precision = \"ieee\"" (the FMA lowering). */
#define MM32_SRC(PRECISION)                                                                    \
    "kernel mm(A: f32[M, K], B: f32[K, N], C: f32[M, N])\n"                                    \
    "    grid (cdiv(M, BM), cdiv(N, BN))\n"                                                    \
    "    const BM = 32, BN = 16, BK = 8\n"                                                     \
    "{\n"                                                                                     \
    "    m = program_id(0) * BM\n"                                                            \
    "    n = program_id(1) * BN\n"                                                            \
    "    acc = zeros(f32[BM, BN])\n"                                                          \
    "    for k in range(0, K, BK) {\n"                                                        \
    "        acc = dot(load(A[m:m+BM, k:k+BK]), load(B[k:k+BK, n:n+BN]), acc" PRECISION ")\n" \
    "    }\n"                                                                                 \
    "    store(C[m:m+BM, n:n+BN], acc)\n"                                                     \
    "}\n"
static const char *const MM32 = MM32_SRC("");
static const char *const MM32_IEEE = MM32_SRC(", precision = \"ieee\"");

/* The FMA product at tiles its copy rings, vector loads and register
 * block take (lower/dot.c): 64 x 64 x 16 in 3 slots; at stages = 1 its
 * loop stages both operands every iteration. */
static const char *const MM_FMA_BLOCK = "kernel mm(A: f32[M, K], B: f32[K, N], C: f32[M, N])\n"
                                        "    grid (cdiv(M, 64), cdiv(N, 64))\n"
                                        "    tune stages in [3, 1]\n"
                                        "{\n"
                                        "    m = program_id(0) * 64\n"
                                        "    n = program_id(1) * 64\n"
                                        "    acc = zeros(f32[64, 64])\n"
                                        "    for k in range(0, K, 16) {\n"
                                        "        acc = dot(load(A[m:m+64, k:k+16]), load(B[k:k+16, n:n+64]), acc, "
                                        "precision = \"ieee\")\n"
                                        "    }\n"
                                        "    store(C[m:m+64, n:n+64], acc)\n"
                                        "}\n";

/* The array front end's f32 flash attention (array/attention.c): the
 * query block is fixed across the loop (staged once before it), p is
 * staged every iteration. */
static const char *const ATTENTION_F32 =
    "kernel att(XQ: f32[M, D], XK: f32[D, N], XV: f32[N, E], Y: f32[M, E])\n"
    "    grid (cdiv(M, BM))\n"
    "    tune BM in [64, 32], BN in [64, 32], BD in [64, 16], BE in [64, 16], warps in [8, 4], stages in [2, 1, 3]\n"
    "{\n"
    "    m = program_id(0) * BM\n"
    "    tq = load(XQ[m:m+BM, 0:BD])\n"
    "    mi = full(f32[BM, 1], -inf)\n"
    "    li = zeros(f32[BM, 1])\n"
    "    acc = zeros(f32[BM, BE])\n"
    "    for j in range(0, N, BN) {\n"
    "        s = dot(tq, load(XK[0:BD, j:j+BN]), precision = \"ieee\") * f32(0.25)\n"
    "        s = where(arange(BN)[None, :] + j < N, s, -inf)\n"
    "        mn = maximum(mi, max(s, 1)[:, None])\n"
    "        p = exp2(s - mn)\n"
    "        alpha = exp2(mi - mn)\n"
    "        li = li * alpha + sum(p, 1)[:, None]\n"
    "        acc = acc * alpha + dot(p, load(XV[j:j+BN, 0:BE]), precision = \"ieee\")\n"
    "        mi = mn\n"
    "    }\n"
    "    store(Y[m:m+BM, 0:BE], acc / li)\n"
    "}\n";

/* A product whose b is fixed across the loop (staged once before it) and
 * whose a is loaded every iteration. */
static const char *const FIXED_B = "kernel fixed_b(X: f32[S, M, K], W: f32[K, N], Y: f32[M, N])\n"
                                   "    grid (cdiv(M, 32))\n"
                                   "    const BK = 16\n"
                                   "    const BN = 32\n"
                                   "    tune stages in [2, 1]\n"
                                   "{\n"
                                   "    m = program_id(0) * 32\n"
                                   "    w = load(W[0:BK, 0:BN])\n"
                                   "    acc = zeros(f32[32, BN])\n"
                                   "    for s in range(0, S, 1) {\n"
                                   "        acc = dot(load(X[s, m:m+32, 0:BK]), w, acc, precision = \"ieee\")\n"
                                   "    }\n"
                                   "    store(Y[m:m+32, 0:BN], acc)\n"
                                   "}\n";

/* A load in an inner loop that moves with both loop variables: prefetch
 * clones it for the inner one only (the outer stays as it is). */
static const char *const NESTLOAD = "kernel nestload(X: f32[M, N], S: f32[M])\n"
                                    "    grid (1)\n"
                                    "    const BN = 16\n"
                                    "{\n"
                                    "    for i in range(0, M, 1) {\n"
                                    "        acc = zeros(f32[BN])\n"
                                    "        for j in range(0, N, BN) {\n"
                                    "            acc = acc + load(X[i, j:j+BN])\n"
                                    "        }\n"
                                    "        store(S[i], sum(acc))\n"
                                    "    }\n"
                                    "}\n";

/* Accumulators broadcast from a row or a column (one value per row of a
 * thread in some layouts: not a splat) and from a scalar (a splat). */
static const char *const DOT_ACC = "kernel dot_acc(X: f32[M, N], A: bf16[M, N], O: f32[M, N], P: f32[M, N], Q: f32[M, N])\n"
                                   "    grid (1)\n"
                                   "{\n"
                                   "    x = load(X[0:16, 0:32])\n"
                                   "    a = load(A[0:32, 0:32])\n"
                                   "    store(O[0:16, 0:16], dot(x, trans(x), sum(x, axis = 1)[:, None]))\n"
                                   "    store(P[0:32, 0:32], dot(a, a, max(f32(a), axis = 0)[None, :]))\n"
                                   "    store(Q[0:16, 0:16], dot(x, trans(x), 2.5))\n"
                                   "}\n";

/* A dot operand loaded with `other = 1.0` (a constant inside the loop, which
 * the prefetch pass clones with the load) beside one that goes plainly. */
static const char *const MM_OTHER = "kernel mm_other(A: bf16[M, K], B: bf16[K, N], C: f32[M, N])\n"
                                    "    grid (cdiv(M, 32), cdiv(N, 32))\n"
                                    "{\n"
                                    "    m = program_id(0) * 32\n"
                                    "    n = program_id(1) * 32\n"
                                    "    acc = zeros(f32[32, 32])\n"
                                    "    for k in range(0, K, 16) {\n"
                                    "        a = load(A[m:m+32, k:k+16], other = 1.0)\n"
                                    "        acc = dot(a, load(B[k:k+16, n:n+32]), acc)\n"
                                    "    }\n"
                                    "    store(C[m:m+32, n:n+32], acc)\n"
                                    "}\n";

/* Products in a loop nested in another (a ring per outer iteration), a
 * range that starts past 0 and steps by 48 (slots by a multiply-high):
 * C = sum over k >= 16 of A[:, k] B[k, :], for two column blocks in turn. */
static const char *const MM_NESTED = "kernel mm_nested(A: bf16[M, K], B: bf16[K, N], C: f32[M, N])\n"
                                     "    grid (cdiv(M, 32))\n"
                                     "    tune stages in [2, 3, 4]\n"
                                     "{\n"
                                     "    m = program_id(0) * 32\n"
                                     "    for n in range(0, N, 32) {\n"
                                     "        acc = zeros(f32[32, 32])\n"
                                     "        for k in range(16, K, 48) {\n"
                                     "            acc = dot(load(A[m:m+32, k:k+48]), load(B[k:k+48, n:n+32]), acc)\n"
                                     "        }\n"
                                     "        store(C[m:m+32, n:n+32], acc)\n"
                                     "    }\n"
                                     "}\n";

/* a * trans(b) (b rows are the product's columns), f32 and f16: b is staged
 * as it is and read with role bt. TILES: the `const` line of tile sizes. */
#define MMT_SRC(TILES)                                                                                     \
    "kernel mmt(A: f32[M, K], B: f32[N, K], C: f32[M, N], H: f16[M, K], G: f16[N, K],\n"                   \
    "           D: f32[M, N])\n"                                                                            \
    "    grid (cdiv(M, BM), cdiv(N, BN))\n"                                                                 \
    "    const " TILES "\n"                                                                                 \
    "{\n"                                                                                                   \
    "    m = program_id(0) * BM\n"                                                                          \
    "    n = program_id(1) * BN\n"                                                                          \
    "    acc = zeros(f32[BM, BN])\n"                                                                        \
    "    acc16 = zeros(f32[BM, BN])\n"                                                                      \
    "    for k in range(0, K, BK) {\n"                                                                      \
    "        acc = dot(load(A[m:m+BM, k:k+BK]), trans(load(B[n:n+BN, k:k+BK])), acc)\n"                    \
    "        acc16 = dot(load(H[m:m+BM, k:k+BK]), trans(load(G[n:n+BN, k:k+BK])), acc16)\n"                \
    "    }\n"                                                                                               \
    "    store(C[m:m+BM, n:n+BN], acc)\n"                                                                   \
    "    store(D[m:m+BM, n:n+BN], acc16)\n"                                                                 \
    "}\n"
static const char *const MMT = MMT_SRC("BM = 32, BN = 32, BK = 16");


static const char *const ATTENTION =
    "kernel attention(Q: bf16[B, H, S, D], K: bf16[B, H, S, D], V: bf16[B, H, S, D], O: bf16[B, H, S, D], scale: "
    "f32)\n"
    "    grid (cdiv(S, BM), B * H)\n"
    "    tune BM in [64, 128], BN in [32, 64, 128], warps in [4, 8], stages in [1, 2, 3]\n"
    "{\n"
    "    q0 = program_id(0) * BM\n"
    "    b = program_id(1) / H\n"
    "    h = program_id(1) % H\n"
    "    q = load(Q[b, h, q0:q0+BM, 0:D])\n"
    "    m_i = full(f32[BM], -inf)\n"
    "    l_i = zeros(f32[BM])\n"
    "    acc = zeros(f32[BM, D])\n"
    "    for j in range(0, S, BN) {\n"
    "        s = dot(q, trans(load(K[b, h, j:j+BN, 0:D]))) * scale\n"
    "        s = where((j + arange(BN))[None, :] < S, s, -inf)\n"
    "        m_new = maximum(m_i, max(s, axis = 1))\n"
    "        p = exp(s - m_new[:, None])\n"
    "        alpha = exp(m_i - m_new)\n"
    "        l_i = l_i * alpha + sum(p, axis = 1)\n"
    "        acc = acc * alpha[:, None] + dot(bf16(p), load(V[b, h, j:j+BN, 0:D]))\n"
    "        m_i = m_new\n"
    "    }\n"
    "    store(O[b, h, q0:q0+BM, 0:D], bf16(acc / l_i[:, None]))\n"
    "}\n";

static const char *const BRANCH = "kernel branch(x: f32[N], y: f32[N], flag: i32)\n"
                                  "    grid (cdiv(N, B))\n"
                                  "    const B = 64\n"
                                  "{\n"
                                  "    i = program_id(0) * B\n"
                                  "    v = load(x[i:i+B])\n"
                                  "    s = zeros(f32[B])\n"
                                  "    for t in range(0, 3) {\n"
                                  "        if flag > t {\n"
                                  "            v = v * 2.0\n"
                                  "        } else {\n"
                                  "            v = v - 1.0\n"
                                  "        }\n"
                                  "        s = s + v\n"
                                  "    }\n"
                                  "    store(y[i:i+B], s)\n"
                                  "}\n";

static const char *const SHAPES = "kernel shapes(X: f32[M, N], Y: f32[N, M], Z: f32[M, N])\n"
                                  "    grid (1)\n"
                                  "    const BM = 16, BN = 32\n"
                                  "{\n"
                                  "    x = load(X[0:BM, 0:BN])\n"
                                  "    store(Y[0:BN, 0:BM], trans(x))\n"
                                  "    r = reshape(x, [BN, BM])\n"
                                  "    c = sum(x, axis = 1)[:, None]\n"
                                  "    store(Z[0:BM, 0:BN], reshape(r, [BM, BN]) + broadcast(sum(x, axis = 0)[None, :], [BM, BN]) + c)\n"
                                  "}\n";

static const char *const MISC =
    "kernel misc(X: f32[M, N], I: i64[N], J: i32[N], B: bool[N], C8: i8[N], G: f32[N], S: f32[2], A: i32[V], "
    "O: bool[N])\n"
    "    grid (1)\n"
    "    const BN = 32\n"
    "{\n"
    "    i = load(I[0:BN])\n"
    "    j = load(J[0:BN])\n"
    "    g = load(X[i, j])\n"
    "    store(G[0:BN], g)\n"
    "    b = load(B[0:BN])\n"
    "    store(O[0:BN], !b || g > 0.0)\n"
    "    s = sum(i32(b)) + i32(sum(load(C8[0:BN])))\n"
    "    store(S[0], f32(s) + load(X[1, 2]))\n"
    "    atomic_max(A[j], i32(i) * 3)\n"
    "    atomic_min(A[j + 1], i32(i))\n"
    "}\n";

static const char *const BDOT = "kernel bdot(A: f32[Bt, M, K], B: f32[Bt, K, N], C: f32[Bt, M, N], P: f32[N, Bt, M])\n"
                                "    grid (1)\n"
                                "    const BB = 2, BM = 16, BK = 8, BN = 32\n"
                                "{\n"
                                "    a = load(A[0:BB, 0:BM, 0:BK])\n"
                                "    b = load(B[0:BB, 0:BK, 0:BN])\n"
                                "    c = dot(a, b)\n"
                                "    store(C[0:BB, 0:BM, 0:BN], c)\n"
                                "    store(P[0:BN, 0:BB, 0:BM], permute(c, [2, 0, 1]))\n"
                                "}\n";

static const char *const NEST = "kernel nest(x: f32[N], y: f32[N], n: i32)\n"
                                "    grid (cdiv(N, B))\n"
                                "    const B = 64\n"
                                "{\n"
                                "    i = program_id(0) * B\n"
                                "    v = load(x[i:i+B])\n"
                                "    acc = zeros(f32[B])\n"
                                "    for a in range(0, n) {\n"
                                "        for c in range(a, 3) {\n"
                                "            if c % 2 == 0 {\n"
                                "                acc = acc + v * f32(c)\n"
                                "            } else {\n"
                                "                acc = acc - v\n"
                                "            }\n"
                                "        }\n"
                                "        v = v * 0.5\n"
                                "    }\n"
                                "    store(y[i:i+B], acc)\n"
                                "}\n";

static const char *const MSCATTER = "kernel mscat(T: f32[V, D], idx: i32[N], src: f32[N, D])\n"
                                    "    grid (1)\n"
                                    "    const BN = 16, BD = 8\n"
                                    "{\n"
                                    "    rows = load(idx[0:BN])\n"
                                    "    vals = load(src[0:BN, 0:BD])\n"
                                    "    store(T[rows, 0:BD], vals, mask = vals > 0.0)\n"
                                    "}\n";

static const char *const SORTROWS = "kernel sort_rows(X: f32[M, N], I: i32[M, N], Y: f32[M, N], J: i32[M, N])\n"
                                    "    grid (M)\n"
                                    "    tune BLOCK in [256, 1024, 4096]\n"
                                    "    where BLOCK >= N\n"
                                    "{\n"
                                    "    r = program_id(0)\n"
                                    "    x = load(X[r, 0:BLOCK], other = inf)\n"
                                    "    (k, v) = sort(x, load(I[r, 0:BLOCK]), descending = true)\n"
                                    "    store(Y[r, 0:BLOCK], sort(x))\n"
                                    "    store(J[r, 0:BLOCK], v)\n"
                                    "}\n";

#endif
