/* CUDA C through NVRTC without a GPU: templates, a header given by name,
 * defines and shared memory compiled to PTX (and assembled by nvJitLink
 * and ptxas), the parameters read from declarations, NVRTC's log as
 * FILE:LINE:COL diagnostics, and what the cache key depends on. Tests that
 * need libnvrtc skip, saying why, when it cannot be loaded. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/dispatch.h"
#include "tilejit/nvrtc.h"
#include "tilejit/tilejit.h"

static const char scale_src[] =
    "#include \"scale_config.h\"\n"
    "// scale(...) in a comment is not the declaration\n"
    "template <typename T, int BLOCK>\n"
    "__global__ void scale(T *__restrict__ y, const T *x, T alpha, unsigned int n)\n"
    "{\n"
    "    __shared__ T tile[BLOCK];\n"
    "    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;\n"
    "    tile[threadIdx.x] = i < n ? x[i] : T(0);\n"
    "    __syncthreads();\n"
    "    if (i < n)\n"
    "        y[i] = alpha * tile[BLOCK - 1 - threadIdx.x] + OFFSET + BIAS;\n"
    "}\n";

static const tj_cuda_header scale_headers[] = {{"scale_config.h", "#pragma once\n#define OFFSET 0\n"}};
static const char *const scale_defines[] = {"BIAS=0"};

static tj_cuda_source scale_source(const char *arch)
{
    return (tj_cuda_source){.file = "scale.cu", .source = scale_src, .len = sizeof scale_src - 1,
                            .kernel = "scale<float, 128>", .headers = scale_headers, .nheaders = 1,
                            .defines = scale_defines, .ndefines = 1, .arch = arch};
}

static tj_nvrtc *open_or_skip(void)
{
    tj_rt_error err = {{0}};
    tj_nvrtc *nv = tj_nvrtc_open(&err);
    if (!nv)
        cr_skip_test("%s", err.msg);
    return nv;
}

/* ptxas, where the toolkit has it: the PTX assembles for the arch. */
static void assemble_with_ptxas(const char *ptx, const char *arch)
{
    const char *ptxas = "/usr/local/cuda/bin/ptxas";
    FILE *probe = fopen(ptxas, "r");
    if (!probe) {
        cr_log_warn("ptxas not found: %s not assembled with it", arch);
        return;
    }
    fclose(probe);
    char path[] = "/tmp/tj_nvrtc_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(ptx, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o /dev/null", ptxas, arch, path);
    int rc = system(cmd);
    remove(path);
    cr_assert_eq(rc, 0, "ptxas -arch=%s failed", arch);
}

Test(nvrtc, template_header_defines_shared_to_ptx_and_cubin)
{
    tj_nvrtc *nv = open_or_skip();
    tj_rt_error err = {{0}};
    tj_nvjitlink *link = tj_nvjitlink_open(&err);
    const char *archs[] = {"sm_80", "sm_90a"};
    for (int a = 0; a < 2; a++) {
        tj_cuda_source src = scale_source(archs[a]);
        tj_nvrtc_output out;
        cr_assert_eq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.lowered_name, "_Z5scaleIfLi128EEvPT_PKS0_S0_j");
        cr_assert(strstr(out.ptx, ".shared"), "no shared memory in the PTX");
        cr_assert(strstr(out.ptx, a ? ".target sm_90a" : ".target sm_80"));
        cr_assert_eq(out.nparams, 4);
        cr_assert_str_eq(out.params[0].name, "y");
        cr_assert(out.params[0].pointer && !out.params[0].is_const && out.params[0].dtype == TJ_DT_F32);
        cr_assert(out.params[1].pointer && out.params[1].is_const && out.params[1].dtype == TJ_DT_F32);
        cr_assert(!out.params[2].pointer && out.params[2].dtype == TJ_DT_F32);
        cr_assert_str_eq(out.params[3].name, "n");
        cr_assert_eq(out.params[3].dtype, TJ_DT_U32);
        cr_assert_gt(out.nvrtc_ms, 0);
        if (link) {
            void *cubin;
            size_t size;
            cr_assert_eq(tj_nvjitlink_compile(link, out.ptx, out.ptx_len, archs[a], NULL, 0, &cubin, &size, NULL,
                                              &err), 0, "%s", err.msg);
            free(cubin);
        }
        assemble_with_ptxas(out.ptx, archs[a]);
        tj_nvrtc_output_free(&out);
    }
    tj_nvjitlink_close(link);
    tj_nvrtc_close(nv);
}

Test(nvrtc, extern_c_kernel_and_stated_signature)
{
    tj_nvrtc *nv = open_or_skip();
    static const char src_text[] =
        "extern \"C\" __global__ void axpy(float *y, const float *x, float a, long long n)\n"
        "{ long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }\n";
    tj_cuda_source src = {.source = src_text, .len = sizeof src_text - 1, .kernel = "axpy", .arch = "sm_80"};
    tj_nvrtc_output out;
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.lowered_name, "axpy");
    cr_assert_eq(out.params[3].dtype, TJ_DT_I64);
    tj_nvrtc_output_free(&out);
    /* A stated signature replaces the declaration, and must agree with the PTX. */
    src.signature = "out: f32*, in: const f32*, a: f32, n: i64";
    cr_assert_eq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.params[0].name, "out");
    cr_assert(out.params[1].is_const);
    tj_nvrtc_output_free(&out);
    src.signature = "f32*, f32*, f32, i32";
    cr_assert_neq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0);
    cr_assert(strstr(err.msg, "kernel 'axpy', parameter 3: 8 bytes in the PTX, but its type takes 4"), "%s",
              err.msg);
    src.signature = NULL;
    src.kernel = "nope";
    cr_assert_neq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0);
    cr_assert(strstr(err.msg, "no kernel 'nope'"), "%s", err.msg);
    tj_nvrtc_close(nv);
}

/* A mangled name longer than any fixed buffer: three 300-character type
 * names (behind short aliases, so messages stay short) make a symbol of
 * over 900 characters, checked against the PTX. */
Test(nvrtc, long_mangled_name)
{
    tj_nvrtc *nv = open_or_skip();
    char names[3][301], src_text[4096], kernel[64];
    for (int i = 0; i < 3; i++) {
        memset(names[i], 'a' + i, 300);
        names[i][300] = 0;
    }
    snprintf(src_text, sizeof src_text,
             "struct %s {}; struct %s {}; struct %s {};\n"
             "using S0 = %s; using S1 = %s; using S2 = %s;\n"
             "template <typename A, typename B, typename C>\n"
             "__global__ void k(A *a, B *b, C *c, int n) { if (n < 0) a = 0; }\n",
             names[0], names[1], names[2], names[0], names[1], names[2]);
    snprintf(kernel, sizeof kernel, "k<S0, S1, S2>");
    tj_cuda_source src = {.source = src_text, .len = strlen(src_text), .kernel = kernel, .arch = "sm_80"};
    tj_nvrtc_output out;
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0, "%s", err.msg);
    cr_assert_gt(strlen(out.lowered_name), 900);
    cr_assert_eq(out.nparams, 4);
    tj_nvrtc_output_free(&out);
    src.signature = "a: f32*, b: f32*, c: f32*, n: i64"; /* n is 4 bytes in the PTX */
    cr_assert_neq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0);
    cr_assert(strstr(err.msg, "parameter 3 ('n'): 4 bytes in the PTX, but its type takes 8"), "%s", err.msg);
    tj_nvrtc_close(nv);
}

/* The header count is bounded before it sizes an allocation or becomes
 * NVRTC's int count. */
Test(nvrtc, header_count_bounded)
{
    tj_nvrtc *nv = open_or_skip();
    static const tj_cuda_header one[] = {{"h.h", ""}};
    tj_cuda_source src = scale_source("sm_80");
    src.headers = one;
    src.nheaders = UINT32_MAX;
    tj_nvrtc_output out;
    tj_rt_error err = {{0}};
    cr_assert_neq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0);
    cr_assert(strstr(err.msg, "4294967295 headers, more than 4096"), "%s", err.msg);
    tj_nvrtc_close(nv);
}

/* ---- diagnostics ------------------------------------------------------------ */

Test(nvrtc, errors_become_file_line_col_diagnostics)
{
    tj_nvrtc *nv = open_or_skip();
    static const char text[] = "#include \"util.h\"\n"
                               "extern \"C\" __global__ void k(float *y)\n"
                               "{\n"
                               "    y[0] = twice(1.0f) + oops;\n"
                               "}\n";
    const tj_cuda_header headers[] = {{"util.h", "__device__ float twice(float x)\n{ return 2 * x + bad; }\n"}};
    tj_cuda_source src = {.file = "k.cu", .source = text, .len = sizeof text - 1, .kernel = "k",
                          .headers = headers, .nheaders = 1};
    tj_ctx *c = tj_ctx_new();
    tj_nvrtc_output out;
    tj_rt_error err = {{0}};
    cr_assert_neq(tj_nvrtc_compile(nv, &src, c, &out, &err), 0);
    cr_assert_str_eq(err.msg, "NVRTC: 2 errors compiling k.cu");
    cr_assert_str_eq(tj_diag_render(c),
                     "util.h:2:18: error: identifier \"bad\" is undefined\n"
                     "  { return 2 * x + bad; }\n"
                     "                   ^\n"
                     "k.cu:4:26: error: identifier \"oops\" is undefined\n"
                     "      y[0] = twice(1.0f) + oops;\n"
                     "                           ^\n");
    /* Without a context the diagnostics ride in the error. */
    cr_assert_neq(tj_nvrtc_compile(nv, &src, NULL, &out, &err), 0);
    cr_assert(strstr(err.msg, "errors compiling k.cu:\nutil.h:2:18: error: identifier \"bad\""), "%s", err.msg);
    tj_ctx_free(c);
    tj_nvrtc_close(nv);
}

Test(nvrtc, log_lines_without_location)
{
    tj_ctx *c = tj_ctx_new();
    static const char text[] = "int main;\n";
    tj_cuda_source src = {.file = "a.cu", .source = text, .len = sizeof text - 1};
    const char *log = "a.cu(1): warning #177-D: variable \"x\" was declared but never referenced\n"
                      "\n"
                      "nvrtc: error: invalid value for --gpu-architecture (-arch)\n"
                      "1 error detected in the compilation of \"a.cu\".\n";
    cr_assert_eq(tj_nvrtc_log_to_diags(c, &src, log), 1);
    cr_assert_str_eq(tj_diag_render(c),
                     "a.cu:1:1: warning: variable \"x\" was declared but never referenced\n"
                     "  int main;\n"
                     "  ^\n"
                     "error: nvrtc: error: invalid value for --gpu-architecture (-arch)\n");
    tj_ctx_free(c);
}

/* ---- parameters from declarations ------------------------------------------------- */

Test(nvrtc, params_from_declarations)
{
    tj_cuda_param p[8];
    tj_rt_error err = {{0}};
    static const char text[] = "/* k(int) */ __device__ void k2(int);\n"
                               "template <class T, typename U = int, int N>\n"
                               "__global__ void k(const T *a, U *b, T c, void *raw, unsigned n, __half h)\n{}\n";
    cr_assert_eq(tj_cuda_c_params(text, sizeof text - 1, "k<double, short, 4>", NULL, p, 8, &err), 6, "%s",
                 err.msg);
    cr_assert(p[0].pointer && p[0].is_const && p[0].dtype == TJ_DT_F64);
    cr_assert(p[1].pointer && !p[1].is_const && p[1].dtype == TJ_DT_I16);
    cr_assert_eq(p[2].dtype, TJ_DT_F64);
    cr_assert(p[3].pointer && p[3].dtype == TJ_DT_INVALID);
    cr_assert_str_eq(p[4].name, "n");
    cr_assert_eq(p[4].dtype, TJ_DT_U32);
    cr_assert_eq(p[5].dtype, TJ_DT_F16);
    cr_assert_eq(tj_cuda_c_params(text, sizeof text - 1, "k", NULL, p, 8, &err), -1);
    cr_assert(strstr(err.msg, "needs its arguments"), "%s", err.msg);
    static const char structs[] = "struct S { int a; };\n__global__ void s(S v) {}\n";
    cr_assert_eq(tj_cuda_c_params(structs, sizeof structs - 1, "s", NULL, p, 8, &err), -1);
    cr_assert_str_eq(err.msg, "kernel 's', parameter 0 ('v'): the type 'S' has no tilejit dtype (state the "
                              "signature, e.g. \"f32*, i32\")");
    cr_assert_eq(tj_cuda_c_params(NULL, 0, "s", "v: bf16, f32**", p, 8, &err), -1);
    cr_assert_eq(tj_cuda_c_params(NULL, 0, "s", "", p, 8, &err), 0);
}

/* ---- the cache key ---------------------------------------------------------------- */

Test(nvrtc, key_depends_on_what_nvrtc_is_given)
{
    tj_cuda_source src = scale_source(NULL);
    const char *id = "/usr/local/cuda/lib64/libnvrtc.so.13 109338064 1.0";
    tj_cache_key base, again, k;
    tj_nvrtc_key(&src, "sm_90", id, 13000, &base);
    tj_nvrtc_key(&src, "sm_90", id, 13000, &again);
    cr_assert(tj_cache_key_equal(&base, &again));
    tj_nvrtc_key(&src, "sm_80", id, 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "the arch");
    tj_nvrtc_key(&src, "sm_90", "/opt/nvrtc/libnvrtc.so.13 109338064 1.0", 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "another NVRTC");
    tj_nvrtc_key(&src, "sm_90", id, 13010, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "the driver");
    const char *const fast[] = {"-use_fast_math"};
    tj_cuda_source other = src;
    other.options = fast;
    other.noptions = 1;
    tj_nvrtc_key(&other, "sm_90", id, 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "an option");
    const char *const defines[] = {"BIAS=1"};
    other = src;
    other.defines = defines;
    tj_nvrtc_key(&other, "sm_90", id, 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "a define");
    const tj_cuda_header headers[] = {{"scale_config.h", "#pragma once\n#define OFFSET 1\n"}};
    other = src;
    other.headers = headers;
    tj_nvrtc_key(&other, "sm_90", id, 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "a header's text");
    other = src;
    other.kernel = "scale<float, 256>";
    tj_nvrtc_key(&other, "sm_90", id, 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "the template arguments");
    other = src;
    other.len--;
    tj_nvrtc_key(&other, "sm_90", id, 13000, &k);
    cr_assert(!tj_cache_key_equal(&base, &k), "the source");
}

Test(nvrtc, missing_library_says_why)
{
    char *saved = getenv("TILEJIT_NVRTC") ? strdup(getenv("TILEJIT_NVRTC")) : NULL;
    setenv("TILEJIT_NVRTC", "/nonexistent/libnvrtc.so.13", 1);
    tj_rt_error err = {{0}};
    cr_assert_null(tj_nvrtc_open(&err));
    cr_assert_str_eq(err.msg, "no NVRTC: $TILEJIT_NVRTC (/nonexistent/libnvrtc.so.13) is not a file");
    if (saved)
        setenv("TILEJIT_NVRTC", saved, 1);
    else
        unsetenv("TILEJIT_NVRTC");
    free(saved);
}

/* The binding entries refuse unusable arguments with their reasons. */
Test(nvrtc, dlpack_entries_refuse_null_arguments)
{
    tj_rt_error err = {{0}};
    tj_arg args[1];
    cr_assert_neq(tj_cuda_kernel_launch_dlpack(NULL, NULL, args, NULL, 1, &err), 0);
    cr_assert(strstr(err.msg, "tj_cuda_kernel_launch_dlpack: NULL kernel"), "%s", err.msg);
    tj_tensor t;
    int32_t type, id;
    cr_assert_str_eq(tj_tensor_from_dlpack(NULL, &t, &type, &id), "NULL argument");
    /* A DLTensor of an unknown dtype (code 2 = float, 8 bits): "dtype", with its device. */
    struct {
        void *data;
        int32_t device_type, device_id, ndim;
        uint8_t code, bits;
        uint16_t lanes;
        int64_t *shape, *strides;
        uint64_t byte_offset;
    } dl = {NULL, 2, 1, 1, 2, 8, 1, (int64_t[]){4}, NULL, 0};
    cr_assert_str_eq(tj_tensor_from_dlpack(&dl, &t, &type, &id), "dtype");
    cr_assert(type == 2 && id == 1);
    dl.bits = 32;
    cr_assert_null(tj_tensor_from_dlpack(&dl, &t, &type, &id));
    cr_assert(t.dtype == TJ_DT_F32 && t.rank == 1 && t.shape[0] == 4 && t.strides[0] == 1);
}
