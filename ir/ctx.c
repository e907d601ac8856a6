/* Context, arena and source registry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx_internal.h"

enum { CHUNK_MIN = 64 * 1024 };

tj_ctx *tj_ctx_new(void)
{
    tj_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ntypes = 1; /* type 0: void */
    c->nsources = 1;
    return c;
}

void tj_ctx_free(tj_ctx *c)
{
    if (!c)
        return;
    for (tj_chunk *k = c->chunks, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    free(c); /* types, sources and diagnostics live in the arena */
}

jmp_buf *tj_ctx_swap_guard(tj_ctx *c, jmp_buf *jb)
{
    if (!c)
        return NULL;
    jmp_buf *old = c->guard;
    c->guard = jb;
    return old;
}

int tj_guarded(tj_ctx *c, int (*fn)(void *arg), void *arg)
{
    if (!c || !fn)
        return -1;
    /* Nothing here changes after setjmp, so nothing is lost by the jump. */
    jmp_buf jb;
    jmp_buf *const outer = tj_ctx_swap_guard(c, &jb);
    if (setjmp(jb)) {
        c->guard = outer;
        tj_error(c, "out of memory");
        return -1;
    }
    int rc = fn(arg);
    c->guard = outer;
    return rc;
}

/* Guarded, the failure unwinds to the entry point. Unguarded (an embedder
 * calling the builder directly), the failing call returns NULL and the error
 * is counted, though there is no memory left to word it. */
static void *out_of_memory(tj_ctx *c)
{
    if (c->guard)
        longjmp(*c->guard, 1);
    c->nerrors++;
    return NULL;
}

void *tj_alloc(tj_ctx *c, size_t size)
{
    if (!c)
        return NULL;
    /* A size whose rounding (or chunk header) would wrap is no request
     * malloc could meet: it would otherwise become a tiny allocation. */
    if (size > SIZE_MAX - sizeof(tj_chunk) - 15)
        return out_of_memory(c);
    size = (size + 15) & ~(size_t)15;
    tj_chunk *k = c->chunks;
    if (!k || k->cap - k->used < size) {
        size_t cap = size > CHUNK_MIN ? size : CHUNK_MIN;
        if (k && cap < k->cap * 2 && k->cap < 16 * CHUNK_MIN)
            cap = k->cap * 2 > size ? k->cap * 2 : size;
        k = malloc(sizeof *k + cap);
        if (!k)
            return out_of_memory(c);
        k->used = 0;
        k->cap = cap;
        k->next = c->chunks;
        c->chunks = k;
    }
    void *p = k->data + k->used;
    k->used += size;
    memset(p, 0, size);
    return p;
}

void *tj_realloc(tj_ctx *c, void *old, size_t old_size, size_t new_size)
{
    void *p = tj_alloc(c, new_size);
    if (old && p)
        memcpy(p, old, old_size < new_size ? old_size : new_size);
    return p;
}

/* The capacity, from cap doubling, that holds need elements of elem bytes;
 * 0 when their size would not fit a size_t. */
static uint32_t grown_capacity(uint32_t cap, uint32_t need, size_t elem)
{
    uint32_t n = cap ? cap : 8;
    while (n < need)
        n = n > UINT32_MAX / 2 ? need : n * 2; /* doubling past 2^31 would wrap to 0 */
    return elem && n > SIZE_MAX / elem ? 0 : n; /* n * elem would wrap to a small block */
}

void *tj_grow(tj_ctx *c, void *arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (!c || !cap)
        return NULL;
    if (need <= *cap)
        return arr;
    uint32_t n = grown_capacity(*cap, need, elem);
    if (!n)
        return out_of_memory(c);
    void *grown = tj_realloc(c, arr, (size_t)*cap * elem, (size_t)n * elem);
    if (grown)
        *cap = n;
    return grown;
}

void *tj_heap_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (!cap)
        return NULL;
    if (need <= *cap)
        return arr;
    uint32_t n = grown_capacity(*cap, need, elem);
    void *grown = n ? realloc(arr, (size_t)n * elem) : NULL;
    if (grown)
        *cap = n;
    return grown;
}

int tj_heap_grow_in_place(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    void *grown = arr ? tj_heap_grow(*arr, cap, need, elem) : NULL;
    if (!grown)
        return 1;
    *arr = grown;
    return 0;
}

char *tj_strndup(tj_ctx *c, const char *s, size_t n)
{
    if (!c || !tj_array_ok(s, n))
        return NULL;
    char *p = tj_alloc(c, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *tj_strdup(tj_ctx *c, const char *s) { return s ? tj_strndup(c, s, strlen(s)) : NULL; }

uint32_t tj_source_add(tj_ctx *c, const char *name, const char *text, size_t len)
{
    if (!c)
        return 0;
    if (!tj_array_ok(text, len)) {
        tj_error(c, "tj_source_add: NULL text of %zu bytes", len);
        return 0;
    }
    tj_source *grown = tj_grow(c, c->sources, &c->scap, c->nsources + 1, sizeof *c->sources);
    if (!grown)
        return 0;
    c->sources = grown;
    tj_source *s = &c->sources[c->nsources];
    s->name = tj_strdup(c, name ? name : "<input>");
    s->text = tj_strndup(c, text ? text : "", len);
    s->len = len;
    if (!s->name || !s->text)
        return 0;
    return c->nsources++;
}

const char *tj_source_name(const tj_ctx *c, uint32_t file)
{
    return c && file && file < c->nsources ? c->sources[file].name : NULL;
}

const char *tj_source_text(const tj_ctx *c, uint32_t file, size_t *len)
{
    if (!c || !file || file >= c->nsources)
        return NULL;
    if (len)
        *len = c->sources[file].len;
    return c->sources[file].text;
}
