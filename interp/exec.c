/* The instruction loop, structured control flow, and the program loop.
 *
 * Results of for, if, proj and reshape are not copied: they point at the
 * storage of the values they stand for. That is safe because a value's
 * storage is rewritten only when its instruction runs again, and every
 * instruction that could see an alias runs again after it (values are
 * visible only later in their block and in nested blocks). */
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"

static void copy_val(tj_rval *dst, const tj_rval *src)
{
    memcpy(dst->data, src->data, sizeof(tj_slot) * (dst->n < src->n ? dst->n : src->n));
}

/* Makes dst stand for src: same storage, no copy. */
static void alias_val(tj_rval *dst, const tj_rval *src) { dst->data = src->data; }

/* The results of for/if: the tuple of the given values (its elements
 * were described by prepare.c; here they take the values' storage). */
static int set_results(tj_interp *st, tj_ref r, const tj_ref *vals, uint32_t n)
{
    tj_rval *rv = tj_val(st, r);
    if (n != (rv->elems ? rv->ti->nelems : 0))
        return tj_interp_bad_ir(st, r, "results do not match the values yielded");
    for (uint32_t i = 0; i < n; i++) {
        const tj_rval *v = tj_val(st, vals[i]);
        if (v->n != rv->elems[i].n)
            return tj_interp_bad_ir(st, r, "a yielded value does not have the result's shape");
        alias_val(&rv->elems[i], v);
    }
    return 0;
}

static int64_t scalar_i64(const tj_interp *st, tj_ref r, uint32_t a)
{
    const tj_rval *v = tj_opnd(st, r, a);
    return tj_slot_to_i64(v->dt, v->data[0]);
}

uint64_t tj_trip_count(int64_t lo, int64_t hi, int64_t step)
{
    if (step > 0 && lo < hi)
        return ((uint64_t)hi - (uint64_t)lo - 1) / (uint64_t)step + 1;
    if (step < 0 && lo > hi)
        return ((uint64_t)lo - (uint64_t)hi - 1) / (0 - (uint64_t)step) + 1;
    return 0;
}

static int check_yield(const tj_interp *st, tj_ref r, tj_ref y, uint32_t n)
{
    if (!y || tj_in(st, y)->nargs != n)
        return tj_interp_bad_ir(st, r, "region does not yield the values it should");
    return 0;
}

/* Carried values live in the body's arguments. Each iteration copies the
 * yielded values (yield y's operands from `from` on) into scratch buffers
 * first (a yield may name another argument), then swaps the buffers with
 * the arguments args[0..nc). Returns whether every value stayed the same. */
static int carry_next(tj_interp *st, tj_ref r, tj_ref y, uint32_t from, tj_ref *args, uint32_t nc)
{
    tj_rval *scratch = tj_val(st, r)->work;
    int same = 1;
    for (uint32_t c = 0; c < nc; c++)
        copy_val(&scratch[c], tj_opnd(st, y, from + c));
    for (uint32_t c = 0; c < nc; c++) {
        tj_rval *a = tj_val(st, args[c]);
        same = same && !memcmp(a->data, scratch[c].data, sizeof(tj_slot) * a->n);
        tj_slot *old = a->data;
        a->data = scratch[c].data;
        scratch[c].data = old;
    }
    return same;
}

static int exec_for(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    const tj_kernel *k = st->k;
    tj_block_id body = in->region[0];
    uint32_t nc = in->nargs - 3;
    tj_ref *args = k->blocks[body].insts;
    for (uint32_t i = 0; i < nc; i++)
        copy_val(tj_val(st, args[1 + i]), tj_opnd(st, r, 3 + i));
    int64_t lo = scalar_i64(st, r, 0), step = scalar_i64(st, r, 2);
    uint64_t count = tj_trip_count(lo, scalar_i64(st, r, 1), step);
    tj_rval *iv = tj_val(st, args[0]);
    tj_slot i = {.i = lo};
    for (uint64_t t = 0; t < count; t++, i.u += (uint64_t)step) {
        iv->data[0] = tj_slot_from_int(iv->dt, i.i);
        tj_ref y;
        if (tj_run_block(st, body, &y) || check_yield(st, r, y, nc))
            return -1;
        carry_next(st, r, y, 0, args + 1, nc);
    }
    return set_results(st, r, args + 1, nc);
}

/* Like for's. Programs run one after another here, so an iteration that
 * changes neither its carried values nor memory would repeat forever (it
 * waits on a program that runs later): reported instead of hanging. */
static int exec_while(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_block_id body = in->region[0];
    uint32_t nc = in->nargs - 1;
    tj_ref *args = st->k->blocks[body].insts;
    for (uint32_t i = 0; i < nc; i++)
        copy_val(tj_val(st, args[i]), tj_opnd(st, r, 1 + i));
    for (int go = tj_opnd(st, r, 0)->data[0].i != 0; go;) {
        uint64_t writes = st->writes;
        tj_ref y;
        if (tj_run_block(st, body, &y) || check_yield(st, r, y, nc + 1))
            return -1;
        go = tj_opnd(st, y, 0)->data[0].i != 0;
        int same = carry_next(st, r, y, 1, args, nc) && st->writes == writes;
        if (go && same) {
            tj_error_at(st->ctx, in->loc, "this while loop cannot end in program (%lld, %lld, %lld): an iteration "
                        "changed neither its values nor memory (a wait on a program that runs later? the "
                        "interpreter runs programs in order)", (long long)st->pid[0], (long long)st->pid[1],
                        (long long)st->pid[2]);
            return -1;
        }
    }
    return set_results(st, r, args, nc);
}

static int exec_if(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    tj_block_id b = in->region[tj_opnd(st, r, 0)->data[0].i ? 0 : 1];
    if (!b)
        return set_results(st, r, NULL, 0); /* no else block: fine without results */
    tj_ref y;
    if (tj_run_block(st, b, &y))
        return -1;
    if (!y)
        return check_yield(st, r, y, 0);
    return set_results(st, r, tj_in(st, y)->args, tj_in(st, y)->nargs);
}

static int exec_proj(tj_interp *st, tj_ref r)
{
    const tj_rval *t = tj_opnd(st, r, 0);
    int64_t i = tj_in(st, r)->imm;
    if (!t->elems || i < 0 || i >= t->ti->nelems || t->elems[i].n != tj_val(st, r)->n)
        return tj_interp_bad_ir(st, r, "index out of the tuple");
    alias_val(tj_val(st, r), &t->elems[i]);
    return 0;
}

/* reshape keeps the row-major order: the same elements, renamed. */
static int exec_reshape(tj_interp *st, tj_ref r)
{
    if (tj_opnd(st, r, 0)->n != tj_val(st, r)->n)
        return tj_interp_bad_ir(st, r, "element counts differ");
    alias_val(tj_val(st, r), tj_opnd(st, r, 0));
    return 0;
}

static int exec_program_index(tj_interp *st, tj_ref r)
{
    const tj_inst *in = tj_in(st, r);
    if (in->imm < 0 || in->imm > 2)
        return tj_interp_bad_ir(st, r, "axis must be 0, 1 or 2");
    const int64_t *v = in->op == TJ_OP_PROGRAM_ID ? st->pid : st->nprog;
    tj_val(st, r)->data[0].i = v[in->imm];
    return 0;
}

static int exec_inst(tj_interp *st, tj_ref r)
{
    switch (tj_in(st, r)->op) {
    case TJ_OP_PARAM:
    case TJ_OP_ARG:
    case TJ_OP_CONST:
    case TJ_OP_DIM:
    case TJ_OP_ARANGE: return 0; /* set by prepare.c or by the region's owner */
    case TJ_OP_FOR: return exec_for(st, r);
    case TJ_OP_IF: return exec_if(st, r);
    case TJ_OP_WHILE: return exec_while(st, r);
    case TJ_OP_PROJ: return exec_proj(st, r);
    case TJ_OP_PROGRAM_ID:
    case TJ_OP_NUM_PROGRAMS: return exec_program_index(st, r);
    case TJ_OP_BROADCAST: return tj_exec_broadcast(st, r);
    case TJ_OP_RESHAPE: return exec_reshape(st, r);
    case TJ_OP_PERMUTE: return tj_exec_permute(st, r);
    case TJ_OP_GATHER: return tj_exec_gather(st, r);
    case TJ_OP_REDUCE_SUM: case TJ_OP_REDUCE_PROD: case TJ_OP_REDUCE_MAX:
    case TJ_OP_REDUCE_MIN: case TJ_OP_ARGMAX: case TJ_OP_ARGMIN: return tj_exec_reduce(st, r);
    case TJ_OP_CUMSUM: case TJ_OP_CUMPROD: return tj_exec_cumulative(st, r);
    case TJ_OP_SCAN: return tj_exec_scan(st, r);
    case TJ_OP_SORT: return tj_exec_sort(st, r);
    case TJ_OP_COUNTING_SORT: return tj_exec_counting_sort(st, r);
    case TJ_OP_DOT: return tj_exec_dot(st, r);
    case TJ_OP_VIEW: return tj_exec_view(st, r);
    case TJ_OP_LOAD:
    case TJ_OP_LOAD_ACQUIRE:
    case TJ_OP_LOAD_RELAXED: return tj_exec_load(st, r); /* programs run in order: every access is ordered */
    case TJ_OP_STORE:
    case TJ_OP_STORE_RELEASE:
    case TJ_OP_STORE_RELAXED: return tj_exec_store(st, r);
    case TJ_OP_ATOMIC_ADD: case TJ_OP_ATOMIC_MAX: case TJ_OP_ATOMIC_MIN: return tj_exec_atomic(st, r);
    default: {
        tj_exec_fn elementwise = tj_elementwise_handler(tj_in(st, r)->op);
        return elementwise ? elementwise(st, r) : tj_interp_bad_ir(st, r, "op not supported by the interpreter");
    }
    }
}

int tj_run_block(tj_interp *st, tj_block_id b, tj_ref *yield)
{
    const tj_block *blk = tj_block_at(st->k, b);
    *yield = TJ_NONE;
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (st->k->insts[r].op == TJ_OP_YIELD) {
            *yield = r;
            return 0;
        }
        if (exec_inst(st, r))
            return -1;
    }
    return 0;
}

/* ---- the grid and the programs ------------------------------------------- */

enum { MAX_PROGRAMS_LOG2 = 31 };

/* Evaluates the grid block. An axis of 0 is an empty launch (nothing
 * runs: an empty tensor's grid); a negative axis, or more than 2^31
 * programs, is an error rather than a hang. */
static int eval_grid(tj_interp *st, int64_t grid[3])
{
    const tj_kernel *k = st->k;
    tj_ref y;
    if (tj_run_block(st, k->grid, &y))
        return -1;
    uint32_t n = y ? tj_in(st, y)->nargs : 0;
    if (n < 1 || n > 3) {
        tj_error(st->ctx, "kernel '%s': the grid must have 1 to 3 axes, not %u", k->name, n);
        return -1;
    }
    uint64_t total = 1;
    for (uint32_t a = 0; a < 3; a++) {
        grid[a] = a < n ? scalar_i64(st, y, a) : 1;
        if (grid[a] < 0) {
            tj_error(st->ctx, "kernel '%s': grid axis %u is %lld; it must not be negative", k->name, a,
                     (long long)grid[a]);
            return -1;
        }
        if (total && (uint64_t)grid[a] > ((uint64_t)1 << MAX_PROGRAMS_LOG2) / total) {
            tj_error(st->ctx, "kernel '%s': the grid (%lld, %lld, %lld) has more than 2^%d programs",
                     k->name, (long long)grid[0], (long long)(a > 0 ? grid[1] : 1),
                     (long long)(a > 1 ? grid[2] : 1), MAX_PROGRAMS_LOG2);
            return -1;
        }
        total *= (uint64_t)grid[a];
    }
    return 0;
}

static int run_programs(tj_interp *st)
{
    tj_ref y;
    for (st->pid[2] = 0; st->pid[2] < st->nprog[2]; st->pid[2]++)
        for (st->pid[1] = 0; st->pid[1] < st->nprog[1]; st->pid[1]++)
            for (st->pid[0] = 0; st->pid[0] < st->nprog[0]; st->pid[0]++)
                if (tj_run_block(st, st->k->body, &y))
                    return -1;
    return 0;
}

typedef struct run_job {
    tj_interp st;
    const tj_kernel *k;
    const tj_arg *args;
    uint32_t nargs;
    int64_t *grid;
    int programs;
} run_job;

static int run_steps(void *arg)
{
    run_job *j = arg;
    const tj_kernel *k = j->k;
    tj_block_id roots[2] = {k->grid, k->body};
    if (tj_check_args(k, j->args, j->nargs) ||
        tj_interp_prepare(&j->st, k, j->args, roots, j->programs ? 2 : 1) || eval_grid(&j->st, j->grid))
        return -1;
    memcpy(j->st.nprog, j->grid, sizeof j->st.nprog);
    return j->programs ? run_programs(&j->st) : 0;
}

/* Runs under the context's out-of-memory guard, so that the run's
 * buffers are freed also when an exhausted arena unwinds. */
static int run_guarded(const tj_kernel *k, const tj_arg *args, uint32_t nargs, int64_t grid[3], int programs)
{
    if (!k)
        return -1;
    run_job j = {.k = k, .args = args, .nargs = nargs, .grid = grid, .programs = programs};
    int rc = tj_guarded(k->ctx, run_steps, &j);
    tj_interp_release(&j.st);
    return rc;
}

int tj_eval_grid(const tj_kernel *k, const tj_arg *args, uint32_t nargs, int64_t grid[3])
{
    if (!k)
        return -1;
    if (!grid) {
        tj_error(k->ctx, "tj_eval_grid: NULL grid");
        return -1;
    }
    return run_guarded(k, args, nargs, grid, 0);
}

int tj_interp_run(const tj_kernel *k, const tj_arg *args, uint32_t nargs)
{
    int64_t grid[3];
    return run_guarded(k, args, nargs, grid, 1);
}
