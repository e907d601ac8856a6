/* The MSL code generator's private interface, shared by its files.
 *
 * One pass over the SIMT IR writes Metal Shading Language statements into
 * `body`. Every SIMT value is scalarized like the PTX generator's
 * registers: one MSL local variable per scalar component (v12, or v12_0,
 * v12_1, ... for vectors and tuples), declared where the value is
 * defined, so C++ block scoping matches the IR's regions. Helper
 * functions (bf16 conversions, integer division, CAS loops ...) are
 * requested by bit and written before the kernel, with the argument block,
 * when the body is done.
 *
 * Global addresses: MSL has no integer -> pointer cast a generator should
 * rely on, so a u64 value derived from `tensor_ptr %t` by adding integers
 * is an *address*: its variable holds the byte offset from tensor t's
 * base, and loads and stores index the tensor's byte pointer with it.
 *
 * Storage and compute types of each dtype:
 *   bool  bool (uchar in memory)     i8..u64  char short int long uchar ...
 *   f16   half (computed in float)   bf16     ushort bits (computed in float)
 *   f32   float                      f64      not available in Metal
 *
 * Matrix fragments (the matrix atom, msl_mma.c) are the exception: each of
 * their components is one 8 x 8 simdgroup matrix (half, bfloat or float),
 * and a kernel with bfloat matrices needs MSL 3.1 (tj_msl_version).
 */
#ifndef TJ_MSL_H
#define TJ_MSL_H

#include "tilejit/codegen.h"
#include "codegen/simt_walk.h"

enum { MS_MAX_COMPONENTS = 16 };

/* What a shfl_xor butterfly recognized as a SIMD- or quad-group reduction
 * makes of an instruction (msl_reduce.c). */
typedef enum msl_reduce_role {
    MS_RED_NONE,     /* printed as itself */
    MS_RED_ABSORBED, /* a shuffle or intermediate value of a reduction: not printed */
    MS_RED_SIMD,     /* the result: metal::simd_<op> */
    MS_RED_QUAD,     /* the result: metal::quad_<op> */
} msl_reduce_role;

/* Helper functions written into the preamble on demand. */
typedef enum msl_helper {
    MH_BF16,      /* tj_bf2f, tj_f2bf */
    MH_INT_BF16,  /* tj_u2bf: integers to bf16 in one rounding */
    MH_FMINMAX,   /* tj_fmax, tj_fmin: NaN-propagating */
    MH_DIV,       /* tj_div, tj_rem: zero divisor gives 0 */
    MH_IPOW,      /* tj_ipow */
    MH_ERF,       /* tj_erf */
    MH_TRIP,      /* tj_trip_s, tj_trip_u: loop trip counts */
    MH_F2I,       /* tj_f2s, tj_f2u: saturating float -> integer */
    MH_COUNT
} msl_helper;

/* One variable of a value: a scalar, or an 8 x 8 simdgroup matrix of
 * elements of dtype dt (a tile of a matrix fragment). */
typedef struct msl_comp {
    tj_dtype dt;
    uint8_t matrix;
} msl_comp;

/* A short string returned by value (names, expressions). One that would
 * not fit becomes an #error line, so the MSL fails to compile rather than
 * be wrong. */
typedef struct msl_str {
    char s[256];
} msl_str;

typedef struct msl_emitter {
    const tj_kernel *k;
    tj_ctx *c;
    tj_buf body;
    int indent;
    uint32_t *first;     /* per instruction: index of its first component */
    uint32_t *ncomp;     /* per instruction: component count */
    uint8_t *defined;    /* per instruction: emitted */
    int32_t *addr;       /* per instruction: 1 + tensor parameter of an address value, else 0 */
    msl_comp *comps;
    uint32_t ncomps, compcap;
    uint32_t ntmp;       /* temporaries t0, t1, ... */
    uint8_t *written;    /* per parameter: a tensor the kernel stores to */
    uint8_t *tensor_slot;/* per parameter: its [[buffer(n)]] index (tensors) */
    uint32_t helpers;    /* 1 << msl_helper */
    tj_buf atomics;      /* CAS helpers, one per (op, dtype) used */
    uint64_t atomic_done;/* bits: (op, dtype) pairs already written */
    int uses_smem;
    int needs_msl_3_1;   /* bfloat simdgroup matrices */
    int failed;
    simt_walker walk;    /* blocks, grid values and shared checks */
    uint8_t *reduce_role;/* per instruction: msl_reduce_role (msl_reduce.c) */
    tj_ref *reduce_src;  /* per reduction result: the value it reduces */
} msl_emitter;

/* ---- msl_emit.c: driver, values, text ---- */
int ms_fail(msl_emitter *e, tj_ref r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Appends one indented statement line. */
void ms_line(msl_emitter *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const tj_inst *ms_inst(const msl_emitter *e, tj_ref r);
/* The element dtype and width (1 for scalars) of a scalar or vector type;
 * 0 when t is neither. */
int ms_elem_type(const msl_emitter *e, tj_type t, tj_dtype *dt);
/* Allocates the components of value r of type t. */
int ms_define(msl_emitter *e, tj_ref r, tj_type t);
/* The variable of component i of r. */
msl_str ms_var(const msl_emitter *e, tj_ref r, uint32_t i);
tj_dtype ms_comp_dtype(const msl_emitter *e, tj_ref r, uint32_t i);
/* The MSL type component i of r is declared with: ms_type of its dtype, or
 * its simdgroup matrix type. */
const char *ms_var_type(const msl_emitter *e, tj_ref r, uint32_t i);
/* Operand a of r, component i (a scalar operand broadcasts). */
msl_str ms_arg(const msl_emitter *e, tj_ref r, uint32_t a, uint32_t i);
/* Checks that operand a exists, has w components or one, and dtype
 * `want` (TJ_DT_INVALID: any). */
int ms_operand_check(msl_emitter *e, tj_ref r, uint32_t a, uint32_t w, tj_dtype want);
/* A fresh temporary name. */
msl_str ms_tmp(msl_emitter *e);
msl_str ms_fmt(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void ms_need(msl_emitter *e, msl_helper h);

/* ---- msl_types.c: spellings, constants, the float compute form ---- */
const char *ms_type(tj_dtype dt);     /* variable type: bool char ... half ushort(bf16) float */
const char *ms_mem_type(tj_dtype dt); /* in memory: as ms_type, uchar for bool */
/* The unsigned type of the width integer arithmetic wraps in: uint for
 * types of at most 32 bits, ulong for 64. */
const char *ms_wrap_type(tj_dtype dt);
int ms_is_half(tj_dtype dt);
/* x as float for f16/bf16, unchanged otherwise. */
msl_str ms_widen(msl_emitter *e, tj_dtype dt, const char *x);
/* A float expression rounded to dt (f16, bf16), unchanged otherwise. */
msl_str ms_narrow(msl_emitter *e, tj_dtype dt, const char *x);
/* The MSL literal of a constant of dtype dt. */
msl_str ms_literal(tj_dtype dt, int64_t i, double f);
/* A zero of dtype dt. */
msl_str ms_zero(tj_dtype dt);
/* Rejects dtypes Metal lacks (f64) with a diagnostic at r. */
int ms_check_dtype(msl_emitter *e, tj_ref r, tj_dtype dt);

/* ---- op families: each emits instruction r, returns 0 or -1 ---- */
int ms_emit_const(msl_emitter *e, tj_ref r);        /* msl_arith.c */
int ms_emit_binary(msl_emitter *e, tj_ref r);       /* msl_arith.c */
int ms_emit_compare(msl_emitter *e, tj_ref r);      /* msl_arith.c */
int ms_emit_select_op(msl_emitter *e, tj_ref r);    /* msl_arith.c */
int ms_emit_fma(msl_emitter *e, tj_ref r);          /* msl_arith.c */
int ms_emit_unary(msl_emitter *e, tj_ref r);        /* msl_unary.c */
int ms_emit_cast(msl_emitter *e, tj_ref r);         /* msl_cast.c */
int ms_emit_load_global(msl_emitter *e, tj_ref r);  /* msl_mem.c */
int ms_emit_store_global(msl_emitter *e, tj_ref r); /* msl_mem.c */
int ms_emit_load_shared(msl_emitter *e, tj_ref r);  /* msl_mem.c */
int ms_emit_store_shared(msl_emitter *e, tj_ref r); /* msl_mem.c */
int ms_emit_address(msl_emitter *e, tj_ref r);      /* msl_mem.c: add/sub/select of addresses */
int ms_emit_atomic(msl_emitter *e, tj_ref r);       /* msl_atomic.c */
/* The expression of binary op `op` (add ... min) on x and y of dtype dt,
 * in dt: what ms_emit_binary assigns (msl_arith.c). */
msl_str ms_binary_expr(msl_emitter *e, tj_op op, tj_dtype dt, const char *x, const char *y);
int ms_emit_shuffle(msl_emitter *e, tj_ref r);      /* msl_simd.c */
int ms_emit_special(msl_emitter *e, tj_ref r);      /* msl_simd.c: tid, program ids, barrier */
int ms_emit_param_op(msl_emitter *e, tj_ref r);     /* msl_abi.c: param dim stride tensor_ptr */
int ms_emit_for(msl_emitter *e, tj_ref r, int depth); /* msl_ctrl.c */
int ms_emit_while(msl_emitter *e, tj_ref r, int depth); /* msl_ctrl.c */
int ms_emit_if(msl_emitter *e, tj_ref r, int depth);  /* msl_ctrl.c */
int ms_emit_proj(msl_emitter *e, tj_ref r);         /* msl_ctrl.c */
int ms_emit_vector_op(msl_emitter *e, tj_ref r);    /* msl_ctrl.c: pack, extract */
int ms_emit_mma(msl_emitter *e, tj_ref r);          /* msl_mma.c: mma_load, mma, mma_store, mma_fill */

/* ---- msl_mma.c: matrix fragments as simdgroup matrices ---- */
/* The walk's fragment_parts callback: the 8 x 8 tiles of fragment type t
 * (*dt their element dtype); 0 when t is not a fragment. */
int ms_fragment_parts(void *target, tj_type t, tj_dtype *dt);
/* "metal::simdgroup_half8x8", "..._bfloat8x8", "..._float8x8". */
const char *ms_matrix_type(tj_dtype dt);
/* Marks the components of the fragments of a value of type t (a fragment,
 * or a tuple holding some), whose first component is e->comps[first], as
 * simdgroup matrices; returns t's component count. */
uint32_t ms_mark_matrices(msl_emitter *e, tj_type t, uint32_t first);
/* Sets e->needs_msl_3_1 when the kernel has bfloat matrices. */
void ms_plan_matrices(msl_emitter *e);

/* ---- msl_reduce.c: butterflies as simd_<op> and quad_<op> ---- */
/* Sets reduce_role and reduce_src for every recognized butterfly. */
void ms_plan_reductions(msl_emitter *e);
/* Emits r, whose reduce_role is not MS_RED_NONE: nothing for an absorbed
 * value, one call for a result. */
int ms_emit_reduction(msl_emitter *e, tj_ref r);

/* ---- msl_mem.c ---- */
/* Whether operand a of r is an address (the tensor parameter in *param). */
int ms_is_address(const msl_emitter *e, tj_ref v, int *param);
/* "(b3 + v17)": the device byte pointer of address value `addr`. */
msl_str ms_device_ptr(const msl_emitter *e, tj_ref addr);

/* ---- msl_abi.c: the kernel's signature and argument block ---- */
/* Assigns buffer slots and checks the parameters; -1 after reporting. */
int ms_plan_params(msl_emitter *e);
void ms_write_args_struct(const msl_emitter *e, tj_buf *out);
void ms_write_signature(const msl_emitter *e, tj_buf *out);
/* The byte pointers b<p> of the tensors, at the top of the body. */
void ms_write_prologue(const msl_emitter *e, tj_buf *out);

/* ---- msl_helpers.c ---- */
void ms_write_helpers(const msl_emitter *e, tj_buf *out);

#endif
