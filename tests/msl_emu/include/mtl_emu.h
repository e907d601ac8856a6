/* mtl_emu.h -- the C ABI of the MSL emulator (tests/msl_emu, README.md):
 * compile Metal Shading Language as C++ against the metal_stdlib shim, and
 * run its kernels on the CPU with threadgroup and SIMD-group semantics.
 * Test support, not part of the library. */
#ifndef MTL_EMU_H
#define MTL_EMU_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define MTL_EMU_MAX_BUFFERS 31
#define MTL_EMU_SIMD_WIDTH 32
#define MTL_EMU_TG_LIMIT 32768 /* Apple GPUs' threadgroup memory per threadgroup */

/* What one thread sees: its built-in [[attribute]] values and the bound
 * buffers. */
typedef struct mtl_emu_ctx {
    uint32_t tpig[3];  /* thread_position_in_grid */
    uint32_t tgpig[3]; /* threadgroup_position_in_grid */
    uint32_t tpitg[3]; /* thread_position_in_threadgroup */
    uint32_t tptg[3];  /* threads_per_threadgroup */
    uint32_t tgpg[3];  /* threadgroups_per_grid */
    uint32_t tpg[3];   /* threads_per_grid */
    uint32_t tiitg;    /* thread_index_in_threadgroup */
    uint32_t sgitg;    /* simdgroup_index_in_threadgroup */
    uint32_t tiisg;    /* thread_index_in_simdgroup */
    uint32_t sgptg;    /* simdgroups_per_threadgroup */
    void *buffers[MTL_EMU_MAX_BUFFERS];
} mtl_emu_ctx;

/* ---- called by kernel code, through the shim ---- */
const mtl_emu_ctx *mtl_rt_ctx(void);
/* threadgroup_barrier: every thread of the threadgroup must arrive, at the
 * same call site (line, column). */
void mtl_rt_barrier(uint32_t line, uint32_t col);
/* A SIMD-group collective: every lane of the SIMD group contributes `size`
 * bytes (<= 64) at the same call site; `out` receives them lane-indexed.
 * Returns the mask of the lanes that exist. */
uint32_t mtl_rt_simd_exchange(const void *in, size_t size, void *out, uint32_t line, uint32_t col);
/* Kernel-scope threadgroup storage: one block per declaration per
 * threadgroup, poisoned (0xFF) and tracked; the total is limited. */
void *mtl_rt_tg_alloc(uint32_t decl, size_t size, size_t align);
/* Reports an access of n bytes at p (inside threadgroup storage): reads of
 * bytes never written, and reads or writes racing with another thread's
 * access since the last barrier, fail the dispatch. `value` is the new
 * bytes of a write (NULL for a read). */
void mtl_rt_tg_access(const void *p, size_t n, const void *value);
void mtl_rt_fail(const char *msg);

/* ---- called by the host ---- */
typedef void (*mtl_emu_entry)(void); /* NAME__mtl_entry, one per kernel */

typedef struct mtl_emu_dispatch_desc {
    void *buffers[MTL_EMU_MAX_BUFFERS];
    uint32_t threadgroups[3];
    uint32_t threads[3];      /* threads per threadgroup */
    int workers;              /* OS threads running threadgroups; 0: 1 */
    size_t stack_bytes;       /* per thread; 0: 128 KiB */
    uint32_t schedule;        /* order of the threads between barriers: 0 forward,
                                 1 reverse, >= 2 a fresh random order each round
                                 (seeded): differing results expose races the
                                 tracker cannot see (device memory) */
    size_t tg_limit;          /* 0: MTL_EMU_TG_LIMIT */
} mtl_emu_dispatch_desc;

/* Runs a dispatch; 0, or 1 with the first failure (a race, an
 * uninitialized read, divergence, the memory limit, a deadlock) in err. */
int mtl_emu_dispatch(mtl_emu_entry entry, const mtl_emu_dispatch_desc *d, char *err, size_t errlen);

/* Compiles n MSL sources into one shared object at so_path (each source
 * in its own namespace, so several kernels build in one compiler run).
 * The sources are checked for what the Metal compiler would reject
 * (std::, double, exceptions, unsuffixed float literals, C-style vector
 * casts ...). 0, or -1 with the compiler's or checker's messages in log
 * (NUL-terminated, truncated to loglen). */
int mtl_emu_compile(const char *const *sources, int n, const char *so_path, char *log, size_t loglen);

/* dlopen/dlsym helpers: the entry of kernel `name` of source number
 * `source` in a compiled object. */
void *mtl_emu_open(const char *so_path, char *err, size_t errlen);
mtl_emu_entry mtl_emu_lookup(void *so, int source, const char *name);
void mtl_emu_close(void *so);

#ifdef __cplusplus
}
#endif
#endif
