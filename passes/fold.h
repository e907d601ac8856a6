/* Constant folding of elementwise ops on scalars, with the interpreter's
 * semantics (docs/ir.md). Internal to passes/. */
#ifndef TJ_FOLD_H
#define TJ_FOLD_H

#include "passes/pass_util.h"

/* Folds `op` applied to the constants a[0..nargs) of dtype `in` (for
 * `select`, a[0] is the bool condition and `in` the dtype of a[1], a[2]),
 * giving a value of dtype `out`. Returns 1 with *res set, or 0 when the op
 * is not folded: not elementwise, or a result the device might compute
 * differently (transcendental functions, f16/bf16 fma, the sign of a zero
 * that max/min pick). */
int tj_fold_elementwise(tj_op op, tj_dtype in, tj_dtype out, const tj_cval *a,
                        tj_cval *res);

/* v wrapped to the width of integer (or bool) dtype dt. */
int64_t tj_fold_wrap(tj_dtype dt, uint64_t v);
/* v rounded to float dtype dt (f16/bf16 to nearest even, through f32). */
double tj_fold_round(tj_dtype dt, double v);
/* The value with every bit set in dt: -1, the unsigned maximum, or true. */
int64_t tj_fold_all_ones(tj_dtype dt);

#endif
