/* Elementwise unary ops (neg, not, abs and the math functions), select
 * and fma. Math on f16/bf16 computes in f32 and rounds back; f32 math
 * calls the float versions of libm so results are what a GPU computes up
 * to the library's accuracy. */
#include <math.h>

#include "interp/interp.h"

static inline float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

static int unary_f32(tj_op op, tj_slot *r, const tj_slot *a, uint32_t n)
{
#define F(EXPR) TJ_EACH(float x = (float)a[i].f; r[i].f = (float)(EXPR))
    switch (op) {
    case TJ_OP_NEG: F(-x);
    case TJ_OP_ABS: F(fabsf(x));
    case TJ_OP_EXP: F(expf(x));
    case TJ_OP_EXP2: F(exp2f(x));
    case TJ_OP_LOG: F(logf(x));
    case TJ_OP_LOG2: F(log2f(x));
    case TJ_OP_SQRT: F(sqrtf(x));
    case TJ_OP_RSQRT: F(1.0f / sqrtf(x));
    case TJ_OP_SIN: F(sinf(x));
    case TJ_OP_COS: F(cosf(x));
    case TJ_OP_TANH: F(tanhf(x));
    case TJ_OP_SIGMOID: F(sigmoid_f(x));
    case TJ_OP_ERF: F(erff(x));
    case TJ_OP_FLOOR: F(floorf(x));
    case TJ_OP_CEIL: F(ceilf(x));
    default: return -1;
    }
#undef F
}

static int unary_f64(tj_op op, tj_slot *r, const tj_slot *a, uint32_t n)
{
#define D(EXPR) TJ_EACH(double x = a[i].f; r[i].f = (EXPR))
    switch (op) {
    case TJ_OP_NEG: D(-x);
    case TJ_OP_ABS: D(fabs(x));
    case TJ_OP_EXP: D(exp(x));
    case TJ_OP_EXP2: D(exp2(x));
    case TJ_OP_LOG: D(log(x));
    case TJ_OP_LOG2: D(log2(x));
    case TJ_OP_SQRT: D(sqrt(x));
    case TJ_OP_RSQRT: D(1.0 / sqrt(x));
    case TJ_OP_SIN: D(sin(x));
    case TJ_OP_COS: D(cos(x));
    case TJ_OP_TANH: D(tanh(x));
    case TJ_OP_SIGMOID: D(sigmoid_d(x));
    case TJ_OP_ERF: D(erf(x));
    case TJ_OP_FLOOR: D(floor(x));
    case TJ_OP_CEIL: D(ceil(x));
    default: return -1;
    }
#undef D
}

/* Integers wrap: neg and abs of the most negative value give itself. */
static int unary_int(tj_op op, tj_dtype dt, tj_slot *r, const tj_slot *a, uint32_t n)
{
    int sign = tj_dtype_is_signed(dt);
    switch (op) {
    case TJ_OP_NEG: TJ_EACH(r[i].u = 0 - a[i].u);
    case TJ_OP_ABS: TJ_EACH(r[i].u = sign && a[i].i < 0 ? 0 - a[i].u : a[i].u);
    case TJ_OP_NOT:
        if (dt == TJ_DT_BOOL) {
            TJ_EACH(r[i].i = !a[i].i);
        }
        TJ_EACH(r[i].u = ~a[i].u);
    case TJ_OP_POPC: TJ_EACH(r[i].u = (uint64_t)__builtin_popcountll(a[i].u));
    default: return -1;
    }
}

int tj_exec_unary(tj_interp *st, tj_ref r)
{
    tj_op op = tj_in(st, r)->op;
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0);
    if (a->n != rv->n || a->dt != rv->dt)
        return tj_interp_bad_ir(st, r, "operand type differs from the result's");
    int rc;
    switch (tj_dtype_class(rv->dt)) {
    case TJ_CL_F32: rc = unary_f32(op, rv->data, a->data, rv->n); break;
    case TJ_CL_F64: rc = unary_f64(op, rv->data, a->data, rv->n); break;
    default: rc = unary_int(op, rv->dt, rv->data, a->data, rv->n); break;
    }
    if (rc)
        return tj_interp_bad_ir(st, r, "op does not apply to this dtype");
    tj_round_slots(rv->dt, rv->data, rv->n);
    return 0;
}

int tj_exec_select(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *c = tj_opnd(st, r, 0), *a = tj_opnd(st, r, 1), *b = tj_opnd(st, r, 2);
    if (c->n != rv->n || a->n != rv->n || b->n != rv->n)
        return tj_interp_bad_ir(st, r, "operand shapes differ");
    uint32_t n = rv->n;
    tj_slot *res = rv->data;
    TJ_EACH(res[i] = c->data[i].i ? a->data[i] : b->data[i]);
}

/* a * b + c rounded once (f16/bf16: fused in f32, then rounded). */
int tj_exec_fma(tj_interp *st, tj_ref r)
{
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0), *b = tj_opnd(st, r, 1), *c = tj_opnd(st, r, 2);
    if (a->n != rv->n || b->n != rv->n || c->n != rv->n)
        return tj_interp_bad_ir(st, r, "operand shapes differ");
    const tj_slot *x = a->data, *y = b->data, *z = c->data;
    tj_slot *res = rv->data;
    uint32_t n = rv->n;
    switch (tj_dtype_class(rv->dt)) {
    case TJ_CL_F32:
        for (uint32_t i = 0; i < n; i++)
            res[i].f = fmaf((float)x[i].f, (float)y[i].f, (float)z[i].f);
        break;
    case TJ_CL_F64:
        for (uint32_t i = 0; i < n; i++)
            res[i].f = fma(x[i].f, y[i].f, z[i].f);
        break;
    default: /* integers: the wrapped a * b + c */
        for (uint32_t i = 0; i < n; i++)
            res[i].u = x[i].u * y[i].u + z[i].u;
        break;
    }
    tj_round_slots(rv->dt, res, n);
    return 0;
}
