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

static int cpu_time(run_session *s, const tj_arg *inputs, run_timing *t)
{
    return run_time_host(s, inputs, t, cpu_run);
}

static void cpu_close(run_session *s) { (void)s; }

const run_device run_device_cpu = {
    "cpu", "reference interpreter", cpu_unavailable, NULL, cpu_open, cpu_run, cpu_time, cpu_close,
};
