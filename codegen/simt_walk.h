/* What the PTX and MSL generators share: the walk over SIMT IR blocks and
 * the target-neutral checks of the instructions they emit.
 *
 * Each back end keeps one simt_walker in its emitter, pointing at its own
 * per-instruction tables, and supplies two callbacks: `emit` writes one
 * instruction in the target's form, `fail` reports a diagnostic in the
 * target's words. */
#ifndef TJ_SIMT_WALK_H
#define TJ_SIMT_WALK_H

#include "tilejit/codegen.h"

/* Region nesting deeper than this is refused (the walk recurses). */
enum { SIMT_MAX_DEPTH = 200 };

typedef struct simt_walker {
    const tj_kernel *k;
    uint8_t *defined;      /* the back end's: per instruction, emitted */
    const uint32_t *ncomp; /* the back end's: per instruction, component count */
    void *target;          /* the back end's emitter, passed to the callbacks */
    /* Emits instruction r, whose operands are defined, inside regions
     * nested `depth` deep; 0, or -1 after reporting. */
    int (*emit)(void *target, tj_ref r, int depth);
    /* Reports msg at instruction r (0: the kernel); returns -1. */
    int (*fail)(void *target, tj_ref r, const char *msg);
    /* How many components the back end gives a matrix fragment of type t
     * (its own unit: registers, simdgroup matrices), *dt their dtype; 0 when
     * it has none. NULL: fragments are not supported. */
    int (*fragment_parts)(void *target, tj_type t, tj_dtype *dt);
} simt_walker;

/* The op families of SIMT IR, each emitted by one function of a back end. */
typedef enum simt_family {
    SF_OTHER, /* not a SIMT-level op */
    SF_CONST,
    SF_PARAM,   /* param, dim, stride, tensor_ptr */
    SF_SPECIAL, /* program_id, num_programs, tid, barrier */
    SF_BINARY,  /* add ... shr */
    SF_COMPARE,
    SF_UNARY, /* neg, not and the math functions */
    SF_SELECT,
    SF_FMA,
    SF_CAST, /* cast, bitcast */
    SF_LD_GLOBAL,
    SF_ST_GLOBAL,
    SF_LD_SHARED,
    SF_ST_SHARED,
    SF_ATOMIC,
    SF_SHUFFLE,
    SF_VECTOR, /* pack, extract */
    SF_ORDERED, /* ld_acquire, st_release, ld_relaxed, st_relaxed */
    SF_FOR,
    SF_WHILE,
    SF_IF,
    SF_PROJ,
    SF_MMA, /* mma_load, mma, mma_store, mma_fill */
    SF_ASYNC, /* cp_async, cp_async_commit, cp_async_wait */
    SF_WGMMA, /* wgmma_desc, wgmma, wgmma_fence / commit / wait, fence_proxy_async */
    SF_TMA, /* mbar_init, mbar_expect_tx, mbar_wait, mbar_inval, tma_load, tma_store and its commit, wait */
} simt_family;
simt_family simt_op_family(tj_op op);

/* Formats a message and reports it through w->fail; returns -1. */
int simt_fail(const simt_walker *w, tj_ref r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Emits the instructions of block b up to its yield (not the yield). */
int simt_walk_block(const simt_walker *w, tj_block_id b, int depth);
/* The body may use values of the grid block (constants, dims): emits the
 * grid instructions it needs, in order, before the body. */
int simt_walk_grid(const simt_walker *w);

/* The element dtype and width (1 for scalars) of a scalar or vector type;
 * 0 when t is neither. */
int simt_elem_type(tj_ctx *c, tj_type t, tj_dtype *dt);

/* ---- structured control flow ---- */
/* The yield ending region b of `owner`; TJ_NONE after reporting. */
tj_ref simt_block_yield(const simt_walker *w, tj_ref owner, tj_block_id b);
/* Checks a for's operand count and bounds; *dt is the bounds' dtype. */
int simt_for_bounds(const simt_walker *w, tj_ref loop, tj_dtype *dt);
/* Body argument i of a for (0: the induction variable, then the carried
 * values), checked against the loop operand it starts from; TJ_NONE after
 * reporting. */
tj_ref simt_loop_arg(const simt_walker *w, tj_ref loop, uint32_t i);
/* The component count of a for's carried values (its body's arguments
 * 1 .. ncarried, defined). */
uint32_t simt_carried_components(const simt_walker *w, tj_ref loop);
/* Whether step is a constant (its value in *v). */
int simt_step_constant(const tj_kernel *k, tj_ref step, int64_t *v);
/* Whether the yield names one of the body's carried arguments in another
 * position (then copies must not overwrite what later copies read). */
int simt_yield_needs_parallel_copy(const tj_kernel *k, tj_ref yield, tj_block_id body);

/* ---- parameters ---- */
/* Checks a param op against the parameter it reads (*p). 1: a tensor
 * parameter, a group read through dim, stride and tensor_ptr (marked
 * defined); 0: a scalar, for the back end to define and read; -1 after
 * reporting. */
int simt_param(const simt_walker *w, tj_ref r, const tj_param **p);

/* Operand a of r is present and is a scalar or a vector of `width`, of dtype
 * `want` (TJ_DT_INVALID: any); 0, or -1 after reporting. */
int simt_operand_check(const simt_walker *w, tj_ref r, uint32_t a, uint32_t width, tj_dtype want);
/* r's result is one scalar of dtype `want`; 0, or -1 after reporting. */
int simt_expect_scalar(const simt_walker *w, tj_ref r, tj_dtype want);
/* PACK (scalars of the vector's dtype, one per element) or EXTRACT (an
 * element index below the width of a vector of the result's dtype) is well
 * formed; *dt is the element dtype. 0, or -1 after reporting. */
int simt_check_vector_op(const simt_walker *w, tj_ref r, tj_dtype *dt);
/* What both back ends require of a kernel: SIMT level, 1 to 1024 threads, a
 * body block, whole warps where it shuffles or uses the matrix atom.
 * *uses_smem: whether it touches shared memory (the matrix atom's loads and
 * stores do). 0, or -1 after reporting. */
int simt_check_kernel(const simt_walker *w, int *uses_smem);

/* The components of a value of type t: 1 for a scalar, the width of a
 * vector, the back end's parts of a matrix fragment (*dt their dtype); 0 for
 * any other type. */
int simt_value_parts(const simt_walker *w, tj_type t, tj_dtype *dt);
/* Calls add(w->target, dt) for each component of a scalar, a vector of at
 * most max_width elements, a fragment, or a tuple of them, in order; -1
 * (nothing reported) for any other type. */
int simt_for_each_component(const simt_walker *w, tj_type t, int max_width, void (*add)(void *target, tj_dtype dt));
/* PROJ r takes element imm of a tuple of the result's type; *offset is the
 * element's first component in the tuple. 0, or -1 after reporting. */
int simt_proj_offset(const simt_walker *w, tj_ref r, uint32_t *offset);
/* The parameter index of operand 0 of a dim, stride or tensor_ptr, which
 * must be a tensor param whose rank (*rank) has the op's axis; -1 after
 * reporting. */
int simt_tensor_param(const simt_walker *w, tj_ref r, int *rank);

#endif
