/* The pass pipeline (in progress). */
#include <string.h>

#include "tilejit/passes.h"

tj_pass_fn tj_pass_lookup(const char *name)
{
    if (!strcmp(name, "canonicalize"))
        return tj_pass_canonicalize;
    if (!strcmp(name, "cse"))
        return tj_pass_cse;
    if (!strcmp(name, "dce"))
        return tj_pass_dce;
    return NULL;
}

int tj_run_passes(tj_kernel *k, const char *names, int verify)
{
    (void)k; (void)names; (void)verify;
    return 0;
}

int tj_optimize(tj_kernel *k, int verify) { return tj_run_passes(k, "canonicalize,cse,dce", verify); }
