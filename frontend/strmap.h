/* A hash map from names to int32 values (arena memory), and a set of names
 * that remembers insertion order. Lowering uses them for its environment
 * and for the names assigned in a block, which keeps large programs linear. */
#ifndef TJ_FRONTEND_STRMAP_H
#define TJ_FRONTEND_STRMAP_H

#include "tilejit/diag.h"

typedef struct fe_strmap {
    const char **keys; /* open addressing; NULL: empty */
    int32_t *vals;
    uint32_t cap, n;
} fe_strmap;

/* The value of `key`, or NULL when it is absent. */
int32_t *fe_strmap_find(const fe_strmap *m, const char *key);
/* The value of `key`, inserted with the value -1 when absent. */
int32_t *fe_strmap_put(tj_ctx *c, fe_strmap *m, const char *key);

typedef struct fe_names {
    fe_strmap map;
    const char **list; /* in insertion order */
    uint32_t n, cap;
} fe_names;

void fe_names_add(tj_ctx *c, fe_names *s, const char *name);
int fe_names_has(const fe_names *s, const char *name);

#endif
