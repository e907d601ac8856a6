/* `tilejit run FILE -k KERNEL [ARG=VALUE]...`: runs one kernel on .npy
 * files (or random data), optionally checks it against the reference
 * interpreter and times it, and writes back what it stored. A failing
 * command writes nothing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "run.h"

/* --time: the median of 3 to 100 runs, as many as fit in about 0.25 s. */
static const run_timing time_limits = {.budget_s = 0.25, .min_runs = 3, .max_runs = 100};

static void print_time(double s)
{
    if (s < 1e-3)
        printf("%.1f us", s * 1e6);
    else if (s < 1)
        printf("%.3f ms", s * 1e3);
    else
        printf("%.3f s", s);
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

/* Checks every output before the kernel runs (cli_tmp_prepare), and that
 * no two name one file: one would silently lose the other's result. */
int run_prepare_outputs(tj_ctx *c, const cli_opts *o, const run_state *rs, const unsigned char *written,
                        cli_tmpfile *tmp)
{
    uint32_t n = rs->k->nparams;
    for (uint32_t i = 0; i < n; i++) {
        const char *path = written[i] ? output_path(c, o, &rs->tensors[i], rs->k->params[i].name) : NULL;
        if (path && cli_tmp_prepare(c, path, &tmp[i]))
            return -1;
        for (uint32_t j = 0; path && j < i; j++)
            if (tmp[j].path && cli_tmp_same_file(&tmp[j], &tmp[i])) {
                cli_file_error(c, path, "%s and %s are both outputs and name this one file; nothing was written",
                               rs->tensors[j].what, rs->tensors[i].what);
                return -1;
            }
    }
    return 0;
}

/* Writes every prepared output to its temporary file, then commits them all
 * or none, so a failure leaves every file as it was. */
int run_write_outputs(tj_ctx *c, const run_state *rs, cli_tmpfile *tmp)
{
    uint32_t n = rs->k->nparams;
    int failed = 0;
    for (uint32_t i = 0; i < n && !failed; i++) {
        if (!tmp[i].path)
            continue;
        run_convert_back(rs, i);
        failed = cli_tmp_open(c, &tmp[i]) != 0;
        if (!failed && npy_write(tmp[i].f, &rs->tensors[i].file)) {
            cli_file_error(c, tmp[i].path, "cannot write: %s", strerror(errno));
            failed = 1;
        }
        failed = failed || cli_tmp_close(c, &tmp[i]);
    }
    if (!failed)
        return cli_tmp_commit_all(c, tmp, n);
    for (uint32_t i = 0; i < n; i++)
        cli_tmp_discard(&tmp[i]);
    return -1;
}

int run_make_output_dir(tj_ctx *c, const char *dir)
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
    if (o->device && !run_valid_device_name(o->device))
        return cli_usage_error(o->cmd, "unknown device '%s' (devices: %s)", o->device, run_device_names(c));
    if (o->output && !o->random)
        return cli_usage_error(o->cmd, "-o DIR needs --random (tensors given as ARG=PATH are written back in place)");
    return CLI_OK;
}

/* Runs on the device (and times it there), then checks; returns 0 when
 * the results may be written. */
static int launch(tj_ctx *c, const cli_opts *o, const run_device *dev, const run_state *rs, const tj_kernel *ref,
                  const tj_kernel *opt, const unsigned char *written)
{
    uint32_t n = rs->k->nparams;
    tj_arg *inputs = o->check || o->time ? run_copy_args(c, rs->args, n) : NULL;
    run_request req = {rs->k, opt, o->defines, o->ndefines, rs->args, n, o->tune, run_device_ordinal(o->device)};
    run_session s = {c, &req, NULL};
    run_timing t = time_limits;
    int rc = dev->open(&s) || dev->run(&s, rs->args) || (o->time && dev->time(&s, inputs, &t));
    dev->close(&s);
    if (rc)
        return -1;
    if (o->time) {
        printf("time: ");
        print_time(t.median_s);
        printf(" (median of %d runs after warm-up, device %s)\n", t.runs, dev->name);
    }
    if (o->check && check_with_reference(rs, ref, inputs, written)) {
        tj_error(c, "--check: the results differ from the reference interpreter's; nothing was written");
        return -1;
    }
    return 0;
}

int cmd_run(tj_ctx *c, const cli_opts *o)
{
    if (o->nfiles == 1 && cli_is_mlir(o->files[0]))
        return o->kernel ? cli_run_mlir(c, o) : cli_usage_error(o->cmd, "missing -k FUNCTION");
    int rc = check_usage(c, o);
    if (rc != CLI_OK || cli_is_cuda_c(o->files[0]))
        return rc != CLI_OK ? rc : cli_run_cuda_c(c, o);
    if (o->grid || o->block || o->shared)
        return cli_usage_error(o->cmd, "--grid, --block and --shared are for CUDA C kernels (FILE.cu)");
    const run_device *dev = run_find_device(c, o->device);
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
    cli_tmpfile *outputs = tj_alloc(c, (k.nparams + 1) * sizeof *outputs);
    cli_written_params(ref, written);
    if (run_prepare_outputs(c, o, &rs, written, outputs) || launch(c, o, dev, &rs, ref, opt, written))
        return CLI_ERROR;
    if (o->output && run_make_output_dir(c, o->output))
        return CLI_ERROR;
    return run_write_outputs(c, &rs, outputs) ? CLI_ERROR : CLI_OK;
}
