/* The Tile IR verifier: block structure, scoping and operand validity here;
 * the type rules of each op in ir/verify_ops.c.
 *
 * One walk over the blocks in printing order. A value becomes visible after
 * its instruction and stops being visible when its block ends, so a use is
 * in scope exactly when its definition is earlier in the same block or in
 * an enclosing one. Every problem is reported, each naming the instruction
 * as tj_print_kernel would print it. */
#include <stdarg.h>
#include <stdio.h>

#include "ir/ctx_internal.h"
#include "ir/text.h"
#include "ir/verify_internal.h"

void tj_verify_fail(tj_verifier *v, tj_ref r, const char *fmt, ...)
{
    tj_buf msg = {0};
    tj_loc loc = r ? inst(v, r)->loc : (tj_loc){0, 0, 0};
    if (!loc.line)
        tj_buf_printf(&msg, "@%s: ", v->k->name);
    if (r) {
        tj_print_inst_head(v->k, v->num, r, &msg);
        tj_buf_append(&msg, ": ", 2);
    }
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tj_buf_printf(&msg, "%s", text);
    tj_diag_report(v->c, TJ_SEV_ERROR, loc.file, loc.line, loc.col, "%s", msg.data ? msg.data : "");
    tj_buf_free(&msg);
    v->errors++;
}

const char *tj_verify_type_str(tj_verifier *v, tj_type t)
{
    size_t n = tj_type_str(v->c, t, NULL, 0);
    char *s = tj_alloc(v->c, n + 1);
    tj_type_str(v->c, t, s, n + 1);
    return s;
}

/* ---- operands ------------------------------------------------------------- */

/* Operand positions that may be absent (TJ_NONE, printed `_`). */
static int optional_operand(tj_op op, uint32_t a)
{
    switch (op) {
    case TJ_OP_LOAD:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_LOAD_RELAXED:
    case TJ_OP_LD_GLOBAL:
    case TJ_OP_LD_ACQUIRE:
    case TJ_OP_LD_RELAXED:
        return a >= 1; /* mask or predicate, other */
    case TJ_OP_MMA_LOAD:
        return a == 2; /* where rows 8-15 start */
    case TJ_OP_STORE:
    case TJ_OP_ATOMIC_ADD:
    case TJ_OP_ATOMIC_MAX:
    case TJ_OP_ATOMIC_MIN:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_STORE_RELAXED:
    case TJ_OP_ST_GLOBAL:
    case TJ_OP_ST_RELEASE:
    case TJ_OP_ST_RELAXED:
    case TJ_OP_ATOM_ADD:
    case TJ_OP_ATOM_MAX:
    case TJ_OP_ATOM_MIN:
    case TJ_OP_MBAR_INIT:
    case TJ_OP_MBAR_EXPECT_TX:
    case TJ_OP_MBAR_WAIT:
    case TJ_OP_WGMMA:
        return a == 2; /* mask or predicate */
    case TJ_OP_WGMMA_FENCE:
    case TJ_OP_WGMMA_COMMIT:
    case TJ_OP_WGMMA_WAIT:
    case TJ_OP_TMA_STORE_COMMIT:
    case TJ_OP_TMA_STORE_WAIT:
        return a == 0;
    case TJ_OP_MBAR_INVAL:
    case TJ_OP_MBAR_ARRIVE:
        return a == 1;
    case TJ_OP_TMA_LOAD:
        return a == 5;
    case TJ_OP_TMA_STORE:
        return a == 4;
    default:
        return 0;
    }
}

/* Operand count bounds of variadic ops. */
static void variadic_bounds(tj_op op, uint32_t *lo, uint32_t *hi)
{
    int one = op == TJ_OP_SCAN || op == TJ_OP_WHILE || op == TJ_OP_SORT || op == TJ_OP_VIEW || op == TJ_OP_PACK;
    *lo = op == TJ_OP_FOR ? 3 : one ? 1 : 0;
    *hi = op == TJ_OP_SORT ? 2 : op == TJ_OP_VIEW ? 1 + TJ_MAX_RANK : UINT32_MAX;
}

static int check_operand_count(tj_verifier *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    int fixed = tj_op_get(in->op)->nargs;
    if (fixed >= 0 && in->nargs != (uint32_t)fixed) {
        tj_verify_fail(v, r, "takes %d operand%s, not %u", fixed, fixed == 1 ? "" : "s", in->nargs);
        return 0;
    }
    uint32_t lo, hi;
    variadic_bounds(in->op, &lo, &hi);
    if (fixed < 0 && (in->nargs < lo || in->nargs > hi)) {
        tj_verify_fail(v, r, "takes %u to %u operands, not %u", lo, hi, in->nargs);
        return 0;
    }
    return 1;
}

static int check_operand(tj_verifier *v, tj_ref r, uint32_t a)
{
    tj_ref x = inst(v, r)->args[a];
    if (x == TJ_NONE) {
        if (optional_operand(inst(v, r)->op, a))
            return 1;
        tj_verify_fail(v, r, "operand %u is missing", a + 1);
    } else if (!valid_ref(v, x)) {
        tj_verify_fail(v, r, "operand %u refers to instruction %u, which does not exist", a + 1, x);
    } else if (inst(v, x)->type == TJ_TYPE_NONE) {
        tj_verify_fail(v, r, "operand %u refers to an instruction without a result", a + 1);
    } else if (v->visible[x]) {
        return 1;
    } else if (x == r) {
        tj_verify_fail(v, r, "uses its own result");
    } else if (!v->num[x]) {
        tj_verify_fail(v, r, "operand %u refers to an instruction in no block", a + 1);
    } else if (v->placed[x]) {
        tj_verify_fail(v, r, "%%%u is not in scope here: its block does not enclose this use", v->num[x] - 1);
    } else {
        tj_verify_fail(v, r, "%%%u is used before its definition", v->num[x] - 1);
    }
    return 0;
}

static int check_operands(tj_verifier *v, tj_ref r)
{
    if (!check_operand_count(v, r))
        return 0;
    const tj_inst *in = inst(v, r);
    int ok = 1;
    for (uint32_t a = 0; a < in->nargs; a++) {
        uint32_t first = 0;
        while (in->args[first] != in->args[a])
            first++;
        if (first == a) /* a value used twice is reported once */
            ok &= check_operand(v, r, a);
    }
    return ok;
}

/* ---- instructions and blocks -------------------------------------------------- */

typedef enum block_kind { BLOCK_GRID, BLOCK_BODY, BLOCK_REGION } block_kind;

static void walk_block(tj_verifier *v, tj_block_id b, tj_ref owner, block_kind kind, int depth);

/* The grid runs before launch, on scalars: no memory, no program ids. */
static void check_grid_op(tj_verifier *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    tj_op op = in->op;
    int allowed = op == TJ_OP_PARAM || op == TJ_OP_DIM || op == TJ_OP_CONST || op == TJ_OP_YIELD ||
                  (tj_op_get(op)->flags & TJ_OPF_ELEM);
    if (!allowed)
        tj_verify_fail(v, r, "not allowed in the grid block (only param, dim, const and scalar arithmetic)");
    else if ((tj_op_get(op)->flags & TJ_OPF_ELEM) && !tj_type_is_scalar(v->c, in->type))
        tj_verify_fail(v, r, "the grid block computes on scalars only");
}

static void check_regions(tj_verifier *v, tj_ref r, int depth, int operands_ok)
{
    const tj_inst *in = inst(v, r);
    int n = tj_op_region_count(in->op);
    for (int g = n; g < 2; g++)
        if (in->region[g])
            tj_verify_fail(v, r, "has a region %d it does not take", g + 1);
    if (!n)
        return;
    if (depth >= TJ_MAX_NESTING) {
        tj_verify_fail(v, r, "regions nested too deeply (more than %d levels)", TJ_MAX_NESTING);
        return;
    }
    int blocks_ok = 1, scan = in->op == TJ_OP_SCAN;
    v->scan_depth += scan;
    for (int g = 0; g < n; g++) {
        tj_block_id b = inst(v, r)->region[g];
        blocks_ok &= b && b < v->k->nblocks && !v->walked[b];
        walk_block(v, b, r, BLOCK_REGION, depth + 1);
    }
    v->scan_depth -= scan;
    if (operands_ok && blocks_ok)
        tj_verify_region_signature(v, r);
}

static void check_inst(tj_verifier *v, tj_ref r, block_kind kind, int depth)
{
    const tj_inst *in = inst(v, r);
    if (in->op <= TJ_OP_INVALID || in->op >= TJ_OP_COUNT) {
        tj_verify_fail(v, r, "unknown op %d", (int)in->op);
        return;
    }
    if (in->type >= v->c->ntypes) {
        tj_verify_fail(v, r, "type %u does not exist", in->type);
        return;
    }
    int operands_ok = check_operands(v, r);
    if (operands_ok && tj_verify_level(v, r)) {
        tj_verify_op(v, r);
        tj_verify_simt_result(v, r);
    }
    if (kind == BLOCK_GRID)
        check_grid_op(v, r);
    if (v->scan_depth && (tj_op_get(in->op)->flags & TJ_OPF_MEM))
        tj_verify_fail(v, r, "memory is not accessible in a scan's combine region");
    check_regions(v, r, depth, operands_ok);
}

/* Checks the position of instruction r, at index i of block b. */
static void check_placement(tj_verifier *v, tj_block_id b, uint32_t i, block_kind kind)
{
    const tj_block *blk = tj_block_at(v->k, b);
    tj_ref r = blk->insts[i];
    const tj_inst *in = inst(v, r);
    if (in->block != b)
        tj_verify_fail(v, r, "internal error: records block %u but is in block %u", in->block, b);
    if ((tj_op_get(in->op)->flags & TJ_OPF_TERM) && i + 1 != blk->ninsts)
        tj_verify_fail(v, r, "yield before the end of its block");
    if (in->op != TJ_OP_ARG)
        return;
    if (kind != BLOCK_REGION)
        tj_verify_fail(v, r, "the %s block takes no arguments", kind == BLOCK_GRID ? "grid" : "body");
    else if (i && !(valid_ref(v, blk->insts[i - 1]) && inst(v, blk->insts[i - 1])->op == TJ_OP_ARG))
        tj_verify_fail(v, r, "block argument after the start of its block");
    else if (in->imm != (int64_t)i)
        tj_verify_fail(v, r, "block argument %u has index %lld", i, (long long)in->imm);
}

static int check_block_id(tj_verifier *v, tj_block_id b, tj_ref owner, block_kind kind)
{
    const char *what = kind == BLOCK_GRID ? "grid" : kind == BLOCK_BODY ? "body" : "region";
    if (!b || b >= v->k->nblocks)
        tj_verify_fail(v, owner, "%s block %u does not exist", what, b);
    else if (v->walked[b])
        tj_verify_fail(v, owner, "%s block %u is used twice", what, b);
    else if (tj_block_at(v->k, b)->owner != owner)
        tj_verify_fail(v, owner, "internal error: %s block %u records owner %u", what, b,
                       tj_block_at(v->k, b)->owner);
    else if (!tj_block_at(v->k, b)->ninsts)
        tj_verify_fail(v, owner, "%s block %u is empty: it must end with yield", what, b);
    else
        return 1;
    return 0;
}

static void walk_block(tj_verifier *v, tj_block_id b, tj_ref owner, block_kind kind, int depth)
{
    if (!check_block_id(v, b, owner, kind))
        return;
    v->walked[b] = 1;
    const tj_block *blk = tj_block_at(v->k, b);
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (!valid_ref(v, r) || v->placed[r]) {
            tj_verify_fail(v, owner, "block %u holds instruction %u %s", b, r,
                           valid_ref(v, r) ? "a second time" : "which does not exist");
            continue;
        }
        v->placed[r] = 1;
        check_placement(v, b, i, kind);
        check_inst(v, r, kind, depth);
        v->visible[r] = 1;
    }
    tj_ref last = blk->insts[blk->ninsts - 1];
    if (valid_ref(v, last) && inst(v, last)->op != TJ_OP_YIELD)
        tj_verify_fail(v, last, "the last instruction of a block must be yield");
    for (uint32_t i = 0; i < blk->ninsts; i++)
        if (valid_ref(v, blk->insts[i]))
            v->visible[blk->insts[i]] = 0;
}

/* ---- the kernel ----------------------------------------------------------------- */

static void check_params(tj_verifier *v)
{
    for (uint32_t i = 0; i < v->k->nparams; i++) {
        const tj_param *pm = &v->k->params[i];
        const char *name = pm->name ? pm->name : "_";
        if (pm->dtype <= TJ_DT_INVALID || pm->dtype >= TJ_DT_COUNT)
            tj_verify_fail(v, TJ_NONE, "parameter '%s' has no element type", name);
        if (pm->rank < 0 || pm->rank > TJ_MAX_RANK)
            tj_verify_fail(v, TJ_NONE, "parameter '%s' has rank %d (0 to %d)", name, pm->rank, TJ_MAX_RANK);
        for (int d = 0; d < pm->rank && d < TJ_MAX_RANK; d++)
            if (!pm->dim_names[d] && pm->dim_sizes[d] < 0)
                tj_verify_fail(v, TJ_NONE, "parameter '%s': dim %d has neither a name nor a size", name, d);
    }
}

/* The grid yields 1 to 3 i32 scalars; the body yields nothing. */
static void check_top_yield(tj_verifier *v, tj_block_id b, block_kind kind)
{
    if (!b || b >= v->k->nblocks || !tj_block_at(v->k, b)->ninsts)
        return;
    const tj_block *blk = tj_block_at(v->k, b);
    tj_ref y = blk->insts[blk->ninsts - 1];
    if (!valid_ref(v, y) || inst(v, y)->op != TJ_OP_YIELD)
        return;
    const tj_inst *in = inst(v, y);
    tj_type i32 = tj_type_scalar(v->c, TJ_DT_I32);
    if (kind == BLOCK_BODY && in->nargs)
        tj_verify_fail(v, y, "the body block yields nothing");
    if (kind == BLOCK_GRID && (in->nargs < 1 || in->nargs > 3))
        tj_verify_fail(v, y, "the grid block yields 1 to 3 sizes, not %u", in->nargs);
    for (uint32_t a = 0; kind == BLOCK_GRID && a < in->nargs; a++) {
        tj_ref x = in->args[a];
        if (valid_ref(v, x) && inst(v, x)->type != i32)
            tj_verify_fail(v, y, "grid size %u is %s, not i32", a + 1, TS(inst(v, x)->type));
    }
}

static int verify_unguarded(const tj_kernel *k)
{
    tj_ctx *c = k->ctx;
    uint32_t nb = k->nblocks ? k->nblocks : 1;
    tj_verifier v = {k, c, tj_number_values(k), tj_alloc(c, k->ninsts), tj_alloc(c, k->ninsts),
                     tj_alloc(c, nb), 0, 0};
    check_params(&v);
    tj_verify_simt_kernel(&v);
    if (k->grid && k->grid == k->body)
        tj_verify_fail(&v, TJ_NONE, "grid and body are the same block");
    walk_block(&v, k->grid, TJ_NONE, BLOCK_GRID, 0);
    check_top_yield(&v, k->grid, BLOCK_GRID);
    walk_block(&v, k->body, TJ_NONE, BLOCK_BODY, 0);
    check_top_yield(&v, k->body, BLOCK_BODY);
    return v.errors ? 1 : 0;
}

static int verify_job(void *k) { return verify_unguarded(k); }

int tj_verify(const tj_kernel *k)
{
    if (!k)
        return 1;
    return tj_guarded(k->ctx, verify_job, (void *)k) != 0;
}
