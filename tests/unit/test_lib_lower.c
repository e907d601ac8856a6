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
        char *src = ls_lib_source(c->family, c->kernel, c->subst);
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

/* radix_onesweep (CUDA and the cpu only: Metal has no ordered accesses) on
 * 3 tiles of 2048, the last partial, tickets from 0: the SIMT interpreter
 * runs programs in order, so each look-back finds its predecessor's
 * inclusive prefix; every key has digit 0 (which starts at 0 whatever Hg
 * holds), so the places are distinct: tile t's elements follow the earlier
 * tiles' counts. L starts with stale words (flags of no pass). */
Test(lib_lower, radix_onesweep)
{
    char *src = ls_lib_source("sort", "radix_onesweep", LS_SORT_F32);
    cr_assert(src);
    lc_opts o = lc_defaults();
    o.shapes = "N=5000,S=4,D=256,T=3";
    o.scalars = "pass=1,key_passes=4,lines_n=5000,lines_q=1,carry=0,last=0,indices=0";
    o.ilo = 0, o.ihi = 5000;
    o.int_range = "K=0:1,C=0:1,P=0:5000,L=0:100000";
    cr_assert(lc_check_tj(src, "radix_onesweep", &o), "radix_onesweep differs from the interpreter");
    free(src);
}

/* The radix kernels at the library's own tile (lib/sort.c's RADIX_TILE,
 * 4096; the cases above take Metal's 2048): the histogram over 3 tiles,
 * the last partial, a key pass and a segment pass; the scatter of one
 * partial tile; the single pass's upsweep and onesweep. */
Test(lib_lower, radix_kernels_at_4096)
{
    static const char *const subst = "K=u32;KEY=key_f32;DESC=0;W=u32;RB=4096";
    static const struct {
        const char *kernel, *shapes, *scalars, *int_range;
        int64_t ilo, ihi;
    } cases[] = {
        {"radix_hist", "N=10000,D=256,T=3", "pass=0,key_passes=4,lines_n=10000,lines_q=1", NULL, 0, 10000},
        {"radix_hist", "N=10000,D=256,T=3", "pass=4,key_passes=4,lines_n=700,lines_q=1", "P=0:10000", 0, 10000},
        {"radix_scatter", "N=3000,D=256,T=1", "pass=0,key_passes=4,lines_n=3000,lines_q=1,carry=1,last=0,indices=0",
         "G=0:1", 0, 3000},
        {"radix_scatter", "N=3000,D=256,T=1", "pass=4,key_passes=4,lines_n=700,lines_q=1,carry=0,last=1,indices=1",
         "G=0:1,P=0:3000", 0, 3000},
        {"radix_upsweep", "N=10000,S=5,D=256", "passes=5,key_passes=4,lines_n=700,lines_q=1", NULL, 0, 10000},
        {"radix_onesweep", "N=10000,S=4,D=256,T=3",
         "pass=1,key_passes=4,lines_n=10000,lines_q=1,carry=0,last=0,indices=0", "K=0:1,C=0:1,P=0:10000,L=0:100000", 0,
         10000},
        /* a long line's segment: places base + i through [2, 2048] views (G 0: distinct places) */
        {"radix_scatter_wide", "N=3000,D=256,T=1,R=2,C=2048",
         "pass=0,key_passes=4,base=8192,sh=11,carry=0,last=0,indices=0", "G=0:1", 0, 3000},
        {"radix_scatter_wide", "N=3000,D=256,T=1,R=2,C=2048",
         "pass=3,key_passes=4,base=0,sh=11,carry=0,last=1,indices=1", "G=0:1", 0, 3000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *src = ls_lib_source("sort", cases[i].kernel, subst);
        cr_assert(src);
        lc_opts o = lc_defaults();
        o.shapes = cases[i].shapes;
        o.scalars = cases[i].scalars;
        o.int_range = cases[i].int_range;
        o.ilo = cases[i].ilo, o.ihi = cases[i].ihi;
        o.warps[0] = 8, o.warps[1] = 0;
        cr_assert(lc_check_tj(src, cases[i].kernel, &o), "%s at a tile of 4096 differs from the interpreter",
                  cases[i].kernel);
        free(src);
    }
}
