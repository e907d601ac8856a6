/* Modules (PTX through the driver's JIT, or cubins), their functions,
 * function attributes, and launches. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_internal.h"

#define JIT_LOG_BYTES 8192

static const char *or_unnamed(const char *name) { return name ? name : "(unnamed)"; }

/* cuModuleUnload unloads from the current context. */
static int unload(const tj_cuda *cu, CUmodule mod, tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(cu, err, cu->api.ModuleUnload(mod), "cuModuleUnload", "module %p",
                      (void *)mod);
}

static tj_cuda_module *new_module(const tj_cuda *cu, CUmodule mod, tj_rt_error *err)
{
    tj_cuda_module *m = malloc(sizeof *m);
    if (!m) {
        unload(cu, mod, NULL);
        tj_rt_fail(err, "out of memory loading a CUDA module");
        return NULL;
    }
    m->cu = cu;
    m->mod = mod;
    return m;
}

static int load_data(const tj_cuda *cu, CUmodule *mod, const void *image, unsigned nopts,
                     CUjit_option *opts, void **vals, const char *kind, const char *name,
                     tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(cu, err, cu->api.ModuleLoadDataEx(mod, image, nopts, opts, vals),
                      "cuModuleLoadDataEx", "loading %s for kernel '%s'", kind, or_unnamed(name));
}

tj_cuda_module *tj_cuda_module_load_ptx(const tj_cuda *cu, const char *ptx, const char *name,
                                        tj_rt_error *err)
{
    if (!cu) {
        tj_rt_fail(err, "tj_cuda_module_load_ptx: NULL cuda");
        return NULL;
    }
    char error_log[JIT_LOG_BYTES] = {0}, info_log[JIT_LOG_BYTES] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                           CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {error_log, (void *)(uintptr_t)sizeof error_log, info_log,
                    (void *)(uintptr_t)sizeof info_log};
    CUmodule mod = NULL;
    if (!ptx) {
        tj_rt_fail(err, "loading PTX for kernel '%s': no PTX text", or_unnamed(name));
        return NULL;
    }
    if (load_data(cu, &mod, ptx, 4, opts, vals, "PTX", name, err)) {
        error_log[sizeof error_log - 1] = '\0';
        tj_rt_append_log(err, error_log);
        return NULL;
    }
    return new_module(cu, mod, err);
}

/* The driver trusts the image's headers; reject what is plainly not one. */
static int looks_like_cubin(const unsigned char *p, size_t size)
{
    static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
    static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
    return (size >= 64 && !memcmp(p, elf, 4)) || (size >= 16 && !memcmp(p, fatbin, 4));
}

tj_cuda_module *tj_cuda_module_load_cubin(const tj_cuda *cu, const void *image, size_t size,
                                          const char *name, tj_rt_error *err)
{
    if (!cu) {
        tj_rt_fail(err, "tj_cuda_module_load_cubin: NULL cuda");
        return NULL;
    }
    CUmodule mod = NULL;
    if (!image || !looks_like_cubin(image, size)) {
        tj_rt_fail(err, "loading cubin for kernel '%s': not an ELF or fatbin image (%zu bytes)",
                   or_unnamed(name), size);
        return NULL;
    }
    if (load_data(cu, &mod, image, 0, NULL, NULL, "cubin", name, err))
        return NULL;
    return new_module(cu, mod, err);
}

void tj_cuda_module_unload(tj_cuda_module *m)
{
    if (!m)
        return;
    unload(m->cu, m->mod, NULL);
    free(m);
}

static int get_function(const tj_cuda_module *m, const char *name, CUfunction *f,
                        tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(m->cu, err, m->cu->api.ModuleGetFunction(f, m->mod, name),
                      "cuModuleGetFunction", "looking up kernel '%s'", name);
}

int tj_cuda_module_function(const tj_cuda_module *m, const char *name, tj_cuda_function *out,
                            tj_rt_error *err)
{
    if (!m || !out)
        return tj_rt_fail(err, "tj_cuda_module_function: NULL module or out");
    CUfunction f = NULL;
    memset(out, 0, sizeof *out);
    if (!name)
        return tj_rt_fail(err, "looking up a kernel without a name");
    if (get_function(m, name, &f, err))
        return 1;
    out->cu = m->cu;
    out->handle = f;
    snprintf(out->name, sizeof out->name, "%s", name); /* for messages: may be truncated */
    return 0;
}

/* ---- attributes -------------------------------------------------------- */

static const struct {
    CUfunction_attribute attr;
    size_t offset;
} func_attrs[] = {
#define A(a, field) {CU_FUNC_ATTRIBUTE_##a, offsetof(tj_cuda_func_attrs, field)}
    A(NUM_REGS, num_regs),
    A(LOCAL_SIZE_BYTES, local_bytes),
    A(SHARED_SIZE_BYTES, static_shared_bytes),
    A(CONST_SIZE_BYTES, const_bytes),
    A(MAX_THREADS_PER_BLOCK, max_threads_per_block),
    A(MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic_shared_bytes),
    A(PTX_VERSION, ptx_version),
    A(BINARY_VERSION, binary_version),
#undef A
};

int tj_cuda_function_attrs(const tj_cuda_function *f, tj_cuda_func_attrs *out, tj_rt_error *err)
{
    if (!f || !f->cu || !out)
        return tj_rt_fail(err, "tj_cuda_function_attrs: NULL function or out");
    const tj_cuda *cu = f->cu;
    int pushed, failed = 0;
    memset(out, 0, sizeof *out);
    if (tj_cu_enter(cu, &pushed, err))
        return 1;
    for (size_t i = 0; i < sizeof func_attrs / sizeof func_attrs[0] && !failed; i++) {
        int *field = (int *)((char *)out + func_attrs[i].offset);
        CUresult r = cu->api.FuncGetAttribute(field, func_attrs[i].attr, f->handle);
        failed = tj_cu_check(&cu->api, r, "cuFuncGetAttribute", err, "kernel '%s', attribute %d",
                             f->name, func_attrs[i].attr);
    }
    tj_cu_leave(cu, pushed);
    return failed;
}

int tj_cuda_function_set_max_dynamic_shared(const tj_cuda_function *f, int bytes, tj_rt_error *err)
{
    if (!f || !f->cu || bytes < 0)
        return tj_rt_fail(err, "tj_cuda_function_set_max_dynamic_shared: NULL function or %d bytes", bytes);
    TJ_CU_RETURN_CALL(f->cu, err,
                      f->cu->api.FuncSetAttribute(f->handle,
                                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                  bytes),
                      "cuFuncSetAttribute",
                      "allowing %d bytes of dynamic shared memory for kernel '%s'", bytes, f->name);
}

/* ---- launches ----------------------------------------------------------- */

static int launch(const tj_cuda_function *f, const tj_cuda_launch_dims *d, void **params,
                  void **extra, tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(f->cu, err,
                      f->cu->api.LaunchKernel(f->handle, d->grid[0], d->grid[1], d->grid[2],
                                              d->block[0], d->block[1], d->block[2],
                                              d->shared_bytes, (CUstream)d->stream, params, extra),
                      "cuLaunchKernel",
                      "launching '%s' on grid (%u, %u, %u), block (%u, %u, %u), %u bytes of "
                      "dynamic shared memory",
                      f->name, d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1],
                      d->block[2], d->shared_bytes);
}

int tj_cuda_launch(const tj_cuda_function *f, const tj_cuda_launch_dims *d, void **params,
                   tj_rt_error *err)
{
    if (!f || !f->cu || !d)
        return tj_rt_fail(err, "tj_cuda_launch: NULL function or dims");
    return launch(f, d, params, NULL, err);
}

int tj_cuda_launch_packed(const tj_cuda_function *f, const tj_cuda_launch_dims *d,
                          const void *data, size_t size, tj_rt_error *err)
{
    if (!f || !f->cu || !d || !tj_array_ok(data, size))
        return tj_rt_fail(err, "tj_cuda_launch_packed: NULL function or dims, or NULL data of %zu bytes", size);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)data, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &size, CU_LAUNCH_PARAM_END};
    return launch(f, d, NULL, extra, err);
}
