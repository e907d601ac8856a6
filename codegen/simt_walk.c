/* The SIMT IR walk and checks the PTX and MSL generators share
 * (codegen/simt_walk.h). */
#include <stdarg.h>
#include <stdio.h>

#include "codegen/simt_walk.h"

int simt_fail(const simt_walker *w, tj_ref r, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return w->fail(w->target, r, msg);
}

/* Every operand must have been emitted before its use (the IR is verified,
 * but a use of a grid value or a misplaced instruction must not read
 * values that were never written). */
static int emit_inst(const simt_walker *w, tj_ref r, int depth)
{
    const tj_inst *in = &w->k->insts[r];
    for (uint32_t a = 0; a < in->nargs; a++) {
        tj_ref o = in->args[a];
        if (o == TJ_NONE)
            continue;
        if (o >= w->k->ninsts || !w->defined[o])
            return simt_fail(w, r, "operand %u is not defined before its use", a);
    }
    return w->emit(w->target, r, depth);
}

int simt_walk_block(const simt_walker *w, tj_block_id b, int depth)
{
    if (depth > SIMT_MAX_DEPTH)
        return simt_fail(w, 0, "regions nested deeper than %d", SIMT_MAX_DEPTH);
    const tj_block *blk = &w->k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        tj_op op = w->k->insts[r].op;
        if (op == TJ_OP_ARG) {
            if (!w->defined[r])
                return simt_fail(w, r, "block argument outside a for body");
            continue;
        }
        if (op == TJ_OP_YIELD) {
            if (i + 1 != blk->ninsts)
                return simt_fail(w, r, "yield before the end of its block");
            return 0;
        }
        if (emit_inst(w, r, depth))
            return -1;
    }
    return simt_fail(w, 0, "block %u does not end with yield", b);
}

int simt_walk_grid(const simt_walker *w)
{
    const tj_kernel *k = w->k;
    if (!k->grid || k->grid >= k->nblocks)
        return 0;
    uint8_t *need = tj_alloc(k->ctx, k->ninsts);
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        if (!in->block || in->block == k->grid)
            continue;
        for (uint32_t a = 0; a < in->nargs; a++)
            if (in->args[a] && in->args[a] < k->ninsts && k->insts[in->args[a]].block == k->grid)
                need[in->args[a]] = 1;
    }
    /* backwards: what a needed grid value reads is needed too */
    const tj_block *g = &k->blocks[k->grid];
    for (uint32_t i = g->ninsts; i-- > 0;) {
        const tj_inst *in = &k->insts[g->insts[i]];
        if (need[g->insts[i]])
            for (uint32_t a = 0; a < in->nargs; a++)
                if (in->args[a] && in->args[a] < k->ninsts)
                    need[in->args[a]] = 1;
    }
    for (uint32_t i = 0; i < g->ninsts; i++)
        if (need[g->insts[i]] && emit_inst(w, g->insts[i], 0))
            return -1;
    return 0;
}

simt_family simt_op_family(tj_op op)
{
    switch (op) {
    case TJ_OP_CONST: return SF_CONST;
    case TJ_OP_PARAM: case TJ_OP_DIM: case TJ_OP_STRIDE: case TJ_OP_TENSOR_PTR: return SF_PARAM;
    case TJ_OP_PROGRAM_ID: case TJ_OP_NUM_PROGRAMS: case TJ_OP_TID: case TJ_OP_BARRIER: case TJ_OP_WARP_BARRIER:
        return SF_SPECIAL;
    case TJ_OP_ADD: case TJ_OP_SUB: case TJ_OP_MUL: case TJ_OP_DIV: case TJ_OP_REM:
    case TJ_OP_POW: case TJ_OP_MAX: case TJ_OP_MIN: case TJ_OP_AND: case TJ_OP_OR:
    case TJ_OP_XOR: case TJ_OP_SHL: case TJ_OP_SHR:
        return SF_BINARY;
    case TJ_OP_EQ: case TJ_OP_NE: case TJ_OP_LT: case TJ_OP_LE: case TJ_OP_GT: case TJ_OP_GE:
        return SF_COMPARE;
    case TJ_OP_NEG: case TJ_OP_NOT: case TJ_OP_EXP: case TJ_OP_EXP2: case TJ_OP_LOG:
    case TJ_OP_LOG2: case TJ_OP_SQRT: case TJ_OP_RSQRT: case TJ_OP_ABS: case TJ_OP_SIN:
    case TJ_OP_COS: case TJ_OP_TANH: case TJ_OP_SIGMOID: case TJ_OP_ERF: case TJ_OP_FLOOR:
    case TJ_OP_CEIL: case TJ_OP_POPC:
        return SF_UNARY;
    case TJ_OP_SELECT: return SF_SELECT;
    case TJ_OP_FMA: return SF_FMA;
    case TJ_OP_CAST: case TJ_OP_BITCAST: return SF_CAST;
    case TJ_OP_LD_GLOBAL: return SF_LD_GLOBAL;
    case TJ_OP_ST_GLOBAL: return SF_ST_GLOBAL;
    case TJ_OP_LD_SHARED: return SF_LD_SHARED;
    case TJ_OP_ST_SHARED: return SF_ST_SHARED;
    case TJ_OP_ATOM_ADD: case TJ_OP_ATOM_MAX: case TJ_OP_ATOM_MIN: case TJ_OP_RED_ADD_SHARED: return SF_ATOMIC;
    case TJ_OP_SHFL_XOR: case TJ_OP_SHFL_UP: case TJ_OP_SHFL_IDX: case TJ_OP_BALLOT: case TJ_OP_ELECT:
        return SF_SHUFFLE;
    case TJ_OP_EXTRACT: case TJ_OP_PACK: return SF_VECTOR;
    case TJ_OP_LD_ACQUIRE: case TJ_OP_ST_RELEASE: case TJ_OP_LD_RELAXED: case TJ_OP_ST_RELAXED: return SF_ORDERED;
    case TJ_OP_FOR: return SF_FOR;
    case TJ_OP_WHILE: return SF_WHILE;
    case TJ_OP_IF: return SF_IF;
    case TJ_OP_PROJ: return SF_PROJ;
    case TJ_OP_MMA_LOAD: case TJ_OP_MMA: case TJ_OP_MMA_STORE: case TJ_OP_MMA_FILL:
    case TJ_OP_MMA_PACK: case TJ_OP_MMA_UNPACK:
        return SF_MMA;
    case TJ_OP_CP_ASYNC: case TJ_OP_CP_ASYNC_COMMIT: case TJ_OP_CP_ASYNC_WAIT: return SF_ASYNC;
    case TJ_OP_WGMMA_DESC: case TJ_OP_WGMMA: case TJ_OP_WGMMA_FENCE: case TJ_OP_WGMMA_COMMIT:
    case TJ_OP_WGMMA_WAIT: case TJ_OP_FENCE_PROXY_ASYNC: case TJ_OP_BAR_SYNC: case TJ_OP_BAR_ARRIVE:
        return SF_WGMMA;
    case TJ_OP_MBAR_INIT: case TJ_OP_MBAR_EXPECT_TX: case TJ_OP_MBAR_WAIT: case TJ_OP_MBAR_INVAL:
    case TJ_OP_MBAR_ARRIVE: case TJ_OP_TMA_LOAD: case TJ_OP_TMA_STORE: case TJ_OP_TMA_STORE_COMMIT:
    case TJ_OP_TMA_STORE_WAIT:
        return SF_TMA;
    default: return SF_OTHER;
    }
}

int simt_elem_type(tj_ctx *c, tj_type t, tj_dtype *dt)
{
    const tj_type_info *ti = tj_type_get(c, t);
    if (ti->kind != TJ_TK_TILE || ti->rank > 1)
        return 0;
    *dt = ti->dtype;
    return ti->rank == 0 ? 1 : ti->shape[0];
}

/* ---- structured control flow ---------------------------------------------- */

tj_ref simt_block_yield(const simt_walker *w, tj_ref owner, tj_block_id b)
{
    if (!b || b >= w->k->nblocks)
        return simt_fail(w, owner, "a region is missing"), TJ_NONE;
    const tj_block *blk = &w->k->blocks[b];
    tj_ref y = blk->ninsts ? blk->insts[blk->ninsts - 1] : TJ_NONE;
    if (!y || w->k->insts[y].op != TJ_OP_YIELD)
        return simt_fail(w, owner, "a region does not end with yield"), TJ_NONE;
    return y;
}

int simt_for_bounds(const simt_walker *w, tj_ref loop, tj_dtype *dt)
{
    const tj_inst *in = &w->k->insts[loop];
    if (in->nargs < 3)
        return simt_fail(w, loop, "for takes lo, hi, step and the initial values");
    if (simt_elem_type(w->k->ctx, w->k->insts[in->args[0]].type, dt) != 1 || !tj_dtype_is_int(*dt))
        return simt_fail(w, loop, "loop bounds must be integer scalars");
    return 0;
}

tj_ref simt_loop_arg(const simt_walker *w, tj_ref loop, uint32_t i)
{
    const tj_inst *in = &w->k->insts[loop];
    const tj_block *blk = &w->k->blocks[in->region[0]];
    if (blk->ninsts < in->nargs - 1) /* the induction variable and the carried values, then a yield */
        return simt_fail(w, loop, "the loop body lacks its %u block arguments", in->nargs - 2), TJ_NONE;
    tj_ref a = blk->insts[i];
    const tj_inst *ai = &w->k->insts[a];
    tj_ref src = i == 0 ? in->args[0] : in->args[2 + i];
    if (ai->op != TJ_OP_ARG || ai->imm != (int64_t)i || ai->type != w->k->insts[src].type)
        return simt_fail(w, loop, "body argument %u does not match the loop", i), TJ_NONE;
    return a;
}

uint32_t simt_carried_components(const simt_walker *w, tj_ref loop)
{
    const tj_inst *in = &w->k->insts[loop];
    const tj_block *blk = &w->k->blocks[in->region[0]];
    uint32_t n = 0;
    for (uint32_t i = 1; i <= in->nargs - 3; i++)
        n += w->ncomp[blk->insts[i]];
    return n;
}

int simt_step_constant(const tj_kernel *k, tj_ref step, int64_t *v)
{
    const tj_inst *s = &k->insts[step];
    if (s->op != TJ_OP_CONST)
        return 0;
    *v = s->imm;
    return 1;
}

int simt_yield_needs_parallel_copy(const tj_kernel *k, tj_ref yield, tj_block_id body)
{
    const tj_inst *y = &k->insts[yield];
    for (uint32_t j = 0; j < y->nargs; j++) {
        const tj_inst *o = y->args[j] ? &k->insts[y->args[j]] : NULL;
        if (o && o->op == TJ_OP_ARG && o->block == body && o->imm >= 1 && o->imm != (int64_t)j + 1)
            return 1;
    }
    return 0;
}

/* ---- parameters ------------------------------------------------------------ */

int simt_param(const simt_walker *w, tj_ref r, const tj_param **p)
{
    const tj_inst *in = &w->k->insts[r];
    if (in->imm < 0 || in->imm >= (int64_t)w->k->nparams)
        return simt_fail(w, r, "parameter index %lld out of range", (long long)in->imm);
    *p = &w->k->params[in->imm];
    const char *name = (*p)->name ? (*p)->name : "";
    const tj_type_info *ti = tj_type_get(w->k->ctx, in->type);
    if (ti->kind == TJ_TK_TENSOR) {
        if ((*p)->rank == 0 || ti->rank != (*p)->rank)
            return simt_fail(w, r, "the type does not match parameter '%s'", name);
        w->defined[r] = 1;
        return 1;
    }
    if ((*p)->rank != 0)
        return simt_fail(w, r, "parameter '%s' is a tensor", name);
    return 0;
}

int simt_tensor_param(const simt_walker *w, tj_ref r, int *rank)
{
    const tj_inst *in = &w->k->insts[r];
    const tj_inst *p = in->nargs ? &w->k->insts[in->args[0]] : NULL;
    if (!p || p->op != TJ_OP_PARAM || p->imm < 0 || p->imm >= (int64_t)w->k->nparams ||
        w->k->params[p->imm].rank == 0)
        return simt_fail(w, r, "operand 0 must be a tensor parameter");
    *rank = w->k->params[p->imm].rank;
    if (in->op != TJ_OP_TENSOR_PTR && (in->imm < 0 || in->imm >= *rank))
        return simt_fail(w, r, "axis %lld out of range for a rank-%d tensor", (long long)in->imm, *rank);
    return (int)p->imm;
}

/* ---- checks both back ends make before emitting ------------------------- */

int simt_operand_check(const simt_walker *w, tj_ref r, uint32_t a, uint32_t width, tj_dtype want)
{
    const tj_inst *in = &w->k->insts[r];
    tj_ref o = a < in->nargs ? in->args[a] : TJ_NONE;
    if (!o)
        return simt_fail(w, r, "operand %u is missing", a);
    tj_dtype dt = TJ_DT_INVALID;
    int n = simt_elem_type(w->k->ctx, w->k->insts[o].type, &dt);
    if (n <= 0 || ((uint32_t)n != width && n != 1))
        return simt_fail(w, r, "operand %u must be a scalar or a vector of %u", a, width);
    if (want != TJ_DT_INVALID && dt != want)
        return simt_fail(w, r, "operand %u is %s, %s expected", a, tj_dtype_name(dt), tj_dtype_name(want));
    return 0;
}

int simt_expect_scalar(const simt_walker *w, tj_ref r, tj_dtype want)
{
    tj_dtype dt;
    if (simt_elem_type(w->k->ctx, w->k->insts[r].type, &dt) != 1 || dt != want)
        return simt_fail(w, r, "the result must be %s", tj_dtype_name(want));
    return 0;
}

int simt_check_vector_op(const simt_walker *w, tj_ref r, tj_dtype *dt)
{
    const tj_kernel *k = w->k;
    const tj_inst *in = &k->insts[r];
    int width = simt_elem_type(k->ctx, in->type, dt);
    if (width <= 0)
        return simt_fail(w, r, "the result must be a scalar or a vector");
    if (in->op == TJ_OP_PACK) {
        if (in->nargs != (uint32_t)width)
            return simt_fail(w, r, "pack of %u values into a vector of %d", in->nargs, width);
        for (uint32_t a = 0; a < in->nargs; a++) {
            if (simt_operand_check(w, r, a, 1, *dt))
                return -1;
            if (w->ncomp[in->args[a]] != 1)
                return simt_fail(w, r, "pack takes scalars");
        }
        return 0;
    }
    tj_dtype vdt;
    int vw = in->nargs == 1 ? simt_elem_type(k->ctx, k->insts[in->args[0]].type, &vdt) : 0;
    if (width != 1 || vw <= 0 || vdt != *dt || in->imm < 0 || in->imm >= vw)
        return simt_fail(w, r, "extract takes element index < width of a vector of the result's dtype");
    return 0;
}

int simt_proj_offset(const simt_walker *w, tj_ref r, uint32_t *offset)
{
    const tj_kernel *k = w->k;
    const tj_inst *in = &k->insts[r];
    tj_ref t = in->nargs ? in->args[0] : TJ_NONE;
    const tj_type_info *ti = t ? tj_type_get(k->ctx, k->insts[t].type) : NULL;
    if (!ti || ti->kind != TJ_TK_TUPLE || in->imm < 0 || in->imm >= (int64_t)ti->nelems ||
        ti->elems[in->imm] != in->type)
        return simt_fail(w, r, "proj needs a tuple operand and an index of an element of its type");
    *offset = 0;
    for (int64_t i = 0; i < in->imm; i++) {
        tj_dtype dt;
        *offset += (uint32_t)simt_value_parts(w, ti->elems[i], &dt);
    }
    return 0;
}

int simt_value_parts(const simt_walker *w, tj_type t, tj_dtype *dt)
{
    tj_ctx *c = w->k->ctx;
    if (tj_type_is_fragment(c, t))
        return w->fragment_parts ? w->fragment_parts(w->target, t, dt) : 0;
    int n = simt_elem_type(c, t, dt);
    return n > 0 ? n : 0;
}

int simt_for_each_component(const simt_walker *w, tj_type t, int max_width, void (*add)(void *target, tj_dtype dt))
{
    const tj_type_info *ti = tj_type_get(w->k->ctx, t);
    if (ti->kind == TJ_TK_VOID)
        return 0;
    if (ti->kind == TJ_TK_TUPLE) {
        for (uint32_t i = 0; i < ti->nelems; i++)
            if (simt_for_each_component(w, ti->elems[i], max_width, add))
                return -1;
        return 0;
    }
    tj_dtype dt;
    int n = simt_value_parts(w, t, &dt);
    if (n <= 0 || (n > max_width && !tj_type_is_fragment(w->k->ctx, t)))
        return -1;
    for (int i = 0; i < n; i++)
        add(w->target, dt);
    return 0;
}

int simt_check_kernel(const simt_walker *w, int *uses_smem)
{
    const tj_kernel *k = w->k;
    if (k->level != TJ_LEVEL_SIMT)
        return simt_fail(w, 0, "the kernel is Tile IR; lower it to SIMT IR first");
    if (k->nthreads < 1 || k->nthreads > 1024)
        return simt_fail(w, 0, "%u threads per program (1 to 1024 allowed)", k->nthreads);
    if (!k->body || k->body >= k->nblocks)
        return simt_fail(w, 0, "no body block");
    int shuffles = 0, atoms = 0;
    *uses_smem = 0;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        tj_op op = k->insts[r].op;
        *uses_smem |= op == TJ_OP_LD_SHARED || op == TJ_OP_ST_SHARED || op == TJ_OP_RED_ADD_SHARED || op == TJ_OP_MMA_LOAD ||
                      op == TJ_OP_MMA_STORE || op == TJ_OP_CP_ASYNC || op == TJ_OP_WGMMA_DESC ||
                      simt_op_family(op) == SF_TMA;
        shuffles |= op == TJ_OP_SHFL_XOR || op == TJ_OP_SHFL_UP || op == TJ_OP_SHFL_IDX || op == TJ_OP_BALLOT ||
                    op == TJ_OP_ELECT || op == TJ_OP_WARP_BARRIER;
        atoms |= simt_op_family(op) == SF_MMA || op == TJ_OP_WGMMA;
    }
    if ((shuffles || atoms) && k->nthreads % 32)
        return simt_fail(w, 0, "%s need whole warps (SIMD groups of 32 lanes), but nthreads is %u",
                         shuffles ? "shuffles" : "matrix ops", k->nthreads);
    return 0;
}
