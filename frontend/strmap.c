/* Name maps and name sets. */
#include <string.h>

#include "frontend/strmap.h"

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The table index holding `key`, or the empty one where it would go. */
static uint32_t probe(const fe_strmap *m, const char *key)
{
    uint32_t i = hash_name(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key))
        i = (i + 1) & (m->cap - 1);
    return i;
}

int32_t *fe_strmap_find(const fe_strmap *m, const char *key)
{
    if (!m->cap)
        return NULL;
    uint32_t i = probe(m, key);
    return m->keys[i] ? &m->vals[i] : NULL;
}

static void rehash(tj_ctx *c, fe_strmap *m)
{
    fe_strmap bigger = {.cap = m->cap ? 2 * m->cap : 16};
    bigger.keys = tj_alloc(c, sizeof *bigger.keys * bigger.cap);
    bigger.vals = tj_alloc(c, sizeof *bigger.vals * bigger.cap);
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            uint32_t j = probe(&bigger, m->keys[i]);
            bigger.keys[j] = m->keys[i];
            bigger.vals[j] = m->vals[i];
            bigger.n++;
        }
    *m = bigger;
}

int32_t *fe_strmap_put(tj_ctx *c, fe_strmap *m, const char *key)
{
    if (2 * (m->n + 1) > m->cap)
        rehash(c, m);
    uint32_t i = probe(m, key);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->vals[i] = -1;
        m->n++;
    }
    return &m->vals[i];
}

void fe_names_add(tj_ctx *c, fe_names *s, const char *name)
{
    if (!name || fe_strmap_find(&s->map, name))
        return;
    fe_strmap_put(c, &s->map, name);
    s->list = tj_grow(c, s->list, &s->cap, s->n + 1, sizeof *s->list);
    s->list[s->n++] = name;
}

int fe_names_has(const fe_names *s, const char *name) { return fe_strmap_find(&s->map, name) != NULL; }
