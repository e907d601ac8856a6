/* The native cpu through the JIT API (tilejit/jit.h): TJ_DEVICE_CPU runs
 * machine code that agrees with TJ_DEVICE_INTERP, keeps the contract of
 * the facts it was specialized on, and a second JIT loads the object code
 * from the disk cache instead of compiling. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_check.h"
#include "lower_kernels.h"
#include "tilejit/jit.h"

enum { M = 37, N = 300 };

static void on_event(void *ud, const tj_event *e)
{
    if (e->kind == TJ_EVENT_COMPILE)
        *(tj_build_source *)ud = e->from;
}

/* Softmax of x into y on a JIT of `kind`; the build source in *from. */
static void run_softmax(tj_device_kind kind, const float *x, float *y, tj_build_source *from)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(kind, 0, &err);
    cr_assert(j, "%s", err.msg);
    /* else TJ_DEVICE_CPU runs the interpreter, compared against itself */
    cr_assert(kind != TJ_DEVICE_CPU || tj_jit_native_cpu(j), "TJ_DEVICE_CPU fell back to the interpreter");
    tj_jit_set_event_handler(j, on_event, from);
    int64_t shape[2] = {M, N};
    tj_arg args[2] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous((void *)x, TJ_DT_F32, 2, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_F32, 2, shape)}};
    tj_compile_request req = {.source = SOFTMAX, .len = strlen(SOFTMAX), .kernel = "softmax", .args = args, .nargs = 2};
    tj_fn *f = tj_jit_compile(j, &req, &err);
    cr_assert(f, "%s", err.msg);
    cr_assert_eq(tj_fn_launch(f, args, 2, NULL, &err), 0, "%s", err.msg);
    if (kind == TJ_DEVICE_CPU) { /* the facts it was specialized on: a unit innermost stride */
        args[0].tensor.strides[1] = 2;
        args[0].tensor.shape[1] = N / 2;
        cr_assert_neq(tj_fn_launch(f, args, 2, NULL, &err), 0);
    }
    tj_jit_close(j);
}

Test(cpu_jit, native_matches_the_interpreter_and_comes_back_from_disk)
{
    CC_REQUIRE_LLVM();
    char dir[] = "/tmp/tj_cpu_jit_XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("TILEJIT_CACHE_DIR", dir, 1);
    float *x = malloc(sizeof(float) * M * N), *want = calloc(M * N, sizeof(float)), *got = calloc(M * N, sizeof(float));
    for (int i = 0; i < M * N; i++)
        x[i] = (float)((i * 37) % 101) / 17.0f - 3.0f;
    tj_build_source from = TJ_FROM_MEMORY;
    run_softmax(TJ_DEVICE_INTERP, x, want, &from);
    run_softmax(TJ_DEVICE_CPU, x, got, &from);
    cr_expect_eq(from, TJ_BUILT);
    for (int i = 0; i < M * N; i++)
        cr_assert_float_eq(got[i], want[i], 1e-6f + 1e-4f * want[i], "Y[%d]: native %g, interpreter %g", i, got[i], want[i]);
    memset(got, 0, sizeof(float) * M * N);
    run_softmax(TJ_DEVICE_CPU, x, got, &from);
    cr_expect_eq(from, TJ_FROM_DISK, "the second JIT compiled again");
    for (int i = 0; i < M * N; i++)
        cr_assert_float_eq(got[i], want[i], 1e-6f + 1e-4f * want[i]);
    free(x), free(want), free(got);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

Test(cpu_jit, the_device_kinds)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    cr_expect_eq(tj_jit_device(j), TJ_DEVICE_INTERP);
    cr_expect_eq(tj_jit_native_cpu(j), 0);
    tj_jit_close(j);
    j = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    cr_assert(j, "%s", err.msg);
    cr_expect_eq(tj_jit_native_cpu(j), tj_cpu_available(NULL));
    tj_jit_close(j);
}

/* Optimized Tile IR of `name` in src, in its own context (*c). */
static tj_kernel *tile_ir(tj_ctx **c, const char *src, const char *name, const char *shapes)
{
    tj_binding dims[4];
    *c = tj_ctx_new();
    int64_t nd = tj_bindings_parse(*c, shapes, dims, 4);
    tj_program *p = tj_parse_program(*c, "test.tj", src, strlen(src));
    int ki = p ? tj_program_find_kernel(p, name) : -1;
    tj_binding *config;
    uint32_t nconfig;
    cr_assert(ki >= 0 && nd >= 0 && !tj_select_config(*c, p, ki, NULL, 0, dims, (uint32_t)nd, &config, &nconfig),
              "%s", tj_diag_render(*c));
    tj_kernel *k = tj_build_kernel(*c, p, ki, config, nconfig, dims, (uint32_t)nd);
    cr_assert(k && !tj_pipeline_run(&k, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_FACTS, NULL), "%s", tj_diag_render(*c));
    return k;
}

/* 64 MiB of tiles per program (the loaded row and its cumsum) cannot live
 * on a worker's stack: refused at compile time with the reason, and the
 * JIT caches nothing for it. */
static const char *const HUGE = "kernel huge(X: f64[N], Y: f64[N])\n"
                                "    grid (1)\n"
                                "{\n"
                                "    store(Y[0:4194304], cumsum(load(X[0:4194304])))\n"
                                "}\n";

Test(cpu_jit, a_kernel_too_big_for_a_stack_is_refused_before_it_is_cached)
{
    CC_REQUIRE_LLVM();
    char err[256], dir[] = "/tmp/tj_cpu_huge_XXXXXX";
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    cr_assert(cpu, "%s", err);
    tj_ctx *c;
    tj_kernel *k = tile_ir(&c, HUGE, "huge", "N=100");
    tj_buf obj = {0};
    cr_expect_neq(tj_cpu_compile_object(cpu, k, &obj, NULL), 0);
    cr_expect(strstr(tj_diag_render(c), "more than the"), "%s", tj_diag_render(c));
    tj_buf_free(&obj);
    tj_ctx_free(c);
    tj_cpu_free(cpu);

    cr_assert(mkdtemp(dir));
    setenv("TILEJIT_CACHE_DIR", dir, 1);
    tj_rt_error rerr = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CPU, 0, &rerr);
    cr_assert(j, "%s", rerr.msg);
    double x[100] = {0}, y[100];
    int64_t shape[1] = {100};
    tj_arg args[2] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_F64, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_F64, 1, shape)}};
    tj_compile_request req = {.source = HUGE, .len = strlen(HUGE), .kernel = "huge", .args = args, .nargs = 2};
    cr_expect_null(tj_jit_compile(j, &req, &rerr));
    cr_expect(strstr(rerr.msg, "stack"), "%s", rerr.msg);
    tj_jit_close(j);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "test -z \"$(find %s -type f)\" && rm -rf %s", dir, dir);
    cr_expect_eq(system(cmd), 0, "something was cached for a kernel that cannot run");
}

/* A failed load empties its JIT library and the next load reuses it: the
 * kernel linked there still finds the sort helper and runs right. */
Test(cpu_jit, a_failed_load_leaves_a_library_the_next_kernel_uses)
{
    CC_REQUIRE_LLVM();
    char err[256];
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    cr_assert(cpu, "%s", err);
    static const char junk[] = "\177ELF this is not an object file";
    for (int i = 0; i < 3; i++) {
        cr_expect_null(tj_cpu_load(cpu, junk, sizeof junk, err, sizeof err));
        cr_expect(strstr(err, "cannot link"), "%s", err);
    }
    tj_ctx *c;
    tj_kernel *k = tile_ir(&c, "kernel s(X: i32[N], Y: i32[N])\n"
                               "    grid (1)\n"
                               "{\n"
                               "    store(Y[0:64], sort(load(X[0:64], other = 0)))\n"
                               "}\n", "s", "N=64");
    int32_t x[64], y[64];
    for (int i = 0; i < 64; i++)
        x[i] = (i * 37) % 64 - 20;
    int64_t shape[1] = {64};
    tj_arg args[2] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_I32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_I32, 1, shape)}};
    cr_assert_eq(tj_cpu_run_kernel(cpu, k, args, 2), 0, "%s", tj_diag_render(c));
    for (int i = 0; i < 64; i++)
        cr_expect_eq(y[i], i - 20, "Y[%d] = %d", i, y[i]);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}

/* A tj_cpu of two threads: the pool and the caller both run programs. */
static tj_cpu *two_threads(void)
{
    char err[256];
    tj_cpu *cpu = tj_cpu_new(2, err, sizeof err);
    cr_assert(cpu, "%s", err);
    return cpu;
}

/* A launch from a thread with a small stack leaves programs whose tiles
 * would not fit it to the workers (a program of 128 KiB of tiles launched
 * from a 128 KiB stack used to run on the caller and overflow it). */
typedef struct small_stack_job {
    tj_cpu_fn *f;
    const tj_arg *args;
    const int64_t *grid;
    int rc;
} small_stack_job;

static void *launch_on_small_stack(void *arg)
{
    small_stack_job *j = arg;
    char err[256];
    j->rc = tj_cpu_run(j->f, j->args, 2, j->grid, err, sizeof err);
    return NULL;
}

Test(cpu_jit, a_caller_with_a_small_stack_does_not_run_big_programs)
{
    CC_REQUIRE_LLVM();
    enum { B = 16384, N = 4 * B };
    tj_cpu *cpu = two_threads();
    tj_ctx *c;
    tj_kernel *k = tile_ir(&c, "kernel big(X: i32[N], Y: i32[N])\n"
                               "    grid (cdiv(N, 16384))\n"
                               "{\n"
                               "    i = program_id(0) * 16384\n"
                               "    store(Y[i:i+16384], cumsum(load(X[i:i+16384])))\n"
                               "}\n", "big", "N=65536");
    int32_t *x = calloc(N, sizeof *x), *y = calloc(N, sizeof *y);
    for (int i = 0; i < N; i++)
        x[i] = i % 7 - 3;
    int64_t shape[1] = {N}, grid[3];
    tj_arg args[2] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_I32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_I32, 1, shape)}};
    tj_cpu_fn *f = tj_cpu_compile(cpu, k, NULL); /* here: LLVM needs more stack than a launch */
    cr_assert(f && !tj_eval_grid(k, args, 2, grid), "%s", tj_diag_render(c));
    small_stack_job job = {.f = f, .args = args, .grid = grid, .rc = -1};
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 << 10);
    cr_assert_eq(pthread_create(&t, &attr, launch_on_small_stack, &job), 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    cr_assert_eq(job.rc, 0);
    for (int b = 0, run = 0; b < N / B; b++, run = 0)
        for (int i = b * B; i < (b + 1) * B; i++) {
            run += x[i];
            cr_assert_eq(y[i], run, "Y[%d] = %d, want %d", i, y[i], run);
        }
    free(x), free(y);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}

/* TJ_DEVICE_CPU says why when it runs the interpreter, and only then. */
Test(cpu_jit, the_interpreter_fallback_says_why)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    cr_assert(j, "%s", err.msg);
    const char *why = tj_jit_cpu_fallback(j);
    if (tj_jit_native_cpu(j))
        cr_expect_null(why, "%s", why);
    else
        cr_expect(why && strstr(why, "LLVM"), "no reason for the fallback: %s", why ? why : "(null)");
    tj_jit_close(j);
    j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    cr_expect_null(tj_jit_cpu_fallback(j));
    tj_jit_close(j);
}

/* A serial launch of a kernel with atomics runs them as plain read-modify-
 * writes, holding the tj_cpu's launch lock: launches from several threads
 * at once into one histogram, big ones on the pool and small ones on their
 * callers, still lose no update (without the lock, four runs of five lost
 * some). */
typedef struct launch_loop_job {
    tj_cpu_fn *f;
    const tj_arg *args;
    int64_t grid[3];
    int launches, failed;
} launch_loop_job;

static void *launch_loop(void *arg)
{
    launch_loop_job *j = arg;
    char err[256];
    for (int i = 0; i < j->launches; i++)
        j->failed += tj_cpu_run(j->f, j->args, 2, j->grid, err, sizeof err) != 0;
    return NULL;
}

Test(cpu_jit, atomics_stay_atomic_across_concurrent_launches)
{
    CC_REQUIRE_LLVM();
    enum { N = 1 << 18, BLOCK = 64, SMALL = 16, BINS = 8, THREADS = 4, BIG_LAUNCHES = 400, SMALL_LAUNCHES = 8000 };
    tj_cpu *cpu = two_threads();
    tj_ctx *c;
    tj_kernel *k = tile_ir(&c, "kernel hist(X: i32[N], H: i32[8])\n"
                               "    grid (cdiv(N, 64))\n"
                               "{\n"
                               "    i = program_id(0) * 64\n"
                               "    x = load(X[i:i+64], other = 0)\n"
                               "    atomic_add(H[x], x * 0 + 1, mask = i + arange(0, 64) < N)\n"
                               "}\n", "hist", "");
    int32_t *x = calloc(N, sizeof *x), h[BINS] = {0}, want[BINS] = {0};
    for (int i = 0; i < N; i++) /* threads 0, 1: every program; 2, 3: the first SMALL */
        want[x[i] = (i * 5 + i / 7) % BINS] += 2 * BIG_LAUNCHES + (i < SMALL * BLOCK ? 2 * SMALL_LAUNCHES : 0);
    int64_t shape[1] = {N}, bins[1] = {BINS};
    tj_arg args[2] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_I32, 1, shape)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(h, TJ_DT_I32, 1, bins)}};
    tj_cpu_fn *f = tj_cpu_compile(cpu, k, NULL);
    cr_assert(f, "%s", tj_diag_render(c));
    launch_loop_job jobs[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (launch_loop_job){
            .f = f, .args = args, .grid = {i < 2 ? N / BLOCK : SMALL, 1, 1}, .launches = i < 2 ? BIG_LAUNCHES : SMALL_LAUNCHES};
        cr_assert_eq(pthread_create(&t[i], NULL, launch_loop, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(jobs[0].failed + jobs[1].failed + jobs[2].failed + jobs[3].failed, 0);
    for (int b = 0; b < BINS; b++)
        cr_expect_eq(h[b], want[b], "H[%d] = %d, want %d", b, h[b], want[b]);
    free(x);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}

/* On an AVX-512 host the kernel's loops use 512-bit vectors: LLVM's tuning
 * for Intel's AVX-512 server cores prefers 256 bits unless the function
 * says otherwise (an Ice Lake ran every loop at 8 lanes). The optimized
 * module, printed by TJ_DUMP_LLVM on stderr, is read back from a file. */
Test(cpu_jit, avx512_hosts_vectorize_at_512_bits)
{
    CC_REQUIRE_LLVM();
    char err[256], path[] = "/tmp/tj_cpu_dump_XXXXXX";
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    cr_assert(cpu, "%s", err);
    const char *f = strstr(tj_cpu_target(cpu), "+avx512f");
    if (!f || (f[8] && f[8] != ',')) {
        tj_cpu_free(cpu);
        cr_skip_test("no AVX-512 on this host");
    }
    tj_ctx *c;
    tj_kernel *k = tile_ir(&c, "kernel add(X: f32[N], Y: f32[N])\n"
                               "    grid (cdiv(N, 1024))\n"
                               "{\n"
                               "    i = program_id(0) * 1024\n"
                               "    store(Y[i:i+1024], load(X[i:i+1024]) * 2.0 + 1.0)\n"
                               "}\n", "add", "N=5000");
    int fd = mkstemp(path), saved = dup(2);
    cr_assert(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    setenv("TJ_DUMP_LLVM", "1", 1);
    tj_buf obj = {0};
    int rc = tj_cpu_compile_object(cpu, k, &obj, NULL);
    unsetenv("TJ_DUMP_LLVM");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(rc, 0, "%s", tj_diag_render(c));
    off_t n = lseek(fd, 0, SEEK_END);
    char *text = calloc((size_t)n + 1, 1);
    cr_assert(text && pread(fd, text, (size_t)n, 0) == n);
    close(fd);
    unlink(path);
    cr_expect(strstr(text, "\"prefer-vector-width\"=\"512\""), "the function does not ask for 512-bit vectors");
    cr_expect(strstr(text, "<16 x float>"), "no 16-lane f32 vector in the optimized loops");
    free(text);
    tj_buf_free(&obj);
    tj_ctx_free(c);
    tj_cpu_free(cpu);
}
