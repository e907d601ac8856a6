// Hand-written kernels that exercise the emulator (test_emu.c checks their
// results): threadgroup arrays and barriers, SIMD reductions and shuffles,
// vectors and swizzles, half and bfloat, simdgroup matrices, atomics.
#include <metal_stdlib>
using namespace metal;

// One partial sum per threadgroup: simd_sum, a threadgroup array, a barrier,
// simd_sum again.
kernel void reduce_sum(device const float *in [[buffer(0)]],
                       device float *out [[buffer(1)]],
                       constant uint &n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]],
                       uint tgid [[threadgroup_position_in_grid]],
                       ushort tg_size [[threads_per_threadgroup]],
                       ushort sg [[simdgroup_index_in_threadgroup]],
                       ushort lane [[thread_index_in_simdgroup]])
{
    threadgroup float partial[32];
    float v = gid < n ? in[gid] : 0.0f;
    float s = simd_sum(v);
    if (lane == 0)
        partial[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint nsg = (tg_size + 31) / 32;
    float t = lane < nsg ? float(partial[lane]) : 0.0f;
    t = simd_sum(t);
    if (sg == 0 && lane == 0)
        out[tgid] = t;
}

// Row softmax, one SIMD group per row: float4 loads, swizzles, vector
// constructors, shuffles, half output.
kernel void softmax_rows(device const float4 *x [[buffer(0)]],
                         device half *y [[buffer(1)]],
                         constant uint &cols4 [[buffer(2)]],
                         uint2 tg [[threadgroup_position_in_grid]],
                         ushort lane [[thread_index_in_simdgroup]])
{
    const uint row = tg.x;
    float m = -INFINITY;
    for (uint c = lane; c < cols4; c += 32) {
        float4 v = x[row * cols4 + c];
        m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
    }
    for (ushort off = 16; off > 0; off /= 2)
        m = max(m, simd_shuffle_xor(m, off));
    float s = 0.0f;
    for (uint c = lane; c < cols4; c += 32) {
        float4 e = precise::exp(x[row * cols4 + c] - float4(m));
        s += dot(e, float4(1.0f));
    }
    s = simd_sum(s);
    for (uint c = lane; c < cols4; c += 32) {
        float4 e = precise::exp(x[row * cols4 + c] - m) / s;
        float2 lo = e.xy, hi = float2(e.z, e.w);
        float4 r = float4(lo, hi.x, hi.y);
        for (int k = 0; k < 4; ++k)
            y[(row * cols4 + c) * 4 + k] = half(r[k]);
    }
}

// A 32x32 tile of C = A*B per threadgroup, four SIMD groups of 16x16 each,
// from 8x8 simdgroup matrices staged through threadgroup memory.
kernel void matmul_simdgroup(device const float *A [[buffer(0)]],
                             device const float *B [[buffer(1)]],
                             device float *C [[buffer(2)]],
                             constant uint &K [[buffer(3)]],
                             constant uint &N [[buffer(4)]],
                             uint2 tg [[threadgroup_position_in_grid]],
                             ushort sg [[simdgroup_index_in_threadgroup]],
                             ushort tid [[thread_index_in_threadgroup]])
{
    threadgroup float As[32 * 8];
    threadgroup float Bs[8 * 32];
    const uint row0 = tg.y * 32, col0 = tg.x * 32;
    const uint sr = (sg / 2) * 16, sc = (sg % 2) * 16;
    simdgroup_float8x8 acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            acc[i][j] = simdgroup_float8x8(0.0f);
    for (uint k0 = 0; k0 < K; k0 += 8) {
        for (uint t = tid; t < 256; t += 128) {
            As[t] = A[(row0 + t / 8) * K + k0 + t % 8];
            Bs[t] = B[(k0 + t / 32) * N + col0 + t % 32];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        simdgroup_float8x8 a[2], b[2];
        for (int i = 0; i < 2; ++i)
            simdgroup_load(a[i], As, 8, ulong2(0, sr + 8 * i));
        for (int j = 0; j < 2; ++j)
            simdgroup_load(b[j], Bs, 32, ulong2(sc + 8 * j, 0));
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
                simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            simdgroup_store(acc[i][j], C, N, ulong2(col0 + sc + 8 * j, row0 + sr + 8 * i));
}

struct Params {
    uint n;
    float scale;
};
inline float blur3(threadgroup const float *t, ushort i) { return 0.25f * t[i - 1] + 0.5f * t[i] + 0.25f * t[i + 1]; }

// Types and syntax: half and bfloat scalars and vectors, as_type, a
// threadgroup pointer passed to a function, atomics, a constant struct.
kernel void types_probe(device const float4 *in [[buffer(0)]],
                        device float4 *out [[buffer(1)]],
                        constant Params &p [[buffer(2)]],
                        device atomic_uint *count [[buffer(3)]],
                        device atomic_float *total [[buffer(4)]],
                        device half4 *h_out [[buffer(5)]],
                        device bfloat *b_out [[buffer(6)]],
                        uint3 gid [[thread_position_in_grid]],
                        ushort3 lid [[thread_position_in_threadgroup]])
{
    threadgroup float tile[66];
    threadgroup float *tp = tile;
    float4 v = in[gid.x];
    v.xy = v.yx;
    tp[lid.x + 1] = v.w;
    if (lid.x == 0) {
        tile[0] = 0.0f;
        tile[65] = 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float b = blur3(tile, lid.x + 1);
    uint bits = as_type<uint>(b);
    half4 h = half4(v) * 2.0h;
    bfloat bf = bfloat(v.x * p.scale);
    out[gid.x] = float4(b, float(h.y), float(bf), float(bits & 1u));
    h_out[gid.x] = h;
    b_out[gid.x] = bf;
    if (gid.x < p.n) {
        atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(total, 0.5f, memory_order_relaxed);
    }
}
