/* The native cpu's kernels in the disk cache (runtime/cache_cpu.c): object
 * code from the LLVM back end, keyed like PTX (the specialized Tile IR)
 * with the host CPU's name and features as the arch. */
#ifndef TJ_CACHE_CPU_H
#define TJ_CACHE_CPU_H

#include "tilejit/cache.h"

/* target: tj_cpu_target(), e.g. "znver4 +avx512f,...". */
void tj_jit_cpu_key(const tj_kernel *spec, const char *target, tj_cache_key *out);
/* A hit whose metadata names spec's kernel and parameters: 0, with the
 * object in e->bin (free e with tj_cache_entry_free). */
int tj_jit_cpu_lookup(tj_cache *disk, const tj_cache_key *k, const tj_kernel *spec, tj_cache_entry *e);
void tj_jit_cpu_store(tj_cache *disk, const tj_cache_key *k, const tj_kernel *spec, const char *target,
                      const void *object, size_t len);

#endif
