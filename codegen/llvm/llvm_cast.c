/* cast: float -> int truncates toward zero and saturates (NaN gives 0);
 * int -> int wraps; -> bool is != 0; -> f16/bf16 rounds to nearest even
 * once: an f64 first goes to f32 rounded to odd, which rounds again to a
 * format of at most 11 significant bits exactly as the f64 would. */
#include <string.h>

#include "codegen/llvm/llvm.h"

/* An intrinsic overloaded on its result and its operand type. */
static LLVMValueRef intrinsic2(lg *g, const char *name, LLVMTypeRef ret, LLVMValueRef x)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef over[2] = {ret, LLVMTypeOf(x)};
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, over, 2);
    return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->lc, id, over, 2), fn, &x, 1, "");
}

/* f64 -> f32 rounded to odd: an inexact result keeps its last bit set. */
static LLVMValueRef to_f32_odd(lg *g, LLVMValueRef d)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef f = LLVMBuildFPTrunc(b, d, g->f32, ""), back = LLVMBuildFPExt(b, f, g->f64, "");
    LLVMValueRef bits = LLVMBuildBitCast(b, f, g->i32, "");
    LLVMValueRef odd = LLVMBuildTrunc(b, bits, g->i1, "");
    LLVMValueRef keep = LLVMBuildOr(b, odd, LLVMBuildFCmp(b, LLVMRealOEQ, back, d, ""), "");
    LLVMValueRef ab = lg_intrinsic(g, "llvm.fabs", &back, 1), ad = lg_intrinsic(g, "llvm.fabs", &d, 1);
    LLVMValueRef above = LLVMBuildFCmp(b, LLVMRealOGT, ab, ad, "");
    LLVMValueRef other = LLVMBuildSelect(b, above, LLVMBuildSub(b, bits, lg_i32(g, 1), ""),
                                         LLVMBuildAdd(b, bits, lg_i32(g, 1), ""), "");
    return LLVMBuildBitCast(b, LLVMBuildSelect(b, keep, bits, other, ""), g->f32, "");
}

static LLVMValueRef float_to_float(lg *g, tj_dtype to, tj_dtype from, LLVMValueRef v)
{
    if (to == TJ_DT_F64)
        return from == TJ_DT_F64 ? v : LLVMBuildFPExt(g->b, v, g->f64, "");
    if (from == TJ_DT_F64)
        v = to == TJ_DT_F32 ? LLVMBuildFPTrunc(g->b, v, g->f32, "") : to_f32_odd(g, v);
    return lg_round(g, to, v);
}

static LLVMValueRef int_to_float(lg *g, tj_dtype to, tj_dtype from, LLVMValueRef v)
{
    int sign = tj_dtype_is_signed(from);
    if (to == TJ_DT_F32 || to == TJ_DT_F64) {
        LLVMTypeRef t = lg_type(g, to);
        return sign ? LLVMBuildSIToFP(g->b, v, t, "") : LLVMBuildUIToFP(g->b, v, t, "");
    }
    LLVMValueRef d = sign ? LLVMBuildSIToFP(g->b, v, g->f64, "") : LLVMBuildUIToFP(g->b, v, g->f64, "");
    return lg_round(g, to, to_f32_odd(g, d));
}

static LLVMValueRef int_to_int(lg *g, tj_dtype to, tj_dtype from, LLVMValueRef v)
{
    LLVMTypeRef t = lg_type(g, to);
    unsigned tw = LLVMGetIntTypeWidth(t), fw = LLVMGetIntTypeWidth(LLVMTypeOf(v));
    if (tw == fw)
        return v;
    if (tw < fw)
        return LLVMBuildTrunc(g->b, v, t, "");
    return tj_dtype_is_signed(from) ? LLVMBuildSExt(g->b, v, t, "") : LLVMBuildZExt(g->b, v, t, "");
}

LLVMValueRef lg_cast(lg *g, tj_dtype to, tj_dtype from, LLVMValueRef v)
{
    int ff = tj_dtype_is_float(from), tf = tj_dtype_is_float(to);
    if (to == TJ_DT_BOOL) {
        LLVMValueRef nz = ff ? LLVMBuildFCmp(g->b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "")
                             : LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
        return lg_bool(g, nz);
    }
    if (ff && tf)
        return float_to_float(g, to, from, v);
    if (ff)
        return intrinsic2(g, tj_dtype_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", lg_type(g, to), v);
    if (tf)
        return int_to_float(g, to, from, v);
    return int_to_int(g, to, from, v);
}
