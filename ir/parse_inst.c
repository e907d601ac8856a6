/* The IR text parser: instructions, their attributes and regions. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx_internal.h"
#include "ir/parse_internal.h"
#include "ir/text.h"

/* ---- instructions ------------------------------------------------------------------- */

/* The parts of an instruction line, gathered before it is emitted. */
typedef struct inst_text {
    const tj_tok *start, *name; /* name: the %N token, or NULL */
    tj_op op;
    tj_ref *args;
    uint32_t nargs, acap;
    int64_t imm;
    double fimm;
    uint32_t flags;
    int32_t *list;
    uint32_t nlist, lcap;
    tj_type type;
} inst_text;

static int at_operand(const parser *p)
{
    const tj_tok *t = peek(p);
    if (t->kind == TJ_TOK_VALUE) /* unless it names the next instruction */
        return !is_punct(peek2(p), '=');
    return is_word(t, "_");
}

static void parse_operands(parser *p, inst_text *it)
{
    if (!at_operand(p))
        return;
    do {
        if (!at_operand(p))
            tjp_fail_expected(p, "an operand (%N or _)");
        const tj_tok *t = next(p);
        it->args = tj_grow(p->c, it->args, &it->acap, it->nargs + 1, sizeof(tj_ref));
        it->args[it->nargs++] = t->kind == TJ_TOK_VALUE ? tjp_use(p, t) : TJ_NONE;
    } while (accept_punct(p, ','));
}

static void push_list(parser *p, inst_text *it, int32_t v)
{
    it->list = tj_grow(p->c, it->list, &it->lcap, it->nlist + 1, sizeof(int32_t));
    it->list[it->nlist++] = v;
}

/* A view axis: `index`, `gather` or an extent. */
static int32_t parse_view_axis(parser *p)
{
    int32_t v = is_word(peek(p), "index") ? TJ_VIEW_INDEX : is_word(peek(p), "gather") ? TJ_VIEW_GATHER : 0;
    if (v) {
        next(p);
        return v;
    }
    if (peek(p)->kind != TJ_TOK_NUMBER)
        tjp_fail_expected(p, "'index', 'gather' or an extent");
    return (int32_t)tjp_int_in(p, INT32_MIN, INT32_MAX, "extent");
}

/* `[...]` of integers, or of view axes. */
static void parse_list(parser *p, inst_text *it, int view_axes)
{
    tjp_expect(p, '[');
    while (!accept_punct(p, ']')) {
        if (it->nlist && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ']'");
        if (view_axes)
            push_list(p, it, parse_view_axis(p));
        else if (peek(p)->kind == TJ_TOK_NUMBER)
            push_list(p, it, (int32_t)tjp_int_in(p, INT32_MIN, INT32_MAX, "list entry"));
        else
            tjp_fail_expected(p, "an integer");
    }
}

static void expect_key(parser *p, const char *key)
{
    tjp_expect_word(p, key);
    tjp_expect(p, '=');
}

static void parse_sort_attr(parser *p, inst_text *it)
{
    expect_key(p, "axis");
    it->imm = tjp_i64(p);
    if (!accept_punct(p, ','))
        return;
    expect_key(p, "descending");
    if (is_word(peek(p), "true"))
        it->flags |= TJ_SORT_DESCENDING;
    else if (!is_word(peek(p), "false"))
        tjp_fail_expected(p, "'true' or 'false'");
    next(p);
}

/* `, inbounds = [axes]` and `, chunk = g` after a view's axes (ir.h). */
static void parse_view_flags(parser *p, inst_text *it)
{
    if (is_punct(peek(p), ',') && is_word(peek2(p), "inbounds")) {
        next(p);
        expect_key(p, "inbounds");
        tjp_expect(p, '[');
        for (int n = 0; !accept_punct(p, ']'); n++) {
            if (n && !accept_punct(p, ','))
                tjp_fail_expected(p, "',' or ']'");
            it->flags |= 1u << tjp_int_in(p, 0, TJ_MAX_RANK - 1, "axis");
        }
    }
    if (accept_punct(p, ',')) {
        expect_key(p, "chunk");
        const tj_tok *t = peek(p);
        int64_t g = tjp_int_in(p, 1, 1 << 15, "chunk");
        uint32_t log2 = 0;
        while ((INT64_C(1) << log2) < g)
            log2++;
        if ((INT64_C(1) << log2) != g)
            tjp_fail(p, t, "chunk %" PRId64 " is not a power of two", g);
        it->flags |= log2 << TJ_VIEW_CHUNK_SHIFT;
    }
}

static void parse_dot_attr(parser *p, inst_text *it)
{
    expect_key(p, "precision");
    const tj_tok *t = peek(p);
    if (is_word(t, "ieee"))
        it->imm = TJ_DOT_IEEE;
    else if (is_word(t, "tf32"))
        it->imm = TJ_DOT_TF32;
    else if (is_word(t, "default"))
        it->imm = TJ_DOT_DEFAULT;
    else
        tjp_fail_expected(p, "'ieee', 'tf32' or 'default'");
    next(p);
}

static void parse_mma_attr(parser *p, inst_text *it)
{
    expect_key(p, "role");
    const tj_tok *t = peek(p);
    for (int r = TJ_MMA_A; r <= TJ_MMA_BT; r++) {
        if (is_word(t, tj_mma_role_name(r))) {
            it->imm = r;
            next(p);
            return;
        }
    }
    tjp_fail_expected(p, "'a', 'b', 'c' or 'bt'");
}

/* `a = k|mn` or `b = k|mn`: sets `flag` for mn. */
static void parse_major(parser *p, inst_text *it, const char *key, unsigned flag)
{
    expect_key(p, key);
    if (is_word(peek(p), "mn"))
        it->flags |= flag;
    else if (!is_word(peek(p), "k"))
        tjp_fail_expected(p, "'k' or 'mn'");
    next(p);
}

/* `in = DTYPE, a = k|mn, b = k|mn[, zero]` (wgmma) */
static void parse_wgmma_attr(parser *p, inst_text *it)
{
    expect_key(p, "in");
    const tj_tok *t = peek(p);
    tj_dtype dt = t->kind == TJ_TOK_IDENT ? tj_dtype_from_name(t->s, t->len) : TJ_DT_INVALID;
    if (dt == TJ_DT_INVALID)
        tjp_fail_expected(p, "a dtype");
    it->imm = dt;
    next(p);
    tjp_expect(p, ',');
    parse_major(p, it, "a", TJ_WGMMA_A_MN);
    tjp_expect(p, ',');
    parse_major(p, it, "b", TJ_WGMMA_B_MN);
    if (is_punct(peek(p), ',')) {
        next(p);
        tjp_expect_word(p, "zero");
        it->flags |= TJ_WGMMA_ZERO;
    }
}

/* `cols = N, rows = N, swizzle = N` (tma_load): a box of at most 256 x 256 */
static void parse_tma_attr(parser *p, inst_text *it)
{
    expect_key(p, "cols");
    int64_t cols = tjp_i64(p);
    tjp_expect(p, ',');
    expect_key(p, "rows");
    int64_t rows = tjp_i64(p);
    tjp_expect(p, ',');
    expect_key(p, "swizzle");
    int64_t swizzle = tjp_i64(p), pair = 0;
    if (accept_punct(p, ',')) {
        expect_key(p, "pair");
        pair = tjp_i64(p);
    }
    if (cols < 1 || cols > 256 || rows < 1 || rows > 256 || (swizzle != 32 && swizzle != 64 && swizzle != 128) ||
        pair < 0 || pair > 8)
        tjp_fail_expected(p, "a box of 1 to 256 columns and rows, swizzle 32, 64 or 128, pair 1 to 8");
    it->imm = cols | rows << 16 | pair << 32;
    it->flags = (uint32_t)swizzle;
}

/* `{key = value}` after the operands, as the op's attribute kind says. */
static void parse_attr(parser *p, inst_text *it, tj_attr_kind kind)
{
    static const char *const forms[TJ_ATTR_LAST + 1] = {
        [TJ_ATTR_NONE] = "'{'", [TJ_ATTR_VALUE] = "'{'",
        [TJ_ATTR_INDEX] = "'{index = N}'", [TJ_ATTR_AXIS] = "'{axis = N}'",
        [TJ_ATTR_PERM] = "'{perm = [...]}'", [TJ_ATTR_VIEW] = "'{axes = [...]}'",
        [TJ_ATTR_SORT] = "'{axis = N}'", [TJ_ATTR_DOT] = "'{precision = ...}'",
        [TJ_ATTR_MMA] = "'{role = a|b|c|bt}'", [TJ_ATTR_BYTES] = "'{bytes = N}'",
        [TJ_ATTR_PENDING] = "'{pending = N}'", [TJ_ATTR_WGMMA] = "'{in = DTYPE, a = k|mn, b = k|mn}'",
        [TJ_ATTR_TMA] = "'{cols = N, rows = N, swizzle = N[, pair = N]}'",
    };
    if (kind == TJ_ATTR_DOT && !is_punct(peek(p), '{'))
        return; /* the default precision is not printed */
    if (!accept_punct(p, '{'))
        tjp_fail_expected(p, forms[kind]);
    switch (kind) {
    case TJ_ATTR_INDEX:
        expect_key(p, "index");
        it->imm = tjp_i64(p);
        break;
    case TJ_ATTR_AXIS:
        expect_key(p, "axis");
        it->imm = tjp_i64(p);
        break;
    case TJ_ATTR_PERM:
        expect_key(p, "perm");
        parse_list(p, it, 0);
        break;
    case TJ_ATTR_VIEW:
        expect_key(p, "axes");
        parse_list(p, it, 1);
        parse_view_flags(p, it);
        break;
    case TJ_ATTR_SORT:
        parse_sort_attr(p, it);
        break;
    case TJ_ATTR_DOT:
        parse_dot_attr(p, it);
        break;
    case TJ_ATTR_MMA:
        parse_mma_attr(p, it);
        break;
    case TJ_ATTR_BYTES:
        expect_key(p, "bytes");
        it->imm = tjp_i64(p);
        break;
    case TJ_ATTR_PENDING:
        expect_key(p, "pending");
        it->imm = tjp_i64(p);
        break;
    case TJ_ATTR_WGMMA:
        parse_wgmma_attr(p, it);
        break;
    case TJ_ATTR_TMA:
        parse_tma_attr(p, it);
        break;
    case TJ_ATTR_NONE:
    case TJ_ATTR_VALUE:
        break;
    }
    tjp_expect(p, '}');
}

static int is_float_word(const tj_tok *t) { return is_word(t, "inf") || is_word(t, "nan"); }

static void parse_float_const(parser *p, const tj_tok *t, inst_text *it)
{
    char buf[128];
    if (t->len >= sizeof buf)
        tjp_fail(p, t, "float constant too long");
    memcpy(buf, t->s, t->len);
    buf[t->len] = 0;
    it->fimm = strtod(buf, NULL); /* out of range gives +-inf or 0, as it should */
}

static void parse_int_const(parser *p, const tj_tok *t, tj_dtype dt, inst_text *it)
{
    tjp_literal v = {0, 0};
    if (is_word(t, "true") || is_word(t, "false"))
        v.mag = is_word(t, "true");
    else
        v = tjp_integer_tok(p, t);
    if (dt == TJ_DT_U64 && !v.negative)
        it->imm = (int64_t)v.mag; /* u64 keeps its bit pattern */
    else
        it->imm = tjp_literal_i64(p, t, v);
    if (!tj_int_fits_dtype(it->imm, dt) || (dt == TJ_DT_U64 && v.negative))
        tjp_fail(p, t, "constant %.*s does not fit %s", (int)t->len, t->s, tj_dtype_name(dt));
}

/* `const V : T`: the value is read once the type is known. */
static void parse_const(parser *p, inst_text *it)
{
    const tj_tok *v = next(p);
    if (v->kind != TJ_TOK_NUMBER && !is_float_word(v) && !is_word(v, "true") && !is_word(v, "false"))
        tjp_fail(p, v, "expected a constant value");
    if (!it->name)
        tjp_fail(p, it->start, "const needs a result: write '%%N = const ...'");
    tjp_expect(p, ':');
    const tj_tok *at = peek(p);
    it->type = tjp_type(p);
    const tj_type_info *ti = tj_type_get(p->c, it->type);
    if (ti->kind != TJ_TK_TILE || ti->rank != 0)
        tjp_fail(p, at, "a constant has a scalar type");
    if (tj_dtype_is_float(ti->dtype))
        parse_float_const(p, v, it);
    else
        parse_int_const(p, v, ti->dtype, it);
}

/* `: TYPE` when the instruction has a result name; none otherwise. */
static void parse_result_type(parser *p, inst_text *it)
{
    if (it->name) {
        tjp_expect(p, ':');
        it->type = tjp_type(p);
    } else if (is_punct(peek(p), ':')) {
        tjp_fail(p, peek(p), "a result type needs a result name: write '%%N = %s ...'",
                 tj_op_get(it->op)->name);
    }
}

static tj_ref emit_inst(parser *p, tj_block_id b, const inst_text *it)
{
    tj_ref r = tj_emit(p->k, b, it->op, it->type, it->args, it->nargs);
    tj_inst *in = tj_inst_at(p->k, r);
    in->imm = it->imm;
    in->fimm = it->fimm;
    in->flags = it->flags;
    in->loc = tok_loc(p, it->start);
    if (it->nlist)
        tj_inst_set_list(p->k, r, it->list, it->nlist);
    return r;
}

/* `^(%1: i32, %2: f32[128]):` at the start of a region block. */
static void parse_block_args(parser *p, tj_block_id b)
{
    tjp_expect(p, '(');
    for (int64_t i = 0; !accept_punct(p, ')'); i++) {
        if (i && !accept_punct(p, ','))
            tjp_fail_expected(p, "',' or ')'");
        const tj_tok *name = peek(p);
        if (name->kind != TJ_TOK_VALUE)
            tjp_fail_expected(p, "a block argument (%N: type)");
        next(p);
        tjp_expect(p, ':');
        tj_ref r = tj_emit(p->k, b, TJ_OP_ARG, tjp_type(p), NULL, 0);
        tj_inst_at(p->k, r)->imm = i;
        tj_inst_at(p->k, r)->loc = tok_loc(p, name);
        tjp_define(p, name, r);
    }
    tjp_expect(p, ':');
}

/* `{ [^(args):] insts }`, owned by instruction r as its region g. */
static void parse_region(parser *p, tj_ref r, int g)
{
    tjp_enter(p, &p->depth, "regions");
    tj_block_id b = tj_block_new(p->k, r);
    tj_inst_at(p->k, r)->region[g] = b;
    tjp_expect(p, '{');
    if (accept_punct(p, '^'))
        parse_block_args(p, b);
    tjp_block_body(p, b);
    tjp_expect(p, '}');
    p->depth--;
}

static void parse_regions(parser *p, tj_ref r)
{
    tj_op op = tj_inst_at(p->k, r)->op;
    if (!tj_op_region_count(op))
        return;
    parse_region(p, r, 0);
    if (op != TJ_OP_IF)
        return;
    if (is_word(peek(p), "else")) {
        next(p);
        parse_region(p, r, 1);
        return;
    }
    /* `if` without `else`: the else branch yields nothing (and an error
     * about that points at the if) */
    tj_block_id b = tj_block_new(p->k, r);
    tj_inst_at(p->k, r)->region[1] = b;
    tj_ref y = tj_emit(p->k, b, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    tj_inst_at(p->k, y)->loc = tj_inst_at(p->k, r)->loc;
}

static tj_op parse_op_name(parser *p)
{
    const tj_tok *t = peek(p);
    if (t->kind != TJ_TOK_IDENT)
        tjp_fail_expected(p, "an instruction");
    tj_op op = tj_op_from_name(t->s, t->len);
    if (op == TJ_OP_INVALID)
        tjp_fail(p, t, "unknown op '%.*s'", t->len > 40 ? 40 : (int)t->len, t->s);
    next(p);
    return op;
}

static void parse_inst(parser *p, tj_block_id b)
{
    inst_text it = {.start = peek(p)};
    if (peek(p)->kind == TJ_TOK_VALUE) {
        it.name = next(p);
        tjp_expect(p, '=');
    }
    it.op = parse_op_name(p);
    const tj_op_info *info = tj_op_get(it.op);
    if (it.name && it.op == TJ_OP_YIELD)
        tjp_fail(p, it.start, "yield has no result");
    if (it.op == TJ_OP_CONST) {
        parse_const(p, &it);
    } else {
        parse_operands(p, &it);
        if (info->attr != TJ_ATTR_NONE)
            parse_attr(p, &it, info->attr);
        else if (it.op == TJ_OP_STORE && accept_punct(p, '{')) {
            if (!is_word(peek(p), "distinct"))
                tjp_fail_expected(p, "'distinct'");
            next(p);
            tjp_expect(p, '}');
            it.flags |= TJ_STORE_DISTINCT;
        } else if (is_punct(peek(p), '{') && !tj_op_region_count(it.op))
            tjp_fail(p, peek(p), "'%s' takes no attributes", info->name);
        parse_result_type(p, &it);
    }
    tj_ref r = emit_inst(p, b, &it);
    parse_regions(p, r);
    if (it.name)
        tjp_define(p, it.name, r);
}

/* Instructions up to the closing `}` or the `body:` label. */
void tjp_block_body(parser *p, tj_block_id b)
{
    while (!is_punct(peek(p), '}') && !is_word(peek(p), "body")) {
        if (peek(p)->kind == TJ_TOK_EOF)
            tjp_fail_expected(p, "an instruction or '}'");
        parse_inst(p, b);
    }
}
