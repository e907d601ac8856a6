/* The verifier's rules for ops with regions: the operands and results of
 * for and if, and the signature of every region (its block arguments and
 * the values its yield passes back). */
#include "ir/verify_internal.h"

/* ---- for and if -------------------------------------------------------------- */

/* A for's or if's results: none (no result or the empty tuple) or a tuple
 * of tiles. Returns the element count, or -1 after reporting. */
static int64_t result_count(V *v, tj_ref r)
{
    const tj_type_info *t = info(v, inst(v, r)->type);
    if (t->kind == TJ_TK_VOID)
        return 0;
    if (t->kind != TJ_TK_TUPLE) {
        tj_verify_fail(v, r, "result type should be a tuple");
        return -1;
    }
    for (uint32_t e = 0; e < t->nelems; e++) {
        if (!is_kind(v, t->elems[e], TJ_TK_TILE)) {
            tj_verify_fail(v, r, "result %u is %s; only tiles are carried", e + 1, TS(t->elems[e]));
            return -1;
        }
    }
    return t->nelems;
}

/* Operands first.. are the carried values: tiles, one per result. */
static void check_carried(V *v, tj_ref r, uint32_t first)
{
    const tj_inst *in = inst(v, r);
    uint32_t ncarried = in->nargs - first;
    for (uint32_t a = first; a < in->nargs; a++)
        if (!tj_verify_tile_arg(v, r, a))
            return;
    int64_t nresults = result_count(v, r);
    if (nresults < 0)
        return;
    if (nresults != ncarried) {
        tj_verify_fail(v, r, "carries %u values but has %lld results", ncarried, (long long)nresults);
        return;
    }
    for (uint32_t e = 0; e < ncarried; e++) {
        tj_type want = info(v, in->type)->elems[e];
        if (arg_type(v, r, first + e) != want)
            tj_verify_fail(v, r, "initial value %u is %s, but result %u is %s", e + 1,
                           TS(arg_type(v, r, first + e)), e + 1, TS(want));
    }
}

static void check_for(V *v, tj_ref r)
{
    tj_type bound = arg_type(v, r, 0);
    if (!is_int_scalar(v, bound) || arg_type(v, r, 1) != bound || arg_type(v, r, 2) != bound) {
        tj_verify_fail(v, r, "lo, hi and step are integer scalars of one type, not %s, %s, %s", TS(bound),
                       TS(arg_type(v, r, 1)), TS(arg_type(v, r, 2)));
        return;
    }
    check_carried(v, r, 3);
}

static void check_while(V *v, tj_ref r)
{
    if (arg_type(v, r, 0) != tj_type_scalar(v->c, TJ_DT_BOOL))
        tj_verify_fail(v, r, "condition is %s, not bool", TS(arg_type(v, r, 0)));
    else
        check_carried(v, r, 1);
}

static void check_if(V *v, tj_ref r)
{
    if (arg_type(v, r, 0) != tj_type_scalar(v->c, TJ_DT_BOOL))
        tj_verify_fail(v, r, "condition is %s, not bool", TS(arg_type(v, r, 0)));
    else
        result_count(v, r);
}

void tj_verify_control_op(V *v, tj_ref r)
{
    switch (inst(v, r)->op) {
    case TJ_OP_FOR: check_for(v, r); break;
    case TJ_OP_WHILE: check_while(v, r); break;
    default: check_if(v, r); break;
    }
}

/* ---- region signatures ---------------------------------------------------------- */

/* Block b's arguments must have types want[0..n); `what` names them. */
static void check_block_args(V *v, tj_ref owner, tj_block_id b, const tj_type *want, uint32_t n,
                             const char *what)
{
    const tj_block *blk = tj_block_at(v->k, b);
    uint32_t nargs = 0;
    for (; nargs < blk->ninsts; nargs++)
        if (!valid_ref(v, blk->insts[nargs]) || inst(v, blk->insts[nargs])->op != TJ_OP_ARG)
            break;
    if (nargs != n) {
        tj_verify_fail(v, owner, "its region takes %u arguments (%s), not %u", n, what, nargs);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        if (inst(v, blk->insts[i])->type != want[i])
            tj_verify_fail(v, blk->insts[i], "argument %u should be %s (%s)", i + 1, TS(want[i]), what);
}

/* Block b's yield must pass values of types want[0..n). */
static void check_block_yield(V *v, tj_block_id b, const tj_type *want, uint32_t n, const char *what)
{
    const tj_block *blk = tj_block_at(v->k, b);
    tj_ref y = blk->ninsts ? blk->insts[blk->ninsts - 1] : TJ_NONE;
    if (!valid_ref(v, y) || inst(v, y)->op != TJ_OP_YIELD)
        return; /* reported with the block */
    const tj_inst *in = inst(v, y);
    if (in->nargs != n) {
        tj_verify_fail(v, y, "yields %u values, expected %u (%s)", in->nargs, n, what);
        return;
    }
    for (uint32_t a = 0; a < n; a++)
        if (valid_ref(v, in->args[a]) && arg_type(v, y, a) != want[a])
            tj_verify_fail(v, y, "value %u is %s, expected %s (%s)", a + 1, TS(arg_type(v, y, a)),
                           TS(want[a]), what);
}

/* for: the induction variable and the carried values in, the next carried
 * values out. */
static void for_signature(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    uint32_t ncarried = in->nargs - 3;
    tj_type *want = tj_alloc(v->c, sizeof(tj_type) * (ncarried + 1));
    want[0] = arg_type(v, r, 0);
    for (uint32_t e = 0; e < ncarried; e++)
        want[1 + e] = arg_type(v, r, 3 + e);
    check_block_args(v, r, in->region[0], want, ncarried + 1,
                     "the induction variable and the carried values");
    check_block_yield(v, in->region[0], want + 1, ncarried, "the carried values");
}

/* while: the carried values in; the condition and the next carried values out. */
static void while_signature(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    uint32_t ncarried = in->nargs - 1;
    tj_type *want = tj_alloc(v->c, sizeof(tj_type) * (ncarried + 1));
    want[0] = tj_type_scalar(v->c, TJ_DT_BOOL);
    for (uint32_t e = 0; e < ncarried; e++)
        want[1 + e] = arg_type(v, r, 1 + e);
    check_block_args(v, r, in->region[0], want + 1, ncarried, "the carried values");
    check_block_yield(v, in->region[0], want, ncarried + 1, "the condition and the carried values");
}

/* if: no arguments; each branch yields the results. */
static void if_signature(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    const tj_type_info *t = info(v, in->type);
    if (t->kind != TJ_TK_VOID && t->kind != TJ_TK_TUPLE)
        return; /* reported by check_if */
    for (int g = 0; g < 2; g++) {
        check_block_args(v, r, in->region[g], NULL, 0, "none");
        check_block_yield(v, in->region[g], t->elems, t->nelems, "the if's results");
    }
}

/* scan: 2n scalars in (left values, then right values), n scalars out. */
static void scan_signature(V *v, tj_ref r)
{
    const tj_inst *in = inst(v, r);
    uint32_t n = in->nargs;
    tj_type *want = tj_alloc(v->c, sizeof(tj_type) * 2 * n);
    for (uint32_t a = 0; a < n; a++)
        want[a] = want[n + a] = tj_type_scalar(v->c, dtype_of(v, arg_type(v, r, a)));
    check_block_args(v, r, in->region[0], want, 2 * n, "the left then the right scalars");
    check_block_yield(v, in->region[0], want, n, "the combined scalars");
}

void tj_verify_region_signature(V *v, tj_ref r)
{
    switch (inst(v, r)->op) {
    case TJ_OP_FOR: for_signature(v, r); break;
    case TJ_OP_IF: if_signature(v, r); break;
    case TJ_OP_WHILE: while_signature(v, r); break;
    case TJ_OP_SCAN: scan_signature(v, r); break;
    default: break;
    }
}
