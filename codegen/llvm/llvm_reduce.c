/* Reductions (sum, prod, max, min) and argmax/argmin along one axis, or
 * over the whole tile (axis -1), split as [outer, len, inner]. f16/bf16
 * accumulate in f32 and round once; max/min propagate NaN. Lines along
 * the last axis accumulate in a scalar with reassociation allowed (so
 * they vectorize: sums may differ from the interpreter's index order in
 * the last bits); other axes accumulate into the result row, which keeps
 * the order and vectorizes over the inner axis. */
#include "codegen/llvm/llvm.h"

typedef struct lines {
    uint64_t outer, len, inner;
} lines;

static lines split_axis(const tj_type_info *ti, int64_t axis)
{
    lines l = {1, 1, 1};
    for (int a = 0; a < ti->rank; a++) {
        uint64_t s = (uint64_t)ti->shape[a];
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

/* One line per result element along the last axis: acc in a register. */
static void reduce_lines(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, lines l)
{
    LLVMValueRef acc = lg_buffer(g, lg_type(g, dt), 1);
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.outer), "outer");
    LLVMValueRef base = LLVMBuildNSWMul(g->b, o.i, lg_i64(g, (int64_t)l.len), "");
    LLVMBuildStore(g->b, lg_elem(g, x, base), acc);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 1), lg_i64(g, (int64_t)l.len), "line");
    LLVMValueRef v = lg_elem(g, x, LLVMBuildNSWAdd(g->b, base, j.i, ""));
    LLVMValueRef c = lg_binary(g, op, dt, LLVMBuildLoad2(g->b, lg_type(g, dt), acc, ""), v);
    lg_allow_reassoc(c);
    LLVMBuildStore(g->b, c, acc);
    lg_loop_end(g, &j);
    lg_set_elem(g, r, o.i, lg_round(g, dt, LLVMBuildLoad2(g->b, lg_type(g, dt), acc, "")));
    lg_loop_end(g, &o);
}

/* Inner axes: result row = first row, then row = combine(row, next row). */
static void reduce_rows(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, lines l)
{
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.outer), "outer");
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

/* Whether v beats best: NaN is the maximum (it beats a number for argmax
 * and loses to one for argmin); ties keep the first. */
static LLVMValueRef beats(lg *g, int max, tj_dtype dt, LLVMValueRef v, LLVMValueRef best)
{
    LLVMBuilderRef b = g->b;
    if (!tj_dtype_is_float(dt))
        return lg_truth(g, lg_compare(g, max ? TJ_OP_GT : TJ_OP_LT, dt, v, best));
    LLVMValueRef vnan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), bnan = LLVMBuildFCmp(b, LLVMRealUNO, best, best, "");
    if (max)
        return LLVMBuildOr(b, LLVMBuildAnd(b, vnan, LLVMBuildNot(b, bnan, ""), ""),
                           LLVMBuildFCmp(b, LLVMRealOGT, v, best, ""), "");
    return LLVMBuildOr(b, LLVMBuildAnd(b, bnan, LLVMBuildNot(b, vnan, ""), ""),
                       LLVMBuildFCmp(b, LLVMRealOLT, v, best, ""), "");
}

static void arg_extreme(lg *g, tj_ref r, tj_ref x, int max, tj_dtype dt, lines l)
{
    LLVMTypeRef t = lg_type(g, dt);
    LLVMValueRef best = lg_buffer(g, t, 1), where = lg_buffer(g, g->i64, 1);
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)(l.outer * l.inner)), "outer");
    LLVMValueRef oo = LLVMBuildUDiv(g->b, o.i, lg_i64(g, (int64_t)l.inner), "");
    LLVMValueRef ii = LLVMBuildURem(g->b, o.i, lg_i64(g, (int64_t)l.inner), "");
    LLVMValueRef base = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, oo, lg_i64(g, (int64_t)(l.len * l.inner)), ""), ii, "");
    LLVMBuildStore(g->b, lg_elem(g, x, base), best);
    LLVMBuildStore(g->b, lg_i64(g, 0), where);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 1), lg_i64(g, (int64_t)l.len), "line");
    LLVMValueRef v = lg_elem(g, x, at(g, base, l.inner, j.i)), bv = LLVMBuildLoad2(g->b, t, best, "");
    LLVMValueRef win = beats(g, max, dt, v, bv);
    LLVMBuildStore(g->b, LLVMBuildSelect(g->b, win, v, bv, ""), best);
    LLVMBuildStore(g->b, LLVMBuildSelect(g->b, win, j.i, LLVMBuildLoad2(g->b, g->i64, where, ""), ""), where);
    lg_loop_end(g, &j);
    LLVMValueRef w = LLVMBuildLoad2(g->b, g->i64, where, "");
    lg_set_elem(g, r, o.i, LLVMBuildTrunc(g->b, w, lg_type(g, lg_ti(g, r)->dtype), ""));
    lg_loop_end(g, &o);
}

int lg_emit_reduce(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref x = in->args[0];
    const tj_type_info *xt = lg_ti(g, x);
    lines l = split_axis(xt, in->imm);
    if (in->imm < -1 || in->imm >= xt->rank || xt->rank == 0 || l.outer * l.inner != (lg_count(g, r) ? lg_count(g, r) : 1))
        return lg_fail(g, r, "axis does not fit the operand");
    lg_alloc_result(g, r);
    if (in->op == TJ_OP_ARGMAX || in->op == TJ_OP_ARGMIN)
        arg_extreme(g, r, x, in->op == TJ_OP_ARGMAX, xt->dtype, l);
    else if (l.inner == 1)
        reduce_lines(g, r, x, combine_op(in->op), xt->dtype, l);
    else
        reduce_rows(g, r, x, combine_op(in->op), xt->dtype, l);
    return 0;
}
