/* The compile pipeline (pipeline/): the one list of steps from Tile IR to
 * optimized SIMT IR that every client runs (the CLI, the JIT, the tuner, the
 * Metal runtime, the benchmarks), and the passes by name (tj-opt -p).
 *
 *   optimize, facts, specialize, optimize,   <- the JIT's cache key is taken here
 *   prefetch, dce, lower-simt, optimize
 *
 * TJ_DUMP=after-all (or a comma-separated list of step and pass names)
 * prints the IR to stderr after each; TJ_VERIFY=1 (set by the test suite)
 * runs the verifier after each. docs/passes.md describes every step. */
#ifndef TILEJIT_PIPELINE_H
#define TILEJIT_PIPELINE_H

#include "tilejit/args.h"
#include "tilejit/lower.h"
#include "tilejit/passes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tj_step {
    TJ_STEP_OPTIMIZE_TILE,        /* canonicalize, cse, dce to a fixed point */
    TJ_STEP_FACTS,                /* what the example arguments guarantee -> k->facts */
    TJ_STEP_SPECIALIZE,           /* facts and specialized dims folded into the IR */
    TJ_STEP_OPTIMIZE_SPECIALIZED, /* what specialization made dead or constant */
    TJ_STEP_PREFETCH,             /* loads in loops issued stages - 1 iterations ahead */
    TJ_STEP_DCE,                  /* what prefetch left unused */
    TJ_STEP_LOWER,                /* Tile IR -> SIMT IR (a new kernel) */
    TJ_STEP_OPTIMIZE_SIMT,        /* the same passes on SIMT IR */
    TJ_STEP_END
} tj_step;

/* Where the JIT takes its cache key: the specialized Tile IR, before the
 * work a cache hit saves. */
#define TJ_STEP_KEY TJ_STEP_PREFETCH

typedef struct tj_pipeline_options {
    tj_lower_options lower;
    const tj_arg *args; /* example arguments for `facts`; NULL: k->facts as they are */
    uint32_t nargs;
    int verify;         /* the verifier after every step (also with TJ_VERIFY=1) */
} tj_pipeline_options;

/* Runs steps [from, to) on *k. `prefetch` replaces *k by a copy (the kernel
 * the cache key was taken from stays as it was) and `lower-simt` by the
 * SIMT kernel, both in the same context. opt may be NULL (CUDA, no
 * arguments). 0, or non-zero after the failing step reported why. */
int tj_pipeline_run(tj_kernel **k, tj_step from, tj_step to, const tj_pipeline_options *opt);

/* The whole list: Tile IR (optimized or not) -> optimized SIMT IR; k itself
 * is optimized and specialized in place. NULL after a diagnostic. */
tj_kernel *tj_compile_simt(tj_kernel *k, const tj_pipeline_options *opt);

/* The name of a step, as TJ_DUMP and diagnostics spell it. */
const char *tj_step_name(tj_step s);

/* ---- passes by name ------------------------------------------------------ */

typedef int (*tj_pass_fn)(tj_kernel *k);
/* NULL when there is no pass of that name. */
tj_pass_fn tj_pass_lookup(const char *name);
/* Runs a comma-separated list of passes (every Tile IR pass, and
 * lower-simt / lower-simt-metal: the pipeline's prefetch, dce and lowering
 * for CUDA / Metal); verifies after each when `verify` is set. */
int tj_run_passes(tj_kernel *k, const char *names, int verify);
/* canonicalize, cse and dce until nothing changes (a few rounds at most):
 * the pipeline's `optimize` steps, and `ir-opt` on the command line. */
int tj_optimize(tj_kernel *k, int verify);

#ifdef __cplusplus
}
#endif
#endif
