/* One kernel of a .tj source through the Apple path up to its MSL: parsed,
 * its arguments made for it (lower_check.h's lc_make_args with the case's
 * options), its configuration chosen (defines, shapes, and warps when not
 * 0), built and verified, lowered by the pipeline the Metal runtime runs,
 * printed as MSL. For test_examples.c and test_lib_kernels.c. */
#ifndef TJ_EMU_CASE_H
#define TJ_EMU_CASE_H

#include "emu_launch.h"
#include "lower_check.h"

typedef struct ec_case {
    lc_run run; /* run.c: the case's context */
    tj_kernel *tile, *simt;
    char *msl;
} ec_case;

/* 0 after printing why not (what: the case's name) */
static inline int ec_lower(ec_case *e, const char *what, const char *file, const char *src, const char *kernel,
                           const char *defines, const char *shapes, int warps, const lc_opts *o)
{
    tj_ctx *c = e->run.c = tj_ctx_new();
    tj_program *prog = src ? tj_parse_program(c, file, src, strlen(src)) : NULL;
    int ki = prog ? tj_program_find_kernel(prog, kernel) : -1;
    if (ki < 0) {
        printf("FAIL %s: no such kernel: %s\n", what, tj_diag_render(c));
        return 0;
    }
    e->run.nparams = tj_kernel_params(prog, ki, &e->run.params);
    lc_make_args(&e->run, o);
    tj_binding defs[LC_MAX_BIND + 1], dims[LC_MAX_BIND], *config;
    uint32_t ndefs = lc_bindings(c, defines, defs, LC_MAX_BIND), ndims = lc_bindings(c, shapes, dims, LC_MAX_BIND);
    uint32_t nconfig;
    if (warps)
        defs[ndefs++] = (tj_binding){"warps", warps};
    if (!tj_select_config(c, prog, ki, defs, ndefs, dims, ndims, &config, &nconfig))
        e->tile = tj_build_kernel(c, prog, ki, config, nconfig, dims, ndims);
    if (!e->tile || tj_verify(e->tile)) {
        printf("FAIL %s: front end: %s\n", what, tj_diag_render(c));
        return 0;
    }
    /* the pipeline the Metal runtime runs */
    tj_pipeline_options po = {.lower = {.warps = warps, .target = TJ_LOWER_METAL},
                              .args = e->run.simt, .nargs = e->run.nparams, .verify = 1};
    e->simt = tj_kernel_clone(e->tile);
    if (tj_pipeline_run(&e->simt, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_END, &po)) {
        printf("FAIL %s: lowering: %s\n", what, tj_diag_render(c));
        return 0;
    }
    e->msl = el_emit(e->simt);
    return e->msl != NULL;
}

/* Case e (source number `source` of so) under one schedule against the
 * reference interpreter, differences counted as failures; 0 when it could
 * not run (also counted), else 1. */
static inline int ec_check_schedule(void *so, int source, ec_case *e, const lc_opts *o, const char *what,
                                    uint32_t schedule)
{
    char err[1024];
    lc_reset(&e->run);
    if (tj_interp_run(e->tile, e->run.ref, e->run.nparams)) {
        EU_CHECK(0, "%s: interpreter: %s", what, tj_diag_render(e->run.c));
        return 0;
    }
    if (el_run(so, source, e->simt, e->run.simt, e->run.nparams, schedule, err, sizeof err)) {
        EU_CHECK(0, "%s: %s", what, err);
        return 0;
    }
    EU_CHECK(lc_compare(&e->run, o, what), "%s: differs from the interpreter", what);
    return 1;
}

static inline void ec_free(ec_case *e)
{
    free(e->msl);
    if (e->run.c) {
        lc_free(&e->run);
        tj_ctx_free(e->run.c);
    }
}

#endif
