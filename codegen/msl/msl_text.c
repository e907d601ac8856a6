/* Text for the MSL generator: statements, short expressions and variable
 * names. Formatting is most of the generator's time, so the formats it
 * uses (%s %c %d %u %lld %llu %zu and zero-padded %X) are handled here;
 * any other (%g) goes to vsnprintf. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/msl/msl.h"

typedef struct out {
    char *p;
    size_t n, cap; /* n may pass cap: the length it needs */
} out;

static void put(out *o, const char *s, size_t len)
{
    size_t room = o->n < o->cap ? o->cap - o->n : 0;
    char *d = o->p + o->n;
    for (size_t i = 0; i < len && i < room; i++) /* mostly a few bytes: no call */
        d[i] = s[i];
    o->n += len;
}

static void put_unsigned(out *o, unsigned long long v, unsigned base, int upper, int width)
{
    char d[24];
    int k = (int)sizeof d;
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    do
        d[--k] = digits[v % base];
    while (v /= base);
    while ((int)sizeof d - k < width && k > 0)
        d[--k] = '0';
    put(o, d + k, sizeof d - (size_t)k);
}

/* Formats into o; -1 when a conversion is not one of ours. */
static int format(out *o, const char *f, va_list ap)
{
    for (; *f; f++) {
        const char *pct = strchr(f, '%');
        size_t lit = pct ? (size_t)(pct - f) : strlen(f);
        put(o, f, lit);
        if (!pct)
            return 0;
        f = pct + 1;
        int width = 0, ll = 0, z = 0;
        if (*f == '0')
            while (*f >= '0' && *f <= '9')
                width = width * 10 + (*f++ - '0');
        if (f[0] == 'l' && f[1] == 'l')
            ll = 1, f += 2;
        else if (*f == 'z')
            z = 1, f++;
        switch (*f) {
        case '%': put(o, "%", 1); break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            put(o, s, strlen(s));
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            put(o, &c, 1);
            break;
        }
        case 'd': {
            long long v = ll ? va_arg(ap, long long) : va_arg(ap, int);
            if (v < 0)
                put(o, "-", 1);
            put_unsigned(o, v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v, 10, 0, 0);
            break;
        }
        case 'u': case 'x': case 'X': {
            unsigned long long v = ll ? va_arg(ap, unsigned long long) : z ? va_arg(ap, size_t) : va_arg(ap, unsigned);
            put_unsigned(o, v, *f == 'u' ? 10 : 16, *f == 'X', width);
            break;
        }
        default: return -1;
        }
    }
    return 0;
}

/* Formats into buf (cap bytes, NUL-terminated when it fits); the length
 * needed. */
static size_t format_into(char *buf, size_t cap, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    out o = {buf, 0, cap};
    size_t n;
    if (format(&o, fmt, ap) == 0) {
        n = o.n;
        if (n < cap)
            buf[n] = 0;
    } else {
        int r = vsnprintf(buf, cap, fmt, copy);
        n = r < 0 ? 0 : (size_t)r;
    }
    va_end(copy);
    return n;
}

msl_str ms_fmt(const char *fmt, ...)
{
    msl_str s;
    va_list ap;
    va_start(ap, fmt);
    size_t n = format_into(s.s, sizeof s.s, fmt, ap);
    va_end(ap);
    if (n >= sizeof s.s)
        snprintf(s.s, sizeof s.s, "\n#error tilejit: an expression longer than %zu bytes\n", sizeof s.s);
    return s;
}

void ms_line(msl_emitter *e, const char *fmt, ...)
{
    static const char spaces[] = "                                                                ";
    int ind = 4 * e->indent < (int)sizeof spaces - 1 ? 4 * e->indent : (int)sizeof spaces - 1;
    tj_buf_append(&e->body, spaces, (size_t)ind);
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = format_into(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < sizeof line) {
        tj_buf_append(&e->body, line, n);
    } else { /* rare: a long line */
        char *big = tj_alloc(e->c, n + 1);
        va_start(ap, fmt);
        format_into(big, n + 1, fmt, ap);
        va_end(ap);
        tj_buf_append(&e->body, big, n);
    }
    tj_buf_append(&e->body, "\n", 1);
}

/* "v12" or "v12_3": the most common text, so without a format. */
msl_str ms_var(const msl_emitter *e, tj_ref r, uint32_t i)
{
    msl_str s;
    out o = {s.s, 0, sizeof s.s};
    put(&o, "v", 1);
    put_unsigned(&o, r, 10, 0, 0);
    if (e->ncomp[r] != 1) {
        put(&o, "_", 1);
        put_unsigned(&o, i, 10, 0, 0);
    }
    s.s[o.n] = 0;
    return s;
}

msl_str ms_tmp(msl_emitter *e) { return ms_fmt("t%u", e->ntmp++); }
