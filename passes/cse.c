/* Tile IR pass: cse (in progress). */
#include "tilejit/passes.h"

int tj_pass_cse(tj_kernel *k)
{
    (void)k;
    return 0;
}
