/* Helpers shared by the passes: see pass_util.h. */
#include <math.h>
#include <string.h>

#include "passes/fold.h"

typedef struct pass_job {
    tj_kernel *k;
    tj_pass_impl fn;
    int *changed;
} pass_job;

static int run_pass(void *arg)
{
    pass_job *j = arg;
    return j->fn(j->k, j->changed);
}

int tj_pass_guarded(tj_kernel *k, tj_pass_impl fn, int *changed)
{
    int ignored = 0;
    pass_job j = {k, fn, changed ? changed : &ignored};
    return tj_guarded(k->ctx, run_pass, &j);
}

int tj_pass_depth_ok(tj_kernel *k, tj_ref owner, int depth)
{
    if (depth <= TJ_PASS_MAX_DEPTH)
        return 1;
    tj_error_at(k->ctx, k->insts[owner].loc, "regions nested deeper than %d levels in kernel '%s'",
                TJ_PASS_MAX_DEPTH, k->name);
    return 0;
}

/* ---- forwarding ---------------------------------------------------------- */

void tj_fwd_init(tj_kernel *k, tj_fwd *f)
{
    *f = (tj_fwd){0};
    f->to = tj_grow(k->ctx, NULL, &f->cap, k->ninsts, sizeof *f->to);
}

void tj_fwd_set(tj_kernel *k, tj_fwd *f, tj_ref from, tj_ref to)
{
    if (from == to)
        return;
    f->to = tj_grow(k->ctx, f->to, &f->cap, from + 1, sizeof *f->to);
    f->to[from] = to;
}

/* Chains stay short (a replacement is always an older or a new value that
 * was never forwarded itself), but a bound keeps a malformed map finite. */
tj_ref tj_fwd_resolve(const tj_fwd *f, tj_ref r)
{
    for (uint32_t n = 0; r < f->cap && f->to[r] && n < f->cap; n++)
        r = f->to[r];
    return r;
}

void tj_fwd_apply(tj_kernel *k, const tj_fwd *f, tj_ref r)
{
    tj_inst *in = &k->insts[r];
    for (uint32_t a = 0; a < in->nargs; a++)
        in->args[a] = tj_fwd_resolve(f, in->args[a]);
}

/* ---- instructions ---------------------------------------------------------- */

tj_block_id tj_region_of(const tj_kernel *k, tj_ref r, int g)
{
    const tj_inst *in = &k->insts[r];
    tj_block_id b = g < tj_op_region_count(in->op) ? in->region[g] : TJ_NONE;
    return b < k->nblocks ? b : TJ_NONE;
}

tj_op tj_swapped_op(const tj_kernel *k, const tj_inst *in)
{
    if (in->nargs != 2)
        return TJ_OP_INVALID;
    switch (in->op) {
    case TJ_OP_ADD: case TJ_OP_MUL: case TJ_OP_AND: case TJ_OP_OR:
    case TJ_OP_XOR: case TJ_OP_EQ: case TJ_OP_NE:
        return in->op;
    case TJ_OP_MAX: case TJ_OP_MIN:
        return tj_type_is_float_tile(k, in->type) ? TJ_OP_INVALID : in->op;
    case TJ_OP_LT: return TJ_OP_GT;
    case TJ_OP_GT: return TJ_OP_LT;
    case TJ_OP_LE: return TJ_OP_GE;
    case TJ_OP_GE: return TJ_OP_LE;
    default: return TJ_OP_INVALID;
    }
}

void tj_detach_regions(tj_kernel *k, tj_ref r, int depth)
{
    if (depth > TJ_PASS_MAX_DEPTH)
        return; /* walked already by the pass, which checked the depth */
    for (int g = 0; g < 2; g++) {
        tj_block_id b = tj_region_of(k, r, g);
        for (uint32_t i = 0; b && i < k->blocks[b].ninsts; i++) {
            tj_ref x = k->blocks[b].insts[i];
            tj_detach_regions(k, x, depth + 1);
            k->insts[x].block = TJ_NONE;
        }
    }
}

int tj_has_side_effects(const tj_kernel *k, tj_ref r, int depth)
{
    const tj_inst *in = &k->insts[r];
    unsigned flags = tj_op_get(in->op)->flags;
    if ((flags & TJ_OPF_MEM) && !(flags & TJ_OPF_READ))
        return 1;
    if (depth > TJ_PASS_MAX_DEPTH)
        return 1; /* too deep to look at: assume the worst */
    for (int g = 0; g < 2; g++) {
        tj_block_id b = tj_region_of(k, r, g);
        if (!b)
            continue;
        const tj_block *blk = &k->blocks[b];
        for (uint32_t i = 0; i < blk->ninsts; i++)
            if (tj_has_side_effects(k, blk->insts[i], depth + 1))
                return 1;
    }
    return 0;
}

tj_dtype tj_value_dtype(const tj_kernel *k, tj_ref r)
{
    const tj_type_info *t = tj_type_get(k->ctx, k->insts[r].type);
    return t->kind == TJ_TK_TILE ? t->dtype : TJ_DT_INVALID;
}

int tj_type_is_float_tile(const tj_kernel *k, tj_type t)
{
    const tj_type_info *ti = tj_type_get(k->ctx, t);
    return ti->kind == TJ_TK_TILE && tj_dtype_is_float(ti->dtype);
}

/* ---- constants -------------------------------------------------------------- */

tj_ref tj_splat_source(const tj_kernel *k, tj_ref r)
{
    const tj_inst *in = &k->insts[r];
    if (in->op == TJ_OP_BROADCAST && in->nargs == 1)
        r = in->args[0];
    if (in->op == TJ_OP_PACK && in->nargs) {
        for (uint32_t a = 1; a < in->nargs; a++)
            if (in->args[a] != in->args[0])
                return TJ_NONE;
        r = in->args[0];
    }
    if (!r || k->insts[r].op != TJ_OP_CONST)
        return TJ_NONE;
    const tj_type_info *t = tj_type_get(k->ctx, k->insts[r].type);
    return t->kind == TJ_TK_TILE && t->rank == 0 ? r : TJ_NONE;
}

int tj_const_value(const tj_kernel *k, tj_ref r, tj_cval *out)
{
    tj_ref c = tj_splat_source(k, r);
    if (!c)
        return 0;
    /* The value the interpreter holds: rounded or wrapped to its dtype. */
    const tj_inst *in = &k->insts[c];
    tj_dtype dt = tj_type_get(k->ctx, in->type)->dtype;
    if (tj_dtype_is_float(dt))
        *out = (tj_cval){.f = tj_fold_round(dt, in->fimm)};
    else
        *out = (tj_cval){.i = tj_fold_wrap(dt, (uint64_t)in->imm)};
    return 1;
}

int tj_is_const_int(const tj_kernel *k, tj_ref r, int64_t v)
{
    tj_cval c;
    tj_dtype dt = tj_value_dtype(k, r);
    return !tj_dtype_is_float(dt) && tj_const_value(k, r, &c) && c.i == v;
}

int tj_is_const_float(const tj_kernel *k, tj_ref r, double v, int negative_zero)
{
    tj_cval c;
    tj_dtype dt = tj_value_dtype(k, r);
    return tj_dtype_is_float(dt) && tj_const_value(k, r, &c) && c.f == v &&
           (v != 0 || !signbit(c.f) == !negative_zero);
}

tj_ref tj_cursor_emit(tj_kernel *k, tj_cursor *at, tj_op op, tj_type type, const tj_ref *args,
                      uint32_t nargs)
{
    tj_ref r = tj_inst_new(k, op, type, args, nargs);
    k->insts[r].loc = at->loc;
    tj_block_insert(k, at->block, at->pos++, r);
    return r;
}

tj_ref tj_cursor_const(tj_kernel *k, tj_cursor *at, tj_type t, tj_cval v)
{
    const tj_type_info *ti = tj_type_get(k->ctx, t);
    tj_dtype dt = ti->dtype;
    uint32_t n = (uint32_t)tj_type_numel(k->ctx, t);
    int rank = ti->rank;
    tj_ref c = tj_cursor_emit(k, at, TJ_OP_CONST, tj_type_scalar(k->ctx, dt), NULL, 0);
    if (tj_dtype_is_float(dt))
        k->insts[c].fimm = v.f;
    else
        k->insts[c].imm = v.i;
    if (rank == 0)
        return c;
    if (k->level == TJ_LEVEL_TILE)
        return tj_cursor_emit(k, at, TJ_OP_BROADCAST, t, &c, 1);
    tj_ref *copies = tj_alloc(k->ctx, sizeof(tj_ref) * n); /* a SIMT vector: short */
    for (uint32_t i = 0; i < n; i++)
        copies[i] = c;
    return tj_cursor_emit(k, at, TJ_OP_PACK, t, copies, n);
}
