/* Dead code elimination: removes instructions whose value nobody uses and
 * whose removal nobody can observe: pure ops, loads, and `for` / `if` /
 * `scan` ops whose regions neither store nor run atomics. Block arguments,
 * terminators, stores and atomics stay.
 *
 * One backward walk is enough: every use of a value comes after its
 * definition (later in the block, or inside a later region), so by the
 * time the walk reaches a definition its use count is final; removing an
 * instruction releases its operands, which the walk reaches afterwards. */
#include "passes/pass_util.h"

typedef struct dce {
    tj_kernel *k;
    uint32_t *uses; /* uses[r]: operands naming r in live instructions */
    int changed;
} dce;

static void add_uses(dce *d, tj_ref r, int delta)
{
    const tj_inst *in = &d->k->insts[r];
    for (uint32_t a = 0; a < in->nargs; a++)
        if (in->args[a] && in->args[a] < d->k->ninsts)
            d->uses[in->args[a]] += (uint32_t)delta;
}

/* Adds (delta 1) or releases (delta -1) the uses made by every instruction
 * of block b and of the regions nested in it. */
static int block_uses(dce *d, tj_block_id b, int delta, int depth)
{
    const tj_block *blk = &d->k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        add_uses(d, r, delta);
        for (int g = 0; g < 2; g++) {
            tj_block_id region = tj_region_of(d->k, r, g);
            if (!region)
                continue;
            if (!tj_pass_depth_ok(d->k, r, depth + 1) ||
                block_uses(d, region, delta, depth + 1))
                return 1;
        }
    }
    return 0;
}

static int removable(const dce *d, tj_ref r)
{
    const tj_inst *in = &d->k->insts[r];
    unsigned flags = tj_op_get(in->op)->flags;
    if (d->uses[r] || in->op == TJ_OP_ARG || (flags & TJ_OPF_TERM))
        return 0;
    if (flags & TJ_OPF_REGION)
        return !tj_has_side_effects(d->k, r, 0);
    return (flags & TJ_OPF_PURE) || ((flags & TJ_OPF_MEM) && (flags & TJ_OPF_READ));
}

static void remove_inst(dce *d, tj_block_id b, uint32_t pos)
{
    tj_ref r = d->k->blocks[b].insts[pos];
    tj_block_remove(d->k, b, pos);
    add_uses(d, r, -1);
    for (int g = 0; g < 2; g++)
        if (tj_region_of(d->k, r, g))
            block_uses(d, tj_region_of(d->k, r, g), -1, 0); /* depth checked when counting */
    tj_detach_regions(d->k, r, 0);
    d->changed = 1;
}

static void dce_block(dce *d, tj_block_id b)
{
    for (uint32_t i = d->k->blocks[b].ninsts; i-- > 0;) {
        tj_ref r = d->k->blocks[b].insts[i];
        if (removable(d, r)) {
            remove_inst(d, b, i);
            continue;
        }
        for (int g = 0; g < 2; g++)
            if (tj_region_of(d->k, r, g))
                dce_block(d, tj_region_of(d->k, r, g));
    }
}

int tj_dce_run(tj_kernel *k, int *changed)
{
    dce d = {.k = k, .uses = tj_alloc(k->ctx, sizeof(uint32_t) * k->ninsts)};
    tj_block_id tops[2] = {k->grid, k->body};
    for (int t = 0; t < 2; t++)
        if (tops[t] && block_uses(&d, tops[t], 1, 0))
            return 1;
    for (int t = 1; t >= 0; t--) /* the body may use what the grid defines */
        if (tops[t])
            dce_block(&d, tops[t]);
    *changed = d.changed;
    return 0;
}

int tj_pass_dce(tj_kernel *k) { return k ? tj_pass_guarded(k, tj_dce_run, NULL) : 1; }
