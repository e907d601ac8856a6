/* Matrix fragment types of SIMT IR (ir.h, docs/simt.md). */
#include "tilejit/ir.h"

const char *tj_mma_role_name(int64_t role)
{
    static const char *const names[] = {[TJ_MMA_A] = "a", [TJ_MMA_B] = "b", [TJ_MMA_C] = "c", [TJ_MMA_BT] = "bt"};
    return role >= TJ_MMA_A && role <= TJ_MMA_BT ? names[role] : NULL;
}

int tj_mma_k(tj_dtype in)
{
    switch (in) {
    case TJ_DT_F16:
    case TJ_DT_BF16: return 16;
    case TJ_DT_F32: return 8;
    default: return 0;
    }
}

tj_type tj_type_fragment(tj_ctx *c, int role, tj_dtype in)
{
    int32_t k = tj_mma_k(in);
    if (!k)
        return TJ_TYPE_NONE;
    int32_t a[2] = {TJ_MMA_M, k}, b[2] = {k, TJ_MMA_N}, acc[2] = {TJ_MMA_M, TJ_MMA_N};
    switch (role) {
    case TJ_MMA_A: return tj_type_tile(c, in, 2, a);
    case TJ_MMA_B:
    case TJ_MMA_BT: return tj_type_tile(c, in, 2, b);
    case TJ_MMA_C: return tj_type_tile(c, TJ_DT_F32, 2, acc);
    default: return TJ_TYPE_NONE;
    }
}

int tj_type_is_fragment(const tj_ctx *c, tj_type t)
{
    const tj_type_info *i = tj_type_get(c, t);
    int32_t k = i->kind == TJ_TK_TILE && i->rank == 2 ? tj_mma_k(i->dtype) : 0;
    if (!k)
        return 0;
    int32_t rows = i->shape[0], cols = i->shape[1];
    int is_a = rows == TJ_MMA_M && cols == k, is_b = rows == k && cols == TJ_MMA_N;
    int is_c = i->dtype == TJ_DT_F32 && rows == TJ_MMA_M && cols == TJ_MMA_N;
    return is_a || is_b || is_c;
}
