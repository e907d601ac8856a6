/* The GPU lowering of the library's kernels (lib/kernels/topk.tj and
 * selective_scan.tj, substituted as lib/topk.c and lib/selective_scan.c
 * substitute them: tests/unit/lib_source.h's cases): each lowered to SIMT IR
 * for CUDA and run by the SIMT interpreter against the reference
 * interpreter on random inputs (lower_check.h), at small sizes with partial
 * tiles. */
#include <criterion/criterion.h>

#include "lib_source.h"
#include "lower_check.h"

Test(lib_lower, every_case)
{
    for (size_t i = 0; i < sizeof ls_cases / sizeof *ls_cases; i++) {
        const lib_case *c = &ls_cases[i];
        char *src = ls_lib_source(c->family, c->subst);
        cr_assert(src);
        lc_opts o = lc_defaults();
        o.defines = c->defines;
        o.shapes = c->shapes;
        o.scalars = c->scalars;
        o.int_range = c->int_range;
        if (c->warps)
            o.warps[0] = c->warps, o.warps[1] = 0;
        if (c->lo != c->hi)
            o.lo = c->lo, o.hi = c->hi;
        if (c->ilo != c->ihi)
            o.ilo = c->ilo, o.ihi = c->ihi;
        cr_assert(lc_check_tj(src, c->kernel, &o), "%s %s (%s, %s) differs from the interpreter", c->family, c->kernel,
                  c->subst, c->defines);
        free(src);
    }
}
