/* while loops and ordered accesses (load_acquire, store_release,
 * load_relaxed, store_relaxed) through
 * every executing layer: the reference interpreter, the SIMT lowering with
 * the SIMT interpreter (lower_check.h: against the reference), and the
 * native cpu back end (tj_jit, programs run concurrently there). A wait on
 * a program that runs later is reported, not a hang, where programs run
 * in order. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib_source.h"
#include "lower_check.h"
#include "tilejit/jit.h"

/* Program t waits for F[t - 1] (set by program t - 1 after it stored O),
 * then adds what its predecessors published: a chain in program order. */
static const char *chain_src = "kernel chain(F: i32[N], V: f32[N], O: f32[N])\n"
                               "    grid (N)\n"
                               "{\n"
                               "    t = program_id(0)\n"
                               "    acc = load(V[t])\n"
                               "    waiting = t > 0\n"
                               "    while waiting {\n"
                               "        waiting = load_acquire(F[t - 1]) == 0\n"
                               "    }\n"
                               "    if t > 0 {\n"
                               "        acc = acc + load(O[t - 1])\n"
                               "    }\n"
                               "    store(O[t], acc)\n"
                               "    store_release(F[t], 1)\n"
                               "}\n";

/* The chain through relaxed words alone: program t waits until F[t - 1] =
 * 1 << 32 | running sum (its low half the i32 bits), and publishes its own;
 * nothing else passes between programs, so nothing needs ordering. */
static const char *relaxed_chain_src = "kernel relaxed_chain(F: u64[N], V: i32[N], O: i32[N])\n"
                                       "    grid (N)\n"
                                       "{\n"
                                       "    t = program_id(0)\n"
                                       "    acc = load(V[t])\n"
                                       "    waiting = t > 0\n"
                                       "    while waiting {\n"
                                       "        word = load_relaxed(F[t - 1], mask = t > 0)\n"
                                       "        waiting = (word >> 32) == 0\n"
                                       "        acc = load(V[t]) + bitcast(u32(word & 0xFFFFFFFF), i32)\n"
                                       "    }\n"
                                       "    store(O[t], acc)\n"
                                       "    store_relaxed(F[t], (u64(1) << 32) | u64(bitcast(acc, u32)))\n"
                                       "}\n";

/* Program 0 waits on program 1, which runs after it. */
static const char *backwards_src = "kernel backwards(F: i32[2])\n"
                                   "    grid (2)\n"
                                   "{\n"
                                   "    t = program_id(0)\n"
                                   "    waiting = t == 0\n"
                                   "    while waiting {\n"
                                   "        waiting = load_acquire(F[1]) == 0\n"
                                   "    }\n"
                                   "    store_release(F[t], 1)\n"
                                   "}\n";

/* A counted while with tile values carried: x halves until below 1. */
static const char *halve_src = "kernel halve(X: f32[8], Y: f32[8], K: i32[1])\n"
                               "    grid (1)\n"
                               "{\n"
                               "    x = load(X[0:8])\n"
                               "    k = 0\n"
                               "    while max(x) >= 1.0 {\n"
                               "        x = x * 0.5\n"
                               "        k = k + 1\n"
                               "    }\n"
                               "    store(Y[0:8], x)\n"
                               "    store(K[0], k)\n"
                               "}\n";

Test(while_loops, lowered_like_the_interpreter)
{
    lc_opts o = lc_defaults();
    o.shapes = "N=37";
    o.int_range = "F=0:1";
    cr_assert(lc_check_tj(chain_src, "chain", &o));
    lc_opts h = lc_defaults();
    h.lo = 0, h.hi = 40;
    cr_assert(lc_check_tj(halve_src, "halve", &h));
    lc_opts r = lc_defaults();
    r.shapes = "N=37";
    r.int_range = "F=0:1";
    r.ilo = -1000, r.ihi = 1000;
    cr_assert(lc_check_tj(relaxed_chain_src, "relaxed_chain", &r));
}

/* The look-back scans of lib/kernels/scan.tj (tiles of 64: 5 a line over 3
 * lines of 300, a partial last tile), flags and ticket zero: the packed
 * words of 32- and 16-bit values (a sum published before the in-tile scan,
 * a maximum from it), the separate flags and values of 64-bit ones. */
Test(while_loops, lookback_scan_lowered)
{
    static const struct {
        const char *subst, *kernel, *zeroed;
    } kinds[] = {{LS_SCAN_SUM("i32", "u32"), "scan_lookback_packed", "F=0:1,C=0:1"},
                 {LS_SCAN("f32", "u32", "maximum(a, b)"), "scan_lookback_packed", "F=0:1,C=0:1"},
                 {LS_SCAN_SUM("u16", "u16"), "scan_lookback_packed", "F=0:1,C=0:1"},
                 {LS_SCAN("i64", "u64", "a * b"), "scan_lookback", "S=0:1,C=0:1"}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        char *src = ls_lib_source("scan", NULL, kinds[i].subst);
        cr_assert(src);
        lc_opts o = lc_defaults();
        o.defines = "B=64";
        o.shapes = "P=3,N=300,G=15";
        o.int_range = kinds[i].zeroed;
        if (i == 3)
            o.ilo = -1, o.ihi = 2; /* products stay small and exact */
        cr_assert(lc_check_tj(src, kinds[i].kernel, &o), "%s", kinds[i].subst);
        free(src);
    }
}

static tj_fn *compile(tj_jit *j, const char *src, const char *kernel, const tj_arg *args, uint32_t nargs,
                      tj_rt_error *err)
{
    return tj_jit_compile(j, &(tj_compile_request){.file = "test.tj", .source = src, .len = strlen(src),
                                                   .kernel = kernel, .args = args, .nargs = nargs},
                          err);
}

/* Compiles kernel for args on a device of that kind and launches it once. */
static void launch_once(tj_device_kind kind, const char *src, const char *kernel, const tj_arg *args,
                        uint32_t nargs)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(kind, 0, &err);
    cr_assert(j, "%s", err.msg);
    tj_fn *fn = compile(j, src, kernel, args, nargs, &err);
    cr_assert(fn, "%s", err.msg);
    cr_assert_eq(tj_fn_launch(fn, args, nargs, NULL, &err), 0, "%s", err.msg);
    tj_jit_close(j);
}

/* The chain on a device: O is the running sum of V. */
static void run_chain(tj_device_kind kind)
{
    enum { N = 200 };
    static int32_t f[N];
    static float v[N], out[N];
    memset(f, 0, sizeof f);
    for (int i = 0; i < N; i++)
        v[i] = (float)(i % 7);
    int64_t n = N;
    tj_arg args[3] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(f, TJ_DT_I32, 1, &n)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(v, TJ_DT_F32, 1, &n)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(out, TJ_DT_F32, 1, &n)}};
    launch_once(kind, chain_src, "chain", args, 3);
    float acc = 0;
    for (int i = 0; i < N; i++) {
        acc += v[i];
        cr_assert_eq(out[i], acc, "O[%d] = %g, expected %g", i, out[i], acc);
        cr_assert_eq(f[i], 1);
    }
}

Test(while_loops, chain_native) { run_chain(TJ_DEVICE_CPU); }
Test(while_loops, chain_interp) { run_chain(TJ_DEVICE_INTERP); }

/* The relaxed chain on a device: O is the running sum of V (negative
 * values too: the low half carries the i32 bits), F every program's word. */
static void run_relaxed_chain(tj_device_kind kind)
{
    enum { N = 300 };
    static uint64_t f[N];
    static int32_t v[N], out[N];
    memset(f, 0, sizeof f);
    for (int i = 0; i < N; i++)
        v[i] = i % 7 - 4;
    int64_t n = N;
    tj_arg args[3] = {{.is_tensor = 1, .tensor = tj_tensor_contiguous(f, TJ_DT_U64, 1, &n)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(v, TJ_DT_I32, 1, &n)},
                      {.is_tensor = 1, .tensor = tj_tensor_contiguous(out, TJ_DT_I32, 1, &n)}};
    launch_once(kind, relaxed_chain_src, "relaxed_chain", args, 3);
    int32_t acc = 0;
    for (int i = 0; i < N; i++) {
        acc += v[i];
        cr_assert_eq(out[i], acc, "O[%d] = %d, expected %d", i, out[i], acc);
        cr_assert_eq(f[i], (uint64_t)1 << 32 | (uint32_t)acc, "F[%d]", i);
    }
}

Test(while_loops, relaxed_chain_native) { run_relaxed_chain(TJ_DEVICE_CPU); }
Test(while_loops, relaxed_chain_interp) { run_relaxed_chain(TJ_DEVICE_INTERP); }

Test(while_loops, wait_on_a_later_program_is_reported)
{
    static int32_t f[2];
    int64_t n = 2;
    tj_arg arg = {.is_tensor = 1, .tensor = tj_tensor_contiguous(f, TJ_DT_I32, 1, &n)};
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err);
    cr_assert(j, "%s", err.msg);
    tj_fn *fn = compile(j, backwards_src, "backwards", &arg, 1, &err);
    cr_assert(fn, "%s", err.msg);
    cr_assert_neq(tj_fn_launch(fn, &arg, 1, NULL, &err), 0);
    cr_expect(strstr(err.msg, "this while loop cannot end in program (0, 0, 0)"), "%s", err.msg);
    tj_jit_close(j);
}

/* The SIMT interpreter reports the same wait on a later program (the
 * lowered kernel, its condition broadcast or not, in program order). */
Test(while_loops, simt_wait_on_a_later_program_is_reported)
{
    lc_run run = {.c = tj_ctx_new()};
    lc_opts o = lc_defaults();
    o.int_range = "F=0:1";
    tj_program *prog = tj_parse_program(run.c, "test.tj", backwards_src, strlen(backwards_src));
    int ki = prog ? tj_program_find_kernel(prog, "backwards") : -1;
    cr_assert(ki >= 0, "%s", tj_diag_render(run.c));
    run.nparams = tj_kernel_params(prog, ki, &run.params);
    cr_assert(lc_make_args(&run, &o));
    tj_binding *config;
    uint32_t nconfig;
    cr_assert(!tj_select_config(run.c, prog, ki, NULL, 0, NULL, 0, &config, &nconfig));
    tj_kernel *k = tj_build_kernel(run.c, prog, ki, config, nconfig, NULL, 0);
    cr_assert(k && !tj_verify(k), "%s", tj_diag_render(run.c));
    tj_pipeline_options po = {.lower.warps = 1, .args = run.simt, .nargs = run.nparams, .verify = 1};
    cr_assert(!tj_pipeline_run(&k, TJ_STEP_FACTS, TJ_STEP_END, &po), "%s", tj_diag_render(run.c));
    lc_reset(&run);
    cr_assert(tj_simt_run(k, run.simt, run.nparams));
    cr_expect(strstr(tj_diag_render(run.c), "this while loop cannot end"), "%s", tj_diag_render(run.c));
    lc_free(&run);
    tj_ctx_free(run.c);
}
