/* Tile IR pass: canonicalize (in progress). */
#include "tilejit/passes.h"

int tj_pass_canonicalize(tj_kernel *k)
{
    (void)k;
    return 0;
}
