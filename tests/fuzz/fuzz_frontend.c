/* libFuzzer target: arbitrary bytes through the whole front end (parse, pick a
 * configuration, lower, verify, optimize) and the diagnostics renderer. Any
 * crash, hang, leak or sanitizer report is a bug. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"

static void lower_every_kernel(tj_ctx *c, const tj_program *p, size_t size)
{
    (void)size;
    static const tj_binding dims[] = {{"N", 64}, {"D", 32}, {"M", 16}, {"K", 32}, {"S", 32}};
    for (uint32_t i = 0; i < tj_program_kernel_count(p); i++) {
        tj_binding *config;
        uint32_t nconfig;
        if (tj_select_config(c, p, (int)i, NULL, 0, dims, 5, &config, &nconfig))
            continue;
        tj_kernel *k = tj_build_kernel(c, p, (int)i, config, nconfig, dims, 5);
        if (k && !tj_verify(k))
            tj_optimize(k, 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_program(data, size, lower_every_kernel); }
