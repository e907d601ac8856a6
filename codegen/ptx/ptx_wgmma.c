/* Warpgroup tensor cores (sm_90a): wgmma_desc, wgmma, wgmma_fence /
 * commit / wait, fence_proxy_async and the named barriers of the
 * warpgroups' turns (docs/simt.md, "wgmma").
 *
 * wgmma.mma_async's d operand is read and written in place while the
 * product runs asynchronously, and ptxas serializes the pipeline (or the
 * result is undefined) when other instructions touch those registers
 * between the fence and the wait. So the result tuple of a wgmma takes
 * the very registers of its c operands (each a c fragment: 4 .b32
 * registers, d[4 j + i] = fragment j, slot i, as the m64nNk16 D fragment
 * layout of the PTX ISA is the c layout of mma.m16n8 per warp), and its
 * projections alias the tuple: a chain of wgmmas over k steps runs on one
 * set of registers. A c operand used elsewhere too is copied first, and a
 * wgmma.fence follows the copy. A loop that carries the fragments (its
 * block arguments are the chain's registers, the yield copies nothing)
 * may leave with a group in flight: its exit waits for it before the
 * loop's results are copied out (ptx_ctrl.c). An a operand that is a
 * fragment (16-bit: 4 .b32 registers, the a fragment of mma.m16n8k16 per
 * warp) takes the register form, `{a0, a1, a2, a3}` and no transpose of a;
 * those registers too are read until the group's wait. */
#include <stdio.h>

#include "codegen/ptx/ptx.h"

enum { C_PARTS = 4, A_PARTS = 4, MAX_FRAGMENTS = 32 };

int px_uses_wgmma(const tj_kernel *k)
{
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && (k->insts[r].op == TJ_OP_WGMMA || k->insts[r].op == TJ_OP_TMA_LOAD ||
                                  k->insts[r].op == TJ_OP_TMA_STORE))
            return 1;
    return 0;
}

int px_block_has_wgmma(const tj_kernel *k, tj_block_id b)
{
    const tj_block *blk = &k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts; i++)
        if (k->insts[blk->insts[i]].op == TJ_OP_WGMMA)
            return 1;
    return 0;
}

/* desc = fields | ((tj_smem + addr) >> 4 & 0x3fff) */
static int emit_desc(ptx_emitter *e, tj_ref r)
{
    if (px_scalar_operand(e, r, 0, TJ_DT_U32) || px_scalar_operand(e, r, 1, TJ_DT_U64) ||
        px_define(e, r, px_inst(e, r)->type))
        return -1;
    ptx_reg t = px_tmp(e, PX_B32), d = px_val(e, r, 0);
    px_ins(e, "add.u32 %s, %s, %s", RN(t), RN(e->smem_base), RN(px_val(e, px_inst(e, r)->args[0], 0)));
    px_ins(e, "bfe.u32 %s, %s, 4, 14", RN(t), RN(t));
    px_ins(e, "cvt.u64.u32 %s, %s", RN(d), RN(t));
    px_ins(e, "or.b64 %s, %s, %s", RN(d), RN(d), RN(px_val(e, px_inst(e, r)->args[1], 0)));
    return 0;
}

/* The registers of c operand `a`: its own when this wgmma is its only use,
 * else fresh copies (*copied set). */
static void c_registers(ptx_emitter *e, tj_ref r, uint32_t a, ptx_reg *out, int *copied)
{
    tj_ref c = px_inst(e, r)->args[a];
    int own = tj_count_uses(e->k, c) == 1;
    for (uint32_t i = 0; i < C_PARTS; i++) {
        out[i] = own ? px_val(e, c, i) : px_tmp(e, PX_B32);
        if (!own)
            px_mov(e, out[i], px_val(e, c, i));
    }
    *copied |= !own;
}

static int emit_wgmma(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt = (tj_dtype)in->imm;
    int zero = (in->flags & TJ_WGMMA_ZERO) != 0;
    uint32_t nc = in->nargs >= 3u + zero ? in->nargs - 3 - zero : 0;
    tj_type ct = tj_type_fragment(e->c, TJ_MMA_C, TJ_DT_F32);
    if (!e->wgmma)
        return px_fail(e, r, "wgmma needs sm_90a");
    if ((dt != TJ_DT_BF16 && dt != TJ_DT_F16 && dt != TJ_DT_F32) || nc < 1 || nc > MAX_FRAGMENTS ||
        (dt == TJ_DT_F32 && (in->flags & (TJ_WGMMA_A_MN | TJ_WGMMA_B_MN))))
        return px_fail(e, r, "wgmma takes bf16, f16 or K-major f32 inputs and 1 to 32 c fragments");
    /* a trailing warp short of a warpgroup (a producer warp, lower/ring.c)
     * must be predicated off: the lowering's consumers test */
    if (e->k->nthreads % 128 && (e->k->nthreads % 128 != 32 || !in->args[2]))
        return px_fail(e, r, "wgmma needs whole warpgroups (128 threads), but nthreads is %u", e->k->nthreads);
    int a_regs = tj_type_is_fragment(e->c, px_inst(e, in->args[0])->type);
    if ((!a_regs && px_scalar_operand(e, r, 0, TJ_DT_U64)) || px_scalar_operand(e, r, 1, TJ_DT_U64) ||
        (in->args[2] && px_scalar_operand(e, r, 2, TJ_DT_BOOL)) || (zero && px_scalar_operand(e, r, 3 + nc, TJ_DT_BOOL)))
        return -1;
    if (a_regs && (dt == TJ_DT_F32 || e->ncomp[in->args[0]] != A_PARTS))
        return px_fail(e, r, "a from registers takes a 16-bit a fragment");
    int copied = 0;
    uint32_t start = e->ncomps;
    ptx_reg regs[C_PARTS];
    for (uint32_t j = 0; j < nc; j++) {
        if (px_inst(e, in->args[3 + j])->type != ct)
            return px_fail(e, r, "operand %u is not a c fragment", 3 + j);
        c_registers(e, r, 3 + j, regs, &copied);
        for (uint32_t i = 0; i < C_PARTS; i++) {
            e->comps = tj_grow(e->c, e->comps, &e->compcap, e->ncomps + 1, sizeof *e->comps);
            e->comps[e->ncomps++] = regs[i];
        }
    }
    e->first[r] = start;
    e->ncomp[r] = e->ncomps - start;
    e->defined[r] = 1;
    if (copied) /* registers written since the fence */
        px_ins(e, "wgmma.fence.sync.aligned");
    tj_buf d = {0};
    for (uint32_t i = 0; i < nc * C_PARTS; i++)
        tj_buf_printf(&d, "%s%s", i ? ", " : "", RN(px_val(e, r, i)));
    ptx_reg scale = px_tmp(e, PX_PRED); /* scale-d: C added, except where the zero operand holds */
    if (zero) {
        px_ins(e, "not.pred %s, %s", RN(scale), RN(px_val(e, in->args[3 + nc], 0)));
    } else {
        ptx_reg one = px_tmp(e, PX_B32);
        px_ins(e, "mov.b32 %s, 1", RN(one));
        px_ins(e, "setp.ne.b32 %s, %s, 0", RN(scale), RN(one));
    }
    ptx_reg a = px_val(e, in->args[0], 0), b = px_val(e, in->args[1], 0);
    if (a_regs) { /* the register form: {a0..a3} (bf16x2 / f16x2 each), no transpose of a */
        tj_buf ar = {0};
        for (uint32_t i = 0; i < A_PARTS; i++)
            tj_buf_printf(&ar, "%s%s", i ? ", " : "", RN(px_val(e, in->args[0], i)));
        px_ins(e, "wgmma.mma_async.sync.aligned.m64n%uk16.f32.%s.%s {%s}, {%s}, %s, %s, 1, 1, %d", nc * 8,
               tj_dtype_name(dt), tj_dtype_name(dt), d.data, ar.data, RN(b), RN(scale),
               in->flags & TJ_WGMMA_B_MN ? 1 : 0);
        tj_buf_free(&ar);
    } else if (dt == TJ_DT_F32)
        px_ins(e, "wgmma.mma_async.sync.aligned.m64n%uk8.f32.tf32.tf32 {%s}, %s, %s, %s, 1, 1", nc * 8,
               d.data, RN(a), RN(b), RN(scale));
    else
        px_ins(e, "wgmma.mma_async.sync.aligned.m64n%uk16.f32.%s.%s {%s}, %s, %s, %s, 1, 1, %d, %d", nc * 8,
               tj_dtype_name(dt), tj_dtype_name(dt), d.data, RN(a), RN(b), RN(scale),
               in->flags & TJ_WGMMA_A_MN ? 1 : 0, in->flags & TJ_WGMMA_B_MN ? 1 : 0);
    tj_buf_free(&d);
    return 0;
}

/* bar_sync / bar_arrive: bar.sync / bar.arrive id, count, under the
 * predicate where there is one (uniform over each warp: the lowering's
 * tests of the warpgroup and the iteration). */
static int emit_named_barrier(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    char guard[32] = "";
    if (in->nargs != 3 || !in->args[0] || !in->args[1])
        return px_fail(e, r, "%s takes an id, a count and a predicate", in->op == TJ_OP_BAR_SYNC ? "bar_sync" : "bar_arrive");
    if (in->args[2])
        snprintf(guard, sizeof guard, "@%s ", RN(px_val(e, in->args[2], 0)));
    e->defined[r] = 1;
    px_ins(e, "%sbar.%s %s, %s", guard, in->op == TJ_OP_BAR_SYNC ? "sync" : "arrive", RN(px_val(e, in->args[0], 0)),
           RN(px_val(e, in->args[1], 0)));
    return 0;
}

/* wgmma_fence, wgmma_commit, wgmma_wait {pending} */
static int emit_group_sync(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->nargs != 1 || (in->args[0] && px_scalar_operand(e, r, 0, TJ_DT_BOOL)))
        return in->nargs != 1 ? px_fail(e, r, "'%s' takes a predicate", tj_op_get(in->op)->name) : -1;
    e->defined[r] = 1;
    switch (in->op) {
    case TJ_OP_WGMMA_FENCE: px_ins(e, "wgmma.fence.sync.aligned"); return 0;
    case TJ_OP_WGMMA_COMMIT: px_ins(e, "wgmma.commit_group.sync.aligned"); return 0;
    default: px_ins(e, "wgmma.wait_group.sync.aligned %lld", (long long)in->imm); return 0;
    }
}

/* The family's predicated runs (a producer warp's skip of the products)
 * are branched around (ptx_runs.c). */
int px_emit_wgmma(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (in->op == TJ_OP_WGMMA_DESC)
        return emit_desc(e, r);
    if (in->op == TJ_OP_WGMMA)
        return px_emit_in_run(e, r, emit_wgmma);
    if (in->op == TJ_OP_FENCE_PROXY_ASYNC ? e->sm < 90 : !e->wgmma)
        return px_fail(e, r, "'%s' needs sm_90%s", tj_op_get(in->op)->name,
                       in->op == TJ_OP_FENCE_PROXY_ASYNC ? " or later" : "a");
    if (in->op == TJ_OP_BAR_SYNC || in->op == TJ_OP_BAR_ARRIVE)
        return emit_named_barrier(e, r);
    if (in->op == TJ_OP_FENCE_PROXY_ASYNC) {
        e->defined[r] = 1;
        px_ins(e, "fence.proxy.async.shared::cta");
        return 0;
    }
    return px_emit_in_run(e, r, emit_group_sync);
}
