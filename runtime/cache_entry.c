/* The format of one cache entry file (all integers little-endian):
 *
 *   0   magic "TJCACHE\x1a"
 *   8   u32 format (1)
 *   12  u32 kind (tj_cache_kind)
 *   16  key (32 bytes): must equal the key the file is named after, which
 *       catches entries copied or renamed from elsewhere
 *   48  u64 metadata bytes, u64 PTX bytes, u64 binary bytes
 *   72  metadata (text, NUL-terminated), PTX (NUL-terminated or empty),
 *       binary
 *   end u64 XXH64 of everything before it (a checksum against damage:
 *       the key check above catches foreign entries)
 *
 * The lengths must add up to the file's size exactly (a truncated or
 * extended file is rejected before the checksum is computed). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_internal.h"

enum { HEADER_BYTES = 72, CHECKSUM_BYTES = 8, FORMAT = 1 };
static const unsigned char magic[8] = {'T', 'J', 'C', 'A', 'C', 'H', 'E', 0x1a};

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A text section carries its NUL; an empty one is empty. SIZE_MAX bytes
 * (no room for the NUL) is refused by entry_size. */
static size_t text_section(size_t len, int present)
{
    return !present ? 0 : len < SIZE_MAX ? len + 1 : SIZE_MAX;
}

/* Header, sections and checksum, or 0 when that overflows or exceeds what
 * a load would read (TJ_CACHE_ENTRY_MAX): such an entry is never written. */
static size_t entry_size(size_t meta, size_t ptx, size_t bin)
{
    uint64_t max = TJ_CACHE_ENTRY_MAX - HEADER_BYTES - CHECKSUM_BYTES;
    if (meta > max || ptx > max - meta || bin > max - meta - ptx)
        return 0;
    return HEADER_BYTES + meta + ptx + bin + CHECKSUM_BYTES;
}

void *tj_cache_entry_encode(const tj_cache_entry *e, size_t *size)
{
    size_t meta = text_section(e->meta_len, e->meta != NULL);
    size_t ptx = text_section(e->ptx_len, e->ptx != NULL && e->ptx_len > 0);
    size_t bin = e->bin ? e->bin_len : 0;
    size_t total = entry_size(meta, ptx, bin);
    unsigned char *img = total ? calloc(1, total) : NULL;
    if (!img)
        return NULL;
    unsigned char *p = img + HEADER_BYTES;
    memcpy(img, magic, sizeof magic);
    put_u32(img + 8, FORMAT);
    put_u32(img + 12, (uint32_t)e->kind);
    memcpy(img + 16, e->key.bytes, TJ_CACHE_KEY_BYTES);
    put_u64(img + 48, meta);
    put_u64(img + 56, ptx);
    put_u64(img + 64, bin);
    if (meta)
        memcpy(p, e->meta, e->meta_len); /* the NUL is calloc's */
    p += meta;
    if (ptx)
        memcpy(p, e->ptx, e->ptx_len);
    p += ptx;
    if (bin)
        memcpy(p, e->bin, bin);
    p += bin;
    put_u64(p, tj_hash64(img, (size_t)(p - img), 0));
    *size = total;
    return img;
}

/* A text section: empty, or ending in its only NUL. */
static int valid_text(const unsigned char *p, uint64_t n)
{
    return n == 0 || (p[n - 1] == 0 && memchr(p, 0, n - 1) == NULL);
}

static const char *check_header(const unsigned char *img, size_t size, tj_cache_kind kind, const tj_cache_key *key,
                                uint64_t len[3])
{
    if (size < HEADER_BYTES + CHECKSUM_BYTES)
        return "truncated";
    if (memcmp(img, magic, sizeof magic))
        return "not a tilejit cache entry";
    if (get_le(img + 8, 4) != FORMAT)
        return "another format version";
    uint64_t k = get_le(img + 12, 4);
    if (k != TJ_CACHE_KERNEL && k != TJ_CACHE_TUNE)
        return "unknown entry kind";
    if (kind && k != (uint64_t)kind)
        return "another kind of entry";
    if (key && memcmp(img + 16, key->bytes, TJ_CACHE_KEY_BYTES))
        return "the key inside does not match its name";
    uint64_t room = size - HEADER_BYTES - CHECKSUM_BYTES;
    for (int i = 0; i < 3; i++) {
        len[i] = get_le(img + 48 + 8 * i, 8);
        if (len[i] > room)
            return "truncated";
        room -= len[i];
    }
    return room ? "trailing bytes" : NULL;
}

const char *tj_cache_entry_decode(const void *image, size_t size, tj_cache_kind kind, const tj_cache_key *key,
                                  tj_cache_entry *out)
{
    const unsigned char *img = image;
    uint64_t len[3];
    const char *why = check_header(img, size, kind, key, len);
    if (why)
        return why;
    size_t body = size - CHECKSUM_BYTES;
    if (tj_hash64(img, body, 0) != get_le(img + body, CHECKSUM_BYTES))
        return "checksum mismatch";
    const unsigned char *meta = img + HEADER_BYTES, *ptx = meta + len[0], *bin = ptx + len[1];
    if (!valid_text(meta, len[0]) || !valid_text(ptx, len[1]))
        return "malformed text section";
    memset(out, 0, sizeof *out);
    out->kind = (tj_cache_kind)get_le(img + 12, 4);
    memcpy(out->key.bytes, img + 16, TJ_CACHE_KEY_BYTES);
    out->meta = len[0] ? (const char *)meta : "";
    out->meta_len = len[0] ? len[0] - 1 : 0;
    out->ptx = len[1] ? ptx : NULL;
    out->ptx_len = len[1] ? len[1] - 1 : 0;
    out->bin = len[2] ? bin : NULL;
    out->bin_len = len[2];
    return NULL;
}

const char *tj_cache_meta_find(const char *meta, const char *name, size_t *len)
{
    if (!meta || !name || !len)
        return NULL;
    size_t nlen = strlen(name);
    for (const char *line = meta; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t llen = end ? (size_t)(end - line) : strlen(line);
        if (llen > nlen && !memcmp(line, name, nlen) && line[nlen] == ' ') {
            *len = llen - nlen - 1;
            return line + nlen + 1;
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

int tj_cache_meta_get(const char *meta, const char *name, char *buf, size_t n)
{
    if (!buf || !n)
        return -1;
    size_t vlen;
    const char *v = tj_cache_meta_find(meta, name, &vlen);
    if (!v || vlen >= n)
        return -1;
    memcpy(buf, v, vlen);
    buf[vlen] = 0;
    return 0;
}

void tj_cache_entry_free(tj_cache_entry *e)
{
    if (!e)
        return;
    free(e->storage);
    memset(e, 0, sizeof *e);
}
