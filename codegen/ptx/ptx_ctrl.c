/* Structured control flow (for, if, proj, yield) and the vector ops pack
 * and extract. Conditions and loop bounds are uniform across a program
 * (docs/simt.md), so the branches are bra.uni. Loop-carried values live in
 * the registers of the body's block arguments; yields copy into them. */
#include "codegen/ptx/ptx.h"

/* Copies the components of the yield's operands, in order, into dst[]. A
 * yield may name the block's own arguments in another order (a swap):
 * `parallel` copies through temporaries first. */
static int copy_yield(ptx_emitter *e, tj_ref yield, const ptx_reg *dst, uint32_t ndst, int parallel)
{
    const tj_inst *y = px_inst(e, yield);
    ptx_reg *src = tj_alloc(e->c, sizeof *src * (ndst + 1));
    uint32_t n = 0;
    for (uint32_t a = 0; a < y->nargs; a++) {
        tj_ref o = y->args[a];
        if (!o || !e->defined[o])
            return px_fail(e, yield, "operand %u is not defined", a);
        for (uint32_t i = 0; i < e->ncomp[o]; i++) {
            if (n == ndst)
                return px_fail(e, yield, "yields more values than its owner carries");
            src[n++] = px_val(e, o, i);
        }
    }
    if (n != ndst)
        return px_fail(e, yield, "yields %u components where %u are expected", n, ndst);
    if (parallel)
        for (uint32_t i = 0; i < n; i++) {
            ptx_reg t = px_tmp(e, src[i].cls);
            px_mov(e, t, src[i]);
            src[i] = t;
        }
    for (uint32_t i = 0; i < n; i++) {
        if (src[i].cls != dst[i].cls)
            return px_fail(e, yield, "yielded value %u has the wrong type", i);
        px_mov(e, dst[i], src[i]);
    }
    return 0;
}

/* A copy of the registers of value r's components (the array of all
 * components moves as it grows). */
static ptx_reg *components(ptx_emitter *e, tj_ref r)
{
    ptx_reg *out = tj_alloc(e->c, sizeof *out * (e->ncomp[r] + 1));
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        out[i] = px_val(e, r, i);
    return out;
}

/* ---- for ------------------------------------------------------------------- */

/* Defines the body's arguments (induction variable, carried values) and
 * checks them against the loop's operands. */
static int loop_args(ptx_emitter *e, tj_ref r, uint32_t ncarried)
{
    for (uint32_t i = 0; i <= ncarried; i++) {
        tj_ref a = simt_loop_arg(&e->walk, r, i);
        if (!a || px_define(e, a, px_inst(e, a)->type))
            return -1;
    }
    return 0;
}

/* The trip count of range(lo, hi, step) (0 when step is 0), free of the
 * overflow a compare-and-increment loop could hit near the type's end: in
 * 32 bits for indices of at most 32 (a span of two such values and a
 * step's magnitude fit in u32), else 64. A div.u64 is a call to a
 * subroutine, and a call anywhere in a kernel makes ptxas serialize every
 * wgmma of it (each waited for before the next issues): the bf16 matmul's
 * loop of i32 indices lost a fifth of its rate to one. */
static ptx_reg trip_count(ptx_emitter *e, tj_dtype dt, ptx_reg lo, ptx_reg hi, ptx_reg step)
{
    int sign = tj_dtype_is_signed(dt), wide = tj_dtype_bits(dt) > 32;
    ptx_cls cls = wide ? PX_B64 : PX_B32;
    const char *ts = px_int_type(dt), *tu = wide ? "u64" : "u32", *tb = px_cls_type(cls);
    ptx_reg v[3] = {lo, hi, step};
    for (int i = 0; i < 3; i++)
        if (wide && v[i].cls != PX_B64) {
            ptx_reg w = px_tmp(e, cls);
            px_ins(e, "cvt.%s.%s %s, %s", ts, sign ? "s32" : "u32", RN(w), RN(v[i]));
            v[i] = w;
        }
    ptx_reg pos = px_tmp(e, PX_PRED), run = px_tmp(e, PX_PRED), t = px_tmp(e, PX_PRED);
    ptx_reg span = px_tmp(e, cls), mag = px_tmp(e, cls), cnt = px_tmp(e, cls);
    px_ins(e, "setp.gt.%s %s, %s, %s", ts, RN(run), RN(v[1]), RN(v[0]));
    px_ins(e, "sub.%s %s, %s, %s", tu, RN(span), RN(v[1]), RN(v[0]));
    px_ins(e, "mov.%s %s, %s", tb, RN(mag), RN(v[2]));
    if (sign) {
        ptx_reg neg = px_tmp(e, PX_PRED), back = px_tmp(e, cls);
        px_ins(e, "setp.gt.%s %s, %s, 0", ts, RN(pos), RN(v[2]));
        px_ins(e, "setp.lt.%s %s, %s, 0", ts, RN(neg), RN(v[2]));
        px_ins(e, "setp.gt.%s %s, %s, %s", ts, RN(t), RN(v[0]), RN(v[1]));
        px_ins(e, "and.pred %s, %s, %s", RN(run), RN(run), RN(pos));
        px_ins(e, "and.pred %s, %s, %s", RN(t), RN(t), RN(neg));
        px_ins(e, "or.pred %s, %s, %s", RN(run), RN(run), RN(t));
        px_ins(e, "sub.%s %s, %s, %s", tu, RN(back), RN(v[0]), RN(v[1]));
        px_ins(e, "selp.%s %s, %s, %s, %s", tb, RN(span), RN(span), RN(back), RN(pos));
        px_ins(e, "sub.%s %s, 0, %s", tu, RN(back), RN(v[2]));
        px_ins(e, "selp.%s %s, %s, %s, %s", tb, RN(mag), RN(mag), RN(back), RN(pos));
    } else {
        px_ins(e, "setp.ne.%s %s, %s, 0", tu, RN(pos), RN(v[2]));
        px_ins(e, "and.pred %s, %s, %s", RN(run), RN(run), RN(pos));
    }
    px_ins(e, "selp.%s %s, %s, 1, %s", tb, RN(mag), RN(mag), RN(run));
    px_ins(e, "sub.%s %s, %s, 1", tu, RN(span), RN(span));
    px_ins(e, "div.%s %s, %s, %s", tu, RN(cnt), RN(span), RN(mag));
    px_ins(e, "add.%s %s, %s, 1", tu, RN(cnt), RN(cnt));
    px_ins(e, "selp.%s %s, %s, 0, %s", tb, RN(cnt), RN(cnt), RN(run));
    return cnt;
}

int px_emit_for(ptx_emitter *e, tj_ref r, int depth)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    if (simt_for_bounds(&e->walk, r, &dt))
        return -1;
    if (px_operand_check(e, r, 1, 1, dt) || px_operand_check(e, r, 2, 1, dt))
        return -1;
    uint32_t ncarried = in->nargs - 3;
    tj_block_id body = in->region[0];
    tj_ref yield = simt_block_yield(&e->walk, r, body);
    if (!yield || loop_args(e, r, ncarried))
        return -1;
    const tj_block *blk = &e->k->blocks[body];
    uint32_t nc = simt_carried_components(&e->walk, r);
    ptx_reg *carried = tj_alloc(e->c, sizeof *carried * (nc + 1));
    nc = 0;
    for (uint32_t i = 1; i <= ncarried; i++) {
        tj_ref a = blk->insts[i], init = in->args[2 + i];
        for (uint32_t c = 0; c < e->ncomp[a]; c++) {
            carried[nc] = px_val(e, a, c);
            px_mov(e, carried[nc++], px_val(e, init, c));
        }
    }
    ptx_reg iv = px_val(e, blk->insts[0], 0), lo = px_val(e, in->args[0], 0);
    ptx_reg hi = px_val(e, in->args[1], 0), step = px_val(e, in->args[2], 0);
    const char *it = px_int_type(dt);
    px_mov(e, iv, lo);
    int64_t s = 0;
    int unit = simt_step_constant(e->k, in->args[2], &s) && (s == 1 || (s == -1 && tj_dtype_is_signed(dt)));
    ptx_reg cnt = unit ? iv : trip_count(e, dt, lo, hi, step), done = px_tmp(e, PX_PRED);
    const char *cu = cnt.cls == PX_B64 ? "u64" : "u32"; /* the trip count's width */
    uint32_t head = px_new_label(e), exit = px_new_label(e);
    px_label(e, head);
    if (unit)
        px_ins(e, "setp.%s.%s %s, %s, %s", s == 1 ? "ge" : "le", it, RN(done), RN(iv), RN(hi));
    else
        px_ins(e, "setp.eq.%s %s, %s, 0", cu, RN(done), RN(cnt));
    px_ins(e, "@%s bra.uni $L%u", RN(done), exit);
    if (simt_walk_block(&e->walk, body, depth + 1) ||
        copy_yield(e, yield, carried, nc, simt_yield_needs_parallel_copy(e->k, yield, body)))
        return -1;
    px_ins(e, "add.%s %s, %s, %s", it, RN(iv), RN(iv), RN(step));
    px_wrap_small(e, dt, iv);
    if (!unit)
        px_ins(e, "sub.%s %s, %s, 1", cu, RN(cnt), RN(cnt));
    px_ins(e, "bra.uni $L%u", head);
    px_label(e, exit);
    if (px_block_has_wgmma(e->k, body)) /* the copies below read what its last group writes */
        px_ins(e, "wgmma.wait_group.sync.aligned 0");
    if (px_define(e, r, in->type))
        return -1;
    if (e->ncomp[r] != nc)
        return px_fail(e, r, "the result type does not match the carried values");
    for (uint32_t i = 0; i < nc; i++)
        px_mov(e, px_val(e, r, i), carried[i]);
    return 0;
}

/* ---- while ----------------------------------------------------------------- */

/* The body's arguments (the carried values), checked against the loop's
 * operands; the registers of their components in carried[], *nc of them. */
static ptx_reg *while_args(ptx_emitter *e, tj_ref r, uint32_t *nc)
{
    const tj_inst *in = px_inst(e, r);
    const tj_block *blk = &e->k->blocks[in->region[0]];
    uint32_t n = in->nargs - 1, total = 0;
    if (blk->ninsts < n + 1)
        return px_fail(e, r, "the loop body lacks its %u block arguments", n), NULL;
    for (uint32_t i = 0; i < n; i++) {
        tj_ref a = blk->insts[i];
        const tj_inst *ai = px_inst(e, a);
        if (ai->op != TJ_OP_ARG || ai->imm != (int64_t)i || ai->type != px_inst(e, in->args[1 + i])->type)
            return px_fail(e, r, "body argument %u does not match the loop", i), NULL;
        if (px_define(e, a, ai->type))
            return NULL;
        total += e->ncomp[a];
    }
    ptx_reg *carried = tj_alloc(e->c, sizeof *carried * (total + 2));
    *nc = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t c = 0; c < e->ncomp[blk->insts[i]]; c++) {
            carried[1 + *nc] = px_val(e, blk->insts[i], c);
            px_mov(e, carried[1 + (*nc)++], px_val(e, in->args[1 + i], c));
        }
    return carried;
}

/* A uniform condition (the lowering broadcasts it) tested at the head;
 * the yield copies the next condition and values into the same registers. */
int px_emit_while(ptx_emitter *e, tj_ref r, int depth)
{
    const tj_inst *in = px_inst(e, r);
    if (in->nargs < 1 || px_operand_check(e, r, 0, 1, TJ_DT_BOOL) || e->ncomp[in->args[0]] != 1)
        return e->failed ? -1 : px_fail(e, r, "the condition must be a bool scalar");
    tj_block_id body = in->region[0];
    tj_ref yield = simt_block_yield(&e->walk, r, body);
    uint32_t nc = 0;
    ptx_reg *carried = yield ? while_args(e, r, &nc) : NULL;
    if (!carried)
        return -1;
    carried[0] = px_tmp(e, PX_PRED);
    px_mov(e, carried[0], px_val(e, in->args[0], 0));
    uint32_t head = px_new_label(e), exit = px_new_label(e);
    px_label(e, head);
    px_ins(e, "@!%s bra.uni $L%u", RN(carried[0]), exit);
    /* parallel: a yield may pass the arguments back in another order */
    if (simt_walk_block(&e->walk, body, depth + 1) || copy_yield(e, yield, carried, nc + 1, 1))
        return -1;
    px_ins(e, "bra.uni $L%u", head);
    px_label(e, exit);
    if (px_define(e, r, in->type))
        return -1;
    if (e->ncomp[r] != nc)
        return px_fail(e, r, "the result type does not match the carried values");
    for (uint32_t i = 0; i < nc; i++)
        px_mov(e, px_val(e, r, i), carried[1 + i]);
    return 0;
}

/* ---- if, proj ------------------------------------------------------------------- */

static int emit_branch(ptx_emitter *e, tj_ref r, tj_block_id b, int depth)
{
    tj_ref yield = simt_block_yield(&e->walk, r, b);
    if (!yield || simt_walk_block(&e->walk, b, depth + 1))
        return -1;
    return copy_yield(e, yield, components(e, r), e->ncomp[r], 0);
}

int px_emit_if(ptx_emitter *e, tj_ref r, int depth)
{
    const tj_inst *in = px_inst(e, r);
    if (px_operand_check(e, r, 0, 1, TJ_DT_BOOL) || e->ncomp[in->args[0]] != 1)
        return e->failed ? -1 : px_fail(e, r, "the condition must be a bool scalar");
    if (px_define(e, r, in->type))
        return -1;
    uint32_t other = px_new_label(e), end = px_new_label(e);
    px_ins(e, "@!%s bra.uni $L%u", RN(px_val(e, in->args[0], 0)), other);
    if (emit_branch(e, r, in->region[0], depth))
        return -1;
    px_ins(e, "bra.uni $L%u", end);
    px_label(e, other);
    /* an if without results may have no else block */
    if ((in->region[1] || e->ncomp[r]) && emit_branch(e, r, in->region[1], depth))
        return -1;
    px_label(e, end);
    return 0;
}

int px_emit_proj(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_ref t = in->nargs ? in->args[0] : TJ_NONE;
    uint32_t offset;
    if (simt_proj_offset(&e->walk, r, &offset))
        return -1;
    if (px_inst(e, t)->op == TJ_OP_WGMMA) { /* the fragment's registers, no copy (ptx_wgmma.c) */
        e->first[r] = e->first[t] + offset;
        e->ncomp[r] = px_type_components(e, in->type);
        e->defined[r] = 1;
        return 0;
    }
    if (px_define(e, r, in->type))
        return -1;
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        px_mov(e, px_val(e, r, i), px_val(e, t, offset + i));
    return 0;
}

/* ---- pack, extract ------------------------------------------------------------------ */

int px_emit_vector_op(ptx_emitter *e, tj_ref r)
{
    const tj_inst *in = px_inst(e, r);
    tj_dtype dt;
    if (simt_check_vector_op(&e->walk, r, &dt) || px_define(e, r, in->type))
        return -1;
    if (in->op == TJ_OP_PACK)
        for (uint32_t a = 0; a < in->nargs; a++)
            px_mov(e, px_val(e, r, a), px_val(e, in->args[a], 0));
    else
        px_mov(e, px_val(e, r, 0), px_val(e, in->args[0], (uint32_t)in->imm));
    return 0;
}
