/* libFuzzer target: arbitrary bytes as a disk cache entry, decoded as they
 * are and again with their checksum made right (so the fuzzer explores what
 * lies behind it), their metadata looked up as the JIT and `cache list` do.
 * An entry that decodes must encode to one that decodes the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/cache_internal.h"

static void read_meta(const tj_cache_entry *e)
{
    static const char *const names[] = {"kernel", "abi", "arch", "threads", "smem", "config", "status", ""};
    char buf[64];
    size_t len;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = tj_cache_meta_find(e->meta, names[i], &len);
        if (v && (v < e->meta || v + len > e->meta + e->meta_len))
            abort(); /* a value outside the metadata */
        (void)tj_cache_meta_get(e->meta, names[i], buf, sizeof buf);
    }
}

static int same_section(const void *a, size_t alen, const void *b, size_t blen)
{
    return alen == blen && (!alen || !memcmp(a, b, alen));
}

/* An empty metadata section and one of just its NUL mean the same, so the
 * test is that an entry survives encoding, not that its bytes do. */
static void decode(const uint8_t *img, size_t size)
{
    tj_cache_entry e, back;
    if (tj_cache_entry_decode(img, size, 0, NULL, &e) != NULL)
        return;
    read_meta(&e);
    size_t n = 0;
    void *again = tj_cache_entry_encode(&e, &n);
    if (!again)
        return;
    if (tj_cache_entry_decode(again, n, e.kind, &e.key, &back) != NULL ||
        !same_section(e.meta, e.meta_len, back.meta, back.meta_len) ||
        !same_section(e.ptx, e.ptx_len, back.ptx, back.ptx_len) ||
        !same_section(e.bin, e.bin_len, back.bin, back.bin_len))
        abort(); /* decode and encode disagree */
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode(data, size);
    if (size < 8)
        return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    uint64_t sum = tj_hash64(fixed, size - 8, 0);
    for (int i = 0; i < 8; i++)
        fixed[size - 8 + i] = (uint8_t)(sum >> (8 * i));
    decode(fixed, size);
    free(fixed);
    return 0;
}
