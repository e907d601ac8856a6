/* Terse kernel building for the IR text and verifier tests. */
#ifndef TEST_IR_UTIL_H
#define TEST_IR_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "tilejit/tilejit.h"

/* A tile type: tile(c, TJ_DT_F32, 2, 32, 64) is f32[32, 64]. */
static inline tj_type tile(tj_ctx *c, tj_dtype dt, int rank, ...)
{
    int32_t shape[TJ_MAX_RANK] = {0};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        shape[i] = va_arg(ap, int);
    va_end(ap);
    return tj_type_tile(c, dt, rank, shape);
}

static inline tj_type scalar(tj_ctx *c, tj_dtype dt) { return tj_type_scalar(c, dt); }

static inline tj_type tuple2(tj_ctx *c, tj_type a, tj_type b)
{
    tj_type e[2] = {a, b};
    return tj_type_tuple(c, 2, e);
}

/* Emits op with up to three operands (TJ_NONE ends the list early unless
 * `n` says otherwise) and an immediate. */
static inline tj_ref op_n(tj_kernel *k, tj_block_id b, tj_op op, tj_type t, int64_t imm, uint32_t n,
                          tj_ref a0, tj_ref a1, tj_ref a2)
{
    tj_ref args[3] = {a0, a1, a2};
    tj_ref r = tj_emit(k, b, op, t, args, n);
    tj_inst_at(k, r)->imm = imm;
    return r;
}
#define op0(k, b, op, t, imm) op_n(k, b, op, t, imm, 0, 0, 0, 0)
#define op1(k, b, op, t, x) op_n(k, b, op, t, 0, 1, x, 0, 0)
#define op1i(k, b, op, t, x, imm) op_n(k, b, op, t, imm, 1, x, 0, 0)
#define op2(k, b, op, t, x, y) op_n(k, b, op, t, 0, 2, x, y, 0)
#define op2i(k, b, op, t, x, y, imm) op_n(k, b, op, t, imm, 2, x, y, 0)
#define op3(k, b, op, t, x, y, z) op_n(k, b, op, t, 0, 3, x, y, z)

static inline tj_ref const_i(tj_kernel *k, tj_block_id b, tj_dtype dt, int64_t v)
{
    return tj_emit_const_int(k, b, tj_type_scalar(k->ctx, dt), v);
}

static inline tj_ref const_f(tj_kernel *k, tj_block_id b, tj_dtype dt, double v)
{
    return tj_emit_const_float(k, b, tj_type_scalar(k->ctx, dt), v);
}

static inline tj_ref yield_n(tj_kernel *k, tj_block_id b, const tj_ref *xs, uint32_t n)
{
    return tj_emit(k, b, TJ_OP_YIELD, TJ_TYPE_NONE, xs, n);
}

static inline tj_ref arg(tj_kernel *k, tj_block_id b, tj_type t, int64_t index)
{
    return op0(k, b, TJ_OP_ARG, t, index);
}

static inline tj_ref view_op(tj_kernel *k, tj_block_id b, tj_type t, const tj_ref *xs, uint32_t n,
                             const int32_t *axes)
{
    tj_ref r = tj_emit(k, b, TJ_OP_VIEW, t, xs, n);
    tj_inst_set_list(k, r, axes, n - 1);
    return r;
}

/* A kernel `@name(X: f32[M, 64], idx: i32[N], n: i32)` whose grid yields
 * one i32 constant; the body is left open (finish_body closes it). */
static inline tj_kernel *skeleton(tj_ctx *c, const char *name)
{
    tj_kernel *k = tj_kernel_new(c, name);
    k->nparams = 3;
    k->params = tj_alloc(c, sizeof(tj_param) * 3);
    k->params[0] = (tj_param){.name = "X", .dtype = TJ_DT_F32, .rank = 2,
                              .dim_names = {"M", NULL}, .dim_sizes = {-1, 64}};
    k->params[1] = (tj_param){.name = "idx", .dtype = TJ_DT_I32, .rank = 1,
                              .dim_names = {"N"}, .dim_sizes = {-1}};
    k->params[2] = (tj_param){.name = "n", .dtype = TJ_DT_I32, .rank = 0};
    k->grid = tj_block_new(k, TJ_NONE);
    k->body = tj_block_new(k, TJ_NONE);
    tj_ref one = const_i(k, k->grid, TJ_DT_I32, 1);
    yield_n(k, k->grid, &one, 1);
    return k;
}

static inline void finish_body(tj_kernel *k) { yield_n(k, k->body, NULL, 0); }

/* Prints k into a NUL-terminated arena string. */
static inline const char *print_str(tj_kernel *k)
{
    tj_buf b = {0};
    tj_print_kernel(k, &b);
    char *s = tj_strndup(k->ctx, b.data ? b.data : "", b.len);
    tj_buf_free(&b);
    return s;
}

/* A Tile IR kernel using every op that exists at the Tile level and every
 * kind of type; it verifies. */
static inline tj_kernel *build_all_ops(tj_ctx *c)
{
    tj_kernel *k = skeleton(c, "all_ops");
    tj_block_id b = k->body;
    k->nconfig = 1;
    k->config = tj_alloc(c, sizeof(tj_binding));
    k->config[0] = (tj_binding){"BM", 32};
    k->nspec = 1;
    k->spec = tj_alloc(c, sizeof(tj_binding));
    k->spec[0] = (tj_binding){"M", 128};
    tj_type i32 = scalar(c, TJ_DT_I32), f32 = scalar(c, TJ_DT_F32), bl = scalar(c, TJ_DT_BOOL);
    tj_type v32 = tile(c, TJ_DT_F32, 1, 32), i32v = tile(c, TJ_DT_I32, 1, 32);
    tj_type m = tile(c, TJ_DT_F32, 2, 32, 64), mb = tile(c, TJ_DT_BOOL, 2, 32, 64);

    tj_ref X = op0(k, b, TJ_OP_PARAM, tj_type_tensor(c, TJ_DT_F32, 2), 0);
    tj_ref idx = op0(k, b, TJ_OP_PARAM, tj_type_tensor(c, TJ_DT_I32, 1), 1);
    tj_ref n = op0(k, b, TJ_OP_PARAM, i32, 2);
    tj_ref pid = op0(k, b, TJ_OP_PROGRAM_ID, i32, 0);
    tj_ref np = op0(k, b, TJ_OP_NUM_PROGRAMS, i32, 1);
    tj_ref d = op1i(k, b, TJ_OP_DIM, i32, X, 1);
    tj_ref ar = op0(k, b, TJ_OP_ARANGE, i32v, 0);
    tj_ref zero = const_i(k, b, TJ_DT_I32, 0);

    tj_ref vi_args[2] = {idx, pid};
    tj_ref vi = view_op(k, b, tj_type_view(c, TJ_DT_I32, 1, (int32_t[]){32}), vi_args, 2, (int32_t[]){32});
    tj_ref rows = op3(k, b, TJ_OP_LOAD, i32v, vi, TJ_NONE, TJ_NONE);
    tj_ref vx_args[3] = {X, rows, zero};
    tj_ref vx = view_op(k, b, tj_type_view(c, TJ_DT_F32, 2, (int32_t[]){32, 64}), vx_args, 3,
                        (int32_t[]){TJ_VIEW_GATHER, 64});
    tj_ref lt = op2(k, b, TJ_OP_LT, tile(c, TJ_DT_BOOL, 1, 32), ar, ar);
    tj_ref col = op1(k, b, TJ_OP_RESHAPE, tile(c, TJ_DT_BOOL, 2, 32, 1), lt);
    tj_ref mask = op1(k, b, TJ_OP_BROADCAST, mb, col);
    tj_ref ninf = const_f(k, b, TJ_DT_F32, -INFINITY);
    tj_ref x = op3(k, b, TJ_OP_LOAD, m, vx, mask, ninf);
    tj_ref xt = op1(k, b, TJ_OP_PERMUTE, tile(c, TJ_DT_F32, 2, 64, 32), x);
    tj_inst_set_list(k, xt, (int32_t[]){1, 0}, 2);

    /* elementwise: every op on a type its class takes */
    tj_ref fx = x, ix = op1(k, b, TJ_OP_CAST, tile(c, TJ_DT_I32, 2, 32, 64), x);
    op1(k, b, TJ_OP_BITCAST, tile(c, TJ_DT_U32, 2, 32, 64), x);
    tj_op num2[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_REM, TJ_OP_POW, TJ_OP_MAX, TJ_OP_MIN};
    for (unsigned i = 0; i < sizeof num2 / sizeof *num2; i++)
        fx = op2(k, b, num2[i], m, fx, x);
    tj_op int2[] = {TJ_OP_AND, TJ_OP_OR, TJ_OP_XOR, TJ_OP_SHL, TJ_OP_SHR};
    for (unsigned i = 0; i < sizeof int2 / sizeof *int2; i++)
        ix = op2(k, b, int2[i], tile(c, TJ_DT_I32, 2, 32, 64), ix, ix);
    tj_op cmp[] = {TJ_OP_EQ, TJ_OP_NE, TJ_OP_LT, TJ_OP_LE, TJ_OP_GT, TJ_OP_GE};
    tj_ref cond = mask;
    for (unsigned i = 0; i < sizeof cmp / sizeof *cmp; i++)
        cond = op2(k, b, TJ_OP_AND, mb, cond, op2(k, b, cmp[i], mb, fx, x));
    cond = op1(k, b, TJ_OP_NOT, mb, cond);
    tj_op un[] = {TJ_OP_NEG, TJ_OP_EXP, TJ_OP_EXP2, TJ_OP_LOG, TJ_OP_LOG2, TJ_OP_SQRT, TJ_OP_RSQRT,
                  TJ_OP_ABS, TJ_OP_SIN, TJ_OP_COS, TJ_OP_TANH, TJ_OP_SIGMOID, TJ_OP_ERF, TJ_OP_FLOOR,
                  TJ_OP_CEIL};
    for (unsigned i = 0; i < sizeof un / sizeof *un; i++)
        fx = op1(k, b, un[i], m, fx);
    fx = op3(k, b, TJ_OP_SELECT, m, cond, fx, x);
    fx = op3(k, b, TJ_OP_FMA, m, fx, x, x);

    /* reductions, scans, sort */
    tj_ref rmax = op1i(k, b, TJ_OP_REDUCE_MAX, v32, fx, 1);
    op1i(k, b, TJ_OP_REDUCE_SUM, f32, fx, -1);
    op1i(k, b, TJ_OP_REDUCE_PROD, tile(c, TJ_DT_F32, 1, 64), fx, 0);
    op1i(k, b, TJ_OP_REDUCE_MIN, v32, fx, 1);
    op1i(k, b, TJ_OP_ARGMAX, tile(c, TJ_DT_I32, 1, 64), fx, 0);
    op1i(k, b, TJ_OP_ARGMIN, scalar(c, TJ_DT_I32), fx, -1);
    op1i(k, b, TJ_OP_CUMSUM, m, fx, 1);
    op1i(k, b, TJ_OP_CUMPROD, m, fx, 0);
    tj_ref s1 = op1i(k, b, TJ_OP_SORT, v32, rmax, 0);
    tj_inst_at(k, s1)->flags = TJ_SORT_DESCENDING;
    tj_ref kv = op_n(k, b, TJ_OP_SORT, tuple2(c, v32, i32v), 0, 2, rmax, ar, 0);
    op1i(k, b, TJ_OP_PROJ, i32v, kv, 1);
    op1(k, b, TJ_OP_COUNTING_SORT, tuple2(c, i32v, tile(c, TJ_DT_I32, 1, 16)), ar);
    op2(k, b, TJ_OP_GATHER, v32, rmax, ar);
    tj_ref scan = op_n(k, b, TJ_OP_SCAN, tuple2(c, v32, v32), 0, 2, rmax, rmax, 0);
    tj_block_id sb = tj_block_new(k, scan);
    tj_inst_at(k, scan)->region[0] = sb;
    tj_ref a1 = arg(k, sb, f32, 0), b1 = arg(k, sb, f32, 1), a2 = arg(k, sb, f32, 2), b2 = arg(k, sb, f32, 3);
    tj_ref y[2] = {op2(k, sb, TJ_OP_MUL, f32, a1, a2), op3(k, sb, TJ_OP_FMA, f32, a2, b1, b2)};
    yield_n(k, sb, y, 2);

    /* dot */
    tj_ref a = op1(k, b, TJ_OP_CAST, tile(c, TJ_DT_BF16, 2, 32, 64), fx);
    tj_ref bt = op1(k, b, TJ_OP_CAST, tile(c, TJ_DT_BF16, 2, 64, 32), xt);
    tj_ref acc = op1(k, b, TJ_OP_BROADCAST, tile(c, TJ_DT_F32, 2, 32, 32), const_f(k, b, TJ_DT_F32, 0.0));
    tj_ref dot = op3(k, b, TJ_OP_DOT, tile(c, TJ_DT_F32, 2, 32, 32), a, bt, acc);
    tj_inst_at(k, dot)->imm = TJ_DOT_IEEE;

    /* for with a carried value, an if inside it */
    tj_ref four = const_i(k, b, TJ_DT_I32, 4), one = const_i(k, b, TJ_DT_I32, 1);
    tj_ref loop_args[4] = {zero, four, one, rmax};
    tj_ref loop = tj_emit(k, b, TJ_OP_FOR, tj_type_tuple(c, 1, &v32), loop_args, 4);
    tj_block_id lb = tj_block_new(k, loop);
    tj_inst_at(k, loop)->region[0] = lb;
    tj_ref iv = arg(k, lb, i32, 0), carried = arg(k, lb, v32, 1);
    tj_ref e = op1(k, lb, TJ_OP_EXP, v32, carried);
    tj_ref big = op2(k, lb, TJ_OP_GT, bl, iv, one);
    tj_ref br = op1(k, lb, TJ_OP_IF, tj_type_tuple(c, 1, &v32), big);
    tj_block_id tb = tj_block_new(k, br), eb = tj_block_new(k, br);
    tj_inst_at(k, br)->region[0] = tb;
    tj_inst_at(k, br)->region[1] = eb;
    yield_n(k, tb, &e, 1);
    yield_n(k, eb, &carried, 1);
    tj_ref merged = op1i(k, lb, TJ_OP_PROJ, v32, br, 0);
    yield_n(k, lb, &merged, 1);
    op1i(k, b, TJ_OP_PROJ, v32, loop, 0);

    /* while carrying a tile: its condition in, then yielded first */
    tj_ref wargs[2] = {op2(k, b, TJ_OP_LT, bl, zero, four), rmax};
    tj_ref wl = tj_emit(k, b, TJ_OP_WHILE, tj_type_tuple(c, 1, &v32), wargs, 2);
    tj_block_id wb = tj_block_new(k, wl);
    tj_inst_at(k, wl)->region[0] = wb;
    tj_ref wc = arg(k, wb, v32, 0);
    tj_ref wy[2] = {TJ_NONE, op1(k, wb, TJ_OP_EXP, v32, wc)};
    wy[0] = op2(k, wb, TJ_OP_GT, bl, op1i(k, wb, TJ_OP_REDUCE_MAX, f32, wy[1], -1), const_f(k, wb, TJ_DT_F32, 1.0));
    yield_n(k, wb, wy, 2);
    op1i(k, b, TJ_OP_PROJ, v32, wl, 0);

    /* stores and atomics, under an if without results */
    tj_ref same = op2(k, b, TJ_OP_EQ, bl, n, np);
    tj_ref st = op1(k, b, TJ_OP_IF, TJ_TYPE_NONE, same);
    tj_block_id sb2 = tj_block_new(k, st), eb2 = tj_block_new(k, st);
    tj_inst_at(k, st)->region[0] = sb2;
    tj_inst_at(k, st)->region[1] = eb2;
    tj_ref vo_args[3] = {X, d, zero};
    tj_ref vo = view_op(k, sb2, tj_type_view(c, TJ_DT_F32, 2, (int32_t[]){32, 64}), vo_args, 3,
                        (int32_t[]){32, 64});
    op3(k, sb2, TJ_OP_STORE, TJ_TYPE_NONE, vo, fx, TJ_NONE);
    op3(k, sb2, TJ_OP_ATOMIC_ADD, m, vo, fx, mask);
    op3(k, sb2, TJ_OP_ATOMIC_MAX, m, vo, fx, TJ_NONE);
    op3(k, sb2, TJ_OP_ATOMIC_MIN, m, vo, fx, TJ_NONE);
    op3(k, sb2, TJ_OP_LOAD_ACQUIRE, m, vo, mask, TJ_NONE);
    op3(k, sb2, TJ_OP_STORE_RELEASE, TJ_TYPE_NONE, vo, fx, mask);
    op3(k, sb2, TJ_OP_LOAD_RELAXED, m, vo, mask, TJ_NONE);
    op3(k, sb2, TJ_OP_STORE_RELAXED, TJ_TYPE_NONE, vo, fx, mask);
    yield_n(k, sb2, NULL, 0);
    yield_n(k, eb2, NULL, 0);
    finish_body(k);
    return k;
}

/* A SIMT kernel (docs/simt.md) using every SIMT op, with facts; it verifies. */
static inline tj_kernel *build_simt_ops(tj_ctx *c)
{
    tj_kernel *k = skeleton(c, "simt_ops");
    tj_block_id b = k->body;
    k->level = TJ_LEVEL_SIMT;
    k->nthreads = 128;
    k->smem_bytes = 512;
    k->facts = tj_alloc(c, sizeof(tj_facts) * k->nparams);
    k->facts[0] = (tj_facts){.unit_stride = 1, .aligned16 = 1, .dim_div16 = {0, 1}, .stride_div16 = {1, 0}};
    k->facts[1] = (tj_facts){.unit_stride = 1};
    tj_type i32 = scalar(c, TJ_DT_I32), f32 = scalar(c, TJ_DT_F32), f32x4 = tile(c, TJ_DT_F32, 1, 4);
    tj_ref X = op0(k, b, TJ_OP_PARAM, tj_type_tensor(c, TJ_DT_F32, 2), 0);
    tj_ref tid = op0(k, b, TJ_OP_TID, i32, 0);
    tj_ref ptr = op1(k, b, TJ_OP_TENSOR_PTR, scalar(c, TJ_DT_U64), X);
    op1i(k, b, TJ_OP_STRIDE, scalar(c, TJ_DT_I64), X, 1);
    tj_ref d = op1i(k, b, TJ_OP_DIM, i32, X, 0);
    tj_ref pred = op2(k, b, TJ_OP_LT, scalar(c, TJ_DT_BOOL), tid, d);
    tj_ref v4 = op3(k, b, TJ_OP_LD_GLOBAL, f32x4, ptr, pred, TJ_NONE);
    tj_ref s = op3(k, b, TJ_OP_LD_GLOBAL, f32, ptr, TJ_NONE, const_f(k, b, TJ_DT_F32, 1.5));
    op3(k, b, TJ_OP_ST_GLOBAL, TJ_TYPE_NONE, ptr, v4, pred);
    op3(k, b, TJ_OP_ATOM_ADD, f32, ptr, s, pred);
    op3(k, b, TJ_OP_ATOM_MAX, f32, ptr, s, TJ_NONE);
    op3(k, b, TJ_OP_ATOM_MIN, f32, ptr, s, TJ_NONE);
    op3(k, b, TJ_OP_LD_ACQUIRE, f32, ptr, pred, s);
    op3(k, b, TJ_OP_ST_RELEASE, TJ_TYPE_NONE, ptr, s, pred);
    op3(k, b, TJ_OP_LD_RELAXED, f32, ptr, pred, s);
    op3(k, b, TJ_OP_ST_RELAXED, TJ_TYPE_NONE, ptr, s, pred);
    tj_ref at = const_i(k, b, TJ_DT_U32, 0);
    op2(k, b, TJ_OP_ST_SHARED, TJ_TYPE_NONE, at, v4);
    op2(k, b, TJ_OP_RED_ADD_SHARED, TJ_TYPE_NONE, at, const_i(k, b, TJ_DT_U32, 1));
    tj_ref copy = op3(k, b, TJ_OP_CP_ASYNC, TJ_TYPE_NONE, const_i(k, b, TJ_DT_U32, 16), ptr, const_i(k, b, TJ_DT_U32, 8));
    k->insts[copy].imm = 16;
    op0(k, b, TJ_OP_CP_ASYNC_COMMIT, TJ_TYPE_NONE, 0);
    op0(k, b, TJ_OP_CP_ASYNC_WAIT, TJ_TYPE_NONE, 0);
    op0(k, b, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref sh = op1(k, b, TJ_OP_LD_SHARED, f32x4, at);
    tj_ref e = op1i(k, b, TJ_OP_EXTRACT, f32, sh, 3);
    tj_ref x1 = op1i(k, b, TJ_OP_SHFL_XOR, f32, e, 16);
    tj_ref x2 = op1i(k, b, TJ_OP_SHFL_UP, f32, x1, 1);
    tj_ref x3 = op2(k, b, TJ_OP_SHFL_IDX, f32, x2, tid);
    tj_ref vote = op1(k, b, TJ_OP_BALLOT, scalar(c, TJ_DT_U32), op0(k, b, TJ_OP_ELECT, scalar(c, TJ_DT_BOOL), 0));
    op1(k, b, TJ_OP_POPC, scalar(c, TJ_DT_U32), vote);
    op0(k, b, TJ_OP_WARP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref parts[4] = {x3, x3, x3, e};
    tj_ref p = tj_emit(k, b, TJ_OP_PACK, f32x4, parts, 4);
    op2(k, b, TJ_OP_ADD, f32x4, p, sh);
    tj_ref ld = const_i(k, b, TJ_DT_I32, 24);
    tj_ref fa = op_n(k, b, TJ_OP_MMA_LOAD, tj_type_fragment(c, TJ_MMA_A, TJ_DT_BF16), TJ_MMA_A, 3, at, ld, ld);
    tj_ref fb = op_n(k, b, TJ_OP_MMA_LOAD, tj_type_fragment(c, TJ_MMA_B, TJ_DT_BF16), TJ_MMA_B, 3, at, ld, TJ_NONE);
    tj_ref fc = op1(k, b, TJ_OP_MMA_FILL, tj_type_fragment(c, TJ_MMA_C, TJ_DT_F32), e);
    tj_ref fd = op3(k, b, TJ_OP_MMA, tj_type_fragment(c, TJ_MMA_C, TJ_DT_F32), fa, fb, fc);
    op3(k, b, TJ_OP_MMA_STORE, TJ_TYPE_NONE, at, ld, fd);
    tj_ref lanes = op1(k, b, TJ_OP_MMA_UNPACK, f32x4, fd);
    op_n(k, b, TJ_OP_MMA_PACK, tj_type_fragment(c, TJ_MMA_C, TJ_DT_F32), TJ_MMA_C, 1, lanes, 0, 0);
    /* wgmma: a descriptor (128-byte swizzle, SBO 1024), an m64n16k16 product */
    tj_type ct = tj_type_fragment(c, TJ_MMA_C, TJ_DT_F32);
    tj_ref fields = const_i(k, b, TJ_DT_U64, (int64_t)(1ull << 62 | 64ull << 32));
    tj_ref desc = op2(k, b, TJ_OP_WGMMA_DESC, scalar(c, TJ_DT_U64), at, fields);
    op0(k, b, TJ_OP_FENCE_PROXY_ASYNC, TJ_TYPE_NONE, 0);
    op_n(k, b, TJ_OP_WGMMA_FENCE, TJ_TYPE_NONE, 0, 1, TJ_NONE, 0, 0);
    tj_ref wargs[5] = {desc, desc, pred, fd, fc};
    tj_ref wg = tj_emit(k, b, TJ_OP_WGMMA, tj_type_tuple(c, 2, (tj_type[]){ct, ct}), wargs, 5);
    tj_inst_at(k, wg)->imm = TJ_DT_BF16;
    tj_inst_at(k, wg)->flags = TJ_WGMMA_B_MN;
    op1i(k, b, TJ_OP_PROJ, ct, wg, 1);
    op_n(k, b, TJ_OP_WGMMA_COMMIT, TJ_TYPE_NONE, 0, 1, pred, 0, 0);
    op_n(k, b, TJ_OP_WGMMA_WAIT, TJ_TYPE_NONE, 1, 1, TJ_NONE, 0, 0);
    tj_ref bar = const_i(k, b, TJ_DT_U32, 256);
    op3(k, b, TJ_OP_MBAR_INIT, TJ_TYPE_NONE, bar, const_i(k, b, TJ_DT_U32, 1), pred);
    op3(k, b, TJ_OP_MBAR_EXPECT_TX, TJ_TYPE_NONE, bar, const_i(k, b, TJ_DT_U32, 1024), TJ_NONE);
    tj_ref targs[6] = {X, const_i(k, b, TJ_DT_U32, 0), bar, tid, tid, pred};
    tj_ref tma = tj_emit(k, b, TJ_OP_TMA_LOAD, TJ_TYPE_NONE, targs, 6);
    tj_inst_at(k, tma)->imm = 32 | 8 << 16; /* 8 rows of 32 f32: 128 bytes */
    tj_inst_at(k, tma)->flags = 128;
    op3(k, b, TJ_OP_MBAR_WAIT, TJ_TYPE_NONE, bar, const_i(k, b, TJ_DT_U32, 0), TJ_NONE);
    op2(k, b, TJ_OP_MBAR_ARRIVE, TJ_TYPE_NONE, bar, pred);
    op3(k, b, TJ_OP_MBAR_WAIT, TJ_TYPE_NONE, bar, const_i(k, b, TJ_DT_U32, 1), pred);
    op2(k, b, TJ_OP_MBAR_INVAL, TJ_TYPE_NONE, bar, pred);
    tj_ref sargs[5] = {X, const_i(k, b, TJ_DT_U32, 0), tid, tid, pred};
    tj_ref store = tj_emit(k, b, TJ_OP_TMA_STORE, TJ_TYPE_NONE, sargs, 5);
    tj_inst_at(k, store)->imm = 32 | 8 << 16; /* the same box, from shared memory */
    tj_inst_at(k, store)->flags = 128;
    tj_emit(k, b, TJ_OP_TMA_STORE_COMMIT, TJ_TYPE_NONE, &pred, 1);
    tj_ref wait = tj_emit(k, b, TJ_OP_TMA_STORE_WAIT, TJ_TYPE_NONE, &pred, 1);
    tj_inst_at(k, wait)->imm = 0;
    op3(k, b, TJ_OP_BAR_ARRIVE, TJ_TYPE_NONE, const_i(k, b, TJ_DT_U32, 1), const_i(k, b, TJ_DT_U32, 128), pred);
    op3(k, b, TJ_OP_BAR_SYNC, TJ_TYPE_NONE, const_i(k, b, TJ_DT_U32, 1), const_i(k, b, TJ_DT_U32, 128), pred);
    finish_body(k);
    return k;
}

#endif
