/* The .tj lexer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_internal.h"
#include "frontend/lexer.h"

/* Reports about bad characters stop here; garbage input would otherwise
 * produce one line per byte. */
enum { MAX_CHAR_ERRORS = 10 };

static const struct { const char *word; fe_tok_kind kind; } keywords[] = {
    {"kernel", T_KERNEL}, {"fn", T_FN}, {"grid", T_GRID}, {"const", T_CONST},
    {"tune", T_TUNE}, {"where", T_WHERE}, {"in", T_IN}, {"for", T_FOR},
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

typedef struct lexer {
    tj_ctx *c;
    uint32_t file;
    const char *text;
    size_t len, pos;
    uint32_t line;
    size_t line_start;
    int depth; /* ( and [ nesting: newlines inside are white space */
    uint32_t errors, char_errors;
    fe_token *toks;
    uint32_t ntoks, cap;
} lexer;

static tj_loc loc_at(const lexer *lx, size_t pos)
{
    return (tj_loc){lx->file, lx->line, (uint32_t)(pos - lx->line_start + 1)};
}

static fe_token *push(lexer *lx, fe_tok_kind kind, size_t begin)
{
    lx->toks = tj_grow(lx->c, lx->toks, &lx->cap, lx->ntoks + 1, sizeof *lx->toks);
    fe_token *t = &lx->toks[lx->ntoks++];
    *t = (fe_token){.kind = kind, .loc = loc_at(lx, begin), .begin = (uint32_t)begin,
                    .end = (uint32_t)lx->pos};
    return t;
}

static void lex_error(lexer *lx, size_t pos, const char *msg, const char *arg)
{
    tj_loc l = loc_at(lx, pos);
    tj_error_at(lx->c, l, "%s%s", msg, arg ? arg : "");
    lx->errors++;
}

static int is_ident_start(int ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; }
static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }
static int is_ident_char(int ch) { return is_ident_start(ch) || is_digit(ch); }
static int at(const lexer *lx, size_t off) { return lx->pos + off < lx->len ? (unsigned char)lx->text[lx->pos + off] : 0; }

static void lex_ident(lexer *lx)
{
    size_t b = lx->pos;
    while (lx->pos < lx->len && is_ident_char(at(lx, 0)))
        lx->pos++;
    size_t n = lx->pos - b;
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        if (strlen(keywords[i].word) == n && !memcmp(keywords[i].word, lx->text + b, n)) {
            push(lx, keywords[i].kind, b);
            return;
        }
    fe_token *t = push(lx, T_IDENT, b);
    t->text = tj_strndup(lx->c, lx->text + b, n);
}

/* Decimal or 0x integer; rejects values beyond INT64_MAX. */
static void finish_int(lexer *lx, size_t b, int base)
{
    uint64_t v = 0;
    int overflow = 0;
    for (size_t i = b + (base == 16 ? 2 : 0); i < lx->pos; i++) {
        int ch = (unsigned char)lx->text[i];
        int d = is_digit(ch) ? ch - '0' : (ch | 32) - 'a' + 10;
        if (v > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base)
            overflow = 1;
        else
            v = v * (uint64_t)base + (uint64_t)d;
    }
    if (overflow)
        lex_error(lx, b, "integer literal is too large (the limit is 9223372036854775807)", NULL);
    fe_token *t = push(lx, T_INT, b);
    t->ival = overflow ? 0 : (int64_t)v;
}

static void finish_float(lexer *lx, size_t b)
{
    char *s = tj_strndup(lx->c, lx->text + b, lx->pos - b);
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE && (v > 1.0 || v < -1.0))
        lex_error(lx, b, "float literal is out of range", NULL);
    fe_token *t = push(lx, T_FLOAT, b);
    t->fval = v;
}

static void lex_number(lexer *lx)
{
    size_t b = lx->pos;
    int is_float = 0, base = 10;
    if (at(lx, 0) == '0' && (at(lx, 1) | 32) == 'x') {
        base = 16;
        lx->pos += 2;
        while (is_digit(at(lx, 0)) || ((at(lx, 0) | 32) >= 'a' && (at(lx, 0) | 32) <= 'f'))
            lx->pos++;
        if (lx->pos == b + 2) {
            lex_error(lx, b, "malformed hexadecimal literal", NULL);
            push(lx, T_INT, b);
            return;
        }
    } else {
        while (is_digit(at(lx, 0)))
            lx->pos++;
        if (at(lx, 0) == '.') {
            is_float = 1;
            lx->pos++;
            while (is_digit(at(lx, 0)))
                lx->pos++;
        }
        if ((at(lx, 0) | 32) == 'e' && (is_digit(at(lx, 1)) || ((at(lx, 1) == '+' || at(lx, 1) == '-') && is_digit(at(lx, 2))))) {
            is_float = 1;
            lx->pos += 2;
            while (is_digit(at(lx, 0)))
                lx->pos++;
        }
    }
    if (is_ident_char(at(lx, 0))) {
        while (is_ident_char(at(lx, 0)))
            lx->pos++;
        lex_error(lx, b, "malformed number", NULL);
        push(lx, T_INT, b);
        return;
    }
    if (is_float)
        finish_float(lx, b);
    else
        finish_int(lx, b, base);
}

static void lex_string(lexer *lx)
{
    size_t b = lx->pos++;
    while (lx->pos < lx->len && lx->text[lx->pos] != '"' && lx->text[lx->pos] != '\n')
        lx->pos++;
    if (lx->pos >= lx->len || lx->text[lx->pos] != '"') {
        lex_error(lx, b, "unterminated string", NULL);
        return;
    }
    lx->pos++;
    fe_token *t = push(lx, T_STRING, b);
    t->text = tj_strndup(lx->c, lx->text + b + 1, lx->pos - b - 2);
}

static void newline(lexer *lx)
{
    size_t b = lx->pos++;
    if (lx->depth == 0 && lx->ntoks && lx->toks[lx->ntoks - 1].kind != T_NEWLINE)
        push(lx, T_NEWLINE, b);
    lx->line++;
    lx->line_start = lx->pos;
}

static void track_depth(lexer *lx, fe_tok_kind k)
{
    if (k == T_LPAREN || k == T_LBRACKET)
        lx->depth++;
    else if ((k == T_RPAREN || k == T_RBRACKET) && lx->depth > 0)
        lx->depth--;
    else if (k == T_LBRACE || k == T_RBRACE)
        lx->depth = 0;
}

static int lex_punct(lexer *lx)
{
    for (size_t i = 0; i < sizeof puncts / sizeof *puncts; i++) {
        size_t n = strlen(puncts[i].spell);
        if (lx->pos + n <= lx->len && !memcmp(lx->text + lx->pos, puncts[i].spell, n)) {
            size_t b = lx->pos;
            lx->pos += n;
            push(lx, puncts[i].kind, b);
            track_depth(lx, puncts[i].kind);
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

/* One report per run of bad bytes, and at most MAX_CHAR_ERRORS of them. */
static void bad_char(lexer *lx)
{
    size_t b = lx->pos;
    int ch = at(lx, 0);
    while (lx->pos < lx->len && !starts_token(at(lx, 0)))
        lx->pos++;
    if (lx->pos == b)
        lx->pos++;
    if (lx->char_errors++ >= MAX_CHAR_ERRORS) {
        lx->errors++;
        return;
    }
    char buf[32];
    if (ch >= 32 && ch < 127)
        snprintf(buf, sizeof buf, "'%c'", ch);
    else
        snprintf(buf, sizeof buf, "byte 0x%02x", ch);
    lex_error(lx, b, "unexpected character ", buf);
}

uint32_t fe_lex(tj_ctx *c, uint32_t file, const char *text, size_t len, fe_token **out,
                uint32_t *ntokens)
{
    lexer lx = {.c = c, .file = file, .text = text, .len = len, .line = 1};
    while (lx.pos < len) {
        int ch = at(&lx, 0);
        if (ch == '\n')
            newline(&lx);
        else if (ch == ' ' || ch == '\t' || ch == '\r')
            lx.pos++;
        else if (ch == '#')
            while (lx.pos < len && text[lx.pos] != '\n')
                lx.pos++;
        else if (is_ident_start(ch))
            lex_ident(&lx);
        else if (is_digit(ch) || (ch == '.' && is_digit(at(&lx, 1))))
            lex_number(&lx);
        else if (ch == '"')
            lex_string(&lx);
        else if (!lex_punct(&lx))
            bad_char(&lx);
    }
    push(&lx, T_EOF, lx.pos);
    *out = lx.toks;
    *ntokens = lx.ntoks;
    return lx.errors;
}
