/* The host side of the MSL kernel ABI: tj_msl_pack_args turns a launch's
 * arguments into what a Metal dispatch binds (tilejit/metal.h), by the
 * layout the generator shares (tj_msl_block_layout, tilejit/codegen.h). */
#include <string.h>

#include "tilejit/interp.h"
#include "tilejit/metal.h"

/* The bytes reachable from a tensor's first element: [lo, hi). */
static void extent(const tj_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t size = tj_dtype_size(t->dtype), a = 0, b = 0;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] == 0) {
            *lo = *hi = 0;
            return;
        }
        int64_t span = (t->shape[i] - 1) * t->strides[i] * size;
        if (span < 0)
            a += span;
        else
            b += span;
    }
    *lo = a;
    *hi = b + size;
}

static void put(unsigned char *block, int32_t off, const void *v, size_t n) { memcpy(block + off, v, n); }

/* A scalar argument in its dtype's bytes (integers truncated, floats
 * rounded once). */
static void put_scalar(unsigned char *block, int32_t off, tj_dtype dt, const tj_arg *a)
{
    switch (dt) {
    case TJ_DT_F32: {
        float f = (float)a->scalar.f;
        put(block, off, &f, 4);
        break;
    }
    case TJ_DT_F16: case TJ_DT_BF16: {
        uint16_t h = dt == TJ_DT_F16 ? tj_f64_to_f16(a->scalar.f) : tj_f64_to_bf16(a->scalar.f);
        put(block, off, &h, 2);
        break;
    }
    case TJ_DT_BOOL: {
        unsigned char b = a->scalar.i != 0;
        put(block, off, &b, 1);
        break;
    }
    default: { /* little endian: the low bytes */
        uint64_t u = (uint64_t)a->scalar.i;
        put(block, off, &u, (size_t)tj_dtype_size(dt));
        break;
    }
    }
}

static int pack_tensor(const tj_kernel *k, uint32_t p, const tj_tensor *t, tj_msl_args *out, const int32_t *sizes,
                       const int32_t *strides)
{
    uint32_t slot = out->ntensors++;
    out->data[slot] = t->data;
    extent(t, &out->lo[slot], &out->hi[slot]);
    for (int a = 0; a < t->rank; a++) {
        if (t->shape[a] > INT32_MAX) {
            tj_error(k->ctx, "msl: tensor '%s' has %lld elements along axis %d; the kernel takes 32-bit sizes",
                     k->params[p].name, (long long)t->shape[a], a);
            return -1;
        }
        int32_t n = (int32_t)t->shape[a];
        int64_t s = t->strides[a];
        put(out->block, sizes[a], &n, 4);
        put(out->block, strides[a], &s, 8);
    }
    return 0;
}

int tj_msl_pack_args(const tj_kernel *k, const tj_arg *args, uint32_t nargs, tj_msl_args *out)
{
    if (!k || !out)
        return -1;
    memset(out, 0, sizeof *out);
    int64_t grid[3];
    if (tj_eval_grid(k, args, nargs, grid)) /* checks the arguments too */
        return -1;
    for (int a = 0; a < 3; a++) {
        if (grid[a] > UINT32_MAX) {
            tj_error(k->ctx, "msl: grid axis %d has %lld programs; Metal takes at most 2^32 - 1", a,
                     (long long)grid[a]);
            return -1;
        }
        out->grid[a] = (uint32_t)grid[a];
    }
    out->threads = k->nthreads;
    int32_t (*sizes)[TJ_MAX_RANK] = tj_alloc(k->ctx, sizeof *sizes * (k->nparams + 1));
    int32_t (*strides)[TJ_MAX_RANK] = tj_alloc(k->ctx, sizeof *strides * (k->nparams + 1));
    int32_t *scalars = tj_alloc(k->ctx, sizeof *scalars * (k->nparams + 1));
    int bytes = tj_msl_block_layout(k, sizes, strides, scalars);
    if (bytes < 0)
        return -1;
    uint8_t *written = tj_alloc(k->ctx, k->nparams + 1);
    tj_msl_tensor_writes(k, written);
    for (uint32_t p = 0; p < k->nparams; p++) {
        const tj_param *pp = &k->params[p];
        if (pp->rank == 0) {
            put_scalar(out->block, scalars[p], pp->dtype, &args[p]);
            continue;
        }
        if (out->ntensors == TJ_MSL_MAX_TENSORS) {
            tj_error(k->ctx, "msl: more than %d tensor parameters", TJ_MSL_MAX_TENSORS);
            return -1;
        }
        out->written[out->ntensors] = written[p];
        if (pack_tensor(k, p, &args[p].tensor, out, sizes[p], strides[p]))
            return -1;
    }
    out->block_index = out->ntensors;
    out->block_bytes = (uint32_t)bytes;
    return 0;
}
