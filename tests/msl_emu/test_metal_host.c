/* The Metal host runtime (runtime/metal.c, metal_launch.c) against the
 * mock Objective-C runtime (mock_objc.c), whose kernels run in the MSL
 * emulator: DSL.md kernels through tj_metal_run match the reference
 * interpreter, with buffers wrapping host memory and with copies; the
 * compiler's errors come back; pipelines come from the memory cache, then
 * from the binary archive of a second runtime; an unusable cache directory
 * degrades to memory only; launches from two threads at once; fast math is
 * off; the matrix-atom kernels run, the bfloat one compiled as MSL 3.1 (the
 * mock refuses bfloat in 3.0), the others as 3.0; and no Objective-C object
 * leaks or is released twice. */
#include "emu_util.h" /* first: it selects POSIX */

#include <pthread.h>

#include "emu_launch.h"
#include "lower_check.h"
#include "mma_case.h"
#include "mock_objc.h"
#include "tilejit/metal.h"

typedef struct kernel_case {
    const char *file, *kernel, *shapes, *scalars;
} kernel_case;

static const kernel_case cases[] = {
    {"add.tj", "add", "N=3000", ""},
    {"softmax.tj", "softmax", "M=16,N=1000", ""},
    {"matmul.tj", "matmul", "M=96,N=80,K=72", ""},
    {"embed.tj", "embed", "V=40,D=16,N=70", ""},
};

typedef struct prepared {
    lc_run run;
    lc_opts o;
    tj_kernel *tile;
} prepared;

static int prepare(const kernel_case *kc, prepared *p)
{
    char path[512];
    snprintf(path, sizeof path, "%.400s/examples/%.63s", eu_source_dir(), kc->file);
    char *src = eu_read_file(path);
    tj_ctx *c = p->run.c = tj_ctx_new();
    tj_program *prog = src ? tj_parse_program(c, kc->file, src, strlen(src)) : NULL;
    free(src);
    int ki = prog ? tj_program_find_kernel(prog, kc->kernel) : -1;
    if (ki < 0)
        return 0;
    p->o = lc_defaults();
    p->o.shapes = kc->shapes;
    p->o.scalars = kc->scalars;
    p->run.nparams = tj_kernel_params(prog, ki, &p->run.params);
    lc_make_args(&p->run, &p->o);
    tj_binding dims[LC_MAX_BIND], *config;
    uint32_t ndims = lc_bindings(c, kc->shapes, dims, LC_MAX_BIND), nconfig;
    if (!tj_select_config(c, prog, ki, NULL, 0, dims, ndims, &config, &nconfig))
        p->tile = tj_build_kernel(c, prog, ki, config, nconfig, dims, ndims);
    return p->tile && !tj_verify(p->tile);
}

static void release_prepared(prepared *p)
{
    lc_free(&p->run);
    tj_ctx_free(p->run.c);
}

/* Runs case kc through tj_metal_run and compares with the interpreter. */
static void check_case(tj_metal *m, const kernel_case *kc)
{
    prepared p = {0};
    tj_rt_error err = {{0}};
    if (!prepare(kc, &p)) {
        EU_CHECK(0, "%s: front end: %s", kc->kernel, tj_diag_render(p.run.c));
    } else {
        lc_reset(&p.run);
        EU_CHECK(!tj_interp_run(p.tile, p.run.ref, p.run.nparams), "%s: interpreter", kc->kernel);
        int rc = tj_metal_run(m, p.tile, p.run.simt, p.run.nparams, &err);
        EU_CHECK(rc == 0, "%s: tj_metal_run: %s", kc->kernel, err.msg);
        EU_CHECK(rc || lc_compare(&p.run, &p.o, kc->kernel), "%s: differs from the interpreter", kc->kernel);
        /* compiled once, launched again on fresh inputs: the same results */
        tj_metal_pipeline *pl;
        const tj_kernel *simt = tj_metal_compile(m, p.tile, p.run.simt, p.run.nparams, &pl, &err);
        lc_reset(&p.run);
        EU_CHECK(!tj_interp_run(p.tile, p.run.ref, p.run.nparams), "%s: interpreter", kc->kernel);
        rc = simt ? tj_metal_launch(m, pl, simt, p.run.simt, p.run.nparams, &err) : -1;
        EU_CHECK(rc == 0 && lc_compare(&p.run, &p.o, kc->kernel), "%s: compile + launch: %s", kc->kernel, err.msg);
    }
    release_prepared(&p);
}

static void check_compile_error(tj_metal *m)
{
    const char *bad = "#include <metal_stdlib>\nkernel void k(device float *p [[buffer(0)]]) { p[0] = nope; }\n";
    tj_rt_error err = {{0}};
    EU_CHECK(!tj_metal_pipeline_get(m, bad, strlen(bad), "k", 32, &err) && strstr(err.msg, "does not compile") &&
                 strstr(err.msg, "nope"),
             "a compile error carries the compiler's text: %s", err.msg);
    const char *good = "#include <metal_stdlib>\nkernel void k(device float *p [[buffer(0)]]) { p[0] = 1.0f; }\n";
    EU_CHECK(!tj_metal_pipeline_get(m, good, strlen(good), "other", 32, &err) && strstr(err.msg, "no kernel function"),
             "a missing function is reported: %s", err.msg);
}

/* The SIMT kernels of tests/lit/msl/mma.tjir through tj_metal_pipeline_get
 * and tj_metal_launch. */
static void check_mma(tj_metal *m)
{
    static mma_case mc;
    tj_ctx *c = tj_ctx_new();
    tj_kernel *ks[MC_KERNELS];
    int n = c ? mc_load(c, ks) : -1;
    EU_CHECK(n == MC_KERNELS, "the matrix-atom kernels: %d", n);
    for (int i = 0; i < n; i++) {
        tj_rt_error err = {{0}};
        char *msl = el_emit(ks[i]);
        tj_metal_pipeline *p = msl ? tj_metal_pipeline_get(m, msl, strlen(msl), ks[i]->name, ks[i]->nthreads, &err)
                                   : NULL;
        mc_prepare(&mc, ks[i], 0);
        int rc = p ? tj_metal_launch(m, p, ks[i], mc.args, 4, &err) : -1;
        EU_CHECK(rc == 0, "%s through the runtime: %s", ks[i]->name, err.msg);
        if (!rc && !mc_check(&mc, ks[i]->name))
            eu_failures++;
        free(msl);
    }
    tj_ctx_free(c);
}

typedef struct thread_job {
    tj_metal *m;
    const kernel_case *kc;
} thread_job;

static void *run_in_thread(void *arg)
{
    thread_job *j = arg;
    check_case(j->m, j->kc);
    return NULL;
}

int main(void)
{
    char cache[512];
    eu_work_path(cache, sizeof cache, "metal-cache");
    tj_rt_error err = {{0}};
    tj_metal *m = tj_metal_open(cache, &err);
    if (!m) {
        printf("FAIL: tj_metal_open: %s\n", err.msg);
        return 1;
    }
    printf("device: %s\n", tj_metal_device_name(m));
    enum { NCASES = sizeof cases / sizeof *cases };
    for (int i = 0; i < NCASES; i++)
        check_case(m, &cases[i]);
    check_case(m, &cases[1]); /* again: from the memory cache (each check compiles twice: NCASES + 2 hits) */
    tj_metal_stats st;
    tj_metal_get_stats(m, &st);
    EU_CHECK(st.compiles == NCASES && st.memory_hits == NCASES + 2 && st.archive_writes == NCASES,
             "first runtime: %llu compiles, %llu memory hits, %llu archives written (%s)",
             (unsigned long long)st.compiles, (unsigned long long)st.memory_hits,
             (unsigned long long)st.archive_writes, st.cache_note);
    check_compile_error(m);
    check_mma(m);
    mock_objc_refuse_nocopy(1); /* memory Metal will not wrap: copies, written back */
    check_case(m, &cases[0]);
    mock_objc_refuse_nocopy(0);
    pthread_t t[2];
    thread_job jobs[2] = {{m, &cases[0]}, {m, &cases[3]}};
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, run_in_thread, &jobs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    tj_metal_close(m);

    m = tj_metal_open(cache, &err); /* a second process, as it were: the archives */
    EU_CHECK(m != NULL, "reopen: %s", err.msg);
    if (m) {
        check_case(m, &cases[2]);
        tj_metal_get_stats(m, &st);
        EU_CHECK(st.archive_hits == 1 && st.archive_writes == 0, "second runtime: %llu archive hits, %llu writes",
                 (unsigned long long)st.archive_hits, (unsigned long long)st.archive_writes);
        tj_metal_close(m);
    }
    m = tj_metal_open("/proc/tilejit-no-such-dir", &err);
    EU_CHECK(m != NULL, "an unusable cache directory is not fatal: %s", err.msg);
    if (m) {
        check_case(m, &cases[0]);
        tj_metal_get_stats(m, &st);
        EU_CHECK(st.cache_note[0] && st.archive_writes == 0, "memory only, with a note: %s", st.cache_note);
        tj_metal_close(m);
    }
    mock_objc_counts mc;
    mock_objc_get_counts(&mc);
    printf("mock runtime: %ld compiles, %ld dispatches, %ld copied buffers, %ld archive reads\n", mc.compiles,
           mc.dispatches, mc.copies, mc.archive_reads);
    EU_CHECK(mc.live == 0 && mc.leaked == 0, "%ld Objective-C objects alive, %ld leaked", mc.live, mc.leaked);
    EU_CHECK(mc.fast_math_on == 0, "%ld libraries compiled with fast math", mc.fast_math_on);
    EU_CHECK(mc.msl_3_1 > 0 && mc.msl_3_1_unneeded == 0,
             "%ld libraries compiled as MSL 3.1, %ld of them without bfloat matrices", mc.msl_3_1,
             mc.msl_3_1_unneeded);
    EU_CHECK(mc.copies > 0 && mc.archive_reads > 0, "the copy and archive paths ran");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    EU_CHECK(system(cmd) == 0, "clean up %s", cache);
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
