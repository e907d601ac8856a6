/* wgmma operands in shared memory (docs/simt.md, "wgmma"): the swizzled
 * tile layout that wgmma's matrix descriptors describe, element offsets
 * into it, staging stores and the descriptor fields.
 *
 * A tile of rows x cols elements, cols the contiguous axis, is cut into
 * column blocks of E = swizzle / size elements; block j holds every row,
 * `swizzle` bytes a row, so element (r, c) is at
 *
 *     (c / E) * rows * swizzle + r * swizzle + (c % E) * size
 *
 * and then the 16-byte chunk bits [4, 4 + log2(swizzle / 16)) are XORed
 * with bits [7, ...): Swizzle<3,4,3> for 128 bytes, <2,4,3> for 64, <1,4,3>
 * for 32, the pattern the descriptor's swizzle mode applies to addresses.
 * Tiles start at 1024-byte boundaries (and the PTX shared buffer is
 * 1024-aligned), so the pattern of an offset is that of its address.
 *
 * K-major (a: m x k; the x of b = trans(x): n x k): 8-row groups are
 * 8 * swizzle bytes apart (SBO), a k step starts (k0 / E) * rows * swizzle
 * + (k0 % E) * size into the tile. mn-major (b: k x n): 8 k-row groups are
 * 8 * swizzle bytes apart (SBO), column blocks rows * swizzle (LBO), a k
 * step starts at k0 * swizzle. */
#include "lower/lower.h"

enum { ALIGN = 1024, CHUNK_SHIFT = 4, ROW_SHIFT = 7 };

/* a's rows: granule G = row / 8 of the accumulator layout (warp w = 4 wg +
 * wl, register row i0 = 2 mi + h: G = wl + 4 wg + W h + 2 W mi) goes where
 * the wgmma of warpgroup wg, block mi reads rows 16 wl + 8 h: granule 8 (wg
 * + groups mi) + 2 wl + h. In bits, the low 3 + lg_groups bits of G
 * rotate left by one. */
static tj_ref permuted_row(lw *w, const lw_wg_tile *t, tj_ref row)
{
    if (!t->permute_rows)
        return row;
    int low = 3 + t->lg_groups;
    tj_ref g = lw_op2(w, TJ_OP_SHR, row, lw_const_int(w, TJ_DT_I32, 3));
    tj_ref keep = lw_op2(w, TJ_OP_AND, g, lw_const_int(w, TJ_DT_I32, ~((1 << low) - 1)));
    tj_ref up = lw_op2(w, TJ_OP_AND, lw_op2(w, TJ_OP_SHL, g, lw_const_int(w, TJ_DT_I32, 1)),
                       lw_const_int(w, TJ_DT_I32, (1 << low) - 1));
    tj_ref top = lw_op2(w, TJ_OP_AND, lw_op2(w, TJ_OP_SHR, g, lw_const_int(w, TJ_DT_I32, low - 1)),
                        lw_const_int(w, TJ_DT_I32, 1));
    tj_ref granule = lw_op2(w, TJ_OP_OR, keep, lw_op2(w, TJ_OP_OR, up, top));
    return lw_op2(w, TJ_OP_OR, lw_op2(w, TJ_OP_SHL, granule, lw_const_int(w, TJ_DT_I32, 3)),
                  lw_op2(w, TJ_OP_AND, row, lw_const_int(w, TJ_DT_I32, 7)));
}

tj_ref lw_wg_unswizzled(lw *w, const lw_wg_tile *t, tj_ref row, tj_ref col)
{
    int64_t e = t->swizzle / t->size;
    tj_ref r = permuted_row(w, t, row);
    tj_ref block = lw_op2(w, TJ_OP_SHR, col, lw_const_int(w, TJ_DT_I32, tj_log2_floor(e)));
    tj_ref within = lw_op2(w, TJ_OP_AND, col, lw_const_int(w, TJ_DT_I32, e - 1));
    return lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, block, t->rows * t->swizzle),
                  lw_op2(w, TJ_OP_ADD, lw_mul_imm(w, r, t->swizzle), lw_mul_imm(w, within, t->size)));
}

tj_ref lw_wg_chunk_xor(lw *w, const lw_wg_tile *t, tj_ref off)
{
    tj_ref phase = lw_op2(w, TJ_OP_AND, lw_op2(w, TJ_OP_SHR, off, lw_const_int(w, TJ_DT_I32, ROW_SHIFT)),
                          lw_const_int(w, TJ_DT_I32, t->swizzle / 16 - 1));
    return lw_op2(w, TJ_OP_SHL, phase, lw_const_int(w, TJ_DT_I32, CHUNK_SHIFT));
}

tj_ref lw_wg_offset(lw *w, const lw_wg_tile *t, tj_ref row, tj_ref col)
{
    tj_ref off = lw_wg_unswizzled(w, t, row, col);
    return lw_cast(w, lw_op2(w, TJ_OP_XOR, off, lw_wg_chunk_xor(w, t, off)), TJ_DT_U32);
}

uint32_t lw_wg_alloc(lw *w, uint32_t bytes)
{
    uint32_t off = lw_smem_alloc(w, (uint64_t)bytes + ALIGN - 16);
    return (off + ALIGN - 1) / ALIGN * ALIGN;
}

void lw_wg_store(lw *w, const lw_wg_tile *t, const tj_layout *l, const tj_ref *regs, uint32_t buf)
{
    int was = w->hoisting;
    for (uint32_t i = 0; i < l->nregs; i++) { /* replicas store the same values */
        w->hoisting = 1;
        tj_ref off = lw_wg_offset(w, t, lw_tile_coord(w, l, i, 0), lw_tile_coord(w, l, i, 1));
        w->hoisting = was;
        lw_smem_store(w, lw_add_imm(w, off, buf), regs[i]);
    }
}

/* Descriptor bits: start address 0-13, LBO 16-29, SBO 32-45 (bytes >> 4),
 * swizzle mode 62-63 (1: 128 bytes, 2: 64, 3: 32). K-major swizzled
 * layouts do not read LBO (a k step stays within one swizzle row); it is
 * 1, as CUTLASS sets it. */
uint64_t lw_wg_desc_fields(const lw_wg_tile *t)
{
    uint64_t sbo = (uint64_t)(8 * t->swizzle) >> 4;
    uint64_t lbo = t->mn_major ? (uint64_t)(t->rows * t->swizzle) >> 4 : 1;
    uint64_t mode = t->swizzle == 128 ? 1 : t->swizzle == 64 ? 2 : 3;
    return (lbo & 0x3fff) << 16 | (sbo & 0x3fff) << 32 | mode << 62;
}
