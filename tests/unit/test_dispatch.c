/* The contract (a compiled function refuses shapes outside the where
 * clauses that chose it) and tj_dispatch (one kernel at every shape), on
 * the cpu device. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/dispatch.h"

/* The README's softmax. */
static const char softmax_src[] =
    "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
    "    grid (M)\n"
    "    tune BLOCK in [256, 512, 1024, 2048, 4096, 8192], warps in [4, 8, 16]\n"
    "    where BLOCK >= N\n"
    "{\n"
    "    r = program_id(0)\n"
    "    x = load(X[r, 0:BLOCK], other = -inf)\n"
    "    e = exp(x - max(x))\n"
    "    store(Y[r, 0:BLOCK], e / sum(e))\n"
    "}\n";

/* A clause that can fail inside one shape bucket: N = 96 and N = 128
 * share the bucket N <= 128, but only 128 is a multiple of 64. */
static const char rows_src[] =
    "kernel rowcopy(X: f32[M, N], Y: f32[M, N])\n"
    "    grid (M, cdiv(N, BLOCK))\n"
    "    tune BLOCK in [64, 32]\n"
    "    where N % BLOCK == 0\n"
    "{\n"
    "    r = program_id(0)\n"
    "    c = program_id(1) * BLOCK\n"
    "    store(Y[r, c:c+BLOCK], load(X[r, c:c+BLOCK]) * 2.0)\n"
    "}\n";

static tj_jit *jit;
static tj_rt_error err;
static char cache_dir[64]; /* each test's own disk cache (criterion runs each in a process) */

static void open_jit(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/tj_dispatch_XXXXXX");
    cr_assert(mkdtemp(cache_dir));
    setenv("TILEJIT_CACHE_DIR", cache_dir, 1); /* tuning outcomes stored by earlier runs would be reused */
    jit = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    cr_assert(jit, "%s", err.msg);
}
static void close_jit(void)
{
    tj_jit_close(jit);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
    cr_expect_eq(system(cmd), 0);
}

static tj_compile_request request(const char *src, const char *kernel)
{
    return (tj_compile_request){.file = "test.tj", .source = src, .len = strlen(src), .kernel = kernel};
}

/* compiles `kernel` for these arguments (the facts of their shapes) on the test's jit */
static tj_fn *compile_for(const char *src, const char *kernel, tj_arg *args, uint32_t nargs)
{
    tj_compile_request req = request(src, kernel);
    req.args = args;
    req.nargs = nargs;
    tj_fn *f = tj_jit_compile(jit, &req, &err);
    cr_assert(f, "%s", err.msg);
    return f;
}

/* Two M x N tensors: X filled with a pattern, Y with NaN. */
typedef struct pair {
    float *x, *y;
    tj_arg args[2];
} pair;

static pair make_pair(int64_t m, int64_t n)
{
    pair p = {calloc((size_t)(m * n) + 1, sizeof(float)), calloc((size_t)(m * n) + 1, sizeof(float)), {{0}}};
    for (int64_t i = 0; i < m * n; i++) {
        p.x[i] = (float)((i * 37) % 101) / 25.0f - 2.0f;
        p.y[i] = NAN;
    }
    int64_t shape[2] = {m, n};
    p.args[0] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(p.x, TJ_DT_F32, 2, shape)};
    p.args[1] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(p.y, TJ_DT_F32, 2, shape)};
    return p;
}

static void free_pair(pair *p)
{
    free(p->x);
    free(p->y);
}

/* The largest error of Y against a softmax of each row of X in double. */
static double softmax_error(const pair *p, int64_t m, int64_t n)
{
    double worst = 0;
    for (int64_t r = 0; r < m; r++) {
        const float *x = p->x + r * n;
        double top = -INFINITY, sum = 0;
        for (int64_t i = 0; i < n; i++)
            top = fmax(top, x[i]);
        for (int64_t i = 0; i < n; i++)
            sum += exp(x[i] - top);
        for (int64_t i = 0; i < n; i++) {
            double want = exp(x[i] - top) / sum, got = p->y[r * n + i];
            worst = isnan(got) ? INFINITY : fmax(worst, fabs(got - want));
        }
    }
    return worst;
}

static int64_t config_value(const tj_fn *f, const char *name)
{
    const tj_binding *config;
    uint32_t n = tj_fn_config(f, &config);
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(config[i].name, name))
            return config[i].value;
    return -1;
}

/* ---- the contract ------------------------------------------------------------------------ */

Test(contract, a_function_for_n_200_refuses_n_1000_naming_the_where_clause, .init = open_jit, .fini = close_jit)
{
    pair small = make_pair(4, 200), big = make_pair(4, 1000);
    tj_fn *f = compile_for(softmax_src, "softmax", small.args, 2);
    cr_expect_eq(config_value(f, "BLOCK"), 256);
    cr_assert_eq(tj_fn_launch(f, small.args, 2, NULL, &err), 0, "%s", err.msg);
    cr_expect_lt(softmax_error(&small, 4, 200), 1e-6);

    cr_assert_neq(tj_fn_launch(f, big.args, 2, NULL, &err), 0, "N = 1000 was launched with BLOCK = 256");
    cr_expect(strstr(err.msg, "where clause 'BLOCK >= N'"), "%s", err.msg);
    cr_expect(strstr(err.msg, "BLOCK=256") && strstr(err.msg, "N=1000"), "%s", err.msg);
    cr_expect(isnan(big.y[0]), "the refused launch wrote Y");
    cr_expect_neq(tj_fn_check(f, big.args, 2, NULL), 0);

    /* back inside the domain, after the refusal: no stale memo */
    pair other = make_pair(3, 17);
    cr_assert_eq(tj_fn_launch(f, other.args, 2, NULL, &err), 0, "%s", err.msg);
    cr_expect_lt(softmax_error(&other, 3, 17), 1e-6);
    tj_fn_release(f);
    free_pair(&small);
    free_pair(&big);
    free_pair(&other);
}

Test(contract, the_contiguous_helper_makes_row_major_strides)
{
    int64_t shape[3] = {2, 3, 5};
    tj_tensor t = tj_tensor_contiguous(NULL, TJ_DT_BF16, 3, shape);
    cr_expect_eq(t.strides[0], 15);
    cr_expect_eq(t.strides[1], 5);
    cr_expect_eq(t.strides[2], 1);
    cr_expect_eq(t.dtype, TJ_DT_BF16);
    cr_expect_eq(tj_tensor_contiguous(NULL, TJ_DT_F32, TJ_MAX_RANK + 1, shape).dtype, TJ_DT_INVALID);
}

/* ---- dispatch ---------------------------------------------------------------------------- */

typedef struct events {
    int compiles, tunes;
    char last_reason[1024], last_signature[512];
} events;

static void on_event(void *ud, const tj_event *e)
{
    events *ev = ud;
    if (e->kind == TJ_EVENT_COMPILE)
        ev->compiles++;
    else
        ev->tunes++;
    cr_expect(!strcmp(e->kernel, "softmax") || !strcmp(e->kernel, "rowcopy"), "%s", e->kernel);
    cr_expect_geq(e->ms, 0.0);
    snprintf(ev->last_reason, sizeof ev->last_reason, "%s", e->reason);
    snprintf(ev->last_signature, sizeof ev->last_signature, "%s", e->signature);
}

static tj_dispatch *new_dispatch(const char *src, const char *kernel)
{
    tj_compile_request req = request(src, kernel);
    tj_dispatch *d = tj_dispatch_new(jit, &req, &err);
    cr_assert(d, "%s", err.msg);
    return d;
}

static void check_softmax(tj_dispatch *d, int64_t m, int64_t n)
{
    pair p = make_pair(m, n);
    cr_assert_eq(tj_dispatch_launch(d, p.args, 2, NULL, &err), 0, "N = %lld: %s", (long long)n, err.msg);
    double e = softmax_error(&p, m, n);
    cr_assert_lt(e, 1e-6, "N = %lld: max abs error %g", (long long)n, e);
    free_pair(&p);
}

Test(dispatch, the_readme_softmax_is_right_for_every_n_to_8192, .init = open_jit, .fini = close_jit)
{
    events ev = {0};
    tj_jit_set_event_handler(jit, on_event, &ev);
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    for (int64_t n = 1; n <= 300; n++)
        check_softmax(d, 2, n);
    for (int64_t n = 301; n <= 8192; n = n * 9 / 8 + 7)
        check_softmax(d, 2, n);
    check_softmax(d, 2, 8192);
    check_softmax(d, 2, 4097);
    check_softmax(d, 2, 1000); /* the shape the fixed function refuses */
    /* one compile per shape bucket, N <= 1 .. N <= 8192: 14 */
    cr_expect_eq(ev.compiles, 14, "%d compiles", ev.compiles);
    cr_expect(strstr(ev.last_reason, "new signature"), "%s", ev.last_reason);
    tj_dispatch_free(d);
}

Test(dispatch, repeated_shapes_compile_nothing_and_events_name_the_signature, .init = open_jit, .fini = close_jit)
{
    events ev = {0};
    tj_jit_set_event_handler(jit, on_event, &ev);
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    check_softmax(d, 3, 200);
    cr_expect_eq(ev.compiles, 1);
    cr_expect(strstr(ev.last_signature, "X: f32[3,200]"), "%s", ev.last_signature);
    cr_expect(strstr(ev.last_reason, "X: f32[<=4,<=256]"), "%s", ev.last_reason);
    check_softmax(d, 3, 200);
    check_softmax(d, 4, 250); /* the same bucket, inside the held function's where clause */
    cr_expect_eq(ev.compiles, 1);
    pair wide = make_pair(1, 300);
    tj_fn *f = tj_dispatch_fn(d, wide.args, 2, &err);
    cr_assert(f, "%s", err.msg);
    cr_expect_eq(config_value(f, "BLOCK"), 512);
    cr_expect_eq(ev.compiles, 2);
    tj_fn_release(f);
    free_pair(&wide);
    tj_dispatch_free(d);
}

Test(dispatch, a_clause_failing_inside_a_bucket_compiles_another_function, .init = open_jit, .fini = close_jit)
{
    events ev = {0};
    tj_jit_set_event_handler(jit, on_event, &ev);
    tj_dispatch *d = new_dispatch(rows_src, "rowcopy");
    int64_t sizes[] = {128, 96, 128, 96};
    for (int i = 0; i < 4; i++) {
        pair p = make_pair(2, sizes[i]);
        cr_assert_eq(tj_dispatch_launch(d, p.args, 2, NULL, &err), 0, "%s", err.msg);
        for (int64_t k = 0; k < 2 * sizes[i]; k++)
            cr_assert_eq(p.y[k], 2 * p.x[k]);
        if (i == 1)
            cr_expect(strstr(ev.last_reason, "where clause 'N % BLOCK == 0'") && strstr(ev.last_reason, "N=96"),
                      "%s", ev.last_reason);
        free_pair(&p);
    }
    cr_expect_eq(ev.compiles, 2);
    tj_dispatch_free(d);
}

Test(dispatch, wrong_arguments_are_errors, .init = open_jit, .fini = close_jit)
{
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    pair p = make_pair(2, 8);
    cr_expect_neq(tj_dispatch_launch(d, p.args, 1, NULL, &err), 0);
    cr_expect(strstr(err.msg, "takes 2 arguments, 1 given"), "%s", err.msg);
    p.args[1].tensor.dtype = TJ_DT_F16;
    cr_expect_neq(tj_dispatch_launch(d, p.args, 2, NULL, &err), 0);
    cr_expect(strstr(err.msg, "'Y'"), "%s", err.msg);
    free_pair(&p);
    tj_dispatch_free(d);
    tj_compile_request bad = request("kernel softmax(X: f32[N]\n", "softmax");
    cr_expect_null(tj_dispatch_new(jit, &bad, &err));
    cr_expect(strstr(err.msg, "test.tj:2:1: error: expected ')'"), "%s", err.msg);
}

/* ---- tuning on the cpu ------------------------------------------------------------------- */

static void count_progress(void *ud, uint32_t done, uint32_t total, const tj_tune_result *r)
{
    (void)r;
    cr_expect_leq(done, total);
    ++*(int *)ud;
}

Test(dispatch, tuning_times_the_valid_configurations_and_keeps_the_fastest, .init = open_jit, .fini = close_jit)
{
    events ev = {0};
    tj_jit_set_event_handler(jit, on_event, &ev);
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    pair p = make_pair(2, 3000); /* BLOCK 4096 or 8192, with 3 warps each */
    check_softmax(d, 2, 3000);
    int calls = 0;
    tj_tune_report rep;
    cr_assert_eq(tj_dispatch_tune(d, p.args, 2, count_progress, &calls, &rep, &err), 0, "%s", err.msg);
    cr_expect_eq(rep.nresults, 18);
    cr_expect_eq(calls, 18);
    cr_expect_eq(rep.timed, 6);
    cr_expect_eq(ev.tunes, 1);
    const tj_tune_result *best = &rep.results[rep.best];
    cr_assert_eq(best->status, TJ_TUNE_OK);
    for (uint32_t i = 0; i < rep.nresults; i++) {
        const tj_tune_result *r = &rep.results[i];
        cr_expect_eq(r->status, i < 12 ? TJ_TUNE_PRUNED_WHERE : TJ_TUNE_OK, "result %u", i);
        if (r->status == TJ_TUNE_OK)
            cr_expect_geq(r->seconds, best->seconds);
    }
    cr_expect_eq(ev.compiles, 1 + 6, "the first launch's compile, then one per timed configuration");
    tj_fn *f = tj_dispatch_fn(d, p.args, 2, &err);
    cr_assert(f, "%s", err.msg);
    cr_expect_eq(ev.compiles, 7, "the winner, compiled while tuning, comes from the memory cache");
    for (uint32_t i = 0; i < best->nconfig; i++)
        cr_expect_eq(config_value(f, best->config[i].name), best->config[i].value, "%s", best->config[i].name);
    tj_fn_release(f);
    tj_tune_report_free(&rep);
    check_softmax(d, 2, 3000);
    free_pair(&p);
    tj_dispatch_free(d);
}

/* The first configuration (REPS = 64) adds x 64 times, the second once:
 * only a stored winner makes a compile that leaves REPS open take 1. */
static const char reps_src[] =
    "kernel reps(X: f32[N], Y: f32[N], Z: f32[N])\n"
    "    grid (cdiv(N, BLOCK))\n"
    "    tune REPS in [64, 1], BLOCK in [1024]\n"
    "{\n"
    "    o = program_id(0) * BLOCK\n"
    "    x = load(X[o:o+BLOCK], other = 0.0)\n"
    "    acc = zeros(f32[BLOCK])\n"
    "    for i in range(0, REPS) {\n"
    "        acc = acc + x\n"
    "    }\n"
    "    store(Y[o:o+BLOCK], x * 2.0)\n"
    "    store(Z[o:o+BLOCK], acc)\n"
    "}\n";

enum { REPS_N = 1 << 20 };

typedef struct reps_args {
    float *x, *y, *z;
    tj_arg args[3];
} reps_args;

static reps_args make_reps_args(void)
{
    reps_args a = {calloc(REPS_N, sizeof(float)), calloc(REPS_N, sizeof(float)), calloc(REPS_N, sizeof(float)), {{0}}};
    for (int i = 0; i < REPS_N; i++)
        a.x[i] = (float)(i % 97) - 48.0f;
    int64_t shape[1] = {REPS_N};
    float *data[3] = {a.x, a.y, a.z};
    for (int i = 0; i < 3; i++)
        a.args[i] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(data[i], TJ_DT_F32, 1, shape)};
    return a;
}

/* A tuning in one process, from the records in another (nothing timed),
 * and a plain compile in a third that takes the stored winner. */
Test(dispatch, cpu_tuning_stores_the_winner_for_later_processes, .init = open_jit, .fini = close_jit)
{
    if (!tj_jit_native_cpu(jit))
        cr_skip_test("the interpreter stands in: nothing is stored (%s)", tj_jit_cpu_fallback(jit));
    reps_args a = make_reps_args();
    tj_tune_report first, second;
    tj_dispatch *d = new_dispatch(reps_src, "reps");
    cr_assert_eq(tj_dispatch_tune(d, a.args, 3, NULL, NULL, &first, &err), 0, "%s", err.msg);
    tj_dispatch_free(d);
    cr_assert_eq(first.nresults, 2);
    cr_expect_eq(first.timed, 2);
    cr_assert_eq(first.results[first.best].status, TJ_TUNE_OK);
    cr_expect_eq(first.results[first.best].config[0].value, 1, "REPS = 1 adds 64 times less");
    for (uint32_t i = 0; i < 2; i++)
        cr_expect(!first.results[i].stored, "result %u came from a record in a fresh cache", i);

    tj_jit_close(jit); /* another process: only the disk cache is shared */
    jit = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    cr_assert(jit, "%s", err.msg);
    d = new_dispatch(reps_src, "reps");
    cr_assert_eq(tj_dispatch_tune(d, a.args, 3, NULL, NULL, &second, &err), 0, "%s", err.msg);
    tj_dispatch_free(d);
    cr_expect_eq(second.timed, 0, "the second tuning timed a configuration again");
    for (uint32_t i = 0; i < 2; i++) {
        cr_expect(second.results[i].stored, "result %u", i);
        double t1 = first.results[i].seconds, t2 = second.results[i].seconds; /* stored to 7 digits */
        cr_expect(fabs(t2 - t1) <= 1e-6 * t1, "result %u: %g stored, %g timed", i, t2, t1);
    }
    cr_expect_eq(second.best, first.best);

    tj_jit_close(jit);
    jit = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    cr_assert(jit, "%s", err.msg);
    tj_fn *f = compile_for(reps_src, "reps", a.args, 3);
    cr_expect_eq(config_value(f, "REPS"), 1, "the compile did not take the stored winner");
    cr_assert_eq(tj_fn_launch(f, a.args, 3, NULL, &err), 0, "%s", err.msg);
    for (int i = 0; i < REPS_N; i++)
        cr_assert_eq(a.y[i], 2 * a.x[i], "Y[%d]", i);
    tj_fn_release(f);
    tj_tune_report_free(&first);
    tj_tune_report_free(&second);
    free(a.x), free(a.y), free(a.z);
}

/* Tuning off: a compile takes the first valid configuration even with a
 * stored winner. */
Test(dispatch, tune_mode_off_ignores_the_stored_winner, .init = open_jit, .fini = close_jit)
{
    if (!tj_jit_native_cpu(jit))
        cr_skip_test("the interpreter stands in: nothing is stored (%s)", tj_jit_cpu_fallback(jit));
    reps_args a = make_reps_args();
    tj_tune_report rep;
    tj_dispatch *d = new_dispatch(reps_src, "reps");
    cr_assert_eq(tj_dispatch_tune(d, a.args, 3, NULL, NULL, &rep, &err), 0, "%s", err.msg);
    tj_dispatch_free(d);
    tj_tune_report_free(&rep);
    tj_jit_set_tune_mode(jit, TJ_TUNE_OFF);
    tj_fn *f = compile_for(reps_src, "reps", a.args, 3);
    cr_expect_eq(config_value(f, "REPS"), 64);
    tj_fn_release(f);
    free(a.x), free(a.y), free(a.z);
}

/* ---- DLPack ------------------------------------------------------------------------------ */

typedef struct dl_tensor {
    void *data;
    struct { int32_t type, id; } device;
    int32_t ndim;
    struct { uint8_t code, bits; uint16_t lanes; } dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} dl_tensor;

Test(dispatch, dlpack_tensors_with_strides_and_offsets, .init = open_jit, .fini = close_jit)
{
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    /* X: every other column of a 3 x 40 buffer, from element 1 on; Y contiguous */
    float x[120], y[60];
    for (int i = 0; i < 120; i++)
        x[i] = (float)(i % 7);
    int64_t shape[2] = {3, 20}, xstrides[2] = {40, 2};
    dl_tensor dx = {x, {1, 0}, 2, {2, 32, 1}, shape, xstrides, sizeof(float)};
    dl_tensor dy = {y, {1, 0}, 2, {2, 32, 1}, shape, NULL, 0};
    const void *dl[2] = {&dx, &dy};
    tj_arg args[2] = {{0}};
    cr_assert_eq(tj_dispatch_launch_dlpack(d, args, dl, 2, NULL, &err), 0, "%s", err.msg);
    cr_expect_eq(args[0].tensor.strides[1], 2);
    cr_expect_eq(args[1].tensor.strides[0], 20);
    for (int r = 0; r < 3; r++) {
        double sum = 0, top = -INFINITY;
        for (int i = 0; i < 20; i++)
            top = fmax(top, x[1 + r * 40 + 2 * i]);
        for (int i = 0; i < 20; i++)
            sum += exp(x[1 + r * 40 + 2 * i] - top);
        for (int i = 0; i < 20; i++)
            cr_assert_float_eq(y[r * 20 + i], exp(x[1 + r * 40 + 2 * i] - top) / sum, 1e-6);
    }
    dy.device.type = 2; /* kDLCUDA */
    cr_expect_neq(tj_dispatch_launch_dlpack(d, args, dl, 2, NULL, &err), 0);
    cr_expect(strstr(err.msg, "argument 'Y'") && strstr(err.msg, "device"), "%s", err.msg);
    dy.device.type = 1;
    dy.dtype.code = 5; /* complex */
    cr_expect_neq(tj_dispatch_launch_dlpack(d, args, dl, 2, NULL, &err), 0);
    cr_expect(strstr(err.msg, "dtype"), "%s", err.msg);
    dy.dtype.code = 4; /* bf16: the kernel takes f32 */
    dy.dtype.bits = 16;
    cr_expect_neq(tj_dispatch_launch_dlpack(d, args, dl, 2, NULL, &err), 0);
    cr_expect(strstr(err.msg, "bf16"), "%s", err.msg);
    tj_dispatch_free(d);
}

/* ---- DLPack's C exchange API: a stand-in producer whose "objects" are
 * DLTensors already (a real one, PyTorch, views its Python tensors) ---- */

typedef struct exchange_api {
    struct { uint32_t major, minor; } version;
    const void *prev_api;
    void *allocator, *from_py, *to_py;
    int (*view)(void *object, void *out);
    int (*stream)(int32_t type, int32_t id, void **out);
} exchange_api;

static int views_made, streams_asked;
static int view_object(void *object, void *out)
{
    views_made++;
    memcpy(out, object, sizeof(dl_tensor));
    return ((dl_tensor *)object)->ndim < 0; /* a producer's failure */
}
static int current_stream(int32_t type, int32_t id, void **out)
{
    (void)type, (void)id;
    streams_asked++;
    *out = NULL;
    return 0;
}

Test(dispatch, the_dlpack_exchange_api_views_the_producers_objects, .init = open_jit, .fini = close_jit)
{
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    float x[60], y[60];
    for (int i = 0; i < 60; i++)
        x[i] = (float)(i % 5);
    int64_t shape[2] = {3, 20};
    dl_tensor dx = {x, {1, 0}, 2, {2, 32, 1}, shape, NULL, 0}, dy = {y, {1, 0}, 2, {2, 32, 1}, shape, NULL, 0};
    void *objects[2] = {&dx, &dy};
    tj_arg args[2] = {{0}};
    exchange_api api = {{1, 3}, NULL, NULL, NULL, NULL, view_object, current_stream};
    views_made = streams_asked = 0;
    cr_assert_eq(tj_dispatch_launch_exchange(d, &api, objects, args, 2, &err), 0, "%s", err.msg);
    cr_expect_eq(views_made, 2);
    cr_expect_eq(streams_asked, 0, "a cpu launch needs no stream");
    for (int r = 0; r < 3; r++) {
        double sum = 0;
        for (int i = 0; i < 20; i++)
            sum += y[r * 20 + i];
        cr_expect_float_eq(sum, 1.0, 1e-5);
    }
    dy.ndim = -1; /* the producer fails */
    cr_expect_neq(tj_dispatch_launch_exchange(d, &api, objects, args, 2, &err), 0);
    cr_expect(strstr(err.msg, "argument 1") && strstr(err.msg, "producer"), "%s", err.msg);
    dy.ndim = 2;
    api.version.major = 2; /* an ABI this build does not know */
    cr_expect_neq(tj_dispatch_launch_exchange(d, &api, objects, args, 2, &err), 0);
    cr_expect(strstr(err.msg, "version 2.3"), "%s", err.msg);
    api.version.major = 1;
    api.view = NULL;
    cr_expect_neq(tj_dispatch_launch_exchange(d, &api, objects, args, 2, &err), 0);
    cr_expect_neq(tj_dispatch_launch_exchange(d, NULL, objects, args, 2, &err), 0);
    tj_dispatch_free(d);
}

Test(dispatch, the_exchange_api_says_when_the_tensors_are_on_another_device, .init = open_jit, .fini = close_jit)
{
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    float x[60] = {0}, y[60] = {0};
    int64_t shape[2] = {3, 20};
    dl_tensor dx = {x, {2, 0}, 2, {2, 32, 1}, shape, NULL, 0}, dy = {y, {2, 0}, 2, {2, 32, 1}, shape, NULL, 0};
    void *objects[2] = {&dx, &dy};
    tj_arg args[2] = {{0}};
    exchange_api api = {{1, 3}, NULL, NULL, NULL, NULL, view_object, current_stream};
    views_made = streams_asked = 0;
    cr_expect_eq(tj_dispatch_launch_exchange(d, &api, objects, args, 2, &err), TJ_DISPATCH_OTHER_DEVICE,
                 "kDLCUDA tensors on a cpu table");
    cr_expect_eq(views_made, 1, "stops at the first tensor");
    cr_expect_eq(streams_asked, 0);
    dx.device.type = dy.device.type = 1; /* kDLCPU: this table's */
    cr_expect_eq(tj_dispatch_launch_exchange(d, &api, objects, args, 2, &err), 0, "%s", err.msg);
    tj_dispatch_free(d);
}

/* tj_tensors_from_exchange: the library's entries' view of the same objects
 * (strides filled where the producer gives none, the stream asked on CUDA
 * only, mixed devices and undescribable dtypes refused by index). */
Test(dispatch, the_exchange_api_describes_tensors_for_the_library)
{
    float x[60], y[40];
    int64_t xs[2] = {3, 20}, ys[1] = {40}, ystride[1] = {1};
    dl_tensor dx = {x, {2, 1}, 2, {2, 32, 1}, xs, NULL, 8}, dy = {y, {2, 1}, 1, {4, 16, 1}, ys, ystride, 0};
    void *objects[3] = {&dx, NULL, &dy};
    tj_tensor t[3] = {{0}};
    int32_t type, id;
    void *stream = (void *)1;
    exchange_api api = {{1, 3}, NULL, NULL, NULL, NULL, view_object, current_stream};
    views_made = streams_asked = 0;
    cr_assert_eq(tj_tensors_from_exchange(&api, objects, 3, t, &type, &id, &stream, &err), 0, "%s", err.msg);
    cr_expect(type == 2 && id == 1 && views_made == 2 && streams_asked == 1 && stream == NULL);
    cr_expect(t[0].data == (char *)x + 8 && t[0].dtype == TJ_DT_F32 && t[0].rank == 2);
    cr_expect(t[0].shape[1] == 20 && t[0].strides[0] == 20 && t[0].strides[1] == 1);
    cr_expect(t[2].dtype == TJ_DT_BF16 && t[2].shape[0] == 40 && t[2].data == y);
    cr_expect_eq(t[1].data, NULL, "a NULL object's tensor is left alone");
    dx.device.type = dy.device.type = 1; /* kDLCPU: no stream to ask for */
    streams_asked = 0;
    cr_assert_eq(tj_tensors_from_exchange(&api, objects, 3, t, &type, &id, &stream, &err), 0, "%s", err.msg);
    cr_expect(type == 1 && streams_asked == 0 && stream == NULL);
    dy.device.id = 3;
    cr_expect_neq(tj_tensors_from_exchange(&api, objects, 3, t, &type, &id, &stream, &err), 0);
    cr_expect(strstr(err.msg, "array 2") && strstr(err.msg, "1:3"), "%s", err.msg);
    dy.device.id = 1;
    dy.dtype.bits = 24;
    cr_expect_neq(tj_tensors_from_exchange(&api, objects, 3, t, &type, &id, &stream, &err), 0);
    cr_expect(strstr(err.msg, "array 2") && strstr(err.msg, "dtype"), "%s", err.msg);
    dy.dtype.bits = 16;
    dx.ndim = -1;
    cr_expect_neq(tj_tensors_from_exchange(&api, objects, 3, t, &type, &id, &stream, &err), 0);
    cr_expect(strstr(err.msg, "array 0") && strstr(err.msg, "producer"), "%s", err.msg);
    cr_expect_neq(tj_tensors_from_exchange(NULL, objects, 3, t, &type, &id, &stream, &err), 0);
    cr_expect_neq(tj_tensors_from_exchange(&api, objects, 3, t, NULL, &id, &stream, &err), 0);
}

/* The native cpu code specializes on 16-byte aligned bases too: the same
 * shapes at a misaligned address must compile another function, not hit
 * the memo and fail the launch's alignment check. */
Test(dispatch, the_same_shapes_at_a_misaligned_address_still_launch, .init = open_jit, .fini = close_jit)
{
    tj_dispatch *d = new_dispatch(softmax_src, "softmax");
    pair p = make_pair(2, 64);
    cr_assert_eq(tj_dispatch_launch(d, p.args, 2, NULL, &err), 0, "%s", err.msg);
    float *x = calloc(2 * 64 + 1, sizeof(float));
    for (int i = 0; i < 2 * 64; i++)
        x[1 + i] = p.x[i];
    p.args[0].tensor.data = x + 1; /* 4 bytes past a 16-byte boundary */
    for (int i = 0; i < 2 * 64; i++)
        p.y[i] = NAN;
    cr_assert_eq(tj_dispatch_launch(d, p.args, 2, NULL, &err), 0, "%s", err.msg);
    cr_expect_lt(softmax_error(&p, 2, 64), 1e-6);
    p.args[0].tensor.data = p.x;
    cr_assert_eq(tj_dispatch_launch(d, p.args, 2, NULL, &err), 0, "%s", err.msg);
    cr_expect_lt(softmax_error(&p, 2, 64), 1e-6);
    free(x);
    free_pair(&p);
    tj_dispatch_free(d);
}
