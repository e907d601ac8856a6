/* while loops through the whole Apple path (front end, the Metal lowering,
 * MSL, the emulator) against the reference interpreter, under the forward,
 * reverse and shuffled schedules: a loop whose condition is a reduction of
 * a carried tile (the lowering broadcasts thread 0's condition), and one
 * whose trip count differs between programs. And the multi-phase scan
 * kernels of lib/kernels/scan.tj, which Metal runs where CUDA and the cpu
 * take the look-back (ordered accesses have no Metal form:
 * tests/lit/msl/while.tj). */
#include "emu_case.h"
#include "lib_source.h"

static const char *src = "kernel halve(X: f32[N], Y: f32[N], K: i32[P])\n"
                         "    grid (cdiv(N, 64))\n"
                         "{\n"
                         "    p = program_id(0)\n"
                         "    x = load(X[p * 64:p * 64 + 64])\n"
                         "    k = 0\n"
                         "    while max(abs(x)) >= 1.0 {\n"
                         "        x = x * 0.5\n"
                         "        k = k + 1\n"
                         "    }\n"
                         "    store(Y[p * 64:p * 64 + 64], x)\n"
                         "    store(K[p], k)\n"
                         "}\n"
                         "kernel count(X: i32[N], Y: i32[N])\n"
                         "    grid (N)\n"
                         "{\n"
                         "    i = program_id(0)\n"
                         "    n = load(X[i]) % 40\n"
                         "    s = 0\n"
                         "    j = 0\n"
                         "    while j < n {\n"
                         "        s = s + j\n"
                         "        j = j + 1\n"
                         "    }\n"
                         "    store(Y[i], s)\n"
                         "}\n";

int main(void)
{
    static const struct {
        const char *kernel, *shapes, *defines;
        int warps, lib; /* lib: from scan.tj */
    } cases[] = {{"halve", "N=200,P=4", "", 1, 0},
                 {"halve", "N=200,P=4", "", 2, 0},
                 {"count", "N=50", "", 1, 0},
                 {"scan_tiles", "P=2,N=1000,NT=4", "B=256", 0, 1},
                 {"scan_carry", "P=2,NT=700", "B=256", 0, 1},
                 {"scan_apply", "P=2,N=1000,NT=4", "B=256", 0, 1}};
    char *scan = ls_lib_source("scan", NULL, LS_SCAN_SUM("i32", "u32"));
    enum { N = sizeof cases / sizeof *cases };
    static ec_case es[N];
    static lc_opts os[N];
    const char *srcs[N];
    int ok = 1;
    for (int i = 0; i < N; i++) {
        os[i] = lc_defaults();
        os[i].shapes = cases[i].shapes;
        os[i].lo = -300, os[i].hi = 300;
        os[i].ilo = cases[i].lib ? -50 : 0, os[i].ihi = 1000;
        ok &= ec_lower(&es[i], cases[i].kernel, "control.tj", cases[i].lib ? scan : src, cases[i].kernel,
                       cases[i].defines, cases[i].shapes, cases[i].warps, &os[i]);
        srcs[i] = es[i].msl ? es[i].msl : "";
    }
    free(scan);
    EU_CHECK(ok, "every kernel lowers to MSL");
    void *so = ok ? eu_build(srcs, N, "control") : NULL;
    EU_CHECK(so, "the while kernels' MSL compiles");
    static const uint32_t schedules[] = {0, 1, 3};
    for (int i = 0; so && i < N; i++)
        for (int s = 0; s < 3; s++) {
            char what[128];
            snprintf(what, sizeof what, "%s %s warps=%d schedule %u", cases[i].kernel, cases[i].shapes,
                     cases[i].warps, schedules[s]);
            ec_check_schedule(so, i, &es[i], &os[i], what, schedules[s]);
        }
    mtl_emu_close(so);
    for (int i = 0; i < N; i++)
        ec_free(&es[i]);
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
