/* load, store and atomics through a view (view.c computed its offsets).
 *
 * An element is touched only when it is in the tensor's bounds and its
 * mask is set. Masked-off or out-of-bounds loads give `other` (absent: 0)
 * and atomics give 0. Stores and atomics go in row-major order, so among
 * duplicate targets the last one wins. A mask, `other` or stored value may
 * be one element (a scalar) or one per element. */
#include <string.h>

#include "interp/interp.h"

/* Tensors hold their own dtype; bool is one byte, nonzero true. memcpy:
 * tensor data need not be aligned. */
static inline tj_slot mem_read(tj_dtype dt, const char *base, int64_t off)
{
    const char *p = base + off * tj_dtype_size(dt);
    tj_slot s = {.u = 0};
    switch (dt) {
#define READ(D, T, FIELD, CONV) \
    case D: { T v; memcpy(&v, p, sizeof v); s.FIELD = CONV; break; }
    READ(TJ_DT_BOOL, uint8_t, i, v != 0)
    READ(TJ_DT_I8, int8_t, i, v)
    READ(TJ_DT_I16, int16_t, i, v)
    READ(TJ_DT_I32, int32_t, i, v)
    READ(TJ_DT_I64, int64_t, i, v)
    READ(TJ_DT_U8, uint8_t, u, v)
    READ(TJ_DT_U16, uint16_t, u, v)
    READ(TJ_DT_U32, uint32_t, u, v)
    READ(TJ_DT_U64, uint64_t, u, v)
    READ(TJ_DT_F16, uint16_t, f, tj_f16_to_f32(v))
    READ(TJ_DT_BF16, uint16_t, f, tj_bf16_to_f32(v))
    READ(TJ_DT_F32, float, f, v)
    READ(TJ_DT_F64, double, f, v)
#undef READ
    default: break;
    }
    return s;
}

static inline void mem_write(tj_dtype dt, char *base, int64_t off, tj_slot s)
{
    char *p = base + off * tj_dtype_size(dt);
    switch (dt) {
#define WRITE(D, T, EXPR) \
    case D: { T v = (T)(EXPR); memcpy(p, &v, sizeof v); break; }
    WRITE(TJ_DT_BOOL, uint8_t, s.i != 0)
    WRITE(TJ_DT_I8, int8_t, s.i)
    WRITE(TJ_DT_I16, int16_t, s.i)
    WRITE(TJ_DT_I32, int32_t, s.i)
    WRITE(TJ_DT_I64, int64_t, s.i)
    WRITE(TJ_DT_U8, uint8_t, s.u)
    WRITE(TJ_DT_U16, uint16_t, s.u)
    WRITE(TJ_DT_U32, uint32_t, s.u)
    WRITE(TJ_DT_U64, uint64_t, s.u)
    WRITE(TJ_DT_F16, uint16_t, tj_f64_to_f16(s.f))
    WRITE(TJ_DT_BF16, uint16_t, tj_f64_to_bf16(s.f))
    WRITE(TJ_DT_F32, float, s.f)
    WRITE(TJ_DT_F64, double, s.f)
#undef WRITE
    default: break;
    }
}

/* An optional per-element operand: one element (step 0) or n (step 1). */
typedef struct elem_src {
    const tj_slot *data; /* NULL: absent */
    uint32_t step;
} elem_src;

static int elem_operand(const tj_interp *st, tj_ref r, uint32_t a, uint32_t n, tj_dtype dt, elem_src *out)
{
    *out = (elem_src){NULL, 0};
    if (!tj_in(st, r)->args[a])
        return 0;
    const tj_rval *x = tj_opnd(st, r, a);
    if (!x->data || (x->n != n && x->n != 1) || (dt != TJ_DT_INVALID && x->dt != dt))
        return tj_interp_bad_ir(st, r, "operand does not fit the view");
    *out = (elem_src){x->data, x->n == n ? 1u : 0u};
    return 0;
}

/* The view operand, checked against the element count and dtype. */
static const tj_rval *view_operand(const tj_interp *st, tj_ref r, uint32_t n, tj_dtype dt)
{
    const tj_rval *v = tj_opnd(st, r, 0);
    if (!v->off || !v->tensor || v->n != n || v->tensor->dtype != dt) {
        tj_interp_bad_ir(st, r, "view does not fit the value");
        return NULL;
    }
    return v;
}

static inline int skipped(const tj_rval *v, elem_src mask, uint32_t i)
{
    return v->off[i] == TJ_OOB || (mask.data && !mask.data[i * mask.step].i);
}

int tj_exec_load(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r);
    const tj_rval *v = view_operand(st, r, rv->n, rv->dt);
    elem_src mask, other;
    if (!v || elem_operand(st, r, 1, rv->n, TJ_DT_BOOL, &mask) ||
        elem_operand(st, r, 2, rv->n, rv->dt, &other))
        return -1;
    const tj_slot zero = {.u = 0};
    const char *base = v->tensor->data;
    for (uint32_t i = 0; i < rv->n; i++)
        rv->data[i] = skipped(v, mask, i) ? (other.data ? other.data[i * other.step] : zero)
                                          : mem_read(rv->dt, base, v->off[i]);
    return 0;
}

int tj_exec_store(tj_interp *st, tj_ref r)
{
    tj_rval *v0 = tj_opnd(st, r, 0);
    const tj_rval *v = view_operand(st, r, v0->n, v0->dt);
    elem_src x, mask;
    if (!v || elem_operand(st, r, 1, v->n, v->dt, &x) || elem_operand(st, r, 2, v->n, TJ_DT_BOOL, &mask))
        return -1;
    if (!x.data)
        return tj_interp_bad_ir(st, r, "no value to store");
    char *base = v->tensor->data;
    for (uint32_t i = 0; i < v->n; i++)
        if (!skipped(v, mask, i))
            mem_write(v->dt, base, v->off[i], x.data[i * x.step]);
    return 0;
}

/* Read, combine, write back, one element after another; the results are
 * the old values. */
int tj_exec_atomic(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r), *v0 = tj_opnd(st, r, 0);
    const tj_rval *v = view_operand(st, r, v0->n, v0->dt);
    elem_src x, mask;
    if (!v || elem_operand(st, r, 1, v->n, v->dt, &x) || elem_operand(st, r, 2, v->n, TJ_DT_BOOL, &mask))
        return -1;
    if (!x.data)
        return tj_interp_bad_ir(st, r, "no value to combine");
    if (rv->data && rv->n != v->n)
        return tj_interp_bad_ir(st, r, "result does not fit the view");
    tj_op op = in->op == TJ_OP_ATOMIC_ADD ? TJ_OP_ADD : in->op == TJ_OP_ATOMIC_MAX ? TJ_OP_MAX : TJ_OP_MIN;
    char *base = v->tensor->data;
    for (uint32_t i = 0; i < v->n; i++) {
        tj_slot old = {.u = 0}, now;
        if (!skipped(v, mask, i)) {
            old = mem_read(v->dt, base, v->off[i]);
            if (tj_binary_slots(op, v->dt, &now, &old, &x.data[i * x.step], 1))
                return tj_interp_bad_ir(st, r, "op does not apply to this dtype");
            mem_write(v->dt, base, v->off[i], now);
        }
        if (rv->data)
            rv->data[i] = old;
    }
    return 0;
}
