/* Device memory, streams and events, for tests, benchmarks and the
 * autotuner. Each call makes the device's context current around the one
 * driver call it makes. */
#include <stdint.h>

#include "runtime/cuda_internal.h"

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* ---- memory ------------------------------------------------------------ */

static int mem_alloc(const tj_cuda *cu, CUdeviceptr *p, size_t bytes, tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemAlloc(p, bytes), "cuMemAlloc_v2",
                      "allocating %zu bytes on device %d", bytes, cu->ordinal);
}

void *tj_cuda_malloc(const tj_cuda *cu, size_t bytes, tj_rt_error *err)
{
    if (!cu) {
        tj_rt_fail(err, "tj_cuda_malloc: NULL cuda");
        return NULL;
    }
    CUdeviceptr p = 0;
    return mem_alloc(cu, &p, bytes, err) ? NULL : (void *)(uintptr_t)p;
}

int tj_cuda_free(const tj_cuda *cu, void *p, tj_rt_error *err)
{
    if (!cu)
        return tj_rt_fail(err, "tj_cuda_free: NULL cuda");
    if (!p)
        return 0;
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemFree(dptr(p)), "cuMemFree_v2", "freeing %p", p);
}

int tj_cuda_memcpy_htod(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                        tj_rt_error *err)
{
    if (!cu || ((!dst || !src) && bytes))
        return tj_rt_fail(err, "tj_cuda_memcpy_htod: NULL cuda, or NULL dst or src of %zu bytes", bytes);
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemcpyHtoD(dptr(dst), src, bytes), "cuMemcpyHtoD_v2",
                      "copying %zu bytes to the device", bytes);
}

int tj_cuda_memcpy_dtoh(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                        tj_rt_error *err)
{
    if (!cu || ((!dst || !src) && bytes))
        return tj_rt_fail(err, "tj_cuda_memcpy_dtoh: NULL cuda, or NULL dst or src of %zu bytes", bytes);
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemcpyDtoH(dst, dptr(src), bytes), "cuMemcpyDtoH_v2",
                      "copying %zu bytes from the device", bytes);
}

int tj_cuda_memcpy_htod_async(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                              void *stream, tj_rt_error *err)
{
    if (!cu || ((!dst || !src) && bytes))
        return tj_rt_fail(err, "tj_cuda_memcpy_htod_async: NULL cuda, or NULL dst or src of %zu bytes", bytes);
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemcpyHtoDAsync(dptr(dst), src, bytes, (CUstream)stream),
                      "cuMemcpyHtoDAsync_v2", "copying %zu bytes to the device", bytes);
}

int tj_cuda_memcpy_dtoh_async(const tj_cuda *cu, void *dst, const void *src, size_t bytes,
                              void *stream, tj_rt_error *err)
{
    if (!cu || ((!dst || !src) && bytes))
        return tj_rt_fail(err, "tj_cuda_memcpy_dtoh_async: NULL cuda, or NULL dst or src of %zu bytes", bytes);
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemcpyDtoHAsync(dst, dptr(src), bytes, (CUstream)stream),
                      "cuMemcpyDtoHAsync_v2", "copying %zu bytes from the device", bytes);
}

int tj_cuda_memset(const tj_cuda *cu, void *dst, unsigned char value, size_t bytes,
                   tj_rt_error *err)
{
    if (!cu || (!dst && bytes))
        return tj_rt_fail(err, "tj_cuda_memset: NULL cuda, or NULL dst of %zu bytes", bytes);
    TJ_CU_RETURN_CALL(cu, err, cu->api.MemsetD8(dptr(dst), value, bytes), "cuMemsetD8_v2",
                      "setting %zu bytes to %u", bytes, value);
}

int tj_cuda_synchronize(const tj_cuda *cu, tj_rt_error *err)
{
    if (!cu)
        return tj_rt_fail(err, "tj_cuda_synchronize: NULL cuda");
    TJ_CU_RETURN_CALL(cu, err, cu->api.CtxSynchronize(), "cuCtxSynchronize",
                      "waiting for device %d", cu->ordinal);
}

/* ---- streams ------------------------------------------------------------ */

static int stream_create(const tj_cuda *cu, CUstream *s, unsigned flags, tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(cu, err, cu->api.StreamCreate(s, flags), "cuStreamCreate", "device %d",
                      cu->ordinal);
}

void *tj_cuda_stream_create(const tj_cuda *cu, int non_blocking, tj_rt_error *err)
{
    if (!cu) {
        tj_rt_fail(err, "tj_cuda_stream_create: NULL cuda");
        return NULL;
    }
    CUstream s = NULL;
    unsigned flags = non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
    return stream_create(cu, &s, flags, err) ? NULL : (void *)s;
}

int tj_cuda_stream_destroy(const tj_cuda *cu, void *stream, tj_rt_error *err)
{
    if (!cu)
        return tj_rt_fail(err, "tj_cuda_stream_destroy: NULL cuda");
    if (!stream)
        return 0;
    TJ_CU_RETURN_CALL(cu, err, cu->api.StreamDestroy((CUstream)stream), "cuStreamDestroy_v2",
                      "stream %p", stream);
}

int tj_cuda_stream_synchronize(const tj_cuda *cu, void *stream, tj_rt_error *err)
{
    if (!cu)
        return tj_rt_fail(err, "tj_cuda_stream_synchronize: NULL cuda");
    TJ_CU_RETURN_CALL(cu, err, cu->api.StreamSynchronize((CUstream)stream), "cuStreamSynchronize",
                      "stream %p", stream);
}

/* ---- events ------------------------------------------------------------- */

static int event_create(const tj_cuda *cu, CUevent *e, tj_rt_error *err)
{
    TJ_CU_RETURN_CALL(cu, err, cu->api.EventCreate(e, CU_EVENT_DEFAULT), "cuEventCreate",
                      "device %d", cu->ordinal);
}

void *tj_cuda_event_create(const tj_cuda *cu, tj_rt_error *err)
{
    if (!cu) {
        tj_rt_fail(err, "tj_cuda_event_create: NULL cuda");
        return NULL;
    }
    CUevent e = NULL;
    return event_create(cu, &e, err) ? NULL : (void *)e;
}

int tj_cuda_event_destroy(const tj_cuda *cu, void *event, tj_rt_error *err)
{
    if (!cu)
        return tj_rt_fail(err, "tj_cuda_event_destroy: NULL cuda");
    if (!event)
        return 0;
    TJ_CU_RETURN_CALL(cu, err, cu->api.EventDestroy((CUevent)event), "cuEventDestroy_v2",
                      "event %p", event);
}

int tj_cuda_event_record(const tj_cuda *cu, void *event, void *stream, tj_rt_error *err)
{
    if (!cu || !event)
        return tj_rt_fail(err, "tj_cuda_event_record: NULL cuda or event");
    TJ_CU_RETURN_CALL(cu, err, cu->api.EventRecord((CUevent)event, (CUstream)stream),
                      "cuEventRecord", "event %p on stream %p", event, stream);
}

int tj_cuda_event_synchronize(const tj_cuda *cu, void *event, tj_rt_error *err)
{
    if (!cu || !event)
        return tj_rt_fail(err, "tj_cuda_event_synchronize: NULL cuda or event");
    TJ_CU_RETURN_CALL(cu, err, cu->api.EventSynchronize((CUevent)event), "cuEventSynchronize",
                      "event %p", event);
}

int tj_cuda_event_elapsed(const tj_cuda *cu, void *start, void *end, float *ms, tj_rt_error *err)
{
    if (!cu || !start || !end || !ms)
        return tj_rt_fail(err, "tj_cuda_event_elapsed: NULL cuda, event or ms");
    TJ_CU_RETURN_CALL(cu, err, cu->api.EventElapsedTime(ms, (CUevent)start, (CUevent)end),
                      "cuEventElapsedTime", "between events %p and %p", start, end);
}
