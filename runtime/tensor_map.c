/* TMA tensor maps at launch (docs/runtime.md, "Tensor maps"): a kernel
 * whose copy rings land by TMA (lower/tma.c) takes, after its parameters,
 * one CUtensorMap per map its tma_load instructions name (tj_tensor_maps),
 * encoded here by the driver's cuTensorMapEncodeTiled from the tensor
 * argument: 2-D, the contiguous axis first, boxes of cols x rows, the
 * swizzle of its shared-memory rows, zeros outside the tensor; or, for
 * boxes of two blocks of rows (`pair`, lower/tma.c), 3-D (column, row of
 * a block, block) with element stride `pair` along the blocks, so one box
 * brings blocks b and b + pair, one after the other. Encoding is
 * host work of well under a microsecond, done every launch (the pointer
 * may change from one to the next). */
#include <string.h>

#include "runtime/cuda_internal.h"

enum {
    MAP_F16 = 6, MAP_F32 = 7, MAP_BF16 = 9,      /* CUtensorMapDataType */
    SWIZZLE_32 = 1, SWIZZLE_64 = 2, SWIZZLE_128 = 3, /* CUtensorMapSwizzle */
    L2_256B = 3,                                 /* CUtensorMapL2promotion */
    MAP_ALIGN = 64,
};

static int map_dtype(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_F16: return MAP_F16;
    case TJ_DT_BF16: return MAP_BF16;
    case TJ_DT_F32: return MAP_F32;
    default: return -1;
    }
}

static int encode(const tj_cuda *cu, const tj_kernel *k, const tj_tensor_map_desc *m, const tj_arg *a,
                  tj_cu_tensor_map *out, tj_rt_error *err)
{
    const tj_tensor *t = &a->tensor;
    const char *name = k->params[m->param].name;
    int dt = map_dtype(t->dtype), size = tj_dtype_size(t->dtype);
    if (!a->is_tensor || t->rank != 2 || dt < 0)
        return tj_rt_fail(err, "kernel '%s', parameter '%s': a TMA tensor map needs a rank-2 f16, bf16 or f32 "
                          "tensor", k->name, name);
    /* a row stride of 0 (a broadcast view) passes the kernel's facts (0 is a
     * multiple of 16) but no tensor map can repeat a row; over one row the
     * stride is never stepped (the facts say so too) */
    int rows = t->shape[0] > 1, bad_row_stride = t->strides[0] <= 0 || (t->strides[0] * size) % 16;
    if (((uintptr_t)t->data & 15) || t->strides[1] != 1 || (rows && bad_row_stride))
        return tj_rt_fail(err, "kernel '%s', parameter '%s': a TMA tensor map needs 16-byte aligned data, unit "
                          "inner stride and a positive row stride of a multiple of 16 bytes (row stride %lld)",
                          k->name, name, (long long)t->strides[0]);
    /* an empty axis: no copy of the kernel reads it (its loop runs no
     * iteration), but the driver encodes no zero size */
    uint64_t dims[3] = {t->shape[1] ? (uint64_t)t->shape[1] : 1, t->shape[0] ? (uint64_t)t->shape[0] : 1, 1};
    /* one row: its stride is never used, but the driver wants a multiple of 16 */
    uint64_t row_bytes = rows ? (uint64_t)t->strides[0] * (uint64_t)size : (dims[0] * (uint64_t)size + 15) / 16 * 16;
    uint64_t strides[2] = {row_bytes, 16};
    uint32_t box[3] = {m->cols, m->rows, 1}, steps[3] = {1, 1, 1}, rank = 2;
    if (m->pair) { /* (column, row of a block, block): a box takes blocks b and b + pair */
        if (m->rows == 0 || t->shape[0] % m->rows)
            return tj_rt_fail(err, "kernel '%s', parameter '%s': its TMA boxes take blocks of %u rows, and %lld rows "
                              "are no whole number of them", k->name, name, m->rows, (long long)t->shape[0]);
        dims[1] = m->rows;
        dims[2] = t->shape[0] ? (uint64_t)t->shape[0] / m->rows : 1;
        strides[1] = strides[0] * m->rows;
        box[2] = 2 * m->pair;
        steps[2] = m->pair;
        rank = 3;
    }
    int swizzle = m->swizzle == 128 ? SWIZZLE_128 : m->swizzle == 64 ? SWIZZLE_64 : SWIZZLE_32;
    CUresult r =
        cu->api.TensorMapEncodeTiled(out, dt, rank, t->data, dims, strides, box, steps, 0, swizzle, L2_256B, 0);
    return tj_cu_check(&cu->api, r, "cuTensorMapEncodeTiled", err,
                       "encoding the tensor map of parameter '%s' of kernel '%s' (%lld x %lld, boxes %u x %u)", name,
                       k->name, (long long)t->shape[0], (long long)t->shape[1], m->rows, m->cols);
}

int tj_cu_put_tensor_maps(const tj_cuda *cu, const tj_kernel *k, const tj_tensor_map_desc *maps, int nmaps,
                          const tj_arg *args, tj_cuda_params *p, tj_rt_error *err)
{
    for (int i = 0; i < nmaps; i++) {
        tj_cu_tensor_map m;
        if (maps[i].param >= k->nparams)
            return tj_rt_fail(err, "kernel '%s': a tensor map of parameter %u, which it does not have", k->name,
                              maps[i].param);
        if (encode(cu, k, &maps[i], &args[maps[i].param], &m, err))
            return 1;
        if (tj_cu_put_bytes(p, &m, sizeof m, MAP_ALIGN))
            return tj_rt_fail(err, "kernel '%s': its parameters and tensor maps need more than %d bytes", k->name,
                              TJ_CUDA_PARAM_BYTES);
    }
    return 0;
}
