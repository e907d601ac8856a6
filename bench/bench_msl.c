/* MSL generation time for each kernel of DSL.md (docs/metal.md): the
 * kernel is lowered to SIMT IR once (specialized as a launch would be),
 * then tj_emit_msl runs repeatedly; the median of the runs is reported
 * with the size of the source. The bar is 1 ms per kernel.
 *
 *   bench_msl EXAMPLES_DIR */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tilejit/tilejit.h"

enum { REPS = 101 };

/* The SIMT IR of an example (in context c), or NULL. */
static tj_kernel *lower(tj_ctx *c, const char *dir, const bench_example *ex)
{
    size_t len;
    char *src = bench_read_file(dir, ex->file, &len);
    tj_program *p = src ? tj_parse_program(c, ex->file, src, len) : NULL;
    free(src);
    int ki = p ? tj_program_find_kernel(p, ex->kernel) : -1;
    tj_binding *config;
    uint32_t nconfig;
    tj_kernel *k = NULL;
    if (ki >= 0 && !tj_select_config(c, p, ki, NULL, 0, ex->dims, ex->ndims, &config, &nconfig))
        k = tj_build_kernel(c, p, ki, config, nconfig, ex->dims, ex->ndims);
    return k && !tj_verify(k) ? tj_compile_simt(k, &(tj_pipeline_options){.lower.target = TJ_LOWER_METAL}) : NULL;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "examples";
    int slow = 0;
    printf("%-12s %8s %8s %10s %10s\n", "kernel", "threads", "lines", "MSL bytes", "median us");
    for (size_t e = 0; e < bench_nexamples; e++) {
        tj_ctx *c = tj_ctx_new();
        tj_kernel *simt = lower(c, dir, &bench_examples[e]);
        if (!simt) {
            fprintf(stderr, "%s: %s", bench_examples[e].kernel, tj_diag_render(c));
            tj_ctx_free(c);
            return 1;
        }
        double t[REPS];
        size_t bytes = 0, lines = 0;
        for (int r = 0; r < REPS; r++) {
            tj_buf b = {0};
            double t0 = bench_now_us();
            int rc = tj_emit_msl(simt, &b);
            t[r] = bench_now_us() - t0;
            if (rc) {
                fprintf(stderr, "%s: %s", bench_examples[e].kernel, tj_diag_render(c));
                return 1;
            }
            bytes = b.len;
            lines = 0;
            for (size_t i = 0; i < b.len; i++)
                lines += b.data[i] == '\n';
            tj_buf_free(&b);
        }
        double med = bench_median(t, REPS);
        slow |= med >= 1000;
        printf("%-12s %8u %8zu %10zu %10.1f\n", bench_examples[e].kernel, simt->nthreads, lines, bytes, med);
        tj_ctx_free(c);
    }
    printf("%s\n", slow ? "SLOW: a kernel took 1 ms or more" : "every kernel under 1 ms");
    return slow;
}
