/* Tests of the Tile IR passes (passes/): folding against the reference
 * interpreter, every pass output verifying and being a fixed point of its
 * pass, the kernels of tests/lit computing the same before and after the
 * passes, the pipeline's diagnostics and dumps, and the nesting guard. */
#define _POSIX_C_SOURCE 200809L /* setenv, opendir */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_ir_util.h"
#include "tj_test_util.h"

static const char *const pipelines[] = {"canonicalize", "cse", "dce", "canonicalize,cse,dce"};
enum { NPIPELINES = sizeof pipelines / sizeof pipelines[0] };

static int has_diag(tj_ctx *c, const char *needle)
{
    for (uint32_t i = 0; i < tj_diag_count(c); i++)
        if (strstr(tj_diag_get(c, i)->msg, needle))
            return 1;
    return 0;
}

/* Runs `passes` (NULL: tj_optimize) on k; it must succeed and verify. */
static void run_ok(tj_kernel *k, const char *passes)
{
    int rc = passes ? tj_run_passes(k, passes, 1) : tj_optimize(k, 1);
    cr_assert_eq(rc, 0, "%s on %s failed:\n%s\n%s", passes ? passes : "optimize", k->name,
                 tj_diag_render(k->ctx), print_str(k));
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(k->ctx));
}

/* The passes leave IR that verifies, and running them again changes
 * nothing. */
static void check_fixed_point(const tj_kernel *k, const char *passes)
{
    tj_kernel *once = tj_kernel_clone(k);
    run_ok(once, passes);
    const char *first = print_str(once);
    run_ok(once, passes);
    cr_assert_str_eq(print_str(once), first, "%s is not idempotent on %s", passes ? passes : "optimize",
                     k->name);
}

static void check_all_fixed_points(const tj_kernel *k)
{
    for (int p = 0; p < NPIPELINES; p++)
        check_fixed_point(k, pipelines[p]);
    check_fixed_point(k, NULL);
}

/* ---- running kernels on the interpreter ------------------------------------ */

enum { MAX_PARAMS = 16 };

typedef struct run_args {
    tj_arg args[MAX_PARAMS];
    void *data[MAX_PARAMS];
    size_t bytes[MAX_PARAMS];
    uint32_t n;
} run_args;

static uint32_t next_random(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Element i of a tensor: small varied values, some negative. */
static void fill_element(tj_dtype dt, void *p, size_t i, uint32_t *seed)
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
static void make_args(const tj_kernel *k, run_args *ra)
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

static void free_args(run_args *ra)
{
    for (uint32_t p = 0; p < ra->n; p++)
        free(ra->data[p]);
}

static int is_nan_element(tj_dtype dt, const uint8_t *p)
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
static void check_same_tensors(tj_kernel *k, const run_args *a, const run_args *b)
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
static int check_same_results(tj_kernel *k, const char *passes)
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

/* ---- folding against the interpreter ---------------------------------------- */

static const tj_dtype all_dtypes[] = {
    TJ_DT_BOOL, TJ_DT_I8, TJ_DT_I16, TJ_DT_I32, TJ_DT_I64, TJ_DT_U8, TJ_DT_U16,
    TJ_DT_U32, TJ_DT_U64, TJ_DT_F16, TJ_DT_BF16, TJ_DT_F32, TJ_DT_F64,
};
enum { NDTYPES = sizeof all_dtypes / sizeof all_dtypes[0], MAX_VALUES = 24 };

typedef struct value { int64_t i; double f; } value;

/* Values where the semantics have corners: wrapping, signs, shift widths,
 * rounding ties, overflow, zeros of both signs, infinities, NaN. */
static int edge_values(tj_dtype dt, value *out)
{
    int n = 0, bits = tj_dtype_bits(dt);
    if (tj_dtype_is_float(dt)) {
        static const double fs[] = {0.0, -0.0, 1, -1, 0.5, 1.5, 2.5, -2.5, 3.75, 1e10, -1e10,
                                    65504, 70000, 1e-7, 3e38, 16777217, INFINITY, -INFINITY, NAN};
        for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
            out[n++] = (value){.f = fs[i]};
        return n;
    }
    if (dt == TJ_DT_BOOL) {
        out[n++] = (value){.i = 0};
        out[n++] = (value){.i = 1};
        return n;
    }
    uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    uint64_t us[] = {0, 1, 2, 3, 7, (uint64_t)bits - 1, (uint64_t)bits, mask, mask - 1,
                     mask >> 1, (mask >> 1) + 1, (uint64_t)-1, (uint64_t)-2, (uint64_t)-7, 100};
    for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) {
        uint64_t v = us[i] & mask;
        if (tj_dtype_is_signed(dt) && bits < 64 && (v >> (bits - 1)))
            v |= ~mask; /* sign-extend, as CONST stores it */
        out[n++] = (value){.i = (int64_t)v};
    }
    return n;
}

static tj_ref emit_const(tt_kb *kb, tj_dtype dt, value v)
{
    return tj_dtype_is_float(dt) ? tt_cf(kb, dt, v.f) : tt_ci(kb, dt, v.i);
}

/* Stores scalar x at element `slot` of the kernel's output tensor. */
static void store_scalar(tt_kb *kb, tj_ref out, tj_ref x, int slot)
{
    tj_dtype dt = tj_type_get(kb->c, tt_type(kb, x))->dtype;
    int32_t axes[1] = {1};
    tj_type vt = tj_type_view(kb->c, dt, 1, (int32_t[]){1});
    tj_ref v = tt_view(kb, vt, out, 1, axes, tt_ci(kb, TJ_DT_I32, slot));
    tt_store(kb, v, tt_splat(kb, x, tt_tile(kb, dt, 1, 1)), TJ_NONE);
}

/* A kernel applying `op` to every combination of the edge values of `dt`
 * (nargs operands), storing each result; NULL when the verifier says the
 * op does not apply to dt. */
static tt_kb *fold_kernel(tt_kb *kb, tj_op op, tj_dtype dt, tj_dtype out_dt, int nargs)
{
    value vals[MAX_VALUES];
    int nv = edge_values(dt, vals), combos = 1;
    if (nargs == 3 && nv > 6)
        nv = 6;
    for (int a = 0; a < nargs; a++)
        combos *= nv;
    tt_begin(kb, tj_op_get(op)->name, 1, 0, 0);
    tj_ref out = tt_param(kb, "out", out_dt, "N");
    for (int c = 0; c < combos; c++) {
        tj_ref xs[3];
        for (int a = 0, rest = c; a < nargs; a++, rest /= nv)
            xs[a] = emit_const(kb, dt, vals[rest % nv]);
        tj_type t = op == TJ_OP_CAST ? tt_scalar(kb, out_dt)
                  : tj_op_get(op)->flags & TJ_OPF_CMP ? tt_scalar(kb, TJ_DT_BOOL)
                                                      : tt_scalar(kb, dt);
        tj_ref r = tj_emit(kb->k, tt_cur(kb), op, t, xs, (uint32_t)nargs);
        store_scalar(kb, out, r, c);
    }
    tt_end(kb);
    if (tj_verify(kb->k)) {
        tt_free(kb);
        return NULL;
    }
    return kb;
}

static int count_op(const tj_kernel *k, tj_op op)
{
    int n = 0;
    const tj_block *b = &k->blocks[k->body];
    for (uint32_t i = 0; i < b->ninsts; i++)
        n += k->insts[b->insts[i]].op == op;
    return n;
}

/* Folds every combination, checks the results against the interpreter
 * running the unfolded kernel, and returns how many ops stayed. */
static int check_fold(tj_op op, tj_dtype dt, tj_dtype out_dt, int nargs, int *tested)
{
    tt_kb kb;
    if (!fold_kernel(&kb, op, dt, out_dt, nargs))
        return 0;
    int left = 0;
    if (check_same_results(kb.k, "canonicalize")) {
        tj_kernel *opt = tj_kernel_clone(kb.k);
        run_ok(opt, "canonicalize");
        left = count_op(opt, op);
        ++*tested;
    }
    tt_free(&kb);
    return left;
}

Test(fold, binary_ops_match_the_interpreter)
{
    static const tj_op ops[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_REM,
                                TJ_OP_POW, TJ_OP_MAX, TJ_OP_MIN, TJ_OP_AND, TJ_OP_OR,
                                TJ_OP_XOR, TJ_OP_SHL, TJ_OP_SHR, TJ_OP_EQ, TJ_OP_NE,
                                TJ_OP_LT, TJ_OP_LE, TJ_OP_GT, TJ_OP_GE};
    int tested = 0;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int d = 0; d < NDTYPES; d++) {
            tj_dtype dt = all_dtypes[d];
            int left = check_fold(ops[o], dt, dt, 2, &tested);
            /* Integers fold completely; floats keep pow and max/min of
             * zeros of opposite signs. */
            if (tj_dtype_is_int(dt))
                cr_expect_eq(left, 0, "%s on %s: %d not folded", tj_op_get(ops[o])->name,
                             tj_dtype_name(dt), left);
        }
    cr_assert_gt(tested, 100, "only %d op/dtype pairs ran", tested);
}

Test(fold, unary_ops_and_fma_match_the_interpreter)
{
    static const tj_op ops[] = {TJ_OP_NEG, TJ_OP_ABS, TJ_OP_NOT, TJ_OP_SQRT,
                                TJ_OP_FLOOR, TJ_OP_CEIL, TJ_OP_EXP, TJ_OP_CAST};
    int tested = 0;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int d = 0; d < NDTYPES; d++)
            check_fold(ops[o], all_dtypes[d], all_dtypes[d], 1, &tested);
    for (int d = 0; d < NDTYPES; d++)
        check_fold(TJ_OP_FMA, all_dtypes[d], all_dtypes[d], 3, &tested);
    cr_assert_gt(tested, 20, "only %d op/dtype pairs ran", tested);
}

Test(fold, casts_match_the_interpreter)
{
    int tested = 0;
    for (int from = 0; from < NDTYPES; from++)
        for (int to = 0; to < NDTYPES; to++) {
            tj_dtype in = all_dtypes[from], out = all_dtypes[to];
            int left = check_fold(TJ_OP_CAST, in, out, 1, &tested);
            /* 64-bit integers that a double does not hold stay: rounding
             * them to bf16 through a double would round twice. */
            if (out == TJ_DT_BF16 && tj_dtype_bits(in) == 64)
                continue;
            cr_expect_eq(left, 0, "cast %s -> %s: %d not folded", tj_dtype_name(in),
                         tj_dtype_name(out), left);
        }
    cr_assert_eq(tested, NDTYPES * NDTYPES);
}

/* ---- builder-made kernels ------------------------------------------------------ */

Test(passes, every_op_kernel_verifies_and_is_a_fixed_point)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = build_all_ops(c);
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(c));
    check_all_fixed_points(k);
    tj_ctx_free(c);
}

/* x*y computed twice and subtracted: CSE makes it x*y - x*y, which only a
 * second canonicalize turns into 0; tj_optimize gets there. */
Test(optimize, canonicalizes_again_after_cse)
{
    tt_kb kb;
    tt_begin(&kb, "again", 1, 0, 0);
    tj_ref t = tt_param(&kb, "x", TJ_DT_I32, "N");
    tj_ref n = tt_param(&kb, "n", TJ_DT_I32, NULL);
    tj_ref v = tt_view(&kb, tj_type_view(kb.c, TJ_DT_I32, 1, (int32_t[]){4}), t, 1, (int32_t[]){4},
                       tt_ci(&kb, TJ_DT_I32, 0));
    tj_ref x = tt_load(&kb, v, TJ_NONE, TJ_NONE);
    tj_ref ns = tt_splat(&kb, n, tt_type(&kb, x));
    tj_ref d = tt_bin(&kb, TJ_OP_SUB, tt_bin(&kb, TJ_OP_MUL, x, ns), tt_bin(&kb, TJ_OP_MUL, x, ns));
    tt_store(&kb, v, d, TJ_NONE);
    tt_end(&kb);
    check_same_results(kb.k, NULL);
    run_ok(kb.k, NULL);
    cr_assert_eq(count_op(kb.k, TJ_OP_MUL) + count_op(kb.k, TJ_OP_SUB) + count_op(kb.k, TJ_OP_LOAD), 0,
                 "%s", print_str(kb.k));
    const tj_block *body = &kb.k->blocks[kb.k->body];
    const tj_inst *store = &kb.k->insts[body->insts[body->ninsts - 2]];
    cr_assert_eq(store->op, TJ_OP_STORE);
    const tj_inst *splat = &kb.k->insts[store->args[1]];
    cr_assert_eq(splat->op, TJ_OP_BROADCAST, "%s", print_str(kb.k));
    cr_assert_eq(kb.k->insts[splat->args[0]].op, TJ_OP_CONST);
    cr_assert_eq(kb.k->insts[splat->args[0]].imm, 0);
    tt_free(&kb);
}

Test(canonicalize, folds_a_builder_kernel_in_place)
{
    tt_kb kb;
    tt_begin(&kb, "fold", 1, 0, 0);
    tj_ref out = tt_param(&kb, "out", TJ_DT_F32, "N");
    tj_ref a = tt_cf(&kb, TJ_DT_F32, 0.1), b = tt_cf(&kb, TJ_DT_F32, 0.2);
    store_scalar(&kb, out, tt_bin(&kb, TJ_OP_ADD, a, b), 0);
    tt_end(&kb);
    run_ok(kb.k, "canonicalize");
    /* param, the sum, the slot, view, broadcast, store, yield: a and b died */
    const tj_block *body = &kb.k->blocks[kb.k->body];
    cr_assert_eq(body->ninsts, 7, "%s", print_str(kb.k));
    const tj_inst *store = &kb.k->insts[body->insts[5]];
    const tj_inst *sum = &kb.k->insts[kb.k->insts[store->args[1]].args[0]];
    cr_assert_eq(sum->op, TJ_OP_CONST, "%s", print_str(kb.k));
    cr_assert_eq(sum->fimm, (double)(0.1f + 0.2f), "summed in float: %.17g", sum->fimm);
    tt_free(&kb);
}

Test(dce, keeps_stores_atomics_and_block_args)
{
    tt_kb kb;
    tt_begin(&kb, "dce", 1, 0, 0);
    tj_ref t = tt_param(&kb, "x", TJ_DT_F32, "N");
    tj_ref v = tt_view(&kb, tj_type_view(kb.c, TJ_DT_F32, 1, (int32_t[]){8}), t, 1, (int32_t[]){8},
                       tt_ci(&kb, TJ_DT_I32, 0));
    tj_ref x = tt_load(&kb, v, TJ_NONE, TJ_NONE);
    tt_load(&kb, v, TJ_NONE, TJ_NONE); /* dead */
    tt_op(&kb, TJ_OP_ATOMIC_ADD, tt_type(&kb, x), 3, v, x, TJ_NONE);
    tj_ref f = tt_for(&kb, tt_ci(&kb, TJ_DT_I32, 0), tt_ci(&kb, TJ_DT_I32, 4), tt_ci(&kb, TJ_DT_I32, 1), 1, x);
    tt_store(&kb, v, tt_barg(&kb, 1), TJ_NONE);
    tt_yield(&kb, 1, tt_barg(&kb, 1));
    (void)f;
    tt_end(&kb);
    run_ok(kb.k, "dce");
    cr_assert_eq(count_op(kb.k, TJ_OP_LOAD), 1, "%s", print_str(kb.k));
    cr_assert_eq(count_op(kb.k, TJ_OP_ATOMIC_ADD), 1);
    cr_assert_eq(count_op(kb.k, TJ_OP_FOR), 1);
    const tj_inst *loop = NULL;
    for (tj_ref r = 1; r < kb.k->ninsts; r++)
        if (kb.k->insts[r].op == TJ_OP_FOR)
            loop = &kb.k->insts[r];
    cr_assert_eq(kb.k->blocks[loop->region[0]].ninsts, 4, "both block arguments stay");
    tt_free(&kb);
}

/* ---- the kernels of tests/lit ------------------------------------------------------ */

/* Calls fn on every kernel of every .tjir file under dir that parses and
 * verifies (the error tests do not). */
static void for_lit_kernels(const char *dir, int depth, void (*fn)(tj_kernel *), int *count)
{
    DIR *d = opendir(dir);
    if (!d || depth > 4) {
        if (d)
            closedir(d);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        char path[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            for_lit_kernels(path, depth + 1, fn, count);
            continue;
        }
        size_t len = strlen(path);
        if (len < 5 || strcmp(path + len - 5, ".tjir"))
            continue;
        FILE *f = fopen(path, "rb");
        cr_assert(f, "cannot open %s", path);
        static char text[1 << 20];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        tj_ctx *c = tj_ctx_new();
        tj_kernel *ks[64];
        int nk = tj_parse_ir(c, path, text, n, ks, 64);
        for (int i = 0; i < nk; i++)
            if (!tj_verify(ks[i])) {
                fn(ks[i]);
                ++*count;
            }
        tj_ctx_free(c);
    }
    closedir(d);
}

static void for_all_lit_kernels(void (*fn)(tj_kernel *))
{
    const char *src = getenv("TJ_SOURCE_DIR");
    if (!src)
        cr_skip_test("TJ_SOURCE_DIR is not set");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/lit", src);
    int count = 0;
    for_lit_kernels(dir, 0, fn, &count);
    cr_assert_gt(count, 10, "found only %d kernels under %s", count, dir);
}

static void lit_fixed_points(tj_kernel *k) { check_all_fixed_points(k); }

static void lit_same_results(tj_kernel *k)
{
    for (int p = 0; p < NPIPELINES; p++)
        check_same_results(k, pipelines[p]);
    check_same_results(k, NULL);
}

Test(passes, lit_kernels_verify_and_are_fixed_points) { for_all_lit_kernels(lit_fixed_points); }

Test(passes, lit_kernels_compute_the_same) { for_all_lit_kernels(lit_same_results); }

/* ---- the pipeline --------------------------------------------------------------- */

Test(pipeline, looks_passes_up_by_name)
{
    cr_assert_eq(tj_pass_lookup("canonicalize"), tj_pass_canonicalize);
    cr_assert_eq(tj_pass_lookup("cse"), tj_pass_cse);
    cr_assert_eq(tj_pass_lookup("dce"), tj_pass_dce);
    cr_assert_null(tj_pass_lookup("cse "));
    cr_assert_null(tj_pass_lookup("frobnicate"));
    cr_assert_null(tj_pass_lookup(NULL));
}

static tj_kernel *dead_code_kernel(tj_ctx *c)
{
    tj_kernel *k = skeleton(c, "dead");
    tj_ref x = const_i(k, k->body, TJ_DT_I32, 2);
    op2(k, k->body, TJ_OP_ADD, scalar(c, TJ_DT_I32), x, x);
    finish_body(k);
    return k;
}

Test(pipeline, reports_unknown_passes_before_running_any)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = dead_code_kernel(c);
    uint32_t before = k->blocks[k->body].ninsts;
    cr_assert_neq(tj_run_passes(k, "dce,frobnicate,cse", 0), 0);
    cr_assert(has_diag(c, "unknown pass 'frobnicate'; known passes: canonicalize, cse, dce"), "%s",
              tj_diag_render(c));
    cr_assert_eq(k->blocks[k->body].ninsts, before, "dce ran");
    tj_diag_clear(c);
    cr_assert_eq(tj_run_passes(k, " dce ,, ", 0), 0, "blanks and empty names are skipped");
    cr_assert_eq(k->blocks[k->body].ninsts, 1);
    cr_assert_eq(tj_run_passes(k, "", 1), 0);
    tj_ctx_free(c);
}

Test(pipeline, names_the_pass_after_which_the_ir_does_not_verify)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = skeleton(c, "broken");
    tj_ref x = const_i(k, k->body, TJ_DT_I32, 2), y = const_f(k, k->body, TJ_DT_F32, 2);
    tj_ref s = op2(k, k->body, TJ_OP_ADD, scalar(c, TJ_DT_I32), x, y); /* operand types differ */
    tj_ref out = op0(k, k->body, TJ_OP_PARAM, tj_type_tensor(c, TJ_DT_F32, 2), 0);
    (void)out;
    (void)s;
    finish_body(k);
    cr_assert_neq(tj_run_passes(k, "cse", 1), 0);
    cr_assert(has_diag(c, "does not verify after pass 'cse'"), "%s", tj_diag_render(c));
    tj_ctx_free(c);
}

Test(pipeline, dumps_the_ir_after_the_passes_named_in_TJ_DUMP, .init = cr_redirect_stderr)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = dead_code_kernel(c);
    setenv("TJ_DUMP", "dce", 1);
    cr_assert_eq(tj_run_passes(k, "cse,dce", 1), 0);
    unsetenv("TJ_DUMP");
    cr_assert_eq(tj_run_passes(k, "cse", 1), 0, "TJ_DUMP is read at each call");
    fflush(stderr);
    cr_assert_stderr_eq_str("// -----// IR after dce //----- //\n"
                            "kernel @dead(X: f32[M, 64], idx: i32[N], n: i32) {\n"
                            "grid:\n"
                            "  %0 = const 1 : i32\n"
                            "  yield %0\n"
                            "body:\n"
                            "  yield\n"
                            "}\n");
    tj_ctx_free(c);
}

/* ---- robustness ------------------------------------------------------------------ */

/* Regions nested past the limit are reported by every pass, not recursed
 * into until the stack runs out. */
Test(passes, too_deep_nesting_is_an_error)
{
    tt_kb kb;
    tt_begin(&kb, "deep", 1, 0, 0);
    tj_ref cond = tt_ci(&kb, TJ_DT_BOOL, 1);
    tj_type none = tj_type_tuple(kb.c, 0, NULL);
    tj_block_id cur = kb.k->body;
    for (int i = 0; i < 2000; i++) { /* if true { if true { ... } } */
        tj_ref r = tj_emit(kb.k, cur, TJ_OP_IF, none, &cond, 1);
        tj_emit(kb.k, cur, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
        tj_block_id then = tj_block_new(kb.k, r), other = tj_block_new(kb.k, r);
        kb.k->insts[r].region[0] = then;
        kb.k->insts[r].region[1] = other;
        tj_emit(kb.k, other, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
        cur = then;
    }
    tj_emit(kb.k, cur, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    static tj_pass_fn const fns[] = {tj_pass_canonicalize, tj_pass_cse, tj_pass_dce};
    for (int p = 0; p < 3; p++) {
        tj_diag_clear(kb.c);
        cr_assert_neq(fns[p](kb.k), 0, "pass %d", p);
        cr_assert(has_diag(kb.c, "nested deeper than"), "%s", tj_diag_render(kb.c));
    }
    tt_free(&kb);
}
