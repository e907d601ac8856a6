/* The cache and the tuner on a CUDA device (docs/cache.md; results in
 * bench/RESULTS.md):
 *
 *   cache_bench EXAMPLES_DIR
 *
 * - cold compile of each DSL.md example, DSL -> PTX -> cubin -> loaded,
 *   with the time of each step (front end and specialization, lowering and
 *   PTX, nvJitLink, module load);
 * - host cost of a memory-cache hit (tj_jit_compile of a request seen
 *   before) plus tj_fn_launch, and of each alone (target <= 3.5 us);
 * - a disk hit to a launchable kernel in a fresh process (target <= 1 ms),
 *   with the tile parameters given and with the stored tuning winner
 *   looked up;
 * - tuning the softmax and matmul spaces of DSL.md: first run (all timed)
 *   and second run (all stored) (target < 2 s for 24 configurations).
 *
 * Medians over repetitions, CLOCK_MONOTONIC. Without a GPU it prints
 * "SKIP: ..." and exits 77. The cache lives in a scratch directory. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/cache_jit.h"
#include "bench_util.h"
#include "tilejit/jit.h"
#include "tilejit/tilejit.h"

enum { MAX_PARAMS = 6, COLD_REPS = 5, CHILD_REPS = 7, HIT_BATCH = 500, HIT_BATCHES = 20 };

typedef struct param_spec {
    tj_dtype dt;
    int rank; /* 0: a scalar */
    int64_t shape[4];
} param_spec;

typedef struct example {
    const char *file, *kernel;
    int nparams;
    param_spec p[MAX_PARAMS];
} example;

#define F32 TJ_DT_F32
#define BF16 TJ_DT_BF16
static const example examples[] = {
    {"add.tj", "add", 3, {{F32, 1, {1 << 24}}, {F32, 1, {1 << 24}}, {F32, 1, {1 << 24}}}},
    {"softmax.tj", "softmax", 2, {{F32, 2, {4096, 1024}}, {F32, 2, {4096, 1024}}}},
    {"matmul.tj", "matmul", 3, {{BF16, 2, {4096, 4096}}, {BF16, 2, {4096, 4096}}, {BF16, 2, {4096, 4096}}}},
    {"attention.tj", "attention", 5,
     {{BF16, 4, {4, 32, 4096, 128}}, {BF16, 4, {4, 32, 4096, 128}}, {BF16, 4, {4, 32, 4096, 128}},
      {BF16, 4, {4, 32, 4096, 128}}, {F32, 0, {0}}}},
    {"embed.tj", "embed", 3, {{F32, 2, {65536, 256}}, {TJ_DT_I32, 1, {65536}}, {F32, 2, {65536, 256}}}},
    {"recurrence.tj", "recurrence", 3, {{F32, 2, {1024, 1024}}, {F32, 2, {1024, 1024}}, {F32, 2, {1024, 1024}}}},
};
enum { NEXAMPLES = sizeof examples / sizeof *examples };

/* Contiguous arguments; data pointers as given (NULL: compile only). */
static void make_args(const example *e, void *const *data, tj_arg *args)
{
    for (int i = 0; i < e->nparams; i++) {
        const param_spec *p = &e->p[i];
        memset(&args[i], 0, sizeof args[i]);
        args[i].is_tensor = p->rank > 0;
        args[i].scalar.f = 0.125;
        if (!p->rank)
            continue;
        tj_tensor *t = &args[i].tensor;
        *t = (tj_tensor){data ? data[i] : (void *)(uintptr_t)0x100000, p->dt, p->rank, {0}, {0}};
        int64_t stride = 1;
        for (int d = p->rank; d-- > 0;) {
            t->shape[d] = p->shape[d];
            t->strides[d] = stride;
            stride *= p->shape[d];
        }
    }
}

static tj_compile_request request(const example *e, const char *src, size_t len, const tj_arg *args)
{
    return (tj_compile_request){.file = e->file, .source = src, .len = len, .kernel = e->kernel, .args = args,
                                .nargs = (uint32_t)e->nparams};
}

static tj_jit *open_jit(tj_tune_mode mode)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CUDA, 0, &err);
    if (!j) {
        printf("SKIP: %s\n", err.msg);
        exit(77);
    }
    tj_jit_set_tune_mode(j, mode);
    return j;
}

/* ---- cold compiles ------------------------------------------------------------------- */

typedef struct steps {
    double front, ptx, link, load;
} steps;

/* The pipeline tj_jit_compile runs on a miss, step by step. */
static int compile_steps(tj_cuda *cu, tj_nvjitlink *l, const example *e, const char *src, size_t len,
                         const tj_arg *args, steps *s)
{
    tj_ctx *c = tj_ctx_new();
    double t0 = bench_now_us();
    tj_program *p = tj_parse_program(c, e->file, src, len);
    int k = p ? tj_program_find_kernel(p, e->kernel) : -1;
    tj_binding dims[16], *config;
    uint32_t ndims = 0, nconfig;
    const tj_param *params;
    uint32_t np = k >= 0 ? tj_kernel_params(p, k, &params) : 0;
    for (uint32_t i = 0; i < np; i++)
        for (int d = 0; d < params[i].rank && ndims < 16; d++)
            if (params[i].dim_names[d])
                dims[ndims++] = (tj_binding){params[i].dim_names[d], args[i].tensor.shape[d]};
    tj_kernel *tile = k < 0 || tj_select_config(c, p, k, NULL, 0, dims, ndims, &config, &nconfig)
                          ? NULL
                          : tj_build_kernel(c, p, k, config, nconfig, dims, ndims);
    int bad = !tile || tj_optimize(tile, 0);
    tj_kernel *simt = bad ? NULL : tj_kernel_clone(tile);
    tj_pipeline_options o = {.args = args, .nargs = (uint32_t)e->nparams};
    bad = bad || tj_pipeline_run(&simt, TJ_STEP_FACTS, TJ_STEP_KEY, &o);
    double t1 = bench_now_us();
    tj_buf ptx = {0};
    bad = bad || tj_pipeline_run(&simt, TJ_STEP_KEY, TJ_STEP_END, NULL) || tj_emit_ptx(simt, "sm_90a", &ptx);
    double t2 = bench_now_us();
    void *cubin = NULL;
    size_t size = 0;
    tj_rt_error err = {{0}};
    bad = bad || tj_nvjitlink_compile(l, ptx.data, ptx.len, "sm_90a", NULL, 0, &cubin, &size, NULL, &err);
    double t3 = bench_now_us();
    tj_cuda_module *m = bad ? NULL : tj_cuda_module_load_cubin(cu, cubin, size, e->kernel, &err);
    double t4 = bench_now_us();
    if (bad || !m)
        fprintf(stderr, "%s: %s%s\n", e->kernel, tj_diag_render(c), err.msg);
    if (m)
        tj_cuda_module_unload(m);
    *s = (steps){t1 - t0, t2 - t1, t3 - t2, t4 - t3};
    free(cubin);
    tj_buf_free(&ptx);
    tj_ctx_free(c);
    return bad || !m;
}

static void bench_cold(const char *dir)
{
    tj_rt_error err = {{0}};
    tj_jit *j = open_jit(TJ_TUNE_OFF);
    tj_nvjitlink *l = tj_nvjitlink_open(&err);
    if (!l) {
        printf("cold compile: skipped: %s\n", err.msg);
        tj_jit_close(j);
        return;
    }
    printf("cold compile, DSL -> PTX -> cubin -> loaded (us, median of %d; sm_90a)\n", COLD_REPS);
    printf("  %-11s %10s %10s %10s %10s %10s %12s\n", "kernel", "front end", "SIMT+PTX", "nvJitLink", "load",
           "sum", "tj_jit cold");
    for (int i = 0; i < NEXAMPLES; i++) {
        const example *e = &examples[i];
        size_t len;
        char *src = bench_read_file(dir, e->file, &len);
        tj_arg args[MAX_PARAMS];
        make_args(e, NULL, args);
        double f[COLD_REPS], p[COLD_REPS], k[COLD_REPS], d[COLD_REPS], total[COLD_REPS];
        int bad = !src;
        for (int r = 0; r < COLD_REPS && !bad; r++) {
            steps s;
            bad = compile_steps(tj_jit_cuda(j), l, e, src, len, args, &s);
            f[r] = s.front, p[r] = s.ptx, k[r] = s.link, d[r] = s.load;
            /* the same through the API, in a fresh jit without a disk cache */
            setenv("TILEJIT_CACHE", "off", 1);
            tj_jit *cold = open_jit(TJ_TUNE_OFF);
            unsetenv("TILEJIT_CACHE");
            tj_compile_request req = request(e, src, len, args);
            double t0 = bench_now_us();
            tj_fn *fn = tj_jit_compile(cold, &req, &err);
            total[r] = bench_now_us() - t0;
            bad |= !fn;
            tj_jit_close(cold);
        }
        if (bad) {
            printf("  %-11s FAILED %s\n", e->kernel, err.msg);
        } else {
            double mf = bench_median(f, COLD_REPS), mp = bench_median(p, COLD_REPS), mk = bench_median(k, COLD_REPS),
                   md = bench_median(d, COLD_REPS);
            printf("  %-11s %10.0f %10.0f %10.0f %10.0f %10.0f %12.0f\n", e->kernel, mf, mp, mk, md,
                   mf + mp + mk + md, bench_median(total, COLD_REPS));
        }
        free(src);
    }
    tj_nvjitlink_close(l);
    tj_jit_close(j);
}

/* ---- memory-cache hit plus launch ------------------------------------------------------------ */

/* Per-call host time of `what` over batches of HIT_BATCH calls, each
 * batch followed by a synchronization (so the launch queue never fills). */
static double per_call_us(tj_jit *j, const tj_compile_request *req, tj_fn *held, const tj_arg *args, int compile,
                          int launch)
{
    double t[HIT_BATCHES];
    tj_rt_error err = {{0}};
    for (int b = 0; b < HIT_BATCHES; b++) {
        double t0 = bench_now_us();
        for (int i = 0; i < HIT_BATCH; i++) {
            tj_fn *f = compile ? tj_jit_compile(j, req, &err) : held;
            if (!f || (launch && tj_fn_launch(f, args, req->nargs, NULL, &err))) {
                printf("  FAILED: %s\n", err.msg);
                return -1;
            }
            if (compile)
                tj_fn_release(f);
        }
        t[b] = (bench_now_us() - t0) / HIT_BATCH;
        tj_cuda_synchronize(tj_jit_cuda(j), NULL);
    }
    return bench_median(t, HIT_BATCHES);
}

/* The floor: cuLaunchKernel through tj_cuda_launch, parameters marshalled once. */
static double raw_launch_us(tj_jit *j, tj_fn *f, const tj_arg *args)
{
    static tj_cuda_params params;
    tj_rt_error err = {{0}};
    tj_cuda_launch_dims d = {.grid = {1, 1, 1}, .block = {tj_fn_threads(f), 1, 1}, .shared_bytes = tj_fn_smem_bytes(f)};
    if (tj_cuda_marshal(tj_fn_tile_ir(f), args, 3, &params, &err))
        return -1;
    double t[HIT_BATCHES];
    for (int b = 0; b < HIT_BATCHES; b++) {
        double t0 = bench_now_us();
        for (int i = 0; i < HIT_BATCH; i++)
            if (tj_cuda_launch(tj_fn_cuda_function(f), &d, params.ptrs, &err))
                return -1;
        t[b] = (bench_now_us() - t0) / HIT_BATCH;
        tj_cuda_synchronize(tj_jit_cuda(j), NULL);
    }
    return bench_median(t, HIT_BATCHES);
}

static void bench_hit(const char *dir)
{
    static const example small_add = {"add.tj", "add", 3, {{F32, 1, {1024}}, {F32, 1, {1024}}, {F32, 1, {1024}}}};
    tj_jit *j = open_jit(TJ_TUNE_STORED);
    tj_rt_error err = {{0}};
    size_t len;
    char *src = bench_read_file(dir, small_add.file, &len);
    void *data[3];
    for (int i = 0; i < 3; i++)
        data[i] = tj_cuda_malloc(tj_jit_cuda(j), 1024 * 4, &err);
    tj_arg args[3];
    make_args(&small_add, data, args);
    tj_compile_request req = request(&small_add, src, len, args);
    tj_fn *f = src ? tj_jit_compile(j, &req, &err) : NULL;
    if (!f) {
        printf("memory hit: FAILED: %s\n", err.msg);
    } else {
        double hit_launch = per_call_us(j, &req, f, args, 1, 1), hit = per_call_us(j, &req, f, args, 1, 0),
               launch = per_call_us(j, &req, f, args, 0, 1), raw = raw_launch_us(j, f, args);
        printf("\nhost cost, vector add of 1024 elements (us per call, median of %d batches of %d)\n", HIT_BATCHES,
               HIT_BATCH);
        printf("  memory-cache hit + launch  %6.2f   (target <= 3.5)\n", hit_launch);
        printf("  memory-cache hit alone     %6.2f\n", hit);
        printf("  launch of a held tj_fn     %6.2f\n", launch);
        printf("  tj_cuda_launch, marshalled %6.2f   (the driver's cuLaunchKernel and little else)\n", raw);
    }
    for (int i = 0; i < 3; i++)
        tj_cuda_free(tj_jit_cuda(j), data[i], NULL);
    free(src);
    tj_jit_close(j);
}

/* ---- a disk hit in a fresh process -------------------------------------------------------------- */

/* The child: one compile of example i that the disk cache holds; prints
 * its time in us (tj_jit_open, the driver's start, is not counted). */
static int child_compile(const char *dir, int i, int mode)
{
    const example *e = &examples[i];
    tj_jit *j = open_jit((tj_tune_mode)mode);
    size_t len;
    char *src = bench_read_file(dir, e->file, &len);
    tj_arg args[MAX_PARAMS];
    make_args(e, NULL, args);
    tj_compile_request req = request(e, src, len, args);
    tj_rt_error err = {{0}};
    double t0 = bench_now_us();
    tj_fn *f = src ? tj_jit_compile(j, &req, &err) : NULL;
    double t = bench_now_us() - t0;
    tj_jit_stats st;
    tj_jit_get_stats(j, &st);
    if (f)
        printf("%.1f %llu %llu\n", t, (unsigned long long)st.disk_hits, (unsigned long long)st.compiles);
    else
        printf("-1 0 0 %s\n", err.msg);
    tj_jit_close(j);
    return f ? 0 : 1;
}

/* The child, step by step: front end and key, reading the entry, loading
 * the cubin (what a disk hit costs, where the time goes). */
static int child_steps(const char *dir, int i)
{
    const example *e = &examples[i];
    tj_jit *j = open_jit(TJ_TUNE_OFF);
    tj_cuda_props props;
    tj_cuda_device_props(tj_jit_cuda(j), 0, &props, NULL);
    tj_jit_cache *jc = tj_jit_cache_new(&props, NULL, NULL);
    size_t len;
    char *src = bench_read_file(dir, e->file, &len);
    tj_arg args[MAX_PARAMS];
    make_args(e, NULL, args);
    tj_ctx *c = tj_ctx_new();
    double t0 = bench_now_us();
    tj_program *p = tj_parse_program(c, e->file, src, len);
    tj_binding *dims, *config;
    uint32_t nconfig, ndims = tj_dims_from_args(c, p, 0, args, (uint32_t)e->nparams, &dims);
    tj_select_config(c, p, 0, NULL, 0, dims, ndims, &config, &nconfig);
    tj_kernel *tile = tj_build_kernel(c, p, 0, config, nconfig, dims, ndims);
    tj_optimize(tile, 0);
    tj_kernel *spec = tj_jit_specialize(tile, args, (uint32_t)e->nparams);
    tj_cache_key k;
    tj_jit_kernel_key(jc, spec, "sm_90a", 0, &k);
    double t1 = bench_now_us();
    tj_jit_binary bin;
    int miss = tj_jit_cache_lookup(jc, &k, spec, &bin);
    double t2 = bench_now_us();
    tj_cuda_module *m = miss ? NULL : tj_cuda_module_load_cubin(tj_jit_cuda(j), bin.cubin, bin.cubin_size, "k", NULL);
    double t3 = bench_now_us();
    printf("%.1f %.1f %.1f %zu %zu\n", t1 - t0, t2 - t1, t3 - t2, miss ? 0 : bin.entry.ptx_len,
           miss ? 0 : bin.cubin_size);
    if (m)
        tj_cuda_module_unload(m);
    if (!miss)
        tj_jit_binary_free(&bin);
    tj_ctx_free(c);
    tj_jit_cache_free(jc);
    free(src);
    tj_jit_close(j);
    return 0;
}

/* Runs this program as a child; returns its time, -1 on failure. */
static double spawn_child(const char *self, const char *dir, int i, int mode, int *disk_hit)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --child %d %d", self, dir, i, mode);
    FILE *p = popen(cmd, "r");
    double t = -1;
    unsigned long long hits = 0, compiles = 0;
    if (!p || fscanf(p, "%lf %llu %llu", &t, &hits, &compiles) != 3)
        t = -1;
    if (p)
        pclose(p);
    *disk_hit = hits == 1 && compiles == 0;
    return t;
}

static void bench_disk(const char *self, const char *dir)
{
    printf("\ndisk hit to a launchable kernel in a fresh process (us, median of %d processes; target <= 1000)\n",
           CHILD_REPS);
    printf("  %-11s %14s %18s\n", "kernel", "params fixed", "tuned winner looked up");
    for (int i = 0; i < NEXAMPLES; i++) {
        double t[2][CHILD_REPS];
        int ok[2] = {1, 1};
        for (int mode = 0; mode < 2; mode++) {
            tj_tune_mode m = mode ? TJ_TUNE_STORED : TJ_TUNE_OFF;
            int hit;
            spawn_child(self, dir, i, m, &hit); /* fills the cache */
            for (int r = 0; r < CHILD_REPS; r++) {
                t[mode][r] = spawn_child(self, dir, i, m, &hit);
                ok[mode] &= t[mode][r] >= 0 && hit;
            }
        }
        printf("  %-11s", examples[i].kernel);
        for (int mode = 0; mode < 2; mode++)
            if (ok[mode])
                printf(" %*.0f", mode ? 18 : 14, bench_median(t[mode], CHILD_REPS));
            else
                printf(" %*s", mode ? 18 : 14, "FAILED");
        char cmd[8192], steps[256] = "";
        snprintf(cmd, sizeof cmd, "'%s' '%s' --child %d steps", self, dir, i);
        FILE *p = popen(cmd, "r");
        if (p && fgets(steps, sizeof steps, p))
            steps[strcspn(steps, "\n")] = 0;
        if (p)
            pclose(p);
        printf("   (front end+key, read entry, load cubin (us), PTX and cubin bytes: %s)\n", steps);
    }
}

/* ---- tuning ------------------------------------------------------------------------------------------ */

static void tune_once(tj_cuda *cu, tj_cache *cache, const example *e, const char *src, size_t len, int run)
{
    tj_arg args[MAX_PARAMS];
    void *none[MAX_PARAMS] = {0}; /* random data */
    make_args(e, none, args);
    tj_rt_error err = {{0}};
    double t0 = bench_now_us();
    tj_tune_device *dev = tj_tune_device_cuda(cu, NULL, args, (uint32_t)e->nparams, &err);
    double t_dev = bench_now_us() - t0;
    tj_tune_request req = {.file = e->file, .source = src, .len = len, .kernel = e->kernel, .args = args,
                           .nargs = (uint32_t)e->nparams, .mode = TJ_TUNE_MISSING};
    tj_tune_report r;
    int rc = dev ? tj_tune(dev, cache, &req, &r, &err) : 1;
    if (rc) {
        printf("  %-9s run %d FAILED: %s\n", e->kernel, run, err.msg);
    } else {
        char best[160];
        const tj_tune_result *b = &r.results[r.best];
        tj_tune_config_text(b->config, b->nconfig, best, sizeof best);
        printf("  %-9s run %d %4u configs %4u built %4u timed  %7.3f s  (+%.2f s inputs)  best %s: %.1f us\n",
               e->kernel, run, r.nresults, r.built, r.timed, r.wall_seconds, t_dev * 1e-6, best,
               b->seconds * 1e6);
    }
    tj_tune_report_free(&r);
    tj_tune_device_free(dev);
}

static void bench_tune(const char *dir, const char *cache_dir)
{
    tj_jit *j = open_jit(TJ_TUNE_OFF); /* for the device */
    tj_cache_options o = {.dir = cache_dir};
    tj_cache *cache = tj_cache_open(&o);
    uint64_t removed;
    tj_cache_clear(cache, &removed);
    printf("\ntuning the DSL.md spaces (softmax 4096x1024 f32, matmul 4096^3 bf16)\n");
    for (int i = 1; i <= 2; i++) {
        size_t len;
        char *src = bench_read_file(dir, examples[i].file, &len);
        for (int run = 1; run <= 2 && src; run++)
            tune_once(tj_jit_cuda(j), cache, &examples[i], src, len, run);
        free(src);
    }
    tj_cache_close(cache);
    tj_jit_close(j);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[2], "--child"))
        return !strcmp(argv[4], "steps") ? child_steps(argv[1], atoi(argv[3]))
                                          : child_compile(argv[1], atoi(argv[3]), atoi(argv[4]));
    if (argc != 2) {
        fprintf(stderr, "usage: cache_bench EXAMPLES_DIR\n");
        return 2;
    }
    char cache_dir[] = "/tmp/tj-cache-bench-XXXXXX";
    if (!mkdtemp(cache_dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("TILEJIT_CACHE_DIR", cache_dir, 1);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    bench_cold(argv[1]);
    bench_hit(argv[1]);
    bench_tune(argv[1], cache_dir); /* stores the winners bench_disk looks up */
    bench_disk(self, argv[1]);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    return system(cmd) == 0 ? 0 : 1;
}
