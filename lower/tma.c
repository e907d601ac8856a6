/* TMA for the copy rings of wgmma dots (sm_90a; docs/simt.md, "TMA"):
 * instead of every thread issuing cp_async copies and waiting for its
 * groups, thread 0 issues tma_load boxes that land a tile straight in the
 * swizzled layout wgmma's descriptors read (lower/wgmma_smem.c), and they
 * complete on an mbarrier per ring slot that every thread waits for.
 *
 * A tile of rows x cols, `swizzle` bytes (E elements) a row of a column
 * block, is a box of E columns per column block: all rows at once, or for
 * a (8-row granules in the warpgroups' order, lower/wgmma_smem.c) one box
 * of 8 rows per granule, placed where the permutation puts it, or where
 * the facts allow one box per pair of granules the permutation puts side
 * by side (granule_pair). A box of a
 * 1024-byte aligned block is swizzled by the tensor map's swizzle mode as
 * wgmma reads it, since both patterns are functions of the shared address.
 * Boxes past the tensor's end are zero-filled, as the cp_async copies'
 * bounds checks do; TMA needs the tensor 16-byte aligned, its rows too,
 * with unit inner stride: the specialization's facts say when. A tile's
 * box operands are all computed before its boxes are issued, so that the
 * boxes, and the expect_tx before them, are one run of instructions of the
 * same predicate (thread 0): the PTX generator branches around the run
 * instead of having every warp step through its predicated-off copies. */
#include "lower/lower.h"
#include "passes/facts.h"

enum { MAX_BOX = 256, GRANULE = 8, MAX_PAIR = 8 /* TMA's largest element stride */ };

int lw_tma_view_fits(lw *w, tj_ref v, int64_t rows, int64_t cols, int size)
{
    const tj_inst *view = &w->src->insts[v];
    uint32_t param;
    if (view->op != TJ_OP_VIEW || view->nlist != 2 || !tj_param_index(w->src, view->args[0], &param) ||
        !w->src->facts)
        return 0;
    const tj_facts *f = &w->src->facts[param];
    if (!f->aligned16 || !f->unit_stride || !f->stride_div16[0] || view->list[0] != rows || view->list[1] != cols ||
        (size != 2 && size != 4))
        return 0;
    for (int a = 1; a <= 2; a++) /* TMA's coordinates are i32 */
        if (lw_src_type(w, view->args[a])->dtype != TJ_DT_I32)
            return 0;
    return 1;
}

int lw_tma_fits(lw *w, tj_ref r, const lw_wg_tile *t)
{
    const tj_inst *in = &w->src->insts[r];
    if (in->op != TJ_OP_LOAD || lw_async_copy_bytes(w, r) == 0 || !lw_tma_view_fits(w, in->args[0], t->rows, t->cols,
                                                                                      t->size))
        return 0;
    return t->permute_rows ? t->rows % GRANULE == 0 : t->rows <= MAX_BOX;
}

uint32_t lw_tma_tile_bytes(const lw_wg_tile *t) { return (uint32_t)(t->rows * t->cols * t->size); }

/* Where granule g of a permuted tile goes: the low 3 + lg_groups bits of
 * g rotated left by one (lower/wgmma_smem.c, permuted_row). */
static int64_t granule_place(const lw_wg_tile *t, int64_t g)
{
    int low = 3 + t->lg_groups;
    int64_t mask = ((int64_t)1 << low) - 1;
    return (g & ~mask) | ((g << 1) & mask) | ((g >> (low - 1)) & 1);
}

/* How far apart the two granules of a box of a permuted tile are (0: one
 * granule a box). The permutation puts granules g and g + H side by side
 * (H = 4 << lg_groups: the low 3 + lg_groups bits rotate left by one), so
 * a 3-D tensor map of 8-row blocks with element stride H brings both in
 * one box, where H is at most TMA's 8 (at most two warpgroups), the rows
 * are a whole number of blocks (facts: a multiple of 16) and the tile
 * starts a block. */
static int64_t granule_pair(lw *w, tj_ref r, const lw_wg_tile *t)
{
    const tj_inst *view = &w->src->insts[w->src->insts[r].args[0]];
    int64_t half = (int64_t)4 << t->lg_groups;
    uint32_t param;
    if (!t->permute_rows || half > MAX_PAIR || !tj_param_index(w->src, view->args[0], &param) ||
        !w->src->facts[param].dim_div16[0] || w->div[view->args[1]] % GRANULE)
        return 0;
    return half;
}

int lw_tma_boxes(lw *w, tj_ref r, const lw_wg_tile *t, uint32_t buf, tj_ref shift, lw_tma_box *out)
{
    const tj_inst *view = &w->src->insts[w->src->insts[r].args[0]];
    tj_ref tensor = lw_val_of(w, view->args[0])->simt;
    tj_ref row0 = lw_val_of(w, view->args[1])->regs[0], col0 = lw_val_of(w, view->args[2])->regs[0];
    if (!tensor || !row0 || !col0)
        return lw_error(w, "internal error: a TMA copy without its tensor or start"), -1;
    int64_t e = t->swizzle / t->size, blocks = t->cols / e, pair = granule_pair(w, r, t);
    int64_t rows = t->permute_rows ? GRANULE : t->rows, granules = t->rows / rows;
    if (blocks * granules > LW_TMA_MAX_BOXES)
        return lw_error(w, "internal error: a TMA tile of more than %d boxes", LW_TMA_MAX_BOXES), -1;
    int n = 0;
    for (int64_t j = 0; j < blocks; j++) {
        tj_ref col = lw_add_imm(w, col0, j * e);
        for (int64_t g = 0; g < granules; g++) {
            if (pair && g % (2 * pair) >= pair) /* came with granule g - pair */
                continue;
            int64_t place = t->permute_rows ? granule_place(t, g) : g;
            int64_t off = j * t->rows * t->swizzle + place * rows * t->swizzle;
            out[n++] = (lw_tma_box){tensor, lw_shifted(w, lw_const_int(w, TJ_DT_U32, buf + off), shift), col,
                                    lw_add_imm(w, row0, g * rows), e | rows << 16 | pair << 32,
                                    (uint32_t)t->swizzle};
        }
    }
    return n;
}

void lw_tma_issue(lw *w, const lw_tma_box *b, int n, tj_ref bar, tj_ref pred)
{
    for (int i = 0; i < n; i++) {
        tj_ref args[6] = {b[i].tensor, b[i].dst, bar, b[i].col, b[i].row, pred};
        tj_ref c = lw_emit(w, TJ_OP_TMA_LOAD, TJ_TYPE_NONE, args, 6);
        w->dst->insts[c].imm = b[i].imm;
        w->dst->insts[c].flags = b[i].swizzle;
    }
}

void lw_mbarrier(lw *w, tj_op op, tj_ref bar, tj_ref n, tj_ref pred)
{
    int counted = op != TJ_OP_MBAR_INVAL && op != TJ_OP_MBAR_ARRIVE;
    tj_ref args[3] = {bar, counted ? n : pred, pred};
    lw_emit(w, op, TJ_TYPE_NONE, args, counted ? 3 : 2);
}

tj_ref lw_tma_thread(lw *w)
{
    int was = w->hoisting;
    w->hoisting = 1;
    tj_ref p = lw_op2(w, TJ_OP_EQ, lw_raw_tid(w), lw_const_int(w, TJ_DT_I32, 0));
    w->hoisting = was;
    return p;
}
