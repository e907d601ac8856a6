/* Requests tj_jit_compile has seen: the fast path of a memory-cache hit.
 *
 * A request is remembered as its signature (kernel name, tile parameters,
 * the arguments' dtypes, shapes and specialization facts, the arch and
 * the tuning mode, packed) and its source text, and is found again by
 * comparing both exactly. The hash that picks the LRU slot reads the
 * signature and only the length, head and tail of the source: exact
 * comparison makes any collision harmless, and a memcmp of the source is
 * far cheaper than hashing it (this path has a budget of a microsecond). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_jit.h"
#include "tilejit/passes.h"

enum { SOURCE_SAMPLE = 64 };

typedef struct request_memo {
    atomic_int refs;
    tj_requests *owner;
    void *fn;
    size_t sig_len, src_len;
    unsigned char data[]; /* the signature, then the source */
} request_memo;

struct tj_requests {
    tj_lru *lru;
    void (*retain)(void *);
    void (*release)(void *);
};

static void memo_retain(void *v) { atomic_fetch_add(&((request_memo *)v)->refs, 1); }

static void memo_release(void *v)
{
    request_memo *m = v;
    if (atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    if (m->owner->release)
        m->owner->release(m->fn);
    free(m);
}

tj_requests *tj_requests_new(uint32_t capacity, void (*retain)(void *), void (*release)(void *))
{
    tj_requests *r = calloc(1, sizeof *r);
    if (r)
        r->lru = tj_lru_new(capacity, memo_retain, memo_release);
    if (!r || !r->lru) {
        free(r);
        return NULL;
    }
    r->retain = retain;
    r->release = release;
    return r;
}

void tj_requests_free(tj_requests *r)
{
    if (!r)
        return;
    tj_lru_free(r->lru);
    free(r);
}

/* ---- the signature ------------------------------------------------------------------ */

static void put(tj_jit_request *s, const void *data, size_t n)
{
    if (s->len + n > sizeof s->sig) {
        s->usable = 0;
        return;
    }
    memcpy(s->sig + s->len, data, n);
    s->len += n;
}

static void put_str(tj_jit_request *s, const char *str) { put(s, str ? str : "", str ? strlen(str) + 1 : 1); }

static void put_tensor(tj_jit_request *s, const tj_tensor *t)
{
    int rank = t->rank < 0 ? 0 : t->rank > TJ_MAX_RANK ? TJ_MAX_RANK : t->rank;
    /* everything tj_facts_from_args and the front end read */
    tj_facts f = tj_facts_of_tensor(t);
    unsigned char head[5] = {(unsigned char)t->dtype, (unsigned char)rank, f.unit_stride, f.aligned16, 0};
    for (int a = 0; a < rank; a++)
        head[4] |= (unsigned char)(f.stride_div16[a] << a);
    put(s, head, sizeof head);
    put(s, t->shape, sizeof t->shape[0] * (size_t)rank);
}

static void build_signature(tj_jit_request *s, const tj_compile_request *req, const char *arch, int mode)
{
    s->len = 0;
    s->usable = 1;
    unsigned char m = (unsigned char)mode, quick = (unsigned char)(req->quick != 0);
    put(s, &m, 1);
    put(s, &quick, 1);
    put_str(s, arch);
    put_str(s, req->kernel);
    put(s, &req->nparams, sizeof req->nparams);
    for (uint32_t i = 0; req->params && i < req->nparams; i++) {
        put_str(s, req->params[i].name);
        put(s, &req->params[i].value, sizeof req->params[i].value);
    }
    put(s, &req->nargs, sizeof req->nargs);
    for (uint32_t i = 0; req->args && i < req->nargs; i++) {
        unsigned char tensor = (unsigned char)(req->args[i].is_tensor != 0);
        put(s, &tensor, 1);
        if (tensor)
            put_tensor(s, &req->args[i].tensor);
    }
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static tj_cache_key slot_key(const tj_jit_request *s, const tj_compile_request *req)
{
    size_t len = req->source ? req->len : 0, sample = len < SOURCE_SAMPLE ? len : SOURCE_SAMPLE;
    uint64_t h = fnv1a(0xcbf29ce484222325ull, s->sig, s->len);
    h = fnv1a(h, &len, sizeof len);
    if (sample) {
        h = fnv1a(h, req->source, sample);
        h = fnv1a(h, req->source + len - sample, sample);
    }
    tj_cache_key k = {{0}};
    memcpy(k.bytes, &h, sizeof h);
    k.bytes[8] = 'R'; /* apart from the kernel keys' space */
    return k;
}

static int same_request(const request_memo *m, const tj_jit_request *s, const tj_compile_request *req)
{
    size_t len = req->source ? req->len : 0;
    return m->sig_len == s->len && m->src_len == len && !memcmp(m->data, s->sig, s->len) &&
           !memcmp(m->data + s->len, req->source, len);
}

void *tj_requests_find(tj_requests *r, const tj_compile_request *req, const char *arch, int mode,
                       tj_jit_request *seen)
{
    build_signature(seen, req, arch, mode);
    if (!seen->usable)
        return NULL;
    tj_cache_key k = slot_key(seen, req);
    request_memo *m = tj_lru_get(r->lru, &k);
    void *fn = NULL;
    if (m && same_request(m, seen, req)) {
        fn = m->fn;
        if (r->retain)
            r->retain(fn);
    }
    if (m)
        memo_release(m);
    return fn;
}

void tj_requests_remember(tj_requests *r, const tj_jit_request *seen, const tj_compile_request *req, void *fn)
{
    size_t len = req->source ? req->len : 0;
    if (!seen->usable)
        return;
    request_memo *m = malloc(sizeof *m + seen->len + len);
    if (!m)
        return;
    atomic_init(&m->refs, 0);
    m->owner = r;
    m->fn = fn;
    m->sig_len = seen->len;
    m->src_len = len;
    memcpy(m->data, seen->sig, seen->len);
    if (len)
        memcpy(m->data + seen->len, req->source, len);
    if (r->retain)
        r->retain(fn); /* the memo's hold on fn */
    tj_cache_key k = slot_key(seen, req);
    tj_lru_put(r->lru, &k, m); /* the LRU's hold on the memo */
}
