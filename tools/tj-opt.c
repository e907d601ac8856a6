/* tj-opt: reads Tile IR text, verifies it, runs passes, prints the result.
 *
 *   tj-opt FILE|- [-p pass,pass,...] [--verify-each] [--no-verify]
 *
 * Diagnostics go to stderr; exit 0 on success, 1 on any error, 2 on a usage
 * error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"

enum { MAX_KERNELS = 4096 };

typedef struct options {
    const char *input;
    tj_buf passes; /* comma-separated, from every -p */
    int verify_each, no_verify;
} options;

static void usage(FILE *f)
{
    fputs("usage: tj-opt FILE|- [-p pass,pass,...] [--verify-each] [--no-verify]\n"
          "  Parses Tile IR text (docs/ir.md), verifies it, runs the passes in order\n"
          "  and prints the result on stdout.\n"
          "  -p, --passes LIST  passes to run (may be repeated)\n"
          "  --verify-each      verify after every pass\n"
          "  --no-verify        do not verify the input or the result\n",
          f);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("tj-opt: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n", stderr);
    usage(stderr);
    return 2;
}

static void add_passes(options *o, const char *list)
{
    if (o->passes.len)
        tj_buf_append(&o->passes, ",", 1);
    tj_buf_append(&o->passes, list, strlen(list));
}

/* Returns -1 to go on, or the exit status. */
static int parse_options(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--passes")) {
            if (++i == argc)
                return usage_error("%s needs a list of passes", a);
            add_passes(o, argv[i]);
        } else if (!strncmp(a, "--passes=", 9)) {
            add_passes(o, a + 9);
        } else if (!strcmp(a, "--verify-each")) {
            o->verify_each = 1;
        } else if (!strcmp(a, "--no-verify")) {
            o->no_verify = 1;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (o->input) {
            return usage_error("more than one input file ('%s')", a);
        } else {
            o->input = a;
        }
    }
    if (!o->input)
        return usage_error("%s", "no input file (use - for stdin)");
    return -1;
}

/* Reads all of f; NULL (errno set) on failure. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!bigger) {
            free(buf);
            errno = ENOMEM;
            return NULL;
        }
        buf = bigger;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static char *read_input(const char *path, size_t *len)
{
    if (!strcmp(path, "-"))
        return read_all(stdin, len);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = read_all(f, len);
    int saved = errno;
    fclose(f);
    errno = saved;
    return text;
}

/* Verifies (unless disabled), runs the passes, verifies the result. */
static int process(const options *o, tj_kernel *k)
{
    if (!o->no_verify && tj_verify(k))
        return 1;
    if (o->passes.len && tj_run_passes(k, o->passes.data, o->verify_each && !o->no_verify))
        return 1;
    if (o->passes.len && !o->no_verify && tj_verify(k))
        return 1;
    return 0;
}

static int run(const options *o, tj_ctx *c, const char *text, size_t len, tj_kernel **kernels)
{
    const char *name = strcmp(o->input, "-") ? o->input : "<stdin>";
    int n = tj_parse_ir(c, name, text, len, kernels, MAX_KERNELS);
    int failed = n < 0;
    if (n == 0) {
        fprintf(stderr, "%s: error: no kernel in the input\n", name);
        return 1;
    }
    for (int i = 0; i < n; i++)
        failed |= process(o, kernels[i]);
    fputs(tj_diag_render(c), stderr);
    if (failed)
        return 1;
    tj_buf out = {0};
    for (int i = 0; i < n; i++) {
        if (i)
            tj_buf_append(&out, "\n", 1);
        tj_print_kernel(kernels[i], &out);
    }
    if (out.len)
        fwrite(out.data, 1, out.len, stdout);
    tj_buf_free(&out);
    return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
    options o = {0};
    int status = parse_options(argc, argv, &o);
    if (status >= 0) {
        tj_buf_free(&o.passes);
        return status;
    }
    size_t len = 0;
    char *text = read_input(o.input, &len);
    tj_ctx *c = text ? tj_ctx_new() : NULL;
    tj_kernel **kernels = c ? calloc(MAX_KERNELS, sizeof *kernels) : NULL;
    if (!text) {
        fprintf(stderr, "tj-opt: cannot read '%s': %s\n", o.input, strerror(errno));
        status = 1;
    } else if (!kernels) {
        fputs("tj-opt: out of memory\n", stderr);
        status = 1;
    } else {
        status = run(&o, c, text, len, kernels);
    }
    free(kernels);
    tj_ctx_free(c);
    free(text);
    tj_buf_free(&o.passes);
    return status;
}
