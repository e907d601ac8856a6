/* FILE.cu on the command line: CUDA C through NVRTC (tilejit/nvrtc.h).
 * `check` compiles and prints NVRTC's diagnostics, `emit --target ptx`
 * prints the PTX (no GPU needed), `run` launches on the GPU with the grid
 * and block given, the arguments bound by the kernel's parameter names. */
#include <string.h>

#include "run.h"
#include "tilejit/nvrtc.h"

#define DEFAULT_EMIT_ARCH "sm_90a" /* as emit's ptx target */

int cli_is_cuda_c(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 3 && !strcmp(path + n - 3, ".cu");
}

/* The source of FILE and the -D bindings as NVRTC defines. */
static int read_source(tj_ctx *c, const char *path, const cli_opts *o, tj_cuda_source *src)
{
    size_t len;
    const char *text = cli_read_file(c, path, &len);
    if (!text)
        return -1;
    uint32_t nd = o ? o->ndefines : 0;
    const char **defines = tj_alloc(c, (nd + 1) * sizeof *defines);
    for (uint32_t i = 0; i < nd; i++) {
        tj_buf b = {0};
        tj_buf_printf(&b, "%s=%lld", o->defines[i].name, (long long)o->defines[i].value);
        defines[i] = cli_buf_take(c, &b);
    }
    /* #include "x.h" finds x.h beside the file, as nvcc does. */
    const char *slash = strrchr(path, '/');
    const char **dirs = tj_alloc(c, sizeof *dirs);
    dirs[0] = slash ? tj_strndup(c, path, (size_t)(slash - path) + 1) : ".";
    *src = (tj_cuda_source){.file = cli_source_name(path), .source = text, .len = len,
                            .kernel = o ? o->kernel : NULL, .defines = defines, .ndefines = nd,
                            .include_dirs = dirs, .ninclude_dirs = strcmp(path, "-") != 0};
    return 0;
}

static tj_nvrtc *open_nvrtc(tj_ctx *c, const char *path)
{
    tj_rt_error err = {{0}};
    tj_nvrtc *nv = tj_nvrtc_open(&err);
    if (!nv)
        cli_file_error(c, path, "cannot compile CUDA C: %s", err.msg);
    return nv;
}

/* Compiles with diagnostics into c; out is freed by the caller. */
static int compile(tj_ctx *c, const char *path, const tj_cuda_source *src, tj_nvrtc_output *out)
{
    tj_nvrtc *nv = open_nvrtc(c, path);
    if (!nv)
        return -1;
    tj_rt_error err = {{0}};
    uint32_t before = tj_error_count(c);
    int rc = tj_nvrtc_compile(nv, src, c, out, &err);
    if (rc && tj_error_count(c) == before)
        cli_file_error(c, path, "%s", err.msg); /* not NVRTC's log: a missing kernel, a signature */
    tj_nvrtc_close(nv);
    return rc ? -1 : 0;
}

int cli_check_cuda_c(tj_ctx *c, const char *path)
{
    tj_cuda_source src;
    tj_nvrtc_output out;
    if (read_source(c, path, NULL, &src) || compile(c, path, &src, &out))
        return -1;
    tj_nvrtc_output_free(&out);
    return 0;
}

int cli_emit_cuda_c(tj_ctx *c, const cli_opts *o)
{
    const char *target = o->target, *colon = strchr(target, ':');
    if (strncmp(target, "ptx", 3) || (target[3] && target[3] != ':'))
        return cli_usage_error(o->cmd, "a CUDA C file (.cu) has one target: ptx[:sm_XX]");
    tj_cuda_source src;
    tj_nvrtc_output out;
    if (read_source(c, o->files[0], o, &src))
        return CLI_ERROR;
    src.arch = colon ? colon + 1 : DEFAULT_EMIT_ARCH;
    if (compile(c, o->files[0], &src, &out))
        return CLI_ERROR;
    int rc = cli_write_text(c, o->output ? o->output : "-", out.ptx, out.ptx_len);
    tj_nvrtc_output_free(&out);
    return rc ? CLI_ERROR : CLI_OK;
}

/* ---- run ------------------------------------------------------------------------------ */

/* X[,Y[,Z]], each in [1, 2^31). */
static int parse_dims(const cli_opts *o, const char *opt, const char *text, uint32_t dims[3])
{
    dims[0] = dims[1] = dims[2] = 1;
    const char *p = text;
    for (int i = 0; i < 3 && p; i++) {
        const char *comma = strchr(p, ',');
        char part[32];
        int64_t v;
        snprintf(part, sizeof part, "%.*s", (int)(comma ? (size_t)(comma - p) : strlen(p)), p);
        if (cli_parse_int(part, &v) || v < 1 || v > INT32_MAX)
            return cli_usage_error(o->cmd, "%s expects X[,Y[,Z]] of positive integers, got '%s'", opt, text);
        dims[i] = (uint32_t)v;
        p = comma ? comma + 1 : NULL;
    }
    return p ? cli_usage_error(o->cmd, "%s takes at most three sizes, got '%s'", opt, text) : CLI_OK;
}

static int launch_dims(const cli_opts *o, tj_cuda_launch_dims *d)
{
    memset(d, 0, sizeof *d);
    if (!o->grid || !o->block)
        return cli_usage_error(o->cmd, "a CUDA C kernel needs --grid X[,Y,Z] and --block X[,Y,Z]");
    if (o->check || o->tune)
        return cli_usage_error(o->cmd, "%s does not apply to a CUDA C kernel", o->check ? "--check" : "--tune");
    if (o->device && strcmp(o->device, "cuda"))
        return cli_usage_error(o->cmd, "a CUDA C kernel runs on --device cuda only");
    int64_t shared = 0;
    if (o->shared && (cli_parse_int(o->shared, &shared) || shared < 0 || shared > INT32_MAX))
        return cli_usage_error(o->cmd, "--shared expects a byte count, got '%s'", o->shared);
    d->shared_bytes = (uint32_t)shared;
    int rc = parse_dims(o, "--grid", o->grid, d->grid);
    return rc != CLI_OK ? rc : parse_dims(o, "--block", o->block, d->block);
}

/* The kernel's parameters as the run command's: a pointer is a tensor of
 * rank 1 (dim NAME_len), a scalar a scalar; unnamed ones are argI. */
static int kernel_params(tj_ctx *c, const tj_cuda_source *src, cli_kernel *k, tj_cuda_param *cp)
{
    tj_rt_error err = {{0}};
    int n = tj_cuda_c_params(src->source, src->len, src->kernel, NULL, cp, TJ_CUDA_C_MAX_PARAMS, &err);
    if (n < 0) {
        tj_error(c, "%s: %s", src->file, err.msg);
        return -1;
    }
    tj_param *params = tj_alloc(c, ((size_t)n + 1) * sizeof *params);
    for (int i = 0; i < n; i++) {
        tj_buf name = {0}, dim = {0};
        if (cp[i].name[0])
            tj_buf_printf(&name, "%s", cp[i].name);
        else
            tj_buf_printf(&name, "arg%d", i);
        params[i] = (tj_param){.name = cli_buf_take(c, &name), .dtype = cp[i].dtype, .rank = cp[i].pointer};
        if (cp[i].pointer && !cp[i].dtype) {
            tj_error(c, "%s: kernel '%s', parameter '%s' points to no dtype tilejit knows: the command line "
                        "needs a typed pointer", src->file, src->kernel, params[i].name);
            return -1;
        }
        tj_buf_printf(&dim, "%s_len", params[i].name);
        params[i].dim_names[0] = cp[i].pointer ? cli_buf_take(c, &dim) : NULL;
        params[i].dim_sizes[0] = -1;
        tj_buf_free(&dim);
    }
    *k = (cli_kernel){.path = src->file, .text = src->source, .len = src->len, .params = params,
                      .nparams = (uint32_t)n};
    return 0;
}

typedef struct gpu_run {
    tj_ctx *c;
    tj_cuda *cu;
    tj_cuda_kernel *kernel;
    tj_arg *dev;
    uint32_t n;
} gpu_run;

static int gpu_fail(gpu_run *g, const char *doing, const tj_rt_error *err)
{
    tj_error(g->c, "device cuda: %s: %s", doing, err->msg);
    return -1;
}

/* Device copies of the tensors in host args. */
static int to_device(gpu_run *g, const tj_arg *host)
{
    tj_rt_error err = {{0}};
    g->dev = tj_alloc(g->c, (g->n + 1) * sizeof *g->dev);
    for (uint32_t i = 0; i < g->n; i++) {
        g->dev[i] = host[i];
        size_t bytes = host[i].is_tensor ? run_bytes(&host[i].tensor) : 0;
        if (!bytes)
            continue;
        g->dev[i].tensor.data = tj_cuda_malloc(g->cu, bytes, &err);
        if (!g->dev[i].tensor.data || tj_cuda_memcpy_htod(g->cu, g->dev[i].tensor.data, host[i].tensor.data,
                                                          bytes, &err))
            return gpu_fail(g, "copying the arguments to the device", &err);
    }
    return 0;
}

static int from_device(gpu_run *g, tj_arg *host, const unsigned char *written)
{
    tj_rt_error err = {{0}};
    for (uint32_t i = 0; i < g->n; i++)
        if (written[i] && g->dev[i].tensor.data &&
            tj_cuda_memcpy_dtoh(g->cu, host[i].tensor.data, g->dev[i].tensor.data, run_bytes(&host[i].tensor), &err))
            return gpu_fail(g, "copying the results back", &err);
    return 0;
}

/* --time: the median of event-timed launches (the inputs are not
 * restored between them: a kernel that accumulates keeps accumulating). */
static int time_launches(gpu_run *g, const tj_cuda_launch_dims *d)
{
    tj_rt_error err = {{0}};
    void *ev[2] = {tj_cuda_event_create(g->cu, &err), tj_cuda_event_create(g->cu, &err)};
    double times[100];
    int runs = 0, rc = !ev[0] || !ev[1];
    for (double spent = 0; !rc && runs < 100 && (runs < 3 || spent < 0.25); runs++) {
        float ms = 0;
        rc = tj_cuda_event_record(g->cu, ev[0], NULL, &err) ||
             tj_cuda_kernel_launch(g->kernel, d, g->dev, g->n, &err) ||
             tj_cuda_event_record(g->cu, ev[1], NULL, &err) || tj_cuda_event_synchronize(g->cu, ev[1], &err) ||
             tj_cuda_event_elapsed(g->cu, ev[0], ev[1], &ms, &err);
        times[runs] = ms * 1e-3;
        spent += times[runs];
    }
    for (int i = 0; i < 2; i++)
        if (ev[i])
            tj_cuda_event_destroy(g->cu, ev[i], NULL);
    if (rc)
        return gpu_fail(g, "timing", &err);
    double median = run_median(times, runs);
    printf("time: %.1f us (median of %d runs, device cuda)\n", median * 1e6, runs);
    return 0;
}

static int run_on_gpu(gpu_run *g, const tj_cuda_source *src, const tj_cuda_launch_dims *d, const cli_opts *o,
                      tj_arg *host, const unsigned char *written)
{
    tj_rt_error err = {{0}};
    if (!(g->cu = tj_cuda_open(0, &err)))
        return gpu_fail(g, "opening", &err);
    tj_cache *cache = cli_open_cache(g->c, 1);
    uint32_t before = tj_error_count(g->c);
    g->kernel = tj_cuda_kernel_build(g->cu, src, &(tj_cuda_build_options){.cache = cache, .diags = g->c}, &err);
    tj_cache_close(cache);
    if (!g->kernel)
        return tj_error_count(g->c) > before ? -1 : gpu_fail(g, "compiling", &err);
    if (to_device(g, host) || tj_cuda_kernel_launch(g->kernel, d, g->dev, g->n, &err) ||
        tj_cuda_synchronize(g->cu, &err))
        return err.msg[0] ? gpu_fail(g, "launching", &err) : -1;
    if (from_device(g, host, written))
        return -1;
    return o->time ? time_launches(g, d) : 0;
}

static void close_gpu(gpu_run *g)
{
    for (uint32_t i = 0; g->dev && i < g->n; i++)
        if (g->dev[i].is_tensor && run_bytes(&g->dev[i].tensor))
            tj_cuda_free(g->cu, g->dev[i].tensor.data, NULL);
    tj_cuda_kernel_free(g->kernel);
    tj_cuda_close(g->cu);
}

int cli_run_cuda_c(tj_ctx *c, const cli_opts *o)
{
    tj_cuda_launch_dims d;
    int rc = launch_dims(o, &d);
    if (rc != CLI_OK)
        return rc;
    tj_cuda_source src;
    tj_cuda_param cp[TJ_CUDA_C_MAX_PARAMS];
    cli_kernel k;
    run_state rs;
    if (read_source(c, o->files[0], o, &src) || kernel_params(c, &src, &k, cp) || run_bind_args(c, o, &k, &rs))
        return CLI_ERROR;
    /* A pointer to non-const may be written: those go back to their files. */
    unsigned char *written = tj_alloc(c, k.nparams + 1);
    for (uint32_t i = 0; i < k.nparams; i++)
        written[i] = cp[i].pointer && !cp[i].is_const;
    cli_tmpfile *outputs = tj_alloc(c, (k.nparams + 1) * sizeof *outputs);
    if (run_prepare_outputs(c, o, &rs, written, outputs))
        return CLI_ERROR;
    gpu_run g = {.c = c, .n = k.nparams};
    rc = run_on_gpu(&g, &src, &d, o, rs.args, written);
    close_gpu(&g);
    if (rc || (o->output && run_make_output_dir(c, o->output)))
        return CLI_ERROR;
    return run_write_outputs(c, &rs, outputs) ? CLI_ERROR : CLI_OK;
}
