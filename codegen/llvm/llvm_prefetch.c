/* Software prefetch of the tile a loop's next iteration loads.
 *
 * In a `for` body, a load whose view starts move by a fixed amount per
 * iteration (the induction variable times loop-invariant factors, plus
 * loop-invariant terms) reads, in the next iteration, the same shape
 * shifted by delta = sum over axes of move * stride. Every cache line of
 * that shifted tile is prefetched one iteration ahead. Without it a tile
 * of short rows waits for memory row by row: rowsum's 16 rows of 512
 * bytes and colsum's 32 rows of 256 are each a stream of their own that
 * the hardware prefetchers, which stop at every 4 KiB page, barely see.
 * A prefetch never faults (lines past the tensor are harmless) and
 * changes nothing but timing. */
#include "codegen/llvm/llvm.h"

enum {
    LINE = 64,                  /* bytes per cache line */
    PREFETCH_MAX = 64 << 10,    /* tiles larger than this would evict what the iteration works on */
    MOVE_DEPTH = 8,             /* operations followed back from a view's start to the loop variable */
    MAX_LINES = 32,             /* cache lines per row prefetched in straight-line code */
};

/* Whether x is computed in the loop's body (or a block nested in it). */
static int in_loop(const lg *g, tj_ref x)
{
    for (tj_block_id b = lg_in(g, x)->block; b;) {
        if (b == g->loop_body)
            return 1;
        tj_ref owner = tj_block_at(g->k, b)->owner;
        b = owner ? lg_in(g, owner)->block : 0;
    }
    return 0;
}

static int is_zero(LLVMValueRef v) { return LLVMIsAConstantInt(v) && !LLVMConstIntGetZExtValue(v); }

/* How much integer scalar x grows per iteration of the innermost loop
 * (i64), or NULL when it is not an affine function of the induction
 * variable. */
static LLVMValueRef moves_by(lg *g, tj_ref x, int depth)
{
    if (x == g->loop_iv)
        return g->loop_step;
    if (!in_loop(g, x))
        return lg_i64(g, 0);
    const tj_inst *in = lg_in(g, x);
    if (depth > MOVE_DEPTH || lg_ti(g, x)->rank || !tj_dtype_is_int(lg_ti(g, x)->dtype))
        return NULL;
    if (in->op == TJ_OP_CONST)
        return lg_i64(g, 0);
    if (in->op == TJ_OP_CAST && tj_dtype_is_int(lg_ti(g, in->args[0])->dtype))
        return moves_by(g, in->args[0], depth + 1);
    if (in->op != TJ_OP_ADD && in->op != TJ_OP_SUB && in->op != TJ_OP_MUL)
        return NULL;
    LLVMValueRef a = moves_by(g, in->args[0], depth + 1), b = a ? moves_by(g, in->args[1], depth + 1) : NULL;
    if (!b)
        return NULL;
    if (in->op == TJ_OP_ADD)
        return LLVMBuildAdd(g->b, a, b, "");
    if (in->op == TJ_OP_SUB)
        return LLVMBuildSub(g->b, a, b, "");
    tj_ref fixed = is_zero(b) ? in->args[1] : is_zero(a) ? in->args[0] : TJ_NONE; /* mul: one side invariant */
    if (!fixed)
        return NULL;
    LLVMValueRef k = lg_to_i64(g, lg_ti(g, fixed)->dtype, lg_elem(g, fixed, lg_i64(g, 0)));
    return LLVMBuildMul(g->b, fixed == in->args[1] ? a : b, k, "");
}

/* Elements the tile moves by per iteration (stride-weighted), or NULL. */
static LLVMValueRef tile_moves_by(lg *g, tj_ref view, const lg_view *v)
{
    const tj_inst *vi = lg_in(g, view);
    LLVMValueRef delta = lg_i64(g, 0);
    for (int a = 0; a < v->rank; a++) {
        if (v->kind[a] == TJ_VIEW_GATHER)
            return NULL;
        LLVMValueRef d = moves_by(g, vi->args[a + 1], 0);
        if (!d)
            return NULL;
        if (!is_zero(d))
            delta = LLVMBuildAdd(g->b, delta, LLVMBuildMul(g->b, d, lg_view_stride(g, v, a), ""), "");
    }
    return is_zero(delta) ? NULL : delta;
}

void lg_prefetch_next(lg *g, tj_ref load)
{
    const tj_inst *in = lg_in(g, load);
    const lg_view *v = lg_val(g, in->args[0])->view;
    tj_dtype dt = lg_ti(g, load)->dtype;
    int32_t len[TJ_MAX_RANK];
    uint64_t esize = (uint64_t)tj_dtype_size(dt), bytes = lg_count(g, load) * esize;
    /* rows contiguous in memory: the last group runs along the tensor's last axis, with unit stride */
    if (!g->loop_iv || !v || bytes > PREFETCH_MAX || bytes < LINE || v->kind[v->rank - 1] <= 0 ||
        !lg_view_unit_stride(g, v))
        return;
    LLVMValueRef delta = tile_moves_by(g, in->args[0], v);
    if (!delta)
        return;
    int n = lg_view_groups(g, v, len);
    uint64_t per_line = LINE / esize, lines = (len[n - 1] + per_line - 1) / per_line;
    if (lines > MAX_LINES)
        return;
    /* a loop over the rows (every group but the last), each row's lines in
     * straight-line code: a prefetch costs an instruction, not a loop trip */
    lg_nest nest;
    lg_nest_begin(g, &nest, n - 1, len);
    LLVMValueRef gc[TJ_MAX_RANK];
    for (int a = 0; a < n - 1; a++)
        gc[a] = nest.c[a];
    gc[n - 1] = lg_i64(g, 0);
    LLVMValueRef row = LLVMBuildAdd(g->b, lg_view_offset(g, v, gc), delta, "");
    LLVMValueRef p = LLVMBuildGEP2(g->b, lg_mem_type(g, dt), lg_tensor_data(g, v->param), &row, 1, "");
    for (uint64_t i = 0; i < lines; i++) {
        LLVMValueRef at = lg_i64(g, (int64_t)(i * LINE));
        LLVMValueRef args[4] = {LLVMBuildGEP2(g->b, g->i8, p, &at, 1, ""), lg_i32(g, 0), lg_i32(g, 3), lg_i32(g, 1)};
        lg_intrinsic(g, "llvm.prefetch", args, 4); /* read, keep close, data */
    }
    lg_nest_end(g, &nest);
}
