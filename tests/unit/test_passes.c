/* Tests of the passes (passes/): every pass output verifies and is a fixed
 * point of its pass, the kernels of tests/lit compute the same before and
 * after the passes, the pipeline's diagnostics and dumps, the nesting
 * guard. Folding against the interpreter is in test_fold.c. */
#define _POSIX_C_SOURCE 200809L /* setenv, opendir */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <sys/stat.h>

#include "pass_test_util.h"
#include "tilejit/lower.h"

static const char *const pipelines[] = {"canonicalize", "cse", "dce", "canonicalize,cse,dce"};
enum { NPIPELINES = sizeof pipelines / sizeof pipelines[0] };

static void check_all_fixed_points(const tj_kernel *k)
{
    for (int p = 0; p < NPIPELINES; p++)
        check_fixed_point(k, pipelines[p]);
    check_fixed_point(k, NULL);
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

/* SIMT IR (k, or what k lowers to) computes the same before and after
 * tj_optimize, on the SIMT interpreter. */
static void lit_simt_same_results(tj_kernel *k)
{
    tj_kernel *simt = k;
    if (k->level == TJ_LEVEL_TILE && tj_pipeline_run(&simt, TJ_STEP_PREFETCH, TJ_STEP_OPTIMIZE_SIMT, NULL)) {
        tj_diag_clear(k->ctx);
        return;
    }
    tj_kernel *opt = tj_kernel_clone(simt);
    run_ok(opt, NULL);
    run_args before, after;
    make_args(k, &before);
    make_args(k, &after);
    if (tj_simt_run(simt, before.args, before.n) == 0) {
        cr_assert_eq(tj_simt_run(opt, after.args, after.n), 0, "%s", tj_diag_render(k->ctx));
        check_same_tensors(simt, &before, &after);
    }
    tj_diag_clear(k->ctx);
    free_args(&before);
    free_args(&after);
}

Test(passes, lit_kernels_verify_and_are_fixed_points) { for_all_lit_kernels(lit_fixed_points); }

Test(passes, lit_kernels_compute_the_same) { for_all_lit_kernels(lit_same_results); }

Test(passes, lit_kernels_lowered_to_simt_compute_the_same) { for_all_lit_kernels(lit_simt_same_results); }

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
