/* Arguments from DLPack tensors (tilejit/dispatch.h). The structs mirror
 * dlpack.h (v0.8 and later, unversioned), whose layout is its ABI. */
#include <stdio.h>

#include "runtime/dispatch_internal.h"

typedef struct dl_device {
    int32_t device_type;
    int32_t device_id;
} dl_device;

typedef struct dl_dtype {
    uint8_t code, bits;
    uint16_t lanes;
} dl_dtype;

typedef struct dl_tensor {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: row-major */
    uint64_t byte_offset;
} dl_tensor;

enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };

static tj_dtype dtype_of(dl_dtype t)
{
    static const tj_dtype ints[] = {TJ_DT_I8, TJ_DT_I16, TJ_DT_I32, TJ_DT_I64};
    static const tj_dtype uints[] = {TJ_DT_U8, TJ_DT_U16, TJ_DT_U32, TJ_DT_U64};
    int log = t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : t.bits == 64 ? 3 : -1;
    if (t.lanes != 1 || log < 0)
        return TJ_DT_INVALID;
    switch (t.code) {
    case DL_INT: return ints[log];
    case DL_UINT: return uints[log];
    case DL_FLOAT: return log == 1 ? TJ_DT_F16 : log == 2 ? TJ_DT_F32 : log == 3 ? TJ_DT_F64 : TJ_DT_INVALID;
    case DL_BFLOAT: return log == 1 ? TJ_DT_BF16 : TJ_DT_INVALID;
    case DL_BOOL: return log == 0 ? TJ_DT_BOOL : TJ_DT_INVALID;
    default: return TJ_DT_INVALID;
    }
}

int tj_dispatch_on_device(const tj_dispatch *d, int32_t type, int32_t id)
{
    if (type == DL_CUDA_MANAGED)
        return 1;
    if (tj_jit_device(d->jit) != TJ_DEVICE_CUDA) /* cpu, interp: host memory */
        return type == DL_CPU || type == DL_CUDA_HOST;
    return type == DL_CUDA && id == tj_jit_ordinal(d->jit);
}

static const char *device_name(int32_t type)
{
    return type == DL_CPU ? "cpu" : type == DL_CUDA ? "cuda" : type == DL_CUDA_HOST ? "cuda host" : "device";
}

const char *tj_tensor_from_dlpack(const void *dltensor, tj_tensor *out, int32_t *device_type, int32_t *device_id)
{
    const dl_tensor *t = dltensor;
    if (!t || !out || !device_type || !device_id)
        return "NULL argument";
    *device_type = t->device.device_type;
    *device_id = t->device.device_id;
    tj_dtype dt = dtype_of(t->dtype);
    if (dt == TJ_DT_INVALID)
        return "dtype";
    if (t->ndim < 0 || t->ndim > TJ_MAX_RANK)
        return "rank";
    out->data = (char *)t->data + t->byte_offset;
    out->dtype = dt;
    out->rank = t->ndim;
    int64_t stride = 1;
    for (int k = t->ndim; k-- > 0;) {
        out->shape[k] = t->shape[k];
        out->strides[k] = t->strides ? t->strides[k] : stride;
        stride *= t->shape[k];
    }
    return NULL;
}

static int from_dlpack(const tj_dispatch *d, uint32_t i, const dl_tensor *t, tj_arg *out, tj_rt_error *err)
{
    const char *name = i < d->nparams ? d->params[i].name : "?";
    int32_t type, id;
    const char *bad = tj_tensor_from_dlpack(t, &out->tensor, &type, &id);
    if (!bad && !tj_dispatch_on_device(d, type, id))
        bad = "device";
    if (bad) {
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "argument '%s' of kernel '%s': unsupported %s (DLPack %s:%d, dtype code %u bits %u lanes %u, "
                     "rank %d); the kernel runs on %s:%d",
                     name, d->req.kernel, bad, device_name(type), id, t->dtype.code, t->dtype.bits, t->dtype.lanes,
                     t->ndim, tj_jit_device(d->jit) != TJ_DEVICE_CUDA ? "cpu" : "cuda", tj_jit_ordinal(d->jit));
        return 1;
    }
    out->is_tensor = 1;
    return 0;
}

int tj_dispatch_args_from_dlpack(const tj_dispatch *d, tj_arg *args, const void *const *dlpack, uint32_t nargs,
                                 tj_rt_error *err)
{
    if (!d || !tj_array_ok(args, nargs) || !tj_array_ok(dlpack, nargs))
        return tj_rt_fail(err, "tj_dispatch_args_from_dlpack: NULL dispatch, or NULL args or dlpack with nargs > 0");
    for (uint32_t i = 0; i < nargs; i++)
        if (dlpack[i] && from_dlpack(d, i, dlpack[i], &args[i], err))
            return 1;
    return 0;
}

int tj_dispatch_launch_dlpack(tj_dispatch *d, tj_arg *args, const void *const *dlpack, uint32_t nargs, void *stream,
                              tj_rt_error *err)
{
    return tj_dispatch_args_from_dlpack(d, args, dlpack, nargs, err) ||
           tj_dispatch_launch(d, args, nargs, stream, err);
}
