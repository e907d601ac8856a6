/* Global memory hazards inside one program. A program's threads each run
 * its accesses for their own elements, so a load of a tensor the program
 * stored before (or a store over elements it loaded, or two stores to one
 * place) can meet another thread's element before or after that thread's
 * access, where the Tile IR's order says otherwise. For every tensor that a
 * kernel writes and also accesses in another way (reads it, writes it from
 * a second store, or updates it with a second kind of atomic), a barrier
 * goes between two conflicting accesses with no barrier between them
 * (bar.sync orders a program's global accesses too). Regions leave the
 * state unknown, as they do for shared memory, since a loop's next
 * iteration follows its end. Tensors only read, written by one store (one
 * in a loop writes other places each iteration, or the kernel is racy in
 * every order), or updated by one kind of atomic (they commute) pay
 * nothing. Not covered: accesses through two parameters bound to one
 * buffer, and the operand copies of rings (lower/ring.c), which read tensors
 * no kernel of the examples writes. */
#include <string.h>

#include "lower/lower.h"
#include "passes/facts.h"

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

void lw_hazard_access(lw *w, uint32_t param, tj_op op)
{
    int kind = kind_of(op);
    if (!w->gtracked || param >= w->src->nparams || !w->gtracked[param])
        return;
    if (w->gstate[param] & conflicts(kind))
        lw_barrier(w);
    w->gstate[param] |= (uint8_t)kind;
}

void lw_hazard_unknown(lw *w)
{
    for (uint32_t p = 0; w->gtracked && p < w->src->nparams; p++)
        if (w->gtracked[p])
            w->gstate[p] = GA_ALL;
}

void lw_hazard_clear(lw *w)
{
    if (w->gstate)
        memset(w->gstate, 0, w->src->nparams);
}
