/* arith and math ops, on tensors or inside linalg bodies (where a scalar is
 * an array over the iteration space): each one array op, or a few where
 * MLIR's semantics and NumPy's differ (unsigned readings, NaN-ignoring
 * max/min, unordered comparisons). The result's dtype is checked against
 * the op's type, so a promotion rule can never change a result silently. */
#include <stdlib.h>
#include <string.h>

#include "mlir/mlir_internal.h"

static tj_dtype unsigned_of(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_I8: return TJ_DT_U8;
    case TJ_DT_I16: return TJ_DT_U16;
    case TJ_DT_I32: return TJ_DT_U32;
    case TJ_DT_I64: return TJ_DT_U64;
    default: return dt;
    }
}

static tj_array as_unsigned(mbuild *b, tj_array a)
{
    tj_array_info info;
    if (tj_array_get_info(b->g, a, &info))
        return TJ_ARRAY_NONE;
    tj_dtype u = unsigned_of(info.dtype);
    return u == info.dtype ? a : tj_array_astype(b->g, a, u);
}

static int is_float(tj_dtype dt) { return dt == TJ_DT_F16 || dt == TJ_DT_BF16 || dt == TJ_DT_F32 || dt == TJ_DT_F64; }

/* Sets the op's result to a, checking its dtype against the result type
 * (a is cast when only its dtype differs: NumPy's integer sums widen). */
static int set_result(mbuild *b, uint32_t op, tj_array a)
{
    if (tj_mlir_check(b, op, a) == TJ_ARRAY_NONE)
        return 1;
    const tj_mop *o = &b->m->prog.ops[op];
    const tj_mvalue *v = tj_mlir_value(b->m, o->results);
    tj_array_info info;
    tj_array_get_info(b->g, a, &info);
    if (info.dtype != v->dtype)
        return tj_mlir_fail(b, op, "the array op gives %s, the op's type is %s", tj_dtype_name(info.dtype),
                            tj_mprog_str(&b->m->prog, v->text));
    tj_mlir_set(b, o->results, a);
    return 0;
}

static tj_array operand(mbuild *b, uint32_t op, uint32_t i)
{
    return tj_mlir_get(b, op, tj_mlir_operand(b->m, op, i));
}

static tj_dtype operand_dtype(mbuild *b, uint32_t op, uint32_t i)
{
    return tj_mlir_value(b->m, tj_mlir_operand(b->m, op, i))->dtype;
}

/* ---- comparisons ------------------------------------------------------------ */

static tj_array not_nan(mbuild *b, tj_array a)
{
    return tj_array_unary(b->g, TJ_AOP_LOGICAL_NOT, tj_array_unary(b->g, TJ_AOP_ISNAN, a));
}

/* arith.cmpf: NumPy's comparisons are the ordered ones (false on NaN) but
 * != (true on NaN); the others are built from them. */
static tj_array cmpf(mbuild *b, int64_t pred, tj_array x, tj_array y)
{
    static const tj_aop ordered[] = {TJ_AOP_INVALID, TJ_AOP_EQUAL, TJ_AOP_GREATER, TJ_AOP_GREATER_EQUAL,
                                     TJ_AOP_LESS, TJ_AOP_LESS_EQUAL};
    tj_graph *g = b->g;
    tj_array ord = tj_array_binary(g, TJ_AOP_LOGICAL_AND, not_nan(b, x), not_nan(b, y));
    switch (pred) {
    case 0: return tj_array_binary(g, TJ_AOP_NOT_EQUAL, ord, ord); /* false */
    case 1: case 2: case 3: case 4: case 5: return tj_array_binary(g, ordered[pred], x, y);
    case 6: return tj_array_binary(g, TJ_AOP_LOGICAL_AND, ord, tj_array_binary(g, TJ_AOP_NOT_EQUAL, x, y));
    case 7: return ord;
    case 8: case 9: case 10: case 11: case 12: /* ueq ugt uge ult ule: not the opposite ordered one */
        return tj_array_unary(g, TJ_AOP_LOGICAL_NOT, cmpf(b, (int64_t[]){6, 5, 4, 3, 2}[pred - 8], x, y));
    case 13: return tj_array_binary(g, TJ_AOP_NOT_EQUAL, x, y);
    case 14: return tj_array_unary(g, TJ_AOP_LOGICAL_NOT, ord);
    case 15: return tj_array_binary(g, TJ_AOP_EQUAL, ord, ord); /* true */
    default: return TJ_ARRAY_NONE;
    }
}

static tj_array cmpi(mbuild *b, int64_t pred, tj_array x, tj_array y)
{
    static const tj_aop ops[] = {TJ_AOP_EQUAL, TJ_AOP_NOT_EQUAL, TJ_AOP_LESS, TJ_AOP_LESS_EQUAL, TJ_AOP_GREATER,
                                 TJ_AOP_GREATER_EQUAL, TJ_AOP_LESS, TJ_AOP_LESS_EQUAL, TJ_AOP_GREATER,
                                 TJ_AOP_GREATER_EQUAL};
    if (pred < 0 || pred > 9)
        return TJ_ARRAY_NONE;
    if (pred >= 6) {
        x = as_unsigned(b, x);
        y = as_unsigned(b, y);
    }
    return tj_array_binary(b->g, ops[pred], x, y);
}

static int build_compare(mbuild *b, uint32_t op, int is_float_compare)
{
    const tj_mattr *p = tj_mlir_attr(b->m, op, "predicate");
    if (!p || p->kind != TJ_MA_INT)
        return tj_mlir_fail(b, op, "no integer 'predicate' attribute");
    tj_array x = operand(b, op, 0), y = operand(b, op, 1);
    if (!x || !y)
        return 1;
    tj_array r = is_float_compare ? cmpf(b, p->i, x, y) : cmpi(b, p->i, x, y);
    if (!r && !b->failed && !*tj_graph_error(b->g))
        return tj_mlir_fail(b, op, "predicate %lld out of range", (long long)p->i);
    return set_result(b, op, r);
}

/* ---- constants ------------------------------------------------------------------ */

static void store(void *data, tj_dtype dt, size_t i, double v)
{
    switch (dt) {
    case TJ_DT_BOOL: ((uint8_t *)data)[i] = v != 0; break;
    case TJ_DT_I8: ((int8_t *)data)[i] = (int8_t)v; break;
    case TJ_DT_I16: ((int16_t *)data)[i] = (int16_t)v; break;
    case TJ_DT_I32: ((int32_t *)data)[i] = (int32_t)v; break;
    case TJ_DT_I64: ((int64_t *)data)[i] = (int64_t)v; break;
    case TJ_DT_U8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case TJ_DT_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
    case TJ_DT_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
    case TJ_DT_U64: ((uint64_t *)data)[i] = (uint64_t)v; break;
    case TJ_DT_F32: ((float *)data)[i] = (float)v; break;
    case TJ_DT_F64: ((double *)data)[i] = v; break;
    default: break;
    }
}

/* A dense constant that is not a splat: copied into the graph. */
static tj_array dense_tensor(mbuild *b, const tj_mattr *a, const tj_mvalue *v)
{
    size_t n = 1, size = tj_dtype_size(v->dtype);
    for (int d = 0; d < v->rank; d++)
        n *= (size_t)v->shape[d];
    if (n != a->count)
        return TJ_ARRAY_NONE;
    void *data = malloc(n * size > 0 ? n * size : 1);
    if (!data)
        return TJ_ARRAY_NONE;
    for (size_t i = 0; i < n; i++)
        store(data, v->dtype, i, b->m->prog.floats[a->first + i]);
    tj_tensor t = tj_tensor_contiguous(data, v->dtype, v->rank, v->shape);
    tj_array r = tj_array_copy(b->g, &t);
    free(data);
    return r;
}

static int build_constant(mbuild *b, uint32_t op)
{
    const tj_mattr *a = tj_mlir_attr(b->m, op, "value");
    const tj_mop *o = &b->m->prog.ops[op];
    const tj_mvalue *v = tj_mlir_value(b->m, o->results);
    double scalar = 0;
    tj_array r = TJ_ARRAY_NONE;
    if (a && (a->kind == TJ_MA_INT || a->kind == TJ_MA_FLOAT) && v->kind == TJ_MT_SCALAR) {
        scalar = a->kind == TJ_MA_INT ? (double)a->i : a->f;
        r = tj_mlir_constant(b, v->dtype, scalar);
    } else if (a && a->kind == TJ_MA_DENSE && a->splat) {
        scalar = b->m->prog.floats[a->first];
        r = v->kind == TJ_MT_SCALAR ? tj_mlir_constant(b, v->dtype, scalar)
                                    : tj_array_full(b->g, v->dtype, v->rank, v->shape, scalar);
    } else if (a && a->kind == TJ_MA_DENSE && v->kind == TJ_MT_TENSOR) {
        if (!(r = dense_tensor(b, a, v)) && !*tj_graph_error(b->g))
            return tj_mlir_fail(b, op, "a dense constant of %u values for %s", a->count,
                                tj_mprog_str(&b->m->prog, v->text));
    } else
        return tj_mlir_fail(b, op, "a constant of this form is not imported (%s)",
                            a && a->kind == TJ_MA_OTHER ? tj_mprog_str(&b->m->prog, a->str) : "no value");
    b->uniform[o->results] = !(a->kind == TJ_MA_DENSE && !a->splat);
    b->uniform_value[o->results] = scalar;
    return set_result(b, op, r);
}

/* ---- the rest ---------------------------------------------------------------------- */

static int build_cast(mbuild *b, uint32_t op, int from_unsigned)
{
    tj_array x = operand(b, op, 0);
    if (!x)
        return 1;
    if (from_unsigned)
        x = as_unsigned(b, x);
    tj_dtype to = tj_mlir_value(b->m, b->m->prog.ops[op].results)->dtype;
    return set_result(b, op, tj_array_astype(b->g, x, to));
}

/* maxnumf, minnumf: NaN only where both are. */
static tj_array nan_ignoring(mbuild *b, tj_aop aop, tj_array x, tj_array y)
{
    tj_graph *g = b->g;
    tj_array both = tj_array_binary(g, aop, x, y);
    tj_array y_or = tj_array_ternary(g, TJ_AOP_WHERE, tj_array_unary(g, TJ_AOP_ISNAN, y), x, both);
    return tj_array_ternary(g, TJ_AOP_WHERE, tj_array_unary(g, TJ_AOP_ISNAN, x), y, y_or);
}

/* NumPy's add, multiply, maximum on bools are or, and, or: not MLIR's i1
 * arithmetic (addi is xor, maxsi reads true as -1). */
static int bool_safe(tj_aop aop)
{
    return aop == TJ_AOP_BITWISE_AND || aop == TJ_AOP_BITWISE_OR || aop == TJ_AOP_BITWISE_XOR;
}

static int build_binary(mbuild *b, uint32_t op, const mop_info *info)
{
    tj_array x = operand(b, op, 0), y = operand(b, op, 1);
    if (!x || !y)
        return 1;
    tj_dtype dt = operand_dtype(b, op, 0);
    if (dt == TJ_DT_BOOL && !bool_safe(info->aop))
        return tj_mlir_fail(b, op, "on i1, which is not imported for this op");
    if (info->kind == MK_NAN_IGNORING)
        return set_result(b, op, nan_ignoring(b, info->aop, x, y));
    if (info->kind == MK_BINARY_UNSIGNED) {
        tj_array r = tj_array_binary(b->g, info->aop, as_unsigned(b, x), as_unsigned(b, y));
        return set_result(b, op, tj_array_astype(b->g, r, dt));
    }
    if (info->aop == TJ_AOP_DIVIDE && !is_float(dt))
        return tj_mlir_fail(b, op, "integer division is not imported");
    return set_result(b, op, tj_array_binary(b->g, info->aop, x, y));
}

static int build_index(mbuild *b, uint32_t op)
{
    const tj_mattr *dim = tj_mlir_attr(b->m, op, "dim");
    if (!b->in_body || !dim || dim->kind != TJ_MA_INT || dim->i < 0 || dim->i >= b->nloops)
        return tj_mlir_fail(b, op, "no loop 'dim' of the enclosing linalg op");
    int64_t shape[TJ_MAX_RANK];
    for (int d = 0; d < b->nloops; d++)
        shape[d] = d == dim->i ? b->loops[d] : 1;
    tj_array r = tj_array_arange(b->g, TJ_DT_I64, 0, 1, b->loops[dim->i]);
    return set_result(b, op, tj_array_reshape(b->g, r, b->nloops, shape));
}

int tj_mlir_build_elementwise(mbuild *b, uint32_t op, const mop_info *info)
{
    switch (info->kind) {
    case MK_UNARY: {
        tj_array x = operand(b, op, 0);
        return !x || set_result(b, op, tj_array_unary(b->g, info->aop, x));
    }
    case MK_BINARY:
    case MK_BINARY_UNSIGNED:
    case MK_NAN_IGNORING: return build_binary(b, op, info);
    case MK_CAST:
    case MK_CAST_UNSIGNED: return build_cast(b, op, info->kind == MK_CAST_UNSIGNED);
    case MK_CMPF:
    case MK_CMPI: return build_compare(b, op, info->kind == MK_CMPF);
    case MK_SELECT: {
        tj_array c = operand(b, op, 0), x = operand(b, op, 1), y = operand(b, op, 2);
        return !c || !x || !y || set_result(b, op, tj_array_ternary(b->g, TJ_AOP_WHERE, c, x, y));
    }
    case MK_CONSTANT: return build_constant(b, op);
    case MK_INDEX: return build_index(b, op);
    default: return tj_mlir_fail(b, op, "not an elementwise op");
    }
}
