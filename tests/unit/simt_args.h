/* Random arguments for the kernels of simt_kernels.h (header only): every
 * tensor parameter gets a contiguous buffer of its literal size filled with
 * random data of its dtype, steered by the parameter's name ("u_*": values
 * in [0, 1) or [0, 100); "small_*" scalars in [-12, 12]); floats mix in
 * zeros, infinities, NaN, subnormals, huge values and multiples of pi/2. */
#ifndef TJ_SIMT_ARGS_H
#define TJ_SIMT_ARGS_H

#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"

/* A float scalar argument rounded to its dtype (the ABI passes it so). */
static inline double sk_round_scalar(tj_dtype dt, double d)
{
    if (dt == TJ_DT_F32)
        return (float)d;
    if (dt == TJ_DT_F16)
        return tj_f16_to_f32(tj_f64_to_f16(d));
    if (dt == TJ_DT_BF16)
        return tj_bf16_to_f32(tj_f64_to_bf16(d));
    return d;
}

enum { SK_MAX_PARAMS = 64 };

typedef struct sk_args {
    tj_arg args[SK_MAX_PARAMS];
    void *bufs[SK_MAX_PARAMS]; /* tensor data (malloc) */
    size_t bytes[SK_MAX_PARAMS];
    uint32_t n;
} sk_args;

static inline uint64_t sk_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline int sk_prefix(const char *name, const char *p) { return name && !strncmp(name, p, strlen(p)); }

/* A random double for a float tensor: mostly moderate values, with zeros,
 * infinities, NaN, subnormals and large values mixed in. */
static inline double sk_random_float(uint64_t *rng, const char *name)
{
    double frac = (double)(sk_rand(rng) >> 11) / 9007199254740992.0;
    if (sk_prefix(name, "u_"))
        return frac;
    switch (sk_rand(rng) % 24) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return 1.0 / 0.0;
    case 3: return -1.0 / 0.0;
    case 4: return 0.0 / 0.0;
    case 5: return 1e-40 * (frac + 0.1);   /* f32 subnormal */
    case 6: return (frac - 0.5) * 1e30;
    case 7: return (double)(int)(frac * 16) - 8; /* small integers */
    case 8: return frac * 0.01;
    case 9: return (frac - 0.5) * 1e300; /* f64 only: inf in the others */
    case 10: return (double)(int64_t)(sk_rand(rng) % 2000001 - 1000000) * 1.5707963267948966; /* near k*pi/2 */
    default: return (frac - 0.5) * 16;
    }
}

typedef union sk_word {
    int64_t i;
    uint64_t u;
} sk_word;

static inline sk_word sk_random_int(uint64_t *rng, tj_dtype dt, const char *name)
{
    uint64_t r = sk_rand(rng);
    int64_t v;
    if (sk_prefix(name, "u_"))
        v = (int64_t)(r % 100);
    else if (r % 3 == 0)
        v = (int64_t)(sk_rand(rng) % 41) - 20; /* small: divisions, shifts */
    else
        v = (int64_t)sk_rand(rng);
    int bits = tj_dtype_bits(dt);
    sk_word s = {.i = v};
    if (bits < 64) { /* wrap to the dtype */
        uint64_t mask = ((uint64_t)1 << bits) - 1, top = (uint64_t)1 << (bits - 1);
        s.u &= mask;
        if (tj_dtype_is_signed(dt))
            s.u = (s.u ^ top) - top;
    }
    if (dt == TJ_DT_BOOL)
        s.i = (int64_t)(r & 1);
    return s;
}

/* Writes a random element of dtype dt at p. */
static inline void sk_random_elem(uint64_t *rng, tj_dtype dt, const char *name, unsigned char *p)
{
    int size = tj_dtype_size(dt);
    if (tj_dtype_is_float(dt)) {
        double d = sk_random_float(rng, name);
        if (dt == TJ_DT_F64) {
            memcpy(p, &d, 8);
        } else if (dt == TJ_DT_F32) {
            float f = (float)d;
            memcpy(p, &f, 4);
        } else {
            uint16_t h = dt == TJ_DT_F16 ? tj_f64_to_f16(d) : tj_f64_to_bf16(d);
            memcpy(p, &h, 2);
        }
        return;
    }
    sk_word s = sk_random_int(rng, dt, name);
    memcpy(p, &s.u, (size_t)size); /* little endian: the low bytes */
}

/* Random arguments for every parameter of k (1-D/2-D tensors of literal
 * sizes, contiguous). Returns 0, or -1 for a parameter it cannot fill. */
static inline int sk_make_args(const tj_kernel *k, uint64_t seed, sk_args *a)
{
    memset(a, 0, sizeof *a);
    uint64_t rng = seed * 2654435761u + 88172645463325252ull;
    if (k->nparams > SK_MAX_PARAMS)
        return -1;
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tj_param *p = &k->params[i];
        tj_arg *arg = &a->args[i];
        a->n++;
        if (p->rank == 0) {
            if (tj_dtype_is_float(p->dtype))
                arg->scalar.f = sk_round_scalar(p->dtype, sk_random_float(&rng, p->name));
            else if (sk_prefix(p->name, "small_"))
                arg->scalar.i = (int64_t)(sk_rand(&rng) % 25) - 12;
            else
                arg->scalar.i = sk_random_int(&rng, p->dtype, p->name).i;
            continue;
        }
        size_t n = 1;
        arg->is_tensor = 1;
        arg->tensor.dtype = p->dtype;
        arg->tensor.rank = p->rank;
        for (int d = 0; d < p->rank; d++) {
            if (p->dim_sizes[d] <= 0)
                return -1;
            arg->tensor.shape[d] = p->dim_sizes[d];
            n *= (size_t)p->dim_sizes[d];
        }
        for (int d = p->rank - 1, st = 1; d >= 0; d--) {
            arg->tensor.strides[d] = st;
            st *= (int)arg->tensor.shape[d];
        }
        a->bytes[i] = n * (size_t)tj_dtype_size(p->dtype);
        a->bufs[i] = malloc(a->bytes[i]);
        arg->tensor.data = a->bufs[i];
        for (size_t e = 0; e < n; e++)
            sk_random_elem(&rng, p->dtype, p->name, (unsigned char *)a->bufs[i] + e * (size_t)tj_dtype_size(p->dtype));
    }
    return 0;
}

static inline void sk_free_args(sk_args *a)
{
    for (uint32_t i = 0; i < a->n; i++)
        free(a->bufs[i]);
    memset(a, 0, sizeof *a);
}

/* A deep copy (own buffers). */
static inline void sk_copy_args(sk_args *dst, const sk_args *src)
{
    *dst = *src;
    for (uint32_t i = 0; i < src->n; i++)
        if (src->bufs[i]) {
            dst->bufs[i] = malloc(src->bytes[i]);
            memcpy(dst->bufs[i], src->bufs[i], src->bytes[i]);
            dst->args[i].tensor.data = dst->bufs[i];
        }
}

#endif
