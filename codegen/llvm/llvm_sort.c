/* sort: a stable sort of every line along the axis, keys alone or keys
 * with values. Each key maps to a u32 (dtypes of 32 bits or fewer) or u64
 * whose unsigned order is the order wanted (NaN above +inf, -0 with +0;
 * descending: the complement), as in the interpreter. Keys alone of 32
 * bits or fewer, on a host with AVX2, go through a sorting network
 * (tj_cpu_sort_keys32, llvm_sort_net.c) and come back from their order
 * keys; otherwise the generated code fills (key, index) pairs, calls
 * tj_cpu_sort_pairs32 or tj_cpu_sort_pairs (radix sorts here, linked into
 * every kernel) and gathers keys and values by the sorted indices. */
#include <string.h>

#include "codegen/llvm/llvm.h"

/* Stable LSD radix sorts of n (key, index) pairs by unsigned key, one byte
 * per pass: the histograms of every byte in one read of the keys, then a
 * counting pass for each byte the keys do not all share (f32 keys of
 * similar magnitude share their exponent byte, small integers their high
 * bytes). 32-bit keys (every dtype of 32 bits or fewer) take at most four
 * passes over half the bytes 64-bit ones move. */
#define RADIX_SORT(NAME, KEY)                                                                     \
    void NAME(KEY *keys, uint32_t *idx, uint32_t n, KEY *tmp_keys, uint32_t *tmp_idx)             \
    {                                                                                             \
        enum { BYTES = sizeof(KEY) };                                                             \
        uint32_t count[BYTES][256];                                                               \
        if (n < 2)                                                                                \
            return;                                                                               \
        memset(count, 0, sizeof count);                                                           \
        for (uint32_t i = 0; i < n; i++) {                                                        \
            KEY k = keys[i];                                                                      \
            _Pragma("GCC unroll 8") for (int b = 0; b < BYTES; b++)                               \
                count[b][(k >> (8 * b)) & 0xff]++;                                                \
        }                                                                                         \
        KEY *sk = keys, *dk = tmp_keys, *tk;                                                      \
        uint32_t *si = idx, *di = tmp_idx, *ti;                                                   \
        for (int b = 0; b < BYTES; b++) {                                                         \
            uint32_t *c = count[b], at = 0;                                                       \
            if (c[(keys[0] >> (8 * b)) & 0xff] == n)                                              \
                continue; /* every key has this byte */                                           \
            for (int d = 0; d < 256; d++) {                                                       \
                uint32_t here = c[d];                                                             \
                c[d] = at;                                                                        \
                at += here;                                                                       \
            }                                                                                     \
            for (uint32_t i = 0; i < n; i++) {                                                    \
                uint32_t to = c[(sk[i] >> (8 * b)) & 0xff]++;                                     \
                dk[to] = sk[i];                                                                   \
                di[to] = si[i];                                                                   \
            }                                                                                     \
            tk = sk, sk = dk, dk = tk;                                                            \
            ti = si, si = di, di = ti;                                                            \
        }                                                                                         \
        if (sk != keys) {                                                                         \
            memcpy(keys, sk, sizeof *keys * n);                                                   \
            memcpy(idx, si, sizeof *idx * n);                                                     \
        }                                                                                         \
    }

RADIX_SORT(tj_cpu_sort_pairs, uint64_t)
RADIX_SORT(tj_cpu_sort_pairs32, uint32_t)

/* The key's bits as an unsigned integer of type kt (i32 for dtypes of 32
 * bits or fewer, else i64) whose order is the one wanted: signed integers
 * with the sign bit flipped; floats (f16/bf16 values are f32) by their
 * bits, negative ones complemented, -0 as +0, NaN above everything. */
static LLVMValueRef order_key(lg *g, tj_dtype dt, LLVMValueRef v, LLVMTypeRef kt)
{
    LLVMBuilderRef b = g->b;
    int wide = LLVMGetIntTypeWidth(kt) == 64;
    LLVMValueRef top = LLVMConstInt(kt, wide ? 1ull << 63 : 1ull << 31, 0);
    if (!tj_dtype_is_float(dt)) {
        if (tj_dtype_is_signed(dt))
            return LLVMBuildXor(b, LLVMBuildSExt(b, v, kt, ""), top, "");
        return LLVMBuildZExt(b, v, kt, "");
    }
    LLVMTypeRef ft = wide ? g->f64 : g->f32;
    LLVMValueRef d = LLVMTypeOf(v) == ft ? v : LLVMBuildFPExt(b, v, ft, "");
    LLVMValueRef zero = LLVMConstReal(ft, 0.0);
    d = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, d, zero, ""), zero, d, "");
    LLVMValueRef bits = LLVMBuildBitCast(b, d, kt, "");
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstNull(kt), "");
    LLVMValueRef k = LLVMBuildSelect(b, neg, LLVMBuildNot(b, bits, ""), LLVMBuildOr(b, bits, top, ""), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, d, d, "");
    return LLVMBuildSelect(b, nan, LLVMConstAllOnes(kt), k, "");
}

static void call_sort(lg *g, LLVMValueRef *bufs, uint64_t len, int wide)
{
    LLVMTypeRef ps[5] = {g->ptr, g->ptr, g->i32, g->ptr, g->ptr};
    LLVMValueRef args[5] = {bufs[0], bufs[1], lg_i32(g, (int64_t)len), bufs[2], bufs[3]};
    lg_call_extern(g, wide ? "tj_cpu_sort_pairs" : "tj_cpu_sort_pairs32", LLVMFunctionType(g->vd, ps, 5, 0), args, 5);
}

/* The network's lines: keys alone, 32 bits or fewer, at most this long
 * (beyond, its n log^2 n would lose to the radix sort's passes). */
enum { SORT_NET_MAX = 65536, SORT_NET_MIN_CAP = 64 };

static int sorts_by_network(const lg *g, tj_dtype dt, int with_values, uint64_t len)
{
    return g->sort_net && !with_values && tj_dtype_bits(dt) <= 32 && len <= SORT_NET_MAX;
}

/* The value whose order key (descending: complemented) is k (i32): the
 * inverse of order_key, except that -0 comes back as +0 and every NaN as
 * one NaN (fix_zeros_and_nans puts the line's own back). */
static LLVMValueRef value_of_key(lg *g, tj_dtype dt, LLVMValueRef k, int descending)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef top = lg_i32(g, INT32_MIN);
    if (descending)
        k = LLVMBuildNot(b, k, "");
    if (!tj_dtype_is_float(dt)) {
        if (tj_dtype_is_signed(dt))
            k = LLVMBuildXor(b, k, top, "");
        return LLVMTypeOf(k) == lg_type(g, dt) ? k : LLVMBuildTrunc(b, k, lg_type(g, dt), "");
    }
    LLVMValueRef positive = LLVMBuildICmp(b, LLVMIntSLT, k, lg_i32(g, 0), ""); /* the top bit set */
    LLVMValueRef bits = LLVMBuildSelect(b, positive, LLVMBuildXor(b, k, top, ""), LLVMBuildNot(b, k, ""), "");
    return LLVMBuildBitCast(b, bits, g->f32, ""); /* f16/bf16 values are f32 holding the rounded value */
}

/* *counter += cond, for a counter of type t in a one-element buffer
 * (mem2reg keeps it in a register). */
static void count_if(lg *g, LLVMValueRef counter, LLVMTypeRef t, LLVMValueRef cond)
{
    LLVMValueRef c = LLVMBuildLoad2(g->b, t, counter, "");
    LLVMBuildStore(g->b, LLVMBuildAdd(g->b, c, LLVMBuildZExt(g->b, cond, t, ""), ""), counter);
}

/* A float line's keys below zero, above, equal to it and NaN. */
typedef struct float_counts {
    LLVMValueRef n[4]; /* one-element i32 buffers: i32, not i64, so the loop
                          that counts vectorizes 8 floats a vector */
} float_counts;
enum { COUNT_NEG, COUNT_POS, COUNT_ZERO, COUNT_NAN };

/* The line's zeros and NaNs, in the line's order, over the +0s and NaNs
 * that value_of_key gave them: each kind has one key, so a stable sort
 * keeps their order. Their places: after the negative keys (descending:
 * after the NaNs and the positive ones), and the NaNs last (descending:
 * first). Nothing to do, so no loop, for a line without either. */
static void fix_zeros_and_nans(lg *g, tj_ref keys, LLVMValueRef out, tj_dtype dt, LLVMValueRef base,
                               LLVMValueRef step, uint64_t len, const float_counts *c, int descending)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef n[4];
    for (int i = 0; i < 4; i++)
        n[i] = LLVMBuildZExt(b, LLVMBuildLoad2(b, g->i32, c->n[i], ""), g->i64, "");
    LLVMBasicBlockRef fix = LLVMAppendBasicBlockInContext(g->lc, g->fn, "fix_zeros");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->lc, g->fn, "fixed");
    LLVMValueRef any = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildOr(b, n[COUNT_ZERO], n[COUNT_NAN], ""), lg_i64(g, 0), "");
    LLVMBuildCondBr(b, any, fix, done);
    LLVMPositionBuilderAtEnd(b, fix);
    LLVMValueRef zat = lg_buffer(g, g->i64, 1), nat = lg_buffer(g, g->i64, 1);
    LLVMBuildStore(b, descending ? LLVMBuildAdd(b, n[COUNT_NAN], n[COUNT_POS], "") : n[COUNT_NEG], zat);
    LLVMBuildStore(b, descending ? lg_i64(g, 0) : LLVMBuildSub(b, lg_i64(g, (int64_t)len), n[COUNT_NAN], ""), nat);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)len), "fix");
    LLVMValueRef x = lg_elem(g, keys, LLVMBuildNSWAdd(b, base, LLVMBuildNSWMul(b, j.i, step, ""), ""));
    LLVMValueRef is_zero = LLVMBuildFCmp(b, LLVMRealOEQ, x, LLVMConstReal(LLVMTypeOf(x), 0.0), "");
    LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    LLVMBasicBlockRef put = LLVMAppendBasicBlockInContext(g->lc, g->fn, "put");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->lc, g->fn, "next");
    LLVMBuildCondBr(b, LLVMBuildOr(b, is_zero, is_nan, ""), put, next);
    LLVMPositionBuilderAtEnd(b, put);
    LLVMValueRef at = LLVMBuildSelect(b, is_zero, LLVMBuildLoad2(b, g->i64, zat, ""), LLVMBuildLoad2(b, g->i64, nat, ""), "");
    LLVMBuildStore(b, x, lg_elem_ptr(g, dt, out, LLVMBuildNSWAdd(b, base, LLVMBuildNSWMul(b, at, step, ""), "")));
    count_if(g, zat, g->i64, is_zero);
    count_if(g, nat, g->i64, is_nan);
    LLVMBuildBr(b, next);
    LLVMPositionBuilderAtEnd(b, next);
    lg_loop_end(g, &j);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
}

/* Keys alone through the network: the order keys into a buffer (counting
 * a float line's kinds of keys), the network, the values back from the
 * sorted keys. */
static void emit_network_sort(lg *g, const tj_inst *in, tj_ref keys, LLVMValueRef out, lg_lines l)
{
    LLVMBuilderRef b = g->b;
    tj_dtype dt = lg_ti(g, keys)->dtype;
    int descending = (in->flags & TJ_SORT_DESCENDING) != 0, is_float = tj_dtype_is_float(dt);
    uint64_t cap = SORT_NET_MIN_CAP;
    while (cap < l.len)
        cap *= 2;
    LLVMValueRef buf = lg_buffer(g, g->i32, cap), sorted = lg_buffer(g, g->i32, cap);
    float_counts c = {{0}};
    for (int i = 0; is_float && i < 4; i++)
        c.n[i] = lg_buffer(g, g->i32, 1);
    LLVMValueRef base, step = lg_i64(g, (int64_t)l.inner);
    lg_loop o = lg_lines_begin(g, l, &base);
    for (int i = 0; is_float && i < 4; i++)
        LLVMBuildStore(b, lg_i32(g, 0), c.n[i]);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.len), "keys");
    LLVMValueRef x = lg_elem(g, keys, LLVMBuildNSWAdd(b, base, LLVMBuildNSWMul(b, j.i, step, ""), ""));
    LLVMValueRef k = order_key(g, dt, x, g->i32);
    LLVMBuildStore(b, descending ? LLVMBuildNot(b, k, "") : k, LLVMBuildGEP2(b, g->i32, buf, &j.i, 1, ""));
    if (is_float) {
        LLVMValueRef zero = LLVMConstReal(LLVMTypeOf(x), 0.0);
        count_if(g, c.n[COUNT_NEG], g->i32, LLVMBuildFCmp(b, LLVMRealOLT, x, zero, ""));
        count_if(g, c.n[COUNT_POS], g->i32, LLVMBuildFCmp(b, LLVMRealOGT, x, zero, ""));
        count_if(g, c.n[COUNT_ZERO], g->i32, LLVMBuildFCmp(b, LLVMRealOEQ, x, zero, ""));
        count_if(g, c.n[COUNT_NAN], g->i32, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""));
    }
    lg_loop_end(g, &j);
    LLVMTypeRef ps[4] = {g->ptr, g->i32, g->i32, g->ptr};
    LLVMValueRef args[4] = {buf, lg_i32(g, (int64_t)l.len), lg_i32(g, (int64_t)cap), sorted};
    lg_call_extern(g, "tj_cpu_sort_keys32", LLVMFunctionType(g->vd, ps, 4, 0), args, 4);
    j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)l.len), "values");
    LLVMValueRef sk = LLVMBuildLoad2(b, g->i32, LLVMBuildGEP2(b, g->i32, sorted, &j.i, 1, ""), "");
    LLVMValueRef dst = LLVMBuildNSWAdd(b, base, LLVMBuildNSWMul(b, j.i, step, ""), "");
    LLVMBuildStore(b, value_of_key(g, dt, sk, descending), lg_elem_ptr(g, dt, out, dst));
    lg_loop_end(g, &j);
    if (is_float)
        fix_zeros_and_nans(g, keys, out, dt, base, step, l.len, &c, descending);
    lg_loop_end(g, &o);
}

int lg_emit_sort(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    tj_ref keys = in->args[0], vals = in->nargs > 1 ? in->args[1] : TJ_NONE;
    const tj_type_info *kt = lg_ti(g, keys);
    lval *rv = lg_val(g, r);
    if (kt->rank == 0 || in->imm < -1 || in->imm >= kt->rank || (vals && (!rv->elems || rv->nelems != 2)))
        return lg_fail(g, r, "results do not fit the operands");
    uint64_t n = tj_type_numel(g->ctx, lg_in(g, keys)->type);
    lg_lines l = lg_split_axis(kt, in->imm);
    uint64_t len = l.len, inner = l.inner;
    LLVMValueRef kout, vout = NULL;
    if (vals) {
        kout = rv->elems[0].v = lg_buffer(g, lg_type(g, kt->dtype), n);
        vout = rv->elems[1].v = lg_buffer(g, lg_type(g, lg_ti(g, vals)->dtype), n);
    } else {
        lg_alloc_result(g, r);
        kout = rv->v;
    }
    if (sorts_by_network(g, kt->dtype, vals != TJ_NONE, len)) {
        emit_network_sort(g, in, keys, kout, l);
        return 0;
    }
    int wide = tj_dtype_bits(kt->dtype) > 32;
    LLVMTypeRef key_t = wide ? g->i64 : g->i32;
    LLVMValueRef bufs[4] = {lg_buffer(g, key_t, len), lg_buffer(g, g->i32, len), lg_buffer(g, key_t, len),
                            lg_buffer(g, g->i32, len)};
    LLVMValueRef base;
    lg_loop o = lg_lines_begin(g, l, &base);
    LLVMValueRef step = lg_i64(g, (int64_t)inner);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)len), "fill");
    LLVMValueRef k = order_key(g, kt->dtype, lg_elem(g, keys, LLVMBuildNSWAdd(g->b, base, LLVMBuildNSWMul(g->b, j.i, step, ""), "")),
                               key_t);
    if (in->flags & TJ_SORT_DESCENDING)
        k = LLVMBuildNot(g->b, k, "");
    LLVMBuildStore(g->b, k, LLVMBuildGEP2(g->b, key_t, bufs[0], &j.i, 1, ""));
    LLVMBuildStore(g->b, LLVMBuildTrunc(g->b, j.i, g->i32, ""), LLVMBuildGEP2(g->b, g->i32, bufs[1], &j.i, 1, ""));
    lg_loop_end(g, &j);
    call_sort(g, bufs, len, wide);
    j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)len), "gather");
    LLVMValueRef from = LLVMBuildZExt(g->b, LLVMBuildLoad2(g->b, g->i32, LLVMBuildGEP2(g->b, g->i32, bufs[1], &j.i, 1, ""), ""), g->i64, "");
    LLVMValueRef src = LLVMBuildNSWAdd(g->b, base, LLVMBuildNSWMul(g->b, from, step, ""), "");
    LLVMValueRef dst = LLVMBuildNSWAdd(g->b, base, LLVMBuildNSWMul(g->b, j.i, step, ""), "");
    LLVMBuildStore(g->b, lg_elem(g, keys, src), lg_elem_ptr(g, kt->dtype, kout, dst));
    if (vals)
        LLVMBuildStore(g->b, lg_elem(g, vals, src), lg_elem_ptr(g, lg_ti(g, vals)->dtype, vout, dst));
    lg_loop_end(g, &j);
    lg_loop_end(g, &o);
    return 0;
}

void tj_cpu_counting_sort(const uint32_t *bucket, uint32_t n, uint32_t nb, int32_t *order, int32_t *counts)
{
    uint32_t start[256];
    memset(counts, 0, sizeof *counts * nb);
    for (uint32_t i = 0; i < n; i++)
        counts[bucket[i]]++;
    for (uint32_t b = 0, at = 0; b < nb; at += (uint32_t)counts[b++])
        start[b] = at;
    for (uint32_t i = 0; i < n; i++)
        order[start[bucket[i]]++] = (int32_t)i;
}

/* counting_sort: each element's bucket (its low bits) into a buffer, then
 * tj_cpu_counting_sort fills both results. */
int lg_emit_counting_sort(lg *g, tj_ref r)
{
    const tj_inst *in = lg_in(g, r);
    lval *rv = lg_val(g, r);
    const tj_type_info *ri = tj_type_get(g->ctx, in->type);
    if (!rv->elems || rv->nelems != 2 || ri->kind != TJ_TK_TUPLE)
        return lg_fail(g, r, "results do not fit the operand");
    uint64_t n = tj_type_numel(g->ctx, lg_in(g, in->args[0])->type);
    uint64_t nb = tj_type_numel(g->ctx, ri->elems[1]);
    LLVMValueRef order = rv->elems[0].v = lg_buffer(g, g->i32, n), counts = rv->elems[1].v = lg_buffer(g, g->i32, nb);
    LLVMValueRef bucket = lg_buffer(g, g->i32, n);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)n), "bucket");
    LLVMValueRef d = LLVMBuildIntCast2(g->b, lg_elem(g, in->args[0], j.i), g->i32, 0, "");
    d = LLVMBuildAnd(g->b, d, lg_i32(g, (int64_t)nb - 1), "");
    LLVMBuildStore(g->b, d, LLVMBuildGEP2(g->b, g->i32, bucket, &j.i, 1, ""));
    lg_loop_end(g, &j);
    LLVMTypeRef ps[5] = {g->ptr, g->i32, g->i32, g->ptr, g->ptr};
    LLVMValueRef args[5] = {bucket, lg_i32(g, (int64_t)n), lg_i32(g, (int64_t)nb), order, counts};
    lg_call_extern(g, "tj_cpu_counting_sort", LLVMFunctionType(g->vd, ps, 5, 0), args, 5);
    return 0;
}
