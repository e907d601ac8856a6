/* Elementwise binary ops: arithmetic, bitwise, shifts and comparisons.
 *
 * Each dtype class has one loop per op. Integers compute in 64 bits and
 * are wrapped to their width afterwards (tj_round_slots); f16 and bf16
 * compute in float and are rounded afterwards; f32 computes in float,
 * never in double, to match what a GPU computes. */
#include <math.h>

#include "interp/interp.h"

static int binary_f32(tj_op op, tj_slot *r, const tj_slot *a, const tj_slot *b, uint32_t n)
{
#define F(EXPR) TJ_EACH(float x = (float)a[i].f; float y = (float)b[i].f; r[i].f = (float)(EXPR))
    switch (op) {
    case TJ_OP_ADD: F(x + y);
    case TJ_OP_SUB: F(x - y);
    case TJ_OP_MUL: F(x * y);
    case TJ_OP_DIV: F(x / y);
    case TJ_OP_REM: F(fmodf(x, y));
    case TJ_OP_POW: F(powf(x, y));
    case TJ_OP_MAX: F(tj_max_f(x, y));
    case TJ_OP_MIN: F(tj_min_f(x, y));
    default: return -1;
    }
#undef F
}

static int binary_f64(tj_op op, tj_slot *r, const tj_slot *a, const tj_slot *b, uint32_t n)
{
#define D(EXPR) TJ_EACH(double x = a[i].f; double y = b[i].f; r[i].f = (EXPR))
    switch (op) {
    case TJ_OP_ADD: D(x + y);
    case TJ_OP_SUB: D(x - y);
    case TJ_OP_MUL: D(x * y);
    case TJ_OP_DIV: D(x / y);
    case TJ_OP_REM: D(fmod(x, y));
    case TJ_OP_POW: D(pow(x, y));
    case TJ_OP_MAX: D(tj_max_d(x, y));
    case TJ_OP_MIN: D(tj_min_d(x, y));
    default: return -1;
    }
#undef D
}

/* C division truncating toward zero; by zero: 0; INT_MIN / -1 wraps. */
static inline uint64_t sdiv(tj_slot x, tj_slot y)
{
    if (y.i == 0)
        return 0;
    return y.i == -1 ? 0 - x.u : (uint64_t)(x.i / y.i);
}
static inline uint64_t srem(tj_slot x, tj_slot y)
{
    return y.i == 0 || y.i == -1 ? 0 : (uint64_t)(x.i % y.i);
}

/* Repeated product, wrapping; a negative exponent gives 0 except for the
 * bases 1 and -1. */
static uint64_t ipow(tj_slot x, tj_slot y, int sign)
{
    if (sign && y.i < 0)
        return x.i == 1 ? 1 : x.i == -1 ? (y.u & 1 ? UINT64_MAX : 1) : 0;
    uint64_t p = 1, base = x.u;
    for (uint64_t e = y.u; e; e >>= 1, base *= base)
        if (e & 1)
            p *= base;
    return p;
}

/* An amount outside [0, bits) shifts everything out: 0, or all sign bits
 * for an arithmetic right shift of a negative value. */
static inline uint64_t shl(tj_slot x, tj_slot y, int sign, int bits)
{
    int out = (sign && y.i < 0) || y.u >= (uint64_t)bits;
    return out ? 0 : x.u << y.u;
}
static inline uint64_t shr(tj_slot x, tj_slot y, int sign, int bits)
{
    int neg = sign && x.i < 0;
    if ((sign && y.i < 0) || y.u >= (uint64_t)bits)
        return neg ? UINT64_MAX : 0;
    return neg ? ~(~x.u >> y.u) : x.u >> y.u;
}

static int binary_int(tj_op op, tj_dtype dt, tj_slot *r, const tj_slot *a, const tj_slot *b, uint32_t n)
{
    int sign = tj_dtype_is_signed(dt), bits = tj_dtype_bits(dt);
#define I(EXPR) TJ_EACH(tj_slot x = a[i]; tj_slot y = b[i]; r[i].u = (EXPR))
    switch (op) {
    case TJ_OP_ADD: I(x.u + y.u);
    case TJ_OP_SUB: I(x.u - y.u);
    case TJ_OP_MUL: I(x.u * y.u);
    case TJ_OP_AND: I(x.u & y.u);
    case TJ_OP_OR: I(x.u | y.u);
    case TJ_OP_XOR: I(x.u ^ y.u);
    case TJ_OP_POW: I(ipow(x, y, sign));
    case TJ_OP_SHL: I(shl(x, y, sign, bits));
    case TJ_OP_SHR: I(shr(x, y, sign, bits));
    default: break;
    }
    if (sign) {
        switch (op) {
        case TJ_OP_DIV: I(sdiv(x, y));
        case TJ_OP_REM: I(srem(x, y));
        case TJ_OP_MAX: I(x.i > y.i ? x.u : y.u);
        case TJ_OP_MIN: I(x.i < y.i ? x.u : y.u);
        default: return -1;
        }
    }
    switch (op) {
    case TJ_OP_DIV: I(y.u ? x.u / y.u : 0);
    case TJ_OP_REM: I(y.u ? x.u % y.u : 0);
    case TJ_OP_MAX: I(x.u > y.u ? x.u : y.u);
    case TJ_OP_MIN: I(x.u < y.u ? x.u : y.u);
    default: return -1;
    }
#undef I
}

int tj_binary_slots(tj_op op, tj_dtype dt, tj_slot *r, const tj_slot *a, const tj_slot *b, uint32_t n)
{
    int rc;
    switch (tj_dtype_class(dt)) {
    case TJ_CL_F32: rc = binary_f32(op, r, a, b, n); break;
    case TJ_CL_F64: rc = binary_f64(op, r, a, b, n); break;
    default: rc = binary_int(op, dt, r, a, b, n); break;
    }
    if (!rc)
        tj_round_slots(dt, r, n);
    return rc;
}

/* Comparisons give bool. Float slots hold exact doubles, so comparing them
 * as doubles is comparing them in their own dtype (NaN compares unequal). */
static void compare(tj_op op, tj_dtype dt, tj_slot *r, const tj_slot *a, const tj_slot *b, uint32_t n)
{
#define CMP(FIELD)                                                         \
    switch (op) {                                                          \
    case TJ_OP_EQ: for (uint32_t i = 0; i < n; i++) r[i].i = a[i].FIELD == b[i].FIELD; break; \
    case TJ_OP_NE: for (uint32_t i = 0; i < n; i++) r[i].i = a[i].FIELD != b[i].FIELD; break; \
    case TJ_OP_LT: for (uint32_t i = 0; i < n; i++) r[i].i = a[i].FIELD < b[i].FIELD; break;  \
    case TJ_OP_LE: for (uint32_t i = 0; i < n; i++) r[i].i = a[i].FIELD <= b[i].FIELD; break; \
    case TJ_OP_GT: for (uint32_t i = 0; i < n; i++) r[i].i = a[i].FIELD > b[i].FIELD; break;  \
    default: for (uint32_t i = 0; i < n; i++) r[i].i = a[i].FIELD >= b[i].FIELD; break;       \
    }
    switch (tj_dtype_class(dt)) {
    case TJ_CL_F32:
    case TJ_CL_F64: CMP(f) break;
    case TJ_CL_SINT: CMP(i) break;
    default: CMP(u) break;
    }
#undef CMP
}

int tj_exec_binary(tj_interp *st, tj_ref r)
{
    tj_op op = tj_in(st, r)->op;
    tj_rval *rv = tj_val(st, r), *a = tj_opnd(st, r, 0), *b = tj_opnd(st, r, 1);
    if (a->n != rv->n || b->n != rv->n || a->dt != b->dt)
        return tj_interp_bad_ir(st, r, "operand types differ");
    if (tj_op_get(op)->flags & TJ_OPF_CMP) {
        compare(op, a->dt, rv->data, a->data, b->data, rv->n);
        return 0;
    }
    if (a->dt != rv->dt || tj_binary_slots(op, rv->dt, rv->data, a->data, b->data, rv->n))
        return tj_interp_bad_ir(st, r, "op does not apply to this dtype");
    return 0;
}

tj_exec_fn tj_elementwise_handler(tj_op op)
{
    switch (op) {
    case TJ_OP_ADD: case TJ_OP_SUB: case TJ_OP_MUL: case TJ_OP_DIV: case TJ_OP_REM:
    case TJ_OP_POW: case TJ_OP_MAX: case TJ_OP_MIN: case TJ_OP_AND: case TJ_OP_OR:
    case TJ_OP_XOR: case TJ_OP_SHL: case TJ_OP_SHR: case TJ_OP_EQ: case TJ_OP_NE:
    case TJ_OP_LT: case TJ_OP_LE: case TJ_OP_GT: case TJ_OP_GE: return tj_exec_binary;
    case TJ_OP_NEG: case TJ_OP_NOT: case TJ_OP_EXP: case TJ_OP_EXP2: case TJ_OP_LOG:
    case TJ_OP_LOG2: case TJ_OP_SQRT: case TJ_OP_RSQRT: case TJ_OP_ABS: case TJ_OP_SIN:
    case TJ_OP_COS: case TJ_OP_TANH: case TJ_OP_SIGMOID: case TJ_OP_ERF: case TJ_OP_FLOOR:
    case TJ_OP_CEIL: case TJ_OP_POPC: return tj_exec_unary;
    case TJ_OP_SELECT: return tj_exec_select;
    case TJ_OP_FMA: return tj_exec_fma;
    case TJ_OP_CAST: return tj_exec_cast;
    case TJ_OP_BITCAST: return tj_exec_bitcast;
    default: return NULL;
    }
}
