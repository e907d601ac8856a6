/* What the pipeline's steps and the pass registry share (pipeline/ only). */
#ifndef TJ_PIPELINE_INTERNAL_H
#define TJ_PIPELINE_INTERNAL_H

#include "tilejit/pipeline.h"

/* After a step or pass named `name` changed k: prints k when TJ_DUMP asks
 * for it, then verifies k when `verify` or TJ_VERIFY=1 asks for it (an
 * internal error naming the step). 0 when k is fine. */
int tj_pipeline_after(tj_kernel *k, const char *name, int verify);

#endif
