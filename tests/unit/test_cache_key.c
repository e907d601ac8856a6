/* The cache key: every component changes it, comments and formatting of
 * the source and unspecialized sizes do not; and the memory cache of tj_jit
 * on the cpu (same request, same kernel from another source text). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_jit.h"
#include "tilejit/tilejit.h"

static const char softmax_src[] =
    "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
    "    grid (M)\n"
    "    tune BLOCK in [1024, 2048], warps in [4, 8]\n"
    "    where BLOCK >= N\n"
    "{\n"
    "    r = program_id(0)\n"
    "    x = load(X[r, 0:BLOCK], other = -inf)\n"
    "    e = exp(x - max(x))\n"
    "    store(Y[r, 0:BLOCK], e / sum(e))\n"
    "}\n";

/* The same kernel, commented and laid out differently. */
static const char softmax_commented[] =
    "# row softmax\n"
    "kernel softmax(X: f32[M, N],   Y: f32[M, N])   # one program per row\n"
    "    grid (M)\n"
    "    tune BLOCK in [1024, 2048],\n"
    "         warps in [4, 8]\n"
    "    where BLOCK >= N\n"
    "{\n"
    "    # the row\n"
    "    r   =   program_id(0)\n"
    "\n"
    "    x = load(X[r, 0:BLOCK], other = -inf)   # padded with -inf\n"
    "    e = exp(x - max(x))\n"
    "    store(Y[r, 0:BLOCK], e / sum(e))\n"
    "}\n";

/* A different computation. */
static const char softmax_changed[] =
    "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
    "    grid (M)\n"
    "    tune BLOCK in [1024, 2048], warps in [4, 8]\n"
    "    where BLOCK >= N\n"
    "{\n"
    "    r = program_id(0)\n"
    "    x = load(X[r, 0:BLOCK], other = -inf)\n"
    "    e = exp(x - max(x))\n"
    "    store(Y[r, 0:BLOCK], e * sum(e))\n"
    "}\n";

static _Alignas(16) float xbuf[128 * 1024 + 8], ybuf[128 * 1024 + 8];

static void two_tensors(tj_arg *args, int64_t m, int64_t n, int64_t stride, int misalign)
{
    float *bufs[2] = {xbuf, ybuf};
    for (int i = 0; i < 2; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].is_tensor = 1;
        args[i].tensor = (tj_tensor){bufs[i] + misalign, TJ_DT_F32, 2, {m, n}, {stride, 1}};
    }
}

typedef struct variant {
    const char *source;
    tj_binding params[2];
    uint32_t nparams;
    int64_t m, n, stride;
    int misalign;
} variant;

static const variant base = {softmax_src, {{"BLOCK", 1024}, {"warps", 4}}, 2, 64, 1024, 1024, 0};

/* The specialized Tile IR of a variant, in context c. */
static tj_kernel *specialized(tj_ctx *c, const variant *v)
{
    tj_arg args[2];
    two_tensors(args, v->m, v->n, v->stride, v->misalign);
    tj_program *p = tj_parse_program(c, "softmax.tj", v->source, strlen(v->source));
    cr_assert(p, "%s", tj_diag_render(c));
    tj_binding *dims, *config;
    uint32_t nconfig, ndims = tj_dims_from_args(c, p, 0, args, 2, &dims);
    cr_assert_eq(tj_select_config(c, p, 0, v->params, v->nparams, dims, ndims, &config, &nconfig), 0, "%s",
                 tj_diag_render(c));
    tj_kernel *tile = tj_build_kernel(c, p, 0, config, nconfig, dims, ndims);
    cr_assert(tile && !tj_optimize(tile, 0), "%s", tj_diag_render(c));
    tj_kernel *spec = tj_jit_specialize(tile, args, 2);
    cr_assert(spec, "%s", tj_diag_render(c));
    return spec;
}

static tj_cache_key_parts base_parts(const tj_kernel *ir)
{
    return (tj_cache_key_parts){.ir = ir, .target = "ptx", .arch = "sm_90a", .driver_version = 13000,
                                .options = "pipeline=default"};
}

static tj_cache_key key_of_parts(const tj_cache_key_parts *parts)
{
    tj_cache_key k;
    tj_cache_key_compute(parts, &k);
    return k;
}

static tj_cache_key key_of(const variant *v)
{
    tj_ctx *c = tj_ctx_new();
    tj_cache_key_parts parts = base_parts(specialized(c, v));
    tj_cache_key k = key_of_parts(&parts);
    tj_ctx_free(c);
    return k;
}

Test(kernel_key, stable_for_the_same_input)
{
    tj_cache_key a = key_of(&base), b = key_of(&base);
    cr_expect(tj_cache_key_equal(&a, &b));
}

Test(kernel_key, comments_and_layout_of_the_source_do_not_matter)
{
    variant v = base;
    v.source = softmax_commented;
    tj_cache_key a = key_of(&base), b = key_of(&v);
    cr_expect(tj_cache_key_equal(&a, &b));
}

Test(kernel_key, unspecialized_sizes_and_pointers_do_not_matter)
{
    variant v = base;
    v.m = 128; /* M is no tile extent: not specialized (and still divisible by 16) */
    tj_cache_key a = key_of(&base), b = key_of(&v);
    cr_expect(tj_cache_key_equal(&a, &b));
    v = base;
    v.misalign = 4; /* 16 bytes on: still aligned */
    b = key_of(&v);
    cr_expect(tj_cache_key_equal(&a, &b));
}

Test(kernel_key, the_computation_changes_it)
{
    variant v = base;
    v.source = softmax_changed;
    tj_cache_key a = key_of(&base), b = key_of(&v);
    cr_expect_not(tj_cache_key_equal(&a, &b));
}

Test(kernel_key, tile_parameters_change_it)
{
    variant v = base;
    v.params[0].value = 2048;
    tj_cache_key a = key_of(&base), b = key_of(&v);
    cr_expect_not(tj_cache_key_equal(&a, &b), "BLOCK");
    v = base;
    v.params[1].value = 8;
    b = key_of(&v);
    cr_expect_not(tj_cache_key_equal(&a, &b), "warps");
}

Test(kernel_key, specialization_changes_it)
{
    tj_cache_key a = key_of(&base);
    variant v = base;
    v.n = 1000; /* no longer divisible by 16 */
    v.stride = 1000;
    tj_cache_key b = key_of(&v);
    cr_expect_not(tj_cache_key_equal(&a, &b), "dim divisibility");
    v = base;
    v.misalign = 1; /* 4 bytes off 16 */
    b = key_of(&v);
    cr_expect_not(tj_cache_key_equal(&a, &b), "alignment");
    v = base;
    v.stride = 1000; /* rows 1000 apart: the stride is no multiple of 16 */
    v.n = 1000;
    tj_cache_key c = key_of(&v);
    v.stride = 1008;
    tj_cache_key d = key_of(&v);
    cr_expect_not(tj_cache_key_equal(&c, &d), "stride divisibility");
}

Test(kernel_key, each_part_changes_it)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *ir = specialized(c, &base);
    tj_cache_key_parts p = base_parts(ir);
    tj_cache_key k0 = key_of_parts(&p);
    struct {
        const char *what;
        tj_cache_key_parts parts;
    } changes[8];
    int n = 0;
    for (int i = 0; i < 8; i++)
        changes[i].parts = p;
    changes[n].what = "target", changes[n++].parts.target = "cpu";
    changes[n].what = "arch", changes[n++].parts.arch = "sm_80";
    changes[n].what = "ptx isa", changes[n++].parts.ptx_isa = "8.5";
    changes[n].what = "driver", changes[n++].parts.driver_version = 13010;
    changes[n].what = "options", changes[n++].parts.options = "pipeline=other";
    changes[n].what = "version", changes[n++].parts.tilejit_version = "0.0.1";
    changes[n].what = "no options", changes[n++].parts.options = NULL;
    for (int i = 0; i < n; i++) {
        tj_cache_key k = key_of_parts(&changes[i].parts);
        cr_expect_not(tj_cache_key_equal(&k0, &k), "%s", changes[i].what);
        for (int j = 0; j < i; j++) {
            tj_cache_key other = key_of_parts(&changes[j].parts);
            cr_expect_not(tj_cache_key_equal(&other, &k), "%s vs %s", changes[i].what, changes[j].what);
        }
    }
    p.tilejit_version = TILEJIT_VERSION;
    tj_cache_key same = key_of_parts(&p);
    cr_expect(tj_cache_key_equal(&k0, &same), "NULL means this version");
    tj_ctx_free(c);
}

/* ---- requests seen before ---------------------------------------------------------- */

static void *find_request(tj_requests *r, const char *src, int64_t n, const char *arch, int mode, int remember)
{
    static int value;
    tj_arg args[2];
    two_tensors(args, 64, n, n, 0);
    tj_binding params[] = {{"BLOCK", 2048}};
    tj_compile_request req = {.file = "a.tj", .source = src, .len = strlen(src), .kernel = "softmax",
                              .params = params, .nparams = 1, .args = args, .nargs = 2};
    tj_jit_request seen;
    void *v = tj_requests_find(r, &req, arch, mode, &seen);
    if (remember)
        tj_requests_remember(r, &seen, &req, &value);
    return v;
}

Test(requests, found_again_only_when_everything_is_the_same)
{
    tj_requests *r = tj_requests_new(16, NULL, NULL);
    cr_assert(r);
    cr_expect_null(find_request(r, softmax_src, 1024, "sm_90a", 0, 1));
    cr_expect_not_null(find_request(r, softmax_src, 1024, "sm_90a", 0, 0));
    cr_expect_null(find_request(r, softmax_src, 1008, "sm_90a", 0, 0), "shape");
    cr_expect_null(find_request(r, softmax_commented, 1024, "sm_90a", 0, 0), "another source text");
    cr_expect_null(find_request(r, softmax_changed, 1024, "sm_90a", 0, 0), "another source text");
    cr_expect_null(find_request(r, softmax_src, 1024, "sm_80", 0, 0), "arch");
    cr_expect_null(find_request(r, softmax_src, 1024, "sm_90a", 2, 0), "tuning mode");
    /* the same first and last 64 bytes and length: told apart by comparing */
    char a[200], b[200];
    memset(a, ' ', sizeof a);
    memcpy(b, a, sizeof b);
    a[100] = '#';
    b[100] = '%';
    a[199] = b[199] = 0;
    cr_expect_null(find_request(r, a, 1024, "sm_90a", 0, 1));
    cr_expect_null(find_request(r, b, 1024, "sm_90a", 0, 0), "a slot collision is no hit");
    cr_expect_not_null(find_request(r, a, 1024, "sm_90a", 0, 0));
    tj_requests_free(r);
}

/* ---- tj_jit's memory cache on the cpu ------------------------------------------------- */

static tj_fn *compile_warps(tj_jit *j, const char *src, int64_t block, int64_t warps, tj_arg *args)
{
    tj_binding params[] = {{"BLOCK", block}, {"warps", warps}};
    tj_compile_request req = {.file = "s.tj", .source = src, .len = strlen(src), .kernel = "softmax",
                              .params = params, .nparams = warps ? 2 : 1, .args = args, .nargs = 2};
    tj_rt_error err = {{0}};
    tj_fn *f = tj_jit_compile(j, &req, &err);
    cr_assert(f, "%s", err.msg);
    return f;
}

static tj_fn *compile(tj_jit *j, const char *src, int64_t block, tj_arg *args)
{
    return compile_warps(j, src, block, 0, args);
}

static void check_softmax_rows(const tj_arg *args)
{
    const float *y = args[1].tensor.data;
    int64_t m = args[1].tensor.shape[0], n = args[1].tensor.shape[1];
    for (int64_t r = 0; r < m; r++) {
        double sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += y[r * n + i];
        cr_assert_float_eq(sum, 1.0, 1e-4, "row %lld sums to %f", (long long)r, sum);
    }
}

Test(jit_memory, same_request_and_same_kernel_share_one_function)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err); /* memory caches only: no native objects on disk */
    cr_assert(j, "%s", err.msg);
    tj_arg args[2];
    two_tensors(args, 4, 1000, 1000, 0);
    for (int i = 0; i < 4000; i++)
        xbuf[i] = (float)(i % 7);
    tj_fn *f1 = compile(j, softmax_src, 1024, args);
    tj_fn *f2 = compile(j, softmax_src, 1024, args);
    tj_fn *f3 = compile(j, softmax_commented, 1024, args);
    tj_fn *f4 = compile(j, softmax_src, 2048, args);
    cr_expect_eq(f1, f2, "the same request");
    cr_expect_eq(f1, f3, "the same kernel from another text");
    cr_expect_neq(f1, f4, "another configuration");
    tj_jit_stats st;
    tj_jit_get_stats(j, &st);
    cr_expect_eq(st.compiles, 2);
    cr_expect_eq(st.memory_hits, 2);
    cr_expect_eq(st.disk_hits, 0);
    cr_assert_eq(tj_fn_launch(f3, args, 2, NULL, &err), 0, "%s", err.msg);
    check_softmax_rows(args);
    tj_fn_release(f1);
    tj_fn_release(f2);
    tj_jit_close(j);
}

Test(jit_memory, evicted_functions_live_while_held)
{
    setenv("TILEJIT_CACHE_MEM", "2", 1);
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err); /* memory caches only: no native objects on disk */
    cr_assert(j, "%s", err.msg);
    tj_arg args[2];
    two_tensors(args, 4, 1000, 1000, 0);
    tj_fn *held = compile(j, softmax_src, 1024, args);
    /* three other kernels push `held` out of both memory caches' two slots */
    tj_fn_release(compile_warps(j, softmax_src, 2048, 4, args));
    tj_fn_release(compile_warps(j, softmax_src, 2048, 8, args));
    tj_fn_release(compile_warps(j, softmax_src, 1024, 8, args));
    cr_assert_eq(tj_fn_launch(held, args, 2, NULL, &err), 0, "%s", err.msg);
    check_softmax_rows(args);
    tj_fn *again = compile(j, softmax_src, 1024, args);
    tj_jit_stats st;
    tj_jit_get_stats(j, &st);
    cr_expect_eq(st.compiles, 5, "recompiled after eviction");
    tj_fn_release(again);
    tj_fn_release(held);
    tj_jit_close(j);
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct thread_job {
    tj_jit *j;
    int block;
    int failures;
} thread_job;

static void *compile_and_run(void *arg)
{
    thread_job *t = arg;
    float x[4 * 1000], y[4 * 1000];
    for (int i = 0; i < 4000; i++)
        x[i] = (float)(i % 5);
    tj_arg args[2];
    for (int i = 0; i < 2; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].is_tensor = 1;
        args[i].tensor = (tj_tensor){i ? y : x, TJ_DT_F32, 2, {4, 1000}, {1000, 1}};
    }
    tj_binding params[] = {{"BLOCK", t->block}};
    tj_compile_request req = {.file = "s.tj", .source = softmax_src, .len = strlen(softmax_src),
                              .kernel = "softmax", .params = params, .nparams = 1, .args = args, .nargs = 2};
    for (int r = 0; r < 50; r++) {
        tj_rt_error err = {{0}};
        tj_fn *f = tj_jit_compile(t->j, &req, &err);
        if (!f || tj_fn_launch(f, args, 2, NULL, &err)) {
            t->failures++;
            continue;
        }
        double sum = 0;
        for (int i = 0; i < 1000; i++)
            sum += y[i];
        t->failures += sum < 0.999 || sum > 1.001;
        tj_fn_release(f);
    }
    return NULL;
}

Test(jit_memory, threads_compiling_the_same_kernels)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_INTERP, 0, &err); /* memory caches only: no native objects on disk */
    cr_assert(j, "%s", err.msg);
    enum { N = 8 };
    pthread_t threads[N];
    thread_job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (thread_job){j, i % 2 ? 1024 : 2048, 0};
        pthread_create(&threads[i], NULL, compile_and_run, &jobs[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(threads[i], NULL);
        cr_expect_eq(jobs[i].failures, 0, "thread %d", i);
    }
    tj_jit_stats st;
    tj_jit_get_stats(j, &st);
    cr_expect_leq(st.compiles, N, "threads racing on a miss may each compile, but once cached none does");
    cr_expect_geq(st.memory_hits, N * 50 - N);
    tj_jit_close(j);
}
