/* The `cpu` device: the reference interpreter on the optimized Tile IR. */
#include "run.h"

static const char *cpu_unavailable(tj_ctx *c)
{
    (void)c;
    return NULL;
}

static int cpu_open(run_session *s)
{
    (void)s;
    return 0;
}

static int cpu_run(run_session *s, tj_arg *args)
{
    return tj_interp_run(s->req->tile, args, s->req->nargs);
}

/* One run on scratch copies restored from the inputs first (not timed), so
 * atomics do not pile up from run to run. */
static int timed_run(run_session *s, tj_arg *scratch, const tj_arg *inputs, double *seconds)
{
    run_restore_args(scratch, inputs, s->req->nargs);
    double t0 = run_now_s();
    if (cpu_run(s, scratch))
        return -1;
    *seconds = run_now_s() - t0;
    return 0;
}

static int cpu_time(run_session *s, const tj_arg *inputs, run_timing *t)
{
    tj_arg *scratch = run_copy_args(s->c, inputs, s->req->nargs);
    double warmup;
    if (timed_run(s, scratch, inputs, &warmup))
        return -1;
    t->runs = run_count(t, warmup);
    double *times = tj_alloc(s->c, (size_t)t->runs * sizeof *times);
    for (int r = 0; r < t->runs; r++)
        if (timed_run(s, scratch, inputs, &times[r]))
            return -1;
    t->median_s = run_median(times, t->runs);
    return 0;
}

static void cpu_close(run_session *s) { (void)s; }

const run_device run_device_cpu = {
    "cpu", "reference interpreter", cpu_unavailable, NULL, cpu_open, cpu_run, cpu_time, cpu_close,
};
