/* counting_sort (docs/language.md): the GPU lowering (warp ballots and
 * per-warp counters in shared memory) run by the SIMT interpreter and the
 * native cpu back end, each against the reference interpreter on random
 * tiles: bucket counts from 2 to 256, tiles that are not a multiple of a
 * warp's 32 lanes or of the warps' chunks, few distinct keys (long runs of
 * ties: stability), negative keys (their low bits count), 1 to 8 warps.
 * A distinct store through the permutation runs as well. The reference
 * interpreter itself is checked against loops through the
 * library's radix sort (test_lib_sort.c). */
#include <criterion/criterion.h>

#include <string.h>

#include "cpu_check.h"

static const char *const CSORT = "kernel cs(X: i32[N], S: i32[N], O: i32[N], C: i32[R], Y: i32[N])\n"
                                 "    grid (1)\n"
                                 "{\n"
                                 "    x = load(X[0:N])\n"
                                 "    (o, c) = counting_sort(x, R)\n"
                                 "    store(O[0:N], o)\n"
                                 "    store(C[0:R], c)\n"
                                 "    store(S[0:N], load(X[o]))\n"           /* the keys in that order */
                                 "    store(Y[o], x, distinct = true)\n" /* a permutation: distinct places */
                                 "}\n";

/* the counts alone: the lowering keeps no ranks and places nothing */
static const char *const COUNTS = "kernel counts(X: i32[N], C: i32[R])\n"
                                  "    grid (1)\n"
                                  "{\n"
                                  "    (_, c) = counting_sort(load(X[0:N]), R)\n"
                                  "    store(C[0:R], c)\n"
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
            cr_assert(lc_check_tj(COUNTS, "counts", &o), "%s, ties %d (counts)", SHAPES[i], ties);
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
        cr_assert(cc_check_tj(COUNTS, "counts", &o), "%s (counts)", SHAPES[i]);
    }
}

/* store(distinct = true) promises distinct places: the interpreter checks
 * the promise and names the element written twice; the IR prints the flag
 * (it is part of the cache key) and parses it back. */
static const char *const TWICE = "kernel twice(I: i32[8], Y: f32[8])\n"
                                 "    grid (1)\n"
                                 "{\n"
                                 "    store(Y[load(I[0:8])], 1.0, distinct = true)\n"
                                 "}\n";

Test(store_distinct, a_broken_promise_is_reported)
{
    static int32_t idx[8] = {0, 1, 2, 3, 3, 5, 6, 7};
    static float y[8];
    int64_t n = 8;
    tj_arg args[2] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(idx, TJ_DT_I32, 1, &n)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(y, TJ_DT_F32, 1, &n)}};
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    tj_fn *fn = tj_jit_compile(j, &(tj_compile_request){.file = "test.tj", .source = TWICE, .len = strlen(TWICE),
                                                        .kernel = "twice", .args = args, .nargs = 2},
                               &err);
    cr_assert(fn, "%s", err.msg);
    cr_assert_neq(tj_fn_launch(fn, args, 2, NULL, &err), 0);
    cr_expect(strstr(err.msg, "store(distinct = true) writes element 3 of the tensor twice"), "%s", err.msg);
    idx[4] = 4; /* a permutation */
    cr_assert_eq(tj_fn_launch(fn, args, 2, NULL, &err), 0, "%s", err.msg);
    tj_jit_close(j);
}

Test(store_distinct, printed_and_parsed)
{
    tj_ctx *c = tj_ctx_new();
    tj_program *prog = tj_parse_program(c, "test.tj", TWICE, strlen(TWICE));
    int ki = prog ? tj_program_find_kernel(prog, "twice") : -1;
    cr_assert(ki >= 0, "%s", tj_diag_render(c));
    tj_binding *config;
    uint32_t nconfig;
    cr_assert(!tj_select_config(c, prog, ki, NULL, 0, NULL, 0, &config, &nconfig), "%s", tj_diag_render(c));
    tj_kernel *k = tj_build_kernel(c, prog, ki, config, nconfig, NULL, 0);
    cr_assert(k && !tj_verify(k), "%s", tj_diag_render(c));
    tj_buf text = {0}, again = {0};
    tj_print_kernel(k, &text);
    cr_assert(strstr(text.data, "{distinct}"), "%s", text.data);
    tj_kernel *back = NULL;
    cr_assert(tj_parse_ir(c, "test.tjir", text.data, text.len, &back, 1) == 1 && !tj_verify(back), "%s",
              tj_diag_render(c));
    tj_print_kernel(back, &again);
    cr_assert_str_eq(again.data, text.data);
    tj_buf_free(&text);
    tj_buf_free(&again);
    tj_ctx_free(c);
}
