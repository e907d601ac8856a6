/* Tile IR passes: one file each under passes/, `int tj_pass_NAME(tj_kernel *)`
 * returning 0, or non-zero after reporting diagnostics. They run in the
 * order of the compile pipeline (tilejit/pipeline.h); docs/passes.md lists
 * them. */
#ifndef TILEJIT_PASSES_H
#define TILEJIT_PASSES_H

#include "tilejit/args.h"

#ifdef __cplusplus
extern "C" {
#endif

int tj_pass_canonicalize(tj_kernel *k); /* folding and algebraic simplification */
int tj_pass_cse(tj_kernel *k);
int tj_pass_dce(tj_kernel *k);

/* Records what the arguments guarantee (unit innermost stride, 16-byte aligned
 * base, dims divisible by 16) in k->facts, for specialization. */
void tj_facts_from_args(tj_kernel *k, const tj_arg *args, uint32_t nargs);
/* The facts one tensor argument gives: the single definition that
 * specialization, the launch check and the cache keys all read. */
tj_facts tj_facts_of_tensor(const tj_tensor *t);
/* NULL when tensor t gives every fact in `compiled`, else which one it lacks
 * (a phrase for an error message). */
const char *tj_facts_broken(const tj_facts *compiled, const tj_tensor *t);
/* The facts of row-major tensors at a 16-byte aligned address (what the JIT
 * derives for contiguous arguments): each dim sized by its literal, else by
 * dims, else `other`; other < 0 makes a dim of no known size an error. 0, or
 * nonzero after reporting which dim. */
int tj_facts_contiguous(tj_kernel *k, const tj_binding *dims, uint32_t ndims, int64_t other);

/* Specialize: folds the facts in k->facts and k->spec into the IR and removes
 * the bounds checks they make dead. */
int tj_pass_specialize(tj_kernel *k);

/* Software pipelining (passes/prefetch.c): a load in a loop whose address
 * moves only with the loop variable is issued `stages - 1` iterations ahead
 * (the config's `stages`, default 2, at most TJ_MAX_STAGES). The pipeline
 * runs it just before the lowering to SIMT IR, which turns what it moved
 * ahead into copy rings or registers in flight. */
enum { TJ_MAX_STAGES = 8 }; /* the default: TJ_DEFAULT_STAGES (ir.h); a ring of 7 tiles in flight is
                               cp_async's largest wait (TJ_CP_ASYNC_MAX_PENDING) */
int tj_pass_prefetch(tj_kernel *k);

#ifdef __cplusplus
}
#endif
#endif
