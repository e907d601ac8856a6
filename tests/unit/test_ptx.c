/* The PTX code generator: every kernel of the SIMT catalogue
 * (simt_kernels.h: every SIMT op and dtype) is emitted for sm_80 and
 * sm_90a and assembled by ptxas; errors are reported, not crashes; and
 * emitting is fast. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <time.h>

#include "ptxas_util.h"
#include "simt_kernels.h"

static const char *const archs[] = {"sm_80", "sm_90a"};

static char ptxas_path[1024];

static const char *ptxas_or_skip(void)
{
    const char *p = pa_find_ptxas(ptxas_path, sizeof ptxas_path);
    if (!p)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    return p;
}

/* Emits kb's kernel for arch; fails the test with the diagnostics. */
static int emit(tt_kb *kb, const char *arch, tj_buf *out)
{
    int rc = tj_emit_ptx(kb->k, arch, out);
    cr_expect_eq(rc, 0, "emitting %s for %s failed:\n%s", kb->k->name, arch, tj_diag_render(kb->c));
    return rc;
}

/* Merges modules of one arch: the first keeps its header, the others only
 * their entries (one ptxas run per group instead of one per kernel). */
static void merge(tj_buf *group, const tj_buf *module)
{
    const char *entry = strstr(module->data, ".visible .entry");
    if (!group->len) {
        tj_buf_append(group, module->data, module->len);
        if (!strstr(module->data, ".extern .shared"))
            tj_buf_printf(group, "\n.extern .shared .align 16 .b8 tj_smem[];\n");
        return;
    }
    tj_buf_append(group, "\n", 1);
    tj_buf_append(group, entry, strlen(entry));
}

/* Assembles the catalogue's kernels [first, last) for both archs. */
static void assemble_range(int first, int last)
{
    const char *ptxas = ptxas_or_skip();
    for (int a = 0; a < 2; a++) {
        tj_buf group = {0};
        tj_buf singles[128] = {{0}};
        char names[128][64];
        int n = 0;
        for (int i = first; i < last && n < 128; i++) {
            tt_kb kb;
            int rc = sk_build(&kb, i);
            if (rc == 0)
                break;
            if (rc < 0)
                continue;
            cr_expect_eq(tj_verify(kb.k), 0, "kernel %s does not verify:\n%s", kb.k->name, tj_diag_render(kb.c));
            if (emit(&kb, archs[a], &singles[n]) == 0) {
                merge(&group, &singles[n]);
                snprintf(names[n], sizeof names[n], "%s", kb.k->name);
                n++;
            }
            tt_free(&kb);
        }
        tj_buf log = {0};
        int rc = group.len ? pa_assemble(ptxas, group.data, group.len, archs[a], &log) : 0;
        if (rc != 0) /* find the culprits one by one */
            for (int k = 0; k < n; k++) {
                tj_buf one = {0};
                int r1 = pa_assemble(ptxas, singles[k].data, singles[k].len, archs[a], &one);
                cr_expect_eq(r1, 0, "ptxas -arch=%s rejects kernel %s:\n%s\n%s", archs[a], names[k],
                             one.data ? one.data : "", singles[k].data);
                tj_buf_free(&one);
            }
        cr_expect_eq(rc, 0, "ptxas -arch=%s failed on kernels %d..%d:\n%s", archs[a], first, last,
                     log.data ? log.data : "");
        tj_buf_free(&log);
        tj_buf_free(&group);
        for (int k = 0; k < n; k++)
            tj_buf_free(&singles[k]);
    }
}

/* catalogue sections (see sk_build) */
#define SECTION(name, first, count) \
    Test(ptx, name) { assemble_range(first, (first) + (count)); }

SECTION(binary, 0, SK_NDTYPES)
SECTION(compare, SK_NDTYPES, SK_NDTYPES)
SECTION(unary, 2 * SK_NDTYPES, SK_NDTYPES)
SECTION(cast, 3 * SK_NDTYPES, SK_NDTYPES)
SECTION(select_fma, 4 * SK_NDTYPES, SK_NDTYPES)
SECTION(vector_memory, 5 * SK_NDTYPES, 5 * SK_NDTYPES)
SECTION(shared_memory, 10 * SK_NDTYPES, 2 * SK_NDTYPES)
SECTION(atomics, 12 * SK_NDTYPES, 3 * (SK_NDTYPES - 1))
SECTION(shuffles, 15 * SK_NDTYPES - 3, 2 * SK_NDTYPES)
SECTION(control_params_grid, 17 * SK_NDTYPES - 3, 3)

Test(ptx, catalogue_is_covered)
{
    /* every index up to the end belongs to a section above */
    tt_kb kb;
    int end = 17 * SK_NDTYPES - 3 + 3;
    cr_assert_eq(sk_build(&kb, end), 0, "the catalogue grew: add a section");
    cr_assert_eq(sk_build(&kb, end - 1), 1);
    tt_free(&kb);
}
