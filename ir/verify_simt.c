/* The verifier's rules for SIMT IR (docs/simt.md): which ops exist at which
 * level, the value types of one thread, and the SIMT-only ops. */
#include <inttypes.h>

#include "ir/verify_internal.h"

enum { SIMT_VECTOR_BYTES = 16 };

/* A SIMT value: a scalar, a short vector of at most 16 bytes, or a matrix
 * fragment. */
static int is_simt_value(V *v, tj_type t)
{
    const tj_type_info *i = info(v, t);
    if (tj_type_is_fragment(v->c, t))
        return 1;
    if (i->kind != TJ_TK_TILE || i->rank > 1)
        return 0;
    return i->rank == 0 || (uint64_t)i->shape[0] * (uint64_t)tj_dtype_size(i->dtype) <= SIMT_VECTOR_BYTES;
}

static int is_simt_result(V *v, tj_ref r)
{
    tj_type t = inst(v, r)->type;
    const tj_type_info *i = info(v, t);
    if (i->kind == TJ_TK_VOID || (i->kind == TJ_TK_TENSOR && inst(v, r)->op == TJ_OP_PARAM))
        return 1;
    if (i->kind != TJ_TK_TUPLE)
        return is_simt_value(v, t);
    for (uint32_t e = 0; e < i->nelems; e++)
        if (!is_simt_value(v, i->elems[e]))
            return 0;
    return 1;
}

int tj_verify_level(V *v, tj_ref r)
{
    const tj_op_info *op = tj_op_get(inst(v, r)->op);
    int simt = v->k->level == TJ_LEVEL_SIMT;
    if (simt && (op->flags & TJ_OPF_TILE)) {
        tj_verify_fail(v, r, "'%s' is a Tile IR op, but this is a SIMT kernel", op->name);
        return 0;
    }
    if (!simt && (op->flags & TJ_OPF_SIMT)) {
        tj_verify_fail(v, r, "'%s' is a SIMT op, but this is a Tile IR kernel", op->name);
        return 0;
    }
    return 1;
}

/* Fragments flow only through the matrix ops and structured control flow:
 * their lane layout belongs to the target, so nothing else may look inside. */
static int makes_fragments(tj_op op)
{
    return op == TJ_OP_MMA_LOAD || op == TJ_OP_MMA || op == TJ_OP_MMA_FILL || op == TJ_OP_MMA_PACK ||
           op == TJ_OP_WGMMA || op == TJ_OP_ARG || op == TJ_OP_PROJ || op == TJ_OP_FOR || op == TJ_OP_IF ||
           op == TJ_OP_WHILE;
}

static int takes_fragments(tj_op op)
{
    return op == TJ_OP_MMA || op == TJ_OP_MMA_STORE || op == TJ_OP_MMA_UNPACK || op == TJ_OP_YIELD ||
           op == TJ_OP_FOR || op == TJ_OP_WHILE || op == TJ_OP_WGMMA;
}

static int has_fragment(V *v, tj_type t)
{
    const tj_type_info *i = info(v, t);
    for (uint32_t e = 0; i->kind == TJ_TK_TUPLE && e < i->nelems; e++)
        if (tj_type_is_fragment(v->c, i->elems[e]))
            return 1;
    return tj_type_is_fragment(v->c, t);
}

static void check_fragment_flow(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    if (has_fragment(v, in->type) && !makes_fragments(in->op)) {
        tj_verify_fail(v, r, "'%s' cannot produce a matrix fragment", tj_op_get(in->op)->name);
        return;
    }
    for (uint32_t a = 0; a < in->nargs && !takes_fragments(in->op); a++) {
        if (in->args[a] && tj_type_is_fragment(v->c, arg_type(v, r, a))) {
            tj_verify_fail(v, r, "'%s' cannot take a matrix fragment (operand %u)", tj_op_get(in->op)->name,
                           a + 1);
            return;
        }
    }
}

void tj_verify_simt_result(V *v, tj_ref r)
{
    if (v->k->level != TJ_LEVEL_SIMT)
        return;
    if (!is_simt_result(v, r))
        tj_verify_fail(v, r, "SIMT values are scalars, vectors of at most %d bytes or matrix fragments",
                       SIMT_VECTOR_BYTES);
    else
        check_fragment_flow(v, r);
}

/* ---- SIMT ops ------------------------------------------------------------------ */

static int expect_scalar(V *v, tj_ref r, uint32_t a, tj_dtype dt, const char *what)
{
    tj_type t = arg_type(v, r, a);
    if (t == tj_type_scalar(v->c, dt))
        return 1;
    tj_verify_fail(v, r, "%s is %s, not %s", what, TS(t), tj_dtype_name(dt));
    return 0;
}

static int expect_pred(V *v, tj_ref r, uint32_t a)
{
    return !arg_type(v, r, a) || expect_scalar(v, r, a, TJ_DT_BOOL, "the predicate");
}

static void check_tensor_query(V *v, tj_ref r)
{
    const tj_type_info *t = info(v, arg_type(v, r, 0));
    int64_t axis = inst(v, r)->imm;
    if (t->kind != TJ_TK_TENSOR)
        tj_verify_fail(v, r, "operand is %s, not a tensor", TS(arg_type(v, r, 0)));
    else if (inst(v, r)->op == TJ_OP_TENSOR_PTR)
        tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_U64));
    else if (axis < 0 || axis >= t->rank)
        tj_verify_fail(v, r, "axis %" PRId64 " is out of range for rank %d", axis, t->rank);
    else
        tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_I64));
}

static void check_ld_global(V *v, tj_ref r)
{
    tj_type t = inst(v, r)->type, other = arg_type(v, r, 2);
    if (!expect_scalar(v, r, 0, TJ_DT_U64, "the address") || !expect_pred(v, r, 1))
        return;
    if (!is_simt_value(v, t))
        tj_verify_fail(v, r, "loads a scalar or a vector of at most %d bytes", SIMT_VECTOR_BYTES);
    else if (other && other != t && other != tj_type_scalar(v->c, dtype_of(v, t)))
        tj_verify_fail(v, r, "other is %s, expected %s", TS(other), TS(t));
}

/* ld_acquire(addr, pred, other) and st_release(addr, value, pred): one
 * 4- or 8-byte number (the targets order single accesses only) */
static void check_ordered(V *v, tj_ref r)
{
    int load = inst(v, r)->op == TJ_OP_LD_ACQUIRE || inst(v, r)->op == TJ_OP_LD_RELAXED;
    tj_type t = load ? inst(v, r)->type : arg_type(v, r, 1), other = load ? arg_type(v, r, 2) : TJ_TYPE_NONE;
    tj_dtype dt = dtype_of(v, t);
    if (!expect_scalar(v, r, 0, TJ_DT_U64, "the address") || !expect_pred(v, r, load ? 1 : 2))
        return;
    if (!tj_type_is_scalar(v->c, t) || (!tj_dtype_is_int(dt) && !tj_dtype_is_float(dt)) ||
        (tj_dtype_size(dt) != 4 && tj_dtype_size(dt) != 8))
        tj_verify_fail(v, r, "ordered accesses take one 4- or 8-byte number, not %s", TS(t));
    else if (other && other != t)
        tj_verify_fail(v, r, "other is %s, expected %s", TS(other), TS(t));
    else if (!load)
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

/* st_global, atom_*: addr, value, pred; st_shared: addr, value */
static void check_simt_update(V *v, tj_ref r)
{
    tj_op op = inst(v, r)->op;
    int shared = op == TJ_OP_ST_SHARED;
    tj_type val = arg_type(v, r, 1);
    if (!expect_scalar(v, r, 0, shared ? TJ_DT_U32 : TJ_DT_U64, "the address"))
        return;
    if (!shared && !expect_pred(v, r, 2))
        return;
    if (op == TJ_OP_ST_GLOBAL || shared) {
        tj_verify_result(v, r, TJ_TYPE_NONE);
        return;
    }
    tj_dtype dt = dtype_of(v, val);
    if (!tj_type_is_scalar(v->c, val) || (!tj_dtype_is_int(dt) && !tj_dtype_is_float(dt)))
        tj_verify_fail(v, r, "atomics take a scalar number, not %s", TS(val));
    else
        tj_verify_result(v, r, val);
}

static void check_shuffle(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    if (in->op != TJ_OP_SHFL_IDX && (in->imm < 0 || in->imm > 31))
        tj_verify_fail(v, r, "lane %s %" PRId64 " is out of range [0, 31]",
                       in->op == TJ_OP_SHFL_XOR ? "mask" : "delta", in->imm);
    else if (in->op == TJ_OP_SHFL_IDX && !is_int_scalar(v, arg_type(v, r, 1)))
        tj_verify_fail(v, r, "the lane is %s, not an integer scalar", TS(arg_type(v, r, 1)));
    else
        tj_verify_result(v, r, arg_type(v, r, 0));
}

static void check_extract(V *v, tj_ref r)
{
    const tj_type_info *t = info(v, arg_type(v, r, 0));
    int64_t i = inst(v, r)->imm;
    if (t->kind != TJ_TK_TILE || t->rank != 1)
        tj_verify_fail(v, r, "operand is %s, not a vector", TS(arg_type(v, r, 0)));
    else if (i < 0 || i >= t->shape[0])
        tj_verify_fail(v, r, "index %" PRId64 " is out of range for %s", i, TS(arg_type(v, r, 0)));
    else
        tj_verify_result(v, r, tj_type_scalar(v->c, t->dtype));
}

static void check_pack(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_type t = arg_type(v, r, 0);
    int32_t n = (int32_t)in->nargs;
    if (!tj_type_is_scalar(v->c, t)) {
        tj_verify_fail(v, r, "packs scalars, not %s", TS(t));
        return;
    }
    for (uint32_t a = 1; a < in->nargs; a++) {
        if (arg_type(v, r, a) != t) {
            tj_verify_fail(v, r, "operand types differ: %s vs %s", TS(t), TS(arg_type(v, r, a)));
            return;
        }
    }
    tj_verify_result(v, r, tj_type_tile(v->c, dtype_of(v, t), 1, &n));
}

/* ---- the matrix atom ---------------------------------------------------------- */

/* addr (u32 shared byte offset) and ld (i32 elements per row) */
static int expect_matrix_place(V *v, tj_ref r)
{
    return expect_scalar(v, r, 0, TJ_DT_U32, "the address") && expect_scalar(v, r, 1, TJ_DT_I32, "the row stride");
}

static int expect_role(V *v, tj_ref r, tj_type t, int last)
{
    const tj_inst *in = inst(v, r);
    if (in->imm < TJ_MMA_A || in->imm > last)
        tj_verify_fail(v, r, "role %" PRId64 " is not %s", in->imm, last == TJ_MMA_BT ? "a, b, c or bt" : "a, b or c");
    else if (!tj_type_is_fragment(v->c, t) || tj_type_fragment(v->c, (int)in->imm, dtype_of(v, t)) != t)
        tj_verify_fail(v, r, "%s is not a fragment of role %s", TS(t), tj_mma_role_name(in->imm));
    else
        return 1;
    return 0;
}

/* addr, ld, half: rows 8-15 start at row `half` (absent: 8) */
static void check_mma_load(V *v, tj_ref r)
{
    tj_type t = inst(v, r)->type;
    if (!expect_matrix_place(v, r) || !expect_role(v, r, t, TJ_MMA_BT) || !arg_type(v, r, 2))
        return;
    if (expect_scalar(v, r, 2, TJ_DT_I32, "the row of the second half") &&
        (tj_type_get(v->c, t)->shape[0] < 16 || inst(v, r)->imm == TJ_MMA_BT))
        tj_verify_fail(v, r, "%s {role = %s} has no second half of rows", TS(t), tj_mma_role_name(inst(v, r)->imm));
}

/* mma_pack v {role}: the lane's numel / 32 elements, in the PTX order */
static void check_mma_pack(V *v, tj_ref r)
{
    tj_type t = inst(v, r)->type, x = arg_type(v, r, 0);
    if (!expect_role(v, r, t, TJ_MMA_C))
        return;
    int32_t n = (int32_t)(tj_type_numel(v->c, t) / 32);
    if (x != tj_type_tile(v->c, dtype_of(v, t), 1, &n))
        tj_verify_fail(v, r, "packs %s, not %s[%d]", TS(x), tj_dtype_name(dtype_of(v, t)), n);
}

static void check_mma_unpack(V *v, tj_ref r)
{
    tj_type f = arg_type(v, r, 0);
    int32_t n = (int32_t)(tj_type_numel(v->c, f) / 32);
    if (!tj_type_is_fragment(v->c, f))
        tj_verify_fail(v, r, "unpacks %s, not a fragment", TS(f));
    else
        tj_verify_result(v, r, tj_type_tile(v->c, dtype_of(v, f), 1, &n));
}

static void check_mma(V *v, tj_ref r)
{
    tj_type a = arg_type(v, r, 0), b = arg_type(v, r, 1), c = arg_type(v, r, 2);
    tj_dtype in = dtype_of(v, a);
    tj_type want_c = tj_type_fragment(v->c, TJ_MMA_C, TJ_DT_F32);
    if (!tj_mma_k(in) || a != tj_type_fragment(v->c, TJ_MMA_A, in))
        tj_verify_fail(v, r, "a is %s, not an a fragment (f16[16, 16], bf16[16, 16] or f32[16, 8])", TS(a));
    else if (b != tj_type_fragment(v->c, TJ_MMA_B, in))
        tj_verify_fail(v, r, "b is %s, expected %s", TS(b), TS(tj_type_fragment(v->c, TJ_MMA_B, in)));
    else if (c != want_c)
        tj_verify_fail(v, r, "c is %s, expected %s", TS(c), TS(want_c));
    else
        tj_verify_result(v, r, want_c);
}

static void check_mma_store(V *v, tj_ref r)
{
    tj_type c = arg_type(v, r, 2), want = tj_type_fragment(v->c, TJ_MMA_C, TJ_DT_F32);
    if (!expect_matrix_place(v, r))
        return;
    if (c != want)
        tj_verify_fail(v, r, "stores %s, not a c fragment (%s)", TS(c), TS(want));
    else
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

/* cp_async(dst u32, src u64, n u32) {bytes}: 4, 8 or 16 bytes, the size of
 * the widest access PTX has for it */
static void check_cp_async(V *v, tj_ref r)
{
    int64_t bytes = inst(v, r)->imm;
    if (!expect_scalar(v, r, 0, TJ_DT_U32, "the shared address") ||
        !expect_scalar(v, r, 1, TJ_DT_U64, "the global address") ||
        !expect_scalar(v, r, 2, TJ_DT_U32, "the byte count"))
        return;
    if (bytes != 4 && bytes != 8 && bytes != 16)
        tj_verify_fail(v, r, "copies 4, 8 or 16 bytes, not %" PRId64, bytes);
    else
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

static void check_cp_async_wait(V *v, tj_ref r)
{
    int64_t n = inst(v, r)->imm;
    if (n < 0 || n > TJ_CP_ASYNC_MAX_PENDING)
        tj_verify_fail(v, r, "pending = %" PRId64 " is out of range [0, %d]", n, TJ_CP_ASYNC_MAX_PENDING);
    else
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

static void check_mma_fill(V *v, tj_ref r)
{
    if (expect_scalar(v, r, 0, TJ_DT_F32, "the value"))
        tj_verify_result(v, r, tj_type_fragment(v->c, TJ_MMA_C, TJ_DT_F32));
}

/* ---- warpgroup tensor cores (wgmma) ------------------------------------------- */

static void check_wgmma_desc(V *v, tj_ref r)
{
    if (expect_scalar(v, r, 0, TJ_DT_U32, "the address") && expect_scalar(v, r, 1, TJ_DT_U64, "the fields"))
        tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_U64));
}

/* wgmma(a, b, pred, c0 .. c{N/8-1}[, zero]) {in, majors[, zero]}:
 * descriptors, the predicate (or _), N/8 c fragments (N = 8 .. 256), with
 * the flag a bool scalar (D = A B where true), the tuple of N/8 c
 * fragments. tf32 takes K-major operands only (PTX has no transpose for
 * it). */
static void check_wgmma(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_dtype dt = (tj_dtype)in->imm;
    int zero = (in->flags & TJ_WGMMA_ZERO) != 0;
    uint32_t nc = in->nargs >= 3u + zero ? in->nargs - 3 - zero : 0;
    tj_type c = tj_type_fragment(v->c, TJ_MMA_C, TJ_DT_F32);
    if (dt != TJ_DT_BF16 && dt != TJ_DT_F16 && dt != TJ_DT_F32) {
        tj_verify_fail(v, r, "in = %s: wgmma takes bf16, f16 or f32 (tf32) inputs", tj_dtype_name(dt) ? tj_dtype_name(dt) : "?");
        return;
    }
    if (dt == TJ_DT_F32 && (in->flags & (TJ_WGMMA_A_MN | TJ_WGMMA_B_MN))) {
        tj_verify_fail(v, r, "tf32 operands must both be K-major");
        return;
    }
    if (nc < 1 || nc > 32) {
        tj_verify_fail(v, r, "takes 1 to 32 c fragments (N = 8 .. 256), not %u", nc);
        return;
    }
    /* a from registers: the warps' a fragments of the matrix atom (16-bit
     * inputs, K-major: the register form has no transpose of a) */
    tj_type afrag = dt == TJ_DT_F32 ? TJ_TYPE_NONE : tj_type_fragment(v->c, TJ_MMA_A, dt);
    if (afrag && arg_type(v, r, 0) == afrag) {
        if (in->flags & TJ_WGMMA_A_MN) {
            tj_verify_fail(v, r, "a from registers is K-major (a = k)");
            return;
        }
    } else if (!expect_scalar(v, r, 0, TJ_DT_U64, "a's descriptor")) {
        return;
    }
    if (!expect_scalar(v, r, 1, TJ_DT_U64, "b's descriptor") || !expect_pred(v, r, 2))
        return;
    tj_type *elems = tj_alloc(v->c, sizeof *elems * nc);
    for (uint32_t i = 0; i < nc; i++) {
        if (arg_type(v, r, 3 + i) != c) {
            tj_verify_fail(v, r, "operand %u is %s, not a c fragment", 4 + i, TS(arg_type(v, r, 3 + i)));
            return;
        }
        elems[i] = c;
    }
    if (zero && !expect_scalar(v, r, 3 + nc, TJ_DT_BOOL, "zero"))
        return;
    tj_verify_result(v, r, tj_type_tuple(v->c, nc, elems));
}

/* ---- mbarriers and TMA --------------------------------------------------------- */

/* mbar_init(addr, count, pred), mbar_expect_tx(addr, bytes, pred),
 * mbar_wait(addr, parity, pred), mbar_arrive(addr, pred), mbar_inval(addr,
 * pred) */
static void check_mbarrier(V *v, tj_ref r)
{
    tj_op op = inst(v, r)->op;
    int counted = op != TJ_OP_MBAR_INVAL && op != TJ_OP_MBAR_ARRIVE;
    if (!expect_scalar(v, r, 0, TJ_DT_U32, "the mbarrier's address") ||
        (counted && !expect_scalar(v, r, 1, TJ_DT_U32, op == TJ_OP_MBAR_WAIT ? "the parity" : "the count")) ||
        !expect_pred(v, r, counted ? 2 : 1))
        return;
    tj_verify_result(v, r, TJ_TYPE_NONE);
}

/* bar_sync(id, count, pred), bar_arrive(id, count, pred): the values are
 * checked where they are known, by the interpreter (simt_turns.c) */
static void check_named_barrier(V *v, tj_ref r)
{
    if (expect_scalar(v, r, 0, TJ_DT_U32, "the barrier") && expect_scalar(v, r, 1, TJ_DT_U32, "the count") &&
        expect_pred(v, r, 2))
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

/* The box of tma_load and tma_store {cols, rows, swizzle, pair}: of a
 * rank-2 tensor parameter of 2- or 4-byte elements, rows of exactly
 * `swizzle` bytes; with pair (loads only), two blocks of rows (a power of
 * two). 0 when it is well formed. */
static int check_tma_box(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    const tj_type_info *t = info(v, arg_type(v, r, 0));
    int64_t cols = in->imm & 0xffff, rows = in->imm >> 16 & 0xffff, pair = in->imm >> 32 & 0xff;
    int most = in->op == TJ_OP_TMA_LOAD ? 8 : 0;
    if (t->kind != TJ_TK_TENSOR || t->rank != 2 || inst(v, in->args[0])->op != TJ_OP_PARAM)
        return tj_verify_fail(v, r, "operand 1 is %s, not a rank-2 tensor parameter", TS(arg_type(v, r, 0))), -1;
    if (tj_dtype_size(t->dtype) != 2 && tj_dtype_size(t->dtype) != 4)
        return tj_verify_fail(v, r, "copies 2- or 4-byte elements, not %s", tj_dtype_name(t->dtype)), -1;
    if (rows < 1 || rows > 256 || cols * tj_dtype_size(t->dtype) != in->flags ||
        (in->flags != 32 && in->flags != 64 && in->flags != 128))
        return tj_verify_fail(v, r, "a box of %" PRId64 " x %" PRId64 " %s with swizzle %u: rows must be 1 to 256 and "
                              "a row exactly the swizzle (32, 64 or 128 bytes)", rows, cols, tj_dtype_name(t->dtype),
                              in->flags), -1;
    if ((uint64_t)in->imm >> 40 || pair > most || (pair && (rows & (rows - 1))))
        return tj_verify_fail(v, r, "pair = %" PRId64 " (two blocks of %" PRId64 " rows that far apart): %s", pair,
                              rows, most ? "1 to 8 blocks, rows a power of two" : "a store has none"), -1;
    return 0;
}

/* tma_load(tensor, dst, bar, c0, c1, pred) */
static void check_tma_load(V *v, tj_ref r)
{
    if (!check_tma_box(v, r) && expect_scalar(v, r, 1, TJ_DT_U32, "the destination") &&
        expect_scalar(v, r, 2, TJ_DT_U32, "the mbarrier's address") &&
        expect_scalar(v, r, 3, TJ_DT_I32, "the column") && expect_scalar(v, r, 4, TJ_DT_I32, "the row") &&
        expect_pred(v, r, 5))
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

/* tma_store(tensor, src, c0, c1, pred) */
static void check_tma_store(V *v, tj_ref r)
{
    if (!check_tma_box(v, r) && expect_scalar(v, r, 1, TJ_DT_U32, "the source") &&
        expect_scalar(v, r, 2, TJ_DT_I32, "the column") && expect_scalar(v, r, 3, TJ_DT_I32, "the row") &&
        expect_pred(v, r, 4))
        tj_verify_result(v, r, TJ_TYPE_NONE);
}

void tj_verify_simt_op(V *v, tj_ref r)
{
    switch (inst(v, r)->op) {
    case TJ_OP_TID:
        if (inst(v, r)->imm != 0)
            tj_verify_fail(v, r, "threads have axis 0 only");
        else
            tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_I32));
        break;
    case TJ_OP_TENSOR_PTR: case TJ_OP_STRIDE: check_tensor_query(v, r); break;
    case TJ_OP_LD_GLOBAL: check_ld_global(v, r); break;
    case TJ_OP_LD_ACQUIRE: case TJ_OP_ST_RELEASE: case TJ_OP_LD_RELAXED: case TJ_OP_ST_RELAXED:
        check_ordered(v, r);
        break;
    case TJ_OP_LD_SHARED:
        if (expect_scalar(v, r, 0, TJ_DT_U32, "the address") && !is_simt_value(v, inst(v, r)->type))
            tj_verify_fail(v, r, "loads a scalar or a vector of at most %d bytes", SIMT_VECTOR_BYTES);
        break;
    case TJ_OP_ST_GLOBAL: case TJ_OP_ST_SHARED:
    case TJ_OP_ATOM_ADD: case TJ_OP_ATOM_MAX: case TJ_OP_ATOM_MIN:
        check_simt_update(v, r);
        break;
    case TJ_OP_RED_ADD_SHARED:
        if (expect_scalar(v, r, 0, TJ_DT_U32, "the address") && expect_scalar(v, r, 1, TJ_DT_U32, "the addend"))
            tj_verify_result(v, r, TJ_TYPE_NONE);
        break;
    case TJ_OP_BARRIER: case TJ_OP_WARP_BARRIER: case TJ_OP_CP_ASYNC_COMMIT:
        tj_verify_result(v, r, TJ_TYPE_NONE);
        break;
    case TJ_OP_CP_ASYNC: check_cp_async(v, r); break;
    case TJ_OP_CP_ASYNC_WAIT: check_cp_async_wait(v, r); break;
    case TJ_OP_SHFL_XOR: case TJ_OP_SHFL_UP: case TJ_OP_SHFL_IDX: check_shuffle(v, r); break;
    case TJ_OP_ELECT: tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_BOOL)); break;
    case TJ_OP_BALLOT:
        if (expect_scalar(v, r, 0, TJ_DT_BOOL, "the predicate"))
            tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_U32));
        break;
    case TJ_OP_POPC:
        if (expect_scalar(v, r, 0, TJ_DT_U32, "the operand"))
            tj_verify_result(v, r, tj_type_scalar(v->c, TJ_DT_U32));
        break;
    case TJ_OP_EXTRACT: check_extract(v, r); break;
    case TJ_OP_PACK: check_pack(v, r); break;
    case TJ_OP_MMA_LOAD: check_mma_load(v, r); break;
    case TJ_OP_MMA: check_mma(v, r); break;
    case TJ_OP_MMA_STORE: check_mma_store(v, r); break;
    case TJ_OP_MMA_FILL: check_mma_fill(v, r); break;
    case TJ_OP_MMA_PACK: check_mma_pack(v, r); break;
    case TJ_OP_MMA_UNPACK: check_mma_unpack(v, r); break;
    case TJ_OP_WGMMA_DESC: check_wgmma_desc(v, r); break;
    case TJ_OP_WGMMA: check_wgmma(v, r); break;
    case TJ_OP_FENCE_PROXY_ASYNC: tj_verify_result(v, r, TJ_TYPE_NONE); break;
    case TJ_OP_WGMMA_FENCE: case TJ_OP_WGMMA_COMMIT:
        if (expect_pred(v, r, 0))
            tj_verify_result(v, r, TJ_TYPE_NONE);
        break;
    case TJ_OP_WGMMA_WAIT:
        if (expect_pred(v, r, 0))
            check_cp_async_wait(v, r);
        break;
    case TJ_OP_MBAR_INIT: case TJ_OP_MBAR_EXPECT_TX: case TJ_OP_MBAR_WAIT: case TJ_OP_MBAR_INVAL:
    case TJ_OP_MBAR_ARRIVE:
        check_mbarrier(v, r);
        break;
    case TJ_OP_TMA_LOAD: check_tma_load(v, r); break;
    case TJ_OP_TMA_STORE: check_tma_store(v, r); break;
    case TJ_OP_TMA_STORE_COMMIT:
        if (expect_pred(v, r, 0))
            tj_verify_result(v, r, TJ_TYPE_NONE);
        break;
    case TJ_OP_TMA_STORE_WAIT:
        if (expect_pred(v, r, 0))
            check_cp_async_wait(v, r);
        break;
    case TJ_OP_BAR_SYNC: case TJ_OP_BAR_ARRIVE: check_named_barrier(v, r); break;
    default: break;
    }
}

/* A SIMT kernel runs warps of 32 threads, at most 1024 per program. */
void tj_verify_simt_kernel(V *v)
{
    uint32_t n = v->k->nthreads;
    if (v->k->level == TJ_LEVEL_SIMT && (n == 0 || n % 32 || n > 1024))
        tj_verify_fail(v, TJ_NONE, "threads = %u: a SIMT kernel runs 32 to 1024 threads, a multiple of 32",
                       n);
}
