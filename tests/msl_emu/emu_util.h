/* Helpers shared by the emulator's test programs: where the sources and the
 * work directory are, reading files, compiling MSL into a loaded object,
 * and checks that count failures. Header only. */
#ifndef TJ_EMU_UTIL_H
#define TJ_EMU_UTIL_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mtl_emu.h"

static int eu_failures;

#define EU_CHECK(cond, ...)                                                                                  \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            eu_failures++;                                                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                      \
            printf(__VA_ARGS__);                                                                             \
            printf("\n");                                                                                    \
        }                                                                                                    \
    } while (0)

static inline const char *eu_source_dir(void)
{
    const char *s = getenv("TJ_SOURCE_DIR");
    return s ? s : ".";
}

/* A path in the work directory ($MTL_EMU_WORK, else /tmp), made unique per
 * process so parallel test runs do not collide. */
static inline void eu_work_path(char *buf, size_t cap, const char *name)
{
    const char *w = getenv("MTL_EMU_WORK");
    snprintf(buf, cap, "%s/%s.%d", w ? w : "/tmp", name, (int)getpid());
}

/* The whole file (malloc'd, NUL-terminated), or NULL. */
static inline char *eu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t r;
    while (s && (r = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap)
            s = realloc(s, cap *= 2);
    }
    fclose(f);
    if (s)
        s[n] = 0;
    return s;
}

/* Compiles n sources into one object and opens it; NULL after printing the
 * log. The object file is removed once loaded. */
static inline void *eu_build(const char *const *sources, int n, const char *name)
{
    char so[512], log[16384];
    eu_work_path(so, sizeof so, name);
    strncat(so, ".so", sizeof so - strlen(so) - 1);
    if (mtl_emu_compile(sources, n, so, log, sizeof log)) {
        printf("compile failed (%s):\n%s\n", name, log);
        return NULL;
    }
    char err[512];
    void *h = mtl_emu_open(so, err, sizeof err);
    if (!h)
        printf("dlopen %s: %s\n", so, err);
    unlink(so);
    return h;
}

static inline double eu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A 1-D dispatch description: groups x threads, the buffers in order. */
static inline mtl_emu_dispatch_desc eu_desc(uint32_t groups, uint32_t threads, uint32_t schedule, int nbuf, ...)
{
    mtl_emu_dispatch_desc d;
    memset(&d, 0, sizeof d);
    d.threadgroups[0] = groups;
    d.threadgroups[1] = d.threadgroups[2] = 1;
    d.threads[0] = threads;
    d.threads[1] = d.threads[2] = 1;
    d.schedule = schedule;
    d.workers = 2;
    va_list ap;
    va_start(ap, nbuf);
    for (int i = 0; i < nbuf; i++)
        d.buffers[i] = va_arg(ap, void *);
    va_end(ap);
    return d;
}

#endif
