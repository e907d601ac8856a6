/* Diagnostics: collected in the context, rendered with the source line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ctx_internal.h"

static char *vformat(tj_ctx *c, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *s = tj_alloc(c, (size_t)n + 1);
    if (!s)
        return NULL;
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

int tj_rt_fail(tj_rt_error *err, const char *fmt, ...)
{
    if (err && fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return 1;
}

void tj_diag_report(tj_ctx *c, tj_severity sev, uint32_t file, uint32_t line,
                    uint32_t col, const char *fmt, ...)
{
    if (!c || !fmt)
        return;
    if ((unsigned)sev > TJ_SEV_NOTE)
        sev = TJ_SEV_ERROR; /* said by a caller with a bad severity, still said */
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(c, fmt, ap);
    va_end(ap);
    /* Out of memory outside a guard: the error is still counted. */
    tj_diag *diags = msg ? tj_grow(c, c->diags, &c->dcap, c->ndiags + 1, sizeof *c->diags) : NULL;
    if (diags) {
        c->diags = diags;
        c->diags[c->ndiags++] = (tj_diag){sev, file, line, col, msg};
    }
    if (sev == TJ_SEV_ERROR)
        c->nerrors++;
}

uint32_t tj_diag_count(const tj_ctx *c) { return c ? c->ndiags : 0; }
uint32_t tj_error_count(const tj_ctx *c) { return c ? c->nerrors : 0; }
const tj_diag *tj_diag_get(const tj_ctx *c, uint32_t i) { return c && i < c->ndiags ? &c->diags[i] : NULL; }

void tj_diag_clear(tj_ctx *c) { tj_diag_truncate(c, 0); }

void tj_diag_truncate(tj_ctx *c, uint32_t n)
{
    if (!c)
        return;
    while (c->ndiags > n)
        c->nerrors -= c->diags[--c->ndiags].sev == TJ_SEV_ERROR;
    if (n == 0)
        c->nerrors = 0; /* with the errors out of memory left unworded */
}

static const char *severity_name(tj_severity s)
{
    return s == TJ_SEV_ERROR ? "error" : s == TJ_SEV_WARNING ? "warning" : "note";
}

enum { QUOTE_MAX = 160 }; /* longest stretch of a source line quoted */

/* Appends the source line `line` of `file` and a caret under column `col`.
 * Tabs are kept so the caret lines up in a terminal; bytes that are not
 * printable show as '?'; a long line is cut to a window around the column. */
static void render_source_line(const tj_ctx *c, const tj_diag *d, tj_buf *out)
{
    size_t len;
    const char *text = tj_source_text(c, d->file, &len);
    if (!text || !d->line)
        return;
    const char *p = text, *end = text + len;
    for (uint32_t l = 1; l < d->line && p < end; p++)
        if (*p == '\n')
            l++;
    if (p >= end && !(d->line == 1 && len == 0))
        return;
    const char *eol = p;
    while (eol < end && *eol != '\n')
        eol++;
    size_t col = d->col ? d->col - 1 : 0;
    size_t first = col > QUOTE_MAX / 2 ? col - QUOTE_MAX / 2 : 0;
    if (first > (size_t)(eol - p))
        first = (size_t)(eol - p);
    const char *from = p + first, *to = eol - from > QUOTE_MAX ? from + QUOTE_MAX : eol;
    tj_buf_append(out, first ? "  ..." : "  ", first ? 5 : 2);
    for (const char *q = from; q < to; q++)
        tj_buf_append(out, (*q >= 32 && *q < 127) || *q == '\t' ? q : "?", 1);
    tj_buf_append(out, to < eol ? "...\n  " : "\n  ", to < eol ? 6 : 3);
    if (first)
        tj_buf_append(out, "   ", 3);
    for (const char *q = from; q < p + col && q < to; q++)
        tj_buf_append(out, *q == '\t' ? "\t" : " ", 1);
    tj_buf_append(out, "^\n", 2);
}

const char *tj_diag_render(tj_ctx *c)
{
    if (!c)
        return "";
    tj_buf out = {0};
    for (uint32_t i = 0; i < c->ndiags; i++) {
        const tj_diag *d = &c->diags[i];
        const char *name = tj_source_name(c, d->file);
        if (name && d->line)
            tj_buf_printf(&out, "%s:%u:%u: ", name, d->line, d->col);
        else if (name)
            tj_buf_printf(&out, "%s: ", name);
        tj_buf_printf(&out, "%s: %s\n", severity_name(d->sev), d->msg);
        render_source_line(c, d, &out);
    }
    char *s = tj_strndup(c, out.data ? out.data : "", out.len);
    tj_buf_free(&out);
    return s;
}
