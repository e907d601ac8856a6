/* CUDA C through NVRTC on a device (bench/RESULTS.md): the cold compile
 * (NVRTC -> nvJitLink -> load), beside NVRTC's own time, and a disk-cache
 * hit to a launchable kernel in a fresh process (target: <= 1 ms).
 *
 *   nvrtc_bench            cold compile into a new cache, then runs itself
 *                          as `nvrtc_bench --hit DIR` (a fresh process)
 *   nvrtc_bench --hit DIR  times tj_cache_open + tj_cuda_kernel_build from DIR
 *
 * The device is opened before the clock starts in both: the figure is the
 * kernel's cost, not the driver's start-up. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tilejit/nvrtc.h"

#include "../tests/gpu/nvrtc_kernels.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static const tj_cuda_header headers[] = {{"offset.h", reverse_scale_offset_h}};
static const char *const defines[] = {"SCALE=2"};

static tj_cuda_source source(void)
{
    return (tj_cuda_source){.file = "reverse_scale.cu", .source = reverse_scale_cu,
                            .len = sizeof reverse_scale_cu - 1, .kernel = "reverse_scale<float, 256>",
                            .headers = headers, .nheaders = 1, .defines = defines, .ndefines = 1};
}

/* Builds once from the cache in dir; prints and returns the milliseconds
 * (negative on failure). */
static double build(tj_cuda *cu, const char *dir, const char *what)
{
    tj_rt_error err = {{0}};
    tj_cuda_source src = source();
    double t0 = now_ms();
    tj_cache *cache = tj_cache_open(&(tj_cache_options){.dir = dir});
    double open_ms = now_ms() - t0;
    tj_cuda_kernel *k = tj_cuda_kernel_build(cu, &src, &(tj_cuda_build_options){.cache = cache}, &err);
    double ms = now_ms() - t0;
    if (!k) {
        fprintf(stderr, "nvrtc_bench: %s: %s\n", what, err.msg);
        tj_cache_close(cache);
        return -1;
    }
    const tj_cuda_kernel_info *i = tj_cuda_kernel_get_info(k);
    if (i->from_disk)
        printf("%-28s %8.3f ms  (cache open %.3f ms, module load %.3f ms)  %s\n", what, ms, open_ms, i->load_ms,
               ms <= 1.0 ? "<= 1 ms: ok" : "over the 1 ms target");
    else
        printf("%-28s %8.1f ms  (NVRTC %.1f ms, nvJitLink %.1f ms, module load %.2f ms; %s, NVRTC %s)\n", what, ms,
               i->nvrtc_ms, i->link_ms, i->load_ms, i->arch, i->nvrtc_version);
    tj_cuda_kernel_free(k);
    tj_cache_close(cache);
    return ms;
}

static int run_fresh_process(const char *self, const char *dir)
{
    fflush(stdout); /* or the child would print it again */
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "--hit", dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    int rc;
    if (argc == 3 && !strcmp(argv[1], "--hit")) {
        rc = build(cu, argv[2], "disk hit, fresh process") < 0;
        rc |= build(cu, argv[2], "disk hit, same process") < 0;
    } else {
        char dir[] = "/tmp/tj_nvrtc_bench_XXXXXX";
        if (!mkdtemp(dir)) {
            perror("nvrtc_bench: mkdtemp");
            return 1;
        }
        rc = build(cu, dir, "cold compile") < 0 || run_fresh_process(argv[0], dir);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        rc |= system(cmd) != 0;
    }
    tj_cuda_close(cu);
    return rc;
}
