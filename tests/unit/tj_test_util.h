/* Terse Tile IR building for unit tests (header only, no state outside the
 * tt_kb a test owns).
 *
 *   tt_kb kb;
 *   tt_begin(&kb, "add", 4, 0, 0);               // grid (4): body is current
 *   tj_ref x = tt_param(&kb, "x", TJ_DT_F32, "N"); // parameters in order
 *   tj_ref pid = tt_opi(&kb, TJ_OP_PROGRAM_ID, tt_scalar(&kb, TJ_DT_I32), 0, 0);
 *   ...
 *   tt_end(&kb);                                  // the body's empty yield
 *   tj_arg args[] = {tt_tensor(xs, TJ_DT_F32, 1, 256)};
 *   cr_assert_eq(tt_run(&kb, args, 1), 0);
 *
 * Regions: tt_for / tt_if / tt_scan open a block (its arguments come from
 * tt_barg), tt_else switches to the else block, tt_yield closes a block. */
#ifndef TJ_TEST_UTIL_H
#define TJ_TEST_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/tilejit.h"

enum { TT_MAX_NEST = 32, TT_MAX_ARGS = 16 };

typedef struct tt_kb {
    tj_ctx *c;
    tj_kernel *k;
    tj_block_id stack[TT_MAX_NEST]; /* open blocks; the last is current */
    int depth;
    tj_ref owner[TT_MAX_NEST];      /* the if owning stack[i], for tt_else */
} tt_kb;

static inline tj_block_id tt_cur(const tt_kb *kb) { return kb->stack[kb->depth - 1]; }
static inline tj_type tt_type(const tt_kb *kb, tj_ref r) { return kb->k->insts[r].type; }

static inline tj_type tt_scalar(const tt_kb *kb, tj_dtype dt) { return tj_type_scalar(kb->c, dt); }

/* tt_tile(kb, TJ_DT_F32, 2, 32, 64) is f32[32, 64]. */
static inline tj_type tt_tile(const tt_kb *kb, tj_dtype dt, int rank, ...)
{
    int32_t shape[TJ_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        shape[i] = va_arg(ap, int);
    va_end(ap);
    return tj_type_tile(kb->c, dt, rank, shape);
}

/* The same shape as type t with another dtype. */
static inline tj_type tt_retype(const tt_kb *kb, tj_type t, tj_dtype dt) { return tj_type_with_dtype(kb->c, t, dt); }

static inline tj_ref tt_emitv(tt_kb *kb, tj_op op, tj_type t, int n, va_list ap)
{
    tj_ref args[TT_MAX_ARGS];
    for (int i = 0; i < n; i++)
        args[i] = va_arg(ap, unsigned);
    return tj_emit(kb->k, tt_cur(kb), op, t, args, (uint32_t)n);
}

/* op with n operands (tj_ref, TJ_NONE for an absent one) and result type t. */
static inline tj_ref tt_op(tt_kb *kb, tj_op op, tj_type t, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    tj_ref r = tt_emitv(kb, op, t, n, ap);
    va_end(ap);
    return r;
}

/* The same with an immediate (index, axis, sort axis, precision). */
static inline tj_ref tt_opi(tt_kb *kb, tj_op op, tj_type t, int64_t imm, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    tj_ref r = tt_emitv(kb, op, t, n, ap);
    va_end(ap);
    kb->k->insts[r].imm = imm;
    return r;
}

/* Elementwise a OP b: the result has a's type (bool for comparisons). */
static inline tj_ref tt_bin(tt_kb *kb, tj_op op, tj_ref a, tj_ref b)
{
    tj_type t = tt_type(kb, a);
    if (tj_op_get(op)->flags & TJ_OPF_CMP)
        t = tt_retype(kb, t, TJ_DT_BOOL);
    return tt_op(kb, op, t, 2, a, b);
}
static inline tj_ref tt_un(tt_kb *kb, tj_op op, tj_ref a) { return tt_op(kb, op, tt_type(kb, a), 1, a); }
static inline tj_ref tt_cast(tt_kb *kb, tj_ref a, tj_dtype dt)
{
    return tt_op(kb, TJ_OP_CAST, tt_retype(kb, tt_type(kb, a), dt), 1, a);
}

static inline tj_ref tt_ci(tt_kb *kb, tj_dtype dt, int64_t v)
{
    return tj_emit_const_int(kb->k, tt_cur(kb), tt_scalar(kb, dt), v);
}
static inline tj_ref tt_cf(tt_kb *kb, tj_dtype dt, double v)
{
    return tj_emit_const_float(kb->k, tt_cur(kb), tt_scalar(kb, dt), v);
}
/* A scalar splatted to type t. */
static inline tj_ref tt_splat(tt_kb *kb, tj_ref s, tj_type t) { return tt_op(kb, TJ_OP_BROADCAST, t, 1, s); }

/* A new kernel whose grid block yields the constants gx[, gy[, gz]] (0:
 * axis omitted); emission continues in the body. */
static inline void tt_begin(tt_kb *kb, const char *name, int gx, int gy, int gz)
{
    memset(kb, 0, sizeof *kb);
    kb->c = tj_ctx_new();
    kb->k = tj_kernel_new(kb->c, name);
    kb->k->grid = tj_block_new(kb->k, TJ_NONE);
    kb->k->body = tj_block_new(kb->k, TJ_NONE);
    kb->stack[kb->depth++] = kb->k->grid;
    tj_ref g[3];
    int n = 0;
    for (int i = 0, v[3] = {gx, gy, gz}; i < 3 && v[i]; i++)
        g[n++] = tt_ci(kb, TJ_DT_I32, v[i]);
    tj_emit(kb->k, kb->k->grid, TJ_OP_YIELD, TJ_TYPE_NONE, g, (uint32_t)n);
    kb->stack[0] = kb->k->body;
}

static inline void tt_free(tt_kb *kb)
{
    tj_ctx_free(kb->c);
    kb->c = NULL;
}

/* Declares the next parameter: dims "M, 128" (names or literals; empty or
 * NULL: a scalar). Emits its PARAM in the current block. */
static inline tj_ref tt_param(tt_kb *kb, const char *name, tj_dtype dt, const char *dims)
{
    tj_kernel *k = kb->k;
    tj_param *ps = tj_alloc(kb->c, sizeof *ps * (k->nparams + 1));
    if (k->nparams)
        memcpy(ps, k->params, sizeof *ps * k->nparams);
    tj_param *p = &ps[k->nparams];
    *p = (tj_param){.name = tj_strdup(kb->c, name), .dtype = dt};
    for (const char *s = dims; s && *s;) {
        while (*s == ' ' || *s == ',')
            s++;
        size_t len = strcspn(s, ", ");
        if (!len)
            break;
        int literal = s[0] >= '0' && s[0] <= '9';
        p->dim_names[p->rank] = literal ? NULL : tj_strndup(kb->c, s, len);
        p->dim_sizes[p->rank] = literal ? (int64_t)strtoll(s, NULL, 10) : -1;
        p->rank++;
        s += len;
    }
    k->params = ps;
    tj_type t = p->rank ? tj_type_tensor(kb->c, dt, p->rank) : tt_scalar(kb, dt);
    return tt_opi(kb, TJ_OP_PARAM, t, k->nparams++, 0);
}

/* A PARAM of an already declared parameter (e.g. in the grid block). */
static inline tj_ref tt_param_ref(tt_kb *kb, uint32_t index)
{
    const tj_param *p = &kb->k->params[index];
    tj_type t = p->rank ? tj_type_tensor(kb->c, p->dtype, p->rank) : tt_scalar(kb, p->dtype);
    return tt_opi(kb, TJ_OP_PARAM, t, index, 0);
}

/* view %t, operands... {axes}: one axis entry and operand per tensor axis
 * (TJ_VIEW_INDEX, TJ_VIEW_GATHER, or a slice extent). The result type is
 * given. */
static inline tj_ref tt_view(tt_kb *kb, tj_type vt, tj_ref tensor, int rank, const int32_t *axes, ...)
{
    tj_ref args[TJ_MAX_RANK + 1] = {tensor};
    va_list ap;
    va_start(ap, axes);
    for (int i = 0; i < rank; i++)
        args[1 + i] = va_arg(ap, unsigned);
    va_end(ap);
    tj_ref r = tj_emit(kb->k, tt_cur(kb), TJ_OP_VIEW, vt, args, (uint32_t)rank + 1);
    tj_inst_set_list(kb->k, r, axes, (uint32_t)rank);
    return r;
}

/* view %t, start {axes = [n]}: the 1-D slice [start, start + n) of a
 * rank-1 tensor. */
static inline tj_ref tt_slice1(tt_kb *kb, tj_ref tensor, tj_ref start, int n)
{
    int32_t axes[1] = {n};
    tj_type vt = tj_type_view(kb->c, tj_type_get(kb->c, tt_type(kb, tensor))->dtype, 1, axes);
    return tt_view(kb, vt, tensor, 1, axes, start);
}

/* The tile type a view reads. */
static inline tj_type tt_view_tile(const tt_kb *kb, tj_ref view)
{
    const tj_type_info *i = tj_type_get(kb->c, tt_type(kb, view));
    return tj_type_tile(kb->c, i->dtype, i->rank, i->shape);
}
static inline tj_ref tt_load(tt_kb *kb, tj_ref view, tj_ref mask, tj_ref other)
{
    return tt_op(kb, TJ_OP_LOAD, tt_view_tile(kb, view), 3, view, mask, other);
}
static inline void tt_store(tt_kb *kb, tj_ref view, tj_ref value, tj_ref mask)
{
    tt_op(kb, TJ_OP_STORE, TJ_TYPE_NONE, 3, view, value, mask);
}

static inline tj_ref tt_proj(tt_kb *kb, tj_ref tuple, uint32_t i)
{
    const tj_type_info *ti = tj_type_get(kb->c, tt_type(kb, tuple));
    return tt_opi(kb, TJ_OP_PROJ, ti->elems[i], i, 1, tuple);
}

/* Opens region `slot` of `owner` with block arguments of the given types. */
static inline void tt_open(tt_kb *kb, tj_ref owner, int slot, const tj_type *types, int n)
{
    tj_block_id b = tj_block_new(kb->k, owner);
    kb->k->insts[owner].region[slot] = b;
    kb->owner[kb->depth] = owner;
    kb->stack[kb->depth++] = b;
    for (int i = 0; i < n; i++)
        tt_opi(kb, TJ_OP_ARG, types[i], i, 0);
}

/* The i-th argument of the current block. */
static inline tj_ref tt_barg(const tt_kb *kb, uint32_t i) { return kb->k->blocks[tt_cur(kb)].insts[i]; }

/* Ends the current block with yield values... and closes it. */
static inline void tt_yield(tt_kb *kb, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    tt_emitv(kb, TJ_OP_YIELD, TJ_TYPE_NONE, n, ap);
    va_end(ap);
    kb->depth--;
}

/* for lo, hi, step, inits...: opens the body (args: the induction
 * variable, then the carried values); returns the for (a tuple). */
static inline tj_ref tt_for(tt_kb *kb, tj_ref lo, tj_ref hi, tj_ref step, int n, ...)
{
    tj_ref args[TT_MAX_ARGS] = {lo, hi, step};
    tj_type types[TT_MAX_ARGS] = {tt_type(kb, lo)};
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        args[3 + i] = va_arg(ap, unsigned);
        types[1 + i] = tt_type(kb, args[3 + i]);
    }
    va_end(ap);
    tj_type t = tj_type_tuple(kb->c, (uint32_t)n, types + 1);
    tj_ref r = tj_emit(kb->k, tt_cur(kb), TJ_OP_FOR, t, args, (uint32_t)n + 3);
    tt_open(kb, r, 0, types, n + 1);
    return r;
}

/* if cond with results of the given types: opens the then block. */
static inline tj_ref tt_if(tt_kb *kb, tj_ref cond, int n, const tj_type *types)
{
    tj_ref r = tt_op(kb, TJ_OP_IF, tj_type_tuple(kb->c, (uint32_t)n, types), 1, cond);
    tt_open(kb, r, 0, NULL, 0);
    return r;
}
/* After the then block's tt_yield: opens the else block of the last if. */
static inline void tt_else(tt_kb *kb)
{
    tt_open(kb, kb->owner[kb->depth], 1, NULL, 0);
}

/* scan x1..xn {axis}: opens the combine region (2n scalar arguments). */
static inline tj_ref tt_scan(tt_kb *kb, int64_t axis, int n, ...)
{
    tj_ref args[TT_MAX_ARGS];
    tj_type types[TT_MAX_ARGS], scalars[2 * TT_MAX_ARGS];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        args[i] = va_arg(ap, unsigned);
        types[i] = tt_type(kb, args[i]);
        scalars[i] = scalars[n + i] = tt_scalar(kb, tj_type_get(kb->c, types[i])->dtype);
    }
    va_end(ap);
    tj_ref r = tj_emit(kb->k, tt_cur(kb), TJ_OP_SCAN, tj_type_tuple(kb->c, (uint32_t)n, types), args, (uint32_t)n);
    kb->k->insts[r].imm = axis;
    tt_open(kb, r, 0, scalars, 2 * n);
    return r;
}

/* The body's empty yield. */
static inline void tt_end(tt_kb *kb) { tj_emit(kb->k, kb->k->body, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0); }

/* Verifies and runs; prints the diagnostics on failure. */
static inline int tt_run(tt_kb *kb, const tj_arg *args, uint32_t n)
{
    int rc = tj_verify(kb->k) || tj_interp_run(kb->k, args, n);
    if (rc) {
        tj_buf b = {0};
        tj_print_kernel(kb->k, &b);
        fprintf(stderr, "%s%s\n", tj_diag_render(kb->c), b.data ? b.data : "");
        tj_buf_free(&b);
    }
    return rc;
}

/* ---- arguments ---- */

/* A contiguous (row-major) tensor: tt_tensor(p, TJ_DT_F32, 2, M, N), the
 * sizes passed as int. */
static inline tj_arg tt_tensor(void *data, tj_dtype dt, int rank, ...)
{
    tj_arg a = {.is_tensor = 1, .tensor = {.data = data, .dtype = dt, .rank = rank}};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        a.tensor.shape[i] = va_arg(ap, int);
    va_end(ap);
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        a.tensor.strides[i] = s;
        s *= a.tensor.shape[i];
    }
    return a;
}
static inline tj_arg tt_int(int64_t v) { return (tj_arg){.scalar.i = v}; }
static inline tj_arg tt_float(double v) { return (tj_arg){.scalar.f = v}; }

#endif
