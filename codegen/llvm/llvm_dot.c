/* dot: [M, K] x [K, N] + [M, N], or batched [B, M, K] x [B, K, N] + [B, M, N].
 * The result starts as the accumulator (or 0); every output sums its
 * products in k order, in the result's class (f32 for f16/bf16/f32
 * inputs, f64, or wrapping integers). Float products whose M and N the
 * register block divides go through a register-blocked kernel: MR rows by
 * NR vectors of the result stay in registers across the whole k loop
 * (per k: NR vector loads of B, MR broadcasts of A, MR * NR FMAs), instead
 * of reloading and storing a row of the result for every k. Otherwise the
 * loop nest is m, k, n with n innermost, so the vectorizer turns each row
 * update into vector FMAs. Both sum every output in k order with the same
 * llvm.fmuladd, so they agree bit for bit. */
#include "codegen/llvm/llvm.h"

typedef struct dot_dims {
    uint64_t batch, m, k, n;
} dot_dims;

static int dims_of(const tj_type_info *a, const tj_type_info *b, const tj_type_info *r, dot_dims *d)
{
    int rank = a->rank;
    if ((rank != 2 && rank != 3) || b->rank != rank || r->rank != rank)
        return -1;
    uint64_t batch = rank == 3 ? (uint64_t)a->shape[0] : 1;
    if (rank == 3 && ((uint64_t)b->shape[0] != batch || (uint64_t)r->shape[0] != batch))
        return -1;
    const int32_t *as = a->shape + rank - 2, *bs = b->shape + rank - 2, *rs = r->shape + rank - 2;
    if (as[1] != bs[0] || rs[0] != as[0] || rs[1] != bs[1])
        return -1;
    *d = (dot_dims){batch, (uint64_t)as[0], (uint64_t)as[1], (uint64_t)bs[1]};
    return 0;
}

/* An operand element in the result's value type. */
static LLVMValueRef widen(lg *g, tj_dtype from, tj_dtype to, LLVMValueRef v)
{
    LLVMTypeRef t = lg_type(g, to);
    if (LLVMTypeOf(v) == t)
        return v;
    if (tj_dtype_is_float(to))
        return LLVMBuildFPExt(g->b, v, t, "");
    return tj_dtype_is_signed(from) ? LLVMBuildSExt(g->b, v, t, "") : LLVMBuildZExt(g->b, v, t, "");
}

static LLVMValueRef idx3(lg *g, LLVMValueRef b, uint64_t sb, LLVMValueRef r, uint64_t sr, LLVMValueRef c)
{
    LLVMValueRef x = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, b, lg_i64(g, (int64_t)sb), ""),
                                     LLVMBuildNSWMul(g->b, r, lg_i64(g, (int64_t)sr), ""), "");
    return LLVMBuildNSWAdd(g->b, x, c, "");
}

static void init_result(lg *g, tj_ref r, tj_ref acc, uint64_t n)
{
    lg_loop l = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)n), "init");
    LLVMValueRef v = acc ? lg_elem(g, acc, l.i) : LLVMConstNull(lg_type(g, lg_ti(g, r)->dtype));
    lg_set_elem(g, r, l.i, v);
    lg_loop_end(g, &l);
}

/* How far along k operand x (k its tile axis `axis`) holds anything but
 * +0: the end of a load's inside part where its other is +0 or none; NULL
 * otherwise. */
static LLVMValueRef k_inside(lg *g, tj_ref x, int axis, uint64_t k)
{
    LLVMValueRef other, end = lg_load_inside_end(g, x, axis, k, &other);
    return end && (!other || LLVMIsNull(other)) ? end : NULL; /* a null constant: +0 (not -0) or integer 0 */
}

/* The k loop's end: d.k, or where a's columns and b's rows from there on
 * are all +0 (loads past the tensor's K): their products are +0, which
 * change nothing but a -0 sum (finish_skipped says how). K = 72 in steps
 * of 64 computed 56 of every 128 k on zeros. */
static LLVMValueRef live_k(lg *g, tj_ref a, tj_ref b, dot_dims d)
{
    int rank = lg_ti(g, a)->rank;
    LLVMValueRef ka = k_inside(g, a, rank - 1, d.k), kb = ka ? k_inside(g, b, rank - 2, d.k) : NULL;
    if (!kb)
        return lg_i64(g, (int64_t)d.k);
    LLVMValueRef both[2] = {ka, kb};
    return lg_intrinsic(g, "llvm.smax", both, 2);
}

/* Where the k loop stopped short of d.k: a float result + 0.0, what the
 * skipped +0 products would have done (a -0 sum becomes +0; every other
 * value keeps its bits, NaN included). */
static void finish_skipped(lg *g, tj_ref r, LLVMValueRef kend, dot_dims d)
{
    tj_dtype rt = lg_ti(g, r)->dtype;
    if (!tj_dtype_is_float(rt) || kend == lg_i64(g, (int64_t)d.k)) /* the whole k (constants are uniqued) */
        return;
    LLVMBasicBlockRef fix = LLVMAppendBasicBlockInContext(g->lc, g->fn, "k_skipped");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "k_done");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, kend, lg_i64(g, (int64_t)d.k), ""), fix, done);
    LLVMPositionBuilderAtEnd(g->b, fix);
    lg_loop l = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)(d.batch * d.m * d.n)), "plus_zero");
    LLVMValueRef z = LLVMConstNull(lg_type(g, rt));
    lg_set_elem(g, r, l.i, LLVMBuildFAdd(g->b, lg_elem(g, r, l.i), z, ""));
    lg_loop_end(g, &l);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
}

enum { MR_MAX = 8, NR = 2 };

/* Rows of the register block: MR x NR accumulators, NR loads of B and one
 * broadcast of A live at once. At AVX2's 16 vector registers 4 rows (8
 * accumulators, 11 registers; NEON, with 32, also takes 4: the rule goes
 * by vector width, untried there); with AVX-512's 32, 8 rows
 * where M allows (16 accumulators): two FMA ports of 4 cycles' latency
 * need 8 FMAs in flight, which 8 accumulators only just give (Ice Lake,
 * one thread: the matmul examples 7-10% faster). */
static int block_rows(const lg *g, uint64_t m)
{
    return g->vector_bits >= 512 && m % MR_MAX == 0 ? MR_MAX : 4;
}

/* The vector width for the register-blocked kernel, or 0 where it does
 * not apply: a float result, B in a buffer of the result's value type
 * (f16/bf16 values are f32 already), M and N multiples of the block. */
static unsigned blocked_lanes(const lg *g, tj_ref b, tj_dtype rt, tj_dtype bt, dot_dims d)
{
    if (!tj_dtype_is_float(rt) || rt == TJ_DT_F16 || rt == TJ_DT_BF16 || lg_val(g, b)->fused ||
        lg_type(g, bt) != lg_type(g, rt))
        return 0;
    unsigned w = lg_lanes(g, rt);
    return w >= 4 && d.m % 4 == 0 && d.n % (NR * w) == 0 ? w : 0;
}

static LLVMValueRef vec_at(lg *g, LLVMTypeRef vt, tj_dtype dt, LLVMValueRef buf, LLVMValueRef i)
{
    LLVMValueRef v = LLVMBuildLoad2(g->b, vt, lg_elem_ptr(g, dt, buf, i), "");
    LLVMSetAlignment(v, (unsigned)tj_dtype_size(dt));
    return v;
}

static void vec_put(lg *g, tj_dtype dt, LLVMValueRef buf, LLVMValueRef i, LLVMValueRef v)
{
    LLVMSetAlignment(LLVMBuildStore(g->b, v, lg_elem_ptr(g, dt, buf, i)), (unsigned)tj_dtype_size(dt));
}

/* The blocks of `block` that cover the first `read` of a dimension (all
 * `len` where read is NULL). */
static LLVMValueRef blocks_to(lg *g, LLVMValueRef read, uint64_t len, uint64_t block)
{
    if (!read)
        return lg_i64(g, (int64_t)(len / block));
    return LLVMBuildUDiv(g->b, LLVMBuildAdd(g->b, read, lg_i64(g, (int64_t)block - 1), ""), lg_i64(g, (int64_t)block), "");
}

/* The result (already holding the accumulator, or from_zero: a +0 one,
 * which the registers start from instead) += a x b, block by block, over
 * the blocks that cover rows x cols (NULL: all). */
static void blocked_dot(lg *g, tj_ref r, tj_ref a, tj_ref b, tj_dtype at, tj_dtype rt, dot_dims d, unsigned w,
                        LLVMValueRef kend, LLVMValueRef rows, LLVMValueRef cols, int from_zero)
{
    LLVMTypeRef vt = LLVMVectorType(lg_type(g, rt), w);
    int mr = block_rows(g, d.m);
    LLVMValueRef acc[MR_MAX][NR], rb = lg_val(g, r)->v, bb = lg_val(g, b)->v;
    for (int i = 0; i < mr; i++) /* allocas: SROA makes them the k loop's phis */
        for (int j = 0; j < NR; j++)
            acc[i][j] = lg_buffer(g, vt, 1);
    lg_loop lb = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.batch), "batch");
    lg_loop lm = lg_loop_begin(g, lg_i64(g, 0), blocks_to(g, rows, d.m, (uint64_t)mr), "mblock");
    lg_loop ln = lg_loop_begin(g, lg_i64(g, 0), blocks_to(g, cols, d.n, NR * w), "nblock");
    LLVMValueRef m0 = LLVMBuildNSWMul(g->b, lm.i, lg_i64(g, mr), ""), n0 = LLVMBuildNSWMul(g->b, ln.i, lg_i64(g, NR * w), "");
    LLVMValueRef row[MR_MAX], col[NR];
    for (int i = 0; i < mr; i++)
        row[i] = LLVMBuildNSWAdd(g->b, m0, lg_i64(g, i), "");
    for (int j = 0; j < NR; j++)
        col[j] = LLVMBuildNSWAdd(g->b, n0, lg_i64(g, (int64_t)(j * w)), "");
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < NR; j++)
            LLVMBuildStore(g->b,
                           from_zero ? LLVMConstNull(vt) : vec_at(g, vt, rt, rb, idx3(g, lb.i, d.m * d.n, row[i], d.n, col[j])),
                           acc[i][j]);
    lg_loop lk = lg_loop_begin(g, lg_i64(g, 0), kend, "k");
    LLVMValueRef bv[NR];
    for (int j = 0; j < NR; j++)
        bv[j] = vec_at(g, vt, rt, bb, idx3(g, lb.i, d.k * d.n, lk.i, d.n, col[j]));
    for (int i = 0; i < mr; i++) {
        LLVMValueRef x = widen(g, at, rt, lg_elem(g, a, idx3(g, lb.i, d.m * d.k, row[i], d.k, lk.i)));
        LLVMValueRef xs = lg_splat(g, x, w);
        for (int j = 0; j < NR; j++) {
            LLVMValueRef xyc[3] = {xs, bv[j], LLVMBuildLoad2(g->b, vt, acc[i][j], "")};
            LLVMBuildStore(g->b, lg_intrinsic(g, "llvm.fmuladd", xyc, 3), acc[i][j]);
        }
    }
    lg_loop_end(g, &lk);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < NR; j++)
            vec_put(g, rt, rb, idx3(g, lb.i, d.m * d.n, row[i], d.n, col[j]), LLVMBuildLoad2(g->b, vt, acc[i][j], ""));
    lg_loop_end(g, &ln);
    lg_loop_end(g, &lm);
    lg_loop_end(g, &lb);
}

/* Whether the accumulator is +0 everywhere (none, or a broadcast +0). */
static int zero_acc(lg *g, tj_ref acc)
{
    LLVMValueRef z = acc ? lg_same_everywhere(g, acc) : NULL;
    return !acc || (z && LLVMIsAConstantFP(z) && LLVMIsNull(z)); /* a null constant: +0, not -0 */
}

int lg_emit_dot(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref a = in->args[0], b = in->args[1], acc = in->args[2];
    tj_dtype rt = lg_ti(g, r)->dtype, at = lg_ti(g, a)->dtype, bt = lg_ti(g, b)->dtype;
    dot_dims d;
    if (dims_of(lg_ti(g, a), lg_ti(g, b), lg_ti(g, r), &d))
        return lg_fail(g, r, "operand shapes do not fit a matrix product");
    /* the product sums into a carried accumulator in place: the yield that
     * carries it on then copies nothing; otherwise the accumulator is
     * copied in, and the product back out by the yield, every iteration
     * (the two copies of a 64 x 64 result took about 10% of a 64 x 64 x 64
     * step); a +0 accumulator is not copied at all where the register
     * block starts from zeros (attention's two products copied 8 KiB of
     * zeros each, every iteration) */
    unsigned w = blocked_lanes(g, b, rt, bt, d);
    int from_zero = 0;
    if (lg_overwritable_arg(g, r, acc)) {
        lg_val(g, r)->v = lg_val(g, acc)->v;
    } else {
        lg_alloc_result(g, r);
        from_zero = w && zero_acc(g, acc);
        if (!from_zero)
            init_result(g, r, acc, d.batch * d.m * d.n);
    }
    LLVMValueRef kend = live_k(g, a, b, d), rows = NULL, cols = NULL;
    if (!lg_dot_read_extent(g, r, &rows, &cols))
        rows = cols = NULL;
    if (!rows && lg_ti(g, r)->rank == 2) /* axis 0 of a batched product is the batch */
        rows = lg_live_rows(g, r);
    if (w) {
        blocked_dot(g, r, a, b, at, rt, d, w, kend, rows, cols, from_zero);
        finish_skipped(g, r, kend, d);
        return 0;
    }
    /* the loop nest skips the unread rows only: a runtime n bound would
     * give its vector loop a remainder */
    lg_loop lb = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.batch), "batch");
    lg_loop lm = lg_loop_begin(g, lg_i64(g, 0), rows ? rows : lg_i64(g, (int64_t)d.m), "m");
    lg_loop lk = lg_loop_begin(g, lg_i64(g, 0), kend, "k");
    LLVMValueRef x = widen(g, at, rt, lg_elem(g, a, idx3(g, lb.i, d.m * d.k, lm.i, d.k, lk.i)));
    lg_loop ln = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)d.n), "n");
    LLVMValueRef y = widen(g, bt, rt, lg_elem(g, b, idx3(g, lb.i, d.k * d.n, lk.i, d.n, ln.i)));
    LLVMValueRef ci = idx3(g, lb.i, d.m * d.n, lm.i, d.n, ln.i), c = lg_elem(g, r, ci), sum;
    if (tj_dtype_is_float(rt)) {
        LLVMValueRef xyc[3] = {x, y, c};
        sum = lg_intrinsic(g, "llvm.fmuladd", xyc, 3);
    } else {
        sum = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, x, y, ""), c, "");
    }
    lg_set_elem(g, r, ci, sum);
    lg_loop_end(g, &ln);
    lg_loop_end(g, &lk);
    lg_loop_end(g, &lm);
    lg_loop_end(g, &lb);
    finish_skipped(g, r, kend, d);
    if (rt == TJ_DT_F16 || rt == TJ_DT_BF16) {
        lg_loop l = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)(d.batch * d.m * d.n)), "round");
        lg_set_elem(g, r, l.i, lg_round(g, rt, lg_elem(g, r, l.i)));
        lg_loop_end(g, &l);
    }
    return 0;
}
