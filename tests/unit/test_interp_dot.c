/* dot: 2-D and batched 3-D, bf16 inputs with an f32 accumulator, i8 into
 * i32, f64; and a tiled matmul kernel (for loop, partial tiles). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tj_test_util.h"

/* The whole tensor t of `rank` dims `shape` as one view from the origin. */
static tj_ref whole(tt_kb *kb, tj_ref t, tj_dtype dt, int rank, const int32_t *shape)
{
    tj_ref zero = tt_ci(kb, TJ_DT_I32, 0);
    tj_type vt = tj_type_view(kb->c, dt, rank, shape);
    return rank == 2 ? tt_view(kb, vt, t, 2, shape, zero, zero) : tt_view(kb, vt, t, 3, shape, zero, zero, zero);
}

/* c = dot(a, b, acc) on whole tensors; batch 0 means 2-D. */
static void run_dot(tj_dtype in, tj_dtype acc, int batch, int M, int K, int N, const void *a, const void *b,
                    const void *c0, void *c)
{
    int rank = batch ? 3 : 2;
    int32_t sa[3] = {batch, M, K}, sb[3] = {batch, K, N}, sc[3] = {batch, M, N};
    const int32_t *pa = batch ? sa : sa + 1, *pb = batch ? sb : sb + 1, *pc = batch ? sc : sc + 1;
    tt_kb kb;
    tt_begin(&kb, "dot", 1, 0, 0);
    const char *dims2 = "M, K", *dims3 = "B, M, K";
    tj_ref ta = tt_param(&kb, "a", in, batch ? dims3 : dims2);
    tj_ref tb = tt_param(&kb, "b", in, batch ? "B, K, N" : "K, N");
    tj_ref tc0 = tt_param(&kb, "c0", acc, batch ? "B, M, N" : "M, N");
    tj_ref tc = tt_param(&kb, "c", acc, batch ? "B, M, N" : "M, N");
    tj_ref va = tt_load(&kb, whole(&kb, ta, in, rank, pa), TJ_NONE, TJ_NONE);
    tj_ref vb = tt_load(&kb, whole(&kb, tb, in, rank, pb), TJ_NONE, TJ_NONE);
    tj_ref vc = tt_load(&kb, whole(&kb, tc0, acc, rank, pc), TJ_NONE, TJ_NONE);
    tt_store(&kb, whole(&kb, tc, acc, rank, pc), tt_op(&kb, TJ_OP_DOT, tt_type(&kb, vc), 3, va, vb, vc), TJ_NONE);
    tt_end(&kb);
    tj_arg args[4];
    if (batch) {
        args[0] = tt_tensor((void *)a, in, 3, batch, M, K);
        args[1] = tt_tensor((void *)b, in, 3, batch, K, N);
        args[2] = tt_tensor((void *)c0, acc, 3, batch, M, N);
        args[3] = tt_tensor(c, acc, 3, batch, M, N);
    } else {
        args[0] = tt_tensor((void *)a, in, 2, M, K);
        args[1] = tt_tensor((void *)b, in, 2, K, N);
        args[2] = tt_tensor((void *)c0, acc, 2, M, N);
        args[3] = tt_tensor(c, acc, 2, M, N);
    }
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
}

Test(dot, f32_2d_in_k_order)
{
    enum { M = 4, K = 3, N = 5 };
    float a[M * K], b[K * N], c0[M * N], c[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = 0.1f * (float)(i + 1);
    for (int i = 0; i < K * N; i++)
        b[i] = 1.0f / (float)(i + 2);
    for (int i = 0; i < M * N; i++)
        c0[i] = (float)i - 3.5f;
    run_dot(TJ_DT_F32, TJ_DT_F32, 0, M, K, N, a, b, c0, c);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = c0[m * N + n];
            for (int k = 0; k < K; k++)
                s += a[m * K + k] * b[k * N + n];
            cr_assert_eq(c[m * N + n], s, "[%d, %d]", m, n);
        }
}

Test(dot, bf16_inputs_f32_accumulator)
{
    enum { M = 16, K = 32, N = 8 };
    uint16_t a[M * K], b[K * N];
    float fa[M * K], fb[K * N], c0[M * N], c[M * N];
    for (int i = 0; i < M * K; i++) {
        a[i] = tj_f32_to_bf16(sinf((float)i) * 3.0f);
        fa[i] = tj_bf16_to_f32(a[i]);
    }
    for (int i = 0; i < K * N; i++) {
        b[i] = tj_f32_to_bf16(cosf((float)i * 0.7f));
        fb[i] = tj_bf16_to_f32(b[i]);
    }
    memset(c0, 0, sizeof c0);
    run_dot(TJ_DT_BF16, TJ_DT_F32, 0, M, K, N, a, b, c0, c);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += fa[m * K + k] * fb[k * N + n];
            cr_assert_eq(c[m * N + n], s, "[%d, %d]", m, n);
        }
}

/* Batched [B, M, K] x [B, K, N] + [B, M, N] with f16 and bf16 inputs. */
static void check_batched(tj_dtype dt, uint16_t (*enc)(float), float (*dec)(uint16_t))
{
    enum { B = 3, M = 4, K = 8, N = 2 };
    uint16_t a[B * M * K], b[B * K * N];
    float c0[B * M * N], c[B * M * N];
    for (int i = 0; i < B * M * K; i++)
        a[i] = enc((float)(i % 9) - 4.0f + 0.3f * (float)(i % 4));
    for (int i = 0; i < B * K * N; i++)
        b[i] = enc(0.25f * (float)(i % 5) - 0.1f);
    for (int i = 0; i < B * M * N; i++)
        c0[i] = 1.0f + (float)i;
    run_dot(dt, TJ_DT_F32, B, M, K, N, a, b, c0, c);
    for (int z = 0; z < B; z++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float s = c0[(z * M + m) * N + n];
                for (int k = 0; k < K; k++)
                    s += dec(a[(z * M + m) * K + k]) * dec(b[(z * K + k) * N + n]);
                cr_assert_eq(c[(z * M + m) * N + n], s, "%s [%d, %d, %d]", tj_dtype_name(dt), z, m, n);
            }
}

Test(dot, batched_3d_bf16_and_f16)
{
    check_batched(TJ_DT_BF16, tj_f32_to_bf16, tj_bf16_to_f32);
    check_batched(TJ_DT_F16, tj_f32_to_f16, tj_f16_to_f32);
}

Test(dot, i8_into_i32_and_f64)
{
    enum { M = 2, K = 64, N = 3 };
    int8_t a[M * K], b[K * N];
    int32_t c0[M * N] = {0, 1, 2, 3, 4, 5}, c[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (int8_t)(i % 2 ? -128 : 127);
    for (int i = 0; i < K * N; i++)
        b[i] = (int8_t)(i % 3 ? -128 : 100);
    run_dot(TJ_DT_I8, TJ_DT_I32, 0, M, K, N, a, b, c0, c);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t s = c0[m * N + n];
            for (int k = 0; k < K; k++)
                s += a[m * K + k] * b[k * N + n];
            cr_assert_eq(c[m * N + n], s);
        }
    double da[4] = {1e-20, 1, 2, 3}, db[4] = {1, 1e20, 5, 6}, dc0[4] = {0}, dc[4];
    run_dot(TJ_DT_F64, TJ_DT_F64, 0, 2, 2, 2, da, db, dc0, dc);
    cr_assert(dc[0] == 1e-20 + 5.0 && dc[1] == 1e-20 * 1e20 + 6.0, "computed in double");
}

/* C[M, N] = A[M, K] x B[K, N] in BM x BN x BK tiles, with an f32 carried
 * accumulator; sizes that are not multiples of the tiles exercise the
 * masked-off edges (loads give 0, stores are dropped). */
Test(dot, tiled_matmul_kernel_partial_tiles)
{
    enum { M = 50, K = 70, N = 37, BM = 16, BN = 16, BK = 32 };
    static uint16_t a[M * K], b[K * N];
    static float c[M * N + 8];
    for (int i = 0; i < M * K; i++)
        a[i] = tj_f32_to_bf16((float)((i * 31) % 17) / 8.0f - 1.0f);
    for (int i = 0; i < K * N; i++)
        b[i] = tj_f32_to_bf16((float)((i * 13) % 11) / 4.0f - 1.25f);
    for (int i = 0; i < M * N + 8; i++)
        c[i] = -99.0f;
    tt_kb kb;
    tt_begin(&kb, "matmul", (M + BM - 1) / BM, (N + BN - 1) / BN, 0);
    tj_type i32 = tt_scalar(&kb, TJ_DT_I32);
    tj_ref ta = tt_param(&kb, "A", TJ_DT_BF16, "M, K"), tb = tt_param(&kb, "B", TJ_DT_BF16, "K, N");
    tj_ref tc = tt_param(&kb, "C", TJ_DT_F32, "M, N");
    tj_ref m0 = tt_bin(&kb, TJ_OP_MUL, tt_opi(&kb, TJ_OP_PROGRAM_ID, i32, 0, 0), tt_ci(&kb, TJ_DT_I32, BM));
    tj_ref n0 = tt_bin(&kb, TJ_OP_MUL, tt_opi(&kb, TJ_OP_PROGRAM_ID, i32, 1, 0), tt_ci(&kb, TJ_DT_I32, BN));
    tj_ref kdim = tt_opi(&kb, TJ_OP_DIM, i32, 1, 1, ta);
    tj_ref acc0 = tt_splat(&kb, tt_cf(&kb, TJ_DT_F32, 0.0), tt_tile(&kb, TJ_DT_F32, 2, BM, BN));
    tj_ref loop = tt_for(&kb, tt_ci(&kb, TJ_DT_I32, 0), kdim, tt_ci(&kb, TJ_DT_I32, BK), 1, acc0);
    tj_ref k = tt_barg(&kb, 0), acc = tt_barg(&kb, 1);
    int32_t sa[2] = {BM, BK}, sb[2] = {BK, BN};
    tj_ref va = tt_load(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_BF16, 2, sa), ta, 2, sa, m0, k), TJ_NONE, TJ_NONE);
    tj_ref vb = tt_load(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_BF16, 2, sb), tb, 2, sb, k, n0), TJ_NONE, TJ_NONE);
    tt_yield(&kb, 1, tt_op(&kb, TJ_OP_DOT, tt_type(&kb, acc), 3, va, vb, acc));
    int32_t sc[2] = {BM, BN};
    tt_store(&kb, tt_view(&kb, tj_type_view(kb.c, TJ_DT_F32, 2, sc), tc, 2, sc, m0, n0), tt_proj(&kb, loop, 0), TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(a, TJ_DT_BF16, 2, M, K), tt_tensor(b, TJ_DT_BF16, 2, K, N), tt_tensor(c, TJ_DT_F32, 2, M, N)};
    cr_assert_eq(tt_run(&kb, args, 3), 0);
    tt_free(&kb);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int kk = 0; kk < K; kk++)
                s += tj_bf16_to_f32(a[m * K + kk]) * tj_bf16_to_f32(b[kk * N + n]);
            cr_assert_eq(c[m * N + n], s, "[%d, %d]: %g vs %g", m, n, c[m * N + n], s);
        }
    for (int i = M * N; i < M * N + 8; i++)
        cr_assert_eq(c[i], -99.0f, "nothing written past the end");
}
