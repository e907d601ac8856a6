// Broken kernels the emulator must report (test_emu.c), one bug each.
#include <metal_stdlib>
using namespace metal;

// No barrier between a threadgroup write and another thread's read.
kernel void missing_barrier(device float *out [[buffer(0)]], ushort lid [[thread_position_in_threadgroup]])
{
    threadgroup float t[64];
    t[lid] = float(lid);
    out[lid] = t[63 - lid];
}

// A thread overwrites what another has read, with no barrier between.
kernel void write_after_read(device float *out [[buffer(0)]], ushort lid [[thread_position_in_threadgroup]])
{
    threadgroup float t[64];
    t[lid] = float(lid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float x = t[(lid + 1) % 64];
    t[lid] = x * 2.0f;
    out[lid] = x;
}

// Half of the array is never written, and all of it is read.
kernel void uninit_read(device float *out [[buffer(0)]], ushort lid [[thread_position_in_threadgroup]])
{
    threadgroup float t[64];
    if (lid < 32)
        t[lid] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] = t[63 - lid];
}

// 36 KiB of threadgroup memory (Apple GPUs have 32 KiB).
kernel void too_much_tg(device float *out [[buffer(0)]], ushort lid [[thread_position_in_threadgroup]])
{
    threadgroup float big[9216];
    big[lid] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] = big[lid];
}

// Two barriers in divergent branches.
kernel void divergent_barrier(device float *out [[buffer(0)]], ushort lid [[thread_position_in_threadgroup]])
{
    threadgroup float t[64];
    t[lid] = float(lid);
    if (lid < 32)
        threadgroup_barrier(mem_flags::mem_threadgroup);
    else
        threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] = t[63 - lid];
}

// Some threads return before a barrier the others wait at.
kernel void early_return(device float *out [[buffer(0)]], ushort lid [[thread_position_in_threadgroup]])
{
    threadgroup float t[64];
    if (lid >= 48)
        return;
    t[lid] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] = t[lid];
}

// A SIMD-group operation in divergent control flow.
kernel void divergent_simd(device float *out [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]])
{
    float a = 0.0f;
    if (lane < 16)
        a = simd_sum(1.0f);
    out[lane] = a + simd_sum(2.0f);
}

// A simdgroup matrix loaded from a row that differs between lanes: the
// matrix functions take one set of arguments for the whole SIMD group.
kernel void nonuniform_matrix_load(device float *out [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]])
{
    simdgroup_float8x8 m;
    simdgroup_load(m, out, 8, ulong2(0, lane % 2));
    simdgroup_store(m, out, 8);
}
