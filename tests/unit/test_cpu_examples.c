/* Every line of examples/examples.txt, natively (the LLVM cpu back end)
 * against the reference interpreter, on random arguments. */
#include <criterion/criterion.h>

#include "cpu_check.h"

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

/* "--shape A=1,B=2 -D X=1 eps=1e-5" -> the options' strings (in buf). */
static void parse_options(char *words, lc_opts *o, char *scalars, size_t cap)
{
    scalars[0] = 0;
    for (char *w = strtok(words, " \t"); w; w = strtok(NULL, " \t")) {
        if (!strcmp(w, "--shape"))
            o->shapes = strtok(NULL, " \t");
        else if (!strcmp(w, "-D"))
            o->defines = strtok(NULL, " \t");
        else if (strchr(w, '=')) {
            size_t len = strlen(scalars);
            snprintf(scalars + len, cap - len, "%s%s", len ? "," : "", w);
        }
    }
    o->scalars = scalars;
}

static int check_line(const char *root, char *line)
{
    char file[64], kernel[64], path[512], scalars[256];
    int used = 0;
    if (sscanf(line, "%63s %63s %n", file, kernel, &used) < 2)
        return 1;
    lc_opts o = lc_defaults();
    o.lo = -1, o.hi = 1, o.ilo = 0, o.ihi = 12; /* as `run --random`: small integers (indices) */
    parse_options(line + used, &o, scalars, sizeof scalars);
    snprintf(path, sizeof path, "%s/examples/%s", root, file);
    char *src = read_text(path);
    if (!src) {
        fprintf(stderr, "cannot read %s\n", path);
        return 0;
    }
    int ok = cc_check_tj(src, kernel, &o);
    fprintf(stderr, "%s %s %s: %s\n", file, kernel, o.shapes ? o.shapes : "", ok ? "same" : "DIFFERENT");
    free(src);
    return ok;
}

Test(cpu_examples, every_example_matches_the_interpreter, .timeout = 600)
{
    CC_REQUIRE_LLVM();
    const char *root = getenv("TJ_SOURCE_DIR");
    cr_assert(root, "TJ_SOURCE_DIR is not set");
    char path[512];
    snprintf(path, sizeof path, "%s/examples/examples.txt", root);
    char *list = read_text(path);
    cr_assert(list, "cannot read %s", path);
    int failed = 0, checked = 0;
    for (char *line = list, *end; *line; line = *end ? end + 1 : end) {
        end = line + strcspn(line, "\n");
        char copy[512];
        snprintf(copy, sizeof copy, "%.*s", (int)(end - line), line);
        if (copy[0] == '#' || !copy[0])
            continue;
        failed += !check_line(root, copy);
        checked++;
    }
    free(list);
    cr_expect(checked >= 18, "only %d examples", checked);
    cr_expect_eq(failed, 0, "%d of %d examples differ from the interpreter", failed, checked);
}
