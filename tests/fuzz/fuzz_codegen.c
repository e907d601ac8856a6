/* libFuzzer target: arbitrary bytes as a DSL program through everything a
 * launch does before the driver: front end, specialization, prefetch, the
 * lowering to SIMT IR (layouts, matrix atoms), and both code generators (PTX
 * for sm_90a, MSL within Metal's threadgroup memory); for PTX also with the
 * facts of contiguous, aligned tensors (vector accesses, copy rings). Any
 * crash, hang, leak or sanitizer report is a bug; errors are expected. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"

static void generate(tj_kernel *tile, const tj_lower_options *opt, int msl)
{
    tj_kernel *simt = tj_compile_simt(tile, &(tj_pipeline_options){.lower = opt ? *opt : (tj_lower_options){0}, .verify = 1});
    if (!simt)
        return;
    tj_buf out = {0};
    if (msl)
        tj_emit_msl(simt, &out);
    else
        tj_emit_ptx(simt, "sm_90a", &out);
    tj_buf_free(&out);
}

static const tj_binding dims[] = {{"N", 64}, {"D", 32}, {"M", 16}, {"K", 32}, {"S", 32}};

static void compile_every_kernel(tj_ctx *c, const tj_program *p, size_t size)
{
    (void)size;
    const tj_lower_options metal = {.target = TJ_LOWER_METAL};
    for (uint32_t i = 0; i < tj_program_kernel_count(p) && i < 4; i++) {
        tj_binding *config;
        uint32_t nconfig;
        if (tj_select_config(c, p, (int)i, NULL, 0, dims, 5, &config, &nconfig))
            continue;
        tj_kernel *k = tj_build_kernel(c, p, (int)i, config, nconfig, dims, 5);
        if (!k || tj_verify(k))
            continue;
        tj_kernel *copy = tj_kernel_clone(k), *aligned = tj_kernel_clone(k);
        generate(k, NULL, 0);
        if (copy)
            generate(copy, &metal, 1);
        if (aligned) {
            tj_facts_contiguous(aligned, dims, 5, 48); /* dims not in the table: 48 */
            generate(aligned, NULL, 0);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_program(data, size, compile_every_kernel); }
