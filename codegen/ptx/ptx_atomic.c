/* Global atomics returning the old value (0 where the predicate is off).
 *
 * Native atom where PTX has it: add on 32/64-bit integers, f32, f64, f16
 * (and bf16 on sm_90); max/min on 32/64-bit integers. Everything else is a
 * compare-and-swap loop: float max/min (NaN-propagating, as the ops), bf16
 * add on sm_80, and 8/16-bit integers, which update their byte lanes of
 * the aligned 32-bit word around them. */
#include <stdio.h>

#include "codegen/ptx/ptx.h"

typedef struct atomic_op {
    tj_op op;
    tj_dtype dt;
    ptx_reg addr, val, old;
} atomic_op;

static const char *op_name(tj_op op)
{
    return op == TJ_OP_ATOM_ADD ? "add" : op == TJ_OP_ATOM_MAX ? "max" : "min";
}

static int native(const ptx_emitter *e, const atomic_op *a)
{
    switch (a->dt) {
    case TJ_DT_I32: case TJ_DT_U32: case TJ_DT_I64: case TJ_DT_U64: return 1;
    case TJ_DT_F32: case TJ_DT_F64: case TJ_DT_F16: return a->op == TJ_OP_ATOM_ADD;
    case TJ_DT_BF16: return a->op == TJ_OP_ATOM_ADD && e->sm >= 90;
    default: return 0;
    }
}

static const char *native_type(const atomic_op *a)
{
    switch (a->dt) {
    case TJ_DT_I32: return "s32";
    case TJ_DT_U32: return "u32";
    case TJ_DT_I64: return a->op == TJ_OP_ATOM_ADD ? "u64" : "s64";
    case TJ_DT_U64: return "u64";
    case TJ_DT_F32: return "f32";
    case TJ_DT_F64: return "f64";
    case TJ_DT_F16: return "noftz.f16";
    default: return "noftz.bf16";
    }
}

/* new = op(cur, val) in the value's dtype; cur and new in register form. */
static void combine(ptx_emitter *e, const atomic_op *a, ptx_reg nw, ptx_reg cur)
{
    if (!tj_dtype_is_float(a->dt)) {
        const char *it = px_int_type(a->dt);
        px_ins(e, "%s.%s %s, %s, %s", op_name(a->op), it, RN(nw), RN(cur), RN(a->val));
        px_wrap_small(e, a->dt, nw);
        return;
    }
    ptx_reg x = px_widen(e, a->dt, cur), y = px_widen(e, a->dt, a->val), cd = px_compute_dst(e, a->dt, nw);
    const char *ft = px_cls_type(cd.cls);
    if (a->op == TJ_OP_ATOM_ADD) {
        px_ins(e, "add.rn.%s %s, %s, %s", ft, RN(cd), RN(x), RN(y));
    } else if (cd.cls == PX_F32) {
        px_ins(e, "%s.NaN.f32 %s, %s, %s", op_name(a->op), RN(cd), RN(x), RN(y));
    } else {
        ptx_reg nan = px_tmp(e, PX_PRED);
        px_ins(e, "%s.f64 %s, %s, %s", op_name(a->op), RN(cd), RN(x), RN(y));
        px_ins(e, "setp.nan.f64 %s, %s, %s", RN(nan), RN(x), RN(y));
        px_ins(e, "selp.f64 %s, 0d7FF8000000000000, %s, %s", RN(cd), RN(cd), RN(nan));
    }
    px_narrow(e, a->dt, nw, cd);
}

/* A CAS loop on the value's own width (16, 32 or 64 bits). The loop
 * compares bit patterns, so it ends even when the value is NaN. */
static void cas_loop(ptx_emitter *e, const atomic_op *a)
{
    ptx_cls bits_cls = a->old.cls == PX_F32 ? PX_B32 : a->old.cls == PX_F64 ? PX_B64 : a->old.cls;
    const char *bt = px_cls_type(bits_cls);
    ptx_reg expect = px_tmp(e, bits_cls), seen = px_tmp(e, bits_cls), want = px_tmp(e, bits_cls);
    ptx_reg nw = px_tmp(e, a->old.cls), again = px_tmp(e, PX_PRED);
    px_ins(e, "ld.global.%s %s, [%s]", bt, RN(expect), RN(a->addr));
    uint32_t top = px_new_label(e);
    px_label(e, top);
    px_ins(e, "mov.%s %s, %s", bt, RN(a->old), RN(expect));
    combine(e, a, nw, a->old);
    px_ins(e, "mov.%s %s, %s", bt, RN(want), RN(nw));
    px_ins(e, "atom.global.cas.%s %s, [%s], %s, %s", bt, RN(seen), RN(a->addr), RN(expect), RN(want));
    px_ins(e, "setp.ne.%s %s, %s, %s", bt, RN(again), RN(seen), RN(expect));
    px_ins(e, "mov.%s %s, %s", bt, RN(expect), RN(seen));
    px_ins(e, "@%s bra $L%u", RN(again), top);
}

/* 8- and 16-bit integers: a CAS loop on the aligned word holding them. */
static void cas_loop_subword(ptx_emitter *e, const atomic_op *a)
{
    unsigned len = 8u * (unsigned)tj_dtype_size(a->dt);
    ptx_reg word = px_tmp(e, PX_B64), low = px_tmp(e, PX_B32), pos = px_tmp(e, PX_B32);
    ptx_reg expect = px_tmp(e, PX_B32), seen = px_tmp(e, PX_B32), want = px_tmp(e, PX_B32);
    ptx_reg nw = px_tmp(e, PX_B32), again = px_tmp(e, PX_PRED);
    px_ins(e, "and.b64 %s, %s, -4", RN(word), RN(a->addr));
    px_ins(e, "cvt.u32.u64 %s, %s", RN(low), RN(a->addr));
    px_ins(e, "and.b32 %s, %s, 3", RN(pos), RN(low));
    px_ins(e, "shl.b32 %s, %s, 3", RN(pos), RN(pos));
    px_ins(e, "ld.global.b32 %s, [%s]", RN(expect), RN(word));
    uint32_t top = px_new_label(e);
    px_label(e, top);
    px_ins(e, "bfe.%s %s, %s, %s, %u", tj_dtype_is_signed(a->dt) ? "s32" : "u32", RN(a->old), RN(expect), RN(pos),
           len);
    combine(e, a, nw, a->old);
    px_ins(e, "bfi.b32 %s, %s, %s, %s, %u", RN(want), RN(nw), RN(expect), RN(pos), len);
    px_ins(e, "atom.global.cas.b32 %s, [%s], %s, %s", RN(seen), RN(word), RN(expect), RN(want));
    px_ins(e, "setp.ne.b32 %s, %s, %s", RN(again), RN(seen), RN(expect));
    px_ins(e, "mov.b32 %s, %s", RN(expect), RN(seen));
    px_ins(e, "@%s bra $L%u", RN(again), top);
}

/* red_add_shared: red.shared.add.u32 at the program's shared base + addr */
static int emit_red_add_shared(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->nargs != 2 || !in->args[0] || !in->args[1])
        return px_fail(e, r, "red_add_shared takes an address and an addend");
    if (px_operand_check(e, r, 0, 1, TJ_DT_U32) || px_operand_check(e, r, 1, 1, TJ_DT_U32))
        return -1;
    e->defined[r] = 1;
    ptx_reg at = px_tmp(e, PX_B32);
    px_ins(e, "add.u32 %s, %s, %s", RN(at), RN(e->smem_base), RN(px_val(e, in->args[0], 0)));
    px_ins(e, "red.shared.add.u32 [%s], %s", RN(at), RN(px_val(e, in->args[1], 0)));
    return 0;
}

int px_emit_atomic(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->op == TJ_OP_RED_ADD_SHARED)
        return emit_red_add_shared(e, r);
    atomic_op a = {.op = in->op};
    if (px_elem_type(e, in->type, &a.dt) != 1 || a.dt == TJ_DT_BOOL || in->nargs != 3)
        return px_fail(e, r, "atomics update one number (a scalar, not bool)");
    if (px_operand_check(e, r, 0, 1, TJ_DT_U64) || px_operand_check(e, r, 1, 1, a.dt) ||
        (in->args[2] && px_operand_check(e, r, 2, 1, TJ_DT_BOOL)) || px_define(e, r, in->type))
        return -1;
    a.addr = px_val(e, in->args[0], 0);
    a.val = px_val(e, in->args[1], 0);
    a.old = px_val(e, r, 0);
    ptx_reg pred = in->args[2] ? px_val(e, in->args[2], 0) : (ptx_reg){PX_PRED, 0};
    if (in->args[2])
        px_zero(e, a.old);
    if (native(e, &a)) {
        char g[40] = "";
        if (in->args[2])
            snprintf(g, sizeof g, "@%s ", RN(pred));
        px_ins(e, "%satom.global.%s.%s %s, [%s], %s", g, op_name(a.op), native_type(&a), RN(a.old), RN(a.addr),
               RN(a.val));
        return 0;
    }
    uint32_t skip = px_new_label(e);
    if (in->args[2])
        px_ins(e, "@!%s bra $L%u", RN(pred), skip);
    if (px_is_small_int(a.dt))
        cas_loop_subword(e, &a);
    else
        cas_loop(e, &a);
    px_label(e, skip);
    return 0;
}
