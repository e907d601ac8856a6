/* sort: a stable sort of every line along the axis, keys alone or keys
 * with values. Each key maps to a u64 whose unsigned order is the order
 * wanted (NaN above +inf, -0 with +0; descending: the complement), as in
 * the interpreter; the generated code fills (key, index) pairs, calls
 * tj_cpu_sort_pairs (a radix sort here, linked into every kernel that
 * sorts) and gathers keys and values by the sorted indices. */
#include <string.h>

#include "codegen/llvm/llvm.h"

/* One stable counting pass on byte `shift / 8` of the keys. */
static void radix_pass(const uint64_t *sk, const uint32_t *si, uint64_t *dk, uint32_t *di, uint32_t n, int shift)
{
    uint32_t count[257] = {0};
    for (uint32_t i = 0; i < n; i++)
        count[((sk[i] >> shift) & 0xff) + 1]++;
    for (int b = 0; b < 256; b++)
        count[b + 1] += count[b];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = count[(sk[i] >> shift) & 0xff]++;
        dk[at] = sk[i];
        di[at] = si[i];
    }
}

/* LSD radix sort, stable, skipping the bytes every key shares (f32 keys
 * widened to f64 share their low 29 bits; small integers their high ones). */
void tj_cpu_sort_pairs(uint64_t *keys, uint32_t *idx, uint32_t n, uint64_t *tmp_keys, uint32_t *tmp_idx)
{
    uint64_t all = ~(uint64_t)0, any = 0;
    for (uint32_t i = 0; i < n; i++) {
        all &= keys[i];
        any |= keys[i];
    }
    uint64_t *sk = keys, *dk = tmp_keys;
    uint32_t *si = idx, *di = tmp_idx;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!(((all ^ any) >> shift) & 0xff))
            continue;
        radix_pass(sk, si, dk, di, n, shift);
        uint64_t *tk = sk;
        uint32_t *ti = si;
        sk = dk, si = di, dk = tk, di = ti;
    }
    if (sk != keys) {
        memcpy(keys, sk, sizeof *keys * n);
        memcpy(idx, si, sizeof *idx * n);
    }
}

static LLVMValueRef order_key(lg *g, tj_dtype dt, LLVMValueRef v)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef top = LLVMConstInt(g->i64, 1ull << 63, 0);
    if (!tj_dtype_is_float(dt)) {
        if (tj_dtype_is_signed(dt))
            return LLVMBuildXor(b, LLVMBuildSExt(b, v, g->i64, ""), top, "");
        return LLVMBuildZExt(b, v, g->i64, "");
    }
    LLVMValueRef d = LLVMTypeOf(v) == g->f64 ? v : LLVMBuildFPExt(b, v, g->f64, "");
    LLVMValueRef zero = LLVMConstReal(g->f64, 0.0);
    d = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, d, zero, ""), zero, d, "");
    LLVMValueRef bits = LLVMBuildBitCast(b, d, g->i64, "");
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, bits, lg_i64(g, 0), "");
    LLVMValueRef k = LLVMBuildSelect(b, neg, LLVMBuildNot(b, bits, ""), LLVMBuildOr(b, bits, top, ""), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, d, d, "");
    return LLVMBuildSelect(b, nan, LLVMConstAllOnes(g->i64), k, "");
}

static void call_sort(lg *g, LLVMValueRef *bufs, uint64_t len)
{
    LLVMTypeRef ps[5] = {g->ptr, g->ptr, g->i32, g->ptr, g->ptr};
    LLVMValueRef args[5] = {bufs[0], bufs[1], lg_i32(g, (int64_t)len), bufs[2], bufs[3]};
    lg_call_extern(g, "tj_cpu_sort_pairs", LLVMFunctionType(g->vd, ps, 5, 0), args, 5);
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
    LLVMValueRef bufs[4] = {lg_buffer(g, g->i64, len), lg_buffer(g, g->i32, len), lg_buffer(g, g->i64, len),
                            lg_buffer(g, g->i32, len)};
    LLVMValueRef base;
    lg_loop o = lg_lines_begin(g, l, &base);
    LLVMValueRef step = lg_i64(g, (int64_t)inner);
    lg_loop j = lg_loop_begin(g, lg_i64(g, 0), lg_i64(g, (int64_t)len), "fill");
    LLVMValueRef k = order_key(g, kt->dtype, lg_elem(g, keys, LLVMBuildNSWAdd(g->b, base, LLVMBuildNSWMul(g->b, j.i, step, ""), "")));
    if (in->flags & TJ_SORT_DESCENDING)
        k = LLVMBuildNot(g->b, k, "");
    LLVMBuildStore(g->b, k, LLVMBuildGEP2(g->b, g->i64, bufs[0], &j.i, 1, ""));
    LLVMBuildStore(g->b, LLVMBuildTrunc(g->b, j.i, g->i32, ""), LLVMBuildGEP2(g->b, g->i32, bufs[1], &j.i, 1, ""));
    lg_loop_end(g, &j);
    call_sort(g, bufs, len);
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
