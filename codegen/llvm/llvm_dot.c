/* dot: [M, K] x [K, N] + [M, N], or batched [B, M, K] x [B, K, N] + [B, M, N].
 * The result starts as the accumulator (or 0); every output sums its
 * products in k order, in the result's class (f32 for f16/bf16/f32
 * inputs, f64, or wrapping integers). The loop nest is m, k, n with n
 * innermost, so the vectorizer turns each row update into vector FMAs. */
#include "codegen/llvm/llvm.h"

typedef struct dot_dims {
    uint64_t batch, m, k, n;
} dot_dims;

static int dims_of(const tj_type_info *a, const tj_type_info *b, const tj_type_info *r, dot_dims *d)
{
    int rank = a->rank;
    if ((rank != 2 && rank != 3) || b->rank != rank || r->rank != rank)
        return -1;
    uint64_t batch = rank == 3 ? (uint64_t)a->shape[0] : 1;
    if (rank == 3 && ((uint64_t)b->shape[0] != batch || (uint64_t)r->shape[0] != batch))
        return -1;
    const int32_t *as = a->shape + rank - 2, *bs = b->shape + rank - 2, *rs = r->shape + rank - 2;
    if (as[1] != bs[0] || rs[0] != as[0] || rs[1] != bs[1])
        return -1;
    *d = (dot_dims){batch, (uint64_t)as[0], (uint64_t)as[1], (uint64_t)bs[1]};
    return 0;
}

/* An operand element in the result's value type. */
static LLVMValueRef widen(lg *g, tj_dtype from, tj_dtype to, LLVMValueRef v)
{
    LLVMTypeRef t = lg_type(g, to);
    if (LLVMTypeOf(v) == t)
        return v;
    if (tj_dtype_is_float(to))
        return LLVMBuildFPExt(g->b, v, t, "");
    return tj_dtype_is_signed(from) ? LLVMBuildSExt(g->b, v, t, "") : LLVMBuildZExt(g->b, v, t, "");
}

static LLVMValueRef idx3(lg *g, LLVMValueRef b, uint64_t sb, LLVMValueRef r, uint64_t sr, LLVMValueRef c)
{
    LLVMValueRef x = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, b, lg_i64(g, (int64_t)sb), ""),
                                     LLVMBuildNSWMul(g->b, r, lg_i64(g, (int64_t)sr), ""), "");
    return LLVMBuildNSWAdd(g->b, x, c, "");
}

static void init_result(lg *g, tj_ref r, tj_ref acc, uint64_t n)
{
    lg_loop l = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)n), "init");
    LLVMValueRef v = acc ? lg_elem(g, acc, l.i) : LLVMConstNull(lg_type(g, lg_ti(g, r)->dtype));
    lg_set_elem(g, r, l.i, v);
    lg_loop_end(g, &l);
}

int lg_emit_dot(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref a = in->args[0], b = in->args[1], acc = in->args[2];
    tj_dtype rt = lg_ti(g, r)->dtype, at = lg_ti(g, a)->dtype, bt = lg_ti(g, b)->dtype;
    dot_dims d;
    if (dims_of(lg_ti(g, a), lg_ti(g, b), lg_ti(g, r), &d))
        return lg_fail(g, r, "operand shapes do not fit a matrix product");
    lg_alloc_result(g, r);
    init_result(g, r, acc, d.batch * d.m * d.n);
    lg_loop lb = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.batch), "batch");
    lg_loop lm = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.m), "m");
    lg_loop lk = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.k), "k");
    LLVMValueRef x = widen(g, at, rt, lg_elem(g, a, idx3(g, lb.i, d.m * d.k, lm.i, d.k, lk.i)));
    lg_loop ln = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.n), "n");
    LLVMValueRef y = widen(g, bt, rt, lg_elem(g, b, idx3(g, lb.i, d.k * d.n, lk.i, d.n, ln.i)));
    LLVMValueRef ci = idx3(g, lb.i, d.m * d.n, lm.i, d.n, ln.i), c = lg_elem(g, r, ci), sum;
    if (tj_dtype_is_float(rt)) {
        LLVMValueRef xyc[3] = {x, y, c};
        sum = lg_intrinsic(g, "llvm.fmuladd", xyc, 3);
    } else {
        sum = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, x, y, ""), c, "");
    }
    lg_set_elem(g, r, ci, sum);
    lg_loop_end(g, &ln);
    lg_loop_end(g, &lk);
    lg_loop_end(g, &lm);
    lg_loop_end(g, &lb);
    if (rt == TJ_DT_F16 || rt == TJ_DT_BF16) {
        lg_loop l = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)(d.batch * d.m * d.n)), "round");
        lg_set_elem(g, r, l.i, lg_round(g, rt, lg_elem(g, r, l.i)));
        lg_loop_end(g, &l);
    }
    return 0;
}
