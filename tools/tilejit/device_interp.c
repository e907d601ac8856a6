/* The `interp` device: the reference interpreter on the optimized Tile IR. */
#include "run.h"

static const char *interp_unavailable(tj_ctx *c)
{
    (void)c;
    return NULL;
}

static int interp_open(run_session *s)
{
    (void)s;
    return 0;
}

static int interp_run(run_session *s, tj_arg *args)
{
    return tj_interp_run(s->req->tile, args, s->req->nargs);
}

static int interp_time(run_session *s, const tj_arg *inputs, run_timing *t)
{
    return run_time_host(s, inputs, t, interp_run);
}

static void interp_close(run_session *s) { (void)s; }

const run_device run_device_interp = {
    "interp", "reference interpreter", interp_unavailable, NULL, interp_open, interp_run, interp_time, interp_close,
};
