/* Arguments for a launch, and the reference interpreter (the `cpu` device). */
#ifndef TILEJIT_INTERP_H
#define TILEJIT_INTERP_H

#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor argument, DLPack-compatible: strides are in elements. */
typedef struct tj_tensor {
    void *data;
    tj_dtype dtype;
    int rank;
    int64_t shape[TJ_MAX_RANK];
    int64_t strides[TJ_MAX_RANK];
} tj_tensor;

typedef struct tj_arg {
    int is_tensor;
    tj_tensor tensor;
    union { int64_t i; double f; } scalar; /* by the parameter's dtype */
} tj_arg;

/* Checks arguments against the kernel's parameters: kinds, dtypes, ranks,
 * literal dims, one size per dim name, and the kernel's specializations.
 * Errors name the parameter. Returns 0 when they fit. */
int tj_check_args(const tj_kernel *k, const tj_arg *args, uint32_t nargs);

/* Evaluates the grid block: grid[0..2] (missing axes are 1). An axis may
 * be 0 (an empty launch: nothing runs); a negative axis or more than 2^31
 * programs is an error. Checks the arguments first. */
int tj_eval_grid(const tj_kernel *k, const tj_arg *args, uint32_t nargs, int64_t grid[3]);

/* Runs every program of the grid, one after another, on the host. Loads
 * and stores go straight to the tensors' memory; out-of-range elements are
 * neither read nor written. Returns 0, or reports a diagnostic. The kernel
 * must have passed tj_verify (IR that did not is refused with an internal
 * error where it would otherwise be unsafe, not checked in full). */
int tj_interp_run(const tj_kernel *k, const tj_arg *args, uint32_t nargs);

/* f16 / bf16 conversions with round-to-nearest-even. */
uint16_t tj_f32_to_f16(float f);
float tj_f16_to_f32(uint16_t h);
uint16_t tj_f32_to_bf16(float f);
float tj_bf16_to_f32(uint16_t h);
/* From a double in one rounding step (f64 -> f32 -> f16 would round twice). */
uint16_t tj_f64_to_f16(double d);
uint16_t tj_f64_to_bf16(double d);

#ifdef __cplusplus
}
#endif
#endif
