/* The autotuner with a fake device of deterministic times: pruning by
 * `where` and by device limits, stored times reused (a second run times
 * nothing, an added configuration is the only one timed), shape buckets,
 * the lookup-only mode and the cpu. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/autotune_internal.h"
#include "cache_test_util.h"
#include "tilejit/autotune.h"
#include "tilejit/tilejit.h"

#define SOFTMAX_BODY                                                                                                   \
    "{\n"                                                                                                              \
    "    r = program_id(0)\n"                                                                                          \
    "    x = load(X[r, 0:BLOCK], other = -inf)\n"                                                                      \
    "    e = exp(x - max(x))\n"                                                                                        \
    "    store(Y[r, 0:BLOCK], e / sum(e))\n"                                                                           \
    "}\n"

static const char softmax[] = "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
                              "    grid (M)\n"
                              "    tune BLOCK in [256, 512, 1024, 2048, 4096], warps in [4, 8, 16]\n"
                              "    where BLOCK >= N\n" SOFTMAX_BODY;

static const char softmax_commented[] = "# softmax, one program per row\n"
                                        "kernel softmax(X: f32[M, N], Y: f32[M, N])   # rows\n"
                                        "    grid (M)\n"
                                        "    tune BLOCK in [256, 512, 1024, 2048, 4096],   warps in [4, 8, 16]\n"
                                        "    where BLOCK >= N   # whole rows\n" SOFTMAX_BODY;

static const char softmax_more_warps[] = "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
                                         "    grid (M)\n"
                                         "    tune BLOCK in [256, 512, 1024, 2048, 4096], warps in [4, 8, 16, 2]\n"
                                         "    where BLOCK >= N\n" SOFTMAX_BODY;

/* ---- the fake device ------------------------------------------------------------------ */

typedef struct fake {
    tj_tune_device dev;
    int loads, times, unloads;
    int spill_warps;      /* configurations with this many warps spill */
    int fail_block;       /* timing configurations with this BLOCK fails */
} fake;

static int64_t config_value(const tj_kernel *k, const char *name)
{
    for (uint32_t i = 0; i < k->nconfig; i++)
        if (!strcmp(k->config[i].name, name))
            return k->config[i].value;
    return -1;
}

static void *fake_load(tj_tune_device *d, const tj_tune_variant *v, tj_tune_attrs *a, tj_rt_error *err)
{
    (void)err;
    fake *f = d->self;
    f->loads++;
    int spills = config_value(v->simt, "warps") == f->spill_warps;
    *a = (tj_tune_attrs){.regs = 40, .spill_bytes = spills ? 16 : 0, .max_threads = 1024};
    return (void *)v;
}

/* Fastest at BLOCK = 2048 and 8 warps. */
static int fake_time(tj_tune_device *d, void *h, const tj_tune_variant *v, double *seconds, tj_rt_error *err)
{
    fake *f = d->self;
    cr_assert_eq(h, v);
    f->times++;
    int64_t block = config_value(v->simt, "BLOCK"), warps = config_value(v->simt, "warps");
    if (block == f->fail_block) {
        snprintf(err->msg, sizeof err->msg, "launch failed");
        return 1;
    }
    *seconds = 1e-6 * (1.0 + (double)llabs(block - 2048) / 1024.0) + 1e-8 * (double)llabs(warps - 8);
    return 0;
}

static void fake_unload(tj_tune_device *d, void *h)
{
    (void)h;
    ((fake *)d->self)->unloads++;
}

static void fake_init(fake *f)
{
    memset(f, 0, sizeof *f);
    f->dev = (tj_tune_device){.self = f, .id = "fake device/sm_90a", .arch = "sm_90a", .max_smem = 48 * 1024,
                              .max_threads = 1024, .load = fake_load, .time = fake_time, .unload = fake_unload};
    f->spill_warps = -1;
    f->fail_block = -1;
}

/* ---- running the tuner ------------------------------------------------------------------ */

static float xs[16], ys[16];

typedef struct setup {
    const char *source;
    int64_t n;
    tj_tune_mode mode;
    tj_binding fixed[2];
    uint32_t nfixed;
} setup;

static int progress_calls;
static void on_progress(void *ud, uint32_t done, uint32_t total, const tj_tune_result *r)
{
    (void)ud;
    (void)r;
    progress_calls++;
    cr_assert_eq(done, (uint32_t)progress_calls);
    cr_assert_leq(done, total);
}

static tj_arg setup_args[2];

static tj_tune_request make_request(const setup *s)
{
    for (int i = 0; i < 2; i++) {
        memset(&setup_args[i], 0, sizeof setup_args[i]);
        setup_args[i].is_tensor = 1;
        setup_args[i].tensor = (tj_tensor){i ? ys : xs, TJ_DT_F32, 2, {64, s->n}, {s->n, 1}};
    }
    return (tj_tune_request){.file = "softmax.tj", .source = s->source, .len = strlen(s->source),
                             .kernel = "softmax", .params = s->fixed, .nparams = s->nfixed, .args = setup_args,
                             .nargs = 2, .mode = s->mode, .threads = 2, .progress = on_progress};
}

static tj_tune_report tune(fake *f, tj_cache *cache, const setup *s)
{
    tj_tune_request req = make_request(s);
    tj_tune_report rep;
    tj_rt_error err = {{0}};
    progress_calls = 0;
    int rc = tj_tune(f ? &f->dev : NULL, cache, &req, &rep, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq((uint32_t)progress_calls, rep.nresults);
    return rep;
}

static const char *best_config(const tj_tune_report *r)
{
    static char buf[256];
    const tj_tune_result *b = &r->results[r->best];
    tj_tune_config_text(b->config, b->nconfig, buf, sizeof buf);
    return buf;
}

static int count_status(const tj_tune_report *r, tj_tune_status s)
{
    int n = 0;
    for (uint32_t i = 0; i < r->nresults; i++)
        n += r->results[i].status == s;
    return n;
}

static tj_cache *fresh_cache(char **dir)
{
    *dir = ct_tempdir();
    tj_cache_options o = {.dir = *dir};
    return tj_cache_open(&o);
}

static const setup base = {softmax, 1000, TJ_TUNE_MISSING, {{0}}, 0};

Test(autotune, first_run_times_every_valid_configuration)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    tj_tune_report r = tune(&f, cache, &base);
    cr_expect_eq(r.nresults, 15);
    cr_expect_eq(count_status(&r, TJ_TUNE_PRUNED_WHERE), 6, "BLOCK 256 and 512 are < N");
    cr_expect_eq(count_status(&r, TJ_TUNE_OK), 9);
    cr_expect_eq(r.timed, 9);
    cr_expect_eq(f.times, 9);
    cr_expect_eq(f.loads, f.unloads);
    cr_expect_str_eq(best_config(&r), "BLOCK=2048,warps=8,stages=2");
    cr_expect_str_eq(r.bucket, "M=64,N=1024");
    const tj_tune_result *pruned = &r.results[0];
    cr_expect_eq(pruned->status, TJ_TUNE_PRUNED_WHERE);
    cr_expect(strstr(pruned->note, "BLOCK >= N"), "%s", pruned->note);
    for (uint32_t i = 0; i < r.nresults; i++)
        if (r.results[i].status == TJ_TUNE_OK)
            cr_expect_eq(r.results[i].nthreads, 32 * (uint32_t)r.results[i].config[1].value);
    tj_cache_stats st;
    tj_cache_stats_get(cache, &st);
    cr_expect_eq(st.tune_records, 11, "one record per configuration, the winner and the generation");
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, a_second_run_times_nothing)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    tj_tune_report r = tune(&f, cache, &base);
    tj_tune_report_free(&r);
    fake_init(&f);
    r = tune(&f, cache, &base);
    cr_expect_eq(f.times, 0);
    cr_expect_eq(f.loads, 0);
    cr_expect_eq(r.timed, 0);
    cr_expect_eq(r.built, 0);
    cr_expect_str_eq(best_config(&r), "BLOCK=2048,warps=8,stages=2");
    for (uint32_t i = 0; i < r.nresults; i++)
        if (r.results[i].status == TJ_TUNE_OK)
            cr_expect(r.results[i].stored);
    tj_tune_report_free(&r);
    /* nor does a comment, a shape of the same bucket, or another process's lookup */
    setup s = base;
    s.source = softmax_commented;
    s.n = 1020;
    r = tune(&f, cache, &s);
    cr_expect_eq(f.times, 0);
    cr_expect_str_eq(best_config(&r), "BLOCK=2048,warps=8,stages=2");
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

/* The winner stored for exactly this source text, as text. */
static const char *stored_winner(tj_cache *cache, const setup *s)
{
    static char buf[256];
    tj_tune_request req = make_request(s);
    tj_cache_key k;
    tj_tune_winner_key(&req, "fake device/sm_90a", "M=64,N=1024", &k);
    tj_ctx *c = tj_ctx_new();
    tj_program *p = tj_parse_program(c, "s.tj", s->source, strlen(s->source));
    tj_binding *config;
    uint32_t n;
    int complete;
    buf[0] = 0;
    if (p && tj_tune_winner_load(cache, &k, c, p, 0, &config, &n, &complete) == 0)
        tj_tune_config_text(config, n, buf, sizeof buf);
    tj_ctx_free(c);
    return buf;
}

Test(autotune, the_winner_is_stored_for_the_exact_source)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    setup s = base;
    s.mode = TJ_TUNE_STORED;
    tj_tune_report r = tune(&f, cache, &s);
    tj_tune_report_free(&r);
    cr_expect_str_eq(stored_winner(cache, &s), "", "nothing timed: no winner");
    s.mode = TJ_TUNE_MISSING;
    r = tune(&f, cache, &s);
    tj_tune_report_free(&r);
    cr_expect_str_eq(stored_winner(cache, &s), "BLOCK=2048,warps=8,stages=2");
    setup edited = s;
    edited.source = softmax_commented;
    cr_expect_str_eq(stored_winner(cache, &edited), "", "another text");
    edited.mode = TJ_TUNE_STORED;
    r = tune(&f, cache, &edited); /* every time is stored: a winner for this text too */
    tj_tune_report_free(&r);
    cr_expect_str_eq(stored_winner(cache, &edited), "BLOCK=2048,warps=8,stages=2");
    setup more = s;
    more.source = softmax_more_warps;
    r = tune(&f, cache, &more); /* new records: the summaries made before are out of date */
    tj_tune_report_free(&r);
    cr_expect_str_eq(stored_winner(cache, &s), "");
    cr_expect_str_eq(stored_winner(cache, &more), "BLOCK=2048,warps=8,stages=2");
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, an_added_configuration_is_the_only_one_timed)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    setup s = base;
    s.fixed[0] = (tj_binding){"BLOCK", 2048};
    s.nfixed = 1;
    tj_tune_report r = tune(&f, cache, &s);
    cr_expect_eq(f.times, 3, "BLOCK fixed: three warps values");
    tj_tune_report_free(&r);
    fake_init(&f);
    s.source = softmax_more_warps;
    r = tune(&f, cache, &s);
    cr_expect_eq(r.nresults, 4);
    cr_expect_eq(f.times, 1, "only warps = 2 is new");
    cr_expect_str_eq(best_config(&r), "BLOCK=2048,warps=8,stages=2");
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, another_shape_bucket_is_timed_again)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    tj_tune_report r = tune(&f, cache, &base);
    tj_tune_report_free(&r);
    fake_init(&f);
    setup s = base;
    s.n = 1500; /* bucket N=2048: BLOCK 2048 and 4096 remain */
    r = tune(&f, cache, &s);
    cr_expect_str_eq(r.bucket, "M=64,N=2048");
    cr_expect_eq(f.times, 6);
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, lookup_only_never_times)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    setup s = base;
    s.mode = TJ_TUNE_STORED;
    tj_tune_report r = tune(&f, cache, &s);
    cr_expect_eq(f.times + f.loads, 0);
    cr_expect_eq(count_status(&r, TJ_TUNE_UNTIMED), 9);
    cr_expect_str_eq(best_config(&r), "BLOCK=1024,warps=4,stages=2", "nothing stored: the first valid one");
    tj_tune_report_free(&r);
    s.mode = TJ_TUNE_MISSING;
    r = tune(&f, cache, &s);
    tj_tune_report_free(&r);
    fake_init(&f);
    s.mode = TJ_TUNE_STORED;
    r = tune(&f, cache, &s);
    cr_expect_eq(f.times, 0);
    cr_expect_str_eq(best_config(&r), "BLOCK=2048,warps=8,stages=2", "the stored winner");
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, device_limits_prune_and_are_remembered)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    f.dev.max_threads = 256; /* 16 warps is too many */
    f.spill_warps = 4;       /* 4 warps spill */
    tj_tune_report r = tune(&f, cache, &base);
    cr_expect_eq(count_status(&r, TJ_TUNE_PRUNED_LIMITS), 6);
    cr_expect_eq(f.times, 3, "only the 8-warp configurations run");
    cr_expect_eq(f.loads, 6, "16 warps never loads");
    for (uint32_t i = 0; i < r.nresults; i++) {
        const tj_tune_result *x = &r.results[i];
        if (x->status != TJ_TUNE_PRUNED_LIMITS)
            continue;
        const char *want = x->config[1].value == 16 ? "threads" : "spills";
        cr_expect(strstr(x->note, want), "%s", x->note);
    }
    cr_expect_str_eq(best_config(&r), "BLOCK=2048,warps=8,stages=2");
    tj_tune_report_free(&r);
    fake_init(&f);
    f.dev.max_threads = 256;
    r = tune(&f, cache, &base);
    cr_expect_eq(f.loads + f.times, 0, "pruned configurations are not built again");
    cr_expect_eq(r.built, 0);
    cr_expect_eq(count_status(&r, TJ_TUNE_PRUNED_LIMITS), 6);
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, failed_timings_are_tried_again)
{
    char *dir;
    tj_cache *cache = fresh_cache(&dir);
    fake f;
    fake_init(&f);
    f.fail_block = 4096;
    tj_tune_report r = tune(&f, cache, &base);
    cr_expect_eq(count_status(&r, TJ_TUNE_FAILED), 3);
    tj_tune_report_free(&r);
    fake_init(&f);
    r = tune(&f, cache, &base);
    cr_expect_eq(f.times, 3, "only the failed ones");
    cr_expect_eq(count_status(&r, TJ_TUNE_OK), 9);
    tj_tune_report_free(&r);
    tj_cache_close(cache);
    ct_rmrf(dir);
}

Test(autotune, without_a_cache_or_a_device)
{
    fake f;
    fake_init(&f);
    tj_tune_report r = tune(&f, NULL, &base);
    cr_expect_eq(f.times, 9);
    tj_tune_report_free(&r);
    r = tune(NULL, NULL, &base); /* the cpu: the first valid configuration */
    cr_expect_eq(r.timed, 0);
    cr_expect_str_eq(best_config(&r), "BLOCK=1024,warps=4,stages=2");
    tj_tune_report_free(&r);
}

Test(autotune, errors_in_the_source_are_reported)
{
    tj_arg args[2] = {{0}};
    const char *bad = "kernel softmax(X: f32[M, N]) grid (M) { x = frobnicate(1) }\n";
    tj_tune_request req = {.file = "bad.tj", .source = bad, .len = strlen(bad), .kernel = "softmax",
                           .args = args, .nargs = 1, .mode = TJ_TUNE_MISSING};
    tj_tune_report r;
    tj_rt_error err = {{0}};
    fake f;
    fake_init(&f);
    cr_expect_neq(tj_tune(&f.dev, NULL, &req, &r, &err), 0);
    cr_expect(strstr(err.msg, "bad.tj:1:"), "%s", err.msg);
    tj_tune_report_free(&r);
    req.source = softmax;
    req.len = strlen(softmax);
    req.kernel = "nosuch";
    cr_expect_neq(tj_tune(&f.dev, NULL, &req, &r, &err), 0);
    cr_expect(strstr(err.msg, "nosuch"), "%s", err.msg);
    tj_tune_report_free(&r);
}

/* ---- tj_config_satisfies ------------------------------------------------------------------- */

Test(where, one_configuration)
{
    tj_ctx *c = tj_ctx_new();
    tj_program *p = tj_parse_program(c, "s.tj", softmax, strlen(softmax));
    cr_assert(p);
    tj_binding dims[] = {{"M", 64}, {"N", 1000}};
    tj_binding small[] = {{"BLOCK", 512}, {"warps", 4}}, big[] = {{"BLOCK", 1024}, {"warps", 4}};
    const char *failed;
    cr_expect_eq(tj_config_satisfies(c, p, 0, big, 2, dims, 2, &failed), 1);
    cr_expect_eq(tj_config_satisfies(c, p, 0, small, 2, dims, 2, &failed), 0);
    cr_expect_str_eq(failed, "BLOCK >= N");
    cr_expect_eq(tj_config_satisfies(c, p, 0, small, 2, NULL, 0, &failed), 1, "no dims: the clause is skipped");
    tj_binding other[] = {{"M", 64}};
    cr_expect_eq(tj_config_satisfies(c, p, 0, small, 2, other, 1, &failed), -1, "N unbound");
    cr_expect_gt(tj_error_count(c), 0);
    tj_ctx_free(c);
}

/* Two GPUs of one name with other SM counts (a MIG slice) or clocks keep
 * their own records. */
Test(autotune, the_device_id_tells_sm_count_and_clock_apart)
{
    tj_cuda_props a = {.name = "NVIDIA H200", .sm_count = 132, .clock_khz = 1980000}, b = a, clk = a;
    b.sm_count = 16;
    clk.clock_khz = 1755000;
    char ia[128], ib[128], ic[128];
    tj_tune_device_id(&a, "sm_90a", ia, sizeof ia);
    tj_tune_device_id(&b, "sm_90a", ib, sizeof ib);
    tj_tune_device_id(&clk, "sm_90a", ic, sizeof ic);
    cr_assert_str_eq(ia, "NVIDIA H200/sm_90a/132sm/1980MHz");
    cr_assert_str_neq(ia, ib);
    cr_assert_str_neq(ia, ic);
}
