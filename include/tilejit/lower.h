/* From Tile IR to SIMT IR (docs/simt.md): the lowering stage, lower/. */
#ifndef TILEJIT_LOWER_H
#define TILEJIT_LOWER_H

#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the SIMT IR is for. CUDA: TJ_SMEM_LIMIT_CUDA of shared memory per
 * program, and `dot` keeps its result in the registers of the PTX fragment
 * layout (mma_pack / mma_unpack). Metal: TJ_SMEM_LIMIT_METAL of threadgroup
 * memory, fragments opaque (Apple's lane layout is not documented): results
 * go through threadgroup memory. */
typedef enum tj_lower_target { TJ_LOWER_CUDA = 0, TJ_LOWER_METAL = 1 } tj_lower_target;

typedef struct tj_lower_options {
    int warps;              /* threads per program / 32; 0: the config's `warps`, else 4 */
    tj_lower_target target; /* default: CUDA */
    int wgmma;              /* CUDA: dot on sm_90a's warpgroup tensor cores (wgmma.mma_async,
                               operands in swizzled shared memory); 0: mma.sync */
    int no_tma;             /* wgmma: its copy rings use cp.async even where TMA could load
                               them (docs/simt.md, "TMA") */
    int wgmma_turns;        /* wgmma: warpgroups take turns issuing the products of a loop
                               with several, a turn an iteration (lower/wgmma_turns.c); as
                               a kernel's `turns = 1` asks, for every kernel; off by default */
} tj_lower_options;

/* Lowers a verified Tile IR kernel to a new SIMT IR kernel in the same
 * context. Loads that the pipeline's prefetch step moved ahead become copy
 * rings or registers in flight. NULL after reporting a diagnostic. */
tj_kernel *tj_lower_simt(const tj_kernel *k, const tj_lower_options *opt);

#ifdef __cplusplus
}
#endif
#endif
