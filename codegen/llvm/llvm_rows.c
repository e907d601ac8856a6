/* Rows and elements nothing reads. An edge program's tiles have rows (and
 * columns) past the tensor (attention.tj's S = 80 in query blocks of 64:
 * the second block has 16 rows inside; matmul.tj BM = 128 computes 128 x
 * 128 products for 96 x 80 stored), and every op computes them although
 * only a clipped store reads them. For each store (or atomic) of a plain
 * slice view (no gathers) of a tensor parameter, two sets of values are
 * found, each
 * the largest in which every use of a member passes what it holds on only
 * into a member or as the store's value:
 * - rows (g->row_store; the view's first slice is the stored tile's axis
 *   0, R long; of a rank-1 tile, its elements): row i reaches memory
 *   only as row i of the store, through
 *   elementwise ops, a reshape or a broadcast that keeps axis 0, a
 *   reduction along another axis, a product's left operand or accumulator;
 * - elements (g->cell_store; the view's two slices are a rank-2 tile's
 *   axes): element (i, j) reaches memory only as element (i, j) of the
 *   store, through elementwise ops and a product's accumulator;
 * and, for both, a for's initial value or yield whose carried value (the
 * body argument) and result are members, unless a slice start of the
 * store lies inside that for (the store would run in a later iteration,
 * with the next start). A member's rows (columns) from min(max(dim -
 * start, 0), R) on are never read, and the loops of the ops that know it
 * (lg_live_rows, lg_dot_read_extent) stop there; every other op computes
 * the whole tile, which is always right. */
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

/* What a member's values reach the store as: its rows, or its elements. */
typedef enum { REACH_ROWS, REACH_CELLS } reach_kind;

/* One store being planned. */
typedef struct reach {
    reach_kind kind;
    const uses_of *u;
    tj_ref store;
    int axes[2];     /* the view axes of the stored tile's axes 0 and 1 (-1: none) */
    uint8_t *member; /* per instruction */
} reach;

/* A store, or an atomic: both touch memory only inside the tensor, at
 * the elements of their value (operand 1) that their view puts there. */
static int is_sink(tj_op op)
{
    return op == TJ_OP_STORE || op == TJ_OP_ATOMIC_ADD || op == TJ_OP_ATOMIC_MAX || op == TJ_OP_ATOMIC_MIN;
}

/* The view axes of store s's first two tile axes (-1 where it has fewer),
 * and how many slices its view has; -1 where s is not a store (or an
 * atomic) of a plain slice view of a tensor parameter (each axis an index
 * or a slice). */
static int store_axes(const lg *g, tj_ref s, int axes[2])
{
    const tj_inst *in = lg_in(g, s);
    if (!is_sink(in->op) || in->nargs < 2)
        return -1;
    const tj_inst *v = lg_in(g, in->args[0]);
    if (v->op != TJ_OP_VIEW || lg_in(g, v->args[0])->op != TJ_OP_PARAM)
        return -1;
    int slices = 0;
    axes[0] = axes[1] = -1;
    for (uint32_t a = 0; a < v->nlist; a++) {
        if (v->list[a] == TJ_VIEW_INDEX)
            continue;
        if (v->list[a] <= 0)
            return -1;
        if (slices < 2)
            axes[slices] = (int)a;
        slices++;
    }
    return slices;
}

/* The start of store s's slice along view axis `axis`. */
static tj_ref slice_start(const lg *g, tj_ref s, int axis)
{
    return lg_in(g, lg_in(g, s)->args[0])->args[axis + 1];
}

/* Whether r's type can be a member: a tile whose leading axes have the
 * stored extents (rows: axis 0; elements: both of a rank-2 tile's). */
static int member_shape(const lg *g, const reach *p, tj_ref r)
{
    const tj_type_info *t = lg_ti(g, r);
    const int32_t *extent = lg_in(g, lg_in(g, p->store)->args[0])->list;
    if (t->kind != TJ_TK_TILE || t->rank < 1 || t->shape[0] != extent[p->axes[0]])
        return 0;
    return p->kind == REACH_ROWS || (t->rank == 2 && t->shape[1] == extent[p->axes[1]]);
}

/* Whether scalar x lies inside for f (its body or a region within). */
static int inside_for(const lg *g, tj_ref x, tj_ref f)
{
    for (tj_ref o = tj_block_at(g->k, lg_in(g, x)->block)->owner; o; o = tj_block_at(g->k, lg_in(g, o)->block)->owner)
        if (o == f)
            return 1;
    return 0;
}

/* Whether a slice start of the store lies inside for f. */
static int start_inside(const lg *g, const reach *p, tj_ref f)
{
    for (int t = 0; t < (p->kind == REACH_CELLS ? 2 : 1); t++)
        if (inside_for(g, slice_start(g, p->store, p->axes[t]), f))
            return 1;
    return 0;
}

static int is_reduction(tj_op op)
{
    return op == TJ_OP_REDUCE_SUM || op == TJ_OP_REDUCE_PROD || op == TJ_OP_REDUCE_MAX || op == TJ_OP_REDUCE_MIN ||
           op == TJ_OP_ARGMAX || op == TJ_OP_ARGMIN;
}

/* Whether carried value c of for f goes on only into members: the body
 * argument and the result's proj. */
static int carried_members(const lg *g, const reach *p, tj_ref f, uint32_t c)
{
    const tj_block *body = tj_block_at(g->k, lg_in(g, f)->region[0]);
    if (body->ninsts < c + 2 || !p->member[body->insts[c + 1]] || start_inside(g, p, f))
        return 0;
    for (uint32_t i = p->u->first[f]; i < p->u->first[f + 1]; i++)
        if (lg_in(g, p->u->user[i])->op != TJ_OP_PROJ ||
            (lg_in(g, p->u->user[i])->imm == (int64_t)c && !p->member[p->u->user[i]]))
            return 0;
    return 1;
}

/* Whether use (x, operand a), a for's initial value or a yield, passes
 * the carried value on only into members. */
static int carried_ok(const lg *g, const reach *p, tj_ref x, uint32_t a)
{
    const tj_inst *in = lg_in(g, x);
    tj_ref f = in->op == TJ_OP_FOR ? x : in->op == TJ_OP_YIELD ? tj_block_at(g->k, in->block)->owner : TJ_NONE;
    if (!f || lg_in(g, f)->op != TJ_OP_FOR)
        return 0;
    if (in->op == TJ_OP_FOR && a < 3) /* a bound, not a carried value */
        return 0;
    if (in->op == TJ_OP_YIELD && lg_in(g, f)->region[0] != in->block)
        return 0;
    return carried_members(g, p, f, in->op == TJ_OP_FOR ? a - 3 : a);
}

/* Whether use (x, operand a) of a member passes its row i (element (i, j))
 * on only as row i (element (i, j)) of a member, or stores it as the
 * store's value. */
static int use_ok(const lg *g, const reach *p, tj_ref x, uint32_t a)
{
    const tj_inst *in = lg_in(g, x);
    const tj_type_info *from = lg_ti(g, in->args[a]);
    int rows = p->kind == REACH_ROWS;
    if (x == p->store)
        return a == 1;
    if (tj_op_get(in->op)->flags & TJ_OPF_ELEM) /* every operand has the result's shape */
        return p->member[x];
    if (in->op == TJ_OP_RESHAPE) /* row-major, both R rows long: row i stays row i */
        return rows && p->member[x];
    if (in->op == TJ_OP_BROADCAST) /* the same rank: axis 0 is R on both sides */
        return rows && lg_ti(g, x)->rank == from->rank && p->member[x];
    if (is_reduction(in->op))
        return rows && in->imm >= 1 && p->member[x];
    if (in->op == TJ_OP_DOT) /* the accumulator's (i, j) is the result's; a's row i its row i */
        return from->rank == 2 && (a == 2 || (rows && a == 0)) && p->member[x];
    return carried_ok(g, p, x, a);
}

static int uses_ok(const lg *g, const reach *p, tj_ref r)
{
    for (uint32_t i = p->u->first[r]; i < p->u->first[r + 1]; i++)
        if (!use_ok(g, p, p->u->user[i], p->u->operand[i]))
            return 0;
    return 1;
}

/* The store's members, marked in plan (row_store or cell_store). A value
 * that reaches memory is a member of one store's set at most; one that
 * never does (a body argument nothing reads) is a member of every set,
 * and keeps the first. */
static void plan_store(const lg *g, reach *p, tj_ref *plan)
{
    uint32_t n = g->k->ninsts;
    for (tj_ref r = 1; r < n; r++)
        p->member[r] = r != p->store && member_shape(g, p, r); /* an atomic's old values are no member */
    for (int changed = 1; changed;) {
        changed = 0;
        for (tj_ref r = 1; r < n; r++)
            if (p->member[r] && !uses_ok(g, p, r))
                p->member[r] = 0, changed = 1;
    }
    for (tj_ref r = 1; r < n; r++)
        if (p->member[r] && !plan[r])
            plan[r] = p->store;
}

/* Every store's members of both kinds. */
static void plan_stores(lg *g, const uses_of *u, uint8_t *member)
{
    for (tj_ref s = 1; s < g->k->ninsts; s++) {
        reach p = {REACH_ROWS, u, s, {-1, -1}, member};
        int slices = store_axes(g, s, p.axes);
        if (slices >= 1 && lg_in(g, lg_in(g, s)->args[0])->list[p.axes[0]] >= 2)
            plan_store(g, &p, g->row_store);
        p.kind = REACH_CELLS;
        if (slices == 2)
            plan_store(g, &p, g->cell_store);
    }
}

int lg_plan_rows(lg *g)
{
    uses_of u = {0};
    uint8_t *member = calloc(g->k->ninsts, 1);
    int rc = !member || collect_uses(g, &u) ? -1 : 0;
    if (!rc)
        plan_stores(g, &u, member);
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

/* How much of store s's slice along view axis `axis` lies inside its
 * tensor (i64, evaluated here), or NULL where its start is not emitted
 * before r. */
static LLVMValueRef inside_end(lg *g, tj_ref s, int axis, tj_ref r)
{
    const tj_inst *v = lg_in(g, lg_in(g, s)->args[0]);
    tj_ref start = slice_start(g, s, axis);
    if (!lg_emitted_before(g, start, r))
        return NULL;
    LLVMValueRef at = lg_to_i64(g, lg_ti(g, start)->dtype, lg_elem(g, start, lg_i64(g, 0)));
    return lg_slice_inside_end(g, (uint32_t)lg_in(g, v->args[0])->imm, axis, at, (uint64_t)v->list[axis]);
}

/* Whether r runs in a loop's body (some trip count of times a program). */
static int in_loop(const lg *g, tj_ref r)
{
    for (tj_ref o = tj_block_at(g->k, lg_in(g, r)->block)->owner; o; o = tj_block_at(g->k, lg_in(g, o)->block)->owner)
        if (lg_in(g, o)->op == TJ_OP_FOR || lg_in(g, o)->op == TJ_OP_WHILE)
            return 1;
    return 0;
}

/* A rank-1 tile's rows are its elements: a loop over them to a runtime
 * count takes the loop vectorizer's epilogue and remainder, which pay
 * only in a loop's body, where the work past the tensor repeats every
 * trip (colsum.tj's sums of rows of 100 in tiles of 1024). Elsewhere an
 * edge program saves less than the compile costs (gelu.tj's 27 -> 32 ms
 * of CPU). */
LLVMValueRef lg_live_rows(lg *g, tj_ref r)
{
    tj_ref s = g->row_store ? g->row_store[r] : TJ_NONE;
    int axes[2];
    if (!s || (lg_ti(g, r)->rank == 1 && !in_loop(g, r)))
        return NULL;
    return store_axes(g, s, axes) >= 1 ? inside_end(g, s, axes[0], r) : NULL;
}

int lg_dot_read_extent(lg *g, tj_ref r, LLVMValueRef *rows, LLVMValueRef *cols)
{
    tj_ref s = g->cell_store ? g->cell_store[r] : TJ_NONE;
    int axes[2];
    if (!s || store_axes(g, s, axes) != 2 || !lg_emitted_before(g, slice_start(g, s, axes[1]), r))
        return 0;
    if (!(*rows = inside_end(g, s, axes[0], r)))
        return 0;
    *cols = inside_end(g, s, axes[1], r);
    return 1;
}
