/* The CUDA runtime without a GPU: opening fails with a reason (or works
 * where there is a GPU), nvJitLink turns PTX into cubins, bad PTX reports
 * the compiler's log, and the kernel ABI's exact byte layout. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/cuda.h"
#include "tilejit/tilejit.h"

#include "../gpu/ptx_kernels.h"

/* ---- devices ----------------------------------------------------------- */

Test(cuda, open_fails_cleanly_or_works)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu) {
        cr_log_info("no GPU here: %s", err.msg);
        cr_assert(!strncmp(err.msg, "no CUDA driver: ", 16) ||
                      !strncmp(err.msg, "no CUDA device", 14),
                  "unexpected reason: %s", err.msg);
        return;
    }
    cr_assert_geq(tj_cuda_device_count(cu), 1);
    tj_cuda_props p;
    cr_assert_eq(tj_cuda_device_props(cu, 0, &p, &err), 0, "%s", err.msg);
    cr_assert_geq(p.cc_major, 5);
    cr_assert_gt(p.sm_count, 0);
    cr_assert_neq(tj_cuda_device_props(cu, tj_cuda_device_count(cu), &p, &err), 0);
    tj_cuda_close(cu);
}

Test(cuda, open_bad_ordinal_fails)
{
    tj_rt_error err = {{0}};
    cr_assert_null(tj_cuda_open(-1, &err));
    cr_assert_neq(err.msg[0], '\0');
    cr_assert_null(tj_cuda_open(1 << 20, NULL)); /* err may be NULL */
}

Test(cuda, describe_lists_devices_or_says_why)
{
    char buf[2048];
    int n = tj_cuda_describe(buf, sizeof buf);
    cr_assert_neq(buf[0], '\0');
    if (n == 0)
        cr_assert(!strncmp(buf, "cuda: not available: ", 21), "%s", buf);
    else
        cr_assert(!strncmp(buf, "cuda:0  ", 8), "%s", buf);
    char tiny[8];
    tj_cuda_describe(tiny, sizeof tiny); /* truncates, stays terminated */
    cr_assert_lt(strlen(tiny), sizeof tiny);
}

/* ---- nvJitLink --------------------------------------------------------- */

static tj_nvjitlink *open_nvjitlink(void)
{
    tj_rt_error err = {{0}};
    tj_nvjitlink *l = tj_nvjitlink_open(&err);
    if (!l)
        cr_skip_test("%s", err.msg);
    return l;
}

static void compile_ok(tj_nvjitlink *l, const char *ptx, const char *arch)
{
    tj_rt_error err = {{0}};
    void *cubin = NULL;
    size_t size = 0;
    char *info = NULL;
    const char *opts[] = {"-verbose"};
    int rc = tj_nvjitlink_compile(l, ptx, strlen(ptx), arch, opts, 1, &cubin, &size, &info, &err);
    cr_assert_eq(rc, 0, "%s: %s", arch, err.msg);
    cr_assert_gt(size, 64);
    cr_assert(!memcmp(cubin, "\x7f" "ELF", 4), "%s: not an ELF image", arch);
    cr_assert_not_null(info, "%s: -verbose gives an info log", arch);
    cr_assert(strstr(info, "registers"), "%s: %s", arch, info);
    free(info);
    free(cubin);
}

Test(nvjitlink, compiles_vadd_for_sm80_and_sm90a)
{
    tj_nvjitlink *l = open_nvjitlink();
    unsigned major = 0, minor = 0;
    cr_assert_eq(tj_nvjitlink_version(l, &major, &minor), 0);
    cr_assert_geq(major, 12);
    compile_ok(l, ptx_vadd, "sm_80");
    compile_ok(l, ptx_vadd, "sm_90a");
    compile_ok(l, ptx_abi_probe, "sm_90a");
    tj_nvjitlink_close(l);
}

Test(nvjitlink, invalid_ptx_reports_the_log)
{
    tj_nvjitlink *l = open_nvjitlink();
    tj_rt_error err = {{0}};
    void *cubin = (void *)1;
    size_t size = 1;
    int rc = tj_nvjitlink_compile(l, ptx_invalid, strlen(ptx_invalid), "sm_80", NULL, 0, &cubin,
                                  &size, NULL, &err);
    cr_assert_neq(rc, 0);
    cr_assert_null(cubin);
    cr_assert_eq(size, 0);
    cr_log_info("%s", err.msg);
    cr_assert(strstr(err.msg, "(compiling PTX for sm_80): NVJITLINK_ERROR_PTX_COMPILE"), "%s",
              err.msg);
    cr_assert(strstr(err.msg, "frobnicate"), "the JIT log is missing: %s", err.msg);
    tj_nvjitlink_close(l);
}

Test(nvjitlink, bad_arch_and_options_are_errors)
{
    tj_nvjitlink *l = open_nvjitlink();
    tj_rt_error err = {{0}};
    void *cubin;
    size_t size;
    /* nvJitLink itself exits the process on "sm_7": caught before it */
    const char *bad_arches[] = {"sm80", "sm_",         "sm_7", "sm_90ab",
                                "x",    "-arch=sm_80", "",     "compute_80"};
    for (size_t i = 0; i < sizeof bad_arches / sizeof bad_arches[0]; i++) {
        cr_assert_neq(tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), bad_arches[i], NULL, 0,
                                           &cubin, &size, NULL, &err), 0, "%s", bad_arches[i]);
        cr_assert(strstr(err.msg, "invalid arch"), "%s", err.msg);
    }
    /* well-formed archs nvJitLink does not know */
    cr_assert_neq(tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), "sm_99", NULL, 0, &cubin,
                                       &size, NULL, &err), 0);
    cr_assert(strstr(err.msg, "NVJITLINK_ERROR_UNRECOGNIZED_ARCH"), "%s", err.msg);
    cr_assert_neq(tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), "sm_80a", NULL, 0, &cubin,
                                       &size, NULL, &err), 0);
    const char *arch_opt[] = {"-arch=sm_7"};
    cr_assert_neq(tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), "sm_80", arch_opt, 1, &cubin,
                                       &size, NULL, &err), 0);
    const char *opts[] = {"--no-such-option"};
    cr_assert_neq(tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), "sm_80", opts, 1, &cubin,
                                       &size, NULL, &err), 0);
    cr_assert(strstr(err.msg, "nvJitLinkCreate"), "%s", err.msg);
    cr_assert_neq(tj_nvjitlink_compile(l, ptx_vadd, strlen(ptx_vadd), "sm_80", opts, 99, &cubin,
                                       &size, NULL, &err), 0);
    cr_assert_neq(tj_nvjitlink_compile(l, "", 0, "sm_80", NULL, 0, &cubin, &size, NULL, &err), 0);
    tj_nvjitlink_close(l);
}

/* ---- the kernel ABI ---------------------------------------------------- */

static tj_kernel *make_kernel(tj_ctx *c, const char *name, const tj_param *params, uint32_t n)
{
    tj_kernel *k = tj_kernel_new(c, name);
    k->params = tj_alloc(c, n * sizeof *params);
    memcpy(k->params, params, n * sizeof *params);
    k->nparams = n;
    return k;
}

static tj_arg tensor_arg(void *data, tj_dtype dt, int rank, const int64_t *shape,
                         const int64_t *strides)
{
    tj_arg a = {.is_tensor = 1, .tensor = {.data = data, .dtype = dt, .rank = rank}};
    memcpy(a.tensor.shape, shape, (size_t)rank * sizeof *shape);
    memcpy(a.tensor.strides, strides, (size_t)rank * sizeof *strides);
    return a;
}

static tj_arg int_arg(int64_t v) { return (tj_arg){.scalar.i = v}; }
static tj_arg float_arg(double v) { return (tj_arg){.scalar.f = v}; }

/* The parameters of ptx_abi_probe. */
static const tj_param abi_probe_params[] = {
    {"O", TJ_DT_U64, 1, {"N"}, {-1}},
    {"T", TJ_DT_F32, 3, {"A", "B", "C"}, {-1, -1, -1}},
    {"flag", TJ_DT_BOOL, 0, {0}, {0}},
    {"h", TJ_DT_F16, 0, {0}, {0}},
    {"x", TJ_DT_F64, 0, {0}, {0}},
    {"k", TJ_DT_I32, 0, {0}, {0}},
    {"c", TJ_DT_I8, 0, {0}, {0}},
};

static void abi_probe_args(tj_arg args[7])
{
    args[0] = tensor_arg((void *)0x1000, TJ_DT_U64, 1, (int64_t[]){12}, (int64_t[]){1});
    args[1] = tensor_arg((void *)0x7f0012345678, TJ_DT_F32, 3, (int64_t[]){2, 3, 5},
                         (int64_t[]){-15, 5, 1});
    args[2] = int_arg(1);
    args[3] = float_arg(1.5);
    args[4] = float_arg(-2.25);
    args[5] = int_arg(-7);
    args[6] = int_arg(-3);
}

Test(abi, tensor_and_scalar_layout_is_exact)
{
    static const unsigned char expected[93] = {
        0x00, 0x10, 0, 0, 0, 0, 0, 0,                   /* O: pointer 0x1000 */
        12, 0, 0, 0, 0, 0, 0, 0,                        /* O: size 12, padding */
        1, 0, 0, 0, 0, 0, 0, 0,                         /* O: stride 1 */
        0x78, 0x56, 0x34, 0x12, 0x00, 0x7f, 0, 0,       /* T: pointer */
        2, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, /* T: sizes, padding */
        0xf1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* T: strides -15, */
        5, 0, 0, 0, 0, 0, 0, 0,                         /* 5, */
        1, 0, 0, 0, 0, 0, 0, 0,                         /* 1 */
        1, 0,                                           /* flag .u8, padding */
        0x00, 0x3e, 0, 0, 0, 0,                         /* h = 1.5 as f16, padding */
        0, 0, 0, 0, 0, 0, 0x02, 0xc0,                   /* x = -2.25 */
        0xf9, 0xff, 0xff, 0xff,                         /* k = -7 */
        0xfd,                                           /* c = -3 */
    };
    static const uint32_t offsets[] = {0, 8, 16, 24, 32, 36, 40, 48, 56, 64, 72, 74, 80, 88, 92};
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = make_kernel(c, "abi_probe", abi_probe_params, 7);
    tj_arg args[7];
    abi_probe_args(args);
    tj_cuda_params p;
    memset(&p, 0xcc, sizeof p); /* padding must be written, not inherited */
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_cuda_marshal(k, args, 7, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(p.size, sizeof expected);
    cr_assert_eq(p.count, 15);
    for (uint32_t i = 0; i < sizeof expected; i++)
        cr_assert_eq(p.data[i], expected[i], "byte %u: %#x, expected %#x", i, p.data[i],
                     expected[i]);
    for (uint32_t i = 0; i < p.count; i++)
        cr_assert_eq((unsigned char *)p.ptrs[i] - p.data, offsets[i], "parameter %u", i);
    tj_ctx_free(c);
}

Test(abi, every_scalar_dtype_has_its_size_and_alignment)
{
    static const tj_param params[] = {
        {"a", TJ_DT_BF16, 0, {0}, {0}}, {"b", TJ_DT_F32, 0, {0}, {0}},
        {"c", TJ_DT_I64, 0, {0}, {0}},  {"d", TJ_DT_U16, 0, {0}, {0}},
        {"e", TJ_DT_BOOL, 0, {0}, {0}}, {"f", TJ_DT_U32, 0, {0}, {0}},
        {"g", TJ_DT_U8, 0, {0}, {0}},   {"h", TJ_DT_I16, 0, {0}, {0}},
        {"i", TJ_DT_U64, 0, {0}, {0}},
    };
    static const unsigned char expected[] = {
        0x80, 0x3f, 0, 0,                               /* a = 1.0 as bf16, padding */
        0x00, 0x00, 0x40, 0xc0,                         /* b = -3.0f */
        0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* c = -2 */
        0x34, 0x12,                                     /* d = 0x1234 */
        0,                                              /* e = false (from 0) */
        0,                                              /* padding */
        0xef, 0xbe, 0xad, 0xde,                         /* f = 0xdeadbeef */
        0xff,                                           /* g = 255 */
        0,                                              /* padding */
        0x00, 0x80,                                     /* h = -32768 */
        0, 0, 0, 0,                                     /* padding */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* i = 2^64 - 1 (from -1) */
    };
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = make_kernel(c, "scalars", params, 9);
    tj_arg args[9] = {float_arg(1.0),  float_arg(-3.0), int_arg(-2),
                      int_arg(0x1234), int_arg(0),      int_arg(0xdeadbeef),
                      int_arg(255),    int_arg(-32768), int_arg(-1)};
    tj_cuda_params p;
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_cuda_marshal(k, args, 9, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(p.size, sizeof expected);
    cr_assert_eq(p.count, 9);
    cr_assert_arr_eq(p.data, expected, sizeof expected);
    tj_ctx_free(c);
}

Test(abi, vadd_matches_the_hand_written_ptx)
{
    static const tj_param params[] = {
        {"X", TJ_DT_F32, 1, {"N"}, {-1}},
        {"Y", TJ_DT_F32, 1, {"N"}, {-1}},
        {"Z", TJ_DT_F32, 1, {"N"}, {-1}},
    };
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = make_kernel(c, "vadd", params, 3);
    float x[4], y[8], z[4];
    tj_arg args[3] = {
        tensor_arg(x, TJ_DT_F32, 1, (int64_t[]){4}, (int64_t[]){1}),
        tensor_arg(y, TJ_DT_F32, 1, (int64_t[]){4}, (int64_t[]){2}),
        tensor_arg(z, TJ_DT_F32, 1, (int64_t[]){4}, (int64_t[]){1}),
    };
    tj_cuda_params p;
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_cuda_marshal(k, args, 3, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(p.size, 72); /* ptxas: 424 bytes cmem[0] = 352 + 72 */
    cr_assert_eq(p.count, 9);
    void *py;
    int64_t stride;
    memcpy(&py, p.data + 24, sizeof py);
    memcpy(&stride, p.data + 40, 8);
    cr_assert_eq(py, (void *)y);
    cr_assert_eq(stride, 2);
    tj_ctx_free(c);
}

static void marshal_fails(const tj_kernel *k, const tj_arg *args, uint32_t n, const char *want)
{
    tj_cuda_params p;
    tj_rt_error err = {{0}};
    cr_assert_neq(tj_cuda_marshal(k, args, n, &p, &err), 0, "expected: %s", want);
    cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

Test(abi, mismatched_arguments_are_named_errors)
{
    tj_ctx *c = tj_ctx_new();
    tj_kernel *k = make_kernel(c, "abi_probe", abi_probe_params, 7);
    tj_arg args[7];
    abi_probe_args(args);
    marshal_fails(k, args, 6, "kernel 'abi_probe' takes 7 arguments, got 6");
    tj_arg bad[7];
    memcpy(bad, args, sizeof bad);
    bad[1] = int_arg(3);
    marshal_fails(k, bad, 7, "parameter 'T': expected a tensor, got a scalar");
    memcpy(bad, args, sizeof bad);
    bad[5] = args[0];
    marshal_fails(k, bad, 7, "parameter 'k': expected a scalar, got a tensor");
    memcpy(bad, args, sizeof bad);
    bad[1].tensor.dtype = TJ_DT_F16;
    marshal_fails(k, bad, 7, "parameter 'T': expected a f32 tensor of rank 3, got f16 of rank 3");
    memcpy(bad, args, sizeof bad);
    bad[1].tensor.rank = 2;
    marshal_fails(k, bad, 7, "expected a f32 tensor of rank 3, got f32 of rank 2");
    memcpy(bad, args, sizeof bad);
    bad[1].tensor.shape[2] = (int64_t)1 << 31;
    marshal_fails(k, bad, 7, "size 2147483648 of axis 2 does not fit .s32");
    bad[1].tensor.shape[2] = -1;
    marshal_fails(k, bad, 7, "size -1 of axis 2");
    tj_ctx_free(c);
}

Test(abi, too_many_parameters_is_an_error)
{
    enum { N = 64 }; /* 64 rank-6 tensors: 832 PTX parameters, 5120 bytes */
    tj_ctx *c = tj_ctx_new();
    tj_param params[N];
    tj_arg args[N];
    int64_t shape[6] = {1, 1, 1, 1, 1, 1};
    for (int i = 0; i < N; i++) {
        params[i] = (tj_param){.name = "T", .dtype = TJ_DT_F32, .rank = 6};
        args[i] = tensor_arg(NULL, TJ_DT_F32, 6, shape, shape);
    }
    tj_kernel *k = make_kernel(c, "big", params, N);
    marshal_fails(k, args, N, "parameter 'T': the parameters need more than 4096 bytes");
    tj_ctx_free(c);
}
