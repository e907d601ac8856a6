/* mbarriers and TMA copies (sm_90a; docs/simt.md, "TMA"): mbar_init,
 * mbar_expect_tx, mbar_arrive, mbar_wait, mbar_inval, tma_load, and the
 * stores tma_store, tma_store_commit and tma_store_wait (bulk groups:
 * cp.async.bulk.commit_group, cp.async.bulk.wait_group.read).
 *
 * The tensor maps a kernel's tma_load instructions read (tj_tensor_maps)
 * are kernel parameters after the ABI's own, `.param .align 64 .b8
 * tmap<j>[128]`, encoded by the runtime at launch (runtime/tensor_map.c);
 * a copy names its map by the generic address of that parameter (a box
 * of two blocks, `pair`, is a 3-D copy at column, 0, the row's block).
 * Shared addresses are tj_smem + offset, as for cp_async. An mbar_wait is a
 * try_wait.parity loop (the instruction itself may time out and return
 * false before the phase completes).
 *
 * A run of mbar_wait, mbar_expect_tx and tma_load instructions of one
 * predicate (the issuing thread's, lower/tma.c: its wait for the slot's
 * release, then the tile), or of a tile's stores, their commit and wait
 * (lower/tma_store.c), goes inside one branch on it (ptx_runs.c). */
#include <stdio.h>
#include <string.h>

#include "codegen/ptx/ptx.h"

void px_write_tensor_map_params(ptx_emitter *e, tj_buf *out)
{
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS];
    int n = tj_tensor_maps(e->k, maps);
    for (int j = 0; j < n; j++) {
        char pair[32] = "";
        if (maps[j].pair)
            snprintf(pair, sizeof pair, ", pairs %u blocks apart", maps[j].pair);
        tj_buf_printf(out, "%s\t.param .align 64 .b8 tmap%d[128] /* p%u: %u x %u, swizzle %u%s */\n",
                      j || e->k->nparams ? "," : "", j, maps[j].param, maps[j].rows, maps[j].cols,
                      maps[j].swizzle, pair);
    }
}

typedef struct px_guard {
    char s[32];
} px_guard;

/* "@%p " for a predicate operand, "" when it is absent. */
static px_guard guard(const ptx_emitter *e, tj_ref pred)
{
    px_guard g = {{0}};
    if (pred)
        snprintf(g.s, sizeof g.s, "@%s ", RN(px_val(e, pred, 0)));
    return g;
}

/* The absolute shared address of operand a (u32). */
static ptx_reg shared_addr(ptx_emitter *e, tj_ref r, uint32_t a)
{
    ptx_reg d = px_tmp(e, PX_B32);
    px_ins(e, "add.u32 %s, %s, %s", RN(d), RN(e->smem_base), RN(px_val(e, px_inst(e, r)->args[a], 0)));
    return d;
}

static int emit_wait(ptx_emitter *e, tj_ref r)
{
    ptx_reg bar = shared_addr(e, r, 0), done = px_tmp(e, PX_PRED);
    uint32_t again = px_new_label(e);
    px_label(e, again);
    px_ins(e, "mbarrier.try_wait.parity.shared::cta.b64 %s, [%s], %s", RN(done), RN(bar),
           RN(px_val(e, px_inst(e, r)->args[1], 0)));
    px_ins(e, "@!%s bra $L%u", RN(done), again);
    return 0;
}

static int emit_expect_tx(ptx_emitter *e, tj_ref r)
{
    px_ins(e, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%s], %s", RN(shared_addr(e, r, 0)),
           RN(px_val(e, px_inst(e, r)->args[1], 0)));
    return 0;
}

/* The generic address of the map operand 0 of tma_load or tma_store r
 * names (its kernel parameter tmap<j>), in *map; its description in *d. */
static int map_address(ptx_emitter *e, tj_ref r, tj_tensor_map_desc *d, ptx_reg *map)
{
    tj_tensor_map_desc maps[TJ_MAX_TENSOR_MAPS];
    int n = tj_tensor_maps(e->k, maps), j = 0;
    if (n < 0)
        return px_fail(e, r, "the kernel names more than %d tensor maps", TJ_MAX_TENSOR_MAPS);
    if (tj_tensor_map_desc_of(e->k, r, d))
        return px_fail(e, r, "'%s' of something that is not a tensor parameter", tj_op_get(px_inst(e, r)->op)->name);
    while (j < n && memcmp(&maps[j], d, sizeof *d))
        j++;
    *map = px_tmp(e, PX_B64);
    px_ins(e, "mov.u64 %s, tmap%d", RN(*map), j);
    px_ins(e, "cvta.param.u64 %s, %s", RN(*map), RN(*map));
    return 0;
}

static int emit_tma_load(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_tensor_map_desc d;
    ptx_reg dst = shared_addr(e, r, 1), bar = shared_addr(e, r, 2), map;
    if (map_address(e, r, &d, &map))
        return -1;
    if (!d.pair) {
        px_ins(e, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s}], "
               "[%s]", RN(dst), RN(map), RN(px_val(e, in->args[3], 0)), RN(px_val(e, in->args[4], 0)), RN(bar));
        return 0;
    }
    /* 3-D: (column, row in its block, block); the row starts a block */
    ptx_reg zero = px_tmp(e, PX_B32), block = px_tmp(e, PX_B32);
    int shift = 0;
    while ((1u << shift) < d.rows)
        shift++;
    px_ins(e, "mov.b32 %s, 0", RN(zero));
    px_ins(e, "shr.s32 %s, %s, %d", RN(block), RN(px_val(e, in->args[4], 0)), shift);
    px_ins(e, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], "
           "[%s]", RN(dst), RN(map), RN(px_val(e, in->args[3], 0)), RN(zero), RN(block), RN(bar));
    return 0;
}

/* A store's box: issued into the thread's open bulk group, clipped to the
 * tensor by the copy engine. */
static int emit_tma_store(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_tensor_map_desc d;
    ptx_reg src = shared_addr(e, r, 1), map;
    if (map_address(e, r, &d, &map))
        return -1;
    px_ins(e, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%s, {%s, %s}], [%s]", RN(map),
           RN(px_val(e, in->args[2], 0)), RN(px_val(e, in->args[3], 0)), RN(src));
    return 0;
}

static int emit_store_commit(ptx_emitter *e, tj_ref r)
{
    (void)r;
    px_ins(e, "cp.async.bulk.commit_group");
    return 0;
}

static int emit_store_wait(ptx_emitter *e, tj_ref r)
{
    px_ins(e, "cp.async.bulk.wait_group.read %lld", (long long)px_inst(e, r)->imm);
    return 0;
}

/* The operands' dtypes (the verifier's rules; a predicate may be absent). */
static int check_operands(ptx_emitter *e, tj_ref r)
{
    static const tj_dtype barrier[] = {TJ_DT_U32, TJ_DT_U32, TJ_DT_BOOL};
    static const tj_dtype inval[] = {TJ_DT_U32, TJ_DT_BOOL}; /* and mbar_arrive */
    static const tj_dtype copy[] = {TJ_DT_INVALID, TJ_DT_U32, TJ_DT_U32, TJ_DT_I32, TJ_DT_I32, TJ_DT_BOOL};
    static const tj_dtype store[] = {TJ_DT_INVALID, TJ_DT_U32, TJ_DT_I32, TJ_DT_I32, TJ_DT_BOOL};
    static const tj_dtype group[] = {TJ_DT_BOOL}; /* tma_store_commit, tma_store_wait */
    const tj_inst *in = px_inst(e, r);
    int uncounted = in->op == TJ_OP_MBAR_INVAL || in->op == TJ_OP_MBAR_ARRIVE;
    int grouped = in->op == TJ_OP_TMA_STORE_COMMIT || in->op == TJ_OP_TMA_STORE_WAIT;
    const tj_dtype *want = in->op == TJ_OP_TMA_LOAD    ? copy
                           : in->op == TJ_OP_TMA_STORE ? store
                           : grouped                   ? group
                           : uncounted                 ? inval
                                                       : barrier;
    uint32_t n = in->op == TJ_OP_TMA_LOAD ? 6 : in->op == TJ_OP_TMA_STORE ? 5 : grouped ? 1 : uncounted ? 2 : 3;
    if (in->nargs != n)
        return px_fail(e, r, "'%s' takes %u operands", tj_op_get(in->op)->name, n);
    for (uint32_t a = 0; a < n; a++)
        if (want[a] != TJ_DT_INVALID && (want[a] != TJ_DT_BOOL || in->args[a]) &&
            px_scalar_operand(e, r, a, want[a]))
            return -1;
    return 0;
}

int px_emit_tma(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    if (!e->wgmma)
        return px_fail(e, r, "'%s' needs sm_90a", tj_op_get(in->op)->name);
    if (check_operands(e, r))
        return -1;
    e->defined[r] = 1;
    e->uses_smem = 1;
    switch (in->op) {
    case TJ_OP_MBAR_INIT:
        px_ins(e, "%smbarrier.init.shared::cta.b64 [%s], %s", guard(e, in->args[2]).s, RN(shared_addr(e, r, 0)),
               RN(px_val(e, in->args[1], 0)));
        return 0;
    case TJ_OP_MBAR_EXPECT_TX: return px_emit_in_run(e, r, emit_expect_tx);
    case TJ_OP_MBAR_INVAL:
        px_ins(e, "%smbarrier.inval.shared::cta.b64 [%s]", guard(e, in->args[1]).s, RN(shared_addr(e, r, 0)));
        return 0;
    case TJ_OP_MBAR_ARRIVE:
        px_ins(e, "%smbarrier.arrive.shared::cta.b64 _, [%s]", guard(e, in->args[1]).s, RN(shared_addr(e, r, 0)));
        return 0;
    case TJ_OP_MBAR_WAIT: return px_emit_in_run(e, r, emit_wait);
    case TJ_OP_TMA_LOAD: return px_emit_in_run(e, r, emit_tma_load);
    case TJ_OP_TMA_STORE: return px_emit_in_run(e, r, emit_tma_store);
    case TJ_OP_TMA_STORE_COMMIT: return px_emit_in_run(e, r, emit_store_commit);
    case TJ_OP_TMA_STORE_WAIT: return px_emit_in_run(e, r, emit_store_wait);
    default: return px_fail(e, r, "internal error: '%s' is not an mbarrier or TMA op", tj_op_get(in->op)->name);
    }
}
