/* The devices `run` can use, `tilejit devices`, and the timing helpers they
 * share. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run.h"

/* In the order `tilejit devices` lists them. */
static const run_device *const devices[] = {&run_device_cpu, &run_device_interp, &run_device_cuda, &run_device_metal};
enum { NDEVICES = sizeof devices / sizeof devices[0] };

/* The length of NAME's device kind: all of it, or what precedes ":N"
 * (decimal, for cuda only: the one kind of which a host has several);
 * -1 when the suffix is malformed. */
static int kind_length(const char *name)
{
    const char *colon = strchr(name, ':');
    if (!colon)
        return (int)strlen(name);
    size_t digits = strspn(colon + 1, "0123456789");
    if (strncmp(name, "cuda:", 5) || digits == 0 || digits > 4 || colon[1 + digits])
        return -1;
    return 4;
}

static int is_kind(const run_device *d, const char *name)
{
    int n = kind_length(name);
    return n >= 0 && strlen(d->name) == (size_t)n && !strncmp(d->name, name, (size_t)n);
}

int run_valid_device_name(const char *name)
{
    for (int i = 0; i < NDEVICES; i++)
        if (is_kind(devices[i], name))
            return 1;
    return 0;
}

int run_device_ordinal(const char *name)
{
    const char *colon = name ? strchr(name, ':') : NULL;
    return colon && kind_length(name) >= 0 ? atoi(colon + 1) : 0;
}

const char *run_device_names(tj_ctx *c)
{
    tj_buf b = {0};
    for (int i = 0; i < NDEVICES; i++)
        tj_buf_printf(&b, "%s%s", i ? ", " : "", devices[i]->name);
    return cli_buf_take(c, &b);
}

const run_device *run_find_device(tj_ctx *c, const char *name)
{
    if (!name) /* the default: a GPU when there is one */
        return run_device_cuda.unavailable(c) ? &run_device_cpu : &run_device_cuda;
    for (int i = 0; i < NDEVICES; i++) {
        const run_device *d = devices[i];
        if (!is_kind(d, name))
            continue;
        const char *why = d->unavailable(c);
        if (!why)
            return d;
        tj_error(c, "device '%s' is not available: %s", d->name, why);
        return NULL;
    }
    tj_error(c, "unknown device '%s' (devices: %s)", name, run_device_names(c));
    return NULL;
}

int cmd_devices(tj_ctx *c, const cli_opts *o)
{
    (void)o;
    for (int i = 0; i < NDEVICES; i++) {
        const run_device *d = devices[i];
        if (d->describe) {
            d->describe(c, d);
            continue;
        }
        const char *why = d->unavailable(c);
        if (why)
            printf("%s: not available: %s\n", d->name, why);
        else
            printf("%s (%s)\n", d->name, d->what);
    }
    return CLI_OK;
}

/* ---- timing ------------------------------------------------------------------------ */

double run_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double run_median(double *times, int n)
{
    qsort(times, (size_t)n, sizeof *times, compare_double);
    return n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
}

int run_count(const run_timing *t, double first_s)
{
    double fit = first_s > 0 ? t->budget_s / first_s : t->max_runs;
    return fit < t->min_runs ? t->min_runs : fit > t->max_runs ? t->max_runs : (int)fit;
}

static int timed_host_run(run_session *s, int (*run)(run_session *s, tj_arg *args), tj_arg *scratch,
                          const tj_arg *inputs, double *seconds)
{
    run_restore_args(scratch, inputs, s->req->nargs);
    double t0 = run_now_s();
    if (run(s, scratch))
        return -1;
    *seconds = run_now_s() - t0;
    return 0;
}

int run_time_host(run_session *s, const tj_arg *inputs, run_timing *t, int (*run)(run_session *s, tj_arg *args))
{
    tj_arg *scratch = run_copy_args(s->c, inputs, s->req->nargs);
    double warmup;
    if (timed_host_run(s, run, scratch, inputs, &warmup))
        return -1;
    t->runs = run_count(t, warmup);
    double *times = tj_alloc(s->c, (size_t)t->runs * sizeof *times);
    for (int r = 0; r < t->runs; r++)
        if (timed_host_run(s, run, scratch, inputs, &times[r]))
            return -1;
    t->median_s = run_median(times, t->runs);
    return 0;
}
