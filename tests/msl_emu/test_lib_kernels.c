/* The library's kernels (tests/unit/lib_source.h's cases: lib/kernels/topk.tj
 * and selective_scan.tj as lib/ substitutes them) through the whole Apple
 * path: front end, Tile IR, the Metal lowering, MSL, the emulator (Apple's
 * SIMD width, 32 KiB of threadgroup memory); every tensor must match the
 * reference interpreter on the same random inputs (lower_check.h's
 * tolerances) under the forward, reverse and shuffled schedules. */
#include "emu_case.h"
#include "lib_source.h"

enum { NCASES = sizeof ls_cases / sizeof *ls_cases };

typedef struct prepared {
    lc_opts o;
    ec_case e;
} prepared;

static void options(const lib_case *c, lc_opts *o)
{
    *o = lc_defaults();
    o->defines = c->defines;
    o->shapes = c->shapes;
    o->scalars = c->scalars;
    o->int_range = c->int_range;
    if (c->lo != c->hi)
        o->lo = c->lo, o->hi = c->hi;
    if (c->ilo != c->ihi)
        o->ilo = c->ilo, o->ihi = c->ihi;
}

/* Front end and Metal lowering of one case; 0 after printing why not. */
static int prepare(const lib_case *c, prepared *p)
{
    char what[256];
    snprintf(what, sizeof what, "%s %s (%s)", c->family, c->kernel, c->subst);
    char *src = ls_lib_source(c->family, c->kernel, c->subst);
    options(c, &p->o);
    int ok = ec_lower(&p->e, what, c->family, src, c->kernel, c->defines, c->shapes, c->warps, &p->o);
    free(src);
    return ok;
}

static void check(void *so, int source, const lib_case *c, prepared *p)
{
    static const uint32_t schedules[] = {0, 1, 3};
    char what[512];
    for (int s = 0; s < 3; s++) {
        snprintf(what, sizeof what, "%s %s (%s, %s) schedule %u", c->family, c->kernel, c->subst, c->defines,
                 schedules[s]);
        if (!ec_check_schedule(so, source, &p->e, &p->o, what, schedules[s]))
            return;
    }
}

int main(void)
{
    static prepared ps[NCASES];
    const char *srcs[NCASES];
    int ok = 1;
    for (int i = 0; i < (int)NCASES; i++) {
        ok &= prepare(&ls_cases[i], &ps[i]);
        srcs[i] = ps[i].e.msl ? ps[i].e.msl : "";
    }
    EU_CHECK(ok, "every library kernel lowers to MSL");
    double t0 = eu_now();
    void *so = ok ? eu_build(srcs, (int)NCASES, "lib_kernels") : NULL;
    printf("%d library kernel cases: MSL compiled for the emulator in %.1f s\n", (int)NCASES, eu_now() - t0);
    EU_CHECK(so, "the library kernels' MSL compiles");
    for (int i = 0; so && i < (int)NCASES; i++)
        check(so, i, &ls_cases[i], &ps[i]);
    mtl_emu_close(so);
    for (int i = 0; i < (int)NCASES; i++)
        ec_free(&ps[i].e);
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
