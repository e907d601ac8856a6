/* Common subexpression elimination of pure ops, by hashing.
 *
 * An instruction is replaced by an earlier equivalent one that dominates
 * it: earlier in the same block, or earlier in an enclosing block. The walk
 * follows program order with a scoped table: entries made inside a region
 * are dropped when the walk leaves it. Block arguments, ops with regions
 * and memory ops are never merged (two loads may read different data if a
 * store runs between them). */
#include <string.h>

#include "passes/pass_util.h"

typedef struct cse {
    tj_kernel *k;
    tj_fwd fwd;
    tj_ref *head;  /* bucket -> newest entry */
    tj_ref *next;  /* entry -> the older entry of its bucket */
    uint32_t mask; /* buckets - 1 */
    tj_ref *stack; /* entries in insertion order, popped when a scope ends */
    uint32_t nstack;
    int changed;
} cse;

static int mergeable(const tj_inst *in)
{
    unsigned flags = tj_op_get(in->op)->flags;
    return (flags & TJ_OPF_PURE) && !(flags & (TJ_OPF_REGION | TJ_OPF_TERM | TJ_OPF_MEM)) &&
           in->op != TJ_OP_ARG;
}

static int commutative(const cse *c, const tj_inst *in) { return tj_swapped_op(c->k, in) == in->op; }

/* The operand at position a, with commutative operands in ascending order
 * so that `add %x, %y` and `add %y, %x` compare equal. */
static tj_ref operand(const cse *c, const tj_inst *in, uint32_t a)
{
    if (!commutative(c, in))
        return in->args[a];
    tj_ref lo = in->args[0] < in->args[1] ? in->args[0] : in->args[1];
    tj_ref hi = in->args[0] ^ in->args[1] ^ lo;
    return a == 0 ? lo : hi;
}

static uint32_t mix(uint32_t h, uint64_t v)
{
    h ^= (uint32_t)v ^ (uint32_t)(v >> 32);
    return h * 0x9e3779b1u ^ (h >> 15);
}

static uint32_t hash_inst(const cse *c, const tj_inst *in)
{
    uint64_t fbits;
    memcpy(&fbits, &in->fimm, sizeof fbits);
    uint32_t h = mix(mix(mix(mix(2166136261u, in->op), in->type), (uint64_t)in->imm), fbits);
    h = mix(mix(h, in->flags), in->nargs);
    for (uint32_t a = 0; a < in->nargs; a++)
        h = mix(h, operand(c, in, a));
    for (uint32_t i = 0; i < in->nlist; i++)
        h = mix(h, (uint32_t)in->list[i]);
    return h;
}

static int same_inst(const cse *c, const tj_inst *x, const tj_inst *y)
{
    if (x->op != y->op || x->type != y->type || x->imm != y->imm || x->flags != y->flags ||
        x->nargs != y->nargs || x->nlist != y->nlist ||
        memcmp(&x->fimm, &y->fimm, sizeof x->fimm)) /* bits: -0.0 and 0.0 differ */
        return 0;
    for (uint32_t a = 0; a < x->nargs; a++)
        if (operand(c, x, a) != operand(c, y, a))
            return 0;
    return !x->nlist || !memcmp(x->list, y->list, sizeof(int32_t) * x->nlist);
}

/* The visible equivalent of r, or TJ_NONE after entering r in the table. */
static tj_ref lookup_or_insert(cse *c, tj_ref r)
{
    const tj_inst *in = &c->k->insts[r];
    uint32_t bucket = hash_inst(c, in) & c->mask;
    for (tj_ref e = c->head[bucket]; e; e = c->next[e])
        if (same_inst(c, &c->k->insts[e], in))
            return e;
    c->next[r] = c->head[bucket];
    c->head[bucket] = r;
    c->stack[c->nstack++] = r;
    return TJ_NONE;
}

/* Drops the entries made since the scope began. They are the newest of
 * their buckets, so popping in reverse order unlinks each from the head. */
static void leave_scope(cse *c, uint32_t mark)
{
    while (c->nstack > mark) {
        tj_ref r = c->stack[--c->nstack];
        c->head[hash_inst(c, &c->k->insts[r]) & c->mask] = c->next[r];
    }
}

static int cse_block(cse *c, tj_block_id b, int depth)
{
    uint32_t mark = c->nstack;
    for (uint32_t i = 0; i < c->k->blocks[b].ninsts;) {
        tj_ref r = c->k->blocks[b].insts[i];
        tj_fwd_apply(c->k, &c->fwd, r);
        for (int g = 0; g < 2; g++) {
            tj_block_id region = tj_region_of(c->k, r, g);
            if (region && (!tj_pass_depth_ok(c->k, r, depth + 1) ||
                           cse_block(c, region, depth + 1)))
                return 1;
        }
        tj_ref same = mergeable(&c->k->insts[r]) ? lookup_or_insert(c, r) : TJ_NONE;
        if (!same) {
            i++;
            continue;
        }
        tj_fwd_set(c->k, &c->fwd, r, same);
        tj_block_remove(c->k, b, i);
        c->changed = 1;
    }
    leave_scope(c, mark);
    return 0;
}

int tj_cse_run(tj_kernel *k, int *changed)
{
    uint32_t buckets = 16;
    while (buckets < k->ninsts && buckets < (1u << 30))
        buckets *= 2;
    cse c = {
        .k = k,
        .head = tj_alloc(k->ctx, sizeof(tj_ref) * buckets),
        .next = tj_alloc(k->ctx, sizeof(tj_ref) * k->ninsts),
        .stack = tj_alloc(k->ctx, sizeof(tj_ref) * k->ninsts),
        .mask = buckets - 1,
    };
    tj_fwd_init(k, &c.fwd);
    tj_block_id tops[2] = {k->grid, k->body};
    for (int t = 0; t < 2; t++) /* separate scopes: neither block encloses the other */
        if (tops[t] && cse_block(&c, tops[t], 0))
            return 1;
    *changed = c.changed;
    return 0;
}

int tj_pass_cse(tj_kernel *k) { return k ? tj_pass_guarded(k, tj_cse_run, NULL) : 1; }
