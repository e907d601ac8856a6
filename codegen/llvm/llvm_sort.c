/* sort: a stable sort of every line along the axis, keys alone or keys
 * with values. Each key maps to a u32 (dtypes of 32 bits or fewer) or u64
 * whose unsigned order is the order wanted (NaN above +inf, -0 with +0;
 * descending: the complement), as in the interpreter; the generated code
 * fills (key, index) pairs, calls tj_cpu_sort_pairs32 or tj_cpu_sort_pairs
 * (radix sorts here, linked into every kernel) and gathers keys and values
 * by the sorted indices. */
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
