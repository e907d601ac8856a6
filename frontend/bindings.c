/* "NAME=INT,NAME=INT,...": bindings of tile parameters or dims as the
 * command line, the benchmarks and the tests spell them (tilejit/frontend.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/frontend.h"

/* One "NAME=INT" of length len at s into *out; 0, or 1 after reporting. */
static int parse_one(tj_ctx *c, const char *s, size_t len, tj_binding *out)
{
    const char *eq = memchr(s, '=', len);
    if (!eq || eq == s) {
        tj_error(c, "binding '%.*s': expected NAME=INT", (int)len, s);
        return 1;
    }
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || end != s + len || errno == ERANGE) {
        tj_error(c, "binding '%.*s': the value is not a 64-bit integer", (int)len, s);
        return 1;
    }
    out->name = tj_strndup(c, s, (size_t)(eq - s));
    out->value = v;
    return 0;
}

int64_t tj_bindings_parse(tj_ctx *c, const char *text, tj_binding *out, uint32_t max)
{
    if (!c || !tj_array_ok(out, max))
        return -1;
    uint32_t n = 0;
    for (const char *s = text; s && *s;) {
        size_t len = strcspn(s, ",");
        if (n == max) {
            tj_error(c, "bindings '%s': more than %u", text, max);
            return -1;
        }
        if (parse_one(c, s, len, &out[n++]))
            return -1;
        s = s[len] ? s + len + 1 : NULL;
    }
    return n;
}
