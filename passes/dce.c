/* Tile IR pass: dce (in progress). */
#include "tilejit/passes.h"

int tj_pass_dce(tj_kernel *k)
{
    (void)k;
    return 0;
}
