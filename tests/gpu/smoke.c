/* GPU smoke test of the CUDA runtime (run by tests/gpu/run.sh on a machine
 * with a device; exits 77 with the reason where there is none):
 *   - the hand-written vadd PTX, launched through the kernel ABI on a
 *     stream, with a strided input, checked element by element;
 *   - the same kernel compiled by nvJitLink for the device's arch, loaded
 *     as a cubin and launched with a packed parameter buffer;
 *   - abi_probe: every parameter of a tensor/scalar mix reaches the kernel
 *     intact, through kernelParams and through the packed buffer;
 *   - invalid PTX reports the driver JIT's log;
 *   - function attributes, events, the host cost of a launch, and four
 *     threads launching through one tj_cuda on their own streams. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilejit/cuda.h"
#include "tilejit/tilejit.h"

#include "ptx_kernels.h"

#include "gpu_check.h"

enum { N = 1000, BLOCK = 128 };

/* ---- kernels described as tj_kernels, for the ABI ------------------------ */

static tj_kernel *make_kernel(tj_ctx *c, const char *name, const tj_param *params, uint32_t n)
{
    tj_kernel *k = tj_kernel_new(c, name);
    k->params = tj_alloc(c, n * sizeof *params);
    memcpy(k->params, params, n * sizeof *params);
    k->nparams = n;
    return k;
}

static const tj_param vadd_params[] = {
    {"X", TJ_DT_F32, 1, {"N"}, {-1}},
    {"Y", TJ_DT_F32, 1, {"N"}, {-1}},
    {"Z", TJ_DT_F32, 1, {"N"}, {-1}},
};

static tj_arg vec(void *data, int64_t n, int64_t stride)
{
    return (tj_arg){.is_tensor = 1,
                    .tensor = {.data = data, .dtype = TJ_DT_F32, .rank = 1, .shape = {n},
                               .strides = {stride}}};
}

/* ---- vadd ------------------------------------------------------------------ */

typedef struct vadd_bufs {
    void *x, *y, *z; /* device: x[N], y[2N] read with stride 2, z[N] */
    float hx[N], hy[2 * N], hz[N];
} vadd_bufs;

static int vadd_setup(tj_cuda *cu, vadd_bufs *b, float seed, tj_rt_error *err)
{
    for (int i = 0; i < N; i++)
        b->hx[i] = seed + (float)i;
    for (int i = 0; i < 2 * N; i++)
        b->hy[i] = i % 2 ? -1e9f : 0.5f * (float)i;
    b->x = tj_cuda_malloc(cu, sizeof b->hx, err);
    b->y = tj_cuda_malloc(cu, sizeof b->hy, err);
    b->z = tj_cuda_malloc(cu, sizeof b->hz, err);
    CHECK(b->x && b->y && b->z, "%s", err->msg);
    CHECK(!tj_cuda_memcpy_htod(cu, b->x, b->hx, sizeof b->hx, err), "%s", err->msg);
    CHECK(!tj_cuda_memcpy_htod(cu, b->y, b->hy, sizeof b->hy, err), "%s", err->msg);
    CHECK(!tj_cuda_memset(cu, b->z, 0xff, sizeof b->hz, err), "%s", err->msg);
    return 0;
}

static int vadd_check(tj_cuda *cu, vadd_bufs *b, tj_rt_error *err)
{
    CHECK(!tj_cuda_memcpy_dtoh(cu, b->hz, b->z, sizeof b->hz, err), "%s", err->msg);
    for (int i = 0; i < N; i++)
        CHECK(b->hz[i] == b->hx[i] + b->hy[2 * i], "z[%d] = %g, expected %g", i, b->hz[i],
              b->hx[i] + b->hy[2 * i]);
    return 0;
}

static void vadd_free(tj_cuda *cu, vadd_bufs *b)
{
    tj_cuda_free(cu, b->x, NULL);
    tj_cuda_free(cu, b->y, NULL);
    tj_cuda_free(cu, b->z, NULL);
}

static tj_cuda_launch_dims vadd_dims(void *stream)
{
    return (tj_cuda_launch_dims){{(N + BLOCK - 1) / BLOCK, 1, 1}, {BLOCK, 1, 1}, 0, stream};
}

static int test_vadd_ptx(tj_cuda *cu, const tj_kernel *k, tj_rt_error *err)
{
    vadd_bufs b;
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ptx_vadd, "vadd", err);
    CHECK(m, "%s", err->msg);
    tj_cuda_function f;
    CHECK(!tj_cuda_module_function(m, "vadd", &f, err), "%s", err->msg);
    if (vadd_setup(cu, &b, 1.0f, err))
        return 1;
    void *stream = tj_cuda_stream_create(cu, 1, err);
    CHECK(stream, "%s", err->msg);
    tj_arg args[3] = {vec(b.x, N, 1), vec(b.y, N, 2), vec(b.z, N, 1)};
    tj_cuda_launch_dims d = vadd_dims(stream);
    CHECK(!tj_cuda_launch_kernel(&f, &d, k, args, 3, err), "%s", err->msg);
    CHECK(!tj_cuda_stream_synchronize(cu, stream, err), "%s", err->msg);
    if (vadd_check(cu, &b, err))
        return 1;
    tj_cuda_func_attrs a;
    CHECK(!tj_cuda_function_attrs(&f, &a, err), "%s", err->msg);
    CHECK(a.num_regs > 0 && a.max_threads_per_block >= BLOCK, "attrs: %d regs, %d threads",
          a.num_regs, a.max_threads_per_block);
    printf("vadd (PTX via the driver): ok; %d registers, %d local bytes, %d static shared, "
           "ptx %d, binary %d\n",
           a.num_regs, a.local_bytes, a.static_shared_bytes, a.ptx_version, a.binary_version);
    CHECK(!tj_cuda_stream_destroy(cu, stream, err), "%s", err->msg);
    vadd_free(cu, &b);
    tj_cuda_module_unload(m);
    return 0;
}

/* nvJitLink -> cubin -> packed launch on the default stream. */
static int test_vadd_cubin(tj_cuda *cu, const tj_kernel *k, const char *arch, tj_rt_error *err)
{
    vadd_bufs b;
    tj_nvjitlink *l = tj_nvjitlink_open(err);
    if (!l) {
        printf("vadd (cubin for %s): skipped: %s\n", arch, err->msg);
        return 0;
    }
    void *cubin;
    size_t size;
    CHECK(!tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), arch, NULL, 0, &cubin, &size, NULL,
                                err),
          "%s", err->msg);
    tj_nvjitlink_close(l);
    tj_cuda_module *m = tj_cuda_module_load_cubin(cu, cubin, size, "vadd", err);
    free(cubin);
    CHECK(m, "%s", err->msg);
    tj_cuda_function f;
    CHECK(!tj_cuda_module_function(m, "vadd", &f, err), "%s", err->msg);
    if (vadd_setup(cu, &b, -7.0f, err))
        return 1;
    tj_arg args[3] = {vec(b.x, N, 1), vec(b.y, N, 2), vec(b.z, N, 1)};
    tj_cuda_params p;
    CHECK(!tj_cuda_marshal(k, args, 3, &p, err), "%s", err->msg);
    tj_cuda_launch_dims d = vadd_dims(NULL);
    CHECK(!tj_cuda_launch_packed(&f, &d, p.data, p.size, err), "%s", err->msg);
    if (vadd_check(cu, &b, err))
        return 1;
    printf("vadd (cubin for %s from nvJitLink, packed parameters): ok\n", arch);
    vadd_free(cu, &b);
    tj_cuda_module_unload(m);
    return 0;
}

/* ---- abi_probe ------------------------------------------------------------- */

static const tj_param probe_params[] = {
    {"O", TJ_DT_U64, 1, {"N"}, {-1}},
    {"T", TJ_DT_F32, 3, {"A", "B", "C"}, {-1, -1, -1}},
    {"flag", TJ_DT_BOOL, 0, {0}, {0}},
    {"h", TJ_DT_F16, 0, {0}, {0}},
    {"x", TJ_DT_F64, 0, {0}, {0}},
    {"k", TJ_DT_I32, 0, {0}, {0}},
    {"c", TJ_DT_I8, 0, {0}, {0}},
};

static int run_probe(tj_cuda *cu, const tj_cuda_function *f, const tj_kernel *k, int packed,
                     tj_rt_error *err)
{
    void *out = tj_cuda_malloc(cu, 12 * 8, err);
    CHECK(out, "%s", err->msg);
    CHECK(!tj_cuda_memset(cu, out, 0, 12 * 8, err), "%s", err->msg);
    tj_arg args[7] = {
        {.is_tensor = 1, .tensor = {out, TJ_DT_U64, 1, {12}, {1}}},
        {.is_tensor = 1, .tensor = {(void *)0x7f0012345678, TJ_DT_F32, 3, {2, 3, 5}, {-15, 5, 1}}},
        {.scalar.i = 1}, {.scalar.f = 1.5}, {.scalar.f = -2.25}, {.scalar.i = -7}, {.scalar.i = -3},
    };
    tj_cuda_params p;
    CHECK(!tj_cuda_marshal(k, args, 7, &p, err), "%s", err->msg);
    tj_cuda_launch_dims d = {{1, 1, 1}, {1, 1, 1}, 0, NULL};
    int rc = packed ? tj_cuda_launch_packed(f, &d, p.data, p.size, err)
                    : tj_cuda_launch(f, &d, p.ptrs, err);
    CHECK(!rc, "%s", err->msg);
    uint64_t got[12];
    CHECK(!tj_cuda_memcpy_dtoh(cu, got, out, sizeof got, err), "%s", err->msg);
    tj_cuda_free(cu, out, NULL);
    double x = -2.25;
    uint64_t xbits;
    memcpy(&xbits, &x, 8);
    const uint64_t want[12] = {0x7f0012345678, 2, 3, 5, (uint64_t)-15, 5, 1, 1, 0x3e00, xbits,
                               (uint64_t)-7, (uint64_t)-3};
    for (int i = 0; i < 12; i++)
        CHECK(got[i] == want[i], "abi_probe (%s) slot %d: %#llx, expected %#llx",
              packed ? "packed" : "kernelParams", i, (unsigned long long)got[i],
              (unsigned long long)want[i]);
    return 0;
}

static int test_abi_probe(tj_cuda *cu, tj_ctx *c, tj_rt_error *err)
{
    tj_kernel *k = make_kernel(c, "abi_probe", probe_params, 7);
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ptx_abi_probe, "abi_probe", err);
    CHECK(m, "%s", err->msg);
    tj_cuda_function f;
    CHECK(!tj_cuda_module_function(m, "abi_probe", &f, err), "%s", err->msg);
    if (run_probe(cu, &f, k, 0, err) || run_probe(cu, &f, k, 1, err))
        return 1;
    printf("abi_probe (tensor ranks 1 and 3, bool, f16, f64, i32, i8): ok both ways\n");
    tj_cuda_module_unload(m);
    return 0;
}

/* ---- errors, attributes, timing ------------------------------------------- */

static int test_invalid_ptx(tj_cuda *cu, tj_rt_error *err)
{
    CHECK(!tj_cuda_module_load_ptx(cu, ptx_invalid, "broken", err), "invalid PTX loaded");
    CHECK(strstr(err->msg, "cuModuleLoadDataEx (loading PTX for kernel 'broken'): "
                           "CUDA_ERROR_INVALID_PTX"),
          "%s", err->msg);
    CHECK(strstr(err->msg, "frobnicate"), "no JIT log: %s", err->msg);
    printf("invalid PTX: ok: %s\n", err->msg);
    return 0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Event timing of many launches, and the host cost of one launch with
 * marshalling (the cached-kernel path). */
static int test_timing(tj_cuda *cu, const tj_kernel *k, tj_rt_error *err)
{
    vadd_bufs b;
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ptx_vadd, "vadd", err);
    CHECK(m, "%s", err->msg);
    tj_cuda_function f;
    CHECK(!tj_cuda_module_function(m, "vadd", &f, err), "%s", err->msg);
    if (vadd_setup(cu, &b, 3.0f, err))
        return 1;
    void *stream = tj_cuda_stream_create(cu, 0, err);
    void *e0 = tj_cuda_event_create(cu, err), *e1 = tj_cuda_event_create(cu, err);
    CHECK(stream && e0 && e1, "%s", err->msg);
    tj_arg args[3] = {vec(b.x, N, 1), vec(b.y, N, 2), vec(b.z, N, 1)};
    tj_cuda_launch_dims d = vadd_dims(stream);
    enum { LAUNCHES = 2000 };
    CHECK(!tj_cuda_event_record(cu, e0, stream, err), "%s", err->msg);
    double t0 = now_us();
    for (int i = 0; i < LAUNCHES; i++)
        CHECK(!tj_cuda_launch_kernel(&f, &d, k, args, 3, err), "%s", err->msg);
    double host_us = (now_us() - t0) / LAUNCHES;
    CHECK(!tj_cuda_event_record(cu, e1, stream, err), "%s", err->msg);
    CHECK(!tj_cuda_event_synchronize(cu, e1, err), "%s", err->msg);
    float ms = 0;
    CHECK(!tj_cuda_event_elapsed(cu, e0, e1, &ms, err), "%s", err->msg);
    CHECK(ms > 0, "elapsed %g ms", ms);
    if (vadd_check(cu, &b, err))
        return 1;
    printf("timing: %d launches in %.3f ms of GPU time; host cost %.2f us per launch "
           "(marshal + cuLaunchKernel)\n",
           LAUNCHES, ms, host_us);
    CHECK(host_us < 50, "a launch costs %.2f us on the host", host_us);
    tj_cuda_event_destroy(cu, e0, NULL);
    tj_cuda_event_destroy(cu, e1, NULL);
    tj_cuda_stream_destroy(cu, stream, NULL);
    vadd_free(cu, &b);
    tj_cuda_module_unload(m);
    return 0;
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct worker {
    tj_cuda *cu;
    const tj_cuda_function *f;
    const tj_kernel *k;
    float seed;
    vadd_bufs b;
    tj_rt_error err;
    int failed;
} worker;

static int work(worker *w)
{
    if (vadd_setup(w->cu, &w->b, w->seed, &w->err))
        return 1;
    void *stream = tj_cuda_stream_create(w->cu, 1, &w->err);
    CHECK(stream, "%s", w->err.msg);
    tj_arg args[3] = {vec(w->b.x, N, 1), vec(w->b.y, N, 2), vec(w->b.z, N, 1)};
    tj_cuda_launch_dims d = vadd_dims(stream);
    for (int i = 0; i < 200; i++)
        CHECK(!tj_cuda_launch_kernel(w->f, &d, w->k, args, 3, &w->err), "%s", w->err.msg);
    CHECK(!tj_cuda_stream_synchronize(w->cu, stream, &w->err), "%s", w->err.msg);
    tj_cuda_stream_destroy(w->cu, stream, NULL);
    int rc = vadd_check(w->cu, &w->b, &w->err);
    vadd_free(w->cu, &w->b);
    return rc;
}

static void *work_thread(void *arg)
{
    worker *w = arg;
    w->failed = work(w);
    return NULL;
}

static int test_threads(tj_cuda *cu, const tj_kernel *k, tj_rt_error *err)
{
    enum { THREADS = 4 };
    worker w[THREADS];
    pthread_t t[THREADS];
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ptx_vadd, "vadd", err);
    CHECK(m, "%s", err->msg);
    tj_cuda_function f;
    CHECK(!tj_cuda_module_function(m, "vadd", &f, err), "%s", err->msg);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.cu = cu, .f = &f, .k = k, .seed = 100.0f * (float)i};
        CHECK(!pthread_create(&t[i], NULL, work_thread, &w[i]), "pthread_create");
    }
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failed |= w[i].failed;
    }
    CHECK(!failed, "a thread failed");
    printf("threads: %d threads x 200 launches on their own streams: ok\n", THREADS);
    tj_cuda_module_unload(m);
    return 0;
}

int main(void)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu) {
        printf("SKIP: no CUDA device: %s\n", err.msg);
        return 77;
    }
    char list[4096];
    tj_cuda_describe(list, sizeof list);
    fputs(list, stdout);
    tj_cuda_props props;
    CHECK(!tj_cuda_device_props(cu, 0, &props, &err), "%s", err.msg);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d%s", props.cc_major, props.cc_minor,
             props.cc_major == 9 && props.cc_minor == 0 ? "a" : "");
    tj_ctx *c = tj_ctx_new();
    tj_kernel *vadd = make_kernel(c, "vadd", vadd_params, 3);
    int failed = test_vadd_ptx(cu, vadd, &err) || test_vadd_cubin(cu, vadd, arch, &err) ||
                 test_abi_probe(cu, c, &err) || test_invalid_ptx(cu, &err) ||
                 test_timing(cu, vadd, &err) || test_threads(cu, vadd, &err);
    tj_ctx_free(c);
    tj_cuda_close(cu);
    printf(failed ? "gpu smoke: FAILED\n" : "gpu smoke: all passed\n");
    return failed;
}
