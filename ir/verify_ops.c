/* The verifier's type rules, one function per op family (docs/ir.md, "Ops
 * and their semantics"). Operands are known to be valid visible values. */
#include <inttypes.h>

#include "ir/text.h"
#include "ir/verify_internal.h"

int tj_verify_result(V *v, tj_ref r, tj_type expected)
{
    tj_type t = inst(v, r)->type;
    if (t == expected)
        return 1;
    if (expected == TJ_TYPE_NONE)
        tj_verify_fail(v, r, "has no result, but a result type %s", TS(t));
    else
        tj_verify_fail(v, r, "result type should be %s", TS(expected));
    return 0;
}

int tj_verify_tile_arg(V *v, tj_ref r, uint32_t a)
{
    if (is_kind(v, arg_type(v, r, a), TJ_TK_TILE))
        return 1;
    tj_verify_fail(v, r, "operand %u is %s, not a tile", a + 1, TS(arg_type(v, r, a)));
    return 0;
}

/* axis in [0, rank), or -1 too when `all` is allowed. */
static int expect_axis(V *v, tj_ref r, int rank, int all)
{
    int64_t axis = inst(v, r)->imm;
    if ((axis >= 0 && axis < rank) || (all && axis == -1))
        return 1;
    tj_verify_fail(v, r, "axis %" PRId64 " is out of range for rank %d", axis, rank);
    return 0;
}

int tj_int_fits_dtype(int64_t x, tj_dtype dt)
{
    if (dt == TJ_DT_BOOL)
        return x == 0 || x == 1;
    if (dt == TJ_DT_I64 || dt == TJ_DT_U64)
        return 1;
    int bits = tj_dtype_bits(dt);
    if (tj_dtype_is_signed(dt))
        return x >= -(INT64_C(1) << (bits - 1)) && x < (INT64_C(1) << (bits - 1));
    return x >= 0 && x < (INT64_C(1) << bits);
}

/* ---- elementwise ------------------------------------------------------------ */

typedef enum dclass { DC_ANY, DC_NUM, DC_INT_BOOL, DC_INT, DC_FLOAT } dclass;

static dclass elementwise_class(tj_op op)
{
    switch (op) {
    case TJ_OP_AND: case TJ_OP_OR: case TJ_OP_XOR: case TJ_OP_NOT:
        return DC_INT_BOOL;
    case TJ_OP_SHL: case TJ_OP_SHR:
        return DC_INT;
    case TJ_OP_EQ: case TJ_OP_NE: case TJ_OP_LT: case TJ_OP_LE: case TJ_OP_GT: case TJ_OP_GE:
    case TJ_OP_SELECT: case TJ_OP_CAST:
        return DC_ANY;
    case TJ_OP_ADD: case TJ_OP_SUB: case TJ_OP_MUL: case TJ_OP_DIV: case TJ_OP_REM: case TJ_OP_POW:
    case TJ_OP_MAX: case TJ_OP_MIN: case TJ_OP_NEG: case TJ_OP_ABS:
        return DC_NUM;
    default:
        return DC_FLOAT; /* exp ... ceil, fma */
    }
}

static int in_class(tj_dtype dt, dclass cls)
{
    switch (cls) {
    case DC_ANY: return 1;
    case DC_NUM: return tj_dtype_is_int(dt) || tj_dtype_is_float(dt);
    case DC_INT_BOOL: return tj_dtype_is_int(dt) || dt == TJ_DT_BOOL;
    case DC_INT: return tj_dtype_is_int(dt);
    case DC_FLOAT: return tj_dtype_is_float(dt);
    }
    return 0;
}

static const char *class_name(dclass cls)
{
    static const char *const names[] = {"any type", "numbers", "integers or bool", "integers", "floats"};
    return names[cls];
}

/* select: a bool condition of the values' shape, two values of one type. */
static void check_select(V *v, tj_ref r)
{
    tj_type t = arg_type(v, r, 1);
    if (!tj_verify_tile_arg(v, r, 1))
        return;
    if (arg_type(v, r, 2) != t)
        tj_verify_fail(v, r, "operand types differ: %s vs %s", TS(t), TS(arg_type(v, r, 2)));
    else if (arg_type(v, r, 0) != tj_type_with_dtype(v->c, t, TJ_DT_BOOL))
        tj_verify_fail(v, r, "condition is %s, expected %s", TS(arg_type(v, r, 0)),
                       TS(tj_type_with_dtype(v->c, t, TJ_DT_BOOL)));
    else
        tj_verify_result(v, r, t);
}

static void check_cast(V *v, tj_ref r)
{
    tj_type from = arg_type(v, r, 0), to = inst(v, r)->type;
    if (!tj_verify_tile_arg(v, r, 0))
        return;
    if (!is_kind(v, to, TJ_TK_TILE) || !same_shape(info(v, to), info(v, from)))
        tj_verify_fail(v, r, "a cast keeps the shape of its operand %s", TS(from));
}

/* bitcast: same shape, numbers of one width on both sides (bool has no bits
 * of its own to read: its register form differs between targets). */
static void check_bitcast(V *v, tj_ref r)
{
    tj_type from = arg_type(v, r, 0), to = inst(v, r)->type;
    uint32_t errors = v->errors;
    check_cast(v, r);
    if (v->errors != errors)
        return;
    tj_dtype a = dtype_of(v, from), b = dtype_of(v, to);
    if (a == TJ_DT_BOOL || b == TJ_DT_BOOL || tj_dtype_size(a) != tj_dtype_size(b))
        tj_verify_fail(v, r, "bitcast reads a number's bits as a number of the same width, not %s as %s",
                       tj_dtype_name(a), tj_dtype_name(b));
}

static void check_elementwise(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    if (in->op == TJ_OP_SELECT) {
        check_select(v, r);
        return;
    }
    if (in->op == TJ_OP_CAST) {
        check_cast(v, r);
        return;
    }
    if (in->op == TJ_OP_BITCAST) {
        check_bitcast(v, r);
        return;
    }
    tj_type t = arg_type(v, r, 0);
    if (!tj_verify_tile_arg(v, r, 0))
        return;
    for (uint32_t a = 1; a < in->nargs; a++) {
        if (arg_type(v, r, a) != t) {
            tj_verify_fail(v, r, "operand types differ: %s vs %s", TS(t), TS(arg_type(v, r, a)));
            return;
        }
    }
    dclass cls = elementwise_class(in->op);
    if (!in_class(dtype_of(v, t), cls)) {
        tj_verify_fail(v, r, "takes %s, not %s", class_name(cls), tj_dtype_name(dtype_of(v, t)));
        return;
    }
    int cmp = tj_op_get(in->op)->flags & TJ_OPF_CMP;
    tj_verify_result(v, r, cmp ? tj_type_with_dtype(v->c, t, TJ_DT_BOOL) : t);
}

/* ---- values and indices ----------------------------------------------------------- */

static tj_type param_type(V *v, const tj_param *pm)
{
    return pm->rank ? tj_type_tensor(v->c, pm->dtype, pm->rank) : tj_type_scalar(v->c, pm->dtype);
}

static void check_param(V *v, tj_ref r)
{
    int64_t i = inst(v, r)->imm;
    if (i < 0 || i >= (int64_t)v->k->nparams)
        tj_verify_fail(v, r, "the kernel has no parameter %" PRId64 " (it has %u)", i, v->k->nparams);
    else
        tj_verify_result(v, r, param_type(v, &v->k->params[i]));
}

static void check_const(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_dtype dt = dtype_of(v, in->type);
    if (!tj_type_is_scalar(v->c, in->type))
        tj_verify_fail(v, r, "a constant is a scalar");
    else if (!tj_dtype_is_float(dt) && !tj_int_fits_dtype(in->imm, dt))
        tj_verify_fail(v, r, "value %" PRId64 " does not fit %s", in->imm, tj_dtype_name(dt));
}

static void check_proj(V *v, tj_ref r)
{
    const tj_type_info *t = info(v, arg_type(v, r, 0));
    int64_t i = inst(v, r)->imm;
    if (t->kind != TJ_TK_TUPLE)
        tj_verify_fail(v, r, "operand is %s, not a tuple", TS(arg_type(v, r, 0)));
    else if (i < 0 || i >= (int64_t)t->nelems)
        tj_verify_fail(v, r, "index %" PRId64 " is out of range for %s", i, TS(arg_type(v, r, 0)));
    else
        tj_verify_result(v, r, t->elems[i]);
}

static void check_index_op(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_type i32 = tj_type_scalar(v->c, TJ_DT_I32);
    if (in->op == TJ_OP_DIM) {
        if (!is_kind(v, arg_type(v, r, 0), TJ_TK_TENSOR))
            tj_verify_fail(v, r, "operand is %s, not a tensor", TS(arg_type(v, r, 0)));
        else if (expect_axis(v, r, info(v, arg_type(v, r, 0))->rank, 0))
            tj_verify_result(v, r, i32);
        return;
    }
    if (in->op == TJ_OP_ARANGE) {
        const tj_type_info *t = info(v, in->type);
        if (t->kind != TJ_TK_TILE || t->rank != 1 || t->dtype != TJ_DT_I32)
            tj_verify_fail(v, r, "result type should be i32[N]");
        return;
    }
    if (expect_axis(v, r, 3, 0)) /* program_id, num_programs */
        tj_verify_result(v, r, i32);
}

/* ---- shapes ----------------------------------------------------------------------- */

/* NumPy broadcasting: shapes aligned on the right, size-1 or missing axes repeat. */
static void check_broadcast(V *v, tj_ref r)
{
    const tj_type_info *s = info(v, arg_type(v, r, 0)), *d = info(v, inst(v, r)->type);
    int ok = d->kind == TJ_TK_TILE && d->dtype == s->dtype && d->rank >= s->rank;
    for (int i = 1; ok && i <= s->rank; i++) {
        int32_t from = s->shape[s->rank - i], to = d->shape[d->rank - i];
        ok = from == to || from == 1;
    }
    if (!ok)
        tj_verify_fail(v, r, "cannot broadcast %s to %s", TS(arg_type(v, r, 0)), TS(inst(v, r)->type));
}

static void check_reshape(V *v, tj_ref r)
{
    tj_type s = arg_type(v, r, 0), d = inst(v, r)->type;
    if (!is_kind(v, d, TJ_TK_TILE) || dtype_of(v, d) != dtype_of(v, s) ||
        tj_type_numel(v->c, d) != tj_type_numel(v->c, s))
        tj_verify_fail(v, r, "cannot reshape %s to %s", TS(s), TS(d));
}

static void check_permute(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    const tj_type_info *s = info(v, arg_type(v, r, 0));
    int32_t shape[TJ_MAX_RANK];
    unsigned used = 0;
    if (in->nlist != (uint32_t)s->rank) {
        tj_verify_fail(v, r, "perm has %u entries for rank %d", in->nlist, s->rank);
        return;
    }
    for (int i = 0; i < s->rank; i++) {
        int32_t p = in->list[i];
        if (p < 0 || p >= s->rank || (used & (1u << p))) {
            tj_verify_fail(v, r, "perm is not a permutation of 0..%d", s->rank - 1);
            return;
        }
        used |= 1u << p;
        shape[i] = s->shape[p];
    }
    tj_verify_result(v, r, tj_type_tile(v->c, s->dtype, s->rank, shape));
}

/* gather: x and idx 1-D tiles, idx of integers; the result x's dtype in
 * idx's shape */
static void check_gather(V *v, tj_ref r)
{
    if (!tj_verify_tile_arg(v, r, 0) || !tj_verify_tile_arg(v, r, 1))
        return;
    tj_type x = arg_type(v, r, 0), idx = arg_type(v, r, 1);
    const tj_type_info *ii = info(v, idx);
    if (info(v, x)->rank != 1)
        tj_verify_fail(v, r, "gathers from a 1-D tile, not %s", TS(x));
    else if (!tj_dtype_is_int(ii->dtype) || ii->rank != 1)
        tj_verify_fail(v, r, "the indices must be a 1-D integer tile, not %s", TS(idx));
    else
        tj_verify_result(v, r, tj_type_tile(v->c, dtype_of(v, x), 1, ii->shape));
}

static void check_shape_op(V *v, tj_ref r)
{
    if (!tj_verify_tile_arg(v, r, 0))
        return;
    tj_op op = inst(v, r)->op;
    if (op == TJ_OP_BROADCAST)
        check_broadcast(v, r);
    else if (op == TJ_OP_RESHAPE)
        check_reshape(v, r);
    else
        check_permute(v, r);
}

/* ---- reductions, scans, sort ------------------------------------------------------- */

/* The tile `t` without axis `axis` (-1: the scalar). */
static tj_type drop_axis(V *v, tj_type t, int64_t axis, tj_dtype dt)
{
    const tj_type_info *i = info(v, t);
    int32_t shape[TJ_MAX_RANK];
    int rank = 0;
    for (int d = 0; axis >= 0 && d < i->rank; d++)
        if (d != axis)
            shape[rank++] = i->shape[d];
    return tj_type_tile(v->c, dt, rank, shape);
}

static void check_reduce(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_type t = arg_type(v, r, 0);
    if (!tj_verify_tile_arg(v, r, 0))
        return;
    if (!in_class(dtype_of(v, t), DC_NUM)) {
        tj_verify_fail(v, r, "takes numbers, not %s", tj_dtype_name(dtype_of(v, t)));
        return;
    }
    int scan = in->op == TJ_OP_CUMSUM || in->op == TJ_OP_CUMPROD;
    int arg = in->op == TJ_OP_ARGMAX || in->op == TJ_OP_ARGMIN;
    if (!expect_axis(v, r, info(v, t)->rank, !scan))
        return;
    if (scan)
        tj_verify_result(v, r, t);
    else
        tj_verify_result(v, r, drop_axis(v, t, in->imm, arg ? TJ_DT_I32 : dtype_of(v, t)));
}

/* scan's operands: tiles of one shape; the result: the tuple of their types. */
static void check_scan(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_type *types = tj_alloc(v->c, sizeof(tj_type) * in->nargs);
    for (uint32_t a = 0; a < in->nargs; a++) {
        if (!tj_verify_tile_arg(v, r, a))
            return;
        types[a] = arg_type(v, r, a);
        if (!same_shape(info(v, types[a]), info(v, types[0]))) {
            tj_verify_fail(v, r, "operand shapes differ: %s vs %s", TS(types[0]), TS(types[a]));
            return;
        }
    }
    if (expect_axis(v, r, info(v, types[0])->rank, 0))
        tj_verify_result(v, r, tj_type_tuple(v->c, in->nargs, types));
}

static void check_sort(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_type keys = arg_type(v, r, 0);
    if (!tj_verify_tile_arg(v, r, 0) || (in->nargs == 2 && !tj_verify_tile_arg(v, r, 1)))
        return;
    if (in->nargs == 2 && !same_shape(info(v, keys), info(v, arg_type(v, r, 1)))) {
        tj_verify_fail(v, r, "keys %s and values %s differ in shape", TS(keys), TS(arg_type(v, r, 1)));
        return;
    }
    if (in->flags & ~(uint32_t)TJ_SORT_DESCENDING)
        tj_verify_fail(v, r, "unknown sort flags 0x%x", in->flags);
    if (!expect_axis(v, r, info(v, keys)->rank, 0))
        return;
    tj_type kv[2] = {keys, in->nargs == 2 ? arg_type(v, r, 1) : TJ_TYPE_NONE};
    tj_verify_result(v, r, in->nargs == 2 ? tj_type_tuple(v->c, 2, kv) : keys);
}

/* counting_sort: a 1-D integer tile; the result (i32[n], i32[R]), R a power
 * of two from 2 to 256 */
static void check_counting_sort(V *v, tj_ref r)
{
    tj_type d = arg_type(v, r, 0);
    if (!tj_verify_tile_arg(v, r, 0))
        return;
    const tj_type_info *di = info(v, d), *ri = info(v, inst(v, r)->type);
    if (di->rank != 1 || !tj_dtype_is_int(di->dtype)) {
        tj_verify_fail(v, r, "sorts a 1-D integer tile, not %s", TS(d));
        return;
    }
    int32_t buckets = ri->kind == TJ_TK_TUPLE && ri->nelems == 2 && info(v, ri->elems[1])->rank == 1
                          ? info(v, ri->elems[1])->shape[0] : 0;
    if (buckets < 2 || buckets > 256 || (buckets & (buckets - 1))) {
        tj_verify_fail(v, r, "the result must be (i32[n], i32[R]), R a power of two from 2 to 256");
        return;
    }
    tj_type out[2] = {tj_type_tile(v->c, TJ_DT_I32, 1, di->shape), tj_type_tile(v->c, TJ_DT_I32, 1, &buckets)};
    tj_verify_result(v, r, tj_type_tuple(v->c, 2, out));
}

/* ---- dot ----------------------------------------------------------------------------- */

static tj_dtype dot_acc_dtype(tj_dtype in)
{
    switch (in) {
    case TJ_DT_F16: case TJ_DT_BF16: case TJ_DT_F32: return TJ_DT_F32;
    case TJ_DT_I8: return TJ_DT_I32;
    case TJ_DT_F64: return TJ_DT_F64;
    default: return TJ_DT_INVALID;
    }
}

static int dot_shapes_fit(const tj_type_info *a, const tj_type_info *b, const tj_type_info *c)
{
    int n = a->rank;
    if ((n != 2 && n != 3) || b->rank != n || c->rank != n)
        return 0;
    if (n == 3 && (b->shape[0] != a->shape[0] || c->shape[0] != a->shape[0]))
        return 0;
    return c->shape[n - 2] == a->shape[n - 2] && c->shape[n - 1] == b->shape[n - 1];
}

static void check_dot(V *v, tj_ref r)
{
    if (!tj_verify_tile_arg(v, r, 0) || !tj_verify_tile_arg(v, r, 1) || !tj_verify_tile_arg(v, r, 2))
        return;
    tj_type ta = arg_type(v, r, 0), tb = arg_type(v, r, 1), tc = arg_type(v, r, 2);
    const tj_type_info *a = info(v, ta), *b = info(v, tb), *c = info(v, tc);
    int n = a->rank;
    if (a->dtype != b->dtype)
        tj_verify_fail(v, r, "input types differ: %s x %s", TS(ta), TS(tb));
    else if (dot_acc_dtype(a->dtype) == TJ_DT_INVALID)
        tj_verify_fail(v, r, "takes f16, bf16, f32, f64 or i8 inputs, not %s", tj_dtype_name(a->dtype));
    else if (c->dtype != dot_acc_dtype(a->dtype))
        tj_verify_fail(v, r, "%s inputs accumulate in %s, not %s", tj_dtype_name(a->dtype),
                       tj_dtype_name(dot_acc_dtype(a->dtype)), tj_dtype_name(c->dtype));
    else if (n >= 2 && b->rank == n && a->shape[n - 1] != b->shape[n - 2])
        tj_verify_fail(v, r, "inner dimensions differ: %s x %s", TS(ta), TS(tb));
    else if (!dot_shapes_fit(a, b, c))
        tj_verify_fail(v, r, "shapes do not fit [M, K] x [K, N] + [M, N] (or batched): %s x %s + %s",
                       TS(ta), TS(tb), TS(tc));
    else if (inst(v, r)->imm < TJ_DOT_DEFAULT || inst(v, r)->imm > TJ_DOT_TF32)
        tj_verify_fail(v, r, "unknown precision %" PRId64, inst(v, r)->imm);
    else
        tj_verify_result(v, r, tc);
}

/* ---- dispatch -------------------------------------------------------------------------- */

void tj_verify_op(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    switch (in->op) {
    case TJ_OP_PARAM: check_param(v, r); break;
    case TJ_OP_ARG:
        if (in->type == TJ_TYPE_NONE)
            tj_verify_fail(v, r, "a block argument needs a type");
        break;
    case TJ_OP_CONST: check_const(v, r); break;
    case TJ_OP_YIELD: tj_verify_result(v, r, TJ_TYPE_NONE); break;
    case TJ_OP_PROJ: check_proj(v, r); break;
    case TJ_OP_PROGRAM_ID: case TJ_OP_NUM_PROGRAMS: case TJ_OP_DIM: case TJ_OP_ARANGE:
        check_index_op(v, r);
        break;
    case TJ_OP_BROADCAST: case TJ_OP_RESHAPE: case TJ_OP_PERMUTE: check_shape_op(v, r); break;
    case TJ_OP_GATHER: check_gather(v, r); break;
    case TJ_OP_REDUCE_SUM: case TJ_OP_REDUCE_PROD: case TJ_OP_REDUCE_MAX: case TJ_OP_REDUCE_MIN:
    case TJ_OP_ARGMAX: case TJ_OP_ARGMIN: case TJ_OP_CUMSUM: case TJ_OP_CUMPROD:
        check_reduce(v, r);
        break;
    case TJ_OP_SCAN: check_scan(v, r); break;
    case TJ_OP_SORT: check_sort(v, r); break;
    case TJ_OP_COUNTING_SORT: check_counting_sort(v, r); break;
    case TJ_OP_DOT: check_dot(v, r); break;
    case TJ_OP_VIEW: case TJ_OP_LOAD: case TJ_OP_STORE:
    case TJ_OP_ATOMIC_ADD: case TJ_OP_ATOMIC_MAX: case TJ_OP_ATOMIC_MIN:
    case TJ_OP_LOAD_ACQUIRE: case TJ_OP_STORE_RELEASE: case TJ_OP_LOAD_RELAXED: case TJ_OP_STORE_RELAXED:
        tj_verify_memory_op(v, r);
        break;
    case TJ_OP_FOR: case TJ_OP_IF: case TJ_OP_WHILE: tj_verify_control_op(v, r); break;
    default:
        if (tj_op_get(in->op)->flags & TJ_OPF_ELEM)
            check_elementwise(v, r);
        else if (tj_op_get(in->op)->flags & TJ_OPF_SIMT)
            tj_verify_simt_op(v, r);
        break;
    }
}
