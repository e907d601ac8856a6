/* Inclusive scans along an axis: cumsum, cumprod, and scan with a combine
 * region, which is emitted inline in the loop on scalar values. A running
 * value stays unrounded (f16/bf16 accumulate in f32); each output is
 * rounded, as the interpreter does. */
#include "codegen/llvm/llvm.h"

typedef struct line_loops {
    lg_loop o, j;
    LLVMValueRef base, prev, at; /* first, previous and current element (i64) */
} line_loops;

/* For every line of a tile of type ti along axis: the builder stops at the
 * line's first element (first_done then opens the loop over the rest). */
static void lines_begin(lg *g, line_loops *ll, const tj_type_info *ti, int64_t axis)
{
    lg_lines l = lg_split_axis(ti, axis);
    ll->o = lg_lines_begin(g, l, &ll->base);
    ll->j.head = NULL;
    ll->prev = lg_i64(g, (int64_t)l.inner); /* the step, until first_done */
    ll->at = lg_i64(g, (int64_t)l.len);
}

static void first_done(lg *g, line_loops *ll)
{
    LLVMValueRef step = ll->prev, len = ll->at;
    ll->j = lg_loop_begin(g, lg_i64(g, 1), len, "scan");
    ll->at = LLVMBuildNSWAdd(g->b, ll->base, LLVMBuildNSWMul(g->b, ll->j.i, step, ""), "");
    ll->prev = LLVMBuildNSWSub(g->b, ll->at, step, "");
}

static void lines_end(lg *g, line_loops *ll)
{
    lg_loop_end(g, &ll->j);
    lg_loop_end(g, &ll->o);
}

int lg_emit_cumulative(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref x = in->args[0];
    tj_dtype dt = lg_ti(g, r)->dtype;
    LLVMTypeRef t = lg_type(g, dt);
    tj_op op = in->op == TJ_OP_CUMSUM ? TJ_OP_ADD : TJ_OP_MUL;
    lg_alloc_result(g, r);
    LLVMValueRef acc = lg_buffer(g, t, 1);
    line_loops ll;
    lines_begin(g, &ll, lg_ti(g, x), in->imm);
    LLVMValueRef first = lg_elem(g, x, ll.base);
    LLVMBuildStore(g->b, first, acc);
    lg_set_elem(g, r, ll.base, first);
    first_done(g, &ll);
    LLVMValueRef v = lg_binary(g, op, dt, LLVMBuildLoad2(g->b, t, acc, ""), lg_elem(g, x, ll.at));
    LLVMBuildStore(g->b, v, acc);
    lg_set_elem(g, r, ll.at, lg_round(g, dt, v));
    lines_end(g, &ll);
    return 0;
}

/* Results: a tuple of n tiles; the region's 2n arguments are the previous
 * results then the current operands. */
int lg_emit_scan(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    lval *rv = lg_val(g, r);
    uint32_t n = in->nargs;
    const tj_block *blk = in->region[0] ? tj_block_at(g->k, in->region[0]) : NULL;
    if (!n || !rv->elems || rv->nelems != n || !blk || blk->ninsts <= 2 * n)
        return lg_fail(g, r, "results or combine region do not fit the operands");
    const tj_type_info *xt = lg_ti(g, in->args[0]);
    for (uint32_t k = 0; k < n; k++) {
        const tj_type_info *ti = lg_ti(g, in->args[k]);
        rv->elems[k].v = lg_buffer(g, lg_type(g, ti->dtype), tj_type_numel(g->ctx, lg_in(g, in->args[k])->type));
    }
    line_loops ll;
    lines_begin(g, &ll, xt, in->imm);
    for (uint32_t k = 0; k < n; k++) {
        tj_dtype dt = lg_ti(g, in->args[k])->dtype;
        LLVMBuildStore(g->b, lg_elem(g, in->args[k], ll.base), lg_elem_ptr(g, dt, rv->elems[k].v, ll.base));
    }
    first_done(g, &ll);
    for (uint32_t k = 0; k < n; k++) {
        tj_dtype dt = lg_ti(g, in->args[k])->dtype;
        lg_val(g, blk->insts[k])->v = LLVMBuildLoad2(g->b, lg_type(g, dt), lg_elem_ptr(g, dt, rv->elems[k].v, ll.prev), "");
        lg_val(g, blk->insts[n + k])->v = lg_elem(g, in->args[k], ll.at);
    }
    tj_ref y;
    if (lg_emit_block(g, in->region[0], &y))
        return -1;
    if (!y || lg_in(g, y)->nargs != n)
        return lg_fail(g, r, "combine region must yield one value per operand");
    for (uint32_t k = 0; k < n; k++) {
        tj_dtype dt = lg_ti(g, in->args[k])->dtype;
        LLVMBuildStore(g->b, lg_elem(g, lg_in(g, y)->args[k], lg_i64(g, 0)), lg_elem_ptr(g, dt, rv->elems[k].v, ll.at));
    }
    lines_end(g, &ll);
    return 0;
}
