/* Thread and program indices, the barrier, and SIMD-group shuffles.
 *
 * Control flow is uniform across a program (docs/simt.md), so every
 * barrier and shuffle is reached by all threads, as Metal requires. A
 * SIMT warp is a Metal SIMD group of 32 lanes (the host checks the
 * pipeline's threadExecutionWidth). Shuffles move 16- and 32-bit values;
 * bool and 8-bit values are widened, 64-bit values go as a uint2. */
#include "codegen/msl/msl.h"

static int index_value(msl_emitter *e, tj_ref r, const char *var, int vector)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    if (in->imm < 0 || in->imm > 2 || (!vector && in->imm != 0))
        return ms_fail(e, r, "axis %lld out of range (%s)", (long long)in->imm, vector ? "0 to 2" : "only 0");
    if (ms_elem_type(e, in->type, &dt) != 1 || dt != TJ_DT_I32)
        return ms_fail(e, r, "the result must be i32");
    if (ms_define(e, r, in->type))
        return -1;
    if (vector)
        ms_line(e, "int v%u = int(%s.%c);", r, var, "xyz"[in->imm]);
    else
        ms_line(e, "int v%u = int(%s);", r, var);
    return 0;
}

int ms_emit_special(msl_emitter *e, tj_ref r)
{
    switch (ms_inst(e, r)->op) {
    case TJ_OP_TID: return index_value(e, r, "tj_tid", 0);
    case TJ_OP_PROGRAM_ID: return index_value(e, r, "tj_pid", 1);
    case TJ_OP_NUM_PROGRAMS: return index_value(e, r, "tj_npid", 1);
    default:
        e->defined[r] = 1;
        ms_line(e, "metal::%s_barrier(metal::mem_flags::mem_threadgroup);",
                ms_inst(e, r)->op == TJ_OP_WARP_BARRIER ? "simdgroup" : "threadgroup");
        return 0;
    }
}

/* The type a dtype is shuffled as, and the conversions there and back. */
static const char *carrier(tj_dtype dt)
{
    switch (dt) {
    case TJ_DT_BOOL: case TJ_DT_U8: return "uint";
    case TJ_DT_I8: return "int";
    case TJ_DT_I64: case TJ_DT_U64: return "uint2";
    default: return NULL; /* as itself */
    }
}

static msl_str shuffle_component(tj_dtype dt, const char *fn, const char *x, const char *lane)
{
    const char *c = carrier(dt);
    if (!c)
        return ms_fmt("metal::%s(%s, %s)", fn, x, lane);
    if (tj_dtype_size(dt) == 8)
        return ms_fmt("metal::as_type<%s>(metal::%s(metal::as_type<uint2>(%s), %s))", ms_type(dt), fn, x, lane);
    msl_str s = ms_fmt("metal::%s(%s(%s), %s)", fn, c, x, lane);
    return dt == TJ_DT_BOOL ? ms_fmt("%s != 0u", s.s) : ms_fmt("%s(%s)", ms_type(dt), s.s);
}

/* The lane operand: an immediate, or the low 5 bits of an integer value. */
static int lane_text(msl_emitter *e, tj_ref r, msl_str *lane)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->op != TJ_OP_SHFL_IDX) {
        if (in->imm < 0 || in->imm > 31)
            return ms_fail(e, r, "lane %s %lld out of range (0 to 31)", in->op == TJ_OP_SHFL_UP ? "delta" : "mask",
                           (long long)in->imm);
        *lane = ms_fmt("ushort(%lld)", (long long)in->imm);
        return 0;
    }
    tj_dtype ldt;
    if (ms_operand_check(e, r, 1, 1, TJ_DT_INVALID))
        return -1;
    ms_elem_type(e, ms_inst(e, in->args[1])->type, &ldt);
    if (!tj_dtype_is_int(ldt) || e->ncomp[in->args[1]] != 1)
        return ms_fail(e, r, "the source lane must be an integer scalar");
    *lane = ms_fmt("ushort(%s(%s) & 31u)", tj_dtype_size(ldt) == 8 ? "ulong" : "uint", ms_var(e, in->args[1], 0).s);
    return 0;
}

/* ballot: Apple's SIMD groups have 32 lanes, so the low half of the vote */
static int emit_ballot(msl_emitter *e, tj_ref r)
{
    if (ms_operand_check(e, r, 0, 1, TJ_DT_BOOL) || ms_define(e, r, ms_inst(e, r)->type))
        return -1;
    ms_line(e, "uint %s = uint(ulong(metal::simd_ballot(%s)));", ms_var(e, r, 0).s, ms_arg(e, r, 0, 0).s);
    return 0;
}

/* elect: the first active lane of the SIMD group */
static int emit_elect(msl_emitter *e, tj_ref r)
{
    if (ms_define(e, r, ms_inst(e, r)->type))
        return -1;
    ms_line(e, "bool %s = metal::simd_is_first();", ms_var(e, r, 0).s);
    return 0;
}

int ms_emit_shuffle(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->op == TJ_OP_BALLOT)
        return emit_ballot(e, r);
    if (in->op == TJ_OP_ELECT)
        return emit_elect(e, r);
    tj_dtype dt;
    int w = ms_elem_type(e, in->type, &dt);
    if (w <= 0 || ms_operand_check(e, r, 0, (uint32_t)w, dt))
        return w <= 0 ? ms_fail(e, r, "shuffles move scalars or vectors") : -1;
    if (e->ncomp[in->args[0]] != (uint32_t)w)
        return ms_fail(e, r, "the operand and the result differ in width");
    msl_str lane;
    if (lane_text(e, r, &lane) || ms_define(e, r, in->type))
        return -1;
    const char *fn = in->op == TJ_OP_SHFL_XOR ? "simd_shuffle_xor" : in->op == TJ_OP_SHFL_UP ? "simd_shuffle_up"
                                                                                               : "simd_shuffle";
    for (int i = 0; i < w; i++)
        ms_line(e, "%s %s = %s;", ms_type(dt), ms_var(e, r, (uint32_t)i).s,
                shuffle_component(dt, fn, ms_arg(e, r, 0, (uint32_t)i).s, lane.s).s);
    return 0;
}
