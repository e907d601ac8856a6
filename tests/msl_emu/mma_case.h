/* The matrix-atom kernels of tests/lit/msl/mma.tjir for the emulator's
 * tests: C[32, 16] = A[32, 64] * B[64, 16] + init, one kernel per input
 * dtype (f16, bf16, f32), hand-written SIMT IR. Their arguments and a
 * reference in double. Header only. */
#ifndef TJ_MMA_CASE_H
#define TJ_MMA_CASE_H

#include "emu_util.h" /* first: it selects POSIX */

#include <math.h>

#include "tilejit/tilejit.h"

enum { MC_M = 32, MC_K = 64, MC_N = 16, MC_KERNELS = 3 };

typedef struct mma_case {
    tj_dtype in;                /* the input dtype */
    uint16_t a16[MC_M * MC_K];  /* f16 / bf16 inputs, as bits */
    uint16_t b16[MC_K * MC_N];
    float a32[MC_M * MC_K];     /* the inputs as floats: the f32 kernel's */
    float b32[MC_K * MC_N];
    float c[MC_M * MC_N];
    double ref[MC_M * MC_N];    /* A * B + init */
    double scale[MC_M * MC_N];  /* sum of |terms|: what rounding errors scale with */
    tj_arg args[4];
} mma_case;

/* Parses and verifies the kernels of the .tjir file into ks (in c); the
 * count, or -1 after printing the diagnostics. */
static inline int mc_load(tj_ctx *c, tj_kernel **ks)
{
    char path[512];
    snprintf(path, sizeof path, "%.400s/tests/lit/msl/mma.tjir", eu_source_dir());
    char *text = eu_read_file(path);
    int n = text ? tj_parse_ir(c, path, text, strlen(text), ks, MC_KERNELS) : -1;
    for (int i = 0; i < n; i++)
        if (tj_verify(ks[i]))
            n = -1;
    if (n < 0)
        printf("%s: %s\n", path, text ? tj_diag_render(c) : "cannot read");
    free(text);
    return n;
}

/* x rounded to dtype dt, and its bits (f16, bf16) */
static inline float mc_round(tj_dtype dt, double x, uint16_t *bits)
{
    if (dt == TJ_DT_F16)
        return tj_f16_to_f32(*bits = tj_f64_to_f16(x));
    if (dt == TJ_DT_BF16)
        return tj_bf16_to_f32(*bits = tj_f64_to_bf16(x));
    return (float)x;
}

static inline tj_arg mc_tensor(void *data, tj_dtype dt, int64_t rows, int64_t cols)
{
    tj_arg a;
    memset(&a, 0, sizeof a);
    a.is_tensor = 1;
    a.tensor = (tj_tensor){data, dt, 2, {rows, cols}, {cols, 1}};
    return a;
}

/* Inputs for kernel k (its dtype from parameter a) and the reference. */
static inline void mc_prepare(mma_case *m, const tj_kernel *k, uint32_t seed)
{
    m->in = k->params[0].dtype;
    int wide = m->in == TJ_DT_F32;
    double init = 0.375;
    for (int i = 0; i < MC_M * MC_K; i++)
        m->a32[i] = mc_round(m->in, sin(i * 0.61 + seed) * 2.0, &m->a16[i]);
    for (int i = 0; i < MC_K * MC_N; i++)
        m->b32[i] = mc_round(m->in, cos(i * 0.37 + seed) * 1.5, &m->b16[i]);
    for (int r = 0; r < MC_M; r++)
        for (int n = 0; n < MC_N; n++) {
            double s = init, mag = fabs(init);
            for (int q = 0; q < MC_K; q++) {
                double t = (double)m->a32[r * MC_K + q] * m->b32[q * MC_N + n];
                s += t;
                mag += fabs(t);
            }
            m->ref[r * MC_N + n] = s;
            m->scale[r * MC_N + n] = mag;
            m->c[r * MC_N + n] = NAN;
        }
    m->args[0] = mc_tensor(wide ? (void *)m->a32 : m->a16, m->in, MC_M, MC_K);
    m->args[1] = mc_tensor(wide ? (void *)m->b32 : m->b16, m->in, MC_K, MC_N);
    m->args[2] = mc_tensor(m->c, TJ_DT_F32, MC_M, MC_N);
    memset(&m->args[3], 0, sizeof m->args[3]);
    m->args[3].scalar.f = init;
}

/* Whether C matches the reference within f32 rounding of a sum of 65
 * terms in any order (a GPU's order is unspecified); prints the worst. */
static inline int mc_check(const mma_case *m, const char *what)
{
    double worst = 1;
    int at = -1;
    for (int i = 0; i < MC_M * MC_N; i++) {
        double err = fabs(m->c[i] - m->ref[i]) / (m->scale[i] * 0x1p-24 * (MC_K + 1));
        if (isnan(err)) {
            at = i;
            break;
        }
        if (err > worst)
            worst = err, at = i;
    }
    if (at < 0)
        return 1;
    printf("FAIL %s: C[%d][%d] = %.9g, expected %.9g\n", what, at / MC_N, at % MC_N, m->c[at], m->ref[at]);
    return 0;
}

#endif
