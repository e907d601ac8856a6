/* Which rows and columns of a dot's result reach memory. An edge tile's
 * rows past M and columns past N are computed like the others, and only a
 * clipped store reads them: matmul.tj BM = 128 computes 128 x 128 products
 * for 96 x 80 stored. Where every path from a rank-2 dot's result (through
 * elementwise ops, the accumulator of a dot, a for's yield to its body
 * argument and its result) ends in the value of one store of a plain slice
 * view (no gathers) whose slices are the tile's two axes, element (i, j) of
 * the result reaches memory only as element (i, j) of that store, which
 * writes nothing past its tensor: the dot may leave the result's rows and
 * columns past the store's inside part uncomputed, since nothing ever
 * reads them: the accumulator's values, or undefined where the product
 * starts from zero and its registers are never initialised (llvm_dot.c's
 * from_zero). Any other reader (a reduction, a
 * reshape, a second store, a mask, a while or an if) and nothing is
 * skipped. */
#include <stdlib.h>

#include "codegen/llvm/llvm.h"

typedef struct read_search {
    const tj_type_info *shape; /* the dot result's */
    uint8_t *seen;             /* per instruction: its readers were checked */
    uint8_t *crossed;          /* per instruction: a for whose yield the result passes */
    tj_ref store;              /* the one store found so far */
} read_search;

static int same_shape(const tj_type_info *a, const tj_type_info *b)
{
    return a->kind == TJ_TK_TILE && a->rank == 2 && a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1];
}

/* Whether store u writes element (i, j) of its value at (at_0 + i, at_1 + j)
 * of a tensor: a view whose two slices have the tile's extents, every
 * other axis an index. */
static int plain_store(const lg *g, tj_ref u, const tj_type_info *shape)
{
    const tj_inst *v = lg_in(g, lg_in(g, u)->args[0]);
    if (v->op != TJ_OP_VIEW || lg_in(g, v->args[0])->op != TJ_OP_PARAM)
        return 0;
    int t = 0;
    for (uint32_t a = 0; a < v->nlist; a++) {
        if (v->list[a] == TJ_VIEW_INDEX)
            continue;
        if (v->list[a] < 0 || t >= 2 || v->list[a] != shape->shape[t++])
            return 0;
    }
    return t == 2;
}

static int reads_ok(const lg *g, tj_ref v, read_search *s);

/* Whether the value yielded as carried value a of for f's body reaches
 * memory only through readers that reads_ok accepts: the body argument
 * (the next iteration's) and the for's result (a tuple: only proj reads
 * it). */
static int carried_ok(const lg *g, tj_ref f, uint32_t a, read_search *s)
{
    const tj_block *body = tj_block_at(g->k, lg_in(g, f)->region[0]);
    if (body->ninsts < a + 2 || !reads_ok(g, body->insts[a + 1], s))
        return 0;
    s->crossed[f] = 1;
    for (tj_ref p = 1; p < g->k->ninsts; p++)
        if (lg_in(g, p)->op == TJ_OP_PROJ && lg_in(g, p)->args[0] == f && lg_in(g, p)->imm == (int64_t)a &&
            !reads_ok(g, p, s))
            return 0;
    return 1;
}

/* Whether use u (operand a) of v passes element (i, j) on only as element
 * (i, j) of values that reads_ok accepts, or stores it as s's store. */
static int use_ok(const lg *g, tj_ref u, uint32_t a, read_search *s)
{
    const tj_inst *in = lg_in(g, u);
    if (tj_op_get(in->op)->flags & TJ_OPF_ELEM) /* every operand has the result's shape */
        return same_shape(lg_ti(g, u), s->shape) && reads_ok(g, u, s);
    if (in->op == TJ_OP_DOT)
        return a == 2 && reads_ok(g, u, s);
    if (in->op == TJ_OP_STORE) {
        if (a != 1 || (s->store && s->store != u) || !plain_store(g, u, s->shape))
            return 0;
        s->store = u;
        return 1;
    }
    if (in->op != TJ_OP_YIELD)
        return 0;
    tj_ref f = tj_block_at(g->k, in->block)->owner;
    return f && lg_in(g, f)->op == TJ_OP_FOR && lg_in(g, f)->region[0] == in->block && carried_ok(g, f, a, s);
}

static int reads_ok(const lg *g, tj_ref v, read_search *s)
{
    if (s->seen[v])
        return 1;
    s->seen[v] = 1;
    for (tj_ref u = 1; u < g->k->ninsts; u++) {
        const tj_inst *in = lg_in(g, u);
        for (uint32_t a = 0; a < in->nargs; a++)
            if (in->args[a] == v && !use_ok(g, u, a, s))
                return 0;
    }
    return 1;
}

/* Whether scalar x, emitted before r, has the value the store sees
 * wherever r's result reaches it: x is not inside a for whose yield
 * carries the result on (the store would run in a later iteration, with
 * x's next value). */
static int fixed_before(const lg *g, tj_ref x, tj_ref r, const read_search *s)
{
    for (tj_ref f = tj_block_at(g->k, lg_in(g, x)->block)->owner; f; f = tj_block_at(g->k, lg_in(g, f)->block)->owner)
        if (s->crossed[f])
            return 0;
    return lg_emitted_before(g, x, r);
}

/* How many of the store view v's tile rows (t 0) or columns (t 1) lie
 * inside its tensor: an upper bound of those the store writes. */
static LLVMValueRef inside_extent(lg *g, const tj_inst *v, int t, int64_t len)
{
    uint32_t param = (uint32_t)lg_in(g, v->args[0])->imm;
    for (uint32_t a = 0, seen = 0; a < v->nlist; a++) {
        if (v->list[a] == TJ_VIEW_INDEX || seen++ != (uint32_t)t)
            continue;
        tj_ref at = v->args[a + 1];
        LLVMValueRef start = lg_to_i64(g, lg_ti(g, at)->dtype, lg_elem(g, at, lg_i64(g, 0)));
        return lg_slice_inside_end(g, param, (int)a, start, (uint64_t)len);
    }
    return NULL;
}

int lg_dot_read_extent(lg *g, tj_ref r, LLVMValueRef *rows, LLVMValueRef *cols)
{
    uint32_t n = g->k->ninsts;
    read_search s = {lg_ti(g, r), calloc(n, 1), calloc(n, 1), TJ_NONE};
    int ok = s.seen && s.crossed && s.shape->rank == 2 && reads_ok(g, r, &s) && s.store;
    const tj_inst *v = ok ? lg_in(g, lg_in(g, s.store)->args[0]) : NULL;
    for (uint32_t a = 0; ok && a < v->nlist; a++)
        ok = v->list[a] == TJ_VIEW_INDEX || fixed_before(g, v->args[a + 1], r, &s);
    free(s.seen);
    free(s.crossed);
    if (!ok)
        return 0;
    *rows = inside_extent(g, v, 0, s.shape->shape[0]);
    *cols = inside_extent(g, v, 1, s.shape->shape[1]);
    return 1;
}
