/* tj_check_args: the arguments of a launch against the kernel's parameters.
 * Every problem is reported (naming the parameter), not only the first.
 * Passing here is what makes running safe: dims fit in i32, every
 * in-bounds element offset fits comfortably in int64, and a non-empty
 * tensor has memory. */
#include <string.h>

#include "tilejit/args.h"

/* In-bounds offsets stay below 2^60 bytes from the data pointer. */
#define SPAN_LIMIT_BYTES ((int64_t)1 << 60)

/* "f32[M, 128]" or "i32": the parameter as declared. */
static const char *param_str(tj_ctx *c, const tj_param *p)
{
    tj_buf b = {0};
    tj_buf_printf(&b, "%s", tj_dtype_name(p->dtype));
    for (int d = 0; d < p->rank; d++) {
        tj_buf_printf(&b, "%s", d ? ", " : "[");
        if (p->dim_names[d])
            tj_buf_printf(&b, "%s", p->dim_names[d]);
        else
            tj_buf_printf(&b, "%lld", (long long)p->dim_sizes[d]);
    }
    tj_buf_printf(&b, "%s", p->rank ? "]" : "");
    const char *s = tj_strndup(c, b.data ? b.data : "", b.len);
    tj_buf_free(&b);
    return s;
}

static int scalar_fits(tj_dtype dt, int64_t v)
{
    int bits = tj_dtype_bits(dt);
    if (tj_dtype_is_float(dt) || bits >= 64)
        return 1;
    int64_t top = (int64_t)1 << bits;
    return tj_dtype_is_signed(dt) ? v >= -top / 2 && v < top / 2 : v >= 0 && v < top;
}

static int check_scalar(const tj_kernel *k, const tj_param *p, const tj_arg *a)
{
    if (a->is_tensor) {
        tj_error(k->ctx, "argument '%s': expected a scalar %s, got a tensor", p->name, tj_dtype_name(p->dtype));
        return -1;
    }
    if (!scalar_fits(p->dtype, a->scalar.i)) {
        tj_error(k->ctx, "argument '%s': %lld does not fit in %s", p->name, (long long)a->scalar.i,
                 tj_dtype_name(p->dtype));
        return -1;
    }
    return 0;
}

/* The first axis before (i, d) that binds dim name `name`, if any. */
static int find_binding(const tj_kernel *k, const tj_arg *args, uint32_t i, int d, const char *name,
                        uint32_t *pi, int *pd)
{
    for (uint32_t j = 0; j <= i; j++) {
        const tj_param *q = &k->params[j];
        if (!args[j].is_tensor || args[j].tensor.rank != q->rank)
            continue; /* reported on its own */
        for (int e = 0; e < q->rank && (j < i || e < d); e++)
            if (q->dim_names[e] && !strcmp(q->dim_names[e], name)) {
                *pi = j;
                *pd = e;
                return 1;
            }
    }
    return 0;
}

static int check_dim(const tj_kernel *k, const tj_arg *args, uint32_t i, int d)
{
    const tj_param *p = &k->params[i];
    int64_t size = args[i].tensor.shape[d];
    const char *name = p->dim_names[d];
    uint32_t j;
    int e;
    if (size < 0 || size > INT32_MAX) {
        tj_error(k->ctx, "argument '%s': dim %d is %lld; sizes must be in [0, 2^31)", p->name, d, (long long)size);
        return -1;
    }
    if (!name && p->dim_sizes[d] >= 0 && size != p->dim_sizes[d]) {
        tj_error(k->ctx, "argument '%s': dim %d is %lld, expected %lld", p->name, d, (long long)size,
                 (long long)p->dim_sizes[d]);
        return -1;
    }
    if (name && find_binding(k, args, i, d, name, &j, &e) && args[j].tensor.shape[e] != size) {
        if (j == i)
            tj_error(k->ctx, "argument '%s': dim %s is %lld at axis %d but %lld at axis %d", p->name, name,
                     (long long)size, d, (long long)args[j].tensor.shape[e], e);
        else
            tj_error(k->ctx, "argument '%s': dim %s is %lld here but %lld in argument '%s'", p->name, name,
                     (long long)size, (long long)args[j].tensor.shape[e], k->params[j].name);
        return -1;
    }
    return 0;
}

/* Memory: the farthest in-bounds element must stay within
 * SPAN_LIMIT_BYTES, so offset arithmetic cannot overflow (checked for
 * empty tensors too: their other axes still index), and a non-empty
 * tensor needs data. */
static int check_memory(const tj_kernel *k, const tj_param *p, const tj_tensor *t)
{
    int64_t limit = SPAN_LIMIT_BYTES / tj_dtype_size(t->dtype), span = 0;
    int empty = 0;
    for (int d = 0; d < t->rank; d++) {
        int64_t s = t->strides[d], reach = t->shape[d] > 0 ? t->shape[d] - 1 : 0;
        empty |= t->shape[d] == 0;
        if (reach && (s < -limit || s > limit || (s < 0 ? -s : s) > (limit - span) / reach)) {
            tj_error(k->ctx, "argument '%s': stride %lld of dim %d reaches beyond 2^60 bytes", p->name,
                     (long long)s, d);
            return -1;
        }
        span += reach * (s < 0 ? -s : s);
    }
    if (!empty && !t->data) {
        tj_error(k->ctx, "argument '%s': data is NULL", p->name);
        return -1;
    }
    return 0;
}

static int check_tensor(const tj_kernel *k, const tj_arg *args, uint32_t i)
{
    const tj_param *p = &k->params[i];
    const tj_tensor *t = &args[i].tensor;
    if (!args[i].is_tensor) {
        tj_error(k->ctx, "argument '%s': expected a tensor %s, got a scalar", p->name, param_str(k->ctx, p));
        return -1;
    }
    if (tj_dtype_size(p->dtype) <= 0) {
        tj_error(k->ctx, "kernel '%s': parameter '%s' has no dtype", k->name, p->name);
        return -1;
    }
    if (t->dtype != p->dtype) {
        tj_error(k->ctx, "argument '%s': dtype is %s, expected %s", p->name, tj_dtype_name(t->dtype),
                 param_str(k->ctx, p));
        return -1;
    }
    if (t->rank != p->rank) {
        tj_error(k->ctx, "argument '%s': rank is %d, expected %d (%s)", p->name, t->rank, p->rank,
                 param_str(k->ctx, p));
        return -1;
    }
    int bad = 0;
    for (int d = 0; d < p->rank; d++)
        bad |= check_dim(k, args, i, d);
    return bad || check_memory(k, p, t) ? -1 : 0;
}

/* Dim names the kernel was specialized on must have those sizes. */
static int check_spec(const tj_kernel *k, const tj_arg *args)
{
    int bad = 0;
    for (uint32_t s = 0; s < k->nspec; s++)
        for (uint32_t i = 0; i < k->nparams; i++) {
            const tj_param *p = &k->params[i];
            for (int d = 0; d < p->rank; d++)
                if (p->dim_names[d] && !strcmp(p->dim_names[d], k->spec[s].name) &&
                    args[i].tensor.shape[d] != k->spec[s].value) {
                    tj_error(k->ctx, "argument '%s': dim %s is %lld, but the kernel was specialized for %s = %lld",
                             p->name, p->dim_names[d], (long long)args[i].tensor.shape[d], k->spec[s].name,
                             (long long)k->spec[s].value);
                    bad = 1;
                    d = p->rank; /* one message per argument and name */
                }
        }
    return bad ? -1 : 0;
}

int tj_check_args(const tj_kernel *k, const tj_arg *args, uint32_t nargs)
{
    if (!k)
        return -1;
    if (nargs != k->nparams || (nargs && !args)) {
        tj_error(k->ctx, "kernel '%s' takes %u argument%s, %u given", k->name, k->nparams,
                 k->nparams == 1 ? "" : "s", args ? nargs : 0);
        return -1;
    }
    int bad = 0;
    for (uint32_t i = 0; i < nargs; i++) {
        const tj_param *p = &k->params[i];
        if (p->rank < 0 || p->rank > TJ_MAX_RANK) {
            tj_error(k->ctx, "kernel '%s': parameter '%s' has rank %d", k->name, p->name, p->rank);
            bad = 1;
        } else {
            bad |= p->rank ? check_tensor(k, args, i) : check_scalar(k, p, &args[i]);
        }
    }
    return bad || check_spec(k, args) ? -1 : 0;
}
