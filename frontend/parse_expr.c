/* Expressions: C-like precedence, `**` above unary minus (right-assoc),
 * calls with keyword arguments, indexing with slices and None, tuples,
 * lists and tile types (`f32[BM, BN]`). */
#include <math.h>
#include <string.h>

#include "frontend/parser.h"

fe_expr *fe_new_expr(fe_parser *p, fe_expr_kind kind, const fe_token *at)
{
    fe_expr *e = tj_alloc(p->c, sizeof *e);
    e->kind = kind;
    e->loc = at->loc;
    e->begin = at->begin;
    e->end = at->end;
    return e;
}

static uint32_t height_of(const fe_expr *e) { return e ? e->height : 0; }
static uint32_t size_of(const fe_expr *e) { return e ? e->size : 0; }

static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Extends e's span to the last consumed token and computes its height,
 * which bounds the recursion of everything that walks it later. A chain
 * `a + b + c + ...` is a deep tree but not nested: walkers go down left
 * operands in a loop (fe_expr_chain_leaf), so those do not count. */
static fe_expr *finish(fe_parser *p, fe_expr *e)
{
    if (!e)
        return NULL;
    if (fe_prev(p)->end > e->end)
        e->end = fe_prev(p)->end;
    uint32_t lhs_height = height_of(e->lhs) - (e->kind == E_BINARY);
    uint32_t h = max_u32(lhs_height, height_of(e->rhs));
    uint64_t size = 1 + (uint64_t)size_of(e->lhs) + size_of(e->rhs);
    for (uint32_t i = 0; i < e->nitems; i++) {
        h = max_u32(h, height_of(e->items[i]));
        size += size_of(e->items[i]);
    }
    for (uint32_t i = 0; i < e->nkw; i++) {
        h = max_u32(h, height_of(e->kw[i].value));
        size += size_of(e->kw[i].value);
    }
    e->height = h + 1;
    e->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    if (e->height > FE_MAX_DEPTH) {
        fe_token at = {.loc = e->loc};
        fe_fatal(p, &at, "expression is nested too deeply (the limit is %d levels)", FE_MAX_DEPTH);
        return NULL;
    }
    return e;
}

fe_expr *fe_new_binary(fe_parser *p, const fe_token *at, fe_tok_kind op, fe_expr *lhs, fe_expr *rhs)
{
    fe_expr *e = fe_new_expr(p, E_BINARY, at);
    e->op = op;
    e->lhs = lhs;
    e->rhs = rhs;
    e->begin = lhs->begin;
    lhs->up = e;
    return finish(p, e);
}

static void push_item(fe_parser *p, fe_expr *e, fe_expr *item, uint32_t *cap)
{
    e->items = tj_grow(p->c, e->items, cap, e->nitems + 1, sizeof *e->items);
    e->items[e->nitems++] = item;
}

static int binop_prec(fe_tok_kind k)
{
    switch (k) {
    case T_OROR: return 1;
    case T_ANDAND: return 2;
    case T_PIPE: return 3;
    case T_CARET: return 4;
    case T_AMP: return 5;
    case T_EQ: case T_NE: return 6;
    case T_LT: case T_LE: case T_GT: case T_GE: return 7;
    case T_SHL: case T_SHR: return 8;
    case T_PLUS: case T_MINUS: return 9;
    case T_STAR: case T_SLASH: case T_PERCENT: return 10;
    default: return 0;
    }
}

tj_dtype fe_parse_dtype(fe_parser *p, const fe_token *t)
{
    if (t->kind != T_IDENT) {
        fe_syntax_error(p, t, "expected a type such as f32 or i32");
        return TJ_DT_INVALID;
    }
    tj_dtype dt = tj_dtype_from_name(t->text, strlen(t->text));
    if (dt != TJ_DT_INVALID)
        return dt;
    if (!strcmp(t->text, "f8e4m3") || !strcmp(t->text, "f8e5m2"))
        fe_syntax_error(p, t, "type %s is not supported by this compiler yet", t->text);
    else
        fe_syntax_error(p, t, "unknown type '%s' (expected bool, i8..i64, u8..u64, f16, bf16, f32 or f64)", t->text);
    return TJ_DT_INVALID;
}

/* Comma-separated expressions up to `close`, which is consumed, appended
 * to e->items (whose capacity is *cap). */
static int parse_items(fe_parser *p, fe_expr *e, uint32_t *cap, fe_tok_kind close, const char *what)
{
    while (fe_peek(p)->kind != close) {
        fe_expr *item = fe_parse_expr(p);
        if (!item)
            return 0;
        push_item(p, e, item, cap);
        if (!fe_accept(p, T_COMMA))
            break;
    }
    return fe_expect(p, close, what) != NULL;
}

fe_expr *fe_parse_type(fe_parser *p)
{
    const fe_token *t = fe_next(p);
    fe_expr *e = fe_new_expr(p, E_TYPE, t);
    e->dtype = fe_parse_dtype(p, t);
    if (e->dtype == TJ_DT_INVALID)
        return NULL;
    uint32_t cap = 0;
    if (fe_accept(p, T_LBRACKET)) {
        fe_open(p);
        int ok = parse_items(p, e, &cap, T_RBRACKET, "']' after the tile extents");
        fe_close(p);
        if (!ok)
            return NULL;
        if (!e->nitems) {
            fe_syntax_error(p, t, "a tile type needs at least one extent");
            return NULL;
        }
    }
    return finish(p, e);
}

static fe_expr *parse_paren(fe_parser *p, const fe_token *open)
{
    if (fe_peek(p)->kind == T_RPAREN) {
        fe_syntax_error(p, fe_peek(p), "expected an expression inside '()'");
        return NULL;
    }
    fe_expr *e = fe_parse_expr(p);
    if (e && fe_peek(p)->kind == T_COMMA) {
        fe_expr *tup = fe_new_expr(p, E_TUPLE, open);
        uint32_t cap = 0;
        push_item(p, tup, e, &cap);
        fe_next(p);
        if (!parse_items(p, tup, &cap, T_RPAREN, "')' to close the tuple"))
            return NULL;
        return finish(p, tup);
    }
    if (e && !fe_expect(p, T_RPAREN, "')'"))
        return NULL;
    return e;
}

static fe_expr *literal(fe_parser *p, fe_expr_kind kind, const fe_token *t)
{
    fe_expr *e = fe_new_expr(p, kind, t);
    e->height = 1;
    e->size = 1;
    e->ival = t->kind == T_TRUE ? 1 : t->ival;
    e->fval = t->kind == T_INF ? (double)INFINITY : t->kind == T_NAN ? (double)NAN : t->fval;
    e->name = t->text;
    return e;
}

static fe_expr *parse_primary(fe_parser *p)
{
    const fe_token *t = fe_peek(p);
    switch (t->kind) {
    case T_INT: fe_next(p); return literal(p, E_INT, t);
    case T_FLOAT: case T_INF: case T_NAN: fe_next(p); return literal(p, E_FLOAT, t);
    case T_TRUE: case T_FALSE: fe_next(p); return literal(p, E_BOOL, t);
    case T_STRING: fe_next(p); return literal(p, E_STRING, t);
    case T_NONE: fe_next(p); return literal(p, E_NONE, t);
    case T_IDENT:
        if (fe_peek_at(p, 1)->kind == T_LBRACKET && tj_dtype_from_name(t->text, strlen(t->text)))
            return fe_parse_type(p);
        fe_next(p);
        return literal(p, E_NAME, t);
    case T_LPAREN: {
        fe_next(p);
        if (!fe_enter(p, t))
            return NULL;
        fe_open(p);
        fe_expr *e = parse_paren(p, t);
        fe_close(p);
        fe_leave(p);
        return e;
    }
    case T_LBRACKET: {
        fe_next(p);
        fe_expr *e = fe_new_expr(p, E_LIST, t);
        uint32_t cap = 0;
        if (!fe_enter(p, t))
            return NULL;
        fe_open(p);
        int ok = parse_items(p, e, &cap, T_RBRACKET, "']' to close the list");
        fe_close(p);
        fe_leave(p);
        return ok ? finish(p, e) : NULL;
    }
    default:
        fe_expected(p, t, "an expression");
        return NULL;
    }
}

static int parse_kwarg(fe_parser *p, fe_expr *call, uint32_t *cap)
{
    const fe_token *name = fe_next(p);
    fe_next(p); /* = */
    fe_expr *v = fe_parse_expr(p);
    if (!v)
        return 0;
    for (uint32_t i = 0; i < call->nkw; i++)
        if (!strcmp(call->kw[i].name, name->text)) {
            fe_syntax_error(p, name, "keyword argument '%s' given twice", name->text);
            return 0;
        }
    call->kw = tj_grow(p->c, call->kw, cap, call->nkw + 1, sizeof *call->kw);
    call->kw[call->nkw++] = (fe_kwarg){name->text, name->loc, v};
    return 1;
}

static fe_expr *parse_call(fe_parser *p, fe_expr *callee)
{
    fe_expr *call = fe_new_expr(p, E_CALL, fe_prev(p));
    call->loc = callee->loc;
    call->begin = callee->begin;
    call->name = callee->name;
    uint32_t cap = 0, kwcap = 0;
    while (fe_peek(p)->kind != T_RPAREN) {
        const fe_token *t = fe_peek(p);
        if (t->kind == T_IDENT && fe_peek_at(p, 1)->kind == T_ASSIGN) {
            if (!parse_kwarg(p, call, &kwcap))
                return NULL;
        } else if (call->nkw) {
            fe_syntax_error(p, t, "positional argument after keyword arguments");
            return NULL;
        } else {
            fe_expr *a = fe_parse_expr(p);
            if (!a)
                return NULL;
            push_item(p, call, a, &cap);
        }
        if (!fe_accept(p, T_COMMA))
            break;
    }
    if (!fe_expect(p, T_RPAREN, "')' or ',' in the argument list"))
        return NULL;
    return finish(p, call);
}

/* `start:stop`, `:`, `None` or an index expression. */
static fe_expr *parse_index_item(fe_parser *p)
{
    const fe_token *t = fe_peek(p);
    fe_expr *start = NULL;
    if (t->kind != T_COLON && !(start = fe_parse_expr(p)))
        return NULL;
    if (!fe_accept(p, T_COLON))
        return start;
    fe_expr *s = fe_new_expr(p, E_SLICE, t);
    s->lhs = start;
    fe_tok_kind k = fe_peek(p)->kind;
    if (k == T_COLON) {
        fe_syntax_error(p, fe_peek(p), "slice steps are not supported");
        return NULL;
    }
    if (k != T_COMMA && k != T_RBRACKET && !(s->rhs = fe_parse_expr(p)))
        return NULL;
    return finish(p, s);
}

static fe_expr *parse_index(fe_parser *p, fe_expr *base)
{
    const fe_token *open = fe_prev(p);
    fe_expr *e = fe_new_expr(p, E_INDEX, open);
    e->begin = base->begin;
    e->lhs = base;
    uint32_t cap = 0;
    while (fe_peek(p)->kind != T_RBRACKET) {
        fe_expr *item = parse_index_item(p);
        if (!item)
            return NULL;
        push_item(p, e, item, &cap);
        if (!fe_accept(p, T_COMMA))
            break;
    }
    if (!fe_expect(p, T_RBRACKET, "']' or ',' in the index"))
        return NULL;
    if (!e->nitems) {
        fe_syntax_error(p, open, "an index needs at least one entry");
        return NULL;
    }
    return finish(p, e);
}

static fe_expr *parse_postfix(fe_parser *p)
{
    fe_expr *e = parse_primary(p);
    while (e) {
        const fe_token *t = fe_peek(p);
        if (t->kind == T_LPAREN) {
            if (e->kind != E_NAME) {
                fe_syntax_error(p, t, "only named functions can be called");
                return NULL;
            }
            fe_next(p);
            if (!fe_enter(p, t))
                return NULL;
            fe_open(p);
            e = parse_call(p, e);
            fe_close(p);
            fe_leave(p);
        } else if (t->kind == T_LBRACKET) {
            fe_next(p);
            if (!fe_enter(p, t))
                return NULL;
            fe_open(p);
            e = parse_index(p, e);
            fe_close(p);
            fe_leave(p);
        } else {
            break;
        }
    }
    return e;
}

static fe_expr *parse_unary(fe_parser *p);

static fe_expr *parse_power(fe_parser *p)
{
    fe_expr *base = parse_postfix(p);
    const fe_token *t = fe_peek(p);
    if (!base || t->kind != T_POW)
        return base;
    fe_next(p);
    if (!fe_enter(p, t))
        return NULL;
    fe_expr *exp = parse_unary(p);
    fe_leave(p);
    if (!exp)
        return NULL;
    return fe_new_binary(p, t, T_POW, base, exp);
}

static fe_expr *parse_unary(fe_parser *p)
{
    const fe_token *t = fe_peek(p);
    if (t->kind != T_MINUS && t->kind != T_NOT && t->kind != T_TILDE)
        return parse_power(p);
    fe_next(p);
    if (!fe_enter(p, t))
        return NULL;
    fe_expr *a = parse_unary(p);
    fe_leave(p);
    if (!a)
        return NULL;
    fe_expr *e = fe_new_expr(p, E_UNARY, t);
    e->op = t->kind;
    e->lhs = a;
    return finish(p, e);
}

/* Precedence climbing; the recursion is bounded by the number of levels. */
static fe_expr *parse_binary(fe_parser *p, int min_prec)
{
    fe_expr *lhs = parse_unary(p);
    while (lhs) {
        const fe_token *t = fe_peek(p);
        int prec = binop_prec(t->kind);
        if (!prec || prec < min_prec)
            break;
        fe_next(p);
        fe_expr *rhs = parse_binary(p, prec + 1);
        if (!rhs)
            return NULL;
        lhs = fe_new_binary(p, t, t->kind, lhs, rhs);
    }
    return lhs;
}

fe_expr *fe_parse_expr(fe_parser *p)
{
    if (p->fatal)
        return NULL;
    return parse_binary(p, 1);
}

fe_expr *fe_parse_expr_list(fe_parser *p)
{
    const fe_token *first = fe_peek(p);
    fe_expr *e = fe_parse_expr(p);
    if (!e || fe_peek(p)->kind != T_COMMA)
        return e;
    fe_expr *tup = fe_new_expr(p, E_TUPLE, first);
    uint32_t cap = 0;
    push_item(p, tup, e, &cap);
    while (fe_accept(p, T_COMMA)) {
        fe_expr *item = fe_parse_expr(p);
        if (!item)
            return NULL;
        push_item(p, tup, item, &cap);
    }
    return finish(p, tup);
}
