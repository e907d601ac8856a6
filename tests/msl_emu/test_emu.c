/* The emulator on hand-written MSL (kernels/good.metal, bugs.metal): correct kernels give
 * the right results under every schedule; each broken kernel is reported
 * with its bug; the compile step refuses what Metal would reject. */
#include "emu_util.h"

#include <math.h>

#include "tilejit/interp.h" /* tj_f16_to_f32, tj_bf16_to_f32 */

static const uint32_t schedules[] = {0, 1, 7};

static char *load_kernels(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%.400s/tests/msl_emu/kernels/%.63s", eu_source_dir(), name);
    char *s = eu_read_file(path);
    if (!s)
        printf("cannot read %s\n", path);
    return s;
}

static int run(void *so, const char *kernel, mtl_emu_dispatch_desc *d, char *err, size_t errlen)
{
    mtl_emu_entry e = mtl_emu_lookup(so, 0, kernel);
    if (!e) {
        snprintf(err, errlen, "no kernel %s", kernel);
        return 1;
    }
    return mtl_emu_dispatch(e, d, err, errlen);
}

/* ---- correct kernels ------------------------------------------------------------ */

static void check_reduce(void *so, uint32_t sched)
{
    enum { N = 1000, TG = 96, NG = (N + TG - 1) / TG };
    static float in[N], out[NG];
    uint32_t n = N;
    for (int i = 0; i < N; i++)
        in[i] = (float)((i * 37) % 101) * 0.25f;
    mtl_emu_dispatch_desc d = eu_desc(NG, TG, sched, 3, in, out, &n);
    char err[1024];
    int rc = run(so, "reduce_sum", &d, err, sizeof err);
    EU_CHECK(rc == 0, "reduce_sum (schedule %u): %s", sched, err);
    for (int g = 0; g < NG && !rc; g++) {
        double ref = 0;
        for (int i = g * TG; i < N && i < (g + 1) * TG; i++)
            ref += in[i];
        EU_CHECK(fabs(ref - out[g]) < 1e-3, "reduce_sum group %d: %g, expected %g", g, out[g], ref);
    }
}

static void check_softmax(void *so, uint32_t sched)
{
    enum { ROWS = 8, COLS = 256 };
    static float x[ROWS * COLS];
    static uint16_t y[ROWS * COLS];
    uint32_t cols4 = COLS / 4;
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = sinf((float)i * 0.37f) * 4.0f;
    mtl_emu_dispatch_desc d = eu_desc(ROWS, 32, sched, 3, x, y, &cols4);
    char err[1024];
    int rc = run(so, "softmax_rows", &d, err, sizeof err);
    EU_CHECK(rc == 0, "softmax_rows (schedule %u): %s", sched, err);
    for (int r = 0; r < ROWS && !rc; r++) {
        double m = -1e30, s = 0;
        for (int c = 0; c < COLS; c++)
            m = fmax(m, x[r * COLS + c]);
        for (int c = 0; c < COLS; c++)
            s += exp(x[r * COLS + c] - m);
        for (int c = 0; c < COLS; c++) {
            double ref = exp(x[r * COLS + c] - m) / s, got = tj_f16_to_f32(y[r * COLS + c]);
            EU_CHECK(fabs(got - ref) <= 1e-3 * ref + 1e-7, "softmax[%d][%d] = %g, expected %g", r, c, got, ref);
        }
    }
}

static void check_matmul(void *so, uint32_t sched)
{
    enum { M = 64, K = 96, N = 64 };
    static float A[M * K], B[K * N], C[M * N];
    uint32_t k = K, n = N;
    for (int i = 0; i < M * K; i++)
        A[i] = (float)(i % 7 - 3) * 0.5f;
    for (int i = 0; i < K * N; i++)
        B[i] = (float)(i % 5 - 2) * 0.25f;
    mtl_emu_dispatch_desc d = eu_desc(N / 32, 128, sched, 5, A, B, C, &k, &n);
    d.threadgroups[1] = M / 32;
    char err[1024];
    int rc = run(so, "matmul_simdgroup", &d, err, sizeof err);
    EU_CHECK(rc == 0, "matmul_simdgroup (schedule %u): %s", sched, err);
    double worst = 0;
    for (int i = 0; i < M && !rc; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int q = 0; q < K; q++)
                ref += (double)A[i * K + q] * B[q * N + j];
            worst = fmax(worst, fabs(ref - C[i * N + j]));
        }
    EU_CHECK(worst < 1e-4, "matmul_simdgroup: max error %g", worst);
}

static void check_types(void *so, uint32_t sched)
{
    enum { N = 128 };
    static float in[N * 4], out[N * 4];
    static uint16_t h[N * 4], b[N];
    struct {
        uint32_t n;
        float scale;
    } p = {100, 2.0f};
    uint32_t count = 0;
    float total = 0;
    for (int i = 0; i < N * 4; i++)
        in[i] = (float)(i % 9) * 0.125f;
    mtl_emu_dispatch_desc d = eu_desc(2, 64, sched, 7, in, out, &p, &count, &total, h, b);
    char err[1024];
    int rc = run(so, "types_probe", &d, err, sizeof err);
    EU_CHECK(rc == 0 && count == 100 && total == 50.0f, "types_probe: rc %d count %u total %g: %s", rc, count,
             (double)total, err);
    for (int i = 0; i < N && !rc; i++) {
        float y = in[i * 4 + 1]; /* v.x after the swizzle */
        EU_CHECK(tj_f16_to_f32(h[i * 4]) == y * 2 && out[i * 4 + 1] == in[i * 4] * 2, "half4 at %d", i);
        EU_CHECK(tj_bf16_to_f32(b[i]) == y * 2 && out[i * 4 + 2] == y * 2, "bfloat at %d", i);
    }
}

/* ---- broken kernels ----------------------------------------------------------------- */

static void check_bug(void *so, const char *kernel, uint32_t threads, const char *expect)
{
    static float out[64];
    for (uint32_t s = 0; s < 2; s++) {
        mtl_emu_dispatch_desc d = eu_desc(1, threads, schedules[s], 1, out);
        char err[1024] = "";
        int rc = run(so, kernel, &d, err, sizeof err);
        EU_CHECK(rc != 0 && strstr(err, expect), "%s (schedule %u): expected a report of \"%s\", got rc %d: %s",
                 kernel, schedules[s], expect, rc, err);
        if (s == 0)
            printf("caught %-18s %s\n", kernel, err);
    }
}

/* ---- the compile step's checks ------------------------------------------------------- */

static void check_refused(const char *body, const char *expect)
{
    char src[1024], so[512], log[4096] = "";
    snprintf(src, sizeof src,
             "#include <metal_stdlib>\nusing namespace metal;\n"
             "kernel void k(device float *p [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n%s\n}\n",
             body);
    const char *srcs[] = {src};
    eu_work_path(so, sizeof so, "refused.so");
    int rc = mtl_emu_compile(srcs, 1, so, log, sizeof log);
    EU_CHECK(rc != 0 && strstr(log, expect), "expected \"%s\" for:\n%s\ngot rc %d: %s", expect, body, rc, log);
    unlink(so);
}

static void check_checker(void)
{
    check_refused("    p[i] = 1.5;", "needs a suffix");
    check_refused("    double d = 1.0f; p[i] = float(d);", "'double' does not exist");
    check_refused("    float4 v = (float4)p[i]; p[i] = v.x;", "C-style cast to float4");
    check_refused("    p[i] = std::abs(p[i]);", "std::");
    check_refused("    threadgroup float x; x = 1.0f; p[i] = x;", "unsupported use of threadgroup");
    check_refused("    p[i] = undefined_name;", "undefined_name"); /* the compiler's own message */
}

int main(void)
{
    char *good = load_kernels("good.metal"), *bugs = load_kernels("bugs.metal");
    if (!good || !bugs)
        return 1;
    const char *g[] = {good}, *b[] = {bugs};
    double t0 = eu_now();
    void *gso = eu_build(g, 1, "good"), *bso = eu_build(b, 1, "bugs");
    printf("compiled the hand-written kernels in %.2f s\n", eu_now() - t0);
    EU_CHECK(gso && bso, "the hand-written kernels compile");
    for (int s = 0; gso && s < 3; s++) {
        check_reduce(gso, schedules[s]);
        check_softmax(gso, schedules[s]);
        check_matmul(gso, schedules[s]);
        check_types(gso, schedules[s]);
    }
    if (bso) {
        check_bug(bso, "missing_barrier", 64, "missing barrier");
        check_bug(bso, "write_after_read", 64, "missing barrier");
        check_bug(bso, "uninit_read", 64, "uninitialized");
        check_bug(bso, "too_much_tg", 64, "threadgroup memory: 36864 bytes needed");
        check_bug(bso, "divergent_barrier", 64, "divergent threadgroup_barrier");
        check_bug(bso, "early_return", 64, "returned");
        check_bug(bso, "divergent_simd", 32, "divergent SIMD-group operation");
        check_bug(bso, "nonuniform_matrix_load", 32, "simdgroup_load needs a full SIMD group");
    }
    check_checker();
    /* the cost of a switch: one reduction per 256 threads over 2^20 floats */
    enum { BIG = 1 << 20 };
    float *in = calloc(BIG, sizeof *in), *out = calloc(BIG / 256, sizeof *out);
    uint32_t n = BIG;
    mtl_emu_dispatch_desc d = eu_desc(BIG / 256, 256, 0, 3, in, out, &n);
    char err[256];
    t0 = eu_now();
    int rc = gso ? run(gso, "reduce_sum", &d, err, sizeof err) : 1;
    printf("reduce of 2^20 floats: %.0f ns per thread (3 switches each)\n", (eu_now() - t0) * 1e9 / BIG);
    EU_CHECK(rc == 0, "large reduce");
    free(in);
    free(out);
    mtl_emu_close(gso);
    mtl_emu_close(bso);
    free(good);
    free(bugs);
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
