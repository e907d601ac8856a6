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

/* cmd_run.c: the outputs of a run, shared with CUDA C kernels (cuda_c.c):
 * prepare checks every output path before anything runs; write commits
 * them all or none. */
int run_prepare_outputs(tj_ctx *c, const cli_opts *o, const run_state *rs, const unsigned char *written,
                        cli_tmpfile *tmp);
int run_write_outputs(tj_ctx *c, const run_state *rs, cli_tmpfile *tmp);
int run_make_output_dir(tj_ctx *c, const char *dir);

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

/* Elements and bytes of a tensor argument (contiguous, C order). */
uint64_t run_numel(const tj_tensor *t);
size_t run_bytes(const tj_tensor *t);
/* args with every tensor's data copied (scalars as they are), and back. */
tj_arg *run_copy_args(tj_ctx *c, const tj_arg *args, uint32_t n);
void run_restore_args(tj_arg *dst, const tj_arg *src, uint32_t n);

/* ---- devices (devices.c, device_cpu.c, device_cuda.c, device_metal.c) ---- */

/* What a device compiles: the kernel, its optimized Tile IR (checked
 * against the arguments), the -D bindings, and the host arguments. */
typedef struct run_request {
    const cli_kernel *k;
    const tj_kernel *tile;
    const tj_binding *defines;
    uint32_t ndefines;
    const tj_arg *args;
    uint32_t nargs;
    int tune; /* --tune: time untuned configurations before compiling */
    int ordinal; /* which device of its kind: N of --device cuda:N (0) */
} run_request;

/* One device's state for one `run`. */
typedef struct run_session {
    tj_ctx *c;
    const run_request *req;
    void *impl; /* the device's own state */
} run_session;

/* How `--time` measures: the median of `runs` launches after a warm-up,
 * with as many runs as fit the budget (within [min_runs, max_runs]). */
typedef struct run_timing {
    double budget_s;
    int min_runs, max_runs;
    double median_s; /* out */
    int runs;        /* out */
} run_timing;

typedef struct run_device {
    const char *name;
    const char *what;
    /* NULL when the device can run; otherwise why not. */
    const char *(*unavailable)(tj_ctx *c);
    /* Prints the device's lines for `tilejit devices`; NULL: one line. */
    void (*describe)(tj_ctx *c, const struct run_device *d);
    /* Compiles for the request and prepares buffers; 0 on success. */
    int (*open)(run_session *s);
    /* Runs once: the tensors of args (host memory) are the inputs and get
     * the results. */
    int (*run)(run_session *s, tj_arg *args);
    /* Times launches on the inputs (left unchanged). */
    int (*time)(run_session *s, const tj_arg *inputs, run_timing *t);
    void (*close)(run_session *s); /* also after a failed open */
} run_device;

extern const run_device run_device_cpu, run_device_interp, run_device_cuda, run_device_metal;

/* NULL (after reporting) for an unavailable device. NAME NULL: the
 * default, cuda when it is available, else cpu. */
const run_device *run_find_device(tj_ctx *c, const char *name);
int run_valid_device_name(const char *name);
/* N of "NAME:N" (a device of several, e.g. cuda:1); 0 for a bare name. */
int run_device_ordinal(const char *name);
const char *run_device_names(tj_ctx *c); /* "cpu, interp, cuda, metal" */
/* Sorts times[0..n) and returns the median. */
double run_median(double *times, int n);
double run_now_s(void); /* a monotonic clock */
/* Runs count = budget / first run's time, clamped to the timing's limits. */
int run_count(const run_timing *t, double first_s);
/* Times run(s, scratch) on scratch copies of the inputs, restored from
 * them before each run (not timed, so atomics do not pile up from run to
 * run): a warm-up, then run_count runs; fills t->runs and t->median_s. */
int run_time_host(run_session *s, const tj_arg *inputs, run_timing *t, int (*run)(run_session *s, tj_arg *args));

#endif
