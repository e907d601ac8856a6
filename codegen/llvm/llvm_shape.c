/* arange, broadcast and permute: loop nests over the result that read the
 * operand at strided positions; gather: a loop reading at each index
 * (reshape renames a buffer: llvm_emit.c). */
#include "codegen/llvm/llvm.h"

int lg_emit_arange(lg *g, tj_ref r)
{
    if ((lg_val(g, r)->fused = lg_fusable_index(g, r)))
        return 0;
    lg_alloc_result(g, r);
    uint64_t n = lg_count(g, r);
    lg_loop l;
    LLVMValueRef i = lg_each_begin(g, &l, n);
    lg_set_elem(g, r, i, LLVMBuildTrunc(g->b, i, lg_type(g, lg_ti(g, r)->dtype), ""));
    lg_each_end(g, &l, n);
    return 0;
}

static void dense_strides(const tj_type_info *ti, int64_t *strides)
{
    int64_t s = 1;
    for (int a = ti->rank - 1; a >= 0; a--) {
        strides[a] = s;
        s *= ti->shape[a];
    }
}

/* r[c] = x[sum of c[a] * ss[a]] over r's shape. */
static void strided_copy(lg *g, tj_ref r, tj_ref x, const int64_t *ss)
{
    const tj_type_info *rt = lg_ti(g, r);
    lg_alloc_result(g, r);
    lg_nest n;
    LLVMValueRef flat = lg_nest_begin_rows(g, &n, rt->rank, rt->shape, lg_live_rows(g, r)), src = lg_i64(g, 0);
    for (int a = 0; a < rt->rank; a++)
        if (ss[a])
            src = LLVMBuildNSWAdd(g->b, src, LLVMBuildNSWMul(g->b, n.c[a], lg_i64(g, ss[a]), ""), "");
    lg_set_elem(g, r, flat, lg_elem(g, x, src));
    lg_nest_end(g, &n);
}

/* NumPy rules: shapes aligned on the right; size-1 or missing axes repeat. */
int lg_emit_broadcast(lg *g, tj_ref r)
{
    tj_ref x = lg_in(g, r)->args[0];
    const tj_type_info *rt = lg_ti(g, r), *xt = lg_ti(g, x);
    int64_t xs[TJ_MAX_RANK], ss[TJ_MAX_RANK];
    int lead = rt->rank - xt->rank;
    if (lead < 0 || xt->dtype != rt->dtype)
        return lg_fail(g, r, "operand does not broadcast to the result");
    dense_strides(xt, xs);
    for (int a = 0; a < rt->rank; a++) {
        int b = a - lead;
        if (b >= 0 && xt->shape[b] != 1 && xt->shape[b] != rt->shape[a])
            return lg_fail(g, r, "operand does not broadcast to the result");
        ss[a] = b < 0 || xt->shape[b] == 1 ? 0 : xs[b];
    }
    if (xt->rank == 0 && rt->rank > 0 && (lg_val(g, r)->fused = lg_fusable_index(g, r)))
        return 0;
    strided_copy(g, r, x, ss);
    return 0;
}

/* ---- 2-D transposes in registers ----
 * A strided copy of a transpose reads the operand column by column, which
 * the vectorizer makes gathers (with AVX-512 two vgatherqps per 16 floats:
 * a fifth of attention.tj's time went to trans(K)). Tiles whose dims the
 * vector width divides go instead block by block: W rows of a W x W block
 * in registers, transposed by log2 W rounds of two-source shuffles (round
 * s swaps the off-diagonal s x s blocks of every 2s x 2s block), then
 * stored as W rows of the result. */
static int wide_lanes(const lg *g, tj_dtype dt) /* 32 or 64 bits */
{
    LLVMTypeRef t = lg_type(g, dt);
    return t == g->f32 || t == g->i32 || t == g->f64 || t == g->i64;
}

static unsigned transpose_width(const lg *g, tj_ref x, const tj_inst *in)
{
    const tj_type_info *xt = lg_ti(g, x);
    unsigned w = wide_lanes(g, xt->dtype) ? lg_lanes(g, xt->dtype) : 0;
    if (xt->rank != 2 || in->list[0] != 1 || in->list[1] != 0 || w < 4 || w > LG_MAX_LANES || lg_val(g, x)->fused)
        return 0;
    return xt->shape[0] % w == 0 && xt->shape[1] % w == 0 ? w : 0;
}

/* rows[i] = row i of a w x w block; afterwards, row i of its transpose. */
static void transpose_block(lg *g, LLVMValueRef *rows, unsigned w)
{
    LLVMValueRef lo[LG_MAX_LANES], hi[LG_MAX_LANES];
    for (unsigned s = w / 2; s >= 1; s /= 2) {
        for (unsigned c = 0; c < w; c++) {
            lo[c] = lg_i32(g, (c & s) ? w + c - s : c);
            hi[c] = lg_i32(g, (c & s) ? w + c : c + s);
        }
        LLVMValueRef mlo = LLVMConstVector(lo, w), mhi = LLVMConstVector(hi, w);
        for (unsigned i = 0; i < w; i++)
            if (!(i & s)) {
                LLVMValueRef a = rows[i], b = rows[i + s];
                rows[i] = LLVMBuildShuffleVector(g->b, a, b, mlo, "");
                rows[i + s] = LLVMBuildShuffleVector(g->b, a, b, mhi, "");
            }
    }
}

static void transpose_2d(lg *g, tj_ref r, tj_ref x, unsigned w)
{
    const tj_type_info *xt = lg_ti(g, x);
    LLVMTypeRef t = lg_type(g, xt->dtype), vt = LLVMVectorType(t, w);
    int64_t R = xt->shape[0], C = xt->shape[1];
    unsigned align = (unsigned)g->vector_bits / 8 / w; /* bytes a lane */
    lg_alloc_result(g, r);
    LLVMValueRef src = lg_val(g, x)->v, dst = lg_val(g, r)->v, rows[LG_MAX_LANES];
    lg_loop bi = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, R / w), "tblock");
    lg_loop bj = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, C / w), "tblock");
    LLVMValueRef r0 = LLVMBuildNSWMul(g->b, bi.i, lg_i64(g, w), ""), c0 = LLVMBuildNSWMul(g->b, bj.i, lg_i64(g, w), "");
    for (unsigned i = 0; i < w; i++) {
        LLVMValueRef at = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, LLVMBuildNSWAdd(g->b, r0, lg_i64(g, i), ""), lg_i64(g, C), ""), c0, "");
        rows[i] = LLVMBuildLoad2(g->b, vt, lg_elem_ptr(g, xt->dtype, src, at), "");
        LLVMSetAlignment(rows[i], align);
    }
    transpose_block(g, rows, w);
    for (unsigned i = 0; i < w; i++) { /* row c0 + i of the result, columns r0 .. r0 + w */
        LLVMValueRef at = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, LLVMBuildNSWAdd(g->b, c0, lg_i64(g, i), ""), lg_i64(g, R), ""), r0, "");
        LLVMSetAlignment(LLVMBuildStore(g->b, rows[i], lg_elem_ptr(g, xt->dtype, dst, at)), align);
    }
    lg_loop_end(g, &bj);
    lg_loop_end(g, &bi);
}

/* Result axis i is operand axis perm[i]. */
int lg_emit_permute(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    const tj_type_info *rt = lg_ti(g, r), *xt = lg_ti(g, in->args[0]);
    int64_t xs[TJ_MAX_RANK], ss[TJ_MAX_RANK];
    if (in->nlist != (uint32_t)rt->rank || xt->rank != rt->rank)
        return lg_fail(g, r, "permutation does not match the rank");
    dense_strides(xt, xs);
    for (int a = 0; a < rt->rank; a++) {
        int32_t p = in->list[a];
        if (p < 0 || p >= xt->rank || xt->shape[p] != rt->shape[a])
            return lg_fail(g, r, "not a permutation of the operand's axes");
        ss[a] = xs[p];
    }
    unsigned w = transpose_width(g, in->args[0], in);
    if (w) {
        transpose_2d(g, r, in->args[0], w);
        return 0;
    }
    strided_copy(g, r, in->args[0], ss);
    return 0;
}

/* r[i] = x[min(idx[i] as unsigned, n - 1)]: a bad index reads inside the
 * tile, as on GPUs (the interpreter reports it: docs/ir.md). */
int lg_emit_gather(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref x = in->args[0], idx = in->args[1];
    uint64_t m = lg_count(g, r), n = lg_count(g, x);
    if (lg_ti(g, x)->rank != 1 || lg_ti(g, r)->rank != 1 || lg_count(g, idx) != m)
        return lg_fail(g, r, "gather takes 1-D tiles, the result of the indices' shape");
    lg_alloc_result(g, r);
    lg_loop l;
    LLVMValueRef i = lg_each_begin(g, &l, m);
    LLVMValueRef at[2] = {lg_to_i64(g, lg_ti(g, idx)->dtype, lg_elem(g, idx, i)), lg_i64(g, (int64_t)n - 1)};
    lg_set_elem(g, r, i, lg_elem(g, x, lg_intrinsic(g, "llvm.umin", at, 2)));
    lg_each_end(g, &l, m);
    return 0;
}
