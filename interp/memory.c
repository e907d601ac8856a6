/* load, store and atomics through a view (view.c computed its offsets).
 *
 * An element is touched only when it is in the tensor's bounds and its
 * mask is set. Masked-off or out-of-bounds loads give `other` (absent: 0)
 * and atomics give 0. Stores and atomics go in row-major order, so among
 * duplicate targets the last one wins. A mask, `other` or stored value may
 * be one element (a scalar) or one per element. */
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"

/* How memory holds each dtype and how a slot holds it: X(dtype, C type,
 * slot field, slot value from the memory value v, memory value from the
 * slot s). Tensors hold their own dtype; bool is one byte, nonzero true.
 * Accesses go through memcpy: tensor data need not be aligned. */
#define MEM_TYPES(X)                                                   \
    X(TJ_DT_BOOL, uint8_t, i, v != 0, s.i != 0)                        \
    X(TJ_DT_I8, int8_t, i, v, s.i)                                     \
    X(TJ_DT_I16, int16_t, i, v, s.i)                                   \
    X(TJ_DT_I32, int32_t, i, v, s.i)                                   \
    X(TJ_DT_I64, int64_t, i, v, s.i)                                   \
    X(TJ_DT_U8, uint8_t, u, v, s.u)                                    \
    X(TJ_DT_U16, uint16_t, u, v, s.u)                                  \
    X(TJ_DT_U32, uint32_t, u, v, s.u)                                  \
    X(TJ_DT_U64, uint64_t, u, v, s.u)                                  \
    X(TJ_DT_F16, uint16_t, f, tj_f16_to_f32(v), tj_f64_to_f16(s.f))    \
    X(TJ_DT_BF16, uint16_t, f, tj_bf16_to_f32(v), tj_f64_to_bf16(s.f)) \
    X(TJ_DT_F32, float, f, v, s.f)                                     \
    X(TJ_DT_F64, double, f, v, s.f)

tj_slot tj_mem_read(tj_dtype dt, const void *mem, int64_t off)
{
    const char *base = mem;
    tj_slot s = {.u = 0};
    switch (dt) {
#define READ(D, T, FIELD, IN, OUT)                                 \
    case D: {                                                      \
        T v;                                                       \
        memcpy(&v, base + off * (int64_t)sizeof(T), sizeof v);     \
        s.FIELD = IN;                                              \
        break;                                                     \
    }
        MEM_TYPES(READ)
#undef READ
    default: break;
    }
    return s;
}

void tj_mem_write(tj_dtype dt, void *mem, int64_t off, tj_slot s)
{
    char *base = mem;
    switch (dt) {
#define WRITE(D, T, FIELD, IN, OUT)                                \
    case D: {                                                      \
        T v = (T)(OUT);                                            \
        memcpy(base + off * (int64_t)sizeof(T), &v, sizeof v);     \
        break;                                                     \
    }
        MEM_TYPES(WRITE)
#undef WRITE
    default: break;
    }
}

/* A per-element operand (mask, other, value): one element (step 0) or
 * n (step 1); absent optional ones have no data. */
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
    if (!x->data || (x->n != n && x->n != 1) || x->dt != dt)
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

static inline int skipped(const int64_t *off, elem_src mask, uint32_t i)
{
    return off[i] == TJ_OOB || (mask.data && !mask.data[i * mask.step].i);
}

/* The loops of load and store, one per dtype (no dispatch per element). */
static void load_elems(tj_dtype dt, tj_slot *r, uint32_t n, const char *base, const int64_t *off, elem_src mask,
                       elem_src other)
{
    const tj_slot zero = {.u = 0};
    switch (dt) {
#define LOAD(D, T, FIELD, IN, OUT)                                          \
    case D:                                                                 \
        for (uint32_t i = 0; i < n; i++) {                                  \
            if (skipped(off, mask, i)) {                                    \
                r[i] = other.data ? other.data[i * other.step] : zero;      \
                continue;                                                   \
            }                                                               \
            T v;                                                            \
            memcpy(&v, base + off[i] * (int64_t)sizeof(T), sizeof v);       \
            r[i].FIELD = IN;                                                \
        }                                                                   \
        break;
        MEM_TYPES(LOAD)
#undef LOAD
    default: break;
    }
}

static void store_elems(tj_dtype dt, const tj_slot *x, uint32_t step, uint32_t n, char *base, const int64_t *off,
                        elem_src mask)
{
    switch (dt) {
#define STORE(D, T, FIELD, IN, OUT)                                         \
    case D:                                                                 \
        for (uint32_t i = 0; i < n; i++) {                                  \
            if (skipped(off, mask, i))                                      \
                continue;                                                   \
            tj_slot s = x[i * step];                                        \
            T v = (T)(OUT);                                                 \
            memcpy(base + off[i] * (int64_t)sizeof(T), &v, sizeof v);       \
        }                                                                   \
        break;
        MEM_TYPES(STORE)
#undef STORE
    default: break;
    }
}

int tj_exec_load(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r);
    const tj_rval *v = view_operand(st, r, rv->n, rv->dt);
    elem_src mask, other;
    if (!v || elem_operand(st, r, 1, rv->n, TJ_DT_BOOL, &mask) ||
        elem_operand(st, r, 2, rv->n, rv->dt, &other))
        return -1;
    load_elems(rv->dt, rv->data, rv->n, v->tensor->data, v->off, mask, other);
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* store(distinct = true): a place written twice breaks the promise. */
static int check_distinct(tj_interp *st, tj_ref r, const tj_rval *v, elem_src mask)
{
    int64_t *off = malloc(sizeof *off * (v->n + 1));
    uint32_t n = 0;
    if (!off) {
        tj_error_at(st->ctx, tj_in(st, r)->loc, "out of memory checking the places of store(distinct = true)");
        return -1;
    }
    for (uint32_t i = 0; i < v->n; i++)
        if (!skipped(v->off, mask, i))
            off[n++] = v->off[i];
    qsort(off, n, sizeof *off, by_offset);
    uint32_t i = 1;
    while (i < n && off[i] != off[i - 1])
        i++;
    int64_t twice = i < n ? off[i] : 0;
    free(off);
    if (i < n) {
        tj_error_at(st->ctx, tj_in(st, r)->loc, "store(distinct = true) writes element %lld of the tensor twice in "
                    "program (%lld, %lld, %lld)", (long long)twice, (long long)st->pid[0], (long long)st->pid[1],
                    (long long)st->pid[2]);
        return -1;
    }
    return 0;
}

int tj_exec_store(tj_interp *st, tj_ref r)
{
    tj_rval *v0 = tj_opnd(st, r, 0);
    const tj_rval *v = view_operand(st, r, v0->n, v0->dt);
    elem_src x, mask;
    if (!v || elem_operand(st, r, 1, v->n, v->dt, &x) || elem_operand(st, r, 2, v->n, TJ_DT_BOOL, &mask))
        return -1;
    if (tj_in(st, r)->flags & TJ_STORE_DISTINCT && check_distinct(st, r, v, mask))
        return -1;
    store_elems(v->dt, x.data, x.step, v->n, v->tensor->data, v->off, mask);
    st->writes++;
    return 0;
}

/* Read, combine with the elementwise op's rules (add rounds like add,
 * max/min propagate NaN), write back, one element after another; the
 * results are the old values. */
int tj_exec_atomic(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r), *v0 = tj_opnd(st, r, 0);
    const tj_rval *v = view_operand(st, r, v0->n, v0->dt);
    elem_src x, mask;
    if (!v || elem_operand(st, r, 1, v->n, v->dt, &x) || elem_operand(st, r, 2, v->n, TJ_DT_BOOL, &mask))
        return -1;
    if (rv->data && rv->n != v->n)
        return tj_interp_bad_ir(st, r, "result does not fit the view");
    st->writes++;
    tj_op op = in->op == TJ_OP_ATOMIC_ADD ? TJ_OP_ADD : in->op == TJ_OP_ATOMIC_MAX ? TJ_OP_MAX : TJ_OP_MIN;
    char *base = v->tensor->data;
    for (uint32_t i = 0; i < v->n; i++) {
        tj_slot old = {.u = 0}, now;
        if (!skipped(v->off, mask, i)) {
            old = tj_mem_read(v->dt, base, v->off[i]);
            if (tj_binary_slots(op, v->dt, &now, &old, &x.data[i * x.step], 1))
                return tj_interp_bad_ir(st, r, "op does not apply to this dtype");
            tj_mem_write(v->dt, base, v->off[i], now);
        }
        if (rv->data)
            rv->data[i] = old;
    }
    return 0;
}
