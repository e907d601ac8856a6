/* Peephole simplification of pure ops for canonicalize: constant folding,
 * exact algebraic identities, shape-op chains, and the canonical operand
 * order of commutative ops (a constant goes on the right).
 *
 * Integer eq/ne fold where the operands' known low bits differ (a thread's
 * register index base + j against 0 or the last index).
 *
 * Float identities are applied only where IEEE 754 makes them exact:
 * x * 1.0, x / 1.0, x - 0.0 and x + -0.0 give x for every x (NaN and -0.0
 * included), but x + 0.0 turns -0.0 into 0.0, and x * 0.0 is not 0.0 for
 * NaN, infinities or negative x. */
#include "passes/canon.h"
#include "passes/facts.h"
#include "passes/fold.h"

static tj_inst *inst(const tj_canon *cx, tj_ref r) { return &cx->k->insts[r]; }

static tj_type result_type(const tj_canon *cx, tj_ref r) { return inst(cx, r)->type; }

/* ---- constants ------------------------------------------------------------- */

/* An elementwise op whose operands are all constants (or splats) becomes
 * a constant (or splat) of its result type. */
static tj_ref fold_constants(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    tj_cval vals[3];
    if (!(tj_op_get(in->op)->flags & TJ_OPF_ELEM) || in->nargs == 0 || in->nargs > 3)
        return TJ_NONE;
    for (uint32_t a = 0; a < in->nargs; a++)
        if (!in->args[a] || !tj_const_value(cx->k, in->args[a], &vals[a]))
            return TJ_NONE;
    tj_dtype dt = tj_value_dtype(cx->k, in->args[in->op == TJ_OP_SELECT ? 1 : 0]);
    tj_dtype out = tj_value_dtype(cx->k, r);
    tj_cval res;
    if (!tj_fold_elementwise(in->op, dt, out, vals, &res))
        return TJ_NONE;
    return tj_cursor_const(cx->k, &cx->at, in->type, res);
}

/* Rewrites shape op r of a splat into a splat of its own type. */
static void make_splat(tj_canon *cx, tj_ref r, tj_ref c)
{
    tj_inst *in = inst(cx, r);
    in->op = TJ_OP_BROADCAST;
    in->args[0] = c;
    in->nargs = 1;
    in->list = NULL;
    in->nlist = 0;
    in->imm = 0;
    cx->changed = 1;
}

/* ---- shape ops ----------------------------------------------------------------- */

static int is_identity_perm(const tj_inst *in)
{
    for (uint32_t i = 0; i < in->nlist; i++)
        if (in->list[i] != (int32_t)i)
            return 0;
    return 1;
}

/* permute(permute(x, p1), p2) = permute(x, q) with q[i] = p1[p2[i]]. */
static void compose_perms(tj_canon *cx, tj_ref r, tj_ref inner)
{
    const tj_inst *out = inst(cx, r), *in = inst(cx, inner);
    int32_t q[TJ_MAX_RANK];
    if (out->nlist != in->nlist || out->nlist > TJ_MAX_RANK)
        return;
    for (uint32_t i = 0; i < out->nlist; i++) {
        if (out->list[i] < 0 || (uint32_t)out->list[i] >= in->nlist)
            return;
        q[i] = in->list[out->list[i]];
    }
    tj_ref x = in->args[0];
    tj_inst_set_list(cx->k, r, q, out->nlist);
    inst(cx, r)->args[0] = x;
    cx->changed = 1;
}

static tj_ref simplify_shape(tj_canon *cx, tj_ref r)
{
    tj_inst *in = inst(cx, r);
    tj_ref x = in->args[0];
    if (!x)
        return TJ_NONE;
    tj_inst *xi = inst(cx, x);
    if (in->op == TJ_OP_PERMUTE ? is_identity_perm(in) : xi->type == in->type)
        return x;
    tj_ref c = tj_splat_source(cx->k, x);
    if (c && in->op != TJ_OP_BROADCAST) {
        make_splat(cx, r, c);
    } else if (xi->op == in->op && xi->nargs == 1 && xi->args[0]) {
        /* broadcast of broadcast, reshape of reshape, permute of permute */
        if (in->op == TJ_OP_PERMUTE) {
            compose_perms(cx, r, x);
        } else {
            in->args[0] = xi->args[0];
            cx->changed = 1;
        }
    }
    return TJ_NONE;
}

/* ---- elementwise identities ------------------------------------------------------ */

static void put_constant_right(tj_canon *cx, tj_ref r)
{
    tj_inst *in = inst(cx, r);
    tj_cval ignored;
    tj_op swapped = tj_swapped_op(cx->k, in);
    if (!swapped || !tj_const_value(cx->k, in->args[0], &ignored) ||
        tj_const_value(cx->k, in->args[1], &ignored))
        return;
    tj_ref t = in->args[0];
    in->args[0] = in->args[1];
    in->args[1] = t;
    in->op = swapped;
    cx->changed = 1;
}

/* op(x, c) with a constant c that gives x (returns 1) or c (returns 2). */
static int int_identity(const tj_canon *cx, tj_op op, tj_dtype dt, tj_ref c)
{
    const tj_kernel *k = cx->k;
    int is_int = tj_dtype_is_int(dt);
    int64_t ones = tj_fold_all_ones(dt);
    switch (op) {
    case TJ_OP_ADD: case TJ_OP_SUB: case TJ_OP_SHL: case TJ_OP_SHR:
        return is_int && tj_is_const_int(k, c, 0);
    case TJ_OP_MUL:
        return !is_int ? 0 : tj_is_const_int(k, c, 1) ? 1 : tj_is_const_int(k, c, 0) ? 2 : 0;
    case TJ_OP_DIV: case TJ_OP_POW:
        return is_int && tj_is_const_int(k, c, 1);
    case TJ_OP_OR:
        return tj_is_const_int(k, c, 0) ? 1 : tj_is_const_int(k, c, ones) ? 2 : 0;
    case TJ_OP_AND:
        return tj_is_const_int(k, c, ones) ? 1 : tj_is_const_int(k, c, 0) ? 2 : 0;
    case TJ_OP_XOR:
        return tj_is_const_int(k, c, 0);
    default:
        return 0;
    }
}

static int float_identity(const tj_canon *cx, tj_op op, tj_ref c)
{
    switch (op) {
    case TJ_OP_MUL: case TJ_OP_DIV: return tj_is_const_float(cx->k, c, 1.0, 0);
    case TJ_OP_SUB: return tj_is_const_float(cx->k, c, 0.0, 0);
    case TJ_OP_ADD: return tj_is_const_float(cx->k, c, 0.0, 1);
    default: return 0;
    }
}

/* op(x, x): x itself, or a constant of r's type (materialized). */
static tj_ref same_operands(tj_canon *cx, tj_ref r, tj_dtype dt)
{
    tj_op op = inst(cx, r)->op;
    tj_ref x = inst(cx, r)->args[0];
    int exact = !tj_dtype_is_float(dt); /* NaN != NaN, inf - inf is NaN */
    switch (op) {
    case TJ_OP_MAX: case TJ_OP_MIN: return x;
    case TJ_OP_AND: case TJ_OP_OR: return exact ? x : TJ_NONE;
    case TJ_OP_SUB: case TJ_OP_XOR:
        return exact ? tj_cursor_const(cx->k, &cx->at, result_type(cx, r), (tj_cval){0}) : TJ_NONE;
    case TJ_OP_EQ: case TJ_OP_LE: case TJ_OP_GE: case TJ_OP_NE: case TJ_OP_LT: case TJ_OP_GT: {
        int truth = op == TJ_OP_EQ || op == TJ_OP_LE || op == TJ_OP_GE;
        return exact ? tj_cursor_const(cx->k, &cx->at, result_type(cx, r), (tj_cval){.i = truth})
                     : TJ_NONE;
    }
    default: return TJ_NONE;
    }
}

/* ---- known low bits ------------------------------------------------------------ */

/* What is known of an integer value's remainders (facts.c's rules, which
 * tj_divisibility also uses), from its operands up to LOW_DEPTH deep. The
 * lowering's per-register indices are a thread's base (lanes and warps
 * times a power of two) plus a register's constant offset, so their low
 * bits are known though the value is not. */
enum { LOW_DEPTH = 8 };

static tj_residue residue_of(const tj_canon *cx, tj_ref r, int depth)
{
    static const tj_residue unknown = {1, 0};
    tj_cval c;
    if (!r || !tj_dtype_is_int(tj_value_dtype(cx->k, r)))
        return unknown;
    if (tj_const_value(cx->k, r, &c))
        return tj_residue_const(c.i);
    const tj_inst *in = inst(cx, r);
    if (depth >= LOW_DEPTH || !(tj_op_get(in->op)->flags & TJ_OPF_ELEM) || in->nargs < 1 || in->nargs > 3)
        return unknown;
    tj_residue args[3];
    for (uint32_t i = 0; i < in->nargs; i++)
        args[i] = residue_of(cx, in->args[i], depth + 1);
    return tj_residue_step(cx->k, r, args);
}

static uint64_t low_mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

/* Whether integers a and b (of one dtype) are known to differ in a low bit:
 * only the low bits, which hold whatever wraps. */
static int residues_differ(const tj_canon *cx, tj_ref a, tj_ref b)
{
    uint64_t x, y;
    int bx = tj_residue_low_bits(residue_of(cx, a, 0), &x);
    if (!bx)
        return 0;
    int by = tj_residue_low_bits(residue_of(cx, b, 0), &y), width = 8 * tj_dtype_size(tj_value_dtype(cx->k, a));
    int bits = bx < by ? bx : by;
    bits = bits < width ? bits : width;
    return bits > 0 && ((x ^ y) & low_mask(bits)) != 0;
}

/* eq/ne of integers whose low bits differ: false/true. */
static tj_ref fold_unequal(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    if ((in->op != TJ_OP_EQ && in->op != TJ_OP_NE) || !residues_differ(cx, in->args[0], in->args[1]))
        return TJ_NONE;
    return tj_cursor_const(cx->k, &cx->at, result_type(cx, r), (tj_cval){.i = in->op == TJ_OP_NE});
}

static tj_ref simplify_binary(tj_canon *cx, tj_ref r)
{
    put_constant_right(cx, r);
    const tj_inst *in = inst(cx, r);
    tj_ref x = in->args[0], c = in->args[1];
    tj_dtype dt = tj_value_dtype(cx->k, x);
    if (!x || !c)
        return TJ_NONE;
    if (x == c)
        return same_operands(cx, r, dt);
    tj_ref unequal = fold_unequal(cx, r);
    if (unequal)
        return unequal;
    if (tj_dtype_is_float(dt))
        return float_identity(cx, in->op, c) ? x : TJ_NONE;
    switch (int_identity(cx, in->op, dt, c)) {
    case 1: return x;
    case 2: return c;
    default: return TJ_NONE;
    }
}

/* not(not x) = x, neg(neg x) = x (integer negation wraps both ways). */
static tj_ref simplify_unary(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    const tj_inst *x = in->args[0] ? inst(cx, in->args[0]) : NULL;
    if (x && (in->op == TJ_OP_NOT || in->op == TJ_OP_NEG) && x->op == in->op && x->nargs == 1)
        return x->args[0];
    return TJ_NONE;
}

static tj_ref simplify_select(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    tj_cval cond;
    if (in->args[1] == in->args[2])
        return in->args[1];
    if (tj_const_value(cx->k, in->args[0], &cond))
        return cond.i ? in->args[1] : in->args[2];
    return TJ_NONE;
}

/* extract(pack(x0, x1, ...), i) = xi (SIMT IR). */
static tj_ref simplify_extract(tj_canon *cx, tj_ref r)
{
    const tj_inst *in = inst(cx, r);
    const tj_inst *v = in->nargs == 1 && in->args[0] ? inst(cx, in->args[0]) : NULL;
    if (!v || v->op != TJ_OP_PACK || in->imm < 0 || (uint64_t)in->imm >= v->nargs)
        return TJ_NONE;
    return v->args[in->imm];
}

static tj_ref simplify_once(tj_canon *cx, tj_ref r)
{
    tj_ref v = fold_constants(cx, r);
    if (v)
        return v;
    const tj_inst *in = inst(cx, r);
    switch (in->op) {
    case TJ_OP_BROADCAST: case TJ_OP_RESHAPE: case TJ_OP_PERMUTE:
        return in->nargs == 1 ? simplify_shape(cx, r) : TJ_NONE;
    case TJ_OP_CAST:
        return in->nargs == 1 && in->args[0] && inst(cx, in->args[0])->type == in->type
                   ? in->args[0] : TJ_NONE;
    case TJ_OP_SELECT:
        return in->nargs == 3 ? simplify_select(cx, r) : TJ_NONE;
    case TJ_OP_EXTRACT:
        return simplify_extract(cx, r);
    default:
        break;
    }
    if (!(tj_op_get(in->op)->flags & TJ_OPF_ELEM))
        return TJ_NONE;
    if (in->nargs == 2)
        return simplify_binary(cx, r);
    return in->nargs == 1 ? simplify_unary(cx, r) : TJ_NONE;
}

tj_ref tj_simplify(tj_canon *cx, tj_ref r)
{
    /* An in-place rewrite (operands swapped, a chain shortened) may enable
     * another rule; a few rounds reach the fixed point of one instruction. */
    for (int round = 0; round < 4; round++) {
        int before = cx->changed;
        cx->changed = 0;
        tj_ref v = simplify_once(cx, r);
        int rewrote = cx->changed;
        cx->changed |= before;
        if (v || !rewrote)
            return v;
    }
    return TJ_NONE;
}
