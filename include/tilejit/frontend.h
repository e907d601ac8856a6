/* The .tj front end: source text -> AST (tj_program) -> Tile IR per configuration. */
#ifndef TILEJIT_FRONTEND_H
#define TILEJIT_FRONTEND_H

#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_program tj_program; /* a parsed file: kernels and fn helpers */

/* Parses and checks the syntax of a whole file; reports every error it can
 * recover from. Returns NULL when there were errors. */
tj_program *tj_parse_program(tj_ctx *c, const char *file, const char *text, size_t len);

uint32_t tj_program_kernel_count(const tj_program *p);
const char *tj_program_kernel_name(const tj_program *p, uint32_t i);
/* Index of kernel `name`, or -1 (no diagnostic). */
int tj_program_find_kernel(const tj_program *p, const char *name);

/* A kernel's tile parameters: `const` ones have one value, `tune` ones the
 * list in source order. `warps` and `stages` are included when declared. */
typedef struct tj_tile_param {
    const char *name;
    int tunable;
    const int64_t *values;
    uint32_t nvalues;
} tj_tile_param;
uint32_t tj_kernel_tile_params(const tj_program *p, int kernel, const tj_tile_param **out);
/* The kernel's parameters as declared (names, dtypes, dims). Both return 0
 * (and *out NULL) for no such kernel, or a NULL out. */
uint32_t tj_kernel_params(const tj_program *p, int kernel, const tj_param **out);

/* "NAME=INT,NAME=INT,..." (NULL or "": none) into out[0..max): the number
 * of bindings, or -1 after reporting a malformed one. Names are copied into
 * the context. For tile parameters (-D) and dims (--shape). */
int64_t tj_bindings_parse(tj_ctx *c, const char *text, tj_binding *out, uint32_t max);

/* Picks the configuration: every tile parameter bound in `given` keeps its
 * value; the others take the first combination, in the order of the `tune`
 * lists, that satisfies every `where` clause. `dims` binds dim names (from
 * argument shapes); a where clause naming an unbound dim is skipped when
 * `dims` is NULL (emit without --shape) and an error otherwise. On success
 * *out holds one binding per tile parameter (arena memory). */
int tj_select_config(tj_ctx *c, const tj_program *p, int kernel,
                     const tj_binding *given, uint32_t ngiven,
                     const tj_binding *dims, uint32_t ndims,
                     tj_binding **out, uint32_t *nout);

/* Whether one whole configuration (every declared tile parameter bound;
 * undeclared warps and stages take their defaults) satisfies the kernel's
 * where clauses for `dims` (NULL: clauses naming a dim are skipped).
 * 1: yes; 0: no, and *failed (may be NULL) gets the first failing
 * clause's text; -1 after reporting a diagnostic. For the autotuner. */
int tj_config_satisfies(tj_ctx *c, const tj_program *p, int kernel, const tj_binding *config, uint32_t nconfig,
                        const tj_binding *dims, uint32_t ndims, const char **failed);

/* Builds the Tile IR of one kernel for one configuration. Every tile
 * parameter must be bound in `config`; a dim name used where a compile-time
 * constant is needed (a tile extent) must be bound in `dims`, and becomes a
 * specialization recorded in kernel->spec. Other dim names stay runtime
 * values (DIM ops). Type and shape errors are reported with source
 * locations; returns NULL on error. */
tj_kernel *tj_build_kernel(tj_ctx *c, const tj_program *p, int kernel,
                           const tj_binding *config, uint32_t nconfig,
                           const tj_binding *dims, uint32_t ndims);

/* Front end + building of every kernel with its first configuration, for
 * `tilejit check`: returns 0 when the file is clean. Dims used as extents
 * take a placeholder value (64) here. */
int tj_check_program(tj_ctx *c, const tj_program *p);

#ifdef __cplusplus
}
#endif
#endif
