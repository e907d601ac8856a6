/* tj_simt_run: runs a SIMT IR kernel on the host, every program of the
 * grid in turn, all threads of a program in lockstep (see simt.h).
 *
 * This file holds the storage, the instruction loop and the structured
 * control flow; arithmetic, comparisons, select, fma and casts are the Tile
 * interpreter's handlers; memory and warp ops are in simt_mem.c and
 * simt_warp.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/simt.h"
#include "tilejit/interp.h"

enum { SIMT_MAX_DEPTH = 256, SIMT_MAX_WIDTH = 16, SIMT_POISON = 0xA5 };

int tj_simt_fail(const tj_simt *s, tj_ref r, int64_t thread, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const tj_inst *in = &s->st.k->insts[r];
    char who[96] = "";
    if (thread >= 0)
        snprintf(who, sizeof who, ", program (%lld, %lld, %lld), thread %lld", (long long)s->st.pid[0],
                 (long long)s->st.pid[1], (long long)s->st.pid[2], (long long)thread);
    tj_error_at(s->st.ctx, in->loc, "simt: kernel '%s'%s: instruction %u (%s): %s", s->st.k->name, who, r,
                tj_op_get(in->op)->name, msg);
    return -1;
}

/* ---- storage ------------------------------------------------------------------- */

/* Describes rv as a value of type t held by every thread, with storage of
 * its own; -1 for a type that is no SIMT value. */
static int take_value(tj_plan *p, const tj_simt *s, tj_rval *rv, tj_type t)
{
    const tj_type_info *ti = tj_type_get(s->st.ctx, t);
    rv->ti = ti;
    rv->dt = ti->dtype;
    switch (ti->kind) {
    case TJ_TK_TILE: {
        uint32_t w = ti->rank == 0 ? 1 : ti->rank == 1 ? (uint32_t)ti->shape[0] : 0;
        if (tj_type_is_fragment(s->st.ctx, t)) /* spread over a warp's lanes */
            w = (uint32_t)(ti->shape[0] * ti->shape[1] / 32);
        if (w == 0 || w > SIMT_MAX_WIDTH)
            return -1;
        rv->n = s->nthreads * w;
        rv->data = tj_plan_take(p, sizeof(tj_slot) * rv->n);
        return 0;
    }
    case TJ_TK_TUPLE: {
        rv->elems = tj_plan_take(p, sizeof(tj_rval) * ti->nelems);
        for (uint32_t e = 0; e < ti->nelems; e++) {
            tj_rval dummy = {0};
            if (take_value(p, s, p->base ? &rv->elems[e] : &dummy, ti->elems[e]))
                return -1;
        }
        return 0;
    }
    case TJ_TK_VOID: case TJ_TK_TENSOR: return 0;
    default: return -1;
    }
}

/* Storage of every instruction placed in a block, a loop's scratch copies
 * of its carried values, and the shared memory with its written flags. */
static int plan_storage(tj_plan *p, tj_simt *s)
{
    const tj_kernel *k = s->st.k;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        if (!in->block)
            continue;
        tj_rval dummy = {0}, *rv = p->base ? &s->st.vals[r] : &dummy;
        if (take_value(p, s, rv, in->type))
            return tj_simt_fail(s, r, -1, "its type is not a SIMT value (scalars, vectors of 1 to %d, tuples)",
                                SIMT_MAX_WIDTH);
        uint32_t first = in->op == TJ_OP_FOR ? 3 : 1; /* where the carried values start */
        if ((in->op == TJ_OP_FOR || in->op == TJ_OP_WHILE) && in->nargs >= first) {
            uint32_t nc = in->nargs - first;
            tj_rval *work = tj_plan_take(p, sizeof(tj_rval) * nc);
            rv->work = work;
            for (uint32_t c = 0; c < nc; c++) {
                tj_rval d2 = {0};
                if (take_value(p, s, work ? &work[c] : &d2, k->insts[in->args[first + c]].type))
                    return tj_simt_fail(s, r, -1, "a carried value is not a SIMT value");
            }
        }
    }
    s->smem = tj_plan_take(p, k->smem_bytes);
    s->smem_set = tj_plan_take(p, k->smem_bytes);
    s->smem_landed = tj_plan_take(p, sizeof *s->smem_landed * k->smem_bytes);
    s->smem_wepoch = tj_plan_take(p, sizeof *s->smem_wepoch * k->smem_bytes);
    s->smem_repoch = tj_plan_take(p, sizeof *s->smem_repoch * k->smem_bytes);
    s->smem_writers = tj_plan_take(p, sizeof *s->smem_writers * k->smem_bytes);
    s->smem_readers = tj_plan_take(p, sizeof *s->smem_readers * k->smem_bytes);
    s->smem_wg_reads = tj_plan_take(p, sizeof *s->smem_wg_reads * k->smem_bytes);
    s->smem_generic = tj_plan_take(p, k->smem_bytes);
    s->extent = tj_plan_take(p, sizeof(tj_simt_extent) * k->nparams);
    return 0;
}

/* Operands must name instructions placed in blocks (the verifier checks
 * the rest; this much keeps every handler memory-safe). */
static int check_structure(const tj_simt *s)
{
    const tj_kernel *k = s->st.k;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        if (!in->block)
            continue;
        for (uint32_t a = 0; a < in->nargs; a++)
            if (in->args[a] >= k->ninsts || (in->args[a] && !k->insts[in->args[a]].block))
                return tj_simt_fail(s, r, -1, "operand %u is not an instruction of the kernel", a);
        if ((in->op == TJ_OP_FOR || in->op == TJ_OP_WHILE || in->op == TJ_OP_IF) &&
            (in->region[0] >= k->nblocks || in->region[1] >= k->nblocks))
            return tj_simt_fail(s, r, -1, "a region is not a block of the kernel");
    }
    return 0;
}

static void fill(tj_rval *rv, tj_slot v)
{
    for (uint32_t i = 0; i < rv->n; i++)
        rv->data[i] = v;
}

/* The bytes a tensor's elements occupy, from its shape and strides. */
static tj_simt_extent tensor_extent(const tj_tensor *t)
{
    int64_t lo = 0, hi = 0, size = tj_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] <= 0)
            return (tj_simt_extent){0, 0};
        int64_t span = (t->shape[d] - 1) * t->strides[d];
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    uintptr_t base = (uintptr_t)t->data;
    return (tj_simt_extent){base + (uintptr_t)(lo * size), base + (uintptr_t)((hi + 1) * size)};
}

static int set_param(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    if (in->imm < 0 || in->imm >= s->st.k->nparams)
        return tj_simt_fail(s, r, -1, "no parameter %lld", (long long)in->imm);
    const tj_arg *a = &s->st.args[in->imm];
    if (rv->ti->kind == TJ_TK_TENSOR) {
        if (!a->is_tensor || a->tensor.dtype != rv->dt || a->tensor.rank != rv->ti->rank)
            return tj_simt_fail(s, r, -1, "the type differs from the argument's");
        rv->tensor = &a->tensor;
        return 0;
    }
    if (a->is_tensor || !rv->data)
        return tj_simt_fail(s, r, -1, "the type differs from the argument's");
    fill(rv, tj_dtype_is_float(rv->dt) ? tj_slot_from_double(rv->dt, a->scalar.f) : tj_slot_from_int(rv->dt, a->scalar.i));
    return 0;
}

/* dim, stride, tensor_ptr: the members of a tensor parameter. */
static int set_tensor_member(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    const tj_tensor *t = in->nargs == 1 ? s->st.vals[in->args[0]].tensor : NULL;
    if (!t || !rv->data || (in->op != TJ_OP_TENSOR_PTR && (in->imm < 0 || in->imm >= t->rank)))
        return tj_simt_fail(s, r, -1, "not a member of a tensor parameter");
    tj_slot v;
    if (in->op == TJ_OP_DIM)
        v.i = t->shape[in->imm];
    else if (in->op == TJ_OP_STRIDE)
        v.i = t->strides[in->imm];
    else
        v.u = (uint64_t)(uintptr_t)t->data;
    fill(rv, v);
    return 0;
}

/* Values that do not change during the run. */
static int set_fixed_values(tj_simt *s)
{
    const tj_kernel *k = s->st.k;
    for (uint32_t i = 0; i < k->nparams; i++)
        if (s->st.args[i].is_tensor)
            s->extent[i] = tensor_extent(&s->st.args[i].tensor);
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].block && k->insts[r].op == TJ_OP_PARAM && set_param(s, r))
            return -1;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        const tj_inst *in = &k->insts[r];
        tj_rval *rv = &s->st.vals[r];
        if (!in->block || !rv->data)
            continue;
        if (in->op == TJ_OP_CONST) {
            fill(rv, tj_dtype_is_float(rv->dt) ? tj_slot_from_double(rv->dt, in->fimm) : tj_slot_from_int(rv->dt, in->imm));
        } else if (in->op == TJ_OP_TID) {
            for (uint32_t t = 0; t < rv->n; t++)
                rv->data[t].i = t;
        } else if ((in->op == TJ_OP_DIM || in->op == TJ_OP_STRIDE || in->op == TJ_OP_TENSOR_PTR) &&
                   set_tensor_member(s, r)) {
            return -1;
        }
    }
    return 0;
}

/* ---- control flow ------------------------------------------------------------------- */

static int run_block(tj_simt *s, tj_block_id b, tj_ref *yield, int depth);

static int copy_value(const tj_simt *s, tj_ref r, tj_rval *dst, const tj_rval *src)
{
    if (dst->n != src->n || (dst->n && !src->data))
        return tj_simt_fail(s, r, -1, "a value does not have the type it replaces");
    if (dst->n)
        memcpy(dst->data, src->data, sizeof(tj_slot) * dst->n);
    return 0;
}

/* The value of scalar operand a, which every thread must agree on. */
static int uniform_operand(const tj_simt *s, tj_ref r, uint32_t a, int64_t *out)
{
    const tj_rval *v = &s->st.vals[s->st.k->insts[r].args[a]];
    if (!v->data || v->n != s->nthreads)
        return tj_simt_fail(s, r, -1, "operand %u must be a scalar", a);
    for (uint32_t t = 1; t < v->n; t++)
        if (v->data[t].u != v->data[0].u)
            return tj_simt_fail(s, r, t,
                                "operand %u is %lld here but %lld in thread 0: control flow must be uniform",
                                a, (long long)tj_slot_to_i64(v->dt, v->data[t]),
                                (long long)tj_slot_to_i64(v->dt, v->data[0]));
    *out = tj_slot_to_i64(v->dt, v->data[0]);
    return 0;
}

/* Copies the yielded values into the elements of r's tuple. */
static int set_results(const tj_simt *s, tj_ref r, tj_ref yield)
{
    const tj_rval *rv = &s->st.vals[r];
    uint32_t n = rv->elems ? rv->ti->nelems : 0, ny = yield ? s->st.k->insts[yield].nargs : 0;
    if (n != ny)
        return tj_simt_fail(s, r, -1, "a region yields %u values for %u results", ny, n);
    for (uint32_t i = 0; i < n; i++)
        if (copy_value(s, r, &rv->elems[i], &s->st.vals[s->st.k->insts[yield].args[i]]))
            return -1;
    return 0;
}

/* The next carried values: yield y's operands from `from` on copied to
 * scratch first (a yield may name another argument), then swapped with the
 * body's arguments args[0..nc). *same (when not NULL) is cleared unless
 * every value stayed as it was. -1 after reporting. */
static int carry_next(tj_simt *s, tj_ref r, tj_ref y, uint32_t from, const tj_ref *args, uint32_t nc, int *same)
{
    tj_rval *scratch = s->st.vals[r].work;
    for (uint32_t c = 0; c < nc; c++)
        if (copy_value(s, r, &scratch[c], &s->st.vals[s->st.k->insts[y].args[from + c]]))
            return -1;
    for (uint32_t c = 0; c < nc; c++) {
        tj_rval *a = &s->st.vals[args[c]];
        if (same)
            *same = *same && !memcmp(a->data, scratch[c].data, sizeof(tj_slot) * a->n);
        tj_slot *old = a->data;
        a->data = scratch[c].data;
        scratch[c].data = old;
    }
    return 0;
}

/* Carried values live in the body's arguments (carry_next). */
static int exec_for(tj_simt *s, tj_ref r, int depth)
{
    const tj_kernel *k = s->st.k;
    const tj_inst *in = &k->insts[r];
    tj_block_id body = in->region[0];
    uint32_t nc = in->nargs - 3;
    if (in->nargs < 3 || !body || k->blocks[body].ninsts < nc + 2)
        return tj_simt_fail(s, r, -1, "a loop needs bounds and a body with its arguments");
    const tj_ref *args = k->blocks[body].insts;
    int64_t lo, hi, step;
    if (uniform_operand(s, r, 0, &lo) || uniform_operand(s, r, 1, &hi) || uniform_operand(s, r, 2, &step))
        return -1;
    for (uint32_t c = 0; c < nc; c++)
        if (copy_value(s, r, &s->st.vals[args[1 + c]], &s->st.vals[in->args[3 + c]]))
            return -1;
    tj_rval *iv = &s->st.vals[args[0]];
    if (!iv->data)
        return tj_simt_fail(s, r, -1, "the induction variable is not a scalar");
    uint64_t count = tj_trip_count(lo, hi, step);
    tj_slot i = {.i = lo};
    for (uint64_t it = 0; it < count; it++, i.u += (uint64_t)step) {
        fill(iv, tj_slot_from_int(iv->dt, i.i));
        tj_ref y;
        if (run_block(s, body, &y, depth + 1))
            return -1;
        if (!y || k->insts[y].nargs != nc)
            return tj_simt_fail(s, r, -1, "the body does not yield its %u carried values", nc);
        if (carry_next(s, r, y, 0, args + 1, nc, NULL))
            return -1;
    }
    const tj_rval *rv = &s->st.vals[r];
    if ((rv->elems ? rv->ti->nelems : 0) != nc)
        return tj_simt_fail(s, r, -1, "the result does not match the carried values");
    for (uint32_t c = 0; c < nc; c++)
        if (copy_value(s, r, &rv->elems[c], &s->st.vals[args[1 + c]]))
            return -1;
    return 0;
}

/* Like for's; the condition must be the same in every thread. Programs run
 * one after another, so an iteration that changes neither its carried
 * values nor global memory would repeat forever: reported instead. */
static int exec_while(tj_simt *s, tj_ref r, int depth)
{
    const tj_kernel *k = s->st.k;
    const tj_inst *in = &k->insts[r];
    tj_block_id body = in->region[0];
    uint32_t nc = in->nargs - 1;
    if (in->nargs < 1 || !body || k->blocks[body].ninsts < nc + 1)
        return tj_simt_fail(s, r, -1, "a while needs a condition and a body with its arguments");
    const tj_ref *args = k->blocks[body].insts;
    int64_t go;
    if (uniform_operand(s, r, 0, &go))
        return -1;
    for (uint32_t c = 0; c < nc; c++)
        if (copy_value(s, r, &s->st.vals[args[c]], &s->st.vals[in->args[1 + c]]))
            return -1;
    while (go) {
        uint64_t writes = s->st.writes;
        tj_ref y;
        if (run_block(s, body, &y, depth + 1))
            return -1;
        if (!y || k->insts[y].nargs != nc + 1)
            return tj_simt_fail(s, r, -1, "the body does not yield its condition and %u carried values", nc);
        if (uniform_operand(s, y, 0, &go))
            return -1;
        int same = s->st.writes == writes;
        if (carry_next(s, r, y, 1, args, nc, &same))
            return -1;
        if (go && same)
            return tj_simt_fail(s, r, -1, "this while loop cannot end: an iteration changed neither its values nor "
                                "global memory (a wait on a program that runs later? programs run in order)");
    }
    const tj_rval *rv = &s->st.vals[r];
    if ((rv->elems ? rv->ti->nelems : 0) != nc)
        return tj_simt_fail(s, r, -1, "the result does not match the carried values");
    for (uint32_t c = 0; c < nc; c++)
        if (copy_value(s, r, &rv->elems[c], &s->st.vals[args[c]]))
            return -1;
    return 0;
}

static int exec_if(tj_simt *s, tj_ref r, int depth)
{
    int64_t cond;
    if (uniform_operand(s, r, 0, &cond))
        return -1;
    tj_block_id b = s->st.k->insts[r].region[cond ? 0 : 1];
    tj_ref y = TJ_NONE;
    if (b && run_block(s, b, &y, depth + 1))
        return -1;
    return set_results(s, r, y);
}

static int exec_proj(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    const tj_rval *t = &s->st.vals[in->args[0]];
    if (!t->elems || in->imm < 0 || in->imm >= t->ti->nelems)
        return tj_simt_fail(s, r, -1, "index out of the tuple");
    return copy_value(s, r, &s->st.vals[r], &t->elems[in->imm]);
}

static int exec_program_index(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    if (in->imm < 0 || in->imm > 2 || !rv->data)
        return tj_simt_fail(s, r, -1, "axis must be 0, 1 or 2");
    fill(rv, (tj_slot){.i = (in->op == TJ_OP_PROGRAM_ID ? s->st.pid : s->st.nprog)[in->imm]});
    return 0;
}

static int exec_inst(tj_simt *s, tj_ref r, int depth)
{
    tj_interp *st = &s->st;
    if (s->nwg_aregs && tj_simt_wgmma_registers_free(s, r))
        return -1;
    switch (st->k->insts[r].op) {
    case TJ_OP_PARAM: case TJ_OP_ARG: case TJ_OP_CONST: case TJ_OP_DIM: case TJ_OP_STRIDE:
    case TJ_OP_TENSOR_PTR: case TJ_OP_TID:
        return 0; /* fixed for the run, or set by the owner */
    case TJ_OP_BARRIER: tj_simt_barrier(s); return 0; /* in lockstep, all it does is publish copies */
    case TJ_OP_WARP_BARRIER: return 0;                 /* in lockstep, the warp's accesses are ordered already */
    case TJ_OP_PROGRAM_ID: case TJ_OP_NUM_PROGRAMS: return exec_program_index(s, r);
    case TJ_OP_FOR: return exec_for(s, r, depth);
    case TJ_OP_IF: return exec_if(s, r, depth);
    case TJ_OP_WHILE: return exec_while(s, r, depth);
    case TJ_OP_PROJ: return exec_proj(s, r);
    case TJ_OP_LD_GLOBAL:
    case TJ_OP_LD_ACQUIRE:
    case TJ_OP_LD_RELAXED: return tj_simt_load_global(s, r); /* programs run in order: every access is ordered */
    case TJ_OP_ST_GLOBAL:
    case TJ_OP_ST_RELEASE:
    case TJ_OP_ST_RELAXED: return tj_simt_store_global(s, r);
    case TJ_OP_ATOM_ADD: case TJ_OP_ATOM_MAX: case TJ_OP_ATOM_MIN: return tj_simt_atomic(s, r);
    case TJ_OP_LD_SHARED: return tj_simt_load_shared(s, r);
    case TJ_OP_ST_SHARED: return tj_simt_store_shared(s, r);
    case TJ_OP_RED_ADD_SHARED: return tj_simt_red_add_shared(s, r);
    case TJ_OP_CP_ASYNC: return tj_simt_cp_async(s, r);
    case TJ_OP_CP_ASYNC_COMMIT: return tj_simt_cp_async_commit(s, r);
    case TJ_OP_CP_ASYNC_WAIT: return tj_simt_cp_async_wait(s, r);
    case TJ_OP_SHFL_XOR: case TJ_OP_SHFL_UP: case TJ_OP_SHFL_IDX: return tj_simt_shuffle(s, r);
    case TJ_OP_BALLOT: return tj_simt_ballot(s, r);
    case TJ_OP_ELECT: return tj_simt_elect(s, r);
    case TJ_OP_PACK: return tj_simt_pack(s, r);
    case TJ_OP_EXTRACT: return tj_simt_extract(s, r);
    case TJ_OP_MMA_LOAD: return tj_simt_mma_load(s, r);
    case TJ_OP_MMA: return tj_simt_mma(s, r);
    case TJ_OP_MMA_STORE: return tj_simt_mma_store(s, r);
    case TJ_OP_MMA_FILL: return tj_simt_mma_fill(s, r);
    case TJ_OP_MMA_PACK: case TJ_OP_MMA_UNPACK: return tj_simt_mma_repack(s, r);
    case TJ_OP_WGMMA_DESC: return tj_simt_wgmma_desc(s, r);
    case TJ_OP_WGMMA: return tj_simt_wgmma(s, r);
    case TJ_OP_WGMMA_COMMIT: return tj_simt_wgmma_commit(s, r);
    case TJ_OP_WGMMA_WAIT: return tj_simt_wgmma_wait(s, r);
    case TJ_OP_FENCE_PROXY_ASYNC: tj_simt_fence_proxy_async(s); return 0;
    case TJ_OP_WGMMA_FENCE: return tj_simt_wgmma_fence(s, r);
    case TJ_OP_BAR_SYNC: case TJ_OP_BAR_ARRIVE: /* orders some warps: no race is reported across it */
        s->epoch++;
        return tj_simt_named_barrier(s, r);
    case TJ_OP_MBAR_INIT: case TJ_OP_MBAR_EXPECT_TX: case TJ_OP_MBAR_WAIT: case TJ_OP_MBAR_INVAL:
    case TJ_OP_MBAR_ARRIVE: /* as bar_sync */
        s->epoch++;
        return tj_simt_mbarrier(s, r);
    case TJ_OP_TMA_LOAD: return tj_simt_tma_load(s, r);
    case TJ_OP_TMA_STORE: return tj_simt_tma_store(s, r);
    case TJ_OP_TMA_STORE_COMMIT: case TJ_OP_TMA_STORE_WAIT: return tj_simt_tma_store_group(s, r);
    default: {
        tj_exec_fn elementwise = tj_elementwise_handler(st->k->insts[r].op);
        return elementwise ? elementwise(st, r) : tj_simt_fail(s, r, -1, "not an op of SIMT IR");
    }
    }
}

static int run_block(tj_simt *s, tj_block_id b, tj_ref *yield, int depth)
{
    *yield = TJ_NONE;
    if (depth > SIMT_MAX_DEPTH) {
        tj_error(s->st.ctx, "simt: kernel '%s': regions nested deeper than %d", s->st.k->name, SIMT_MAX_DEPTH);
        return -1;
    }
    const tj_block *blk = &s->st.k->blocks[b];
    for (uint32_t i = 0; i < blk->ninsts; i++) {
        tj_ref r = blk->insts[i];
        if (s->st.k->insts[r].op == TJ_OP_YIELD) {
            *yield = r;
            return 0;
        }
        if (exec_inst(s, r, depth))
            return -1;
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------------- */

static int run_programs(tj_simt *s)
{
    const tj_kernel *k = s->st.k;
    tj_ref y;
    if (k->grid && run_block(s, k->grid, &y, 0)) /* values the body may use */
        return -1;
    for (s->st.pid[2] = 0; s->st.pid[2] < s->st.nprog[2]; s->st.pid[2]++)
        for (s->st.pid[1] = 0; s->st.pid[1] < s->st.nprog[1]; s->st.pid[1]++)
            for (s->st.pid[0] = 0; s->st.pid[0] < s->st.nprog[0]; s->st.pid[0]++) {
                /* shared memory starts undefined in every program */
                memset(s->smem, SIMT_POISON, k->smem_bytes);
                memset(s->smem_set, 0, k->smem_bytes);
                tj_simt_copies_reset(s);
                tj_simt_wgmma_reset(s);
                tj_simt_tma_reset(s);
                tj_simt_named_reset(s);
                tj_simt_barrier(s);
                if (run_block(s, k->body, &y, 0) || tj_simt_tma_end(s) || tj_simt_named_end(s))
                    return -1;
            }
    return 0;
}

static int run(void *arg)
{
    tj_simt *s = arg;
    tj_plan p = {0};
    if (check_structure(s) || plan_storage(&p, s))
        return -1;
    s->st.vals = calloc(s->st.k->ninsts, sizeof *s->st.vals);
    p.base = s->storage = calloc(1, p.used ? p.used : 1);
    if (!s->st.vals || !p.base) {
        tj_error(s->st.ctx, "simt: kernel '%s': out of memory (%zu bytes of values)", s->st.k->name, p.used);
        return -1;
    }
    p.used = 0;
    if (plan_storage(&p, s) || set_fixed_values(s))
        return -1;
    return run_programs(s);
}

int tj_simt_run(const tj_kernel *k, const tj_arg *args, uint32_t nargs)
{
    if (!k)
        return -1;
    if (k->level != TJ_LEVEL_SIMT || k->nthreads < 1 || k->nthreads > 1024 || !k->body || k->body >= k->nblocks) {
        tj_error(k->ctx, "simt: kernel '%s' is not a SIMT kernel of 1 to 1024 threads with a body", k->name);
        return -1;
    }
    int64_t grid[3];
    if (tj_check_args(k, args, nargs) || tj_eval_grid(k, args, nargs, grid))
        return -1;
    tj_simt *s = calloc(1, sizeof *s);
    if (!s) {
        tj_error(k->ctx, "simt: kernel '%s': out of memory", k->name);
        return -1;
    }
    s->st.k = k;
    s->st.ctx = k->ctx;
    s->st.args = args;
    s->nthreads = k->nthreads;
    memcpy(s->st.nprog, grid, sizeof grid);
    int rc = tj_guarded(k->ctx, run, s);
    tj_simt_copies_free(s);
    tj_simt_wgmma_free(s);
    tj_simt_tma_free(s);
    free(s->storage);
    free(s->st.vals);
    free(s);
    return rc;
}
