/* Buffers of the graph's device: host memory on the cpu, device memory
 * through the CUDA driver on a GPU; owned or borrowed. */
#include <stdlib.h>
#include <string.h>

#include "array/array_internal.h"

/* Device memory a graph freed, kept for its next allocations: cuMemAlloc
 * costs tens of microseconds and cuMemFree waits for the device, either of
 * which would dominate an evaluation of small arrays. A block is reused for
 * requests from half its size up; kernels on the null stream run in order,
 * so a block handed out again is not written before its last readers ran. */
static void *pool_take(tj_graph *g, size_t n)
{
    for (uint32_t i = 0; i < g->npool; i++)
        if (g->pool[i].bytes >= n && g->pool[i].bytes / 2 <= n) {
            void *p = g->pool[i].data;
            g->pool_bytes -= g->pool[i].bytes;
            g->pool[i] = g->pool[--g->npool];
            return p;
        }
    return NULL;
}

static void pool_release_all(tj_graph *g)
{
    for (uint32_t i = 0; i < g->npool; i++)
        tj_cuda_free(tj_jit_cuda(g->jit), g->pool[i].data, NULL);
    g->npool = 0;
    g->pool_bytes = 0;
}

static void pool_give(tj_graph *g, void *data, size_t n)
{
    if (g->npool == TJ_POOL_BLOCKS || g->pool_bytes + n > TJ_POOL_BYTES) {
        tj_cuda_free(tj_jit_cuda(g->jit), data, NULL);
        return;
    }
    g->pool[g->npool++] = (tj_pool_block){data, n};
    g->pool_bytes += n;
}

void tj_graph_pool_free(tj_graph *g)
{
    if (g->device == TJ_DEVICE_CUDA)
        pool_release_all(g);
}

static void *device_alloc(tj_graph *g, size_t n, tj_rt_error *err)
{
    void *p = pool_take(g, n);
    if (p)
        return p;
    p = tj_cuda_malloc(tj_jit_cuda(g->jit), n, err);
    if (!p && g->npool) { /* out of memory with blocks kept: give them back, once */
        pool_release_all(g);
        p = tj_cuda_malloc(tj_jit_cuda(g->jit), n, err);
    }
    return p;
}

tj_abuf *tj_abuf_new(tj_graph *g, size_t bytes, tj_rt_error *err)
{
    tj_abuf *b = calloc(1, sizeof *b);
    if (!b) {
        tj_rt_fail(err, "out of memory");
        return NULL;
    }
    size_t n = bytes ? (bytes + 255) / 256 * 256 : 256; /* a zero-size array still has an address */
    if (g->device == TJ_DEVICE_CUDA)
        b->data = device_alloc(g, n, err);
    else {
        b->data = aligned_alloc(64, n);
        if (!b->data)
            tj_rt_fail(err, "out of memory (%zu bytes)", n);
    }
    if (!b->data) {
        free(b);
        return NULL;
    }
    b->bytes = n;
    b->owned = 1;
    b->refs = 1;
    return b;
}

tj_abuf *tj_abuf_borrow(void *data)
{
    tj_abuf *b = calloc(1, sizeof *b);
    if (b) {
        b->data = data;
        b->refs = 1;
    }
    return b;
}

void tj_abuf_unref(tj_graph *g, tj_abuf *b)
{
    if (!b || --b->refs > 0)
        return;
    if (b->owned) {
        if (g->device == TJ_DEVICE_CUDA)
            pool_give(g, b->data, b->bytes);
        else
            free(b->data);
    }
    free(b);
}

int tj_anode_alloc(tj_graph *g, tj_array a, tj_rt_error *err)
{
    tj_anode *n = tj_anode_at(g, a);
    size_t bytes = (size_t)tj_shape_numel(n->rank, n->shape) * (size_t)tj_dtype_size(n->dtype);
    tj_abuf *b = tj_abuf_new(g, bytes, err);
    if (!b)
        return 1;
    if (n->buf)
        tj_abuf_unref(g, n->buf);
    n->buf = b;
    n->offset = 0;
    tj_contiguous_strides(n->rank, n->shape, n->strides);
    return 0;
}

int tj_graph_to_device(tj_graph *g, void *dst, const void *src, size_t bytes, tj_rt_error *err)
{
    if (!bytes)
        return 0;
    if (g->device == TJ_DEVICE_CUDA)
        return tj_cuda_memcpy_htod(tj_jit_cuda(g->jit), dst, src, bytes, err);
    memcpy(dst, src, bytes);
    return 0;
}

int tj_graph_to_host(tj_graph *g, void *dst, const void *src, size_t bytes, tj_rt_error *err)
{
    if (!bytes)
        return 0;
    if (g->device == TJ_DEVICE_CUDA)
        return tj_cuda_memcpy_dtoh(tj_jit_cuda(g->jit), dst, src, bytes, err);
    memcpy(dst, src, bytes);
    return 0;
}

tj_tensor tj_anode_tensor(const tj_anode *n)
{
    tj_tensor t;
    memset(&t, 0, sizeof t);
    t.data = n->buf ? (char *)n->buf->data + n->offset * tj_dtype_size(n->dtype) : NULL;
    t.dtype = n->dtype;
    t.rank = n->rank;
    for (int i = 0; i < n->rank; i++) {
        t.shape[i] = n->shape[i];
        t.strides[i] = n->strides[i];
    }
    return t;
}

void tj_gather_host(const tj_tensor *t, char *dst)
{
    int64_t n = tj_shape_numel(t->rank, t->shape), idx[TJ_MAX_RANK] = {0};
    int size = tj_dtype_size(t->dtype);
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int i = 0; i < t->rank; i++)
            off += idx[i] * t->strides[i];
        memcpy(dst + e * size, (const char *)t->data + off * size, (size_t)size);
        for (int i = t->rank - 1; i >= 0; i--) {
            if (++idx[i] < t->shape[i])
                break;
            idx[i] = 0;
        }
    }
}

/* The lowest and highest element offsets of t (it is not empty). */
static void span(const tj_tensor *t, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = (t->shape[i] - 1) * t->strides[i];
        if (d < 0)
            *lo += d;
        else
            *hi += d;
    }
}

int tj_read_strided(tj_graph *g, const tj_tensor *t, void *dst, tj_rt_error *err)
{
    int64_t n = tj_shape_numel(t->rank, t->shape);
    if (n == 0)
        return 0;
    if (g->device != TJ_DEVICE_CUDA) {
        tj_gather_host(t, dst);
        return 0;
    }
    int64_t lo, hi;
    span(t, &lo, &hi);
    int size = tj_dtype_size(t->dtype);
    size_t bytes = (size_t)(hi - lo + 1) * (size_t)size;
    char *host = malloc(bytes);
    if (!host)
        return tj_rt_fail(err, "tj_array_read: out of memory (%zu bytes)", bytes);
    int bad = tj_graph_to_host(g, host, (const char *)t->data + lo * size, bytes, err);
    if (!bad) {
        tj_tensor h = *t;
        h.data = host - lo * size;
        tj_gather_host(&h, dst);
    }
    free(host);
    return bad;
}

static int64_t saturate(double v, double lo, double hi)
{
    if (v != v)
        return 0;
    return v <= lo ? (int64_t)lo : v >= hi ? (int64_t)hi : (int64_t)v;
}

void tj_store_scalar(void *p, tj_dtype dt, double v)
{
    switch (dt) {
    case TJ_DT_BOOL: *(uint8_t *)p = v != 0; break;
    case TJ_DT_I8: *(int8_t *)p = (int8_t)saturate(v, -128, 127); break;
    case TJ_DT_I16: *(int16_t *)p = (int16_t)saturate(v, -32768, 32767); break;
    case TJ_DT_I32: *(int32_t *)p = (int32_t)saturate(v, -2147483648.0, 2147483647.0); break;
    case TJ_DT_I64: *(int64_t *)p = saturate(v, -9223372036854775808.0, 9223372036854774784.0); break;
    case TJ_DT_U8: *(uint8_t *)p = (uint8_t)saturate(v, 0, 255); break;
    case TJ_DT_U16: *(uint16_t *)p = (uint16_t)saturate(v, 0, 65535); break;
    case TJ_DT_U32: *(uint32_t *)p = (uint32_t)saturate(v, 0, 4294967295.0); break;
    case TJ_DT_U64: *(uint64_t *)p = v <= 0 || v != v ? 0 : v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v; break;
    case TJ_DT_F16: *(uint16_t *)p = tj_f64_to_f16(v); break;
    case TJ_DT_BF16: *(uint16_t *)p = tj_f64_to_bf16(v); break;
    case TJ_DT_F32: *(float *)p = (float)v; break;
    case TJ_DT_F64: *(double *)p = v; break;
    default: break;
    }
}
