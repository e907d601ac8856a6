/* Reductions (sum, prod, max, min) and argmax/argmin along one axis, or
 * over the whole tile (axis -1), split as [outer, len, inner]. f16/bf16
 * accumulate in f32 and round once; max/min propagate NaN. Lines along
 * the last axis accumulate in a scalar with reassociation allowed (so
 * they vectorize: sums may differ from the interpreter's index order in
 * the last bits); other axes accumulate into the result row, which keeps
 * the order and vectorizes over the inner axis. */
#include <math.h>

#include "codegen/llvm/llvm.h"

static tj_op combine_op(tj_op op)
{
    switch (op) {
    case TJ_OP_REDUCE_SUM: return TJ_OP_ADD;
    case TJ_OP_REDUCE_PROD: return TJ_OP_MUL;
    case TJ_OP_REDUCE_MAX: return TJ_OP_MAX;
    default: return TJ_OP_MIN;
    }
}

static LLVMValueRef at(lg *g, LLVMValueRef base, uint64_t step, LLVMValueRef j)
{
    return LLVMBuildNSWAdd(g->b, base, LLVMBuildNSWMul(g->b, j, lg_i64(g, (int64_t)step), ""), "");
}

/* x OP identity == x for every x: -0 for sums (-0 + -0 is -0), infinities
 * for max/min (NaN still wins), the extremes of integers. */
static LLVMValueRef identity(lg *g, tj_op op, tj_dtype dt)
{
    LLVMTypeRef t = lg_type(g, dt);
    int sign = tj_dtype_is_signed(dt), bits = tj_dtype_bits(dt);
    if (tj_dtype_is_float(dt))
        return LLVMConstReal(t, op == TJ_OP_ADD ? -0.0 : op == TJ_OP_MUL ? 1.0 : op == TJ_OP_MAX ? -INFINITY : INFINITY);
    uint64_t top = bits >= 64 ? ~0ull : (1ull << bits) - 1, smin = 1ull << (bits - 1);
    uint64_t v = op == TJ_OP_ADD ? 0 : op == TJ_OP_MUL ? 1 : op == TJ_OP_MAX ? (sign ? smin : 0) : (sign ? smin - 1 : top);
    return LLVMConstInt(t, v, 0);
}

/* ---- float max/min along a line ----
 * llvm.maximum (NaN wins, +0 above -0) is six vector ops a block with
 * AVX-512 (five with AVX2), and its horizontal step ends in scalar code.
 * Along a line it is instead maxnum/minnum that may assume no NaN (one
 * vmaxps) with whether any element is NaN beside it (a compare and a mask
 * or): a NaN makes the running value poison, which is frozen and replaced
 * by NaN after the line. A zero result, whose sign maxnum does not keep,
 * is settled by a scalar pass over the line that looks for a zero of the
 * wanted sign (+0 for max, -0 for min): rare, and off the hot loop. */
typedef struct extreme_acc {
    LLVMValueRef val, nan; /* one-element buffers */
    int max;
} extreme_acc;

static int float_extreme(tj_op op, tj_dtype dt) { return tj_dtype_is_float(dt) && (op == TJ_OP_MAX || op == TJ_OP_MIN); }

static extreme_acc extreme_begin(lg *g, tj_dtype dt, int max)
{
    extreme_acc a = {lg_buffer(g, lg_type(g, dt), 1), lg_buffer(g, g->i1, 1), max};
    return a;
}

static void extreme_reset(lg *g, const extreme_acc *a, tj_dtype dt)
{
    LLVMBuildStore(g->b, LLVMConstReal(lg_type(g, dt), a->max ? -INFINITY : INFINITY), a->val);
    LLVMBuildStore(g->b, LLVMConstInt(g->i1, 0, 0), a->nan);
}

static void extreme_step(lg *g, const extreme_acc *a, tj_dtype dt, LLVMValueRef v)
{
    LLVMValueRef mv[2] = {LLVMBuildLoad2(g->b, lg_type(g, dt), a->val, ""), v};
    LLVMValueRef m = lg_intrinsic(g, a->max ? "llvm.maxnum" : "llvm.minnum", mv, 2);
    LLVMSetFastMathFlags(m, LLVMFastMathNoNaNs | LLVMFastMathNoSignedZeros | LLVMFastMathAllowReassoc);
    LLVMBuildStore(g->b, m, a->val);
    LLVMValueRef nan = LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, "");
    LLVMBuildStore(g->b, LLVMBuildOr(g->b, LLVMBuildLoad2(g->b, g->i1, a->nan, ""), nan, ""), a->nan);
}

/* Whether the line held a NaN; then its running extreme is poison, which
 * nothing may branch on or freeze (InstCombine would push a freeze into the
 * loop and drop the nnan that vectorizes it): selects pass over it. */
static LLVMValueRef extreme_saw_nan(lg *g, const extreme_acc *a)
{
    return LLVMBuildLoad2(g->b, g->i1, a->nan, "");
}

/* The line's extreme, NaN where an element was. */
static LLVMValueRef extreme_result(lg *g, const extreme_acc *a, tj_dtype dt)
{
    LLVMValueRef v = LLVMBuildLoad2(g->b, lg_type(g, dt), a->val, "");
    return LLVMBuildSelect(g->b, extreme_saw_nan(g, a), LLVMConstReal(lg_type(g, dt), NAN), v, "");
}

/* A zero extreme becomes the wanted zero when the line [base, base + len)
 * of x holds one (its bits: 0 for +0, the sign bit alone for -0), the
 * other zero otherwise: a scalar search that stops at the first (rows of
 * a tile's padding are all +0, e.g. attention's scores past S). */
static void extreme_zero_sign(lg *g, const extreme_acc *a, tj_ref x, tj_dtype dt, LLVMValueRef base, uint64_t len)
{
    LLVMTypeRef t = lg_type(g, dt), it = t == g->f64 ? g->i64 : g->i32;
    LLVMValueRef v = LLVMBuildLoad2(g->b, t, a->val, "");
    LLVMValueRef is_zero = LLVMBuildFCmp(g->b, LLVMRealOEQ, v, LLVMConstReal(t, 0.0), "");
    LLVMBasicBlockRef zero = LLVMAppendBasicBlockInContext(g->lc, g->fn, "zero_sign");
    LLVMBasicBlockRef found = LLVMAppendBasicBlockInContext(g->lc, g->fn, "zero_found");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->lc, g->fn, "zero_next");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "sign_done");
    LLVMBuildCondBr(g->b, LLVMBuildSelect(g->b, extreme_saw_nan(g, a), LLVMConstInt(g->i1, 0, 0), is_zero, ""), zero, done);
    LLVMPositionBuilderAtEnd(g->b, zero);
    LLVMValueRef want = LLVMConstInt(it, a->max ? 0 : 1ull << (it == g->i64 ? 63 : 31), 0);
    LLVMValueRef pz = LLVMConstReal(t, 0.0), nz = LLVMConstReal(t, -0.0);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)len), "zeros");
    LLVMValueRef bits = LLVMBuildBitCast(g->b, lg_elem(g, x, LLVMBuildNSWAdd(g->b, base, j.i, "")), it, "");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, bits, want, ""), found, next);
    LLVMPositionBuilderAtEnd(g->b, next);
    lg_loop_end_scalar(g, &j); /* at the loop's exit: none found */
    LLVMBuildStore(g->b, a->max ? nz : pz, a->val);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, found);
    LLVMBuildStore(g->b, a->max ? pz : nz, a->val);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
}

/* One line per result element along the last axis: acc in a register,
 * from the identity over the whole line (a trip count the vector width
 * divides, for the usual power-of-two tiles). */
static void extreme_lines(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, lg_lines l)
{
    extreme_acc a = extreme_begin(g, dt, op == TJ_OP_MAX);
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_lines_outer(g, l), "outer");
    LLVMValueRef base = LLVMBuildNSWMul(g->b, o.i, lg_i64(g, (int64_t)l.len), "");
    extreme_reset(g, &a, dt);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.len), "line");
    extreme_step(g, &a, dt, lg_elem(g, x, LLVMBuildNSWAdd(g->b, base, j.i, "")));
    lg_loop_end(g, &j);
    extreme_zero_sign(g, &a, x, dt, base, l.len);
    lg_set_elem(g, r, o.i, lg_round(g, dt, extreme_result(g, &a, dt)));
    lg_loop_end(g, &o);
}

static void reduce_lines(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, lg_lines l)
{
    if (float_extreme(op, dt)) {
        extreme_lines(g, r, x, op, dt, l);
        return;
    }
    LLVMValueRef acc = lg_buffer(g, lg_type(g, dt), 1);
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_lines_outer(g, l), "outer");
    LLVMValueRef base = LLVMBuildNSWMul(g->b, o.i, lg_i64(g, (int64_t)l.len), "");
    LLVMBuildStore(g->b, identity(g, op, dt), acc);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.len), "line");
    LLVMValueRef v = lg_elem(g, x, LLVMBuildNSWAdd(g->b, base, j.i, ""));
    LLVMValueRef c = lg_binary(g, op, dt, LLVMBuildLoad2(g->b, lg_type(g, dt), acc, ""), v);
    lg_allow_reassoc(c);
    LLVMBuildStore(g->b, c, acc);
    lg_loop_end(g, &j);
    lg_set_elem(g, r, o.i, lg_round(g, dt, LLVMBuildLoad2(g->b, lg_type(g, dt), acc, "")));
    lg_loop_end(g, &o);
}

/* Inner axes: result row = first row, then row = combine(row, next row). */
static void reduce_rows(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, lg_lines l)
{
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_lines_outer(g, l), "outer");
    LLVMValueRef rbase = LLVMBuildNSWMul(g->b, o.i, lg_i64(g, (int64_t)l.inner), "");
    LLVMValueRef xbase = LLVMBuildNSWMul(g->b, o.i, lg_i64(g, (int64_t)(l.len * l.inner)), "");
    lg_loop in = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.inner), "inner");
    lg_set_elem(g, r, LLVMBuildNSWAdd(g->b, rbase, in.i, ""), lg_elem(g, x, LLVMBuildNSWAdd(g->b, xbase, in.i, "")));
    lg_loop_end(g, &in);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 1), lg_i64(g, (int64_t)l.len), "line");
    LLVMValueRef row = at(g, xbase, l.inner, j.i);
    in = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.inner), "inner");
    LLVMValueRef ri = LLVMBuildNSWAdd(g->b, rbase, in.i, "");
    LLVMValueRef v = lg_elem(g, x, LLVMBuildNSWAdd(g->b, row, in.i, ""));
    lg_set_elem(g, r, ri, lg_binary(g, op, dt, lg_elem(g, r, ri), v));
    lg_loop_end(g, &in);
    lg_loop_end(g, &j);
    if (dt == TJ_DT_F16 || dt == TJ_DT_BF16) {
        in = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.inner), "round");
        LLVMValueRef ri2 = LLVMBuildNSWAdd(g->b, rbase, in.i, "");
        lg_set_elem(g, r, ri2, lg_round(g, dt, lg_elem(g, r, ri2)));
        lg_loop_end(g, &in);
    }
    lg_loop_end(g, &o);
}

/* argmax/argmin in two vectorizable passes per line: the extreme (max/min
 * propagate NaN, so it is NaN when any element is), then the first index
 * holding it as an unsigned-min reduction over (match ? j : len). NaN
 * counts as the maximum: argmax finds the first NaN, argmin ignores NaN
 * unless every element is one (then index 0, as a sequential scan gives);
 * -0 and +0 tie, so the first of them wins. */
static LLVMValueRef matches(lg *g, int max, tj_dtype dt, LLVMValueRef v, LLVMValueRef ext)
{
    if (!tj_dtype_is_float(dt))
        return LLVMBuildICmp(g->b, LLVMIntEQ, v, ext, "");
    LLVMValueRef ext_nan = LLVMBuildFCmp(g->b, LLVMRealUNO, ext, ext, "");
    LLVMValueRef v_nan = LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, "");
    LLVMValueRef eq = LLVMBuildFCmp(g->b, LLVMRealOEQ, v, ext, "");
    return LLVMBuildSelect(g->b, ext_nan, max ? v_nan : LLVMConstInt(g->i1, 0, 0), eq, "");
}

/* Pass 1 for argmin: the minimum of the numbers (NaN skipped: it is the
 * maximum, never the minimum unless all are NaN). */
static LLVMValueRef extreme_of(lg *g, int max, tj_dtype dt, LLVMValueRef acc, LLVMValueRef v)
{
    if (!tj_dtype_is_float(dt) || max)
        return lg_binary(g, max ? TJ_OP_MAX : TJ_OP_MIN, dt, acc, v);
    LLVMValueRef av[2] = {acc, v};
    return lg_intrinsic(g, "llvm.minnum", av, 2);
}

/* Where a float argmax's line may stop: past the end of a load's inside
 * part when its other is -inf, rounded up to whole vectors (so the passes
 * keep their vector loops without a scalar remainder: a trip count LLVM
 * sees as a multiple of the vector). The elements past it are -inf, never
 * larger than what comes before them, and the first of a -inf maximum is
 * element 0 (a start before 0 pads the head with -inf too; a line with
 * nothing inside gives index 0, as the whole line does). argmax.tj's lines
 * of 700 in 1024 read 1024 twice. argmin keeps the whole line: with every
 * inside element NaN, its answer is the padding's first +inf. */
static LLVMValueRef arg_line_end(lg *g, tj_ref x, int max, tj_dtype dt, lg_lines l)
{
    LLVMValueRef all = lg_i64(g, (int64_t)l.len), other, end;
    int64_t w = lg_lanes(g, dt);
    if (!max || !tj_dtype_is_float(dt) || l.inner != 1 || l.len % (uint64_t)w ||
        !(end = lg_load_inside_end(g, x, lg_ti(g, x)->rank - 1, l.len, &other)))
        return all;
    LLVMBool loses;
    if (!other || !LLVMIsAConstantFP(other) || LLVMConstRealGetDouble(other, &loses) != -INFINITY)
        return all;
    return LLVMBuildAnd(g->b, LLVMBuildAdd(g->b, end, lg_i64(g, w - 1), ""), lg_i64(g, -w), "");
}

static void arg_extreme(lg *g, tj_ref r, tj_ref x, int max, tj_dtype dt, lg_lines l)
{
    LLVMTypeRef t = lg_type(g, dt);
    /* indices as i32 (tiles hold fewer than 2^31 elements): twice the lanes of i64 */
    LLVMValueRef ext = lg_buffer(g, t, 1), where = lg_buffer(g, g->i32, 1), len = lg_i32(g, (int64_t)l.len);
    LLVMValueRef base, found;
    /* a float argmax needs the maximum and whether there is a NaN, not the
     * sign of a zero maximum (the matches compare equal): maxnum and a flag */
    int flagged = max && tj_dtype_is_float(dt);
    extreme_acc fa = flagged ? extreme_begin(g, dt, 1) : (extreme_acc){0};
    LLVMValueRef end = arg_line_end(g, x, max, dt, l);
    lg_loop o = lg_lines_begin(g, l, &base);
    if (flagged)
        extreme_reset(g, &fa, dt);
    else
        LLVMBuildStore(g->b, lg_elem(g, x, base), ext);
    /* from 0, not 1: max/min of x[0] with itself changes nothing, and a trip
     * count the vector divides leaves no scalar tail of NaN-aware maxima */
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), end, "extreme");
    LLVMValueRef v = lg_elem(g, x, at(g, base, l.inner, j.i));
    if (flagged) {
        extreme_step(g, &fa, dt, v);
    } else {
        LLVMValueRef e = extreme_of(g, max, dt, LLVMBuildLoad2(g->b, t, ext, ""), v);
        lg_allow_reassoc(e);
        LLVMBuildStore(g->b, e, ext);
    }
    lg_loop_end(g, &j);
    found = flagged ? extreme_result(g, &fa, dt) : LLVMBuildLoad2(g->b, t, ext, "");
    LLVMBuildStore(g->b, len, where);
    j = lg_loop_begin(g, lg_i64(g, 0), end, "first");
    LLVMValueRef hit = matches(g, max, dt, lg_elem(g, x, at(g, base, l.inner, j.i)), found);
    LLVMValueRef cand[2] = {LLVMBuildLoad2(g->b, g->i32, where, ""),
                            LLVMBuildSelect(g->b, hit, LLVMBuildTrunc(g->b, j.i, g->i32, ""), len, "")};
    LLVMBuildStore(g->b, lg_intrinsic(g, "llvm.umin", cand, 2), where);
    lg_loop_end(g, &j);
    LLVMValueRef w = LLVMBuildLoad2(g->b, g->i32, where, ""); /* len: all NaN for argmin -> 0 */
    w = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, w, len, ""), lg_i32(g, 0), w, "");
    lg_set_elem(g, r, o.i, LLVMBuildSExtOrBitCast(g->b, w, lg_type(g, lg_ti(g, r)->dtype), ""));
    lg_loop_end(g, &o);
}

int lg_emit_reduce(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref x = in->args[0];
    const tj_type_info *xt = lg_ti(g, x);
    lg_lines l = lg_split_axis(xt, in->imm);
    if (in->imm < -1 || in->imm >= xt->rank || xt->rank == 0 || l.outer * l.inner != (lg_count(g, r) ? lg_count(g, r) : 1))
        return lg_fail(g, r, "axis does not fit the operand");
    LLVMValueRef rows = in->imm >= 1 ? lg_live_rows(g, r) : NULL; /* axis 0 stays: row i of the lines */
    if (rows)
        l.live_outer = LLVMBuildNSWMul(g->b, rows, lg_i64(g, (int64_t)(l.outer / (uint64_t)xt->shape[0])), "");
    lg_alloc_result(g, r);
    if (in->op == TJ_OP_ARGMAX || in->op == TJ_OP_ARGMIN)
        arg_extreme(g, r, x, in->op == TJ_OP_ARGMAX, xt->dtype, l);
    else if (l.inner == 1)
        reduce_lines(g, r, x, combine_op(in->op), xt->dtype, l);
    else
        reduce_rows(g, r, x, combine_op(in->op), xt->dtype, l);
    return 0;
}
