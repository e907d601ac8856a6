/* Global memory hazards inside one program. A program's threads each run
 * its accesses for their own elements, so a load of a tensor the program
 * stored before (or a store over elements it loaded, or two stores to one
 * place) can meet another thread's element before or after that thread's
 * access, where the Tile IR's order says otherwise. For every tensor that a
 * kernel writes and also accesses in another way (reads it, writes it from
 * a second store, or updates it with a second kind of atomic), a barrier
 * goes between two conflicting accesses with no barrier between them
 * (bar.sync orders a program's global accesses too). A Tile IR loop's
 * body starts, and its end leaves, the state before it with every access
 * of the body added (an iteration's accesses precede the next and what
 * follows the loop); an if's branches start with the state before it, and
 * its end has both branches' accesses added; other regions (the lowering's
 * own loops) leave the state unknown. A store does not conflict with
 * itself: the same instruction again (a loop's next iteration) writes
 * other places, as a tensor written by one store assumes. Tensors only
 * read, written by one store (one in a loop writes other places each
 * iteration, or the kernel is racy in every order), or updated by one kind
 * of atomic (they commute) pay nothing. Not covered: accesses through two parameters bound to one
 * buffer, and the operand copies of rings (lower/ring.c), which read tensors
 * no kernel of the examples writes. */
#include <string.h>

#include "lower/lower.h"
#include "passes/facts.h"
#include "passes/pass_util.h"

enum { GA_READ = 1, GA_WRITE = 2, GA_ADD = 4, GA_MAX = 8, GA_MIN = 16, GA_ALL = 31 };

static int kind_of(tj_op op)
{
    switch (op) {
    case TJ_OP_LOAD:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_LOAD_RELAXED: return GA_READ;
    case TJ_OP_STORE:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_STORE_RELAXED: return GA_WRITE;
    case TJ_OP_ATOMIC_ADD: return GA_ADD;
    case TJ_OP_ATOMIC_MAX: return GA_MAX;
    case TJ_OP_ATOMIC_MIN: return GA_MIN;
    default: return 0;
    }
}

/* The kinds an access of `kind` must not follow without a barrier. */
static int conflicts(int kind)
{
    if (kind == GA_READ)
        return GA_ALL & ~GA_READ;
    if (kind == GA_WRITE)
        return GA_ALL;
    return GA_ALL & ~kind;
}

static int more_than_one_bit(unsigned x) { return (x & (x - 1)) != 0; }

void lw_hazard_plan(lw *w)
{
    const tj_kernel *k = w->src;
    uint32_t n = k->nparams ? k->nparams : 1, *stores = tj_alloc(w->c, sizeof *stores * n);
    uint8_t *kinds = tj_alloc(w->c, n);
    w->gtracked = tj_alloc(w->c, n);
    w->gstate = tj_alloc(w->c, n);
    w->gwriter = tj_alloc(w->c, sizeof *w->gwriter * n);
    for (tj_ref r = 1; r <= k->ninsts; r++) {
        int kind = kind_of(k->insts[r].op);
        const tj_inst *view = kind && k->insts[r].nargs ? &k->insts[k->insts[r].args[0]] : NULL;
        uint32_t p;
        if (!view || view->op != TJ_OP_VIEW || !tj_param_index(k, view->args[0], &p) || p >= k->nparams)
            continue;
        kinds[p] |= (uint8_t)kind;
        stores[p] += kind == GA_WRITE;
    }
    for (uint32_t p = 0; p < k->nparams; p++)
        w->gtracked[p] = (kinds[p] & ~GA_READ) && (more_than_one_bit(kinds[p]) || stores[p] > 1);
}

/* Adds an access of `kind` by Tile IR instruction r to parameter p's state. */
static void add(uint8_t *kinds, tj_ref *writer, int kind, tj_ref r)
{
    if (kind == GA_WRITE)
        *writer = !*writer || *writer == r ? r : LW_WRITERS;
    *kinds |= (uint8_t)kind;
}

void lw_hazard_access(lw *w, uint32_t param, tj_ref r)
{
    int kind = kind_of(w->src->insts[r].op);
    if (!w->gtracked || param >= w->src->nparams || !w->gtracked[param])
        return;
    int again = w->gstate[param] == GA_WRITE && w->gwriter[param] == r; /* the same store: other places */
    if ((w->gstate[param] & conflicts(kind)) && !again)
        lw_barrier(w);
    add(&w->gstate[param], &w->gwriter[param], kind, r);
}

void lw_hazard_unknown(lw *w)
{
    for (uint32_t p = 0; w->gtracked && p < w->src->nparams; p++)
        if (w->gtracked[p]) {
            w->gstate[p] = GA_ALL;
            w->gwriter[p] = LW_WRITERS;
        }
}

void lw_hazard_clear(lw *w)
{
    if (w->gstate) {
        memset(w->gstate, 0, w->src->nparams);
        memset(w->gwriter, 0, sizeof *w->gwriter * w->src->nparams);
    }
}

lw_hazard_state lw_hazard_save(lw *w)
{
    uint32_t n = w->src->nparams ? w->src->nparams : 1;
    lw_hazard_state s = {tj_alloc(w->c, n), tj_alloc(w->c, sizeof *s.writer * n)};
    if (w->gstate) {
        memcpy(s.kinds, w->gstate, w->src->nparams);
        memcpy(s.writer, w->gwriter, sizeof *s.writer * w->src->nparams);
    }
    return s;
}

/* Every access of block b and the regions below it, added to the state. */
static void add_block(lw *w, tj_block_id b, int depth)
{
    const tj_kernel *k = w->src;
    const tj_block *blk = &k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        const tj_inst *in = &k->insts[r];
        for (int g = 0; g < 2; g++)
            if (in->region[g] && depth < TJ_PASS_MAX_DEPTH)
                add_block(w, in->region[g], depth + 1);
            else if (in->region[g])
                lw_hazard_unknown(w);
        int kind = kind_of(in->op);
        const tj_inst *view = kind && in->nargs ? &k->insts[in->args[0]] : NULL;
        uint32_t p;
        if (view && view->op == TJ_OP_VIEW && tj_param_index(k, view->args[0], &p) && p < k->nparams &&
            w->gtracked[p])
            add(&w->gstate[p], &w->gwriter[p], kind, r);
    }
}

void lw_hazard_enter(lw *w, const lw_hazard_state *before, tj_block_id a, tj_block_id b)
{
    if (!w->gstate)
        return;
    memcpy(w->gstate, before->kinds, w->src->nparams);
    memcpy(w->gwriter, before->writer, sizeof *w->gwriter * w->src->nparams);
    if (a)
        add_block(w, a, 0);
    if (b)
        add_block(w, b, 0);
}
