/* arange, broadcast and permute: loop nests over the result that read the
 * operand at strided positions (reshape renames a buffer: llvm_emit.c). */
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
    LLVMValueRef flat = lg_nest_begin(g, &n, rt->rank, rt->shape), src = lg_i64(g, 0);
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
    strided_copy(g, r, in->args[0], ss);
    return 0;
}
