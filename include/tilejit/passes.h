/* Tile IR passes: one file each under passes/, `int tj_pass_NAME(tj_kernel *)`
 * returning 0, or non-zero after reporting diagnostics. */
#ifndef TILEJIT_PASSES_H
#define TILEJIT_PASSES_H

#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

int tj_pass_canonicalize(tj_kernel *k); /* folding and algebraic simplification */
int tj_pass_cse(tj_kernel *k);
int tj_pass_dce(tj_kernel *k);

/* Software pipelining (passes/prefetch.c): a load in a loop whose address
 * moves only with the loop variable is issued `stages - 1` iterations ahead
 * (the config's `stages`, default 2, at most TJ_MAX_STAGES). The lowering to
 * SIMT IR runs it. */
enum { TJ_DEFAULT_STAGES = 2, TJ_MAX_STAGES = 4 };
int tj_pass_prefetch(tj_kernel *k);

typedef int (*tj_pass_fn)(tj_kernel *k);
/* NULL when there is no pass of that name. */
tj_pass_fn tj_pass_lookup(const char *name);
/* Runs a comma-separated list of passes; verifies after each when `verify`
 * is set. TJ_DUMP=after-all (or a pass name) prints the IR to stderr after
 * each pass (or that one). */
int tj_run_passes(tj_kernel *k, const char *names, int verify);
/* The default optimization pipeline (`ir-opt`). */
int tj_optimize(tj_kernel *k, int verify);

#ifdef __cplusplus
}
#endif
#endif
