/* `tilejit run FILE -k KERNEL [ARG=VALUE]...`: runs one kernel on .npy
 * files (or random data), optionally checks it against the reference
 * interpreter and times it, and writes back what it stored. A failing
 * command writes nothing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "run.h"

enum { TIME_MIN_RUNS = 3, TIME_MAX_RUNS = 100 };
#define TIME_BUDGET_S 0.25 /* timed runs stop after about this much */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t tensor_bytes(const tj_tensor *t) { return (size_t)run_numel(t) * (size_t)tj_dtype_size(t->dtype); }

/* ---- copies of the tensor arguments ------------------------------------------------------ */

/* args with every tensor's data copied (scalars as they are). */
static tj_arg *copy_args(tj_ctx *c, const tj_arg *args, uint32_t n)
{
    tj_arg *copy = tj_alloc(c, (n + 1) * sizeof *copy);
    for (uint32_t i = 0; i < n; i++) {
        copy[i] = args[i];
        if (!args[i].is_tensor)
            continue;
        size_t bytes = tensor_bytes(&args[i].tensor);
        copy[i].tensor.data = tj_alloc(c, bytes + 1);
        memcpy(copy[i].tensor.data, args[i].tensor.data, bytes);
    }
    return copy;
}

static void restore_args(tj_arg *dst, const tj_arg *src, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (src[i].is_tensor)
            memcpy(dst[i].tensor.data, src[i].tensor.data, tensor_bytes(&src[i].tensor));
}

/* ---- --time ------------------------------------------------------------------------ */

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_time(double s)
{
    if (s < 1e-3)
        printf("%.1f us", s * 1e6);
    else if (s < 1)
        printf("%.3f ms", s * 1e3);
    else
        printf("%.3f s", s);
}

/* The real run was the warm-up; these run on scratch copies of the inputs,
 * restored before each run, so the written-back results are the real
 * run's and atomics do not pile up. */
static int time_runs(tj_ctx *c, const cli_device *dev, const tj_kernel *k, const tj_arg *inputs, uint32_t n,
                     double first)
{
    int runs = first > 0 ? (int)(TIME_BUDGET_S / first) : TIME_MAX_RUNS;
    runs = runs < TIME_MIN_RUNS ? TIME_MIN_RUNS : runs > TIME_MAX_RUNS ? TIME_MAX_RUNS : runs;
    tj_arg *scratch = copy_args(c, inputs, n);
    double *times = tj_alloc(c, (size_t)runs * sizeof *times);
    for (int r = 0; r < runs; r++) {
        restore_args(scratch, inputs, n);
        double t0 = now_s();
        if (dev->run(k, scratch, n))
            return -1;
        times[r] = now_s() - t0;
    }
    qsort(times, (size_t)runs, sizeof *times, compare_double);
    printf("time: ");
    print_time(runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]));
    printf(" (median of %d runs after warm-up, device %s)\n", runs, dev->name);
    return 0;
}

/* ---- --check ------------------------------------------------------------------------ */

/* Runs the front end's unoptimized IR in the reference interpreter on
 * `inputs` (consumed) and compares every written tensor. */
static int check_with_reference(const run_state *rs, const tj_kernel *ref, tj_arg *inputs,
                                const unsigned char *written)
{
    uint32_t n = rs->k->nparams;
    if (tj_interp_run(ref, inputs, n))
        return -1;
    int off = 0;
    for (uint32_t i = 0; i < n; i++)
        if (written[i])
            off |= run_compare(rs->k->params[i].name, &rs->args[i].tensor, &inputs[i].tensor);
    return off;
}

/* ---- writing results ------------------------------------------------------------------------ */

static const char *output_path(tj_ctx *c, const cli_opts *o, const run_tensor *t, const char *name)
{
    if (t->path)
        return t->path;
    if (!o->output)
        return NULL;
    tj_buf b = {0};
    tj_buf_printf(&b, "%s/%s.npy", o->output, name);
    return cli_buf_take(c, &b);
}

/* Writes every stored-to tensor to a temporary file first and renames
 * them only when all were written, so a failure leaves every file as it
 * was. */
static int write_outputs(tj_ctx *c, const cli_opts *o, const run_state *rs, const unsigned char *written)
{
    uint32_t n = rs->k->nparams;
    cli_tmpfile *tmp = tj_alloc(c, (n + 1) * sizeof *tmp);
    int failed = 0;
    for (uint32_t i = 0; i < n && !failed; i++) {
        const run_tensor *t = &rs->tensors[i];
        const char *path = written[i] ? output_path(c, o, t, rs->k->params[i].name) : NULL;
        if (!path)
            continue;
        run_convert_back(rs, i);
        failed = cli_tmp_open(c, path, &tmp[i]) != 0;
        if (!failed && npy_write(tmp[i].f, &t->file)) {
            cli_file_error(c, path, "cannot write: %s", strerror(errno));
            failed = 1;
        }
        failed = failed || cli_tmp_close(c, &tmp[i]);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (failed)
            cli_tmp_discard(&tmp[i]);
        else
            failed = cli_tmp_commit(c, &tmp[i]) != 0;
    }
    return failed ? -1 : 0;
}

static int make_output_dir(tj_ctx *c, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (mkdir(dir, 0777) != 0) {
        cli_file_error(c, dir, "cannot create the output directory: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------------------ */

static int check_usage(tj_ctx *c, const cli_opts *o)
{
    if (o->nfiles != 1)
        return cli_usage_error(o->cmd, "expected one FILE");
    if (!o->kernel)
        return cli_usage_error(o->cmd, "missing -k KERNEL");
    if (o->device && !cli_valid_device_name(o->device))
        return cli_usage_error(o->cmd, "unknown device '%s' (devices: %s)", o->device, cli_device_names(c));
    if (o->output && !o->random)
        return cli_usage_error(o->cmd, "-o DIR needs --random (tensors given as ARG=PATH are written back in place)");
    return CLI_OK;
}

/* Runs, times and checks; returns 0 when the results may be written. */
static int launch(tj_ctx *c, const cli_opts *o, const cli_device *dev, const run_state *rs, const tj_kernel *ref,
                  const tj_kernel *opt, const unsigned char *written)
{
    uint32_t n = rs->k->nparams;
    tj_arg *inputs = o->check || o->time ? copy_args(c, rs->args, n) : NULL;
    double t0 = now_s();
    if (dev->run(opt, rs->args, n))
        return -1;
    double first = now_s() - t0;
    if (o->time && time_runs(c, dev, opt, inputs, n, first))
        return -1;
    if (o->check && check_with_reference(rs, ref, inputs, written)) {
        tj_error(c, "--check: the results differ from the reference interpreter's; nothing was written");
        return -1;
    }
    return 0;
}

int cmd_run(tj_ctx *c, const cli_opts *o)
{
    int rc = check_usage(c, o);
    if (rc != CLI_OK)
        return rc;
    const cli_device *dev = cli_find_device(c, o->device);
    cli_kernel k;
    run_state rs;
    if (!dev || cli_open_kernel(c, o->files[0], o->kernel, &k) || cli_check_names(c, &k, o) ||
        run_bind_args(c, o, &k, &rs))
        return CLI_ERROR;
    tj_kernel *ref = cli_build_kernel(c, &k, o->defines, o->ndefines, rs.dims, rs.ndims);
    if (!ref)
        return CLI_ERROR;
    tj_kernel *opt = tj_kernel_clone(ref);
    if (tj_optimize(opt, o->check) || tj_check_args(opt, rs.args, k.nparams))
        return CLI_ERROR;
    unsigned char *written = tj_alloc(c, k.nparams + 1);
    cli_written_params(ref, written);
    if (launch(c, o, dev, &rs, ref, opt, written))
        return CLI_ERROR;
    if (o->output && make_output_dir(c, o->output))
        return CLI_ERROR;
    return write_outputs(c, o, &rs, written) ? CLI_ERROR : CLI_OK;
}
