/* Elementwise ops: NumPy broadcasting and the result dtype of each kind. */
#include <stdio.h>
#include <string.h>

#include "array/array_internal.h"

/* The broadcast of two shapes (aligned on the right); 1 when they do not
 * broadcast. */
static int broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rank, int64_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return 1;
        out[i] = da == 1 ? db : da;
    }
    *rank = r;
    return 0;
}

static int broadcast_all(tj_graph *g, tj_aop op, const tj_array *in, uint32_t n, int *rank, int64_t *shape)
{
    *rank = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tj_anode *x = tj_anode_at(g, in[i]);
        int64_t tmp[TJ_MAX_RANK];
        int r;
        if (broadcast_shapes(*rank, shape, x->rank, x->shape, &r, tmp) == 0) {
            *rank = r;
            memcpy(shape, tmp, sizeof tmp);
            continue;
        }
        char msg[256] = "";
        size_t len = 0;
        for (uint32_t j = 0; j < n; j++) {
            const tj_anode *y = tj_anode_at(g, in[j]);
            char s[96];
            tj_shape_str(y->dtype, y->rank, y->shape, s, sizeof s);
            len += (size_t)snprintf(msg + len, sizeof msg - (len < sizeof msg ? len : sizeof msg), " %s", s);
            if (len >= sizeof msg)
                break;
        }
        tj_graph_fail(g, "%s: operands could not be broadcast together with shapes%s", tj_aop_name(op), msg);
        return 1;
    }
    return 0;
}

static int inputs_ok(tj_graph *g, const tj_array *in, uint32_t n)
{
    if (!g)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (!tj_array_valid(g, in[i])) {
            if (!g->error[0])
                tj_graph_fail(g, "not an array of this graph: %u", in[i]);
            return 0;
        }
    return 1;
}

static tj_dtype dtype_error(tj_graph *g, tj_aop op, tj_dtype dt)
{
    tj_graph_fail(g, "%s: not supported for %s", tj_aop_name(op), tj_dtype_name(dt));
    return TJ_DT_INVALID;
}

static tj_dtype unary_dtype(tj_graph *g, tj_aop op, tj_dtype dt)
{
    switch (tj_aop_kind_of(op)) {
    case TJ_AK_MATH:
        return tj_float_of(dt);
    case TJ_AK_UNARY:
        if (dt == TJ_DT_BOOL && op == TJ_AOP_SQUARE)
            return TJ_DT_I8; /* NumPy's square of bool */
        if (dt == TJ_DT_BOOL && op != TJ_AOP_ABS && op != TJ_AOP_POSITIVE && op != TJ_AOP_SQUARE)
            return dtype_error(g, op, dt);
        if (op == TJ_AOP_RECIPROCAL && dt == TJ_DT_BOOL)
            return dtype_error(g, op, dt);
        return dt;
    case TJ_AK_ROUND:
        return dt;
    case TJ_AK_LOGIC1:
    case TJ_AK_TEST:
        return TJ_DT_BOOL;
    case TJ_AK_BITS1:
        return tj_dtype_is_float(dt) ? dtype_error(g, op, dt) : dt;
    default:
        tj_graph_fail(g, "tj_array_unary: %s is not a one-input elementwise op", tj_aop_name(op));
        return TJ_DT_INVALID;
    }
}

static tj_array build(tj_graph *g, tj_aop op, tj_dtype dt, tj_dtype ct, const tj_array *in, uint32_t n)
{
    int rank;
    int64_t shape[TJ_MAX_RANK];
    if (broadcast_all(g, op, in, n, &rank, shape))
        return TJ_ARRAY_NONE;
    tj_array a = tj_graph_add(g, op, dt, rank, shape, in, n);
    if (a)
        tj_anode_at(g, a)->ctype = ct;
    return a;
}

tj_array tj_array_unary(tj_graph *g, tj_aop op, tj_array a)
{
    if (!inputs_ok(g, &a, 1))
        return TJ_ARRAY_NONE;
    if (tj_aop_nin(op) != 1 || !tj_aop_is_elementwise(op) || op == TJ_AOP_ASTYPE)
        return tj_graph_fail(g, "tj_array_unary: %s is not a one-input elementwise op",
                             tj_aop_name(op) ? tj_aop_name(op) : "an unknown op");
    tj_dtype in = tj_anode_at(g, a)->dtype, dt = unary_dtype(g, op, in);
    tj_aop_kind k = tj_aop_kind_of(op);
    tj_dtype ct = k == TJ_AK_LOGIC1 ? TJ_DT_BOOL : k == TJ_AK_TEST || k == TJ_AK_ROUND ? in : dt;
    return dt ? build(g, op, dt, ct, &a, 1) : TJ_ARRAY_NONE;
}

static tj_dtype binary_dtype(tj_graph *g, tj_aop op, tj_dtype t)
{
    switch (tj_aop_kind_of(op)) {
    case TJ_AK_ARITH:
        if (t == TJ_DT_BOOL && op != TJ_AOP_ADD && op != TJ_AOP_MULTIPLY && op != TJ_AOP_MAXIMUM &&
            op != TJ_AOP_MINIMUM)
            return dtype_error(g, op, t);
        return t;
    case TJ_AK_DIVIDE:
        return tj_dtype_is_float(t) ? t : TJ_DT_F64;
    case TJ_AK_COMPARE:
    case TJ_AK_LOGIC2:
        return TJ_DT_BOOL;
    case TJ_AK_BITS2:
        return tj_dtype_is_float(t) ? dtype_error(g, op, t) : t;
    default:
        tj_graph_fail(g, "tj_array_binary: %s is not a two-input elementwise op", tj_aop_name(op));
        return TJ_DT_INVALID;
    }
}

tj_array tj_array_binary(tj_graph *g, tj_aop op, tj_array a, tj_array b)
{
    tj_array in[2] = {a, b};
    if (!inputs_ok(g, in, 2))
        return TJ_ARRAY_NONE;
    if (tj_aop_nin(op) != 2 || !tj_aop_is_elementwise(op))
        return tj_graph_fail(g, "tj_array_binary: %s is not a two-input elementwise op",
                             tj_aop_name(op) ? tj_aop_name(op) : "an unknown op");
    tj_dtype t = tj_promote_nodes(g, tj_aop_name(op), a, b);
    if (!t)
        return TJ_ARRAY_NONE;
    tj_dtype dt = binary_dtype(g, op, t);
    tj_aop_kind k = tj_aop_kind_of(op);
    tj_dtype ct = k == TJ_AK_LOGIC2 ? TJ_DT_BOOL : k == TJ_AK_COMPARE ? t : dt;
    return dt ? build(g, op, dt, ct, in, 2) : TJ_ARRAY_NONE;
}

tj_array tj_array_ternary(tj_graph *g, tj_aop op, tj_array a, tj_array b, tj_array c)
{
    tj_array in[3] = {a, b, c};
    if (!inputs_ok(g, in, 3))
        return TJ_ARRAY_NONE;
    tj_dtype dt;
    if (op == TJ_AOP_WHERE)
        dt = tj_promote_nodes(g, "where", b, c);
    else if (op == TJ_AOP_CLIP) {
        dt = tj_promote_nodes(g, "clip", a, b);
        tj_dtype d2 = tj_promote_nodes(g, "clip", a, c);
        dt = dt && d2 ? tj_promote(dt, d2) : TJ_DT_INVALID;
    } else
        return tj_graph_fail(g, "tj_array_ternary: %s is not where or clip",
                             tj_aop_name(op) ? tj_aop_name(op) : "an unknown op");
    return dt ? build(g, op, dt, dt, in, 3) : TJ_ARRAY_NONE;
}

tj_array tj_array_astype(tj_graph *g, tj_array a, tj_dtype dt)
{
    if (!inputs_ok(g, &a, 1))
        return TJ_ARRAY_NONE;
    if (dt <= TJ_DT_INVALID || dt >= TJ_DT_COUNT)
        return tj_graph_fail(g, "astype: unknown dtype %d", (int)dt);
    return build(g, TJ_AOP_ASTYPE, dt, tj_anode_at(g, a)->dtype, &a, 1);
}
