/* libFuzzer target, differential: arbitrary bytes as a DSL program; every
 * kernel that compiles is run by the reference (Tile IR) interpreter and,
 * lowered to SIMT IR for CUDA (with the facts of contiguous tensors: vector
 * accesses, copy rings) and for Metal (opaque fragments, 32 KiB of shared
 * memory), by the SIMT interpreter, and compiled to native code by the
 * LLVM cpu back end where it is built in (FUZZ_LOWER_NATIVE=0 skips it),
 * on the same random inputs; the input's
 * length picks the warps (1, 2, 4 or 8) and the stages (1 to 4). Outputs
 * that disagree beyond a loose tolerance, or a SIMT run that fails where the
 * reference succeeded (an access out of bounds, a read of unwritten or
 * unpublished shared memory), abort: a miscompile. Errors of the front end
 * or the lowering are expected and fine. Small dims keep the interpreters
 * fast. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "../unit/lower_check.h"
#include "tilejit/cpu.h"

enum { DIM = 24, MAX_ELEMS = 1 << 14, MAX_PROGRAMS = 32, MAX_TILE = 1 << 11 };

static const tj_binding known_dims[] = {{"N", 40}, {"D", 16}, {"M", 24}, {"K", 48}, {"S", 40}, {"B", 1}, {"H", 2}};

static int append(char *out, size_t cap, size_t *at, const char *name, long long v)
{
    int w = snprintf(out + *at, cap - *at, "%s%s=%lld", *at ? "," : "", name, v);
    if (w < 0 || (size_t)w >= cap - *at)
        return 0;
    *at += (size_t)w;
    return 1;
}

/* "NAME=V,..." for every dim name of the kernel's parameters (shapes), and
 * for its scalar parameters (all 3: a size, a scale, a bound). */
static void bindings_of(const tj_param *params, uint32_t n, char *shapes, char *scalars, size_t cap)
{
    size_t at = 0, sat = 0;
    shapes[0] = scalars[0] = 0;
    for (uint32_t p = 0; p < n; p++) {
        if (!params[p].rank && !append(scalars, cap, &sat, params[p].name, 3))
            return;
        for (int a = 0; a < params[p].rank; a++) {
            const char *name = params[p].dim_names[a];
            if (!name || lc_lookup_str(shapes, name))
                continue;
            int64_t v = DIM;
            for (size_t d = 0; d < sizeof known_dims / sizeof *known_dims; d++)
                if (!strcmp(name, known_dims[d].name))
                    v = known_dims[d].value;
            if (!append(shapes, cap, &at, name, v))
                return;
        }
    }
}

/* Tensors, tiles and grids small enough for the interpreters to finish
 * well inside the fuzzer's timeout under the sanitizers (sorts of 4096
 * elements in 24 programs do not). */
static int small_enough(const lc_run *run, const tj_kernel *k)
{
    int64_t grid[3];
    for (uint32_t p = 0; p < run->nparams; p++)
        if (run->params[p].rank && run->count[p] > MAX_ELEMS)
            return 0;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_type_info *ti = tj_type_get(k->ctx, k->insts[r].type);
        if (ti->kind == TJ_TK_TILE && tj_type_numel(k->ctx, k->insts[r].type) > MAX_TILE)
            return 0;
    }
    if (tj_eval_grid(k, run->ref, run->nparams, grid))
        return 0;
    return grid[0] * grid[1] * grid[2] <= MAX_PROGRAMS;
}

static void miscompiled(const char *what, const tj_kernel *simt, const char *diags)
{
    fprintf(stderr, "fuzz_lower: %s\n%s\n", what, diags ? diags : "");
    if (simt)
        lc_print("simt", simt);
    abort();
}

/* The SIMT side's tensors back to the inputs (the reference keeps its
 * outputs). */
static void reset_simt(lc_run *run)
{
    for (uint32_t p = 0; p < run->nparams; p++)
        if (run->params[p].rank)
            memcpy(run->simt[p].tensor.data, run->pristine[p], run->bytes[p]);
}

/* wgmma: the CUDA lowering for sm_90a (dot on warpgroup tensor cores). */
static void check_target(lc_run *run, const tj_kernel *kc, tj_lower_target target, int wgmma, const lc_opts *o)
{
    const char *name = target == TJ_LOWER_METAL ? "metal" : wgmma ? "cuda sm_90a" : "cuda";
    tj_kernel *simt = (tj_kernel *)kc; /* the prefetch step works on a copy */
    tj_pipeline_options po = {.lower = {.warps = o->warps[0], .target = target, .wgmma = wgmma}, .verify = 1};
    if (tj_pipeline_run(&simt, TJ_STEP_PREFETCH, TJ_STEP_END, &po))
        return;
    reset_simt(run);
    if (tj_simt_run(simt, run->simt, run->nparams))
        miscompiled("the SIMT run failed where the interpreter ran", simt, tj_diag_render(run->c));
    if (!lc_compare(run, o, name))
        miscompiled("the SIMT run disagrees with the interpreter", simt, NULL);
    if (getenv("FUZZ_LOWER_VERBOSE"))
        fprintf(stderr, "fuzz_lower: %s (%s) agrees\n", kc->name, name);
}

/* The native cpu back end on the same specialized Tile IR the JIT would
 * compile. One tj_cpu for the whole run (one thread: the fuzzer's own
 * parallelism is its processes). */
static void check_native(lc_run *run, const tj_kernel *kc, const lc_opts *o)
{
    static tj_cpu *cpu;
    const char *env = getenv("FUZZ_LOWER_NATIVE");
    if ((env && !strcmp(env, "0")) || !tj_cpu_available(NULL))
        return;
    if (!cpu && !(cpu = tj_cpu_new(1, NULL, 0)))
        return;
    reset_simt(run);
    if (tj_cpu_run_kernel(cpu, kc, run->simt, run->nparams))
        miscompiled("the native run failed where the interpreter ran", kc, tj_diag_render(run->c));
    if (!lc_compare(run, o, "native"))
        miscompiled("the native run disagrees with the interpreter", kc, NULL);
    if (getenv("FUZZ_LOWER_VERBOSE"))
        fprintf(stderr, "fuzz_lower: %s (native) agrees\n", kc->name);
}

static void check_kernel(lc_run *run, tj_kernel *k, const lc_opts *o)
{
    lc_reset(run);
    if (!small_enough(run, k) || tj_interp_run(k, run->ref, run->nparams))
        return;
    tj_kernel *kc = tj_kernel_clone(k);
    if (!kc)
        return;
    tj_facts_from_args(kc, run->simt, run->nparams);
    if (tj_pass_specialize(kc))
        return;
    check_native(run, kc, o);
    check_target(run, kc, TJ_LOWER_CUDA, 0, o);
    check_target(run, kc, TJ_LOWER_CUDA, 1, o);
    check_target(run, kc, TJ_LOWER_METAL, 0, o);
}

static void check_every_kernel(tj_ctx *c, const tj_program *p, size_t size)
{
    for (uint32_t i = 0; i < tj_program_kernel_count(p) && i < 2; i++) {
        lc_run run = {.c = c};
        run.nparams = tj_kernel_params(p, (int)i, &run.params);
        if (run.nparams > LC_MAX_ARGS)
            continue;
        char shapes[512], scalars[512];
        bindings_of(run.params, run.nparams, shapes, scalars, sizeof shapes);
        /* loose: f32 products go through tf32, reductions reassociate */
        lc_opts o = lc_defaults();
        o.shapes = shapes;
        o.scalars = scalars;
        o.rtol = o.atol = 5e-2;
        o.warps[0] = 1 << (size % 4);
        tj_binding dims[LC_MAX_BIND], *config, stages = {"stages", 1 + (int64_t)(size / 4 % 4)};
        uint32_t ndims = lc_bindings(c, shapes, dims, LC_MAX_BIND), nconfig;
        if (tj_select_config(c, p, (int)i, &stages, 1, dims, ndims, &config, &nconfig) &&
            tj_select_config(c, p, (int)i, NULL, 0, dims, ndims, &config, &nconfig))
            continue;
        tj_kernel *k = tj_build_kernel(c, p, (int)i, config, nconfig, dims, ndims);
        if (!k || tj_verify(k))
            continue;
        if (lc_make_args(&run, &o)) /* kernels of more parameters than it holds are skipped */
            check_kernel(&run, k, &o);
        lc_free(&run);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_program(data, size, check_every_kernel); }
