/* `tilejit tune FILE -k KERNEL [ARG=VALUE]...`: times the kernel's `tune`
 * configurations for these argument shapes on the device (only those with
 * no stored time) and prints a table: configuration, resources, time,
 * throughput (FLOP/s for kernels with `dot`, else bandwidth) and status.
 * Later `tilejit run` (and tj_jit_compile) use the winner. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "tilejit/autotune.h"
#include "tilejit/cpu.h"
#include "tilejit/dispatch.h"

/* ---- throughput ------------------------------------------------------------------------ */

/* The value of a scalar that is a constant or a dim of a tensor argument. */
static int scalar_value(const tj_kernel *k, tj_ref r, const tj_arg *args, int64_t *out)
{
    const tj_inst *in = tj_inst_at(k, r);
    if (in->op == TJ_OP_CONST && tj_dtype_is_int(tj_type_get(k->ctx, in->type)->dtype)) {
        *out = in->imm;
        return 1;
    }
    if (in->op != TJ_OP_DIM || in->nargs != 1)
        return 0;
    const tj_inst *p = tj_inst_at(k, in->args[0]);
    if (p->op != TJ_OP_PARAM || p->imm < 0 || (uint64_t)p->imm >= k->nparams || !args[p->imm].is_tensor ||
        in->imm < 0 || in->imm >= args[p->imm].tensor.rank)
        return 0;
    *out = args[p->imm].tensor.shape[in->imm];
    return 1;
}

/* FLOPs of the dots in block b per program, each loop's trip count known;
 * -1 when one is not. */
static double block_flops(const tj_kernel *k, tj_block_id b, const tj_arg *args, int depth)
{
    const tj_block *blk = tj_block_at(k, b);
    double total = 0;
    for (uint32_t i = 0; i < blk->ninsts && depth < 16; i++) {
        const tj_inst *in = tj_inst_at(k, blk->insts[i]);
        if (in->op == TJ_OP_DOT) {
            const tj_type_info *a = tj_type_get(k->ctx, tj_inst_at(k, in->args[0])->type);
            total += 2.0 * (double)tj_type_numel(k->ctx, in->type) * a->shape[a->rank - 1];
        } else if (in->op == TJ_OP_FOR) {
            int64_t lo, hi, step;
            double inner = block_flops(k, in->region[0], args, depth + 1);
            if (inner < 0)
                return -1;
            if (inner == 0)
                continue;
            if (!scalar_value(k, in->args[0], args, &lo) || !scalar_value(k, in->args[1], args, &hi) ||
                !scalar_value(k, in->args[2], args, &step) || step <= 0)
                return -1;
            total += inner * (double)(hi > lo ? (hi - lo + step - 1) / step : 0);
        } else if (in->op == TJ_OP_IF && (block_flops(k, in->region[0], args, depth + 1) != 0 ||
                                          block_flops(k, in->region[1], args, depth + 1) != 0)) {
            return -1; /* not known which way it goes */
        }
    }
    return total;
}

/* FLOPs of one launch (0: no dot; -1: unknown). */
static double launch_flops(tj_ctx *c, const cli_kernel *k, const tj_tune_result *r, const run_state *rs)
{
    tj_kernel *ir = cli_build_kernel(c, k, r->config, r->nconfig, rs->dims, rs->ndims);
    int64_t grid[3];
    if (!ir || tj_eval_grid(ir, rs->args, k->nparams, grid))
        return -1;
    double per_program = block_flops(ir, ir->body, rs->args, 0);
    return per_program <= 0 ? per_program : per_program * (double)grid[0] * (double)grid[1] * (double)grid[2];
}

static double tensor_bytes(const run_state *rs, uint32_t n)
{
    double bytes = 0;
    for (uint32_t i = 0; i < n; i++)
        bytes += rs->args[i].is_tensor ? (double)run_bytes(&rs->args[i].tensor) : 0;
    return bytes;
}

/* ---- printing ------------------------------------------------------------------------------ */

static void format_time(double s, char *buf, size_t n)
{
    if (s < 1e-3)
        snprintf(buf, n, "%.2f us", s * 1e6);
    else
        snprintf(buf, n, "%.3f ms", s * 1e3);
}

static void progress(void *ud, uint32_t done, uint32_t total, const tj_tune_result *r)
{
    (void)ud;
    char config[160];
    tj_tune_config_text(r->config, r->nconfig, config, sizeof config);
    fprintf(stderr, "\rtune: %u/%u %-60.60s", done, total, config);
    if (done == total)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

typedef struct table {
    tj_ctx *c;
    const cli_kernel *k;
    const run_state *rs;
    double bytes;
    int flops; /* the kernel has dots whose count is known */
} table;

static void print_row(const table *t, const tj_tune_result *r, int best)
{
    char config[160], time[32] = "-", rate[32] = "-", regs[16] = "-", threads[16] = "-", smem[16] = "-";
    tj_tune_config_text(r->config, r->nconfig, config, sizeof config);
    if (r->status == TJ_TUNE_OK && r->seconds > 0) {
        format_time(r->seconds, time, sizeof time);
        double f = t->flops ? launch_flops(t->c, t->k, r, t->rs) : 0;
        if (f > 0)
            snprintf(rate, sizeof rate, "%.1f TFLOP/s", f / r->seconds * 1e-12);
        else
            snprintf(rate, sizeof rate, "%.0f GB/s", t->bytes / r->seconds * 1e-9);
    }
    if (r->regs >= 0)
        snprintf(regs, sizeof regs, "%d", r->regs);
    if (r->nthreads) { /* known once lowered */
        snprintf(threads, sizeof threads, "%u", r->nthreads);
        snprintf(smem, sizeof smem, "%u", r->smem_bytes);
    }
    const char *status = tj_tune_status_name(r->status);
    printf("%c %-40s %7s %7s %5s %11s %15s  %s%s%s%s\n", best ? '*' : ' ', config, threads, smem, regs,
           time, rate, status, r->stored && r->status != TJ_TUNE_PRUNED_WHERE ? " (stored)" : "",
           r->note[0] ? ": " : "", r->note);
}

static void print_table(tj_ctx *c, const cli_kernel *k, const run_state *rs, const tj_tune_report *rep,
                        const char *device)
{
    table t = {c, k, rs, tensor_bytes(rs, k->nparams), 0};
    for (uint32_t i = 0; i < rep->nresults && !t.flops; i++)
        t.flops = rep->results[i].status == TJ_TUNE_OK && launch_flops(c, k, &rep->results[i], rs) > 0;
    printf("kernel %s on %s, shapes %s\n", tj_program_kernel_name(k->prog, (uint32_t)k->index), device,
           rep->bucket[0] ? rep->bucket : "(none)");
    printf("  %-40s %7s %7s %5s %11s %15s  %s\n", "CONFIGURATION", "THREADS", "SMEM", "REGS", "TIME",
           t.flops ? "FLOP/s" : "BANDWIDTH", "STATUS");
    for (uint32_t i = 0; i < rep->nresults; i++)
        print_row(&t, &rep->results[i], (int)i == rep->best);
    printf("%u configurations, %u built, %u timed, in %.2f s", rep->nresults, rep->built, rep->timed,
           rep->wall_seconds);
    if (rep->best >= 0) {
        char best[160];
        tj_tune_config_text(rep->results[rep->best].config, rep->results[rep->best].nconfig, best, sizeof best);
        printf("; best: %s", best);
    }
    printf("\n");
}

/* ---- the command ------------------------------------------------------------------------------ */

static int check_usage(const cli_opts *o)
{
    if (o->nfiles != 1)
        return cli_usage_error(o->cmd, "expected one FILE");
    if (!o->kernel)
        return cli_usage_error(o->cmd, "missing -k KERNEL");
    if (o->device && strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
        return cli_usage_error(o->cmd, "unknown device '%s' (devices: cpu, cuda)", o->device);
    return CLI_OK;
}

/* The tuner's CUDA device; *cu must be closed after. */
static int open_device(tj_ctx *c, const run_state *rs, uint32_t n, tj_cuda **cu, tj_tune_device **dev)
{
    tj_rt_error err = {{0}};
    *cu = NULL;
    *dev = NULL;
    if (!(*cu = tj_cuda_open(0, &err)) || !(*dev = tj_tune_device_cuda(*cu, NULL, rs->args, n, &err))) {
        tj_error(c, "device cuda: %s", err.msg);
        return -1;
    }
    return 0;
}

/* The cpu: the dispatcher's tuner (tj_dispatch_tune) times each
 * configuration's native code on copies of the arguments, storing the
 * outcomes and the winner in the disk cache for later runs (tilejit run,
 * tj_jit_compile); a second run times only what is new. Without LLVM the
 * interpreter stands in, saying why, and nothing is stored. */
static int tune_cpu(const cli_kernel *k, const cli_opts *o, const run_state *rs, tj_tune_report *rep,
                    char *device, size_t cap, tj_rt_error *err)
{
    tj_jit *j = tj_jit_open(TJ_DEVICE_CPU, 0, err);
    if (!j)
        return 1;
    if (tj_jit_cpu_fallback(j))
        fprintf(stderr, "note: tune --device cpu times the reference interpreter: %s\n", tj_jit_cpu_fallback(j));
    tj_compile_request req = {.file = k->path, .source = k->text, .len = k->len, .kernel = o->kernel,
                              .params = o->defines, .nparams = o->ndefines};
    tj_dispatch *d = tj_dispatch_new(j, &req, err);
    int rc = !d || tj_dispatch_tune(d, rs->args, k->nparams, isatty(2) ? progress : NULL, NULL, rep, err);
    snprintf(device, cap, "cpu (%s)",
             tj_jit_native_cpu(j) ? "native code; outcomes stored"
                                  : "the reference interpreter; outcomes not stored");
    tj_dispatch_free(d);
    tj_jit_close(j);
    return rc;
}

int cmd_tune(tj_ctx *c, const cli_opts *o)
{
    int rc = check_usage(o);
    if (rc != CLI_OK)
        return rc;
    const run_device *d = run_find_device(c, o->device);
    cli_kernel k;
    run_state rs;
    if (!d || cli_open_kernel(c, o->files[0], o->kernel, &k) || cli_check_names(c, &k, o) ||
        run_bind_args(c, o, &k, &rs))
        return CLI_ERROR;
    tj_tune_report rep = {0};
    tj_rt_error err = {{0}};
    if (strcmp(d->name, "cuda")) {
        char device[128];
        int failed = tune_cpu(&k, o, &rs, &rep, device, sizeof device, &err);
        if (rep.nresults)
            print_table(c, &k, &rs, &rep, device);
        if (failed)
            tj_error(c, "%s", err.msg);
        tj_tune_report_free(&rep);
        return failed ? CLI_ERROR : CLI_OK;
    }
    tj_cuda *cu = NULL;
    tj_tune_device *dev = NULL;
    tj_cache *cache = cli_open_cache(c, 1);
    if (!cache || open_device(c, &rs, k.nparams, &cu, &dev)) {
        tj_cache_close(cache);
        if (cu)
            tj_cuda_close(cu);
        return CLI_ERROR;
    }
    tj_tune_request req = {
        .file = k.path, .source = k.text, .len = k.len, .kernel = o->kernel, .params = o->defines,
        .nparams = o->ndefines, .args = rs.args, .nargs = k.nparams, .mode = TJ_TUNE_MISSING,
        .progress = isatty(2) ? progress : NULL,
    };
    int failed = tj_tune(dev, cache, &req, &rep, &err);
    if (rep.nresults)
        print_table(c, &k, &rs, &rep, dev->id);
    if (failed)
        tj_error(c, "%s", err.msg);
    tj_tune_report_free(&rep);
    tj_tune_device_free(dev);
    if (cu)
        tj_cuda_close(cu);
    tj_cache_close(cache);
    return failed ? CLI_ERROR : CLI_OK;
}
