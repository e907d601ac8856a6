/* The one path from Tile IR to optimized SIMT IR, shared by the JIT, the
 * command line and the benchmarks. */
#include "tilejit/tilejit.h"

tj_kernel *tj_lower_pipeline(tj_kernel *k, const tj_lower_options *opt, int verify)
{
    if (tj_optimize(k, verify) || tj_pass_specialize(k) || tj_optimize(k, verify))
        return NULL;
    tj_kernel *simt = tj_lower_simt(k, opt);
    return simt && !tj_optimize(simt, verify) ? simt : NULL;
}
