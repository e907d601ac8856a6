/* The Metal runtime where there is no Metal (off macOS): every entry point
 * fails with the reason, so that tools and bindings link everywhere. The
 * real runtime (metal.c, metal_launch.c) is compile-checked and tested on
 * such machines against a mock Objective-C runtime instead. */
#if !defined(__APPLE__) && !defined(TJ_METAL_OBJC)

#include <stdio.h>
#include <string.h>

#include "tilejit/metal.h"

static void unavailable(tj_rt_error *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "metal: Metal is only available on macOS");
}

tj_metal *tj_metal_open(const char *cache_dir, tj_rt_error *err)
{
    (void)cache_dir;
    unavailable(err);
    return NULL;
}

void tj_metal_close(tj_metal *m) { (void)m; }

const char *tj_metal_device_name(const tj_metal *m)
{
    (void)m;
    return "";
}

tj_metal_pipeline *tj_metal_pipeline_get(tj_metal *m, const char *msl, size_t len, const char *function,
                                         uint32_t threads, tj_rt_error *err)
{
    (void)m, (void)msl, (void)len, (void)function, (void)threads;
    unavailable(err);
    return NULL;
}

int tj_metal_launch(tj_metal *m, tj_metal_pipeline *p, const tj_kernel *simt, const tj_arg *args, uint32_t nargs,
                    tj_rt_error *err)
{
    (void)m, (void)p, (void)simt, (void)args, (void)nargs;
    unavailable(err);
    return -1;
}

const tj_kernel *tj_metal_compile(tj_metal *m, const tj_kernel *tile, const tj_arg *args, uint32_t nargs,
                                  tj_metal_pipeline **p, tj_rt_error *err)
{
    (void)m, (void)tile, (void)args, (void)nargs;
    if (p)
        *p = NULL;
    unavailable(err);
    return NULL;
}

int tj_metal_run(tj_metal *m, const tj_kernel *tile, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    (void)m, (void)tile, (void)args, (void)nargs;
    unavailable(err);
    return -1;
}

void tj_metal_get_stats(tj_metal *m, tj_metal_stats *out)
{
    (void)m;
    if (out)
        memset(out, 0, sizeof *out);
}

#else
typedef int tj_metal_none_not_built; /* the real runtime is built (ISO C wants a declaration) */
#endif
