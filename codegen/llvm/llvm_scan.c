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

/* ---- cumsum and cumprod on whole vectors ----
 * Along contiguous lines (the last axis) of a tile in a buffer, W lanes at
 * a time: an inclusive scan inside the register (log2 W shifted combines),
 * then the running total of the line's earlier blocks; the dependency
 * between blocks is one combine (the block's own total, broadcast from its
 * last lane, is combined into the carry) instead of one per element. Floats then add in a tree
 * within each block (as the reductions reassociate: the last bits may
 * differ from the interpreter's order); integers wrap the same either way.
 * f16/bf16 and bool, which round every output, stay on the scalar loop. */
static int vector_scannable(const lg *g, tj_ref x, tj_dtype dt, lg_lines l)
{
    return dt != TJ_DT_F16 && dt != TJ_DT_BF16 && dt != TJ_DT_BOOL && l.inner == 1 && !lg_val(g, x)->fused &&
           lg_lanes(g, dt) >= 4 && lg_lanes(g, dt) <= LG_MAX_LANES && l.len >= 2 * lg_lanes(g, dt);
}

/* v with every lane combined with the lanes below it. */
static LLVMValueRef scan_in_register(lg *g, tj_op op, tj_dtype dt, LLVMValueRef v, LLVMValueRef ident, unsigned w)
{
    LLVMValueRef mask[LG_MAX_LANES];
    for (unsigned k = 1; k < w; k *= 2) {
        for (unsigned i = 0; i < w; i++) /* lane i takes lane i - k of v, or the identity */
            mask[i] = lg_i32(g, i < k ? i : w + i - k);
        LLVMValueRef shifted = LLVMBuildShuffleVector(g->b, ident, v, LLVMConstVector(mask, w), "");
        v = lg_binary(g, op, dt, v, shifted);
    }
    return v;
}

/* Lines [0, blocks * w) in vectors; *acc (a one-element buffer) gets the
 * line's total so far for the scalar tail. */
static void scan_blocks(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, LLVMValueRef base, uint64_t blocks,
                        LLVMValueRef acc)
{
    LLVMTypeRef t = lg_type(g, dt);
    unsigned w = lg_lanes(g, dt), esize = (unsigned)tj_dtype_size(dt);
    LLVMTypeRef vt = LLVMVectorType(t, w);
    LLVMValueRef one = tj_dtype_is_float(dt) ? lg_const_float(g, dt, op == TJ_OP_ADD ? -0.0 : 1.0)
                                             : lg_const_int(g, dt, op == TJ_OP_ADD ? 0 : 1);
    LLVMValueRef lanes[LG_MAX_LANES];
    for (unsigned i = 0; i < w; i++)
        lanes[i] = one;
    LLVMValueRef ident = LLVMConstVector(lanes, w);
    LLVMValueRef carry = lg_buffer(g, vt, 1);
    LLVMBuildStore(g->b, ident, carry);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)blocks), "blocks");
    LLVMValueRef at = LLVMBuildNSWAdd(g->b, base, LLVMBuildNSWMul(g->b, j.i, lg_i64(g, w), ""), "");
    LLVMValueRef in = LLVMBuildLoad2(g->b, vt, lg_elem_ptr(g, dt, lg_val(g, x)->v, at), "");
    LLVMSetAlignment(in, esize);
    LLVMValueRef local = scan_in_register(g, op, dt, in, ident, w), before = LLVMBuildLoad2(g->b, vt, carry, "");
    LLVMValueRef v = lg_binary(g, op, dt, local, before);
    LLVMValueRef out = LLVMBuildStore(g->b, v, lg_elem_ptr(g, dt, lg_val(g, r)->v, at));
    LLVMSetAlignment(out, esize);
    for (unsigned i = 0; i < w; i++)
        lanes[i] = lg_i32(g, w - 1);
    /* the next carry is v's last lane everywhere, computed as carry OP the
     * block's own total (the same operands, so the same bits): the chain
     * from block to block is the one combine, the broadcast is off it */
    LLVMValueRef own = LLVMBuildShuffleVector(g->b, local, LLVMGetPoison(vt), LLVMConstVector(lanes, w), "");
    LLVMBuildStore(g->b, lg_binary(g, op, dt, own, before), carry);
    lg_loop_end(g, &j);
    LLVMValueRef total = LLVMBuildExtractElement(g->b, LLVMBuildLoad2(g->b, vt, carry, ""), lg_i32(g, 0), "");
    LLVMBuildStore(g->b, total, acc);
}

static void vector_cumulative(lg *g, tj_ref r, tj_ref x, tj_op op, tj_dtype dt, lg_lines l)
{
    LLVMTypeRef t = lg_type(g, dt);
    uint64_t w = lg_lanes(g, dt), blocks = l.len / w;
    LLVMValueRef acc = lg_buffer(g, t, 1);
    lg_loop o = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.outer), "lines");
    LLVMValueRef base = LLVMBuildNSWMul(g->b, o.i, lg_i64(g, (int64_t)l.len), "");
    scan_blocks(g, r, x, op, dt, base, blocks, acc);
    lg_loop j = lg_loop_begin(g, lg_i64(g, (int64_t)(blocks * w)), lg_i64(g, (int64_t)l.len), "tail");
    LLVMValueRef at = LLVMBuildNSWAdd(g->b, base, j.i, "");
    LLVMValueRef v = lg_binary(g, op, dt, LLVMBuildLoad2(g->b, t, acc, ""), lg_elem(g, x, at));
    LLVMBuildStore(g->b, v, acc);
    lg_set_elem(g, r, at, v);
    lg_loop_end(g, &j);
    lg_loop_end(g, &o);
}

int lg_emit_cumulative(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref x = in->args[0];
    tj_dtype dt = lg_ti(g, r)->dtype;
    LLVMTypeRef t = lg_type(g, dt);
    tj_op op = in->op == TJ_OP_CUMSUM ? TJ_OP_ADD : TJ_OP_MUL;
    lg_alloc_result(g, r);
    lg_lines l = lg_split_axis(lg_ti(g, x), in->imm);
    if (vector_scannable(g, x, dt, l)) {
        vector_cumulative(g, r, x, op, dt, l);
        return 0;
    }
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
