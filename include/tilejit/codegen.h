/* The code generators over SIMT IR: PTX (codegen/ptx/) and Metal Shading
 * Language (codegen/msl/), with the kernel ABI of the MSL they emit. */
#ifndef TILEJIT_CODEGEN_H
#define TILEJIT_CODEGEN_H

#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SIMT IR -> PTX text for an arch ("sm_80", "sm_90a"). */
int tj_emit_ptx(const tj_kernel *simt, const char *arch, tj_buf *out);
/* Whether arch has wgmma (sm_90a): what tj_lower_options.wgmma asks for. */
int tj_ptx_arch_has_wgmma(const char *arch);

/* SIMT IR -> Metal Shading Language (Metal 3) source: one kernel function
 * named after the kernel, taking its arguments as the ABI below says. -1
 * after reporting a diagnostic (f64, 64-bit atomics and more than
 * TJ_SMEM_LIMIT_METAL of threadgroup memory do not exist in Metal). */
int tj_emit_msl(const tj_kernel *simt, tj_buf *out);

/* ---- the kernel ABI of tj_emit_msl ------------------------------------------
 * [[buffer(i)]], i = 0 .. ntensors-1: the i-th tensor parameter, in
 * declaration order, bound at its first element (index 0 of every axis).
 * [[buffer(ntensors)]]: one constant block: every tensor's strides (long
 * each, in elements), then every tensor's sizes (int each), then every
 * scalar parameter (bool as 1 byte, f16 as half, bf16 as its ushort bits),
 * each group in declaration order and each field at its natural alignment
 * (tj_msl_block_layout); absent when the kernel has no parameters.
 * Threadgroups: the kernel's grid; threads per threadgroup: simt->nthreads
 * in x. The host side is tj_msl_pack_args (tilejit/metal.h). */
enum { TJ_MSL_MAX_TENSORS = 30, TJ_MSL_MAX_BLOCK = 4096 };

/* The byte offset of each field of the block: for parameter p, axis a:
 * size_off[p][a], stride_off[p][a]; for a scalar p: scalar_off[p][0];
 * -1 where there is none. Returns the block's size, or -1 (too large,
 * reported). Both the generator and the host use it. */
int tj_msl_block_layout(const tj_kernel *k, int32_t (*size_off)[TJ_MAX_RANK],
                        int32_t (*stride_off)[TJ_MAX_RANK], int32_t *scalar_off);

/* written[p] = 1 for each tensor parameter a store or an atomic of SIMT
 * kernel k targets (the host copies back only those). */
void tj_msl_tensor_writes(const tj_kernel *k, uint8_t *written);

/* The Metal Shading Language version a tj_emit_msl source needs, read from
 * its first line: "// tilejit: MSL 3.0", or "// tilejit: MSL 3.1" when it
 * uses bfloat simdgroup matrices. Numbered as MTLLanguageVersion; a source
 * without that line (hand-written) gets TJ_MSL_3_0. */
enum { TJ_MSL_3_0 = 3 << 16, TJ_MSL_3_1 = (3 << 16) + 1 };
uint32_t tj_msl_version(const char *msl);

#ifdef __cplusplus
}
#endif
#endif
