/* The library's kernels (tests/unit/lib_source.h's cases: lib/kernels/topk.tj
 * and selective_scan.tj as lib/ substitutes them) through the whole Apple
 * path: front end, Tile IR, the Metal lowering, MSL, the emulator (Apple's
 * SIMD width, 32 KiB of threadgroup memory); every tensor must match the
 * reference interpreter on the same random inputs (lower_check.h's
 * tolerances) under the forward, reverse and shuffled schedules. */
#include "emu_launch.h"
#include "lib_source.h"
#include "lower_check.h"

enum { NCASES = sizeof ls_cases / sizeof *ls_cases };

typedef struct prepared {
    lc_opts o;
    lc_run run;
    tj_kernel *tile, *simt;
    char *msl;
} prepared;

static void options(const lib_case *c, lc_opts *o)
{
    *o = lc_defaults();
    o->defines = c->defines;
    o->shapes = c->shapes;
    o->scalars = c->scalars;
    if (c->lo != c->hi)
        o->lo = c->lo, o->hi = c->hi;
    if (c->ilo != c->ihi)
        o->ilo = c->ilo, o->ihi = c->ihi;
}

/* Front end and Metal lowering of one case; 0 after printing why not. */
static int prepare(const lib_case *c, prepared *p)
{
    char *src = ls_lib_source(c->family, c->subst);
    tj_ctx *ctx = p->run.c = tj_ctx_new();
    tj_program *prog = src ? tj_parse_program(ctx, c->family, src, strlen(src)) : NULL;
    free(src);
    int ki = prog ? tj_program_find_kernel(prog, c->kernel) : -1;
    if (ki < 0) {
        printf("FAIL %s %s: %s\n", c->family, c->kernel, tj_diag_render(ctx));
        return 0;
    }
    options(c, &p->o);
    p->run.nparams = tj_kernel_params(prog, ki, &p->run.params);
    lc_make_args(&p->run, &p->o);
    tj_binding defs[LC_MAX_BIND + 1], dims[LC_MAX_BIND], *config;
    uint32_t ndefs = lc_bindings(ctx, c->defines, defs, LC_MAX_BIND), ndims = lc_bindings(ctx, c->shapes, dims, LC_MAX_BIND);
    uint32_t nconfig;
    if (c->warps)
        defs[ndefs++] = (tj_binding){"warps", c->warps};
    if (!tj_select_config(ctx, prog, ki, defs, ndefs, dims, ndims, &config, &nconfig))
        p->tile = tj_build_kernel(ctx, prog, ki, config, nconfig, dims, ndims);
    if (!p->tile || tj_verify(p->tile)) {
        printf("FAIL %s %s: front end: %s\n", c->family, c->kernel, tj_diag_render(ctx));
        return 0;
    }
    tj_pipeline_options o = {.lower = {.warps = c->warps, .target = TJ_LOWER_METAL},
                             .args = p->run.simt, .nargs = p->run.nparams, .verify = 1};
    p->simt = tj_kernel_clone(p->tile);
    if (tj_pipeline_run(&p->simt, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_END, &o)) {
        printf("FAIL %s %s: lowering: %s\n", c->family, c->kernel, tj_diag_render(ctx));
        return 0;
    }
    p->msl = el_emit(p->simt);
    return p->msl != NULL;
}

static void check(void *so, int source, const lib_case *c, prepared *p)
{
    static const uint32_t schedules[] = {0, 1, 3};
    char what[512], err[1024];
    for (int s = 0; s < 3; s++) {
        snprintf(what, sizeof what, "%s %s (%s, %s) schedule %u", c->family, c->kernel, c->subst, c->defines,
                 schedules[s]);
        lc_reset(&p->run);
        if (tj_interp_run(p->tile, p->run.ref, p->run.nparams)) {
            EU_CHECK(0, "%s: interpreter: %s", what, tj_diag_render(p->run.c));
            return;
        }
        if (el_run(so, source, p->simt, p->run.simt, p->run.nparams, schedules[s], err, sizeof err)) {
            EU_CHECK(0, "%s: %s", what, err);
            return;
        }
        EU_CHECK(lc_compare(&p->run, &p->o, what), "%s: differs from the interpreter", what);
    }
}

int main(void)
{
    static prepared ps[NCASES];
    const char *srcs[NCASES];
    int ok = 1;
    for (int i = 0; i < (int)NCASES; i++) {
        ok &= prepare(&ls_cases[i], &ps[i]);
        srcs[i] = ps[i].msl ? ps[i].msl : "";
    }
    EU_CHECK(ok, "every library kernel lowers to MSL");
    double t0 = eu_now();
    void *so = ok ? eu_build(srcs, (int)NCASES, "lib_kernels") : NULL;
    printf("%d library kernel cases: MSL compiled for the emulator in %.1f s\n", (int)NCASES, eu_now() - t0);
    EU_CHECK(so, "the library kernels' MSL compiles");
    for (int i = 0; so && i < (int)NCASES; i++)
        check(so, i, &ls_cases[i], &ps[i]);
    mtl_emu_close(so);
    for (int i = 0; i < (int)NCASES; i++) {
        free(ps[i].msl);
        if (ps[i].run.c) {
            lc_free(&ps[i].run);
            tj_ctx_free(ps[i].run.c);
        }
    }
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
