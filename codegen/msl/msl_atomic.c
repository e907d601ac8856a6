/* Global atomics returning the old value (0 where the predicate is off).
 *
 * Native atomic_fetch_{add,max,min}_explicit where Metal 3 has them: add,
 * max and min on 32-bit integers, add on f32 (device atomic_float). The
 * rest is a compare-and-swap loop on a 32-bit word in a helper written
 * once per (op, dtype): f32 max/min (NaN-propagating, as the ops), and
 * 8/16-bit integers, f16 and bf16, which update their lanes of the aligned
 * word around them (that needs a 4-byte aligned tensor base; docs/metal.md).
 * Metal has no 64-bit atomic add, so 64-bit atomics are refused. */
#include "codegen/msl/msl.h"

static const char *op_name(tj_op op)
{
    return op == TJ_OP_ATOM_ADD ? "add" : op == TJ_OP_ATOM_MAX ? "max" : "min";
}

static tj_op combine_op(tj_op op)
{
    return op == TJ_OP_ATOM_ADD ? TJ_OP_ADD : op == TJ_OP_ATOM_MAX ? TJ_OP_MAX : TJ_OP_MIN;
}

static int native(tj_op op, tj_dtype dt)
{
    return dt == TJ_DT_I32 || dt == TJ_DT_U32 || (dt == TJ_DT_F32 && op == TJ_OP_ATOM_ADD);
}

/* The value of dt held in the low bits of uint expression `bits`, and back. */
static msl_str from_bits(tj_dtype dt, const char *bits)
{
    switch (dt) {
    case TJ_DT_I8: return ms_fmt("char(uchar(%s))", bits);
    case TJ_DT_I16: return ms_fmt("short(ushort(%s))", bits);
    case TJ_DT_F16: return ms_fmt("metal::as_type<half>(ushort(%s))", bits);
    case TJ_DT_F32: return ms_fmt("metal::as_type<float>(%s)", bits);
    default: return ms_fmt("%s(%s)", ms_type(dt), bits); /* u8, u16, bf16 */
    }
}

static msl_str to_bits(tj_dtype dt, const char *v)
{
    switch (dt) {
    case TJ_DT_I8: return ms_fmt("uint(uchar(%s))", v);
    case TJ_DT_I16: return ms_fmt("uint(ushort(%s))", v);
    case TJ_DT_F16: return ms_fmt("uint(metal::as_type<ushort>(%s))", v);
    case TJ_DT_F32: return ms_fmt("metal::as_type<uint>(%s)", v);
    default: return ms_fmt("uint(%s)", v);
    }
}

/* Writes helper tj_atom_OP_DT(word, shift, v) -> old value, once. The
 * word is the aligned 32-bit word holding the value at bit `shift` (0 for
 * 32-bit values). */
static void write_cas_helper(msl_emitter *e, tj_op op, tj_dtype dt)
{
    uint64_t bit = (uint64_t)1 << ((op - TJ_OP_ATOM_ADD) * TJ_DT_COUNT + dt);
    if (e->atomic_done & bit)
        return;
    e->atomic_done |= bit;
    const char *t = ms_type(dt), *name = tj_dtype_name(dt);
    unsigned mask = tj_dtype_size(dt) == 4 ? 0xFFFFFFFFu : (1u << (8 * tj_dtype_size(dt))) - 1;
    msl_str cur = from_bits(dt, ms_fmt("(old >> shift) & 0x%Xu", mask).s);
    msl_str next = ms_binary_expr(e, combine_op(op), dt, "cur", "v");
    tj_buf *b = &e->atomics;
    tj_buf_printf(b, "inline %s tj_atom_%s_%s(device metal::atomic_uint *word, uint shift, %s v)\n{\n", t, op_name(op), name,
                  t);
    tj_buf_printf(b, "    uint mask = 0x%Xu << shift;\n", mask);
    tj_buf_printf(b, "    uint old = metal::atomic_load_explicit(word, metal::memory_order_relaxed);\n");
    tj_buf_printf(b, "    for (;;) {\n        %s cur = %s;\n        %s nv = %s;\n", t, cur.s, t, next.s);
    tj_buf_printf(b, "        uint want = (old & ~mask) | (%s << shift);\n", to_bits(dt, "nv").s);
    tj_buf_printf(b, "        if (metal::atomic_compare_exchange_weak_explicit(word, &old, want, metal::memory_order_relaxed,\n"
                     "                                                         metal::memory_order_relaxed))\n"
                     "            return cur;\n    }\n}\n\n");
}

/* The atomic update expression for r's operands. */
static msl_str update(msl_emitter *e, tj_ref r, tj_dtype dt)
{
    const tj_inst *in = ms_inst(e, r);
    tj_ref addr = in->args[0];
    msl_str p = ms_device_ptr(e, addr), x = ms_arg(e, r, 1, 0);
    if (native(in->op, dt))
        return ms_fmt("metal::atomic_fetch_%s_explicit((device metal::atomic_%s *)%s, %s, metal::memory_order_relaxed)",
                      op_name(in->op), ms_type(dt), p.s, x.s);
    write_cas_helper(e, in->op, dt);
    if (tj_dtype_size(dt) == 4)
        return ms_fmt("tj_atom_%s_%s((device metal::atomic_uint *)%s, 0u, %s)", op_name(in->op), tj_dtype_name(dt),
                      p.s, x.s);
    msl_str off = ms_var(e, addr, 0);
    return ms_fmt("tj_atom_%s_%s((device metal::atomic_uint *)(b%d + (%s & ~3ul)), uint(%s & 3ul) * 8u, %s)",
                  op_name(in->op), tj_dtype_name(dt), e->addr[addr] - 1, off.s, off.s, x.s);
}

int ms_emit_atomic(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->op == TJ_OP_RED_ADD_SHARED) /* the lowering counts by ballots there */
        return ms_fail(e, r, "'red_add_shared' has no Metal form (counting_sort counts by ballots there)");
    tj_dtype dt;
    int p;
    if (ms_elem_type(e, in->type, &dt) != 1 || dt == TJ_DT_BOOL || in->nargs != 3)
        return ms_fail(e, r, "atomics update one number (a scalar, not bool)");
    if (tj_dtype_size(dt) == 8)
        return ms_fail(e, r, "64-bit atomics (%s) do not exist in Metal", tj_dtype_name(dt));
    if (!ms_is_address(e, in->args[0], &p))
        return ms_fail(e, r, "the address does not derive from a tensor_ptr (MSL needs the tensor it points into)");
    if (ms_operand_check(e, r, 1, 1, dt) || (in->args[2] && ms_operand_check(e, r, 2, 1, TJ_DT_BOOL)) ||
        ms_define(e, r, in->type))
        return -1;
    msl_str v = ms_var(e, r, 0), u = update(e, r, dt);
    if (!in->args[2]) {
        ms_line(e, "%s %s = %s;", ms_type(dt), v.s, u.s);
        return 0;
    }
    ms_line(e, "%s %s = %s;", ms_type(dt), v.s, ms_zero(dt).s);
    ms_line(e, "if (%s)", ms_var(e, in->args[2], 0).s);
    ms_line(e, "    %s = %s;", v.s, u.s);
    return 0;
}
