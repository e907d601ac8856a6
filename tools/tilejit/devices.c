/* The devices `run` can use, and `tilejit devices`. The CUDA runtime loads
 * the driver with dlopen, so the tool works on machines without a GPU. */
#include <string.h>

#include "cli.h"
#include "tilejit/cuda.h"

static const char *cpu_unavailable(tj_ctx *c)
{
    (void)c;
    return NULL;
}

static const char *cuda_unavailable(tj_ctx *c)
{
    tj_rt_error err = {{0}};
    tj_cuda *cu = tj_cuda_open(0, &err);
    if (!cu)
        return tj_strdup(c, err.msg);
    tj_cuda_close(cu);
    return "the PTX back end is not written yet";
}

static const char *metal_unavailable(tj_ctx *c)
{
    (void)c;
#if defined(__APPLE__)
    return "tilejit's Metal runtime is not written yet";
#else
    return "Metal needs macOS";
#endif
}

/* Lists each GPU the driver reports, and why `run` cannot use them yet. */
static void describe_cuda(tj_ctx *c, const cli_device *d)
{
    char buf[4096];
    int count = tj_cuda_describe(buf, sizeof buf);
    fputs(buf, stdout);
    const char *why = count > 0 ? d->unavailable(c) : NULL;
    if (why)
        printf("cuda: run cannot use these yet: %s\n", why);
}

/* The first available device in this order is the default. */
static const cli_device devices[] = {
    {"cpu", "reference interpreter", cpu_unavailable, NULL, tj_interp_run},
    {"cuda", "NVIDIA GPUs through the CUDA driver", cuda_unavailable, describe_cuda, NULL},
    {"metal", "Apple GPUs", metal_unavailable, NULL, NULL},
};
enum { NDEVICES = sizeof devices / sizeof devices[0] };

int cli_valid_device_name(const char *name)
{
    for (int i = 0; i < NDEVICES; i++)
        if (!strcmp(devices[i].name, name))
            return 1;
    return 0;
}

const char *cli_device_names(tj_ctx *c)
{
    tj_buf b = {0};
    for (int i = 0; i < NDEVICES; i++)
        tj_buf_printf(&b, "%s%s", i ? ", " : "", devices[i].name);
    return cli_buf_take(c, &b);
}

const cli_device *cli_find_device(tj_ctx *c, const char *name)
{
    /* Default: cpu until a GPU runtime exists; then the first GPU found. */
    const cli_device *d = &devices[0];
    for (int i = 0; name && i < NDEVICES; i++)
        if (!strcmp(devices[i].name, name))
            d = &devices[i];
    if (name && strcmp(d->name, name)) {
        tj_error(c, "unknown device '%s' (devices: %s)", name, cli_device_names(c));
        return NULL;
    }
    const char *why = d->unavailable(c);
    if (why || !d->run) {
        tj_error(c, "device '%s' is not available: %s", d->name, why ? why : "no runtime");
        return NULL;
    }
    return d;
}

int cmd_devices(tj_ctx *c, const cli_opts *o)
{
    (void)o;
    for (const cli_device *d = devices; d < devices + NDEVICES; d++) {
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
