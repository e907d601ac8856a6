/* Launches through DLPack's C exchange API (tilejit/dispatch.h): the
 * producer views each Python object as a DLTensor and names its current
 * stream, so a launch from Python makes no capsule and runs no Python code
 * per tensor. The struct mirrors dlpack.h 1.3, whose layout is its ABI;
 * the DLTensors it fills are read by tj_dispatch_launch_dlpack. */
#include <stdio.h>

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

static int api_usable(const dl_exchange_api *x, const char *fn, tj_rt_error *err)
{
    if (x->header.version.major != 1 || !x->dltensor_from_py_object_no_sync || !x->current_work_stream)
        return tj_rt_fail(err, "%s: a DLPack exchange API of version %u.%u without the DLTensor view or the "
                               "stream query",
                          fn, x->header.version.major, x->header.version.minor);
    return 0;
}

/* Views objects[i] (NULL: skipped, dlpack[i] NULL) as DLTensors into
 * views, and the first tensor's device into *type and *id (0, 0 when none);
 * with a dispatch d, stops there with TJ_DISPATCH_OTHER_DEVICE when that
 * device is not d's. Errors start with `who` and name the array `what` i. */
static int view_objects(const tj_dispatch *d, const dl_exchange_api *x, void *const *objects, uint32_t n,
                        dl_tensor_view *views, const void **dlpack, int32_t *type, int32_t *id, const char *who,
                        const char *what, tj_rt_error *err)
{
    *type = *id = 0;
    for (uint32_t i = 0; i < n; i++) {
        dlpack[i] = NULL;
        if (!objects[i])
            continue;
        if (x->dltensor_from_py_object_no_sync(objects[i], &views[i]))
            return tj_rt_fail(err, "%s: %s %u: the array's producer could not describe it", who, what, i);
        dlpack[i] = &views[i];
        if (*type)
            continue;
        *type = views[i].device_type, *id = views[i].device_id;
        if (d && !tj_dispatch_on_device(d, *type, *id))
            return TJ_DISPATCH_OTHER_DEVICE;
    }
    return 0;
}

/* The producer's current stream of the device (NULL on the host). Managed
 * memory runs on a CUDA device too: its producer's stream is the CUDA
 * device's current one. */
static int producer_stream(const dl_exchange_api *x, int32_t type, int32_t id, void **stream, const char *who,
                           tj_rt_error *err)
{
    *stream = NULL;
    if ((type == DL_CUDA || type == DL_CUDA_MANAGED) && x->current_work_stream(DL_CUDA, id, stream))
        return tj_rt_fail(err, "%s: the arrays' producer could not name its current stream", who);
    return 0;
}

static int exchange_args_ok(const void *api, void *const *objects, uint32_t n, const void *out, const char *fn,
                            tj_rt_error *err)
{
    if (!api || !tj_array_ok(objects, n) || !tj_array_ok(out, n))
        return tj_rt_fail(err, "%s: NULL API, or NULL arrays with n > 0", fn);
    if (n > MAX_VIEWS)
        return tj_rt_fail(err, "%s: %u arrays, more than %d", fn, n, MAX_VIEWS);
    return api_usable(api, fn, err);
}

int tj_dispatch_launch_exchange(tj_dispatch *d, const void *api, void *const *objects, tj_arg *args,
                                uint32_t nargs, tj_rt_error *err)
{
    if (!d)
        return tj_rt_fail(err, "tj_dispatch_launch_exchange: NULL dispatch");
    if (exchange_args_ok(api, objects, nargs, args, "tj_dispatch_launch_exchange", err))
        return 1;
    dl_tensor_view views[MAX_VIEWS];
    const void *dlpack[MAX_VIEWS];
    int32_t type, id;
    void *stream;
    char who[96];
    snprintf(who, sizeof who, "kernel '%.80s'", d->req.kernel ? d->req.kernel : "?");
    int rc = view_objects(d, api, objects, nargs, views, dlpack, &type, &id, who, "argument", err);
    if (rc)
        return rc;
    if (producer_stream(api, type, id, &stream, who, err))
        return 1;
    return tj_dispatch_launch_dlpack(d, args, dlpack, nargs, stream, err);
}

int tj_tensors_from_exchange(const void *api, void *const *objects, uint32_t n, tj_tensor *out, int32_t *device_type,
                             int32_t *device_id, void **stream, tj_rt_error *err)
{
    static const char fn[] = "tj_tensors_from_exchange";
    if (exchange_args_ok(api, objects, n, out, fn, err))
        return 1;
    if (!device_type || !device_id || !stream)
        return tj_rt_fail(err, "%s: NULL device or stream pointer", fn);
    dl_tensor_view views[MAX_VIEWS];
    const void *dlpack[MAX_VIEWS];
    if (view_objects(NULL, api, objects, n, views, dlpack, device_type, device_id, fn, "array", err))
        return 1;
    for (uint32_t i = 0; i < n; i++) {
        int32_t type, id;
        const char *bad = dlpack[i] ? tj_tensor_from_dlpack(dlpack[i], &out[i], &type, &id) : NULL;
        if (bad)
            return tj_rt_fail(err, "%s: array %u: tilejit cannot describe its %s", fn, i, bad);
        if (dlpack[i] && (type != *device_type || id != *device_id))
            return tj_rt_fail(err, "%s: array %u is on DLPack device %d:%d, the first array on %d:%d", fn, i, type,
                              id, *device_type, *device_id);
    }
    return producer_stream(api, *device_type, *device_id, stream, fn, err);
}
