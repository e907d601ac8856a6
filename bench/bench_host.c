/* Host benchmarks: front end + verifier time for each example kernel, the
 * reference interpreter's throughput and PTX emission time.
 *
 *   bench_host EXAMPLES_DIR [--json FILE]
 *
 * Times are medians over repeated runs, each in a fresh context (what a cold
 * compile pays), measured with CLOCK_MONOTONIC. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "simt_kernels.h"
#include "tilejit/tilejit.h"

enum { REPS = 51 };

/* Tile IR -> optimized, specialized SIMT IR -> PTX text (what the JIT does
 * after the front end for sm_90a, dot on wgmma where it applies; ptxas and
 * the driver are not included). */
static int tile_to_ptx(tj_kernel *ir)
{
    tj_pipeline_options o = {.lower.wgmma = tj_ptx_arch_has_wgmma("sm_90a")};
    tj_kernel *simt = tj_compile_simt(tj_kernel_clone(ir), &o);
    if (!simt)
        return 1;
    tj_buf ptx = {0};
    int rc = tj_emit_ptx(simt, "sm_90a", &ptx);
    tj_buf_free(&ptx);
    return rc;
}

/* One cold compile: parse, pick the first configuration, lower, verify; with
 * `to_ptx`, on to PTX. */
static int compile_once(const bench_example *e, const char *text, size_t len, int to_ptx)
{
    tj_ctx *c = tj_ctx_new();
    tj_program *p = tj_parse_program(c, e->file, text, len);
    int k = p ? tj_program_find_kernel(p, e->kernel) : -1;
    tj_binding *config = NULL;
    uint32_t nconfig = 0;
    int rc = k < 0 || tj_select_config(c, p, k, NULL, 0, e->dims, e->ndims, &config, &nconfig);
    tj_kernel *ir = rc ? NULL : tj_build_kernel(c, p, k, config, nconfig, e->dims, e->ndims);
    rc = !ir || tj_verify(ir) || (to_ptx && tile_to_ptx(ir));
    if (rc)
        fputs(tj_diag_render(c), stderr);
    tj_ctx_free(c);
    return rc;
}

static void bench_frontend(const char *dir, FILE *json)
{
    printf("%-14s %-11s %18s %14s   (us, median of %d cold compiles)\n", "example", "kernel",
           "front end+verify", "DSL -> PTX", REPS);
    for (size_t i = 0; i < bench_nexamples; i++) {
        const bench_example *e = &bench_examples[i];
        size_t len;
        char *text = bench_read_file(dir, e->file, &len);
        if (!text) {
            printf("%-14s missing\n", e->file);
            continue;
        }
        double t[REPS], med[2];
        int bad = 0;
        for (int to_ptx = 0; to_ptx < 2; to_ptx++) {
            for (int r = 0; r < REPS; r++) {
                double t0 = bench_now_us();
                bad |= compile_once(e, text, len, to_ptx);
                t[r] = bench_now_us() - t0;
            }
            med[to_ptx] = bench_median(t, REPS);
        }
        printf("%-14s %-11s %18.1f %14.1f%s\n", e->file, e->kernel, med[0], med[1], bad ? "  (FAILED)" : "");
        if (json)
            fprintf(json, "%s{\"bench\": \"compile\", \"kernel\": \"%s\", \"frontend_us\": %.2f, "
                          "\"dsl_to_ptx_us\": %.2f, \"ok\": %s}",
                    i ? ",\n " : " ", e->kernel, med[0], med[1], bad ? "false" : "true");
        free(text);
    }
}

/* Interpreter throughput: softmax over a 256 x 4096 f32 matrix (one program
 * per row), reported as elements processed per second. */
static const char softmax_src[] =
    "kernel softmax(X: f32[M, N], Y: f32[M, N])\n"
    "    grid (M)\n"
    "    const BLOCK = 4096\n"
    "{\n"
    "    r = program_id(0)\n"
    "    x = load(X[r, 0:BLOCK], other = -inf)\n"
    "    e = exp(x - max(x))\n"
    "    store(Y[r, 0:BLOCK], e / sum(e))\n"
    "}\n";

static void bench_interp(FILE *json)
{
    enum { M = 256, N = 4096 };
    tj_ctx *c = tj_ctx_new();
    tj_program *p = tj_parse_program(c, "softmax", softmax_src, sizeof softmax_src - 1);
    tj_binding bind = {"BLOCK", 4096};
    tj_kernel *k = p ? tj_build_kernel(c, p, 0, &bind, 1, NULL, 0) : NULL;
    float *x = malloc(sizeof(float) * M * N), *y = malloc(sizeof(float) * M * N);
    if (!k || !x || !y || tj_optimize(k, 0)) {
        fputs(tj_diag_render(c), stderr);
        goto out;
    }
    for (int i = 0; i < M * N; i++)
        x[i] = (float)(((int64_t)i * 7919) % 1000) / 1000.0f;
    tj_arg args[2] = {{.is_tensor = 1, .tensor = {x, TJ_DT_F32, 2, {M, N}, {N, 1}}},
                      {.is_tensor = 1, .tensor = {y, TJ_DT_F32, 2, {M, N}, {N, 1}}}};
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_us();
        if (tj_interp_run(k, args, 2)) {
            fputs(tj_diag_render(c), stderr);
            goto out;
        }
        t[r] = bench_now_us() - t0;
    }
    double med = bench_median(t, 5);
    printf("\ninterpreter: softmax %dx%d f32 in %.1f ms = %.1f M elements/s\n", M, N, med / 1e3,
           (double)M * N / med);
    if (json)
        fprintf(json, ",\n {\"bench\": \"interp_softmax\", \"elements\": %d, \"ms\": %.3f}", M * N, med / 1e3);
out:
    free(x);
    free(y);
    tj_ctx_free(c);
}

/* PTX emission alone, for the SIMT catalogue's longest kernel (f64 math,
 * ~26 KB of PTX; tests/unit/simt_kernels.h): one pass over the
 * instructions, well under a millisecond. */
static void bench_emit_ptx(FILE *json)
{
    tt_kb kb;
    sk_build_unary(&kb, TJ_DT_F64);
    double t[REPS];
    tj_buf out = {0};
    for (int r = 0; r < REPS; r++) {
        out.len = 0;
        double t0 = bench_now_us();
        int rc = tj_emit_ptx(kb.k, "sm_90a", &out);
        t[r] = bench_now_us() - t0;
        if (rc) {
            fputs(tj_diag_render(kb.c), stderr);
            goto out;
        }
    }
    double med = bench_median(t, REPS);
    printf("\nPTX emission: %s (%zu bytes of PTX) in %.1f us\n", kb.k->name, out.len, med);
    if (json)
        fprintf(json, ",\n {\"bench\": \"emit_ptx\", \"kernel\": \"%s\", \"bytes\": %zu, \"us\": %.2f}", kb.k->name,
                out.len, med);
out:
    tj_buf_free(&out);
    tt_free(&kb);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_host EXAMPLES_DIR [--json FILE]\n");
        return 2;
    }
    FILE *json = argc >= 4 && !strcmp(argv[2], "--json") ? fopen(argv[3], "w") : NULL;
    if (json)
        fputs("[\n", json);
    bench_frontend(argv[1], json);
    bench_interp(json);
    bench_emit_ptx(json);
    if (json) {
        fputs("\n]\n", json);
        fclose(json);
    }
    return 0;
}
