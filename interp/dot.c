/* dot: [M, K] x [K, N] + [M, N], or batched [B, M, K] x [B, K, N] + [B, M, N].
 * The accumulation runs in the result's class: f32 (f16/bf16/f32 inputs,
 * and tf32 on GPUs is computed in full f32 here), f64, or wrapping
 * integers (i8 inputs into i32). Each output sums its products in k order. */
#include "interp/interp.h"

typedef struct dot_dims {
    uint32_t batch, m, k, n;
} dot_dims;

/* The shapes, or batch 0 when they do not fit together. */
static dot_dims dims_of(const tj_type_info *a, const tj_type_info *b, const tj_type_info *r)
{
    dot_dims d = {0, 0, 0, 0};
    int rank = a->rank;
    if ((rank != 2 && rank != 3) || b->rank != rank || r->rank != rank)
        return d;
    int batch = rank == 3 ? a->shape[0] : 1;
    if (rank == 3 && (b->shape[0] != batch || r->shape[0] != batch))
        return d;
    const int32_t *as = a->shape + rank - 2, *bs = b->shape + rank - 2, *rs = r->shape + rank - 2;
    if (as[1] != bs[0] || rs[0] != as[0] || rs[1] != bs[1])
        return d;
    return (dot_dims){(uint32_t)batch, (uint32_t)as[0], (uint32_t)as[1], (uint32_t)bs[1]};
}

size_t tj_dot_work_size(const tj_interp *st, tj_ref r)
{
    dot_dims d = dims_of(tj_opnd(st, r, 0)->ti, tj_opnd(st, r, 1)->ti, tj_val(st, r)->ti);
    if (tj_dtype_class(tj_val(st, r)->dt) != TJ_CL_F32)
        return 0;
    return sizeof(float) * ((size_t)d.m * d.k + (size_t)d.k * d.n + (size_t)d.m * d.n);
}

/* One batch in float: the operands are converted once, then c += a * b. */
static void dot_f32(const tj_slot *a, const tj_slot *b, tj_slot *c, dot_dims d, float *work)
{
    float *fa = work, *fb = fa + (size_t)d.m * d.k, *fc = fb + (size_t)d.k * d.n;
    for (size_t i = 0; i < (size_t)d.m * d.k; i++)
        fa[i] = (float)a[i].f;
    for (size_t i = 0; i < (size_t)d.k * d.n; i++)
        fb[i] = (float)b[i].f;
    for (size_t i = 0; i < (size_t)d.m * d.n; i++)
        fc[i] = (float)c[i].f;
    for (uint32_t m = 0; m < d.m; m++)
        for (uint32_t k = 0; k < d.k; k++) {
            float x = fa[(size_t)m * d.k + k];
            float *row = fc + (size_t)m * d.n;
            const float *brow = fb + (size_t)k * d.n;
            for (uint32_t n = 0; n < d.n; n++)
                row[n] += x * brow[n];
        }
    for (size_t i = 0; i < (size_t)d.m * d.n; i++)
        c[i].f = fc[i];
}

static void dot_f64(const tj_slot *a, const tj_slot *b, tj_slot *c, dot_dims d)
{
    for (uint32_t m = 0; m < d.m; m++)
        for (uint32_t k = 0; k < d.k; k++) {
            double x = a[(size_t)m * d.k + k].f;
            for (uint32_t n = 0; n < d.n; n++)
                c[(size_t)m * d.n + n].f += x * b[(size_t)k * d.n + n].f;
        }
}

/* Integers: 64-bit wrapping products and sums; sign-extended slots make
 * this right for signed and unsigned alike once wrapped to the result. */
static void dot_int(const tj_slot *a, const tj_slot *b, tj_slot *c, dot_dims d)
{
    for (uint32_t m = 0; m < d.m; m++)
        for (uint32_t k = 0; k < d.k; k++) {
            uint64_t x = a[(size_t)m * d.k + k].u;
            for (uint32_t n = 0; n < d.n; n++)
                c[(size_t)m * d.n + n].u += x * b[(size_t)k * d.n + n].u;
        }
}

int tj_exec_dot(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0), *b = tj_opnd(st, r, 1);
    const tj_rval *acc = in->args[2] ? tj_opnd(st, r, 2) : NULL;
    dot_dims d = dims_of(a->ti, b->ti, rv->ti);
    if (!d.batch || (acc && acc->n != rv->n))
        return tj_interp_bad_ir(st, r, "operand shapes do not fit a matrix product");
    for (uint32_t i = 0; i < rv->n; i++)
        rv->data[i] = acc ? acc->data[i] : (tj_slot){.u = 0}; /* 0 is 0.0 too */
    size_t sa = (size_t)d.m * d.k, sb = (size_t)d.k * d.n, sc = (size_t)d.m * d.n;
    for (uint32_t i = 0; i < d.batch; i++) {
        const tj_slot *pa = a->data + i * sa, *pb = b->data + i * sb;
        tj_slot *pc = rv->data + i * sc;
        switch (tj_dtype_class(rv->dt)) {
        case TJ_CL_F32: dot_f32(pa, pb, pc, d, rv->work); break;
        case TJ_CL_F64: dot_f64(pa, pb, pc, d); break;
        default: dot_int(pa, pb, pc, d); break;
        }
    }
    tj_round_slots(rv->dt, rv->data, rv->n);
    return 0;
}
