/* The native cpu's kernels in the disk cache (runtime/cache_cpu.h). An
 * entry's metadata names the kernel, its parameters and the target it was
 * compiled for; a stale or foreign entry is dropped and rebuilt. */
#include <string.h>

#include "runtime/cache_cpu.h"

/* What the back end is asked for: part of the key. Change it whenever the
 * cpu compile takes new options. */
static const char cpu_options[] = "pipeline=default;llvm=O2,no-unroll;vectors=widest";

void tj_jit_cpu_key(const tj_kernel *spec, const char *target, tj_cache_key *out)
{
    tj_cache_key_parts parts = {.ir = spec, .target = "llvm-cpu", .arch = target, .options = cpu_options};
    tj_cache_key_compute(&parts, out);
}

static void meta_text(const tj_kernel *k, const char *target, tj_buf *out)
{
    tj_buf_printf(out, "tilejit %s\nkernel %s\narch %s\nabi ", TILEJIT_VERSION, k->name, target);
    for (uint32_t i = 0; i < k->nparams; i++)
        tj_buf_printf(out, "%s%s:%s:%d", i ? "," : "", k->params[i].name, tj_dtype_name(k->params[i].dtype),
                      k->params[i].rank);
    tj_buf_printf(out, "\n");
}

/* Line NAME of the metadata is exactly `want`. */
static int meta_is(const char *meta, const char *name, const char *want, size_t len)
{
    size_t n;
    const char *v = tj_cache_meta_find(meta, name, &n);
    return v && n == len && !memcmp(v, want, len);
}

int tj_jit_cpu_lookup(tj_cache *disk, const tj_cache_key *k, const tj_kernel *spec, tj_cache_entry *e)
{
    memset(e, 0, sizeof *e);
    if (!disk || tj_cache_load(disk, TJ_CACHE_KERNEL, k, e))
        return 1;
    tj_buf want = {0};
    meta_text(spec, "", &want); /* the kernel and abi lines; the key holds the target */
    const char *abi = want.data ? strstr(want.data, "\nabi ") : NULL; /* NULL: out of memory */
    abi = abi ? abi + 5 : NULL;
    int ok = abi && meta_is(e->meta, "kernel", spec->name, strlen(spec->name)) &&
             meta_is(e->meta, "abi", abi, strlen(abi) - 1) && e->bin_len > 0;
    tj_buf_free(&want);
    if (!ok) {
        tj_cache_entry_free(e);
        tj_cache_drop(disk, k);
    }
    return !ok;
}

void tj_jit_cpu_store(tj_cache *disk, const tj_cache_key *k, const tj_kernel *spec, const char *target,
                      const void *object, size_t len)
{
    if (!disk)
        return;
    tj_buf meta = {0};
    meta_text(spec, target, &meta);
    tj_cache_entry e = {.kind = TJ_CACHE_KERNEL, .key = *k, .meta = meta.data, .meta_len = meta.len,
                        .ptx = "", .ptx_len = 0, .bin = object, .bin_len = len};
    tj_cache_store(disk, &e);
    tj_buf_free(&meta);
}
