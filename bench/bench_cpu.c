/* The native cpu back end (tilejit/cpu.h) timed: memory-bound kernels and
 * an f32 matmul (bench/cpu_numpy.py runs NumPy beside them and prints the
 * ratios), every example native against the interpreter, and the compile
 * time (LLVM -O2 and JIT link) of each kernel.
 *
 *   bench_cpu kernels|matmul|examples [EXAMPLES_DIR]
 *
 * Prints one line per figure: `kernel NAME BYTES SECONDS COMPILE_MS CPU_MS RUN_CPU_S`
 * (RUN_CPU_S: the CPU time of all threads per run),
 * `matmul CONFIG FLOPS SECONDS COMPILE_MS CPU_MS`, `example FILE KERNEL SHAPES
 * NATIVE_S INTERP_S COMPILE_MS CPU_MS NATIVE_CPU_S INTERP_CPU_S` (compile:
 * wall and thread CPU time; the last two: CPU time of all threads per run,
 * the least of 5 batches, which other processes on a busy machine inflate
 * much less than wall time). Threads: TILEJIT_CPU_THREADS, else every core.
 * A failed compile, launch or interpreter run is reported (its own
 * message) and ends the run with status 1. */
#define _DEFAULT_SOURCE /* madvise */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_util.h"
#include "tilejit/tilejit.h"
#include "tilejit/cpu.h"

enum { MAX_ARGS = 12 };

typedef struct bench_kernel {
    tj_ctx *c;
    tj_kernel *tile;  /* as built: the interpreter runs it */
    tj_kernel *spec;  /* optimized and specialized: compiled natively */
    tj_arg args[MAX_ARGS];
    uint32_t nargs;
    int64_t grid[3];
} bench_kernel;

static void fill(tj_tensor *t, uint64_t *rng)
{
    size_t n = 1;
    for (int a = 0; a < t->rank; a++)
        n *= (size_t)t->shape[a];
    for (size_t i = 0; i < n; i++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(*rng >> 11) / 9007199254740992.0 * 2 - 1;
        switch (t->dtype) {
        case TJ_DT_F32: ((float *)t->data)[i] = (float)u; break;
        case TJ_DT_BF16: ((uint16_t *)t->data)[i] = tj_f32_to_bf16((float)u); break;
        case TJ_DT_I32: ((int32_t *)t->data)[i] = (int32_t)((*rng >> 33) % 12); break;
        default: memset((char *)t->data + i * (size_t)tj_dtype_size(t->dtype), 0, (size_t)tj_dtype_size(t->dtype));
        }
    }
}

/* "A=1,B=2" into bindings; a malformed one counts as none (reported in c). */
static uint32_t bindings(tj_ctx *c, const char *s, tj_binding *out, uint32_t max)
{
    int64_t n = tj_bindings_parse(c, s, out, max);
    return n < 0 ? 0 : (uint32_t)n;
}

static double scalar_value(const char *scalars, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = scalars; s && *s;) {
        if (!strncmp(s, name, n) && s[n] == '=')
            return strtod(s + n + 1, NULL);
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
    return 0;
}

/* Tensor memory as NumPy allocates it: 64-byte aligned and, from 4 MiB
 * on, advised to use transparent huge pages (NumPy's own madvise), so both
 * sides of the comparison walk memory through the same kind of pages. */
static void *tensor_alloc(size_t bytes)
{
    enum { HUGE_PAGE = 2 << 20, ADVISE_FROM = 4 << 20 };
    size_t align = bytes >= ADVISE_FROM ? HUGE_PAGE : 64;
    void *p = aligned_alloc(align, (bytes + align - 1) / align * align);
#ifdef MADV_HUGEPAGE
    if (p && bytes >= ADVISE_FROM)
        madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    return p;
}

/* A kernel's source, or NULL, said on stderr. */
static char *read_source(const char *dir, const char *file)
{
    size_t len;
    char *src = bench_read_file(dir, file, &len);
    if (!src)
        fprintf(stderr, "bench_cpu: cannot read %s/%s\n", dir, file);
    return src;
}

/* Front end, random arguments, and the specialized copy for the cpu. */
static int build(bench_kernel *b, const char *src, const char *kernel, const char *shapes, const char *defines,
                 const char *scalars)
{
    tj_binding dims[16], defs[16], *config;
    uint32_t nconfig, ndims, ndefs;
    b->c = tj_ctx_new();
    tj_program *p = tj_parse_program(b->c, kernel, src, strlen(src));
    int k = p ? tj_program_find_kernel(p, kernel) : -1;
    ndims = bindings(b->c, shapes, dims, 16);
    ndefs = bindings(b->c, defines, defs, 16);
    if (k < 0 || tj_select_config(b->c, p, k, defs, ndefs, dims, ndims, &config, &nconfig) ||
        !(b->tile = tj_build_kernel(b->c, p, k, config, nconfig, dims, ndims))) {
        fprintf(stderr, "%s: %s", kernel, tj_diag_render(b->c));
        return -1;
    }
    uint64_t rng = 42;
    const tj_param *params;
    uint32_t nparams = tj_kernel_params(p, k, &params);
    if (nparams > MAX_ARGS) { /* b->nargs stays 0: release frees nothing */
        fprintf(stderr, "%s: %u parameters, bench_cpu takes at most %d\n", kernel, nparams, MAX_ARGS);
        return -1;
    }
    for (uint32_t i = 0; i < nparams; i++) {
        const tj_param *pp = &params[i];
        if (!pp->rank) {
            double v = scalar_value(scalars, pp->name);
            b->args[i] = tj_dtype_is_float(pp->dtype) ? (tj_arg){.scalar.f = v} : (tj_arg){.scalar.i = (int64_t)v};
            continue;
        }
        int64_t shape[TJ_MAX_RANK];
        size_t n = 1;
        for (int a = 0; a < pp->rank; a++) {
            shape[a] = pp->dim_sizes[a];
            for (uint32_t d = 0; pp->dim_names[a] && d < ndims; d++)
                if (!strcmp(dims[d].name, pp->dim_names[a]))
                    shape[a] = dims[d].value;
            n *= (size_t)shape[a];
        }
        void *data = tensor_alloc(n * (size_t)tj_dtype_size(pp->dtype));
        if (!data) {
            fprintf(stderr, "%s: no memory for %s (%zu elements)\n", kernel, pp->name, n);
            b->nargs = i; /* what release frees */
            return -1;
        }
        b->args[i] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(data, pp->dtype, pp->rank, shape)};
        fill(&b->args[i].tensor, &rng);
    }
    b->nargs = nparams;
    b->spec = tj_kernel_clone(b->tile);
    tj_pipeline_options po = {.args = b->args, .nargs = b->nargs};
    if (tj_pipeline_run(&b->spec, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_PREFETCH, &po) ||
        tj_eval_grid(b->spec, b->args, b->nargs, b->grid)) {
        fprintf(stderr, "%s: %s", kernel, tj_diag_render(b->c));
        return -1;
    }
    return 0;
}

static void release(bench_kernel *b)
{
    for (uint32_t i = 0; i < b->nargs; i++)
        if (b->args[i].is_tensor)
            free(b->args[i].tensor.data);
    tj_ctx_free(b->c);
}

/* The CPU time of every thread of the process, in seconds. */
static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Warm-up before timing: runs for at least WARM_US of wall time (and
 * once). On Intel's AVX-512 cores, vector code right after scalar code
 * (the compile) runs slow for a few hundred microseconds while the core
 * changes its frequency licence: add.tj took 1.8 us a launch for its
 * first ~50 launches after the compile and 0.5 us after 300 us of
 * anything busy (a 1 ms sleep did not help), which put the short
 * examples' wall medians at 2-4 times their CPU-time figures. Both
 * sides, native and interpreter, warm up the same way. */
enum { WARM_US = 2000 };

static int warm_up(int (*run)(void *), void *p)
{
    double t0 = bench_now_us();
    do
        if (run(p))
            return -1;
    while (bench_now_us() - t0 < WARM_US);
    return 0;
}

/* One native kernel and its arguments; err: the first failed launch's
 * message, reported as it is (the launch is not repeated to find out). */
typedef struct native_run {
    tj_cpu_fn *f;
    bench_kernel *b;
    char err[256];
} native_run;

static int run_native_once(void *p);
static int run_interp_once(void *p);

/* The median of `reps` runs after the warm-up, in seconds; NAN, with the
 * failed launch's message on stderr, when a run fails (a failed launch
 * returns at once: timing it would be bogus). *cpu_s (may be NULL): the
 * median CPU time the threads spent per run, which other processes on a
 * busy machine do not inflate. */
static double time_native(native_run *n, int reps, double *cpu_s)
{
    double t[64], c[64];
    reps = reps < 64 ? reps : 64;
    if (warm_up(run_native_once, n)) {
        fprintf(stderr, "bench_cpu: %s: %s\n", n->b->spec->name, n->err);
        return NAN;
    }
    for (int i = 0; i < reps; i++) {
        double c0 = cpu_s ? process_cpu_s() : 0, t0 = bench_now_us(); /* a CPU clock read is a syscall: outside */
        int rc = run_native_once(n);
        double t1 = bench_now_us(), c1 = cpu_s ? process_cpu_s() : 0;
        if (rc) {
            fprintf(stderr, "bench_cpu: %s: %s\n", n->b->spec->name, n->err);
            return NAN;
        }
        t[i] = (t1 - t0) * 1e-6;
        c[i] = c1 - c0;
    }
    if (cpu_s)
        *cpu_s = bench_median(c, reps);
    return bench_median(t, reps);
}

/* The same for the interpreter: NAN, with its diagnostic, when it fails. */
static double time_interp(bench_kernel *b, int reps)
{
    double t[16];
    reps = reps < 16 ? reps : 16;
    if (warm_up(run_interp_once, b)) {
        fprintf(stderr, "bench_cpu: %s (interpreter): %s", b->tile->name, tj_diag_render(b->c));
        return NAN;
    }
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now_us();
        if (tj_interp_run(b->tile, b->args, b->nargs)) {
            fprintf(stderr, "bench_cpu: %s (interpreter): %s", b->tile->name, tj_diag_render(b->c));
            return NAN;
        }
        t[i] = (bench_now_us() - t0) * 1e-6;
    }
    return bench_median(t, reps);
}

/* The CPU time of every thread per run of `run(b)`, in seconds: the least
 * of 5 batches, each at least ~2 ms long (the clock is a syscall, 1.2 us
 * here: it is read once a batch); NAN when a run fails. est_s: one run's
 * wall time, to size the batches. */
static double cpu_per_run(int (*run)(void *), void *b, double est_s)
{
    int reps = est_s > 0 && est_s < 2e-3 ? (int)(2e-3 / est_s) + 1 : 1;
    double best = INFINITY;
    for (int batch = 0; batch < 5; batch++) {
        double c0 = process_cpu_s();
        for (int i = 0; i < reps; i++)
            if (run(b))
                return NAN;
        double c = (process_cpu_s() - c0) / reps;
        best = c < best ? c : best;
    }
    return best;
}

static int run_native_once(void *p)
{
    native_run *n = p;
    return tj_cpu_run(n->f, n->b->args, n->b->nargs, n->b->grid, n->err, sizeof n->err);
}

static int run_interp_once(void *p) { return tj_interp_run(((bench_kernel *)p)->tile, ((bench_kernel *)p)->args, ((bench_kernel *)p)->nargs); }

/* This thread's CPU time in ms: what a compile costs on a busy machine
 * without the time other processes took the core. */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* *ms: the wall time of the compile; *cpu_ms: its CPU time. */
static tj_cpu_fn *compile(tj_cpu *cpu, bench_kernel *b, double *ms, double *cpu_ms)
{
    tj_cpu_times times;
    double c0 = thread_cpu_ms();
    tj_cpu_fn *f = tj_cpu_compile(cpu, b->spec, &times);
    *cpu_ms = thread_cpu_ms() - c0;
    if (!f)
        fprintf(stderr, "%s", tj_diag_render(b->c));
    *ms = times.codegen_ms + times.opt_ms + times.link_ms;
    fprintf(stderr, "bench_cpu: %s: compile %.1f ms wall, %.1f ms CPU (IR %.1f, -O2 and machine code %.1f, link %.1f)\n",
            b->spec->name, *ms, *cpu_ms, times.codegen_ms, times.opt_ms, times.link_ms);
    return f;
}

typedef struct memory_case {
    const char *name, *file, *kernel, *shapes, *scalars;
    double elems_moved; /* per element of the big tensor: reads + writes */
} memory_case;

static const memory_case MEMORY[] = {
    {"add", "add.tj", "add", "N=16777216", "", 3},
    {"gelu", "gelu.tj", "gelu", "N=16777216", "", 4},
    {"softmax", "softmax.tj", "softmax", "M=16384,N=1024", "", 2},
    {"layernorm", "layernorm.tj", "layernorm", "M=16384,N=1024", "eps=1e-5", 2},
    {"rowsum", "rowsum.tj", "rowsum", "M=16384,N=1024", "", 1},
    {"colsum", "colsum.tj", "colsum", "M=16384,N=1024", "", 1},
};

static int run_kernels(tj_cpu *cpu, const char *dir)
{
    for (size_t i = 0; i < sizeof MEMORY / sizeof *MEMORY; i++) {
        const memory_case *m = &MEMORY[i];
        char *src = read_source(dir, m->file);
        bench_kernel b = {0};
        double ms, cms;
        tj_cpu_fn *f = src && !build(&b, src, m->kernel, m->shapes, "", m->scalars) ? compile(cpu, &b, &ms, &cms) : NULL;
        native_run n = {f, &b, ""};
        double cpu_s, s = f ? time_native(&n, 15, &cpu_s) : NAN, elems = 16384.0 * 1024.0;
        if (!isnan(s))
            printf("kernel %s %.0f %.6f %.1f %.1f %.6f\n", m->name, elems * 4 * m->elems_moved, s, ms, cms, cpu_s);
        fflush(stdout);
        release(&b);
        free(src);
        if (isnan(s)) /* reported: stop, as a failed example does */
            return 1;
    }
    return 0;
}

static const char MATMUL_F32[] = "kernel mm(A: f32[M, K], B: f32[K, N], C: f32[M, N])\n"
                                 "    grid (cdiv(M, BM), cdiv(N, BN))\n"
                                 "    tune BM in [64], BN in [64], BK in [64]\n"
                                 "{\n"
                                 "    m = program_id(0) * BM\n"
                                 "    n = program_id(1) * BN\n"
                                 "    acc = zeros(f32[BM, BN])\n"
                                 "    for k in range(0, K, BK) {\n"
                                 "        acc = dot(load(A[m:m+BM, k:k+BK]), load(B[k:k+BK, n:n+BN]), acc, precision = \"ieee\")\n"
                                 "    }\n"
                                 "    store(C[m:m+BM, n:n+BN], acc)\n"
                                 "}\n";

static int run_matmul(tj_cpu *cpu, const char *defines)
{
    bench_kernel b = {0};
    double ms, cms;
    tj_cpu_fn *f = !build(&b, MATMUL_F32, "mm", "M=1024,N=1024,K=1024", defines, "") ? compile(cpu, &b, &ms, &cms) : NULL;
    native_run n = {f, &b, ""};
    double s = f ? time_native(&n, 7, NULL) : NAN;
    if (!isnan(s))
        printf("matmul %s %.0f %.6f %.1f %.1f\n", defines, 2.0 * 1024 * 1024 * 1024, s, ms, cms);
    release(&b);
    return isnan(s) ? 1 : 0;
}

/* t: native and interpreter wall medians, then their CPU times per run;
 * -1 at the first failed run, reported (and not run again). */
static int time_example(tj_cpu_fn *f, bench_kernel *b, double t[4])
{
    native_run n = {f, b, ""};
    if (isnan(t[0] = time_native(&n, 21, NULL)) || isnan(t[1] = time_interp(b, 7)))
        return -1;
    if (isnan(t[2] = cpu_per_run(run_native_once, &n, t[0]))) {
        fprintf(stderr, "bench_cpu: %s: %s\n", b->spec->name, n.err);
        return -1;
    }
    if (isnan(t[3] = cpu_per_run(run_interp_once, b, t[1]))) {
        fprintf(stderr, "bench_cpu: %s (interpreter): %s", b->tile->name, tj_diag_render(b->c));
        return -1;
    }
    return 0;
}

/* examples.txt: FILE KERNEL [--shape S] [-D D] [ARG=V]... */
static int run_examples(tj_cpu *cpu, const char *dir)
{
    size_t len;
    char *list = bench_read_file(dir, "examples.txt", &len);
    if (!list)
        return 1;
    for (char *line = list, *end; *line; line = *end ? end + 1 : end) {
        end = line + strcspn(line, "\n");
        char copy[512], file[64], kernel[64], scalars[256] = "";
        const char *shapes = "", *defines = "";
        snprintf(copy, sizeof copy, "%.*s", (int)(end - line), line);
        if (copy[0] == '#' || sscanf(copy, "%63s %63s", file, kernel) != 2)
            continue;
        char *w = strtok(copy, " \t");
        w = strtok(NULL, " \t");
        while ((w = strtok(NULL, " \t"))) {
            if (!strcmp(w, "--shape"))
                shapes = strtok(NULL, " \t");
            else if (!strcmp(w, "-D"))
                defines = strtok(NULL, " \t");
            else
                snprintf(scalars + strlen(scalars), sizeof scalars - strlen(scalars), "%s%s", *scalars ? "," : "", w);
        }
        char *src = read_source(dir, file);
        bench_kernel b = {0};
        double ms, cms;
        tj_cpu_fn *f = src && !build(&b, src, kernel, shapes, defines, scalars) ? compile(cpu, &b, &ms, &cms) : NULL;
        double t[4];
        int failed = !f || time_example(f, &b, t);
        if (!failed)
            printf("example %s %s %s%s%s %.9f %.9f %.1f %.1f %.9f %.9f\n", file, kernel, shapes, *defines ? ";" : "",
                   defines, t[0], t[1], ms, cms, t[2], t[3]);
        fflush(stdout);
        release(&b);
        free(src);
        if (failed) { /* reported (a failed compile, launch or interpreter run): stop */
            free(list);
            return 1;
        }
    }
    free(list);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "kernels", *dir = argc > 2 ? argv[2] : "examples";
    char err[256];
    tj_cpu *cpu = tj_cpu_new(0, err, sizeof err);
    if (!cpu) {
        fprintf(stderr, "bench_cpu: %s\n", err);
        return 77;
    }
    fprintf(stderr, "bench_cpu: %d threads, %s\n", tj_cpu_threads(cpu), tj_cpu_target(cpu));
    int rc = !strcmp(mode, "kernels")    ? run_kernels(cpu, dir)
             : !strcmp(mode, "matmul")   ? run_matmul(cpu, argc > 2 ? argv[2] : "")
             : !strcmp(mode, "examples") ? run_examples(cpu, dir)
                                         : (fprintf(stderr, "usage: bench_cpu kernels|matmul|examples [DIR]\n"), 2);
    tj_cpu_free(cpu);
    return rc;
}
