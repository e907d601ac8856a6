/* Constant folding (passes/fold.c) against the reference interpreter: every
 * elementwise op, on every dtype, applied to values where the semantics have
 * corners, folds to what the interpreter computes from the unfolded kernel. */
#include "pass_test_util.h"

static const tj_dtype all_dtypes[] = {
    TJ_DT_BOOL, TJ_DT_I8, TJ_DT_I16, TJ_DT_I32, TJ_DT_I64, TJ_DT_U8, TJ_DT_U16,
    TJ_DT_U32, TJ_DT_U64, TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32, TJ_DT_F64,
};
enum { NDTYPES = sizeof all_dtypes / sizeof all_dtypes[0], MAX_VALUES = 24 };

typedef struct value { int64_t i; double f; } value;

/* Values where the semantics have corners: wrapping, signs, shift widths,
 * rounding ties, overflow, zeros of both signs, infinities, NaN. */
static int edge_values(tj_dtype dt, value *out)
{
    int n = 0, bits = tj_dtype_bits(dt);
    if (tj_dtype_is_float(dt)) {
        static const double fs[] = {0.0, -0.0, 1, -1, 0.5, 1.5, 2.5, -2.5, 3.75, 1e10, -1e10,
                                    65504, 70000, 1e-7, 3e38, 16777217, INFINITY, -INFINITY, NAN};
        for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
            out[n++] = (value){.f = fs[i]};
        return n;
    }
    if (dt == TJ_DT_BOOL) {
        out[n++] = (value){.i = 0};
        out[n++] = (value){.i = 1};
        return n;
    }
    uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    uint64_t us[] = {0, 1, 2, 3, 7, (uint64_t)bits - 1, (uint64_t)bits, mask, mask - 1,
                     mask >> 1, (mask >> 1) + 1, (uint64_t)-1, (uint64_t)-2, (uint64_t)-7, 100};
    for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) {
        uint64_t v = us[i] & mask;
        if (tj_dtype_is_signed(dt) && bits < 64 && (v >> (bits - 1)))
            v |= ~mask; /* sign-extend, as CONST stores it */
        out[n++] = (value){.i = (int64_t)v};
    }
    return n;
}

static tj_ref emit_const(tt_kb *kb, tj_dtype dt, value v)
{
    return tj_dtype_is_float(dt) ? tt_cf(kb, dt, v.f) : tt_ci(kb, dt, v.i);
}

/* A kernel applying `op` to every combination of the edge values of `dt`
 * (nargs operands), storing each result; NULL when the verifier says the
 * op does not apply to dt. */
static tt_kb *fold_kernel(tt_kb *kb, tj_op op, tj_dtype dt, tj_dtype out_dt, int nargs)
{
    value vals[MAX_VALUES];
    int nv = edge_values(dt, vals), combos = 1;
    if (nargs == 3 && nv > 6)
        nv = 6;
    for (int a = 0; a < nargs; a++)
        combos *= nv;
    tt_begin(kb, tj_op_get(op)->name, 1, 0, 0);
    tj_ref out = tt_param(kb, "out", out_dt, "N");
    for (int c = 0; c < combos; c++) {
        tj_ref xs[3];
        for (int a = 0, rest = c; a < nargs; a++, rest /= nv)
            xs[a] = emit_const(kb, dt, vals[rest % nv]);
        tj_type t = op == TJ_OP_CAST ? tt_scalar(kb, out_dt)
                  : tj_op_get(op)->flags & TJ_OPF_CMP ? tt_scalar(kb, TJ_DT_BOOL)
                                                      : tt_scalar(kb, dt);
        tj_ref r = tj_emit(kb->k, tt_cur(kb), op, t, xs, (uint32_t)nargs);
        store_scalar(kb, out, r, c);
    }
    tt_end(kb);
    if (tj_verify(kb->k)) {
        tt_free(kb);
        return NULL;
    }
    return kb;
}

/* Folds every combination, checks the results against the interpreter
 * running the unfolded kernel, and returns how many ops stayed. */
static int check_fold(tj_op op, tj_dtype dt, tj_dtype out_dt, int nargs, int *tested)
{
    tt_kb kb;
    if (!fold_kernel(&kb, op, dt, out_dt, nargs))
        return 0;
    int left = 0;
    if (check_same_results(kb.k, "canonicalize")) {
        tj_kernel *opt = tj_kernel_clone(kb.k);
        run_ok(opt, "canonicalize");
        left = count_op(opt, op);
        ++*tested;
    }
    tt_free(&kb);
    return left;
}

Test(fold, binary_ops_match_the_interpreter)
{
    static const tj_op ops[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_REM,
                                TJ_OP_POW, TJ_OP_MAX, TJ_OP_MIN, TJ_OP_AND, TJ_OP_OR,
                                TJ_OP_XOR, TJ_OP_SHL, TJ_OP_SHR, TJ_OP_EQ, TJ_OP_NE,
                                TJ_OP_LT, TJ_OP_LE, TJ_OP_GT, TJ_OP_GE};
    int tested = 0;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int d = 0; d < NDTYPES; d++) {
            tj_dtype dt = all_dtypes[d];
            int left = check_fold(ops[o], dt, dt, 2, &tested);
            /* Integers fold completely; floats keep pow and max/min of
             * zeros of opposite signs. */
            if (tj_dtype_is_int(dt))
                cr_expect_eq(left, 0, "%s on %s: %d not folded", tj_op_get(ops[o])->name,
                             tj_dtype_name(dt), left);
        }
    cr_assert_gt(tested, 100, "only %d op/dtype pairs ran", tested);
}

Test(fold, unary_ops_and_fma_match_the_interpreter)
{
    static const tj_op ops[] = {TJ_OP_NEG, TJ_OP_ABS, TJ_OP_NOT, TJ_OP_SQRT,
                                TJ_OP_FLOOR, TJ_OP_CEIL, TJ_OP_EXP, TJ_OP_CAST};
    int tested = 0;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int d = 0; d < NDTYPES; d++)
            check_fold(ops[o], all_dtypes[d], all_dtypes[d], 1, &tested);
    for (int d = 0; d < NDTYPES; d++)
        check_fold(TJ_OP_FMA, all_dtypes[d], all_dtypes[d], 3, &tested);
    cr_assert_gt(tested, 20, "only %d op/dtype pairs ran", tested);
}

Test(fold, casts_match_the_interpreter)
{
    int tested = 0;
    for (int from = 0; from < NDTYPES; from++)
        for (int to = 0; to < NDTYPES; to++) {
            tj_dtype in = all_dtypes[from], out = all_dtypes[to];
            int left = check_fold(TJ_OP_CAST, in, out, 1, &tested);
            /* 64-bit integers that a double does not hold stay: rounding
             * them to bf16 through a double would round twice. */
            if (out == TJ_DT_BF16 && tj_dtype_bits(in) == 64)
                continue;
            cr_expect_eq(left, 0, "cast %s -> %s: %d not folded", tj_dtype_name(in),
                         tj_dtype_name(out), left);
        }
    cr_assert_eq(tested, NDTYPES * NDTYPES);
}
