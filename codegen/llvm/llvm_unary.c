/* Elementwise unary ops: neg, not, abs and the math functions. f32 exp,
 * exp2, tanh, sigmoid and erf are straight-line code (llvm_math.c) that
 * vectorizes; the rest call libm (f32: the float versions, as the
 * interpreter does) or map onto LLVM intrinsics. */
#include <string.h>

#include "codegen/llvm/llvm.h"

static LLVMValueRef call_libm(lg *g, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    char fname[16];
    size_t n = strlen(name);
    memcpy(fname, name, n + 1);
    if (t == g->f32) { /* expf, logf, ... */
        fname[n] = 'f';
        fname[n + 1] = 0;
    }
    return lg_call_extern(g, fname, LLVMFunctionType(t, &t, 1, 0), &x, 1);
}

static LLVMValueRef float_unary(lg *g, tj_op op, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    int f32 = t == g->f32;
    switch (op) {
    case TJ_OP_NEG: return LLVMBuildFNeg(b, x, "");
    case TJ_OP_ABS: return lg_intrinsic(g, "llvm.fabs", &x, 1);
    case TJ_OP_SQRT: return lg_intrinsic(g, "llvm.sqrt", &x, 1);
    case TJ_OP_RSQRT: return LLVMBuildFDiv(b, LLVMConstReal(t, 1.0), lg_intrinsic(g, "llvm.sqrt", &x, 1), "");
    case TJ_OP_FLOOR: return lg_intrinsic(g, "llvm.floor", &x, 1);
    case TJ_OP_CEIL: return lg_intrinsic(g, "llvm.ceil", &x, 1);
    case TJ_OP_LOG: return call_libm(g, "log", x);
    case TJ_OP_LOG2: return call_libm(g, "log2", x);
    case TJ_OP_SIN: return call_libm(g, "sin", x);
    case TJ_OP_COS: return call_libm(g, "cos", x);
    case TJ_OP_EXP:
    case TJ_OP_EXP2:
    case TJ_OP_TANH:
    case TJ_OP_ERF:
    case TJ_OP_SIGMOID:
        if (f32)
            return lg_math_f32(g, op, x);
        if (op == TJ_OP_SIGMOID) {
            LLVMValueRef one = LLVMConstReal(t, 1.0);
            LLVMValueRef e = call_libm(g, "exp", LLVMBuildFNeg(b, x, ""));
            return LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, e, ""), "");
        }
        return call_libm(g, op == TJ_OP_EXP ? "exp" : op == TJ_OP_EXP2 ? "exp2" : op == TJ_OP_TANH ? "tanh" : "erf", x);
    default: return NULL;
    }
}

/* Integers wrap: neg and abs of the most negative value give itself. */
static LLVMValueRef int_unary(lg *g, tj_op op, tj_dtype dt, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(x));
    switch (op) {
    case TJ_OP_NEG: return LLVMBuildSub(b, zero, x, "");
    case TJ_OP_ABS:
        if (!tj_dtype_is_signed(dt))
            return x;
        return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""), LLVMBuildSub(b, zero, x, ""), x, "");
    case TJ_OP_NOT:
        if (dt == TJ_DT_BOOL)
            return LLVMBuildXor(b, x, LLVMConstInt(g->i8, 1, 0), "");
        return LLVMBuildNot(b, x, "");
    default: return NULL;
    }
}

LLVMValueRef lg_unary(lg *g, tj_op op, tj_dtype dt, LLVMValueRef a)
{
    return tj_dtype_is_float(dt) ? float_unary(g, op, a) : int_unary(g, op, dt, a);
}
