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

/* For every instruction, a positive number its integer value is known to
 * be a multiple of (1: nothing known); arena memory. */
int64_t *tj_divisibility(const tj_kernel *k);

/* Whether 0 <= v < size(param, axis) holds in every program, from the
 * grid (program_id(a) * E with grid[a] = cdiv(size, E) or size / E), loop
 * bounds (range(lo >= 0, size, step > 0)) or constants. */
int tj_below_dim(const tj_kernel *k, tj_ref v, uint32_t param, int axis);

#endif
