/* Software pipelining of loads in loops (`stages`, docs/simt.md).
 *
 * A load in a loop body whose address depends only on the loop variable
 * (through pure arithmetic and views of values from outside the loop) is
 * issued d = stages - 1 iterations ahead: the loop carries d loaded tiles,
 * iteration i uses the oldest and starts the load of iteration i + d at the
 * top of its body, so the memory latency overlaps the work of d iterations.
 * Before the loop, the loads of the first d iterations are issued.
 *
 *     for i in range(lo, hi, s) { x = load(V(i)); ... }
 *  => p = load(V(lo))
 *     for i in range(lo, hi, s) carrying p { n = load(V(i + s)); x = p; ...; yield n }
 *
 * Loads past the end (i + d*s >= hi) read nothing the loop did not ask
 * for: their views are bounds-checked on the axes that move with i (the
 * prefetched copy keeps the original's proven-in-bounds flags only on the
 * other axes), and their values are never used. A loop that writes
 * memory only by plain stores (at any depth: a persistent matmul's
 * epilogue under an `if`) prefetches the loads of the tensors it never
 * stores to, whose reads no write of the program can reach (two tensor
 * parameters bound to one buffer are outside the memory model, docs/
 * language.md); any other write (atomics, ordered stores) leaves the loop
 * alone, as does a store to a tensor the load reads (a prefetched read
 * could pass it). */
#include <string.h>

#include "passes/pass_util.h"

/* Per instruction of the body: how it depends on the loop variable. */
enum { INVARIANT = 0, MOVES = 1, TAINTED = 2 };
/* Longest chain of moving instructions a prefetched load may depend on
 * (clone_at recurses along it). */
enum { MAX_CHAIN = 256 };

typedef struct prefetcher {
    tj_kernel *k;
    tj_ref loop;
    tj_block_id body;
    int distance;
    uint8_t *cls;  /* per instruction: INVARIANT / MOVES / TAINTED */
    uint16_t *chain; /* per instruction: its longest chain of moving operands */
    uint32_t ncls; /* instructions classified (those before this load's changes) */
    tj_ref *map;   /* per classified instruction: its clone in the copy being made */
} prefetcher;

static int class_of(const prefetcher *p, tj_ref x)
{
    return x && x < p->ncls && p->k->insts[x].block == p->body ? p->cls[x] : INVARIANT;
}

/* Pure, region-free ops move with the loop variable when an operand does. */
static void classify(prefetcher *p)
{
    p->ncls = p->k->ninsts;
    p->cls = tj_alloc(p->k->ctx, p->ncls);
    p->map = tj_alloc(p->k->ctx, sizeof *p->map * p->ncls);
    p->chain = tj_alloc(p->k->ctx, sizeof *p->chain * p->ncls);
    const tj_block *b = &p->k->blocks[p->body];
    for (uint32_t i = 0; i < b->ninsts; i++) {
        tj_ref r = b->insts[i];
        const tj_inst *in = &p->k->insts[r];
        unsigned flags = tj_op_get(in->op)->flags;
        int c = INVARIANT;
        for (uint32_t a = 0; a < in->nargs; a++) {
            tj_ref x = in->args[a];
            c = class_of(p, x) > c ? class_of(p, x) : c;
            if (class_of(p, x) == MOVES && p->chain[x] >= p->chain[r])
                p->chain[r] = (uint16_t)(p->chain[x] < MAX_CHAIN ? p->chain[x] + 1 : MAX_CHAIN);
        }
        if (in->op == TJ_OP_ARG)
            c = in->imm == 0 ? MOVES : TAINTED;
        else if (!(flags & TJ_OPF_PURE) || (flags & TJ_OPF_REGION))
            c = TAINTED;
        p->cls[r] = (uint8_t)c;
    }
}

static int is_candidate(const prefetcher *p, tj_ref r)
{
    const tj_inst *in = &p->k->insts[r];
    int moves = 0;
    if (in->op != TJ_OP_LOAD || p->chain[r] >= MAX_CHAIN)
        return 0;
    for (uint32_t a = 0; a < in->nargs; a++) {
        int c = class_of(p, in->args[a]);
        if (c == TAINTED)
            return 0;
        moves |= c == MOVES;
    }
    return moves;
}

/* A view's flags for a copy at another iteration: axes whose operand moves
 * with the loop variable are no longer proven in bounds. */
static uint32_t moved_view_flags(const prefetcher *p, const tj_inst *view)
{
    uint32_t flags = view->flags;
    for (uint32_t a = 1; a < view->nargs && a <= TJ_MAX_RANK; a++)
        if (class_of(p, view->args[a]) == MOVES)
            flags &= ~(1u << (a - 1));
    return flags;
}

/* Clones r and the body instructions it depends on (pure: MOVES, or
 * INVARIANT) at the cursor, with the loop variable replaced by iv;
 * returns the clone. */
static tj_ref clone_at(prefetcher *p, tj_cursor *at, tj_ref r, tj_ref iv)
{
    const tj_inst *in = &p->k->insts[r];
    if (class_of(p, r) == INVARIANT && p->k->insts[r].block != p->body)
        return r; /* defined outside the loop (an outer loop's variable too); invariant values
                     of the body (a constant `other`) are cloned: they come after the copies */
    if (in->op == TJ_OP_ARG) /* the only moving argument: this loop's variable */
        return iv;
    if (p->map[r])
        return p->map[r];
    tj_ref args[3 + TJ_MAX_RANK], *many = in->nargs > 3 + TJ_MAX_RANK ? tj_alloc(p->k->ctx, sizeof *many * in->nargs) : args;
    for (uint32_t a = 0; a < in->nargs; a++)
        many[a] = in->args[a] ? clone_at(p, at, in->args[a], iv) : TJ_NONE;
    in = &p->k->insts[r]; /* the instruction array may have moved */
    tj_ref c = tj_cursor_emit(p->k, at, in->op, in->type, many, in->nargs);
    tj_inst *ci = &p->k->insts[c];
    in = &p->k->insts[r];
    ci->imm = in->imm;
    ci->fimm = in->fimm;
    ci->flags = in->op == TJ_OP_VIEW ? moved_view_flags(p, in) : in->flags;
    ci->loc = in->loc;
    if (in->nlist)
        tj_inst_set_list(p->k, c, in->list, in->nlist);
    p->map[r] = c;
    return c;
}

static tj_ref clone_load(prefetcher *p, tj_cursor *at, tj_ref load, tj_ref iv)
{
    memset(p->map, 0, sizeof *p->map * p->ncls);
    return clone_at(p, at, load, iv);
}

/* base + n * step, emitted at the cursor (base itself for n = 0). */
static tj_ref iteration(tj_kernel *k, tj_cursor *at, tj_ref base, tj_ref step, int64_t n)
{
    if (n == 0)
        return base;
    tj_type t = k->insts[step].type;
    tj_ref off = step;
    if (n > 1) {
        tj_ref args[2] = {tj_cursor_const(k, at, t, (tj_cval){.i = n}), step};
        off = tj_cursor_emit(k, at, TJ_OP_MUL, t, args, 2);
    }
    tj_ref sum[2] = {base, off};
    return tj_cursor_emit(k, at, TJ_OP_ADD, t, sum, 2);
}

static uint32_t position_of(const tj_kernel *k, tj_block_id b, tj_ref r)
{
    const tj_block *blk = &k->blocks[b];
    uint32_t i = 0;
    while (i < blk->ninsts && blk->insts[i] != r)
        i++;
    return i;
}

/* Appends d carried values of type t to the loop: operands, body arguments
 * (returned), the result tuple. */
static tj_ref *add_carried(prefetcher *p, tj_type t, const tj_ref *init)
{
    tj_kernel *k = p->k;
    tj_inst *in = &k->insts[p->loop];
    uint32_t n = in->nargs, d = (uint32_t)p->distance;
    tj_ref *args = tj_alloc(k->ctx, sizeof *args * (n + d));
    memcpy(args, in->args, sizeof *args * n);
    memcpy(args + n, init, sizeof *args * d);
    tj_inst_set_args(k, p->loop, args, n + d);
    const tj_type_info *ti = tj_type_get(k->ctx, k->insts[p->loop].type);
    uint32_t ne = ti->kind == TJ_TK_TUPLE ? ti->nelems : 0;
    tj_type *elems = tj_alloc(k->ctx, sizeof *elems * (ne + d));
    if (ne)
        memcpy(elems, ti->elems, sizeof *elems * ne);
    tj_ref *slots = tj_alloc(k->ctx, sizeof *slots * d);
    for (uint32_t j = 0; j < d; j++) {
        elems[ne + j] = t;
        slots[j] = tj_inst_new(k, TJ_OP_ARG, t, NULL, 0);
        k->insts[slots[j]].imm = 1 + ne + j;
        tj_block_insert(k, p->body, 1 + ne + j, slots[j]);
        k->insts[slots[j]].block = p->body;
    }
    k->insts[p->loop].type = tj_type_tuple(k->ctx, ne + d, elems);
    return slots;
}

/* Pipelines one load: prologue copies, carried slots, the copy d
 * iterations ahead, the shifted yield. */
static void pipeline_load(prefetcher *p, tj_ref load)
{
    tj_kernel *k = p->k;
    uint32_t d = (uint32_t)p->distance;
    const tj_inst *loop = &k->insts[p->loop];
    tj_ref lo = loop->args[0], step = loop->args[2];
    tj_block_id outer = loop->block;
    tj_cursor pre = {outer, position_of(k, outer, p->loop), loop->loc};
    tj_ref *init = tj_alloc(k->ctx, sizeof *init * d);
    for (uint32_t j = 0; j < d; j++)
        init[j] = clone_load(p, &pre, load, iteration(k, &pre, lo, step, j));
    tj_type t = k->insts[load].type;
    tj_ref *slots = add_carried(p, t, init);
    const tj_block *body = &k->blocks[p->body];
    tj_ref iv = body->insts[0];
    tj_cursor top = {p->body, 1 + (uint32_t)(tj_type_get(k->ctx, k->insts[p->loop].type)->nelems), k->insts[load].loc};
    tj_ref ahead = clone_load(p, &top, load, iteration(k, &top, iv, step, d));
    tj_replace_uses(k, load, slots[0]);
    tj_block_remove(k, p->body, position_of(k, p->body, load));
    body = &k->blocks[p->body];
    tj_ref y = body->insts[body->ninsts - 1];
    uint32_t ny = k->insts[y].nargs;
    tj_ref *next = tj_alloc(k->ctx, sizeof *next * (ny + d));
    if (ny) /* a loop that carries nothing yields nothing: no array */
        memcpy(next, k->insts[y].args, sizeof *next * ny);
    for (uint32_t j = 0; j + 1 < d; j++)
        next[ny + j] = slots[j + 1];
    next[ny + d - 1] = ahead;
    tj_inst_set_args(k, y, next, ny + d);
}

/* The tensor parameter a view reads or writes (TJ_NONE: not a parameter's). */
static tj_ref tensor_of(const tj_kernel *k, tj_ref view)
{
    const tj_inst *v = &k->insts[view];
    if (v->op != TJ_OP_VIEW || !v->nargs || k->insts[v->args[0]].op != TJ_OP_PARAM)
        return TJ_NONE;
    return v->args[0];
}

/* The tensors block b (and the regions below it) stores to, appended to
 * *out (at most max): -1 where it writes memory otherwise, or more tensors
 * than that. Two `param` instructions of one index are one tensor
 * (compared by index in stored_to). */
static int stored_tensors(const tj_kernel *k, tj_block_id b, tj_ref *out, uint32_t *n, uint32_t max, int depth)
{
    const tj_block *blk = &k->blocks[b];
    if (depth > TJ_PASS_MAX_DEPTH)
        return -1;
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        const tj_inst *in = &k->insts[r];
        for (int g = 0; g < 2; g++)
            if (tj_region_of(k, r, g) && stored_tensors(k, tj_region_of(k, r, g), out, n, max, depth + 1))
                return -1;
        unsigned flags = tj_op_get(in->op)->flags;
        if (!(flags & TJ_OPF_MEM) || (flags & TJ_OPF_READ))
            continue; /* writes nothing itself (its regions were looked at) */
        tj_ref t = in->op == TJ_OP_STORE && in->nargs ? tensor_of(k, in->args[0]) : TJ_NONE;
        if (!t || *n == max)
            return -1;
        out[(*n)++] = t;
    }
    return 0;
}

/* Whether load r reads a tensor among stored[0 .. n), or one not known. */
static int stored_to(const tj_kernel *k, tj_ref r, const tj_ref *stored, uint32_t n)
{
    tj_ref t = k->insts[r].nargs ? tensor_of(k, k->insts[r].args[0]) : TJ_NONE;
    for (uint32_t i = 0; t && i < n; i++)
        if (k->insts[stored[i]].imm == k->insts[t].imm)
            return 1;
    return !t && n;
}

enum { MAX_STORED = 64 };

static void pipeline_loop(tj_kernel *k, tj_ref loop, int distance)
{
    tj_block_id body = tj_region_of(k, loop, 0);
    tj_ref stored[MAX_STORED];
    uint32_t nstored = 0;
    if (!body || stored_tensors(k, body, stored, &nstored, MAX_STORED, 0))
        return;
    prefetcher p = {.k = k, .loop = loop, .body = body, .distance = distance};
    classify(&p);
    uint32_t n = k->blocks[body].ninsts, count = 0;
    tj_ref *loads = tj_alloc(k->ctx, sizeof *loads * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++)
        if (is_candidate(&p, k->blocks[body].insts[i]) && !stored_to(k, k->blocks[body].insts[i], stored, nstored))
            loads[count++] = k->blocks[body].insts[i];
    for (uint32_t i = 0; i < count; i++) {
        if (i)
            classify(&p); /* the body has new instructions */
        pipeline_load(&p, loads[i]);
    }
}

/* Appends the loops of block b and of the regions below it, innermost
 * first, to *loops. */
static void collect_loops(const tj_kernel *k, tj_block_id b, tj_ref **loops, uint32_t *n, uint32_t *cap, int depth)
{
    if (depth > TJ_PASS_MAX_DEPTH)
        return;
    for (uint32_t i = 0; i < k->blocks[b].ninsts; i++) {
        tj_ref r = k->blocks[b].insts[i];
        for (int g = 0; g < 2; g++)
            if (tj_region_of(k, r, g))
                collect_loops(k, tj_region_of(k, r, g), loops, n, cap, depth + 1);
        if (k->insts[r].op == TJ_OP_FOR) {
            *loops = tj_grow(k->ctx, *loops, cap, *n + 1, sizeof **loops);
            (*loops)[(*n)++] = r;
        }
    }
}

static int prefetch_run(tj_kernel *k, int *changed)
{
    int64_t stages = tj_config_stages(k);
    if (stages < 2 || k->level != TJ_LEVEL_TILE || !k->body)
        return 0;
    tj_ref *loops = NULL;
    uint32_t n = 0, cap = 0;
    collect_loops(k, k->body, &loops, &n, &cap, 0);
    int distance = stages > TJ_MAX_STAGES ? TJ_MAX_STAGES - 1 : (int)stages - 1;
    uint32_t before = k->ninsts;
    for (uint32_t i = 0; i < n; i++)
        pipeline_loop(k, loops[i], distance);
    if (changed)
        *changed = k->ninsts != before;
    return 0;
}

int tj_pass_prefetch(tj_kernel *k) { return k ? tj_pass_guarded(k, prefetch_run, NULL) : 1; }
