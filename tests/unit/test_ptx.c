/* The PTX code generator: every kernel of the SIMT catalogue
 * (simt_kernels.h: every SIMT op and dtype) is emitted for sm_80 and
 * sm_90a and assembled by ptxas; errors are reported, not crashes (how
 * fast it emits is bench_host's figure). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <string.h>

#include "ptxas_util.h"
#include "simt_kernels.h"

static const char *const archs[] = {"sm_80", "sm_90a"};

static char ptxas_path[1024];

static const char *ptxas_or_skip(void)
{
    const char *p = pa_find_ptxas(ptxas_path, sizeof ptxas_path);
    if (!p)
        cr_skip_test("SKIP: ptxas not found on PATH or in /usr/local/cuda/bin (CUDA toolkit)");
    return p;
}

/* Emits kb's kernel for arch; fails the test with the diagnostics. */
static int emit(tt_kb *kb, const char *arch, tj_buf *out)
{
    int rc = tj_emit_ptx(kb->k, arch, out);
    cr_expect_eq(rc, 0, "emitting %s for %s failed:\n%s", kb->k->name, arch, tj_diag_render(kb->c));
    return rc;
}

/* Modules of one arch merged into one (one ptxas run per group instead of
 * one per kernel): one header, the module-level declarations (shared
 * memory, tables) once each, then every entry. */
typedef struct merged {
    tj_buf header, decls, entries;
} merged;

static void merge(merged *g, const tj_buf *module)
{
    const char *text = module->data, *entry = strstr(text, ".visible .entry");
    const char *decl = strstr(text, ".address_size 64\n");
    if (!entry || !decl)
        return;
    decl += strlen(".address_size 64\n");
    if (!g->header.len)
        tj_buf_append(&g->header, text, (size_t)(decl - text));
    while (decl < entry) { /* one declaration per line */
        const char *eol = strchr(decl, '\n');
        size_t n = (size_t)((eol && eol < entry ? eol + 1 : entry) - decl);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)n, decl);
        if (n > 1 && (!g->decls.len || !strstr(g->decls.data, line)))
            tj_buf_append(&g->decls, decl, n);
        decl += n;
    }
    tj_buf_append(&g->entries, entry, strlen(entry));
    tj_buf_append(&g->entries, "\n", 1);
}

static void merged_text(merged *g, tj_buf *out)
{
    tj_buf_append(out, g->header.data ? g->header.data : "", g->header.len);
    tj_buf_append(out, g->decls.data ? g->decls.data : "", g->decls.len);
    tj_buf_append(out, g->entries.data ? g->entries.data : "", g->entries.len);
    tj_buf_free(&g->header);
    tj_buf_free(&g->decls);
    tj_buf_free(&g->entries);
}

/* Assembles the catalogue's kernels [first, last) for both archs. */
static void assemble_range(int first, int last)
{
    const char *ptxas = ptxas_or_skip();
    for (int a = 0; a < 2; a++) {
        merged g = {{0}, {0}, {0}};
        tj_buf group = {0};
        tj_buf singles[128] = {{0}};
        char names[128][64];
        int n = 0;
        for (int i = first; i < last && n < 128; i++) {
            tt_kb kb;
            int rc = sk_build(&kb, i);
            if (rc == 0)
                break;
            if (rc < 0)
                continue;
            cr_expect_eq(tj_verify(kb.k), 0, "kernel %s does not verify:\n%s", kb.k->name, tj_diag_render(kb.c));
            if (emit(&kb, archs[a], &singles[n]) == 0) {
                merge(&g, &singles[n]);
                snprintf(names[n], sizeof names[n], "%s", kb.k->name);
                n++;
            }
            tt_free(&kb);
        }
        merged_text(&g, &group);
        tj_buf log = {0};
        int rc = group.len ? pa_assemble(ptxas, group.data, group.len, archs[a], &log) : 0;
        if (rc != 0) /* find the culprits one by one */
            for (int k = 0; k < n; k++) {
                tj_buf one = {0};
                int r1 = pa_assemble(ptxas, singles[k].data, singles[k].len, archs[a], &one);
                cr_expect_eq(r1, 0, "ptxas -arch=%s rejects kernel %s:\n%s\n%s", archs[a], names[k],
                             one.data ? one.data : "", singles[k].data);
                tj_buf_free(&one);
            }
        cr_expect_eq(rc, 0, "ptxas -arch=%s failed on kernels %d..%d:\n%s", archs[a], first, last,
                     log.data ? log.data : "");
        tj_buf_free(&log);
        tj_buf_free(&group);
        for (int k = 0; k < n; k++)
            tj_buf_free(&singles[k]);
    }
}

/* catalogue sections (see sk_build) */
#define SECTION(name, first, count) \
    Test(ptx, name) { assemble_range(first, (first) + (count)); }

SECTION(binary, 0, SK_NDTYPES)
SECTION(compare, SK_NDTYPES, SK_NDTYPES)
SECTION(unary, 2 * SK_NDTYPES, SK_NDTYPES)
SECTION(cast, 3 * SK_NDTYPES, SK_NDTYPES)
SECTION(select_fma, 4 * SK_NDTYPES, SK_NDTYPES)
SECTION(vector_memory, 5 * SK_NDTYPES, 5 * SK_NDTYPES)
SECTION(shared_memory, 10 * SK_NDTYPES, 2 * SK_NDTYPES)
SECTION(atomics, 12 * SK_NDTYPES, 3 * (SK_NDTYPES - 1))
SECTION(shuffles, 15 * SK_NDTYPES - 3, 2 * SK_NDTYPES)
SECTION(control_params_grid, 17 * SK_NDTYPES - 3, 3)
SECTION(matrix_atom, 17 * SK_NDTYPES, 5)
SECTION(async_copies, 17 * SK_NDTYPES + 5, 3)
SECTION(division_by_constants, 17 * SK_NDTYPES + 8, 6)

Test(ptx, catalogue_is_covered)
{
    /* every index up to the end belongs to a section above */
    tt_kb kb;
    int end = 17 * SK_NDTYPES + 14;
    cr_assert_eq(sk_build(&kb, end), 0, "the catalogue grew: add a section");
    cr_assert_eq(sk_build(&kb, end - 1), 1);
    tt_free(&kb);
}

/* ---- the longest kernel ------------------------------------------------------- */

/* The catalogue's longest kernel (f64 math, ~26 KB of PTX) emits, the same
 * text each time (the emitter keeps no state between kernels). How long it
 * takes is bench_host's figure, not a test's. */
Test(ptx, the_longest_catalogue_kernel_emits)
{
    tt_kb kb;
    sk_build_unary(&kb, TJ_DT_F64);
    tj_buf first = {0}, again = {0};
    cr_assert_eq(tj_emit_ptx(kb.k, "sm_90a", &first), 0);
    cr_assert_eq(tj_emit_ptx(kb.k, "sm_90a", &again), 0);
    cr_assert_gt(first.len, 20000);
    cr_assert(first.len == again.len && !memcmp(first.data, again.data, first.len));
    tj_buf_free(&first);
    tj_buf_free(&again);
    tt_free(&kb);
}

/* ---- errors are reported, never crashes ------------------------------------------ */

static void expect_emit_error(tt_kb *kb, const char *arch, const char *what)
{
    tj_buf out = {0};
    cr_assert_neq(tj_emit_ptx(kb->k, arch, &out), 0, "expected an error about '%s'", what);
    const char *msg = tj_diag_render(kb->c);
    cr_assert(strstr(msg, what), "expected '%s' in:\n%s", what, msg);
    tj_buf_free(&out);
}

/* A minimal SIMT kernel: out[tid] = tid. */
static void build_tiny(tt_kb *kb, const char *name, uint32_t threads)
{
    sk_begin(kb, name, threads, 1);
    tj_ref out = sk_tensor(kb, "out", TJ_DT_I32, 1024);
    tj_ref tid = tt_opi(kb, TJ_OP_TID, tt_scalar(kb, TJ_DT_I32), 0, 0);
    sk_st(kb, sk_addr(kb, out, tid), tid, TJ_NONE);
}

Test(ptx, reports_bad_targets_and_kernels)
{
    tt_kb kb;
    build_tiny(&kb, "tiny", 32);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_70", "unknown target architecture 'sm_70'");
    expect_emit_error(&kb, NULL, "unknown target architecture");
    kb.k->nthreads = 2048;
    expect_emit_error(&kb, "sm_80", "2048 threads per program");
    kb.k->nthreads = 32;
    kb.k->level = TJ_LEVEL_TILE;
    expect_emit_error(&kb, "sm_80", "lower it to SIMT IR first");
    kb.k->level = TJ_LEVEL_SIMT;
    kb.k->name = "tj_smem";
    expect_emit_error(&kb, "sm_80", "not a PTX identifier");
    kb.k->name = "bad-name";
    expect_emit_error(&kb, "sm_80", "not a PTX identifier");
    tt_free(&kb);
}

Test(ptx, reports_ops_and_values_it_cannot_emit)
{
    tt_kb kb;
    build_tiny(&kb, "tile_op", 32); /* a Tile IR op in a SIMT kernel */
    tt_op(&kb, TJ_OP_ARANGE, tt_tile(&kb, TJ_DT_I32, 1, 128), 0);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "no PTX form");
    tt_free(&kb);

    build_tiny(&kb, "partial_warp", 48); /* shuffles need whole warps */
    tj_ref tid = tt_opi(&kb, TJ_OP_TID, tt_scalar(&kb, TJ_DT_I32), 0, 0);
    tt_opi(&kb, TJ_OP_SHFL_XOR, tt_scalar(&kb, TJ_DT_I32), 1, 1, tid);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "whole warps");
    tt_free(&kb);

    build_tiny(&kb, "too_wide", 32); /* a value of more components than a register file slice */
    tj_ref v = tt_ci(&kb, TJ_DT_F32, 1);
    tt_op(&kb, TJ_OP_NEG, tt_tile(&kb, TJ_DT_F32, 1, 64), 1, v);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "");
    tt_free(&kb);

    build_tiny(&kb, "bad_extract", 32);
    tj_ref s = tt_ci(&kb, TJ_DT_F32, 1);
    tt_opi(&kb, TJ_OP_EXTRACT, tt_scalar(&kb, TJ_DT_F32), 3, 1, s);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "extract takes");
    tt_free(&kb);
}

/* ---- the matrix atom ------------------------------------------------------------------ */

/* A kernel of `threads` threads with 4 KB of shared memory; *addr (u32 0)
 * and *ld (i32 16) place a matrix there. */
static void build_atom(tt_kb *kb, const char *name, uint32_t threads, tj_ref *addr, tj_ref *ld)
{
    sk_begin(kb, name, threads, 1);
    kb->k->smem_bytes = 4096;
    *addr = tt_ci(kb, TJ_DT_U32, 0);
    *ld = sk_i32(kb, 16);
}

static tj_ref atom_load(tt_kb *kb, tj_mma_role role, tj_dtype in, tj_ref addr, tj_ref ld)
{
    return tt_opi(kb, TJ_OP_MMA_LOAD, tj_type_fragment(kb->c, role, in), role, 3, addr, ld, TJ_NONE);
}

/* The one the verifier accepts, then one mistake each: the generator
 * reports it (the IR is not verified first) instead of emitting nonsense. */
Test(ptx, reports_malformed_matrix_ops)
{
    tt_kb kb;
    tj_ref addr, ld;
    build_atom(&kb, "role", 32, &addr, &ld);
    tt_opi(&kb, TJ_OP_MMA_LOAD, tj_type_fragment(kb.c, TJ_MMA_C, TJ_DT_F32), 5, 3, addr, ld, TJ_NONE);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "role 5 is not a, b, c or bt");
    tt_free(&kb);

    build_atom(&kb, "wrong_role", 32, &addr, &ld); /* a b fragment loaded as a */
    tt_opi(&kb, TJ_OP_MMA_LOAD, tj_type_fragment(kb.c, TJ_MMA_B, TJ_DT_F16), TJ_MMA_A, 3, addr, ld, TJ_NONE);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "the result is f16[16, 8], expected f16[16, 16]");
    tt_free(&kb);

    build_atom(&kb, "mixed_inputs", 32, &addr, &ld);
    tj_ref a = atom_load(&kb, TJ_MMA_A, TJ_DT_BF16, addr, ld), b = atom_load(&kb, TJ_MMA_B, TJ_DT_F16, addr, ld);
    tj_ref c = tt_op(&kb, TJ_OP_MMA_FILL, tj_type_fragment(kb.c, TJ_MMA_C, TJ_DT_F32), 1, tt_cf(&kb, TJ_DT_F32, 0));
    tt_op(&kb, TJ_OP_MMA, tj_type_fragment(kb.c, TJ_MMA_C, TJ_DT_F32), 3, a, b, c);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "operand 1 is f16[16, 8], expected bf16[16, 8]");
    tt_free(&kb);

    build_atom(&kb, "store_a", 32, &addr, &ld);
    tt_op(&kb, TJ_OP_MMA_STORE, TJ_TYPE_NONE, 3, addr, ld, atom_load(&kb, TJ_MMA_A, TJ_DT_F32, addr, ld));
    tt_op(&kb, TJ_OP_MMA_STORE, TJ_TYPE_NONE, 3, addr, ld, atom_load(&kb, TJ_MMA_A, TJ_DT_F16, addr, ld));
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "operand 2 is f16[16, 16], expected f32[16, 8]");
    tt_free(&kb);

    build_atom(&kb, "unaligned_rows", 32, &addr, &ld); /* bf16 rows 24 bytes apart */
    atom_load(&kb, TJ_MMA_A, TJ_DT_BF16, addr, sk_i32(&kb, 12));
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "do not start 16-byte aligned");
    tt_free(&kb);

    build_atom(&kb, "backwards", 32, &addr, &ld);
    tt_op(&kb, TJ_OP_MMA_STORE, TJ_TYPE_NONE, 3, addr, sk_i32(&kb, -8),
          tt_op(&kb, TJ_OP_MMA_FILL, tj_type_fragment(kb.c, TJ_MMA_C, TJ_DT_F32), 1, tt_cf(&kb, TJ_DT_F32, 1)));
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "-8 apart do not start 16-byte aligned");
    tt_free(&kb);

    build_atom(&kb, "unaligned_base", 32, &addr, &ld);
    atom_load(&kb, TJ_MMA_B, TJ_DT_F32, tt_ci(&kb, TJ_DT_U32, 8), ld);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "the address is not a multiple of 16 bytes");
    tt_free(&kb);

    build_atom(&kb, "partial_warp", 48, &addr, &ld);
    atom_load(&kb, TJ_MMA_C, TJ_DT_F32, addr, ld);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "matrix ops need whole warps");
    tt_free(&kb);

    build_atom(&kb, "looked_inside", 32, &addr, &ld); /* what the verifier forbids */
    tt_un(&kb, TJ_OP_NEG, atom_load(&kb, TJ_MMA_C, TJ_DT_F32, addr, ld));
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "must be a scalar or a vector");
    tt_free(&kb);
}

/* Regions nested past the limit are refused, not recursed into (and the
 * SIMT interpreter refuses them too). */
Test(ptx, refuses_absurdly_deep_nesting)
{
    tt_kb kb;
    sk_begin(&kb, "deep", 32, 1);
    tj_kernel *k = kb.k;
    tj_ref c = tt_op(&kb, TJ_OP_EQ, tt_scalar(&kb, TJ_DT_BOOL), 2, sk_i32(&kb, 0), sk_i32(&kb, 0));
    tj_type none = tj_type_tuple(kb.c, 0, NULL);
    enum { DEPTH = 300 };
    tj_block_id cur = k->body, thens[DEPTH];
    for (int d = 0; d < DEPTH; d++) {
        tj_ref r = tj_emit(k, cur, TJ_OP_IF, none, &c, 1);
        tj_block_id then = tj_block_new(k, r), other = tj_block_new(k, r);
        k->insts[r].region[0] = then;
        k->insts[r].region[1] = other;
        tj_emit(k, other, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
        thens[d] = cur = then;
    }
    for (int d = DEPTH - 1; d >= 0; d--)
        tj_emit(k, thens[d], TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    tt_end(&kb);
    expect_emit_error(&kb, "sm_80", "nested deeper than");
    cr_assert_neq(tj_simt_run(k, NULL, 0), 0);
    cr_assert(strstr(tj_diag_render(kb.c), "nested deeper than"));
    tt_free(&kb);
}

/* ---- robustness ---------------------------------------------------------------- */

/* Random single mutations of catalogue kernels (an op, a type, an operand
 * or an immediate changed; unverified): the generator may refuse them but
 * must not crash, and those that still verify run in the SIMT interpreter
 * without crashing either. */
Test(ptx, mutated_kernels_never_crash)
{
    uint64_t rng = 12345;
    int mutated = 0;
    for (int i = 0;; i += 7) {
        tt_kb kb;
        int rc = sk_build(&kb, i);
        if (rc == 0)
            break;
        if (rc < 0)
            continue;
        tj_type types[] = {tt_scalar(&kb, TJ_DT_F32), tt_scalar(&kb, TJ_DT_BOOL), tt_scalar(&kb, TJ_DT_I64),
                           tt_tile(&kb, TJ_DT_F16, 1, 8), tt_tile(&kb, TJ_DT_I32, 2, 4, 4), TJ_TYPE_NONE,
                           tj_type_tensor(kb.c, TJ_DT_F32, 1), tt_tile(&kb, TJ_DT_U8, 1, 3)};
        sk_args a;
        sk_make_args(kb.k, 99, &a);
        for (int m = 0; m < 60; m++) {
            tj_kernel *k = tj_kernel_clone(kb.k);
            const tj_block *body = &k->blocks[k->body];
            tj_inst *in = &k->insts[body->insts[sk_rand(&rng) % body->ninsts]];
            switch (sk_rand(&rng) % 4) {
            case 0: in->op = (tj_op)(1 + sk_rand(&rng) % (TJ_OP_COUNT - 1)); break;
            case 1: in->type = types[sk_rand(&rng) % (sizeof types / sizeof *types)]; break;
            case 2:
                if (in->nargs)
                    in->args[sk_rand(&rng) % in->nargs] = (tj_ref)(sk_rand(&rng) % k->ninsts);
                break;
            default: in->imm = (int64_t)(sk_rand(&rng) % 70) - 5; break;
            }
            mutated++;
            tj_buf out = {0};
            int refused = tj_emit_ptx(k, sk_rand(&rng) & 1 ? "sm_80" : "sm_90a", &out);
            tj_buf_free(&out);
            cr_assert(!refused || tj_error_count(kb.c), "%s, mutation %d: refused without saying why", kb.k->name, m);
            tj_diag_clear(kb.c);
            int failed = tj_verify(k) || tj_simt_run(k, a.args, a.n);
            cr_assert(!failed || tj_error_count(kb.c), "%s, mutation %d: failed without saying why", kb.k->name, m);
            tj_diag_clear(kb.c);
        }
        sk_free_args(&a);
        tt_free(&kb);
    }
    cr_assert_gt(mutated, 1000, "only %d kernels were mutated", mutated);
}
