/* The IR text parser's helpers: tokens and errors, numbers, types and
 * value numbers. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ctx_internal.h"
#include "ir/parse_internal.h"
#include "ir/text.h"

/* ---- tokens and errors ------------------------------------------------------- */

_Noreturn void tjp_fail(parser *p, const tj_tok *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tj_diag_report(p->c, TJ_SEV_ERROR, p->file, t->line, t->col, "%s", msg);
    longjmp(p->fail, 1);
}

/* "'foo'" or "end of input", for messages. */
static const char *describe(const tj_tok *t, char *buf, size_t cap)
{
    if (t->kind == TJ_TOK_EOF)
        return "end of input";
    snprintf(buf, cap, "'%.*s'%s", t->len > 40 ? 40 : (int)t->len, t->s, t->len > 40 ? "..." : "");
    return buf;
}

_Noreturn void tjp_fail_expected(parser *p, const char *what)
{
    char buf[64];
    tjp_fail(p, peek(p), "expected %s, found %s", what, describe(peek(p), buf, sizeof buf));
}

void tjp_expect(parser *p, char ch)
{
    char what[8] = {'\'', ch, '\'', 0};
    if (!accept_punct(p, ch))
        tjp_fail_expected(p, what);
}

void tjp_expect_word(parser *p, const char *w)
{
    char what[64];
    snprintf(what, sizeof what, "'%s'", w);
    if (!is_word(peek(p), w))
        tjp_fail_expected(p, what);
    next(p);
}

const char *tjp_expect_ident(parser *p, const char *what)
{
    if (peek(p)->kind != TJ_TOK_IDENT)
        tjp_fail_expected(p, what);
    const tj_tok *t = next(p);
    return tj_strndup(p->c, t->s, t->len);
}

void tjp_enter(parser *p, int *depth, const char *what)
{
    if (++*depth > TJ_MAX_NESTING)
        tjp_fail(p, peek(p), "%s nested too deeply (more than %d levels)", what, TJ_MAX_NESTING);
}

/* ---- numbers ------------------------------------------------------------------ */

/* Reads an integer token into sign and magnitude; errors on anything else. */
tjp_literal tjp_integer_tok(parser *p, const tj_tok *t)
{
    tjp_literal v = {0, 0};
    const char *s = t->s, *end = t->s + t->len;
    if (t->kind != TJ_TOK_NUMBER)
        tjp_fail(p, t, "expected an integer");
    if (*s == '-')
        v.negative = 1, s++;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            tjp_fail(p, t, "expected an integer, found '%.*s'", (int)t->len, t->s);
        if (v.mag > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            tjp_fail(p, t, "integer '%.*s' is too large", (int)t->len, t->s);
        v.mag = v.mag * 10 + (uint64_t)(*s - '0');
    }
    return v;
}

int64_t tjp_literal_i64(parser *p, const tj_tok *t, tjp_literal v)
{
    if (v.negative ? v.mag > (uint64_t)INT64_MAX + 1 : v.mag > (uint64_t)INT64_MAX)
        tjp_fail(p, t, "integer '%.*s' does not fit 64 bits", (int)t->len, t->s);
    return v.negative ? (int64_t)(0 - v.mag) : (int64_t)v.mag;
}

int64_t tjp_i64(parser *p)
{
    const tj_tok *t = next(p);
    return tjp_literal_i64(p, t, tjp_integer_tok(p, t));
}

int64_t tjp_int_in(parser *p, int64_t lo, int64_t hi, const char *what)
{
    const tj_tok *t = peek(p);
    int64_t v = tjp_i64(p);
    if (v < lo || v > hi)
        tjp_fail(p, t, "%s %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", what, v, lo, hi);
    return v;
}

/* ---- types ----------------------------------------------------------------------- */

tj_dtype tjp_dtype(parser *p)
{
    const tj_tok *t = peek(p);
    tj_dtype dt = t->kind == TJ_TOK_IDENT ? tj_dtype_from_name(t->s, t->len) : TJ_DT_INVALID;
    if (dt == TJ_DT_INVALID)
        tjp_fail_expected(p, "an element type (f32, i32, bool, ...)");
    next(p);
    return dt;
}

/* `[128, 64]` (possibly empty) into shape; returns the rank. */
static int parse_shape(parser *p, int32_t shape[TJ_MAX_RANK])
{
    int rank = 0;
    tjp_expect(p, '[');
    while (!accept_punct(p, ']')) {
        if (rank && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ']'");
        if (rank == TJ_MAX_RANK)
            tjp_fail(p, peek(p), "more than %d dimensions", TJ_MAX_RANK);
        shape[rank++] = (int32_t)tjp_int_in(p, 1, INT32_MAX, "extent");
    }
    return rank;
}

static tj_type checked_shape_type(parser *p, const tj_tok *at, tj_type t)
{
    if (t == TJ_TYPE_NONE)
        tjp_fail(p, at, "tile too large (more than %u elements)", (unsigned)TJ_MAX_TILE_ELEMS);
    return t;
}

static tj_type parse_tuple_type(parser *p)
{
    tj_type *elems = NULL;
    uint32_t n = 0, cap = 0;
    tjp_enter(p, &p->type_depth, "tuple types");
    tjp_expect(p, '(');
    while (!accept_punct(p, ')')) {
        if (n && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ')'");
        elems = tj_grow(p->c, elems, &cap, n + 1, sizeof *elems);
        elems[n++] = tjp_type(p);
    }
    p->type_depth--;
    return tj_type_tuple(p->c, n, elems);
}

tj_type tjp_type(parser *p)
{
    const tj_tok *start = peek(p);
    int32_t shape[TJ_MAX_RANK];
    if (is_punct(start, '('))
        return parse_tuple_type(p);
    if (is_word(start, "tensor")) {
        next(p);
        tjp_expect(p, '<');
        tj_dtype dt = tjp_dtype(p);
        tjp_expect(p, ',');
        int rank = (int)tjp_int_in(p, 0, TJ_MAX_RANK, "tensor rank");
        tjp_expect(p, '>');
        return tj_type_tensor(p->c, dt, rank);
    }
    if (is_word(start, "view")) {
        next(p);
        tjp_expect(p, '<');
        tj_dtype dt = tjp_dtype(p);
        int rank = parse_shape(p, shape);
        tjp_expect(p, '>');
        return checked_shape_type(p, start, tj_type_view(p->c, dt, rank, shape));
    }
    if (start->kind != TJ_TOK_IDENT || !tj_dtype_from_name(start->s, start->len))
        tjp_fail_expected(p, "a type");
    tj_dtype dt = tjp_dtype(p);
    int rank = is_punct(peek(p), '[') ? parse_shape(p, shape) : 0;
    return checked_shape_type(p, start, tj_type_tile(p->c, dt, rank, shape));
}

/* ---- value numbers ------------------------------------------------------------------ */

static uint32_t value_number(parser *p, const tj_tok *t)
{
    uint64_t n = 0;
    for (uint32_t i = 1; i < t->len; i++) {
        n = n * 10 + (uint64_t)(t->s[i] - '0');
        if (n >= UINT32_MAX)
            tjp_fail(p, t, "value number %.*s is too large", (int)t->len, t->s);
    }
    return (uint32_t)n;
}

static uint32_t map_slot(const parser *p, uint32_t num)
{
    uint32_t i = (num * 2654435761u) & (p->mapcap - 1);
    while (p->keys[i] && p->keys[i] != num + 1)
        i = (i + 1) & (p->mapcap - 1);
    return i;
}

static void map_grow(parser *p)
{
    uint32_t *keys = p->keys, oldcap = p->mapcap;
    tj_ref *refs = p->refs;
    p->mapcap = oldcap ? oldcap * 2 : 64;
    p->keys = tj_alloc(p->c, sizeof(uint32_t) * p->mapcap);
    p->refs = tj_alloc(p->c, sizeof(tj_ref) * p->mapcap);
    for (uint32_t i = 0; i < oldcap; i++) {
        if (!keys[i])
            continue;
        uint32_t j = map_slot(p, keys[i] - 1);
        p->keys[j] = keys[i];
        p->refs[j] = refs[i];
    }
}

void tjp_define(parser *p, const tj_tok *t, tj_ref r)
{
    uint32_t num = value_number(p, t);
    if (2 * (p->mapcount + 1) > p->mapcap)
        map_grow(p);
    uint32_t i = map_slot(p, num);
    if (p->keys[i]) {
        tj_loc first = tj_inst_at(p->k, p->refs[i])->loc;
        tjp_fail(p, t, "value %%%" PRIu32 " is defined twice (first at %" PRIu32 ":%" PRIu32 ")", num,
                first.line, first.col);
    }
    p->keys[i] = num + 1;
    p->refs[i] = r;
    p->mapcount++;
}

tj_ref tjp_use(parser *p, const tj_tok *t)
{
    uint32_t num = value_number(p, t);
    uint32_t i = p->mapcap ? map_slot(p, num) : 0;
    if (!p->mapcap || !p->keys[i])
        tjp_fail(p, t, "value %%%" PRIu32 " is used before its definition", num);
    return p->refs[i];
}
