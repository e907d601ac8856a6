/* Every example kernel (examples/examples.txt: the kernels of DSL.md and
 * more, with partial tiles) through the whole Apple path: front end, Tile
 * IR, specialize, lower to SIMT IR, MSL, the emulator; its tensors must
 * match the reference interpreter (tj_interp_run) on the same random
 * inputs, within lower_check.h's tolerances (relative 1e-4 and absolute
 * 1e-5, plus a rounding step for f16/bf16 outputs; scans sum in another
 * order: absolute 1e-4), under the forward, reverse and shuffled
 * schedules, with each example's default warps and with 1 and 8 warps.
 * The emulator's results must also equal the SIMT interpreter's
 * (tj_simt_run) bit for bit: the MSL computes what the SIMT IR says (but
 * for erf, a polynomial in the MSL and libm's in the interpreter, and for
 * f32 sums the generator prints as simd_sum/quad_sum, whose order differs
 * from the shuffles', and float atomic adds, whose order is the threads':
 * float outputs of those kernels within the tolerances
 * above, integer outputs still bit for bit). */
#include "emu_case.h"

enum { MAX_CASES = 128, MAX_LINE = 512 };

typedef struct example {
    char file[64], kernel[64], shapes[160], defines[160], scalars[160];
    int warps;
    lc_opts o;
    ec_case e;
} example;

/* "softmax.tj softmax --shape M=16,N=1000 -D BLOCK=4096 eps=1e-5" */
static int parse_line(const char *line, example *ex)
{
    char buf[MAX_LINE];
    snprintf(buf, sizeof buf, "%s", line);
    char *save = NULL, *tok = strtok_r(buf, " \t\n", &save);
    if (!tok || tok[0] == '#')
        return 0;
    snprintf(ex->file, sizeof ex->file, "%s", tok);
    tok = strtok_r(NULL, " \t\n", &save);
    if (!tok)
        return 0;
    snprintf(ex->kernel, sizeof ex->kernel, "%s", tok);
    while ((tok = strtok_r(NULL, " \t\n", &save))) {
        char *dst = !strcmp(tok, "--shape") ? ex->shapes : !strcmp(tok, "-D") ? ex->defines : NULL;
        if (dst) {
            tok = strtok_r(NULL, " \t\n", &save);
            size_t n = strlen(dst);
            if (tok)
                snprintf(dst + n, 160 - n, "%s%s", n ? "," : "", tok);
        } else if (strchr(tok, '=')) {
            size_t n = strlen(ex->scalars);
            snprintf(ex->scalars + n, sizeof ex->scalars - n, "%s%s", n ? "," : "", tok);
        }
    }
    return 1;
}

/* Front end and lowering of one example; 0 after printing why not. */
static int prepare(example *ex)
{
    char path[512], what[160];
    snprintf(path, sizeof path, "%.400s/examples/%.63s", eu_source_dir(), ex->file);
    snprintf(what, sizeof what, "%s %s", ex->file, ex->kernel);
    char *src = eu_read_file(path);
    ex->o = lc_defaults();
    if (!strcmp(ex->kernel, "cumsum_rows"))
        ex->o.atol = 1e-4; /* a prefix sum of 1000 values of about 1, in another order */
    ex->o.shapes = ex->shapes;
    ex->o.scalars = ex->scalars;
    int ok = ec_lower(&ex->e, what, ex->file, src, ex->kernel, ex->defines, ex->shapes, ex->warps, &ex->o);
    free(src);
    return ok;
}

/* Whether the MSL sums f32 values with simd_sum or quad_sum (codegen/msl/
 * msl_reduce.c): a line `float vN = metal::simd_sum(...)`. */
static int sums_floats_in_groups(const char *msl)
{
    static const char *const calls[] = {" = metal::simd_sum(", " = metal::quad_sum("};
    /* float atomic adds land in the order the threads reach them, which the
     * emulator's schedules and the interpreter's need not share */
    if (strstr(msl, "atomic_fetch_add_explicit((device metal::atomic_float") || strstr(msl, "tj_atom_add_f"))
        return 1;
    for (int c = 0; c < 2; c++)
        for (const char *p = msl; (p = strstr(p, calls[c])); p++) {
            const char *line = p;
            while (line > msl && line[-1] != '\n')
                line--;
            line += strspn(line, " ");
            if (!strncmp(line, "float ", 6))
                return 1;
        }
    return 0;
}

/* Tensor p of the emulator (got) within the example's tolerances of the
 * SIMT interpreter's (in run.simt). */
static int close_to_simt(example *ex, uint32_t p, const void *got, const char *what)
{
    lc_run *run = &ex->e.run;
    tj_dtype dt = run->params[p].dtype;
    for (size_t i = 0; i < run->count[p]; i++) {
        double want = lc_get(dt, run->simt[p].tensor.data, i), have = lc_get(dt, got, i);
        if (!lc_same(dt, want, have, &ex->o)) {
            printf("FAIL %s %s[%zu]: msl %.9g, SIMT interpreter %.9g\n", what, run->params[p].name, i, have, want);
            return 0;
        }
    }
    return 1;
}

/* The emulator's tensors (in run.simt) against the SIMT interpreter's. */
static void check_bit_exact(example *ex, const char *what)
{
    lc_run *run = &ex->e.run;
    int reordered = sums_floats_in_groups(ex->e.msl);
    void *saved[LC_MAX_ARGS] = {0};
    for (uint32_t p = 0; p < run->nparams; p++)
        if (run->params[p].rank && (saved[p] = malloc(run->bytes[p])))
            memcpy(saved[p], run->simt[p].tensor.data, run->bytes[p]);
    lc_reset(run);
    if (tj_simt_run(ex->e.simt, run->simt, run->nparams))
        EU_CHECK(0, "%s: SIMT interpreter: %s", what, tj_diag_render(run->c));
    else
        for (uint32_t p = 0; p < run->nparams; p++) {
            tj_dtype dt = run->params[p].dtype;
            if (!saved[p])
                continue;
            if ((reordered && tj_dtype_is_float(dt)) ? !close_to_simt(ex, p, saved[p], what)
                                                     : !el_compare(what, run->params[p].name, dt, saved[p],
                                                                   run->simt[p].tensor.data, run->count[p], 0))
                eu_failures++;
        }
    for (uint32_t p = 0; p < run->nparams; p++)
        free(saved[p]);
}

static void check(void *so, int source, example *ex)
{
    static const uint32_t schedules[] = {0, 1, 3};
    char what[512];
    for (int s = 0; s < 3; s++) {
        snprintf(what, sizeof what, "%.63s %.63s %.159s warps=%d (schedule %u)", ex->file, ex->kernel, ex->shapes,
                 (int)ex->e.simt->nthreads / 32, schedules[s]);
        if (!ec_check_schedule(so, source, &ex->e, &ex->o, what, schedules[s]))
            return;
        if (s == 0 && !strstr(ex->e.msl, "tj_erf("))
            check_bit_exact(ex, what);
    }
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/examples.txt", eu_source_dir());
    char *list = eu_read_file(path);
    if (!list) {
        printf("cannot read %s\n", path);
        return 1;
    }
    static example exs[MAX_CASES];
    int n = 0;
    static const int warps[] = {0, 1, 8};
    for (char *line = list, *next; line && *line && n < MAX_CASES - 3; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        example base = {0};
        if (!parse_line(line, &base))
            continue;
        for (int w = 0; w < 3; w++) {
            exs[n] = base;
            exs[n].warps = warps[w];
            n++;
        }
    }
    free(list);
    const char *srcs[MAX_CASES];
    int ok = 1;
    for (int i = 0; i < n; i++) {
        ok &= prepare(&exs[i]);
        srcs[i] = exs[i].e.msl ? exs[i].e.msl : "";
    }
    EU_CHECK(ok, "every example lowers to MSL");
    double t0 = eu_now();
    void *so = ok ? eu_build(srcs, n, "examples") : NULL;
    printf("%d example configurations: MSL compiled for the emulator in %.1f s\n", n, eu_now() - t0);
    EU_CHECK(so, "the examples' MSL compiles");
    t0 = eu_now();
    for (int i = 0; so && i < n; i++)
        check(so, i, &exs[i]);
    printf("ran in %.1f s\n", eu_now() - t0);
    mtl_emu_close(so);
    for (int i = 0; i < n; i++)
        ec_free(&exs[i].e);
    printf("%s: %d failure(s)\n", eu_failures ? "FAIL" : "PASS", eu_failures);
    return eu_failures != 0;
}
