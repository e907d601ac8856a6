/* The native cpu through the JIT API (tilejit/jit.h): TJ_DEVICE_CPU runs
 * machine code that agrees with TJ_DEVICE_INTERP, keeps the contract of
 * the facts it was specialized on, and a second JIT loads the object code
 * from the disk cache instead of compiling. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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
