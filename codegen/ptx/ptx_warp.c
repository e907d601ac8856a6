/* Thread and program indices, the barrier, warp shuffles and ballots. Shuffles run
 * in full warps (control flow is uniform), on 32-bit values: 64-bit values
 * go as two halves, 16-bit and bool values widened to 32 bits. */
#include <stdio.h>

#include "codegen/ptx/ptx.h"

static int index_reg(ptx_emitter *e, tj_ref r, const char *sreg)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    if (in->imm < 0 || in->imm > 2)
        return px_fail(e, r, "axis %lld out of range (0 to 2)", (long long)in->imm);
    if (px_elem_type(e, in->type, &dt) != 1 || dt != TJ_DT_I32)
        return px_fail(e, r, "the result must be i32");
    if (px_define(e, r, in->type))
        return -1;
    px_ins(e, "mov.u32 %s, %%%s.%c", RN(px_val(e, r, 0)), sreg, "xyz"[in->imm]);
    return 0;
}

int px_emit_special(ptx_emitter *e, tj_ref r)
{
    switch (px_inst(e, r)->op) {
    case TJ_OP_TID: return index_reg(e, r, "tid");
    case TJ_OP_PROGRAM_ID: return index_reg(e, r, "ctaid");
    case TJ_OP_NUM_PROGRAMS: return index_reg(e, r, "nctaid");
    default:
        e->defined[r] = 1;
        px_ins(e, px_inst(e, r)->op == TJ_OP_WARP_BARRIER ? "bar.warp.sync 0xFFFFFFFF" : "bar.sync 0");
        return 0;
    }
}

/* One 32-bit shuffle: mode bfly/up/idx, the lane operand b as text. */
static void shfl32(ptx_emitter *e, const char *mode, ptx_reg d, ptx_reg v, const char *b)
{
    /* c: the clamp (31) for bfly and idx; 0 for up, so lanes below the
     * delta keep their own value. */
    px_ins(e, "shfl.sync.%s.b32 %s, %s, %s, %s, 0xFFFFFFFF", mode, RN(d), RN(v), b, mode[0] == 'u' ? "0" : "31");
}

static void shuffle_component(ptx_emitter *e, const char *mode, ptx_reg d, ptx_reg v, const char *b)
{
    switch (v.cls) {
    case PX_B32: case PX_F32:
        shfl32(e, mode, d, v, b);
        break;
    case PX_B64: case PX_F64: {
        ptx_reg lo = px_tmp(e, PX_B32), hi = px_tmp(e, PX_B32);
        px_ins(e, "mov.b64 {%s, %s}, %s", RN(lo), RN(hi), RN(v));
        shfl32(e, mode, lo, lo, b);
        shfl32(e, mode, hi, hi, b);
        px_ins(e, "mov.b64 %s, {%s, %s}", RN(d), RN(lo), RN(hi));
        break;
    }
    case PX_B16: {
        ptx_reg t = px_tmp(e, PX_B32);
        px_ins(e, "cvt.u32.u16 %s, %s", RN(t), RN(v));
        shfl32(e, mode, t, t, b);
        px_ins(e, "cvt.u16.u32 %s, %s", RN(d), RN(t));
        break;
    }
    default: { /* bool */
        ptx_reg t = px_tmp(e, PX_B32);
        px_ins(e, "selp.u32 %s, 1, 0, %s", RN(t), RN(v));
        shfl32(e, mode, t, t, b);
        px_ins(e, "setp.ne.u32 %s, %s, 0", RN(d), RN(t));
        break;
    }
    }
}

/* ballot: the predicate of every lane of the warp, one bit each */
static int emit_ballot(ptx_emitter *e, tj_ref r)
{
    if (px_operand_check(e, r, 0, 1, TJ_DT_BOOL) || px_define(e, r, px_inst(e, r)->type))
        return -1;
    px_ins(e, "vote.sync.ballot.b32 %s, %s, 0xFFFFFFFF", RN(px_val(e, r, 0)), RN(px_operand(e, r, 0, 0)));
    return 0;
}

/* elect: elect.sync over the full warp (PTX ISA 8.0: sm_90a, sm_100 and
 * later; plain sm_90 is emitted as 7.8), its lane id unused */
static int emit_elect(ptx_emitter *e, tj_ref r)
{
    if (e->sm < 90 || (e->sm == 90 && !e->wgmma))
        return px_fail(e, r, "'elect' needs sm_90a or sm_100 and later");
    if (px_define(e, r, px_inst(e, r)->type))
        return -1;
    ptx_reg lane = px_tmp(e, PX_B32);
    px_ins(e, "elect.sync %s|%s, 0xFFFFFFFF", RN(lane), RN(px_val(e, r, 0)));
    return 0;
}

int px_emit_shuffle(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->op == TJ_OP_BALLOT)
        return emit_ballot(e, r);
    if (in->op == TJ_OP_ELECT)
        return emit_elect(e, r);
    tj_dtype dt;
    int w = px_elem_type(e, in->type, &dt);
    if (w <= 0 || px_operand_check(e, r, 0, (uint32_t)w, dt))
        return w <= 0 ? px_fail(e, r, "shuffles move scalars or vectors") : -1;
    if (in->nargs > 0 && e->ncomp[in->args[0]] != (uint32_t)w)
        return px_fail(e, r, "the operand and the result differ in width");
    char lane[24];
    const char *mode;
    if (in->op == TJ_OP_SHFL_IDX) {
        tj_dtype ldt;
        if (px_operand_check(e, r, 1, 1, TJ_DT_INVALID))
            return -1;
        px_elem_type(e, px_inst(e, in->args[1])->type, &ldt);
        if (!tj_dtype_is_int(ldt) || e->ncomp[in->args[1]] != 1)
            return px_fail(e, r, "the source lane must be an integer scalar");
        ptx_reg l = px_val(e, in->args[1], 0);
        if (l.cls == PX_B64) { /* only the low 5 bits count */
            ptx_reg t = px_tmp(e, PX_B32);
            px_ins(e, "cvt.u32.u64 %s, %s", RN(t), RN(l));
            l = t;
        }
        snprintf(lane, sizeof lane, "%s", RN(l));
        mode = "idx";
    } else {
        if (in->imm < 0 || in->imm > 31)
            return px_fail(e, r, "lane %s %lld out of range (0 to 31)", in->op == TJ_OP_SHFL_UP ? "delta" : "mask",
                           (long long)in->imm);
        snprintf(lane, sizeof lane, "%lld", (long long)in->imm);
        mode = in->op == TJ_OP_SHFL_UP ? "up" : "bfly";
    }
    if (px_define(e, r, in->type))
        return -1;
    for (int i = 0; i < w; i++)
        shuffle_component(e, mode, px_val(e, r, (uint32_t)i), px_operand(e, r, 0, (uint32_t)i), lane);
    return 0;
}
