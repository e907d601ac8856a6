/* Rows nothing reads. An edge program's tiles have rows past the tensor
 * (attention.tj's S = 80 in query blocks of 64: the second block has 16
 * rows inside), and every row-wise op runs on them although only a
 * clipped store reads the result. For each store of a plain slice view
 * whose first slice is the stored tile's axis 0 (R long), the values whose
 * row i reaches memory only as row i of that store are found: the largest
 * set in which every use of a member is that store's value or a
 * row-preserving op whose result is a member (elementwise ops, a reshape
 * or a broadcast that keeps axis 0, a reduction along another axis, a
 * product's left operand or accumulator, a for's initial value or yield
 * whose carried value and result are members). A member's rows from
 * E = min(max(dim - start, 0), R) on are never read, and the loops of the
 * ops that know it (lg_live_rows) stop there; every other op computes the
 * whole tile, which is always right. */
#include <stdlib.h>

#include "codegen/llvm/llvm.h"

typedef struct uses_of {
    uint32_t *first;     /* per instruction: its first use in `use`; first[r + 1] ends it */
    tj_ref *user;
    uint32_t *operand;
} uses_of;

/* The uses by instructions in a block (the passes leave the ones they
 * replace in the array, outside every block). */
static int collect_uses(const lg *g, uses_of *u)
{
    uint32_t n = g->k->ninsts, total = 0;
    u->first = calloc(n + 1, sizeof *u->first);
    for (tj_ref r = 1; u->first && r < n; r++)
        for (uint32_t a = 0; lg_in(g, r)->block && a < lg_in(g, r)->nargs; a++)
            if (lg_in(g, r)->args[a] && lg_in(g, r)->args[a] < n)
                u->first[lg_in(g, r)->args[a] + 1]++, total++;
    u->user = calloc(total + 1, sizeof *u->user);
    u->operand = calloc(total + 1, sizeof *u->operand);
    if (!u->first || !u->user || !u->operand)
        return -1;
    for (uint32_t r = 1; r <= n; r++)
        u->first[r] += u->first[r - 1];
    uint32_t *fill = calloc(n, sizeof *fill);
    if (!fill)
        return -1;
    for (tj_ref r = 1; r < n; r++)
        for (uint32_t a = 0; lg_in(g, r)->block && a < lg_in(g, r)->nargs; a++) {
            tj_ref x = lg_in(g, r)->args[a];
            if (x && x < n) {
                uint32_t at = u->first[x] + fill[x]++;
                u->user[at] = r, u->operand[at] = a;
            }
        }
    free(fill);
    return 0;
}

/* The view axis that store s's tile axis 0 comes from, or -1 where s is
 * not a store of a plain slice view of a tensor parameter whose tile axis
 * 0 is a slice at least 2 long. */
static int row_axis(const lg *g, tj_ref s)
{
    const tj_inst *in = lg_in(g, s);
    if (in->op != TJ_OP_STORE || in->nargs < 2)
        return -1;
    const tj_inst *v = lg_in(g, in->args[0]);
    if (v->op != TJ_OP_VIEW || lg_in(g, v->args[0])->op != TJ_OP_PARAM)
        return -1;
    int first = -1;
    for (uint32_t a = 0; a < v->nlist; a++) {
        if (v->list[a] == TJ_VIEW_GATHER || (v->list[a] < 0 && v->list[a] != TJ_VIEW_INDEX))
            return -1;
        if (first < 0 && v->list[a] > 0)
            first = (int)a;
    }
    return first >= 0 && v->list[first] >= 2 ? first : -1;
}

static int leads_with(const lg *g, tj_ref r, int32_t rows)
{
    const tj_type_info *t = lg_ti(g, r);
    return t->kind == TJ_TK_TILE && t->rank >= 1 && t->shape[0] == rows;
}

static int is_reduction(tj_op op)
{
    return op == TJ_OP_REDUCE_SUM || op == TJ_OP_REDUCE_PROD || op == TJ_OP_REDUCE_MAX || op == TJ_OP_REDUCE_MIN ||
           op == TJ_OP_ARGMAX || op == TJ_OP_ARGMIN;
}

/* Whether carried value c of for f goes on only into members: the body
 * argument and the result's proj. */
static int carried_members(const lg *g, const uses_of *u, tj_ref f, uint32_t c, const uint8_t *member)
{
    const tj_block *body = tj_block_at(g->k, lg_in(g, f)->region[0]);
    if (body->ninsts < c + 2 || !member[body->insts[c + 1]])
        return 0;
    for (uint32_t i = u->first[f]; i < u->first[f + 1]; i++)
        if (lg_in(g, u->user[i])->op != TJ_OP_PROJ ||
            (lg_in(g, u->user[i])->imm == (int64_t)c && !member[u->user[i]]))
            return 0;
    return 1;
}

/* Whether use (x, operand a) of a member passes its row i on only as row i
 * of a member, or stores it as store s's value; *loop: the for it carries
 * the value through, if any. */
static int row_use_ok(const lg *g, const uses_of *u, tj_ref x, uint32_t a, tj_ref s, const uint8_t *member,
                      tj_ref *loop)
{
    const tj_inst *in = lg_in(g, x);
    const tj_type_info *from = lg_ti(g, in->args[a]);
    *loop = TJ_NONE;
    if (x == s)
        return a == 1;
    if (tj_op_get(in->op)->flags & TJ_OPF_ELEM) /* every operand has the result's shape */
        return member[x];
    if (in->op == TJ_OP_RESHAPE) /* row-major, both R rows long: row i stays row i */
        return member[x];
    if (in->op == TJ_OP_BROADCAST) /* the same rank: axis 0 is R on both sides */
        return lg_ti(g, x)->rank == from->rank && member[x];
    if (is_reduction(in->op))
        return in->imm >= 1 && member[x];
    if (in->op == TJ_OP_DOT)
        return from->rank == 2 && (a == 0 || a == 2) && member[x];
    tj_ref f = in->op == TJ_OP_FOR ? x : in->op == TJ_OP_YIELD ? tj_block_at(g->k, in->block)->owner : TJ_NONE;
    if (!f || lg_in(g, f)->op != TJ_OP_FOR)
        return 0;
    if (in->op == TJ_OP_FOR && a < 3) /* a bound, not a carried value */
        return 0;
    if (in->op == TJ_OP_YIELD && lg_in(g, f)->region[0] != in->block)
        return 0;
    *loop = f;
    return carried_members(g, u, f, in->op == TJ_OP_FOR ? a - 3 : a, member);
}

static int uses_ok(const lg *g, const uses_of *u, tj_ref r, tj_ref s, const uint8_t *member)
{
    tj_ref loop;
    for (uint32_t i = u->first[r]; i < u->first[r + 1]; i++)
        if (!row_use_ok(g, u, u->user[i], u->operand[i], s, member, &loop))
            return 0;
    return 1;
}

/* Whether scalar x lies inside for f (its body or a region within). */
static int inside_for(const lg *g, tj_ref x, tj_ref f)
{
    for (tj_ref o = tj_block_at(g->k, lg_in(g, x)->block)->owner; o; o = tj_block_at(g->k, lg_in(g, o)->block)->owner)
        if (o == f)
            return 1;
    return 0;
}

/* Store s's members, marked in row_store; member is scratch. The start of
 * the rows must be the same wherever a member's value is stored: not
 * defined inside a for that carries a member on (the store would run in a
 * later iteration, with the next start). */
static void plan_store(lg *g, const uses_of *u, tj_ref s, int axis, uint8_t *member)
{
    uint32_t n = g->k->ninsts;
    int32_t rows = (int32_t)lg_in(g, lg_in(g, s)->args[0])->list[axis];
    for (tj_ref r = 1; r < n; r++)
        member[r] = !g->row_store[r] && leads_with(g, r, rows);
    for (int changed = 1; changed;) {
        changed = 0;
        for (tj_ref r = 1; r < n; r++)
            if (member[r] && !uses_ok(g, u, r, s, member))
                member[r] = 0, changed = 1;
    }
    tj_ref start = lg_in(g, lg_in(g, s)->args[0])->args[axis + 1], loop;
    for (tj_ref r = 1; r < n; r++)
        for (uint32_t i = u->first[r]; member[r] && i < u->first[r + 1]; i++)
            if (row_use_ok(g, u, u->user[i], u->operand[i], s, member, &loop) && loop && inside_for(g, start, loop))
                return;
    for (tj_ref r = 1; r < n; r++)
        if (member[r])
            g->row_store[r] = s;
}

int lg_plan_rows(lg *g)
{
    uint32_t n = g->k->ninsts;
    uses_of u = {0};
    uint8_t *member = calloc(n, 1);
    int rc = !member || collect_uses(g, &u) ? -1 : 0;
    for (tj_ref s = 1; !rc && s < n; s++) {
        int axis = row_axis(g, s);
        if (axis >= 0)
            plan_store(g, &u, s, axis, member);
    }
    free(member);
    free(u.first);
    free(u.user);
    free(u.operand);
    return rc;
}

static uint32_t position_in_block(const tj_block *b, tj_ref x)
{
    uint32_t i = 0;
    while (i < b->ninsts && b->insts[i] != x)
        i++;
    return i;
}

int lg_emitted_before(const lg *g, tj_ref x, tj_ref r)
{
    const lval *xv = lg_val(g, x);
    if (lg_ti(g, x)->rank != 0 || !xv->v || xv->in_memory)
        return 0;
    tj_block_id xb = lg_in(g, x)->block;
    for (tj_ref at = r; at; at = tj_block_at(g->k, lg_in(g, at)->block)->owner)
        if (lg_in(g, at)->block == xb) {
            const tj_block *blk = tj_block_at(g->k, xb);
            return position_in_block(blk, x) < position_in_block(blk, at);
        }
    return 0;
}

LLVMValueRef lg_live_rows(lg *g, tj_ref r)
{
    tj_ref s = g->row_store ? g->row_store[r] : TJ_NONE;
    if (!s)
        return NULL;
    const tj_inst *v = lg_in(g, lg_in(g, s)->args[0]);
    int axis = row_axis(g, s);
    tj_ref start = v->args[axis + 1];
    if (!lg_emitted_before(g, start, r))
        return NULL;
    LLVMValueRef at = lg_to_i64(g, lg_ti(g, start)->dtype, lg_elem(g, start, lg_i64(g, 0)));
    return lg_slice_inside_end(g, (uint32_t)lg_in(g, v->args[0])->imm, axis, at, (uint64_t)v->list[axis]);
}
