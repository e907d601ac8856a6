/* Layouts: how the elements of a tile are spread over the threads and
 * registers of a program (docs/simt.md, "Lowering").
 *
 * Every layout is a root layout seen through zero or more slices. The root
 * kind (BLOCKED today; MMA operand and accumulator kinds later) defines a
 * frame: one frame axis per root axis. A register is a vector of per-frame-
 * axis register indices (enumerated row-major), and the element that thread
 * t holds in register r is, on every frame axis a,
 *
 *     raw_a   = tbase_a(t) + roff_a(i_a)        (thread part + register part)
 *     coord_a = raw_a mod fshape_a
 *
 * A (thread, register) pair with raw_a < fshape_a on every frame axis is the
 * element's owner; the others hold replicas (tiles smaller than the layout's
 * coverage, extents that are not a multiple of it, and sliced axes). Only
 * owners store, and reductions count owners only. A slice keeps the
 * parent's frame: the sliced axis gets extent 1 and a single register, so
 * the threads spread along it hold replicas.
 *
 * A new root kind implements tbase, roff, the register counts and the lane
 * and warp bits of each frame axis; slices, coordinates, owners, the inverse
 * map and transfer checks are generic. */
#ifndef TJ_PASSES_LAYOUT_H
#define TJ_PASSES_LAYOUT_H

#include "tilejit/ir.h"

enum { TJ_WARP_SIZE = 32, TJ_MAX_WARPS = 32 };

typedef enum tj_layout_kind {
    TJ_LAYOUT_BLOCKED, /* per axis: size_per_thread x threads_per_warp x warps_per_cta, repeated */
    TJ_LAYOUT_SLICE,   /* parent with one tile axis reduced away */
} tj_layout_kind;

typedef struct tj_layout tj_layout;
struct tj_layout {
    tj_layout_kind kind;
    int rank; /* of the tile */
    int32_t shape[TJ_MAX_RANK];
    int nwarps;
    /* BLOCKED: powers of two, prod(tpw) = 32, prod(wpc) = nwarps. spt is
     * as requested (kept so a refit to a larger shape gets it back); espt,
     * what the map uses, is clamped to the shape. */
    int32_t spt[TJ_MAX_RANK], espt[TJ_MAX_RANK], tpw[TJ_MAX_RANK], wpc[TJ_MAX_RANK];
    int8_t order[TJ_MAX_RANK]; /* order[0] is the fastest-varying axis */
    /* SLICE */
    const tj_layout *parent;
    int axis;
    /* derived: the frame (see above) */
    const tj_layout *root;
    int frank;
    int32_t fshape[TJ_MAX_RANK];
    int32_t fregs[TJ_MAX_RANK];
    int8_t frame_axis[TJ_MAX_RANK]; /* tile axis -> frame axis */
    uint32_t nregs;
};

/* A blocked layout of `shape`; NULL when the parameters break the
 * invariants above or it would need more than 2^30 registers. */
const tj_layout *tj_layout_blocked(tj_ctx *c, int rank, const int32_t *shape, const int32_t *spt,
                                   const int32_t *tpw, const int32_t *wpc, const int8_t *order);
const tj_layout *tj_layout_slice(tj_ctx *c, const tj_layout *parent, int axis);
/* The canonical blocked layout of a shape: `vec` contiguous elements per
 * thread on the last axis, then lanes, then warps (warps from the first
 * axis inwards); rank 0 gives the scalar layout (every thread holds it). */
const tj_layout *tj_layout_canonical(tj_ctx *c, int rank, const int32_t *shape, int nwarps, int vec);
/* The root's blocked parameters applied to another shape of the same rank
 * (NULL when the root is not blocked or the ranks differ). */
const tj_layout *tj_layout_refit(tj_ctx *c, const tj_layout *l, int rank, const int32_t *shape);
/* A blocked layout with a size-1 axis inserted before `axis`. */
const tj_layout *tj_layout_insert_axis(tj_ctx *c, const tj_layout *l, int axis);
/* A blocked layout with its axes permuted: result axis i is axis perm[i]. */
const tj_layout *tj_layout_permute(tj_ctx *c, const tj_layout *l, const int32_t *perm);

int tj_layout_equal(const tj_layout *a, const tj_layout *b);
/* "blocked<spt=[1, 4], tpw=[2, 16], wpc=[4, 1], order=[1, 0]>" etc. */
void tj_layout_print(const tj_layout *l, tj_buf *out);

/* ---- the map (thread, register) -> element ---- */
void tj_layout_reg_index(const tj_layout *l, uint32_t r, int32_t *idx); /* per frame axis */
uint32_t tj_layout_reg_of(const tj_layout *l, const int32_t *idx);
int32_t tj_layout_roff(const tj_layout *l, int fa, int32_t i);
void tj_layout_tbase(const tj_layout *l, uint32_t tid, int32_t *base); /* per frame axis */
/* Lane-id and warp-id bits that move along frame axis fa. */
uint32_t tj_layout_lane_bits(const tj_layout *l, int fa);
uint32_t tj_layout_warp_bits(const tj_layout *l, int fa);
int32_t tj_layout_tbase_max(const tj_layout *l, int fa);
/* Tile coordinates of register r of thread tid; returns 1 for the owner. */
int tj_layout_coord(const tj_layout *l, uint32_t tid, uint32_t r, int32_t *coord);
/* The register of thread tid that holds coord, or -1. */
int64_t tj_layout_find_reg(const tj_layout *l, uint32_t tid, const int32_t *coord);
/* The owner of the element at coord (the inverse map). */
void tj_layout_owner_of(const tj_layout *l, const int32_t *coord, uint32_t *tid, uint32_t *reg);
/* Whether raw coordinates on frame axis fa may reach fshape (replicas
 * exist along it: coordinates need the modulo and owners a test). */
int tj_layout_axis_wraps(const tj_layout *l, int fa);
int tj_layout_has_replicas(const tj_layout *l);
/* Whether the warps along frame axis fa hold replicas only: there is one,
 * or one warp's run along fa covers the axis a whole number of times, so
 * that every warp holds the elements warp 0 holds there, in the same
 * registers. Then a reduction or scan along fa stays in each warp, every
 * warp computing the whole result (no shared memory, no barrier). */
int tj_layout_warps_replicate(const tj_layout *l, int fa);
int tj_layout_warps_replicate_all(const tj_layout *l); /* along every frame axis */

/* Whether a value in layout `src` (shape src->shape) can be read in layout
 * `dst` without moving data, where dst's element at coord is src's element
 * of row-major flat index sum(coord[d] * w[d]): then map[r] is the src
 * register that every thread reads for its dst register r. */
int tj_layout_transfer_map(tj_ctx *c, const tj_layout *src, const tj_layout *dst, const int64_t *w,
                           uint32_t *map);

/* floor(log2(v)); 0 for v <= 1. */
int tj_log2_floor(int64_t v);

/* Row-major strides of a shape (in elements). */
void tj_shape_strides(int rank, const int32_t *shape, int64_t *strides);

#endif
