/* What the arguments guarantee (tj_facts_from_args), and what is known of a
 * kernel's scalar values: constants, divisibility and bounds by a tensor's
 * size. The bounds facts are proofs that let the lowering drop bounds
 * checks, so every rule here must hold for all arguments. */
#include <stdlib.h>
#include <string.h>

#include "passes/facts.h"
#include "tilejit/passes.h"

enum { DIV_CAP = 1 << 30, MAX_DEPTH = 64 };

tj_facts tj_facts_of_tensor(const tj_tensor *t)
{
    tj_facts f = {0};
    if (!t)
        return f; /* no tensor gives no fact */
    int rank = t->rank < 0 ? 0 : t->rank > TJ_MAX_RANK ? TJ_MAX_RANK : t->rank;
    /* an axis of one element is never stepped along: its stride says nothing
     * (a [1, N] view of a vector vectorizes whatever stride it was given) */
    f.unit_stride = rank > 0 && t->strides[rank - 1] == 1;
    f.aligned16 = ((uintptr_t)t->data & 15) == 0;
    for (int a = 0; a < rank; a++) {
        f.dim_div16[a] = t->shape[a] % 16 == 0;
        f.stride_div16[a] = t->strides[a] % 16 == 0 || t->shape[a] <= 1;
    }
    return f;
}

const char *tj_facts_broken(const tj_facts *compiled, const tj_tensor *t)
{
    if (!compiled)
        return NULL; /* compiled for no fact */
    if (!t)
        return "there is no tensor (NULL)";
    tj_facts has = tj_facts_of_tensor(t);
    if (compiled->aligned16 && !has.aligned16)
        return "its data is not 16-byte aligned";
    if (compiled->unit_stride && !has.unit_stride)
        return "its innermost stride is not 1";
    for (int a = 0; a < TJ_MAX_RANK; a++) {
        if (compiled->dim_div16[a] && !has.dim_div16[a])
            return "a dim is not divisible by 16";
        if (compiled->stride_div16[a] && !has.stride_div16[a])
            return "a stride is not divisible by 16";
    }
    return NULL;
}

void tj_facts_from_args(tj_kernel *k, const tj_arg *args, uint32_t nargs)
{
    if (!k)
        return;
    if (!tj_array_ok(args, nargs)) {
        tj_error(k->ctx, "tj_facts_from_args: NULL args with nargs = %u", nargs);
        return;
    }
    tj_facts *f = tj_alloc(k->ctx, sizeof *f * (k->nparams ? k->nparams : 1));
    for (uint32_t i = 0; i < k->nparams && i < nargs; i++) {
        const tj_tensor *t = &args[i].tensor;
        if (args[i].is_tensor && t->rank >= 1 && t->rank <= TJ_MAX_RANK)
            f[i] = tj_facts_of_tensor(t);
    }
    k->facts = f;
}

static int64_t dim_size(const tj_param *p, int a, const tj_binding *dims, uint32_t ndims, int64_t other)
{
    for (uint32_t i = 0; p->dim_sizes[a] < 0 && p->dim_names[a] && i < ndims; i++)
        if (dims[i].name && !strcmp(dims[i].name, p->dim_names[a]))
            return dims[i].value;
    return p->dim_sizes[a] >= 0 ? p->dim_sizes[a] : other;
}

/* tj_facts_from_args on stand-in arguments, which it never reads. */
int tj_facts_contiguous(tj_kernel *k, const tj_binding *dims, uint32_t ndims, int64_t other)
{
    if (!k)
        return 1;
    if (!tj_array_ok(dims, ndims)) {
        tj_error(k->ctx, "tj_facts_contiguous: NULL dims with ndims = %u", ndims);
        return 1;
    }
    tj_arg *args = tj_alloc(k->ctx, sizeof *args * (k->nparams ? k->nparams : 1));
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tj_param *p = &k->params[i];
        if (!p->rank)
            continue;
        args[i].is_tensor = 1;
        args[i].tensor = (tj_tensor){.data = (void *)(uintptr_t)256, .dtype = p->dtype, .rank = p->rank};
        int64_t stride = 1;
        for (int a = p->rank - 1; a >= 0; a--) {
            int64_t n = dim_size(p, a, dims, ndims, other);
            if (n < 0) {
                tj_error(k->ctx, "the size of dim '%s' of %s is not known", p->dim_names[a], p->name);
                return 1;
            }
            args[i].tensor.shape[a] = n;
            args[i].tensor.strides[a] = stride;
            stride *= n;
        }
    }
    tj_facts_from_args(k, args, k->nparams);
    return 0;
}

int tj_param_index(const tj_kernel *k, tj_ref tensor, uint32_t *param)
{
    if (!tensor || tensor >= k->ninsts || k->insts[tensor].op != TJ_OP_PARAM)
        return 0;
    int64_t i = k->insts[tensor].imm;
    if (i < 0 || (uint64_t)i >= k->nparams)
        return 0;
    *param = (uint32_t)i;
    return 1;
}

int tj_dim_const(const tj_kernel *k, uint32_t param, int axis, int64_t *value)
{
    if (param >= k->nparams || axis < 0 || axis >= k->params[param].rank)
        return 0;
    const tj_param *p = &k->params[param];
    if (p->dim_sizes[axis] >= 0) {
        *value = p->dim_sizes[axis];
        return 1;
    }
    for (uint32_t s = 0; p->dim_names[axis] && s < k->nspec; s++)
        if (k->spec[s].name && !strcmp(k->spec[s].name, p->dim_names[axis])) {
            *value = k->spec[s].value;
            return 1;
        }
    return 0;
}

int64_t tj_dim_divisor(const tj_kernel *k, uint32_t param, int axis)
{
    int64_t v;
    if (tj_dim_const(k, param, axis, &v))
        return v > 0 ? (v > DIV_CAP ? 1 : v) : DIV_CAP;
    if (k->facts && param < k->nparams && axis >= 0 && axis < TJ_MAX_RANK && k->facts[param].dim_div16[axis])
        return 16;
    return 1;
}

/* ---- constants ----------------------------------------------------------- */

static int fits_type(const tj_kernel *k, tj_ref r, int64_t v)
{
    tj_dtype dt = tj_type_get(k->ctx, k->insts[r].type)->dtype;
    int bits = tj_dtype_bits(dt);
    if (!tj_dtype_is_int(dt) || bits >= 64)
        return tj_dtype_is_int(dt);
    int64_t lo = tj_dtype_is_signed(dt) ? -((int64_t)1 << (bits - 1)) : 0;
    int64_t hi = tj_dtype_is_signed(dt) ? ((int64_t)1 << (bits - 1)) - 1 : ((int64_t)1 << bits) - 1;
    return v >= lo && v <= hi;
}

static int eval(const tj_kernel *k, tj_ref r, int depth, int64_t *v)
{
    if (!r || r >= k->ninsts || depth > MAX_DEPTH)
        return 0;
    const tj_inst *in = &k->insts[r];
    int64_t a = 0, b = 0;
    if (in->op == TJ_OP_CONST) {
        *v = in->imm;
        return fits_type(k, r, *v);
    }
    if (in->nargs < 1 || in->nargs > 2 || !eval(k, in->args[0], depth + 1, &a))
        return 0;
    if (in->nargs == 2 && !eval(k, in->args[1], depth + 1, &b))
        return 0;
    /* operands fit in 32 bits or less here, so none of these overflow */
    if (a > INT32_MAX || a < INT32_MIN || b > INT32_MAX || b < INT32_MIN)
        return 0;
    switch (in->op) {
    case TJ_OP_ADD: *v = a + b; break;
    case TJ_OP_SUB: *v = a - b; break;
    case TJ_OP_MUL: *v = a * b; break;
    case TJ_OP_DIV: if (!b) return 0; *v = a / b; break;
    case TJ_OP_REM: if (!b) return 0; *v = a % b; break;
    case TJ_OP_MAX: *v = a > b ? a : b; break;
    case TJ_OP_MIN: *v = a < b ? a : b; break;
    case TJ_OP_NEG: *v = -a; break;
    default: return 0;
    }
    return fits_type(k, r, *v);
}

int tj_eval_const(const tj_kernel *k, tj_ref r, int64_t *value) { return eval(k, r, 0, value); }

/* ---- residues: divisibility and known low bits ----------------------------
 * One set of rules for what is known of an integer value's remainders:
 * tj_divisibility (the specialize pass, the lowering's vector accesses)
 * reads it as a divisor, canonicalize (simplify.c) as known low bits. A
 * modulus is capped at DIV_CAP (the powers of two up to it kept), an exact
 * value at EXACT_MAX in magnitude, so that no rule's product overflows. */

static const int64_t EXACT_MAX = (int64_t)1 << 31;

static int64_t gcd64(int64_t a, int64_t b)
{
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static const tj_residue unknown = {1, 0};

/* m and r in range: 0 <= rem < mod, or an exact value of at most EXACT_MAX */
static tj_residue residue(int64_t mod, int64_t rem)
{
    if (mod == 0 && (rem > EXACT_MAX || rem < -EXACT_MAX))
        mod = DIV_CAP;
    else if (mod > DIV_CAP)
        mod = gcd64(mod, DIV_CAP);
    if (mod)
        rem = (rem % mod + mod) % mod;
    return (tj_residue){mod, rem};
}

static tj_residue add_residues(tj_residue x, tj_residue y, int sign)
{
    return residue(gcd64(x.mod, y.mod), x.rem + sign * y.rem);
}

/* (rx + mx a)(ry + my b) = rx ry + rx my b + ry mx a + mx my ab */
static tj_residue mul_residues(tj_residue x, tj_residue y)
{
    return residue(gcd64(gcd64(x.mod * y.mod, x.rem * y.mod), y.rem * x.mod), x.rem * y.rem);
}

static int trailing_zeros(uint64_t v, int bits)
{
    int n = 0;
    while (n < bits && !((v >> n) & 1))
        n++;
    return n;
}

int tj_residue_low_bits(tj_residue x, uint64_t *low)
{
    if (x.mod == 0) {
        *low = (uint64_t)x.rem;
        return 64;
    }
    int bits = trailing_zeros((uint64_t)x.mod, 62);
    *low = (uint64_t)x.rem & ((1ull << bits) - 1);
    return bits;
}

int64_t tj_residue_divisor(tj_residue x) { return x.mod == 0 ? (x.rem < 0 ? -x.rem : x.rem) : gcd64(x.mod, x.rem); }

/* and, or: bitwise, so only the low bits count; a bit known 0 in either
 * operand is 0 in their and */
static tj_residue bitwise(tj_op op, tj_residue x, tj_residue y)
{
    if (x.mod == 0 && y.mod == 0)
        return residue(0, op == TJ_OP_AND ? x.rem & y.rem : x.rem | y.rem);
    uint64_t lx, ly;
    int bx = tj_residue_low_bits(x, &lx), by = tj_residue_low_bits(y, &ly), bits = bx < by ? bx : by;
    if (op == TJ_OP_AND) {
        int zx = trailing_zeros(lx, bx), zy = trailing_zeros(ly, by);
        bits = zx > bits ? zx : bits;
        bits = zy > bits ? zy : bits;
    }
    bits = bits > 30 ? 30 : bits;
    uint64_t v = op == TJ_OP_AND ? lx & ly : lx | ly;
    return residue((int64_t)1 << bits, (int64_t)(v & ((1ull << bits) - 1)));
}

/* An integer cast: the value where it keeps it (wider, not from signed to
 * unsigned; or narrowed to 32 bits or more, which indices are taken to fit),
 * else its low bits up to the new width (wrapping keeps them) */
static tj_residue cast_residue(const tj_kernel *k, const tj_inst *in, tj_residue x)
{
    tj_dtype from = tj_type_get(k->ctx, k->insts[in->args[0]].type)->dtype;
    tj_dtype to = tj_type_get(k->ctx, in->type)->dtype;
    if (!tj_dtype_is_int(from))
        return unknown;
    int bits = tj_dtype_bits(to);
    int kept = bits >= tj_dtype_bits(from) ? !tj_dtype_is_signed(from) || tj_dtype_is_signed(to) : bits >= 32;
    if (kept)
        return x;
    int64_t keep = (int64_t)1 << (bits > 30 ? 30 : bits);
    return residue(x.mod ? gcd64(x.mod, keep) : keep, x.rem);
}

tj_residue tj_residue_const(int64_t v) { return residue(0, v); }

tj_residue tj_residue_step(const tj_kernel *k, tj_ref r, const tj_residue *args)
{
    const tj_inst *in = &k->insts[r];
    uint32_t p;
    if (!tj_dtype_is_int(tj_type_get(k->ctx, in->type)->dtype))
        return unknown;
    switch (in->op) {
    case TJ_OP_CONST: return tj_residue_const(in->imm);
    case TJ_OP_ADD: return add_residues(args[0], args[1], 1);
    case TJ_OP_SUB: return add_residues(args[0], args[1], -1);
    case TJ_OP_NEG: return residue(args[0].mod, -args[0].rem);
    case TJ_OP_MUL: return mul_residues(args[0], args[1]);
    case TJ_OP_SHL:
        if (args[1].mod == 0 && args[1].rem >= 0 && args[1].rem < 30)
            return mul_residues(args[0], residue(0, (int64_t)1 << args[1].rem));
        return unknown;
    case TJ_OP_AND:
    case TJ_OP_OR: return bitwise(in->op, args[0], args[1]);
    case TJ_OP_SELECT: /* either value */
        return residue(gcd64(gcd64(args[1].mod, args[2].mod), args[1].rem - args[2].rem), args[1].rem);
    case TJ_OP_CAST: return cast_residue(k, in, args[0]);
    case TJ_OP_DIM:
        return residue(tj_param_index(k, in->args[0], &p) ? tj_dim_divisor(k, p, (int)in->imm) : 1, 0);
    default: return unknown;
    }
}

/* Block b's scalar integers' residues, in order (a value's operands come
 * before it; block arguments are set by their owner: a loop's index). */
static void residue_block(const tj_kernel *k, tj_residue *res, tj_block_id b, int depth)
{
    if (!b || b >= k->nblocks || depth > 256)
        return;
    const tj_block *blk = &k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        const tj_inst *in = &k->insts[r];
        const tj_type_info *ti = tj_type_get(k->ctx, in->type);
        if (in->op != TJ_OP_ARG && ti->kind == TJ_TK_TILE && ti->rank == 0 && in->nargs <= 3) {
            tj_residue args[3] = {unknown, unknown, unknown};
            for (uint32_t a = 0; a < in->nargs; a++)
                args[a] = res[in->args[a]];
            res[r] = tj_residue_step(k, r, args);
        }
        if (in->op == TJ_OP_FOR && in->nargs >= 3 && in->region[0] && k->blocks[in->region[0]].ninsts) {
            tj_ref iv = k->blocks[in->region[0]].insts[0]; /* lo + i * step */
            res[iv] = add_residues(res[in->args[0]], mul_residues(unknown, res[in->args[2]]), 1);
        }
        for (int g = 0; g < 2; g++)
            residue_block(k, res, in->region[g], depth + 1);
    }
}

int64_t *tj_divisibility(const tj_kernel *k)
{
    int64_t *div = tj_alloc(k->ctx, sizeof *div * (k->ninsts + 1));
    tj_residue *res = malloc(sizeof *res * (k->ninsts + 1));
    for (uint32_t r = 0; r <= k->ninsts; r++) {
        div[r] = 1;
        if (res)
            res[r] = unknown;
    }
    if (!res) /* nothing known */
        return div;
    residue_block(k, res, k->grid, 0);
    residue_block(k, res, k->body, 0);
    for (uint32_t r = 0; r <= k->ninsts; r++)
        div[r] = tj_residue_divisor(res[r]);
    free(res);
    return div;
}

/* ---- bounds by a tensor's size -------------------------------------------- */

static int same_dim(const tj_kernel *k, uint32_t p1, int a1, uint32_t p2, int a2)
{
    if (p1 == p2 && a1 == a2)
        return 1;
    const char *n1 = k->params[p1].dim_names[a1], *n2 = k->params[p2].dim_names[a2];
    return n1 && n2 && !strcmp(n1, n2);
}

/* Whether r is `dim` of the same size as (param, axis). */
static int is_dim(const tj_kernel *k, tj_ref r, uint32_t param, int axis)
{
    uint32_t p;
    const tj_inst *in = &k->insts[r];
    return in->op == TJ_OP_DIM && tj_param_index(k, in->args[0], &p) && in->imm >= 0 &&
           in->imm < k->params[p].rank && same_dim(k, p, (int)in->imm, param, axis);
}

/* The grid's extent along `axis`: its yield operand, or TJ_NONE (1). */
static tj_ref grid_extent(const tj_kernel *k, int axis)
{
    const tj_block *g = &k->blocks[k->grid];
    if (!k->grid || !g->ninsts)
        return TJ_NONE;
    const tj_inst *y = &k->insts[g->insts[g->ninsts - 1]];
    return y->op == TJ_OP_YIELD && (uint32_t)axis < y->nargs ? y->args[axis] : TJ_NONE;
}

/* Whether grid extent g is at most size / e (rounded up): size / e, or
 * (size + c) / e with 0 <= c < e. */
static int grid_fits(const tj_kernel *k, tj_ref g, int64_t e, uint32_t param, int axis)
{
    int64_t d, c;
    const tj_inst *in = &k->insts[g];
    if (e == 1 && is_dim(k, g, param, axis))
        return 1;
    if (in->op != TJ_OP_DIV || !tj_eval_const(k, in->args[1], &d) || d != e)
        return 0;
    tj_ref x = in->args[0];
    if (is_dim(k, x, param, axis))
        return 1;
    const tj_inst *add = &k->insts[x];
    if (add->op != TJ_OP_ADD)
        return 0;
    for (int s = 0; s < 2; s++)
        if (is_dim(k, add->args[s], param, axis) && tj_eval_const(k, add->args[1 - s], &c) && c >= 0 && c < e)
            return 1;
    return 0;
}

/* program_id(axis) * e (or e = 1 without the product): v < size. */
static int pid_product_below(const tj_kernel *k, tj_ref pid, int64_t e, uint32_t param, int axis)
{
    const tj_inst *in = &k->insts[pid];
    if (in->op != TJ_OP_PROGRAM_ID || e < 1)
        return 0;
    tj_ref g = grid_extent(k, (int)in->imm);
    int64_t n, size;
    int have_size = tj_dim_const(k, param, axis, &size);
    if (!g || tj_eval_const(k, g, &n)) {
        n = g ? n : 1; /* programs 0 .. n-1 */
        return have_size && n >= 1 && (n - 1) * e < size;
    }
    return grid_fits(k, g, e, param, axis);
}

/* The induction variable of range(lo >= 0, hi <= size, step > 0). */
static int loop_var_below(const tj_kernel *k, tj_ref v, uint32_t param, int axis)
{
    const tj_inst *in = &k->insts[v];
    const tj_block *b = &k->blocks[in->block];
    if (in->op != TJ_OP_ARG || in->imm != 0 || !b->owner || !b->ninsts || b->insts[0] != v)
        return 0;
    const tj_inst *loop = &k->insts[b->owner];
    int64_t lo, step, hi, size;
    if (loop->op != TJ_OP_FOR || loop->region[0] != in->block || loop->nargs < 3)
        return 0;
    if (!tj_eval_const(k, loop->args[0], &lo) || lo < 0 || !tj_eval_const(k, loop->args[2], &step) || step <= 0)
        return 0;
    if (is_dim(k, loop->args[1], param, axis))
        return 1;
    return tj_eval_const(k, loop->args[1], &hi) && tj_dim_const(k, param, axis, &size) && hi <= size;
}

int tj_below_dim(const tj_kernel *k, tj_ref v, uint32_t param, int axis)
{
    int64_t c, size, e;
    if (!v || v >= k->ninsts || param >= k->nparams || axis < 0 || axis >= k->params[param].rank)
        return 0;
    if (tj_eval_const(k, v, &c))
        return tj_dim_const(k, param, axis, &size) && c >= 0 && c < size;
    const tj_inst *in = &k->insts[v];
    if (in->op == TJ_OP_MUL)
        for (int s = 0; s < 2; s++)
            if (tj_eval_const(k, in->args[1 - s], &e))
                return pid_product_below(k, in->args[s], e, param, axis);
    return pid_product_below(k, v, 1, param, axis) || loop_var_below(k, v, param, axis);
}
