/* The passes by name: tj_run_passes runs a comma-separated list of them,
 * tj_optimize the optimization rounds (`ir-opt`, the pipeline's optimize
 * steps). TJ_DUMP=after-all, or a comma-separated list of pass and step
 * names, prints the IR to stderr after each pass (or those); TJ_VERIFY=1
 * verifies after each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"
#include "pipeline/pipeline_internal.h"

typedef struct pass_entry {
    const char *name;
    tj_pass_fn fn;     /* the public entry point */
    tj_pass_impl impl; /* the same pass reporting whether it changed the IR,
                          or NULL (the pass then counts as changing it) */
    int steps;         /* runs pipeline steps, which print and verify themselves */
} pass_entry;

/* The pipeline's steps from prefetch to the lowering, in place. */
static int lower_in_place(tj_kernel *k, tj_lower_target target, int wgmma)
{
    tj_pipeline_options o = {.lower.target = target, .lower.wgmma = wgmma};
    tj_kernel *simt = k;
    if (tj_pipeline_run(&simt, TJ_STEP_PREFETCH, TJ_STEP_OPTIMIZE_SIMT, &o))
        return 1;
    *k = *simt; /* both live in the context's arena */
    return 0;
}

static int lower_simt_cuda(tj_kernel *k) { return lower_in_place(k, TJ_LOWER_CUDA, 0); }
static int lower_simt_sm90a(tj_kernel *k) { return lower_in_place(k, TJ_LOWER_CUDA, 1); }
static int lower_simt_metal(tj_kernel *k) { return lower_in_place(k, TJ_LOWER_METAL, 0); }

/* A pass of another file registers with one line: {"name", tj_pass_name, NULL, 0}. */
static const pass_entry pass_table[] = {
    {"canonicalize", tj_pass_canonicalize, tj_canonicalize_run, 0},
    {"cse", tj_pass_cse, tj_cse_run, 0},
    {"dce", tj_pass_dce, tj_dce_run, 0},
    {"specialize", tj_pass_specialize, NULL, 0},
    {"prefetch", tj_pass_prefetch, NULL, 0},
    {"lower-simt", lower_simt_cuda, NULL, 1},
    {"lower-simt-sm90a", lower_simt_sm90a, NULL, 1}, /* dot on wgmma */
    {"lower-simt-metal", lower_simt_metal, NULL, 1},
};
enum { NPASSES = sizeof pass_table / sizeof pass_table[0] };

/* Rounds of canonicalize, cse, dce that tj_optimize runs at most. */
enum { MAX_OPT_ROUNDS = 4 };

static const pass_entry *find_pass(const char *name, size_t len)
{
    for (int i = 0; i < NPASSES; i++)
        if (strlen(pass_table[i].name) == len && !memcmp(pass_table[i].name, name, len))
            return &pass_table[i];
    return NULL;
}

tj_pass_fn tj_pass_lookup(const char *name)
{
    const pass_entry *p = name ? find_pass(name, strlen(name)) : NULL;
    return p ? p->fn : NULL;
}

/* The next name of a comma-separated list, without surrounding blanks;
 * advances *s past it. Returns 0 at the end of the list. */
static int next_name(const char **s, const char **name, size_t *len)
{
    const char *p = *s;
    if (!*p)
        return 0;
    const char *end = strchr(p, ',');
    if (!end)
        end = p + strlen(p);
    *s = *end ? end + 1 : end;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *name = p;
    *len = (size_t)(end - p);
    return 1;
}

static int name_in_list(const char *list, const char *name)
{
    const char *n;
    size_t len;
    while (next_name(&list, &n, &len))
        if (len == strlen(name) && !memcmp(n, name, len))
            return 1;
    return 0;
}

/* Read at each call, so a caller may change TJ_DUMP between runs. */
static void dump_if_wanted(const tj_kernel *k, const char *pass)
{
    const char *want = getenv("TJ_DUMP");
    if (!want || (strcmp(want, "after-all") && !name_in_list(want, pass)))
        return;
    tj_buf text = {0};
    tj_print_kernel(k, &text);
    fprintf(stderr, "// -----// IR after %s //----- //\n%s", pass, text.data ? text.data : "");
    tj_buf_free(&text);
}

static int verify_wanted(int verify)
{
    const char *env = getenv("TJ_VERIFY");
    return verify || (env && *env && strcmp(env, "0"));
}

int tj_pipeline_after(tj_kernel *k, const char *name, int verify)
{
    dump_if_wanted(k, name);
    if (verify_wanted(verify) && tj_verify(k)) {
        tj_error(k->ctx, "internal error: the IR of kernel '%s' does not verify after pass '%s'",
                 k->name, name);
        return 1;
    }
    return 0;
}

static int run_one(tj_kernel *k, const pass_entry *p, int verify, int *changed)
{
    *changed = 1;
    if (p->impl ? tj_pass_guarded(k, p->impl, changed) : p->fn(k)) {
        tj_error(k->ctx, "pass '%s' failed on kernel '%s'", p->name, k->name);
        return 1;
    }
    return p->steps ? 0 : tj_pipeline_after(k, p->name, verify);
}

static void report_unknown(tj_kernel *k, const char *name, size_t len)
{
    char known[256] = "";
    for (int i = 0; i < NPASSES; i++) {
        if (i)
            strncat(known, ", ", sizeof known - strlen(known) - 1);
        strncat(known, pass_table[i].name, sizeof known - strlen(known) - 1);
    }
    int shown = len > 64 ? 64 : (int)len;
    tj_error(k->ctx, "unknown pass '%.*s%s'; known passes: %s", shown, name,
             len > 64 ? "..." : "", known);
}

int tj_run_passes(tj_kernel *k, const char *names, int verify)
{
    if (!k)
        return 1;
    const char *s = names ? names : "", *name;
    size_t len;
    int bad = 0;
    while (next_name(&s, &name, &len)) /* check every name before running any */
        if (len && !find_pass(name, len)) {
            report_unknown(k, name, len);
            bad = 1;
        }
    if (bad)
        return 1;
    int changed = 0;
    for (s = names ? names : ""; next_name(&s, &name, &len);)
        if (len && run_one(k, find_pass(name, len), verify, &changed))
            return 1;
    return 0;
}

static const pass_entry *entry(const char *name) { return find_pass(name, strlen(name)); }

int tj_optimize(tj_kernel *k, int verify)
{
    if (!k)
        return 1;
    const pass_entry *canon = entry("canonicalize"), *cse = entry("cse"), *dce = entry("dce");
    int changed = 0;
    if (run_one(k, canon, verify, &changed))
        return 1;
    for (int round = 0; round < MAX_OPT_ROUNDS; round++) {
        int merged = 0, removed = 0;
        if (run_one(k, cse, verify, &merged) || run_one(k, dce, verify, &removed))
            return 1;
        /* Canonicalize again only when CSE or DCE exposed something new. */
        if (!merged && !removed)
            break;
        if (run_one(k, canon, verify, &changed))
            return 1;
        if (!changed)
            break;
    }
    return 0;
}
