/* The Apple path: how kernels from tj_emit_msl take their arguments, and
 * the Metal host runtime (docs/metal.md).
 *
 *   tj_metal *m = tj_metal_open(NULL, &err);       // NULL off macOS, with the reason
 *   tj_metal_run(m, tile_kernel, args, n, &err);    // lower, emit MSL, compile (cached), run
 *   tj_metal_close(m);
 *
 * The runtime is C over the Objective-C runtime; it is built on macOS and,
 * elsewhere, compiled only to be checked and tested against a mock
 * Objective-C runtime that runs the MSL in the CPU emulator
 * (tests/msl_emu). Elsewhere tj_metal_open fails with a clear reason.
 * err may be NULL in every call.
 */
#ifndef TILEJIT_METAL_H
#define TILEJIT_METAL_H

#include "tilejit/args.h"
#include "tilejit/codegen.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- launching what tj_emit_msl made (its ABI: tilejit/codegen.h) ----------- */
typedef struct tj_msl_args {
    uint32_t ntensors;
    void *data[TJ_MSL_MAX_TENSORS];       /* each tensor's first element */
    int64_t lo[TJ_MSL_MAX_TENSORS];       /* bytes reachable through the strides: */
    int64_t hi[TJ_MSL_MAX_TENSORS];       /*   [data + lo, data + hi); lo <= 0 */
    uint8_t written[TJ_MSL_MAX_TENSORS];  /* the kernel stores or updates it */
    uint32_t block_index;                 /* == ntensors */
    uint32_t block_bytes;                 /* 0: the kernel takes no block */
    unsigned char block[TJ_MSL_MAX_BLOCK];
    uint32_t grid[3];                     /* threadgroups */
    uint32_t threads;                     /* threads per threadgroup */
} tj_msl_args;

/* Fills *out for launching `simt` (as emitted by tj_emit_msl) on `args`:
 * checks them against the parameters, evaluates the grid, packs the
 * block. Returns 0, or -1 after reporting a diagnostic. */
int tj_msl_pack_args(const tj_kernel *simt, const tj_arg *args, uint32_t nargs, tj_msl_args *out);

/* ---- the Metal runtime ---------------------------------------------------------- */

typedef struct tj_metal tj_metal;
typedef struct tj_metal_pipeline tj_metal_pipeline;

/* The system's default Metal device. cache_dir: where pipelines are
 * archived (MTLBinaryArchive); NULL: $TILEJIT_CACHE_DIR/metal or
 * ~/.cache/tilejit/metal; "": memory only. A directory that cannot be used
 * degrades to memory only (a note in tj_metal_stats). NULL with the reason
 * when there is no Metal device (always, off macOS). */
tj_metal *tj_metal_open(const char *cache_dir, tj_rt_error *err);
/* Releases every pipeline compiled through m. */
void tj_metal_close(tj_metal *m);
const char *tj_metal_device_name(const tj_metal *m);

/* The compute pipeline of `function` in MSL source `msl`: from memory
 * (keyed by a hash of the source, the function and the device), else from
 * the disk archive, else compiled; a compile error carries the compiler's
 * text. `threads`: threads per threadgroup the pipeline must support.
 * Owned by m. Thread-safe. */
tj_metal_pipeline *tj_metal_pipeline_get(tj_metal *m, const char *msl, size_t len, const char *function,
                                         uint32_t threads, tj_rt_error *err);

/* Runs pipeline p of SIMT kernel `simt` on arguments in host memory and
 * waits for completion; the tensors the kernel writes are updated in
 * place. */
int tj_metal_launch(tj_metal *m, tj_metal_pipeline *p, const tj_kernel *simt, const tj_arg *args, uint32_t nargs,
                    tj_rt_error *err);

/* For a verified Tile IR kernel: specializes on the example arguments,
 * lowers to SIMT IR, emits MSL and gets its pipeline (*p). Returns the
 * SIMT kernel (in tile's context) for tj_metal_launch, any number of
 * times on arguments like the examples; NULL with the reason. */
const tj_kernel *tj_metal_compile(tj_metal *m, const tj_kernel *tile, const tj_arg *args, uint32_t nargs,
                                  tj_metal_pipeline **p, tj_rt_error *err);

/* tj_metal_compile, then one tj_metal_launch. */
int tj_metal_run(tj_metal *m, const tj_kernel *tile, const tj_arg *args, uint32_t nargs, tj_rt_error *err);

typedef struct tj_metal_stats {
    uint64_t compiles;       /* newLibraryWithSource calls */
    uint64_t memory_hits;    /* pipelines found in memory */
    uint64_t archive_hits;   /* pipelines built from the disk archive without compiling */
    uint64_t archive_writes; /* archives written */
    char cache_note[256];    /* why the disk cache is off, if it is */
} tj_metal_stats;
void tj_metal_get_stats(tj_metal *m, tj_metal_stats *out);

#ifdef __cplusplus
}
#endif
#endif
