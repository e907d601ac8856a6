/* Helpers for the tests of the passes (test_passes.c, test_fold.c): run
 * passes and check the result verifies and is a fixed point; run a kernel on
 * the interpreter before and after the passes and compare what it stores. */
#ifndef PASS_TEST_UTIL_H
#define PASS_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_ir_util.h"
#include "tj_test_util.h"

static inline int has_diag(tj_ctx *c, const char *needle)
{
    for (uint32_t i = 0; i < tj_diag_count(c); i++)
        if (strstr(tj_diag_get(c, i)->msg, needle))
            return 1;
    return 0;
}

/* Runs `passes` (NULL: tj_optimize) on k; it must succeed and verify. */
static inline void run_ok(tj_kernel *k, const char *passes)
{
    int rc = passes ? tj_run_passes(k, passes, 1) : tj_optimize(k, 1);
    cr_assert_eq(rc, 0, "%s on %s failed:\n%s\n%s", passes ? passes : "optimize", k->name,
                 tj_diag_render(k->ctx), print_str(k));
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(k->ctx));
}

/* The passes leave IR that verifies, and running them again changes
 * nothing. */
static inline void check_fixed_point(const tj_kernel *k, const char *passes)
{
    tj_kernel *once = tj_kernel_clone(k);
    run_ok(once, passes);
    const char *first = print_str(once);
    run_ok(once, passes);
    cr_assert_str_eq(print_str(once), first, "%s is not idempotent on %s", passes ? passes : "optimize",
                     k->name);
}

/* ---- running kernels on the interpreter ------------------------------------ */

enum { MAX_PARAMS = 16 };

typedef struct run_args {
    tj_arg args[MAX_PARAMS];
    void *data[MAX_PARAMS];
    size_t bytes[MAX_PARAMS];
    uint32_t n;
} run_args;

static inline uint32_t next_random(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Element i of a tensor: small varied values, some negative. */
static inline void fill_element(tj_dtype dt, void *p, size_t i, uint32_t *seed)
{
    int32_t v = (int32_t)(next_random(seed) % 64) - 24;
    double f = v / 4.0;
    switch (dt) {
    case TJ_DT_BOOL: ((uint8_t *)p)[i] = v & 1; break;
    case TJ_DT_I8: case TJ_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TJ_DT_I16: case TJ_DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case TJ_DT_I32: case TJ_DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case TJ_DT_I64: case TJ_DT_U64: ((uint64_t *)p)[i] = (uint64_t)(int64_t)v; break;
    case TJ_DT_F16: ((uint16_t *)p)[i] = tj_f32_to_f16((float)f); break;
    case TJ_DT_BF16: ((uint16_t *)p)[i] = tj_f32_to_bf16((float)f); break;
    case TJ_DT_F32: ((float *)p)[i] = (float)f; break;
    case TJ_DT_F64: ((double *)p)[i] = f; break;
    default: break;
    }
}

/* Arguments for k: every tensor 16 long per axis (4 beyond rank 3),
 * filled from a fixed seed; scalars 5 (or 1.5). */
static inline void make_args(const tj_kernel *k, run_args *ra)
{
    memset(ra, 0, sizeof *ra);
    cr_assert_leq(k->nparams, MAX_PARAMS);
    uint32_t seed = 12345;
    for (uint32_t p = 0; p < k->nparams; p++) {
        const tj_param *pm = &k->params[p];
        if (!pm->rank) {
            if (tj_dtype_is_float(pm->dtype))
                ra->args[p] = tt_float(1.5);
            else
                ra->args[p] = tt_int(pm->dtype == TJ_DT_BOOL ? 1 : 5);
            continue;
        }
        int64_t extent = pm->rank > 3 ? 4 : 16, n = 1;
        tj_arg a = {.is_tensor = 1, .tensor = {.dtype = pm->dtype, .rank = pm->rank}};
        for (int d = pm->rank - 1; d >= 0; d--) {
            a.tensor.shape[d] = pm->dim_sizes[d] > 0 ? pm->dim_sizes[d] : extent;
            a.tensor.strides[d] = n;
            n *= a.tensor.shape[d];
        }
        ra->bytes[p] = (size_t)n * (size_t)tj_dtype_size(pm->dtype);
        ra->data[p] = calloc(1, ra->bytes[p]);
        for (int64_t i = 0; i < n; i++)
            fill_element(pm->dtype, ra->data[p], (size_t)i, &seed);
        a.tensor.data = ra->data[p];
        ra->args[p] = a;
    }
    ra->n = k->nparams;
}

static inline void free_args(run_args *ra)
{
    for (uint32_t p = 0; p < ra->n; p++)
        free(ra->data[p]);
}

static inline int is_nan_element(tj_dtype dt, const uint8_t *p)
{
    uint16_t h;
    switch (dt) {
    case TJ_DT_F16: memcpy(&h, p, 2); return isnan(tj_f16_to_f32(h));
    case TJ_DT_BF16: memcpy(&h, p, 2); return isnan(tj_bf16_to_f32(h));
    case TJ_DT_F32: { float f; memcpy(&f, p, 4); return isnan(f); }
    case TJ_DT_F64: { double d; memcpy(&d, p, 8); return isnan(d); }
    default: return 0;
    }
}

/* Tensors equal bit for bit, except that any NaN equals any NaN. */
static inline void check_same_tensors(tj_kernel *k, const run_args *a, const run_args *b)
{
    for (uint32_t p = 0; p < a->n; p++) {
        if (!a->data[p])
            continue;
        size_t size = (size_t)tj_dtype_size(k->params[p].dtype);
        const uint8_t *x = a->data[p], *y = b->data[p];
        for (size_t off = 0; off < a->bytes[p]; off += size) {
            tj_dtype dt = k->params[p].dtype;
            if (memcmp(x + off, y + off, size) && !(is_nan_element(dt, x + off) && is_nan_element(dt, y + off)))
                cr_assert_fail("kernel %s: tensor '%s' element %zu differs after the passes:\n%s",
                               k->name, k->params[p].name, off / size, print_str(k));
        }
    }
}

/* Runs k before and after `passes` (NULL: tj_optimize) on the same
 * arguments and compares what they store. Returns 0 when the original does
 * not run on the interpreter (nothing to compare). */
static inline int check_same_results(tj_kernel *k, const char *passes)
{
    tj_kernel *opt = tj_kernel_clone(k);
    run_ok(opt, passes);
    run_args before, after;
    make_args(k, &before);
    make_args(k, &after);
    int ran = tj_interp_run(k, before.args, before.n) == 0;
    if (ran) {
        cr_assert_eq(tj_interp_run(opt, after.args, after.n), 0, "%s", tj_diag_render(k->ctx));
        check_same_tensors(k, &before, &after);
    } else {
        tj_diag_clear(k->ctx);
    }
    free_args(&before);
    free_args(&after);
    return ran;
}

/* Stores scalar x at element `slot` of the kernel's output tensor. */
static inline void store_scalar(tt_kb *kb, tj_ref out, tj_ref x, int slot)
{
    tj_dtype dt = tj_type_get(kb->c, tt_type(kb, x))->dtype;
    int32_t axes[1] = {1};
    tj_type vt = tj_type_view(kb->c, dt, 1, (int32_t[]){1});
    tj_ref v = tt_view(kb, vt, out, 1, axes, tt_ci(kb, TJ_DT_I32, slot));
    tt_store(kb, v, tt_splat(kb, x, tt_tile(kb, dt, 1, 1)), TJ_NONE);
}

static inline int count_op(const tj_kernel *k, tj_op op)
{
    int n = 0;
    const tj_block *b = &k->blocks[k->body];
    for (uint32_t i = 0; i < b->ninsts; i++)
        n += k->insts[b->insts[i]].op == op;
    return n;
}

#endif
