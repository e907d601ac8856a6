/* tilejit: a JIT compiler for tiled GPU kernels. The umbrella header. */
#ifndef TILEJIT_TILEJIT_H
#define TILEJIT_TILEJIT_H

#include "tilejit/diag.h"
#include "tilejit/ir.h"
#include "tilejit/frontend.h"
#include "tilejit/passes.h"
#include "tilejit/interp.h"
#include "tilejit/lower.h"

#define TILEJIT_VERSION "0.1.0"

#endif
