/* The memory cache: a fixed-capacity LRU from keys to values, behind one
 * mutex. Nodes live in one array; a chained hash table finds them and a
 * doubly linked list (by index) keeps them in order of use, most recent at
 * the head. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tilejit/cache.h"

enum { NIL = -1, MAX_CAPACITY = 1 << 20 };

typedef struct lru_node {
    tj_cache_key key;
    void *value;
    int32_t prev, next; /* the use order */
    int32_t chain;      /* the next node in the same bucket */
} lru_node;

struct tj_lru {
    pthread_mutex_t lock;
    void (*retain)(void *);
    void (*release)(void *);
    lru_node *nodes;
    int32_t *buckets;
    uint32_t capacity, nbuckets, count;
    int32_t head, tail, free_list; /* free nodes are chained through `next` */
};

tj_lru *tj_lru_new(uint32_t capacity, void (*retain)(void *), void (*release)(void *))
{
    if (capacity < 1 || capacity > MAX_CAPACITY)
        return NULL; /* an LRU of 0 holds nothing: a caller's mistake */
    tj_lru *l = calloc(1, sizeof *l);
    uint32_t nb = 16;
    while (nb < 2 * capacity)
        nb *= 2;
    if (l) {
        l->nodes = calloc(capacity, sizeof *l->nodes);
        l->buckets = malloc(nb * sizeof *l->buckets);
    }
    if (!l || !l->nodes || !l->buckets) {
        if (l) {
            free(l->nodes);
            free(l->buckets);
        }
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    l->retain = retain;
    l->release = release;
    l->capacity = capacity;
    l->nbuckets = nb;
    for (uint32_t i = 0; i < nb; i++)
        l->buckets[i] = NIL;
    l->head = l->tail = NIL;
    for (uint32_t i = 0; i < capacity; i++)
        l->nodes[i].next = i + 1 < capacity ? (int32_t)i + 1 : NIL;
    l->free_list = 0;
    return l;
}

void tj_lru_free(tj_lru *l)
{
    if (!l)
        return;
    for (int32_t i = l->head; i != NIL; i = l->nodes[i].next)
        if (l->release)
            l->release(l->nodes[i].value);
    pthread_mutex_destroy(&l->lock);
    free(l->nodes);
    free(l->buckets);
    free(l);
}

/* The key is already a uniform hash: its first bytes pick the bucket. */
static uint32_t bucket_of(const tj_lru *l, const tj_cache_key *k)
{
    uint32_t h;
    memcpy(&h, k->bytes, sizeof h);
    return h & (l->nbuckets - 1);
}

static int32_t find(const tj_lru *l, const tj_cache_key *k)
{
    for (int32_t i = l->buckets[bucket_of(l, k)]; i != NIL; i = l->nodes[i].chain)
        if (tj_cache_key_equal(&l->nodes[i].key, k))
            return i;
    return NIL;
}

static void unlink_order(tj_lru *l, int32_t i)
{
    lru_node *n = &l->nodes[i];
    if (n->prev != NIL)
        l->nodes[n->prev].next = n->next;
    else
        l->head = n->next;
    if (n->next != NIL)
        l->nodes[n->next].prev = n->prev;
    else
        l->tail = n->prev;
}

static void push_front(tj_lru *l, int32_t i)
{
    l->nodes[i].prev = NIL;
    l->nodes[i].next = l->head;
    if (l->head != NIL)
        l->nodes[l->head].prev = i;
    l->head = i;
    if (l->tail == NIL)
        l->tail = i;
}

static void unlink_bucket(tj_lru *l, int32_t i)
{
    int32_t *p = &l->buckets[bucket_of(l, &l->nodes[i].key)];
    while (*p != i)
        p = &l->nodes[*p].chain;
    *p = l->nodes[i].chain;
}

void *tj_lru_get(tj_lru *l, const tj_cache_key *k)
{
    if (!l || !k)
        return NULL;
    pthread_mutex_lock(&l->lock);
    int32_t i = find(l, k);
    void *v = NULL;
    if (i != NIL) {
        unlink_order(l, i);
        push_front(l, i);
        v = l->nodes[i].value;
        if (l->retain)
            l->retain(v);
    }
    pthread_mutex_unlock(&l->lock);
    return v;
}

/* Takes the least recently used node out; returns its value. */
static void *evict_tail(tj_lru *l)
{
    int32_t i = l->tail;
    unlink_order(l, i);
    unlink_bucket(l, i);
    l->nodes[i].next = l->free_list;
    l->free_list = i;
    l->count--;
    return l->nodes[i].value;
}

void tj_lru_put(tj_lru *l, const tj_cache_key *k, void *v)
{
    if (!l || !k || !v)
        return; /* NULL is what tj_lru_get returns for absent */
    void *dropped = NULL;
    if (l->retain)
        l->retain(v);
    pthread_mutex_lock(&l->lock);
    int32_t i = find(l, k);
    if (i != NIL) {
        dropped = l->nodes[i].value;
        l->nodes[i].value = v;
        unlink_order(l, i);
    } else {
        if (l->free_list == NIL)
            dropped = evict_tail(l);
        i = l->free_list;
        l->free_list = l->nodes[i].next;
        l->nodes[i].key = *k;
        l->nodes[i].value = v;
        uint32_t b = bucket_of(l, k);
        l->nodes[i].chain = l->buckets[b];
        l->buckets[b] = i;
        l->count++;
    }
    push_front(l, i);
    pthread_mutex_unlock(&l->lock);
    /* Outside the lock: releasing may free the value (unload a module). */
    if (dropped && l->release)
        l->release(dropped);
}

uint32_t tj_lru_count(tj_lru *l)
{
    if (!l)
        return 0;
    pthread_mutex_lock(&l->lock);
    uint32_t n = l->count;
    pthread_mutex_unlock(&l->lock);
    return n;
}
