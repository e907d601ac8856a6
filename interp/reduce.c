/* Reductions (sum, prod, max, min) and argmax/argmin along one axis, or
 * over the whole tile (axis -1). f16/bf16 accumulate in f32; max/min
 * propagate NaN; argmax/argmin give the first index of the extreme, NaN
 * counting as the maximum. Accumulation runs in index order. */
#include "interp/interp.h"

tj_lines tj_split_axis(const tj_type_info *ti, int64_t axis)
{
    tj_lines l = {1, 1, 1};
    for (int a = 0; a < ti->rank; a++) {
        uint32_t s = (uint32_t)ti->shape[a];
        if (axis < 0)
            l.len *= s;
        else if (a < axis)
            l.outer *= s;
        else if (a == axis)
            l.len = s;
        else
            l.inner *= s;
    }
    return l;
}

/* For every line of the operand: acc = first element, then
 * acc = COMBINE(acc, v) for the others; the line's result is acc. */
#define EACH_LINE(T, LOAD, FIELD, COMBINE)                                        \
    {                                                                             \
    for (uint32_t o = 0; o < l.outer; o++)                                        \
        for (uint32_t in = 0; in < l.inner; in++) {                               \
            const tj_slot *p = x + (size_t)o * l.len * l.inner + in;              \
            T acc = LOAD(p[0]);                                                   \
            for (uint32_t j = 1; j < l.len; j++) {                                \
                T v = LOAD(p[(size_t)j * l.inner]);                               \
                acc = COMBINE;                                                    \
            }                                                                     \
            r[(size_t)o * l.inner + in].FIELD = acc;                              \
        }                                                                         \
    return 0;                                                                     \
    }

static int reduce_f32(tj_op op, tj_slot *r, const tj_slot *x, tj_lines l)
{
    switch (op) {
    case TJ_OP_REDUCE_SUM: EACH_LINE(float, TJ_AS_F32, f, acc + v);
    case TJ_OP_REDUCE_PROD: EACH_LINE(float, TJ_AS_F32, f, acc * v);
    case TJ_OP_REDUCE_MAX: EACH_LINE(float, TJ_AS_F32, f, tj_max_f(acc, v));
    default: EACH_LINE(float, TJ_AS_F32, f, tj_min_f(acc, v));
    }
}

static int reduce_f64(tj_op op, tj_slot *r, const tj_slot *x, tj_lines l)
{
    switch (op) {
    case TJ_OP_REDUCE_SUM: EACH_LINE(double, TJ_AS_F64, f, acc + v);
    case TJ_OP_REDUCE_PROD: EACH_LINE(double, TJ_AS_F64, f, acc * v);
    case TJ_OP_REDUCE_MAX: EACH_LINE(double, TJ_AS_F64, f, tj_max_d(acc, v));
    default: EACH_LINE(double, TJ_AS_F64, f, tj_min_d(acc, v));
    }
}

static int reduce_int(tj_op op, int sign, tj_slot *r, const tj_slot *x, tj_lines l)
{
    switch (op) {
    case TJ_OP_REDUCE_SUM: EACH_LINE(uint64_t, TJ_AS_U64, u, acc + v);
    case TJ_OP_REDUCE_PROD: EACH_LINE(uint64_t, TJ_AS_U64, u, acc * v);
    default: break;
    }
    int max = op == TJ_OP_REDUCE_MAX;
    if (sign)
        EACH_LINE(int64_t, TJ_AS_I64, i, (max ? v > acc : v < acc) ? v : acc);
    EACH_LINE(uint64_t, TJ_AS_U64, u, (max ? v > acc : v < acc) ? v : acc);
}

/* For every line: the index of the first element that no later one beats. */
#define ARG_LINE(T, LOAD, BETTER)                                                 \
    {                                                                             \
    for (uint32_t o = 0; o < l.outer; o++)                                        \
        for (uint32_t in = 0; in < l.inner; in++) {                               \
            const tj_slot *p = x + (size_t)o * l.len * l.inner + in;              \
            T best = LOAD(p[0]);                                                  \
            uint32_t at = 0;                                                      \
            for (uint32_t j = 1; j < l.len; j++) {                                \
                T v = LOAD(p[(size_t)j * l.inner]);                               \
                if (BETTER) {                                                     \
                    best = v;                                                     \
                    at = j;                                                       \
                }                                                                 \
            }                                                                     \
            r[(size_t)o * l.inner + in].i = at;                                   \
        }                                                                         \
    return 0;                                                                     \
    }

static int arg_extreme(tj_op op, tj_class cls, tj_slot *r, const tj_slot *x, tj_lines l)
{
    int max = op == TJ_OP_ARGMAX;
    switch (cls) {
    case TJ_CL_F32:
    case TJ_CL_F64: /* NaN is the maximum: it beats a number for argmax, loses for argmin */
        if (max)
            ARG_LINE(double, TJ_AS_F64, (v != v && best == best) || v > best);
        ARG_LINE(double, TJ_AS_F64, (best != best && v == v) || v < best);
    case TJ_CL_SINT: ARG_LINE(int64_t, TJ_AS_I64, max ? v > best : v < best);
    default: ARG_LINE(uint64_t, TJ_AS_U64, max ? v > best : v < best);
    }
}

int tj_exec_reduce(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0);
    tj_lines l = tj_split_axis(a->ti, in->imm);
    if (in->imm < -1 || in->imm >= a->ti->rank || rv->n != l.outer * l.inner)
        return tj_interp_bad_ir(st, r, "axis does not fit the operand");
    if (in->op == TJ_OP_ARGMAX || in->op == TJ_OP_ARGMIN)
        return arg_extreme(in->op, tj_dtype_class(a->dt), rv->data, a->data, l);
    if (rv->dt != a->dt)
        return tj_interp_bad_ir(st, r, "result dtype differs from the operand's");
    switch (tj_dtype_class(a->dt)) {
    case TJ_CL_F32: reduce_f32(in->op, rv->data, a->data, l); break;
    case TJ_CL_F64: reduce_f64(in->op, rv->data, a->data, l); break;
    default: reduce_int(in->op, tj_dtype_is_signed(a->dt), rv->data, a->data, l); break;
    }
    tj_round_slots(rv->dt, rv->data, rv->n);
    return 0;
}
