/* The kernel ABI: a tj_kernel's arguments laid out as the PTX parameters the
 * code generator declares (docs/runtime.md). Runs on every launch, so it
 * allocates nothing and touches each argument once. */
#include <stdint.h>
#include <string.h>

#include "runtime/cuda_internal.h"

/* Reserves the next PTX parameter of `size` bytes, aligned to `align` (a
 * power of two: its size, or a tensor map's 64) as in the .param space,
 * with zeroed padding (the buffer is deterministic); NULL when the buffer
 * is full. */
static void *next_param_aligned(tj_cuda_params *p, uint32_t size, uint32_t align)
{
    uint32_t at = (p->size + align - 1) & ~(align - 1);
    if (p->count >= TJ_CUDA_MAX_PARAMS || at > TJ_CUDA_PARAM_BYTES - size)
        return NULL;
    memset(p->data + p->size, 0, at - p->size);
    p->ptrs[p->count++] = p->data + at;
    p->size = at + size;
    return p->data + at;
}

int tj_cu_put_bytes(tj_cuda_params *p, const void *value, uint32_t size, uint32_t align)
{
    void *slot = next_param_aligned(p, size, align);
    if (!slot)
        return 1;
    memcpy(slot, value, size);
    return 0;
}

static int put(tj_cuda_params *p, const void *value, uint32_t size)
{
    void *slot = next_param_aligned(p, size, size);
    if (!slot)
        return 1;
    memcpy(slot, value, size);
    return 0;
}

static int overflow(const tj_kernel *k, const tj_param *param, tj_rt_error *err)
{
    return tj_rt_fail(err,
                      "kernel '%s', parameter '%s': the parameters need more than %d bytes or "
                      "%d PTX parameters",
                      k->name, param->name, TJ_CUDA_PARAM_BYTES, TJ_CUDA_MAX_PARAMS);
}

static int put_tensor(const tj_kernel *k, const tj_param *param, const tj_tensor *t,
                      tj_cuda_params *p, tj_rt_error *err)
{
    if (param->rank > TJ_MAX_RANK)
        return tj_rt_fail(err, "kernel '%s', parameter '%s': rank %d is over %d", k->name,
                          param->name, param->rank, TJ_MAX_RANK);
    if (t->rank != param->rank || t->dtype != param->dtype)
        return tj_rt_fail(err,
                          "kernel '%s', parameter '%s': expected a %s tensor of rank %d, "
                          "got %s of rank %d",
                          k->name, param->name, tj_dtype_name(param->dtype), param->rank,
                          tj_dtype_name(t->dtype), t->rank);
    if (tj_cu_put_pointer(p, t->data))
        return overflow(k, param, err);
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] < 0 || t->shape[i] > INT32_MAX)
            return tj_rt_fail(err,
                              "kernel '%s', parameter '%s': size %lld of axis %d does not fit .s32",
                              k->name, param->name, (long long)t->shape[i], i);
        int32_t size = (int32_t)t->shape[i];
        if (put(p, &size, 4))
            return overflow(k, param, err);
    }
    for (int i = 0; i < t->rank; i++)
        if (put(p, &t->strides[i], 8))
            return overflow(k, param, err);
    return 0;
}

/* A scalar as its dtype's bits; integers are truncated to the width as a
 * C conversion would (range checks are tj_check_args's). */
static uint64_t scalar_bits(tj_dtype dt, const tj_arg *a)
{
    switch (dt) {
    case TJ_DT_BOOL: return a->scalar.i != 0;
    case TJ_DT_F16: return tj_f32_to_f16((float)a->scalar.f);
    case TJ_DT_BF16: return tj_f32_to_bf16((float)a->scalar.f);
    case TJ_DT_F32: {
        float f = (float)a->scalar.f;
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    case TJ_DT_F64: {
        uint64_t u;
        memcpy(&u, &a->scalar.f, 8);
        return u;
    }
    default: return (uint64_t)a->scalar.i;
    }
}

int tj_cu_put_pointer(tj_cuda_params *p, const void *ptr)
{
    uint64_t base = (uint64_t)(uintptr_t)ptr;
    return put(p, &base, 8);
}

int tj_cu_put_scalar(tj_cuda_params *p, tj_dtype dt, const tj_arg *a)
{
    uint32_t size = (uint32_t)tj_dtype_size(dt);
    if (size == 0)
        return 1;
    uint64_t bits = scalar_bits(dt, a);
    union {
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
    } v; /* the member of the parameter's width, in the host's byte order */
    switch (size) {
    case 1: v.u8 = (uint8_t)bits; break;
    case 2: v.u16 = (uint16_t)bits; break;
    case 4: v.u32 = (uint32_t)bits; break;
    default: v.u64 = bits;
    }
    return put(p, &v, size);
}

static int put_scalar(const tj_kernel *k, const tj_param *param, const tj_arg *a, tj_cuda_params *p,
                      tj_rt_error *err)
{
    if (tj_dtype_size(param->dtype) == 0)
        return tj_rt_fail(err, "kernel '%s', parameter '%s': invalid dtype", k->name, param->name);
    return tj_cu_put_scalar(p, param->dtype, a) ? overflow(k, param, err) : 0;
}

int tj_cuda_marshal(const tj_kernel *k, const tj_arg *args, uint32_t nargs, tj_cuda_params *out,
                    tj_rt_error *err)
{
    if (!k || !out || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_cuda_marshal: NULL kernel or out, or NULL args with nargs = %u", nargs);
    out->size = out->count = 0;
    if (nargs != k->nparams)
        return tj_rt_fail(err, "kernel '%s' takes %u arguments, got %u", k->name, k->nparams,
                          nargs);
    for (uint32_t i = 0; i < nargs; i++) {
        const tj_param *param = &k->params[i];
        int failed;
        if (param->rank < 0)
            failed =
                tj_rt_fail(err, "kernel '%s', parameter '%s': negative rank", k->name, param->name);
        else if (param->rank > 0 && !args[i].is_tensor)
            failed = tj_rt_fail(err, "kernel '%s', parameter '%s': expected a tensor, got a scalar",
                                k->name, param->name);
        else if (param->rank == 0 && args[i].is_tensor)
            failed = tj_rt_fail(err, "kernel '%s', parameter '%s': expected a scalar, got a tensor",
                                k->name, param->name);
        else if (args[i].is_tensor)
            failed = put_tensor(k, param, &args[i].tensor, out, err);
        else
            failed = put_scalar(k, param, &args[i], out, err);
        if (failed)
            return 1;
    }
    return 0;
}

int tj_cuda_launch_kernel_maps(const tj_cuda_function *f, const tj_cuda_launch_dims *d, const tj_kernel *k,
                               const tj_tensor_map_desc *maps, int nmaps, const tj_arg *args, uint32_t nargs,
                               tj_rt_error *err)
{
    if (!f || !f->cu || !d || !k || nmaps < 0 || (nmaps && !maps))
        return tj_rt_fail(err, "tj_cuda_launch_kernel_maps: NULL function, dims or kernel, or NULL maps");
    tj_cuda_params params;
    if (tj_cuda_marshal(k, args, nargs, &params, err) ||
        (nmaps && tj_cu_put_tensor_maps(f->cu, k, maps, nmaps, args, &params, err)))
        return 1;
    return tj_cuda_launch(f, d, params.ptrs, err);
}

int tj_cuda_launch_kernel(const tj_cuda_function *f, const tj_cuda_launch_dims *d,
                          const tj_kernel *k, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    if (!f || !d || !k)
        return tj_rt_fail(err, "tj_cuda_launch_kernel: NULL function, dims or kernel");
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS];
    int n = k->level == TJ_LEVEL_SIMT ? tj_tensor_maps(k, maps) : 0; /* a SIMT kernel names its maps */
    if (n < 0)
        return tj_rt_fail(err, "kernel '%s' reads more than %d tensor maps", k->name, TJ_MAX_TENSOR_MAPS);
    return tj_cuda_launch_kernel_maps(f, d, k, maps, n, args, nargs, err);
}
