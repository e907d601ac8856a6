/* counting_sort (docs/language.md): the GPU lowering (warp ballots and
 * per-warp counters in shared memory) run by the SIMT interpreter and the
 * native cpu back end, each against the reference interpreter on random
 * tiles: bucket counts from 2 to 256, tiles that are not a multiple of a
 * warp's 32 lanes or of the warps' chunks, few distinct keys (long runs of
 * ties: stability), negative keys (their low bits count), 1 to 8 warps.
 * The reference interpreter itself is checked against loops through the
 * library's radix sort (test_lib_sort.c). */
#include <criterion/criterion.h>

#include "cpu_check.h"

static const char *const CSORT = "kernel cs(X: i32[N], S: i32[N], O: i32[N], C: i32[R])\n"
                                 "    grid (1)\n"
                                 "{\n"
                                 "    (o, c) = counting_sort(load(X[0:N]), R)\n"
                                 "    store(O[0:N], o)\n"
                                 "    store(C[0:R], c)\n"
                                 "    store(S[0:N], load(X[o]))\n" /* the keys in that order */
                                 "}\n";

static const char *const SHAPES[] = {"N=1000,R=16", "N=2048,R=256", "N=37,R=2", "N=5000,R=256", "N=64,R=128"};

Test(counting_sort, lowered_for_gpus)
{
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++)
        for (int ties = 0; ties < 2; ties++) {
            lc_opts o = lc_defaults();
            o.shapes = SHAPES[i];
            o.ilo = ties ? 0 : -100000, o.ihi = ties ? 3 : 100000;
            cr_assert(lc_check_tj(CSORT, "cs", &o), "%s, ties %d", SHAPES[i], ties);
        }
}

Test(counting_sort, native_cpu)
{
    CC_REQUIRE_LLVM();
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        lc_opts o = lc_defaults();
        o.shapes = SHAPES[i];
        o.ilo = -100000, o.ihi = 100000;
        cr_assert(cc_check_tj(CSORT, "cs", &o), "%s", SHAPES[i]);
    }
}
