/* The `metal` device: MSL through the Metal runtime (include/tilejit/metal.h).
 * Off macOS the runtime's open fails, and the device says why. */
#include "tilejit/metal.h"

#include "run.h"

typedef struct metal_state {
    tj_metal *metal;
    tj_metal_pipeline *pipeline;
    const tj_kernel *simt;
} metal_state;

static const char *metal_unavailable(tj_ctx *c)
{
    tj_rt_error err = {{0}};
    tj_metal *m = tj_metal_open("", &err);
    if (!m)
        return tj_strdup(c, err.msg);
    tj_metal_close(m);
    return NULL;
}

static int metal_fail(run_session *s, const char *doing, const tj_rt_error *err)
{
    tj_error(s->c, "metal: %s: %s", doing, err->msg);
    return -1;
}

static int metal_open(run_session *s)
{
    metal_state *st = tj_alloc(s->c, sizeof *st);
    s->impl = st;
    tj_rt_error err = {{0}};
    if (!(st->metal = tj_metal_open(NULL, &err)))
        return metal_fail(s, "opening the device", &err);
    st->simt = tj_metal_compile(st->metal, s->req->tile, s->req->args, s->req->nargs, &st->pipeline, &err);
    return st->simt ? 0 : metal_fail(s, "compiling", &err);
}

static int metal_run(run_session *s, tj_arg *args)
{
    metal_state *st = s->impl;
    tj_rt_error err = {{0}};
    if (tj_metal_launch(st->metal, st->pipeline, st->simt, args, s->req->nargs, &err))
        return metal_fail(s, "running the kernel", &err);
    return 0;
}

/* The time of a run includes the wait for its completion. */
static int metal_time(run_session *s, const tj_arg *inputs, run_timing *t)
{
    return run_time_host(s, inputs, t, metal_run);
}

static void metal_close(run_session *s)
{
    metal_state *st = s->impl;
    if (st && st->metal)
        tj_metal_close(st->metal);
}

const run_device run_device_metal = {
    "metal", "Apple GPUs", metal_unavailable, NULL, metal_open, metal_run, metal_time, metal_close,
};
