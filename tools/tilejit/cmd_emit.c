/* `tilejit emit FILE -k KERNEL --target TARGET`: prints one kernel as Tile
 * IR, optimized Tile IR, SIMT IR, PTX, MSL or the cpu back end's LLVM IR. */
#include <string.h>

#include "cli.h"
#include "tilejit/cpu.h"
#include "tilejit/tilejit.h"

typedef struct emit_target {
    const char *name;
    const char *default_arch; /* targets that take `:ARCH`; NULL for the others */
    /* Appends the output for kernel k to out; NULL: not available yet. */
    int (*emit)(tj_kernel *k, const char *arch, tj_buf *out);
} emit_target;

static int emit_ir(tj_kernel *k, const char *arch, tj_buf *out)
{
    (void)arch;
    tj_print_kernel(k, out);
    return 0;
}

static int emit_ir_opt(tj_kernel *k, const char *arch, tj_buf *out)
{
    if (tj_optimize(k, 1))
        return -1;
    return emit_ir(k, arch, out);
}

/* The JIT's pipeline, specialized on the dims given with --shape (and, with
 * --contiguous, on the facts of contiguous tensors), verified after each step. */
static tj_kernel *lower_to_simt(tj_kernel *k, tj_lower_target target, const char *arch)
{
    tj_lower_options lo = {.target = target, .wgmma = target == TJ_LOWER_CUDA && tj_ptx_arch_has_wgmma(arch)};
    return tj_compile_simt(k, &(tj_pipeline_options){.lower = lo, .verify = 1});
}

static int emit_simt(tj_kernel *k, const char *arch, tj_buf *out)
{
    tj_kernel *simt = lower_to_simt(k, TJ_LOWER_CUDA, arch);
    return simt ? emit_ir(simt, arch, out) : -1;
}

static int emit_ptx(tj_kernel *k, const char *arch, tj_buf *out)
{
    tj_kernel *simt = lower_to_simt(k, TJ_LOWER_CUDA, arch);
    return simt ? tj_emit_ptx(simt, arch, out) : -1;
}

static int emit_msl(tj_kernel *k, const char *arch, tj_buf *out)
{
    (void)arch;
    tj_kernel *simt = lower_to_simt(k, TJ_LOWER_METAL, NULL);
    return simt ? tj_emit_msl(simt, out) : -1;
}

/* The optimized Tile IR through the cpu back end, for this host, before
 * LLVM's passes: what its own code generator decided (loop bounds, the
 * rows it skips). */
static int emit_llvm(tj_kernel *k, const char *arch, tj_buf *out)
{
    (void)arch;
    char err[256];
    if (tj_optimize(k, 1))
        return -1;
    tj_cpu *cpu = tj_cpu_new(1, err, sizeof err);
    if (!cpu) {
        tj_error(k->ctx, "target 'llvm': %s", err);
        return -1;
    }
    int rc = tj_cpu_emit_llvm(cpu, k, out);
    tj_cpu_free(cpu);
    return rc;
}

/* The one list of targets; a back end that lands fills in its function. */
static const emit_target targets[] = {
    {"ir", NULL, emit_ir},
    {"ir-opt", NULL, emit_ir_opt},
    {"simt", "sm_80", emit_simt}, /* simt:sm_90a: the lowering for wgmma */
    {"ptx", "sm_90a", emit_ptx},
    {"msl", NULL, emit_msl},
    {"llvm", NULL, emit_llvm},
};
enum { NTARGETS = sizeof targets / sizeof targets[0] };

static const char *target_names(tj_ctx *c)
{
    tj_buf b = {0};
    for (int i = 0; i < NTARGETS; i++)
        tj_buf_printf(&b, "%s%s%s", i ? ", " : "", targets[i].name, targets[i].default_arch ? "[:sm_XX]" : "");
    return cli_buf_take(c, &b);
}

/* sm_ followed by two or three digits and an optional 'a'. */
static int valid_arch(const char *s)
{
    if (strncmp(s, "sm_", 3))
        return 0;
    size_t digits = strspn(s + 3, "0123456789");
    const char *rest = s + 3 + digits;
    return digits >= 2 && digits <= 3 && (!*rest || !strcmp(rest, "a"));
}

/* TARGET[:ARCH] -> the table entry and the arch; CLI_USAGE when malformed. */
static int find_target(tj_ctx *c, const cli_opts *o, const emit_target **t, const char **arch)
{
    const char *colon = strchr(o->target, ':');
    size_t len = colon ? (size_t)(colon - o->target) : strlen(o->target);
    for (int i = 0; i < NTARGETS; i++) {
        if (strlen(targets[i].name) != len || strncmp(targets[i].name, o->target, len))
            continue;
        *t = &targets[i];
        *arch = colon ? colon + 1 : targets[i].default_arch;
        if (colon && !targets[i].default_arch)
            return cli_usage_error(o->cmd, "target '%s' takes no ':ARCH'", targets[i].name);
        if (colon && !valid_arch(*arch))
            return cli_usage_error(o->cmd, "bad architecture '%s' (expected sm_XX, e.g. sm_80 or sm_90a)", *arch);
        return CLI_OK;
    }
    return cli_usage_error(o->cmd, "unknown target '%s' (targets: %s)", o->target, target_names(c));
}

/* --contiguous: the facts the JIT derives from row-major tensors at a 16-byte
 * aligned address; every dim needs a size. */
static int contiguous_facts(tj_ctx *c, const cli_opts *o, tj_kernel *k)
{
    if (!tj_facts_contiguous(k, o->shapes, o->nshapes, -1))
        return 0;
    tj_diag_report(c, TJ_SEV_NOTE, 0, 0, 0, "--contiguous needs the size of every dim (give it with --shape)");
    return -1;
}

int cmd_emit(tj_ctx *c, const cli_opts *o)
{
    if (o->nfiles != 1)
        return cli_usage_error(o->cmd, "expected one FILE");
    if (!o->kernel)
        return cli_usage_error(o->cmd, "missing -k KERNEL");
    if (!o->target)
        return cli_usage_error(o->cmd, "missing --target TARGET (targets: %s)", target_names(c));
    if (cli_is_cuda_c(o->files[0]))
        return cli_emit_cuda_c(c, o);
    if (cli_is_mlir(o->files[0]))
        return cli_emit_mlir(c, o);
    const emit_target *t = NULL;
    const char *arch = NULL;
    int rc = find_target(c, o, &t, &arch);
    if (rc != CLI_OK)
        return rc;
    if (!t->emit) {
        tj_error(c, "target '%s' is not available yet", t->name);
        return CLI_ERROR;
    }
    cli_kernel k;
    if (cli_open_kernel(c, o->files[0], o->kernel, &k) || cli_check_names(c, &k, o))
        return CLI_ERROR;
    /* Without --shape, where clauses on dims are skipped (NULL dims). */
    tj_kernel *ir = cli_build_kernel(c, &k, o->defines, o->ndefines, o->nshapes ? o->shapes : NULL, o->nshapes);
    if (!ir || (o->contiguous && contiguous_facts(c, o, ir)))
        return CLI_ERROR;
    tj_buf out = {0};
    rc = t->emit(ir, arch, &out) ? -1 : cli_write_text(c, o->output ? o->output : "-", out.data ? out.data : "", out.len);
    tj_buf_free(&out);
    return rc ? CLI_ERROR : CLI_OK;
}
