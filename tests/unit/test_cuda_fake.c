/* The CUDA runtime's driver paths against a fake driver table: error
 * messages, JIT log capture, context push/pop around every call (per
 * thread, as the driver keeps it), device listing, launches and their
 * parameters. What a real GPU does is tests/gpu/smoke.c's. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "runtime/cuda_internal.h"
#include "tilejit/tilejit.h"

#define PRIMARY ((CUcontext)(uintptr_t)0xc0)
#define OTHER ((CUcontext)(uintptr_t)0xd0)

/* The fake driver's state. Criterion runs each test in its own process. */
static struct {
    CUresult init_result;
    int ndevices;
    int retained, pushes, modules;
    unsigned launches;
    unsigned grid[3], block[3], shared;
    void *stream;
    int64_t param_stride_y; /* what the launch saw through kernelParams[5] */
    const void *extra_buffer;
    size_t extra_size;
    int map_dtype, map_swizzle; /* the last cuTensorMapEncodeTiled */
    uint32_t map_rank;
    uint64_t map_dims[3], map_strides[2];
    uint32_t map_box[3], map_steps[3];
} fake;

/* The driver's context stack is per thread. */
static _Thread_local CUcontext ctx_stack[8];
static _Thread_local int ctx_depth;
static _Thread_local int launched_in_ctx;

static CUresult fake_error_name(CUresult r, const char **s)
{
    switch (r) {
    case 0: *s = "CUDA_SUCCESS"; return 0;
    case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
    case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
    default: *s = NULL; return 1;
    }
}

static CUresult fake_error_string(CUresult r, const char **s)
{
    switch (r) {
    case 0: *s = "no error"; return 0;
    case 2: *s = "out of memory"; return 0;
    case 100: *s = "no CUDA-capable device is detected"; return 0;
    case 218: *s = "a PTX JIT compilation failed"; return 0;
    case 500: *s = "named symbol not found"; return 0;
    default: *s = NULL; return 1;
    }
}

static CUresult fake_init(unsigned flags) { return flags ? 1 : fake.init_result; }
static CUresult fake_driver_version(int *v) { *v = 13000; return 0; }
static CUresult fake_count(int *n) { *n = fake.ndevices; return 0; }
static CUresult fake_get(CUdevice *d, int i) { *d = i; return i < fake.ndevices ? 0 : 101; }

static CUresult fake_name(char *buf, int n, CUdevice d)
{
    snprintf(buf, (size_t)n, "Fake GPU %d", d);
    return 0;
}

static CUresult fake_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 * 1024 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    default: *v = 1000 + a;
    }
    return 0;
}

static CUresult fake_total_mem(size_t *b, CUdevice d)
{
    (void)d;
    *b = (size_t)141 << 30;
    return 0;
}

static CUresult fake_retain(CUcontext *c, CUdevice d)
{
    (void)d;
    *c = PRIMARY;
    fake.retained++;
    return 0;
}

static CUresult fake_release(CUdevice d)
{
    (void)d;
    fake.retained--;
    return 0;
}

static CUcontext current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

/* After a call, a thread that had no current context keeps ours (as the
 * CUDA runtime does); nothing else is left behind. */
static int left_clean(void) { return ctx_depth == 0 || (ctx_depth == 1 && ctx_stack[0] == PRIMARY); }

static CUresult fake_get_current(CUcontext *c)
{
    *c = current();
    return 0;
}

static CUresult fake_push(CUcontext c)
{
    if (ctx_depth == 8)
        return 1;
    ctx_stack[ctx_depth++] = c;
    __atomic_add_fetch(&fake.pushes, 1, __ATOMIC_RELAXED);
    return 0;
}

/* cuCtxSetCurrent replaces the top of the thread's stack (NULL empties it). */
static CUresult fake_set_current(CUcontext c)
{
    if (!c)
        ctx_depth = ctx_depth ? ctx_depth - 1 : 0;
    else if (ctx_depth)
        ctx_stack[ctx_depth - 1] = c;
    else
        ctx_stack[ctx_depth++] = c;
    return 0;
}

static CUresult fake_pop(CUcontext *c)
{
    if (!ctx_depth)
        return 1;
    *c = ctx_stack[--ctx_depth];
    return 0;
}

static CUresult fake_sync(void) { return current() == PRIMARY ? 0 : 201; }

/* PTX holding "frobnicate" fails with a JIT log, like the real driver. */
static CUresult fake_load(CUmodule *m, const void *image, unsigned n, CUjit_option *opts,
                          void **vals)
{
    if (current() != PRIMARY)
        return 201;
    if (strstr(image, "frobnicate")) {
        char *log = NULL;
        size_t cap = 0;
        for (unsigned i = 0; i < n; i++) {
            if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
                log = vals[i];
            if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
                cap = (uintptr_t)vals[i];
        }
        if (log && cap)
            snprintf(log, cap, "ptxas application ptx input, line 6; error   : Not a name of any "
                               "known instruction: 'frobnicate'\n");
        return 218;
    }
    *m = (CUmodule)(uintptr_t)0x55;
    fake.modules++;
    return 0;
}

static CUresult fake_unload(CUmodule m)
{
    (void)m;
    fake.modules--;
    return current() == PRIMARY ? 0 : 201;
}

static CUresult fake_get_function(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    *f = (CUfunction)(uintptr_t)0x77;
    return strcmp(name, "vadd") ? 500 : 0;
}

static CUresult fake_func_get(int *v, CUfunction_attribute a, CUfunction f)
{
    (void)f;
    *v = 100 + a;
    return 0;
}

static CUresult fake_func_set(CUfunction f, CUfunction_attribute a, int v)
{
    (void)f;
    return a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && v <= 227 * 1024 ? 0 : 1;
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                            void **extra)
{
    (void)f;
    launched_in_ctx = current() == PRIMARY;
    __atomic_add_fetch(&fake.launches, 1, __ATOMIC_RELAXED);
    if (gx == 0)
        return 1;
    unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    memcpy(fake.grid, g, sizeof g);
    memcpy(fake.block, b, sizeof b);
    fake.shared = shared;
    fake.stream = s;
    if (params)
        memcpy(&fake.param_stride_y, params[5], 8);
    if (extra) {
        cr_assert_eq(extra[0], CU_LAUNCH_PARAM_BUFFER_POINTER);
        cr_assert_eq(extra[2], CU_LAUNCH_PARAM_BUFFER_SIZE);
        cr_assert_eq(extra[4], CU_LAUNCH_PARAM_END);
        fake.extra_buffer = extra[1];
        fake.extra_size = *(size_t *)extra[3];
    }
    return 0;
}

/* A map whose first 8 bytes are its inner dim, as the launch sees them */
static CUresult fake_encode(tj_cu_tensor_map *m, int dt, uint32_t rank, void *addr, const uint64_t *dims,
                            const uint64_t *strides, const uint32_t *box, const uint32_t *es, int il, int sw, int l2,
                            int oob)
{
    (void)addr, (void)il, (void)l2, (void)oob;
    if (rank < 2 || rank > 3)
        return 1;
    fake.map_dtype = dt;
    fake.map_swizzle = sw;
    fake.map_rank = rank;
    memcpy(fake.map_dims, dims, sizeof *dims * rank);
    memcpy(fake.map_strides, strides, sizeof *strides * (rank - 1));
    memcpy(fake.map_box, box, sizeof *box * rank);
    memcpy(fake.map_steps, es, sizeof *es * rank);
    memset(m, 0, sizeof *m);
    m->opaque[0] = dims[0];
    return 0;
}

static CUresult fake_alloc(CUdeviceptr *p, size_t n)
{
    *p = 0x10000;
    return n > ((size_t)1 << 40) ? 2 : 0;
}

static CUresult fake_ok_ptr(CUdeviceptr p) { (void)p; return current() == PRIMARY ? 0 : 201; }
static CUresult fake_unknown_error(CUstream s) { (void)s; return 999; }

static tj_cu_api fake_api(void)
{
    tj_cu_api a;
    memset(&a, 0, sizeof a);
    a.GetErrorName = fake_error_name;
    a.GetErrorString = fake_error_string;
    a.Init = fake_init;
    a.DriverGetVersion = fake_driver_version;
    a.DeviceGetCount = fake_count;
    a.DeviceGet = fake_get;
    a.DeviceGetName = fake_name;
    a.DeviceGetAttribute = fake_attribute;
    a.DeviceTotalMem = fake_total_mem;
    a.DevicePrimaryCtxRetain = fake_retain;
    a.DevicePrimaryCtxRelease = fake_release;
    a.CtxGetCurrent = fake_get_current;
    a.CtxPushCurrent = fake_push;
    a.CtxSetCurrent = fake_set_current;
    a.CtxPopCurrent = fake_pop;
    a.CtxSynchronize = fake_sync;
    a.ModuleLoadDataEx = fake_load;
    a.ModuleUnload = fake_unload;
    a.ModuleGetFunction = fake_get_function;
    a.FuncGetAttribute = fake_func_get;
    a.FuncSetAttribute = fake_func_set;
    a.LaunchKernel = fake_launch;
    a.TensorMapEncodeTiled = fake_encode;
    a.MemAlloc = fake_alloc;
    a.MemFree = fake_ok_ptr;
    a.StreamSynchronize = fake_unknown_error;
    return a;
}

static tj_cuda *open_fake(int ndevices)
{
    fake.ndevices = ndevices;
    tj_cu_api api = fake_api();
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open_api(&api, NULL, 0, &err);
    cr_assert_not_null(cu, "%s", err.msg);
    return cu;
}

/* ---- opening and devices ------------------------------------------------ */

Test(cuda_fake, no_device_says_so)
{
    tj_cu_api api = fake_api();
    tj_rt_error err = {{0}};
    fake.init_result = 100;
    cr_assert_null(tj_cuda_open_api(&api, NULL, 0, &err));
    cr_assert_str_eq(err.msg, "no CUDA device: cuInit (initializing the CUDA driver): "
                              "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected");
    fake.init_result = 0;
    fake.ndevices = 0;
    cr_assert_null(tj_cuda_open_api(&api, NULL, 0, &err));
    cr_assert_str_eq(err.msg, "no CUDA device: the driver reports none");
    fake.ndevices = 2;
    cr_assert_null(tj_cuda_open_api(&api, NULL, 2, &err));
    cr_assert_str_eq(err.msg, "no CUDA device 2: there are 2 (0 to 1)");
    cr_assert_eq(fake.retained, 0);
}

Test(cuda_fake, open_retains_and_close_releases_the_primary_context)
{
    tj_cuda *cu = open_fake(2);
    cr_assert_eq(fake.retained, 1);
    cr_assert_eq(tj_cuda_device_count(cu), 2);
    cr_assert_eq(tj_cuda_ordinal(cu), 0);
    tj_cuda_close(cu);
    cr_assert_eq(fake.retained, 0);
}

Test(cuda_fake, props_and_device_list)
{
    tj_cuda *cu = open_fake(2);
    tj_cuda_props p;
    tj_rt_error err = {{0}};
    cr_assert_eq(tj_cuda_device_props(cu, 1, &p, &err), 0, "%s", err.msg);
    cr_assert_str_eq(p.name, "Fake GPU 1");
    cr_assert_eq(p.ordinal, 1);
    cr_assert_eq(p.cc_major, 9);
    cr_assert_eq(p.sm_count, 132);
    cr_assert_eq(p.shared_per_block_optin, 227 * 1024);
    cr_assert_eq(p.max_grid[1], 1000 + CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    cr_assert_eq(p.regs_per_sm, 1000 + CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    cr_assert_eq(p.total_mem, (size_t)141 << 30);
    cr_assert_eq(p.driver_version, 13000);
    cr_assert_neq(tj_cuda_device_props(cu, 2, &p, &err), 0);
    cr_assert_neq(tj_cuda_device_props(cu, -1, &p, &err), 0);

    char buf[1024];
    cr_assert_eq(tj_cu_list_devices(&cu->api, buf, sizeof buf, &err), 2);
    cr_assert_str_eq(buf, "cuda:0  Fake GPU 0  sm_90  132 SMs  141.0 GiB  48 KiB smem/block "
                          "(opt-in 227 KiB)  50 MiB L2  1980 MHz  driver 13.0\n"
                          "cuda:1  Fake GPU 1  sm_90  132 SMs  141.0 GiB  48 KiB smem/block "
                          "(opt-in 227 KiB)  50 MiB L2  1980 MHz  driver 13.0\n");
    char small[20];
    cr_assert_eq(tj_cu_list_devices(&cu->api, small, sizeof small, &err), 2);
    cr_assert_str_eq(small, "cuda:0  Fake GPU 0 ");
    tj_cuda_close(cu);
}

/* ---- modules ------------------------------------------------------------ */

Test(cuda_fake, invalid_ptx_carries_the_jit_log)
{
    tj_cuda *cu = open_fake(1);
    tj_rt_error err = {{0}};
    cr_assert_null(tj_cuda_module_load_ptx(cu, ".version 8.0\nfrobnicate\n", "softmax", &err));
    cr_assert_str_eq(err.msg, "cuModuleLoadDataEx (loading PTX for kernel 'softmax'): "
                              "CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed:\n"
                              "ptxas application ptx input, line 6; error   : Not a name of any "
                              "known instruction: 'frobnicate'");
    cr_assert(left_clean(), "nothing but our context is left current");
    cr_assert_null(tj_cuda_module_load_ptx(cu, NULL, NULL, &err));
    cr_assert_str_eq(err.msg, "loading PTX for kernel '(unnamed)': no PTX text");
    tj_cuda_close(cu);
}

Test(cuda_fake, modules_functions_and_attributes)
{
    tj_cuda *cu = open_fake(1);
    tj_rt_error err = {{0}};
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ".version 8.0\n", "vadd", &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_assert_eq(fake.modules, 1);
    tj_cuda_function f;
    cr_assert_neq(tj_cuda_module_function(m, "nope", &f, &err), 0);
    cr_assert_str_eq(err.msg, "cuModuleGetFunction (looking up kernel 'nope'): "
                              "CUDA_ERROR_NOT_FOUND: named symbol not found");
    cr_assert_eq(tj_cuda_module_function(m, "vadd", &f, &err), 0, "%s", err.msg);
    cr_assert_str_eq(f.name, "vadd");
    tj_cuda_func_attrs a;
    cr_assert_eq(tj_cuda_function_attrs(&f, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(a.num_regs, 100 + CU_FUNC_ATTRIBUTE_NUM_REGS);
    cr_assert_eq(a.local_bytes, 100 + CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    cr_assert_eq(a.static_shared_bytes, 100 + CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    cr_assert_eq(a.binary_version, 100 + CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    cr_assert_eq(tj_cuda_function_set_max_dynamic_shared(&f, 200 * 1024, &err), 0);
    cr_assert_neq(tj_cuda_function_set_max_dynamic_shared(&f, 300 * 1024, &err), 0);
    cr_assert(strstr(err.msg, "allowing 307200 bytes of dynamic shared memory for kernel 'vadd'"),
              "%s", err.msg);
    tj_cuda_module_unload(m);
    cr_assert_eq(fake.modules, 0);
    cr_assert(left_clean());
    tj_cuda_close(cu);
}

Test(cuda_fake, cubin_images_are_checked_before_the_driver)
{
    tj_cuda *cu = open_fake(1);
    tj_rt_error err = {{0}};
    static const char garbage[128] = "not an ELF";
    cr_assert_null(tj_cuda_module_load_cubin(cu, garbage, sizeof garbage, "k", &err));
    cr_assert_str_eq(err.msg,
                     "loading cubin for kernel 'k': not an ELF or fatbin image (128 bytes)");
    cr_assert_null(tj_cuda_module_load_cubin(cu, "\x7f" "ELF", 4, "k", &err));
    cr_assert_eq(fake.modules, 0);
    unsigned char elf[64] = {0x7f, 'E', 'L', 'F'};
    tj_cuda_module *m = tj_cuda_module_load_cubin(cu, elf, sizeof elf, "k", &err);
    cr_assert_not_null(m, "%s", err.msg);
    tj_cuda_module_unload(m);
    tj_cuda_close(cu);
}

/* ---- launches ----------------------------------------------------------- */

static tj_kernel *vadd_kernel(tj_ctx *c)
{
    tj_kernel *k = tj_kernel_new(c, "vadd");
    k->nparams = 3;
    k->params = tj_alloc(c, 3 * sizeof *k->params);
    const char *names[] = {"X", "Y", "Z"};
    for (int i = 0; i < 3; i++)
        k->params[i] = (tj_param){.name = names[i], .dtype = TJ_DT_F32, .rank = 1};
    return k;
}

static tj_arg vec(void *data, int64_t n, int64_t stride)
{
    return (tj_arg){.is_tensor = 1,
                    .tensor = {.data = data, .dtype = TJ_DT_F32, .rank = 1, .shape = {n},
                               .strides = {stride}}};
}

/* What the launch tests share: the stand-in driver with one device, a
 * module with the function "vadd", and a context for kernels. */
typedef struct launch_fixture {
    tj_cuda *cu;
    tj_cuda_module *m;
    tj_cuda_function f;
    tj_ctx *c;
} launch_fixture;

static launch_fixture launch_setup(void)
{
    launch_fixture x = {.cu = open_fake(1)};
    tj_rt_error err = {{0}};
    x.m = tj_cuda_module_load_ptx(x.cu, ".version 8.0\n", "vadd", &err);
    cr_assert_eq(tj_cuda_module_function(x.m, "vadd", &x.f, &err), 0, "%s", err.msg);
    x.c = tj_ctx_new();
    return x;
}

static void launch_teardown(launch_fixture *x)
{
    tj_ctx_free(x->c);
    tj_cuda_module_unload(x->m);
    tj_cuda_close(x->cu);
}

Test(cuda_fake, launch_marshals_and_makes_the_context_current)
{
    launch_fixture x = launch_setup();
    tj_cuda_function f = x.f;
    tj_ctx *c = x.c;
    tj_rt_error err = {{0}};
    tj_kernel *k = vadd_kernel(c);
    tj_arg args[3] = {vec((void *)0x1000, 100, 1), vec((void *)0x2000, 100, 3),
                      vec((void *)0x3000, 100, 1)};
    tj_cuda_launch_dims d = {{4, 1, 1}, {128, 1, 1}, 512, (void *)0x5};
    cr_assert_eq(tj_cuda_launch_kernel(&f, &d, k, args, 3, &err), 0, "%s", err.msg);
    cr_assert(launched_in_ctx);
    cr_assert(left_clean());
    cr_assert_eq(fake.param_stride_y, 3);
    cr_assert_eq(fake.grid[0], 4);
    cr_assert_eq(fake.block[0], 128);
    cr_assert_eq(fake.shared, 512);
    cr_assert_eq(fake.stream, (void *)0x5);

    tj_cuda_params p;
    cr_assert_eq(tj_cuda_marshal(k, args, 3, &p, &err), 0);
    cr_assert_eq(tj_cuda_launch_packed(&f, &d, p.data, p.size, &err), 0, "%s", err.msg);
    cr_assert_eq(fake.extra_buffer, p.data);
    cr_assert_eq(fake.extra_size, 72);

    d.grid[0] = 0;
    cr_assert_neq(tj_cuda_launch(&f, &d, p.ptrs, &err), 0);
    cr_assert(strstr(err.msg, "cuLaunchKernel (launching 'vadd' on grid (0, 1, 1), block (128, 1, "
                              "1), 512 bytes of dynamic shared memory): CUresult 1"),
              "%s", err.msg);
    cr_assert_neq(tj_cuda_launch_kernel(&f, &d, k, args, 2, &err), 0);
    cr_assert(strstr(err.msg, "takes 3 arguments"), "%s", err.msg);
    launch_teardown(&x);
}

/* A kernel reading a TMA tensor map (docs/runtime.md, "Tensor maps"): the
 * map is encoded from the tensor argument (dims inner first, the row
 * stride in bytes, the box, bf16, 128-byte swizzle) and passed after the
 * parameters; a tensor no map can describe is refused, naming it. A map of
 * paired 8-row blocks is 3-D: (column, row of a block, block), the blocks
 * 8 rows apart, a box of 2 x pair blocks at element stride pair; rows
 * that are no whole number of blocks are refused. */
Test(cuda_fake, launch_encodes_tensor_maps)
{
    launch_fixture x = launch_setup();
    tj_cuda_function f = x.f;
    tj_ctx *c = x.c;
    tj_rt_error err = {{0}};
    tj_kernel *k = tj_kernel_new(c, "mm");
    k->nparams = 1;
    k->params = tj_alloc(c, sizeof *k->params);
    k->params[0] = (tj_param){.name = "A", .dtype = TJ_DT_BF16, .rank = 2};
    tj_arg a = {.is_tensor = 1,
                .tensor = {.data = (void *)0x1000, .dtype = TJ_DT_BF16, .rank = 2, .shape = {100, 72},
                           .strides = {80, 1}}};
    tj_tensor_map_desc map = {0, 64, 8, 128, 0};
    tj_cuda_launch_dims d = {{4, 1, 1}, {128, 1, 1}, 0, NULL};
    cr_assert_eq(tj_cuda_launch_kernel_maps(&f, &d, k, &map, 1, &a, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(fake.param_stride_y, 72); /* params[5]: the map, after ptr, 2 sizes, 2 strides */
    cr_expect(fake.map_rank == 2 && fake.map_dims[0] == 72 && fake.map_dims[1] == 100 && fake.map_strides[0] == 160);
    cr_expect(fake.map_box[0] == 64 && fake.map_box[1] == 8 && fake.map_steps[0] == 1 && fake.map_steps[1] == 1);
    cr_expect(fake.map_dtype == 9 && fake.map_swizzle == 3); /* CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, SWIZZLE_128B */
    tj_tensor_map_desc pairs = {0, 64, 8, 128, 8};
    a.tensor.shape[0] = 96;
    cr_assert_eq(tj_cuda_launch_kernel_maps(&f, &d, k, &pairs, 1, &a, 1, &err), 0, "%s", err.msg);
    cr_expect(fake.map_rank == 3 && fake.map_dims[0] == 72 && fake.map_dims[1] == 8 && fake.map_dims[2] == 12);
    cr_expect(fake.map_strides[0] == 160 && fake.map_strides[1] == 8 * 160);
    cr_expect(fake.map_box[0] == 64 && fake.map_box[1] == 8 && fake.map_box[2] == 16 && fake.map_steps[2] == 8);
    a.tensor.shape[0] = 100; /* 12.5 blocks */
    cr_assert_neq(tj_cuda_launch_kernel_maps(&f, &d, k, &pairs, 1, &a, 1, &err), 0);
    cr_expect(strstr(err.msg, "blocks of 8 rows, and 100 rows"), "%s", err.msg);
    a.tensor.strides[0] = 76; /* 152-byte rows */
    cr_assert_neq(tj_cuda_launch_kernel_maps(&f, &d, k, &map, 1, &a, 1, &err), 0);
    cr_expect(strstr(err.msg, "parameter 'A': a TMA tensor map needs"), "%s", err.msg);
    a.tensor.strides[0] = 0; /* one row broadcast to all 100: a multiple of 16, but no map repeats rows */
    cr_assert_neq(tj_cuda_launch_kernel_maps(&f, &d, k, &map, 1, &a, 1, &err), 0);
    cr_expect(strstr(err.msg, "(row stride 0)"), "%s", err.msg);
    a.tensor.shape[0] = 1; /* a single row: its stride is never used */
    cr_assert_eq(tj_cuda_launch_kernel_maps(&f, &d, k, &map, 1, &a, 1, &err), 0, "%s", err.msg);
    a.tensor.strides[0] = 1; /* nor when it is no multiple of 16 bytes: the map gets the row's bytes rounded up */
    cr_assert_eq(tj_cuda_launch_kernel_maps(&f, &d, k, &map, 1, &a, 1, &err), 0, "%s", err.msg);
    cr_expect(fake.map_strides[0] == 144, "%llu", (unsigned long long)fake.map_strides[0]);
    launch_teardown(&x);
}

Test(cuda_fake, no_push_when_the_context_is_already_current)
{
    tj_cuda *cu = open_fake(1);
    tj_rt_error err = {{0}};
    fake_push(PRIMARY);
    int before = fake.pushes;
    cr_assert_eq(tj_cuda_synchronize(cu, &err), 0, "%s", err.msg);
    cr_assert_eq(fake.pushes, before);
    cr_assert_eq(ctx_depth, 1);
    CUcontext dummy;
    fake_pop(&dummy);
    fake_push(OTHER); /* another library's context stays current after our call */
    cr_assert_eq(tj_cuda_synchronize(cu, &err), 0, "%s", err.msg);
    cr_assert_eq(fake.pushes, before + 2);
    cr_assert_eq(current(), OTHER);
    tj_cuda_close(cu);
}

Test(cuda_fake, memory_errors_name_the_call)
{
    tj_cuda *cu = open_fake(1);
    tj_rt_error err = {{0}};
    void *p = tj_cuda_malloc(cu, 256, &err);
    cr_assert_eq(p, (void *)0x10000);
    cr_assert_eq(tj_cuda_free(cu, p, &err), 0);
    cr_assert_eq(tj_cuda_free(cu, NULL, &err), 0);
    cr_assert_null(tj_cuda_malloc(cu, (size_t)2 << 40, &err));
    cr_assert_str_eq(err.msg, "cuMemAlloc_v2 (allocating 2199023255552 bytes on device 0): "
                              "CUDA_ERROR_OUT_OF_MEMORY: out of memory");
    cr_assert_neq(tj_cuda_stream_synchronize(cu, NULL, &err), 0);
    cr_assert_str_eq(err.msg, "cuStreamSynchronize (stream (nil)): CUresult 999: unknown error");
    cr_assert(left_clean());
    tj_cuda_close(cu);
}

/* Several threads launching through one tj_cuda, each on its own context
 * stack. */
static void *launch_many(void *arg)
{
    const tj_cuda_function *f = arg;
    tj_rt_error err = {{0}};
    void *params[9] = {0};
    int64_t stride = 7;
    params[5] = &stride;
    tj_cuda_launch_dims d = {{1, 1, 1}, {32, 1, 1}, 0, NULL};
    for (int i = 0; i < 1000; i++)
        if (tj_cuda_launch(f, &d, params, &err) || !launched_in_ctx || !left_clean())
            return (void *)1;
    return NULL;
}

Test(cuda_fake, threads_share_one_device)
{
    tj_cuda *cu = open_fake(1);
    tj_rt_error err = {{0}};
    tj_cuda_module *m = tj_cuda_module_load_ptx(cu, ".version 8.0\n", "vadd", &err);
    tj_cuda_function f;
    cr_assert_eq(tj_cuda_module_function(m, "vadd", &f, &err), 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, launch_many, &f), 0);
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        cr_assert_null(rc, "thread %d", i);
    }
    cr_assert_eq(fake.launches, 4000);
    tj_cuda_module_unload(m);
    tj_cuda_close(cu);
}

/* ---- the real symbol names, against the CUDA toolkit's stub driver -------- */

Test(cuda_stub, every_entry_point_resolves_and_init_says_stub)
{
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    tj_cu_api api;
    void *lib = NULL;
    tj_rt_error err = {{0}};
    if (tj_cu_load_driver(stub, &api, &lib, &err)) {
        cr_assert(strstr(err.msg, "not found"), "%s", err.msg);
        cr_skip_test("no CUDA toolkit stub: %s", err.msg);
    }
    cr_assert_null(tj_cuda_open_api(&api, lib, 0, &err));
    cr_assert_str_eq(err.msg, "no CUDA driver: cuInit (initializing the CUDA driver): "
                              "CUDA_ERROR_STUB_LIBRARY: libcuda.so.1 is the CUDA toolkit's stub "
                              "library, not a driver");
    char buf[64];
    cr_assert_eq(tj_cu_list_devices(&api, buf, sizeof buf, &err), -1);
    cr_assert_null(tj_cu_load_driver("/nonexistent/libcuda.so.1", &api, &lib, &err) ? NULL : lib);
    cr_assert(!strncmp(err.msg, "no CUDA driver: /nonexistent/libcuda.so.1 not found (", 52), "%s",
              err.msg);
}
