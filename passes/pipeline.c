/* The pass registry and pipelines: tj_run_passes runs a comma-separated
 * list of passes by name, tj_optimize the default pipeline (`ir-opt`).
 * TJ_DUMP=after-all, or a comma-separated list of pass names, prints the
 * IR to stderr after each pass (or those). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tilejit/lower.h"

typedef struct pass_entry {
    const char *name;
    tj_pass_fn fn;     /* the public entry point */
    tj_pass_impl impl; /* the same pass reporting whether it changed the IR,
                          or NULL (the pass then counts as changing it) */
} pass_entry;

/* A pass of another file registers with one line: {"name", tj_pass_name, NULL}. */
static const pass_entry pass_table[] = {
    {"canonicalize", tj_pass_canonicalize, tj_canonicalize_run},
    {"cse", tj_pass_cse, tj_cse_run},
    {"dce", tj_pass_dce, tj_dce_run},
    {"specialize", tj_pass_specialize, NULL},
    {"prefetch", tj_pass_prefetch, NULL},
    {"lower-simt", tj_pass_lower_simt, NULL},
    {"lower-simt-metal", tj_pass_lower_simt_metal, NULL},
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

static int run_one(tj_kernel *k, const pass_entry *p, int verify, int *changed)
{
    *changed = 1;
    if (p->impl ? tj_pass_guarded(k, p->impl, changed) : p->fn(k)) {
        tj_error(k->ctx, "pass '%s' failed on kernel '%s'", p->name, k->name);
        return 1;
    }
    dump_if_wanted(k, p->name);
    if (verify && tj_verify(k)) {
        tj_error(k->ctx, "internal error: the IR of kernel '%s' does not verify after pass '%s'",
                 k->name, p->name);
        return 1;
    }
    return 0;
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
