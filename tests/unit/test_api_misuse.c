/* API misuse (issue 10, item 13): every public function of include/tilejit/,
 * header by header, called with NULL handles, NULL out-parameters, NULL
 * arrays with a count above 0 and out-of-range enums and sizes, returns its
 * error value (and says why where it has a channel: a tj_rt_error or the
 * context's diagnostics) instead of crashing. Runs under ASan/UBSan too. */
#include <criterion/criterion.h>
#include <string.h>

#include "tilejit/array.h"
#include "tilejit/cpu.h"
#include "tilejit/lib.h"
#include "tilejit/mlir.h"
#include "tilejit/nccl.h"
#include "tilejit/dispatch.h"
#include "tilejit/metal.h"
#include "tilejit/tilejit.h"

static const char add_src[] = "kernel add(x: f32[N], y: f32[N], out: f32[N])\n"
                              "    grid (cdiv(N, BLOCK))\n"
                              "    const BLOCK = 1024\n"
                              "{\n"
                              "    i = program_id(0) * BLOCK\n"
                              "    store(out[i:i+BLOCK], load(x[i:i+BLOCK]) + load(y[i:i+BLOCK]))\n"
                              "}\n";

/* A tj_rt_error call: fails (non-zero, or NULL) and fills err. */
#define RT_FAILS(call)                                                  \
    do {                                                                \
        tj_rt_error err_ = {{0}};                                       \
        tj_rt_error *err = &err_;                                       \
        cr_assert((call) != 0, "%s did not fail", #call);               \
        cr_assert(err_.msg[0], "%s said nothing", #call);               \
    } while (0)
#define RT_NULL(call)                                                   \
    do {                                                                \
        tj_rt_error err_ = {{0}};                                       \
        tj_rt_error *err = &err_;                                       \
        cr_assert_null((call), "%s did not fail", #call);               \
        cr_assert(err_.msg[0], "%s said nothing", #call);               \
    } while (0)
/* A context call: gives `bad` and reports an error into ctx. */
#define CTX_GIVES(ctx, bad, call)                                       \
    do {                                                                \
        uint32_t before_ = tj_error_count(ctx);                         \
        cr_assert_eq((call), (bad), "%s did not fail", #call);          \
        cr_assert_gt(tj_error_count(ctx), before_, "%s said nothing", #call); \
    } while (0)

/* A small kernel with a grid and a body, built by hand. */
static tj_kernel *tiny_kernel(tj_ctx *c)
{
    tj_kernel *k = tj_kernel_new(c, "tiny");
    k->grid = tj_block_new(k, TJ_NONE);
    k->body = tj_block_new(k, TJ_NONE);
    tj_emit(k, k->grid, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    tj_emit(k, k->body, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0);
    return k;
}

Test(api_misuse, diag_h)
{
    tj_ctx_free(NULL);
    cr_assert_null(tj_alloc(NULL, 16));
    cr_assert_null(tj_realloc(NULL, NULL, 0, 16));
    uint32_t cap = 0;
    cr_assert_null(tj_grow(NULL, NULL, &cap, 4, 8));
    tj_ctx *c = tj_ctx_new();
    cr_assert_null(tj_grow(c, NULL, NULL, 4, 8));
    cr_assert_null(tj_strndup(NULL, "x", 1));
    cr_assert_null(tj_strndup(c, NULL, 3));
    cr_assert_null(tj_strdup(NULL, "x"));
    cr_assert_null(tj_strdup(c, NULL));
    cr_assert_eq(tj_source_add(NULL, "f", "x", 1), 0);
    CTX_GIVES(c, 0u, tj_source_add(c, "f", NULL, 5));
    cr_assert_null(tj_source_name(NULL, 1));
    cr_assert_null(tj_source_text(NULL, 1, NULL));
    tj_diag_report(NULL, TJ_SEV_ERROR, 0, 0, 0, "x");
    tj_diag_report(c, (tj_severity)77, 0, 0, 0, "bad severity"); /* kept, as an error */
    cr_assert_eq(tj_error_count(c), 2);
    cr_assert_eq(tj_diag_count(NULL), 0);
    cr_assert_eq(tj_error_count(NULL), 0);
    cr_assert_null(tj_diag_get(NULL, 0));
    cr_assert_null(tj_diag_get(c, 99));
    tj_diag_clear(NULL);
    tj_diag_truncate(NULL, 0);
    cr_assert_str_eq(tj_diag_render(NULL), "");
    cr_assert_null(tj_ctx_swap_guard(NULL, NULL));
    cr_assert_eq(tj_rt_fail(NULL, "x"), 1);
    tj_ctx_free(c);
}

Test(api_misuse, ir_h_types_and_dtypes)
{
    tj_ctx *c = tj_ctx_new();
    cr_assert_str_eq(tj_dtype_name((tj_dtype)99), "invalid");
    cr_assert_eq(tj_dtype_from_name(NULL, 3), TJ_DT_INVALID);
    cr_assert_eq(tj_dtype_size((tj_dtype)99), 0);
    cr_assert_eq(tj_dtype_bits((tj_dtype)99), 0);
    cr_assert_eq(tj_dtype_is_float((tj_dtype)99), 0);
    cr_assert_eq(tj_dtype_is_int((tj_dtype)99), 0);
    cr_assert_eq(tj_dtype_is_signed((tj_dtype)99), 0);
    cr_assert_eq(tj_type_tile(NULL, TJ_DT_F32, 0, NULL), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_tile(c, TJ_DT_F32, 2, NULL), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_tile(c, (tj_dtype)99, 0, NULL), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_scalar(NULL, TJ_DT_F32), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_tensor(NULL, TJ_DT_F32, 1), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_tensor(c, TJ_DT_F32, 7), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_view(c, TJ_DT_F32, 1, NULL), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_tuple(NULL, 0, NULL), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_tuple(c, 3, NULL), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_with_dtype(NULL, 1, TJ_DT_F32), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_get(NULL, 1)->kind, TJ_TK_VOID);
    cr_assert_eq(tj_type_is_scalar(NULL, 1), 0);
    cr_assert_eq(tj_type_numel(NULL, 1), 1);
    cr_assert_eq(tj_type_str(c, tj_type_scalar(c, TJ_DT_F32), NULL, 8), 3); /* the length only */
    cr_assert_eq(tj_mma_k((tj_dtype)99), 0);
    cr_assert_eq(tj_type_fragment(NULL, TJ_MMA_A, TJ_DT_F16), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_fragment(c, 99, TJ_DT_F16), TJ_TYPE_NONE);
    cr_assert_eq(tj_type_is_fragment(NULL, 1), 0);
    cr_assert_null(tj_mma_role_name(99));
    cr_assert_str_eq(tj_op_get((tj_op)9999)->name, "invalid");
    cr_assert_eq(tj_op_from_name(NULL, 3), TJ_OP_INVALID);
    tj_ctx_free(c);
}

Test(api_misuse, ir_h_builder)
{
    tj_ctx *c = tj_ctx_new();
    cr_assert_null(tj_kernel_new(NULL, "k"));
    CTX_GIVES(c, NULL, tj_kernel_new(c, NULL));
    tj_kernel *k = tiny_kernel(c);
    cr_assert_eq(tj_block_new(NULL, TJ_NONE), 0);
    CTX_GIVES(c, 0u, tj_block_new(k, 999));
    cr_assert_eq(tj_emit(NULL, 1, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0), TJ_NONE);
    CTX_GIVES(c, TJ_NONE, tj_emit(k, 999, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0));
    CTX_GIVES(c, TJ_NONE, tj_emit(k, 0, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0));
    CTX_GIVES(c, TJ_NONE, tj_emit(k, k->body, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 2));
    CTX_GIVES(c, TJ_NONE, tj_inst_new(k, (tj_op)9999, TJ_TYPE_NONE, NULL, 0));
    cr_assert_eq(tj_inst_new(NULL, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 0), TJ_NONE);
    CTX_GIVES(c, TJ_NONE, tj_inst_new(k, TJ_OP_YIELD, TJ_TYPE_NONE, NULL, 4));
    cr_assert_eq(tj_emit_const_int(NULL, 1, tj_type_scalar(c, TJ_DT_I32), 1), TJ_NONE);
    CTX_GIVES(c, TJ_NONE, tj_emit_const_int(k, 999, tj_type_scalar(c, TJ_DT_I32), 1));
    CTX_GIVES(c, TJ_NONE, tj_emit_const_float(k, 999, tj_type_scalar(c, TJ_DT_F32), 1.0));
    uint32_t errors = tj_error_count(c);
    tj_block_insert(NULL, 1, 0, 1);
    tj_block_insert(k, 999, 0, 1);
    tj_block_insert(k, k->body, 0, 999);
    tj_block_remove(NULL, 1, 0);
    tj_block_remove(k, 999, 0);
    tj_inst_set_args(NULL, 1, NULL, 0);
    tj_inst_set_args(k, 999, NULL, 0);
    tj_inst_set_args(k, 1, NULL, 3);
    tj_inst_set_list(NULL, 1, NULL, 0);
    tj_inst_set_list(k, 999, NULL, 0);
    tj_inst_set_list(k, 1, NULL, 3);
    cr_assert_eq(tj_error_count(c), errors + 7);
    tj_replace_uses(NULL, 1, 2);
    cr_assert_null(tj_kernel_clone(NULL));
    /* the refused calls changed nothing */
    cr_assert_eq(k->ninsts, 3);
    cr_assert_eq(k->nblocks, 3);
    cr_assert_eq(k->blocks[k->body].ninsts, 1);
    tj_ctx_free(c);
}

Test(api_misuse, ir_h_text)
{
    tj_buf b = {0};
    tj_buf_printf(NULL, "x");
    tj_buf_printf(&b, NULL);
    tj_buf_append(NULL, "x", 1);
    tj_buf_append(&b, NULL, 5);
    cr_assert_eq(b.len, 0);
    tj_buf_free(NULL);
    tj_print_kernel(NULL, &b);
    tj_ctx *c = tj_ctx_new();
    tj_print_kernel(tiny_kernel(c), NULL);
    tj_kernel *out[1];
    cr_assert_eq(tj_parse_ir(NULL, "f", "", 0, out, 1), -1);
    CTX_GIVES(c, -1, tj_parse_ir(c, "f", NULL, 10, out, 1));
    CTX_GIVES(c, -1, tj_parse_ir(c, "f", "", 0, NULL, 1));
    cr_assert_eq(tj_verify(NULL), 1);
    cr_assert_eq(tj_check_args(NULL, NULL, 0), -1);
    CTX_GIVES(c, -1, tj_check_args(tiny_kernel(c), NULL, 3)); /* args.h */
    cr_assert_eq(tj_f16_to_f32(tj_f32_to_f16(1.0f)), 1.0f); /* no pointers, no ranges */
    cr_assert_eq(tj_bf16_to_f32(tj_f32_to_bf16(1.0f)), 1.0f);
    cr_assert_eq(tj_f64_to_f16(1.0), tj_f32_to_f16(1.0f));
    cr_assert_eq(tj_f64_to_bf16(1.0), tj_f32_to_bf16(1.0f));
    tj_buf_free(&b);
    tj_ctx_free(c);
}

Test(api_misuse, frontend_h)
{
    tj_ctx *c = tj_ctx_new();
    cr_assert_null(tj_parse_program(NULL, "f", add_src, sizeof add_src - 1));
    CTX_GIVES(c, NULL, tj_parse_program(c, "f", NULL, 10));
    tj_program *p = tj_parse_program(c, "add.tj", add_src, sizeof add_src - 1);
    cr_assert_not_null(p, "%s", tj_diag_render(c));
    cr_assert_eq(tj_program_kernel_count(NULL), 0);
    cr_assert_null(tj_program_kernel_name(NULL, 0));
    cr_assert_null(tj_program_kernel_name(p, 9));
    cr_assert_eq(tj_program_find_kernel(NULL, "add"), -1);
    cr_assert_eq(tj_program_find_kernel(p, NULL), -1);
    const tj_tile_param *tiles = (void *)1;
    cr_assert_eq(tj_kernel_tile_params(p, 0, NULL), 0);
    cr_assert_eq(tj_kernel_tile_params(NULL, 0, &tiles), 0);
    cr_assert_null(tiles);
    const tj_param *params = (void *)1;
    cr_assert_eq(tj_kernel_params(p, 0, NULL), 0);
    cr_assert_eq(tj_kernel_params(p, 7, &params), 0);
    cr_assert_null(params);
    tj_binding *cfg;
    uint32_t ncfg;
    cr_assert_eq(tj_select_config(NULL, p, 0, NULL, 0, NULL, 0, &cfg, &ncfg), 1);
    CTX_GIVES(c, 1, tj_select_config(c, p, 0, NULL, 0, NULL, 0, NULL, &ncfg));
    CTX_GIVES(c, 1, tj_select_config(c, p, 0, NULL, 0, NULL, 0, &cfg, NULL));
    CTX_GIVES(c, 1, tj_select_config(c, p, 0, NULL, 2, NULL, 0, &cfg, &ncfg));
    CTX_GIVES(c, 1, tj_select_config(c, p, 0, NULL, 0, NULL, 2, &cfg, &ncfg));
    CTX_GIVES(c, 1, tj_select_config(c, NULL, 0, NULL, 0, NULL, 0, &cfg, &ncfg));
    CTX_GIVES(c, 1, tj_select_config(c, p, 5, NULL, 0, NULL, 0, &cfg, &ncfg));
    cr_assert_eq(tj_config_satisfies(NULL, p, 0, NULL, 0, NULL, 0, NULL), -1);
    CTX_GIVES(c, -1, tj_config_satisfies(c, p, 0, NULL, 3, NULL, 0, NULL));
    CTX_GIVES(c, -1, tj_config_satisfies(c, p, 0, NULL, 0, NULL, 3, NULL));
    CTX_GIVES(c, -1, tj_config_satisfies(c, NULL, 0, NULL, 0, NULL, 0, NULL));
    cr_assert_null(tj_build_kernel(NULL, p, 0, NULL, 0, NULL, 0));
    CTX_GIVES(c, NULL, tj_build_kernel(c, p, 0, NULL, 2, NULL, 0));
    CTX_GIVES(c, NULL, tj_build_kernel(c, p, 0, NULL, 0, NULL, 2));
    CTX_GIVES(c, NULL, tj_build_kernel(c, NULL, 0, NULL, 0, NULL, 0));
    CTX_GIVES(c, NULL, tj_build_kernel(c, p, -1, NULL, 0, NULL, 0));
    cr_assert_eq(tj_check_program(NULL, p), 1);
    cr_assert_eq(tj_check_program(c, NULL), 1);
    tj_ctx_free(c);
}

Test(api_misuse, passes_interp_pipeline_h)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = tiny_kernel(c);
    cr_assert_neq(tj_pass_canonicalize(NULL), 0);
    cr_assert_neq(tj_pass_cse(NULL), 0);
    cr_assert_neq(tj_pass_dce(NULL), 0);
    cr_assert_neq(tj_pass_specialize(NULL), 0);
    cr_assert_neq(tj_pass_prefetch(NULL), 0);
    tj_facts_from_args(NULL, NULL, 0);
    uint32_t errors = tj_error_count(c);
    tj_facts_from_args(k, NULL, 2);
    cr_assert_gt(tj_error_count(c), errors);
    int64_t grid[3];
    cr_assert_eq(tj_eval_grid(NULL, NULL, 0, grid), -1);
    CTX_GIVES(c, -1, tj_eval_grid(k, NULL, 0, NULL));
    CTX_GIVES(c, -1, tj_eval_grid(k, NULL, 2, grid));
    cr_assert_eq(tj_interp_run(NULL, NULL, 0), -1);
    CTX_GIVES(c, -1, tj_interp_run(k, NULL, 2));
    cr_assert_eq(tj_simt_run(NULL, NULL, 0), -1);
    CTX_GIVES(c, -1, tj_simt_run(k, NULL, 0)); /* Tile IR */
    cr_assert_neq(tj_pipeline_run(NULL, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_END, NULL), 0);
    tj_kernel *none = NULL;
    cr_assert_neq(tj_pipeline_run(&none, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_END, NULL), 0);
    CTX_GIVES(c, 1, tj_pipeline_run(&k, (tj_step)-1, TJ_STEP_END, NULL));
    CTX_GIVES(c, 1, tj_pipeline_run(&k, TJ_STEP_OPTIMIZE_TILE, (tj_step)99, NULL));
    CTX_GIVES(c, 1, tj_pipeline_run(&k, TJ_STEP_END, TJ_STEP_OPTIMIZE_TILE, NULL));
    cr_assert_null(tj_compile_simt(NULL, NULL));
    tj_pipeline_options bad_target = {.lower.target = (tj_lower_target)7};
    CTX_GIVES(c, NULL, tj_compile_simt(k, &bad_target));
    cr_assert_str_eq(tj_step_name((tj_step)99), "?");
    cr_assert_null(tj_pass_lookup(NULL));
    cr_assert_null(tj_pass_lookup("no-such-pass"));
    cr_assert_neq(tj_run_passes(NULL, "dce", 0), 0);
    CTX_GIVES(c, 1, tj_run_passes(k, "no-such-pass", 0));
    cr_assert_neq(tj_optimize(NULL, 0), 0);
    tj_ctx_free(c);
}

Test(api_misuse, lower_codegen_h)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = tiny_kernel(c);
    cr_assert_null(tj_lower_simt(NULL, NULL));
    tj_lower_options bad = {.target = (tj_lower_target)77};
    CTX_GIVES(c, NULL, tj_lower_simt(k, &bad));
    tj_buf b = {0};
    cr_assert_eq(tj_emit_ptx(NULL, "sm_90a", &b), -1);
    CTX_GIVES(c, -1, tj_emit_ptx(k, "sm_90a", NULL));
    CTX_GIVES(c, -1, tj_emit_ptx(k, NULL, &b));
    CTX_GIVES(c, -1, tj_emit_ptx(k, "sm_7", &b));
    cr_assert_eq(tj_emit_msl(NULL, &b), -1);
    CTX_GIVES(c, -1, tj_emit_msl(k, NULL));
    int32_t size_off[1][TJ_MAX_RANK], stride_off[1][TJ_MAX_RANK], scalar_off[1];
    cr_assert_eq(tj_msl_block_layout(NULL, size_off, stride_off, scalar_off), -1);
    k->nparams = 1; /* a parameter to lay out */
    k->params = tj_alloc(c, sizeof *k->params);
    CTX_GIVES(c, -1, tj_msl_block_layout(k, NULL, NULL, NULL));
    tj_msl_tensor_writes(NULL, NULL);
    tj_msl_tensor_writes(k, NULL);
    cr_assert_eq(tj_msl_version(NULL), TJ_MSL_3_0);
    cr_assert_eq(b.len, 0);
    tj_ctx_free(c);
}

Test(api_misuse, cuda_h)
{
    tj_cuda_close(NULL);
    cr_assert_eq(tj_cuda_device_count(NULL), 0);
    cr_assert_eq(tj_cuda_ordinal(NULL), -1);
    RT_NULL(tj_cuda_open(-1, err));
    tj_cuda_props props;
    RT_FAILS(tj_cuda_device_props(NULL, 0, &props, err));
    cr_assert_geq(tj_cuda_describe(NULL, 100), 0); /* only counts */
    RT_NULL(tj_cuda_module_load_ptx(NULL, ".version 8.0", "k", err));
    RT_NULL(tj_cuda_module_load_cubin(NULL, "x", 1, "k", err));
    tj_cuda_module_unload(NULL);
    tj_cuda_function fn;
    RT_FAILS(tj_cuda_module_function(NULL, "k", &fn, err));
    tj_cuda_func_attrs attrs;
    RT_FAILS(tj_cuda_function_attrs(NULL, &attrs, err));
    tj_cuda_function unloaded = {0};
    RT_FAILS(tj_cuda_function_attrs(&unloaded, &attrs, err));
    RT_FAILS(tj_cuda_function_set_max_dynamic_shared(NULL, 1024, err));
    tj_cuda_launch_dims dims = {{1, 1, 1}, {32, 1, 1}, 0, NULL};
    RT_FAILS(tj_cuda_launch(NULL, &dims, NULL, err));
    RT_FAILS(tj_cuda_launch(&unloaded, NULL, NULL, err));
    RT_FAILS(tj_cuda_launch_packed(NULL, &dims, NULL, 0, err));
    RT_FAILS(tj_cuda_launch_packed(&unloaded, &dims, NULL, 64, err));
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = tiny_kernel(c);
    tj_cuda_params params;
    RT_FAILS(tj_cuda_marshal(NULL, NULL, 0, &params, err));
    RT_FAILS(tj_cuda_marshal(k, NULL, 0, NULL, err));
    RT_FAILS(tj_cuda_marshal(k, NULL, 3, &params, err));
    RT_FAILS(tj_cuda_launch_kernel(NULL, &dims, k, NULL, 0, err));
    RT_FAILS(tj_cuda_launch_kernel(&unloaded, &dims, NULL, NULL, 0, err));
    RT_NULL(tj_cuda_malloc(NULL, 16, err));
    RT_FAILS(tj_cuda_free(NULL, (void *)16, err));
    char host[8];
    RT_FAILS(tj_cuda_memcpy_htod(NULL, (void *)16, host, 8, err));
    RT_FAILS(tj_cuda_memcpy_dtoh(NULL, host, (void *)16, 8, err));
    RT_FAILS(tj_cuda_memcpy_htod_async(NULL, (void *)16, host, 8, NULL, err));
    RT_FAILS(tj_cuda_memcpy_dtoh_async(NULL, host, (void *)16, 8, NULL, err));
    RT_FAILS(tj_cuda_memset(NULL, (void *)16, 0, 8, err));
    RT_FAILS(tj_cuda_synchronize(NULL, err));
    RT_NULL(tj_cuda_stream_create(NULL, 0, err));
    RT_FAILS(tj_cuda_stream_destroy(NULL, (void *)16, err));
    RT_FAILS(tj_cuda_stream_synchronize(NULL, NULL, err));
    RT_NULL(tj_cuda_event_create(NULL, err));
    RT_FAILS(tj_cuda_event_destroy(NULL, (void *)16, err));
    RT_FAILS(tj_cuda_event_record(NULL, (void *)16, NULL, err));
    RT_FAILS(tj_cuda_event_synchronize(NULL, (void *)16, err));
    float ms;
    RT_FAILS(tj_cuda_event_elapsed(NULL, (void *)16, (void *)32, &ms, err));
    tj_nvjitlink_close(NULL);
    unsigned major, minor;
    cr_assert_neq(tj_nvjitlink_version(NULL, &major, &minor), 0);
    void *cubin;
    size_t size;
    RT_FAILS(tj_nvjitlink_compile(NULL, "x", 1, "sm_90a", NULL, 0, &cubin, &size, NULL, err));
    tj_nvjitlink *l = tj_nvjitlink_open(NULL);
    if (l) { /* with the toolkit: the arguments past the handle */
        RT_FAILS(tj_nvjitlink_compile(l, NULL, 10, "sm_90a", NULL, 0, &cubin, &size, NULL, err));
        RT_FAILS(tj_nvjitlink_compile(l, "x", 1, NULL, NULL, 0, &cubin, &size, NULL, err));
        RT_FAILS(tj_nvjitlink_compile(l, "x", 1, "sm_90a", NULL, 2, &cubin, &size, NULL, err));
        RT_FAILS(tj_nvjitlink_compile(l, "x", 1, "sm_90a", NULL, -1, &cubin, &size, NULL, err));
        RT_FAILS(tj_nvjitlink_compile(l, "x", 1, "sm_90a", NULL, 0, NULL, &size, NULL, err));
        cr_assert_neq(tj_nvjitlink_version(l, NULL, &minor), 0);
        tj_nvjitlink_close(l);
    }
    tj_ctx_free(c);
}

static tj_jit *cpu_jit(void)
{
    tj_rt_error err = {{0}};
    tj_jit *j = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    cr_assert_not_null(j, "%s", err.msg);
    return j;
}

static tj_compile_request add_request(void)
{
    return (tj_compile_request){.file = "add.tj", .source = add_src, .len = sizeof add_src - 1, .kernel = "add"};
}

Test(api_misuse, jit_h)
{
    RT_NULL(tj_jit_open((tj_device_kind)77, 0, err));
    RT_NULL(tj_jit_open((tj_device_kind)-1, 0, err));
    tj_jit_close(NULL);
    cr_assert_eq(tj_jit_device(NULL), TJ_DEVICE_CPU);
    cr_assert_null(tj_jit_cuda(NULL));
    tj_jit *j = cpu_jit();
    tj_compile_request req = add_request();
    RT_NULL(tj_jit_compile(NULL, &req, err));
    RT_NULL(tj_jit_compile(j, NULL, err));
    tj_compile_request r = req;
    r.source = NULL;
    RT_NULL(tj_jit_compile(j, &r, err));
    r = req;
    r.kernel = NULL;
    RT_NULL(tj_jit_compile(j, &r, err));
    r = req;
    r.nparams = 2;
    RT_NULL(tj_jit_compile(j, &r, err));
    r = req;
    r.nargs = 3; /* args NULL: as tj_fn_launch refuses it */
    RT_NULL(tj_jit_compile(j, &r, err));
    float x[4] = {0};
    int64_t n = 4;
    tj_arg args[3];
    for (int i = 0; i < 3; i++)
        args[i] = (tj_arg){.is_tensor = 1, .tensor = tj_tensor_contiguous(x, TJ_DT_F32, 1, &n)};
    req.args = args;
    req.nargs = 3;
    tj_rt_error e = {{0}};
    tj_fn *f = tj_jit_compile(j, &req, &e);
    cr_assert_not_null(f, "%s", e.msg);
    RT_FAILS(tj_fn_launch(NULL, args, 3, NULL, err));
    RT_FAILS(tj_fn_launch(f, NULL, 3, NULL, err));
    RT_FAILS(tj_fn_launch(f, args, 2, NULL, err));
    RT_FAILS(tj_fn_check(NULL, args, 3, err));
    RT_FAILS(tj_fn_check(f, NULL, 3, err));
    cr_assert_neq(tj_fn_check(NULL, args, 3, NULL), 0);
    const tj_binding *config = (void *)1;
    cr_assert_eq(tj_fn_config(NULL, &config), 0);
    cr_assert_null(config);
    cr_assert_eq(tj_fn_config(f, NULL), 0);
    tj_tensor t = tj_tensor_contiguous(x, TJ_DT_F32, 2, NULL);
    cr_assert_eq(t.dtype, TJ_DT_INVALID);
    t = tj_tensor_contiguous(x, TJ_DT_F32, 9, &n);
    cr_assert_eq(t.dtype, TJ_DT_INVALID);
    tj_jit_set_event_handler(NULL, NULL, NULL);
    tj_jit_emit_event(NULL, &(tj_event){0});
    tj_jit_emit_event(j, NULL);
    tj_fn_release(NULL);
    tj_fn_retain(NULL);
    tj_jit_set_tune_mode(NULL, TJ_TUNE_OFF);
    tj_jit_set_tune_mode(j, (tj_tune_mode)99);
    cr_assert_eq(tj_jit_tune_mode(j), TJ_TUNE_STORED);
    cr_assert_eq(tj_jit_tune_mode(NULL), TJ_TUNE_STORED);
    cr_assert_eq(tj_jit_ordinal(NULL), -1);
    tj_jit_stats stats = {.compiles = 7};
    tj_jit_get_stats(NULL, &stats);
    cr_assert_eq(stats.compiles, 0);
    tj_jit_get_stats(j, NULL);
    cr_assert_null(tj_jit_disk_cache(NULL));
    cr_assert_null(tj_fn_cuda_function(NULL));
    cr_assert_eq(tj_fn_threads(NULL), 0);
    cr_assert_eq(tj_fn_smem_bytes(NULL), 0);
    int dtypes[3], ranks[3];
    RT_FAILS(tj_source_params(NULL, 10, "add", dtypes, ranks, 3, err) == -1);
    RT_FAILS(tj_source_params(add_src, sizeof add_src - 1, NULL, dtypes, ranks, 3, err) == -1);
    RT_FAILS(tj_source_params(add_src, sizeof add_src - 1, "add", NULL, ranks, 3, err) == -1);
    RT_FAILS(tj_source_params(add_src, sizeof add_src - 1, "add", dtypes, NULL, 3, err) == -1);
    RT_FAILS(tj_source_params(add_src, sizeof add_src - 1, "add", dtypes, ranks, -1, err) == -1);
    cr_assert_null(tj_fn_tile_ir(NULL));
    cr_assert_null(tj_fn_simt_ir(NULL));
    cr_assert_null(tj_fn_ptx(NULL));
    tj_jit_close(j);
}

Test(api_misuse, dispatch_h)
{
    tj_jit *j = cpu_jit();
    tj_compile_request req = add_request();
    RT_NULL(tj_dispatch_new(NULL, &req, err));
    RT_NULL(tj_dispatch_new(j, NULL, err));
    tj_compile_request r = req;
    r.source = NULL;
    RT_NULL(tj_dispatch_new(j, &r, err));
    r = req;
    r.kernel = NULL;
    RT_NULL(tj_dispatch_new(j, &r, err));
    r = req;
    r.nparams = 1;
    RT_NULL(tj_dispatch_new(j, &r, err));
    tj_dispatch_free(NULL);
    const tj_param *params = (void *)1;
    cr_assert_eq(tj_dispatch_params(NULL, &params), 0);
    cr_assert_null(params);
    tj_rt_error e = {{0}};
    tj_dispatch *d = tj_dispatch_new(j, &req, &e);
    cr_assert_not_null(d, "%s", e.msg);
    cr_assert_eq(tj_dispatch_params(d, NULL), 0);
    RT_FAILS(tj_dispatch_launch(NULL, NULL, 0, NULL, err));
    RT_FAILS(tj_dispatch_launch(d, NULL, 3, NULL, err));
    RT_NULL(tj_dispatch_fn(NULL, NULL, 0, err));
    RT_NULL(tj_dispatch_fn(d, NULL, 3, err));
    tj_tune_report rep;
    RT_FAILS(tj_dispatch_tune(NULL, NULL, 0, NULL, NULL, &rep, err));
    tj_tune_report_free(&rep); /* freeable after a refusal too */
    RT_FAILS(tj_dispatch_tune(d, NULL, 0, NULL, NULL, NULL, err));
    RT_FAILS(tj_dispatch_tune(d, NULL, 3, NULL, NULL, &rep, err));
    tj_tune_report_free(&rep);
    tj_arg args[3];
    const void *dl[3] = {NULL, NULL, NULL};
    RT_FAILS(tj_dispatch_args_from_dlpack(NULL, args, dl, 3, err));
    RT_FAILS(tj_dispatch_args_from_dlpack(d, NULL, dl, 3, err));
    RT_FAILS(tj_dispatch_args_from_dlpack(d, args, NULL, 3, err));
    RT_FAILS(tj_dispatch_launch_dlpack(NULL, args, dl, 3, NULL, err));
    RT_FAILS(tj_dispatch_launch_dlpack(d, args, NULL, 3, NULL, err));
    tj_dispatch_free(d);
    tj_jit_close(j);
}

Test(api_misuse, cache_h_hash_and_keys)
{
    uint8_t out[32];
    tj_hash_state s;
    tj_hash_init(NULL, 32);
    tj_hash_init(&s, 32);
    tj_hash_update(NULL, "x", 1);
    tj_hash_update(&s, NULL, 5);
    tj_hash_final(NULL, out);
    tj_hash_final(&s, NULL);
    tj_hash(NULL, 5, out, 32);
    tj_hash("x", 1, NULL, 32);
    cr_assert_eq(tj_hash64(NULL, 5, 0), 0);
    char hex[TJ_CACHE_KEY_HEX] = "x";
    tj_cache_key_hex(NULL, hex);
    cr_assert_str_eq(hex, "");
    tj_cache_key_hex(&(tj_cache_key){{0}}, NULL);
    tj_cache_key key = {{0}};
    cr_assert_eq(tj_cache_key_parse(NULL, &key), -1);
    cr_assert_eq(tj_cache_key_parse("00", NULL), -1);
    cr_assert_eq(tj_cache_key_parse("00", &key), -1); /* short */
    cr_assert_eq(tj_cache_key_equal(NULL, &key), 0);
    cr_assert_eq(tj_cache_key_equal(&key, NULL), 0);
    tj_key_builder b;
    tj_key_begin(NULL, "x");
    tj_key_begin(&b, "x");
    tj_key_add_bytes(NULL, "f", "x", 1);
    tj_key_add_bytes(&b, NULL, "x", 1);
    tj_key_add_bytes(&b, "f", NULL, 5);
    tj_key_add_str(NULL, "f", "x");
    tj_key_add_str(&b, NULL, "x");
    tj_key_add_int(NULL, "f", 1);
    tj_key_add_int(&b, NULL, 1);
    tj_key_end(NULL, &key);
    tj_key_end(&b, NULL);
    tj_cache_key_compute(NULL, &key);
    tj_cache_key_compute(&(tj_cache_key_parts){0}, NULL);
}

static void noop(void *v) { (void)v; }

Test(api_misuse, cache_h_lru_and_disk)
{
    cr_assert_null(tj_lru_new(0, noop, noop));
    cr_assert_null(tj_lru_new(UINT32_MAX, noop, noop));
    tj_lru *l = tj_lru_new(2, noop, noop);
    tj_cache_key key = {{1}};
    tj_lru_free(NULL);
    cr_assert_null(tj_lru_get(NULL, &key));
    cr_assert_null(tj_lru_get(l, NULL));
    tj_lru_put(NULL, &key, l);
    tj_lru_put(l, NULL, l);
    tj_lru_put(l, &key, NULL);
    cr_assert_eq(tj_lru_count(l), 0);
    cr_assert_eq(tj_lru_count(NULL), 0);
    tj_lru_free(l);

    tj_cache_close(NULL);
    cr_assert_null(tj_cache_dir(NULL));
    cr_assert_eq(tj_cache_max_bytes(NULL), 0);
    cr_assert_eq(tj_cache_readable(NULL), 0);
    cr_assert_eq(tj_cache_writable(NULL), 0);
    cr_assert_null(tj_cache_warning(NULL));
    tj_cache_set_warning_handler(NULL, NULL, NULL);
    tj_cache *c = tj_cache_open(&(tj_cache_options){.dir = ""}); /* memory only */
    cr_assert_not_null(c);
    tj_cache_entry e = {.kind = TJ_CACHE_KERNEL};
    cr_assert_eq(tj_cache_store(NULL, &e), 1);
    cr_assert_eq(tj_cache_store(c, NULL), 1);
    tj_cache_entry bad = {.kind = (tj_cache_kind)99};
    cr_assert_eq(tj_cache_store(c, &bad), 1);
    bad = (tj_cache_entry){.kind = TJ_CACHE_KERNEL, .ptx_len = 10};
    cr_assert_eq(tj_cache_store(c, &bad), 1);
    cr_assert_eq(tj_cache_load(NULL, TJ_CACHE_KERNEL, &key, &e), 1);
    cr_assert_eq(tj_cache_load(c, TJ_CACHE_KERNEL, NULL, &e), 1);
    cr_assert_eq(tj_cache_load(c, TJ_CACHE_KERNEL, &key, NULL), 1);
    cr_assert_eq(tj_cache_load(c, (tj_cache_kind)99, &key, &e), 1);
    tj_cache_drop(NULL, &key);
    tj_cache_drop(c, NULL);
    tj_cache_entry_free(NULL);
    char buf[16];
    size_t len;
    cr_assert_eq(tj_cache_meta_get(NULL, "a", buf, sizeof buf), -1);
    cr_assert_eq(tj_cache_meta_get("a 1\n", NULL, buf, sizeof buf), -1);
    cr_assert_eq(tj_cache_meta_get("a 1\n", "a", NULL, 16), -1);
    cr_assert_eq(tj_cache_meta_get("a 1\n", "a", buf, 0), -1);
    cr_assert_null(tj_cache_meta_find(NULL, "a", &len));
    cr_assert_null(tj_cache_meta_find("a 1\n", NULL, &len));
    cr_assert_null(tj_cache_meta_find("a 1\n", "a", NULL));
    tj_cache_stats st;
    cr_assert_neq(tj_cache_stats_get(NULL, &st), 0);
    cr_assert_neq(tj_cache_stats_get(c, NULL), 0);
    cr_assert_eq(tj_cache_list(NULL, NULL, NULL), -1);
    uint64_t removed;
    cr_assert_neq(tj_cache_clear(NULL, &removed), 0);
    cr_assert_neq(tj_cache_clear(c, NULL), 0);
    cr_assert_eq(tj_cache_evict(NULL, 0), 0);
    tj_cache_close(c);
}

Test(api_misuse, autotune_h)
{
    cr_assert_str_eq(tj_tune_status_name((tj_tune_status)99), "?");
    tj_tune_request req = {.file = "add.tj", .source = add_src, .len = sizeof add_src - 1, .kernel = "add"};
    tj_tune_report rep;
    RT_FAILS(tj_tune(NULL, NULL, NULL, &rep, err));
    tj_tune_report_free(&rep);
    RT_FAILS(tj_tune(NULL, NULL, &req, NULL, err));
    tj_tune_request r = req;
    r.mode = (tj_tune_mode)99;
    RT_FAILS(tj_tune(NULL, NULL, &r, &rep, err));
    tj_tune_report_free(&rep);
    r = req;
    r.source = NULL;
    RT_FAILS(tj_tune(NULL, NULL, &r, &rep, err));
    tj_tune_report_free(&rep);
    r = req;
    r.nargs = 3;
    RT_FAILS(tj_tune(NULL, NULL, &r, &rep, err));
    tj_tune_report_free(&rep);
    r = req;
    r.threads = -2;
    RT_FAILS(tj_tune(NULL, NULL, &r, &rep, err));
    tj_tune_report_free(&rep);
    tj_tune_report_free(NULL);
    char buf[4] = "xyz";
    tj_tune_config_text(NULL, 2, NULL, 0); /* issue 10: wrote buf[0] */
    tj_tune_config_text(NULL, 2, buf, sizeof buf);
    cr_assert_str_eq(buf, "");
    tj_tune_device_free(NULL);
    RT_NULL(tj_tune_device_cuda(NULL, NULL, NULL, 0, err));
    tj_tune_device_id(NULL, "sm_90a", buf, sizeof buf);
    cr_assert_str_eq(buf, "");
    tj_tune_device_id(NULL, NULL, NULL, 0);
}

Test(api_misuse, metal_h)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = tiny_kernel(c);
    tj_msl_args a;
    cr_assert_eq(tj_msl_pack_args(NULL, NULL, 0, &a), -1);
    cr_assert_eq(tj_msl_pack_args(k, NULL, 0, NULL), -1);
    /* Off macOS every runtime call says Metal is missing; on it, these are
     * refused for their arguments. */
#ifndef __APPLE__
    RT_NULL(tj_metal_open(NULL, err));
#endif
    tj_metal_close(NULL);
    cr_assert_not_null(tj_metal_device_name(NULL));
    RT_NULL(tj_metal_pipeline_get(NULL, "x", 1, "k", 32, err));
    RT_FAILS(tj_metal_launch(NULL, NULL, k, NULL, 0, err));
    tj_metal_pipeline *p;
    RT_NULL(tj_metal_compile(NULL, k, NULL, 0, &p, err));
    RT_NULL(tj_metal_compile(NULL, k, NULL, 0, NULL, err));
    RT_FAILS(tj_metal_run(NULL, k, NULL, 0, err));
    tj_metal_get_stats(NULL, NULL);
    tj_metal_stats st = {.compiles = 3};
    tj_metal_get_stats(NULL, &st);
    cr_assert_eq(st.compiles, 0);
    tj_ctx_free(c);
}

/* The native cpu back end, built with LLVM or without it (then every entry
 * that compiles or runs fails with the reason). */
Test(api_misuse, cpu_h)
{
    char msg[256] = "";
    int64_t grid[3] = {1, 1, 1};
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = tiny_kernel(c);
    tj_buf obj = {0};
    cr_expect_null(tj_cpu_load(NULL, "x", 1, msg, sizeof msg));
    cr_expect(msg[0], "tj_cpu_load said nothing");
    msg[0] = 0;
    cr_expect_neq(tj_cpu_run(NULL, NULL, 0, grid, msg, sizeof msg), 0);
    cr_expect(msg[0], "tj_cpu_run said nothing");
    cr_expect_neq(tj_cpu_compile_object(NULL, NULL, &obj, NULL), 0);
    CTX_GIVES(c, -1, tj_cpu_compile_object(NULL, k, &obj, NULL));
    cr_expect_null(tj_cpu_compile(NULL, NULL, NULL));
    cr_expect_neq(tj_cpu_run_kernel(NULL, NULL, NULL, 0), 0);
    CTX_GIVES(c, -1, tj_cpu_run_kernel(NULL, k, NULL, 0));
    cr_expect_eq(tj_cpu_threads(NULL), 0);
    cr_expect_str_eq(tj_cpu_target(NULL), "");
    tj_cpu_free(NULL);
    tj_cpu *cpu = tj_cpu_new(1, msg, sizeof msg);
    if (cpu) { /* built with LLVM */
        cr_expect_null(tj_cpu_load(cpu, NULL, 0, msg, sizeof msg));
        CTX_GIVES(c, -1, tj_cpu_compile_object(cpu, k, NULL, NULL));
        cr_expect_neq(tj_cpu_run(NULL, NULL, 3, grid, msg, sizeof msg), 0);
        tj_cpu_free(cpu);
    }
    tj_buf_free(&obj);
    tj_ctx_free(c);
}

/* array.h: a failed build call gives TJ_ARRAY_NONE and keeps the graph's
 * first message; evaluation and reads fail with err. */
Test(api_misuse, array_h)
{
    tj_graph_free(NULL);
    RT_NULL(tj_graph_new((tj_device_kind)77, 0, err));
    cr_assert_str_eq(tj_graph_error(NULL), "tj_graph_error: NULL graph");
    cr_assert_eq(tj_array_wrap(NULL, NULL), TJ_ARRAY_NONE);
    tj_rt_error e = {{0}};
    tj_graph *g = tj_graph_new(TJ_DEVICE_INTERP, 0, &e);
    cr_assert_not_null(g, "%s", e.msg);
    int64_t shape[2] = {2, 3};
    int axes[2] = {5, 0};
    tj_array x = tj_array_input(g, TJ_DT_F32, 2, shape);
    cr_assert_neq(x, TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_wrap(g, NULL), TJ_ARRAY_NONE);
    cr_assert(tj_graph_error(g)[0], "a failed build call said nothing");
    cr_assert_eq(tj_array_input(g, TJ_DT_F32, 99, shape), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_input(g, TJ_DT_F32, 2, NULL), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_input(g, (tj_dtype)99, 2, shape), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_unary(g, (tj_aop)999, x), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_binary(g, TJ_AOP_INVALID, x, 12345), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_reduce(g, TJ_AOP_SUM, x, axes, 1, 0), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_reduce(g, TJ_AOP_SUM, x, NULL, 1, 0), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_reshape(g, x, 2, NULL), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_transpose(g, x, axes), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_slice(g, x, NULL, NULL, NULL), TJ_ARRAY_NONE);
    cr_assert_eq(tj_array_concatenate(g, NULL, 2, 0), TJ_ARRAY_NONE);
    RT_FAILS(tj_array_eval(g, NULL, 1, err));
    RT_FAILS(tj_array_eval(g, (tj_array[]){999}, 1, err));
    RT_FAILS(tj_array_read(g, x, NULL, 0, err));
    RT_FAILS(tj_array_tensor(g, x, NULL, err));
    cr_assert_neq(tj_array_tensor(g, x, NULL, &e), 0);
    cr_assert(strstr(e.msg, "NULL out"), "tj_array_tensor with a NULL out said: %s", e.msg);
    cr_assert_neq(tj_array_get_info(g, x, NULL), 0);
    cr_assert_lt(tj_graph_parse(NULL, NULL, 5, NULL, 2, NULL, 3, &e), 0);
    cr_assert_null(tj_graph_program_parse(NULL, 5, &e));
    cr_assert_lt(tj_graph_program_build(g, NULL, NULL, 2, NULL, 3, &e), 0);
    cr_assert_lt(tj_graph_program_build(NULL, NULL, NULL, 0, NULL, 0, &e), 0);
    tj_graph_program_free(NULL);
    tj_graph_free(g);
}

/* lib.h, mlir.h, nccl.h: NULL handles and arrays with counts. */
Test(api_misuse, lib_mlir_nccl_h)
{
    RT_NULL(tj_lib_open(NULL, err));
    tj_lib_close(NULL);
    RT_FAILS(tj_lib_sort(NULL, NULL, NULL, 0, 0, NULL, err));
    RT_FAILS(tj_lib_argsort(NULL, NULL, NULL, 0, 0, NULL, err));
    RT_FAILS(tj_lib_cumsum(NULL, NULL, NULL, 0, 0, NULL, err));
    RT_FAILS(tj_lib_topk(NULL, NULL, 3, NULL, NULL, 0, 0, NULL, err));
    RT_FAILS(tj_lib_selective_scan(NULL, NULL, NULL, NULL, err));
    cr_assert_null(tj_mlir_parse(NULL, NULL, NULL, 5));
    RT_NULL(tj_mlir_fn_new(NULL, NULL, TJ_DEVICE_CPU, 0, err));
    RT_FAILS(tj_mlir_fn_call(NULL, NULL, 1, NULL, 1, err));
    tj_mlir_module_free(NULL);
    tj_nccl_close(NULL);
    tj_nccl_comm_free(NULL);
    RT_FAILS(tj_nccl_unique_id(NULL, NULL, err));
    RT_FAILS(tj_nccl_all_reduce(NULL, NULL, NULL, TJ_NCCL_SUM, NULL, err));
    RT_FAILS(tj_nccl_group_end(NULL, err));
}
