/* NVRTC loaded with dlopen: finding the library (without loading it, for
 * cache keys), its entry points, and compiling CUDA C to PTX. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/cuda_internal.h"
#include "runtime/nvrtc_internal.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0 };

/* X(field, symbol, parameters): nvrtc.h 13 has no versioned names. */
#define TJ_NVRTC_FUNCS(X)                                                                     \
    X(GetErrorString, "nvrtcGetErrorString", const char *, (nvrtcResult))                     \
    X(Version, "nvrtcVersion", nvrtcResult, (int *, int *))                                   \
    X(CreateProgram, "nvrtcCreateProgram", nvrtcResult,                                       \
      (nvrtcProgram *, const char *, const char *, int, const char *const *,                  \
       const char *const *))                                                                  \
    X(DestroyProgram, "nvrtcDestroyProgram", nvrtcResult, (nvrtcProgram *))                   \
    X(CompileProgram, "nvrtcCompileProgram", nvrtcResult, (nvrtcProgram, int, const char *const *)) \
    X(GetPTXSize, "nvrtcGetPTXSize", nvrtcResult, (nvrtcProgram, size_t *))                   \
    X(GetPTX, "nvrtcGetPTX", nvrtcResult, (nvrtcProgram, char *))                             \
    X(GetProgramLogSize, "nvrtcGetProgramLogSize", nvrtcResult, (nvrtcProgram, size_t *))     \
    X(GetProgramLog, "nvrtcGetProgramLog", nvrtcResult, (nvrtcProgram, char *))               \
    X(AddNameExpression, "nvrtcAddNameExpression", nvrtcResult, (nvrtcProgram, const char *)) \
    X(GetLoweredName, "nvrtcGetLoweredName", nvrtcResult,                                     \
      (nvrtcProgram, const char *, const char **))

struct tj_nvrtc {
    void *lib;
    char identity[1200];
#define X(field, sym, ret, params) ret(*field) params;
    TJ_NVRTC_FUNCS(X)
#undef X
};

static const struct {
    const char *sym;
    size_t offset;
} nvrtc_symbols[] = {
#define X(field, sym, ret, params) {sym, offsetof(struct tj_nvrtc, field)},
    TJ_NVRTC_FUNCS(X)
#undef X
};

/* ---- finding the library ------------------------------------------------ */

static int describe_file(const char *path, char *identity, size_t n)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 1;
    int w = snprintf(identity, n, "%s %lld %lld.%09ld", path, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    return w < 0 || (size_t)w >= n;
}

/* The first of the library's names in dir (a `len`-byte prefix). */
static int find_in(const char *dir, size_t len, char *path, char *identity, size_t n)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && len; i++) {
        int w = snprintf(path, n, "%.*s/%s", (int)len, dir, names[i]);
        if (w > 0 && (size_t)w < n && !describe_file(path, identity, n))
            return 0;
    }
    return 1;
}

/* Each entry of a ':'-separated list, then each fixed directory. */
int tj_nvrtc_locate(char *path, char *identity, size_t n, tj_rt_error *err)
{
    if (!path || !identity || !n)
        return tj_rt_fail(err, "tj_nvrtc_locate: NULL path or identity, or no room");
    const char *given = getenv("TILEJIT_NVRTC");
    if (given && *given) {
        snprintf(path, n, "%s", given);
        if (!describe_file(given, identity, n))
            return 0;
        return tj_rt_fail(err, "no NVRTC: $TILEJIT_NVRTC (%s) is not a file", given);
    }
    const char *lp = getenv("LD_LIBRARY_PATH");
    for (const char *p = lp; p && *p;) {
        size_t len = strcspn(p, ":");
        if (!find_in(p, len, path, identity, n))
            return 0;
        p += len + (p[len] == ':');
    }
    const char *home = getenv("CUDA_HOME");
    char home_lib[1024];
    snprintf(home_lib, sizeof home_lib, "%s/lib64", home ? home : "");
    const char *dirs[] = {home ? home_lib : NULL, "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu",
                          "/usr/lib64", "/usr/lib"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (dirs[i] && !find_in(dirs[i], strlen(dirs[i]), path, identity, n))
            return 0;
    return tj_rt_fail(err, "no NVRTC: libnvrtc.so.13 not found (searched $LD_LIBRARY_PATH%s, "
                           "/usr/local/cuda/lib64 and the system's lib directories; or set "
                           "$TILEJIT_NVRTC)", home ? ", $CUDA_HOME/lib64" : "");
}

/* ---- loading ------------------------------------------------------------ */

tj_nvrtc *tj_nvrtc_open(tj_rt_error *err)
{
    char path[1024];
    tj_nvrtc *nv = calloc(1, sizeof *nv);
    if (!nv) {
        tj_rt_fail(err, "out of memory opening NVRTC");
        return NULL;
    }
    if (tj_nvrtc_locate(path, nv->identity, sizeof nv->identity, err)) {
        free(nv);
        return NULL;
    }
    /* RTLD_NODELETE: as nvJitLink, its C++ runtime's state stays mapped. */
    if (!(nv->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) {
        const char *why = dlerror();
        tj_rt_fail(err, "no NVRTC: cannot load %s (%s)", path, why ? why : "dlopen failed");
        free(nv);
        return NULL;
    }
    for (size_t i = 0; i < sizeof nvrtc_symbols / sizeof nvrtc_symbols[0]; i++) {
        void *f = dlsym(nv->lib, nvrtc_symbols[i].sym);
        if (!f) {
            tj_rt_fail(err, "NVRTC too old: %s lacks %s", path, nvrtc_symbols[i].sym);
            tj_nvrtc_close(nv);
            return NULL;
        }
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy((char *)nv + nvrtc_symbols[i].offset, &f, sizeof f);
    }
    return nv;
}

void tj_nvrtc_close(tj_nvrtc *nv)
{
    if (!nv)
        return;
    if (nv->lib)
        dlclose(nv->lib);
    free(nv);
}

int tj_nvrtc_version(const tj_nvrtc *nv, int *major, int *minor)
{
    if (!nv || !major || !minor)
        return 1;
    return nv->Version(major, minor) != NVRTC_SUCCESS;
}

const char *tj_nvrtc_identity(const tj_nvrtc *nv) { return nv ? nv->identity : NULL; }

/* ---- options -------------------------------------------------------------- */

int tj_nvrtc_valid_arch(const char *arch)
{
    if (!arch || strncmp(arch, "sm_", 3))
        return 0;
    size_t digits = strspn(arch + 3, "0123456789");
    const char *rest = arch + 3 + digits;
    return digits >= 2 && digits <= 3 && (!*rest || ((*rest == 'a' || *rest == 'f') && !rest[1]));
}

const char *tj_nvrtc_file_name(const tj_cuda_source *src) { return src->file ? src->file : "kernel.cu"; }

static int add_list(tj_buf *text, int *n, const char *prefix, const char *const *items, uint32_t count,
                    const char *what, tj_rt_error *err)
{
    if (!tj_array_ok(items, count))
        return tj_rt_fail(err, "NVRTC: NULL %s with a count of %u", what, count);
    for (uint32_t i = 0; i < count; i++) {
        if (!items[i] || !*items[i])
            return tj_rt_fail(err, "NVRTC: %s %u is %s", what, i, items[i] ? "empty" : "NULL");
        if (*n >= TJ_NVRTC_MAX_OPTS)
            return tj_rt_fail(err, "NVRTC: more than %d options", TJ_NVRTC_MAX_OPTS);
        tj_buf_printf(text, "%s%s", prefix, items[i]);
        tj_buf_append(text, "", 1); /* the NUL that separates options */
        (*n)++;
    }
    return 0;
}

int tj_nvrtc_options(const tj_cuda_source *src, const char *arch, tj_buf *text, const char **argv,
                     tj_rt_error *err)
{
    if (!tj_nvrtc_valid_arch(arch))
        return -tj_rt_fail(err, "NVRTC: invalid arch '%s' (expected e.g. sm_80 or sm_90a)",
                           arch ? arch : "(null)");
    int n = 1;
    tj_buf_printf(text, "-arch=compute_%s", arch + 3); /* PTX; nvJitLink makes the cubin */
    tj_buf_append(text, "", 1);
    if (add_list(text, &n, "-D", src->defines, src->ndefines, "define", err) ||
        add_list(text, &n, "--include-path=", src->include_dirs, src->ninclude_dirs, "include directory", err) ||
        add_list(text, &n, "", src->options, src->noptions, "option", err))
        return -1;
    /* tj_buf drops what it has no memory for: then fewer than n options
     * are there, and walking on would read past its end. */
    const char *p = text->data, *end = p ? p + text->len : NULL;
    for (int i = 0; i < n; i++, p += strlen(p) + 1) {
        if (!p || p >= end)
            return -tj_rt_fail(err, "NVRTC: out of memory building the options");
        argv[i] = p;
    }
    return n;
}

/* ---- compiling --------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int nvrtc_fail(const tj_nvrtc *nv, nvrtcResult r, const char *what, const tj_cuda_source *src,
                      tj_rt_error *err)
{
    return tj_rt_fail(err, "%s (%s): %s", what, tj_nvrtc_file_name(src), nv->GetErrorString(r));
}

static char *program_log(const tj_nvrtc *nv, nvrtcProgram prog)
{
    size_t n = 0;
    if (nv->GetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1)
        return NULL;
    char *log = malloc(n + 1);
    if (log && nv->GetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    if (log)
        log[n] = 0;
    return log;
}

static nvrtcProgram create_program(const tj_nvrtc *nv, const tj_cuda_source *src, tj_rt_error *err)
{
    nvrtcProgram prog = NULL;
    const char **names = calloc(src->nheaders + 1, sizeof *names);
    const char **texts = calloc(src->nheaders + 1, sizeof *texts);
    char *text = malloc(src->len + 1);
    if (!names || !texts || !text) {
        tj_rt_fail(err, "out of memory compiling %s", tj_nvrtc_file_name(src));
        goto done;
    }
    memcpy(text, src->source, src->len);
    text[src->len] = 0; /* NVRTC takes a NUL-terminated source */
    for (uint32_t i = 0; i < src->nheaders; i++) {
        names[i] = src->headers[i].name;
        texts[i] = src->headers[i].text;
    }
    nvrtcResult r = nv->CreateProgram(&prog, text, tj_nvrtc_file_name(src), (int)src->nheaders, texts, names);
    if (r != NVRTC_SUCCESS) {
        nvrtc_fail(nv, r, "nvrtcCreateProgram", src, err);
        prog = NULL;
    }
done:
    free(names);
    free(texts);
    free(text);
    return prog;
}

static int check_source(const tj_cuda_source *src, tj_rt_error *err)
{
    if (!src->source || !tj_array_ok(src->headers, src->nheaders))
        return tj_rt_fail(err, "tj_nvrtc_compile: NULL source, or NULL headers with nheaders = %u", src->nheaders);
    if (src->nheaders > TJ_CUDA_C_MAX_HEADERS) /* calloc(nheaders + 1) and NVRTC's int count */
        return tj_rt_fail(err, "tj_nvrtc_compile: %u headers, more than %d", src->nheaders, TJ_CUDA_C_MAX_HEADERS);
    for (uint32_t i = 0; i < src->nheaders; i++)
        if (!src->headers[i].name || !src->headers[i].text)
            return tj_rt_fail(err, "tj_nvrtc_compile: header %u has a NULL name or text", i);
    return 0;
}

/* The log as diagnostics of diags or, without diags, rendered into err
 * after the error count. */
static int report_log(const tj_cuda_source *src, tj_ctx *diags, const char *log, int failed, tj_rt_error *err)
{
    if (!failed) {
        if (diags && log)
            tj_nvrtc_log_to_diags(diags, src, log);
        return 0;
    }
    tj_ctx *c = diags ? diags : tj_ctx_new();
    uint32_t errors = c && log ? tj_nvrtc_log_to_diags(c, src, log) : 0;
    tj_rt_fail(err, "NVRTC: %u error%s compiling %s", errors, errors == 1 ? "" : "s", tj_nvrtc_file_name(src));
    if (!diags) {
        tj_rt_append_log(err, c ? tj_diag_render(c) : log);
        tj_ctx_free(c);
    }
    return 1;
}

static int take_ptx(const tj_nvrtc *nv, nvrtcProgram prog, const tj_cuda_source *src, tj_nvrtc_output *out,
                    tj_rt_error *err)
{
    nvrtcResult r = nv->GetPTXSize(prog, &out->ptx_len);
    if (r != NVRTC_SUCCESS)
        return nvrtc_fail(nv, r, "nvrtcGetPTXSize", src, err);
    if (!(out->ptx = malloc(out->ptx_len + 1)))
        return tj_rt_fail(err, "out of memory for %zu bytes of PTX", out->ptx_len);
    if ((r = nv->GetPTX(prog, out->ptx)) != NVRTC_SUCCESS)
        return nvrtc_fail(nv, r, "nvrtcGetPTX", src, err);
    out->ptx[out->ptx_len] = 0;
    while (out->ptx_len && !out->ptx[out->ptx_len - 1])
        out->ptx_len--; /* the size counts the NUL */
    return 0;
}

/* The kernel's symbol and its parameters, checked against the PTX. */
static int find_kernel(const tj_nvrtc *nv, nvrtcProgram prog, const tj_cuda_source *src, tj_nvrtc_output *out,
                       tj_rt_error *err)
{
    const char *lowered = NULL;
    nvrtcResult r = nv->GetLoweredName(prog, src->kernel, &lowered);
    if (r != NVRTC_SUCCESS || !lowered)
        return tj_rt_fail(err, "NVRTC: no kernel '%s' in %s", src->kernel, tj_nvrtc_file_name(src));
    if (!(out->lowered_name = strdup(lowered)))
        return tj_rt_fail(err, "out of memory");
    int n = tj_cuda_c_params(src->source, src->len, src->kernel, src->signature, out->params,
                             TJ_CUDA_C_MAX_PARAMS, err);
    if (n < 0)
        return 1;
    out->nparams = (uint32_t)n;
    return tj_nvrtc_check_ptx_params(out->ptx, out->lowered_name, out->params, out->nparams, src->kernel, err);
}

static int compile_program(const tj_nvrtc *nv, nvrtcProgram prog, const tj_cuda_source *src, tj_ctx *diags,
                           tj_nvrtc_output *out, tj_rt_error *err)
{
    tj_buf text = {0};
    const char *argv[TJ_NVRTC_MAX_OPTS + 1];
    int n = tj_nvrtc_options(src, src->arch ? src->arch : TJ_NVRTC_DEFAULT_ARCH, &text, argv, err);
    nvrtcResult r = NVRTC_SUCCESS;
    if (n >= 0 && src->kernel && (r = nv->AddNameExpression(prog, src->kernel)) != NVRTC_SUCCESS)
        nvrtc_fail(nv, r, "nvrtcAddNameExpression", src, err);
    if (n < 0 || r != NVRTC_SUCCESS) {
        tj_buf_free(&text);
        return 1;
    }
    double t0 = now_ms();
    r = nv->CompileProgram(prog, n, argv);
    out->nvrtc_ms = now_ms() - t0;
    tj_buf_free(&text);
    out->log = program_log(nv, prog);
    if (report_log(src, diags, out->log, r != NVRTC_SUCCESS, err))
        return 1;
    return take_ptx(nv, prog, src, out, err) || (src->kernel && find_kernel(nv, prog, src, out, err));
}

int tj_nvrtc_compile(const tj_nvrtc *nv, const tj_cuda_source *src, tj_ctx *diags, tj_nvrtc_output *out,
                     tj_rt_error *err)
{
    if (!nv || !src || !out)
        return tj_rt_fail(err, "tj_nvrtc_compile: NULL NVRTC, source or output");
    memset(out, 0, sizeof *out);
    if (check_source(src, err))
        return 1;
    nvrtcProgram prog = create_program(nv, src, err);
    if (!prog)
        return 1;
    int failed = compile_program(nv, prog, src, diags, out, err);
    nv->DestroyProgram(&prog);
    if (failed)
        tj_nvrtc_output_free(out);
    return failed;
}

void tj_nvrtc_output_free(tj_nvrtc_output *out)
{
    if (!out)
        return;
    free(out->ptx);
    free(out->lowered_name);
    free(out->log);
    out->ptx = out->lowered_name = out->log = NULL;
}
