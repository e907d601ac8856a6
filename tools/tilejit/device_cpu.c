/* The `cpu` device: native code from the LLVM back end (tilejit/cpu.h),
 * compiled through the JIT API (tilejit/jit.h) for the example arguments
 * and launched on the host's tensors. Built without LLVM, the JIT's cpu
 * runs the reference interpreter, and this says so once. */
#include <stdio.h>

#include "run.h"
#include "tilejit/cpu.h"
#include "tilejit/jit.h"

typedef struct cpu_state {
    tj_jit *jit;
    tj_fn *fn;
} cpu_state;

static const char *cpu_unavailable(tj_ctx *c)
{
    (void)c;
    return NULL; /* the interpreter stands in */
}

static void cpu_describe(tj_ctx *c, const run_device *d)
{
    (void)c;
    const char *why;
    if (tj_cpu_available(&why))
        printf("%s (native code: LLVM, all cores or $TILEJIT_CPU_THREADS)\n", d->name);
    else
        printf("%s (the reference interpreter: %s)\n", d->name, why);
}

static int cpu_fail(run_session *s, const char *doing, const tj_rt_error *err)
{
    tj_error(s->c, "device cpu: %s: %s", doing, err->msg);
    return -1;
}

static int cpu_open(run_session *s)
{
    const run_request *r = s->req;
    cpu_state *st = s->impl = tj_alloc(s->c, sizeof *st);
    tj_rt_error err = {{0}};
    st->jit = tj_jit_open(TJ_DEVICE_CPU, 0, &err);
    if (!st->jit)
        return cpu_fail(s, "opening", &err);
    if (tj_jit_cpu_fallback(st->jit))
        fprintf(stderr, "note: --device cpu runs the reference interpreter: %s\n", tj_jit_cpu_fallback(st->jit));
    tj_compile_request req = {
        .file = r->k->path, .source = r->k->text, .len = r->k->len, .kernel = r->tile->name,
        .params = r->defines, .nparams = r->ndefines, .args = r->args, .nargs = r->nargs,
    };
    st->fn = tj_jit_compile(st->jit, &req, &err);
    return st->fn ? 0 : cpu_fail(s, "compiling", &err);
}

static int cpu_run(run_session *s, tj_arg *args)
{
    cpu_state *st = s->impl;
    tj_rt_error err = {{0}};
    return tj_fn_launch(st->fn, args, s->req->nargs, NULL, &err) ? cpu_fail(s, "running the kernel", &err) : 0;
}

static int cpu_time(run_session *s, const tj_arg *inputs, run_timing *t)
{
    return run_time_host(s, inputs, t, cpu_run);
}

static void cpu_close(run_session *s)
{
    cpu_state *st = s->impl;
    if (st)
        tj_jit_close(st->jit);
}

const run_device run_device_cpu = {
    "cpu", "native code (LLVM)", cpu_unavailable, cpu_describe, cpu_open, cpu_run, cpu_time, cpu_close,
};
