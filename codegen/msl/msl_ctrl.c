/* Structured control flow (for, if, proj, yield) and the vector ops pack
 * and extract. Loop-carried values live in the variables of the body's
 * block arguments, declared before the loop; a yield assigns them. An
 * if's results are declared before it and assigned by each branch. A
 * matrix fragment's components are simdgroup matrices, declared with
 * their type (ms_var_type) and copied whole. */
#include "codegen/msl/msl.h"

/* Assigns the components of the yield's operands, in order, to the
 * variables of `dst` (its first ndst components). A yield may name the
 * block's own arguments in another order (a swap): `parallel` copies
 * through temporaries first. */
static int copy_yield(msl_emitter *e, tj_ref yield, const msl_str *dst, uint32_t ndst, int parallel)
{
    const tj_inst *y = ms_inst(e, yield);
    msl_str *src = tj_alloc(e->c, sizeof *src * (ndst + 1));
    const char **types = tj_alloc(e->c, sizeof *types * (ndst + 1));
    uint32_t n = 0;
    for (uint32_t a = 0; a < y->nargs; a++) {
        tj_ref o = y->args[a];
        if (!o || !e->defined[o])
            return ms_fail(e, yield, "operand %u is not defined", a);
        if (e->addr[o])
            return ms_fail(e, yield, "a global address carried through a loop or branch (not supported in MSL)");
        for (uint32_t i = 0; i < e->ncomp[o]; i++) {
            if (n == ndst)
                return ms_fail(e, yield, "yields more values than its owner carries");
            types[n] = ms_var_type(e, o, i);
            src[n++] = ms_var(e, o, i);
        }
    }
    if (n != ndst)
        return ms_fail(e, yield, "yields %u components where %u are expected", n, ndst);
    if (parallel)
        for (uint32_t i = 0; i < n; i++) {
            msl_str t = ms_tmp(e);
            ms_line(e, "%s %s = %s;", types[i], t.s, src[i].s);
            src[i] = t;
        }
    for (uint32_t i = 0; i < n; i++)
        ms_line(e, "%s = %s;", dst[i].s, src[i].s);
    return 0;
}

/* The variables of value r's components. */
static msl_str *variables(msl_emitter *e, tj_ref r)
{
    msl_str *out = tj_alloc(e->c, sizeof *out * (e->ncomp[r] + 1));
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        out[i] = ms_var(e, r, i);
    return out;
}

/* Declares value r's components, uninitialized (assigned by branches). */
static void declare(msl_emitter *e, tj_ref r)
{
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        ms_line(e, "%s %s;", ms_var_type(e, r, i), ms_var(e, r, i).s);
}

/* ---- for ------------------------------------------------------------------- */

/* Defines the body's arguments (induction variable, carried values),
 * checks them against the loop's operands and initializes the carried
 * ones. */
static int loop_args(msl_emitter *e, tj_ref r, uint32_t ncarried)
{
    const tj_inst *in = ms_inst(e, r);
    for (uint32_t i = 0; i <= ncarried; i++) {
        tj_ref a = simt_loop_arg(&e->walk, r, i);
        if (!a)
            return -1;
        tj_ref src = i == 0 ? in->args[0] : in->args[2 + i];
        if (e->addr[src])
            return ms_fail(e, r, "a global address carried through a loop (not supported in MSL)");
        if (ms_define(e, a, ms_inst(e, a)->type))
            return -1;
        for (uint32_t c = 0; i > 0 && c < e->ncomp[a]; c++)
            ms_line(e, "%s %s = %s;", ms_var_type(e, a, c), ms_var(e, a, c).s, ms_var(e, src, c).s);
    }
    return 0;
}

/* Opens the loop statement: a plain counted loop for steps 1 and -1, else
 * a trip count computed without overflow (Python range semantics; step 0
 * runs nothing). */
static void open_loop(msl_emitter *e, tj_ref r, tj_ref iv, tj_dtype dt)
{
    const tj_inst *in = ms_inst(e, r);
    msl_str v = ms_var(e, iv, 0), lo = ms_arg(e, r, 0, 0), hi = ms_arg(e, r, 1, 0), step = ms_arg(e, r, 2, 0);
    const char *t = ms_type(dt), *u = ms_wrap_type(dt);
    int64_t s = 0;
    if (simt_step_constant(e->k, in->args[2], &s) && (s == 1 || (s == -1 && tj_dtype_is_signed(dt)))) {
        ms_line(e, "for (%s %s = %s; %s %s %s; %s = %s(%s(%s) %s 1u)) {", t, v.s, lo.s, v.s, s == 1 ? "<" : ">", hi.s,
                v.s, t, u, v.s, s == 1 ? "+" : "-");
        return;
    }
    ms_need(e, MH_TRIP);
    msl_str n = ms_tmp(e);
    int sign = tj_dtype_is_signed(dt);
    const char *wide = sign ? "long" : "ulong";
    ms_line(e, "%s %s = %s;", t, v.s, lo.s);
    ms_line(e, "for (ulong %s = tj_trip_%c(%s(%s), %s(%s), %s(%s)); %s != 0ul; %s--, %s = %s(%s(%s) + %s(%s))) {", n.s,
            sign ? 's' : 'u', wide, lo.s, wide, hi.s, wide, step.s, n.s, n.s, v.s, t, u, v.s, u, step.s);
}

int ms_emit_for(msl_emitter *e, tj_ref r, int depth)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    if (simt_for_bounds(&e->walk, r, &dt))
        return -1;
    if (ms_operand_check(e, r, 0, 1, dt) || ms_operand_check(e, r, 1, 1, dt) || ms_operand_check(e, r, 2, 1, dt))
        return -1;
    uint32_t ncarried = in->nargs - 3;
    tj_block_id body = in->region[0];
    tj_ref yield = simt_block_yield(&e->walk, r, body);
    if (!yield || loop_args(e, r, ncarried))
        return -1;
    const tj_block *blk = &e->k->blocks[body];
    uint32_t nc = simt_carried_components(&e->walk, r);
    msl_str *carried = tj_alloc(e->c, sizeof *carried * (nc + 1));
    nc = 0;
    for (uint32_t i = 1; i <= ncarried; i++)
        for (uint32_t c = 0; c < e->ncomp[blk->insts[i]]; c++)
            carried[nc++] = ms_var(e, blk->insts[i], c);
    open_loop(e, r, blk->insts[0], dt);
    e->indent++;
    if (simt_walk_block(&e->walk, body, depth + 1) ||
        copy_yield(e, yield, carried, nc, simt_yield_needs_parallel_copy(e->k, yield, body)))
        return -1;
    e->indent--;
    ms_line(e, "}");
    if (ms_define(e, r, in->type))
        return -1;
    if (e->ncomp[r] != nc)
        return ms_fail(e, r, "the result type does not match the carried values");
    for (uint32_t i = 0; i < nc; i++)
        ms_line(e, "%s %s = %s;", ms_var_type(e, r, i), ms_var(e, r, i).s, carried[i].s);
    return 0;
}

/* ---- while ----------------------------------------------------------------- */

/* The carried values live in the body's argument variables and the
 * condition in a bool declared before the loop; the yield assigns both. */
int ms_emit_while(msl_emitter *e, tj_ref r, int depth)
{
    const tj_inst *in = ms_inst(e, r);
    if (in->nargs < 1 || ms_operand_check(e, r, 0, 1, TJ_DT_BOOL) || e->ncomp[in->args[0]] != 1)
        return e->failed ? -1 : ms_fail(e, r, "the condition must be a bool scalar");
    tj_block_id body = in->region[0];
    tj_ref yield = simt_block_yield(&e->walk, r, body);
    const tj_block *blk = yield ? &e->k->blocks[body] : NULL;
    uint32_t n = in->nargs - 1, nc = 0;
    if (!blk || blk->ninsts < n + 1)
        return e->failed ? -1 : ms_fail(e, r, "the loop body lacks its %u block arguments", n);
    uint32_t total = 1;
    for (uint32_t i = 0; i < n; i++)
        total += e->ncomp[in->args[1 + i]];
    msl_str *vars = tj_alloc(e->c, sizeof *vars * total);
    vars[nc++] = ms_tmp(e);
    ms_line(e, "bool %s = %s;", vars[0].s, ms_var(e, in->args[0], 0).s);
    for (uint32_t i = 0; i < n; i++) {
        tj_ref a = blk->insts[i], src = in->args[1 + i];
        if (ms_inst(e, a)->op != TJ_OP_ARG || ms_inst(e, a)->imm != (int64_t)i || ms_inst(e, a)->type != ms_inst(e, src)->type)
            return ms_fail(e, r, "body argument %u does not match the loop", i);
        if (e->addr[src])
            return ms_fail(e, r, "a global address carried through a loop (not supported in MSL)");
        if (ms_define(e, a, ms_inst(e, a)->type))
            return -1;
        for (uint32_t c = 0; c < e->ncomp[a] && nc < total; c++) {
            ms_line(e, "%s %s = %s;", ms_var_type(e, a, c), ms_var(e, a, c).s, ms_var(e, src, c).s);
            vars[nc++] = ms_var(e, a, c);
        }
    }
    ms_line(e, "while (%s) {", vars[0].s);
    e->indent++;
    if (simt_walk_block(&e->walk, body, depth + 1) || copy_yield(e, yield, vars, nc, 1))
        return -1;
    e->indent--;
    ms_line(e, "}");
    if (ms_define(e, r, in->type))
        return -1;
    if (e->ncomp[r] != nc - 1)
        return ms_fail(e, r, "the result type does not match the carried values");
    for (uint32_t i = 0; i + 1 < nc; i++)
        ms_line(e, "%s %s = %s;", ms_var_type(e, r, i), ms_var(e, r, i).s, vars[1 + i].s);
    return 0;
}

/* ---- if, proj ------------------------------------------------------------------- */

static int emit_branch(msl_emitter *e, tj_ref r, tj_block_id b, int depth)
{
    tj_ref yield = simt_block_yield(&e->walk, r, b);
    e->indent++;
    if (!yield || simt_walk_block(&e->walk, b, depth + 1) || copy_yield(e, yield, variables(e, r), e->ncomp[r], 0))
        return -1;
    e->indent--;
    return 0;
}

int ms_emit_if(msl_emitter *e, tj_ref r, int depth)
{
    const tj_inst *in = ms_inst(e, r);
    if (ms_operand_check(e, r, 0, 1, TJ_DT_BOOL) || e->ncomp[in->args[0]] != 1)
        return e->failed ? -1 : ms_fail(e, r, "the condition must be a bool scalar");
    if (ms_define(e, r, in->type))
        return -1;
    declare(e, r);
    ms_line(e, "if (%s) {", ms_var(e, in->args[0], 0).s);
    if (emit_branch(e, r, in->region[0], depth))
        return -1;
    ms_line(e, "} else {");
    if (emit_branch(e, r, in->region[1], depth))
        return -1;
    ms_line(e, "}");
    return 0;
}

int ms_emit_proj(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_ref t = in->nargs ? in->args[0] : TJ_NONE;
    uint32_t offset;
    if (simt_proj_offset(&e->walk, r, &offset) || ms_define(e, r, in->type))
        return -1;
    for (uint32_t i = 0; i < e->ncomp[r]; i++)
        ms_line(e, "%s %s = %s;", ms_var_type(e, r, i), ms_var(e, r, i).s, ms_var(e, t, offset + i).s);
    return 0;
}

/* ---- pack, extract ------------------------------------------------------------------ */

int ms_emit_vector_op(msl_emitter *e, tj_ref r)
{
    const tj_inst *in = ms_inst(e, r);
    tj_dtype dt;
    if (simt_check_vector_op(&e->walk, r, &dt))
        return -1;
    for (uint32_t a = 0; in->op == TJ_OP_PACK && a < in->nargs; a++)
        if (ms_operand_check(e, r, a, 1, dt)) /* and not an address */
            return -1;
    if (ms_define(e, r, in->type))
        return -1;
    if (in->op == TJ_OP_PACK)
        for (uint32_t a = 0; a < in->nargs; a++)
            ms_line(e, "%s %s = %s;", ms_type(dt), ms_var(e, r, a).s, ms_var(e, in->args[a], 0).s);
    else
        ms_line(e, "%s v%u = %s;", ms_type(dt), r, ms_var(e, in->args[0], (uint32_t)in->imm).s);
    return 0;
}
