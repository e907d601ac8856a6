/* tj_facts_from_args and the specialize pass: dims folded to constants,
 * VIEW flags for dead bounds checks and chunk granularity. */
#include <criterion/criterion.h>

#include "tilejit/tilejit.h"

static tj_ctx *ctx;
static void setup(void) { ctx = tj_ctx_new(); }
static void teardown(void) { tj_ctx_free(ctx); }
TestSuite(specialize, .init = setup, .fini = teardown);

static tj_kernel *parse(const char *text)
{
    tj_kernel *k = NULL;
    int n = tj_parse_ir(ctx, "t.tjir", text, strlen(text), &k, 1);
    cr_assert_eq(n, 1, "%s", tj_diag_render(ctx));
    cr_assert_eq(tj_verify(k), 0, "%s", tj_diag_render(ctx));
    return k;
}

/* The flags of the n-th VIEW of the body. */
static uint32_t view_flags(const tj_kernel *k, int n)
{
    const tj_block *b = &k->blocks[k->body];
    for (uint32_t i = 0; i < b->ninsts; i++)
        if (k->insts[b->insts[i]].op == TJ_OP_VIEW && n-- == 0)
            return k->insts[b->insts[i]].flags;
    cr_assert_fail("no such view");
    return 0;
}

#define ADD_HEADER(SPEC)                                                                                         \
    "kernel @add(x: f32[N], y: f32[16]) " SPEC " {\n"                                                           \
    "grid:\n"                                                                                                    \
    "  %0 = param {index = 0} : tensor<f32, 1>\n"                                                              \
    "  %1 = dim %0 {axis = 0} : i32\n"                                                                         \
    "  %2 = const 1023 : i32\n"                                                                                \
    "  %3 = add %1, %2 : i32\n"                                                                                \
    "  %4 = const 1024 : i32\n"                                                                                \
    "  %5 = div %3, %4 : i32\n"                                                                                \
    "  yield %5\n"                                                                                               \
    "body:\n"                                                                                                    \
    "  %6 = program_id {axis = 0} : i32\n"                                                                     \
    "  %7 = const 1024 : i32\n"                                                                                \
    "  %8 = mul %6, %7 : i32\n"                                                                                \
    "  %9 = param {index = 0} : tensor<f32, 1>\n"                                                              \
    "  %10 = view %9, %8 {axes = [1024]} : view<f32[1024]>\n"                                                  \
    "  %11 = load %10, _, _ : f32[1024]\n"                                                                     \
    "  %12 = dim %9 {axis = 0} : i32\n"                                                                        \
    "  %13 = param {index = 1} : tensor<f32, 1>\n"                                                             \
    "  %14 = dim %13 {axis = 0} : i32\n"                                                                       \
    "  %15 = const 0 : i32\n"                                                                                  \
    "  %16 = view %13, %15 {axes = [16]} : view<f32[16]>\n"                                                    \
    "  %17 = view %13, %6 {axes = [8]} : view<f32[8]>\n"                                                       \
    "  yield\n"                                                                                                  \
    "}\n"

Test(specialize, dims_become_constants)
{
    tj_kernel *k = parse(ADD_HEADER("spec(N = 4096)"));
    cr_assert_eq(tj_pass_specialize(k), 0);
    int dims = 0, consts = 0;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        dims += k->insts[r].op == TJ_OP_DIM;
        consts += k->insts[r].op == TJ_OP_CONST && (k->insts[r].imm == 4096 || k->insts[r].imm == 16);
    }
    cr_assert_eq(dims, 0); /* N from spec, 16 from the literal dim */
    cr_assert_eq(consts, 3);
    cr_assert_eq(tj_verify(k), 0);
}

Test(specialize, grid_proves_slices_in_bounds)
{
    tj_kernel *k = parse(ADD_HEADER("spec(N = 4096)"));
    cr_assert_eq(tj_pass_specialize(k), 0);
    cr_assert(view_flags(k, 0) & 1, "program_id * 1024 < 4096, both multiples of 1024");
    cr_assert_eq((view_flags(k, 0) & TJ_VIEW_CHUNK_MASK) >> TJ_VIEW_CHUNK_SHIFT, 10);
    cr_assert(view_flags(k, 1) & 1, "[0, 16) of a 16-long tensor");
    cr_assert(!(view_flags(k, 2) & 1), "program_id is not a multiple of 8");
}

Test(specialize, unknown_sizes_keep_their_checks)
{
    tj_kernel *k = parse(ADD_HEADER(""));
    cr_assert_eq(tj_pass_specialize(k), 0);
    cr_assert(!(view_flags(k, 0) & 1));
    cr_assert_eq((view_flags(k, 0) & TJ_VIEW_CHUNK_MASK) >> TJ_VIEW_CHUNK_SHIFT, 0);
}

Test(specialize, facts_give_chunks_and_symbolic_bounds)
{
    tj_kernel *k = parse(ADD_HEADER(""));
    float data[64];
    tj_arg args[2] = {{.is_tensor = 1, .tensor = {.data = data, .dtype = TJ_DT_F32, .rank = 1, .shape = {4096}, .strides = {1}}},
                      {.is_tensor = 1, .tensor = {.data = data, .dtype = TJ_DT_F32, .rank = 1, .shape = {16}, .strides = {1}}}};
    tj_facts_from_args(k, args, 2);
    cr_assert(k->facts[0].unit_stride && k->facts[0].aligned16 && k->facts[0].dim_div16[0]);
    cr_assert_eq(tj_pass_specialize(k), 0);
    /* N % 16 == 0 is not N % 1024 == 0: checked, but uniform over chunks of 16 */
    cr_assert(!(view_flags(k, 0) & 1));
    cr_assert_eq((view_flags(k, 0) & TJ_VIEW_CHUNK_MASK) >> TJ_VIEW_CHUNK_SHIFT, 4);
}

Test(specialize, facts_of_strided_and_misaligned_arguments)
{
    tj_kernel *k = parse(ADD_HEADER(""));
    char raw[256];
    tj_arg args[2] = {{.is_tensor = 1, .tensor = {.data = raw + 4, .dtype = TJ_DT_F32, .rank = 1, .shape = {100}, .strides = {2}}},
                      {.is_tensor = 1, .tensor = {.data = raw + 16 - ((uintptr_t)raw & 15), .dtype = TJ_DT_F32, .rank = 1, .shape = {16}, .strides = {1}}}};
    tj_facts_from_args(k, args, 2);
    cr_assert(!k->facts[0].unit_stride && !k->facts[0].aligned16 && !k->facts[0].dim_div16[0]);
    cr_assert(k->facts[1].unit_stride && k->facts[1].aligned16 && k->facts[1].dim_div16[0]);
}

/* An axis of one element is never stepped along: its stride is no fact
 * against vector accesses (a [1, N] view of a vector), but the same stride
 * over two rows is; tj_facts_broken names what an argument lacks. */
Test(specialize, facts_of_one_tensor)
{
    float raw[64] __attribute__((aligned(16)));
    tj_tensor line = {.data = raw, .dtype = TJ_DT_F32, .rank = 2, .shape = {1, 32}, .strides = {1, 1}};
    tj_facts f = tj_facts_of_tensor(&line);
    cr_assert(f.stride_div16[0] && f.stride_div16[1] == 0 && f.unit_stride && f.aligned16 && f.dim_div16[1]);
    cr_assert_null(tj_facts_broken(&f, &line));
    tj_tensor rows = line;
    rows.shape[0] = 2;
    cr_assert(!tj_facts_of_tensor(&rows).stride_div16[0]);
    cr_assert_str_eq(tj_facts_broken(&f, &rows), "a stride is not divisible by 16");
    tj_tensor moved = line;
    moved.data = raw + 1;
    cr_assert_str_eq(tj_facts_broken(&f, &moved), "its data is not 16-byte aligned");
    tj_tensor strided = line;
    strided.strides[1] = 2;
    cr_assert_str_eq(tj_facts_broken(&f, &strided), "its innermost stride is not 1");
    cr_assert_str_eq(tj_facts_broken(&f, NULL), "there is no tensor (NULL)");
    cr_assert_null(tj_facts_broken(NULL, &strided));
    cr_assert(!tj_facts_of_tensor(NULL).aligned16);
}

/* range(0, K, 16) with K = 64: the loop variable is below K and a multiple
 * of 16; range(8, K, 16) is not a multiple of 16. */
static const char *const LOOP =
    "kernel @loop(a: f32[K]) spec(K = 64) {\n"
    "grid:\n"
    "  %0 = const 1 : i32\n"
    "  yield %0\n"
    "body:\n"
    "  %1 = param {index = 0} : tensor<f32, 1>\n"
    "  %2 = dim %1 {axis = 0} : i32\n"
    "  %3 = const 0 : i32\n"
    "  %4 = const 16 : i32\n"
    "  %5 = for %3, %2, %4 : () {\n"
    "  ^(%6: i32):\n"
    "    %7 = view %1, %6 {axes = [16]} : view<f32[16]>\n"
    "    %8 = load %7, _, _ : f32[16]\n"
    "    yield\n"
    "  }\n"
    "  %9 = const 8 : i32\n"
    "  %10 = for %9, %2, %4 : () {\n"
    "  ^(%11: i32):\n"
    "    %12 = view %1, %11 {axes = [16]} : view<f32[16]>\n"
    "    %13 = load %12, _, _ : f32[16]\n"
    "    yield\n"
    "  }\n"
    "  yield\n"
    "}\n";

Test(specialize, loop_variables)
{
    tj_kernel *k = parse(LOOP);
    cr_assert_eq(tj_pass_specialize(k), 0);
    uint32_t f[2] = {0, 0};
    int n = 0;
    for (tj_ref r = 1; r < k->ninsts; r++)
        if (k->insts[r].op == TJ_OP_VIEW && n < 2)
            f[n++] = k->insts[r].flags;
    cr_assert_eq(n, 2);
    cr_assert(f[0] & 1);
    cr_assert(!(f[1] & 1));
    cr_assert_eq((f[1] & TJ_VIEW_CHUNK_MASK) >> TJ_VIEW_CHUNK_SHIFT, 3); /* multiples of 8 */
}

Test(specialize, refuses_simt_kernels)
{
    tj_kernel *k = parse(ADD_HEADER(""));
    k->level = TJ_LEVEL_SIMT;
    cr_assert_neq(tj_pass_specialize(k), 0);
}
