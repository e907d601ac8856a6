/* The PTX code generator against the SIMT interpreter, on a CUDA device:
 * every kernel of the catalogue (simt_kernels.h) runs on random data both
 * ways, for sm_90a and sm_80 PTX (the driver JITs sm_80 PTX for newer
 * GPUs), and every output tensor must agree: exactly for integers, bools
 * and IEEE-exact float ops, within a few ulp for the math functions (see
 * tolerance()). Without a device the test is skipped with the reason.
 *
 * Built with -DTJ_PTX_GPU_MAIN it is a plain program (no Criterion) for
 * machines that only have a GPU and a C compiler:
 *   cc -std=c11 -O1 -DTJ_PTX_GPU_MAIN -Iinclude -Itests/unit \
 *      tests/unit/test_ptx_gpu.c libtilejit.a -lm -ldl -lpthread
 * It prints one line per output whose error is not zero, and exits 0 when
 * everything is within tolerance, 1 otherwise, 77 without a device. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>

#include "simt_kernels.h"
#include "tilejit/cuda.h"

#ifndef TJ_PTX_GPU_MAIN
#include <criterion/criterion.h>
#endif

/* ---- comparing results ------------------------------------------------------- */

/* A float's bits as a signed integer ordered like the values (-0 and +0
 * both 0), so the difference of two is their distance in ulps. */
static int64_t ordered(uint64_t bits, int nbits)
{
    uint64_t sign = (uint64_t)1 << (nbits - 1), mag = bits & (sign - 1);
    return bits & sign ? -(int64_t)mag : (int64_t)mag;
}

static int is_nan_bits(uint64_t bits, tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16: return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff);
    case TJ_DT_BF16: return (bits & 0x7f80) == 0x7f80 && (bits & 0x7f);
    case TJ_DT_F32: return (bits & 0x7f800000) == 0x7f800000 && (bits & 0x7fffff);
    default: return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits & 0xfffffffffffffull);
    }
}

/* Distance in ulps (bit differences for non-floats: 0 or "infinite"). */
static double distance(tj_dtype dt, const unsigned char *x, const unsigned char *y)
{
    int size = tj_dtype_size(dt);
    uint64_t a = 0, b = 0;
    memcpy(&a, x, (size_t)size);
    memcpy(&b, y, (size_t)size);
    if (!tj_dtype_is_float(dt))
        return dt == TJ_DT_BOOL ? ((a != 0) != (b != 0) ? INFINITY : 0) : (a != b ? INFINITY : 0);
    int na = is_nan_bits(a, dt), nb = is_nan_bits(b, dt);
    if (na || nb)
        return na && nb ? 0 : INFINITY;
    int64_t d = ordered(a, size * 8) - ordered(b, size * 8);
    return fabs((double)d);
}

static int name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(name, *list))
            return 1;
    return 0;
}

/* Allowed ulps for output `out` of dtype dt. The math functions are
 * approximations (ptx_math.c) compared with libm; float atomics add in an
 * order the GPU chooses; the matrix atom sums in its own order, and rounds
 * f32 inputs to tf32 (10-bit mantissas: 2^-10 relative for positive sums).
 * Everything else must be bit-exact. */
static double tolerance(tj_dtype dt, const char *out)
{
    static const char *const math[] = {"exp", "exp2", "log", "log2", "sin", "cos", "tanh",
                                       "sigmoid", "erf", "rsqrt", NULL};
    if (!tj_dtype_is_float(dt))
        return 0;
    int half = dt == TJ_DT_F16 || dt == TJ_DT_BF16;
    if (!strcmp(out, "u_acc"))
        return half ? 32 : 512;
    if (!strcmp(out, "mma_out"))
        return 64;
    if (!strcmp(out, "mma_tf32_out"))
        return 1 << 14;
    if (!strcmp(out, "pow"))
        return half ? 1 : dt == TJ_DT_F32 ? 1 : 512;
    if (name_in(out, math))
        return half ? 1 : 4;
    return 0;
}

typedef struct check {
    int failures;
    int verbose;
} check;

/* Compares one tensor; reports the worst element. */
static void compare_tensor(check *ck, const char *kernel, const char *arch, const tj_param *p, const unsigned char *gpu,
                           const unsigned char *ref, size_t n, const sk_args *inputs)
{
    int size = tj_dtype_size(p->dtype);
    double worst = 0, tol = tolerance(p->dtype, p->name);
    size_t at = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = distance(p->dtype, gpu + i * (size_t)size, ref + i * (size_t)size);
        if (d > tol)
            bad++;
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    if (worst == 0 && !bad)
        return;
    if (bad)
        ck->failures++;
    if (!bad && !ck->verbose)
        return;
    uint64_t g = 0, r = 0, a0 = 0, a1 = 0;
    memcpy(&g, gpu + at * (size_t)size, (size_t)size);
    memcpy(&r, ref + at * (size_t)size, (size_t)size);
    /* the elementwise kernels' inputs a and b are parameters 0 and 1 */
    if (inputs->n > 1 && inputs->bufs[0] && inputs->bytes[0] / (size_t)tj_dtype_size(inputs->args[0].tensor.dtype) == n) {
        int s0 = tj_dtype_size(inputs->args[0].tensor.dtype);
        memcpy(&a0, (unsigned char *)inputs->bufs[0] + at * (size_t)s0, (size_t)s0);
        if (inputs->bufs[1] && inputs->args[1].tensor.dtype == inputs->args[0].tensor.dtype &&
            inputs->bytes[1] == inputs->bytes[0])
            memcpy(&a1, (unsigned char *)inputs->bufs[1] + at * (size_t)s0, (size_t)s0);
    }
    printf("%s %-22s %-8s %-8s %zu/%zu beyond %g ulp; worst %g ulp at %zu: gpu 0x%llx ref 0x%llx (inputs 0x%llx "
           "0x%llx)\n",
           bad ? "FAIL" : "note", kernel, arch, p->name, bad, n, tol, worst, at, (unsigned long long)g,
           (unsigned long long)r, (unsigned long long)a0, (unsigned long long)a1);
}

/* ---- running a kernel both ways ------------------------------------------------- */

static int gpu_run(tj_cuda *cu, const tj_kernel *k, const char *arch, sk_args *a, tj_rt_error *err)
{
    tj_buf ptx = {0};
    if (tj_emit_ptx(k, arch, &ptx)) {
        snprintf(err->msg, sizeof err->msg, "emit: %s", tj_diag_render(k->ctx));
        return -1;
    }
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ptx.data, k->name, err);
    tj_buf_free(&ptx);
    if (!m)
        return -1;
    tj_cuda_function f;
    int rc = tj_cuda_module_function(m, k->name, &f, err);
    sk_args dev = *a;
    for (uint32_t i = 0; i < a->n && !rc; i++) {
        dev.args[i].tensor.data = NULL;
        if (!a->bufs[i])
            continue;
        dev.args[i].tensor.data = tj_cuda_malloc(cu, a->bytes[i], err);
        rc = !dev.args[i].tensor.data || tj_cuda_memcpy_htod(cu, dev.args[i].tensor.data, a->bufs[i], a->bytes[i], err);
    }
    int64_t grid[3];
    if (!rc && tj_eval_grid(k, a->args, a->n, grid)) {
        snprintf(err->msg, sizeof err->msg, "grid: %s", tj_diag_render(k->ctx));
        rc = -1;
    }
    if (!rc) {
        tj_cuda_launch_dims d = {{(uint32_t)grid[0], (uint32_t)grid[1], (uint32_t)grid[2]}, {k->nthreads, 1, 1},
                                 k->smem_bytes, NULL};
        rc = tj_cuda_launch_kernel(&f, &d, k, dev.args, dev.n, err) || tj_cuda_synchronize(cu, err);
    }
    for (uint32_t i = 0; i < a->n; i++)
        if (dev.args[i].tensor.data) {
            if (!rc)
                rc = tj_cuda_memcpy_dtoh(cu, a->bufs[i], dev.args[i].tensor.data, a->bytes[i], err);
            tj_cuda_free(cu, dev.args[i].tensor.data, NULL);
        }
    tj_cuda_module_unload(m);
    return rc;
}

/* Runs catalogue kernel `index` on the GPU and in the SIMT interpreter. */
static void check_kernel(check *ck, tj_cuda *cu, int index, const char *arch)
{
    tt_kb kb;
    if (sk_build(&kb, index) <= 0)
        return;
    sk_args gpu, ref;
    if (sk_make_args(kb.k, (uint64_t)index + 1, &gpu)) {
        printf("FAIL %s: no arguments\n", kb.k->name);
        ck->failures++;
        tt_free(&kb);
        return;
    }
    sk_copy_args(&ref, &gpu);
    tj_rt_error err = {{0}};
    if (tj_simt_run(kb.k, ref.args, ref.n)) {
        printf("FAIL %s: SIMT interpreter: %s\n", kb.k->name, tj_diag_render(kb.c));
        ck->failures++;
    } else if (gpu_run(cu, kb.k, arch, &gpu, &err)) {
        printf("FAIL %s %s: %s\n", kb.k->name, arch, err.msg);
        ck->failures++;
    } else {
        sk_args inputs;
        sk_make_args(kb.k, (uint64_t)index + 1, &inputs); /* the same seed: the inputs again */
        for (uint32_t i = 0; i < kb.k->nparams; i++) {
            const tj_param *p = &kb.k->params[i];
            size_t len = strlen(p->name);
            if (!gpu.bufs[i] || (len > 7 && !strcmp(p->name + len - 7, "_nondet")))
                continue;
            compare_tensor(ck, kb.k->name, arch, p, gpu.bufs[i], ref.bufs[i],
                           gpu.bytes[i] / (size_t)tj_dtype_size(p->dtype), &inputs);
        }
        sk_free_args(&inputs);
    }
    sk_free_args(&gpu);
    sk_free_args(&ref);
    tt_free(&kb);
}

static int check_all(check *ck, tj_cuda *cu)
{
    static const char *const archs[] = {"sm_90a", "sm_80"};
    tj_cuda_props props;
    tj_rt_error err;
    int native = 1;
    if (!tj_cuda_device_props(cu, tj_cuda_ordinal(cu), &props, &err))
        native = props.cc_major == 9 && props.cc_minor == 0; /* sm_90a PTX runs on sm_90 only */
    for (int a = native ? 0 : 1; a < 2; a++)
        for (int i = 0;; i++) {
            tt_kb probe;
            int rc = sk_build(&probe, i);
            if (rc == 0)
                break;
            if (rc < 0)
                continue;
            tt_free(&probe);
            check_kernel(ck, cu, i, archs[a]);
        }
    return ck->failures;
}

#ifdef TJ_PTX_GPU_MAIN
int main(int argc, char **argv)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu) {
        printf("SKIP: no CUDA device: %s\n", err.msg);
        return 77;
    }
    check ck = {0, argc > 1 && !strcmp(argv[1], "-v")};
    int failures = check_all(&ck, cu);
    tj_cuda_close(cu);
    printf("%s: %d output(s) beyond tolerance\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
#else
Test(ptx_gpu, catalogue_matches_simt_interpreter, .timeout = 600)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu)
        cr_skip_test("SKIP: no CUDA device: %s", err.msg);
    check ck = {0, 0};
    int failures = check_all(&ck, cu);
    tj_cuda_close(cu);
    cr_assert_eq(failures, 0, "%d output(s) differ from the SIMT interpreter (see the log)", failures);
}
#endif
