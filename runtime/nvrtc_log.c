/* NVRTC's log as tilejit diagnostics. NVRTC writes
 *
 *   k.cu(6): error: identifier "undefined_thing" is undefined
 *     x[0] = 1 + undefined_thing;
 *                ^
 *             detected during instantiation of "..." at line 12 of k.cu
 *
 *   1 error detected in the compilation of "k.cu".
 *
 * which becomes `k.cu:6:16: error: ...` with the line quoted by
 * tj_diag_render: the column comes from the caret (NVRTC indents its
 * quote by two spaces and keeps its tabs, so the caret's offset counts
 * bytes), trusted only when the quote is the source's line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/nvrtc_internal.h"

enum { MAX_FILES = 16, QUOTE_INDENT = 2 };
#define NAME_MAP "__nv_name_map"

/* The files diagnostics name: each registered once with its text. */
typedef struct log_files {
    tj_ctx *c;
    const tj_cuda_source *src;
    const char *names[MAX_FILES];
    uint32_t ids[MAX_FILES];
    int n;
} log_files;

static const char *known_text(const tj_cuda_source *src, const char *name, size_t *len)
{
    if (!strcmp(name, tj_nvrtc_file_name(src))) {
        *len = strnlen(src->source, src->len);
        return src->source;
    }
    for (uint32_t i = 0; i < src->nheaders; i++)
        if (!strcmp(name, src->headers[i].name)) {
            *len = strlen(src->headers[i].text);
            return src->headers[i].text;
        }
    *len = 0;
    return ""; /* a file NVRTC found itself: named, not quoted */
}

static uint32_t file_id(log_files *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name))
            return f->ids[i];
    size_t len;
    const char *text = known_text(f->src, name, &len);
    uint32_t id = tj_source_add(f->c, name, text, len);
    if (f->n < MAX_FILES) {
        f->names[f->n] = tj_source_name(f->c, id);
        f->ids[f->n++] = id;
    }
    return id;
}

/* One line of the log, copied (NUL-terminated) into buf. */
static const char *next_line(const char *p, char *buf, size_t n)
{
    size_t len = strcspn(p, "\n");
    size_t keep = len < n - 1 ? len : n - 1;
    memcpy(buf, p, keep);
    buf[keep] = 0;
    if (keep && buf[keep - 1] == '\r')
        buf[keep - 1] = 0;
    return p[len] ? p + len + 1 : p + len;
}

typedef struct located {
    char file[512];
    uint32_t line;
    tj_severity sev;
    const char *msg;
} located;

static int parse_severity(const char *s, tj_severity *sev, const char **rest)
{
    static const struct {
        const char *word;
        tj_severity sev;
    } words[] = {{"catastrophic error", TJ_SEV_ERROR}, {"error", TJ_SEV_ERROR},
                 {"warning", TJ_SEV_WARNING}, {"remark", TJ_SEV_NOTE}, {"note", TJ_SEV_NOTE}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if (strncmp(s, words[i].word, n) || (s[n] != ':' && s[n] != ' '))
            continue;
        const char *colon = strstr(s + n, ": "); /* after " #177-D" */
        if (!colon)
            return 1;
        *sev = words[i].sev;
        *rest = colon + 2;
        return 0;
    }
    return 1;
}

/* "FILE(LINE): SEVERITY[ #N-D]: MESSAGE". */
static int parse_located(const char *s, located *out)
{
    const char *close = strstr(s, "): ");
    if (!close)
        return 1;
    const char *open = close;
    while (open > s && open[-1] >= '0' && open[-1] <= '9')
        open--;
    if (open == close || open == s || open[-1] != '(' || (size_t)(open - 1 - s) >= sizeof out->file)
        return 1;
    snprintf(out->file, sizeof out->file, "%.*s", (int)(open - 1 - s), s);
    out->line = (uint32_t)strtoul(open, NULL, 10);
    return parse_severity(close + 3, &out->sev, &out->msg);
}

/* The source's line `line` of file `id`, as a pointer and length. */
static const char *source_line(const tj_ctx *c, uint32_t id, uint32_t line, size_t *len)
{
    size_t n;
    const char *p = tj_source_text(c, id, &n), *end = p ? p + n : NULL;
    for (uint32_t l = 1; p && l < line && p < end; p++)
        if (*p == '\n')
            l++;
    if (!p || p >= end)
        return NULL;
    *len = strcspn(p, "\n");
    return p;
}

/* The column under the caret when `quote` is the source's line, else 1. */
static uint32_t caret_column(const tj_ctx *c, uint32_t id, uint32_t line, const char *quote, const char *caret)
{
    size_t len;
    const char *text = source_line(c, id, line, &len);
    const char *hat = strchr(caret, '^');
    if (!text || !hat || strspn(caret, " \t") != (size_t)(hat - caret) || strlen(quote) < QUOTE_INDENT ||
        strncmp(quote + QUOTE_INDENT, text, len) || quote[QUOTE_INDENT + len])
        return 1;
    size_t col = (size_t)(hat - caret);
    return col >= QUOTE_INDENT ? (uint32_t)(col - QUOTE_INDENT + 1) : 1;
}

static int is_caret_line(const char *s)
{
    size_t spaces = strspn(s, " \t"); /* NVRTC keeps the quote's tabs */
    return s[spaces] == '^' && !s[spaces + 1];
}

/* Lines without a location: a note for "detected during ...", an error for
 * "...error: ...", nothing for the summary and blank lines. */
static uint32_t report_plain(tj_ctx *c, const char *s)
{
    s += strspn(s, " \t");
    if (!*s || strstr(s, "detected in the compilation of") || !strncmp(s, "Remark: The warnings can be"
                                                                           " suppressed", 35))
        return 0;
    int is_error = strstr(s, "error") != NULL && strstr(s, "detected during") == NULL;
    tj_diag_report(c, is_error ? TJ_SEV_ERROR : TJ_SEV_NOTE, 0, 0, 0, "%s", s);
    return (uint32_t)is_error;
}

/* NVRTC looks the kernel's name expression up in a file of its own: an
 * error there means the kernel (or its template arguments) is not in the
 * source. Reported once, skipping the quote and caret. */
static uint32_t report_name_map(tj_ctx *c, const tj_cuda_source *src, const char **p, int *named)
{
    char skip[2048];
    for (int i = 0; i < 2 && **p && strncmp(*p, NAME_MAP, strlen(NAME_MAP)); i++)
        *p = next_line(*p, skip, sizeof skip);
    if (*named)
        return 0;
    *named = 1;
    tj_diag_report(c, TJ_SEV_ERROR, 0, 0, 0, "no kernel '%s' in %s (NVRTC cannot resolve the name%s)",
                   src->kernel ? src->kernel : "", tj_nvrtc_file_name(src),
                   src->kernel && strchr(src->kernel, '<') ? " with these template arguments" : "");
    return 1;
}

uint32_t tj_nvrtc_log_to_diags(tj_ctx *c, const tj_cuda_source *src, const char *log)
{
    if (!c || !src || !log)
        return 0;
    log_files files = {.c = c, .src = src};
    char line[2048], quote[2048], caret[2048];
    uint32_t errors = 0;
    int named = 0;
    for (const char *p = log; *p;) {
        p = next_line(p, line, sizeof line);
        located at;
        if (parse_located(line, &at)) {
            errors += report_plain(c, line);
            continue;
        }
        if (!strcmp(at.file, NAME_MAP)) {
            errors += report_name_map(c, src, &p, &named);
            continue;
        }
        uint32_t id = file_id(&files, at.file), col = 1;
        const char *after_quote = next_line(p, quote, sizeof quote);
        const char *after_caret = next_line(after_quote, caret, sizeof caret);
        if (*p && is_caret_line(caret)) {
            col = caret_column(c, id, at.line, quote, caret);
            p = after_caret;
        }
        tj_diag_report(c, at.sev, id, at.line, col, "%s", at.msg);
        errors += at.sev == TJ_SEV_ERROR;
    }
    return errors;
}
