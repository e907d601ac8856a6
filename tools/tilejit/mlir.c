/* FILE.mlir on the command line (tilejit/mlir.h): `check` parses, checks
 * every op and builds every function into an array graph; `emit` prints
 * what the array front end makes of a function (--target graph, fuse,
 * tile, emit); `run` binds the function's arguments in order (arg0=PATH,
 * arg1=..., or --random), evaluates it and writes DIR/result0.npy, ... */
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "tilejit/mlir.h"

#define MAX_VALUES 64

int cli_is_mlir(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 5 && !strcmp(path + n - 5, ".mlir");
}

static tj_mlir_module *open_module(tj_ctx *c, const char *path)
{
    size_t len;
    const char *text = cli_read_file(c, path, &len);
    return text ? tj_mlir_parse(c, cli_source_name(path), text, len) : NULL;
}

typedef struct signature {
    tj_mlir_value_info params[MAX_VALUES], results[MAX_VALUES];
    uint32_t nparams, nresults;
} signature;

static int read_signature(tj_ctx *c, const tj_mlir_module *m, const char *func, signature *s)
{
    tj_rt_error err = {{0}};
    if (tj_mlir_function_signature(m, func, s->params, &s->nparams, s->results, &s->nresults, MAX_VALUES, &err)) {
        tj_error(c, "%s", err.msg);
        return -1;
    }
    if (s->nparams > MAX_VALUES || s->nresults > MAX_VALUES) {
        tj_error(c, "function '%s': more than %d parameters or results", func, MAX_VALUES);
        return -1;
    }
    return 0;
}

/* The function built on placeholders (no data): the graph's roots. */
static int build_placeholders(tj_ctx *c, const tj_mlir_module *m, const char *func, tj_graph *g, tj_array *roots,
                              uint32_t *nroots)
{
    signature s;
    if (read_signature(c, m, func, &s))
        return -1;
    tj_array in[MAX_VALUES];
    for (uint32_t i = 0; i < s.nparams; i++)
        in[i] = tj_array_input(g, s.params[i].dtype, s.params[i].rank, s.params[i].shape);
    tj_rt_error err = {{0}};
    if (tj_mlir_build(m, func, g, in, s.nparams, roots, MAX_VALUES, c, &err))
        return -1;
    *nroots = s.nresults;
    return 0;
}

static tj_graph *placeholder_graph(tj_ctx *c)
{
    tj_rt_error err = {{0}};
    tj_graph *g = tj_graph_new(TJ_DEVICE_INTERP, 0, &err);
    if (!g)
        tj_error(c, "%s", err.msg);
    return g;
}

int cli_check_mlir(tj_ctx *c, const char *path)
{
    tj_mlir_module *m = open_module(c, path);
    tj_graph *g = m ? placeholder_graph(c) : NULL;
    int failed = !g;
    for (uint32_t i = 0; g && i < tj_mlir_function_count(m); i++) {
        tj_array roots[MAX_VALUES];
        uint32_t n;
        failed |= build_placeholders(c, m, tj_mlir_function_name(m, i), g, roots, &n) != 0;
    }
    tj_graph_free(g);
    tj_mlir_module_free(m);
    return failed ? -1 : 0;
}

int cli_emit_mlir(tj_ctx *c, const cli_opts *o)
{
    static const char *const targets[] = {"graph", "fuse", "tile", "emit"};
    int t = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(o->target, targets[i]))
            t = i;
    if (t < 0)
        return cli_usage_error(o->cmd, "an MLIR file (.mlir) has the targets graph, fuse, tile and emit");
    if (o->ndefines || o->nshapes || o->contiguous)
        return cli_usage_error(o->cmd, "-D, --shape and --contiguous do not apply to an MLIR file");
    tj_mlir_module *m = open_module(c, o->files[0]);
    tj_graph *g = m ? placeholder_graph(c) : NULL;
    tj_array roots[MAX_VALUES];
    uint32_t n = 0;
    tj_buf out = {0};
    tj_rt_error err = {{0}};
    int rc = !g || build_placeholders(c, m, o->kernel, g, roots, &n);
    if (!rc && (t == 0 ? tj_graph_print(g, roots, n, &out, &err) : tj_graph_plan(g, roots, n, targets[t], &out, &err))) {
        tj_error(c, "%s", err.msg);
        rc = 1;
    }
    if (!rc)
        rc = cli_write_text(c, o->output ? o->output : "-", out.data ? out.data : "", out.len) != 0;
    tj_buf_free(&out);
    tj_graph_free(g);
    tj_mlir_module_free(m);
    return rc ? CLI_ERROR : CLI_OK;
}

/* ---- run ------------------------------------------------------------------------------ */

static int device_of(tj_ctx *c, const cli_opts *o, tj_device_kind *kind, int *ordinal)
{
    const char *name = o->device;
    *ordinal = name ? run_device_ordinal(name) : 0;
    if (!name)
        *kind = run_device_cuda.unavailable(c) ? TJ_DEVICE_CPU : TJ_DEVICE_CUDA;
    else if (!strcmp(name, "cpu"))
        *kind = TJ_DEVICE_CPU;
    else if (!strcmp(name, "interp"))
        *kind = TJ_DEVICE_INTERP;
    else if (!strncmp(name, "cuda", 4))
        *kind = TJ_DEVICE_CUDA;
    else
        return cli_usage_error(o->cmd, "an MLIR function runs on --device cpu, interp or cuda[:N], not '%s'", name);
    return CLI_OK;
}

static int usage(tj_ctx *c, const cli_opts *o, tj_device_kind *kind, int *ordinal)
{
    if (o->nfiles != 1)
        return cli_usage_error(o->cmd, "expected one FILE");
    if (o->ndefines || o->nshapes || o->tune || o->contiguous || o->grid || o->block || o->shared)
        return cli_usage_error(o->cmd, "-D, --shape, --tune, --contiguous, --grid, --block and --shared do not "
                                       "apply to an MLIR file");
    return device_of(c, o, kind, ordinal);
}

/* A number as a 0-d tensor of p's dtype. */
static int store_scalar(tj_ctx *c, const tj_mlir_value_info *p, double v, void *data)
{
    switch (p->dtype) {
    case TJ_DT_F32: *(float *)data = (float)v; return 0;
    case TJ_DT_F64: *(double *)data = v; return 0;
    case TJ_DT_I32: *(int32_t *)data = (int32_t)v; return 0;
    case TJ_DT_I64: *(int64_t *)data = (int64_t)v; return 0;
    case TJ_DT_BOOL: *(uint8_t *)data = v != 0; return 0;
    default:
        tj_error(c, "argument '%s': a %s scalar is given as a 0-d .npy file, not a number", p->name,
                 tj_dtype_name(p->dtype));
        return -1;
    }
}

/* The argument for parameter i: argI=PATH (a .npy file, or a number for a
 * scalar), or random data with --random. */
static int bind_input(tj_ctx *c, const cli_opts *o, const tj_mlir_value_info *p, uint32_t i, run_rng *rng,
                      tj_tensor *out)
{
    const char *value = NULL;
    for (uint32_t k = 0; k < o->nargs; k++)
        if (!strcmp(o->args[k].name, p->name))
            value = o->args[k].value;
    if (!value && !o->random) {
        tj_error(c, "missing argument %s (%s of rank %d); give %s=PATH.npy or --random", p->name,
                 tj_dtype_name(p->dtype), p->rank, p->name);
        return -1;
    }
    if (!value) {
        *out = tj_tensor_contiguous(NULL, p->dtype, p->rank, p->shape);
        uint64_t numel = run_numel(out);
        out->data = tj_alloc(c, numel * (uint64_t)tj_dtype_size(p->dtype) + 1);
        run_fill_random(rng, p->dtype, out->data, numel);
        return 0;
    }
    char *end;
    double number = strtod(value, &end);
    if (p->rank == 0 && end != value && !*end) { /* a scalar given as a number */
        *out = tj_tensor_contiguous(tj_alloc(c, 8), p->dtype, 0, NULL);
        return store_scalar(c, p, number, out->data);
    }
    npy_array a;
    char what[96];
    snprintf(what, sizeof what, "argument '%s'", p->name);
    if (npy_read(c, value, what, &a))
        return -1;
    int same = a.dtype == p->dtype && a.rank == p->rank;
    for (int d = 0; same && d < p->rank; d++)
        same = a.shape[d] == p->shape[d];
    if (!same) {
        tj_buf want = {0};
        for (int d = 0; d < p->rank; d++)
            tj_buf_printf(&want, "%s%lld", d ? ", " : "", (long long)p->shape[d]);
        cli_file_error(c, value, "argument '%s' (parameter %u) must be %s[%s], the function's type", p->name, i,
                       tj_dtype_name(p->dtype), want.data ? want.data : "");
        tj_buf_free(&want);
        return -1;
    }
    *out = tj_tensor_contiguous(a.data, a.dtype, a.rank, a.shape);
    return 0;
}

static int check_arg_names(tj_ctx *c, const cli_opts *o, const signature *s)
{
    for (uint32_t k = 0; k < o->nargs; k++) {
        int known = 0;
        for (uint32_t i = 0; i < s->nparams; i++)
            known |= !strcmp(o->args[k].name, s->params[i].name);
        if (!known) {
            tj_error(c, "no parameter '%s': the function takes arg0 ... arg%u", o->args[k].name,
                     s->nparams ? s->nparams - 1 : 0);
            return -1;
        }
    }
    return 0;
}

static tj_tensor *alloc_results(tj_ctx *c, const signature *s)
{
    tj_tensor *t = tj_alloc(c, (s->nresults + 1) * sizeof *t);
    for (uint32_t i = 0; i < s->nresults; i++) {
        t[i] = tj_tensor_contiguous(NULL, s->results[i].dtype, s->results[i].rank, s->results[i].shape);
        t[i].data = tj_alloc(c, run_bytes(&t[i]) + 1);
    }
    return t;
}

static int call_on(tj_ctx *c, const tj_mlir_module *m, const char *func, tj_device_kind kind, int ordinal,
                   const signature *s, const tj_tensor *in, const tj_tensor *out, const cli_opts *o)
{
    tj_rt_error err = {{0}};
    tj_mlir_fn *f = tj_mlir_fn_new(m, func, kind, ordinal, &err);
    int rc = !f || tj_mlir_fn_call(f, in, s->nparams, out, s->nresults, &err);
    if (!rc && o && o->time) {
        double times[50];
        int runs = 0;
        for (double spent = 0; !rc && runs < 50 && (runs < 3 || spent < 0.25); runs++) {
            double t0 = run_now_s();
            rc = tj_mlir_fn_call(f, in, s->nparams, out, s->nresults, &err);
            spent += times[runs] = run_now_s() - t0;
        }
        if (!rc)
            printf("time: %.1f us per call, inputs copied in and results read back (median of %d calls after "
                   "the first, device %s)\n", run_median(times, runs) * 1e6, runs,
                   kind == TJ_DEVICE_CUDA ? "cuda" : kind == TJ_DEVICE_CPU ? "cpu" : "interp");
    }
    if (rc)
        tj_error(c, "%s", err.msg);
    tj_mlir_fn_free(f);
    return rc ? -1 : 0;
}

static int write_results(tj_ctx *c, const char *dir, const signature *s, const tj_tensor *out)
{
    if (run_make_output_dir(c, dir))
        return -1;
    cli_tmpfile *tmp = tj_alloc(c, (s->nresults + 1) * sizeof *tmp);
    for (uint32_t i = 0; i < s->nresults; i++) {
        tj_buf path = {0};
        tj_buf_printf(&path, "%s/result%u.npy", dir, i);
        npy_array a = {.dtype = out[i].dtype, .order = tj_dtype_size(out[i].dtype) == 1 ? '|' : npy_host_order(),
                       .rank = out[i].rank, .numel = run_numel(&out[i]), .data = out[i].data};
        memcpy(a.shape, out[i].shape, sizeof a.shape);
        if (cli_tmp_prepare(c, cli_buf_take(c, &path), &tmp[i]) || cli_tmp_open(c, &tmp[i]) ||
            npy_write(tmp[i].f, &a) || cli_tmp_close(c, &tmp[i])) {
            for (uint32_t k = 0; k <= i; k++)
                cli_tmp_discard(&tmp[k]);
            return -1;
        }
    }
    return cli_tmp_commit_all(c, tmp, s->nresults);
}

static void print_results(const signature *s, const tj_tensor *out)
{
    for (uint32_t i = 0; i < s->nresults; i++) {
        printf("result%u: %s[", i, tj_dtype_name(out[i].dtype));
        for (int d = 0; d < out[i].rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)out[i].shape[d]);
        printf("] (-o DIR writes it as DIR/result%u.npy)\n", i);
    }
}

/* --check: the same function on the reference interpreter. */
static int check_results(tj_ctx *c, const tj_mlir_module *m, const char *func, const signature *s,
                         const tj_tensor *in, const tj_tensor *out)
{
    tj_tensor *want = alloc_results(c, s);
    if (call_on(c, m, func, TJ_DEVICE_INTERP, 0, s, in, want, NULL))
        return -1;
    int failed = 0;
    for (uint32_t i = 0; i < s->nresults; i++)
        failed |= run_compare(s->results[i].name, &out[i], &want[i]) != 0;
    if (failed)
        tj_error(c, "--check: the results differ from the reference interpreter's; nothing was written");
    return failed ? -1 : 0;
}

int cli_run_mlir(tj_ctx *c, const cli_opts *o)
{
    tj_device_kind kind = TJ_DEVICE_CPU;
    int ordinal = 0;
    int rc = usage(c, o, &kind, &ordinal);
    if (rc != CLI_OK)
        return rc;
    tj_mlir_module *m = open_module(c, o->files[0]);
    signature s;
    if (!m || read_signature(c, m, o->kernel, &s) || check_arg_names(c, o, &s)) {
        tj_mlir_module_free(m);
        return CLI_ERROR;
    }
    tj_tensor *in = tj_alloc(c, (s.nparams + 1) * sizeof *in);
    run_rng rng = {o->seed * 2654435761u + 1};
    int failed = 0;
    for (uint32_t i = 0; i < s.nparams; i++)
        failed |= bind_input(c, o, &s.params[i], i, &rng, &in[i]) != 0;
    tj_tensor *out = failed ? NULL : alloc_results(c, &s);
    failed = failed || call_on(c, m, o->kernel, kind, ordinal, &s, in, out, o) ||
             (o->check && check_results(c, m, o->kernel, &s, in, out));
    if (!failed && o->output)
        failed = write_results(c, o->output, &s, out) != 0;
    else if (!failed)
        print_results(&s, out);
    tj_mlir_module_free(m);
    return failed ? CLI_ERROR : CLI_OK;
}
