/* tj-array: the array graph's passes from text, for lit tests (docs/arrays.md).
 *
 *   tj-array FILE            the graph parsed and printed back (its inputs are placeholders)
 *   tj-array FILE -p fuse    the fused groups
 *   tj-array FILE -p tile    with each group's space and tile sizes
 *   tj-array FILE -p emit    with each group's kernel source
 *
 * FILE "-" reads stdin. Errors go to stderr; exit 1 on an error, 2 for a
 * malformed command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/array.h"

static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *more = realloc(buf, cap *= 2);
        if (!more)
            free(buf);
        buf = more;
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *stage = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            stage = argv[++i];
        else if (!path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: tj-array FILE [-p fuse|tile|emit]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: tj-array FILE [-p fuse|tile|emit]\n");
        return 2;
    }
    size_t len;
    char *text = read_all(path, &len);
    if (!text) {
        fprintf(stderr, "tj-array: cannot read %s\n", path);
        return 1;
    }
    tj_rt_error err = {{0}};
    tj_graph *g = tj_graph_new(TJ_DEVICE_INTERP, 0, &err);
    tj_array out[64];
    int n = g ? tj_graph_parse(g, text, len, NULL, 0, out, 64, &err) : -1;
    int rc = 1;
    if (n > 64)
        snprintf(err.msg, sizeof err.msg, "tj-array: %d outputs (at most 64)", n);
    else if (n >= 0) {
        tj_buf b = {0};
        int bad = stage ? tj_graph_plan(g, out, (uint32_t)n, stage, &b, &err)
                        : tj_graph_print(g, out, (uint32_t)n, &b, &err);
        if (!bad) {
            fwrite(b.data ? b.data : "", 1, b.len, stdout);
            rc = 0;
        }
        tj_buf_free(&b);
    }
    if (rc)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    tj_graph_free(g);
    free(text);
    return rc;
}
