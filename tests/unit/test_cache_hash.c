/* BLAKE2b against RFC 7693 and Python's hashlib, and the key builder. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tilejit/cache.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void expect_hash(const void *data, size_t n, size_t outlen, const char *want)
{
    uint8_t out[64];
    char got[129];
    tj_hash(data, n, out, outlen);
    hex(out, outlen, got);
    cr_expect_str_eq(got, want);
}

Test(hash, rfc7693_abc_512)
{
    expect_hash("abc", 3, 64,
                "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
}

Test(hash, digests_of_256_bits)
{
    expect_hash("", 0, 32, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
    expect_hash("abc", 3, 32, "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
    uint8_t zeros[128] = {0};
    /* exactly one block: the last block is not compressed twice */
    expect_hash(zeros, sizeof zeros, 32, "378d0caaaa3855f1b38693c1d6ef004fd118691c95c959d4efa950d6d6fcf7c1");
}

Test(hash, incremental_updates_match_one_shot)
{
    uint8_t data[1025];
    for (int i = 0; i < 1024; i++)
        data[i] = (uint8_t)i;
    data[1024] = 'x';
    const char *want = "c374b2f6691d48b7aab5f898227b4bbe2bee9f885d1140fbe15ecb3ab5d01b8f";
    expect_hash(data, sizeof data, 32, want);
    size_t pieces[] = {1, 7, 127, 128, 129, 300};
    for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
        tj_hash_state s;
        uint8_t out[32];
        char got[65];
        tj_hash_init(&s, 32);
        for (size_t at = 0; at < sizeof data; at += pieces[p]) {
            size_t n = sizeof data - at < pieces[p] ? sizeof data - at : pieces[p];
            tj_hash_update(&s, data + at, n);
        }
        tj_hash_final(&s, out);
        hex(out, 32, got);
        cr_expect_str_eq(got, want, "pieces of %zu bytes", pieces[p]);
    }
}

Test(key, hex_round_trip_and_rejects)
{
    tj_cache_key k, back;
    char text[TJ_CACHE_KEY_HEX];
    for (int i = 0; i < TJ_CACHE_KEY_BYTES; i++)
        k.bytes[i] = (uint8_t)(i * 37 + 5);
    tj_cache_key_hex(&k, text);
    cr_assert_eq(strlen(text), 64);
    cr_assert_eq(tj_cache_key_parse(text, &back), 0);
    cr_assert(tj_cache_key_equal(&k, &back));
    text[10] = 'G';
    cr_expect_neq(tj_cache_key_parse(text, &back), 0);
    cr_expect_neq(tj_cache_key_parse("abcd", &back), 0);
    char longer[70];
    tj_cache_key_hex(&k, longer);
    strcat(longer, "00");
    cr_expect_neq(tj_cache_key_parse(longer, &back), 0);
}

static void key_of(const char *space, const char *a, const char *b, tj_cache_key *out)
{
    tj_key_builder kb;
    tj_key_begin(&kb, space);
    tj_key_add_str(&kb, "a", a);
    tj_key_add_str(&kb, "b", b);
    tj_key_end(&kb, out);
}

Test(key, fields_do_not_run_together)
{
    tj_cache_key k1, k2, k3, k4, k5;
    key_of("s", "ab", "c", &k1);
    key_of("s", "a", "bc", &k2);
    key_of("t", "ab", "c", &k3);
    key_of("s", NULL, "c", &k4);
    key_of("s", "", "c", &k5);
    cr_expect_not(tj_cache_key_equal(&k1, &k2));
    cr_expect_not(tj_cache_key_equal(&k1, &k3));
    cr_expect_not(tj_cache_key_equal(&k4, &k5), "absent and empty differ");
    tj_cache_key again;
    key_of("s", "ab", "c", &again);
    cr_expect(tj_cache_key_equal(&k1, &again));
}

Test(key, integers_are_whole_values)
{
    tj_key_builder a, b;
    tj_cache_key ka, kb;
    tj_key_begin(&a, "s");
    tj_key_add_int(&a, "v", 256);
    tj_key_end(&a, &ka);
    tj_key_begin(&b, "s");
    tj_key_add_int(&b, "v", 1);
    tj_key_end(&b, &kb);
    cr_expect_not(tj_cache_key_equal(&ka, &kb));
}

/* XXH64 against the reference implementation (libxxhash 0.8.1). */
Test(hash64, reference_values)
{
    static unsigned char buf[1000];
    for (int i = 0; i < 1000; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    cr_expect_eq(tj_hash64("", 0, 0), 0xef46db3751d8e999ull);
    cr_expect_eq(tj_hash64("abc", 3, 0), 0x44bc2cf5ad770999ull);
    cr_expect_eq(tj_hash64(buf, 1000, 0), 0x0bf0bdbcc82eb373ull, "stripes, then the tail");
    cr_expect_eq(tj_hash64(buf, 100, 12345), 0x21fc897b6959f33aull, "a seed");
}
