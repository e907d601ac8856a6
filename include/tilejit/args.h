/* The arguments of a launch: tensors (DLPack-like) and scalars, and their
 * check against a kernel's parameters. Part of the IR layer: every stage
 * above may describe arguments; the interpreter (tilejit/interp.h)
 * evaluates the grid from them. */
#ifndef TILEJIT_ARGS_H
#define TILEJIT_ARGS_H

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

#ifdef __cplusplus
}
#endif
#endif
