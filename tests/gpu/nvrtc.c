/* CUDA C through NVRTC on a device (exits 77 with the reason where there is
 * no device or no NVRTC): reverse_scale<float, 256> (a template, a header
 * given by name, a define, dynamic shared memory) is compiled, launched on
 * a stream and compared element by element with the host's result; built
 * again it comes from the disk cache, without NVRTC, and gives the same. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilejit/nvrtc.h"
#include "tilejit/tilejit.h"

#include "nvrtc_kernels.h"

enum { N = 1000, BLOCK = 256 };

#include "gpu_check.h"

static tj_arg vec(void *data, int64_t n)
{
    return (tj_arg){.is_tensor = 1, .tensor = {.data = data, .dtype = TJ_DT_F32, .rank = 1, .shape = {n}, .strides = {1}}};
}

/* Launches k on x and compares y with the reversal per block. */
static int run_and_compare(tj_cuda *cu, const tj_cuda_kernel *k, const float *x, float alpha)
{
    tj_rt_error err = {{0}};
    static float y[N];
    void *dx = tj_cuda_malloc(cu, sizeof y, &err), *dy = tj_cuda_malloc(cu, sizeof y, &err);
    void *stream = tj_cuda_stream_create(cu, 1, &err);
    CHECK(dx && dy && stream, "%s", err.msg);
    CHECK(!tj_cuda_memcpy_htod(cu, dx, x, sizeof y, &err) && !tj_cuda_memset(cu, dy, 0, sizeof y, &err), "%s", err.msg);
    tj_arg args[4] = {vec(dy, N), vec(dx, N), {.scalar.f = alpha}, {.scalar.i = N}};
    tj_cuda_launch_dims d = {{(N + BLOCK - 1) / BLOCK, 1, 1}, {BLOCK, 1, 1}, BLOCK * sizeof(float), stream};
    CHECK(!tj_cuda_kernel_launch(k, &d, args, 4, &err), "%s", err.msg);
    CHECK(!tj_cuda_stream_synchronize(cu, stream, &err), "%s", err.msg);
    CHECK(!tj_cuda_memcpy_dtoh(cu, y, dy, sizeof y, &err), "%s", err.msg);
    for (int j = 0; j < N; j++) {
        int b = j / BLOCK, i = b * BLOCK + (BLOCK - 1 - j % BLOCK);
        float want = alpha * (i < N ? x[i] : 0) + 0.25f * 2;
        CHECK(fabsf(y[j] - want) <= 1e-6f * (1 + fabsf(want)), "y[%d] = %g, want %g", j, y[j], want);
    }
    tj_cuda_stream_destroy(cu, stream, NULL);
    tj_cuda_free(cu, dx, NULL);
    tj_cuda_free(cu, dy, NULL);
    return 0;
}

int main(void)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    tj_nvrtc *nv = tj_nvrtc_open(&err);
    if (!nv) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    char dir[] = "/tmp/tj_nvrtc_gpu_XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp");
    tj_cache *cache = tj_cache_open(&(tj_cache_options){.dir = dir});
    const tj_cuda_header headers[] = {{"offset.h", reverse_scale_offset_h}};
    const char *const defines[] = {"SCALE=2"};
    tj_cuda_source src = {.file = "reverse_scale.cu", .source = reverse_scale_cu, .len = sizeof reverse_scale_cu - 1,
                          .kernel = "reverse_scale<float, 256>", .headers = headers, .nheaders = 1,
                          .defines = defines, .ndefines = 1};
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    tj_cuda_kernel *cold = tj_cuda_kernel_build(cu, &src, &(tj_cuda_build_options){.cache = cache, .nvrtc = nv}, &err);
    CHECK(cold, "%s", err.msg);
    const tj_cuda_kernel_info *ci = tj_cuda_kernel_get_info(cold);
    CHECK(!ci->from_disk, "the first build came from the cache");
    printf("cold: %.1f ms (NVRTC %.1f ms, nvJitLink %.1f ms, load %.2f ms) for %s, NVRTC %s\n", ci->total_ms,
           ci->nvrtc_ms, ci->link_ms, ci->load_ms, ci->arch, ci->nvrtc_version);
    if (run_and_compare(cu, cold, x, 1.5f))
        return 1;
    tj_nvrtc_close(nv);
    tj_cuda_kernel *hit = tj_cuda_kernel_build(cu, &src, &(tj_cuda_build_options){.cache = cache}, &err);
    CHECK(hit, "%s", err.msg);
    const tj_cuda_kernel_info *hi = tj_cuda_kernel_get_info(hit);
    CHECK(hi->from_disk, "the second build did not come from the cache");
    printf("disk hit: %.3f ms (load %.3f ms)\n", hi->total_ms, hi->load_ms);
    if (run_and_compare(cu, hit, x, -0.5f))
        return 1;
    tj_cuda_kernel_free(cold);
    tj_cuda_kernel_free(hit);
    uint64_t removed;
    tj_cache_clear(cache, &removed);
    char v1[sizeof dir + 4];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    tj_cache_close(cache);
    rmdir(v1);
    rmdir(dir);
    tj_cuda_close(cu);
    printf("OK nvrtc\n");
    return 0;
}
