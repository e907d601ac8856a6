/* The .tj lexer. */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/lexer.h"

static const struct { const char *word; fe_tok_kind kind; } keywords[] = {
    {"kernel", T_KERNEL}, {"fn", T_FN}, {"in", T_IN}, {"for", T_FOR}, {"while", T_WHILE},
    {"if", T_IF}, {"else", T_ELSE}, {"return", T_RETURN}, {"true", T_TRUE},
    {"false", T_FALSE}, {"None", T_NONE}, {"inf", T_INF}, {"nan", T_NAN},
};

/* Operators and punctuation, longest spellings first. */
static const struct { const char *spell; fe_tok_kind kind; } puncts[] = {
    {"**", T_POW}, {"->", T_ARROW}, {"==", T_EQ}, {"!=", T_NE}, {"<=", T_LE},
    {">=", T_GE}, {"&&", T_ANDAND}, {"||", T_OROR}, {"<<", T_SHL}, {">>", T_SHR},
    {"+=", T_PLUS_ASSIGN}, {"-=", T_MINUS_ASSIGN}, {"*=", T_STAR_ASSIGN},
    {"/=", T_SLASH_ASSIGN},
    {"(", T_LPAREN}, {")", T_RPAREN}, {"[", T_LBRACKET}, {"]", T_RBRACKET},
    {"{", T_LBRACE}, {"}", T_RBRACE}, {",", T_COMMA}, {":", T_COLON},
    {";", T_SEMI}, {"=", T_ASSIGN}, {"+", T_PLUS}, {"-", T_MINUS}, {"*", T_STAR},
    {"/", T_SLASH}, {"%", T_PERCENT}, {"<", T_LT}, {">", T_GT}, {"!", T_NOT},
    {"&", T_AMP}, {"|", T_PIPE}, {"^", T_CARET}, {"~", T_TILDE},
};

const char *fe_tok_name(fe_tok_kind k)
{
    switch (k) {
    case T_EOF: return "end of file";
    case T_ERROR: return "a malformed token";
    case T_NEWLINE: return "end of line";
    case T_IDENT: return "a name";
    case T_INT: return "an integer";
    case T_FLOAT: return "a number";
    case T_STRING: return "a string";
    default: break;
    }
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        if (keywords[i].kind == k)
            return keywords[i].word;
    for (size_t i = 0; i < sizeof puncts / sizeof *puncts; i++)
        if (puncts[i].kind == k)
            return puncts[i].spell;
    return "?";
}

/* Reports stop after this many; garbage input would otherwise give one
 * line per byte. They are still counted. */
enum { MAX_REPORTED = 20 };

static tj_loc loc_at(const fe_lexer *lx, size_t pos)
{
    return (tj_loc){lx->file, lx->line, (uint32_t)(pos - lx->line_start + 1)};
}

static fe_token token(fe_lexer *lx, fe_tok_kind kind, size_t begin)
{
    lx->last = kind;
    return (fe_token){.kind = kind, .loc = loc_at(lx, begin), .begin = (uint32_t)begin, .end = (uint32_t)lx->pos};
}

/* Reports at pos and returns a T_ERROR token for [begin, pos). */
static fe_token lex_error(fe_lexer *lx, size_t begin, const char *msg, const char *arg)
{
    lx->errors++;
    if (lx->reported < MAX_REPORTED) {
        lx->reported++;
        tj_error_at(lx->c, loc_at(lx, begin), "%s%s", msg, arg ? arg : "");
    }
    return token(lx, T_ERROR, begin);
}

static int is_ident_start(int ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; }
static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }
static int is_hex(int ch) { return is_digit(ch) || ((ch | 32) >= 'a' && (ch | 32) <= 'f'); }
static int is_ident_char(int ch) { return is_ident_start(ch) || is_digit(ch); }
static int at(const fe_lexer *lx, size_t off) { return lx->pos + off < lx->len ? (unsigned char)lx->text[lx->pos + off] : 0; }

static fe_token lex_ident(fe_lexer *lx)
{
    size_t b = lx->pos;
    while (lx->pos < lx->len && is_ident_char(at(lx, 0)))
        lx->pos++;
    size_t n = lx->pos - b;
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        if (strlen(keywords[i].word) == n && !memcmp(keywords[i].word, lx->text + b, n))
            return token(lx, keywords[i].kind, b);
    fe_token t = token(lx, T_IDENT, b);
    t.text = tj_strndup(lx->c, lx->text + b, n);
    return t;
}

/* Decimal or 0x integer; values beyond INT64_MAX are errors. */
static fe_token finish_int(fe_lexer *lx, size_t b, int base)
{
    uint64_t v = 0;
    for (size_t i = b + (base == 16 ? 2 : 0); i < lx->pos; i++) {
        int ch = (unsigned char)lx->text[i];
        int d = is_digit(ch) ? ch - '0' : (ch | 32) - 'a' + 10;
        if (v > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base)
            return lex_error(lx, b, "integer literal is too large (the limit is 9223372036854775807)", NULL);
        v = v * (uint64_t)base + (uint64_t)d;
    }
    fe_token t = token(lx, T_INT, b);
    t.ival = (int64_t)v;
    return t;
}

static fe_token finish_float(fe_lexer *lx, size_t b)
{
    char *s = tj_strndup(lx->c, lx->text + b, lx->pos - b);
    /* strtod reads the decimal point of the current locale, which a host
     * program may have set to ',' */
    const char *point = localeconv()->decimal_point;
    char *dot = strchr(s, '.');
    if (dot && point[0] && !point[1])
        *dot = point[0];
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE && (v > 1.0 || v < -1.0))
        return lex_error(lx, b, "float literal is out of range", NULL);
    fe_token t = token(lx, T_FLOAT, b);
    t.fval = v;
    return t;
}

static void skip_digits(fe_lexer *lx)
{
    while (is_digit(at(lx, 0)))
        lx->pos++;
}

/* 123, 0x1f, 1.5, .5, 1e-3; a letter right after a number is an error. */
static fe_token lex_number(fe_lexer *lx)
{
    size_t b = lx->pos;
    int is_float = 0, base = 10;
    if (at(lx, 0) == '0' && (at(lx, 1) | 32) == 'x' && is_hex(at(lx, 2))) {
        base = 16;
        lx->pos += 2;
        while (is_hex(at(lx, 0)))
            lx->pos++;
    } else {
        skip_digits(lx);
        if (at(lx, 0) == '.') {
            is_float = 1;
            lx->pos++;
            skip_digits(lx);
        }
        int sign = at(lx, 1) == '+' || at(lx, 1) == '-';
        if ((at(lx, 0) | 32) == 'e' && is_digit(at(lx, 1 + sign))) {
            is_float = 1;
            lx->pos += 1 + (size_t)sign;
            skip_digits(lx);
        }
    }
    if (is_ident_char(at(lx, 0))) {
        while (is_ident_char(at(lx, 0)))
            lx->pos++;
        return lex_error(lx, b, "malformed number", NULL);
    }
    return is_float ? finish_float(lx, b) : finish_int(lx, b, base);
}

static fe_token lex_string(fe_lexer *lx)
{
    size_t b = lx->pos++;
    while (lx->pos < lx->len && lx->text[lx->pos] != '"' && lx->text[lx->pos] != '\n')
        lx->pos++;
    if (lx->pos >= lx->len || lx->text[lx->pos] != '"')
        return lex_error(lx, b, "unterminated string", NULL);
    lx->pos++;
    fe_token t = token(lx, T_STRING, b);
    t.text = tj_strndup(lx->c, lx->text + b + 1, lx->pos - b - 2);
    return t;
}

static int lex_punct(fe_lexer *lx, fe_token *out)
{
    for (size_t i = 0; i < sizeof puncts / sizeof *puncts; i++) {
        size_t n = strlen(puncts[i].spell);
        if (lx->pos + n <= lx->len && !memcmp(lx->text + lx->pos, puncts[i].spell, n)) {
            size_t b = lx->pos;
            lx->pos += n;
            *out = token(lx, puncts[i].kind, b);
            return 1;
        }
    }
    return 0;
}

/* Whether a byte can begin something the lexer understands. */
static int starts_token(int ch)
{
    return ch > 0 && ch < 128 && (is_ident_char(ch) || strchr(" \t\r\n#\"(){}[],:;=+-*/%<>!&|^~.", ch));
}

/* A run of bad bytes is one error. */
static fe_token bad_char(fe_lexer *lx)
{
    size_t b = lx->pos;
    int ch = at(lx, 0);
    while (lx->pos < lx->len && !starts_token(at(lx, 0)))
        lx->pos++;
    if (lx->pos == b)
        lx->pos++;
    char buf[32];
    if (ch >= 32 && ch < 127)
        snprintf(buf, sizeof buf, "'%c'", ch);
    else
        snprintf(buf, sizeof buf, "byte 0x%02x", ch);
    return lex_error(lx, b, "unexpected character ", buf);
}

void fe_lexer_init(fe_lexer *lx, tj_ctx *c, uint32_t file, const char *text, size_t len)
{
    *lx = (fe_lexer){.c = c, .file = file, .text = text, .len = len, .line = 1, .last = T_NEWLINE};
}

/* Skips white space and comments; returns a NEWLINE token for a line
 * break that does not follow another one. */
static int skip_space(fe_lexer *lx, fe_token *nl)
{
    while (lx->pos < lx->len) {
        int ch = at(lx, 0);
        if (ch == '#') {
            while (lx->pos < lx->len && lx->text[lx->pos] != '\n')
                lx->pos++;
        } else if (ch == '\n') {
            size_t b = lx->pos++;
            int emit = lx->last != T_NEWLINE;
            if (emit)
                *nl = token(lx, T_NEWLINE, b);
            lx->line++;
            lx->line_start = lx->pos;
            if (emit)
                return 1;
        } else if (ch == ' ' || ch == '\t' || ch == '\r') {
            lx->pos++;
        } else {
            break;
        }
    }
    return 0;
}

fe_token fe_lex_next(fe_lexer *lx)
{
    fe_token t;
    if (skip_space(lx, &t))
        return t;
    if (lx->pos >= lx->len)
        return token(lx, T_EOF, lx->pos);
    int ch = at(lx, 0);
    if (is_ident_start(ch))
        return lex_ident(lx);
    if (is_digit(ch) || (ch == '.' && is_digit(at(lx, 1))))
        return lex_number(lx);
    if (ch == '"')
        return lex_string(lx);
    if (lex_punct(lx, &t))
        return t;
    return bad_char(lx);
}
