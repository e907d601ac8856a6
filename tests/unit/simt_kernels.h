/* Hand-built SIMT IR kernels covering every SIMT op and dtype, shared by
 * the PTX tests (assembled by ptxas; run on a GPU against the SIMT
 * interpreter) and the SIMT interpreter tests. Header only.
 *
 * Random arguments for them: simt_args.h.
 * Conventions every harness relies on:
 *   - tensor parameters are 1-D (or 2-D for `dims`) with literal sizes;
 *     all are filled with random data of their dtype before a run;
 *   - parameter names steer the random data: "u_*" values in [0, 1)
 *     (floats) or [0, 100) (ints); "small_*" scalars in [-12, 12];
 *   - outputs named "*_nondet" depend on the order of atomics and are not
 *     compared between devices.
 * Global index of a thread: i = program_id * nthreads + tid. */
#ifndef TJ_SIMT_KERNELS_H
#define TJ_SIMT_KERNELS_H

#include "simt_args.h"
#include "tj_test_util.h"

enum { SK_THREADS = 64, SK_PROGRAMS = 4, SK_N = 200 };

static inline void sk_begin(tt_kb *kb, const char *name, uint32_t nthreads, int programs)
{
    tt_begin(kb, name, programs, 0, 0);
    kb->k->level = TJ_LEVEL_SIMT;
    kb->k->nthreads = nthreads;
}

static inline tj_type sk_vt(tt_kb *kb, tj_dtype dt, int w) { return w == 1 ? tt_scalar(kb, dt) : tt_tile(kb, dt, 1, w); }
static inline tj_ref sk_i32(tt_kb *kb, int64_t v) { return tt_ci(kb, TJ_DT_I32, v); }

/* A constant of any dtype. */
static inline tj_ref sk_const(tt_kb *kb, tj_dtype dt, double v)
{
    return tj_dtype_is_float(dt) ? tt_cf(kb, dt, v) : tt_ci(kb, dt, (int64_t)v);
}

static inline tj_ref sk_index(tt_kb *kb)
{
    tj_type i32 = tt_scalar(kb, TJ_DT_I32);
    tj_ref pid = tt_opi(kb, TJ_OP_PROGRAM_ID, i32, 0, 0);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, i32, 0, 0);
    return tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, pid, sk_i32(kb, kb->k->nthreads)), tid);
}

/* The address of element idx (an i32 scalar) of tensor parameter t. */
static inline tj_ref sk_addr(tt_kb *kb, tj_ref t, tj_ref idx)
{
    tj_dtype dt = tj_type_get(kb->c, tt_type(kb, t))->dtype;
    tj_ref ptr = tt_op(kb, TJ_OP_TENSOR_PTR, tt_scalar(kb, TJ_DT_U64), 1, t);
    tj_ref off = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, idx, TJ_DT_U64), tt_ci(kb, TJ_DT_U64, tj_dtype_size(dt)));
    return tt_bin(kb, TJ_OP_ADD, ptr, off);
}

static inline tj_ref sk_ld(tt_kb *kb, tj_dtype dt, int w, tj_ref addr, tj_ref pred, tj_ref other)
{
    return tt_op(kb, TJ_OP_LD_GLOBAL, sk_vt(kb, dt, w), 3, addr, pred, other);
}

static inline void sk_st(tt_kb *kb, tj_ref addr, tj_ref val, tj_ref pred)
{
    tt_op(kb, TJ_OP_ST_GLOBAL, TJ_TYPE_NONE, 3, addr, val, pred);
}

/* A 1-D tensor parameter of n elements. */
static inline tj_ref sk_tensor(tt_kb *kb, const char *name, tj_dtype dt, int n)
{
    char dims[16];
    snprintf(dims, sizeof dims, "%d", n);
    return tt_param(kb, name, dt, dims);
}

/* Loads x[i] (predicate p, other 0) of a tensor of dtype dt. */
static inline tj_ref sk_load_at(tt_kb *kb, tj_ref x, tj_ref i, tj_ref p)
{
    tj_dtype dt = tj_type_get(kb->c, tt_type(kb, x))->dtype;
    return sk_ld(kb, dt, 1, sk_addr(kb, x, i), p, TJ_NONE);
}

/* i < n, with n read from the tensor's dim (exercises `dim`). */
static inline tj_ref sk_in_bounds(tt_kb *kb, tj_ref x, tj_ref i)
{
    tj_ref n = tt_opi(kb, TJ_OP_DIM, tt_scalar(kb, TJ_DT_I32), 0, 1, x);
    return tt_bin(kb, TJ_OP_LT, i, n);
}

/* ---- elementwise ---------------------------------------------------------- */

static const tj_dtype sk_all_dtypes[] = {TJ_DT_BOOL, TJ_DT_I8,  TJ_DT_I16, TJ_DT_I32,  TJ_DT_I64,
                                         TJ_DT_U8,   TJ_DT_U16, TJ_DT_U32, TJ_DT_U64,  TJ_DT_F16,
                                         TJ_DT_BF16, TJ_DT_F32, TJ_DT_F64};
enum { SK_NDTYPES = sizeof sk_all_dtypes / sizeof sk_all_dtypes[0] };

static inline int sk_binary_ops(tj_dtype dt, tj_op *ops)
{
    static const tj_op ints[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_REM, TJ_OP_POW, TJ_OP_MAX,
                                 TJ_OP_MIN, TJ_OP_AND, TJ_OP_OR,  TJ_OP_XOR, TJ_OP_SHL, TJ_OP_SHR};
    static const tj_op floats[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_REM, TJ_OP_POW, TJ_OP_MAX, TJ_OP_MIN};
    static const tj_op bools[] = {TJ_OP_AND, TJ_OP_OR, TJ_OP_XOR};
    const tj_op *src = dt == TJ_DT_BOOL ? bools : tj_dtype_is_float(dt) ? floats : ints;
    int n = dt == TJ_DT_BOOL ? 3 : tj_dtype_is_float(dt) ? 8 : 13;
    memcpy(ops, src, sizeof *ops * (size_t)n);
    return n;
}

static inline int sk_unary_ops(tj_dtype dt, tj_op *ops)
{
    static const tj_op floats[] = {TJ_OP_NEG,  TJ_OP_ABS,  TJ_OP_EXP,  TJ_OP_EXP2,    TJ_OP_LOG,
                                   TJ_OP_LOG2, TJ_OP_SQRT, TJ_OP_RSQRT, TJ_OP_SIN,    TJ_OP_COS,
                                   TJ_OP_TANH, TJ_OP_SIGMOID, TJ_OP_ERF, TJ_OP_FLOOR, TJ_OP_CEIL};
    static const tj_op ints[] = {TJ_OP_NEG, TJ_OP_NOT, TJ_OP_ABS};
    static const tj_op bools[] = {TJ_OP_NOT};
    const tj_op *src = dt == TJ_DT_BOOL ? bools : tj_dtype_is_float(dt) ? floats : ints;
    int n = dt == TJ_DT_BOOL ? 1 : tj_dtype_is_float(dt) ? 15 : 3;
    memcpy(ops, src, sizeof *ops * (size_t)n);
    return n;
}

/* out_OP[i] = a[i] OP b[i] for every binary op of dt (named after it). */
static inline void sk_build_binary(tt_kb *kb, tj_dtype dt)
{
    char name[64];
    snprintf(name, sizeof name, "binary_%s", tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    tj_op ops[16];
    int n = sk_binary_ops(dt, ops);
    tj_ref a = sk_tensor(kb, "a", dt, SK_N), b = sk_tensor(kb, "b", dt, SK_N), outs[16];
    for (int o = 0; o < n; o++)
        outs[o] = sk_tensor(kb, tj_op_get(ops[o])->name, dt, SK_N);
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, a, i);
    tj_ref x = sk_load_at(kb, a, i, p), y = sk_load_at(kb, b, i, p);
    for (int o = 0; o < n; o++)
        sk_st(kb, sk_addr(kb, outs[o], i), tt_bin(kb, ops[o], x, y), p);
    tt_end(kb);
}

static inline void sk_build_compare(tt_kb *kb, tj_dtype dt)
{
    char name[64];
    snprintf(name, sizeof name, "compare_%s", tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    tj_ref a = sk_tensor(kb, "a", dt, SK_N), b = sk_tensor(kb, "b", dt, SK_N), outs[6];
    for (int o = 0; o < 6; o++)
        outs[o] = sk_tensor(kb, tj_op_get((tj_op)(TJ_OP_EQ + o))->name, TJ_DT_BOOL, SK_N);
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, a, i);
    tj_ref x = sk_load_at(kb, a, i, p), y = sk_load_at(kb, b, i, p);
    for (int o = 0; o < 6; o++)
        sk_st(kb, sk_addr(kb, outs[o], i), tt_bin(kb, (tj_op)(TJ_OP_EQ + o), x, y), p);
    tt_end(kb);
}

static inline void sk_build_unary(tt_kb *kb, tj_dtype dt)
{
    char name[64];
    snprintf(name, sizeof name, "unary_%s", tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    tj_op ops[16];
    int n = sk_unary_ops(dt, ops);
    tj_ref a = sk_tensor(kb, "a", dt, SK_N), outs[16];
    for (int o = 0; o < n; o++)
        outs[o] = sk_tensor(kb, tj_op_get(ops[o])->name, dt, SK_N);
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, a, i), x = sk_load_at(kb, a, i, p);
    for (int o = 0; o < n; o++)
        sk_st(kb, sk_addr(kb, outs[o], i), tt_un(kb, ops[o], x), p);
    tt_end(kb);
}

/* to_DT[i] = cast(a[i]) for every dtype DT. */
static inline void sk_build_cast(tt_kb *kb, tj_dtype from)
{
    char name[64];
    snprintf(name, sizeof name, "cast_%s", tj_dtype_name(from));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    tj_ref a = sk_tensor(kb, "a", from, SK_N), outs[SK_NDTYPES];
    for (int o = 0; o < SK_NDTYPES; o++) {
        snprintf(name, sizeof name, "to_%s", tj_dtype_name(sk_all_dtypes[o]));
        outs[o] = sk_tensor(kb, name, sk_all_dtypes[o], SK_N);
    }
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, a, i), x = sk_load_at(kb, a, i, p);
    for (int o = 0; o < SK_NDTYPES; o++)
        sk_st(kb, sk_addr(kb, outs[o], i), tt_cast(kb, x, sk_all_dtypes[o]), p);
    tt_end(kb);
}

/* select(a < b, a, b), select with a bool tensor, and fma for floats. */
static inline void sk_build_select(tt_kb *kb, tj_dtype dt)
{
    char name[64];
    snprintf(name, sizeof name, "select_%s", tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    tj_ref a = sk_tensor(kb, "a", dt, SK_N), b = sk_tensor(kb, "b", dt, SK_N), c = sk_tensor(kb, "c", dt, SK_N);
    tj_ref m = sk_tensor(kb, "m", TJ_DT_BOOL, SK_N), sel = sk_tensor(kb, "sel", dt, SK_N);
    tj_ref sel2 = sk_tensor(kb, "sel2", dt, SK_N), fma = tj_dtype_is_float(dt) ? sk_tensor(kb, "fma", dt, SK_N) : 0;
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, a, i);
    tj_ref x = sk_load_at(kb, a, i, p), y = sk_load_at(kb, b, i, p), z = sk_load_at(kb, c, i, p);
    tj_ref mv = sk_load_at(kb, m, i, p);
    sk_st(kb, sk_addr(kb, sel, i), tt_op(kb, TJ_OP_SELECT, tt_type(kb, x), 3, tt_bin(kb, TJ_OP_LT, x, y), x, y), p);
    sk_st(kb, sk_addr(kb, sel2, i), tt_op(kb, TJ_OP_SELECT, tt_type(kb, x), 3, mv, z, x), p);
    if (fma)
        sk_st(kb, sk_addr(kb, fma, i), tt_op(kb, TJ_OP_FMA, tt_type(kb, x), 3, x, y, z), p);
    tt_end(kb);
}

/* ---- memory -------------------------------------------------------------- */

/* Vectors of w elements: thread i loads x[i*w .. i*w+w) with predicate
 * i % 3 != 0 and other 1 (true), adds the element index to each element
 * (xor for bool) through extract/pack, and stores to out; also loads with
 * no predicate into plain. */
static inline void sk_build_vector(tt_kb *kb, tj_dtype dt, int w)
{
    char name[64];
    snprintf(name, sizeof name, "vector_%s_x%d", tj_dtype_name(dt), w);
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    int n = SK_THREADS * SK_PROGRAMS;
    tj_ref x = sk_tensor(kb, "x", dt, n * w), out = sk_tensor(kb, "out", dt, n * w);
    tj_ref plain = sk_tensor(kb, "plain", dt, n * w);
    tj_ref i = sk_index(kb), base = tt_bin(kb, TJ_OP_MUL, i, sk_i32(kb, w));
    tj_ref p = tt_bin(kb, TJ_OP_NE, tt_bin(kb, TJ_OP_REM, i, sk_i32(kb, 3)), sk_i32(kb, 0));
    tj_ref v = sk_ld(kb, dt, w, sk_addr(kb, x, base), p, sk_const(kb, dt, 1));
    tj_ref elems[16];
    for (int k = 0; k < w; k++) {
        tj_ref e = w == 1 ? v : tt_opi(kb, TJ_OP_EXTRACT, tt_scalar(kb, dt), k, 1, v);
        tj_ref kc = sk_const(kb, dt, k & (dt == TJ_DT_BOOL ? 1 : 0xff));
        elems[k] = tt_bin(kb, dt == TJ_DT_BOOL ? TJ_OP_XOR : TJ_OP_ADD, e, kc);
    }
    tj_ref args[16];
    for (int k = 0; k < w; k++)
        args[k] = elems[k];
    tj_ref packed = w == 1 ? elems[0] : tj_emit(kb->k, tt_cur(kb), TJ_OP_PACK, sk_vt(kb, dt, w), args, (uint32_t)w);
    sk_st(kb, sk_addr(kb, out, base), packed, TJ_NONE);
    tj_ref all = sk_ld(kb, dt, w, sk_addr(kb, x, base), TJ_NONE, TJ_NONE);
    sk_st(kb, sk_addr(kb, plain, base), all, tt_bin(kb, TJ_OP_LT, i, sk_i32(kb, n - 5)));
    tt_end(kb);
}

/* Shared memory: every thread stores its w-vector at tid*w*size, barrier,
 * then loads the vector of thread nthreads-1-tid and element 0 of thread
 * tid ^ 1 as a scalar. */
static inline void sk_build_shared(tt_kb *kb, tj_dtype dt, int w)
{
    char name[64];
    snprintf(name, sizeof name, "shared_%s_x%d", tj_dtype_name(dt), w);
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    int n = SK_THREADS * SK_PROGRAMS, size = tj_dtype_size(dt);
    kb->k->smem_bytes = (uint32_t)(SK_THREADS * w * size);
    tj_ref x = sk_tensor(kb, "x", dt, n * w), rev = sk_tensor(kb, "rev", dt, n * w), nb = sk_tensor(kb, "nb", dt, n);
    tj_ref i = sk_index(kb), tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    tj_ref base = tt_bin(kb, TJ_OP_MUL, i, sk_i32(kb, w));
    tj_ref v = sk_ld(kb, dt, w, sk_addr(kb, x, base), TJ_NONE, TJ_NONE);
    tj_ref stride = tt_ci(kb, TJ_DT_U32, w * size);
    tj_ref mine = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, tid, TJ_DT_U32), stride);
    tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, mine, v);
    tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref other = tt_bin(kb, TJ_OP_SUB, sk_i32(kb, SK_THREADS - 1), tid);
    tj_ref theirs = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, other, TJ_DT_U32), stride);
    tj_ref r = tt_op(kb, TJ_OP_LD_SHARED, sk_vt(kb, dt, w), 1, theirs);
    sk_st(kb, sk_addr(kb, rev, base), r, TJ_NONE);
    tj_ref nbr = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, tt_bin(kb, TJ_OP_XOR, tid, sk_i32(kb, 1)), TJ_DT_U32), stride);
    tj_ref s = tt_op(kb, TJ_OP_LD_SHARED, tt_scalar(kb, dt), 1, nbr);
    sk_st(kb, sk_addr(kb, nb, i), s, TJ_NONE);
    tt_end(kb);
}

/* Division and remainder by constants (the PTX generator shifts, masks and
 * multiplies for some): out[i * 2C + 2j (+1)] = x[i] / c_j (% c_j), c_j
 * among powers of two, others, 1, -1, 0 and negatives. */
static const int64_t sk_divisors[] = {1, 2, 8, 1024, 3, 7, 100, 641, -1, -4, -3, 0};
enum { SK_NDIVISORS = sizeof sk_divisors / sizeof *sk_divisors };

static inline void sk_build_div_const(tt_kb *kb, tj_dtype dt)
{
    char name[64];
    snprintf(name, sizeof name, "div_const_%s", tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    int n = SK_THREADS * SK_PROGRAMS;
    tj_ref x = sk_tensor(kb, "x", dt, n), out = sk_tensor(kb, "out", dt, n * 2 * SK_NDIVISORS);
    tj_ref i = sk_index(kb), v = sk_load_at(kb, x, i, TJ_NONE);
    tj_ref base = tt_bin(kb, TJ_OP_MUL, i, sk_i32(kb, 2 * SK_NDIVISORS));
    for (int j = 0; j < SK_NDIVISORS; j++) {
        int64_t c = sk_divisors[j], bits = tj_dtype_bits(dt);
        int64_t half = bits < 64 ? (int64_t)1 << (bits - 1) : INT64_MAX;
        if ((!tj_dtype_is_signed(dt) && c < 0) || (bits < 64 && (c < -half || c >= half)))
            continue;
        tj_ref divisor = tt_ci(kb, dt, c);
        for (int r = 0; r < 2; r++) {
            tj_ref q = tt_bin(kb, r ? TJ_OP_REM : TJ_OP_DIV, v, divisor);
            sk_st(kb, sk_addr(kb, out, tt_bin(kb, TJ_OP_ADD, base, sk_i32(kb, 2 * j + r))), q, TJ_NONE);
        }
    }
    tt_end(kb);
}

/* Asynchronous copies of `bytes` bytes a thread, of which the first (4 tid)
 * % (bytes + 4) come from x (the rest zero-filled), in two groups: after a
 * wait that leaves the second in flight, the first is read back by the
 * neighbouring thread; after a wait for all, the second. */
static inline void sk_build_async(tt_kb *kb, int bytes)
{
    char name[64];
    snprintf(name, sizeof name, "cp_async_%d", bytes);
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    int n = SK_THREADS * SK_PROGRAMS, w = bytes / 4;
    kb->k->smem_bytes = (uint32_t)(2 * SK_THREADS * bytes);
    tj_ref x = sk_tensor(kb, "x", TJ_DT_I32, n * w), out1 = sk_tensor(kb, "first", TJ_DT_I32, n * w);
    tj_ref out2 = sk_tensor(kb, "second", TJ_DT_I32, n * w);
    tj_ref i = sk_index(kb), tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    tj_ref base = tt_bin(kb, TJ_OP_MUL, i, sk_i32(kb, w));
    tj_ref utid = tt_cast(kb, tid, TJ_DT_U32), size = tt_ci(kb, TJ_DT_U32, bytes);
    tj_ref mine = tt_bin(kb, TJ_OP_MUL, utid, size);
    tj_ref four_tid = tt_bin(kb, TJ_OP_MUL, utid, tt_ci(kb, TJ_DT_U32, 4));
    tj_ref count = tt_bin(kb, TJ_OP_REM, four_tid, tt_ci(kb, TJ_DT_U32, bytes + 4));
    tj_ref second = tt_bin(kb, TJ_OP_ADD, mine, tt_ci(kb, TJ_DT_U32, SK_THREADS * bytes));
    tj_ref src = sk_addr(kb, x, base);
    tj_ref c1 = tt_op(kb, TJ_OP_CP_ASYNC, TJ_TYPE_NONE, 3, mine, src, count);
    tt_op(kb, TJ_OP_CP_ASYNC_COMMIT, TJ_TYPE_NONE, 0);
    tj_ref c2 = tt_op(kb, TJ_OP_CP_ASYNC, TJ_TYPE_NONE, 3, second, src, size);
    tt_op(kb, TJ_OP_CP_ASYNC_COMMIT, TJ_TYPE_NONE, 0);
    kb->k->insts[c1].imm = kb->k->insts[c2].imm = bytes;
    tj_ref wait1 = tt_op(kb, TJ_OP_CP_ASYNC_WAIT, TJ_TYPE_NONE, 0);
    kb->k->insts[wait1].imm = 1;
    tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref nb = tt_bin(kb, TJ_OP_MUL, tt_cast(kb, tt_bin(kb, TJ_OP_XOR, tid, sk_i32(kb, 1)), TJ_DT_U32), size);
    sk_st(kb, sk_addr(kb, out1, base), tt_op(kb, TJ_OP_LD_SHARED, sk_vt(kb, TJ_DT_I32, w), 1, nb), TJ_NONE);
    tt_op(kb, TJ_OP_CP_ASYNC_WAIT, TJ_TYPE_NONE, 0);
    tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref nb2 = tt_bin(kb, TJ_OP_ADD, nb, tt_ci(kb, TJ_DT_U32, SK_THREADS * bytes));
    sk_st(kb, sk_addr(kb, out2, base), tt_op(kb, TJ_OP_LD_SHARED, sk_vt(kb, TJ_DT_I32, w), 1, nb2), TJ_NONE);
    tt_end(kb);
}

/* Atomics: thread i updates acc[i % 4] with vals[i] where i % 3 != 0 and
 * i < N, and stores the old value. */
static inline void sk_build_atomic(tt_kb *kb, tj_dtype dt, tj_op op)
{
    char name[64];
    snprintf(name, sizeof name, "%s_%s", tj_op_get(op)->name, tj_dtype_name(dt));
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    /* float sums depend on the order: small positive values keep it tame */
    tj_ref vals = sk_tensor(kb, tj_dtype_is_float(dt) && op == TJ_OP_ATOM_ADD ? "u_vals" : "vals", dt, SK_N);
    tj_ref acc = sk_tensor(kb, tj_dtype_is_float(dt) && op == TJ_OP_ATOM_ADD ? "u_acc" : "acc", dt, 4);
    tj_ref olds = sk_tensor(kb, "olds_nondet", dt, SK_N);
    tj_ref i = sk_index(kb), in = sk_in_bounds(kb, vals, i);
    tj_ref p = tt_bin(kb, TJ_OP_AND, in, tt_bin(kb, TJ_OP_NE, tt_bin(kb, TJ_OP_REM, i, sk_i32(kb, 3)), sk_i32(kb, 0)));
    tj_ref v = sk_load_at(kb, vals, i, in);
    tj_ref slot = tt_bin(kb, TJ_OP_REM, i, sk_i32(kb, 4));
    tj_ref old = tt_op(kb, op, tt_scalar(kb, dt), 3, sk_addr(kb, acc, slot), v, p);
    sk_st(kb, sk_addr(kb, olds, i), old, in);
    tt_end(kb);
}

/* ---- warps ----------------------------------------------------------------- */

/* Shuffles of w-vectors: xor with mask 5, up by 3, idx from the i32
 * tensor `lanes` (any value: the low 5 bits count) and from tid*7+3. */
static inline void sk_build_shuffle(tt_kb *kb, tj_dtype dt, int w)
{
    char name[64];
    snprintf(name, sizeof name, "shuffle_%s_x%d", tj_dtype_name(dt), w);
    sk_begin(kb, name, SK_THREADS, SK_PROGRAMS);
    int n = SK_THREADS * SK_PROGRAMS;
    tj_ref x = sk_tensor(kb, "x", dt, n * w), lanes = sk_tensor(kb, "lanes", TJ_DT_I32, n);
    tj_ref outs[4];
    static const char *const names[] = {"xor", "up", "idx", "idx2"};
    for (int o = 0; o < 4; o++)
        outs[o] = sk_tensor(kb, names[o], dt, n * w);
    tj_ref i = sk_index(kb), base = tt_bin(kb, TJ_OP_MUL, i, sk_i32(kb, w));
    tj_ref tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    tj_type t = sk_vt(kb, dt, w);
    tj_ref v = sk_ld(kb, dt, w, sk_addr(kb, x, base), TJ_NONE, TJ_NONE);
    tj_ref lane = sk_load_at(kb, lanes, i, TJ_NONE);
    tj_ref lane2 = tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, tid, sk_i32(kb, 7)), sk_i32(kb, 3));
    tj_ref r[4] = {
        tt_opi(kb, TJ_OP_SHFL_XOR, t, 5, 1, v),
        tt_opi(kb, TJ_OP_SHFL_UP, t, 3, 1, v),
        tt_op(kb, TJ_OP_SHFL_IDX, t, 2, v, lane),
        tt_op(kb, TJ_OP_SHFL_IDX, t, 2, v, tt_cast(kb, lane2, TJ_DT_I64)),
    };
    for (int o = 0; o < 4; o++)
        sk_st(kb, sk_addr(kb, outs[o], base), r[o], TJ_NONE);
    tt_end(kb);
}

/* ---- control flow, parameters ------------------------------------------------ */

/* Loops and branches: for j in range(small_lo, small_hi, small_step)
 * carrying (a: i32 = i, b: f32 = 1) with an if on j % 3 inside; a loop of
 * constant step carrying a swapped pair; a nested loop; loops of constant
 * steps -1 and 3 over the same bounds (s = s * 3 + j from s = i). */
static inline void sk_build_loops(tt_kb *kb)
{
    sk_begin(kb, "loops", SK_THREADS, SK_PROGRAMS);
    tj_type i32 = tt_scalar(kb, TJ_DT_I32), f32 = tt_scalar(kb, TJ_DT_F32);
    tj_ref oa = sk_tensor(kb, "oa", TJ_DT_I32, SK_N), ob = sk_tensor(kb, "ob", TJ_DT_F32, SK_N);
    tj_ref ox = sk_tensor(kb, "ox", TJ_DT_I32, SK_N), oy = sk_tensor(kb, "oy", TJ_DT_I32, SK_N);
    tj_ref oc = sk_tensor(kb, "oc", TJ_DT_I32, SK_N), od = sk_tensor(kb, "od", TJ_DT_I32, SK_N);
    tj_ref oe = sk_tensor(kb, "oe", TJ_DT_I32, SK_N);
    tj_ref lo = tt_param(kb, "small_lo", TJ_DT_I32, NULL), hi = tt_param(kb, "small_hi", TJ_DT_I32, NULL);
    tj_ref step = tt_param(kb, "small_step", TJ_DT_I32, NULL);
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, oa, i);
    tj_ref loop = tt_for(kb, lo, hi, step, 2, i, tt_cf(kb, TJ_DT_F32, 1.0));
    {
        tj_ref j = tt_barg(kb, 0), a = tt_barg(kb, 1), b = tt_barg(kb, 2);
        tj_ref c = tt_bin(kb, TJ_OP_EQ, tt_bin(kb, TJ_OP_REM, j, sk_i32(kb, 3)), sk_i32(kb, 0));
        tj_type types[2] = {i32, f32};
        tj_ref br = tt_if(kb, c, 2, types);
        tt_yield(kb, 2, tt_bin(kb, TJ_OP_ADD, a, j), tt_bin(kb, TJ_OP_MUL, b, tt_cf(kb, TJ_DT_F32, 1.5)));
        tt_else(kb);
        tt_yield(kb, 2, tt_bin(kb, TJ_OP_SUB, a, sk_i32(kb, 1)), tt_bin(kb, TJ_OP_ADD, b, tt_cast(kb, a, TJ_DT_F32)));
        tt_yield(kb, 2, tt_proj(kb, br, 0), tt_proj(kb, br, 1));
    }
    sk_st(kb, sk_addr(kb, oa, i), tt_proj(kb, loop, 0), p);
    sk_st(kb, sk_addr(kb, ob, i), tt_proj(kb, loop, 1), p);
    /* (x, y, c) = (y, x, c + 0 + 1 + 2) five times: a swap of carried
     * values, and a nested loop */
    tj_ref swap = tt_for(kb, sk_i32(kb, 0), sk_i32(kb, 5), sk_i32(kb, 1), 3, i, sk_i32(kb, 0), sk_i32(kb, 0));
    {
        tj_ref x = tt_barg(kb, 1), y = tt_barg(kb, 2), c = tt_barg(kb, 3);
        tj_ref inner = tt_for(kb, sk_i32(kb, 0), sk_i32(kb, 3), sk_i32(kb, 1), 1, c);
        tt_yield(kb, 1, tt_bin(kb, TJ_OP_ADD, tt_barg(kb, 1), tt_barg(kb, 0)));
        tt_yield(kb, 3, y, x, tt_proj(kb, inner, 0));
    }
    sk_st(kb, sk_addr(kb, ox, i), tt_proj(kb, swap, 0), p);
    sk_st(kb, sk_addr(kb, oy, i), tt_proj(kb, swap, 1), p);
    sk_st(kb, sk_addr(kb, oc, i), tt_proj(kb, swap, 2), p);
    /* constant steps: -1 (compared with the bound) and 3 (counted) */
    static const int steps[2] = {-1, 3};
    tj_ref outs[2] = {od, oe};
    for (int l = 0; l < 2; l++) {
        tj_ref from = steps[l] < 0 ? hi : lo, to = steps[l] < 0 ? lo : hi;
        tj_ref sum = tt_for(kb, from, to, sk_i32(kb, steps[l]), 1, i);
        tt_yield(kb, 1, tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, tt_barg(kb, 1), sk_i32(kb, 3)), tt_barg(kb, 0)));
        sk_st(kb, sk_addr(kb, outs[l], i), tt_proj(kb, sum, 0), p);
    }
    tt_end(kb);
}

/* Scalar parameters of every dtype: out_DT[i] = s_DT (bool: s ^ (i odd);
 * numbers: s + i cast). */
static inline void sk_build_params(tt_kb *kb)
{
    sk_begin(kb, "params", SK_THREADS, SK_PROGRAMS);
    char name[32];
    tj_ref outs[SK_NDTYPES], ss[SK_NDTYPES];
    for (int o = 0; o < SK_NDTYPES; o++) {
        snprintf(name, sizeof name, "out_%s", tj_dtype_name(sk_all_dtypes[o]));
        outs[o] = sk_tensor(kb, name, sk_all_dtypes[o], SK_N);
    }
    for (int o = 0; o < SK_NDTYPES; o++) {
        snprintf(name, sizeof name, "s_%s", tj_dtype_name(sk_all_dtypes[o]));
        ss[o] = tt_param(kb, name, sk_all_dtypes[o], NULL);
    }
    tj_ref i = sk_index(kb), p = sk_in_bounds(kb, outs[0], i);
    for (int o = 0; o < SK_NDTYPES; o++) {
        tj_dtype dt = sk_all_dtypes[o];
        tj_ref iv = dt == TJ_DT_BOOL ? tt_bin(kb, TJ_OP_EQ, tt_bin(kb, TJ_OP_AND, i, sk_i32(kb, 1)), sk_i32(kb, 1))
                                     : tt_cast(kb, i, dt);
        tj_ref v = tt_bin(kb, dt == TJ_DT_BOOL ? TJ_OP_XOR : TJ_OP_ADD, ss[o], iv);
        sk_st(kb, sk_addr(kb, outs[o], i), v, p);
    }
    tt_end(kb);
}

/* dim, stride, tensor_ptr of a 2-D tensor; program ids and counts of a
 * 3-D grid. out[lin * 8 + k]. */
static inline void sk_build_grid(tt_kb *kb)
{
    tt_begin(kb, "grid3", 2, 3, 2);
    kb->k->level = TJ_LEVEL_SIMT;
    kb->k->nthreads = 32;
    tj_type i32 = tt_scalar(kb, TJ_DT_I32), i64 = tt_scalar(kb, TJ_DT_I64);
    tj_ref m = tt_param(kb, "m", TJ_DT_F32, "3, 5"), out = sk_tensor(kb, "out", TJ_DT_I64, 12 * 8 * 32);
    tj_ref id[3], np[3];
    for (int a = 0; a < 3; a++) {
        id[a] = tt_opi(kb, TJ_OP_PROGRAM_ID, i32, a, 0);
        np[a] = tt_opi(kb, TJ_OP_NUM_PROGRAMS, i32, a, 0);
    }
    tj_ref lin = tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, id[2], np[1]), id[1]), np[0]), id[0]);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, i32, 0, 0);
    tj_ref base = tt_bin(kb, TJ_OP_MUL, tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, lin, sk_i32(kb, 32)), tid), sk_i32(kb, 8));
    tj_ref vals[8] = {
        tt_cast(kb, id[0], TJ_DT_I64), tt_cast(kb, id[1], TJ_DT_I64), tt_cast(kb, id[2], TJ_DT_I64),
        tt_cast(kb, tt_bin(kb, TJ_OP_MUL, tt_bin(kb, TJ_OP_MUL, np[0], np[1]), np[2]), TJ_DT_I64),
        tt_cast(kb, tt_opi(kb, TJ_OP_DIM, i32, 0, 1, m), TJ_DT_I64),
        tt_cast(kb, tt_opi(kb, TJ_OP_DIM, i32, 1, 1, m), TJ_DT_I64),
        tt_opi(kb, TJ_OP_STRIDE, i64, 0, 1, m),
        tt_opi(kb, TJ_OP_STRIDE, i64, 1, 1, m),
    };
    for (int k = 0; k < 8; k++)
        sk_st(kb, sk_addr(kb, out, tt_bin(kb, TJ_OP_ADD, base, sk_i32(kb, k))), vals[k], TJ_NONE);
    tt_end(kb);
}

/* The matrix atom with input dtype dt: every warp (two per program) stages
 * its own A[16, K] and B[K, 8] in shared memory with padded rows, runs a
 * loop of two mma carrying the c fragment from mma_fill(0.5), stores it and
 * writes mma_out = 2 * A * B + 0.5 (row-major 16 x 8 per warp; mma_tf32_out
 * for f32 inputs, which a target may round to tf32). Inputs are in [0, 1)
 * so the sums do not cancel: the atom's summation order and rounding are
 * the target's, and outputs are compared within a tolerance. */
/* Copies a warp's rows x cols matrix g of src into shared memory at smem,
 * rows ld elements apart. */
static inline tj_ref sk_mma_copy(tt_kb *kb, tj_ref src, tj_ref g, int rows, int cols, int ld, tj_ref smem)
{
    tj_dtype dt = tj_type_get(kb->c, tt_type(kb, src))->dtype;
    int size = tj_dtype_size(dt);
    tj_ref lane = tt_bin(kb, TJ_OP_AND, tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0), sk_i32(kb, 31));
    for (int j = 0; j < rows * cols / 32; j++) {
        tj_ref e = tt_bin(kb, TJ_OP_ADD, lane, sk_i32(kb, j * 32));
        tj_ref v = sk_ld(kb, dt, 1, sk_addr(kb, src, tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, g, sk_i32(kb, rows * cols)), e)),
                         TJ_NONE, TJ_NONE);
        tj_ref at = tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, tt_bin(kb, TJ_OP_DIV, e, sk_i32(kb, cols)), sk_i32(kb, ld)),
                           tt_bin(kb, TJ_OP_REM, e, sk_i32(kb, cols)));
        tj_ref addr = tt_bin(kb, TJ_OP_ADD, smem, tt_cast(kb, tt_bin(kb, TJ_OP_MUL, at, sk_i32(kb, size)), TJ_DT_U32));
        tt_op(kb, TJ_OP_ST_SHARED, TJ_TYPE_NONE, 2, addr, v);
    }
    return smem;
}

/* bt: u_b holds B^T ([8, K] row-major per warp), staged as it is and
 * loaded with role bt. */
static inline void sk_build_mma(tt_kb *kb, tj_dtype dt, int bt)
{
    char name[64];
    snprintf(name, sizeof name, "mma_%s%s", bt ? "bt_" : "", tj_dtype_name(dt));
    enum { WARPS = 2, PROGRAMS = 2 };
    sk_begin(kb, name, WARPS * 32, PROGRAMS);
    int k = tj_mma_k(dt), size = tj_dtype_size(dt);
    int lda = k + 16 / size, ldb = (bt ? k : TJ_MMA_N) + 16 / size, ldc = TJ_MMA_N + 4;
    int abytes = TJ_MMA_M * lda * size, bbytes = (bt ? TJ_MMA_N : k) * ldb * size, cbytes = TJ_MMA_M * ldc * 4;
    int per_warp = abytes + bbytes + cbytes;
    kb->k->smem_bytes = (uint32_t)(WARPS * per_warp);
    int atoms = WARPS * PROGRAMS;
    tj_ref a = sk_tensor(kb, "u_a", dt, atoms * TJ_MMA_M * k), b = sk_tensor(kb, "u_b", dt, atoms * k * TJ_MMA_N);
    tj_ref out = sk_tensor(kb, dt == TJ_DT_F32 ? "mma_tf32_out" : "mma_out", TJ_DT_F32, atoms * TJ_MMA_M * TJ_MMA_N);
    tj_type i32 = tt_scalar(kb, TJ_DT_I32);
    tj_ref warp = tt_bin(kb, TJ_OP_DIV, tt_opi(kb, TJ_OP_TID, i32, 0, 0), sk_i32(kb, 32));
    tj_ref g = tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, tt_opi(kb, TJ_OP_PROGRAM_ID, i32, 0, 0), sk_i32(kb, WARPS)), warp);
    tj_ref base = tt_cast(kb, tt_bin(kb, TJ_OP_MUL, warp, sk_i32(kb, per_warp)), TJ_DT_U32);
    tj_ref sa = sk_mma_copy(kb, a, g, TJ_MMA_M, k, lda, base);
    tj_ref sb = sk_mma_copy(kb, b, g, bt ? TJ_MMA_N : k, bt ? k : TJ_MMA_N, ldb,
                            tt_bin(kb, TJ_OP_ADD, base, tt_ci(kb, TJ_DT_U32, abytes)));
    tj_ref sc = tt_bin(kb, TJ_OP_ADD, base, tt_ci(kb, TJ_DT_U32, abytes + bbytes));
    tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref fa = tt_opi(kb, TJ_OP_MMA_LOAD, tj_type_fragment(kb->c, TJ_MMA_A, dt), TJ_MMA_A, 3, sa, sk_i32(kb, lda), TJ_NONE);
    tj_ref fb = tt_opi(kb, TJ_OP_MMA_LOAD, tj_type_fragment(kb->c, TJ_MMA_B, dt), bt ? TJ_MMA_BT : TJ_MMA_B, 3, sb,
                       sk_i32(kb, ldb), TJ_NONE);
    tj_type ct = tj_type_fragment(kb->c, TJ_MMA_C, TJ_DT_F32);
    tj_ref c0 = tt_op(kb, TJ_OP_MMA_FILL, ct, 1, tt_cf(kb, TJ_DT_F32, 0.5));
    tj_ref loop = tt_for(kb, sk_i32(kb, 0), sk_i32(kb, 2), sk_i32(kb, 1), 1, c0);
    tt_yield(kb, 1, tt_op(kb, TJ_OP_MMA, ct, 3, fa, fb, tt_barg(kb, 1)));
    tj_ref c = tt_proj(kb, loop, 0);
    tt_op(kb, TJ_OP_MMA_STORE, TJ_TYPE_NONE, 3, sc, sk_i32(kb, ldc), c);
    tt_op(kb, TJ_OP_BARRIER, TJ_TYPE_NONE, 0);
    tj_ref lane = tt_bin(kb, TJ_OP_AND, tt_opi(kb, TJ_OP_TID, i32, 0, 0), sk_i32(kb, 31));
    for (int j = 0; j < TJ_MMA_M * TJ_MMA_N / 32; j++) {
        tj_ref e = tt_bin(kb, TJ_OP_ADD, lane, sk_i32(kb, j * 32));
        tj_ref at = tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, tt_bin(kb, TJ_OP_DIV, e, sk_i32(kb, TJ_MMA_N)), sk_i32(kb, ldc)),
                           tt_bin(kb, TJ_OP_REM, e, sk_i32(kb, TJ_MMA_N)));
        tj_ref v = tt_op(kb, TJ_OP_LD_SHARED, tt_scalar(kb, TJ_DT_F32), 1,
                         tt_bin(kb, TJ_OP_ADD, sc, tt_cast(kb, tt_bin(kb, TJ_OP_MUL, at, sk_i32(kb, 4)), TJ_DT_U32)));
        tj_ref o = tt_bin(kb, TJ_OP_ADD, tt_bin(kb, TJ_OP_MUL, g, sk_i32(kb, TJ_MMA_M * TJ_MMA_N)), e);
        sk_st(kb, sk_addr(kb, out, o), v, TJ_NONE);
    }
    tt_end(kb);
}

/* ---- the catalogue -------------------------------------------------------------- */

/* Builds kernel number `index` of the catalogue: 1, or -1 when that index
 * has no kernel (skip it), 0 past the end. */
static inline int sk_build(tt_kb *kb, int index)
{
    static const tj_op atomics[] = {TJ_OP_ATOM_ADD, TJ_OP_ATOM_MAX, TJ_OP_ATOM_MIN};
    static const int widths[] = {1, 2, 4, 8, 16};
    int i = index;
    if (i < SK_NDTYPES)
        return sk_build_binary(kb, sk_all_dtypes[i]), 1;
    if ((i -= SK_NDTYPES) < SK_NDTYPES)
        return sk_build_compare(kb, sk_all_dtypes[i]), 1;
    if ((i -= SK_NDTYPES) < SK_NDTYPES)
        return sk_build_unary(kb, sk_all_dtypes[i]), 1;
    if ((i -= SK_NDTYPES) < SK_NDTYPES)
        return sk_build_cast(kb, sk_all_dtypes[i]), 1;
    if ((i -= SK_NDTYPES) < SK_NDTYPES)
        return sk_build_select(kb, sk_all_dtypes[i]), 1;
    if ((i -= SK_NDTYPES) < SK_NDTYPES * 5) {
        tj_dtype dt = sk_all_dtypes[i / 5];
        int w = widths[i % 5];
        if (w * tj_dtype_size(dt) > 16)
            return -1;
        return sk_build_vector(kb, dt, w), 1;
    }
    if ((i -= SK_NDTYPES * 5) < SK_NDTYPES * 2) {
        tj_dtype dt = sk_all_dtypes[i / 2];
        return sk_build_shared(kb, dt, i % 2 ? 16 / tj_dtype_size(dt) : 1), 1;
    }
    if ((i -= SK_NDTYPES * 2) < (SK_NDTYPES - 1) * 3) /* every number dtype */
        return sk_build_atomic(kb, sk_all_dtypes[1 + i / 3], atomics[i % 3]), 1;
    if ((i -= (SK_NDTYPES - 1) * 3) < SK_NDTYPES * 2) {
        tj_dtype dt = sk_all_dtypes[i / 2];
        return sk_build_shuffle(kb, dt, i % 2 ? (tj_dtype_size(dt) <= 4 ? 4 : 2) : 1), 1;
    }
    i -= SK_NDTYPES * 2;
    if (i == 0)
        return sk_build_loops(kb), 1;
    if (i == 1)
        return sk_build_params(kb), 1;
    if (i == 2)
        return sk_build_grid(kb), 1;
    static const tj_dtype atoms[] = {TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32};
    if ((i -= 3) < 3)
        return sk_build_mma(kb, atoms[i], 0), 1;
    if ((i -= 3) < 2)
        return sk_build_mma(kb, atoms[2 * i], 1), 1; /* f16, f32 */
    static const int copies[] = {4, 8, 16};
    if ((i -= 2) < 3)
        return sk_build_async(kb, copies[i]), 1;
    static const tj_dtype ints[] = {TJ_DT_I32, TJ_DT_U32, TJ_DT_I64, TJ_DT_U64, TJ_DT_I8, TJ_DT_U16};
    if ((i -= 3) < 6)
        return sk_build_div_const(kb, ints[i]), 1;
    return 0;
}

#endif
