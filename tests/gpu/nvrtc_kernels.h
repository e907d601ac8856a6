/* A CUDA C kernel for tests/gpu/nvrtc.c and bench/nvrtc_bench.c: a
 * template, a header given by name, a define and dynamic shared memory
 * (each block reverses its slice of x through shared memory, then scales). */
#ifndef TJ_NVRTC_KERNELS_H
#define TJ_NVRTC_KERNELS_H

static const char reverse_scale_cu[] =
    "#include \"offset.h\"\n"
    "template <typename T, int BLOCK>\n"
    "__global__ void reverse_scale(T *y, const T *x, T alpha, int n)\n"
    "{\n"
    "    extern __shared__ unsigned char smem[];\n"
    "    T *tile = reinterpret_cast<T *>(smem);\n"
    "    int i = blockIdx.x * BLOCK + threadIdx.x;\n"
    "    tile[threadIdx.x] = i < n ? x[i] : T(0);\n"
    "    __syncthreads();\n"
    "    int j = blockIdx.x * BLOCK + (BLOCK - 1 - threadIdx.x);\n"
    "    if (j < n)\n"
    "        y[j] = alpha * tile[threadIdx.x] + OFFSET * SCALE;\n"
    "}\n";

static const char reverse_scale_offset_h[] = "#pragma once\n#define OFFSET 0.25f\n";

#endif
