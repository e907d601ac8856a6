/* The PTX code generator's private interface, shared by its files.
 *
 * One pass over the SIMT IR writes instruction text into `body`; every SIMT
 * value gets one virtual register per scalar component (a vector f32[4] has
 * four, a tuple the components of its elements), numbered per register
 * class; temporaries come from the same counters. The header, parameters
 * and register declarations are written last, when the counts are known.
 *
 * Storage of each dtype (its "register form"):
 *   bool                        .pred   %p
 *   i8 i16 i32 u8 u16 u32       .b32    %r   (sign- or zero-extended)
 *   i64 u64                     .b64    %rd
 *   f16 bf16                    .b16    %h   (computed in f32)
 *   f32                         .f32    %f
 *   f64                         .f64    %fd
 *   matrix fragments            .b32    %r   (ptx_mma.c)
 */
#ifndef TJ_PTX_H
#define TJ_PTX_H

#include "tilejit/codegen.h"
#include "codegen/simt_walk.h"

typedef enum ptx_cls { PX_PRED, PX_B16, PX_B32, PX_B64, PX_F32, PX_F64, PX_NCLS } ptx_cls;

typedef struct ptx_reg {
    ptx_cls cls;
    uint32_t idx;
} ptx_reg;

/* A register's name, returned by value so several fit in one printf. */
typedef struct ptx_rname {
    char s[24];
} ptx_rname;

/* Components of one value are capped (SIMT vectors are at most 16 bytes). */
enum { PX_MAX_COMPONENTS = 16 };

/* A lane's coordinates in the fragment layouts of the matrix atom
 * (ptx_mma.c), computed once at the start of a kernel that uses it. */
typedef struct ptx_mma_lane {
    ptx_reg group;  /* %laneid >> 2: "groupID" of the PTX ISA fragment tables */
    ptx_reg quad;   /* %laneid & 3: "threadID_in_group" */
    ptx_reg quad2;  /* 2 * quad */
    ptx_reg row16;  /* %laneid & 15: the row whose address the lane gives ldmatrix */
    ptx_reg col8;   /* (%laneid >> 4) * 8: that row's first column in a 16 x 16 a */
} ptx_mma_lane;

typedef struct ptx_emitter {
    const tj_kernel *k;
    tj_ctx *c;
    int sm;             /* 80, 90, ... */
    int wgmma;          /* the arch has wgmma (sm_90a) */
    int fastmath;       /* the kernel's `fastmath` tile parameter: f32 math
                           through the hardware approximations (Triton's
                           default), division as div.full.f32 */
    int no_calls;       /* the kernel issues wgmma, or declares `calls = 0`:
                           nothing may assemble to a subroutine call, which in a
                           relocatable compile (nvJitLink's) makes ptxas
                           serialize every wgmma, and costs ptxas time */
    tj_buf body;        /* instruction text */
    uint32_t nregs[PX_NCLS];
    uint32_t nlabels;
    uint32_t *first;    /* per instruction: index of its first component in comps */
    uint32_t *ncomp;    /* per instruction: component count */
    uint8_t *defined;   /* per instruction: emitted (registers allocated) */
    ptx_reg *comps;
    uint32_t ncomps, compcap;
    ptx_reg smem_base;  /* u32 address of tj_smem */
    int uses_smem;
    int uses_2opi32, uses_2opi64; /* the tables of ptx_trig.c */
    ptx_mma_lane lane;  /* valid when the kernel uses the matrix atom */
    uint32_t run_skip;  /* the label after the run of issues being emitted (ptx_runs.c) */
    int failed;
    simt_walker walk;   /* blocks, grid values and shared checks */
} ptx_emitter;

/* ---- ptx_emit.c: registers, text, values ---- */
ptx_rname px_name(ptx_reg r);
#define RN(r) (px_name(r).s)
ptx_reg px_tmp(ptx_emitter *e, ptx_cls cls);
/* Appends one instruction line: a tab, the formatted text, ";\n". */
void px_ins(ptx_emitter *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends a label line. */
void px_label(ptx_emitter *e, uint32_t label);
uint32_t px_new_label(ptx_emitter *e);
/* Reports an error at instruction r (0: the kernel); returns -1. */
int px_fail(ptx_emitter *e, tj_ref r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Component i of value r (allocated by px_define). */
ptx_reg px_val(const ptx_emitter *e, tj_ref r, uint32_t i);
/* Allocates the registers of value r of type t (its components). */
int px_define(ptx_emitter *e, tj_ref r, tj_type t);
/* Checks that operand a of r exists, has w components or one (a scalar,
 * broadcast over a vector) and dtype `want` (TJ_DT_INVALID: any);
 * px_operand reads its component i. */
int px_operand_check(ptx_emitter *e, tj_ref r, uint32_t a, uint32_t w, tj_dtype want);
ptx_reg px_operand(const ptx_emitter *e, tj_ref r, uint32_t a, uint32_t i);
/* Operand a of r is a scalar of dtype `want`; else -1 after reporting. */
int px_scalar_operand(ptx_emitter *e, tj_ref r, uint32_t a, tj_dtype want);
uint32_t px_type_components(const ptx_emitter *e, tj_type t);
/* The element dtype and width (1 for scalars) of a scalar or vector type;
 * 0 when t is neither. */
int px_elem_type(const ptx_emitter *e, tj_type t, tj_dtype *dt);
const tj_inst *px_inst(const ptx_emitter *e, tj_ref r);
/* mov between registers of one class (nothing when d is s). */
void px_mov(ptx_emitter *e, ptx_reg d, ptx_reg s);
/* d = 0 (false for predicates). */
void px_zero(ptx_emitter *e, ptx_reg d);
/* Whether s is a C-like identifier (letters, digits, '_'; not a digit
 * first), which PTX accepts as a name. */
int px_is_identifier(const char *s);

/* ---- ptx_types.c: dtype spellings and the f32 compute form ---- */
ptx_cls px_dtype_cls(tj_dtype dt);
const char *px_mem_type(tj_dtype dt);   /* ld/st/param type: s8, b16, f32 ... */
const char *px_cls_type(ptx_cls cls);   /* pred, b16, b32, b64, f32, f64 */
const char *px_int_type(tj_dtype dt);   /* s32 u32 s64 u64 for integer arithmetic */
int px_is_small_int(tj_dtype dt);       /* i8 i16 u8 u16 */
/* The register holding dt's value in its compute form: v itself, or an
 * f32 temporary for f16/bf16. */
ptx_reg px_widen(ptx_emitter *e, tj_dtype dt, ptx_reg v);
/* Where to compute a result of dtype dt that belongs in d: d itself, or an
 * f32 temporary for f16/bf16. */
ptx_reg px_compute_dst(ptx_emitter *e, tj_dtype dt, ptx_reg d);
/* Finishes a computed result: rounds the f32 temporary into d (f16/bf16)
 * or wraps d to its width (small integers). */
void px_narrow(ptx_emitter *e, tj_dtype dt, ptx_reg d, ptx_reg computed);
/* Wraps a 32-bit register to a small integer dtype in place. */
void px_wrap_small(ptx_emitter *e, tj_dtype dt, ptx_reg d);
/* d = a / b for f32 registers, correctly rounded as div.rn.f32 but with no
 * subroutine call: for kernels with e->no_calls (ptx_arith.c). */
void px_div_rn_f32_in_f64(ptx_emitter *e, ptx_reg d, ptx_reg a, ptx_reg b);
/* f32 and f64 literal operands (0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX). */
ptx_rname px_f32_imm(float f);
ptx_rname px_f64_imm(double d);
/* d = c ? a : b for registers of any class (predicates with logic). */
void px_select(ptx_emitter *e, ptx_reg d, ptx_reg c, ptx_reg a, ptx_reg b);
/* d = (c ? 1 : 0) in dtype dt's register form. */
void px_from_bool(ptx_emitter *e, tj_dtype dt, ptx_reg d, ptx_reg c);
/* p = (v != 0) for a value of dtype dt (NaN counts as non-zero). */
void px_to_bool(ptx_emitter *e, tj_dtype dt, ptx_reg p, ptx_reg v);

/* ---- op families: each emits instruction r, returns 0 or -1 ---- */
int px_emit_const(ptx_emitter *e, tj_ref r);          /* ptx_arith.c */
int px_emit_binary(ptx_emitter *e, tj_ref r);         /* ptx_arith.c */
int px_emit_compare(ptx_emitter *e, tj_ref r);        /* ptx_arith.c */
int px_emit_select_op(ptx_emitter *e, tj_ref r);      /* ptx_arith.c */
int px_emit_fma(ptx_emitter *e, tj_ref r);            /* ptx_arith.c */
int px_emit_unary(ptx_emitter *e, tj_ref r);          /* ptx_unary.c */
int px_emit_cast(ptx_emitter *e, tj_ref r);           /* ptx_cast.c */
int px_emit_load_global(ptx_emitter *e, tj_ref r);    /* ptx_mem.c */
int px_emit_store_global(ptx_emitter *e, tj_ref r);   /* ptx_mem.c */
int px_emit_load_shared(ptx_emitter *e, tj_ref r);    /* ptx_mem.c */
int px_emit_store_shared(ptx_emitter *e, tj_ref r);   /* ptx_mem.c */
int px_emit_atomic(ptx_emitter *e, tj_ref r);         /* ptx_atomic.c */
int px_emit_shuffle(ptx_emitter *e, tj_ref r);        /* ptx_warp.c */
int px_emit_special(ptx_emitter *e, tj_ref r);        /* ptx_warp.c: tid, program ids, barrier */
int px_emit_param_op(ptx_emitter *e, tj_ref r);       /* ptx_params.c: param dim stride tensor_ptr */
int px_emit_for(ptx_emitter *e, tj_ref r, int depth); /* ptx_ctrl.c */
int px_emit_while(ptx_emitter *e, tj_ref r, int depth); /* ptx_ctrl.c */
int px_emit_ordered(ptx_emitter *e, tj_ref r);        /* ptx_ordered.c */
int px_emit_if(ptx_emitter *e, tj_ref r, int depth);  /* ptx_ctrl.c */
int px_emit_proj(ptx_emitter *e, tj_ref r);           /* ptx_ctrl.c */
int px_emit_vector_op(ptx_emitter *e, tj_ref r);      /* ptx_ctrl.c: pack, extract */
int px_emit_mma(ptx_emitter *e, tj_ref r);            /* ptx_mma.c: mma_load, mma, mma_store, mma_fill */
int px_emit_async(ptx_emitter *e, tj_ref r);          /* ptx_async.c: cp_async, commit, wait */

/* ---- ptx_mma.c: the matrix atom ---- */
/* The walk's fragment_parts callback: a fragment's .b32 registers. */
int px_fragment_parts(void *target, tj_type t, tj_dtype *dt);
/* Computes e->lane at the start of the body when the kernel uses the atom. */
void px_mma_prologue(ptx_emitter *e);

/* ---- ptx_mem.c ---- */
/* "{%r1, %r2}" (or "%r1" for one register) into buf. */
void px_reg_list(char *buf, size_t cap, const ptx_reg *r, uint32_t n);

/* ---- ptx_trig.c ---- */
/* Writes the module-level tables the kernel used. */
void px_write_tables(const ptx_emitter *e, tj_buf *out);

/* ---- ptx_params.c ---- */
/* Writes the .param list of the entry. */
int px_write_params(ptx_emitter *e, tj_buf *out);

/* ---- ptx_math.c, ptx_math64.c, ptx_fmod.c: float math on f32/f64 registers ---- */
/* d = op(a) for a unary math op (exp, log, sin, ... floor, ceil); `fast`
 * allows the hardware approximations (for f16/bf16). -1: not a math op. */
int px_math(ptx_emitter *e, tj_op op, int fast, ptx_reg d, ptx_reg a);
/* exp to a few ulp (f32) and about one ulp (f64); exp2 of f64. */
void px_exp_f32(ptx_emitter *e, ptx_reg d, ptx_reg a);
void px_exp_f64(ptx_emitter *e, ptx_reg d, ptx_reg a);
void px_exp2_f64(ptx_emitter *e, ptx_reg d, ptx_reg a);
/* log or log2 (op) to a few ulp, f32 or f64. */
void px_log(ptx_emitter *e, tj_op op, ptx_reg d, ptx_reg a);
/* A float literal of class cls (F32 or F64). */
ptx_rname px_fimm(ptx_cls cls, double v);
/* d = c[0] + x*(c[1] + x*(...)) with n coefficients; d must not be x. */
void px_horner(ptx_emitter *e, ptx_reg d, ptx_reg x, const double *c, int n);
/* d = sin(a) or cos(a) (op), f32 or f64, for every finite argument. */
void px_sincos(ptx_emitter *e, tj_op op, ptx_reg d, ptx_reg a);
/* d = pow(a, b) with the special cases of C99 (f32 computed in f64). */
void px_pow(ptx_emitter *e, ptx_reg d, ptx_reg a, ptx_reg b);
/* d = fmod(a, b), exact. */
void px_fmod(ptx_emitter *e, ptx_reg d, ptx_reg a, ptx_reg b);

/* ---- ptx_runs.c: runs of issues under one predicate, one branch around them ---- */
/* Emits r by emit, opening the branch before the first of its run and
 * closing it after the last (r without a predicate: emit alone). */
int px_emit_in_run(ptx_emitter *e, tj_ref r, int (*emit)(ptx_emitter *, tj_ref));
/* ---- ptx_tma.c: mbarriers and TMA loads (sm_90a) ---- */
int px_emit_tma(ptx_emitter *e, tj_ref r);
/* Writes the tensor-map parameters after the ABI's (tj_tensor_maps). */
void px_write_tensor_map_params(ptx_emitter *e, tj_buf *out);
/* ---- ptx_wgmma.c: warpgroup tensor cores ---- */
int px_emit_wgmma(ptx_emitter *e, tj_ref r);
int px_uses_wgmma(const tj_kernel *k); /* wgmma, tma_load or tma_store: tj_smem aligned to 1024 bytes */
/* Whether block b itself holds a wgmma: a loop carrying its fragments
 * leaves with a group in flight. */
int px_block_has_wgmma(const tj_kernel *k, tj_block_id b);

#endif
