/* libFuzzer target: arbitrary bytes through the IR text parser, the verifier,
 * the printer and the optimization pipeline. */
#include <stdint.h>

#include "tilejit/tilejit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tj_ctx *c = tj_ctx_new();
    if (!c)
        return 0;
    tj_kernel *ks[4];
    int n = tj_parse_ir(c, "fuzz.tjir", (const char *)data, size, ks, 4);
    for (int i = 0; i < n; i++) {
        if (tj_verify(ks[i]))
            continue;
        tj_buf out = {0};
        tj_print_kernel(ks[i], &out);
        tj_buf_free(&out);
        tj_optimize(ks[i], 1);
    }
    (void)tj_diag_render(c);
    tj_ctx_free(c);
    return 0;
}
