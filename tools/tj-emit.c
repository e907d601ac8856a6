/* tj-ptx and tj-msl (this file, built twice): read SIMT IR text, verify
 * it and print the PTX (one module per kernel) or the Metal Shading
 * Language (one source per kernel) of each kernel, for tests and for
 * looking at a generator's output.
 *
 *   tj-ptx FILE|- [--arch sm_80|sm_90a|...] [--no-verify]
 *   tj-msl FILE|- [--no-verify]
 *
 * Diagnostics go to stderr; exit 0 on success, 1 on any error, 2 on a usage
 * error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"

enum { MAX_KERNELS = 1024 };

#ifdef TJ_EMIT_MSL
#define TOOL "tj-msl"
#else
#define TOOL "tj-ptx"
#endif

static int usage(FILE *f, int status)
{
#ifdef TJ_EMIT_MSL
    fputs("usage: tj-msl FILE|- [--no-verify]\n"
          "  Parses SIMT IR text (docs/simt.md), verifies it and prints the MSL of\n"
          "  every kernel on stdout (docs/metal.md).\n",
          f);
#else
    fputs("usage: tj-ptx FILE|- [--arch ARCH] [--no-verify]\n"
          "  Parses SIMT IR text (docs/simt.md), verifies it and prints the PTX of\n"
          "  every kernel on stdout.\n"
          "  --arch ARCH   target: sm_80 (default), sm_86, sm_89, sm_90, sm_90a, ...\n",
          f);
#endif
    fputs("  --no-verify   do not run the verifier first\n", f);
    return status;
}

static int emit_one(const tj_kernel *k, const char *arch, tj_buf *out)
{
#ifdef TJ_EMIT_MSL
    (void)arch;
    return tj_emit_msl(k, out);
#else
    return tj_emit_ptx(k, arch, out);
#endif
}

static char *read_input(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf && (n += fread(buf + n, 1, cap - n, f)) == cap) {
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger)
            free(buf);
        buf = bigger;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

static int emit_all(tj_ctx *c, const char *name, const char *text, size_t len, const char *arch, int verify)
{
    tj_kernel **kernels = calloc(MAX_KERNELS, sizeof *kernels);
    if (!kernels)
        return 1;
    int n = tj_parse_ir(c, name, text, len, kernels, MAX_KERNELS), failed = n <= 0;
    if (n == 0)
        fprintf(stderr, "%s: error: no kernel in the input\n", name);
    tj_buf out = {0};
    for (int i = 0; i < n && !failed; i++) {
        if (verify && tj_verify(kernels[i])) {
            failed = 1;
            break;
        }
        if (i)
            tj_buf_append(&out, "\n", 1);
        failed = emit_one(kernels[i], arch, &out) != 0;
    }
    fputs(tj_diag_render(c), stderr);
    if (!failed && out.len)
        fwrite(out.data, 1, out.len, stdout);
    tj_buf_free(&out);
    free(kernels);
    return failed || fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *input = NULL, *arch = "sm_80";
    int verify = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout, 0);
#ifndef TJ_EMIT_MSL
        if (!strcmp(argv[i], "--arch")) {
            if (i + 1 == argc)
                return fputs(TOOL ": --arch needs a target (e.g. sm_90a)\n", stderr), usage(stderr, 2);
            arch = argv[++i];
            continue;
        }
        if (!strncmp(argv[i], "--arch=", 7)) {
            arch = argv[i] + 7;
            continue;
        }
#endif
        if (!strcmp(argv[i], "--no-verify"))
            verify = 0;
        else if (argv[i][0] == '-' && argv[i][1])
            return fprintf(stderr, TOOL ": unknown option '%s'\n", argv[i]), usage(stderr, 2);
        else if (input)
            return fprintf(stderr, TOOL ": more than one input ('%s')\n", argv[i]), usage(stderr, 2);
        else
            input = argv[i];
    }
    if (!input)
        return fputs(TOOL ": no input file (use - for stdin)\n", stderr), usage(stderr, 2);
    size_t len = 0;
    char *text = read_input(input, &len);
    if (!text) {
        fprintf(stderr, TOOL ": cannot read '%s': %s\n", input, strerror(errno));
        return 1;
    }
    tj_ctx *c = tj_ctx_new();
    int status = c ? emit_all(c, strcmp(input, "-") ? input : "<stdin>", text, len, arch, verify) : 1;
    tj_ctx_free(c);
    free(text);
    return status;
}
