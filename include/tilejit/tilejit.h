/* tilejit: a JIT compiler for tiled GPU kernels. The umbrella header: every
 * stage's public API, bottom up (docs/design.md). */
#ifndef TILEJIT_TILEJIT_H
#define TILEJIT_TILEJIT_H

#include "tilejit/diag.h"
#include "tilejit/ir.h"
#include "tilejit/args.h"
#include "tilejit/frontend.h"
#include "tilejit/passes.h"
#include "tilejit/interp.h"
#include "tilejit/lower.h"
#include "tilejit/codegen.h"
#include "tilejit/pipeline.h"
#include "tilejit/jit.h"      /* the embedding API: compile, launch, cache, tune */
#include "tilejit/dispatch.h" /* one kernel at every shape */

#endif
