/* A test's source text with one edit (header only): the kernels of
 * test_simt_tma.c and test_simt_tma_store.c, broken one line at a time. */
#ifndef TJ_TESTS_TEXT_EDIT_H
#define TJ_TESTS_TEXT_EDIT_H

#include <stdio.h>
#include <string.h>

/* text with its first `from` replaced by `to` (from NULL: text as it is)
 * into out; 0, or -1 when text has no `from`. */
static inline int te_replace(char *out, size_t cap, const char *text, const char *from, const char *to)
{
    const char *at = from ? strstr(text, from) : NULL;
    if (from && !at)
        return -1;
    if (at)
        snprintf(out, cap, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    else
        snprintf(out, cap, "%s", text);
    return 0;
}

#endif
