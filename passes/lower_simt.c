/* The lowering Tile IR -> SIMT IR (docs/simt.md): the driver. It copies the
 * grid block, assigns layouts, then walks the body, keeping for every tile
 * value the array of per-thread SIMT registers; for, if and proj carry
 * every register of every carried tile. The op families live in
 * lower_elementwise.c, lower_shape.c, lower_memory.c, lower_reduce.c,
 * lower_scan.c, lower_sort.c and lower_dot.c. */
#include <setjmp.h>
#include <string.h>

#include "passes/facts.h"
#include "passes/lower_simt.h"

enum { MAX_NESTING = 200 };

lw_val *lw_val_of(lw *w, tj_ref r) { return &w->vals[r]; }

const tj_type_info *lw_src_type(const lw *w, tj_ref r) { return tj_type_get(w->c, w->src->insts[r].type); }

const tj_layout *lw_layout_of(lw *w, tj_ref r) { return w->lay[r].one; }

tj_ref *lw_new_regs(lw *w, uint32_t n) { return tj_alloc(w->c, sizeof(tj_ref) * (n ? n : 1)); }

void lw_set_regs(lw *w, tj_ref r, const tj_layout *l, tj_ref *regs)
{
    w->vals[r].lay = l;
    w->vals[r].regs = regs;
}

static void set_scalar(lw *w, tj_ref r, tj_ref v)
{
    tj_ref *regs = lw_new_regs(w, 1);
    regs[0] = v;
    lw_set_regs(w, r, lw_scalar_layout(w), regs);
}

/* A value that depends on nothing but the launch, emitted once. */
static tj_ref hoisted_leaf(lw *w, int kind, int64_t a, int64_t b, tj_op op, tj_type t, tj_ref arg)
{
    tj_ref v = lw_memo_get(w, kind, NULL, a, b);
    if (!v) {
        int was = w->hoisting;
        w->hoisting = 1;
        v = lw_emit(w, op, t, arg ? &arg : NULL, arg ? 1 : 0);
        w->dst->insts[v].imm = op == TJ_OP_PARAM ? a : b;
        w->hoisting = was;
        lw_memo_put(w, kind, NULL, a, b, v);
    }
    return v;
}

static int lower_leaf(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_type_info *ti = lw_src_type(w, r);
    uint32_t p;
    switch (in->op) {
    case TJ_OP_PARAM: {
        tj_ref v = hoisted_leaf(w, LW_MEMO_PARAM, in->imm, 0, TJ_OP_PARAM, in->type, TJ_NONE);
        if (ti->kind == TJ_TK_TENSOR)
            w->vals[r].simt = v;
        else
            set_scalar(w, r, v);
        return 1;
    }
    case TJ_OP_CONST:
        set_scalar(w, r, tj_dtype_is_float(ti->dtype) ? lw_const_float(w, ti->dtype, in->fimm)
                                                      : lw_const_int(w, ti->dtype, in->imm));
        return 1;
    case TJ_OP_PROGRAM_ID:
    case TJ_OP_NUM_PROGRAMS:
        set_scalar(w, r, hoisted_leaf(w, LW_MEMO_SCALAR, in->op, in->imm, in->op, in->type, TJ_NONE));
        return 1;
    case TJ_OP_DIM:
        if (!tj_param_index(w->src, in->args[0], &p))
            return !lw_fail(w, "dim of something that is not a tensor parameter");
        set_scalar(w, r, hoisted_leaf(w, LW_MEMO_DIM, p, in->imm, TJ_OP_DIM, in->type, w->vals[in->args[0]].simt));
        return 1;
    default: return !lw_fail(w, "internal error: not a leaf");
    }
}

/* ---- control flow ---------------------------------------------------------- */

/* The flattened registers of n values in the given layouts, and their types. */
static tj_ref *flatten(lw *w, const tj_ref *vals, const tj_layout **lays, uint32_t n, uint32_t *total)
{
    uint32_t count = 0;
    for (uint32_t k = 0; k < n; k++)
        count += lays[k]->nregs;
    tj_ref *flat = lw_new_regs(w, count);
    count = 0;
    for (uint32_t k = 0; k < n; k++) {
        tj_ref *regs = lw_regs_in(w, vals[k], lays[k]);
        if (!regs)
            return NULL;
        memcpy(flat + count, regs, sizeof(tj_ref) * lays[k]->nregs);
        count += lays[k]->nregs;
    }
    *total = count;
    return flat;
}

static tj_type tuple_of(lw *w, const tj_ref *regs, uint32_t n)
{
    tj_type *types = tj_alloc(w->c, sizeof *types * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++)
        types[i] = w->dst->insts[regs[i]].type;
    return tj_type_tuple(w->c, n, types);
}

/* Gives tuple value r its elements, taken apart with proj from `from`
 * (or given directly as block arguments when `args` is set). */
static void set_tuple_regs(lw *w, tj_ref r, const tj_layout **lays, uint32_t n, tj_ref from, const tj_ref *args)
{
    lw_val *v = &w->vals[r];
    v->elems = tj_alloc(w->c, sizeof *v->elems * (n ? n : 1));
    v->nelems = n;
    uint32_t at = 0;
    for (uint32_t k = 0; k < n; k++) {
        tj_ref *regs = lw_new_regs(w, lays[k]->nregs);
        for (uint32_t i = 0; i < lays[k]->nregs; i++, at++) {
            if (args) {
                regs[i] = args[at];
                continue;
            }
            tj_type t = tj_type_get(w->c, w->dst->insts[from].type)->elems[at];
            regs[i] = lw_emit(w, TJ_OP_PROJ, t, &from, 1);
            w->dst->insts[regs[i]].imm = at;
        }
        v->elems[k] = (lw_val){.lay = lays[k], .regs = regs};
    }
}

/* Lowers src block `b` into the new SIMT block `into`, ending it with a
 * yield of the values `b` yields, in layouts `lays`. */
static int lower_region(lw *w, tj_block_id b, tj_block_id into, const tj_layout **lays, uint32_t n)
{
    tj_block_id saved = w->cur;
    tj_ref y = TJ_NONE;
    uint32_t total = 0;
    w->cur = into;
    w->smem_dirty = 1; /* a previous iteration or the code before may still read */
    int ok = lw_lower_block(w, b, &y);
    tj_ref *flat = NULL;
    if (ok && y) {
        const tj_inst *yi = &w->src->insts[y];
        flat = yi->nargs < n ? NULL : flatten(w, yi->args, lays, n, &total);
        ok = flat != NULL || n == 0;
    }
    if (ok)
        lw_emit(w, TJ_OP_YIELD, TJ_TYPE_NONE, flat, total);
    w->cur = saved;
    w->smem_dirty = 1;
    return ok && !w->err;
}

static int lower_for(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_lay *lay = &w->lay[r];
    uint32_t n = lay->nelems, total = 0;
    if (in->nargs != n + 3 || !in->region[0])
        return !lw_fail(w, "internal error: malformed for");
    tj_ref *init = flatten(w, in->args + 3, lay->elems, n, &total);
    if (!init && n)
        return 0;
    tj_ref *args = lw_new_regs(w, total + 3);
    for (int i = 0; i < 3; i++)
        args[i] = w->vals[in->args[i]].regs[0];
    memcpy(args + 3, init, sizeof(tj_ref) * total);
    tj_ref loop = lw_emit(w, TJ_OP_FOR, tuple_of(w, init, total), args, total + 3);
    tj_block_id body = tj_block_new(w->dst, loop);
    w->dst->insts[loop].region[0] = body;
    /* block arguments: the induction variable, then every carried register */
    tj_ref *bargs = lw_new_regs(w, total + 1);
    for (uint32_t i = 0; i <= total; i++) {
        tj_type t = w->dst->insts[i ? init[i - 1] : args[0]].type;
        bargs[i] = tj_emit(w->dst, body, TJ_OP_ARG, t, NULL, 0);
        w->dst->insts[bargs[i]].imm = i;
    }
    const tj_block *src_body = &w->src->blocks[in->region[0]];
    if (src_body->ninsts < n + 1)
        return !lw_fail(w, "internal error: loop body without its arguments");
    set_scalar(w, src_body->insts[0], bargs[0]);
    lw_val tmp;
    set_tuple_regs(w, r, lay->elems, n, TJ_NONE, bargs + 1);
    tmp = w->vals[r];
    for (uint32_t k = 0; k < n; k++)
        w->vals[src_body->insts[k + 1]] = tmp.elems[k];
    if (!lower_region(w, in->region[0], body, lay->elems, n))
        return 0;
    set_tuple_regs(w, r, lay->elems, n, loop, NULL);
    return 1;
}

static int lower_if(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const lw_lay *lay = &w->lay[r];
    uint32_t n = lay->nelems, total = 0;
    for (uint32_t k = 0; k < n; k++)
        total += lay->elems[k]->nregs;
    tj_type *types = tj_alloc(w->c, sizeof *types * (total + 1));
    for (uint32_t k = 0, at = 0; k < n; k++) {
        tj_dtype dt = tj_type_get(w->c, lw_src_type(w, r)->elems[k])->dtype;
        for (uint32_t i = 0; i < lay->elems[k]->nregs; i++)
            types[at++] = lw_sty(w, dt);
    }
    tj_ref cond = w->vals[in->args[0]].regs[0];
    tj_ref branch = lw_emit(w, TJ_OP_IF, tj_type_tuple(w->c, total, types), &cond, 1);
    for (int g = 0; g < 2; g++) {
        tj_block_id blk = tj_block_new(w->dst, branch);
        w->dst->insts[branch].region[g] = blk;
        if (!in->region[g]) { /* no else: yields nothing */
            if (n)
                return !lw_fail(w, "internal error: if without else yields values");
            tj_emit(w->dst, blk, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
            continue;
        }
        if (!lower_region(w, in->region[g], blk, lay->elems, n))
            return 0;
    }
    set_tuple_regs(w, r, lay->elems, n, branch, NULL);
    return 1;
}

int lw_inline_region(lw *w, tj_block_id b, const tj_ref *args, uint32_t nargs, tj_ref *out, uint32_t nout)
{
    const tj_block *blk = &w->src->blocks[b];
    tj_ref y = TJ_NONE;
    if (blk->ninsts < nargs)
        return !lw_fail(w, "internal error: region without its arguments");
    for (uint32_t i = 0; i < nargs; i++)
        set_scalar(w, blk->insts[i], args[i]);
    if (!lw_lower_block(w, b, &y) || !y || w->src->insts[y].nargs < nout)
        return !w->err ? !lw_fail(w, "internal error: region yields too little") : 0;
    for (uint32_t k = 0; k < nout; k++)
        out[k] = w->vals[w->src->insts[y].args[k]].regs[0];
    return 1;
}

/* ---- instructions ---------------------------------------------------------------- */

static int lower_inst(lw *w, tj_ref r)
{
    const tj_inst *in = &w->src->insts[r];
    const tj_op_info *info = tj_op_get(in->op);
    w->loc = in->loc;
    switch (in->op) {
    case TJ_OP_PARAM:
    case TJ_OP_CONST:
    case TJ_OP_PROGRAM_ID:
    case TJ_OP_NUM_PROGRAMS:
    case TJ_OP_DIM: return lower_leaf(w, r);
    case TJ_OP_FOR: return lower_for(w, r);
    case TJ_OP_IF: return lower_if(w, r);
    case TJ_OP_PROJ:
        if (in->imm < 0 || (uint64_t)in->imm >= w->vals[in->args[0]].nelems)
            return !lw_fail(w, "internal error: proj out of range");
        w->vals[r] = w->vals[in->args[0]].elems[in->imm];
        return 1;
    case TJ_OP_VIEW: return 1; /* read by the memory ops that use it */
    case TJ_OP_ARANGE:
    case TJ_OP_BROADCAST:
    case TJ_OP_RESHAPE:
    case TJ_OP_PERMUTE: return lw_lower_shape(w, r);
    case TJ_OP_REDUCE_SUM:
    case TJ_OP_REDUCE_PROD:
    case TJ_OP_REDUCE_MAX:
    case TJ_OP_REDUCE_MIN:
    case TJ_OP_ARGMAX:
    case TJ_OP_ARGMIN: return lw_lower_reduce(w, r);
    case TJ_OP_CUMSUM:
    case TJ_OP_CUMPROD:
    case TJ_OP_SCAN: return lw_lower_scan(w, r);
    case TJ_OP_SORT: return lw_lower_sort(w, r);
    case TJ_OP_DOT: return lw_lower_dot(w, r);
    case TJ_OP_LOAD:
    case TJ_OP_STORE:
    case TJ_OP_ATOMIC_ADD:
    case TJ_OP_ATOMIC_MAX:
    case TJ_OP_ATOMIC_MIN: return lw_lower_memory(w, r);
    default: break;
    }
    if (info->flags & TJ_OPF_ELEM)
        return lw_lower_elementwise(w, r);
    return !lw_fail(w, "cannot lower '%s' here", info->name);
}

int lw_lower_block(lw *w, tj_block_id b, tj_ref *yield)
{
    if (++w->depth > MAX_NESTING) {
        w->depth--;
        return !lw_fail(w, "regions nested too deeply");
    }
    const tj_block *blk = &w->src->blocks[b];
    int ok = 1;
    for (uint32_t i = 0; ok && i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        tj_op op = w->src->insts[r].op;
        if (op == TJ_OP_YIELD) {
            *yield = r;
            break;
        }
        if (op != TJ_OP_ARG)
            ok = lower_inst(w, r) && !w->err;
    }
    w->depth--;
    return ok;
}

/* ---- the kernel ---------------------------------------------------------------- */

static int copy_grid(lw *w)
{
    const tj_kernel *k = w->src;
    tj_kernel *d = w->dst;
    tj_ref *map = tj_alloc(w->c, sizeof *map * (k->ninsts + 1));
    const tj_block *g = &k->blocks[k->grid];
    d->grid = tj_block_new(d, TJ_NONE);
    for (uint32_t i = 0; i < g->ninsts; i++) {
        const tj_inst *in = &k->insts[g->insts[i]];
        tj_ref args[8];
        if (in->region[0] || in->region[1] || in->nargs > 8)
            return !lw_fail(w, "the grid block may only compute scalars");
        for (uint32_t a = 0; a < in->nargs; a++)
            args[a] = in->args[a] ? map[in->args[a]] : TJ_NONE;
        tj_ref r = tj_emit(d, d->grid, in->op, in->type, args, in->nargs);
        tj_inst *o = &d->insts[r];
        o->imm = in->imm;
        o->fimm = in->fimm;
        o->flags = in->flags;
        o->loc = in->loc;
        if (in->nlist)
            tj_inst_set_list(d, r, in->list, in->nlist);
        map[g->insts[i]] = r;
    }
    return 1;
}

/* 16 bytes of the narrowest dtype the kernel's tensors hold. */
static int pick_vec(const tj_kernel *k)
{
    int size = 4;
    for (uint32_t p = 0; p < k->nparams; p++)
        if (k->params[p].rank > 0 && tj_dtype_size(k->params[p].dtype) < size)
            size = tj_dtype_size(k->params[p].dtype);
    return 16 / (size ? size : 1);
}

static int pick_warps(lw *w, const tj_lower_options *opt)
{
    int64_t warps = opt && opt->warps ? opt->warps : 4;
    for (uint32_t i = 0; (!opt || !opt->warps) && i < w->src->nconfig; i++)
        if (w->src->config[i].name && !strcmp(w->src->config[i].name, "warps"))
            warps = w->src->config[i].value;
    if (warps < 1 || warps > TJ_MAX_WARPS || (warps & (warps - 1)))
        return !lw_fail(w, "warps = %lld: the lowering needs a power of two from 1 to %d", (long long)warps,
                        TJ_MAX_WARPS);
    w->nwarps = (int)warps;
    w->nthreads = (uint32_t)warps * TJ_WARP_SIZE;
    return 1;
}

static tj_kernel *new_simt_kernel(lw *w)
{
    const tj_kernel *k = w->src;
    tj_kernel *d = tj_kernel_new(w->c, k->name);
    d->level = TJ_LEVEL_SIMT;
    d->params = k->params;
    d->nparams = k->nparams;
    d->config = k->config;
    d->nconfig = k->nconfig;
    d->spec = k->spec;
    d->nspec = k->nspec;
    d->facts = k->facts;
    return d;
}

static tj_kernel *lower_kernel(lw *w, const tj_lower_options *opt)
{
    const tj_kernel *k = w->src;
    if (k->level != TJ_LEVEL_TILE || !k->body || !k->grid)
        return lw_fail(w, "not a Tile IR kernel");
    if (!pick_warps(w, opt))
        return NULL;
    w->vec = pick_vec(k);
    w->dst = new_simt_kernel(w);
    if (!copy_grid(w))
        return NULL;
    w->dst->body = w->entry = w->cur = tj_block_new(w->dst, TJ_NONE);
    w->vals = tj_alloc(w->c, sizeof *w->vals * (k->ninsts + 1));
    w->div = tj_divisibility(k);
    if (!lw_assign_layouts(w))
        return NULL;
    tj_ref y = TJ_NONE;
    if (!lw_lower_block(w, k->body, &y) || w->err)
        return NULL;
    lw_emit(w, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    w->dst->nthreads = w->nthreads;
    w->dst->smem_bytes = w->smem_bytes;
    return w->dst;
}

tj_kernel *tj_lower_simt(const tj_kernel *k, const tj_lower_options *opt)
{
    lw w = {.c = k->ctx, .src = k};
    jmp_buf jb;
    jmp_buf *old = tj_ctx_swap_guard(k->ctx, &jb);
    if (setjmp(jb)) {
        tj_ctx_swap_guard(k->ctx, old);
        tj_error(k->ctx, "lower-simt: @%s: out of memory", k->name);
        return NULL;
    }
    tj_kernel *d = lower_kernel(&w, opt);
    tj_ctx_swap_guard(k->ctx, old);
    return d;
}
