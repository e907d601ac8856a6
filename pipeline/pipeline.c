/* The compile pipeline (tilejit/pipeline.h): the one list of steps from
 * Tile IR to optimized SIMT IR. Every client runs it whole (the CLI, the
 * benchmarks) or in two parts split at TJ_STEP_KEY (the JIT and the tuner
 * take their cache key in between); none spells the steps out itself. */
#include "pipeline/pipeline_internal.h"

typedef int (*step_fn)(tj_kernel **k, const tj_pipeline_options *o);

static int optimize(tj_kernel **k, const tj_pipeline_options *o) { return tj_optimize(*k, o->verify); }

static int facts(tj_kernel **k, const tj_pipeline_options *o)
{
    if (o->args)
        tj_facts_from_args(*k, o->args, o->nargs);
    return 0;
}

static int specialize(tj_kernel **k, const tj_pipeline_options *o)
{
    (void)o;
    return tj_pass_specialize(*k);
}

/* From here on the steps work on a copy: the specialized kernel, which the
 * JIT keyed its cache on and checks launches against, stays as it was. */
static int prefetch(tj_kernel **k, const tj_pipeline_options *o)
{
    (void)o;
    tj_kernel *copy = tj_kernel_clone(*k);
    if (!copy)
        return 1;
    *k = copy;
    return tj_pass_prefetch(copy);
}

static int dce(tj_kernel **k, const tj_pipeline_options *o)
{
    (void)o;
    return tj_pass_dce(*k);
}

static int lower(tj_kernel **k, const tj_pipeline_options *o)
{
    tj_kernel *simt = tj_lower_simt(*k, &o->lower);
    if (!simt)
        return 1;
    *k = simt;
    return 0;
}

typedef struct step {
    const char *name;
    step_fn run;
} step;

static const step steps[TJ_STEP_END] = {
    [TJ_STEP_OPTIMIZE_TILE] = {"optimize", optimize},
    [TJ_STEP_FACTS] = {"facts", facts},
    [TJ_STEP_SPECIALIZE] = {"specialize", specialize},
    [TJ_STEP_OPTIMIZE_SPECIALIZED] = {"optimize", optimize},
    [TJ_STEP_PREFETCH] = {"prefetch", prefetch},
    [TJ_STEP_DCE] = {"dce", dce},
    [TJ_STEP_LOWER] = {"lower-simt", lower},
    [TJ_STEP_OPTIMIZE_SIMT] = {"optimize", optimize},
};

const char *tj_step_name(tj_step s) { return s >= 0 && s < TJ_STEP_END ? steps[s].name : "?"; }

int tj_pipeline_run(tj_kernel **k, tj_step from, tj_step to, const tj_pipeline_options *opt)
{
    if (!k || !*k)
        return 1;
    if ((unsigned)from > TJ_STEP_END || (unsigned)to > TJ_STEP_END || from > to) {
        tj_error((*k)->ctx, "tj_pipeline_run: steps %d to %d are not a range of tj_step", (int)from, (int)to);
        return 1;
    }
    const tj_pipeline_options none = {0}, *o = opt ? opt : &none;
    for (tj_step s = from; s < to; s++) {
        if (steps[s].run(k, o))
            return 1;
        /* optimize prints and verifies after each of its passes */
        if (steps[s].run != optimize && tj_pipeline_after(*k, steps[s].name, o->verify))
            return 1;
    }
    return 0;
}

tj_kernel *tj_compile_simt(tj_kernel *k, const tj_pipeline_options *opt)
{
    return tj_pipeline_run(&k, TJ_STEP_OPTIMIZE_TILE, TJ_STEP_END, opt) ? NULL : k;
}
