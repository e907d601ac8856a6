/* The verifier: each class of error, built with the builder, is reported
 * with a message naming the instruction; valid kernels pass. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_ir_util.h"

static tj_ctx *ctx;
static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }
TestSuite(ir_verify, .init = setup, .fini = teardown);

/* Values most tests start from, in the body of skeleton(): X's view and
 * tile f32[32, 64], and scalars. */
typedef struct base {
    tj_kernel *k;
    tj_block_id b;
    tj_ref X, zero, one, view, t, flag;
    tj_type i32, f32, bl, tt, tb;
} base;

static base make_base(void)
{
    base s = {.k = skeleton(ctx, "bad")};
    tj_kernel *k = s.k;
    s.b = k->body;
    s.i32 = scalar(ctx, TJ_DT_I32);
    s.f32 = scalar(ctx, TJ_DT_F32);
    s.bl = scalar(ctx, TJ_DT_BOOL);
    s.tt = tile(ctx, TJ_DT_F32, 2, 32, 64);
    s.tb = tile(ctx, TJ_DT_BOOL, 2, 32, 64);
    s.X = op0(k, s.b, TJ_OP_PARAM, tj_type_tensor(ctx, TJ_DT_F32, 2), 0);
    s.zero = const_i(k, s.b, TJ_DT_I32, 0);
    s.one = const_i(k, s.b, TJ_DT_I32, 1);
    tj_ref xs[3] = {s.X, s.zero, s.zero};
    s.view = view_op(k, s.b, tj_type_view(ctx, TJ_DT_F32, 2, (int32_t[]){32, 64}), xs, 3, (int32_t[]){32, 64});
    s.t = op3(k, s.b, TJ_OP_LOAD, s.tt, s.view, TJ_NONE, TJ_NONE);
    s.flag = op2(k, s.b, TJ_OP_EQ, s.bl, s.zero, s.one);
    return s;
}

/* Finishes the body, verifies, and expects a failure mentioning `what`. */
static void expect_invalid(base *s, const char *what)
{
    finish_body(s->k);
    tj_diag_clear(ctx);
    cr_expect_neq(tj_verify(s->k), 0, "verified:\n%s", print_str(s->k));
    const char *msg = tj_diag_render(ctx);
    cr_expect(strstr(msg, what), "expected '%s' in:\n%s\n%s", what, msg, print_str(s->k));
}

/* An IF (or FOR) owning fresh blocks; returns the instruction. */
static tj_ref region_op(tj_kernel *k, tj_block_id b, tj_op op, tj_type t, const tj_ref *args, uint32_t n,
                        tj_block_id *r0, tj_block_id *r1)
{
    tj_ref r = tj_emit(k, b, op, t, args, n);
    *r0 = tj_block_new(k, r);
    tj_inst_at(k, r)->region[0] = *r0;
    if (r1) {
        *r1 = tj_block_new(k, r);
        tj_inst_at(k, r)->region[1] = *r1;
    }
    return r;
}

Test(ir_verify, valid_kernels_pass)
{
    tj_kernel *k = build_all_ops(ctx);
    cr_expect_eq(tj_verify(k), 0, "%s", tj_diag_render(ctx));
    k = build_simt_ops(ctx);
    cr_expect_eq(tj_verify(k), 0, "%s", tj_diag_render(ctx));
    base s = make_base();
    finish_body(s.k);
    cr_expect_eq(tj_verify(s.k), 0, "%s", tj_diag_render(ctx));
}

/* ---- operands and scoping ------------------------------------------------------ */

Test(ir_verify, operand_types_differ_names_the_instruction)
{
    base s = make_base();
    tj_ref xs[3] = {s.X, s.zero, s.zero};
    tj_ref v2 = view_op(s.k, s.b, tj_type_view(ctx, TJ_DT_F32, 2, (int32_t[]){32, 32}), xs, 3, (int32_t[]){32, 32});
    tj_ref t2 = op3(s.k, s.b, TJ_OP_LOAD, tile(ctx, TJ_DT_F32, 2, 32, 32), v2, TJ_NONE, TJ_NONE);
    op2(s.k, s.b, TJ_OP_ADD, s.tt, s.t, t2);
    expect_invalid(&s, "@bad: %9 = add %5, %8 : f32[32, 64]: operand types differ: f32[32, 64] vs f32[32, 32]");
}

Test(ir_verify, operand_count)
{
    base s = make_base();
    op1(s.k, s.b, TJ_OP_ADD, s.tt, s.t);
    expect_invalid(&s, "= add %5 : f32[32, 64]: takes 2 operands, not 1");
}

Test(ir_verify, missing_and_dangling_operands)
{
    base s = make_base();
    op2(s.k, s.b, TJ_OP_ADD, s.tt, s.t, TJ_NONE);
    op2(s.k, s.b, TJ_OP_ADD, s.tt, s.t, 999);
    tj_ref st = op3(s.k, s.b, TJ_OP_STORE, TJ_TYPE_NONE, s.view, s.t, TJ_NONE);
    op1(s.k, s.b, TJ_OP_NEG, s.tt, st);
    expect_invalid(&s, "operand 2 is missing");
    cr_expect(strstr(tj_diag_render(ctx), "= add %5, %!999 : f32[32, 64]: operand 2 refers to instruction 999, "
                                          "which does not exist"));
    cr_expect(strstr(tj_diag_render(ctx), "operand 1 refers to an instruction without a result"));
}

Test(ir_verify, use_before_definition)
{
    base s = make_base();
    tj_ref later = tj_inst_new(s.k, TJ_OP_NEG, s.tt, &s.t, 1);
    op2(s.k, s.b, TJ_OP_ADD, s.tt, s.t, later);
    tj_block_insert(s.k, s.b, s.k->blocks[s.b].ninsts, later);
    expect_invalid(&s, "%7 = add %5, %8 : f32[32, 64]: %8 is used before its definition");
}

Test(ir_verify, use_outside_scope)
{
    base s = make_base();
    tj_block_id tb, eb;
    region_op(s.k, s.b, TJ_OP_IF, TJ_TYPE_NONE, &s.flag, 1, &tb, &eb);
    tj_ref inner = op1(s.k, tb, TJ_OP_NEG, s.tt, s.t);
    yield_n(s.k, tb, NULL, 0);
    op1(s.k, eb, TJ_OP_NEG, s.tt, inner); /* the then branch's value in the else branch */
    yield_n(s.k, eb, NULL, 0);
    op1(s.k, s.b, TJ_OP_ABS, s.tt, inner); /* and after the if */
    expect_invalid(&s, "= neg %7 : f32[32, 64]: %7 is not in scope here: its block does not enclose this use");
    cr_expect(strstr(tj_diag_render(ctx), "= abs %7 : f32[32, 64]: %7 is not in scope here"));
}

Test(ir_verify, self_use)
{
    base s = make_base();
    tj_ref r = op2(s.k, s.b, TJ_OP_ADD, s.tt, s.t, s.t);
    tj_inst_at(s.k, r)->args[1] = r;
    expect_invalid(&s, "uses its own result");
}

/* ---- elementwise ----------------------------------------------------------------- */

Test(ir_verify, elementwise_types)
{
    base s = make_base();
    op2(s.k, s.b, TJ_OP_LT, s.tt, s.t, s.t);
    op1(s.k, s.b, TJ_OP_EXP, s.i32, s.zero);
    op2(s.k, s.b, TJ_OP_AND, s.tt, s.t, s.t);
    op2(s.k, s.b, TJ_OP_SHL, s.bl, s.flag, s.flag);
    op3(s.k, s.b, TJ_OP_SELECT, s.tt, s.t, s.t, s.t);
    op1(s.k, s.b, TJ_OP_CAST, tile(ctx, TJ_DT_I32, 1, 32), s.t);
    op1(s.k, s.b, TJ_OP_NEG, s.tt, s.X);
    expect_invalid(&s, "= lt %5, %5 : f32[32, 64]: result type should be bool[32, 64]");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "= exp %2 : i32: takes floats, not i32"), "%s", m);
    cr_expect(strstr(m, "= and %5, %5 : f32[32, 64]: takes integers or bool, not f32"), "%s", m);
    cr_expect(strstr(m, "= shl %6, %6 : bool: takes integers, not bool"), "%s", m);
    cr_expect(strstr(m, "= select %5, %5, %5 : f32[32, 64]: condition is f32[32, 64], expected bool[32, 64]"), "%s", m);
    cr_expect(strstr(m, "a cast keeps the shape of its operand f32[32, 64]"), "%s", m);
    cr_expect(strstr(m, "= neg %1 : f32[32, 64]: operand 1 is tensor<f32, 2>, not a tile"), "%s", m);
}

/* ---- shapes, reductions, dot --------------------------------------------------------- */

Test(ir_verify, shape_ops)
{
    base s = make_base();
    op1(s.k, s.b, TJ_OP_BROADCAST, tile(ctx, TJ_DT_F32, 2, 64, 64), s.t);
    op1(s.k, s.b, TJ_OP_RESHAPE, tile(ctx, TJ_DT_F32, 1, 100), s.t);
    tj_ref p = op1(s.k, s.b, TJ_OP_PERMUTE, tile(ctx, TJ_DT_F32, 2, 64, 32), s.t);
    tj_inst_set_list(s.k, p, (int32_t[]){1, 1}, 2);
    tj_ref q = op1(s.k, s.b, TJ_OP_PERMUTE, tile(ctx, TJ_DT_F32, 2, 64, 32), s.t);
    tj_inst_set_list(s.k, q, (int32_t[]){1}, 1);
    expect_invalid(&s, "cannot broadcast f32[32, 64] to f32[64, 64]");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "cannot reshape f32[32, 64] to f32[100]"), "%s", m);
    cr_expect(strstr(m, "perm is not a permutation of 0..1"), "%s", m);
    cr_expect(strstr(m, "perm has 1 entries for rank 2"), "%s", m);
}

Test(ir_verify, gather)
{
    base s = make_base();
    tj_type row = tile(ctx, TJ_DT_F32, 1, 64), irow = tile(ctx, TJ_DT_I32, 1, 64);
    tj_ref x = op1i(s.k, s.b, TJ_OP_REDUCE_SUM, row, s.t, 0);
    tj_ref idx = op1(s.k, s.b, TJ_OP_CAST, irow, x);
    op2(s.k, s.b, TJ_OP_GATHER, row, x, idx);                                   /* valid */
    op2(s.k, s.b, TJ_OP_GATHER, s.tt, s.t, idx);                                /* 2-D */
    op2(s.k, s.b, TJ_OP_GATHER, row, x, x);                                     /* float indices */
    tj_ref short_idx = op0(s.k, s.b, TJ_OP_ARANGE, tile(ctx, TJ_DT_I32, 1, 32), 0);
    op2(s.k, s.b, TJ_OP_GATHER, tile(ctx, TJ_DT_F32, 1, 32), x, short_idx);    /* valid: idx's shape */
    op2(s.k, s.b, TJ_OP_GATHER, row, x, short_idx);                             /* not idx's shape */
    tj_ref idx2 = op1(s.k, s.b, TJ_OP_CAST, tile(ctx, TJ_DT_I32, 2, 32, 64), s.t);
    op2(s.k, s.b, TJ_OP_GATHER, s.tt, x, idx2);                                 /* 2-D indices */
    op2(s.k, s.b, TJ_OP_GATHER, tile(ctx, TJ_DT_F16, 1, 64), x, idx);           /* result type */
    expect_invalid(&s, "gathers from a 1-D tile, not f32[32, 64]");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "the indices must be a 1-D integer tile, not f32[64]"), "%s", m);
    cr_expect(strstr(m, "the indices must be a 1-D integer tile, not i32[32, 64]"), "%s", m);
    cr_expect(strstr(m, "result type should be f32[32]"), "%s", m);
    cr_expect(strstr(m, "result type should be f32[64]"), "%s", m);
}

Test(ir_verify, reductions_scans_sort)
{
    base s = make_base();
    tj_type row = tile(ctx, TJ_DT_F32, 1, 32);
    op1i(s.k, s.b, TJ_OP_REDUCE_SUM, row, s.t, 2);
    op1i(s.k, s.b, TJ_OP_REDUCE_MAX, row, s.t, 0);
    op1i(s.k, s.b, TJ_OP_ARGMAX, row, s.t, 1);
    op1i(s.k, s.b, TJ_OP_CUMSUM, s.tt, s.t, -1);
    op_n(s.k, s.b, TJ_OP_SORT, tuple2(ctx, s.tt, row), 0, 2, s.t, op1i(s.k, s.b, TJ_OP_REDUCE_MIN, row, s.t, 1), 0);
    op1i(s.k, s.b, TJ_OP_REDUCE_SUM, s.bl, s.flag, -1);
    expect_invalid(&s, "= reduce_sum %5 {axis = 2} : f32[32]: axis 2 is out of range for rank 2");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "= reduce_max %5 {axis = 0} : f32[32]: result type should be f32[64]"), "%s", m);
    cr_expect(strstr(m, "= argmax %5 {axis = 1} : f32[32]: result type should be i32[32]"), "%s", m);
    cr_expect(strstr(m, "= cumsum %5 {axis = -1} : f32[32, 64]: axis -1 is out of range"), "%s", m);
    cr_expect(strstr(m, "keys f32[32, 64] and values f32[32] differ in shape"), "%s", m);
    cr_expect(strstr(m, "takes numbers, not bool"), "%s", m);
}

Test(ir_verify, dot_shapes_and_types)
{
    base s = make_base();
    tj_type acc = tile(ctx, TJ_DT_F32, 2, 32, 32);
    tj_ref c = op1(s.k, s.b, TJ_OP_BROADCAST, acc, const_f(s.k, s.b, TJ_DT_F32, 0));
    op3(s.k, s.b, TJ_OP_DOT, acc, s.t, s.t, c);
    tj_ref a16 = op1(s.k, s.b, TJ_OP_CAST, tile(ctx, TJ_DT_F16, 2, 32, 64), s.t);
    tj_ref b16 = op1(s.k, s.b, TJ_OP_CAST, tile(ctx, TJ_DT_F16, 2, 64, 32), op1(s.k, s.b, TJ_OP_RESHAPE,
                                                                                tile(ctx, TJ_DT_F32, 2, 64, 32), s.t));
    tj_ref c16 = op1(s.k, s.b, TJ_OP_CAST, tile(ctx, TJ_DT_F16, 2, 32, 32), c);
    op3(s.k, s.b, TJ_OP_DOT, tile(ctx, TJ_DT_F16, 2, 32, 32), a16, b16, c16);
    op3(s.k, s.b, TJ_OP_DOT, acc, a16, s.t, c);
    op3(s.k, s.b, TJ_OP_DOT, acc, a16, b16, s.t);
    tj_ref good = op3(s.k, s.b, TJ_OP_DOT, acc, a16, b16, c);
    tj_inst_at(s.k, good)->imm = 7;
    expect_invalid(&s, "inner dimensions differ: f32[32, 64] x f32[32, 64]");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "f16 inputs accumulate in f32, not f16"), "%s", m);
    cr_expect(strstr(m, "input types differ: f16[32, 64] x f32[32, 64]"), "%s", m);
    cr_expect(strstr(m, "shapes do not fit [M, K] x [K, N] + [M, N] (or batched)"), "%s", m);
    cr_expect(strstr(m, "unknown precision 7"), "%s", m);
}

/* ---- memory ---------------------------------------------------------------------------- */

Test(ir_verify, views)
{
    base s = make_base();
    tj_type vt = tj_type_view(ctx, TJ_DT_F32, 1, (int32_t[]){64});
    tj_ref a1[2] = {s.X, s.zero};
    view_op(s.k, s.b, vt, a1, 2, (int32_t[]){64});
    tj_ref a2[3] = {s.X, s.t, s.zero};
    view_op(s.k, s.b, vt, a2, 3, (int32_t[]){TJ_VIEW_INDEX, 64});
    tj_ref a3[3] = {s.X, s.zero, s.zero};
    view_op(s.k, s.b, vt, a3, 3, (int32_t[]){0, 64});
    view_op(s.k, s.b, vt, a3, 3, (int32_t[]){TJ_VIEW_GATHER, 64});
    view_op(s.k, s.b, tj_type_view(ctx, TJ_DT_F32, 1, (int32_t[]){32}), a3, 3, (int32_t[]){TJ_VIEW_INDEX, 64});
    tj_ref ar = op0(s.k, s.b, TJ_OP_ARANGE, tile(ctx, TJ_DT_I32, 1, 8), 0);
    tj_ref ar2 = op0(s.k, s.b, TJ_OP_ARANGE, tile(ctx, TJ_DT_I32, 1, 4), 0);
    tj_ref a4[3] = {s.X, ar, ar2};
    view_op(s.k, s.b, tj_type_view(ctx, TJ_DT_F32, 1, (int32_t[]){8}), a4, 3,
            (int32_t[]){TJ_VIEW_GATHER, TJ_VIEW_GATHER});
    tj_ref a5[2] = {s.t, s.zero};
    view_op(s.k, s.b, vt, a5, 2, (int32_t[]){64});
    expect_invalid(&s, "a view of a rank-2 tensor takes 2 axis operands and axes, not 1 and 1");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "axis 0: the index is f32[32, 64], not an integer scalar"), "%s", m);
    cr_expect(strstr(m, "axis 0: extent 0 is not positive"), "%s", m);
    cr_expect(strstr(m, "axis 0: gather indices are i32, not an integer tile"), "%s", m);
    cr_expect(strstr(m, ": view<f32[32]>: result type should be view<f32[64]>"), "%s", m);
    cr_expect(strstr(m, "gather indices differ in shape: i32[8] vs i32[4]"), "%s", m);
    cr_expect(strstr(m, "operand 1 is f32[32, 64], not a tensor"), "%s", m);
}

Test(ir_verify, loads_stores_atomics)
{
    base s = make_base();
    op3(s.k, s.b, TJ_OP_LOAD, tile(ctx, TJ_DT_F32, 1, 64), s.view, TJ_NONE, TJ_NONE);
    op3(s.k, s.b, TJ_OP_LOAD, s.tt, s.view, s.flag, TJ_NONE);
    op3(s.k, s.b, TJ_OP_LOAD, s.tt, s.view, TJ_NONE, s.zero);
    op3(s.k, s.b, TJ_OP_LOAD, s.tt, s.t, TJ_NONE, TJ_NONE);
    op3(s.k, s.b, TJ_OP_STORE, TJ_TYPE_NONE, s.view, op1(s.k, s.b, TJ_OP_CAST, tile(ctx, TJ_DT_F16, 2, 32, 64), s.t),
        TJ_NONE);
    op3(s.k, s.b, TJ_OP_STORE, s.tt, s.view, s.t, TJ_NONE);
    op3(s.k, s.b, TJ_OP_ATOMIC_ADD, TJ_TYPE_NONE, s.view, s.t, TJ_NONE);
    expect_invalid(&s, ": f32[64]: result type should be f32[32, 64]");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "mask is bool, expected bool[32, 64]"), "%s", m);
    cr_expect(strstr(m, "other is i32, expected f32[32, 64] or f32"), "%s", m);
    cr_expect(strstr(m, "operand 1 is f32[32, 64], not a view"), "%s", m);
    cr_expect(strstr(m, "value is f16[32, 64], expected f32[32, 64]"), "%s", m);
    cr_expect(strstr(m, "has no result, but a result type f32[32, 64]"), "%s", m);
    cr_expect(strstr(m, "atomic_add %4, %5, _: result type should be f32[32, 64]"), "%s", m);
}

/* ---- regions -------------------------------------------------------------------------------- */

Test(ir_verify, for_signature)
{
    base s = make_base();
    tj_type v64 = tile(ctx, TJ_DT_F32, 1, 64);
    tj_ref init = op1i(s.k, s.b, TJ_OP_REDUCE_SUM, v64, s.t, 0);
    tj_ref xs[4] = {s.zero, s.one, s.one, init};
    tj_block_id lb;
    region_op(s.k, s.b, TJ_OP_FOR, tj_type_tuple(ctx, 1, &v64), xs, 4, &lb, NULL);
    arg(s.k, lb, s.i32, 0);
    tj_ref c = arg(s.k, lb, s.f32, 1);
    yield_n(s.k, lb, &c, 1);
    tj_ref bad_bounds[3] = {s.zero, s.flag, s.one};
    tj_block_id lb2;
    region_op(s.k, s.b, TJ_OP_FOR, TJ_TYPE_NONE, bad_bounds, 3, &lb2, NULL);
    arg(s.k, lb2, s.i32, 0);
    yield_n(s.k, lb2, NULL, 0);
    tj_block_id lb3;
    region_op(s.k, s.b, TJ_OP_FOR, tj_type_tuple(ctx, 1, &v64), xs, 3, &lb3, NULL);
    yield_n(s.k, lb3, NULL, 0);
    expect_invalid(&s, "= arg {index = 1} : f32: argument 2 should be f32[64] (the induction variable and the carried values)");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "yield %10: value 1 is f32, expected f32[64] (the carried values)"), "%s", m);
    cr_expect(strstr(m, "lo, hi and step are integer scalars of one type, not i32, bool, i32"), "%s", m);
    cr_expect(strstr(m, "carries 0 values but has 1 results"), "%s", m);
}

Test(ir_verify, if_and_yields)
{
    base s = make_base();
    tj_block_id tb, eb;
    tj_ref r = region_op(s.k, s.b, TJ_OP_IF, tj_type_tuple(ctx, 1, &s.i32), &s.flag, 1, &tb, &eb);
    yield_n(s.k, tb, &s.zero, 1);
    yield_n(s.k, eb, &s.flag, 1);
    op1i(s.k, s.b, TJ_OP_PROJ, s.i32, r, 3);
    op1i(s.k, s.b, TJ_OP_PROJ, s.i32, s.zero, 0);
    tj_block_id tb2, eb2;
    region_op(s.k, s.b, TJ_OP_IF, TJ_TYPE_NONE, &s.zero, 1, &tb2, &eb2);
    yield_n(s.k, tb2, NULL, 0);
    arg(s.k, eb2, s.i32, 0);
    yield_n(s.k, eb2, NULL, 0);
    expect_invalid(&s, "yield %6: value 1 is bool, expected i32 (the if's results)");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "index 3 is out of range for (i32)"), "%s", m);
    cr_expect(strstr(m, "operand is i32, not a tuple"), "%s", m);
    cr_expect(strstr(m, "if %2: condition is i32, not bool"), "%s", m);
    cr_expect(strstr(m, "its region takes 0 arguments (none), not 1"), "%s", m);
}

Test(ir_verify, scan_region)
{
    base s = make_base();
    tj_type row = tile(ctx, TJ_DT_F32, 1, 64);
    tj_ref x = op1i(s.k, s.b, TJ_OP_REDUCE_SUM, row, s.t, 0);
    tj_block_id sb;
    region_op(s.k, s.b, TJ_OP_SCAN, tj_type_tuple(ctx, 1, &row), &x, 1, &sb, NULL);
    tj_ref a = arg(s.k, sb, s.f32, 0);
    arg(s.k, sb, s.i32, 1);
    op3(s.k, sb, TJ_OP_STORE, TJ_TYPE_NONE, s.view, s.t, TJ_NONE);
    tj_ref ys[2] = {a, a};
    yield_n(s.k, sb, ys, 2);
    expect_invalid(&s, "argument 2 should be f32 (the left then the right scalars)");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "yields 2 values, expected 1 (the combined scalars)"), "%s", m);
    cr_expect(strstr(m, "store %4, %5, _: memory is not accessible in a scan's combine region"), "%s", m);
}

/* ---- block structure -------------------------------------------------------------------------- */

Test(ir_verify, top_level_blocks)
{
    tj_kernel *k = tj_kernel_new(ctx, "top");
    k->grid = tj_block_new(k, TJ_NONE);
    k->body = tj_block_new(k, TJ_NONE);
    tj_ref f = const_f(k, k->grid, TJ_DT_F32, 1);
    op0(k, k->grid, TJ_OP_PROGRAM_ID, scalar(ctx, TJ_DT_I32), 0);
    tj_ref four[4] = {f, f, f, f};
    yield_n(k, k->grid, four, 4);
    arg(k, k->body, scalar(ctx, TJ_DT_I32), 0);
    tj_ref c = const_i(k, k->body, TJ_DT_U8, 300);
    const_i(k, k->body, TJ_DT_BOOL, 2);
    op0(k, k->body, TJ_OP_PARAM, scalar(ctx, TJ_DT_I32), 0);
    yield_n(k, k->body, &c, 1);
    tj_diag_clear(ctx);
    cr_assert_neq(tj_verify(k), 0);
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "= program_id {axis = 0} : i32: not allowed in the grid block"), "%s", m);
    cr_expect(strstr(m, "the grid block yields 1 to 3 sizes, not 4"), "%s", m);
    cr_expect(strstr(m, "grid size 1 is f32, not i32"), "%s", m);
    cr_expect(strstr(m, "the body block takes no arguments"), "%s", m);
    cr_expect(strstr(m, "= const 300 : u8: value 300 does not fit u8"), "%s", m);
    cr_expect(strstr(m, "value 2 does not fit bool"), "%s", m);
    cr_expect(strstr(m, "the kernel has no parameter 0 (it has 0)"), "%s", m);
    cr_expect(strstr(m, "yield %3: the body block yields nothing"), "%s", m);
}

Test(ir_verify, block_endings_and_arguments)
{
    base s = make_base();
    tj_block_id tb, eb;
    region_op(s.k, s.b, TJ_OP_IF, TJ_TYPE_NONE, &s.flag, 1, &tb, &eb);
    op1(s.k, tb, TJ_OP_NEG, s.tt, s.t); /* no yield */
    yield_n(s.k, eb, NULL, 0);
    op1(s.k, eb, TJ_OP_NEG, s.tt, s.t); /* after the yield */
    tj_block_id lb;
    tj_ref xs[3] = {s.zero, s.one, s.one};
    region_op(s.k, s.b, TJ_OP_FOR, TJ_TYPE_NONE, xs, 3, &lb, NULL);
    op1(s.k, lb, TJ_OP_NEG, s.tt, s.t);
    arg(s.k, lb, s.i32, 0); /* argument after an instruction */
    yield_n(s.k, lb, NULL, 0);
    tj_block_id eb2, tb2;
    region_op(s.k, s.b, TJ_OP_IF, TJ_TYPE_NONE, &s.flag, 1, &tb2, &eb2); /* empty blocks */
    expect_invalid(&s, "= neg %5 : f32[32, 64]: the last instruction of a block must be yield");
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "yield: yield before the end of its block"), "%s", m);
    cr_expect(strstr(m, "block argument after the start of its block"), "%s", m);
    cr_expect(strstr(m, "region block 6 is empty: it must end with yield"), "%s", m);
}

Test(ir_verify, shared_blocks_and_instructions)
{
    base s = make_base();
    tj_block_id tb, eb;
    tj_ref r = region_op(s.k, s.b, TJ_OP_IF, TJ_TYPE_NONE, &s.flag, 1, &tb, &eb);
    yield_n(s.k, tb, NULL, 0);
    tj_inst_at(s.k, r)->region[1] = tb; /* both branches one block */
    tj_block_insert(s.k, s.b, s.k->blocks[s.b].ninsts, s.t); /* t twice */
    expect_invalid(&s, "region block 3 is used twice");
    cr_expect(strstr(tj_diag_render(ctx), "block 2 holds instruction 7 a second time"), "%s", tj_diag_render(ctx));
}

Test(ir_verify, every_problem_is_reported)
{
    base s = make_base();
    op1(s.k, s.b, TJ_OP_EXP, s.i32, s.zero);
    op1(s.k, s.b, TJ_OP_SQRT, s.i32, s.zero);
    op1(s.k, s.b, TJ_OP_LOG, s.i32, s.zero);
    expect_invalid(&s, "takes floats");
    cr_expect_eq(tj_error_count(ctx), 3);
}

Test(ir_verify, errors_point_at_the_text)
{
    const char *text = "kernel @k() {\ngrid:\n  %0 = const 1 : i32\n  yield %0\nbody:\n"
                       "  %1 = const 1.5 : f32\n  %2 = add %0, %1 : i32\n  yield\n}\n";
    tj_kernel *k = NULL;
    cr_assert_eq(tj_parse_ir(ctx, "t.tjir", text, strlen(text), &k, 1), 1);
    cr_expect_neq(tj_verify(k), 0);
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "t.tjir:7:3: error: %2 = add %0, %1 : i32: %0 is not in scope here"), "%s", m);
    cr_expect(strstr(m, "  %2 = add %0, %1 : i32\n    ^"), "%s", m);
}

/* ---- SIMT ------------------------------------------------------------------------------------- */

Test(ir_verify, levels)
{
    base s = make_base();
    op0(s.k, s.b, TJ_OP_TID, s.i32, 0);
    expect_invalid(&s, "'tid' is a SIMT op, but this is a Tile IR kernel");

    tj_kernel *k = build_simt_ops(ctx);
    k->nthreads = 100;
    tj_block_id b = k->body;
    tj_ref y = k->blocks[b].insts[k->blocks[b].ninsts - 1];
    tj_block_remove(k, b, k->blocks[b].ninsts - 1);
    op0(k, b, TJ_OP_ARANGE, tile(ctx, TJ_DT_I32, 1, 4), 0);
    tj_ref big = op1(k, b, TJ_OP_CAST, tile(ctx, TJ_DT_F32, 1, 8), op0(k, b, TJ_OP_TID, scalar(ctx, TJ_DT_I32), 0));
    (void)big;
    tj_block_insert(k, b, k->blocks[b].ninsts, y);
    tj_diag_clear(ctx);
    cr_assert_neq(tj_verify(k), 0);
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "threads = 100: a SIMT kernel runs 32 to 1024 threads, a multiple of 32"), "%s", m);
    cr_expect(strstr(m, "'arange' is a Tile IR op, but this is a SIMT kernel"), "%s", m);
    cr_expect(strstr(m, "f32[8]: SIMT values are scalars, vectors of at most 16 bytes or matrix fragments"), "%s", m);
}

Test(ir_verify, simt_ops)
{
    tj_kernel *k = build_simt_ops(ctx);
    tj_block_id b = k->body;
    tj_ref y = k->blocks[b].insts[k->blocks[b].ninsts - 1];
    tj_block_remove(k, b, k->blocks[b].ninsts - 1);
    tj_type i32 = scalar(ctx, TJ_DT_I32), f32 = scalar(ctx, TJ_DT_F32);
    tj_ref t = op0(k, b, TJ_OP_TID, i32, 0);
    op3(k, b, TJ_OP_LD_GLOBAL, f32, t, TJ_NONE, TJ_NONE);
    op1i(k, b, TJ_OP_SHFL_XOR, i32, t, 32);
    op1i(k, b, TJ_OP_EXTRACT, f32, op1(k, b, TJ_OP_CAST, tile(ctx, TJ_DT_F32, 1, 2),
                                       op1(k, b, TJ_OP_CAST, tile(ctx, TJ_DT_I32, 1, 2), t)), 2);
    tj_ref parts[2] = {t, const_f(k, b, TJ_DT_F32, 1)};
    tj_emit(k, b, TJ_OP_PACK, tile(ctx, TJ_DT_I32, 1, 2), parts, 2);
    op0(k, b, TJ_OP_TID, i32, 1);
    tj_block_insert(k, b, k->blocks[b].ninsts, y);
    tj_diag_clear(ctx);
    cr_assert_neq(tj_verify(k), 0);
    const char *m = tj_diag_render(ctx);
    cr_expect(strstr(m, "the address is i32, not u64"), "%s", m);
    cr_expect(strstr(m, "lane mask 32 is out of range [0, 31]"), "%s", m);
    cr_expect(strstr(m, "index 2 is out of range for f32[2]"), "%s", m);
    cr_expect(strstr(m, "operand types differ: i32 vs f32"), "%s", m);
    cr_expect(strstr(m, "threads have axis 0 only"), "%s", m);
}

/* tma_store's box is a load's without `pair`; its source is a u32 shared
 * address and its start i32 coordinates. */
Test(ir_verify, tma_store_boxes)
{
    tj_kernel *k = build_simt_ops(ctx);
    tj_ref store = TJ_NONE;
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && k->insts[r].op == TJ_OP_TMA_STORE)
            store = r;
    cr_assert(store);
    tj_diag_clear(ctx);
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(ctx));
    k->insts[store].imm |= (int64_t)2 << 32;
    cr_assert_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(ctx), "a store has none"), "%s", tj_diag_render(ctx));
    k->insts[store].imm &= 0xffffffff;
    k->insts[store].flags = 64;
    tj_diag_clear(ctx);
    cr_assert_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(ctx), "a row exactly the swizzle"), "%s", tj_diag_render(ctx));
    k->insts[store].flags = 128;
    k->insts[store].args[2] = k->insts[store].args[1]; /* a u32 column */
    tj_diag_clear(ctx);
    cr_assert_neq(tj_verify(k), 0);
    cr_expect(strstr(tj_diag_render(ctx), "the column"), "%s", tj_diag_render(ctx));
}
