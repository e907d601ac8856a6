/* BLAKE2b (RFC 7693), unkeyed, any digest length from 1 to 64 bytes, for
 * cache keys; and XXH64 for checksums.
 *
 * Why BLAKE2b: two different kernels must never get the same cache key
 * (the second would run the first's binary), even when someone chose the
 * sources to collide, so the key's hash has to be cryptographic; of
 * those, BLAKE2b is the fastest in portable C on 64-bit machines (faster
 * than SHA-256) and its whole specification, with test vectors, fits in
 * RFC 7693. Entry checksums use XXH64 (below). */
#include <string.h>

#include "tilejit/cache.h"

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull, 0xa54ff53a5f1d36f1ull,
    0x510e527fade682d1ull, 0x9b05688c2b3e6c1full, 0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull,
};

static const uint8_t sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

/* memcpy compiles to one load; the swap only on big-endian machines. */
static uint64_t load64_le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The mixing function G of RFC 7693, section 3.1, on message words
 * x = m[sigma[r][2i]] and y = m[sigma[r][2i + 1]]. Written as macros and
 * unrolled over the 12 rounds, like the RFC's reference code: with
 * constant rounds the message indices are constants and the state stays
 * in registers (three times the speed of a loop over the rounds). */
#define G(r, i, a, b, c, d)                                                                                            \
    do {                                                                                                               \
        a = a + b + m[sigma[r][2 * (i)]];                                                                              \
        d = rotr64(d ^ a, 32);                                                                                         \
        c = c + d;                                                                                                     \
        b = rotr64(b ^ c, 24);                                                                                         \
        a = a + b + m[sigma[r][2 * (i) + 1]];                                                                          \
        d = rotr64(d ^ a, 16);                                                                                         \
        c = c + d;                                                                                                     \
        b = rotr64(b ^ c, 63);                                                                                         \
    } while (0)

#define ROUND(r)                                                                                                       \
    do {                                                                                                               \
        G(r, 0, v0, v4, v8, v12);                                                                                      \
        G(r, 1, v1, v5, v9, v13);                                                                                      \
        G(r, 2, v2, v6, v10, v14);                                                                                     \
        G(r, 3, v3, v7, v11, v15);                                                                                     \
        G(r, 4, v0, v5, v10, v15);                                                                                     \
        G(r, 5, v1, v6, v11, v12);                                                                                     \
        G(r, 6, v2, v7, v8, v13);                                                                                      \
        G(r, 7, v3, v4, v9, v14);                                                                                      \
    } while (0)

/* The compression function F (section 3.2) over the buffered block. */
static void compress(tj_hash_state *s, int last)
{
    uint64_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = load64_le(s->buf + 8 * i);
    uint64_t v0 = s->h[0], v1 = s->h[1], v2 = s->h[2], v3 = s->h[3], v4 = s->h[4], v5 = s->h[5], v6 = s->h[6],
             v7 = s->h[7], v8 = blake2b_iv[0], v9 = blake2b_iv[1], v10 = blake2b_iv[2], v11 = blake2b_iv[3],
             v12 = blake2b_iv[4] ^ s->t[0], v13 = blake2b_iv[5] ^ s->t[1],
             v14 = last ? ~blake2b_iv[6] : blake2b_iv[6], v15 = blake2b_iv[7];
    ROUND(0);
    ROUND(1);
    ROUND(2);
    ROUND(3);
    ROUND(4);
    ROUND(5);
    ROUND(6);
    ROUND(7);
    ROUND(8);
    ROUND(9);
    ROUND(10);
    ROUND(11);
    s->h[0] ^= v0 ^ v8;
    s->h[1] ^= v1 ^ v9;
    s->h[2] ^= v2 ^ v10;
    s->h[3] ^= v3 ^ v11;
    s->h[4] ^= v4 ^ v12;
    s->h[5] ^= v5 ^ v13;
    s->h[6] ^= v6 ^ v14;
    s->h[7] ^= v7 ^ v15;
}

void tj_hash_init(tj_hash_state *s, size_t outlen)
{
    if (!s)
        return;
    if (outlen < 1 || outlen > 64)
        outlen = 32;
    memset(s, 0, sizeof *s);
    memcpy(s->h, blake2b_iv, sizeof s->h);
    s->h[0] ^= 0x01010000ull ^ outlen; /* parameter block: fanout 1, depth 1, no key */
    s->outlen = outlen;
}

static void add_counter(tj_hash_state *s, uint64_t n)
{
    s->t[0] += n;
    if (s->t[0] < n)
        s->t[1]++;
}

void tj_hash_update(tj_hash_state *s, const void *data, size_t n)
{
    if (!s || !tj_array_ok(data, n))
        return;
    const uint8_t *p = data;
    while (n > 0) {
        /* The last block is compressed in tj_hash_final, so a full buffer
         * waits here until more input shows it is not the last. */
        if (s->fill == sizeof s->buf) {
            add_counter(s, sizeof s->buf);
            compress(s, 0);
            s->fill = 0;
        }
        size_t take = sizeof s->buf - s->fill;
        if (take > n)
            take = n;
        memcpy(s->buf + s->fill, p, take);
        s->fill += take;
        p += take;
        n -= take;
    }
}

void tj_hash_final(tj_hash_state *s, uint8_t *out)
{
    if (!s || !out)
        return;
    add_counter(s, s->fill);
    memset(s->buf + s->fill, 0, sizeof s->buf - s->fill);
    compress(s, 1);
    for (size_t i = 0; i < s->outlen; i++)
        out[i] = (uint8_t)(s->h[i / 8] >> (8 * (i % 8)));
}

void tj_hash(const void *data, size_t n, uint8_t *out, size_t outlen)
{
    if (!tj_array_ok(data, n) || !out)
        return;
    tj_hash_state s;
    tj_hash_init(&s, outlen);
    tj_hash_update(&s, data, n);
    tj_hash_final(&s, out);
}

/* ---- XXH64 ------------------------------------------------------------------------------
 *
 * The checksum of cache entries. It guards against accidental damage
 * only (a torn or garbled file): someone who can write the cache directory
 * can write any checksum, so a cryptographic one would buy nothing there,
 * and XXH64 checks a 600 KB entry in a tenth of the time BLAKE2b takes.
 * From the XXH64 specification (xxhash.com/doc/xxhash_spec.html). */

static const uint64_t xxh_p1 = 0x9E3779B185EBCA87ull, xxh_p2 = 0xC2B2AE3D27D4EB4Full,
                      xxh_p3 = 0x165667B19E3779F9ull, xxh_p4 = 0x85EBCA77C2B2AE63ull,
                      xxh_p5 = 0x27D4EB2F165667C5ull;

static uint64_t rotl64(uint64_t x, unsigned n) { return (x << n) | (x >> (64 - n)); }

static uint64_t xxh_round(uint64_t acc, uint64_t input)
{
    acc += input * xxh_p2;
    return rotl64(acc, 31) * xxh_p1;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t v)
{
    acc ^= xxh_round(0, v);
    return acc * xxh_p1 + xxh_p4;
}

static uint64_t load32_le(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

/* 32-byte stripes into four accumulators. */
static uint64_t xxh_stripes(const uint8_t **pp, const uint8_t *end, uint64_t seed)
{
    const uint8_t *p = *pp;
    uint64_t v1 = seed + xxh_p1 + xxh_p2, v2 = seed + xxh_p2, v3 = seed, v4 = seed - xxh_p1;
    for (; end - p >= 32; p += 32) {
        v1 = xxh_round(v1, load64_le(p));
        v2 = xxh_round(v2, load64_le(p + 8));
        v3 = xxh_round(v3, load64_le(p + 16));
        v4 = xxh_round(v4, load64_le(p + 24));
    }
    *pp = p;
    uint64_t h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    return xxh_merge(xxh_merge(xxh_merge(xxh_merge(h, v1), v2), v3), v4);
}

uint64_t tj_hash64(const void *data, size_t n, uint64_t seed)
{
    if (!tj_array_ok(data, n))
        return 0;
    const uint8_t *p = data, *end = p + n;
    uint64_t h = n >= 32 ? xxh_stripes(&p, end, seed) : seed + xxh_p5;
    h += (uint64_t)n;
    for (; end - p >= 8; p += 8)
        h = rotl64(h ^ xxh_round(0, load64_le(p)), 27) * xxh_p1 + xxh_p4;
    if (end - p >= 4) {
        h = rotl64(h ^ load32_le(p) * xxh_p1, 23) * xxh_p2 + xxh_p3;
        p += 4;
    }
    for (; p < end; p++)
        h = rotl64(h ^ *p * xxh_p5, 11) * xxh_p1;
    h ^= h >> 33;
    h *= xxh_p2;
    h ^= h >> 29;
    h *= xxh_p3;
    return h ^ (h >> 32);
}
