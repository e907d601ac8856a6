/* Facts about a Tile IR kernel's tensors and scalar values, shared by the
 * specialize pass and the lowering. */
#ifndef TJ_PASSES_FACTS_H
#define TJ_PASSES_FACTS_H

#include "tilejit/ir.h"

/* The size of parameter `param` along `axis` when it is known at compile
 * time (a literal dim, or a dim name in k->spec). */
int tj_dim_const(const tj_kernel *k, uint32_t param, int axis, int64_t *value);
/* A number the size along `axis` is known to be a multiple of (>= 1). */
int64_t tj_dim_divisor(const tj_kernel *k, uint32_t param, int axis);
/* The parameter index of a Tile IR tensor value (a PARAM instruction). */
int tj_param_index(const tj_kernel *k, tj_ref tensor, uint32_t *param);

/* Value of an integer scalar built from constants by arithmetic. */
int tj_eval_const(const tj_kernel *k, tj_ref r, int64_t *value);

/* What is known of an integer value v: v = rem + mod * n for some integer
 * n (0 <= rem < mod), or, where mod is 0, v = rem (mod 1: nothing). The
 * powers of two in mod hold whatever wraps (arithmetic modulo 2^w keeps
 * them, so folds that rest on the low bits are exact); the rest of mod
 * holds where nothing overflows, as divisibility has always assumed. */
typedef struct tj_residue {
    int64_t mod, rem;
} tj_residue;
/* Instruction r's residue from its operands' (args[i]: in->args[i]'s, the
 * first 3): integer constants, add, sub, neg, mul, shl by a constant, and,
 * or, select, integer casts and dims; nothing known for the rest. */
tj_residue tj_residue_step(const tj_kernel *k, tj_ref r, const tj_residue *args);
/* The residue of the integer constant v (exact up to 2^31 in magnitude). */
tj_residue tj_residue_const(int64_t v);
/* A number every value of x is a multiple of (0: the value is 0). */
int64_t tj_residue_divisor(tj_residue x);
/* x's known low bits: the count b returned (64: every bit), v = *low
 * modulo 2^b. */
int tj_residue_low_bits(tj_residue x, uint64_t *low);

/* For every instruction, a positive number its integer value is known to
 * be a multiple of (1: nothing known; 0: the value is 0), from the scalars'
 * residues in program order; arena memory. */
int64_t *tj_divisibility(const tj_kernel *k);

/* Whether 0 <= v < size(param, axis) holds in every program, from the
 * grid (program_id(a) * E with grid[a] = cdiv(size, E) or size / E), loop
 * bounds (range(lo >= 0, size, step > 0)) or constants. */
int tj_below_dim(const tj_kernel *k, tj_ref v, uint32_t param, int axis);

#endif
