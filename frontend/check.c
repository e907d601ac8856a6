/* tj_check_program: every kernel of a file through configuration
 * selection, building and the verifier, as `tilejit check` does. */
#include "frontend/ast.h"

enum { PLACEHOLDER_DIM = 64 }; /* the size dims take when used as extents */

typedef struct check_job {
    tj_ctx *c;
    const tj_program *p;
} check_job;

static tj_binding *placeholder_dims(tj_ctx *c, const fe_kernel *kd, uint32_t *n)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < kd->nparams; i++)
        count += (uint32_t)kd->params[i].rank;
    tj_binding *dims = tj_alloc(c, sizeof *dims * (count ? count : 1));
    *n = 0;
    for (uint32_t i = 0; i < kd->nparams; i++)
        for (int d = 0; d < kd->params[i].rank; d++)
            if (kd->params[i].dim_names[d])
                dims[(*n)++] = (tj_binding){kd->params[i].dim_names[d], PLACEHOLDER_DIM};
    return dims;
}

static void check_kernel(tj_ctx *c, const tj_program *p, int i)
{
    tj_binding *config;
    uint32_t nconfig, ndims;
    if (tj_select_config(c, p, i, NULL, 0, NULL, 0, &config, &nconfig))
        return;
    tj_binding *dims = placeholder_dims(c, &p->kernels[i], &ndims);
    tj_kernel *k = tj_build_kernel(c, p, i, config, nconfig, dims, ndims);
    if (k && tj_verify(k))
        tj_error_at(c, p->kernels[i].loc, "internal error: the IR built for kernel '%s' does not verify (a front-end bug)",
                    p->kernels[i].name);
}

static int check_all(void *arg)
{
    check_job *j = arg;
    for (uint32_t i = 0; i < j->p->nkernels; i++)
        check_kernel(j->c, j->p, (int)i);
    return 0;
}

int tj_check_program(tj_ctx *c, const tj_program *p)
{
    if (!c || !p)
        return 1;
    uint32_t errors = tj_error_count(c);
    check_job job = {c, p};
    if (tj_guarded(c, check_all, &job))
        return 1;
    return tj_error_count(c) != errors;
}
