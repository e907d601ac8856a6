/* for and if. Every carried or merged value lives in a result buffer of
 * the for/if (a one-element one for a scalar, which mem2reg turns into a
 * phi); the body's arguments read the for's buffers directly, and each
 * iteration ends by copying the yielded values in. A yielded value that
 * is another carried buffer goes through a scratch copy first (swaps). */
#include "codegen/llvm/llvm.h"

static LLVMValueRef result_buffer(lg *g, tj_type t)
{
    const tj_type_info *ti = tj_type_get(g->ctx, t);
    return lg_buffer(g, lg_type(g, ti->dtype), ti->rank ? tj_type_numel(g->ctx, t) : 1);
}

static uint64_t numel(const lg *g, tj_type t)
{
    const tj_type_info *ti = tj_type_get(g->ctx, t);
    return ti->rank ? tj_type_numel(g->ctx, t) : 1;
}

/* dst (a result buffer) = value x. */
static void put(lg *g, LLVMValueRef dst, tj_ref x)
{
    const tj_type_info *ti = lg_ti(g, x);
    if (ti->rank == 0)
        LLVMBuildStore(g->b, lg_elem(g, x, lg_i64(g, 0)), dst);
    else if (lg_val(g, x)->v != dst)
        lg_copy(g, ti->dtype, dst, lg_val(g, x)->v, tj_type_numel(g->ctx, lg_in(g, x)->type));
}

/* The results' buffers = the yielded values from the yield's operand
 * `first` on, safe when one names another. */
static void put_all(lg *g, const lval *res, tj_ref y, uint32_t first, uint32_t n)
{
    const tj_inst *yi = lg_in(g, y);
    for (uint32_t c = 0; c < n; c++) {
        tj_ref x = yi->args[first + c];
        int clash = 0;
        for (uint32_t d = 0; d < n; d++)
            clash |= d != c && lg_ti(g, x)->rank && lg_val(g, x)->v == res[d].v;
        if (clash) { /* through a scratch buffer, before anything is overwritten */
            LLVMValueRef tmp = result_buffer(g, lg_in(g, x)->type);
            lg_copy(g, lg_ti(g, x)->dtype, tmp, lg_val(g, x)->v, numel(g, lg_in(g, x)->type));
            lg_val(g, x)->v = tmp;
        }
    }
    for (uint32_t c = 0; c < n; c++)
        put(g, res[c].v, yi->args[first + c]);
}

/* Python range(lo, hi, step): the trip count (step 0: none), as u64. */
static LLVMValueRef trip_count(lg *g, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef step)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef zero = lg_i64(g, 0), one = lg_i64(g, 1);
    LLVMValueRef up = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGT, step, zero, ""), LLVMBuildICmp(b, LLVMIntSLT, lo, hi, ""), "");
    LLVMValueRef down = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, step, zero, ""), LLVMBuildICmp(b, LLVMIntSGT, lo, hi, ""), "");
    LLVMValueRef span = LLVMBuildSelect(b, up, LLVMBuildSub(b, hi, lo, ""), LLVMBuildSub(b, lo, hi, ""), "");
    LLVMValueRef mag = LLVMBuildSelect(b, up, step, LLVMBuildNeg(b, step, ""), "");
    LLVMValueRef safe = LLVMBuildSelect(b, LLVMBuildOr(b, up, down, ""), mag, one, "");
    LLVMValueRef n = LLVMBuildAdd(b, LLVMBuildUDiv(b, LLVMBuildSub(b, span, one, ""), safe, ""), one, "");
    return LLVMBuildSelect(b, LLVMBuildOr(b, up, down, ""), n, zero, "");
}

static LLVMValueRef scalar_i64(lg *g, tj_ref x)
{
    return lg_to_i64(g, lg_ti(g, x)->dtype, lg_elem(g, x, lg_i64(g, 0)));
}

/* Scalars come out of their buffers once the region is done. */
static void load_scalars(lg *g, tj_ref r, lval *res, uint32_t n)
{
    const tj_type_info *tt = lg_ti(g, r);
    for (uint32_t c = 0; c < n; c++) {
        const tj_type_info *ti = tj_type_get(g->ctx, tt->elems[c]);
        if (ti->rank == 0)
            res[c].v = LLVMBuildLoad2(g->b, lg_type(g, ti->dtype), res[c].v, "");
    }
}

/* A loop's result buffers, holding its operands from `first` on. */
static void carried_init(lg *g, lval *res, const tj_inst *in, uint32_t first, uint32_t n)
{
    for (uint32_t c = 0; c < n; c++) {
        res[c].v = result_buffer(g, lg_in(g, in->args[first + c])->type);
        put(g, res[c].v, in->args[first + c]);
    }
}

/* The body's arguments from position `at` on read the result buffers
 * (tiles in place, scalars loaded). */
static void carried_args(lg *g, const tj_block *body, uint32_t at, const lval *res, uint32_t n)
{
    for (uint32_t c = 0; c < n; c++) {
        tj_ref a = body->insts[at + c];
        const tj_type_info *ti = lg_ti(g, a);
        lg_val(g, a)->v = ti->rank ? res[c].v : LLVMBuildLoad2(g->b, lg_type(g, ti->dtype), res[c].v, "");
    }
}

int lg_emit_for(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    lval *rv = lg_val(g, r);
    uint32_t nc = in->nargs - 3;
    const tj_block *body = in->region[0] ? tj_block_at(g->k, in->region[0]) : NULL;
    if (in->nargs < 3 || !body || body->ninsts < nc + 1 || rv->nelems != nc)
        return lg_fail(g, r, "loop does not carry what its body takes");
    carried_init(g, rv->elems, in, 3, nc);
    tj_ref ivr = body->insts[0];
    tj_dtype ivt = lg_ti(g, ivr)->dtype;
    LLVMValueRef lo = scalar_i64(g, in->args[0]), step = scalar_i64(g, in->args[2]);
    LLVMValueRef count = trip_count(g, lo, scalar_i64(g, in->args[1]), step);
    lg_loop l = lg_loop_begin(g, lg_i64(g, 0), count, "for");
    LLVMValueRef iv = LLVMBuildAdd(g->b, lo, LLVMBuildMul(g->b, l.i, step, ""), "");
    lg_val(g, ivr)->v = LLVMBuildTrunc(g->b, iv, lg_type(g, ivt), "");
    if (LLVMTypeOf(iv) == lg_type(g, ivt))
        lg_val(g, ivr)->v = iv;
    carried_args(g, body, 1, rv->elems, nc);
    tj_ref y, outer_iv = g->loop_iv;
    LLVMValueRef outer_step = g->loop_step;
    tj_block_id outer_body = g->loop_body;
    g->loop_iv = ivr, g->loop_step = step, g->loop_body = in->region[0];
    int rc = lg_emit_block(g, in->region[0], &y);
    g->loop_iv = outer_iv, g->loop_step = outer_step, g->loop_body = outer_body;
    if (rc)
        return -1;
    if (!y || lg_in(g, y)->nargs != nc)
        return lg_fail(g, r, "loop body does not yield what the loop carries");
    put_all(g, rv->elems, y, 0, nc);
    lg_loop_end(g, &l);
    load_scalars(g, r, rv->elems, nc);
    return 0;
}

/* The condition lives in a one-element buffer too; the head tests it and
 * the body's end stores the yielded one. The body is no for's body (no
 * induction variable for the prefetcher). */
int lg_emit_while(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    lval *rv = lg_val(g, r);
    uint32_t nc = in->nargs - 1;
    const tj_block *body = in->region[0] ? tj_block_at(g->k, in->region[0]) : NULL;
    if (in->nargs < 1 || !body || body->ninsts < nc + 1 || rv->nelems != nc)
        return lg_fail(g, r, "loop does not carry what its body takes");
    carried_init(g, rv->elems, in, 1, nc);
    LLVMValueRef go = result_buffer(g, lg_in(g, in->args[0])->type);
    put(g, go, in->args[0]);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->lc, g->fn, "while");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->lc, g->fn, "do");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "endwhile");
    LLVMBuildBr(g->b, head);
    LLVMPositionBuilderAtEnd(g->b, head);
    LLVMValueRef cond = LLVMBuildLoad2(g->b, lg_type(g, TJ_DT_BOOL), go, "");
    LLVMBuildCondBr(g->b, lg_truth(g, cond), loop, done);
    LLVMPositionBuilderAtEnd(g->b, loop);
    carried_args(g, body, 0, rv->elems, nc);
    tj_ref y, outer_iv = g->loop_iv;
    LLVMValueRef outer_step = g->loop_step;
    tj_block_id outer_body = g->loop_body;
    g->loop_iv = TJ_NONE, g->loop_step = NULL, g->loop_body = 0;
    int rc = lg_emit_block(g, in->region[0], &y);
    g->loop_iv = outer_iv, g->loop_step = outer_step, g->loop_body = outer_body;
    if (rc)
        return -1;
    if (!y || lg_in(g, y)->nargs != nc + 1)
        return lg_fail(g, r, "loop body does not yield its condition and what the loop carries");
    put_all(g, rv->elems, y, 1, nc);
    put(g, go, lg_in(g, y)->args[0]);
    LLVMBuildBr(g->b, head);
    LLVMPositionBuilderAtEnd(g->b, done);
    load_scalars(g, r, rv->elems, nc);
    return 0;
}

int lg_emit_if(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    lval *rv = lg_val(g, r);
    uint32_t n = rv->nelems;
    const tj_type_info *tt = lg_ti(g, r);
    for (uint32_t c = 0; c < n; c++)
        rv->elems[c].v = result_buffer(g, tt->elems[c]);
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(g->lc, g->fn, "then");
    LLVMBasicBlockRef other = LLVMAppendBasicBlockInContext(g->lc, g->fn, "else");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->lc, g->fn, "endif");
    LLVMBuildCondBr(g->b, lg_truth(g, lg_elem(g, in->args[0], lg_i64(g, 0))), then, other);
    LLVMBasicBlockRef arms[2] = {then, other};
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(g->b, arms[k]);
        if (in->region[k]) {
            tj_ref y;
            if (lg_emit_block(g, in->region[k], &y))
                return -1;
            if (n && (!y || lg_in(g, y)->nargs != n))
                return lg_fail(g, r, "a branch does not yield the merged values");
            if (n)
                put_all(g, rv->elems, y, 0, n);
        } else if (n) {
            return lg_fail(g, r, "an if with results needs an else branch");
        }
        LLVMBuildBr(g->b, join);
    }
    LLVMPositionBuilderAtEnd(g->b, join);
    load_scalars(g, r, rv->elems, n);
    return 0;
}
