/* The reference interpreters: Tile IR (the `interp` device and the oracle of
 * every test) and SIMT IR (what one thread does, all threads in lockstep). */
#ifndef TILEJIT_INTERP_H
#define TILEJIT_INTERP_H

#include "tilejit/args.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* Runs a SIMT kernel on the host: every program of the grid, all its threads
 * in lockstep, with host pointers in the tensor arguments. */
int tj_simt_run(const tj_kernel *simt, const tj_arg *args, uint32_t nargs);

#ifdef __cplusplus
}
#endif
#endif
