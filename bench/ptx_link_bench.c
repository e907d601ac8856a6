/* ptxas's time on given PTX, through nvJitLink in process as the JIT calls
 * it (tj_nvjitlink_compile): no GPU needed (bench/RESULTS.md, "Arrays:
 * where a cold compile goes, on the build machine").
 *
 *   ptx_link_bench [-r REPS] [-a ARCH] [-X OPTION]... FILE.ptx...
 *
 * For each file the best of REPS (5) links: wall time and the CPU time of
 * the linking thread (steadier than the wall on a loaded machine), and the
 * cubin's size; -X passes an option to nvJitLink (-X -Xptxas=-O1, -X -O0).
 * With -d (needs a GPU) also the driver's own JIT of the same PTX
 * (cuModuleLoadDataEx, its JIT cache off) and the load of nvJitLink's cubin,
 * the two ways a cold compile can reach a loaded module.
 * With -v also the registers and spills of each kernel as the JIT's
 * ptxas allocates them (nvJitLink's info log with -Xptxas=-v): nvJitLink
 * assembles as `ptxas -c` does, which can differ much from the whole-
 * program `ptxas -v` (an f32 attention kernel: 255 registers against 83;
 * bench/NOTES.md).
 * Write the PTX with `tilejit emit FILE -k KERNEL --target ptx --contiguous`
 * (the JIT's facts) or take it from the disk cache. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime's thread clock */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "tilejit/cuda.h"

enum { MAX_OPTS = 16 };

static double thread_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Best wall and thread-CPU ms of reps links of ptx; 1 on a failure (printed). */
static int time_links(const tj_nvjitlink *l, const char *ptx, size_t len, const char *arch, const char **opts,
                      int nopts, int reps, double *wall, double *cpu, size_t *size)
{
    *wall = *cpu = 1e30;
    for (int r = 0; r < reps; r++) {
        tj_rt_error err = {{0}};
        void *cubin = NULL;
        double w0 = bench_now_us(), c0 = thread_ms();
        if (tj_nvjitlink_compile(l, ptx, len, arch, opts, nopts, &cubin, size, NULL, &err)) {
            fprintf(stderr, "ptx_link_bench: %s\n", err.msg);
            return 1;
        }
        double w = (bench_now_us() - w0) / 1e3, c = thread_ms() - c0;
        free(cubin);
        *wall = w < *wall ? w : *wall;
        *cpu = c < *cpu ? c : *cpu;
    }
    return 0;
}

/* The lines of nvJitLink's ptxas -v log that say a kernel's registers and
 * spills, as the JIT gets them; 1 on a failure (printed). */
static int print_usage(const tj_nvjitlink *l, const char *ptx, size_t len, const char *arch, const char **opts,
                       int nopts)
{
    const char *all[MAX_OPTS + 1];
    for (int i = 0; i < nopts; i++)
        all[i] = opts[i];
    all[nopts] = "-Xptxas=-v";
    tj_rt_error err = {{0}};
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    if (tj_nvjitlink_compile(l, ptx, len, arch, all, nopts + 1, &cubin, &size, &log, &err)) {
        fprintf(stderr, "ptx_link_bench: %s\n", err.msg);
        return 1;
    }
    for (char *line = log ? strtok(log, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (strstr(line, "registers") || strstr(line, "spill"))
            printf("%-40s %s\n", "", line);
    free(log);
    free(cubin);
    return 0;
}

/* Best wall ms of reps driver JITs of ptx and of reps loads of its cubin
 * (nvJitLink's, linked once here); 1 on a failure (printed). */
static int time_driver(const tj_cuda *cu, const tj_nvjitlink *l, const char *ptx, size_t len, const char *arch,
                       int reps, double *jit, double *load)
{
    tj_rt_error err = {{0}};
    void *cubin = NULL;
    size_t size = 0;
    *jit = *load = 1e30;
    if (tj_nvjitlink_compile(l, ptx, len, arch, NULL, 0, &cubin, &size, NULL, &err))
        goto fail;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_us();
        tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ptx, NULL, &err);
        double t1 = bench_now_us();
        if (!m)
            goto fail;
        tj_cuda_module_unload(m);
        double t2 = bench_now_us();
        if (!(m = tj_cuda_module_load_cubin(cu, cubin, size, NULL, &err)))
            goto fail;
        double t3 = bench_now_us();
        tj_cuda_module_unload(m);
        *jit = (t1 - t0) / 1e3 < *jit ? (t1 - t0) / 1e3 : *jit;
        *load = (t3 - t2) / 1e3 < *load ? (t3 - t2) / 1e3 : *load;
    }
    free(cubin);
    return 0;
fail:
    fprintf(stderr, "ptx_link_bench: %s\n", err.msg);
    free(cubin);
    return 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: ptx_link_bench [-r REPS] [-a ARCH] [-X OPTION]... [-d] [-v] FILE.ptx...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *arch = "sm_90a", *opts[MAX_OPTS];
    int reps = 5, nopts = 0, first = 1, driver = 0, usage_lines = 0;
    for (; first < argc && argv[first][0] == '-' && first + 1 < argc; first += 2) {
        if (!strcmp(argv[first], "-d") || !strcmp(argv[first], "-v")) {
            driver |= argv[first][1] == 'd';
            usage_lines |= argv[first][1] == 'v';
            first--;
            continue;
        } else if (!strcmp(argv[first], "-r") && (reps = atoi(argv[first + 1])) > 0)
            continue;
        if (!strcmp(argv[first], "-a"))
            arch = argv[first + 1];
        else if (!strcmp(argv[first], "-X") && nopts < MAX_OPTS)
            opts[nopts++] = argv[first + 1];
        else
            return usage();
    }
    if (first >= argc)
        return usage();
    tj_rt_error err = {{0}};
    double t0 = bench_now_us();
    tj_nvjitlink *l = tj_nvjitlink_open(&err);
    if (!l) {
        fprintf(stderr, "ptx_link_bench: %s\n", err.msg);
        return 1;
    }
    printf("nvJitLink opened in %.1f ms; %s, best of %d\n", (bench_now_us() - t0) / 1e3, arch, reps);
    tj_cuda *cu = NULL;
    if (driver) {
        setenv("CUDA_CACHE_DISABLE", "1", 1); /* read at cuInit: every JIT compiles */
        if (!(cu = tj_cuda_open(0, &err))) {
            fprintf(stderr, "ptx_link_bench: -d: %s\n", err.msg);
            tj_nvjitlink_close(l);
            return 1;
        }
    }
    int bad = 0;
    for (int i = first; i < argc && !bad; i++) {
        size_t len, size = 0;
        char *ptx = bench_read_file(argv[i][0] == '/' ? "" : ".", argv[i], &len);
        double wall, cpu;
        if (!ptx) {
            fprintf(stderr, "ptx_link_bench: cannot read %s\n", argv[i]);
            bad = 1;
        } else if (!(bad = time_links(l, ptx, len, arch, opts, nopts, reps, &wall, &cpu, &size)))
            printf("%-40s wall %8.1f ms  thread %8.1f ms  cubin %zu bytes\n", argv[i], wall, cpu, size);
        if (!bad && usage_lines)
            bad = print_usage(l, ptx, len, arch, opts, nopts);
        double jit, load;
        if (!bad && cu && !(bad = time_driver(cu, l, ptx, len, arch, reps, &jit, &load)))
            printf("%-40s driver JIT %8.1f ms  cubin load %8.1f ms\n", "", jit, load);
        free(ptx);
    }
    tj_cuda_close(cu);
    tj_nvjitlink_close(l);
    return bad;
}
