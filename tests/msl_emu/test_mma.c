/* The matrix atom through the MSL generator: the hand-written SIMT kernels
 * of tests/lit/msl/mma.tjir (f16, bf16 and f32 inputs: fragments loaded
 * from threadgroup memory, carried by a for, returned by an if, stored) are
 * emitted, compiled for the emulator, run under the forward, reverse and
 * shuffled schedules and compared with a reference; each source asks for
 * MSL 3.1 exactly when it has bfloat matrices; and the emulator catches the
 * f16 kernel with the barrier after its mma_store left out (other lanes
 * read what simdgroup_store wrote). */
#include "emu_launch.h"
#include "mma_case.h"

static const uint32_t schedules[] = {0, 1, 5};

/* Kernel k, printed, without the first barrier after its mma_store, parsed
 * again (in k's context); NULL after printing why. */
static tj_kernel *without_store_barrier(const tj_kernel *k)
{
    tj_buf b = {0};
    tj_print_kernel(k, &b);
    char *store = strstr(b.data, "mma_store"), *bar = store ? strstr(store, "barrier\n") : NULL;
    tj_kernel *out = NULL;
    if (bar) {
        char *line = bar;
        while (line > b.data && line[-1] != '\n')
            line--;
        memmove(line, bar + strlen("barrier\n"), strlen(bar + strlen("barrier\n")) + 1);
        if (tj_parse_ir(k->ctx, "no-barrier", b.data, strlen(b.data), &out, 1) != 1 || tj_verify(out))
            out = NULL;
    }
    if (!out)
        printf("cannot make the kernel without a barrier: %s\n", tj_diag_render(k->ctx));
    tj_buf_free(&b);
    return out;
}

static void check_kernel(void *so, int source, const tj_kernel *k)
{
    static mma_case m;
    for (int s = 0; s < 3; s++) {
        char err[1024] = "", what[96];
        snprintf(what, sizeof what, "%s (schedule %u)", k->name, schedules[s]);
        mc_prepare(&m, k, (uint32_t)s);
        int rc = el_run(so, source, k, m.args, 4, schedules[s], err, sizeof err);
        EU_CHECK(rc == 0, "%s: %s", what, err);
        if (!rc && !mc_check(&m, what))
            eu_failures++;
    }
}

static void check_broken(void *so, int source, const tj_kernel *k)
{
    static mma_case m;
    char err[1024] = "";
    mc_prepare(&m, k, 0);
    int rc = el_run(so, source, k, m.args, 4, 0, err, sizeof err);
    EU_CHECK(rc && strstr(err, "missing barrier"), "no barrier after mma_store: expected \"missing barrier\", got: %s",
             rc ? err : "no error");
    if (rc)
        printf("caught the missing barrier after mma_store: %s\n", err);
}

int main(void)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *ks[MC_KERNELS + 1] = {0};
    int n = c ? mc_load(c, ks) : -1;
    if (n != MC_KERNELS) {
        printf("FAIL: %d kernels in mma.tjir, %d expected\n", n, MC_KERNELS);
        tj_ctx_free(c);
        return 1;
    }
    ks[n] = without_store_barrier(ks[0]);
    EU_CHECK(ks[n], "the kernel without a barrier");
    char *msl[MC_KERNELS + 1] = {0};
    const char *srcs[MC_KERNELS + 1];
    int nsrc = ks[n] ? n + 1 : n;
    for (int i = 0; i < nsrc; i++) {
        msl[i] = el_emit(ks[i]);
        EU_CHECK(msl[i], "%s: no MSL", ks[i]->name);
        srcs[i] = msl[i] ? msl[i] : "";
        uint32_t want = ks[i]->params[0].dtype == TJ_DT_BF16 ? TJ_MSL_3_1 : TJ_MSL_3_0;
        EU_CHECK(msl[i] && tj_msl_version(msl[i]) == want, "%s: MSL version 0x%x, expected 0x%x", ks[i]->name,
                 msl[i] ? tj_msl_version(msl[i]) : 0, want);
    }
    double t0 = eu_now();
    void *so = eu_build(srcs, nsrc, "mma");
    printf("%d kernels emitted, compiled in %.1f s\n", nsrc, eu_now() - t0);
    EU_CHECK(so, "the kernels compile");
    for (int i = 0; so && i < n; i++)
        check_kernel(so, i, ks[i]);
    if (so && nsrc > n)
        check_broken(so, n, ks[n]);
    mtl_emu_close(so);
    for (int i = 0; i < nsrc; i++)
        free(msl[i]);
    tj_ctx_free(c);
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
