/* Butterfly reductions as Metal's SIMD-group and quad-group reductions.
 *
 * The lowering reduces across lanes with a butterfly of steps
 * x' = op(x, shfl_xor(x, m)) (lower/reduce.c). Five consecutive
 * steps of one op over the masks 1, 2, 4, 8 and 16, in any order, leave
 * every lane holding op over the 32 lanes: metal::simd_<op>(x). Two steps
 * over the masks 1 and 2 leave op over the lane's quad (lanes 4q .. 4q+3,
 * Metal's quad-group): metal::quad_<op>(x). A pre-pass over the kernel
 * finds such runs; the walk then prints the last step's value as one call
 * and skips the shuffles and intermediate values the call absorbs, which
 * nothing else may use.
 *
 * Exactness (docs/ir.md): integer add, mul, and, or, xor, max, min give the
 * same result in any order; add and mul go through uint on i32 so that
 * they wrap. f32 add reassociates: the rounding may differ from the
 * shuffles' order (docs/metal.md says so). f32 max/min stay shuffles:
 * Metal's simd_max/min drop NaN (fmax) where the IR propagates it; f32 mul
 * stays shuffles as well, exact. Only 32-bit scalars are taken (Metal's
 * reductions have no 64-bit integers; the lowering widens narrower ones). */
#include "codegen/msl/msl.h"

enum { FULL_MASKS = 31, QUAD_MASKS = 3 };

typedef struct planner {
    msl_emitter *e;
    uint8_t *uses;  /* per instruction: operand uses in the blocks, saturating */
    tj_ref *shfl;   /* per instruction: the shuffle of the step it ends, or TJ_NONE */
    uint8_t *has_next; /* per step: a later step of its run takes its value */
    tj_ref *run;    /* the steps of one run, scratch */
} planner;

static int reducible(tj_op op, tj_dtype dt)
{
    if (dt == TJ_DT_I32 || dt == TJ_DT_U32)
        return op == TJ_OP_ADD || op == TJ_OP_MUL || op == TJ_OP_AND || op == TJ_OP_OR || op == TJ_OP_XOR ||
               op == TJ_OP_MAX || op == TJ_OP_MIN;
    return dt == TJ_DT_F32 && op == TJ_OP_ADD;
}

static const tj_inst *inst_of(const planner *p, tj_ref r) { return &p->e->k->insts[r]; }

static int valid_ref(const planner *p, tj_ref r) { return r && r < p->e->k->ninsts; }

static void count_uses(planner *p)
{
    const tj_kernel *k = p->e->k;
    for (tj_block_id b = 1; b < k->nblocks; b++)
        for (uint32_t i = 0; i < k->blocks[b].ninsts; i++) {
            const tj_inst *in = inst_of(p, k->blocks[b].insts[i]);
            for (uint32_t a = 0; a < in->nargs; a++)
                if (valid_ref(p, in->args[a]) && p->uses[in->args[a]] < UINT8_MAX)
                    p->uses[in->args[a]]++;
        }
}

/* Whether s is shfl_xor(x) by a single lane bit, used only by y, in y's
 * block, with x, s and y of one type. */
static int is_step_shuffle(const planner *p, tj_ref s, tj_ref x, tj_ref y)
{
    const tj_inst *si = inst_of(p, s), *yi = inst_of(p, y);
    int64_t m = si->imm;
    return si->op == TJ_OP_SHFL_XOR && si->nargs == 1 && si->args[0] == x && m > 0 && m < 32 && !(m & (m - 1)) &&
           p->uses[s] == 1 && si->block == yi->block && si->type == yi->type && inst_of(p, x)->type == yi->type;
}

/* The shuffle of y = op(x, shfl_xor(x, m)) (either operand order) when y
 * is a step of a reducible op and type; TJ_NONE otherwise. */
static tj_ref step_shuffle(const planner *p, tj_ref y)
{
    const tj_inst *in = inst_of(p, y);
    tj_dtype dt;
    if (in->nargs != 2 || !valid_ref(p, in->args[0]) || !valid_ref(p, in->args[1]) ||
        simt_elem_type(p->e->c, in->type, &dt) != 1 || !reducible(in->op, dt))
        return TJ_NONE;
    for (int a = 0; a < 2; a++)
        if (is_step_shuffle(p, in->args[a], in->args[1 - a], y))
            return in->args[a];
    return TJ_NONE;
}

static tj_ref step_input(const planner *p, tj_ref y) { return inst_of(p, p->shfl[y])->args[0]; }
static uint32_t step_mask(const planner *p, tj_ref y) { return (uint32_t)inst_of(p, p->shfl[y])->imm; }

/* Whether the value step y takes is the previous step of its run: a step of
 * the same op and block whose value only y and y's shuffle use. */
static int continues_run(const planner *p, tj_ref y)
{
    tj_ref x = step_input(p, y);
    return p->shfl[x] && inst_of(p, x)->op == inst_of(p, y)->op && inst_of(p, x)->block == inst_of(p, y)->block &&
           p->uses[x] == 2;
}

static void find_steps(planner *p)
{
    const tj_kernel *k = p->e->k;
    for (tj_block_id b = 1; b < k->nblocks; b++)
        for (uint32_t i = 0; i < k->blocks[b].ninsts; i++) {
            tj_ref y = k->blocks[b].insts[i];
            p->shfl[y] = step_shuffle(p, y);
        }
    for (tj_ref y = 1; y < k->ninsts; y++)
        if (p->shfl[y] && continues_run(p, y))
            p->has_next[step_input(p, y)] = 1;
}

/* Whether the n steps from run[0] cover exactly the lane bits `want`. */
static int covers(const planner *p, const tj_ref *run, uint32_t n, uint32_t want)
{
    uint32_t bits = 0;
    for (uint32_t i = 0; i < n; i++)
        bits |= step_mask(p, run[i]);
    return bits == want; /* n single bits: distinct when n is want's popcount */
}

/* The n steps from run[0] become one call: the last step's value is the
 * result of `role` over the first step's input; the rest is absorbed. */
static void absorb(planner *p, const tj_ref *run, uint32_t n, uint8_t role)
{
    msl_emitter *e = p->e;
    for (uint32_t i = 0; i < n; i++) {
        e->reduce_role[p->shfl[run[i]]] = MS_RED_ABSORBED;
        e->reduce_role[run[i]] = i + 1 < n ? MS_RED_ABSORBED : role;
    }
    e->reduce_src[run[n - 1]] = step_input(p, run[0]);
}

/* Collects the run ending at step `last`, first step first; its length. */
static uint32_t collect_run(planner *p, tj_ref last)
{
    uint32_t n = 0, limit = p->e->k->ninsts;
    for (tj_ref y = last;; y = step_input(p, y)) {
        p->run[n++] = y;
        if (!continues_run(p, y) || n == limit)
            break;
    }
    for (uint32_t i = 0; i < n / 2; i++) {
        tj_ref t = p->run[i];
        p->run[i] = p->run[n - 1 - i];
        p->run[n - 1 - i] = t;
    }
    return n;
}

/* Replaces whole SIMD-group windows of the run, else quad windows. */
static void plan_run(planner *p, tj_ref last)
{
    uint32_t n = collect_run(p, last);
    for (uint32_t i = 0; i < n;) {
        if (i + 5 <= n && covers(p, p->run + i, 5, FULL_MASKS)) {
            absorb(p, p->run + i, 5, MS_RED_SIMD);
            i += 5;
        } else if (i + 2 <= n && covers(p, p->run + i, 2, QUAD_MASKS)) {
            absorb(p, p->run + i, 2, MS_RED_QUAD);
            i += 2;
        } else {
            i++;
        }
    }
}

void ms_plan_reductions(msl_emitter *e)
{
    uint32_t n = e->k->ninsts;
    e->reduce_role = tj_alloc(e->c, n);
    e->reduce_src = tj_alloc(e->c, sizeof *e->reduce_src * n);
    planner p = {e, tj_alloc(e->c, n), tj_alloc(e->c, sizeof *p.shfl * n), tj_alloc(e->c, n),
                 tj_alloc(e->c, sizeof *p.run * n)};
    count_uses(&p);
    find_steps(&p);
    for (tj_ref y = 1; y < n; y++)
        if (p.shfl[y] && !p.has_next[y])
            plan_run(&p, y);
}

static const char *reduction_name(tj_op op)
{
    switch (op) {
    case TJ_OP_ADD: return "sum";
    case TJ_OP_MUL: return "product";
    case TJ_OP_AND: return "and";
    case TJ_OP_OR: return "or";
    case TJ_OP_XOR: return "xor";
    case TJ_OP_MAX: return "max";
    default: return "min";
    }
}

int ms_emit_reduction(msl_emitter *e, tj_ref r)
{
    if (e->reduce_role[r] == MS_RED_ABSORBED) { /* nothing else reads it */
        e->defined[r] = 1;
        return 0;
    }
    const tj_inst *in = ms_inst(e, r);
    tj_ref x = e->reduce_src[r];
    tj_dtype dt;
    ms_elem_type(e, in->type, &dt);
    if (!e->defined[x] || e->ncomp[x] != 1)
        return ms_fail(e, r, "the input of the reduction is not a scalar defined before it");
    if (ms_define(e, r, in->type))
        return -1;
    const char *group = e->reduce_role[r] == MS_RED_SIMD ? "simd" : "quad", *fn = reduction_name(in->op);
    msl_str v = ms_var(e, x, 0);
    int wraps = dt == TJ_DT_I32 && (in->op == TJ_OP_ADD || in->op == TJ_OP_MUL);
    msl_str call = wraps ? ms_fmt("int(metal::%s_%s(uint(%s)))", group, fn, v.s)
                         : ms_fmt("metal::%s_%s(%s)", group, fn, v.s);
    ms_line(e, "%s %s = %s;", ms_type(dt), ms_var(e, r, 0).s, call.s);
    return 0;
}
