/* Launches through DLPack's C exchange API (tilejit/dispatch.h): the
 * producer views each Python object as a DLTensor and names its current
 * stream, so a launch from Python makes no capsule and runs no Python code
 * per tensor. The struct mirrors dlpack.h 1.3, whose layout is its ABI;
 * the DLTensors it fills are read by tj_dispatch_launch_dlpack. */
#include "runtime/dispatch_internal.h"

typedef struct dl_exchange_header {
    struct { uint32_t major, minor; } version;
    const struct dl_exchange_header *prev_api;
} dl_exchange_header;

typedef struct dl_exchange_api {
    dl_exchange_header header;
    void *managed_tensor_allocator;
    void *managed_tensor_from_py_object_no_sync;
    void *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *py_object, void *out_dltensor);
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **out_stream);
} dl_exchange_api;

/* A DLTensor: data, device (type, id), ndim, dtype, shape, strides,
 * byte_offset. Only its size and the device are read here. */
typedef struct dl_tensor_view {
    void *data;
    int32_t device_type, device_id;
    int32_t ndim;
    uint32_t dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} dl_tensor_view;

enum { MAX_VIEWS = 64, DL_CUDA = 2, DL_CUDA_MANAGED = 13 };

static int api_usable(const dl_exchange_api *x, tj_rt_error *err)
{
    if (x->header.version.major != 1 || !x->dltensor_from_py_object_no_sync || !x->current_work_stream)
        return tj_rt_fail(err, "tj_dispatch_launch_exchange: a DLPack exchange API of version %u.%u without "
                               "the DLTensor view or the stream query",
                          x->header.version.major, x->header.version.minor);
    return 0;
}

int tj_dispatch_launch_exchange(tj_dispatch *d, const void *api, void *const *objects, tj_arg *args,
                                uint32_t nargs, tj_rt_error *err)
{
    const dl_exchange_api *x = api;
    if (!d || !x || !tj_array_ok(objects, nargs) || !tj_array_ok(args, nargs))
        return tj_rt_fail(err, "tj_dispatch_launch_exchange: NULL dispatch or API, or NULL arrays with nargs > 0");
    if (nargs > MAX_VIEWS)
        return tj_rt_fail(err, "tj_dispatch_launch_exchange: %u arguments, more than %d (use tj_dispatch_launch_dlpack)",
                          nargs, MAX_VIEWS);
    if (api_usable(x, err))
        return 1;
    dl_tensor_view views[MAX_VIEWS];
    const void *dlpack[MAX_VIEWS];
    int32_t device_type = 0, device_id = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        dlpack[i] = NULL;
        if (!objects[i])
            continue;
        if (x->dltensor_from_py_object_no_sync(objects[i], &views[i]))
            return tj_rt_fail(err, "argument %u of kernel '%s': the array's producer could not describe it", i,
                              d->req.kernel);
        dlpack[i] = &views[i];
        if (!device_type) {
            device_type = views[i].device_type, device_id = views[i].device_id;
            if (!tj_dispatch_on_device(d, device_type, device_id))
                return TJ_DISPATCH_OTHER_DEVICE;
        }
    }
    void *stream = NULL;
    /* Managed memory runs on a CUDA device too: its producer's stream is the
     * CUDA device's current one. */
    int on_cuda = device_type == DL_CUDA || device_type == DL_CUDA_MANAGED;
    if (on_cuda && x->current_work_stream(DL_CUDA, device_id, &stream))
        return tj_rt_fail(err, "kernel '%s': the arrays' producer could not name its current stream", d->req.kernel);
    return tj_dispatch_launch_dlpack(d, args, dlpack, nargs, stream, err);
}
