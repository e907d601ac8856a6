/* Differential testing of the native cpu back end (tilejit/cpu.h): a
 * kernel runs in the reference interpreter and, compiled through LLVM,
 * natively on the same random arguments (lower_check.h's), twice: as
 * optimized Tile IR, and specialized on the arguments' facts as the JIT
 * compiles it. Every tensor must come out the same (floats within a
 * tolerance). Header only, for the test_cpu*.c executables.
 *
 *   lc_opts o = lc_defaults();             // both skip, saying why, without LLVM
 *   o.shapes = "M=37,N=100";
 *   cr_assert(cc_check_tj(SRC, "softmax", &o));
 */
#ifndef TJ_CPU_CHECK_H
#define TJ_CPU_CHECK_H

#include "lower_check.h"
#include "tilejit/cpu.h"

#define CC_REQUIRE_LLVM()                                                   \
    do {                                                                    \
        const char *why_;                                                   \
        if (!tj_cpu_available(&why_))                                       \
            cr_skip_test("native cpu back end missing: %s", why_);          \
    } while (0)

/* The first kernel of src with its dims bound ("M=4,N=100"), as optimized
 * Tile IR with facts (what tj_cpu_compile takes); asserts on any error,
 * with the diagnostics. */
#define CC_TILE_KERNEL(c, src, shapes) cc_tile_kernel_((c), (src), (shapes), __FILE__, __LINE__)
static inline tj_kernel *cc_tile_kernel_(tj_ctx *c, const char *src, const char *shapes, const char *file, int line)
{
    tj_binding dims[LC_MAX_BIND], *config;
    uint32_t nconfig;
    int64_t nd = tj_bindings_parse(c, shapes, dims, LC_MAX_BIND);
    tj_program *p = nd >= 0 ? tj_parse_program(c, "test.tj", src, strlen(src)) : NULL;
    cr_assert(p && !tj_select_config(c, p, 0, NULL, 0, dims, (uint32_t)nd, &config, &nconfig), "%s:%d: %s", file,
              line, tj_diag_render(c));
    tj_kernel *k = tj_build_kernel(c, p, 0, config, nconfig, dims, (uint32_t)nd);
    cr_assert(k && !tj_pipeline_run(&k, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_FACTS, NULL), "%s:%d: %s", file, line,
              tj_diag_render(c));
    return k;
}

/* Runs k on args in the interpreter (native 0) or natively (a tj_cpu of
 * its own, one thread), for tests that compare the two on arguments they
 * make themselves; asserts on a failure, with its diagnostics. */
static inline void cc_run_on(tj_ctx *c, const tj_kernel *k, const tj_arg *args, uint32_t nargs, int native)
{
    char err[256] = "";
    tj_cpu *cpu = native ? tj_cpu_new(1, err, sizeof err) : NULL;
    cr_assert(!native || cpu, "tj_cpu_new: %s", err);
    int rc = native ? tj_cpu_run_kernel(cpu, k, args, nargs) : tj_interp_run(k, args, nargs);
    tj_cpu_free(cpu);
    cr_assert_eq(rc, 0, "%s %s: %s", k->name, native ? "native" : "interpreter", tj_diag_render(c));
}

/* One tj_cpu per test executable would leak nothing; one per check keeps
 * the checks independent (2 threads: the pool is exercised). */
static inline int cc_run_native(lc_run *run, const tj_kernel *k, int facts, const char *what)
{
    char err[512];
    tj_cpu *cpu = tj_cpu_new(2, err, sizeof err);
    if (!cpu) {
        fprintf(stderr, "%s: %s\n", what, err);
        return 0;
    }
    tj_kernel *nk = tj_kernel_clone(k);
    tj_pipeline_options po = {.args = facts ? run->simt : NULL, .nargs = facts ? run->nparams : 0, .verify = 1};
    int ok = !tj_pipeline_run(&nk, TJ_STEP_OPTIMIZE_TILE, facts ? TJ_STEP_PREFETCH : TJ_STEP_FACTS, &po) &&
             !tj_cpu_run_kernel(cpu, nk, run->simt, run->nparams);
    if (!ok)
        fprintf(stderr, "%s: native run failed:\n%s", what, tj_diag_render(run->c));
    tj_cpu_free(cpu);
    return ok;
}

static inline int cc_run_kernel(lc_run *run, const tj_kernel *k, const lc_opts *o)
{
    for (int facts = 0; facts < 2; facts++) {
        char what[256];
        snprintf(what, sizeof what, "%s native%s (right: native)", k->name, facts ? " facts" : "");
        lc_reset(run);
        if (tj_interp_run(k, run->ref, run->nparams)) {
            fprintf(stderr, "%s: interpreter failed:\n%s", what, tj_diag_render(run->c));
            return 0;
        }
        if (!cc_run_native(run, k, facts, what) || !lc_compare(run, o, what))
            return 0;
    }
    return 1;
}

/* A .tj kernel with the options' tile parameters and shapes. */
static inline int cc_check_tj(const char *src, const char *kernel, const lc_opts *o)
{
    CC_REQUIRE_LLVM();
    lc_run run = {.c = tj_ctx_new()};
    tj_binding defs[LC_MAX_BIND], dims[LC_MAX_BIND];
    tj_program *prog = tj_parse_program(run.c, "test.tj", src, strlen(src));
    int ki = prog ? tj_program_find_kernel(prog, kernel) : -1, ok = ki >= 0;
    if (ok) {
        run.nparams = tj_kernel_params(prog, ki, &run.params);
        ok = lc_make_args(&run, o);
    }
    uint32_t ndefs = lc_bindings(run.c, o->defines, defs, LC_MAX_BIND);
    uint32_t ndims = lc_bindings(run.c, o->shapes, dims, LC_MAX_BIND);
    tj_binding *config;
    uint32_t nconfig;
    tj_kernel *k = NULL;
    if (ok && !tj_select_config(run.c, prog, ki, defs, ndefs, dims, ndims, &config, &nconfig))
        k = tj_build_kernel(run.c, prog, ki, config, nconfig, dims, ndims);
    ok = k && !tj_verify(k) && cc_run_kernel(&run, k, o);
    if (!ok)
        fprintf(stderr, "%s: %s", kernel, tj_diag_render(run.c));
    if (ki >= 0)
        lc_free(&run);
    tj_ctx_free(run.c);
    return ok;
}

/* A Tile IR kernel in text form. */
static inline int cc_check_ir(const char *text, const lc_opts *o)
{
    CC_REQUIRE_LLVM();
    lc_run run = {.c = tj_ctx_new()};
    tj_kernel *k = lc_parse_kernel(&run, text, o);
    int ok = k && cc_run_kernel(&run, k, o);
    if (k)
        lc_free(&run);
    if (!ok)
        fprintf(stderr, "%s", tj_diag_render(run.c));
    tj_ctx_free(run.c);
    return ok;
}

#endif
