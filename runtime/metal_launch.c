/* The Metal host runtime, part two: dispatching a pipeline on tensors in
 * host memory (buffers wrapping that memory, the argument block, the
 * dispatch, completion), and the whole path from Tile IR (tj_metal_run). */
#if defined(__APPLE__) || defined(TJ_METAL_OBJC)

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/metal_internal.h"
#include "tilejit/tilejit.h"

/* One tensor's buffer, and where to copy it back when it is a copy. */
typedef struct bound {
    id buf;
    void *host;
    size_t bytes;
    int copy_back;
} bound;

/* Binds tensor i: its pages wrapped without a copy (Metal wants a page-
 * aligned start and length; the tensor sits at an offset inside), or, when
 * Metal refuses that memory, a copy (written back after the run when the
 * kernel writes the tensor). */
static int bind_tensor(tj_metal *m, id enc, const tj_msl_args *a, uint32_t i, bound *b, tj_rt_error *err)
{
    char *lo = (char *)a->data[i] + a->lo[i];
    size_t len = (size_t)(a->hi[i] - a->lo[i]);
    if (!len) { /* an empty tensor is never read: any buffer will do */
        static const unsigned char none[16];
        TJ_MSG(void, const void *, NSUInteger, NSUInteger)(enc, m->sel[S_SET_BYTES], none, sizeof none, i);
        return 0;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)lo & ~(page - 1), end = ((uintptr_t)lo + len + page - 1) & ~(page - 1);
    NSUInteger offset = (NSUInteger)((uintptr_t)a->data[i] - start);
    b->buf = TJ_MSG(id, void *, NSUInteger, NSUInteger, void *)(m->device, m->sel[S_NEW_BUFFER_NOCOPY], (void *)start,
                                                                end - start, TJ_MTL_STORAGE_SHARED, NULL);
    if (!b->buf) {
        b->buf = TJ_MSG(id, const void *, NSUInteger, NSUInteger)(m->device, m->sel[S_NEW_BUFFER_COPY], lo, len,
                                                                  TJ_MTL_STORAGE_SHARED);
        offset = (NSUInteger)-a->lo[i];
        b->host = lo;
        b->bytes = len;
        b->copy_back = a->written[i];
    }
    if (!b->buf) {
        snprintf(err->msg, sizeof err->msg, "metal: no buffer for the %zu bytes of tensor argument %u", len, i);
        return -1;
    }
    TJ_MSG(void, id, NSUInteger, NSUInteger)(enc, m->sel[S_SET_BUFFER], b->buf, offset, i);
    return 0;
}

/* Encodes, commits and waits for one dispatch. */
static int dispatch(tj_metal *m, tj_metal_pipeline *p, const tj_msl_args *a, tj_rt_error *err)
{
    bound b[TJ_MSL_MAX_TENSORS];
    memset(b, 0, sizeof b);
    id cb = TJ_MSG0(id)(m->queue, m->sel[S_COMMAND_BUFFER]);
    id enc = TJ_MSG0(id)(cb, m->sel[S_ENCODER]);
    TJ_MSG(void, id)(enc, m->sel[S_SET_PIPELINE], p->pso);
    int rc = 0;
    for (uint32_t i = 0; i < a->ntensors && !rc; i++)
        rc = bind_tensor(m, enc, a, i, &b[i], err);
    if (!rc && a->block_bytes)
        TJ_MSG(void, const void *, NSUInteger, NSUInteger)(enc, m->sel[S_SET_BYTES], a->block, a->block_bytes,
                                                           a->block_index);
    if (!rc) {
        MTLSize groups = {a->grid[0], a->grid[1], a->grid[2]}, threads = {a->threads, 1, 1};
        TJ_MSG(void, MTLSize, MTLSize)(enc, m->sel[S_DISPATCH], groups, threads);
    }
    TJ_MSG0(void)(enc, m->sel[S_END_ENCODING]);
    if (!rc) {
        TJ_MSG0(void)(cb, m->sel[S_COMMIT]);
        TJ_MSG0(void)(cb, m->sel[S_WAIT]);
        if (TJ_MSG0(NSUInteger)(cb, m->sel[S_STATUS]) != TJ_MTL_COMMAND_BUFFER_COMPLETED) {
            tj_mtl_fail(err, m, "the kernel failed", TJ_MSG0(id)(cb, m->sel[S_ERROR]));
            rc = -1;
        }
    }
    for (uint32_t i = 0; i < a->ntensors; i++) {
        if (!rc && b[i].copy_back)
            memcpy(b[i].host, TJ_MSG0(void *)(b[i].buf, m->sel[S_CONTENTS]), b[i].bytes);
        tj_mtl_release(m, b[i].buf);
    }
    return rc;
}

int tj_metal_launch(tj_metal *m, tj_metal_pipeline *p, const tj_kernel *simt, const tj_arg *args, uint32_t nargs,
                    tj_rt_error *err)
{
    if (!m || !p || !simt || !tj_array_ok(args, nargs))
        return -tj_rt_fail(err, "tj_metal_launch: NULL metal, pipeline or kernel, or NULL args with nargs > 0");
    tj_rt_error unread;
    if (!err)
        err = &unread; /* what follows always says why */
    tj_msl_args *a = malloc(sizeof *a); /* the block is 4 KiB */
    if (!a) {
        snprintf(err->msg, sizeof err->msg, "metal: out of memory");
        return -1;
    }
    int rc = 0;
    if (tj_msl_pack_args(simt, args, nargs, a)) {
        snprintf(err->msg, sizeof err->msg, "%s", tj_diag_render(simt->ctx));
        rc = -1;
    } else if (a->grid[0] && a->grid[1] && a->grid[2]) {
        void *pool = objc_autoreleasePoolPush();
        rc = dispatch(m, p, a, err);
        objc_autoreleasePoolPop(pool);
    }
    free(a);
    return rc;
}

const tj_kernel *tj_metal_compile(tj_metal *m, const tj_kernel *tile, const tj_arg *args, uint32_t nargs,
                                  tj_metal_pipeline **p, tj_rt_error *err)
{
    if (p)
        *p = NULL;
    if (!m || !tile || !p || !tj_array_ok(args, nargs)) {
        tj_rt_fail(err, "tj_metal_compile: NULL metal, kernel or p, or NULL args with nargs > 0");
        return NULL;
    }
    tj_rt_error unread;
    if (!err)
        err = &unread; /* what follows always says why */
    tj_kernel *simt = NULL;
    tj_buf msl = {0};
    if (!tj_check_args(tile, args, nargs)) {
        tj_pipeline_options o = {.lower.target = TJ_LOWER_METAL, .args = args, .nargs = nargs};
        simt = tj_kernel_clone(tile);
        if (simt && tj_pipeline_run(&simt, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_END, &o))
            simt = NULL;
    }
    if (!simt || tj_emit_msl(simt, &msl)) {
        snprintf(err->msg, sizeof err->msg, "%s", tj_diag_render(tile->ctx));
        tj_buf_free(&msl);
        return NULL;
    }
    *p = tj_metal_pipeline_get(m, msl.data, msl.len, simt->name, simt->nthreads, err);
    tj_buf_free(&msl);
    return *p ? simt : NULL;
}

int tj_metal_run(tj_metal *m, const tj_kernel *tile, const tj_arg *args, uint32_t nargs, tj_rt_error *err)
{
    tj_metal_pipeline *p;
    const tj_kernel *simt = tj_metal_compile(m, tile, args, nargs, &p, err);
    return simt ? tj_metal_launch(m, p, simt, args, nargs, err) : -1;
}

#else
typedef int tj_metal_launch_not_built; /* off macOS: metal_none.c (ISO C wants a declaration) */
#endif /* __APPLE__ || TJ_METAL_OBJC */
