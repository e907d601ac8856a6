/* The verifier's state, shared by ir/verify.c (structure, scoping, regions)
 * and ir/verify_ops.c (operand and result types of each op). */
#ifndef TJ_VERIFY_INTERNAL_H
#define TJ_VERIFY_INTERNAL_H

#include <string.h>

#include "tilejit/ir.h"

typedef struct tj_verifier {
    const tj_kernel *k;
    tj_ctx *c;
    uint32_t *num;     /* printed value numbers (tj_number_values) */
    uint8_t *visible;  /* per instruction: defined and in scope at this point */
    uint8_t *placed;   /* per instruction: already met in the walk */
    uint8_t *walked;   /* per block: already walked */
    int scan_depth;    /* inside how many scan combine regions */
    uint32_t errors;
} tj_verifier;

/* Reports a problem with instruction r, prefixed by its printed line:
 * `%12 = add %10, %11 : f32[128]: operand types differ: ...`. */
void tj_verify_fail(tj_verifier *v, tj_ref r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The type's text in the arena, for messages. */
const char *tj_verify_type_str(tj_verifier *v, tj_type t);

/* ---- helpers of the type rules (verify_ops.c, verify_mem.c, verify_regions.c) */

typedef tj_verifier V;

static inline const tj_type_info *info(V *v, tj_type t) { return tj_type_get(v->c, t); }
static inline const tj_inst *inst(V *v, tj_ref r) { return tj_inst_at(v->k, r); }
static inline int valid_ref(V *v, tj_ref r) { return r && r < v->k->ninsts; }
static inline int is_kind(V *v, tj_type t, tj_type_kind kind) { return info(v, t)->kind == kind; }
static inline tj_dtype dtype_of(V *v, tj_type t) { return info(v, t)->dtype; }

/* The type of operand a of r; TJ_TYPE_NONE when absent. */
static inline tj_type arg_type(V *v, tj_ref r, uint32_t a)
{
    tj_ref x = inst(v, r)->args[a];
    return x ? inst(v, x)->type : TJ_TYPE_NONE;
}

static inline int is_int_scalar(V *v, tj_type t)
{
    return tj_type_is_scalar(v->c, t) && tj_dtype_is_int(dtype_of(v, t));
}

static inline int same_shape(const tj_type_info *a, const tj_type_info *b)
{
    return a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int32_t) * (size_t)a->rank);
}

#define TS(t) tj_verify_type_str(v, (t))

/* Reports unless r's result type is `expected`; returns whether it is. */
int tj_verify_result(V *v, tj_ref r, tj_type expected);
/* Reports unless operand a of r is a tile (a scalar is a rank-0 tile). */
int tj_verify_tile_arg(V *v, tj_ref r, uint32_t a);

/* Checks the operands and result of r against its op's rules (operands are
 * known to be valid, visible values). */
void tj_verify_op(tj_verifier *v, tj_ref r);

/* Checks the regions of FOR, IF and SCAN instruction r against their
 * signature: block arguments and yielded types. */
void tj_verify_region_signature(tj_verifier *v, tj_ref r);

/* The rules of view, load, store and atomics (verify_mem.c), and of the
 * operands and results of for and if (verify_regions.c). */
void tj_verify_memory_op(tj_verifier *v, tj_ref r);
void tj_verify_control_op(tj_verifier *v, tj_ref r);

/* SIMT IR (verify_simt.c): whether r's op exists at the kernel's level
 * (reports when not); SIMT value types; the SIMT-only ops; the kernel's
 * thread count. */
int tj_verify_level(tj_verifier *v, tj_ref r);
void tj_verify_simt_result(tj_verifier *v, tj_ref r);
void tj_verify_simt_op(tj_verifier *v, tj_ref r);
void tj_verify_simt_kernel(tj_verifier *v);

#endif
