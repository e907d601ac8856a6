/* MLIR import (mlir/, docs/interop.md): programs in func + arith + math +
 * linalg + tensor on ranked, static tensors become graphs of the array
 * front end (tilejit/array.h), so its fusion and tiling apply.
 *
 *   tj_mlir_module *m = tj_mlir_parse(ctx, "model.mlir", text, len);
 *   if (!m) puts(tj_diag_render(ctx));   // FILE:LINE:COL: error: ... naming the op
 *   tj_mlir_fn *f = tj_mlir_fn_new(m, "forward", TJ_DEVICE_CPU, 0, &err);
 *   tj_mlir_fn_call(f, inputs, 2, outputs, 1, &err);   // host tensors in, host tensors out
 *
 * MLIR itself (MLIR 22's C API) is in a reader module, libtilejit_mlir.so,
 * built where libmlir-22-dev is found and loaded with dlopen on first use,
 * so that only programs that import MLIR load libMLIR: without it, parsing
 * fails with the reason and the rest of tilejit works.
 */
#ifndef TILEJIT_MLIR_H
#define TILEJIT_MLIR_H

#include "tilejit/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when the reader can be loaded, else 1 with why in err: "tilejit was
 * built without MLIR 22 ..." or where it was looked for. The reader:
 * $TILEJIT_MLIR_READER (a path), else libtilejit_mlir.so beside the
 * library (or executable) tilejit is linked into, else the build tree's. */
int tj_mlir_available(tj_rt_error *err);

typedef struct tj_mlir_module tj_mlir_module;

/* Parses and verifies (MLIR's errors, at their FILE:LINE:COL), then checks
 * that every op of every function is one tilejit imports, on types it
 * has: each op it does not is an error at the op's location naming it.
 * Diagnostics go into c (the text is registered as `file` to be quoted).
 * NULL on any error. */
tj_mlir_module *tj_mlir_parse(tj_ctx *c, const char *file, const char *text, size_t len);
void tj_mlir_module_free(tj_mlir_module *m);

/* The functions, in order. */
uint32_t tj_mlir_function_count(const tj_mlir_module *m);
const char *tj_mlir_function_name(const tj_mlir_module *m, uint32_t i);

/* A parameter or result of a function: a tensor (rank >= 1) or a scalar
 * (rank 0). */
typedef struct tj_mlir_value_info {
    char name[64]; /* "arg0", "arg1", ..., or "result0", ...; a parameter's
                    * name from an `mlir.name`-like string attribute when present */
    tj_dtype dtype;
    int rank;
    int64_t shape[TJ_MAX_RANK];
} tj_mlir_value_info;

/* The parameters and results of function `func` (NULL: the first one):
 * up to `max` of each into params and results (either may be NULL), the
 * counts into *nparams, *nresults. 0, or 1 with err (no such function). */
int tj_mlir_function_signature(const tj_mlir_module *m, const char *func, tj_mlir_value_info *params,
                               uint32_t *nparams, tj_mlir_value_info *results, uint32_t *nresults, uint32_t max,
                               tj_rt_error *err);

/* Builds the body of `func` into g: inputs[i] is its i-th parameter
 * (checked against its type), outputs[i] gets the node of its i-th
 * result. Errors at the failing op's location go into c (may be NULL:
 * then into err). 0, or 1. */
int tj_mlir_build(const tj_mlir_module *m, const char *func, tj_graph *g, const tj_array *inputs, uint32_t ninputs,
                  tj_array *outputs, uint32_t maxout, tj_ctx *c, tj_rt_error *err);

/* ---- a function ready to call ---- */

typedef struct tj_mlir_fn tj_mlir_fn;

/* `func` of m (NULL: the first) on a device; keeps its own graph, so
 * repeated calls compile nothing new. The module must outlive it. */
tj_mlir_fn *tj_mlir_fn_new(const tj_mlir_module *m, const char *func, tj_device_kind device, int ordinal,
                           tj_rt_error *err);
void tj_mlir_fn_free(tj_mlir_fn *f);
/* Runs it: inputs are host tensors (any strides) of the parameters' dtypes
 * and shapes; results are written to outputs[i].data (host memory, C
 * order, at least the result's size). 0, or 1 with err. */
int tj_mlir_fn_call(tj_mlir_fn *f, const tj_tensor *inputs, uint32_t ninputs, const tj_tensor *outputs,
                    uint32_t noutputs, tj_rt_error *err);
/* The graph of the last call (for tj_graph_get_stats). */
tj_graph *tj_mlir_fn_graph(tj_mlir_fn *f);

#ifdef __cplusplus
}
#endif
#endif
