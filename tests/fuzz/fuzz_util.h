/* The shape every DSL fuzz target shares: the bytes parsed as a program in
 * a fresh context, each program handed to `run` (with the input's length,
 * a cheap source of variation), diagnostics rendered. */
#ifndef TJ_FUZZ_UTIL_H
#define TJ_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tilejit/tilejit.h"

static inline int fuzz_program(const uint8_t *data, size_t size,
                               void (*run)(tj_ctx *c, const tj_program *p, size_t size))
{
    tj_ctx *c = tj_ctx_new();
    if (!c)
        return 0;
    tj_program *p = tj_parse_program(c, "fuzz.tj", (const char *)data, size);
    if (p)
        run(c, p, size);
    (void)tj_diag_render(c);
    tj_ctx_free(c);
    return 0;
}

#endif
