/* Helpers shared by canonicalize, cse and dce (internal to passes/): value
 * forwarding, regions, constants, and the out-of-memory guard. The passes
 * run on Tile IR and on SIMT IR alike. */
#ifndef TJ_PASS_UTIL_H
#define TJ_PASS_UTIL_H

#include "ir/text.h"
#include "tilejit/passes.h"

/* The deepest region nesting a pass walks (that of the printer, the parser
 * and the verifier). Deeper IR is reported as an error instead of being
 * recursed into, so hostile input cannot exhaust the stack. */
#define TJ_PASS_MAX_DEPTH TJ_MAX_NESTING

/* A pass body: runs on k, sets *changed when it modified the IR, returns 0
 * or non-zero after reporting diagnostics. */
typedef int (*tj_pass_impl)(tj_kernel *k, int *changed);

int tj_canonicalize_run(tj_kernel *k, int *changed);
int tj_cse_run(tj_kernel *k, int *changed);
int tj_dce_run(tj_kernel *k, int *changed);

/* fn through tj_guarded (the kernel is unusable after out of memory).
 * `changed` may be NULL. */
int tj_pass_guarded(tj_kernel *k, tj_pass_impl fn, int *changed);

/* Reports the nesting limit at the instruction owning too deep a region;
 * returns 1 when depth is within the limit. */
int tj_pass_depth_ok(tj_kernel *k, tj_ref owner, int depth);

/* ---- forwarding: a removed value points at the value that replaced it --- */

typedef struct tj_fwd {
    tj_ref *to; /* to[r]: the replacement of r, TJ_NONE when r stays */
    uint32_t cap;
} tj_fwd;

void tj_fwd_init(tj_kernel *k, tj_fwd *f);
void tj_fwd_set(tj_kernel *k, tj_fwd *f, tj_ref from, tj_ref to);
tj_ref tj_fwd_resolve(const tj_fwd *f, tj_ref r);
/* Rewrites r's operands through f. */
void tj_fwd_apply(tj_kernel *k, const tj_fwd *f, tj_ref r);

/* ---- instructions --------------------------------------------------------- */

/* Region g (0 or 1) of r, or TJ_NONE when r's op has no such region or
 * the block is out of range. */
tj_block_id tj_region_of(const tj_kernel *k, tj_ref r, int g);
/* The op computing the same as `in` with its two operands swapped (itself
 * when commutative, gt for lt, ...), or TJ_OP_INVALID. Float max/min are
 * not swapped: which zero max(-0.0, 0.0) gives may depend on the order on
 * some targets. */
tj_op tj_swapped_op(const tj_kernel *k, const tj_inst *in);
/* Marks every instruction in r's regions (at any depth) as placed in no
 * block, as tj_block_remove marks r itself: they went away with r. */
void tj_detach_regions(tj_kernel *k, tj_ref r, int depth);
/* Whether r, or anything in its regions, writes memory or synchronizes:
 * a memory op that does not only read (store, atomic, barrier). */
int tj_has_side_effects(const tj_kernel *k, tj_ref r, int depth);
/* The element type of r's result when it is a tile (or scalar), else
 * TJ_DT_INVALID. */
tj_dtype tj_value_dtype(const tj_kernel *k, tj_ref r);
/* Whether t is a tile (or scalar) of a float dtype. */
int tj_type_is_float_tile(const tj_kernel *k, tj_type t);

/* ---- constants ------------------------------------------------------------ */

/* A scalar constant by its dtype: integers (wrapped to their width:
 * sign-extended when signed, zero-extended when unsigned) and bool (0 or 1)
 * in i, floats (exactly representable in their dtype) in f. */
typedef struct tj_cval {
    int64_t i;
    double f;
} tj_cval;

/* The scalar `const` behind r: r itself, the operand of a splat (a
 * `broadcast` of it in Tile IR, a `pack` of it repeated in SIMT IR), or
 * TJ_NONE. */
tj_ref tj_splat_source(const tj_kernel *k, tj_ref r);
/* Whether r is a constant or a splat of one; stores its value in *out. */
int tj_const_value(const tj_kernel *k, tj_ref r, tj_cval *out);
/* Whether r is an integer or bool constant (or splat) equal to v. */
int tj_is_const_int(const tj_kernel *k, tj_ref r, int64_t v);
/* Whether r is a float constant (or splat) equal to v; for a zero, of the
 * sign negative_zero says. */
int tj_is_const_float(const tj_kernel *k, tj_ref r, double v, int negative_zero);

/* An insertion point: new instructions go at `pos` of `block`, which then
 * moves past them. */
typedef struct tj_cursor {
    tj_block_id block;
    uint32_t pos;
    tj_loc loc; /* given to the new instructions */
} tj_cursor;

/* Inserts an instruction at the cursor. */
tj_ref tj_cursor_emit(tj_kernel *k, tj_cursor *at, tj_op op, tj_type type,
                      const tj_ref *args, uint32_t nargs);
/* Materializes v as a value of type t: a `const` for a scalar, followed
 * by a splat of it for a tile (SIMT vector). */
tj_ref tj_cursor_const(tj_kernel *k, tj_cursor *at, tj_type t, tj_cval v);

#endif
