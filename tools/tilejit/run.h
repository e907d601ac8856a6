/* `tilejit run`: the arguments of one launch and what is done with them. */
#ifndef TILEJIT_CLI_RUN_H
#define TILEJIT_CLI_RUN_H

#include "cli.h"
#include "npy.h"

/* A tensor argument: the array as it is (or will be) on disk, and the
 * kernel's view of it in the parameter's dtype. */
typedef struct run_tensor {
    const char *path;  /* ARG=PATH; NULL when made by --random */
    const char *what;  /* "argument 'X' (x.npy)", for messages */
    npy_array file;    /* its dtype and byte order are written back */
    int converted;     /* file.data is another buffer than the argument's */
} run_tensor;

typedef struct run_state {
    const cli_kernel *k;
    tj_arg *args;         /* one per parameter */
    run_tensor *tensors;  /* one per parameter (scalars leave theirs empty) */
    tj_binding *dims;     /* dim name -> size, from arrays and --shape */
    const char **dim_from; /* who bound each dim, for messages */
    uint32_t ndims, dimcap;
} run_state;

/* run_args.c: reads, converts, parses or makes every argument and binds
 * the dims. Reports every problem (naming the argument and file); 0 when
 * all arguments are good. */
int run_bind_args(tj_ctx *c, const cli_opts *o, const cli_kernel *k, run_state *rs);
/* Converts written tensors back into their file's dtype. */
void run_convert_back(const run_state *rs, uint32_t param);

/* run_random.c: a seeded generator and random tensor contents. */
typedef struct run_rng {
    uint64_t state;
} run_rng;
void run_fill_random(run_rng *rng, tj_dtype dt, void *data, uint64_t numel);

/* run_compare.c: compares got with want elementwise under the dtype's
 * tolerance; prints `check: NAME: max abs error ..., max rel error ...:
 * ok|FAIL ...` on stdout. Returns 0 when within tolerance. */
int run_compare(const char *name, const tj_tensor *got, const tj_tensor *want);

/* Elements of a tensor argument (contiguous, C order). */
uint64_t run_numel(const tj_tensor *t);

#endif
