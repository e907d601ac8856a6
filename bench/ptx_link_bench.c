/* ptxas's time on given PTX, through nvJitLink in process as the JIT calls
 * it (tj_nvjitlink_compile): no GPU needed (bench/RESULTS.md, "Arrays:
 * where a cold compile goes, on the build machine").
 *
 *   ptx_link_bench [-r REPS] [-a ARCH] [-X OPTION]... FILE.ptx...
 *
 * For each file the best of REPS (5) links: wall time and the CPU time of
 * the linking thread (steadier than the wall on a loaded machine), and the
 * cubin's size; -X passes an option to nvJitLink (-X -Xptxas=-O1, -X -O0).
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

static int usage(void)
{
    fprintf(stderr, "usage: ptx_link_bench [-r REPS] [-a ARCH] [-X OPTION]... FILE.ptx...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *arch = "sm_90a", *opts[MAX_OPTS];
    int reps = 5, nopts = 0, first = 1;
    for (; first < argc && argv[first][0] == '-' && first + 1 < argc; first += 2) {
        if (!strcmp(argv[first], "-r") && (reps = atoi(argv[first + 1])) > 0)
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
        free(ptx);
    }
    tj_nvjitlink_close(l);
    return bad;
}
