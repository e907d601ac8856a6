/* CUDA C kernels on a device: the cache key, the disk cache (a kernel
 * entry under the "nvrtc" target: PTX, cubin and the parameters in its
 * metadata), NVRTC -> nvJitLink -> the driver on a miss, and launches. A
 * hit loads neither NVRTC nor nvJitLink (dlopen of NVRTC alone costs 6 ms
 * warm): the key names NVRTC by its library file, found with stat. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cuda_internal.h"
#include "runtime/nvrtc_internal.h"
#include "tilejit/dispatch.h"

struct tj_cuda_kernel {
    tj_cuda_module *mod;
    tj_cuda_function fn;
    char name[128]; /* as the source names it, for messages */
    tj_cuda_param params[TJ_CUDA_C_MAX_PARAMS];
    uint32_t nparams;
    char *ptx;
    tj_cuda_kernel_info info;
};

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* ---- the key ------------------------------------------------------------ */

static void add_options(tj_key_builder *b, const tj_cuda_source *src, const char *arch)
{
    tj_buf text = {0};
    const char *argv[TJ_NVRTC_MAX_OPTS + 1];
    int n = tj_nvrtc_options(src, arch, &text, argv, NULL);
    tj_key_add_int(b, "noptions", n); /* -1: options NVRTC is never given */
    for (int i = 0; i < n; i++)
        tj_key_add_str(b, "option", argv[i]);
    tj_buf_free(&text);
}

void tj_nvrtc_key(const tj_cuda_source *src, const char *arch, const char *nvrtc_identity, int driver_version,
                  tj_cache_key *out)
{
    if (!src || !out)
        return;
    tj_key_builder b;
    tj_key_begin(&b, "nvrtc");
    tj_key_add_str(&b, "nvrtc", nvrtc_identity);
    tj_key_add_str(&b, "file", tj_nvrtc_file_name(src)); /* in the PTX's debug info with -lineinfo */
    tj_key_add_bytes(&b, "source", src->source ? src->source : "", src->source ? strnlen(src->source, src->len) : 0);
    for (uint32_t i = 0; src->headers && i < src->nheaders; i++) {
        tj_key_add_str(&b, "header", src->headers[i].name);
        tj_key_add_str(&b, "text", src->headers[i].text);
    }
    add_options(&b, src, arch);
    tj_key_add_str(&b, "kernel", src->kernel);
    tj_key_add_str(&b, "signature", src->signature);
    tj_cache_key sub;
    tj_key_end(&b, &sub);
    char hex[TJ_CACHE_KEY_HEX];
    tj_cache_key_hex(&sub, hex);
    /* The kernel key adds the arch, driver, tilejit's version and build. */
    tj_cache_key_compute(&(tj_cache_key_parts){.target = "nvrtc", .arch = arch, .driver_version = driver_version,
                                               .options = hex},
                         out);
}

/* ---- loading a cubin --------------------------------------------------------- */

static int load_cubin(tj_cuda *cu, tj_cuda_kernel *k, const char *symbol, const void *cubin, size_t size,
                      const char *kernel, tj_rt_error *err)
{
    double t0 = now_ms();
    k->mod = tj_cuda_module_load_cubin(cu, cubin, size, kernel, err);
    if (!k->mod)
        return 1;
    if (tj_cuda_module_function(k->mod, symbol, &k->fn, err)) {
        tj_cuda_module_unload(k->mod);
        k->mod = NULL;
        return 1;
    }
    k->info.load_ms = now_ms() - t0;
    return 0;
}

static void params_text(const tj_cuda_param *params, uint32_t n, tj_buf *out)
{
    for (uint32_t i = 0; i < n; i++) {
        tj_buf_printf(out, "%s", i ? ", " : "");
        tj_cuda_param_text(&params[i], out);
    }
}

/* ---- the disk cache ----------------------------------------------------------- */

/* A stored entry: its symbol, parameters (a signature tj_cuda_c_params
 * reads back) and cubin. 0 when it loaded. */
static int load_entry(tj_cuda *cu, tj_cache *cache, const tj_cache_key *key, const tj_cuda_source *src,
                      tj_cuda_kernel *k)
{
    tj_cache_entry e;
    if (tj_cache_load(cache, TJ_CACHE_KERNEL, key, &e))
        return 1;
    char sig[4096];
    size_t symbol_len = 0;
    const char *lowered = tj_cache_meta_find(e.meta, "lowered", &symbol_len);
    char *symbol = lowered ? strndup(lowered, symbol_len) : NULL; /* mangled names have no bound */
    tj_rt_error ignored;
    int n = -1;
    if (symbol && !tj_cache_meta_get(e.meta, "params", sig, sizeof sig) && e.bin_len && e.ptx_len)
        n = tj_cuda_c_params(NULL, 0, src->kernel, sig, k->params, TJ_CUDA_C_MAX_PARAMS, &ignored);
    tj_cache_meta_get(e.meta, "nvrtc", k->info.nvrtc_version, sizeof k->info.nvrtc_version);
    k->ptx = n >= 0 ? strndup(e.ptx, e.ptx_len) : NULL;
    int failed = !k->ptx || load_cubin(cu, k, symbol, e.bin, e.bin_len, src->kernel, &ignored);
    free(symbol);
    if (failed) {
        free(k->ptx);
        k->ptx = NULL;
        tj_cache_drop(cache, key); /* unusable: rebuilt by the caller */
    } else {
        k->nparams = (uint32_t)n;
        k->info.from_disk = 1;
    }
    tj_cache_entry_free(&e);
    return failed;
}

static void store_entry(tj_cache *cache, const tj_cache_key *key, const tj_cuda_kernel *k, const char *symbol,
                        const char *kernel, const void *cubin, size_t size)
{
    tj_buf meta = {0};
    tj_buf_printf(&meta, "kernel %s\nlowered %s\narch %s\nnvrtc %s\nfrontend nvrtc\nthreads any\nsmem 0\nparams ",
                  kernel, symbol, k->info.arch, k->info.nvrtc_version);
    params_text(k->params, k->nparams, &meta);
    tj_buf_append(&meta, "\n", 1);
    /* Text lengths leave out the NUL, which the entry adds. */
    tj_cache_entry e = {.kind = TJ_CACHE_KERNEL, .key = *key, .meta = meta.data, .meta_len = meta.len,
                        .ptx = k->ptx, .ptx_len = strlen(k->ptx), .bin = cubin, .bin_len = size};
    tj_cache_store(cache, &e);
    tj_buf_free(&meta);
}

/* ---- compiling ------------------------------------------------------------------ */

typedef struct tools {
    tj_nvrtc *nvrtc;
    tj_nvjitlink *link;
    int own_nvrtc, own_link;
} tools;

static int open_tools(const tj_cuda_build_options *opt, tools *t, tj_rt_error *err)
{
    t->nvrtc = opt->nvrtc;
    t->link = opt->nvjitlink;
    if (!t->nvrtc && (t->own_nvrtc = 1, !(t->nvrtc = tj_nvrtc_open(err))))
        return 1;
    if (!t->link && (t->own_link = 1, !(t->link = tj_nvjitlink_open(err))))
        return 1;
    return 0;
}

static void close_tools(tools *t)
{
    if (t->own_nvrtc)
        tj_nvrtc_close(t->nvrtc);
    if (t->own_link)
        tj_nvjitlink_close(t->link);
}

static int compile(tj_cuda *cu, const tj_cuda_source *src, const tj_cuda_build_options *opt, const tj_cache_key *key,
                   tj_cuda_kernel *k, tj_rt_error *err)
{
    tools t = {0};
    tj_nvrtc_output out = {0};
    void *cubin = NULL;
    size_t size = 0;
    int failed = open_tools(opt, &t, err) || tj_nvrtc_compile(t.nvrtc, src, opt->diags, &out, err);
    if (!failed) {
        int major = 0, minor = 0;
        tj_nvrtc_version(t.nvrtc, &major, &minor);
        snprintf(k->info.nvrtc_version, sizeof k->info.nvrtc_version, "%d.%d", major, minor);
        k->info.nvrtc_ms = out.nvrtc_ms;
        double t0 = now_ms();
        failed = tj_nvjitlink_compile(t.link, out.ptx, out.ptx_len, k->info.arch, NULL, 0, &cubin, &size, NULL, err);
        k->info.link_ms = now_ms() - t0;
    }
    if (!failed) {
        memcpy(k->params, out.params, sizeof out.params);
        k->nparams = out.nparams;
        k->ptx = out.ptx;
        out.ptx = NULL;
        failed = load_cubin(cu, k, out.lowered_name, cubin, size, src->kernel, err);
    }
    if (!failed && opt->cache)
        store_entry(opt->cache, key, k, out.lowered_name, src->kernel, cubin, size);
    free(cubin);
    tj_nvrtc_output_free(&out);
    close_tools(&t);
    return failed;
}

/* The arch to compile for (the source's, or the device's) and the driver's
 * version, which the key holds. Three queries, not tj_cuda_device_props:
 * that one costs 0.9 ms, most of a disk hit. */
static int device_target(tj_cuda *cu, const tj_cuda_source *src, tj_cuda_kernel *k, int *driver, tj_rt_error *err)
{
    int major = 0, minor = 0;
    const tj_cu_api *api = &cu->api;
    if (tj_cu_check(api, api->DriverGetVersion(driver), "cuDriverGetVersion", err, "kernel '%s'", k->name) ||
        tj_cu_check(api, api->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->device),
                    "cuDeviceGetAttribute", err, "the compute capability of device %d", cu->ordinal) ||
        tj_cu_check(api, api->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->device),
                    "cuDeviceGetAttribute", err, "the compute capability of device %d", cu->ordinal))
        return 1;
    if (src->arch)
        snprintf(k->info.arch, sizeof k->info.arch, "%s", src->arch);
    else
        snprintf(k->info.arch, sizeof k->info.arch, "sm_%d%d", major, minor);
    if (!tj_nvrtc_valid_arch(k->info.arch))
        return tj_rt_fail(err, "NVRTC: invalid arch '%s' (expected e.g. sm_80 or sm_90a)", k->info.arch);
    return 0;
}

static int build(tj_cuda *cu, const tj_cuda_source *src, const tj_cuda_build_options *opt, tj_cuda_kernel *k,
                 tj_rt_error *err)
{
    int driver = 0;
    if (device_target(cu, src, k, &driver, err))
        return 1;
    tj_cuda_source at = *src;
    at.arch = k->info.arch;
    char path[1024], identity[1200];
    const char *id = opt->nvrtc ? tj_nvrtc_identity(opt->nvrtc) : NULL;
    if (!id && opt->cache && !tj_nvrtc_locate(path, identity, sizeof identity, NULL))
        id = identity;
    tj_cache_key key;
    tj_nvrtc_key(&at, at.arch, id, driver, &key);
    if (id && opt->cache && !load_entry(cu, opt->cache, &key, &at, k))
        return 0;
    return compile(cu, &at, opt, &key, k, err);
}

tj_cuda_kernel *tj_cuda_kernel_build(tj_cuda *cu, const tj_cuda_source *src, const tj_cuda_build_options *opt,
                                     tj_rt_error *err)
{
    if (!cu || !src || !src->source || !src->kernel) {
        tj_rt_fail(err, "tj_cuda_kernel_build: NULL device, source, source text or kernel name");
        return NULL;
    }
    double t0 = now_ms();
    tj_cuda_build_options none = {0};
    tj_cuda_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        tj_rt_fail(err, "out of memory building kernel '%s'", src->kernel);
        return NULL;
    }
    snprintf(k->name, sizeof k->name, "%s", src->kernel);
    if (build(cu, src, opt ? opt : &none, k, err)) {
        tj_cuda_kernel_free(k);
        return NULL;
    }
    k->info.total_ms = now_ms() - t0;
    return k;
}

void tj_cuda_kernel_free(tj_cuda_kernel *k)
{
    if (!k)
        return;
    tj_cuda_module_unload(k->mod);
    free(k->ptx);
    free(k);
}

/* ---- launching --------------------------------------------------------------------- */

/* Row-major and dense (dims of extent 1 may have any stride): all a
 * kernel that gets only the base pointer can index correctly. */
static int row_major(const tj_tensor *t)
{
    int64_t stride = 1;
    for (int d = t->rank; d-- > 0;) {
        if (t->shape[d] != 1 && t->strides[d] != stride)
            return 0;
        stride *= t->shape[d];
    }
    return 1;
}

static int put_arg(const tj_cuda_kernel *k, uint32_t i, const tj_arg *a, tj_cuda_params *p, tj_rt_error *err)
{
    const tj_cuda_param *param = &k->params[i];
    const char *name = param->name[0] ? param->name : "?";
    if (a->is_tensor && (a->tensor.rank < 0 || a->tensor.rank > TJ_MAX_RANK || !row_major(&a->tensor)))
        return tj_rt_fail(err, "kernel '%s', parameter %u ('%s'): the tensor is not row-major contiguous (a CUDA C "
                               "kernel gets only its pointer; pass a contiguous copy)", k->name, i, name);
    if (param->pointer != (a->is_tensor != 0))
        return tj_rt_fail(err, "kernel '%s', parameter %u ('%s'): expected a %s, got a %s", k->name, i, name,
                          param->pointer ? "tensor (a pointer)" : "scalar", a->is_tensor ? "tensor" : "scalar");
    if (param->pointer && param->dtype && a->tensor.dtype != param->dtype)
        return tj_rt_fail(err, "kernel '%s', parameter %u ('%s'): expected a %s tensor, got %s", k->name, i, name,
                          tj_dtype_name(param->dtype), tj_dtype_name(a->tensor.dtype));
    int full = param->pointer ? tj_cu_put_pointer(p, a->tensor.data) : tj_cu_put_scalar(p, param->dtype, a);
    return full ? tj_rt_fail(err, "kernel '%s': the parameters need more than %d bytes", k->name,
                             TJ_CUDA_PARAM_BYTES)
                : 0;
}

int tj_cuda_kernel_launch(const tj_cuda_kernel *k, const tj_cuda_launch_dims *d, const tj_arg *args, uint32_t nargs,
                          tj_rt_error *err)
{
    if (!k || !d || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_cuda_kernel_launch: NULL kernel or dims, or NULL args with nargs = %u", nargs);
    if (nargs != k->nparams)
        return tj_rt_fail(err, "kernel '%s' takes %u arguments, got %u", k->name, k->nparams, nargs);
    tj_cuda_params p;
    p.size = p.count = 0;
    for (uint32_t i = 0; i < nargs; i++)
        if (put_arg(k, i, &args[i], &p, err))
            return 1;
    return tj_cuda_launch(&k->fn, d, p.ptrs, err);
}

enum { DL_CUDA = 2, DL_CUDA_MANAGED = 13 }; /* dlpack.h's device types */

int tj_cuda_kernel_launch_dlpack(const tj_cuda_kernel *k, const tj_cuda_launch_dims *d, tj_arg *args,
                                 const void *const *dlpack, uint32_t nargs, tj_rt_error *err)
{
    if (!k || !tj_array_ok(args, nargs) || !tj_array_ok(dlpack, nargs))
        return tj_rt_fail(err, "tj_cuda_kernel_launch_dlpack: NULL kernel, or NULL args or dlpack with nargs = %u",
                          nargs);
    for (uint32_t i = 0; i < nargs && i < k->nparams; i++) {
        if (!dlpack[i])
            continue;
        int32_t type, id;
        const char *bad = tj_tensor_from_dlpack(dlpack[i], &args[i].tensor, &type, &id);
        if (!bad && type != DL_CUDA_MANAGED && (type != DL_CUDA || id != k->fn.cu->ordinal))
            bad = "device";
        if (bad)
            return tj_rt_fail(err, "kernel '%s', argument '%s': unsupported %s (DLPack device %d:%d; the kernel is "
                                   "on CUDA device %d)", k->name, k->params[i].name[0] ? k->params[i].name : "?",
                              bad, type, id, k->fn.cu->ordinal);
        args[i].is_tensor = 1;
    }
    return tj_cuda_kernel_launch(k, d, args, nargs, err);
}

const tj_cuda_function *tj_cuda_kernel_function(const tj_cuda_kernel *k) { return k ? &k->fn : NULL; }

uint32_t tj_cuda_kernel_params(const tj_cuda_kernel *k, const tj_cuda_param **params)
{
    if (params)
        *params = k ? k->params : NULL;
    return k ? k->nparams : 0;
}

const tj_cuda_kernel_info *tj_cuda_kernel_get_info(const tj_cuda_kernel *k) { return k ? &k->info : NULL; }
const char *tj_cuda_kernel_ptx(const tj_cuda_kernel *k) { return k ? k->ptx : NULL; }
