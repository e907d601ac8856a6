/* Elementwise ops: every binary, unary and ternary op against plain C
 * loops, with the edge cases of docs/ir.md (wrapping, division by zero,
 * shifts out of range, NaN in max/min and comparisons, f16 rounding). */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "tj_test_util.h"

__extension__ typedef _Float16 ref_half;

/* out = op(in[0], in[1], in[2]) over n elements: inputs of dtype dt in
 * memory, the result of dtype rdt. One program loads, computes, stores. */
static void run_ew(tj_op op, tj_dtype dt, tj_dtype rdt, int nin, void *const *in, void *out, int n)
{
    tt_kb kb;
    tt_begin(&kb, "ew", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0), x[3] = {0};
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < nin; i++)
        x[i] = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, names[i], dt, "N"), zero, n), TJ_NONE, TJ_NONE);
    tj_ref o = tt_slice1(&kb, tt_param(&kb, "out", rdt, "N"), zero, n);
    tt_store(&kb, o, tt_op(&kb, op, tt_tile(&kb, rdt, 1, n), nin, x[0], x[1], x[2]), TJ_NONE);
    tt_end(&kb);
    tj_arg args[4];
    for (int i = 0; i < nin; i++)
        args[i] = tt_tensor(in[i], dt, 1, n);
    args[nin] = tt_tensor(out, rdt, 1, n);
    cr_assert_eq(tt_run(&kb, args, (uint32_t)nin + 1), 0);
    tt_free(&kb);
}

static void bin(tj_op op, tj_dtype dt, void *a, void *b, void *out, int n)
{
    void *in[2] = {a, b};
    run_ew(op, dt, tj_op_get(op)->flags & TJ_OPF_CMP ? TJ_DT_BOOL : dt, 2, in, out, n);
}

static void un(tj_op op, tj_dtype dt, void *a, void *out, int n)
{
    void *in[1] = {a};
    run_ew(op, dt, dt, 1, in, out, n);
}

#define N_OF(arr) ((int)(sizeof(arr) / sizeof *(arr)))

Test(elementwise, i32_wrapping_arithmetic)
{
    int32_t a[] = {INT_MAX, INT_MIN, 7, -7, 123456789, -1};
    int32_t b[] = {1, 1, 3, 3, 1000, INT_MIN};
    int32_t out[6];
    bin(TJ_OP_ADD, TJ_DT_I32, a, b, out, 6);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], (int32_t)((uint32_t)a[i] + (uint32_t)b[i]), "add %d", i);
    bin(TJ_OP_SUB, TJ_DT_I32, a, b, out, 6);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], (int32_t)((uint32_t)a[i] - (uint32_t)b[i]), "sub %d", i);
    bin(TJ_OP_MUL, TJ_DT_I32, a, b, out, 6);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], (int32_t)((uint32_t)a[i] * (uint32_t)b[i]), "mul %d", i);
}

Test(elementwise, i32_division_truncates_and_never_traps)
{
    int32_t a[] = {7, -7, 7, -7, 5, INT_MIN, INT_MIN, 0, INT_MAX};
    int32_t b[] = {2, 2, -2, -2, 0, -1, 1, 0, -1};
    int32_t q[] = {3, -3, -3, 3, 0, INT_MIN, INT_MIN, 0, -INT_MAX};
    int32_t m[] = {1, -1, 1, -1, 0, 0, 0, 0, 0};
    int32_t out[9];
    bin(TJ_OP_DIV, TJ_DT_I32, a, b, out, 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(out[i], q[i], "div %d: %d", i, out[i]);
    bin(TJ_OP_REM, TJ_DT_I32, a, b, out, 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(out[i], m[i], "rem %d: %d", i, out[i]);
}

Test(elementwise, i64_division_edge)
{
    int64_t a[] = {INT64_MIN, INT64_MIN, -9, 9};
    int64_t b[] = {-1, 0, 4, 0};
    int64_t out[4];
    bin(TJ_OP_DIV, TJ_DT_I64, a, b, out, 4);
    cr_assert(out[0] == INT64_MIN && out[1] == 0 && out[2] == -2 && out[3] == 0);
    bin(TJ_OP_REM, TJ_DT_I64, a, b, out, 4);
    cr_assert(out[0] == 0 && out[1] == 0 && out[2] == -1 && out[3] == 0);
}

Test(elementwise, narrow_and_unsigned_wrap)
{
    int8_t a8[] = {127, -128, 16, -100}, b8[] = {1, -1, 16, -100}, o8[4];
    bin(TJ_OP_ADD, TJ_DT_I8, a8, b8, o8, 4);
    cr_assert(o8[0] == -128 && o8[1] == 127 && o8[2] == 32 && o8[3] == 56);
    bin(TJ_OP_MUL, TJ_DT_I8, a8, b8, o8, 4);
    cr_assert(o8[0] == 127 && o8[1] == -128 && o8[2] == 0 && o8[3] == 16);
    bin(TJ_OP_DIV, TJ_DT_I8, a8, b8, o8, 4);
    cr_assert(o8[1] == -128, "INT8_MIN / -1 wraps");
    uint8_t au[] = {250, 3, 200, 0}, bu[] = {10, 5, 0, 1}, ou[4];
    bin(TJ_OP_ADD, TJ_DT_U8, au, bu, ou, 4);
    cr_assert(ou[0] == 4 && ou[1] == 8 && ou[2] == 200 && ou[3] == 1);
    bin(TJ_OP_SUB, TJ_DT_U8, au, bu, ou, 4);
    cr_assert(ou[0] == 240 && ou[1] == 254 && ou[3] == 255);
    bin(TJ_OP_DIV, TJ_DT_U8, au, bu, ou, 4);
    cr_assert(ou[0] == 25 && ou[1] == 0 && ou[2] == 0 && ou[3] == 0);
    uint32_t a32[] = {4000000000u, 1}, b32[] = {3, 0}, o32[2];
    bin(TJ_OP_REM, TJ_DT_U32, a32, b32, o32, 2);
    cr_assert(o32[0] == 4000000000u % 3 && o32[1] == 0);
    bin(TJ_OP_MAX, TJ_DT_U32, a32, b32, o32, 2);
    cr_assert(o32[0] == 4000000000u && o32[1] == 1, "unsigned compare");
}

Test(elementwise, shifts)
{
    int32_t a[] = {1, 1, 1, -8, -8, -8, 8, 8, 5};
    int32_t b[] = {31, 32, -1, 1, 40, -1, 32, 3, 0};
    int32_t out[9];
    bin(TJ_OP_SHL, TJ_DT_I32, a, b, out, 9);
    int32_t shl[] = {INT_MIN, 0, 0, -16, 0, 0, 0, 64, 5};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(out[i], shl[i], "shl %d: %d", i, out[i]);
    bin(TJ_OP_SHR, TJ_DT_I32, a, b, out, 9);
    int32_t shr[] = {0, 0, 0, -4, -1, -1, 0, 1, 5};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(out[i], shr[i], "shr %d: %d", i, out[i]);
    uint8_t ua[] = {0x80, 0x80, 0xff}, ub[] = {7, 8, 4}, uo[3];
    bin(TJ_OP_SHR, TJ_DT_U8, ua, ub, uo, 3);
    cr_assert(uo[0] == 1 && uo[1] == 0 && uo[2] == 0x0f, "logical shift on unsigned");
    bin(TJ_OP_SHL, TJ_DT_U8, ua, ub, uo, 3);
    cr_assert(uo[0] == 0 && uo[1] == 0 && uo[2] == 0xf0);
    int8_t sa[] = {-128, 64}, sb[] = {7, 1}, so[2];
    bin(TJ_OP_SHR, TJ_DT_I8, sa, sb, so, 2);
    cr_assert(so[0] == -1 && so[1] == 32, "arithmetic shift on i8");
}

Test(elementwise, integer_pow)
{
    int32_t a[] = {3, 2, 1, -1, -1, 2, 0, 5, -2};
    int32_t b[] = {4, -1, -5, -3, -2, 31, 0, 0, 3};
    int32_t want[] = {81, 0, 1, -1, 1, INT_MIN, 1, 1, -8};
    int32_t out[9];
    bin(TJ_OP_POW, TJ_DT_I32, a, b, out, 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(out[i], want[i], "pow %d: %d", i, out[i]);
}

Test(elementwise, bitwise_and_bool)
{
    int32_t a[] = {0x0f0f, -1, 0}, b[] = {0x00ff, 0x1234, -1}, out[3];
    bin(TJ_OP_AND, TJ_DT_I32, a, b, out, 3);
    cr_assert(out[0] == 0x000f && out[1] == 0x1234 && out[2] == 0);
    bin(TJ_OP_OR, TJ_DT_I32, a, b, out, 3);
    cr_assert(out[0] == 0x0fff && out[1] == -1 && out[2] == -1);
    bin(TJ_OP_XOR, TJ_DT_I32, a, b, out, 3);
    cr_assert(out[0] == 0x0ff0 && out[1] == ~0x1234 && out[2] == -1);
    un(TJ_OP_NOT, TJ_DT_I32, a, out, 3);
    cr_assert(out[0] == ~0x0f0f && out[1] == 0 && out[2] == -1);
    uint8_t p[] = {0, 0, 1, 1}, q[] = {0, 1, 0, 1}, o[4];
    bin(TJ_OP_AND, TJ_DT_BOOL, p, q, o, 4);
    cr_assert(!o[0] && !o[1] && !o[2] && o[3]);
    bin(TJ_OP_OR, TJ_DT_BOOL, p, q, o, 4);
    cr_assert(!o[0] && o[1] && o[2] && o[3]);
    bin(TJ_OP_XOR, TJ_DT_BOOL, p, q, o, 4);
    cr_assert(!o[0] && o[1] && o[2] && !o[3]);
    un(TJ_OP_NOT, TJ_DT_BOOL, p, o, 4);
    cr_assert(o[0] == 1 && o[1] == 1 && o[2] == 0 && o[3] == 0);
}

Test(elementwise, float_arithmetic_f32)
{
    float a[] = {1.5f, -2.0f, 1.0f, 0.0f, 7.5f, 1e30f, -3.0f, 2.0f};
    float b[] = {2.25f, 0.0f, 3.0f, 0.0f, 2.0f, 1e30f, 2.0f, 0.5f};
    float out[8];
    tj_op ops[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_REM, TJ_OP_POW};
    for (int o = 0; o < 6; o++) {
        bin(ops[o], TJ_DT_F32, a, b, out, 8);
        for (int i = 0; i < 8; i++) {
            float x = a[i], y = b[i], w;
            switch (ops[o]) {
            case TJ_OP_ADD: w = x + y; break;
            case TJ_OP_SUB: w = x - y; break;
            case TJ_OP_MUL: w = x * y; break;
            case TJ_OP_DIV: w = x / y; break;
            case TJ_OP_REM: w = fmodf(x, y); break;
            default: w = powf(x, y); break;
            }
            cr_assert(memcmp(&w, &out[i], sizeof w) == 0 || (isnan(w) && isnan(out[i])),
                      "%s %d: %g vs %g", tj_op_get(ops[o])->name, i, out[i], w);
        }
    }
    bin(TJ_OP_DIV, TJ_DT_F32, a, b, out, 8);
    cr_assert(isinf(out[1]) && out[1] < 0 && isnan(out[3]), "IEEE division by zero");
}

Test(elementwise, max_min_nan_and_signed_zero)
{
    float a[] = {NAN, 1.0f, -0.0f, 0.0f, 3.0f, -INFINITY};
    float b[] = {1.0f, NAN, 0.0f, -0.0f, 2.0f, 5.0f};
    float out[6];
    bin(TJ_OP_MAX, TJ_DT_F32, a, b, out, 6);
    cr_assert(isnan(out[0]) && isnan(out[1]));
    cr_assert(out[2] == 0 && !signbit(out[2]) && !signbit(out[3]), "max(-0, +0) is +0");
    cr_assert(out[4] == 3.0f && out[5] == 5.0f);
    bin(TJ_OP_MIN, TJ_DT_F32, a, b, out, 6);
    cr_assert(isnan(out[0]) && isnan(out[1]));
    cr_assert(signbit(out[2]) && signbit(out[3]), "min(-0, +0) is -0");
    cr_assert(out[4] == 2.0f && out[5] == -INFINITY);
    double da[] = {NAN, 2.0}, db[] = {1.0, NAN}, dout[2];
    bin(TJ_OP_MAX, TJ_DT_F64, da, db, dout, 2);
    cr_assert(isnan(dout[0]) && isnan(dout[1]));
    int32_t ia[] = {-5, 7}, ib[] = {3, -9}, iout[2];
    bin(TJ_OP_MIN, TJ_DT_I32, ia, ib, iout, 2);
    cr_assert(iout[0] == -5 && iout[1] == -9);
}

Test(elementwise, comparisons)
{
    float a[] = {1.0f, NAN, 2.0f, -0.0f, 3.0f};
    float b[] = {2.0f, NAN, 2.0f, 0.0f, 1.0f};
    tj_op ops[] = {TJ_OP_EQ, TJ_OP_NE, TJ_OP_LT, TJ_OP_LE, TJ_OP_GT, TJ_OP_GE};
    uint8_t out[5];
    for (int o = 0; o < 6; o++) {
        bin(ops[o], TJ_DT_F32, a, b, out, 5);
        for (int i = 0; i < 5; i++) {
            float x = a[i], y = b[i];
            int w = ops[o] == TJ_OP_EQ ? x == y : ops[o] == TJ_OP_NE ? x != y : ops[o] == TJ_OP_LT ? x < y
                  : ops[o] == TJ_OP_LE ? x <= y : ops[o] == TJ_OP_GT ? x > y : x >= y;
            cr_assert_eq(out[i], w, "%s %d", tj_op_get(ops[o])->name, i);
        }
    }
    uint32_t ua[] = {0xffffffffu, 1}, ub[] = {1, 2};
    bin(TJ_OP_GT, TJ_DT_U32, ua, ub, out, 2);
    cr_assert(out[0] == 1 && out[1] == 0, "unsigned order");
    int32_t sa[] = {-1, 1}, sb[] = {1, 2};
    bin(TJ_OP_GT, TJ_DT_I32, sa, sb, out, 2);
    cr_assert(out[0] == 0 && out[1] == 0, "signed order");
}

Test(elementwise, f16_computes_in_f32_and_rounds)
{
    ref_half one = (ref_half)1.0f, tiny = (ref_half)0x1p-11f, ulp = (ref_half)0x1p-10f;
    ref_half a[] = {one, (ref_half)(1.0f + 0x1p-10f), (ref_half)60000.0f, (ref_half)0.1f, (ref_half)3.0f};
    ref_half b[] = {tiny, tiny, (ref_half)60000.0f, (ref_half)0.2f, (ref_half)7.0f};
    ref_half out[5];
    bin(TJ_OP_ADD, TJ_DT_F16, a, b, out, 5);
    cr_assert((float)out[0] == 1.0f, "1 + 2^-11 ties to 1");
    cr_assert((float)out[1] == 1.0f + 2 * (float)ulp, "1 + 2^-10 + 2^-11 ties to 1 + 2^-9");
    cr_assert(isinf((float)out[2]), "overflow to inf");
    for (int i = 3; i < 5; i++)
        cr_assert((float)out[i] == (float)(ref_half)((float)a[i] + (float)b[i]), "%d", i);
    bin(TJ_OP_DIV, TJ_DT_F16, a, b, out, 5);
    for (int i = 0; i < 5; i++)
        cr_assert((float)out[i] == (float)(ref_half)((float)a[i] / (float)b[i]), "div %d", i);
    uint16_t ba[] = {0x3f80, 0x4040}, bb[] = {0x3b80, 0x3f81}, bo[2]; /* bf16: 1 + 2^-8, 3 * (1 + 2^-7) */
    bin(TJ_OP_ADD, TJ_DT_BF16, ba, bb, bo, 2);
    cr_assert_eq(bo[0], 0x3f80, "1 + 2^-8 ties to even in bf16");
    bin(TJ_OP_MUL, TJ_DT_BF16, ba, bb, bo, 2);
    cr_assert_eq(bo[1], tj_f32_to_bf16(3.0f * (1.0f + 0x1p-7f)));
}

static const float unary_inputs[] = {-2.5f, -1.0f, -0.0f, 0.0f, 0.3f, 1.0f, 2.0f, 10.0f, 100.0f, INFINITY, -INFINITY, NAN};

static float unary_ref(tj_op op, float x)
{
    switch (op) {
    case TJ_OP_NEG: return -x;
    case TJ_OP_ABS: return fabsf(x);
    case TJ_OP_EXP: return expf(x);
    case TJ_OP_EXP2: return exp2f(x);
    case TJ_OP_LOG: return logf(x);
    case TJ_OP_LOG2: return log2f(x);
    case TJ_OP_SQRT: return sqrtf(x);
    case TJ_OP_RSQRT: return 1.0f / sqrtf(x);
    case TJ_OP_SIN: return sinf(x);
    case TJ_OP_COS: return cosf(x);
    case TJ_OP_TANH: return tanhf(x);
    case TJ_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case TJ_OP_ERF: return erff(x);
    case TJ_OP_FLOOR: return floorf(x);
    default: return ceilf(x);
    }
}

static const tj_op unary_ops[] = {TJ_OP_NEG, TJ_OP_ABS, TJ_OP_EXP, TJ_OP_EXP2, TJ_OP_LOG,
                                  TJ_OP_LOG2, TJ_OP_SQRT, TJ_OP_RSQRT, TJ_OP_SIN, TJ_OP_COS,
                                  TJ_OP_TANH, TJ_OP_SIGMOID, TJ_OP_ERF, TJ_OP_FLOOR, TJ_OP_CEIL};

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

Test(elementwise, unary_math_f32_f16_f64)
{
    enum { N = N_OF(unary_inputs) };
    for (int o = 0; o < N_OF(unary_ops); o++) {
        tj_op op = unary_ops[o];
        float fin[N], fout[N];
        ref_half hin[N], hout[N];
        double din[N], dout[N];
        for (int i = 0; i < N; i++) {
            fin[i] = unary_inputs[i];
            hin[i] = (ref_half)unary_inputs[i];
            din[i] = unary_inputs[i];
        }
        un(op, TJ_DT_F32, fin, fout, N);
        un(op, TJ_DT_F16, hin, hout, N);
        un(op, TJ_DT_F64, din, dout, N);
        for (int i = 0; i < N; i++) {
            cr_assert(same_float(fout[i], unary_ref(op, fin[i])), "%s(%g) = %g", tj_op_get(op)->name,
                      (double)fin[i], (double)fout[i]);
            float hw = (float)(ref_half)unary_ref(op, (float)hin[i]);
            cr_assert(same_float((float)hout[i], hw), "f16 %s(%g)", tj_op_get(op)->name, (double)(float)hin[i]);
            cr_assert(!isnan(dout[i]) || isnan(unary_ref(op, fin[i])), "f64 %s(%g)", tj_op_get(op)->name, din[i]);
        }
    }
    double d[] = {0.5, 2.0}, o[2];
    un(TJ_OP_EXP, TJ_DT_F64, d, o, 2);
    cr_assert(o[0] == exp(0.5) && o[1] == exp(2.0), "f64 math in double");
    un(TJ_OP_SIGMOID, TJ_DT_F64, d, o, 2);
    cr_assert(o[0] == 1.0 / (1.0 + exp(-0.5)));
}

Test(elementwise, integer_neg_abs_wrap)
{
    int32_t a[] = {INT_MIN, -5, 0, 7}, out[4];
    un(TJ_OP_NEG, TJ_DT_I32, a, out, 4);
    cr_assert(out[0] == INT_MIN && out[1] == 5 && out[2] == 0 && out[3] == -7);
    un(TJ_OP_ABS, TJ_DT_I32, a, out, 4);
    cr_assert(out[0] == INT_MIN && out[1] == 5 && out[3] == 7);
    uint16_t u[] = {1, 0}, uo[2];
    un(TJ_OP_NEG, TJ_DT_U16, u, uo, 2);
    cr_assert(uo[0] == 0xffff && uo[1] == 0);
}

Test(elementwise, select_and_fma)
{
    uint8_t c[] = {1, 0, 1, 0};
    float a[] = {1, 2, 3, 4}, b[] = {-1, -2, -3, -4}, out[4];
    void *in[3] = {c, a, b};
    tt_kb kb;
    tt_begin(&kb, "sel", 1, 0, 0);
    tj_ref zero = tt_ci(&kb, TJ_DT_I32, 0);
    tj_ref vc = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "c", TJ_DT_BOOL, "N"), zero, 4), TJ_NONE, TJ_NONE);
    tj_ref va = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "a", TJ_DT_F32, "N"), zero, 4), TJ_NONE, TJ_NONE);
    tj_ref vb = tt_load(&kb, tt_slice1(&kb, tt_param(&kb, "b", TJ_DT_F32, "N"), zero, 4), TJ_NONE, TJ_NONE);
    tj_ref vo = tt_slice1(&kb, tt_param(&kb, "o", TJ_DT_F32, "N"), zero, 4);
    tt_store(&kb, vo, tt_op(&kb, TJ_OP_SELECT, tt_type(&kb, va), 3, vc, va, vb), TJ_NONE);
    tt_end(&kb);
    tj_arg args[] = {tt_tensor(in[0], TJ_DT_BOOL, 1, 4), tt_tensor(a, TJ_DT_F32, 1, 4),
                     tt_tensor(b, TJ_DT_F32, 1, 4), tt_tensor(out, TJ_DT_F32, 1, 4)};
    cr_assert_eq(tt_run(&kb, args, 4), 0);
    tt_free(&kb);
    cr_assert(out[0] == 1 && out[1] == -2 && out[2] == 3 && out[3] == -4);

    /* fused: (1 + 2^-23)^2 - (1 + 2^-22) is 2^-46, not the 0 of mul then add */
    float x[] = {1 + 0x1p-23f, 2}, y[] = {1 + 0x1p-23f, 3}, z[] = {-(1 + 0x1p-22f), 1}, r[2];
    void *fin[3] = {x, y, z};
    run_ew(TJ_OP_FMA, TJ_DT_F32, TJ_DT_F32, 3, fin, r, 2);
    cr_assert(r[0] == 0x1p-46f && r[1] == 7.0f);
    ref_half hx[] = {(ref_half)1.5f}, hy[] = {(ref_half)1.5f}, hz[] = {(ref_half)0.001f}, hr[1];
    void *hin[3] = {hx, hy, hz};
    run_ew(TJ_OP_FMA, TJ_DT_F16, TJ_DT_F16, 3, hin, hr, 1);
    cr_assert((float)hr[0] == (float)(ref_half)fmaf(1.5f, 1.5f, (float)hz[0]));
}
