/* The memory LRU: order of eviction, references, and many threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "tilejit/cache.h"

typedef struct obj {
    atomic_int refs;
    int id;
} obj;

static void retain(void *v) { atomic_fetch_add(&((obj *)v)->refs, 1); }
static void release(void *v) { atomic_fetch_sub(&((obj *)v)->refs, 1); }

static tj_cache_key key(int n)
{
    tj_cache_key k;
    tj_key_builder b;
    tj_key_begin(&b, "lru-test");
    tj_key_add_int(&b, "n", n);
    tj_key_end(&b, &k);
    return k;
}

Test(lru, evicts_the_least_recently_used)
{
    obj o[5] = {{0}};
    tj_lru *l = tj_lru_new(3, retain, release);
    cr_assert(l);
    for (int i = 0; i < 3; i++) {
        tj_cache_key k = key(i);
        tj_lru_put(l, &k, &o[i]);
    }
    tj_cache_key k0 = key(0), k1 = key(1), k3 = key(3);
    obj *got = tj_lru_get(l, &k0); /* 0 becomes the most recent: 1 is next out */
    cr_assert_eq(got, &o[0]);
    cr_expect_eq(atomic_load(&o[0].refs), 2, "the cache's and ours");
    release(got);
    tj_lru_put(l, &k3, &o[3]);
    cr_expect_null(tj_lru_get(l, &k1));
    cr_expect_eq(atomic_load(&o[1].refs), 0, "released when evicted");
    cr_expect_eq(tj_lru_count(l), 3);
    tj_lru_free(l);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(atomic_load(&o[i].refs), 0, "object %d", i);
}

Test(lru, replacing_releases_the_old_value)
{
    obj a = {0}, b = {0};
    tj_lru *l = tj_lru_new(2, retain, release);
    tj_cache_key k = key(1);
    tj_lru_put(l, &k, &a);
    tj_lru_put(l, &k, &b);
    cr_expect_eq(atomic_load(&a.refs), 0);
    cr_expect_eq(atomic_load(&b.refs), 1);
    cr_expect_eq(tj_lru_count(l), 1);
    tj_lru_free(l);
    cr_expect_eq(atomic_load(&b.refs), 0);
}

Test(lru, many_keys_through_a_small_cache)
{
    enum { N = 1000 };
    static obj o[N];
    tj_lru *l = tj_lru_new(7, retain, release);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < N; i++) {
            tj_cache_key k = key(i);
            obj *got = tj_lru_get(l, &k);
            if (got)
                release(got);
            else
                tj_lru_put(l, &k, &o[i]);
        }
    cr_expect_eq(tj_lru_count(l), 7);
    for (int i = N - 7; i < N; i++) {
        tj_cache_key k = key(i);
        obj *got = tj_lru_get(l, &k);
        cr_expect_eq(got, &o[i], "the 7 most recent stay");
        if (got)
            release(got);
    }
    tj_lru_free(l);
    for (int i = 0; i < N; i++)
        cr_assert_eq(atomic_load(&o[i].refs), 0);
}

enum { THREADS = 8, KEYS = 64, OPS = 20000 };
static obj shared[KEYS];

static void *hammer(void *arg)
{
    tj_lru *l = arg;
    unsigned s = (unsigned)(uintptr_t)&arg;
    for (int i = 0; i < OPS; i++) {
        s = s * 1103515245u + 12345u;
        int n = (int)((s >> 8) % KEYS);
        tj_cache_key k = key(n);
        obj *got = tj_lru_get(l, &k);
        if (got) {
            if (got->id != n)
                return (void *)1;
            release(got);
        } else {
            tj_lru_put(l, &k, &shared[n]);
        }
    }
    return NULL;
}

Test(lru, threads_agree_on_references)
{
    for (int i = 0; i < KEYS; i++)
        shared[i].id = i;
    tj_lru *l = tj_lru_new(16, retain, release);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, hammer, l);
    for (int i = 0; i < THREADS; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        cr_expect_null(bad, "a lookup returned another key's value");
    }
    cr_expect_leq(tj_lru_count(l), 16);
    tj_lru_free(l);
    for (int i = 0; i < KEYS; i++)
        cr_expect_eq(atomic_load(&shared[i].refs), 0, "object %d", i);
}
