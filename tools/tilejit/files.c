/* Reading sources, reporting about files, and writing text output. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MAX_SOURCE_BYTES = 64 << 20 };

static void file_diag(tj_ctx *c, tj_severity sev, const char *path, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    uint32_t file = tj_source_add(c, path, "", 0);
    tj_diag_report(c, sev, file, 0, 0, "%s", msg);
}

void cli_file_error(tj_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    file_diag(c, TJ_SEV_ERROR, path, fmt, ap);
    va_end(ap);
}

void cli_file_note(tj_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    file_diag(c, TJ_SEV_NOTE, path, fmt, ap);
    va_end(ap);
}

const char *cli_source_name(const char *path) { return strcmp(path, "-") ? path : "<stdin>"; }

char *cli_read_file(tj_ctx *c, const char *path, size_t *len)
{
    const char *name = cli_source_name(path);
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        cli_file_error(c, name, "cannot read: %s", strerror(errno));
        return NULL;
    }
    tj_buf b = {0};
    char chunk[65536];
    size_t n, total = 0;
    while (total <= MAX_SOURCE_BYTES && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        tj_buf_append(&b, chunk, n);
        total += n;
    }
    int err = ferror(f) ? errno : 0;
    if (!is_stdin)
        fclose(f);
    char *text = NULL;
    if (err)
        cli_file_error(c, name, "cannot read: %s", strerror(err));
    else if (total > MAX_SOURCE_BYTES)
        cli_file_error(c, name, "source file larger than %d MiB", MAX_SOURCE_BYTES >> 20);
    else if (b.len != total) /* tj_buf truncates when memory runs out */
        cli_file_error(c, name, "out of memory reading it");
    else {
        text = tj_strndup(c, b.data ? b.data : "", b.len);
        *len = b.len;
    }
    tj_buf_free(&b);
    return text;
}

const char *cli_buf_take(tj_ctx *c, tj_buf *b)
{
    const char *s = tj_strndup(c, b->data ? b->data : "", b->len);
    tj_buf_free(b);
    return s;
}

/* ---- text output ---------------------------------------------------------------- */

int cli_write_text(tj_ctx *c, const char *path, const char *text, size_t len)
{
    if (!strcmp(path, "-")) {
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            cli_file_error(c, "<stdout>", "cannot write: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    cli_tmpfile t;
    if (cli_tmp_prepare(c, path, &t) || cli_tmp_open(c, &t))
        return -1;
    if (fwrite(text, 1, len, t.f) != len) {
        cli_file_error(c, path, "cannot write: %s", strerror(errno));
        cli_tmp_discard(&t);
        return -1;
    }
    return cli_tmp_close(c, &t) || cli_tmp_commit_all(c, &t, 1) ? -1 : 0;
}
