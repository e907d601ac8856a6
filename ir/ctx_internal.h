/* The context's private layout, shared by ir/ctx.c, ir/diag.c and ir/types.c
 * (and nothing outside ir/: the layering check enforces it). */
#ifndef TJ_CTX_INTERNAL_H
#define TJ_CTX_INTERNAL_H

#include <setjmp.h>

#include "tilejit/ir.h"

typedef struct tj_chunk {
    struct tj_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} tj_chunk;

typedef struct tj_source {
    const char *name;
    const char *text;
    size_t len;
} tj_source;

struct tj_ctx {
    tj_chunk *chunks;
    jmp_buf *guard;
    /* sources: index 0 unused */
    tj_source *sources;
    uint32_t nsources, scap;
    tj_diag *diags;
    uint32_t ndiags, dcap, nerrors;
    /* interned types: index 0 is void */
    tj_type_info *types;
    uint32_t ntypes, tcap;
    uint32_t *type_hash; /* open addressing, 0 = empty */
    uint32_t hcap;
};


#endif
