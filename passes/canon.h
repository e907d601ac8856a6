/* The state canonicalize.c and simplify.c share. Internal to passes/. */
#ifndef TJ_CANON_H
#define TJ_CANON_H

#include "passes/pass_util.h"

typedef struct tj_canon {
    tj_kernel *k;
    tj_fwd fwd;
    tj_cursor at;   /* new values go before the instruction being simplified */
    tj_ref **tuple; /* tuple[r]: the elements of removed tuple value r, or NULL */
    uint32_t tuple_cap;
    int changed;
} tj_canon;

/* Simplifies pure instruction r: folding and algebraic identities. Returns
 * the value that replaces r, or TJ_NONE; r may instead have been rewritten
 * in place (cx->changed is then set). New instructions go at cx->at. */
tj_ref tj_simplify(tj_canon *cx, tj_ref r);

#endif
