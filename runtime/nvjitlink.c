/* PTX -> cubin through nvJitLink, loaded with dlopen: works without a GPU
 * or a driver, for cache entries and for checking emitted PTX in tests. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_internal.h"

typedef int nvJitLinkResult;
typedef struct nvJitLink *nvJitLinkHandle;
enum { NVJITLINK_SUCCESS = 0, NVJITLINK_INPUT_PTX = 2 };

#define MAX_OPTS 32

/* X(field, name, parameters): the symbol is __nvJitLink<name>_13_0 (what
 * nvJitLink.h 13 maps the plain name to), or nvJitLink<name> as a fallback. */
#define TJ_NVJL_FUNCS(X)                                                                  \
    X(Create, "Create", (nvJitLinkHandle *, uint32_t, const char **))                     \
    X(Destroy, "Destroy", (nvJitLinkHandle *))                                            \
    X(AddData, "AddData", (nvJitLinkHandle, int, const void *, size_t, const char *))     \
    X(Complete, "Complete", (nvJitLinkHandle))                                            \
    X(GetLinkedCubinSize, "GetLinkedCubinSize", (nvJitLinkHandle, size_t *))              \
    X(GetLinkedCubin, "GetLinkedCubin", (nvJitLinkHandle, void *))                        \
    X(GetErrorLogSize, "GetErrorLogSize", (nvJitLinkHandle, size_t *))                    \
    X(GetErrorLog, "GetErrorLog", (nvJitLinkHandle, char *))                              \
    X(GetInfoLogSize, "GetInfoLogSize", (nvJitLinkHandle, size_t *))                      \
    X(GetInfoLog, "GetInfoLog", (nvJitLinkHandle, char *))

struct tj_nvjitlink {
    void *lib;
#define X(field, name, params) nvJitLinkResult(*field) params;
    TJ_NVJL_FUNCS(X)
#undef X
    nvJitLinkResult (*Version)(unsigned *, unsigned *);
};

static const struct {
    const char *name;
    size_t offset;
} nvjl_symbols[] = {
#define X(field, name, params) {name, offsetof(struct tj_nvjitlink, field)},
    TJ_NVJL_FUNCS(X)
#undef X
    {"Version", offsetof(struct tj_nvjitlink, Version)},
};

static const char *const result_names[] = {
    "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
    "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE", "NVJITLINK_ERROR_NVVM_COMPILE",
    "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL",
    "NVJITLINK_ERROR_UNRECOGNIZED_INPUT", "NVJITLINK_ERROR_FINALIZE", "NVJITLINK_ERROR_NULL_INPUT",
    "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
    "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH",
    "NVJITLINK_ERROR_OUTDATED_LIBRARY", "NVJITLINK_ERROR_MISSING_FATBIN",
    "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
    "NVJITLINK_ERROR_LTO_NOT_ENABLED",
};

static const char *result_name(nvJitLinkResult r)
{
    size_t n = sizeof result_names / sizeof result_names[0];
    return r >= 0 && (size_t)r < n ? result_names[r] : "NVJITLINK_ERROR_UNKNOWN";
}

/* ---- loading ----------------------------------------------------------- */

/* RTLD_NODELETE: the library's static state (its C++ runtime's pools)
 * stays mapped after tj_nvjitlink_close, so reopening is cheap and leak
 * checkers still see what it allocated as reachable. */
static void *try_open(const char *dir, const char *sub, const char *name)
{
    char path[1024];
    int n = snprintf(path, sizeof path, "%s%s%s", dir, sub, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}

static void *open_library(tj_rt_error *err)
{
    static const char *const names[] = {"libnvJitLink.so.13", "libnvJitLink.so"};
    const char *home = getenv("CUDA_HOME");
    const char *dirs[][2] = {{"", ""}, {home, "/lib64/"}, {"/usr/local/cuda/lib64/", ""}};
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++)
        for (size_t i = 0; i < sizeof names / sizeof names[0] && dirs[d][0]; i++) {
            void *h = try_open(dirs[d][0], dirs[d][1], names[i]);
            if (h)
                return h;
        }
    tj_rt_fail(err, "no nvJitLink: libnvJitLink.so.13 not found (searched the library path%s and "
                    "/usr/local/cuda/lib64)",
               home ? ", $CUDA_HOME/lib64" : "");
    return NULL;
}

static void *find_symbol(void *lib, const char *name)
{
    char sym[64];
    snprintf(sym, sizeof sym, "__nvJitLink%s_13_0", name);
    void *f = dlsym(lib, sym);
    if (!f) {
        snprintf(sym, sizeof sym, "nvJitLink%s", name);
        f = dlsym(lib, sym);
    }
    return f;
}

tj_nvjitlink *tj_nvjitlink_open(tj_rt_error *err)
{
    void *lib = open_library(err);
    if (!lib)
        return NULL;
    tj_nvjitlink *l = calloc(1, sizeof *l);
    if (!l) {
        dlclose(lib);
        tj_rt_fail(err, "out of memory opening nvJitLink");
        return NULL;
    }
    l->lib = lib;
    for (size_t i = 0; i < sizeof nvjl_symbols / sizeof nvjl_symbols[0]; i++) {
        void *f = find_symbol(lib, nvjl_symbols[i].name);
        if (!f) {
            tj_rt_fail(err, "nvJitLink too old: it lacks nvJitLink%s", nvjl_symbols[i].name);
            tj_nvjitlink_close(l);
            return NULL;
        }
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy((char *)l + nvjl_symbols[i].offset, &f, sizeof f);
    }
    return l;
}

void tj_nvjitlink_close(tj_nvjitlink *l)
{
    if (!l)
        return;
    dlclose(l->lib);
    free(l);
}

int tj_nvjitlink_version(const tj_nvjitlink *l, unsigned *major, unsigned *minor)
{
    if (!l || !major || !minor)
        return 1;
    return l->Version(major, minor) != NVJITLINK_SUCCESS;
}

/* ---- compiling ---------------------------------------------------------- */

/* A log as a malloc'ed string, or NULL when it is empty or unavailable. */
static char *get_log(const tj_nvjitlink *l, nvJitLinkHandle h, int info)
{
    size_t n = 0;
    nvJitLinkResult r = info ? l->GetInfoLogSize(h, &n) : l->GetErrorLogSize(h, &n);
    if (r != NVJITLINK_SUCCESS || n <= 1)
        return NULL;
    char *log = malloc(n + 1);
    if (!log)
        return NULL;
    r = info ? l->GetInfoLog(h, log) : l->GetErrorLog(h, log);
    if (r != NVJITLINK_SUCCESS) {
        free(log);
        return NULL;
    }
    log[n] = '\0';
    return log;
}

static int fail_with_log(const tj_nvjitlink *l, nvJitLinkHandle h, nvJitLinkResult r,
                         const char *what, const char *arch, tj_rt_error *err)
{
    tj_rt_fail(err, "%s (compiling PTX for %s): %s", what, arch, result_name(r));
    if (h) {
        char *log = get_log(l, h, 0);
        tj_rt_append_log(err, log);
        free(log);
    }
    return 1;
}

/* "sm_", two or three digits, and an optional a/f suffix. Checked here
 * because nvJitLink 13 exits the process on a one-digit arch ("sm_7"). */
static int valid_arch(const char *arch)
{
    size_t n = strlen(arch), i = 3;
    if (n > 7 || strncmp(arch, "sm_", 3))
        return 0;
    while (i < n && arch[i] >= '0' && arch[i] <= '9')
        i++;
    if (i < 5 || i > 6)
        return 0;
    return i == n || (i + 1 == n && (arch[i] == 'a' || arch[i] == 'f'));
}

static int link_ptx(const tj_nvjitlink *l, nvJitLinkHandle h, const char *ptx, size_t len,
                    const char *arch, void **cubin, size_t *size, tj_rt_error *err)
{
    nvJitLinkResult r = l->AddData(h, NVJITLINK_INPUT_PTX, ptx, len, "tilejit.ptx");
    if (r != NVJITLINK_SUCCESS)
        return fail_with_log(l, h, r, "nvJitLinkAddData", arch, err);
    if ((r = l->Complete(h)) != NVJITLINK_SUCCESS)
        return fail_with_log(l, h, r, "nvJitLinkComplete", arch, err);
    if ((r = l->GetLinkedCubinSize(h, size)) != NVJITLINK_SUCCESS)
        return fail_with_log(l, h, r, "nvJitLinkGetLinkedCubinSize", arch, err);
    if (!(*cubin = malloc(*size ? *size : 1)))
        return tj_rt_fail(err, "out of memory for a %zu-byte cubin", *size);
    if ((r = l->GetLinkedCubin(h, *cubin)) != NVJITLINK_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        return fail_with_log(l, h, r, "nvJitLinkGetLinkedCubin", arch, err);
    }
    return 0;
}

int tj_nvjitlink_compile(const tj_nvjitlink *l, const char *ptx, size_t len, const char *arch,
                         const char *const *opts, int nopts, void **cubin, size_t *size,
                         char **info_log, tj_rt_error *err)
{
    if (!l || !tj_array_ok(ptx, len) || !arch || nopts < 0 || !tj_array_ok(opts, (uint64_t)nopts) || !cubin || !size)
        return tj_rt_fail(err, "tj_nvjitlink_compile: NULL linker, ptx, arch, opts (nopts = %d), cubin or size", nopts);
    *cubin = NULL;
    *size = 0;
    if (info_log)
        *info_log = NULL;
    if (!ptx)
        return tj_rt_fail(err, "nvJitLink: no PTX text");
    if (!arch || !valid_arch(arch))
        return tj_rt_fail(err, "nvJitLink: invalid arch '%s' (expected e.g. sm_80 or sm_90a)",
                          arch ? arch : "(null)");
    if (nopts < 0 || nopts >= MAX_OPTS)
        return tj_rt_fail(err, "nvJitLink: %d options, at most %d", nopts, MAX_OPTS - 1);
    for (int i = 0; i < nopts; i++)
        if (!opts[i] || !strncmp(opts[i], "-arch", 5))
            return tj_rt_fail(err, "nvJitLink: option %d: %s", i,
                              opts[i] ? "give the arch as the arch argument" : "NULL");
    char arch_opt[40];
    const char *argv[MAX_OPTS];
    snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
    argv[0] = arch_opt;
    for (int i = 0; i < nopts; i++)
        argv[i + 1] = opts[i];
    nvJitLinkHandle h = NULL;
    nvJitLinkResult r = l->Create(&h, (uint32_t)nopts + 1, argv);
    int failed = r != NVJITLINK_SUCCESS ? fail_with_log(l, h, r, "nvJitLinkCreate", arch, err)
                                        : link_ptx(l, h, ptx, len, arch, cubin, size, err);
    if (!failed && info_log)
        *info_log = get_log(l, h, 1);
    if (h)
        l->Destroy(&h);
    return failed;
}
