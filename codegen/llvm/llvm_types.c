/* Dtypes as LLVM types, constants, f16/bf16 rounding, and the memory form
 * of each dtype (what a tensor holds) against its value form. */
#include <string.h>

#include "codegen/llvm/llvm.h"

LLVMTypeRef lg_type(const lg *g, tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL: case TJ_DT_I8: case TJ_DT_U8: return g->i8;
    case TJ_DT_I16: case TJ_DT_U16: return g->i16;
    case TJ_DT_I32: case TJ_DT_U32: return g->i32;
    case TJ_DT_I64: case TJ_DT_U64: return g->i64;
    case TJ_DT_F64: return g->f64;
    default: return g->f32; /* f16, bf16, f32 */
    }
}

LLVMTypeRef lg_mem_type(const lg *g, tj_dtype dt)
{
    return dt == TJ_DT_F16 || dt == TJ_DT_BF16 ? g->i16 : lg_type(g, dt);
}

LLVMValueRef lg_const_int(const lg *g, tj_dtype dt, int64_t v)
{
    if (tj_dtype_is_float(dt))
        return lg_const_float(g, dt, (double)v);
    return LLVMConstInt(lg_type(g, dt), (unsigned long long)v, 1);
}

/* Floats: the value rounded to the dtype, as the interpreter holds it. */
LLVMValueRef lg_const_float(const lg *g, tj_dtype dt, double v)
{
    switch (dt) {
    case TJ_DT_F16: v = tj_f16_to_f32(tj_f64_to_f16(v)); break;
    case TJ_DT_BF16: v = tj_bf16_to_f32(tj_f64_to_bf16(v)); break;
    case TJ_DT_F32: v = (float)v; break;
    case TJ_DT_F64: break;
    default: return LLVMConstInt(lg_type(g, dt), (unsigned long long)(int64_t)v, 1);
    }
    return LLVMConstReal(lg_type(g, dt), v);
}

LLVMValueRef lg_i64(const lg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }
LLVMValueRef lg_i32(const lg *g, int64_t v) { return LLVMConstInt(g->i32, (unsigned long long)v, 1); }

/* f32 -> bf16 bits, nearest even; NaN stays a (quiet) NaN. */
static LLVMValueRef bf16_bits(lg *g, LLVMValueRef v)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef bits = LLVMBuildBitCast(b, v, g->i32, "");
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, lg_i32(g, 16), ""), lg_i32(g, 1), "");
    LLVMValueRef up = LLVMBuildAdd(b, bits, LLVMBuildAdd(b, odd, lg_i32(g, 0x7fff), ""), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
    LLVMValueRef quiet = LLVMBuildOr(b, bits, lg_i32(g, 0x00400000), "");
    return LLVMBuildLShr(b, LLVMBuildSelect(b, nan, quiet, up, ""), lg_i32(g, 16), "");
}

static LLVMValueRef bf16_value(lg *g, LLVMValueRef bits16)
{
    LLVMValueRef w = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, bits16, g->i32, ""), lg_i32(g, 16), "");
    return LLVMBuildBitCast(g->b, w, g->f32, "");
}

static LLVMTypeRef half_type(const lg *g) { return LLVMHalfTypeInContext(g->lc); }

LLVMValueRef lg_round(lg *g, tj_dtype dt, LLVMValueRef v)
{
    if (dt == TJ_DT_F16)
        return LLVMBuildFPExt(g->b, LLVMBuildFPTrunc(g->b, v, half_type(g), ""), g->f32, "");
    if (dt == TJ_DT_BF16)
        return bf16_value(g, LLVMBuildTrunc(g->b, bf16_bits(g, v), g->i16, ""));
    if (dt == TJ_DT_BOOL)
        return lg_bool(g, LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), ""));
    return v;
}

LLVMValueRef lg_from_mem(lg *g, tj_dtype dt, LLVMValueRef m)
{
    switch (dt) {
    case TJ_DT_BOOL: return lg_bool(g, LLVMBuildICmp(g->b, LLVMIntNE, m, LLVMConstInt(g->i8, 0, 0), ""));
    case TJ_DT_F16: return LLVMBuildFPExt(g->b, LLVMBuildBitCast(g->b, m, half_type(g), ""), g->f32, "");
    case TJ_DT_BF16: return bf16_value(g, m);
    default: return m;
    }
}

/* Values are already rounded to their dtype, so f16/bf16 convert exactly. */
LLVMValueRef lg_to_mem(lg *g, tj_dtype dt, LLVMValueRef v)
{
    switch (dt) {
    case TJ_DT_F16: return LLVMBuildBitCast(g->b, LLVMBuildFPTrunc(g->b, v, half_type(g), ""), g->i16, "");
    case TJ_DT_BF16: return LLVMBuildTrunc(g->b, bf16_bits(g, v), g->i16, "");
    default: return v;
    }
}

LLVMValueRef lg_to_i64(lg *g, tj_dtype dt, LLVMValueRef v)
{
    if (LLVMTypeOf(v) == g->i64)
        return v;
    return tj_dtype_is_signed(dt) ? LLVMBuildSExt(g->b, v, g->i64, "") : LLVMBuildZExt(g->b, v, g->i64, "");
}

LLVMValueRef lg_truth(lg *g, LLVMValueRef v) { return LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), ""); }
LLVMValueRef lg_bool(lg *g, LLVMValueRef c) { return LLVMBuildZExt(g->b, c, g->i8, ""); }

LLVMValueRef lg_intrinsic(lg *g, const char *name, LLVMValueRef *args, unsigned n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef over = LLVMTypeOf(args[0]);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, &over, 1);
    return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->lc, id, &over, 1), fn, args, n, "");
}

LLVMValueRef lg_call_extern(lg *g, const char *name, LLVMTypeRef fty, LLVMValueRef *args, unsigned n)
{
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn)
        fn = LLVMAddFunction(g->mod, name, fty);
    return LLVMBuildCall2(g->b, fty, fn, args, n, "");
}
