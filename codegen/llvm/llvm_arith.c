/* Elementwise binary arithmetic, bitwise ops, shifts and comparisons on
 * scalar values, and the loop of every elementwise op. Integers wrap at
 * their width; the interpreter's rules for division by 0 and -1, out of
 * range shifts and integer powers are spelled out with selects. Results
 * are not rounded here (f16/bf16 compute in f32): callers round. */
#include "codegen/llvm/llvm.h"

static LLVMValueRef zero_of(LLVMValueRef v) { return LLVMConstNull(LLVMTypeOf(v)); }
static LLVMValueRef ones_of(LLVMValueRef v) { return LLVMConstAllOnes(LLVMTypeOf(v)); }
static LLVMValueRef int_of(LLVMValueRef v, int64_t c) { return LLVMConstInt(LLVMTypeOf(v), (unsigned long long)c, 1); }

/* By zero: 0; signed by -1: the wrapped negation (div) or 0 (rem). */
static LLVMValueRef int_divide(lg *g, tj_op op, int sign, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef by0 = LLVMBuildICmp(b, LLVMIntEQ, y, zero_of(y), "");
    LLVMValueRef bym1 = sign ? LLVMBuildICmp(b, LLVMIntEQ, y, ones_of(y), "") : LLVMConstInt(g->i1, 0, 0);
    LLVMValueRef safe = LLVMBuildSelect(b, LLVMBuildOr(b, by0, bym1, ""), int_of(y, 1), y, "");
    LLVMValueRef q = op == TJ_OP_DIV ? (sign ? LLVMBuildSDiv(b, x, safe, "") : LLVMBuildUDiv(b, x, safe, ""))
                                     : (sign ? LLVMBuildSRem(b, x, safe, "") : LLVMBuildURem(b, x, safe, ""));
    if (op == TJ_OP_DIV)
        q = LLVMBuildSelect(b, bym1, LLVMBuildNeg(b, x, ""), q, "");
    else
        q = LLVMBuildSelect(b, bym1, zero_of(x), q, "");
    return LLVMBuildSelect(b, by0, zero_of(x), q, "");
}

/* Square and multiply over every bit of the exponent; a negative signed
 * exponent gives 0 except for the bases 1 and -1. */
static LLVMValueRef int_power(lg *g, int sign, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = g->b;
    unsigned bits = LLVMGetIntTypeWidth(LLVMTypeOf(x));
    LLVMValueRef p = int_of(x, 1), base = x, e = y;
    for (unsigned i = 0; i < bits; i++) {
        LLVMValueRef odd = LLVMBuildTrunc(b, e, g->i1, "");
        p = LLVMBuildSelect(b, odd, LLVMBuildMul(b, p, base, ""), p, "");
        base = LLVMBuildMul(b, base, base, "");
        e = LLVMBuildLShr(b, e, int_of(e, 1), "");
    }
    if (!sign)
        return p;
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, y, zero_of(y), "");
    LLVMValueRef one = LLVMBuildICmp(b, LLVMIntEQ, x, int_of(x, 1), "");
    LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, x, ones_of(x), "");
    LLVMValueRef odd = LLVMBuildTrunc(b, y, g->i1, "");
    LLVMValueRef m1pow = LLVMBuildSelect(b, odd, ones_of(x), int_of(x, 1), "");
    LLVMValueRef negp = LLVMBuildSelect(b, one, int_of(x, 1), LLVMBuildSelect(b, m1, m1pow, zero_of(x), ""), "");
    return LLVMBuildSelect(b, neg, negp, p, "");
}

/* Amounts outside [0, bits) shift everything out (all sign bits for an
 * arithmetic shift of a negative value). Unsigned comparison of the
 * amount catches negative signed amounts too. */
static LLVMValueRef int_shift(lg *g, tj_op op, int sign, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = g->b;
    unsigned bits = LLVMGetIntTypeWidth(LLVMTypeOf(x));
    LLVMValueRef out = LLVMBuildICmp(b, LLVMIntUGE, y, int_of(y, bits), "");
    LLVMValueRef amount = LLVMBuildSelect(b, out, zero_of(y), y, "");
    if (op == TJ_OP_SHL)
        return LLVMBuildSelect(b, out, zero_of(x), LLVMBuildShl(b, x, amount, ""), "");
    if (!sign)
        return LLVMBuildSelect(b, out, zero_of(x), LLVMBuildLShr(b, x, amount, ""), "");
    LLVMValueRef all = LLVMBuildAShr(b, x, int_of(x, bits - 1), "");
    return LLVMBuildSelect(b, out, all, LLVMBuildAShr(b, x, amount, ""), "");
}

static LLVMValueRef int_binary(lg *g, tj_op op, tj_dtype dt, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = g->b;
    int sign = tj_dtype_is_signed(dt);
    switch (op) {
    case TJ_OP_ADD: return LLVMBuildAdd(b, x, y, "");
    case TJ_OP_SUB: return LLVMBuildSub(b, x, y, "");
    case TJ_OP_MUL: return LLVMBuildMul(b, x, y, "");
    case TJ_OP_AND: return LLVMBuildAnd(b, x, y, "");
    case TJ_OP_OR: return LLVMBuildOr(b, x, y, "");
    case TJ_OP_XOR: return LLVMBuildXor(b, x, y, "");
    case TJ_OP_DIV:
    case TJ_OP_REM: return int_divide(g, op, sign, x, y);
    case TJ_OP_POW: return int_power(g, sign, x, y);
    case TJ_OP_SHL:
    case TJ_OP_SHR: return int_shift(g, op, sign, x, y);
    case TJ_OP_MAX:
    case TJ_OP_MIN: {
        LLVMIntPredicate p = op == TJ_OP_MAX ? (sign ? LLVMIntSGT : LLVMIntUGT) : (sign ? LLVMIntSLT : LLVMIntULT);
        return LLVMBuildSelect(b, LLVMBuildICmp(b, p, x, y, ""), x, y, "");
    }
    default: return NULL;
    }
}

static LLVMValueRef float_binary(lg *g, tj_op op, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef xy[2] = {x, y};
    int f64 = LLVMTypeOf(x) == g->f64;
    switch (op) {
    case TJ_OP_ADD: return LLVMBuildFAdd(b, x, y, "");
    case TJ_OP_SUB: return LLVMBuildFSub(b, x, y, "");
    case TJ_OP_MUL: return LLVMBuildFMul(b, x, y, "");
    case TJ_OP_DIV: return LLVMBuildFDiv(b, x, y, "");
    case TJ_OP_REM: return LLVMBuildFRem(b, x, y, "");
    case TJ_OP_MAX: return lg_intrinsic(g, "llvm.maximum", xy, 2); /* NaN wins; +0 above -0 */
    case TJ_OP_MIN: return lg_intrinsic(g, "llvm.minimum", xy, 2);
    case TJ_OP_POW: {
        LLVMTypeRef t = LLVMTypeOf(x), ps[2] = {t, t};
        return lg_call_extern(g, f64 ? "pow" : "powf", LLVMFunctionType(t, ps, 2, 0), xy, 2);
    }
    default: return NULL;
    }
}

LLVMValueRef lg_binary(lg *g, tj_op op, tj_dtype dt, LLVMValueRef a, LLVMValueRef b)
{
    return tj_dtype_is_float(dt) ? float_binary(g, op, a, b) : int_binary(g, op, dt, a, b);
}

/* Float comparisons are ordered except ne (NaN != NaN), as in C. */
LLVMValueRef lg_compare(lg *g, tj_op op, tj_dtype dt, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef c;
    if (tj_dtype_is_float(dt)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                               LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        c = LLVMBuildFCmp(g->b, fp[op - TJ_OP_EQ], a, b, "");
    } else {
        static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
        static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
        c = LLVMBuildICmp(g->b, (tj_dtype_is_signed(dt) ? sp : up)[op - TJ_OP_EQ], a, b, "");
    }
    return lg_bool(g, c);
}

/* fma: fused on floats, the wrapped a * b + c on integers. */
static LLVMValueRef fused(lg *g, tj_dtype dt, LLVMValueRef *abc)
{
    if (tj_dtype_is_float(dt))
        return lg_intrinsic(g, "llvm.fma", abc, 3);
    return LLVMBuildAdd(g->b, LLVMBuildMul(g->b, abc[0], abc[1], ""), abc[2], "");
}

/* x / s in f32 for an s the loop does not change, without a division per
 * element (a 512-bit vdivps holds the divider 10-16 cycles: a third of
 * softmax's `e / sum(e)` time): q = (double)x * (1.0 / s), hoisted
 * reciprocal, is within 2^-52 of x/s, and a quotient of floats that is not
 * a midpoint of f32's rounding lies at least 2^-49 from every one, so q
 * rounds as x/s does. Exact midpoints occur only among subnormal results
 * (3 * 2^-149 / 6 = 2^-150, which rounds to even: 0); they have 25
 * significant bits or fewer, so rounding q to 50 bits (its bits + 4, the
 * low 3 cleared: at most 2^-50 away, which keeps the other quotients on
 * their side) puts it exactly on the midpoint, and the narrowing breaks the
 * tie to even as the division does. The same bits as fdiv for every x and
 * s: zeros, infinities, NaNs (whose low bits are 0 after the widening),
 * s = 0 and overflow follow from the f64 product's own, which never
 * underflows f64 (|x/s| >= 2^-277). bench/NOTES.md, tenth session. */
static LLVMValueRef divide_by_invariant(lg *g, LLVMValueRef x, LLVMValueRef s)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef r = LLVMBuildFDiv(b, LLVMConstReal(g->f64, 1.0), LLVMBuildFPExt(b, s, g->f64, ""), "");
    LLVMValueRef q = LLVMBuildFMul(b, LLVMBuildFPExt(b, x, g->f64, ""), r, "");
    LLVMValueRef bits = LLVMBuildAdd(b, LLVMBuildBitCast(b, q, g->i64, ""), lg_i64(g, 4), "");
    bits = LLVMBuildAnd(b, bits, lg_i64(g, ~(int64_t)7), "");
    return LLVMBuildFPTrunc(b, LLVMBuildBitCast(b, bits, g->f64, ""), g->f32, "");
}

/* One element of elementwise instruction r from its operands' elements. */
static LLVMValueRef compute(lg *g, tj_ref r, LLVMValueRef *x)
{
    const tj_inst *in = lg_in(g, r);
    tj_dtype dt = lg_ti(g, r)->dtype, xt = lg_ti(g, in->args[0])->dtype;
    if (tj_op_get(in->op)->flags & TJ_OPF_CMP)
        return lg_compare(g, in->op, xt, x[0], x[1]);
    LLVMValueRef s;
    if (in->op == TJ_OP_DIV && LLVMTypeOf(x[0]) == g->f32 && lg_ti(g, r)->rank > 0 &&
        (s = lg_same_everywhere(g, in->args[1])))
        return lg_round(g, dt, divide_by_invariant(g, x[0], s));
    switch (in->op) {
    case TJ_OP_SELECT: return LLVMBuildSelect(g->b, lg_truth(g, x[0]), x[1], x[2], "");
    case TJ_OP_CAST: return lg_cast(g, dt, xt, x[0]);
    case TJ_OP_BITCAST: /* through the memory forms: f16/bf16 compute in f32 */
        return lg_from_mem(g, dt, LLVMBuildBitCast(g->b, lg_to_mem(g, xt, x[0]), lg_mem_type(g, dt), ""));
    case TJ_OP_FMA: return lg_round(g, dt, fused(g, dt, x));
    default: break;
    }
    LLVMValueRef v = in->nargs == 1 ? lg_unary(g, in->op, dt, x[0]) : lg_binary(g, in->op, dt, x[0], x[1]);
    return v ? lg_round(g, dt, v) : NULL;
}

/* Fusion: a tile with one use, in its own block, by an op that reads each
 * of its elements once (elementwise ops, the value or mask of a store,
 * reductions) is computed inside that op's loop instead of in a loop and
 * a buffer of its own. Its operands still hold their values there: a
 * buffer is rewritten only when its instruction runs again, after every
 * use in the block (loads are never fused, so memory does not matter). */
int lg_fusable(const lg *g, tj_ref r)
{
    tj_ref u = g->user[r];
    if (g->uses[r] != 1 || !u || lg_ti(g, r)->rank == 0 || lg_in(g, u)->block != lg_in(g, r)->block)
        return 0;
    switch (lg_in(g, u)->op) {
    case TJ_OP_STORE:
        return lg_in(g, u)->args[0] != r;
    case TJ_OP_REDUCE_SUM: case TJ_OP_REDUCE_PROD: case TJ_OP_REDUCE_MAX:
    case TJ_OP_REDUCE_MIN: case TJ_OP_ARGMAX: case TJ_OP_ARGMIN: return 1;
    default: return (tj_op_get(lg_in(g, u)->op)->flags & TJ_OPF_ELEM) != 0;
    }
}

/* arange and the broadcast of a scalar need no buffer wherever their one
 * user reads elements: not a yield, a loop's initial value or a reshape,
 * which take the buffer itself. */
int lg_fusable_index(const lg *g, tj_ref r)
{
    tj_ref u = g->user[r];
    tj_op op = u ? lg_in(g, u)->op : TJ_OP_INVALID;
    return g->uses[r] == 1 && u && op != TJ_OP_YIELD && op != TJ_OP_FOR && op != TJ_OP_WHILE &&
           op != TJ_OP_RESHAPE;
}

LLVMValueRef lg_fused_elem(lg *g, tj_ref r, LLVMValueRef i)
{
    const tj_inst *in = lg_in(g, r);
    if (in->op == TJ_OP_ARANGE)
        return LLVMBuildTrunc(g->b, i, lg_type(g, lg_ti(g, r)->dtype), "");
    if (in->op == TJ_OP_BROADCAST) /* of a scalar */
        return lg_elem(g, in->args[0], i);
    if (in->op == TJ_OP_LOAD)
        return lg_fused_load(g, r, i);
    LLVMValueRef x[3];
    for (uint32_t a = 0; a < in->nargs; a++)
        x[a] = lg_elem(g, in->args[a], i);
    return compute(g, r, x);
}

/* A body argument that r's loop reads at its own index, once (an operand,
 * or one of an operand fused into the loop), and that r may overwrite
 * (lg_overwritable_arg); TJ_NONE if none. r then computes into the
 * argument's buffer, the loop's own: element i is read before it is
 * written, and the yield that carries r on copies nothing (matmul.tj's
 * splitk_sum, `acc = acc + load(...)`, spent a third of its time copying
 * its 16 KiB tile back each trip; attention's `acc * alpha + dot(...)`). */
static tj_ref carried_operand(const lg *g, tj_ref r, tj_ref x)
{
    const tj_inst *in = lg_in(g, x);
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_ref y = in->args[a];
        if (lg_in(g, y)->type == lg_in(g, r)->type && lg_overwritable_arg(g, r, y))
            return y;
        tj_ref inner = TJ_NONE;
        if (lg_val(g, y)->fused && (tj_op_get(lg_in(g, y)->op)->flags & TJ_OPF_ELEM) && lg_in(g, y)->type == lg_in(g, r)->type)
            inner = carried_operand(g, r, y);
        if (inner)
            return inner;
    }
    return TJ_NONE;
}

int lg_emit_elementwise(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    if (in->nargs < 1 || in->nargs > 3)
        return lg_fail(g, r, "elementwise op with an unexpected operand count");
    if (lg_fusable(g, r)) {
        lg_val(g, r)->fused = 1;
        return 0;
    }
    tj_ref carried = carried_operand(g, r, r);
    if (carried)
        lg_val(g, r)->v = lg_val(g, carried)->v;
    else
        lg_alloc_result(g, r);
    lg_rows l;
    LLVMValueRef i = lg_rows_begin(g, &l, r), x[3];
    for (uint32_t a = 0; a < in->nargs; a++)
        x[a] = lg_elem(g, in->args[a], i);
    LLVMValueRef v = compute(g, r, x);
    if (!v)
        return lg_fail(g, r, "op does not apply to this dtype");
    lg_set_elem(g, r, i, v);
    lg_rows_end(g, &l);
    return 0;
}
