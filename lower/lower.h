/* The lowering Tile IR -> SIMT IR: state and helpers shared by the
 * files of lower/ (docs/simt.md).
 *
 * Every Tile IR tile (or scalar) becomes, in each thread, one SIMT value
 * per register of its layout: lw_val.regs[r] holds the element that
 * register r of the running thread maps to (layout.h). Scalars have one
 * register, the same in every thread. Values that depend only on the
 * thread index (coordinates, constants, tensor parameters) are hoisted to
 * the start of the SIMT body, where they dominate every use. */
#ifndef TJ_PASSES_LOWER_SIMT_H
#define TJ_PASSES_LOWER_SIMT_H

#include "lower/layout.h"
#include "tilejit/lower.h"
#include "tilejit/passes.h"

/* Registers one tile may take per thread; larger tiles are refused. */
enum { TJ_LOWER_MAX_REGS = 2048 };
/* Instructions lw_sink_through can mark in one lowering. */
enum { LW_MAX_SINK_THROUGH = 8 };

/* lower/wgmma_smem.c: how a wgmma operand tile sits in shared memory:
 * columns (the contiguous axis: K, or M / N for an mn-major operand) in
 * blocks of `swizzle` bytes, each block all rows of swizzle bytes, the
 * 16-byte chunks of a row XORed with (row % 8) as the 128/64/32-byte
 * swizzle modes of wgmma's matrix descriptors read them. */
typedef struct lw_wg_tile {
    int64_t rows, cols; /* a: m x k; b: k x n (mn-major); the x of b = trans(x): n x k */
    int mn_major;       /* cols is the M or N axis */
    int swizzle;        /* 32, 64 or 128 bytes */
    int size;           /* element bytes */
    int permute_rows;   /* a: 8-row granules in the warpgroups' order (lower/wgmma.c) */
    int lg_groups;      /* log2 of the warpgroups (permute_rows) */
    uint32_t bytes;     /* a multiple of 1024 */
} lw_wg_tile;

typedef struct lw_val {
    const tj_layout *lay; /* tiles and scalars */
    tj_ref *regs;         /* lay->nregs SIMT values */
    tj_ref *frags;        /* instead of regs: a loop-carried dot accumulator as
                             c fragments (lower/mma.c) */
    uint32_t nfrags;
    struct lw_val *elems; /* tuples */
    uint32_t nelems;
    tj_ref simt;          /* tensor parameters: the SIMT param */
} lw_val;

/* The layouts chosen for a Tile IR value: one, or one per tuple element. */
typedef struct lw_lay {
    const tj_layout *one;
    const tj_layout **elems;
    uint32_t nelems;
} lw_lay;

typedef struct lw_memo lw_memo; /* hoisted-value cache (lower/emit.c) */

/* A loop being lowered: where code that must run before it goes. */
typedef struct lw_scope {
    tj_ref src_loop;        /* the Tile IR for */
    tj_block_id src_body;   /* its body */
    tj_ref dst_loop;        /* the SIMT for */
    tj_block_id outer;      /* the SIMT block holding dst_loop (last, while its body is lowered) */
    struct lw_scope *up;    /* the enclosing loop */
    tj_ref iv, lo, step;    /* SIMT values: the loop variable and its range */
    tj_ref hi;
    int rings_ready;        /* this iteration's ring slots were awaited (lower/ring.c) */
    int copies_pending;     /* ... and the copies of the tile d ahead are yet to be issued */
} lw_scope;
typedef struct lw_ring lw_ring; /* lower/ring.c */
typedef struct lw_conv lw_conv; /* converted-value cache (lower/convert.c) */
typedef struct lw_xfer lw_xfer; /* transfer-map cache (lower/convert.c) */

typedef struct lw {
    tj_ctx *c;
    const tj_kernel *src;
    tj_kernel *dst;
    int nwarps;
    uint32_t nthreads;
    int vec;               /* elements per thread on the last axis of canonical layouts */
    tj_block_id cur;       /* where lowered code goes */
    tj_block_id entry;     /* the SIMT body */
    uint32_t hoist_pos;    /* hoisted values are inserted at entry[hoist_pos] */
    int hoisting;          /* lw_emit hoists */
    lw_val *vals;          /* per Tile IR instruction */
    lw_lay *lay;           /* per Tile IR instruction (lower/assign_layouts.c) */
    const tj_layout **interned;
    uint32_t ninterned, icap;
    lw_memo *memo;
    lw_conv *conv;
    lw_xfer *xfer;
    int64_t *div;          /* divisibility of Tile IR scalars (facts.h) */
    uint32_t smem_top, smem_bytes;
    uint32_t smem_pinned;  /* bytes at the bottom held by the loops being lowered (lower/mma.c) */
    int no_pins;           /* lw_mma_pin_loop pins nothing (the retry after an overflow) */
    int pinned_any, smem_overflow;
    uint32_t *dot_region;  /* per Tile IR dot: 1 + its pinned staging offset, 0: none */
    uint32_t *dot_flip;    /* per Tile IR dot: bytes to its second region, 0: one region */
    uint32_t *fixed_region; /* per Tile IR dot and operand o, [2 dot + o]: 1 + the pinned offset of an FMA
                               operand fixed across its loop, staged once before it (lower/dot.c), 0: none */
    uint32_t smem_limit;   /* the target's shared memory per program */
    tj_lower_target target;
    int smem_dirty;        /* shared memory was read since the last barrier */
    uint8_t *gtracked;     /* per tensor parameter: its accesses can conflict (lower/hazard.c) */
    uint8_t *gstate;       /* per tensor parameter: its kinds of access since the last barrier */
    tj_ref *gwriter;       /* per tensor parameter: the one Tile IR instruction that wrote it since the
                              last barrier (TJ_NONE: none; LW_WRITERS: several, or not known) */
    int depth;             /* region nesting */
    lw_scope *loop;        /* the innermost loop being lowered */
    tj_ref *same_as;       /* per Tile IR instruction: an earlier one whose value it takes (lower/mma.c) */
    uint32_t *store_region; /* per Tile IR store: 1 + its pinned TMA staging offset (lw_tma_store_pin), 0: none */
    tj_ref *acc_reset;     /* per Tile IR select: the bool scalar of `where(c, 0, acc)` when it resets the
                              carried accumulator of a wgmma dot (lw_mma_carried), which takes it as its
                              zero operand: the select itself is not lowered */
    lw_ring *rings;        /* cp_async rings feeding dots (lower/ring.c) */
    uint32_t nrings;
    uint32_t *ring_of;     /* per Tile IR instruction: 1 + the ring standing for its value
                              (a load it copies, trans() of a slot), 0: none */
    int no_rings, rings_any;
    int wgmma;             /* dot may use wgmma (sm_90a; lower/wgmma.c) */
    uint32_t wgmma_acc;    /* the accumulator registers of a thread's wgmma dots, all summed */
    struct lw_wg_defer *wg_defer; /* wgmma groups in flight until their results are used (lower/wgmma.c) */
    int no_tma;            /* its rings copy by cp_async only (tj_lower_options) */
    int wgmma_turns;       /* warpgroups take turns (tj_lower_options, lower/wgmma_turns.c) */
    int producer;          /* the program has a producer warp, warp nwarps (lower/producer.c) */
    int producing;         /* the producer's part is being emitted: lw_emit keeps its predicates */
    int no_producer;       /* none, whatever the kernel asks (the retry after producer_unfit) */
    int producer_unfit;    /* the lowering met an op the producer warp cannot be kept from */
    tj_ref sink_through[LW_MAX_SINK_THROUGH]; /* barriers elementwise ops may move past (lower/sink.c) */
    uint32_t nsink_through;
    int err;
    tj_loc loc;            /* the instruction being lowered */
} lw;

/* ---- lower/emit.c: SIMT instructions ---- */
tj_type lw_sty(lw *w, tj_dtype dt);
tj_dtype lw_dt(const lw *w, tj_ref v);
tj_ref lw_emit(lw *w, tj_op op, tj_type t, const tj_ref *args, uint32_t n);
tj_ref lw_const_int(lw *w, tj_dtype dt, int64_t v);
tj_ref lw_const_float(lw *w, tj_dtype dt, double v);
int lw_is_const(const lw *w, tj_ref v, int64_t *value);
tj_ref lw_op1(lw *w, tj_op op, tj_ref a);
tj_ref lw_op2(lw *w, tj_op op, tj_ref a, tj_ref b); /* comparisons give bool */
tj_ref lw_select(lw *w, tj_ref cond, tj_ref a, tj_ref b);
tj_ref lw_cast(lw *w, tj_ref a, tj_dtype dt);
tj_ref lw_and(lw *w, tj_ref a, tj_ref b); /* TJ_NONE is true */
tj_ref lw_or(lw *w, tj_ref a, tj_ref b);
tj_ref lw_not(lw *w, tj_ref a);
tj_ref lw_add_imm(lw *w, tj_ref a, int64_t imm);
tj_ref lw_mul_imm(lw *w, tj_ref a, int64_t imm);
tj_ref lw_shfl_xor(lw *w, tj_ref v, uint32_t mask);
tj_ref lw_shfl_up(lw *w, tj_ref v, uint32_t delta);
tj_ref lw_shfl_idx(lw *w, tj_ref v, tj_ref lane);
tj_ref lw_tid(lw *w);     /* the thread among w->nthreads (a producer warp: warp 0's replica) */
tj_ref lw_raw_tid(lw *w); /* the thread among the program's */
tj_ref lw_lane(lw *w);
tj_ref lw_warp(lw *w);
/* Memoized hoisted values: key (kind, p, a, b). */
tj_ref lw_memo_get(lw *w, int kind, const void *p, int64_t a, int64_t b);
void lw_memo_put(lw *w, int kind, const void *p, int64_t a, int64_t b, tj_ref v);
enum { LW_MEMO_CONST_I = 1, LW_MEMO_CONST_F, LW_MEMO_PARAM, LW_MEMO_DIM, LW_MEMO_STRIDE, LW_MEMO_PTR,
       LW_MEMO_TID, LW_MEMO_TBASE, LW_MEMO_COORD, LW_MEMO_RAWOK, LW_MEMO_OWNER, LW_MEMO_SCALAR,
       LW_MEMO_LANE_RAWOK, LW_MEMO_LANE_OWNER };
/* LW_MEMO_TID's a: 0 lw_tid, 1 lane, 2 warp, and these */
enum { LW_TID_RAW = 3, LW_TID_VS_PRODUCER, LW_TID_PRODUCER };
/* Report an error at the instruction being lowered (only the first of a
 * lowering is shown); lw_fail returns NULL, lw_error 1. Functions of the
 * lowering that can fail return 0 on success (predicates, "whether ...",
 * return 1 for yes). */
void *lw_fail(lw *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int lw_error(lw *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- lower/coord.c: where registers are ---- */
const tj_layout *lw_intern(lw *w, const tj_layout *l);
const tj_layout *lw_canonical(lw *w, tj_type t);
const tj_layout *lw_scalar_layout(lw *w);
/* (id & bits) >> (lowest bit of bits): the thread's position among the
 * lanes or warps `bits` of its lane or warp id (hoisted). */
tj_ref lw_id_bits(lw *w, tj_ref id, uint32_t bits);
static inline int lw_low_bit(uint32_t m)
{
    int b = 0;
    while (m && !(m & (1u << b)))
        b++;
    return b;
}
tj_ref lw_tbase(lw *w, const tj_layout *l, int fa);
tj_ref lw_coord(lw *w, const tj_layout *l, int fa, int32_t i);
/* 1: raw < fshape in every thread; 0: in none; -1: depends on the thread. */
int lw_raw_ok_static(const tj_layout *l, int fa, int32_t i);
tj_ref lw_raw_ok(lw *w, const tj_layout *l, int fa, int32_t i); /* TJ_NONE: always */
tj_ref lw_owner(lw *w, const tj_layout *l, uint32_t r);         /* TJ_NONE: always */
/* The same tests as if the thread were in warp 0 (its lane's part of the
 * coordinate only): the owners within each warp, for axes whose warps
 * hold replicas only (tj_layout_warps_replicate). */
int lw_lane_raw_ok_static(const tj_layout *l, int fa, int32_t i);
tj_ref lw_lane_raw_ok(lw *w, const tj_layout *l, int fa, int32_t i); /* TJ_NONE: always */
tj_ref lw_lane_owner(lw *w, const tj_layout *l, uint32_t r);         /* TJ_NONE: always */
/* Tile coordinate of register r along tile axis d (i32). */
tj_ref lw_tile_coord(lw *w, const tj_layout *l, uint32_t r, int d);
/* sum(coord[d] * wts[d]) for register r (i32); hoisted. */
tj_ref lw_flat(lw *w, const tj_layout *l, uint32_t r, const int64_t *wts);

/* ---- lower/hazard.c: global accesses of one program in the Tile IR's order ---- */
void lw_hazard_plan(lw *w);                          /* which tensors need it */
void lw_hazard_access(lw *w, uint32_t param, tj_ref r); /* a barrier first where Tile IR access r conflicts */
void lw_hazard_unknown(lw *w);                       /* at region edges */
void lw_hazard_clear(lw *w);                         /* at a barrier */
enum { LW_WRITERS = UINT32_MAX };
/* The state at a region's start (lw_hazard_save), and that state with every
 * access of Tile IR blocks a and b (TJ_NONE: none) added: a loop's body
 * and what follows it (its iterations' accesses may precede either), an
 * if's end (either branch's); lw_hazard_enter with no block: a branch's
 * start. Precise where region_edge's unknown state would put a barrier
 * before a loop's one store (a persistent matmul's epilogue). */
typedef struct lw_hazard_state {
    uint8_t *kinds;
    tj_ref *writer;
} lw_hazard_state;
lw_hazard_state lw_hazard_save(lw *w);
void lw_hazard_enter(lw *w, const lw_hazard_state *before, tj_block_id a, tj_block_id b);

/* ---- lower/convert.c: moving values between layouts ---- */
tj_ref *lw_regs_in(lw *w, tj_ref v, const tj_layout *l);
/* tj_layout_transfer_map, remembered per (src, dst, weights): the check
 * visits every register of every thread, and lowering asks the same
 * question many times. NULL when the transfer is not free. */
const uint32_t *lw_transfer_map(lw *w, const tj_layout *src, const tj_layout *dst, const int64_t *wts);
tj_ref *lw_transfer(lw *w, const lw_val *v, const tj_layout *dst, const int64_t *wts);
/* Gives every replica the value its owner holds (after ops that compute
 * only the owners right); `only_axis` >= 0 limits the owners' test to one
 * frame axis. */
void lw_refresh_replicas(lw *w, const tj_layout *l, tj_ref *regs, int only_axis);

/* ---- shared memory (lower/convert.c) ---- */
void lw_smem_begin(lw *w);  /* an operation starts using shared memory */
uint32_t lw_smem_alloc(lw *w, uint64_t bytes);
void lw_smem_end(lw *w);
void lw_barrier(lw *w);
tj_ref lw_smem_addr(lw *w, uint32_t base, tj_ref index, int elem_size); /* u32 */
void lw_smem_store(lw *w, tj_ref addr, tj_ref v);
tj_ref lw_smem_load(lw *w, tj_ref addr, tj_dtype dt);
int lw_smem_size(tj_dtype dt);

/* ---- lower/assign_layouts.c ---- */
int lw_assign_layouts(lw *w);
int lw_is_soft(const lw *w, tj_ref r);

/* ---- lower/lower.c ---- */
int lw_lower_block(lw *w, tj_block_id src_block, tj_ref *yield);
/* lower/wgmma.c: programs an SM to leave registers for (tj_kernel.programs) */
uint32_t lw_wgmma_programs(const lw *w);
/* lower/sink.c: elementwise ops moved down to their first use (the last step);
 * lw_sink_through marks an instruction they may move past (a barrier, or
 * thread 0's wait for a TMA store's reads: each orders shared memory only,
 * and the chains above it would otherwise all stay live) */
void lw_sink_elementwise(lw *w);
void lw_sink_through(lw *w, tj_ref inst);
lw_val *lw_val_of(lw *w, tj_ref r);
const tj_type_info *lw_src_type(const lw *w, tj_ref r);
const tj_layout *lw_layout_of(lw *w, tj_ref r); /* the assigned layout */
void lw_set_regs(lw *w, tj_ref r, const tj_layout *l, tj_ref *regs);
tj_ref *lw_new_regs(lw *w, uint32_t n);
/* A SIMT loop `for iv in range(lo, hi, step)` carrying n values: begin
 * moves the emission point into the body; end yields `next` there, comes
 * back and returns the loop's results. */
typedef struct lw_loop {
    tj_ref inst, iv;
    tj_ref *args; /* the carried values inside the body */
    uint32_t n;
    tj_block_id saved;
} lw_loop;
void lw_loop_begin(lw *w, lw_loop *lp, tj_ref lo, tj_ref hi, tj_ref step, const tj_ref *init, uint32_t n);
tj_ref *lw_loop_end(lw *w, lw_loop *lp, const tj_ref *next);
/* The SIMT values of a tensor parameter (hoisted): base address (u64),
 * size (i32) and stride (i64; the constant 1 where facts say so). */
tj_ref lw_tensor_ptr(lw *w, uint32_t param);
tj_ref lw_tensor_dim(lw *w, uint32_t param, int axis);
tj_ref lw_tensor_stride(lw *w, uint32_t param, int axis);
/* Inlines a region (scan combine) on scalars: args -> yielded values. */
int lw_inline_region(lw *w, tj_block_id b, const tj_ref *args, uint32_t nargs, tj_ref *out, uint32_t nout);

/* ---- one file per op family ---- */
/* The registers of elementwise op r (lower/elementwise.c) or of arange /
 * broadcast r (lower/shape.c) computed in layout l. */
tj_ref *lw_elem_regs(lw *w, tj_ref r, const tj_layout *l);
tj_ref *lw_shape_regs(lw *w, tj_ref r, const tj_layout *l);
/* For broadcast, reshape and permute r: the result's element at coord is
 * the operand's element of flat index sum(coord[d] * wts[d]) (non-zero:
 * r is none of those, or malformed). */
int lw_shape_weights(const lw *w, tj_ref r, int64_t *wts);
int lw_lower_elementwise(lw *w, tj_ref r);
int lw_lower_shape(lw *w, tj_ref r);
int lw_lower_memory(lw *w, tj_ref r);
/* Load r as cp_async copies into shared memory (lower/memory.c): the bytes
 * of one copy, 0 when it cannot go that way; the copies into the buffer at
 * buf + shift (u32 bytes; TJ_NONE: 0) of rows ld elements apart, or, with
 * wg, laid out as that wgmma tile (lower/wgmma_smem.c). */
int lw_async_copy_bytes(lw *w, tj_ref r);
int lw_copy_async(lw *w, tj_ref r, uint32_t buf, tj_ref shift, int64_t ld, const lw_wg_tile *wg);
int lw_lower_reduce(lw *w, tj_ref r);
int lw_lower_scan(lw *w, tj_ref r);
int lw_lower_sort(lw *w, tj_ref r);
int lw_lower_counting_sort(lw *w, tj_ref r);
int lw_lower_gather(lw *w, tj_ref r);
int lw_lower_dot(lw *w, tj_ref r);

/* lower/mma.c: dot through the matrix atom. A plan says how the atoms of
 * the product are spread over the warps. */
typedef struct lw_mma {
    tj_dtype in;                /* input dtype (the accumulator is f32) */
    int size, katom;            /* its bytes; the atom's K */
    int64_t batch, m, n, k;
    int64_t rows, cols;         /* atoms: batch * m / 16, n / 8 */
    int64_t lda, ldb, ldc;      /* padded row strides in shared memory */
    int wm, wn;                 /* the warp grid over the atoms */
    int64_t tm, tn;             /* atoms per warp */
    int regs;                   /* the result lives in registers (lower/mma_regs.c) */
    int bt;                     /* b is trans(x): x is staged, b loaded from it (role bt) */
    int wg;                     /* wgmma on sm_90a (lower/wgmma.c): warpgroups over 64-row blocks */
    lw_wg_tile wa, wb;          /* wg: the staged a and b (or x) */
    int wg_a;                   /* wg: how a reaches the products (LW_WG_A_*) */
} lw_mma;
/* wgmma's a: loaded each iteration like b (a ring slot, or staged), fixed
 * across the loop (staged once before it, in a region the loop pins), or
 * computed in the loop (a fragments packed from registers). */
enum { LW_WG_A_STREAMED, LW_WG_A_FIXED, LW_WG_A_REGS };
int lw_mma_plan(lw *w, tj_ref dot, lw_mma *p); /* 0: the atom does not apply */
/* the staging of a dot on FMAs that copy rings may feed (lower/ring.c): m, n, k, lda, ldb */
int lw_fma_ring_plan(lw *w, tj_ref dot, lw_mma *p);
/* lower/dot.c: the register block of an FMA dot that accumulates over a loop (CUDA), or NULL */
const tj_layout *lw_fma_layout(lw *w, tj_ref dot);
/* Before loop: a region above w->smem_pinned (which it raises) for each
 * operand of an FMA dot of its body that is fixed across it. */
void lw_fma_pin_fixed(lw *w, tj_ref loop);
/* The bytes of FMA dot r's staging region when it stages an operand every
 * iteration of the loop whose body it is at the top of (neither in a ring
 * nor pinned), else 0. */
uint64_t lw_fma_region_bytes(lw *w, tj_ref dot, tj_block_id body);
uint64_t lw_mma_staging_bytes(const lw_mma *p);
/* Where the warp's atoms are, as element offsets into the padded buffers
 * (hoisted: they depend on the warp only). */
typedef struct lw_atoms {
    tj_ref *a;   /* per atom row i: its first row of a, times lda */
    tj_ref *b;   /* per atom column j: its first column of b (plus batch * k * ldb) */
    tj_ref *c;   /* per atom (i, j): its first element of the stacked accumulator */
    tj_ref *row; /* per atom row i: its first row in the stacked accumulator */
} lw_atoms;
lw_atoms lw_mma_locate(lw *w, const lw_mma *p);
/* mma_load of a fragment; rows 8-15 at row `half` (0: the next 8 rows). */
tj_ref lw_mma_load(lw *w, int role, tj_dtype in, tj_ref addr, int64_t ld, int64_t half);
/* lower/mma_smem.c: a tile into a buffer of padded rows; fragments to and
 * from registers of layout l through shared memory. */
void lw_mma_store_tile(lw *w, const tj_layout *l, const tj_ref *regs, uint32_t buf, int64_t ld);
/* The index of register i's element in a row-major buffer whose rows (all
 * axes but the last, flattened) are ld elements apart (hoisted). */
tj_ref lw_padded_index(lw *w, const tj_layout *l, uint32_t i, int64_t ld);
/* The same at a run-time offset of `shift` bytes (u32; TJ_NONE: 0). */
void lw_mma_store_tile_at(lw *w, const tj_layout *l, const tj_ref *regs, uint32_t buf, tj_ref shift, int64_t ld);
/* addr + shift (u32); addr when shift is TJ_NONE. */
tj_ref lw_shifted(lw *w, tj_ref addr, tj_ref shift);
/* Whether Tile IR value v is one value everywhere, the same in every
 * thread: a scalar, or broadcasts and reshapes of one. (Registers that
 * are one SIMT value within a thread are not enough: a row broadcast in a
 * layout whose threads each hold one row is that too.) */
int lw_is_splat(const lw *w, tj_ref v);
/* splat: lw_is_splat of the value (mma_fill from its first register). */
tj_ref *lw_mma_to_fragments(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *regs, int splat);
tj_ref *lw_mma_from_fragments(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *c);
int lw_lower_mma(lw *w, tj_ref dot, const lw_mma *p);
/* The dot through which carried value k of for `loop` only passes (its
 * accumulator operand and its yielded result), when that dot uses the
 * atom (*p its plan): the loop then carries the c fragments. */
tj_ref lw_mma_carried(lw *w, tj_ref loop, uint32_t k, lw_mma *p);
/* x of acc = `where(c, 0, x)` (a select of a broadcast bool scalar c, a
 * splat of 0.0 and x, used once), *cond = c; TJ_NONE otherwise. */
tj_ref lw_acc_reset(const tj_kernel *k, tj_ref acc, tj_ref *cond);
/* Region b of an `if` at the top level of a loop body reads carried wgmma
 * accumulators (an epilogue): at its start every group is waited for and
 * their registers are taken out of the fragments, for the region only;
 * lw_wgmma_epilogue_end forgets them again (they are the region's values). */
void lw_wgmma_epilogue_begin(lw *w, tj_block_id b);
void lw_wgmma_epilogue_end(lw *w, tj_block_id b);
/* Before a loop: staging regions of its own for its dots (lower/mma.c,
 * "one barrier a product"), above w->smem_pinned, which it raises; the
 * caller restores it after the loop. */
void lw_mma_pin_loop(lw *w, tj_ref loop);
/* The byte shift of dot's staging region in this iteration: TJ_NONE for one
 * region, else (iteration & 1) times the distance to the second. */
tj_ref lw_mma_region_shift(lw *w, tj_ref dot);
/* Code emitted from lw_before_loop (which returns the current block) to
 * lw_back_in_loop goes before the innermost loop being lowered: its SIMT
 * for moves behind it. */
tj_block_id lw_before_loop(lw *w);
void lw_back_in_loop(lw *w, tj_block_id here);
/* Tile value v in layout l as c fragments, and fragments back to registers. */
tj_ref *lw_mma_fragments_in(lw *w, const lw_mma *p, tj_ref v, const tj_layout *l);
tj_ref *lw_mma_fragments_out(lw *w, const lw_mma *p, const tj_ref *c, const tj_layout *l);

/* lower/wgmma.c, lower/wgmma_smem.c: dot on warpgroup tensor cores */
int lw_wgmma_plan(const lw *w, lw_mma *p); /* 0: wgmma does not apply */
/* addend: x of `x + dot(a, b, 0)`, the accumulator in its stead (TJ_NONE: none) */
int lw_lower_wgmma(lw *w, tj_ref dot, const lw_mma *p, tj_ref addend);
/* wgmma_fence, wgmma_commit or wgmma_wait {pending} (op) for every
 * warpgroup (where a producer warp, lower/ring.c, runs: the consumers). */
void lw_wgmma_sync(lw *w, tj_op op, int64_t pending);
/* Before body instruction r (or the body's yield): the wgmma_wait that retires
 * the deferred groups r reads, their results into registers. */
int lw_wgmma_await(lw *w, tj_ref r);
/* Before loop: a region above w->smem_pinned (which it raises) for the a
 * of each wgmma dot of its body whose a is fixed across it. */
void lw_wgmma_pin_fixed(lw *w, tj_ref loop);
/* Whether Tile IR value v is defined outside block `body` (and the blocks
 * nested in it). */
int lw_defined_outside(const lw *w, tj_ref v, tj_block_id body);
/* Byte offset (u32) of element (row, col) (i32) in tile t, swizzled: the
 * unswizzled offset (i32) XOR its chunk bits' pattern (i32, of that offset). */
tj_ref lw_wg_offset(lw *w, const lw_wg_tile *t, tj_ref row, tj_ref col);
tj_ref lw_wg_unswizzled(lw *w, const lw_wg_tile *t, tj_ref row, tj_ref col);
tj_ref lw_wg_chunk_xor(lw *w, const lw_wg_tile *t, tj_ref off);
/* Room for a tile at a 1024-byte boundary of the current scope. */
uint32_t lw_wg_alloc(lw *w, uint32_t bytes);
/* Tile value v (registers of layout l) stored into tile t at buf. */
void lw_wg_store(lw *w, const lw_wg_tile *t, const tj_layout *l, const tj_ref *regs, uint32_t buf);
/* The descriptor fields of tile t (all but the start address). */
uint64_t lw_wg_desc_fields(const lw_wg_tile *t);

/* lower/tma.c: ring tiles of wgmma dots by TMA. Whether load r can land
 * in tile t by tma_load boxes; the bytes one copy of it brings; its boxes
 * into t at buf + shift (u32 bytes; TJ_NONE: 0), completing on the
 * mbarrier at bar, issued where pred. */
int lw_tma_fits(lw *w, tj_ref r, const lw_wg_tile *t);
/* Whether Tile IR view v is what a tensor map can name: a rows x cols
 * slice of a rank-2 tensor parameter of `size`-byte elements (2 or 4), i32
 * starts, data and rows 16-byte aligned, unit inner stride (facts). */
int lw_tma_view_fits(lw *w, tj_ref v, int64_t rows, int64_t cols, int size);
uint32_t lw_tma_tile_bytes(const lw_wg_tile *t);
enum { LW_TMA_MAX_BOXES = 64 };
typedef struct lw_tma_box {
    tj_ref tensor, dst, col, row; /* SIMT values of tma_load's operands */
    int64_t imm;
    uint32_t swizzle;
} lw_tma_box;
/* The boxes of load r into t at buf + shift, their operands computed here
 * (-1 after reporting); lw_tma_issue emits them, back to back. */
int lw_tma_boxes(lw *w, tj_ref r, const lw_wg_tile *t, uint32_t buf, tj_ref shift, lw_tma_box *out);
void lw_tma_issue(lw *w, const lw_tma_box *b, int n, tj_ref bar, tj_ref pred);
/* mbar_init (n: the count), mbar_expect_tx (n: bytes), mbar_wait (n: the
 * parity), mbar_arrive or mbar_inval (no n) of the mbarrier at bar, where
 * pred (TJ_NONE: every thread). */
void lw_mbarrier(lw *w, tj_op op, tj_ref bar, tj_ref n, tj_ref pred);
tj_ref lw_tma_thread(lw *w); /* tid == 0 (hoisted): the thread that issues TMA */

/* lower/tma_store.c: store r by TMA from shared memory (sm_90a): whether
 * it applies, and its lowering (docs/simt.md, "TMA stores") */
int lw_tma_store_fits(lw *w, tj_ref r);
int lw_lower_tma_store(lw *w, tj_ref r);
/* Before a loop whose rings land by TMA: a staging region above
 * w->smem_pinned (which it raises) for each TMA store under an `if` at the
 * top level of its body (a persistent matmul's epilogue), whose copies
 * stay in flight into the next tile; after the loop (lw_tma_store_drain)
 * thread 0 waits for their reads before the bytes are reused. */
void lw_tma_store_pin(lw *w, tj_ref loop);
void lw_tma_store_drain(lw *w, tj_ref loop);

/* lower/producer.c: a producer warp for the TMA rings of wgmma */
void lw_producer_plan(lw *w);       /* sets w->producer where the kernel asks and fits */
tj_ref lw_consumers(lw *w);         /* raw tid < 32 P (hoisted) */
tj_ref lw_producer_thread(lw *w);   /* warp P's elected lane (hoisted): the producer's issuing thread */
/* op's operands with its predicate narrowed to the consumers (lw_emit);
 * an op that writes shared memory sets w->producer_unfit and fails. */
const tj_ref *lw_producer_mask(lw *w, tj_op op, const tj_ref *args, uint32_t n);

/* lower/ring.c: loads that feed a dot from `stages - 1` iterations ahead
 * (passes/prefetch.c) copied by cp_async into a ring of shared memory. */
void lw_ring_plan(lw *w);                      /* finds the rings of every loop */
int lw_ring_slot(const lw *w, tj_ref loop, uint32_t k); /* carried value k is a ring slot */
void lw_ring_begin(lw *w, tj_ref loop);        /* before the loop: room, the first copies */
void lw_ring_end(lw *w, tj_ref loop);          /* after it: no copy left in flight */
/* Where dot operand `operand` (0: a, 1: b) is, when a ring holds it: its
 * slot of this iteration, awaited (1); 0 when no ring holds it. */
int lw_ring_operand(lw *w, tj_ref dot, int operand, uint32_t *buf, tj_ref *shift);
int lw_ring_feeds(const lw *w, tj_ref dot);   /* a ring holds an operand of dot */
int lw_ring_tma(const lw *w, tj_ref loop);    /* the loop's rings land by TMA */
int lw_ring_holds(const lw *w, tj_ref dot, int operand); /* ... operand `operand` (0: a, 1: b) of dot */
/* Every iteration of loop waits for its rings' copies with a barrier of all
 * warps (cp_async rings; TMA ones wait on mbarriers), before the products
 * that read them (lw_ring_operand): a barrier every warp passes between
 * any two iterations' dots. */
int lw_ring_barrier(const lw *w, tj_ref loop);
/* Its rings let dot's wgmma group stay in flight into the next iteration
 * (by cp_async: a slot more). */
int lw_ring_keeps_group(const lw *w, tj_ref dot);
/* They do by TMA: the copies of the tile d ahead go into the slot that the
 * wait for the previous group releases, so lw_ring_issue comes after
 * lw_ring_release. */
int lw_ring_refills_late(const lw *w, tj_ref dot);
int lw_ring_any_late(const lw *w); /* some dot's rings refill late */
/* Issues the copies of the tile d iterations ahead, when they are pending:
 * after the first fragment loads of the dot that awaited its slots. */
void lw_ring_issue(lw *w);
/* After dot's wgmma_wait {pending}: where its rings land by TMA, each warp
 * releases the slot whose group that wait retired (its "empty" mbarrier). */
void lw_ring_release(lw *w, tj_ref dot, int64_t pending);

/* lower/mma_regs.c: results in the registers of the PTX fragment layout */
int lw_mma_regs_grid(const lw *w, lw_mma *p, int accumulates);
const tj_layout *lw_mma_result_layout(lw *w, const lw_mma *p);
tj_ref *lw_mma_pack_c(lw *w, const lw_mma *p, const tj_ref *regs);
tj_ref *lw_mma_unpack_c(lw *w, const lw_mma *p, const tj_layout *l, const tj_ref *c);
tj_ref *lw_mma_a_from_registers(lw *w, const lw_mma *p, tj_ref a);

/* sort (lower/sort.c): whether (ka, ia) comes before (kb, ib): by key (NaN
 * above everything, descending reverses), then by position; positions from
 * pad_from on (when not 0) are padding and come last. */
tj_ref lw_sort_before(lw *w, int descending, int64_t pad_from, tj_ref ka, tj_ref ia, tj_ref kb, tj_ref ib);
/* lower/sort_regs.c: sorts key[] (with positions pos[]) along `axis` in
 * registers, shuffles and shared memory when the layout allows; line[r]
 * is register r's line index times the line length. 0: not applicable. */
int lw_sort_in_registers(lw *w, const tj_layout *l, int axis, int descending, tj_ref *key, tj_ref *pos,
                         const tj_ref *line);

/* Combining two values for reductions and scans (lower/reduce.c). */
tj_ref lw_combine(lw *w, tj_op op, tj_ref a, tj_ref b);
tj_dtype lw_acc_dtype(tj_dtype dt);

#endif
