/* A CUDA C kernel's parameters: read from its declaration in the source
 * (template parameters replaced by the name expression's arguments) or
 * from a stated signature ("y: f32*, n: i32"), and checked against the
 * .param list NVRTC put in the PTX, so a misread declaration is an error,
 * never a launch with the wrong layout. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/nvrtc_internal.h"

enum { MAX_TEMPLATE_PARAMS = 16, TYPE_TEXT = 256 };

/* ---- C type names -> dtypes ------------------------------------------- */

static const struct {
    const char *c;
    tj_dtype dt;
} c_types[] = {
    {"float", TJ_DT_F32}, {"double", TJ_DT_F64}, {"__half", TJ_DT_F16}, {"half", TJ_DT_F16},
    {"__nv_bfloat16", TJ_DT_BF16}, {"nv_bfloat16", TJ_DT_BF16}, {"bool", TJ_DT_BOOL},
    {"char", TJ_DT_I8}, {"signed char", TJ_DT_I8}, {"int8_t", TJ_DT_I8},
    {"unsigned char", TJ_DT_U8}, {"uint8_t", TJ_DT_U8},
    {"short", TJ_DT_I16}, {"short int", TJ_DT_I16}, {"int16_t", TJ_DT_I16},
    {"unsigned short", TJ_DT_U16}, {"unsigned short int", TJ_DT_U16}, {"uint16_t", TJ_DT_U16},
    {"int", TJ_DT_I32}, {"signed", TJ_DT_I32}, {"signed int", TJ_DT_I32}, {"int32_t", TJ_DT_I32},
    {"unsigned", TJ_DT_U32}, {"unsigned int", TJ_DT_U32}, {"uint32_t", TJ_DT_U32},
    {"long", TJ_DT_I64}, {"long int", TJ_DT_I64}, {"long long", TJ_DT_I64}, {"long long int", TJ_DT_I64},
    {"int64_t", TJ_DT_I64}, {"ptrdiff_t", TJ_DT_I64}, {"unsigned long", TJ_DT_U64},
    {"unsigned long int", TJ_DT_U64}, {"unsigned long long", TJ_DT_U64}, {"unsigned long long int", TJ_DT_U64},
    {"uint64_t", TJ_DT_U64}, {"size_t", TJ_DT_U64},
};

static tj_dtype c_type_dtype(const char *words)
{
    for (size_t i = 0; i < sizeof c_types / sizeof c_types[0]; i++)
        if (!strcmp(words, c_types[i].c))
            return c_types[i].dt;
    return TJ_DT_INVALID;
}

/* ---- scanning ---------------------------------------------------------- */

/* The source with comments and literals blanked (newlines kept), so that
 * searching for the declaration sees code only. malloc'ed. */
static char *code_only(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        char q = s[i];
        size_t end = i;
        /* Bounded by len: the source need not be NUL-terminated. */
        if (q == '/' && i + 1 < len && s[i + 1] == '/') {
            const char *nl = memchr(s + i, '\n', len - i);
            end = nl ? (size_t)(nl - s) : len;
        } else if (q == '/' && i + 1 < len && s[i + 1] == '*') {
            for (end = i + 2; end + 1 < len && !(s[end] == '*' && s[end + 1] == '/'); end++)
                ;
            end = end + 1 < len ? end + 2 : len;
        } else if (q == '"' || q == '\'') {
            for (end = i + 1; end < len && s[end] != q && s[end] != '\n'; end++)
                end += s[end] == '\\';
            end += end < len && s[end] == q;
        }
        if (end == i) {
            out[i] = q;
            continue;
        }
        for (size_t j = i; j < end && j < len; j++)
            out[j] = s[j] == '\n' ? '\n' : ' ';
        i = (end < len ? end : len) - 1;
    }
    out[len] = 0;
    return out;
}

static int is_ident(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* Where the bracket opened at s[0] closes (the same nesting of <>, (), []),
 * or NULL. */
static const char *matching(const char *s)
{
    int depth = 0;
    for (const char *p = s; *p; p++) {
        depth += *p == '<' || *p == '(' || *p == '[';
        depth -= *p == '>' || *p == ')' || *p == ']';
        if (!depth)
            return p;
    }
    return NULL;
}

/* Splits [from, to) at top-level commas: calls each item's bounds. */
typedef struct span {
    const char *s;
    size_t n;
} span;

static int split_list(const char *from, const char *to, span *items, int max)
{
    int n = 0, depth = 0;
    const char *start = from;
    for (const char *p = from; p <= to; p++) {
        if (p < to && (*p == '<' || *p == '(' || *p == '['))
            depth++;
        else if (p < to && (*p == '>' || *p == ')' || *p == ']'))
            depth--;
        else if (p == to || (*p == ',' && !depth)) {
            while (start < p && isspace((unsigned char)*start))
                start++;
            const char *end = p;
            while (end > start && isspace((unsigned char)end[-1]))
                end--;
            if (n >= max)
                return -1;
            items[n++] = (span){start, (size_t)(end - start)};
            start = p + 1;
        }
    }
    return n == 1 && !items[0].n ? 0 : n;
}

/* The declaration of __global__ function `name`: the '(' of its parameter
 * list and the start of its declaration (after the previous ';', '}' or
 * '{'), or NULL. */
static const char *find_declaration(const char *code, const char *name, const char **decl_start)
{
    size_t n = strlen(name);
    for (const char *p = strstr(code, name); p; p = strstr(p + 1, name)) {
        if ((p > code && is_ident(p[-1])) || is_ident(p[n]))
            continue;
        const char *open = p + n;
        while (isspace((unsigned char)*open))
            open++;
        if (*open != '(')
            continue;
        const char *start = p;
        while (start > code && !strchr(";{}", start[-1]))
            start--;
        char *head = strndup(start, (size_t)(p - start));
        int global = head && strstr(head, "__global__");
        free(head);
        if (global) {
            *decl_start = start;
            return open;
        }
    }
    return NULL;
}

/* ---- templates ------------------------------------------------------------- */

typedef struct templ {
    span names[MAX_TEMPLATE_PARAMS], args[MAX_TEMPLATE_PARAMS];
    int n;
} templ;

static span last_word(span s)
{
    const char *end = s.s + s.n;
    const char *eq = memchr(s.s, '=', s.n); /* a default */
    if (eq)
        end = eq;
    while (end > s.s && !is_ident(end[-1]))
        end--;
    const char *start = end;
    while (start > s.s && is_ident(start[-1]))
        start--;
    return (span){start, (size_t)(end - start)};
}

/* The template parameter names of the declaration in [start, open) and the
 * arguments of `name` ("scale<float, 256>"). */
static int bind_template(const char *start, const char *open, const char *name, templ *t, tj_rt_error *err)
{
    t->n = 0;
    const char *lt = strchr(name, '<');
    const char *kw = strstr(start, "template");
    if (kw && kw > open)
        kw = NULL;
    if (!lt && !kw)
        return 0;
    if (!lt || !kw)
        return tj_rt_fail(err, "kernel '%s': %s", name,
                          lt ? "template arguments for a kernel that is not a template"
                             : "a template kernel needs its arguments, e.g. -k 'NAME<float, 128>'");
    const char *popen = strchr(kw, '<'), *pclose = popen ? matching(popen) : NULL;
    const char *aclose = matching(lt);
    if (!pclose || !aclose)
        return tj_rt_fail(err, "kernel '%s': unbalanced '<' in the template", name);
    span params[MAX_TEMPLATE_PARAMS];
    int np = split_list(popen + 1, pclose, params, MAX_TEMPLATE_PARAMS);
    int na = split_list(lt + 1, aclose, t->args, MAX_TEMPLATE_PARAMS);
    if (np < 0 || na < 0 || na > np)
        return tj_rt_fail(err, "kernel '%s': %d template arguments for %d parameters", name, na, np);
    for (int i = 0; i < na; i++)
        t->names[i] = last_word(params[i]);
    t->n = na;
    return 0;
}

static const span *template_arg(const templ *t, span word)
{
    for (int i = 0; i < t->n; i++)
        if (t->names[i].n == word.n && !memcmp(t->names[i].s, word.s, word.n))
            return &t->args[i];
    return NULL;
}

/* ---- one parameter -------------------------------------------------------------- */

static int is_qualifier(span w)
{
    static const char *const words[] = {"const", "volatile", "__restrict__", "restrict", "__restrict",
                                        "struct", "__grid_constant__"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i]) == w.n && !memcmp(words[i], w.s, w.n))
            return 1;
    return 0;
}

static void append_word(char *type, span w)
{
    size_t len = strlen(type);
    if (len + w.n + 2 < TYPE_TEXT)
        snprintf(type + len, TYPE_TEXT - len, "%s%.*s", len ? " " : "", (int)w.n, w.s);
}

/* The words of a declarator: the type's words (template parameters
 * replaced) into type, the name (the last word when another precedes it),
 * pointer-ness and const before the '*'. */
static void read_declarator(span decl, const templ *t, char *type, tj_cuda_param *p)
{
    span words[32];
    int n = 0, stars = 0, const_before_star = 0;
    for (const char *s = decl.s, *end = decl.s + decl.n; s < end;) {
        if (*s == '*' || *s == '&')
            stars++;
        if (!is_ident(*s)) {
            s++;
            continue;
        }
        const char *w = s;
        while (s < end && is_ident(*s))
            s++;
        span word = {w, (size_t)(s - w)};
        if (word.n == 5 && !memcmp(w, "const", 5) && !stars)
            const_before_star = 1;
        if (!is_qualifier(word) && n < 32)
            words[n++] = word;
    }
    span name = {"", 0};
    if (n > 1) {
        /* "unsigned int" has no name; "int n" has: the last word is a name
         * unless the words together are a type. */
        char all[TYPE_TEXT] = "";
        for (int i = 0; i < n; i++)
            append_word(all, words[i]);
        if (c_type_dtype(all) == TJ_DT_INVALID)
            name = words[--n];
    }
    type[0] = 0;
    for (int i = 0; i < n; i++) {
        const span *arg = template_arg(t, words[i]);
        append_word(type, arg ? *arg : words[i]);
    }
    snprintf(p->name, sizeof p->name, "%.*s", (int)name.n, name.s);
    p->pointer = stars > 0;
    p->is_const = p->pointer && const_before_star;
}

static int read_param(span decl, const templ *t, const char *kernel, int index, tj_cuda_param *p,
                      tj_rt_error *err)
{
    char type[TYPE_TEXT];
    memset(p, 0, sizeof *p);
    read_declarator(decl, t, type, p);
    /* A template argument may carry its own '*' or const ("const float*"). */
    if (strchr(type, '*')) {
        p->pointer = 1;
        *strchr(type, '*') = 0;
        size_t len = strlen(type);
        while (len && type[len - 1] == ' ')
            type[--len] = 0;
    }
    if (!strncmp(type, "const ", 6)) {
        p->is_const = p->pointer;
        memmove(type, type + 6, strlen(type + 6) + 1);
    }
    p->dtype = c_type_dtype(type);
    if (p->dtype == TJ_DT_INVALID && !p->pointer)
        return tj_rt_fail(err, "kernel '%s', parameter %d%s%s%s: the type '%s' has no tilejit dtype "
                               "(state the signature, e.g. \"f32*, i32\")",
                          kernel, index, p->name[0] ? " ('" : "", p->name, p->name[0] ? "')" : "", type);
    return 0;
}

static int params_from_source(const char *source, size_t len, const char *kernel, tj_cuda_param *out, int max,
                              tj_rt_error *err)
{
    char *code = code_only(source, strnlen(source, len));
    char base[128];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(kernel, "< \t"), kernel);
    const char *start = NULL, *open = code ? find_declaration(code, base, &start) : NULL;
    const char *close = open ? matching(open) : NULL;
    templ t;
    span items[TJ_CUDA_C_MAX_PARAMS];
    int n = -1;
    if (!code)
        tj_rt_fail(err, "out of memory reading kernel '%s'", kernel);
    else if (!close)
        tj_rt_fail(err, "kernel '%s': no __global__ declaration of '%s' in the source", kernel, base);
    else if (!bind_template(start, open, kernel, &t, err)) {
        n = split_list(open + 1, close, items, max < TJ_CUDA_C_MAX_PARAMS ? max : TJ_CUDA_C_MAX_PARAMS);
        if (n < 0)
            tj_rt_fail(err, "kernel '%s': more than %d parameters", kernel, max);
        if (n == 1 && items[0].n == 4 && !memcmp(items[0].s, "void", 4))
            n = 0;
        for (int i = 0; i < n; i++)
            if (read_param(items[i], &t, kernel, i, &out[i], err))
                n = -1;
    }
    free(code);
    return n;
}

/* ---- a stated signature --------------------------------------------------------- */

/* "[NAME:] [const] DTYPE[*]" */
static int read_stated(span item, const char *kernel, int index, tj_cuda_param *p, tj_rt_error *err)
{
    memset(p, 0, sizeof *p);
    const char *s = item.s, *end = item.s + item.n;
    const char *colon = memchr(s, ':', item.n);
    if (colon) {
        span name = last_word((span){s, (size_t)(colon - s)});
        snprintf(p->name, sizeof p->name, "%.*s", (int)name.n, name.s);
        s = colon + 1;
    }
    while (s < end && isspace((unsigned char)*s))
        s++;
    if (end - s > 6 && !strncmp(s, "const ", 6)) {
        p->is_const = 1;
        s += 6;
    }
    const char *w = s;
    while (s < end && is_ident(*s))
        s++;
    p->dtype = tj_dtype_from_name(w, (size_t)(s - w));
    p->pointer = (s < end && *s == '*');
    p->is_const &= p->pointer;
    if ((p->dtype == TJ_DT_INVALID && !(p->pointer && s - w == 4 && !strncmp(w, "void", 4))) ||
        s + p->pointer != end)
        return tj_rt_fail(err, "kernel '%s', signature item %d '%.*s': expected [NAME:] [const] DTYPE[*] "
                               "(f32, i32, u64, f16, bf16, bool, ...; void*)",
                          kernel, index, (int)item.n, item.s);
    return 0;
}

static int params_from_signature(const char *sig, const char *kernel, tj_cuda_param *out, int max, tj_rt_error *err)
{
    span items[TJ_CUDA_C_MAX_PARAMS];
    int n = split_list(sig, sig + strlen(sig), items, max < TJ_CUDA_C_MAX_PARAMS ? max : TJ_CUDA_C_MAX_PARAMS);
    if (n < 0)
        return -tj_rt_fail(err, "kernel '%s': the signature has more than %d parameters", kernel, max);
    for (int i = 0; i < n; i++)
        if (read_stated(items[i], kernel, i, &out[i], err))
            return -1;
    return n;
}

int tj_cuda_c_params(const char *source, size_t len, const char *name, const char *signature, tj_cuda_param *out,
                     int max, tj_rt_error *err)
{
    if (!name || !out || max < 0 || (!signature && !source))
        return -tj_rt_fail(err, "tj_cuda_c_params: NULL kernel name or output, or neither source nor signature");
    return signature ? params_from_signature(signature, name, out, max, err)
                     : params_from_source(source, len, name, out, max, err);
}

/* ---- against the PTX -------------------------------------------------------------- */

/* Bytes of one ".param" declaration: ".param .u64 NAME" or ".param .align
 * A .b8 NAME[N]". 0 when unreadable. */
static int ptx_param_size(const char *s, size_t len)
{
    const char *bracket = memchr(s, '[', len);
    if (bracket)
        return atoi(bracket + 1);
    for (const char *p = s; p + 3 < s + len; p++)
        if (p[0] == '.' && strchr("usbf", p[1]) && isdigit((unsigned char)p[2]))
            return atoi(p + 2) / 8;
    return 0;
}

/* ".entry SYMBOL(" in ptx, for a symbol of any length (mangled template
 * names run to thousands of characters). */
static const char *find_entry(const char *ptx, const char *symbol)
{
    size_t len = strlen(symbol);
    for (const char *p = strstr(ptx, ".entry "); p; p = strstr(p + 7, ".entry ")) {
        const char *name = p + 7;
        while (*name == ' ')
            name++;
        if (!strncmp(name, symbol, len) && name[len] == '(')
            return p;
    }
    return NULL;
}

int tj_nvrtc_check_ptx_params(const char *ptx, const char *symbol, const tj_cuda_param *params, uint32_t n,
                              const char *kernel, tj_rt_error *err)
{
    const char *p = find_entry(ptx, symbol);
    if (!p)
        return tj_rt_fail(err, "kernel '%s': no .entry %s in the PTX", kernel, symbol);
    const char *end = strchr(p, ')');
    uint32_t i = 0;
    for (p = strstr(p, ".param"); p && end && p < end; p = strstr(p + 6, ".param"), i++) {
        size_t len = strcspn(p, ",)\n");
        int want = i < n ? (params[i].pointer ? 8 : tj_dtype_size(params[i].dtype)) : 0;
        int got = ptx_param_size(p, len);
        if (i < n && got != want)
            return tj_rt_fail(err, "kernel '%s', parameter %u%s%s%s: %d bytes in the PTX, but its type "
                                   "takes %d (state the signature)",
                              kernel, i, params[i].name[0] ? " ('" : "", params[i].name,
                              params[i].name[0] ? "')" : "", got, want);
    }
    if (i != n)
        return tj_rt_fail(err, "kernel '%s': %u parameters in the PTX, %u in the %s", kernel, i, n,
                          "declaration or signature");
    return 0;
}

void tj_cuda_param_text(const tj_cuda_param *p, tj_buf *out)
{
    tj_buf_printf(out, "%s%s%s%s%s", p->name, p->name[0] ? ": " : "", p->is_const ? "const " : "",
                  p->dtype == TJ_DT_INVALID ? "void" : tj_dtype_name(p->dtype), p->pointer ? "*" : "");
}
