/* From Tile IR to SIMT IR (docs/simt.md), and the code generators over SIMT IR. */
#ifndef TILEJIT_LOWER_H
#define TILEJIT_LOWER_H

#include "tilejit/interp.h"
#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records what the arguments guarantee (unit innermost stride, 16-byte aligned
 * base, dims divisible by 16) in k->facts, for specialization. */
void tj_facts_from_args(tj_kernel *k, const tj_arg *args, uint32_t nargs);

/* Specialize: folds the facts in k->facts and k->spec into the IR and removes
 * the bounds checks they make dead. A Tile IR pass. */
int tj_pass_specialize(tj_kernel *k);

/* What the SIMT IR is for. CUDA: 227 KiB of shared memory per program
 * (sm_90 with the opt-in attribute), and `dot` keeps its result in the
 * registers of the PTX fragment layout (mma_pack / mma_unpack). Metal: 32 KiB
 * of threadgroup memory, fragments opaque (Apple's lane layout is not
 * documented): results go through threadgroup memory. */
typedef enum tj_lower_target { TJ_LOWER_CUDA = 0, TJ_LOWER_METAL = 1 } tj_lower_target;
enum { TJ_SMEM_LIMIT_CUDA = 227 * 1024, TJ_SMEM_LIMIT_METAL = 32 * 1024 };

typedef struct tj_lower_options {
    int warps;              /* threads per program / 32; 0: the config's `warps`, else 4 */
    tj_lower_target target; /* default: CUDA */
} tj_lower_options;

/* Lowers a verified Tile IR kernel to a new SIMT IR kernel in the same
 * context. NULL after reporting a diagnostic. */
tj_kernel *tj_lower_simt(const tj_kernel *k, const tj_lower_options *opt);

/* tj_lower_simt as a pass ("lower-simt"): k becomes the SIMT kernel (the
 * config's `warps`, else 4). */
int tj_pass_lower_simt(tj_kernel *k);
/* The same for Metal ("lower-simt-metal"). */
int tj_pass_lower_simt_metal(tj_kernel *k);

/* Optimizes and specializes k (in place; its facts and spec are used), then
 * lowers it and optimizes the SIMT kernel it returns: what every client
 * (JIT, CLI, benchmarks) does between the front end and a code generator.
 * `verify` runs the verifier after each pass. NULL after a diagnostic. */
tj_kernel *tj_lower_pipeline(tj_kernel *k, const tj_lower_options *opt, int verify);

/* SIMT IR -> PTX text for an arch ("sm_80", "sm_90a"). */
int tj_emit_ptx(const tj_kernel *simt, const char *arch, tj_buf *out);

/* SIMT IR -> Metal Shading Language (Metal 3) source: one kernel function
 * named after the kernel, taking its arguments as docs/metal.md and
 * tilejit/metal.h (tj_msl_pack_args) describe. -1 after reporting a
 * diagnostic (f64, 64-bit atomics and more than 32 KiB of threadgroup
 * memory do not exist in Metal). */
int tj_emit_msl(const tj_kernel *simt, tj_buf *out);

/* Runs a SIMT kernel on the host: every program of the grid, all its threads
 * in lockstep, with host pointers in the tensor arguments. */
int tj_simt_run(const tj_kernel *simt, const tj_arg *args, uint32_t nargs);

#ifdef __cplusplus
}
#endif
#endif
