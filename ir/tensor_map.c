/* The TMA tensor maps of a SIMT kernel (tilejit/ir.h): what its tma_load
 * and tma_store instructions name, so that the PTX generator declares them as kernel
 * parameters and the runtime encodes them at launch in the same order. */
#include <string.h>

#include "tilejit/ir.h"

int tj_tensor_map_desc_of(const tj_kernel *k, tj_ref r, tj_tensor_map_desc *out)
{
    const tj_inst *in = r && r < k->ninsts ? &k->insts[r] : NULL;
    if (!in || (in->op != TJ_OP_TMA_LOAD && in->op != TJ_OP_TMA_STORE) || in->nargs < 1 || !in->args[0] || in->args[0] >= k->ninsts)
        return -1;
    const tj_inst *p = &k->insts[in->args[0]];
    if (p->op != TJ_OP_PARAM || p->imm < 0 || (uint64_t)p->imm >= k->nparams)
        return -1;
    *out = (tj_tensor_map_desc){(uint32_t)p->imm, (uint32_t)(in->imm & 0xffff), (uint32_t)(in->imm >> 16 & 0xffff),
                                in->flags, (uint32_t)(in->imm >> 32 & 0xff)};
    return 0;
}

int tj_tensor_maps(const tj_kernel *k, tj_tensor_map_desc out[TJ_MAX_TENSOR_MAPS])
{
    int n = 0;
    for (tj_ref r = 1; r < k->ninsts; r++) {
        tj_tensor_map_desc d;
        if (!k->insts[r].block || tj_tensor_map_desc_of(k, r, &d))
            continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = !memcmp(&out[i], &d, sizeof d);
        if (seen)
            continue;
        if (n == TJ_MAX_TENSOR_MAPS)
            return -1;
        out[n++] = d;
    }
    return n;
}
