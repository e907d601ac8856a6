/* Cache keys: tagged, length-prefixed fields hashed with BLAKE2b-256, and
 * the key of a compiled kernel. */
#include <string.h>

#include "tilejit/cache.h"
#include "tilejit/tilejit.h"

static const char hex_digits[] = "0123456789abcdef";

void tj_cache_key_hex(const tj_cache_key *k, char out[TJ_CACHE_KEY_HEX])
{
    if (!out)
        return;
    if (!k) {
        out[0] = 0;
        return;
    }
    for (int i = 0; i < TJ_CACHE_KEY_BYTES; i++) {
        out[2 * i] = hex_digits[k->bytes[i] >> 4];
        out[2 * i + 1] = hex_digits[k->bytes[i] & 15];
    }
    out[2 * TJ_CACHE_KEY_BYTES] = 0;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

int tj_cache_key_parse(const char *hex, tj_cache_key *k)
{
    if (!hex || !k)
        return -1;
    for (int i = 0; i < TJ_CACHE_KEY_BYTES; i++) {
        int hi = hex_value(hex[2 * i]), lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        k->bytes[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[2 * TJ_CACHE_KEY_BYTES] ? -1 : 0;
}

int tj_cache_key_equal(const tj_cache_key *a, const tj_cache_key *b)
{
    if (!a || !b)
        return 0;
    return !memcmp(a->bytes, b->bytes, sizeof a->bytes);
}

/* ---- the builder ------------------------------------------------------------- */

static void add_u64(tj_hash_state *h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    tj_hash_update(h, b, sizeof b);
}

/* A field is: its name's length and bytes, a presence byte, then the
 * value's length and bytes. */
static void add_field(tj_key_builder *b, const char *field, int present, const void *data, size_t n)
{
    size_t flen = strlen(field);
    uint8_t flag = (uint8_t)(present != 0);
    add_u64(&b->h, flen);
    tj_hash_update(&b->h, field, flen);
    tj_hash_update(&b->h, &flag, 1);
    add_u64(&b->h, n);
    tj_hash_update(&b->h, data, n);
}

void tj_key_begin(tj_key_builder *b, const char *space)
{
    if (!b)
        return;
    tj_hash_init(&b->h, TJ_CACHE_KEY_BYTES);
    tj_key_add_str(b, "space", space);
}

void tj_key_add_bytes(tj_key_builder *b, const char *field, const void *data, size_t n)
{
    if (!b || !field || !tj_array_ok(data, n))
        return;
    add_field(b, field, 1, data, n);
}

void tj_key_add_str(tj_key_builder *b, const char *field, const char *s)
{
    if (!b || !field)
        return;
    add_field(b, field, s != NULL, s ? s : "", s ? strlen(s) : 0);
}

void tj_key_add_int(tj_key_builder *b, const char *field, int64_t v)
{
    if (!b || !field)
        return;
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++)
        bytes[i] = (uint8_t)((uint64_t)v >> (8 * i));
    add_field(b, field, 1, bytes, sizeof bytes);
}

void tj_key_end(tj_key_builder *b, tj_cache_key *out)
{
    if (b && out)
        tj_hash_final(&b->h, out->bytes);
}

/* ---- the key of a compiled kernel -------------------------------------------------- */

/* CMake generates the header (cmake/build_id.cmake); a build without it
 * keys on TILEJIT_VERSION alone. */
#ifdef TJ_HAVE_BUILD_ID
#include "tilejit_build_id.h"
#endif

void tj_cache_key_compute(const tj_cache_key_parts *p, tj_cache_key *out)
{
    if (!p || !out)
        return;
    tj_key_builder b;
    tj_key_begin(&b, "kernel");
    tj_key_add_str(&b, "tilejit", p->tilejit_version ? p->tilejit_version : TILEJIT_VERSION);
#ifdef TILEJIT_BUILD_ID
    tj_key_add_str(&b, "build", TILEJIT_BUILD_ID);
#endif
    tj_key_add_str(&b, "target", p->target);
    tj_key_add_str(&b, "arch", p->arch);
    tj_key_add_str(&b, "ptx_isa", p->ptx_isa);
    tj_key_add_int(&b, "driver", p->driver_version);
    tj_key_add_str(&b, "options", p->options);
    /* The tile parameters are in the IR's header too; hashing them apart
     * keeps them in the key whatever the printer shows. */
    for (uint32_t i = 0; p->ir && i < p->ir->nconfig; i++) {
        tj_key_add_str(&b, "param", p->ir->config[i].name);
        tj_key_add_int(&b, "value", p->ir->config[i].value);
    }
    tj_buf text = {0};
    if (p->ir)
        tj_print_kernel(p->ir, &text);
    tj_key_add_bytes(&b, "ir", text.data ? text.data : "", text.len);
    tj_buf_free(&text);
    tj_key_end(&b, out);
}
