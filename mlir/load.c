/* Loading the MLIR reader (libtilejit_mlir.so, mlir/plugin/) with dlopen:
 * libMLIR costs 200 ms to load, which only programs that import MLIR
 * should pay. Looked for in $TILEJIT_MLIR_READER, beside the object
 * tilejit is linked into (libtilejit.so, or an executable linking
 * libtilejit.a), then where the build put it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir/mlir_internal.h"

#define READER_NAME "libtilejit_mlir.so"

#ifndef TJ_MLIR_READER_PATH
#define TJ_MLIR_READER_PATH ""
#endif

typedef struct reader {
    void *handle;
    tj_mprog_read_fn read;
    tj_mprog_free_fn release;
} reader;

/* An object of this file, for dladdr. */
static const char anchor = 0;

/* The directory of the object tilejit is linked into, with a '/' after it. */
static int own_directory(char *dir, size_t n)
{
    Dl_info info;
    if (!dladdr(&anchor, &info) || !info.dli_fname)
        return 1;
    const char *slash = strrchr(info.dli_fname, '/');
    size_t len = slash ? (size_t)(slash - info.dli_fname + 1) : 0;
    if (len + 1 > n)
        return 1;
    memcpy(dir, info.dli_fname, len);
    dir[len] = 0;
    return 0;
}

static int open_reader(const char *path, reader *r, tj_buf *tried)
{
    /* RTLD_NODELETE: MLIR registers dialects and options in static storage,
     * which must outlive every module read. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *why = dlerror();
        tj_buf_printf(tried, "%s%s (%s)", tried->len ? ", " : "", path, why ? why : "not loadable");
        return 1;
    }
    tj_mprog_abi_fn abi = NULL;
    void *abi_sym = dlsym(h, "tj_mprog_abi"), *read_sym = dlsym(h, "tj_mprog_read");
    void *release_sym = dlsym(h, "tj_mprog_release");
    /* POSIX guarantees object and function pointers share a representation. */
    memcpy(&abi, &abi_sym, sizeof abi);
    memcpy(&r->read, &read_sym, sizeof r->read);
    memcpy(&r->release, &release_sym, sizeof r->release);
    if (!abi || !r->read || !r->release || abi() != TJ_MPROG_ABI) {
        tj_buf_printf(tried, "%s%s (not a reader of ABI %d)", tried->len ? ", " : "", path, TJ_MPROG_ABI);
        dlclose(h);
        return 1;
    }
    r->handle = h;
    return 0;
}

static int find_reader(reader *r, tj_rt_error *err)
{
#ifndef TJ_HAVE_MLIR
    if (!getenv("TILEJIT_MLIR_READER"))
        return tj_rt_fail(err, "no MLIR: tilejit was built without MLIR 22 (libmlir-22-dev was not found when "
                               "it was configured; install it and reconfigure, or set TILEJIT_MLIR_READER)");
#endif
    tj_buf tried = {0};
    char path[4096];
    const char *env = getenv("TILEJIT_MLIR_READER");
    int failed = 1;
    if (env && *env)
        failed = open_reader(env, r, &tried);
    if (failed && !own_directory(path, sizeof path - sizeof READER_NAME)) {
        strcat(path, READER_NAME);
        failed = open_reader(path, r, &tried);
    }
    if (failed && *TJ_MLIR_READER_PATH)
        failed = open_reader(TJ_MLIR_READER_PATH, r, &tried);
    if (failed)
        tj_rt_fail(err, "no MLIR: the reader %s was not loaded; tried %s", READER_NAME,
                   tried.len ? tried.data : "nothing");
    tj_buf_free(&tried);
    return failed;
}

int tj_mlir_available(tj_rt_error *err)
{
    reader r = {0};
    if (find_reader(&r, err))
        return 1;
    dlclose(r.handle);
    return 0;
}

int tj_mlir_read(tj_mlir_module *m, const char *text, size_t len, tj_rt_error *err)
{
    reader r = {0};
    if (find_reader(&r, err))
        return 1;
    m->release = r.release;
    if (r.read(m->file, text, len, &m->prog))
        return tj_rt_fail(err, "the MLIR reader failed on %s", m->file);
    if (m->prog.oom)
        return tj_rt_fail(err, "out of memory reading %s", m->file);
    return 0;
}
