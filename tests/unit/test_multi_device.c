/* Several GPUs from several threads at once (issue 17), against the
 * stand-in driver with TJ_FAKE_CUDA_DEVICES=4: a thread per device opens
 * its own JIT, compiles (the first from nothing, the others from the
 * shared disk cache or at the same time) and launches many times; every
 * function stays on its device, and the second compile of each device is
 * a memory hit. Run under ThreadSanitizer-free ASan too: races here would
 * show as corrupted state or failed launches. */
#define _GNU_SOURCE /* setenv */
#include <pthread.h>

#include "cache_test_util.h"

#include "tilejit/jit.h"
#include "tilejit/tilejit.h"

enum { DEVICES = 4, LAUNCHES = 200 };

static const char copy_src[] = "kernel copy(x: f32[N], y: f32[N])\n"
                               "    grid (cdiv(N, 256))\n"
                               "{\n"
                               "    i = program_id(0) * 256\n"
                               "    store(y[i:i+256], load(x[i:i+256]))\n"
                               "}\n";

typedef struct worker {
    int ordinal;
    int failed;
    char msg[600];
    tj_jit_stats stats;
} worker;

static void *on_device(void *arg)
{
    worker *w = arg;
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CUDA, w->ordinal, &err);
    tj_arg args[2];
    for (int i = 0; i < 2; i++)
        args[i] = (tj_arg){.is_tensor = 1, .tensor = {.data = (void *)(uintptr_t)(0x100000 * (i + 1)),
                                                      .dtype = TJ_DT_F32, .rank = 1, .shape = {1 << 16}, .strides = {1}}};
    tj_compile_request req = {.file = "copy.tj", .source = copy_src, .len = sizeof copy_src - 1,
                              .kernel = "copy", .args = args, .nargs = 2};
    tj_fn *f = j ? tj_jit_compile(j, &req, &err) : NULL;
    tj_fn *again = f ? tj_jit_compile(j, &req, &err) : NULL;
    for (int i = 0; again && i < LAUNCHES && !w->failed; i++)
        w->failed = tj_fn_launch(i % 2 ? f : again, args, 2, NULL, &err) != 0;
    w->failed |= !again || tj_jit_ordinal(j) != w->ordinal;
    snprintf(w->msg, sizeof w->msg, "%s", err.msg);
    if (j)
        tj_jit_get_stats(j, &w->stats);
    tj_fn_release(again);
    tj_fn_release(f);
    tj_jit_close(j);
    return NULL;
}

Test(multi_device, a_thread_per_device_compiles_and_launches_at_once, .timeout = 120)
{
    const char *llp = getenv("LD_LIBRARY_PATH");
    if (!llp || !strstr(llp, "fake_driver"))
        cr_skip_test("needs the stand-in driver (run through ctest, which sets LD_LIBRARY_PATH)");
    setenv("TJ_FAKE_CUDA_DEVICES", "4", 1);
    char *dir = ct_tempdir();
    setenv("TILEJIT_CACHE_DIR", dir, 1);
    pthread_t threads[DEVICES];
    worker w[DEVICES] = {{0}};
    for (int d = 0; d < DEVICES; d++) {
        w[d].ordinal = d;
        cr_assert_eq(pthread_create(&threads[d], NULL, on_device, &w[d]), 0);
    }
    for (int d = 0; d < DEVICES; d++)
        pthread_join(threads[d], NULL);
    for (int d = 0; d < DEVICES; d++) {
        cr_expect(!w[d].failed, "device %d: %s", d, w[d].msg);
        cr_expect_geq(w[d].stats.memory_hits, 1, "device %d: the second compile was not a memory hit", d);
    }
    ct_rmrf(dir);
}
